//! Golden bytes and round trips for the wire formats.

use proptest::prelude::*;
use qtc_callsign::Callsign;

use super::*;

fn call(s: &str) -> Callsign {
    s.parse().unwrap()
}

/// `N0CCC` in the shifted form, as JNOS's `setcall` stores it (SSID byte 0x60).
const N0CCC: [u8; 7] = [0x9C, 0x60, 0x86, 0x86, 0x86, 0x40, 0x60];
/// `N0BBB-1`.
const N0BBB_1: [u8; 7] = [0x9C, 0x60, 0x84, 0x84, 0x84, 0x40, 0x62];

#[test]
fn a_nodes_broadcast_as_jnos_sends_it() {
    // 0xFF, alias "BBB   ", one entry: N0CCC "CCC   " via N0BBB-1 quality 192.
    let mut info = vec![0xFF];
    info.extend_from_slice(b"BBB   ");
    info.extend_from_slice(&N0CCC);
    info.extend_from_slice(b"CCC   ");
    info.extend_from_slice(&N0BBB_1);
    info.push(192);
    let n = Nodes::parse(&info).unwrap();
    assert!(!n.poll);
    assert_eq!(n.alias.as_str(), "BBB");
    assert_eq!(n.entries.len(), 1);
    let e = n.entries[0];
    assert_eq!(e.dest, call("N0CCC"));
    assert_eq!(e.alias.as_str(), "CCC");
    assert_eq!(e.neighbour, call("N0BBB-1"));
    assert_eq!(e.quality, 192);
    let mut back = Vec::new();
    n.emit(&mut back);
    assert_eq!(back, info);
}

#[test]
fn a_broadcast_tolerates_flag_bits_a_short_tail_and_a_bad_entry() {
    let mut info = vec![0xFF];
    info.extend_from_slice(b"BBB\0\0\0");
    let mut dest = N0CCC;
    dest[6] |= 0x81; // C/H and extension bits set: ignored
    info.extend_from_slice(&dest);
    info.extend_from_slice(b"CCC   ");
    info.extend_from_slice(&N0BBB_1);
    info.push(100);
    // An entry with a lower-case (unshifted) callsign: skipped, the rest kept.
    info.extend_from_slice(b"abcdefg");
    info.extend_from_slice(b"XXX   ");
    info.extend_from_slice(&N0BBB_1);
    info.push(50);
    info.extend_from_slice(&[1, 2, 3]);
    let n = Nodes::parse(&info).unwrap();
    assert_eq!(n.alias.as_str(), "BBB");
    assert_eq!(n.entries.len(), 1);
    assert_eq!(n.skipped, 1);
    assert_eq!(n.entries[0].dest, call("N0CCC"));
}

#[test]
fn a_poll_and_bad_headers() {
    let n = Nodes::parse(b"\xFEJNOS  ").unwrap();
    assert!(n.poll);
    assert!(n.entries.is_empty());
    assert_eq!(Nodes::parse(b""), Err(crate::Error::TooShort("signature")));
    assert_eq!(
        Nodes::parse(b"\x01BBB   "),
        Err(crate::Error::BadSignature(1))
    );
    assert_eq!(
        Nodes::parse(b"\xFFBB"),
        Err(crate::Error::TooShort("alias"))
    );
    assert_eq!(
        Nodes::parse(b"\xFFBB\x07   "),
        Err(crate::Error::BadAlias(7))
    );
}

#[test]
fn broadcasts_are_cut_at_eleven_entries() {
    let entries: Vec<NodesEntry> = (0..23)
        .map(|i| NodesEntry {
            dest: Callsign::new("N0AA", i % 16).unwrap(),
            alias: "X".parse().unwrap(),
            neighbour: call("N0BBB"),
            quality: 100,
        })
        .collect();
    let frames = Nodes::frames("QTC".parse().unwrap(), &entries);
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[0].len(), NODES_HEADER_LEN + 11 * NODES_ENTRY_LEN);
    assert_eq!(frames[0].len(), 238);
    assert_eq!(frames[2].len(), NODES_HEADER_LEN + NODES_ENTRY_LEN);
    let alone = Nodes::frames("QTC".parse().unwrap(), &[]);
    assert_eq!(alone, vec![b"\xFFQTC   ".to_vec()]);
}

