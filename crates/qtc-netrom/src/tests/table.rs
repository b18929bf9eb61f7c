//! The tables alone: qualities, loops, locks, ageing, limits.

use super::util::call;
use crate::table::{combine, Loss, TableConfig, Tables, Via};
use crate::wire::{Alias, Nodes, NodesEntry};
use crate::{Change, RouteKind};

fn tables(max_nodes: usize, max_neighbours: usize) -> Tables {
    Tables::new(config(max_nodes, max_neighbours))
}

fn config(max_nodes: usize, max_neighbours: usize) -> TableConfig {
    TableConfig {
        call: call("N0ME"),
        own: vec![call("N0ME-2")],
        alias: alias("ME"),
        min_quality: 50,
        obsolescence: 3,
        obsolescence_min: 2,
        max_nodes,
        max_neighbours,
    }
}

fn alias(s: &str) -> Alias {
    s.parse().unwrap()
}

fn entry(dest: &str, a: &str, neighbour: &str, quality: u8) -> NodesEntry {
    NodesEntry {
        dest: call(dest),
        alias: alias(a),
        neighbour: call(neighbour),
        quality,
    }
}

fn bc(a: &str, entries: Vec<NodesEntry>) -> Nodes {
    Nodes {
        poll: false,
        alias: alias(a),
        entries,
        skipped: 0,
    }
}

fn via(c: &str) -> Via {
    Via {
        port: 0,
        call: call(c),
    }
}

#[test]
fn quality_is_the_product_over_256_rounded() {
    assert_eq!(combine(255, 255), 254);
    assert_eq!(combine(192, 192), 144);
    assert_eq!(combine(0, 255), 0);
    assert_eq!(combine(255, 0), 0);
    assert_eq!(combine(1, 128), 1); // 0.5 rounds up, as JNOS does
}

#[test]
fn loops_low_quality_and_ourselves_are_not_learned() {
    let mut t = tables(10, 10);
    let new = t.hear(
        via("N0BBB"),
        200,
        &bc(
            "BBB",
            vec![
                entry("N0ME", "ME", "N0BBB", 255),   // ourselves
                entry("N0CCC", "CCC", "N0ME", 255),  // through us: a loop
                entry("N0DDD", "DDD", "N0XXX", 60),  // 60 × 200 / 256 = 47 < 50
                entry("N0EEE", "EEE", "N0XXX", 100), // 78
            ],
        ),
    );
    assert!(new);
    let calls: Vec<String> = t.nodes().map(|n| n.call.to_string()).collect();
    assert_eq!(calls, vec!["N0BBB", "N0EEE"]);
    assert_eq!(t.node(&call("N0EEE")).unwrap().best().unwrap().quality, 78);
    assert!(!t.hear(via("N0BBB"), 200, &bc("BBB", vec![])));
}

#[test]
fn routes_age_and_go_unless_heard_again() {
    let mut t = tables(10, 10);
    t.hear(
        via("N0BBB"),
        200,
        &bc("BBB", vec![entry("N0CCC", "CCC", "N0XXX", 200)]),
    );
    t.take_changes();
    t.age();
    t.age();
    // Count 1 < minimum 2: no longer advertised, still used.
    assert!(t.advertised().is_empty());
    assert!(t.node(&call("N0CCC")).is_some());
    t.hear(via("N0BBB"), 200, &bc("BBB", vec![]));
    t.age();
    // B's own route was refreshed; C's ran out.
    assert!(t.node(&call("N0CCC")).is_none());
    assert_eq!(t.advertised().len(), 1);
    let lost = t.take_changes();
    assert!(lost.iter().any(|c| matches!(
        c,
        Change::RouteLost { node, why: Loss::Obsolete, last: true, .. } if *node == call("N0CCC")
    )));
}

#[test]
fn a_locked_route_never_ages_and_fixes_its_neighbours_quality() {
    let mut t = tables(10, 10);
    t.lock(call("N0BBB"), alias("BBB"), via("N0BBB"), 100);
    for _ in 0..10 {
        t.age();
    }
    let b = t.node(&call("N0BBB")).unwrap().best().unwrap();
    assert_eq!((b.quality, b.kind), (100, RouteKind::Locked));
    // Its broadcasts are weighed with the locked 100, not the port's 200.
    t.hear(
        via("N0BBB"),
        200,
        &bc("BBB", vec![entry("N0CCC", "CCC", "N0XXX", 255)]),
    );
    assert_eq!(t.node(&call("N0CCC")).unwrap().best().unwrap().quality, 100);
    assert_eq!(t.node(&call("N0BBB")).unwrap().best().unwrap().quality, 100);
}

#[test]
fn at_most_three_routes_per_node_the_best_kept() {
    let mut t = tables(10, 10);
    for (n, q) in [
        ("N0B1", 100),
        ("N0B2", 150),
        ("N0B3", 120),
        ("N0B4", 200),
        ("N0B5", 90),
    ] {
        t.hear(
            via(n),
            255,
            &bc("X", vec![entry("N0CCC", "CCC", "N0XXX", q)]),
        );
    }
    let routes: Vec<(String, u8)> = t
        .node(&call("N0CCC"))
        .unwrap()
        .routes
        .iter()
        .map(|r| (r.via.call.to_string(), r.quality))
        .collect();
    assert_eq!(
        routes,
        vec![
            ("N0B4".into(), 199),
            ("N0B2".into(), 149),
            ("N0B3".into(), 120)
        ]
    );
}

