//! A qtc node (N0QTC, node N0QTC-1, alias QTC) on AXUDP against scripted NET/ROM neighbours
//! played by the test (tests/netrom_util): a stranger node naming a forwarding partner's call,
//! a hostile neighbour opening every circuit it can and then falling silent, advertising the
//! station's own calls and alias, a node that restarted under a user's circuit, and a station
//! at an address that is not one of the port's peers.
#![allow(clippy::disallowed_methods)]

mod common;
mod netrom_util;
mod radio_util;

use std::time::Duration;

use common::{Daemon, PATIENCE};
use netrom_util::{axudp_port, connect_request, info, Neighbour, QUICK_LINKS};
use radio_util::{free_udp_port, seed};

/// A qtc node whose AXUDP peers are the scripted neighbours `peers` (node call, UDP port).
fn qtc(listen: u16, peers: &[(&str, u16)], users: &[(&str, &str, &str)], extra: &str) -> Daemon {
    let d = Daemon::start_bbs(
        "N0QTC",
        users,
        &format!(
            "{}[netrom]\nalias = \"QTC\"\nbroadcast = \"30m\"\n{extra}",
            axudp_port(listen, peers, QUICK_LINKS)
        ),
    );
    d.wait_for_log("device open port=udp");
    d
}

/// How many bulletins wait for `call` (the line `qtc fwd queue CALL` ends with).
fn queued(d: &Daemon, call: &str) -> String {
    let q = d.fwd_queue(Some(call));
    q.lines().last().unwrap_or_default().to_string()
}

/// The bar (bars/abuse): a circuit from a stranger node that names the partner's call gets a
/// user's session, never the partner's forwarding session (its SID, its queue); the partner's
/// own node, opening the same circuit, gets the SID. Before, any node naming N0PTR got it.
#[test]
fn a_circuit_naming_the_partner_from_a_stranger_node_gets_no_forwarding_sid() {
    let (q, evl, ptr) = (free_udp_port(), free_udp_port(), free_udp_port());
    let d = qtc(
        q,
        &[("N0EVL-1", evl), ("N0PTR-1", ptr)],
        &[("N0PTR", "x", "--bbs")],
        "[[partner]]\ncallsign = \"N0PTR\"\nconnect = \"netrom:PTR\"\nprotocol = \"b1\"\n\
         routes = [\"N0PTR\", \"WW\"]\n",
    );
    seed(&d, 6, "Q");
    let before = queued(&d, "N0PTR");
    assert!(before.contains('6'), "{before}");
    let mut evl = Neighbour::new("N0EVL-1", evl, q);
    let mut ptr = Neighbour::new("N0PTR-1", ptr, q);
    evl.broadcast("EVL", &[]);
    ptr.broadcast("PTR", &[]);
    d.wait_for_log("NET/ROM route learned: EVL:N0EVL-1");
    d.wait_for_log("NET/ROM route learned: PTR:N0PTR-1");
    // The stranger's circuit, naming the partner.
    evl.send(
        "N0QTC-1",
        "N0EVL-1",
        &connect_request(1, 1, "N0PTR", "N0EVL-1"),
    );
    assert!(
        evl.run_until(PATIENCE, |n| n.text(1, 1).contains("de N0QTC>")),
        "no prompt: {:?}\n{}",
        evl.text(1, 1),
        d.log()
    );
    // It forwards anyway: a SID, FF. To a user's session these are unknown commands.
    let theirs = evl.answer(1, 1).flatten().unwrap();
    evl.send(
        "N0QTC-1",
        "N0EVL-1",
        &info(theirs, 0, b"[FBB-7.0.10-AB1FHM$]\rFF\r"),
    );
    assert!(evl.run_until(PATIENCE, |n| n.text(1, 1).matches("de N0QTC>").count() >= 3));
    let said = evl.text(1, 1);
    assert!(
        !said.contains("[QTC-"),
        "a forwarding SID to a stranger: {said}"
    );
    assert!(said.contains("Hello N0PTR"), "{said}");
    assert_eq!(queued(&d, "N0PTR"), before);
    d.wait_for_log("a forwarding partner's call by a way not configured for it");
    // The partner's own node: its forwarding session.
    ptr.send(
        "N0QTC-1",
        "N0PTR-1",
        &connect_request(1, 1, "N0PTR", "N0PTR-1"),
    );
    assert!(
        ptr.run_until(PATIENCE, |n| n.text(1, 1).contains("[QTC-")),
        "no SID for the partner: {:?}",
        ptr.text(1, 1)
    );
}

