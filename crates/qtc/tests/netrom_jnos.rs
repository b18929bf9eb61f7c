//! The real JNOS 2.0o.2 as a NET/ROM neighbour over AXUDP (built from tests/peers/jnos, run in a
//! network namespace of its own), each side set up as docs/netrom.md says: NODES exchanged both
//! ways; a JNOS user reaches qtc's BBS by its alias through a circuit and comes back with `B`; a
//! qtc user reaches JNOS's mailbox by alias; forwarding over NET/ROM both ways (qtc's
//! `connect = "netrom:JNOS"`, JNOS's forward.bbs line `netrom QTC`) in B1, and in MBL, FBB
//! ASCII and B0.
//!
//! Skipped when JNOS cannot run here (not root, no tun device), unless QTC_REQUIRE_PEERS=1.
#![allow(clippy::disallowed_methods)]

mod common;
mod radio_util;

use std::net::TcpStream;
use std::time::Duration;

use common::jnos::{self, Jnos, Setup, User, HOST_IP, JNOS_IP};
use common::{Client, Daemon};

/// Ports inside the test's own namespace: nothing else listens there.
const QTC_TELNET: u16 = 6300;
const JNOS_TELNET: u16 = 2323;
/// JNOS sends from and accepts only this UDP port, at both ends.
const AXUDP: u16 = 10093;
/// A route is learned at the first broadcast, the other side's answer to ours, or its poll's.
const LEARN_WITHIN: Duration = Duration::from_secs(60);

/// JNOS's NET/ROM lines (autoexec.nos, before the `start` lines), as docs/netrom.md gives them.
const JNOS_NETROM: &[&str] = &[
    "attach netrom",
    "netrom alias JNOS",
    "netrom interface axu0 192",
    "netrom nodetimer 10",
    "start netrom",
];

fn jnos_setup() -> Setup {
    // n0abc may connect out over NET/ROM (0x20) and AX.25 (0x08).
    let mut s = Setup::default()
        .opt("--axudp", &AXUDP.to_string())
        .opt("--user", "n0abc:abcpw:0x28")
        .partner("n0qtc", "qtcpw")
        .connect("netrom QTC", &[]);
    for line in JNOS_NETROM {
        s = s.extra(line);
    }
    s
}

/// qtc N0QTC (its node N0QTC-1, alias QTC) on AXUDP to JNOS, JNOS a forwarding partner.
fn qtc_config() -> String {
    qtc_config_in("b1")
}

/// [`qtc_config`] with the partner's `protocol` set to `protocol`.
fn qtc_config_in(protocol: &str) -> String {
    format!(
        "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"{HOST_IP}:{AXUDP}\"\n\
         peers = [{{ callsign = \"N0JNS\", address = \"{JNOS_IP}:{AXUDP}\" }}]\n\
         netrom_quality = 192\n\
         [netrom]\nalias = \"QTC\"\nbroadcast = \"10s\"\n\
         [[partner]]\ncallsign = \"N0JNS\"\nconnect = \"netrom:JNOS\"\nprotocol = \"{protocol}\"\n\
         routes = [\"N0JNS\", \"WW\"]\n"
    )
}

/// A telnet client to qtc, from inside the namespace.
fn qtc_client(j: &Jnos) -> Client {
    let stream = j.in_ns(|| TcpStream::connect((HOST_IP, QTC_TELNET)).expect("connect to qtc"));
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    Client {
        stream,
        seen: Vec::new(),
    }
}

