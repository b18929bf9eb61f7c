//! Three qtc NET/ROM nodes in a chain over AXUDP: A hears B, B hears C, A cannot hear C. Each
//! has `[netrom] alias`, `broadcast = "10s"` and `netrom_quality = 192` on its port, as
//! docs/netrom.md sets a node up (the node calls are the stations' with SSID 1, the BBSes'
//! SSID 0). A learns C from B's broadcasts; a user on A reaches C's BBS
//! by alias (as the user's own callsign) and `B` brings them back; a partner forwards A -> C
//! over NET/ROM in every mode, exactly once, also across a circuit cut when B goes away; a
//! node that goes away is dropped after its obsolescence count.
// The elapsed times printed are for the report, not asserted.
#![allow(clippy::disallowed_methods)]

mod common;
mod netrom_util;
mod radio_util;

use std::time::{Duration, Instant};

use common::Daemon;
use netrom_util::axudp_port;
use radio_util::{assert_exactly_once, free_udp_port, seed};

/// How long the bar gives A to learn C's alias.
const LEARN_WITHIN: Duration = Duration::from_secs(60);

/// The UDP ports of the three nodes.
struct Ports {
    a: u16,
    b: u16,
    c: u16,
}

impl Ports {
    fn new() -> Ports {
        Ports {
            a: free_udp_port(),
            b: free_udp_port(),
            c: free_udp_port(),
        }
    }
}

/// A node's config text: its AXUDP port with NET/ROM on it, `[netrom]`, then `extra`.
fn node_config(
    listen: u16,
    peers: &[(&str, u16)],
    alias: &str,
    netrom: &str,
    extra: &str,
) -> String {
    format!(
        "{}[netrom]\nalias = \"{alias}\"\nbroadcast = \"10s\"\n{netrom}{extra}",
        axudp_port(listen, peers, "frack = \"2s\"\n")
    )
}

fn start_a(p: &Ports, protocol: &str, netrom: &str) -> Daemon {
    Daemon::start_bbs(
        "N0AAA",
        &[("N0USR", "pw", "")],
        &node_config(
            p.a,
            &[("N0BBB", p.b)],
            "AAA",
            netrom,
            &format!(
                "[[partner]]\ncallsign = \"N0CCC\"\nconnect = \"netrom:CCC\"\nprotocol = \"{protocol}\"\n\
                 routes = [\"N0CCC\", \"WW\"]\n"
            ),
        ),
    )
}

fn start_b(p: &Ports, netrom: &str) -> Daemon {
    Daemon::start_bbs(
        "N0BBB",
        &[],
        &node_config(p.b, &[("N0AAA", p.a), ("N0CCC", p.c)], "BBB", netrom, ""),
    )
}

fn start_c(p: &Ports, netrom: &str) -> Daemon {
    Daemon::start_bbs(
        "N0CCC",
        &[("N0AAA", "fwdpw", "--bbs")],
        &node_config(
            p.c,
            &[("N0BBB", p.b)],
            "CCC",
            netrom,
            // A's way: over NET/ROM a partner's call is its partner only from its own node.
            "[[partner]]\ncallsign = \"N0AAA\"\nconnect = \"netrom:AAA\"\nroutes = [\"N0AAA\"]\n",
        ),
    )
}

