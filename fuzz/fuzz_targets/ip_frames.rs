//! Fuzz the IP-over-AX.25 parsers: the IPv4 header and ARP over AX.25. None may panic; what
//! parses must emit bytes that parse back to the same value, and any datagram that parses must
//! cut into fragments that each fit the MTU and parse.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_ip::frag::{fragment, MIN_MTU};
use qtc_ip::wire::ipv4::Header;
use qtc_ip::wire::Arp;

fuzz_target!(|data: &[u8]| {
    if let Ok(a) = Arp::parse(data) {
        assert_eq!(Arp::parse(&a.to_bytes()).unwrap(), a);
    }
    let Some((&mtu, bytes)) = data.split_first() else {
        return;
    };
    if let Ok((h, datagram)) = Header::parse(bytes) {
        assert_eq!(datagram.len(), h.total_len);
        let mtu = MIN_MTU + usize::from(mtu) * 4;
        if let Ok(pieces) = fragment(&h, datagram, mtu) {
            let mut data_len = 0;
            for p in &pieces {
                assert!(p.len() <= mtu.max(datagram.len().min(mtu)));
                let (fh, _) = Header::parse(p).expect("a fragment parses");
                assert_eq!((fh.id, fh.src, fh.dst), (h.id, h.src, h.dst));
                assert_eq!(fh.frag_offset, h.frag_offset + data_len);
                data_len += fh.payload_len();
            }
            assert_eq!(data_len, h.payload_len());
        }
    }
});
