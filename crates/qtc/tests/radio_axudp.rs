//! Two real qtc instances joined by AXUDP on loopback: a user calls the BBS with `qtc call`,
//! and 200 messages are forwarded over an AX.25 link (partner connect = "ax25:...") exactly once.

mod common;
mod radio_util;

use common::Daemon;
use radio_util::{assert_exactly_once, free_udp_port, seed, Call};

struct Ports {
    a: u16,
    b: u16,
    user: u16,
}

fn port_table(listen: u16, peers: &[(&str, u16)]) -> String {
    let peers: Vec<String> = peers
        .iter()
        .map(|(c, p)| format!("{{ callsign = \"{c}\", address = \"127.0.0.1:{p}\" }}"))
        .collect();
    format!(
        "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:{listen}\"\npeers = [{}]\nfrack = \"2s\"\n",
        peers.join(", ")
    )
}

/// A (N0AAA) calls B (N0BBB) over AX.25; B knows A as a BBS user.
fn pair() -> (Daemon, Daemon, Ports) {
    let ports = Ports {
        a: free_udp_port(),
        b: free_udp_port(),
        user: free_udp_port(),
    };
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs"), ("N0ZZZ", "pw", "")],
        &format!(
            // A's way: over the air a partner's call is its partner only by its own way.
            "{}[[partner]]\ncallsign = \"N0AAA\"\nconnect = \"ax25:udp:N0AAA\"\nroutes = [\"N0AAA\"]\n",
            port_table(ports.b, &[("N0AAA", ports.a), ("N0ZZZ", ports.user)])
        ),
    );
    let a = Daemon::start_bbs(
        "N0AAA",
        &[("N0USR", "pw", "")],
        &format!(
            "{}[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"ax25:udp:N0BBB\"\nroutes = [\"N0BBB\", \"WW\"]\n\
             [web]\nlisten = \"127.0.0.1:0\"\n",
            port_table(ports.a, &[("N0BBB", ports.b)])
        ),
    );
    (a, b, ports)
}

#[test]
fn user_gets_the_prompt_over_axudp() {
    let (_a, b, ports) = pair();
    assert!(
        b.stdout.iter().any(|l| l.starts_with("radio: udp axudp")),
        "{:?}",
        b.stdout
    );
    let spec = format!("axudp:127.0.0.1:{}:127.0.0.1:{}", ports.user, ports.b);
    // The port's socket is bound after the start-up report (a SABM before it waits for T1).
    b.wait_for_log("device open port=udp");
    let mut c = Call::start(&spec, "N0ZZZ", "N0BBB");
    let hello = c.expect("de N0BBB>");
    assert!(hello.contains("welcome to N0BBB"), "{hello}");
    c.send("V");
    c.expect("de N0BBB>");
    c.send("B");
    assert!(c.finish().success());
    let heard = b.ctl(&["heard"]);
    assert!(heard.contains("port udp:"), "{heard}");
    assert!(heard.contains("N0ZZZ"), "{heard}");
}

/// `qtc call` opens its own port and calls at once: its SABM waits for the port's socket
/// instead of being lost and sent again after T1.
#[test]
fn a_call_goes_out_with_its_first_sabm() {
    let (_a, b, ports) = pair();
    b.wait_for_log("device open port=udp");
    let spec = format!("axudp:127.0.0.1:{}:127.0.0.1:{}", ports.user, ports.b);
    let mut c = Call::start_logging(&spec, "N0ZZZ", "N0BBB", "warn,qtc_ax25=debug");
    c.expect("de N0BBB>");
    c.send("B");
    let (status, log) = c.finish_with_log();
    assert!(status.success());
    assert!(!log.contains("T1 expired"), "{log}");
}

#[test]
fn forward_200_messages_over_ax25_exactly_once() {
    let (a, b, _ports) = pair();
    seed(&a, 200, "A");
    assert!(
        a.ctl(&["status"]).contains("N0BBB    200 queued"),
        "{}",
        a.ctl(&["status"])
    );
    let out = a.ctl(&["forward", "N0BBB"]);
    assert!(
        out.contains("ok: N0BBB: 0 received, 200 sent"),
        "{out}\n--- A ---\n{}\n--- B ---\n{}",
        a.log(),
        b.log()
    );
    assert_exactly_once(&b, "A", 200);
    // It went over the air, not TCP.
    a.wait_for_log("calling over AX.25");
    a.wait_for_log("link up");
    assert!(a.ctl(&["status"]).contains("N0BBB    0 queued"));
    // /metrics: the radio port's AX.25 counters and bytes (200 bodies of at least 100 bytes).
    let m = |s: &str| a.metric(s).unwrap_or_else(|| panic!("no {s} in /metrics"));
    assert!(m("qtc_ax25_iframes_sent_total{port=\"udp\"}") > 0);
    assert!(m("qtc_port_bytes_total{port=\"udp\",direction=\"out\"}") > 200 * 100);
    assert!(m("qtc_port_bytes_total{port=\"udp\",direction=\"in\"}") > 0);
    for series in ["iframes_resent", "rej_sent", "srej_sent", "t1_expiries"] {
        m(&format!("qtc_ax25_{series}_total{{port=\"udp\"}}"));
    }
    // A second call finds nothing to do and duplicates nothing.
    let out = a.ctl(&["forward", "N0BBB"]);
    assert!(out.contains("ok: N0BBB: 0 received, 0 sent"), "{out}");
    assert_exactly_once(&b, "A", 200);
}
