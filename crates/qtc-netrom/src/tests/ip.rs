//! IP inside NET/ROM datagrams, as JNOS carries it: across a chain of nodes, in JNOS's bytes.

use std::time::Duration;

use super::node::{chain, knows};
use super::util::call;
use crate::wire::{NetHeader, Transport, MAX_INFO};
use crate::{Error, Event, Transmit, NETROM_IP};

#[test]
fn an_ip_datagram_crosses_the_chain_to_the_far_node() {
    let mut net = chain(11);
    assert!(net.run_until(Duration::from_secs(10), |n| knows(n, 0, "CCC")));
    let datagram = b"\x45 an IP datagram".to_vec();
    net.members[0]
        .node
        .send_ip(call("N0CCC"), &datagram)
        .unwrap();
    assert!(net.run_until(Duration::from_secs(5), |n| n.members[2]
        .events
        .iter()
        .any(|e| matches!(e, Event::Ip { .. }))));
    let got: Vec<_> = net.members[2]
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Ip { origin, datagram } => Some((*origin, datagram.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(got, vec![(call("N0AAA"), datagram)]);
    // The node in the middle passed it on and kept nothing.
    assert!(!net.members[1]
        .events
        .iter()
        .any(|e| matches!(e, Event::Ip { .. })));
}

#[test]
fn send_ip_writes_what_jnos_writes_and_refuses_what_it_cannot_send() {
    let mut net = chain(12);
    assert!(net.run_until(Duration::from_secs(10), |n| knows(n, 0, "BBB")));
    let node = &mut net.members[0].node;
    while node.poll_transmit(net.now).is_some() {}
    node.send_ip(call("N0BBB"), b"dgram").unwrap();
    let Some(Transmit::Datagram {
        neighbour, data, ..
    }) = node.poll_transmit(net.now)
    else {
        panic!("nothing sent");
    };
    assert_eq!(neighbour, call("N0BBB"));
    let (h, transport) = NetHeader::parse(&data).unwrap();
    assert_eq!((h.origin, h.dest), (call("N0AAA"), call("N0BBB")));
    // JNOS's nr_sendraw: family and protocol 0x0C, two zero bytes, opcode 0.
    assert_eq!(transport, b"\x0c\x0c\x00\x00\x00dgram");
    assert_eq!(node.send_ip(call("N0AAA"), b"x"), Err(Error::ToSelf));
    assert_eq!(
        node.send_ip(call("N0BBB"), &vec![0; MAX_INFO + 1]),
        Err(Error::InfoTooLong(MAX_INFO + 1))
    );
}

#[test]
fn other_protocol_extensions_are_not_taken_for_ip() {
    let mut net = chain(13);
    assert!(net.run_until(Duration::from_secs(10), |n| knows(n, 1, "AAA")));
    let other = Transport::Extension {
        family: 0x0c,
        proto: 0x01,
        data: b"not ip".to_vec(),
    };
    let h = NetHeader {
        origin: call("N0AAA"),
        dest: call("N0BBB"),
        ttl: 5,
    };
    let now = net.now;
    let b = &mut net.members[1].node;
    b.handle_datagram(now, 0, call("N0AAA"), &h.datagram(&other.to_bytes()));
    let ip = Transport::Extension {
        family: NETROM_IP,
        proto: NETROM_IP,
        data: b"ip".to_vec(),
    };
    b.handle_datagram(now, 0, call("N0AAA"), &h.datagram(&ip.to_bytes()));
    let ips: Vec<Event> = std::iter::from_fn(|| b.poll_event())
        .filter(|e| matches!(e, Event::Ip { .. }))
        .collect();
    assert_eq!(
        ips,
        vec![Event::Ip {
            origin: call("N0AAA"),
            datagram: b"ip".to_vec()
        }]
    );
}
