//! Fuzz the NNTP core (a users' mail client's session): arbitrary bytes in arbitrary chunks,
//! every login, store request, STARTTLS and IDLE answered as the daemon would. It must never
//! panic, and always answer within its limits.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut core = qtc_email::nntp::Nntp::new(qtc_email::fuzzing::settings());
    qtc_email::fuzzing::drive(&mut core, data);
});
