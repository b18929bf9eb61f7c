//! Fuzz the NNTP core (a users' mail client's session): arbitrary bytes in arbitrary chunks,
//! every login, store request (run against the memory store), STARTTLS and IDLE answered as
//! the daemon would; and its command parser on each line alone. It must never
//! panic, and always answer within its limits.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The parser alone, line by line, then the whole session.
    for line in data.split(|&b| b == b'\n') {
        let _ = qtc_email::nntp::parse::command(&String::from_utf8_lossy(line));
    }
    let mut core = qtc_email::nntp::Nntp::new(qtc_email::fuzzing::settings());
    qtc_email::fuzzing::drive(&mut core, data);
});
