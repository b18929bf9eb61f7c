//! A network, not a pair (issue 42): eight qtc nodes on AXUDP over loopback, a ring with two
//! chords where each node hears only its neighbours, NET/ROM on every port, and each node
//! forwarding B1 to each neighbour over AX.25 (`routes = ["WW", ...]` and the calls that
//! neighbour is the shortest way to), as docs/forwarding.md and docs/netrom.md set nodes up.
//! All nodes start together, as after a power cut, so their schedules would run in step
//! without jitter. Bulletins are posted at three nodes and a personal message crosses the
//! network; a node is killed -9 as soon as it has stored a bulletin and started again at once.
//!
//! What must hold: NET/ROM converges (every node learns every other); every node ends with
//! every bulletin, and the messages moved are exactly the minimum (each node stores each
//! bulletin once, the personal message once per hop); no WARN line but about the killed node,
//! and no call that waited for a SID (crossed calls settle on one session).
//!
//! Not here yet: a `C` to a node behind a killed neighbour reaching it by the other route
//! (issue 42 item 2, the `netrom` branch's re-routing).
// The elapsed times printed are for the report, not asserted.
#![allow(clippy::disallowed_methods)]

mod common;
mod radio_util;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use common::Daemon;
use radio_util::free_udp_port;

/// Nodes in the ring.
const N: usize = 8;
/// Bulletins posted at each of the three posting nodes.
const POSTED: [(usize, usize); 3] = [(0, 7), (N / 3, 7), (2 * N / 3, 6)];
/// How long the network may take to converge or to carry the flood (hang guards).
const LIMIT: Duration = Duration::from_secs(240);
/// A message a node stored from a partner (one debug line each).
const STORED: &str = "outcome=Stored(";

/// Node `i`'s name: `AAA`, `BBB`, ... (its BBS is N0AAA, its node N0AAA-1, alias AAA).
fn name(i: usize) -> String {
    char::from(b'A' + i as u8).to_string().repeat(3)
}

/// The ring 0-1-...-(N-1)-0 with the chords 0-N/2 and N/4-3N/4.
fn links() -> Vec<(usize, usize)> {
    let mut l: Vec<(usize, usize)> = (0..N).map(|i| (i, (i + 1) % N)).collect();
    l.extend([(0, N / 2), (N / 4, 3 * N / 4)]);
    l
}

fn neighbours(i: usize) -> Vec<usize> {
    let mut n: Vec<usize> = links()
        .into_iter()
        .filter_map(|(a, b)| (a == i).then_some(b).or((b == i).then_some(a)))
        .collect();
    n.sort_unstable();
    n
}

/// For each node, the way from `from` to it: the nodes after `from`, shortest first found.
fn ways(from: usize) -> Vec<Vec<usize>> {
    let mut way: Vec<Option<Vec<usize>>> = vec![None; N];
    way[from] = Some(Vec::new());
    let mut queue = VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        for k in neighbours(at) {
            if way[k].is_none() {
                let mut w = way[at].clone().unwrap_or_default();
                w.push(k);
                way[k] = Some(w);
                queue.push_back(k);
            }
        }
    }
    way.into_iter().map(Option::unwrap_or_default).collect()
}

/// Node `i`'s config: its AXUDP port with NET/ROM, and a B1 partner per neighbour taking WW
/// and the BBSes it is the first hop to.
fn config(i: usize, ports: &[u16]) -> String {
    let peers: Vec<String> = neighbours(i)
        .iter()
        .map(|&j| {
            format!(
                "{{ callsign = \"N0{}\", address = \"127.0.0.1:{}\" }}",
                name(j),
                ports[j]
            )
        })
        .collect();
    let mut cfg = format!(
        "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:{}\"\n\
         peers = [{}]\nfrack = \"1s\"\nnetrom_quality = 192\n\
         [netrom]\nalias = \"{}\"\nbroadcast = \"10s\"\n",
        ports[i],
        peers.join(", "),
        name(i)
    );
    let ways = ways(i);
    for j in neighbours(i) {
        let mut routes = vec!["\"WW\"".to_string()];
        routes.extend(
            (0..N)
                .filter(|&k| ways[k].first() == Some(&j))
                .map(|k| format!("\"N0{}\"", name(k))),
        );
        cfg.push_str(&format!(
            "[[partner]]\ncallsign = \"N0{}\"\nconnect = \"ax25:udp:N0{}\"\nprotocol = \"b1\"\n\
             routes = [{}]\ninterval = \"15s\"\npoll = \"1h\"\n",
            name(j),
            name(j),
            routes.join(", ")
        ));
    }
    cfg
}

/// Starts the eight nodes together.
fn start() -> Vec<Daemon> {
    let ports: Vec<u16> = (0..N).map(|_| free_udp_port()).collect();
    std::thread::scope(|s| {
        let started: Vec<_> = (0..N)
            .map(|i| {
                let ports = &ports;
                s.spawn(move || {
                    let bbses: Vec<String> = neighbours(i)
                        .iter()
                        .map(|&j| format!("N0{}", name(j)))
                        .collect();
                    let mut users = vec![("N0USR", "pw", "")];
                    users.extend(bbses.iter().map(|c| (c.as_str(), "fwdpw", "--bbs")));
                    Daemon::start_bbs(&format!("N0{}", name(i)), &users, &config(i, ports))
                })
            })
            .collect();
        started.into_iter().map(|t| t.join().unwrap()).collect()
    })
}

