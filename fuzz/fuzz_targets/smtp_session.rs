//! Fuzz the SMTP core (a users' mail client's session): arbitrary bytes in arbitrary chunks,
//! every login, store request (run against the memory store), STARTTLS and IDLE answered as
//! the daemon would; and its command parser on each line alone. It must never
//! panic, and always answer within its limits.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The parser alone, line by line (commands and AUTH answers), then the whole session.
    for line in data.split(|&b| b == b'\n') {
        let _ = qtc_email::smtp::parse::command(line);
        let _ = qtc_email::smtp::parse::auth_answer(line);
    }
    let mut core = qtc_email::smtp::Smtp::new(qtc_email::fuzzing::settings());
    qtc_email::fuzzing::drive(&mut core, data);
});
