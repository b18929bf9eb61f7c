//! The config file: arbitrary text through qtc's TOML parsing and every value check
//! (`qtc::config::parse`, what `qtc run` and `qtc check` do before anything is opened). Any
//! error is fine, as long as it is an error and not a panic.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A config file that is not UTF-8 is refused before parsing (read_to_string).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(loaded) = qtc::config::parse(text, "fuzz.toml", Path::new("/nonexistent")) {
        // What the daemon derives from a loaded config right away: the start-up report's
        // partner lines (the store's station is checked as loaded).
        for p in &loaded.partners {
            let _ = p.describe();
        }
    }
});
