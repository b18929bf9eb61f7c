//! Fuzz the reading of a message a client keeps in its IMAP folder (APPEND): any bytes give a
//! header end and parts that lie within the message, and the bytes are kept untouched.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let r = qtc_email::kept::rendered(data.to_vec());
    assert_eq!(r.bytes, data);
    assert!(r.header_len <= data.len());
    for p in &r.parts {
        assert!(p.mime.start <= p.mime.end && p.mime.end <= p.body.start);
        assert!(p.body.start <= p.body.end && p.body.end <= data.len());
    }
});
