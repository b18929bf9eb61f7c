//! Wire formats: known bytes, every malformation refused, round trips, fragmentation.

use proptest::prelude::*;

use super::util::{call, datagram, ip, udp};
use crate::frag::{fragment, MIN_MTU};
use crate::wire::ipv4::{checksum, Header, PROTO_UDP};
use crate::wire::{Arp, Op};
use crate::{Error, Prefix};

/// A UDP datagram's header as captured (the well-known example with checksum 0xb861).
const HEADER: [u8; 20] = [
    0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01,
    0xc0, 0xa8, 0x00, 0xc7,
];

#[test]
fn a_captured_header_parses_and_its_checksum_holds() {
    let mut d = HEADER.to_vec();
    d.resize(0x73, 0);
    let (h, body) = Header::parse(&d).unwrap();
    assert_eq!(h.total_len, 0x73);
    assert_eq!(h.protocol, PROTO_UDP);
    assert!(h.dont_fragment && !h.more_fragments);
    assert_eq!(h.ttl, 64);
    assert_eq!((h.src, h.dst), (ip("192.168.0.1"), ip("192.168.0.199")));
    assert_eq!(body.len(), 0x73);
    assert_eq!(checksum(&HEADER), 0);
    let mut again = Vec::new();
    h.emit(&mut again);
    assert_eq!(again, HEADER);
}

#[test]
fn malformed_headers_are_refused_by_name() {
    let good = udp("44.128.0.1", "44.128.0.2", 10);
    assert_eq!(
        Header::parse(&good[..19]),
        Err(Error::TooShort("IPv4 header"))
    );
    let mut v6 = good.clone();
    v6[0] = 0x65;
    assert_eq!(Header::parse(&v6), Err(Error::Version(6)));
    let mut short_ihl = good.clone();
    short_ihl[0] = 0x44;
    assert_eq!(Header::parse(&short_ihl), Err(Error::HeaderLength(16)));
    let mut long_ihl = good.clone();
    long_ihl[0] = 0x4f;
    assert_eq!(
        Header::parse(&long_ihl[..30]),
        Err(Error::TooShort("IPv4 options"))
    );
    assert_eq!(
        Header::parse(&good[..25]),
        Err(Error::TotalLength {
            total: 30,
            received: 25
        })
    );
    let mut sum = good.clone();
    sum[8] = 1;
    assert_eq!(Header::parse(&sum), Err(Error::Checksum));
    // Offset 8184 * 8 with 10 bytes of data reaches past 65535.
    let mut far = good.clone();
    far[6] = 0x1f;
    far[7] = 0xff;
    far[10] = 0;
    far[11] = 0;
    let s = checksum(&far[..20]);
    far[10..12].copy_from_slice(&s.to_be_bytes());
    assert_eq!(Header::parse(&far), Err(Error::FragmentPastEnd));
}

#[test]
fn padding_after_the_total_length_is_cut() {
    let mut d = udp("44.128.0.1", "44.128.0.2", 4);
    d.extend_from_slice(&[0, 0, 0]);
    let (_, body) = Header::parse(&d).unwrap();
    assert_eq!(body.len(), 24);
}

/// JNOS's request (arp_output): N0JNS at 44.128.0.2 asks for 44.128.0.1, target hardware zero.
const JNOS_REQUEST: [u8; 30] = [
    0x00, 0x03, 0x00, 0xcc, 0x07, 0x04, 0x00, 0x01, // AX.25, IP (0xCC), 7/4, request
    0x9c, 0x60, 0x94, 0x9c, 0xa6, 0x40, 0x60, // N0JNS
    44, 128, 0, 2, //
    0, 0, 0, 0, 0, 0, 0, //
    44, 128, 0, 1,
];

#[test]
fn jnos_arp_request_parses_and_the_reply_is_what_jnos_expects() {
    let a = Arp::parse(&JNOS_REQUEST).unwrap();
    assert_eq!(a.op, Op::Request);
    assert_eq!(a.sender_call, call("N0JNS"));
    assert_eq!(a.sender_ip, ip("44.128.0.2"));
    assert_eq!(a.target_ip, ip("44.128.0.1"));
    let r = a.reply(call("N0QTC-1")).to_bytes();
    assert_eq!(&r[..8], &[0, 3, 0, 0xcc, 7, 4, 0, 2]);
    assert_eq!(&r[8..15], &call("N0QTC-1").to_shifted());
    assert_eq!(&r[15..19], &[44, 128, 0, 1]);
    // The asker's call, its extension bit set (JNOS does the same).
    assert_eq!(&r[19..25], &JNOS_REQUEST[8..14]);
    assert_eq!(r[25], 0x61);
    assert_eq!(&r[26..30], &[44, 128, 0, 2]);
    assert_eq!(Arp::parse(&r).unwrap().op, Op::Reply);
}

#[test]
fn malformed_arp_is_refused_by_name() {
    let r = &JNOS_REQUEST;
    assert_eq!(Arp::parse(&r[..29]), Err(Error::TooShort("ARP packet")));
    let with = |i: usize, b: u8| {
        let mut v = r.to_vec();
        v[i] = b;
        Arp::parse(&v)
    };
    assert_eq!(with(1, 1), Err(Error::ArpHardware(1)));
    assert_eq!(with(3, 0xcd), Err(Error::ArpProtocol(0xcd)));
    assert_eq!(
        with(4, 6),
        Err(Error::ArpLengths {
            hardware: 6,
            protocol: 4
        })
    );
    assert_eq!(with(7, 3), Err(Error::ArpOperation(3)));
    assert!(matches!(with(8, 0x01), Err(Error::ArpSender(_))));
    // Ethernet's IP type is read too, and answered in kind.
    let mut ether = r.to_vec();
    ether[2] = 0x08;
    ether[3] = 0x00;
    let a = Arp::parse(&ether).unwrap();
    assert_eq!(&a.reply(call("N0QTC")).to_bytes()[2..4], &[0x08, 0x00]);
}

