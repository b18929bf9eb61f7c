//! Fuzz the AX.25 wire parsers: arbitrary bytes must never panic, and whatever parses must
//! re-emit to bytes that parse to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_ax25::wire::{check_fcs, Address, Frame, Modulo, XidParams};

fuzz_target!(|data: &[u8]| {
    for modulo in [Modulo::Mod8, Modulo::Mod128] {
        if let Ok(frame) = Frame::parse(data, modulo) {
            let bytes = frame.to_bytes();
            assert_eq!(bytes.len(), frame.buffer_len());
            assert_eq!(Frame::parse(&bytes, modulo).as_ref(), Ok(&frame));
        }
    }
    if let Ok((addr, len)) = Address::parse(data) {
        assert_eq!(len, addr.buffer_len());
        let _ = addr.reply(addr.cr);
    }
    if let Ok(xid) = XidParams::parse(data) {
        let mut out = Vec::new();
        xid.emit(&mut out);
        assert_eq!(XidParams::parse(&out), Ok(xid));
    }
    let _ = check_fcs(data);
});
