//! Circuits across the simulated chain: connect, data both ways, loss, choke, close, reset.

use std::time::Duration;

use super::node::{chain, chain_with, knows};
use super::util::{call, config, Net};
use crate::{CircuitId, CloseReason, Event};

fn learned(seed: u64) -> Net {
    learned_with(chain(seed))
}

fn learned_with(mut net: Net) -> Net {
    assert!(
        net.run_until(Duration::from_secs(20), |n| knows(n, 0, "CCC")
            && knows(n, 2, "AAA"))
    );
    net
}

fn incoming(net: &Net, who: usize) -> Option<CircuitId> {
    net.members[who].events.iter().find_map(|e| match e {
        Event::Incoming { circuit, .. } => Some(*circuit),
        _ => None,
    })
}

fn closed(net: &Net, who: usize) -> Option<CloseReason> {
    net.members[who].events.iter().find_map(|e| match e {
        Event::Closed { reason, .. } => Some(*reason),
        _ => None,
    })
}

/// A user on A opens a circuit to C; returns both ends' ids.
fn open(net: &mut Net) -> (CircuitId, CircuitId) {
    let now = net.now;
    let a = net.members[0]
        .node
        .connect(now, call("N0USR-3"), call("N0CCC"))
        .unwrap();
    assert!(net.run_until(Duration::from_secs(30), |n| n.members[0]
        .events
        .contains(&Event::Connected { circuit: a })));
    let c = incoming(net, 2).unwrap();
    let from = net.members[2].events.iter().find_map(|e| match e {
        Event::Incoming { user, node, .. } => Some((*user, *node)),
        _ => None,
    });
    assert_eq!(from, Some((call("N0USR-3"), call("N0AAA"))));
    (a, c)
}

fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8 ^ salt).collect()
}

fn transfer(net: &mut Net, a: CircuitId, c: CircuitId, n: usize) {
    let (to_c, to_a) = (pattern(n, 0), pattern(n / 2, 0x55));
    net.members[0].to_send.insert(a, to_c.clone());
    net.members[2].to_send.insert(c, to_a.clone());
    let done = net.run_until(Duration::from_secs(3600), |net| {
        net.members[2].rx.get(&c).map_or(0, Vec::len) >= to_c.len()
            && net.members[0].rx.get(&a).map_or(0, Vec::len) >= to_a.len()
    });
    assert!(
        done,
        "transfer stalled: A {:?} C {:?}",
        net.members[0].events, net.members[2].events
    );
    assert_eq!(net.members[2].rx[&c], to_c);
    assert_eq!(net.members[0].rx[&a], to_a);
}

#[test]
fn data_flows_both_ways_and_a_close_reaches_the_far_end() {
    let mut net = learned(10);
    let (a, c) = open(&mut net);
    transfer(&mut net, a, c, 20_000);
    let now = net.now;
    net.members[0].node.close(now, a);
    assert!(
        net.run_until(Duration::from_secs(30), |n| closed(n, 0).is_some()
            && closed(n, 2).is_some())
    );
    assert_eq!(closed(&net, 0), Some(CloseReason::Local));
    assert_eq!(closed(&net, 2), Some(CloseReason::Remote));
    // The slots are free again, and nothing is left to wake for but the broadcasts.
    net.run_for(Duration::from_secs(1));
    assert!(net.members[0].node.circuits().is_empty());
    assert!(net.members[2].node.circuits().is_empty());
}

#[test]
fn a_lossy_path_loses_nothing_and_repeats_nothing() {
    for seed in 20..24 {
        // Loss here is what AX.25 resets lose, far rarer than frames lost on the air; with it
        // this high, the circuits need JNOS's 10 retries, and the routes (broadcasts are lost
        // as often, and the jittered intervals age a route twice between two refreshes now and
        // then) a longer obsolescence count than the default 6.
        let mut net = learned_with(chain_with(seed, |c| {
            c.circuit.retries = 10;
            c.obsolescence = 12;
            c.obsolescence_min = 8;
        }));
        let (a, c) = open(&mut net);
        net.loss = 0.15;
        transfer(&mut net, a, c, 30_000);
        let stats = net.members[0].node.circuits()[0].stats;
        assert!(stats.info_resent > 0, "no loss happened? {stats:?}");
    }
}