#[test]
fn prefixes_parse_and_hold() {
    let p: Prefix = "44.128.0.1/24".parse().unwrap();
    assert_eq!(p.to_string(), "44.128.0.0/24");
    assert!(p.contains(ip("44.128.0.200")) && !p.contains(ip("44.128.1.1")));
    assert_eq!(p.broadcast(), ip("44.128.0.255"));
    assert_eq!("44.1.2.3".parse::<Prefix>().unwrap().len(), 32);
    assert!("0.0.0.0/0"
        .parse::<Prefix>()
        .unwrap()
        .contains(ip("1.2.3.4")));
    for bad in ["44.128.0.0/33", "44.128/8", "x", "44.128.0.0/"] {
        assert!(bad.parse::<Prefix>().is_err(), "{bad}");
    }
}

/// Puts fragments back together (what the end host does) and checks each fits `mtu`.
fn reassemble(pieces: &[Vec<u8>], mtu: usize) -> (Header, Vec<u8>) {
    let mut data = Vec::new();
    let mut first = None;
    for p in pieces {
        assert!(
            p.len() <= mtu,
            "a fragment of {} bytes for MTU {mtu}",
            p.len()
        );
        let (h, _) = Header::parse(p).unwrap();
        assert_eq!(h.frag_offset, data.len());
        data.extend_from_slice(&p[h.header_len..]);
        first.get_or_insert(h);
        assert_eq!(h.more_fragments, !std::ptr::eq(p, pieces.last().unwrap()));
    }
    (first.unwrap(), data)
}

#[test]
fn a_datagram_is_cut_to_the_mtu_and_a_fragment_cut_again() {
    let d = udp("44.128.0.1", "44.128.0.2", 600);
    let (h, _) = Header::parse(&d).unwrap();
    let pieces = fragment(&h, &d, 256).unwrap();
    assert_eq!(pieces.len(), 3);
    let (fh, data) = reassemble(&pieces, 256);
    assert_eq!(fh.id, h.id);
    assert_eq!(data, &d[20..]);
    // The first fragment again, through a narrower link: offsets still add up.
    let (h0, _) = Header::parse(&pieces[0]).unwrap();
    let again = fragment(&h0, &pieces[0], 100).unwrap();
    let mut rest = again.clone();
    rest.extend_from_slice(&pieces[1..]);
    assert_eq!(reassemble(&rest, 256).1, &d[20..]);
}

#[test]
fn fragments_after_the_first_repeat_only_the_copied_options() {
    // Options: security (0x82, copied, 11 bytes), record route (0x07, not copied, 7 bytes),
    // end, padded to 20 bytes.
    let mut opts = vec![
        0x82, 11, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0x07, 7, 4, 0, 0, 0, 0, 0, 0,
    ];
    opts.truncate(20);
    let mut d = datagram(
        "44.128.0.1",
        "44.128.0.2",
        PROTO_UDP,
        &[7u8; 300],
        64,
        false,
    );
    d.splice(20..20, opts.iter().copied());
    d[0] = 0x4a;
    let total = d.len() as u16;
    d[2..4].copy_from_slice(&total.to_be_bytes());
    d[10] = 0;
    d[11] = 0;
    let s = checksum(&d[..40]);
    d[10..12].copy_from_slice(&s.to_be_bytes());
    let (h, _) = Header::parse(&d).unwrap();
    let pieces = fragment(&h, &d, 128).unwrap();
    assert_eq!(Header::parse(&pieces[0]).unwrap().0.header_len, 40);
    let later = Header::parse(&pieces[1]).unwrap().0;
    assert_eq!(later.header_len, 32);
    assert_eq!(&pieces[1][20..31], &opts[..11]);
}

#[test]
fn dont_fragment_and_tiny_mtus_are_refused() {
    let d = datagram("44.128.0.1", "44.128.0.2", PROTO_UDP, &[0; 300], 64, true);
    let (h, _) = Header::parse(&d).unwrap();
    assert_eq!(
        fragment(&h, &d, 256),
        Err(Error::DontFragment { len: 320, mtu: 256 })
    );
    let (h, _) = Header::parse(&udp("1.1.1.1", "2.2.2.2", 100)).unwrap();
    assert_eq!(
        fragment(&h, &udp("1.1.1.1", "2.2.2.2", 100), MIN_MTU - 1),
        Err(Error::MtuTooSmall(67))
    );
}

proptest! {
    #[test]
    fn any_bytes_parse_or_fail_without_panic(b in proptest::collection::vec(any::<u8>(), 0..80)) {
        let _ = Header::parse(&b);
        let _ = Arp::parse(&b);
    }

    #[test]
    fn fragments_reassemble_to_the_datagram(len in 0usize..3000, mtu in MIN_MTU..600) {
        let d = udp("44.128.0.1", "44.128.0.9", len);
        let (h, _) = Header::parse(&d).unwrap();
        let pieces = fragment(&h, &d, mtu).unwrap();
        let (_, data) = reassemble(&pieces, mtu.max(d.len().min(mtu)));
        prop_assert_eq!(data, &d[20..]);
    }

    #[test]
    fn arp_round_trips(ssid in 0u8..16, a in any::<[u8; 4]>(), b in any::<[u8; 4]>(), reply in any::<bool>()) {
        let req = Arp::request(call("N0ABC").with_ssid(ssid).unwrap(), a.into(), b.into());
        let arp = if reply { req.reply(call("N0QTC-1")) } else { req };
        prop_assert_eq!(Arp::parse(&arp.to_bytes()).unwrap(), arp);
    }
}
