//! LZHUF decoder on arbitrary bytes, in both payload forms (B0: length header; B1: CRC then
//! length header). The round trip has its own target (lzhuf_roundtrip), so this one spends
//! every execution on untrusted input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_lzhuf::{crc16_xmodem, decompress, decompress_with_crc, Limits};

/// Small enough that every input runs fast; the bomb guard still allows 100x expansion.
const LIMIT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::new(LIMIT);

    // Any result but a panic is fine; success means exactly the declared size.
    if let Ok(out) = decompress(data, &limits) {
        assert!(out.len() <= LIMIT);
        assert_eq!(
            out.len() as u64,
            u64::from(u32::from_le_bytes(data[..4].try_into().unwrap()))
        );
    }
    let _ = decompress_with_crc(data, &limits);
    // The same bytes behind a valid CRC, so the stream decoder runs on them in the B1 form too.
    let mut b1 = crc16_xmodem(data).to_le_bytes().to_vec();
    b1.extend_from_slice(data);
    let _ = decompress_with_crc(&b1, &limits);
});