#[test]
fn a_reader_that_does_not_keep_up_chokes_the_sender() {
    let mut net = learned(30);
    let (a, c) = open(&mut net);
    net.members[2].hold_events = true;
    net.members[0].to_send.insert(a, pattern(40_000, 1));
    net.run_for(Duration::from_secs(60));
    // C held at most its receive buffer plus a window of frames.
    let left = net.members[0].to_send[&a].len();
    assert!(left > 20_000, "only {left} bytes held back");
    net.members[2].hold_events = false;
    assert!(net.run_until(Duration::from_secs(1200), |n| n.members[2]
        .rx
        .get(&c)
        .map_or(0, Vec::len)
        >= 40_000));
    assert_eq!(net.members[2].rx[&c], pattern(40_000, 1));
}

#[test]
fn a_node_that_restarted_resets_the_circuit() {
    let mut net = learned(40);
    let (a, _c) = open(&mut net);
    // C restarts: its circuits are gone, its routes (to A) come back from B.
    let now = net.now;
    net.members[2].node = crate::Node::new(config("N0CCC", "CCC", 1), now);
    assert!(net.run_until(Duration::from_secs(30), |n| knows(n, 2, "AAA")));
    net.members[0].to_send.insert(a, b"hello".to_vec());
    assert!(net.run_until(Duration::from_secs(30), |n| closed(n, 0).is_some()));
    assert_eq!(closed(&net, 0), Some(CloseReason::Reset));
}

#[test]
fn a_caller_that_restarted_gets_a_new_circuit_on_the_same_ids() {
    let mut net = learned(41);
    let (a, c) = open(&mut net);
    transfer(&mut net, a, c, 300);
    // A restarts before C hears of it: its circuit ids start again where they did at boot, so
    // its next connect request names the circuit C still holds.
    let now = net.now;
    net.members[0].node = crate::Node::new(config("N0AAA", "AAA", 1), now);
    net.members[0].events.clear();
    net.members[0].rx.clear();
    net.members[2].events.clear();
    assert!(net.run_until(Duration::from_secs(30), |n| knows(n, 0, "CCC")));
    let (a2, c2) = open(&mut net);
    assert_eq!(a2, a, "the restarted node uses the same ids again");
    assert_ne!(
        c2, c,
        "C opened a new circuit instead of acknowledging the old one again"
    );
    assert_eq!(closed(&net, 2), Some(CloseReason::Reset));
    transfer(&mut net, a2, c2, 300);
}

#[test]
fn connects_beyond_the_circuit_limit_are_refused() {
    let mut net = learned_with(chain_with(50, |c| {
        if c.call == call("N0CCC") {
            c.max_circuits = 1;
        }
    }));
    let now = net.now;
    let first = net.members[0]
        .node
        .connect(now, call("N0USR"), call("N0CCC"))
        .unwrap();
    let second = net.members[0]
        .node
        .connect(now, call("N0OTH"), call("N0CCC"))
        .unwrap();
    assert!(net.run_until(Duration::from_secs(30), |n| closed(n, 0).is_some()));
    let ev = &net.members[0].events;
    assert!(ev.contains(&Event::Connected { circuit: first }));
    assert!(ev.contains(&Event::Closed {
        circuit: second,
        reason: CloseReason::Refused
    }));
}

#[test]
fn a_connect_to_an_unknown_or_own_node_fails_at_once() {
    let mut net = learned(60);
    let now = net.now;
    let a = &mut net.members[0].node;
    assert_eq!(
        a.connect(now, call("N0USR"), call("N0ZZZ")),
        Err(crate::Error::UnknownNode)
    );
    assert_eq!(
        a.connect(now, call("N0USR"), call("N0AAA")),
        Err(crate::Error::ToSelf)
    );
}

#[test]
fn a_connect_that_gets_no_answer_times_out() {
    let mut net = learned(70);
    net.members[2].up = false;
    let now = net.now;
    let a = net.members[0]
        .node
        .connect(now, call("N0USR"), call("N0CCC"))
        .unwrap();
    assert!(net.run_until(Duration::from_secs(600), |n| closed(n, 0).is_some()));
    assert!(net.members[0].events.contains(&Event::Closed {
        circuit: a,
        reason: CloseReason::Timeout
    }));
}