/// A partner that comes another way with a `secret` is challenged (FBB's `SYS` challenge, MD5
/// form); one that cannot answer is sent away with nothing.
#[test]
fn a_partner_by_another_way_with_a_secret_is_challenged() {
    let (q, evl) = (free_udp_port(), free_udp_port());
    let d = qtc(
        q,
        &[("N0EVL-1", evl)],
        &[("N0PTR", "x", "--bbs")],
        "[[partner]]\ncallsign = \"N0PTR\"\nsecret = \"SECRETWORD\"\nroutes = [\"N0PTR\"]\n",
    );
    let mut evl = Neighbour::new("N0EVL-1", evl, q);
    evl.broadcast("EVL", &[]);
    d.wait_for_log("NET/ROM route learned: EVL:N0EVL-1");
    evl.send(
        "N0QTC-1",
        "N0EVL-1",
        &connect_request(1, 1, "N0PTR", "N0EVL-1"),
    );
    // Five positions and a 10-digit number, before any SID.
    assert!(evl.run_until(PATIENCE, |n| n.text(1, 1).ends_with('\r')));
    let line = evl.text(1, 1);
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.len(), 6, "{line:?}");
    assert!(!line.contains("[QTC-"), "{line}");
    let theirs = evl.answer(1, 1).flatten().unwrap();
    evl.send("N0QTC-1", "N0EVL-1", &info(theirs, 0, b"12345\r"));
    assert!(evl.run_until(PATIENCE, |n| n
        .text(1, 1)
        .contains("Challenge not answered")));
    assert!(!evl.text(1, 1).contains("[QTC-"));
    // The right answer (what the partner, knowing the secret, computes) gets the SID.
    evl.send(
        "N0QTC-1",
        "N0EVL-1",
        &connect_request(2, 1, "N0PTR", "N0EVL-1"),
    );
    assert!(evl.run_until(PATIENCE, |n| n.text(2, 1).ends_with('\r')));
    let answer =
        qtc_fbb::challenge::sys_answer(evl.text(2, 1).trim().as_bytes(), "SECRETWORD").unwrap();
    let theirs = evl.answer(2, 1).flatten().unwrap();
    evl.send(
        "N0QTC-1",
        "N0EVL-1",
        &info(theirs, 0, format!("{answer}\r").as_bytes()),
    );
    assert!(
        evl.run_until(PATIENCE, |n| n.text(2, 1).contains("[QTC-")),
        "{:?}\n{}",
        evl.text(2, 1),
        d.log()
    );
}

/// One neighbour cannot hold every circuit: circuits per originating node and per neighbour
/// are capped, a real user through another neighbour still gets in, and the hostile
/// neighbour's circuits end once it falls silent (their retries spent). Its NODES entries for
/// the station's own call and alias are not learned. Before: 32 of 32 circuits, open ten
/// minutes after it fell silent; `BBS:N0QTC` learned and `C N0QTC` sent to it.
#[test]
fn a_hostile_neighbour_takes_its_share_of_circuits_and_loses_them_when_silent() {
    let (q, evl, nb) = (free_udp_port(), free_udp_port(), free_udp_port());
    let d = qtc(
        q,
        &[("N0EVL-1", evl), ("N0NB-1", nb)],
        &[("N0REAL", "pw", "")],
        "max_circuits = 8\nmax_circuits_per_node = 2\n\
         transport_timeout = \"2s\"\ntransport_retries = 2\n",
    );
    let mut evl = Neighbour::new("N0EVL-1", evl, q);
    let mut nb = Neighbour::new("N0NB-1", nb, q);
    evl.broadcast(
        "EVL",
        &[
            ("N0QTC", "BBS", "N0EVL-1", 255),
            ("N0FAKE", "QTC", "N0EVL-1", 255),
            ("N0OK", "OK", "N0EVL-1", 255),
        ],
    );
    nb.broadcast("NB", &[]);
    d.wait_for_log("NET/ROM route learned: OK:N0OK");
    d.wait_for_log("NET/ROM route learned: NB:N0NB-1");
    let nodes = d.ctl(&["nodes"]);
    assert!(
        !nodes.contains("BBS:N0QTC") && !nodes.contains("N0FAKE") && !nodes.contains("QTC:N0F"),
        "{nodes}"
    );
    // Twelve circuits from six nodes behind the hostile neighbour (origins are only claims).
    for i in 0..12u8 {
        let node = format!("N0FK{}", i / 2);
        evl.send(
            "N0QTC-1",
            &node,
            &connect_request(i + 1, 1, &format!("N0U{i}"), &node),
        );
    }
    assert!(evl.run_until(PATIENCE, |n| (1..=12).all(|i| n.answer(i, 1).is_some())));
    let granted = (1..=12)
        .filter(|&i| evl.answer(i, 1).flatten().is_some())
        .count();
    // Half of max_circuits through one neighbour.
    assert_eq!(granted, 4, "{}", d.log());
    // A real user through the other neighbour gets in.
    nb.send(
        "N0QTC-1",
        "N0NB-1",
        &connect_request(1, 1, "N0REAL", "N0NB-1"),
    );
    assert!(nb.run_until(PATIENCE, |n| n.text(1, 1).contains("de N0QTC>")));
    // The hostile neighbour falls silent: its circuits' greetings are never acknowledged, and
    // each is given up after its retries (2 s, then 2 more tries).
    evl.acks = false;
    d.wait_for_log_count("reason=Timeout", granted);
    let circuits = d.ctl(&["nodes"]);
    let open = circuits
        .lines()
        .skip_while(|l| !l.starts_with("circuits"))
        .skip(1)
        .count();
    assert_eq!(open, 1, "{circuits}");
    assert!(circuits.contains("N0REAL"), "{circuits}");
}

