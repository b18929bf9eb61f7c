//! Fuzz the NET/ROM parsers: NODES broadcasts, the layer-3 header and layer-4 frames. None may
//! panic, and what parses must emit bytes that parse back to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_netrom::wire::{NetHeader, Nodes, Transport};

fuzz_target!(|data: &[u8]| {
    if let Ok(n) = Nodes::parse(data) {
        let mut out = Vec::new();
        n.emit(&mut out);
        assert_eq!(out.len(), n.buffer_len());
        let back = Nodes::parse(&out).unwrap();
        assert_eq!((back.poll, back.alias, back.entries), (n.poll, n.alias, n.entries));
    }
    if let Ok((h, rest)) = NetHeader::parse(data) {
        let d = h.datagram(rest);
        assert_eq!(NetHeader::parse(&d).unwrap(), (h, rest));
        if let Ok(t) = Transport::parse(rest) {
            let bytes = t.to_bytes();
            assert_eq!(bytes.len(), t.buffer_len());
            assert_eq!(Transport::parse(&bytes).unwrap(), t);
        }
    }
});
