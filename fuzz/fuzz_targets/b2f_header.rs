//! Fuzz the B2F message parser (and the subject's RFC 2047 decoding); a parsed message must emit and parse back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_fbb::wire::b2f::Message;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Message::parse(data) {
        let _ = (m.mid(), m.subject(), m.get_all("To").count());
        let _ = qtc_mail::charset::decode_header(m.subject());
        let mut out = Vec::new();
        m.emit(&mut out);
        // Emitting may lengthen a header line ("Name:v" -> "Name: v") past the limit.
        if let Ok(again) = Message::parse(&out) {
            assert_eq!(again.body, m.body);
            assert_eq!(again.files, m.files);
        }
    }
});