/// A user's node restarted and the user is back on a new circuit: the old circuit (which the
/// node forgot, and which nothing would ever close) is asked for an acknowledgement, gets
/// none, and is closed within its retries, not at the BBS's idle timeout (`U` listed the user
/// twice for half an hour).
#[test]
fn a_circuit_from_a_node_that_restarted_is_closed_when_its_user_comes_back() {
    let (q, nb) = (free_udp_port(), free_udp_port());
    let d = qtc(
        q,
        &[("N0NB-1", nb)],
        &[("N0USR", "pw", "")],
        "transport_timeout = \"2s\"\ntransport_retries = 2\n",
    );
    let mut nb = Neighbour::new("N0NB-1", nb, q);
    nb.broadcast("NB", &[]);
    d.wait_for_log("NET/ROM route learned: NB:N0NB-1");
    nb.send(
        "N0QTC-1",
        "N0NB-1",
        &connect_request(1, 1, "N0USR", "N0NB-1"),
    );
    assert!(nb.run_until(PATIENCE, |n| n.text(1, 1).contains("de N0QTC>")));
    // The node restarts: circuit 1/1 is forgotten, the user connects again.
    nb.forget(1, 1);
    nb.send(
        "N0QTC-1",
        "N0NB-1",
        &connect_request(2, 1, "N0USR", "N0NB-1"),
    );
    assert!(nb.run_until(PATIENCE, |n| n.text(2, 1).contains("de N0QTC>")));
    d.wait_for_log("reason=Timeout");
    let who = d.ctl(&["status"]);
    assert_eq!(who.matches("N0USR").count(), 1, "{who}");
    let circuits = d.ctl(&["nodes"]);
    assert!(circuits.contains("circuits (1):"), "{circuits}");
}

/// `qtc ctl nodes` says what is true when asked: every broadcast heard counts at once, not
/// only when a circuit or a route changed.
#[test]
fn ctl_nodes_shows_the_counts_of_the_moment() {
    let (q, nb) = (free_udp_port(), free_udp_port());
    let d = qtc(q, &[("N0NB-1", nb)], &[], "");
    let mut nb = Neighbour::new("N0NB-1", nb, q);
    nb.broadcast("NB", &[("N0FAR", "FAR", "N0X", 200)]);
    d.wait_for_log("NET/ROM route learned: FAR:N0FAR");
    for n in 2..=4 {
        // The same broadcast again: nothing changes in the tables.
        nb.broadcast("NB", &[("N0FAR", "FAR", "N0X", 200)]);
        d.wait_for_log_count("NODES heard from N0NB-1", n);
        let out = d.ctl(&["nodes"]);
        assert!(
            out.contains(&format!("since start: {n} broadcasts heard")),
            "after {n}: {out}"
        );
    }
}

/// A SABM from an address that is not one of the AXUDP port's peers gets no session (its
/// answers would have gone to the configured peers); a peer's does.
#[test]
fn an_axudp_station_at_an_unknown_address_gets_no_session() {
    let (q, nb, stranger) = (free_udp_port(), free_udp_port(), free_udp_port());
    let d = qtc(q, &[("N0NB-1", nb)], &[], "");
    let mut s = Neighbour::new("N0STR", stranger, q);
    let mut nb = Neighbour::new("N0NB", nb, q);
    s.open("N0QTC");
    nb.open("N0QTC");
    assert!(nb.run_until(PATIENCE, |n| n.connected("N0QTC")));
    d.wait_for_log("incoming link port=udp remote=N0NB");
    // The daemon read the stranger's SABM before the peer's (one socket, in order) and logged
    // the peer's link: the stranger's, had it been taken, would be in the log already.
    assert!(!s.run_until(Duration::ZERO, |n| n.connected("N0QTC")));
    assert!(!d.log().contains("remote=N0STR"), "{}", d.log());
}
