//! LinBPQ as a NET/ROM neighbour, as transcripts of its frames (it has no package: its wire
//! behaviour is read from its source, L4Code.c, and played here by a scripted node over
//! AXUDP). A user's `C BPQBBS` (its BBS application's alias, as docs/netrom.md says to use)
//! reaches the BBS: BPQ acknowledges the connect from the application's call N0BPQ-1 and sends
//! the circuit's data from its node call N0BPQ. Before, qtc took the data for a stranger's,
//! answered with a reset and BPQ dropped the circuit: "Connected", then nothing.
#![allow(clippy::disallowed_methods)]

mod common;
mod netrom_util;
mod radio_util;

use common::{Daemon, PATIENCE};
use netrom_util::{axudp_port, Neighbour, QUICK_LINKS};
use qtc_netrom::wire::{Flags, Transport};
use radio_util::free_udp_port;

#[test]
fn a_user_reaches_linbpqs_bbs_by_its_alias() {
    let (q, bpq) = (free_udp_port(), free_udp_port());
    let d = Daemon::start_bbs(
        "N0QTC",
        &[("N0USR", "pw", "")],
        &format!(
            "{}[netrom]\nalias = \"QTC\"\nbroadcast = \"30m\"\n",
            axudp_port(q, &[("N0BPQ", bpq)], QUICK_LINKS)
        ),
    );
    d.wait_for_log("device open port=udp");
    let mut n = Neighbour::new("N0BPQ", bpq, q);
    // BPQ's NODES: its node alias, and its BBS application (APPLCALL N0BPQ-1, APPLALIAS
    // BPQBBS) with its node as the best neighbour.
    n.broadcast("BPQ", &[("N0BPQ-1", "BPQBBS", "N0BPQ", 255)]);
    d.wait_for_log("NET/ROM route learned: BPQBBS:N0BPQ-1 via N0BPQ");
    let mut u = d.connect();
    u.expect("Callsign:");
    u.send("N0USR");
    u.expect("Password:");
    u.send("pw");
    u.expect("de N0QTC>");
    u.send("C BPQBBS");
    // qtc's connect request, to the application's call.
    assert!(n.run_until(PATIENCE, |n| n.got.iter().any(|(h, t)| {
        h.dest.to_string() == "N0BPQ-1" && matches!(t, Transport::ConnectRequest { .. })
    })));
    let (index, id) = n
        .got
        .iter()
        .find_map(|(_, t)| match t {
            Transport::ConnectRequest {
                my_index, my_id, ..
            } => Some((*my_index, *my_id)),
            _ => None,
        })
        .unwrap();
    // SendConACK: from N0BPQ-1, its circuit 0/0x21 (BPQ's indexes start at 0).
    let ack = Transport::ConnectAck {
        your_index: index,
        your_id: id,
        my_index: 0,
        my_id: 0x21,
        window: 4,
        refused: false,
        bpq_ttl: None,
    };
    n.send("N0QTC-1", "N0BPQ-1", &ack);
    u.expect("*** Connected to BPQBBS:N0BPQ-1");
    // SENDL4MESSAGE: the BBS's greeting, from the node call N0BPQ (L4MYCALL).
    let greeting = Transport::Info {
        your_index: index,
        your_id: id,
        tx_seq: 0,
        rx_seq: 0,
        flags: Flags::default(),
        data: b"Hello N0USR. Latest Message is 1, Last listed is 0\rde N0BPQ>\r".to_vec(),
    };
    n.send("N0QTC-1", "N0BPQ", &greeting);
    u.expect("de N0BPQ>");
    // What the user types goes to the application's call, and no reset went back.
    u.send("L");
    assert!(n.run_until(PATIENCE, |n| n.got.iter().any(|(h, t)| {
        h.dest.to_string() == "N0BPQ-1"
            && matches!(t, Transport::Info { data, .. } if data.starts_with(b"L\r"))
    })));
    assert!(
        !n.got
            .iter()
            .any(|(_, t)| matches!(t, Transport::Reset { .. })),
        "{:?}",
        n.got
    );
}
