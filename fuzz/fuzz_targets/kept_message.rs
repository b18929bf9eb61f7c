//! Fuzz the reading of a message a client keeps in its IMAP folder (APPEND): any bytes give a
//! header end and a MIME tree whose parts lie within the message, each inside the one holding
//! it, and the bytes are kept untouched; its BODY and BODYSTRUCTURE are written without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_email::render::Part;

fn within(p: &Part, outer: std::ops::Range<usize>) {
    assert!(outer.start <= p.mime.start && p.mime.start <= p.mime.end);
    assert!(p.mime.end <= p.body.start && p.body.start <= p.body.end);
    assert!(p.body.end <= outer.end);
    for q in &p.inner {
        within(q, p.body.clone());
    }
}

fuzz_target!(|data: &[u8]| {
    let r = qtc_email::kept::rendered(data.to_vec());
    assert_eq!(r.bytes, data);
    assert!(r.header_len <= data.len());
    for p in &r.parts {
        within(p, 0..data.len());
    }
    let [body, structure] = qtc_email::fuzzing::kept_structures(data);
    assert!(body.starts_with('(') && structure.starts_with('('));
});