#[test]
fn a_user_on_a_reaches_cs_bbs_by_alias_and_b_brings_them_back() {
    let p = Ports::new();
    let a = start_a(&p, "b1", "");
    let b = start_b(&p, "");
    let c = start_c(&p, "");
    let started = Instant::now();
    assert!(
        a.stdout
            .iter()
            .any(|l| l == "netrom: AAA:N0AAA-1 on udp (192), broadcast every 10 s"),
        "{:?}",
        a.stdout
    );
    a.wait_for_log_within(
        "NET/ROM route learned: CCC:N0CCC-1 via N0BBB-1",
        LEARN_WITHIN,
    );
    eprintln!("A learned CCC in {:?}", started.elapsed());
    let mut u = a.connect();
    u.expect("Callsign:");
    u.send("N0USR");
    u.expect("Password:");
    u.send("pw");
    u.expect("de N0AAA>");
    u.send("NODES");
    let nodes = u.expect("de N0AAA>");
    assert!(
        nodes.contains("CCC:N0CCC-1") && nodes.contains("BBB:N0BBB-1"),
        "{nodes}"
    );
    u.send("NODES ccc");
    let routes = u.expect("de N0AAA>");
    assert!(routes.contains("Routes to CCC:N0CCC-1"), "{routes}");
    assert!(
        routes.contains("quality 144") && routes.contains("via N0BBB-1"),
        "{routes}"
    );
    u.send("ROUTES");
    let neighbours = u.expect("de N0AAA>");
    assert!(
        neighbours.contains("N0BBB") && neighbours.contains("192"),
        "{neighbours}"
    );
    let t = Instant::now();
    u.send("C CCC");
    u.expect("*** Connected to CCC:N0CCC-1");
    let hello = u.expect("de N0CCC>");
    assert!(
        hello.contains("welcome to N0CCC"),
        "{hello}\n--- A ---\n{}\n--- B ---\n{}\n--- C ---\n{}",
        a.log(),
        b.log(),
        c.log()
    );
    // At C the user is who they are at A: the circuit carries their callsign.
    u.send("U");
    let who = u.expect("de N0CCC>");
    assert!(who.contains("N0USR") && who.contains("netrom"), "{who}");
    u.send("B");
    u.expect("*** Disconnected from CCC. Back at N0AAA.");
    u.expect("de N0AAA>");
    eprintln!("C CCC, U and B round trip: {:?}", t.elapsed());
    // Both ends logged the circuit; the middle node only passed datagrams on.
    c.wait_for_log("NET/ROM circuit in");
    assert!(!b.log().contains("NET/ROM circuit in"));
    let nodes = a.ctl(&["nodes"]);
    assert!(
        nodes.contains("CCC:N0CCC-1") && nodes.contains("q144"),
        "{nodes}"
    );
    assert!(a.ctl(&["status"]).contains("netrom: AAA:N0AAA-1"));
}

#[test]
fn a_partner_forwards_a_to_c_over_netrom_in_every_mode() {
    let p = Ports::new();
    let _b = start_b(&p, "");
    let c = start_c(&p, "");
    let mut a = start_a(&p, "mbl", "");
    let mut sent = 0;
    for protocol in ["mbl", "fbb", "b0", "b1", "b2"] {
        if protocol != "mbl" {
            // The same station (its store, its BIDs) with the partner's protocol changed.
            a = restart_with(
                a,
                "protocol = \"mbl\"",
                &format!("protocol = \"{protocol}\""),
            );
        }
        a.wait_for_log_within("NET/ROM route learned: CCC:N0CCC-1", LEARN_WITHIN);
        let tag = format!("A{protocol}");
        seed(&a, 20, &tag);
        let out = a.ctl(&["forward", "N0CCC"]);
        assert!(
            out.contains("ok: N0CCC: 0 received, 20 sent"),
            "{protocol}: {out}\n--- A ---\n{}\n--- C ---\n{}",
            a.log(),
            c.log()
        );
        a.wait_for_log("calling over NET/ROM");
        assert_exactly_once(&c, &tag, 20);
        sent += 20;
    }
    assert_eq!(radio_util::subjects(&c).len(), sent);
}

/// Stops `d`, replaces `from` by `to` in its config, starts it again on the same data.
fn restart_with(mut d: Daemon, from: &str, to: &str) -> Daemon {
    d.stop();
    let dir = std::mem::replace(&mut d.dir, tempfile::tempdir().unwrap());
    drop(d);
    let path = common::config_path(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace(from, to)).unwrap();
    Daemon::start_in(dir)
}

#[test]
fn forwarding_cut_when_the_middle_node_goes_resumes_exactly_once() {
    let p = Ports::new();
    // Short transport timers, so the cut circuit is given up quickly.
    let fast = "transport_timeout = \"2s\"\ntransport_retries = 2\n";
    let a = start_a(&p, "b1", fast);
    let mut b = start_b(&p, fast);
    let c = start_c(&p, fast);
    a.wait_for_log_within("NET/ROM route learned: CCC:N0CCC-1", LEARN_WITHIN);
    seed(&a, 200, "A");
    let forwarding = std::thread::scope(|s| {
        let call = s.spawn(|| {
            let out = a.cli(&["ctl", "forward", "N0CCC"]);
            String::from_utf8_lossy(&out.stdout).into_owned()
        });
        // Some blocks are through: the middle node goes away.
        c.wait_for_log_within("block received", Duration::from_secs(60));
        b.stop();
        call.join().unwrap()
    });
    assert!(!forwarding.contains("200 sent"), "{forwarding}");
    let b = start_b(&p, fast);
    b.wait_for_log_within("NET/ROM route learned: CCC:N0CCC-1", LEARN_WITHIN);
    // A's link to B may have failed while B was away, taking A's routes through B: then A
    // learns C again from B's broadcasts.
    let lost = a.log().matches("NET/ROM route lost: CCC:N0CCC-1").count();
    a.wait_for_log_count("NET/ROM route learned: CCC:N0CCC-1", 1 + lost);
    let out = a.ctl(&["forward", "N0CCC"]);
    assert!(out.starts_with("ok: N0CCC"), "{out}\n{}", a.log());
    assert_exactly_once(&c, "A", 200);
}