#[test]
fn a_network_header_as_jnos_writes_it() {
    let h = NetHeader {
        origin: call("N0BBB-1"),
        dest: call("N0CCC"),
        ttl: 9,
    };
    let d = h.datagram(&[1, 2]);
    let mut want = N0BBB_1.to_vec();
    let mut dest = N0CCC;
    dest[6] |= 1; // JNOS: destination extension bit set
    want.extend_from_slice(&dest);
    want.extend_from_slice(&[9, 1, 2]);
    assert_eq!(d, want);
    let (back, rest) = NetHeader::parse(&d).unwrap();
    assert_eq!(back, h);
    assert_eq!(rest, &[1, 2]);
    assert_eq!(
        NetHeader::parse(&d[..14]),
        Err(crate::Error::TooShort("TTL"))
    );
}

#[test]
fn a_connect_request_as_jnos_and_linbpq_send_it() {
    // JNOS: index 3, id 7, window 4, user N0BBB-1, node N0CCC (20 bytes).
    let mut jnos = vec![3, 7, 0, 0, 0x01, 4];
    jnos.extend_from_slice(&N0BBB_1);
    jnos.extend_from_slice(&N0CCC);
    let t = Transport::parse(&jnos).unwrap();
    assert_eq!(
        t,
        Transport::ConnectRequest {
            my_index: 3,
            my_id: 7,
            window: 4,
            user: call("N0BBB-1"),
            node: call("N0CCC"),
            bpq_timeout: None,
        }
    );
    assert_eq!(t.to_bytes(), jnos);
    // LinBPQ adds its timeout in seconds, low byte first.
    let mut bpq = jnos.clone();
    bpq.extend_from_slice(&[120, 0]);
    match Transport::parse(&bpq).unwrap() {
        Transport::ConnectRequest { bpq_timeout, .. } => assert_eq!(bpq_timeout, Some(120)),
        other => panic!("{other:?}"),
    }
    assert!(Transport::parse(&jnos[..19]).is_err());
}

#[test]
fn the_other_transport_frames_byte_for_byte() {
    let cases: Vec<(Transport, Vec<u8>)> = vec![
        (
            Transport::ConnectAck {
                your_index: 3,
                your_id: 7,
                my_index: 1,
                my_id: 2,
                window: 4,
                refused: false,
                bpq_ttl: None,
            },
            vec![3, 7, 1, 2, 0x02, 4],
        ),
        (
            Transport::ConnectAck {
                your_index: 3,
                your_id: 7,
                my_index: 0,
                my_id: 0,
                window: 0,
                refused: true,
                bpq_ttl: Some(25),
            },
            vec![3, 7, 0, 0, 0x82, 0, 25],
        ),
        (
            Transport::DisconnectRequest {
                your_index: 1,
                your_id: 2,
            },
            vec![1, 2, 0, 0, 0x03],
        ),
        (
            Transport::DisconnectAck {
                your_index: 1,
                your_id: 2,
            },
            vec![1, 2, 0, 0, 0x04],
        ),
        (
            Transport::Info {
                your_index: 1,
                your_id: 2,
                tx_seq: 5,
                rx_seq: 6,
                flags: Flags {
                    choke: true,
                    nak: false,
                    more: true,
                },
                data: b"hi".to_vec(),
            },
            vec![1, 2, 5, 6, 0xA5, b'h', b'i'],
        ),
        (
            Transport::InfoAck {
                your_index: 1,
                your_id: 2,
                rx_seq: 9,
                flags: Flags {
                    choke: false,
                    nak: true,
                    more: false,
                },
            },
            vec![1, 2, 0, 9, 0x46],
        ),
        (
            Transport::Reset {
                your_index: 0,
                your_id: 0,
                peer_index: 4,
                peer_id: 5,
            },
            vec![0, 0, 4, 5, 0x07],
        ),
        (
            Transport::Extension {
                family: 0x0C,
                proto: 0x0C,
                data: vec![0x45],
            },
            vec![0x0C, 0x0C, 0, 0, 0x00, 0x45],
        ),
    ];
    for (t, bytes) in cases {
        assert_eq!(t.to_bytes(), bytes, "{t:?}");
        assert_eq!(t.buffer_len(), bytes.len());
        assert_eq!(Transport::parse(&bytes).unwrap(), t);
    }
    assert_eq!(
        Transport::parse(&[1, 2, 0, 0, 0x09]),
        Err(crate::Error::UnknownOpcode(9))
    );
    assert_eq!(
        Transport::parse(&[1, 2, 0, 0]),
        Err(crate::Error::TooShort("transport header"))
    );
}

