//! LZHUF decoder on arbitrary bytes (both payload forms, small output limit), and
//! compress -> decompress round trips of arbitrary input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_lzhuf::{
    compress, compress_with_crc, crc16_xmodem, decompress, decompress_with_crc, Limits,
};

/// Small enough that every input runs fast; the bomb guard still allows 100x expansion.
const LIMIT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::new(LIMIT);

    // Untrusted payloads: any result but a panic is fine; success means exactly the declared size.
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

    // Round trip.
    let packed = compress(data);
    assert_eq!(decompress(&packed, &Limits::default()).as_deref(), Ok(data));
    let packed = compress_with_crc(data);
    assert_eq!(
        decompress_with_crc(&packed, &Limits::default()).as_deref(),
        Ok(data)
    );
});
