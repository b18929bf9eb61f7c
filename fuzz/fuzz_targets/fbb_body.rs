//! Fuzz the text escape of the text modes and B0/B1 (qtc-fbb wire::body): any line comes back
//! byte for byte from its escape; unescaping any received bytes (a partner need not have
//! escaped them) never panics and gives the same in place; escaping any text never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_fbb::wire::body::{
    emit_text, escape_line, file_text, unescape, unescape_line, unescape_owned, Reader,
};

fuzz_target!(|data: &[u8]| {
    let line: Vec<u8> = data
        .iter()
        .copied()
        .filter(|&b| b != b'\r' && b != b'\n')
        .collect();
    let mut escaped = Vec::new();
    escape_line(&line, &mut escaped);
    let mut back = Vec::new();
    unescape_line(&escaped, &mut back);
    assert_eq!(back, line);
    let mut any = Vec::new();
    unescape_line(data, &mut any);
    assert_eq!(unescape_owned(data.to_vec()), unescape(data));
    let _ = file_text(data);
    let mut out = Vec::new();
    emit_text(data, Reader::Other, b"\r", &mut out);
    emit_text(data, Reader::Qtc, b"\r\n", &mut out);
});
