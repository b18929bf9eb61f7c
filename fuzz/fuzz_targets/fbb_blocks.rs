//! Fuzz the binary block decoder: arbitrary bytes fed in chunks whose sizes come from the
//! input; a decoded frame must re-encode and decode to the same frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_fbb::wire::block::{encode, Decoder, Frame};

fuzz_target!(|data: &[u8]| {
    let Some((&split, input)) = data.split_first() else {
        return;
    };
    let step = usize::from(split).max(1);
    let mut d = Decoder::new(64 * 1024);
    for chunk in input.chunks(step) {
        match d.decode(chunk) {
            Ok((used, Some(frame))) => {
                assert!(used <= chunk.len());
                if let Frame::Message {
                    title,
                    offset,
                    data,
                } = &frame
                {
                    let mut out = Vec::new();
                    encode(title, *offset, data, &mut out);
                    let again = Decoder::new(64 * 1024).decode(&out);
                    if !title.contains(&0) && title.len() <= 80 {
                        assert_eq!(again.ok().and_then(|(_, f)| f), Some(frame));
                    }
                }
                return;
            }
            Ok((used, None)) => assert_eq!(used, chunk.len()),
            Err(_) => return,
        }
    }
});