#[test]
fn aliases() {
    let a: Alias = "qtca".parse().unwrap();
    assert_eq!(a.as_str(), "QTCA");
    assert!(a.matches("QtcA"));
    assert_eq!(a.to_wire(), *b"QTCA  ");
    assert!("".parse::<Alias>().is_err());
    assert!("SEVENCH".parse::<Alias>().is_err());
    assert!("A B".parse::<Alias>().is_err());
    assert!(!Alias::NONE.matches(""));
}

fn arb_call() -> impl Strategy<Value = Callsign> {
    ("[A-Z0-9]{1,6}", 0u8..16).prop_map(|(c, s)| Callsign::new(&c, s).unwrap())
}

fn arb_alias() -> impl Strategy<Value = Alias> {
    "[A-Z0-9#]{1,6}".prop_map(|a| a.parse().unwrap())
}

fn arb_transport() -> impl Strategy<Value = Transport> {
    let b = any::<u8>;
    let flags = (any::<bool>(), any::<bool>(), any::<bool>())
        .prop_map(|(choke, nak, more)| Flags { choke, nak, more });
    prop_oneof![
        (
            b(),
            b(),
            b(),
            arb_call(),
            arb_call(),
            proptest::option::of(any::<u16>())
        )
            .prop_map(|(my_index, my_id, window, user, node, bpq_timeout)| {
                Transport::ConnectRequest {
                    my_index,
                    my_id,
                    window,
                    user,
                    node,
                    bpq_timeout,
                }
            }),
        (
            b(),
            b(),
            b(),
            b(),
            b(),
            any::<bool>(),
            proptest::option::of(b())
        )
            .prop_map(
                |(your_index, your_id, my_index, my_id, window, refused, bpq_ttl)| {
                    Transport::ConnectAck {
                        your_index,
                        your_id,
                        my_index,
                        my_id,
                        window,
                        refused,
                        bpq_ttl,
                    }
                }
            ),
        (b(), b()).prop_map(|(your_index, your_id)| Transport::DisconnectRequest {
            your_index,
            your_id
        }),
        (b(), b()).prop_map(|(your_index, your_id)| Transport::DisconnectAck {
            your_index,
            your_id
        }),
        (
            b(),
            b(),
            b(),
            b(),
            flags.clone(),
            proptest::collection::vec(b(), 0..300)
        )
            .prop_map(|(your_index, your_id, tx_seq, rx_seq, flags, data)| {
                Transport::Info {
                    your_index,
                    your_id,
                    tx_seq,
                    rx_seq,
                    flags,
                    data,
                }
            }),
        (b(), b(), b(), flags).prop_map(|(your_index, your_id, rx_seq, flags)| {
            Transport::InfoAck {
                your_index,
                your_id,
                rx_seq,
                flags,
            }
        }),
        (b(), b(), b(), b()).prop_map(|(your_index, your_id, peer_index, peer_id)| {
            Transport::Reset {
                your_index,
                your_id,
                peer_index,
                peer_id,
            }
        }),
    ]
}

proptest! {
    #[test]
    fn transport_frames_round_trip(t in arb_transport()) {
        let bytes = t.to_bytes();
        prop_assert_eq!(bytes.len(), t.buffer_len());
        prop_assert_eq!(Transport::parse(&bytes).unwrap(), t);
    }

    #[test]
    fn nodes_round_trip(
        alias in arb_alias(),
        entries in proptest::collection::vec(
            (arb_call(), arb_alias(), arb_call(), any::<u8>()).prop_map(|(dest, alias, neighbour, quality)| {
                NodesEntry { dest, alias, neighbour, quality }
            }),
            0..11,
        ),
    ) {
        let n = Nodes { poll: false, alias, entries, skipped: 0 };
        let mut bytes = Vec::new();
        n.emit(&mut bytes);
        prop_assert_eq!(bytes.len(), n.buffer_len());
        prop_assert_eq!(Nodes::parse(&bytes).unwrap(), n);
    }

    #[test]
    fn headers_round_trip(origin in arb_call(), dest in arb_call(), ttl in any::<u8>()) {
        let h = NetHeader { origin, dest, ttl };
        let d = h.datagram(&[]);
        prop_assert_eq!(d.len(), NET_HEADER_LEN);
        prop_assert_eq!(NetHeader::parse(&d).unwrap(), (h, &[][..]));
    }

    #[test]
    fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = Nodes::parse(&bytes);
        let _ = NetHeader::parse(&bytes);
        let _ = Transport::parse(&bytes);
    }
}
