//! Small networks of qtc NET/ROM nodes over AXUDP (tests/netrom_util's `Network`: each node
//! hears only the nodes it is linked to), as docs/netrom.md sets a node up, with nodes killed
//! under the others: a `C` to a node behind a killed neighbour goes by the other route; a
//! user's circuit to a node that died brings the user back with the reason; a user who leaves
//! closes their circuit; nodes started together do not broadcast in step.
#![allow(clippy::disallowed_methods)]

mod common;
mod netrom_util;
mod radio_util;

use std::time::Duration;

use common::{Client, Daemon};
use netrom_util::Network;

/// How long a node may take to learn the network (broadcasts every 5 s, one hop each).
const LEARN_WITHIN: Duration = Duration::from_secs(60);
/// Circuits given up 2 s x (2 + 1) after the first unanswered frame.
const FAST: &str = "transport_timeout = \"2s\"\ntransport_retries = 2\n";

/// N0USR logged in on `d`'s telnet port, at the prompt.
fn user(d: &Daemon) -> Client {
    let mut u = d.connect();
    u.expect("Callsign:");
    u.send("N0USR");
    u.expect("Password:");
    u.send("pw");
    u.expect(">");
    u
}

/// The bar (bars/network): A hears B and C, both hear D. With A's best neighbour towards D
/// killed, `C DDD` on A reaches D by the other route: the link to the dead neighbour fails,
/// its routes go, and the connect request goes again at once by the next route. Before, the
/// circuit waited on the dead neighbour until it gave up (or the neighbour came back).
#[test]
fn a_connect_to_a_node_behind_a_killed_neighbour_goes_by_the_other_route() {
    // The circuits' own timers as a sysop leaves them (30 s): the link to the dead neighbour
    // (frack 1 s, 3 retries here) fails well before.
    let mut net = Network::start(
        &["AAA", "BBB", "CCC", "DDD"],
        &[(0, 1), (0, 2), (1, 3), (2, 3)],
        "",
    );
    // Both routes to D known at A.
    net.node(0)
        .wait_for_log_count_within("NET/ROM route learned: DDD:N0DDD-1", 2, LEARN_WITHIN);
    let nodes: serde_json::Value =
        serde_json::from_str(&net.node(0).ctl(&["nodes", "--json"])).unwrap();
    let d = nodes["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["alias"] == "DDD")
        .unwrap();
    assert_eq!(d["routes"].as_array().unwrap().len(), 2, "{d}");
    let best = d["routes"][0]["neighbour"].as_str().unwrap().to_string();
    let dead = if best == "N0BBB-1" { 1 } else { 2 };
    net.kill(dead);
    let mut u = user(net.node(0));
    u.send("C DDD");
    // A's link to the dead neighbour fails (its SABMs unanswered: some 10 s), then D's own, if
    // its answer took the same dead way.
    u.expect_within("*** Connected to DDD:N0DDD-1", LEARN_WITHIN);
    let hello = u.expect("de N0DDD>");
    assert!(hello.contains("welcome to N0DDD"), "{hello}");
    let a = net.node(0);
    a.wait_for_log(&format!("NET/ROM route lost: DDD:N0DDD-1 via {best}"));
    assert!(
        a.log().contains("its neighbour does not answer"),
        "{}",
        a.log()
    );
    u.send("B");
    u.expect("Back at N0AAA");
}

/// A user on A is connected to C's BBS through B; C dies. The user's next line gets no answer:
/// within the circuit's retries they are back at A's prompt, told why. Before: 10 to 15
/// minutes with no answer and no way back.
#[test]
fn a_user_whose_far_node_died_is_brought_back_and_told_why() {
    let mut net = Network::start(&["AAA", "BBB", "CCC"], &[(0, 1), (1, 2)], FAST);
    net.wait_learned(0, &["CCC"], LEARN_WITHIN);
    let mut u = user(net.node(0));
    u.send("C CCC");
    u.expect("*** Connected to CCC:N0CCC-1");
    u.expect("de N0CCC>");
    net.kill(2);
    u.send("L");
    let back = u.expect("de N0AAA>");
    assert!(back.contains("*** Failure with CCC"), "{back}");
}

/// A user on A connected to C who just goes (their telnet connection closes): the circuit is
/// closed, and C's session with it.
#[test]
fn a_user_who_leaves_closes_their_circuit() {
    let net = Network::start(&["AAA", "BBB", "CCC"], &[(0, 1), (1, 2)], FAST);
    net.wait_learned(0, &["CCC"], LEARN_WITHIN);
    let mut u = user(net.node(0));
    u.send("C CCC");
    u.expect("*** Connected to CCC:N0CCC-1");
    u.expect("de N0CCC>");
    drop(u);
    net.node(0).wait_for_log("NET/ROM circuit closed");
    net.node(2).wait_for_log("NET/ROM circuit closed");
    net.node(2)
        .wait_for_log("netrom{user=N0USR}: qtc::bbs_port::conn: disconnected");
}

/// The bar (bars/interop4): two nodes started together do not send NODES in step. Each
/// broadcast comes a random share of the interval (up to a tenth) before the interval is
/// up, the first one too, and the two nodes' shares differ.
#[test]
fn two_nodes_started_together_do_not_broadcast_in_step() {
    let net = Network::start(&["AAA", "BBB"], &[(0, 1)], "");
    let schedule = |d: &Daemon| -> Vec<u64> {
        d.wait_for_log_count("NET/ROM NODES sent; next broadcast in", 4);
        let log = d.log();
        let first = log
            .lines()
            .find_map(|l| ms_after(l, "NET/ROM first broadcast in "))
            .unwrap();
        std::iter::once(first)
            .chain(
                log.lines()
                    .filter_map(|l| ms_after(l, "NET/ROM NODES sent; next broadcast in ")),
            )
            .collect()
    };
    let (a, b) = (schedule(net.node(0)), schedule(net.node(1)));
    for s in [&a, &b] {
        // The interval is 5 s: the first within half a second, the others 4.5 to 5 s apart.
        assert!(s[0] <= 500, "{s:?}");
        assert!(
            s[1..].iter().all(|&ms| (4_499..=5_000).contains(&ms)),
            "{s:?}"
        );
        assert!(
            s[1..].windows(2).any(|w| w[0] != w[1]),
            "the same gap every time: {s:?}"
        );
    }
    assert_ne!(a, b, "both nodes on the same schedule");
}

/// The number before " ms" after `what` in a log line.
fn ms_after(line: &str, what: &str) -> Option<u64> {
    let rest = &line[line.find(what)? + what.len()..];
    rest.split_whitespace().next()?.parse().ok()
}