/// Posts `count` bulletins @ WW as N0USR on node `at`'s telnet port, and a personal message
/// to `personal`'s BBS when given.
fn post(d: &Daemon, at: usize, count: usize, personal: Option<usize>) {
    let prompt = format!("de N0{}>", name(at));
    let mut c = d.connect();
    c.expect("Callsign:");
    c.send("N0USR");
    c.expect("Password:");
    c.send("pw");
    c.expect(&prompt);
    let mut send = |cmd: &str, subject: &str| {
        c.send(cmd);
        c.expect("Subject:");
        c.send(subject);
        c.expect("Enter message");
        c.send(&format!("{subject}: a line of text for the network test."));
        c.send("/EX");
        c.expect(&prompt);
    };
    for k in 0..count {
        send("SB ALL @ WW", &format!("{} bulletin {k}", name(at)));
    }
    if let Some(to) = personal {
        send(&format!("SP N0USR @ N0{}", name(to)), "across the network");
    }
    c.send("B");
}

/// How many times `what` is in `log`.
fn count(log: &str, what: &str) -> usize {
    log.matches(what).count()
}

/// Lines of `log` that break the bars: WARN lines and calls left waiting for a SID, but for
/// those about the killed node `killed`.
fn bad_lines<'a>(log: &'a str, killed: &str) -> Vec<&'a str> {
    log.lines()
        .filter(|l| {
            l.contains(" WARN ")
                || l.contains("no SID from")
                || l.contains("closed the connection before its SID")
        })
        .filter(|l| !l.contains(killed))
        .collect()
}

// Run by .ci/run on its own (a stall there is reported, not fatal): one run in seven on a
// loaded machine stalled after the kill (13 of 16 stored, nothing more for 4 min); issue 42.
#[test]
#[ignore = "known stall after the kill under load, run by .ci/run alone"]
fn eight_nodes_flood_bulletins_exactly_once_across_a_kill() {
    let t0 = Instant::now();
    let mut nodes = start();
    for (i, d) in nodes.iter().enumerate() {
        for k in (0..N).filter(|&k| k != i) {
            d.wait_for_log_within(&format!("NET/ROM route learned: {}:", name(k)), LIMIT);
        }
    }
    eprintln!("NET/ROM converged in {:?}", t0.elapsed());

    let far = (0..N).max_by_key(|&k| (ways(0)[k].len(), N - k)).unwrap();
    let personal_way = ways(0)[far].clone();
    let flood = Instant::now();
    let bulletins: usize = POSTED.iter().map(|(_, c)| c).sum();
    // What node `i` stores from its partners: every bulletin it did not post, and the personal
    // message when it is on its way.
    let want = |i: usize| {
        let posted = POSTED
            .iter()
            .find(|(at, _)| *at == i)
            .map_or(0, |(_, c)| *c);
        bulletins - posted + usize::from(personal_way.contains(&i))
    };
    // The first poster's neighbour is killed once it has stored a message (mid-flood), and
    // started again at once on its own store; then the other two post.
    let victim = 1;
    let killed = format!("N0{}", name(victim));
    let (first, count0) = POSTED[0];
    post(&nodes[first], first, count0, Some(far));
    nodes[victim].wait_for_log_within(STORED, LIMIT);
    let d = nodes.remove(victim);
    let (before, restarted) = kill_and_restart(d);
    nodes.insert(victim, restarted);
    let stored_before = count(&before, STORED);
    eprintln!(
        "{killed} killed with {stored_before} stored, {:?} into the flood",
        flood.elapsed()
    );
    assert!(
        stored_before < want(victim),
        "the kill came after the flood"
    );
    for &(at, count) in &POSTED[1..] {
        post(&nodes[at], at, count, None);
    }

    for (i, d) in nodes.iter().enumerate() {
        let earlier = if i == victim {
            count(&before, STORED)
        } else {
            0
        };
        d.wait_for_log_count_within(STORED, want(i).saturating_sub(earlier), LIMIT);
    }
    eprintln!("the flood reached every node in {:?}", flood.elapsed());

    let mut bad = Vec::new();
    let mut moved = 0;
    for (i, d) in nodes.iter().enumerate() {
        let mut log = d.log();
        if i == victim {
            log = format!("{before}{log}");
        }
        let stored = count(&log, STORED);
        assert_eq!(
            stored,
            want(i),
            "N0{} stored {stored} messages from its partners, want {}",
            name(i),
            want(i)
        );
        moved += stored;
        bad.extend(
            bad_lines(&log, &killed)
                .into_iter()
                .map(|l| format!("N0{}: {l}", name(i))),
        );
    }
    let all: String = nodes.iter().map(Daemon::log).collect::<String>() + &before;
    eprintln!(
        "{} calls not made (a session with the partner ran), {} crossed calls settled",
        count(&all, "not calling: "),
        count(&all, "calls crossed")
    );
    let minimum = (N - 1) * bulletins + personal_way.len();
    assert_eq!(moved, minimum, "messages moved, against the minimum");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    for (i, d) in nodes.iter().enumerate() {
        let subjects = radio_util::subjects(d);
        let mut held: Vec<&String> = subjects
            .iter()
            .filter(|s| s.contains(" bulletin "))
            .collect();
        held.sort();
        held.dedup();
        assert_eq!(held.len(), bulletins, "N0{}: {subjects:?}", name(i));
    }
    assert!(radio_util::subjects(&nodes[far])
        .iter()
        .any(|s| s == "across the network"));
}

/// SIGKILL, then the same node again on its own directory; also its log up to the kill (the
/// restart starts a new one).
fn kill_and_restart(mut d: Daemon) -> (String, Daemon) {
    let _ = d.child.kill();
    let _ = d.child.wait();
    let log = d.log();
    let dir = std::mem::replace(&mut d.dir, tempfile::tempdir().unwrap());
    drop(d);
    (log, Daemon::start_in(dir))
}