#[test]
fn a_flood_of_nodes_and_neighbours_stays_within_the_limits() {
    let mut t = tables(20, 4);
    for i in 0..50u32 {
        let entries = (0..11)
            .map(|j| {
                let dest = format!("N{}{}", i % 10, char::from(b'A' + (j as u8)));
                let dest = format!("{dest}{}", i / 10);
                NodesEntry {
                    dest: dest.parse().unwrap(),
                    alias: Alias::NONE,
                    neighbour: call("N0XXX"),
                    quality: 100 + (i % 50) as u8,
                }
            })
            .collect();
        let neighbour = format!("N0N{i}");
        t.hear(via(&neighbour), 255, &bc("N", entries));
    }
    assert!(t.nodes().count() <= 20);
    assert!(t.neighbours().count() <= 4);
    // The survivors are the best ones.
    assert!(t.nodes().all(|n| n.best().unwrap().quality >= 100));
}

#[test]
fn a_recorded_route_answers_an_unknown_origin_and_never_goes_out() {
    let mut t = tables(10, 10);
    t.record(call("N0FAR"), via("N0BBB"));
    let r = *t.node(&call("N0FAR")).unwrap().best().unwrap();
    assert_eq!((r.quality, r.kind), (0, RouteKind::Recorded));
    assert!(t.advertised().is_empty());
    t.take_changes();
    // A broadcast route through the same neighbour replaces it, and is a route learned (by
    // its alias): the sysop's log and whoever waits for the node see it.
    t.hear(
        via("N0BBB"),
        200,
        &bc("BBB", vec![entry("N0FAR", "FAR", "N0XXX", 200)]),
    );
    let r = *t.node(&call("N0FAR")).unwrap().best().unwrap();
    assert_eq!(r.kind, RouteKind::Learned);
    let far = (call("N0FAR"), alias("FAR"));
    assert!(t.take_changes().iter().any(|c| matches!(c,
        Change::RouteLearned { node, alias: a, .. } if (*node, *a) == far)));
    t.record(call("N0FAR"), via("N0BBB"));
    assert_eq!(
        t.node(&call("N0FAR")).unwrap().best().unwrap().kind,
        RouteKind::Learned
    );
}

#[test]
fn the_stations_own_calls_and_alias_are_never_learned() {
    let mut t = tables(10, 10);
    // A neighbour advertises our BBS call, a node under our alias, and calls itself ME too.
    let b = bc(
        "ME",
        vec![
            entry("N0ME-2", "BBS", "N0X", 200),
            entry("N0OTH", "ME", "N0X", 200),
            entry("N0FINE", "FINE", "N0X", 200),
        ],
    );
    t.hear(via("N0NB"), 192, &b);
    assert!(t.node(&call("N0ME-2")).is_none());
    assert!(t.find("ME").is_none());
    assert!(t.node(&call("N0OTH")).is_none());
    assert!(t.find("FINE").is_some());
    // The neighbour itself is learned, without our alias.
    assert!(t.node(&call("N0NB")).unwrap().alias.is_empty());
    // A broadcast sent as our BBS call, and a datagram from it, teach nothing.
    t.hear(
        via("N0ME-2"),
        192,
        &bc("X", vec![entry("N0Y", "Y", "N0X", 200)]),
    );
    assert!(t.find("Y").is_none());
    t.record(call("N0ME-2"), via("N0NB"));
    assert!(t.node(&call("N0ME-2")).is_none());
}

#[test]
fn a_neighbour_silent_for_three_of_our_broadcasts_is_named_to_be_called() {
    let mut t = Tables::new(TableConfig {
        obsolescence: 6,
        obsolescence_min: 5,
        ..config(10, 10)
    });
    let from_b = bc("B", vec![entry("N0C", "C", "N0X", 200)]);
    let from_d = bc("D", vec![entry("N0C", "C", "N0X", 200)]);
    t.hear(via("N0B"), 192, &from_b);
    t.hear(via("N0D"), 192, &from_d);
    // D keeps broadcasting; B falls silent. Nothing goes for that alone.
    for _ in 0..crate::SILENT_AFTER - 1 {
        assert!(t.age().is_empty());
        t.hear(via("N0D"), 192, &from_d);
    }
    assert_eq!(t.age(), vec![via("N0B")]);
    assert!(t.has_route_via(&call("N0C"), via("N0B")));
    // And again every SILENT_AFTER broadcasts while it stays silent.
    t.hear(via("N0D"), 192, &from_d);
    assert!(t.age().is_empty());
    t.hear(via("N0B"), 192, &from_b);
    for _ in 0..crate::SILENT_AFTER - 1 {
        t.hear(via("N0D"), 192, &from_d);
        assert!(t.age().is_empty());
    }
}

#[test]
fn a_failed_link_takes_its_neighbours_routes_but_not_the_sysops() {
    let mut t = tables(10, 10);
    t.lock(call("N0L"), alias("L"), via("N0B"), 100);
    t.hear(
        via("N0B"),
        192,
        &bc("B", vec![entry("N0C", "C", "N0X", 200)]),
    );
    let _ = t.take_changes();
    t.drop_via(via("N0B"), Loss::LinkFailed);
    assert!(t.node(&call("N0C")).is_none());
    assert!(t.node(&call("N0B")).is_none());
    assert!(t.has_route_via(&call("N0L"), via("N0B")));
    let changes = t.take_changes();
    assert_eq!(changes.len(), 2, "{changes:?}");
    // A recorded route is no route to trust.
    t.record(call("N0R"), via("N0Q"));
    assert!(t.node(&call("N0R")).is_some());
    assert!(!t.has_route_via(&call("N0R"), via("N0Q")));
}
