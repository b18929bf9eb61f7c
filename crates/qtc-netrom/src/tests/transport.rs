//! One node fed frames by hand, as its neighbours send them: LinBPQ's circuit to an
//! application (a transcript of its bytes), a stranger injecting into a circuit, the caps on
//! circuits per node and per neighbour, the station's own calls in NODES, a circuit whose far
//! end is gone, a neighbour whose link fails.

use std::time::{Duration, Instant};

use qtc_callsign::Callsign;

use super::util::{call, config};
use crate::wire::{Flags, NetHeader, Nodes, NodesEntry, Transport};
use crate::{CircuitId, CloseReason, Event, Node, Transmit, Via};

/// A node N0QTC-1 (alias QTC) on one port, and the clock.
struct Solo {
    node: Node,
    now: Instant,
    events: Vec<Event>,
    sent: Vec<(Callsign, NetHeader, Transport)>,
}

impl Solo {
    fn new(tweak: impl FnOnce(&mut crate::Config)) -> Solo {
        let mut cfg = config("N0QTC-1", "QTC", 1);
        cfg.own_calls = vec![call("N0QTC")];
        // The routes heard once stay for the test's minutes.
        cfg.broadcast = Duration::from_secs(1800);
        tweak(&mut cfg);
        let now = base();
        let mut s = Solo {
            node: Node::new(cfg, now),
            now,
            events: Vec::new(),
            sent: Vec::new(),
        };
        s.settle();
        s
    }

    /// A NODES broadcast from `from` (alias `alias`) advertising `entries`.
    fn hear(&mut self, from: &str, alias: &str, entries: &[(&str, &str, &str, u8)]) {
        let msg = Nodes {
            poll: false,
            alias: alias.parse().unwrap(),
            entries: entries
                .iter()
                .map(|&(dest, alias, neighbour, quality)| NodesEntry {
                    dest: call(dest),
                    alias: alias.parse().unwrap(),
                    neighbour: call(neighbour),
                    quality,
                })
                .collect(),
            skipped: 0,
        };
        let mut info = Vec::new();
        msg.emit(&mut info);
        self.node.handle_nodes(self.now, 0, call(from), &info);
        self.settle();
    }

    /// A datagram from `origin` for us, through the neighbour `via`.
    fn datagram(&mut self, via: &str, origin: &str, t: &Transport) {
        let bytes = NetHeader {
            origin: call(origin),
            dest: call("N0QTC-1"),
            ttl: 7,
        }
        .datagram(&t.to_bytes());
        self.raw(via, &bytes);
    }

    fn raw(&mut self, via: &str, bytes: &[u8]) {
        self.node.handle_datagram(self.now, 0, call(via), bytes);
        self.settle();
    }

    fn advance(&mut self, d: Duration) {
        let end = self.now + d;
        while let Some(t) = self.node.poll_timeout().filter(|&t| t <= end) {
            self.now = self.now.max(t);
            self.node.handle_timeout(self.now);
            self.settle();
        }
        self.now = end;
    }

    fn settle(&mut self) {
        while let Some(t) = self.node.poll_transmit(self.now) {
            if let Transmit::Datagram {
                neighbour, data, ..
            } = t
            {
                let (h, rest) = NetHeader::parse(&data).unwrap();
                self.sent
                    .push((neighbour, h, Transport::parse(rest).unwrap()));
            }
        }
        while let Some(e) = self.node.poll_event() {
            self.events.push(e);
        }
    }

    fn take_sent(&mut self) -> Vec<(Callsign, NetHeader, Transport)> {
        std::mem::take(&mut self.sent)
    }

    fn incoming(&self) -> Vec<CircuitId> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Incoming { circuit, .. } => Some(*circuit),
                _ => None,
            })
            .collect()
    }

    fn data(&self) -> Vec<u8> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Data { data, .. } => Some(data.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    }
}

#[allow(clippy::disallowed_methods)]
fn base() -> Instant {
    Instant::now()
}

