//! Routing across simulated nodes: learning, forgetting, passing datagrams on.

use std::time::Duration;

use super::util::{call, config, Net};
use crate::table::Loss;
use crate::{Change, Event, RouteKind};

/// A - B - C: A and C cannot hear each other.
pub(crate) fn chain(seed: u64) -> Net {
    chain_with(seed, |_| {})
}

/// The chain, each node's config changed by `tweak` first.
pub(crate) fn chain_with(seed: u64, tweak: impl Fn(&mut crate::Config)) -> Net {
    let mut cfgs = vec![
        config("N0AAA", "AAA", 1),
        config("N0BBB", "BBB", 2),
        config("N0CCC", "CCC", 1),
    ];
    cfgs.iter_mut().for_each(tweak);
    let mut net = Net::new(cfgs, seed);
    net.link((0, 0), (1, 0));
    net.link((1, 1), (2, 0));
    net
}

pub(crate) fn knows(net: &Net, who: usize, alias: &str) -> bool {
    net.members[who].node.find(alias).is_some()
}

#[test]
fn a_chain_learns_the_far_node_with_the_product_of_the_qualities() {
    let mut net = chain(1);
    // Each node broadcasts at start, and again at once to a new neighbour: well within one
    // broadcast interval.
    assert!(
        net.run_until(Duration::from_secs(10), |n| knows(n, 0, "CCC")
            && knows(n, 2, "AAA"))
    );
    let a = &net.members[0].node;
    let c = a.find("ccc").unwrap();
    assert_eq!(c.call, call("N0CCC"));
    let r = c.best().unwrap();
    assert_eq!(r.via.call, call("N0BBB"));
    assert_eq!(r.quality, 144); // (192 × 192 + 128) / 256
    assert_eq!(r.kind, RouteKind::Learned);
    let b = a.find("BBB").unwrap().best().unwrap();
    assert_eq!((b.via.call, b.quality), (call("N0BBB"), 192));
    assert_eq!(a.neighbours().count(), 1);
    // Learned routes were reported.
    assert!(net.members[0].events.iter().any(|e| matches!(
        e,
        Event::Table(Change::RouteLearned { node, quality: 144, .. }) if *node == call("N0CCC")
    )));
}

#[test]
fn a_node_that_goes_away_is_dropped_after_its_obsolescence_count() {
    let mut net = chain(2);
    assert!(net.run_until(Duration::from_secs(10), |n| knows(n, 0, "CCC")));
    let gone_at = net.now;
    net.members[2].up = false;
    // B stops advertising C once C's count is below the minimum (6 → 4 < 5: two missed
    // broadcasts); A's own count for C then runs out over 6 of A's broadcasts.
    assert!(net.run_until(Duration::from_secs(200), |n| !knows(n, 0, "CCC")));
    let took = net.now - gone_at;
    assert!(took >= Duration::from_secs(60), "dropped after {took:?}");
    assert!(took <= Duration::from_secs(100), "dropped after {took:?}");
    assert!(net.members[0].events.iter().any(|e| matches!(
        e,
        Event::Table(Change::RouteLost { node, why: Loss::Obsolete, last: true, .. })
            if *node == call("N0CCC")
    )));
    // B is still there.
    assert!(knows(&net, 0, "BBB"));
    assert!(!knows(&net, 1, "CCC"));
}

#[test]
fn an_idle_node_wakes_only_for_its_broadcast() {
    let mut net = chain(3);
    assert!(net.run_until(Duration::from_secs(10), |n| knows(n, 0, "CCC")));
    net.run_for(Duration::from_secs(1));
    for m in &net.members {
        let t = m.node.poll_timeout().unwrap();
        assert!(
            t > net.now + Duration::from_secs(5),
            "a timer other than the broadcast"
        );
    }
}

#[test]
fn a_datagram_whose_ttl_is_spent_is_not_passed_on() {
    let mut net = chain(4);
    assert!(net.run_until(Duration::from_secs(10), |n| knows(n, 1, "CCC")));
    let h = crate::wire::NetHeader {
        origin: call("N0AAA"),
        dest: call("N0CCC"),
        ttl: 1,
    };
    let b = &mut net.members[1].node;
    let before = b.stats();
    b.handle_datagram(net.now, 0, call("N0AAA"), &h.datagram(&[0; 5]));
    assert!(b.poll_transmit(net.now).is_none());
    assert_eq!(b.stats().dropped, before.dropped + 1);
    let h = crate::wire::NetHeader { ttl: 2, ..h };
    b.handle_datagram(net.now, 0, call("N0AAA"), &h.datagram(&[0; 5]));
    match b.poll_transmit(net.now) {
        Some(crate::Transmit::Datagram {
            neighbour, data, ..
        }) => {
            assert_eq!(neighbour, call("N0CCC"));
            assert_eq!(data[14], 1);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn broadcasts_on_a_port_of_quality_zero_are_ignored() {
    let mut cfg = config("N0AAA", "AAA", 2);
    cfg.ports = vec![0, 192];
    let mut net = super::util::Net::new(vec![cfg, config("N0BBB", "BBB", 1)], 5);
    net.link((0, 0), (1, 0));
    net.run_for(Duration::from_secs(30));
    assert!(!knows(&net, 0, "BBB"));
    // And A never broadcast there.
    assert!(!knows(&net, 1, "AAA"));
}

#[test]
fn a_restarted_node_polls_and_relearns_before_the_next_broadcast() {
    let mut net = chain(6);
    assert!(net.run_until(Duration::from_secs(10), |n| knows(n, 1, "CCC")));
    net.run_for(Duration::from_secs(3));
    // B starts again with empty tables; A and C know it already, so only its poll makes them
    // answer before their next broadcast, 10 s away.
    let now = net.now;
    net.members[1].node = crate::Node::new(super::util::config("N0BBB", "BBB", 2), now);
    assert!(net.run_until(Duration::from_secs(2), |n| knows(n, 1, "AAA")
        && knows(n, 1, "CCC")));
}
