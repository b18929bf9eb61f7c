//! LZHUF compress -> decompress of arbitrary input, in both payload forms: what comes back is
//! byte-identical.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_lzhuf::{compress, compress_with_crc, decompress, decompress_with_crc, Limits};

fuzz_target!(|data: &[u8]| {
    let packed = compress(data);
    assert_eq!(decompress(&packed, &Limits::default()).as_deref(), Ok(data));
    let packed = compress_with_crc(data);
    assert_eq!(
        decompress_with_crc(&packed, &Limits::default()).as_deref(),
        Ok(data)
    );
});