fn request(index: u8, id: u8, user: &str, node: &str) -> Transport {
    Transport::ConnectRequest {
        my_index: index,
        my_id: id,
        window: 4,
        user: call(user),
        node: call(node),
        bpq_timeout: None,
    }
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// LinBPQ (node N0BPQ, its BBS application N0BPQ-1 alias BPQBBS) as a neighbour: what a user's
/// `C BPQBBS` meets. BPQ answers the connect from the application's call (`SendConACK` swaps
/// the request's addresses) but sends the circuit's data from its node call (`SENDL4MESSAGE`
/// puts `L4MYCALL`, which `SETUPNEWCIRCUIT` sets to `MYCALL`), with our index and id right.
/// Before, qtc matched the far call too, answered the data with a reset, and BPQ dropped the
/// circuit: `C BPQBBS` said "Connected" and then nothing.
#[test]
fn linbpqs_data_from_its_node_call_reaches_the_circuit_to_its_application() {
    let mut s = Solo::new(|_| {});
    s.hear("N0BPQ", "BPQ", &[("N0BPQ-1", "BPQBBS", "N0BPQ", 255)]);
    let ours = s
        .node
        .connect(s.now, call("N0USR"), s.node.find("BPQBBS").unwrap().call)
        .unwrap();
    s.settle();
    let sent = s.take_sent();
    let Some((
        to,
        h,
        Transport::ConnectRequest {
            my_index, my_id, ..
        },
    )) = sent.last().cloned()
    else {
        panic!("{sent:?}");
    };
    assert_eq!((to, h.dest), (call("N0BPQ"), call("N0BPQ-1")));
    // BPQ's connect acknowledge from N0BPQ-1: its circuit 0/0x21, window 4. The bytes are
    // what its SendConACK leaves in our request's buffer: L3SWAPADDRESSES swaps the calls,
    // keeps only their SSID bits and sets the end bit on the origin (0x03: SSID 1, end),
    // TTL L3LIVES (25); our index and id stay, its own go in the sequence fields.
    let mut ack = hex("9C 60 84 A0 A2 40 03  9C 60 A2 A8 86 40 02  19");
    ack.extend_from_slice(&[my_index, my_id, 0x00, 0x21, 0x02, 0x04]);
    assert_eq!(NetHeader::parse(&ack).unwrap().0.origin, call("N0BPQ-1"));
    s.raw("N0BPQ", &ack);
    assert!(s.events.contains(&Event::Connected { circuit: ours }));
    // Its BBS's first line, from the node call N0BPQ (L4MYCALL, SSID byte 0x60), an
    // information frame N(S) 0 N(R) 0 on our index and id.
    let mut info = hex("9C 60 84 A0 A2 40 60  9C 60 A2 A8 86 40 62  19");
    info.extend_from_slice(&[my_index, my_id, 0x00, 0x00, 0x05]);
    info.extend_from_slice(b"[BPQ-6.0.25.23-B2FWIHJM$]\r");
    assert_eq!(NetHeader::parse(&info).unwrap().0.origin, call("N0BPQ"));
    s.raw("N0BPQ", &info);
    assert_eq!(s.data(), b"[BPQ-6.0.25.23-B2FWIHJM$]\r");
    // No reset went back: the acknowledgement does, to the application's call.
    s.advance(Duration::from_secs(5));
    let sent = s.take_sent();
    assert!(
        !sent
            .iter()
            .any(|(_, _, t)| matches!(t, Transport::Reset { .. })),
        "{sent:?}"
    );
    assert!(sent
        .iter()
        .any(|(_, h, t)| h.dest == call("N0BPQ-1")
            && matches!(t, Transport::InfoAck { rx_seq: 1, .. })));
}

#[test]
fn a_frame_for_a_circuit_from_a_neighbour_it_does_not_run_through_is_dropped() {
    let mut s = Solo::new(|_| {});
    s.hear("N0NB", "NB", &[("N0FAR", "FAR", "N0X", 200)]);
    s.hear("N0EVL", "EVL", &[]);
    s.datagram("N0NB", "N0FAR", &request(3, 9, "N0USR", "N0FAR"));
    let circuit = s.incoming()[0];
    let _ = s.take_sent();
    let (index, id) = (circuit.index, circuit.id);
    let info = |data: &[u8]| Transport::Info {
        your_index: index,
        your_id: id,
        tx_seq: 0,
        rx_seq: 0,
        flags: Flags::default(),
        data: data.to_vec(),
    };
    // A stranger names the circuit, even as its far node: nothing reaches the session, and
    // nothing goes back (a reset would close the real far end's circuit).
    s.datagram("N0EVL", "N0FAR", &info(b"S N0SYS\r"));
    s.datagram("N0EVL", "N0EVL", &info(b"S N0SYS\r"));
    s.datagram(
        "N0EVL",
        "N0FAR",
        &Transport::DisconnectRequest {
            your_index: index,
            your_id: id,
        },
    );
    assert!(s.data().is_empty());
    assert!(s.take_sent().is_empty());
    assert!(s.node.is_connected(circuit));
    // The same frame through the circuit's neighbour is taken.
    s.datagram("N0NB", "N0FAR", &info(b"hello\r"));
    assert_eq!(s.data(), b"hello\r");
}

#[test]
fn one_node_or_one_neighbour_cannot_take_every_circuit() {
    let mut s = Solo::new(|c| {
        c.max_circuits = 8;
        c.max_circuits_per_node = 3;
        c.max_circuits_per_neighbour = 5;
    });
    s.hear("N0EVL", "EVL", &[]);
    s.hear("N0NB", "NB", &[]);
    // One node through a hostile neighbour asks for 10 circuits: 3 granted.
    for i in 0..10 {
        s.datagram(
            "N0EVL",
            "N0EVL",
            &request(i, 1, &format!("N0U{i}"), "N0EVL"),
        );
    }
    assert_eq!(s.incoming().len(), 3);
    let refusals = |s: &mut Solo| {
        s.take_sent()
            .iter()
            .filter(|(_, _, t)| matches!(t, Transport::ConnectAck { refused: true, .. }))
            .count()
    };
    assert_eq!(refusals(&mut s), 7);
    // Other nodes behind the same neighbour (origins are only claims): 2 more, then its share
    // is taken.
    for i in 0..5 {
        let node = format!("N0FK{i}");
        s.datagram("N0EVL", &node, &request(i, 2, "N0USR", &node));
    }
    assert_eq!(s.incoming().len(), 5);
    assert_eq!(refusals(&mut s), 3);
    // A user through another neighbour still gets in.
    s.datagram("N0NB", "N0NB", &request(1, 1, "N0REAL", "N0NB"));
    assert_eq!(s.incoming().len(), 6);
    assert_eq!(refusals(&mut s), 0);
}

#[test]
fn a_circuit_whose_far_end_is_gone_is_given_up_after_its_retries() {
    let mut s = Solo::new(|c| {
        c.circuit.timeout = Duration::from_secs(30);
        c.circuit.retries = 3;
    });
    s.hear("N0NB", "NB", &[]);
    s.datagram("N0NB", "N0NB", &request(1, 1, "N0USR", "N0NB"));
    let circuit = s.incoming()[0];
    // The session greets; the far end never answers again.
    s.node.send(circuit, b"Hello\r").unwrap();
    s.settle();
    let start = s.now;
    s.advance(Duration::from_secs(119));
    assert!(s.node.is_connected(circuit));
    s.advance(Duration::from_secs(2));
    assert!(
        s.events.contains(&Event::Closed {
            circuit,
            reason: CloseReason::Timeout
        }),
        "still open {:?} after the greeting",
        s.now - start
    );
    let resent = s
        .take_sent()
        .iter()
        .filter(|(_, _, t)| matches!(t, Transport::Info { .. }))
        .count();
    assert_eq!(resent, 4, "the first try and 3 retries");
}

#[test]
fn a_user_who_comes_back_from_a_restarted_node_has_the_old_circuit_probed() {
    let mut s = Solo::new(|c| {
        c.circuit.timeout = Duration::from_secs(30);
        c.circuit.retries = 3;
    });
    s.hear("N0NB", "NB", &[]);
    s.datagram("N0NB", "N0NB", &request(1, 1, "N0USR", "N0NB"));
    let old = s.incoming()[0];
    // The node restarted and the user is back: another circuit, other ids.
    s.datagram("N0NB", "N0NB", &request(2, 7, "N0USR", "N0NB"));
    let new = s.incoming()[1];
    // The old circuit gets an empty information frame, which a node that knows it would
    // acknowledge; this one does not, and the circuit is given up.
    let sent = s.take_sent();
    assert!(sent.iter().any(|(_, _, t)| matches!(
        t,
        Transport::Info { your_index: 1, your_id: 1, data, .. } if data.is_empty()
    )));
    s.advance(Duration::from_secs(121));
    assert!(s.events.contains(&Event::Closed {
        circuit: old,
        reason: CloseReason::Timeout
    }));
    assert!(s.node.is_connected(new));
}

#[test]
fn a_probe_that_is_acknowledged_keeps_the_circuit() {
    let mut s = Solo::new(|_| {});
    s.hear("N0NB", "NB", &[]);
    s.datagram("N0NB", "N0NB", &request(1, 1, "N0USR", "N0NB"));
    let old = s.incoming()[0];
    s.datagram("N0NB", "N0NB", &request(2, 7, "N0USR", "N0NB"));
    let _ = s.take_sent();
    s.datagram(
        "N0NB",
        "N0NB",
        &Transport::InfoAck {
            your_index: old.index,
            your_id: old.id,
            rx_seq: 1,
            flags: Flags::default(),
        },
    );
    s.advance(Duration::from_secs(600));
    assert!(s.node.is_connected(old));
    assert!(s.data().is_empty());
}

#[test]
fn nodes_entries_for_the_station_are_ignored_so_users_connects_stay_here() {
    let mut s = Solo::new(|_| {});
    s.hear(
        "N0EVL",
        "QTC",
        &[
            ("N0QTC", "BBS", "N0EVL", 255),
            ("N0FAKE", "QTC", "N0EVL", 255),
        ],
    );
    assert!(s.node.find("N0QTC").is_none());
    assert!(s.node.find("BBS").is_none());
    assert!(s.node.find("QTC").is_none());
    assert!(s.node.find("N0FAKE").is_none());
    assert_eq!(
        s.node.connect(s.now, call("N0USR"), call("N0QTC")),
        Err(crate::Error::UnknownNode)
    );
    // And a broadcast sent under the BBS's call teaches nothing.
    s.hear("N0QTC", "X", &[("N0Y", "Y", "N0X", 255)]);
    assert!(s.node.find("Y").is_none());
}

#[test]
fn a_connect_whose_first_neighbour_is_gone_goes_by_the_next_route_at_once() {
    let mut s = Solo::new(|_| {});
    s.hear("N0DED", "DED", &[("N0FAR", "FAR", "N0X", 255)]);
    s.hear("N0ALT", "ALT", &[("N0FAR", "FAR", "N0X", 150)]);
    let c = s.node.connect(s.now, call("N0USR"), call("N0FAR")).unwrap();
    s.settle();
    let first = s.take_sent();
    assert!(
        matches!(first.last(), Some((n, _, Transport::ConnectRequest { .. })) if *n == call("N0DED"))
    );
    // The AX.25 link to N0DED fails: the request goes again now, through N0ALT.
    s.node.link_failed(
        s.now,
        Via {
            port: 0,
            call: call("N0DED"),
        },
    );
    s.settle();
    let again = s.take_sent();
    assert!(
        matches!(again.last(), Some((n, _, Transport::ConnectRequest { .. })) if *n == call("N0ALT")),
        "{again:?}"
    );
    assert!(s.node.find("DED").is_none());
    assert!(s.node.find("FAR").unwrap().routes.len() == 1);
    // No route left at all: the circuit is closed as unreachable, and the user told so.
    s.node.link_failed(
        s.now,
        Via {
            port: 0,
            call: call("N0ALT"),
        },
    );
    s.settle();
    assert!(s.events.contains(&Event::Closed {
        circuit: c,
        reason: CloseReason::Unreachable
    }));
}

#[test]
fn a_silent_neighbour_is_called_and_goes_when_its_link_fails() {
    let mut s = Solo::new(|c| c.broadcast = Duration::from_secs(10));
    s.hear("N0DED", "DED", &[("N0FAR", "FAR", "N0X", 255)]);
    let _ = s.take_sent();
    // Three of our broadcasts without one from N0DED: a datagram goes to it (the port opens
    // a link to carry it).
    s.advance(Duration::from_secs(31));
    let sent = s.take_sent();
    assert!(
        sent.iter().any(|(n, h, t)| *n == call("N0DED")
            && h.dest == call("N0DED")
            && matches!(t, Transport::Extension { .. })),
        "{sent:?}"
    );
    assert!(s.node.find("FAR").is_some());
    s.node.link_failed(
        s.now,
        Via {
            port: 0,
            call: call("N0DED"),
        },
    );
    assert!(s.node.find("FAR").is_none() && s.node.find("DED").is_none());
}