/// Waits until JNOS has qtc's node in its table. JNOS learns ours from a broadcast of qtc's
/// (every 10 s here) and says nothing when it does, to qtc or in a file: its table is asked
/// every second (an external program with no event to wait on, as the peer scripts look for
/// its pty).
fn jnos_learns_qtc(j: &Jnos) {
    let mut routes = String::new();
    for _ in 0..60 {
        routes = j.console(&["netrom route nodes"]);
        if routes.contains("QTC:N0QTC-1") {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    panic!("JNOS's nodes: {routes}");
}

/// A JNOS mailbox user's session, logged in, at the prompt.
fn jnos_user(j: &Jnos) -> Client {
    let mut c = j.connect(JNOS_TELNET);
    c.expect("login:");
    c.send("n0abc");
    c.expect("assword");
    c.send("abcpw");
    c.expect(">\r\n");
    c
}

#[test]
fn qtc_and_jnos_are_netrom_nodes_to_each_other() {
    let Some(bin) = jnos::binary() else {
        return;
    };
    let j = Jnos::start(&bin, jnos_setup());
    let q = Daemon::start_bbs_at(
        &format!("{HOST_IP}:{QTC_TELNET}"),
        &j.wrapper(),
        "N0QTC",
        &[("N0USR", "pw", ""), ("N0JNS", "jnspw", "--bbs")],
        &qtc_config(),
    );
    let t0 = std::time::Instant::now();
    // Mail for qtc, posted on JNOS now: JNOS files it at a queue run some 30 s later.
    let mut u = User::login(&j, JNOS_TELNET, "n0abc", "abcpw");
    u.post(
        "SP N0USR @ N0QTC",
        "jnos over netrom",
        &[b"from JNOS by circuit".to_vec()],
    );
    u.bye();
    j.console(&["smtp kick"]);
    // NODES both ways.
    q.wait_for_log_within("NET/ROM route learned: JNOS:N0JNS via N0JNS", LEARN_WITHIN);
    jnos_learns_qtc(&j);
    eprintln!("NODES exchanged with JNOS in {:?}", t0.elapsed());
    jnos_user_reaches_qtc(&j, &q);
    eprintln!("JNOS user to qtc and back: {:?}", t0.elapsed());
    qtc_user_reaches_jnos(&j, &q);
    eprintln!("qtc user to JNOS and back: {:?}", t0.elapsed());
    forwarding_both_ways(&j, &q);
    eprintln!("forwarding both ways: {:?}", t0.elapsed());
}

/// A JNOS user types `C QTC`: qtc's BBS, as that user; `B` there brings them back to JNOS.
fn jnos_user_reaches_qtc(j: &Jnos, q: &Daemon) {
    let mut u = jnos_user(j);
    u.send("C QTC");
    u.expect("connected to QTC:N0QTC-1");
    let hello = u.expect("de N0QTC>");
    assert!(hello.contains("Hello N0ABC, welcome to N0QTC"), "{hello}");
    u.send("U");
    let who = u.expect("de N0QTC>");
    assert!(who.contains("N0ABC") && who.contains("netrom"), "{who}");
    u.send("B");
    u.expect("reconnected to JNOS:N0JNS");
    u.expect(">\r\n");
    u.send("B");
    let _ = u.expect_close();
    q.wait_for_log("NET/ROM circuit in user=N0ABC node=N0JNS");
}

/// A qtc user types `C JNOS`: JNOS's mailbox, as that user; its `B` brings them back.
fn qtc_user_reaches_jnos(j: &Jnos, q: &Daemon) {
    let mut c = qtc_client(j);
    c.expect("Callsign:");
    c.send("N0USR");
    c.expect("Password:");
    c.send("pw");
    c.expect("de N0QTC>");
    c.send("NODES");
    let nodes = c.expect("de N0QTC>");
    assert!(nodes.contains("JNOS:N0JNS"), "{nodes}");
    c.send("C JNOS");
    c.expect("*** Connected to JNOS:N0JNS");
    let hello = c.expect("Area: n0usr");
    assert!(hello.contains("[JNOS-2.0o.2-"), "{hello}");
    c.expect(">\r\n");
    c.send("B");
    c.expect("*** Disconnected from JNOS. Back at N0QTC.");
    c.expect("de N0QTC>");
    c.send("B");
    let _ = c.expect_close();
    q.wait_for_log("NET/ROM circuit up");
}

/// B1 over NET/ROM: JNOS calls qtc (`mbox kick`) with the message posted there at the start,
/// then qtc calls JNOS (`qtc ctl forward`) with five bulletins.
fn forwarding_both_ways(j: &Jnos, q: &Daemon) {
    j.wait_area("n0qtc", "the message posted on JNOS", |m| {
        m.iter().any(|s| s.subject == "jnos over netrom")
    });
    j.console(&["mbox kick n0qtc"]);
    q.wait_for_log_within("NET/ROM circuit in user=N0JNS node=N0JNS", LEARN_WITHIN);
    q.wait_for_log_within(
        "forwarding session ended partner=N0JNS summary=1 received",
        LEARN_WITHIN,
    );
    let subjects = radio_util::subjects(q);
    assert_eq!(
        subjects,
        vec!["jnos over netrom".to_string()],
        "{}",
        q.log()
    );
    radio_util::seed(q, 5, "Q");
    let out = q.ctl(&["forward", "N0JNS"]);
    assert!(
        out.contains("ok: N0JNS: 0 received, 5 sent"),
        "{out}\n{}",
        q.log()
    );
    q.wait_for_log("calling over NET/ROM");
    // Mail JNOS receives is filed by its SMTP queue run; do not wait for the next one.
    j.console(&["smtp kick"]);
    j.wait_area("all", "qtc's 5 bulletins", |m| {
        m.iter()
            .filter(|s| s.subject.starts_with("Q bulletin "))
            .count()
            == 5
    });
    // Nothing went twice: JNOS's one and qtc's own 5.
    assert_eq!(radio_util::subjects(q).len(), 6);
}

/// Forwarding over NET/ROM in MBL, FBB ASCII and B0 (B1 is above), both ways: for each, a qtc
/// whose partner entry offers that mode; JNOS calls it (`mbox kick`) with a message posted on
/// JNOS, then qtc calls JNOS with three bulletins. Each arrives once, in the mode qtc logs.
#[test]
fn forwarding_over_netrom_with_jnos_in_mbl_fbb_and_b0() {
    let Some(bin) = jnos::binary() else {
        return;
    };
    let j = Jnos::start(&bin, jnos_setup());
    let mut q = Daemon::start_bbs_at(
        &format!("{HOST_IP}:{QTC_TELNET}"),
        &j.wrapper(),
        "N0QTC",
        &[("N0USR", "pw", ""), ("N0JNS", "jnspw", "--bbs")],
        &qtc_config_in("mbl"),
    );
    let mut offered = "mbl";
    for (round, (protocol, mode)) in [("mbl", "Mbl"), ("fbb", "FbbAscii"), ("b0", "B0")]
        .into_iter()
        .enumerate()
    {
        if protocol != offered {
            // The same station (its store, its BIDs) offering the next mode.
            q = restart_offering(q, &j, offered, protocol);
            offered = protocol;
        }
        let subject = format!("jnos {protocol} over netrom");
        let mut u = User::login(&j, JNOS_TELNET, "n0abc", "abcpw");
        u.post("SP N0USR @ N0QTC", &subject, &[b"by circuit".to_vec()]);
        u.bye();
        j.console(&["smtp kick"]);
        q.wait_for_log_within("NET/ROM route learned: JNOS:N0JNS via N0JNS", LEARN_WITHIN);
        jnos_learns_qtc(&j);
        j.wait_area("n0qtc", &subject, |m| {
            m.iter().any(|s| s.subject == subject)
        });
        j.console(&["mbox kick n0qtc"]);
        // JNOS times its own connect out adaptively (`netrom irtt`): a request lost while the
        // link to a restarted qtc is set up again goes again tens of seconds later.
        q.wait_for_log_within(
            "forwarding session ended partner=N0JNS summary=1 received",
            LEARN_WITHIN * 3,
        );
        q.wait_for_log(&format!("mode={mode}"));
        assert!(radio_util::subjects(&q).contains(&subject), "{}", q.log());
        let tag = format!("Q{protocol}");
        radio_util::seed(&q, 3, &tag);
        let out = q.ctl(&["forward", "N0JNS"]);
        assert!(
            out.contains("ok: N0JNS: 0 received, 3 sent"),
            "{protocol}: {out}\n{}",
            q.log()
        );
        j.console(&["smtp kick"]);
        j.wait_area("all", &format!("qtc's 3 bulletins in {protocol}"), |m| {
            m.iter()
                .filter(|s| s.subject.starts_with(&format!("{tag} bulletin ")))
                .count()
                == 3
        });
        assert!(
            !q.log().contains("forwarding session failed"),
            "{}",
            q.log()
        );
        // Nothing went twice: JNOS's one and qtc's own 3, each round.
        assert_eq!(radio_util::subjects(&q).len(), 4 * (round + 1));
    }
}

/// Stops `q`, makes its partner entry offer `to` instead of `from`, starts it again on the same
/// data in JNOS's namespace.
fn restart_offering(mut q: Daemon, j: &Jnos, from: &str, to: &str) -> Daemon {
    q.stop();
    let dir = std::mem::replace(&mut q.dir, tempfile::tempdir().unwrap());
    drop(q);
    let path = common::config_path(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace(
        &format!("protocol = \"{from}\""),
        &format!("protocol = \"{to}\""),
    );
    std::fs::write(&path, text).unwrap();
    Daemon::start_wrapped(dir, &j.wrapper())
}
