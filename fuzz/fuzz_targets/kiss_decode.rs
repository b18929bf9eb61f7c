//! Fuzz the KISS decoder: arbitrary bytes, cut into arbitrary chunks, must never panic, must keep
//! every frame within MAX_KISS_FRAME, and must give the same frames as one-shot decoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_kiss::{Decoder, MAX_KISS_FRAME};

fuzz_target!(|data: &[u8]| {
    let Some((&step, input)) = data.split_first() else {
        return;
    };
    let mut whole = Decoder::new();
    let mut expected = Vec::new();
    whole.decode(input, &mut |f| expected.push(f));

    let step = usize::from(step).max(1);
    let mut chunked = Decoder::new();
    let mut got = Vec::new();
    for chunk in input.chunks(step) {
        chunked.decode(chunk, &mut |f| got.push(f));
    }
    assert_eq!(got, expected);
    assert_eq!(chunked.stats(), whole.stats());
    for f in &got {
        assert!(f.payload.len() <= MAX_KISS_FRAME);
        // Every decoded frame re-encodes, and decodes back to itself.
        let mut wire = Vec::new();
        f.encode(&mut wire).expect("decoded frames are encodable");
        let mut again = Vec::new();
        Decoder::new().decode(&wire, &mut |g| again.push(g));
        assert_eq!(again, vec![f.clone()]);
    }
});