#[test]
fn a_node_that_goes_away_is_dropped_after_its_obsolescence_count() {
    let p = Ports::new();
    // Broadcasts every 2 s, routes gone after 3 missed, not advertised after 2.
    let quick = "obsolescence = 3\nobsolescence_min = 2\n";
    let a = Daemon::start_bbs(
        "N0AAA",
        &[],
        &node_config(p.a, &[("N0BBB", p.b)], "AAA", quick, "")
            .replace("broadcast = \"10s\"", "broadcast = \"2s\""),
    );
    let _b = Daemon::start_bbs(
        "N0BBB",
        &[],
        &node_config(p.b, &[("N0AAA", p.a), ("N0CCC", p.c)], "BBB", quick, "")
            .replace("broadcast = \"10s\"", "broadcast = \"2s\""),
    );
    let mut c = Daemon::start_bbs(
        "N0CCC",
        &[],
        &node_config(p.c, &[("N0BBB", p.b)], "CCC", quick, "")
            .replace("broadcast = \"10s\"", "broadcast = \"2s\""),
    );
    a.wait_for_log_within("NET/ROM route learned: CCC:N0CCC-1", LEARN_WITHIN);
    c.stop();
    let gone = Instant::now();
    a.wait_for_log_within(
        "NET/ROM route lost: CCC:N0CCC-1 via N0BBB-1 on port udp (obsolete); node gone",
        Duration::from_secs(60),
    );
    eprintln!("A dropped CCC {:?} after C stopped", gone.elapsed());
    let nodes = a.ctl(&["nodes"]);
    assert!(
        !nodes.contains("N0CCC") && nodes.contains("BBB:N0BBB-1"),
        "{nodes}"
    );
}

/// A partner whose way the called side does not know (C's entry for A has no `connect`) but
/// with a shared `secret`: C challenges A's circuit (FBB's `SYS` challenge, MD5 form), A's
/// forwarding session answers it from its own entry's secret, and the mail goes through.
#[test]
fn a_partner_with_no_known_way_forwards_after_answering_the_challenge() {
    let p = Ports::new();
    let a = Daemon::start_bbs(
        "N0AAA",
        &[],
        &node_config(
            p.a,
            &[("N0BBB", p.b)],
            "AAA",
            "",
            "[[partner]]\ncallsign = \"N0CCC\"\nconnect = \"netrom:CCC\"\nsecret = \"SHARED\"\n\
             protocol = \"b1\"\nroutes = [\"N0CCC\", \"WW\"]\n",
        ),
    );
    let _b = start_b(&p, "");
    let c = Daemon::start_bbs(
        "N0CCC",
        &[("N0AAA", "fwdpw", "--bbs")],
        &node_config(
            p.c,
            &[("N0BBB", p.b)],
            "CCC",
            "",
            "[[partner]]\ncallsign = \"N0AAA\"\nsecret = \"SHARED\"\nroutes = [\"N0AAA\"]\n",
        ),
    );
    a.wait_for_log_within("NET/ROM route learned: CCC:N0CCC-1", LEARN_WITHIN);
    seed(&a, 5, "S");
    let out = a.ctl(&["forward", "N0CCC"]);
    assert!(
        out.contains("ok: N0CCC: 0 received, 5 sent"),
        "{out}\n--- A ---\n{}\n--- C ---\n{}",
        a.log(),
        c.log()
    );
    c.wait_for_log("challenge answered partner=N0AAA");
    a.wait_for_log("answering the partner's SYS challenge");
    assert_exactly_once(&c, "S", 5);
}
