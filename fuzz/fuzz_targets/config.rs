//! The config file: arbitrary text through qtc's TOML parsing and every value check
//! (`qtc::config::parse`, what `qtc run` and `qtc check` do before anything is opened), and
//! through the web's `/config` page (`qtc::config::edit`: the forms shown from it, a partner's
//! interval changed in it, and the result checked again). Any error is fine, as long as it is
//! an error and not a panic.
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
    let _ = qtc::config::edit::show(text);
    let change = qtc::config::edit::Change {
        section: qtc::config::edit::Section::Partner,
        target: qtc::config::edit::Target::Table {
            index: 0,
            ident: "N0BBB".into(),
        },
        fields: [("callsign", "N0BBB"), ("interval", "5m"), ("routes", "WW, N0BBB")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    if let Ok(edited) = qtc::config::edit::apply(text, &change) {
        let _ = qtc::config::parse(&edited, "fuzz.toml", Path::new("/nonexistent"));
    }
});
