//! KISS over ptys: each qtc creates a pty pair (`kind = "kiss-pty"`, `create = PATH`); a user
//! calls with `qtc call --port kiss-pty:PATH` on the published side, and a bridge in the test
//! joins two instances' published sides so 200 + 20 messages are forwarded both ways over AX.25.
//! A kiss-serial port is tested the same way: its device is another instance's pty.
#![allow(clippy::disallowed_methods)]

mod common;
mod radio_util;

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Daemon;
use radio_util::{assert_exactly_once, seed, Call};

/// The bridge is a wire, not a radio: no air time to model (`modem_baud = 0`).
fn pty_port(path: &Path) -> String {
    format!(
        "[[port]]\nname = \"pty\"\nkind = \"kiss-pty\"\ncreate = \"{}\"\nfrack = \"2s\"\nmodem_baud = 0\n",
        path.display()
    )
}

/// Waits until `d` has created its pty at `path` (its log says so).
fn wait_for(d: &Daemon, path: &Path) {
    d.wait_for_log(&format!("link={}\n", path.display()));
}

fn open(path: &Path) -> File {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap()
}

/// Copies bytes between two ptys' published sides, both ways, until the test ends.
fn bridge(a: &Path, b: &Path) {
    let (mut ar, mut bw) = (open(a), open(b));
    let (mut aw, mut br) = (ar.try_clone().unwrap(), bw.try_clone().unwrap());
    std::thread::spawn(move || copy(&mut ar, &mut bw));
    std::thread::spawn(move || copy(&mut br, &mut aw));
}

fn copy(from: &mut File, to: &mut File) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 || to.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

fn scratch() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a.kiss");
    let b = d.path().join("b.kiss");
    (d, a, b)
}

/// Seeds `to_b` messages on A and `to_a` on B, has A call N0BBB, and checks each arrived once.
fn forward_both_ways(a: &Daemon, b: &Daemon, to_b: usize, to_a: usize) {
    seed(a, to_b, "A");
    seed(b, to_a, "B");
    let out = a.ctl(&["forward", "N0BBB"]);
    assert!(
        out.contains(&format!("ok: N0BBB: {to_a} received, {to_b} sent")),
        "{out}\n--- A ---\n{}\n--- B ---\n{}",
        a.log(),
        b.log()
    );
    assert_exactly_once(b, "A", to_b);
    assert_exactly_once(a, "B", to_a);
}

#[test]
fn user_gets_the_prompt_over_a_pty() {
    let (_d, _a, b_path) = scratch();
    let b = Daemon::start_bbs("N0BBB", &[], &pty_port(&b_path));
    wait_for(&b, &b_path);
    let spec = format!("kiss-pty:{}", b_path.display());
    let mut c = Call::start(&spec, "N0ZZZ-3", "N0BBB");
    let hello = c.expect("de N0BBB>");
    assert!(hello.contains("welcome to N0BBB"), "{hello}\n{}", b.log());
    c.send("B");
    assert!(c.finish().success());
    assert!(b.ctl(&["heard"]).contains("N0ZZZ-3"));
}

#[test]
fn forward_200_messages_over_kiss_ptys_exactly_once() {
    let (_d, a_path, b_path) = scratch();
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "x", "--bbs")],
        &format!(
            "{}[[partner]]\ncallsign = \"N0AAA\"\nconnect = \"ax25:pty:N0AAA\"\nroutes = [\"N0AAA\", \"WW\"]\n",
            pty_port(&b_path)
        ),
    );
    let a = Daemon::start_bbs(
        "N0AAA",
        &[],
        &format!(
            "{}[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"ax25:pty:N0BBB\"\nroutes = [\"N0BBB\", \"WW\"]\n",
            pty_port(&a_path)
        ),
    );
    wait_for(&a, &a_path);
    wait_for(&b, &b_path);
    bridge(&a_path, &b_path);
    forward_both_ways(&a, &b, 200, 20);
    let out = a.ctl(&["forward", "N0BBB"]);
    assert!(out.contains("ok: N0BBB: 0 received, 0 sent"), "{out}");
    assert_exactly_once(&b, "A", 200);
    assert_exactly_once(&a, "B", 20);
}

/// `kind = "kiss-serial"` without a serial port: A opens B's published pty as its serial
/// device (a pty takes the same termios calls: raw mode and a baud rate) and forwards to B.
#[test]
fn kiss_serial_port_forwards_over_a_pty_as_its_tty() {
    let (_d, _a_path, b_path) = scratch();
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "x", "--bbs")],
        &format!(
            "{}[[partner]]\ncallsign = \"N0AAA\"\nconnect = \"ax25:pty:N0AAA\"\nroutes = [\"N0AAA\", \"WW\"]\n",
            pty_port(&b_path)
        ),
    );
    wait_for(&b, &b_path);
    let a = Daemon::start_bbs(
        "N0AAA",
        &[],
        &format!(
            "[[port]]\nname = \"tnc\"\nkind = \"kiss-serial\"\ndevice = \"{}\"\nbaud = 9600\n\
             frack = \"2s\"\n[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"ax25:tnc:N0BBB\"\n\
             routes = [\"N0BBB\", \"WW\"]\n",
            b_path.display()
        ),
    );
    forward_both_ways(&a, &b, 20, 5);
}

/// NET/ROM over KISS ptys: three nodes in a chain (A's pty bridged to B's first, B's second to
/// C's), A cannot hear C; a user on A reaches C's BBS by alias and comes back with `B`.
#[test]
fn netrom_chain_over_kiss_ptys() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n);
    let node = |alias: &str, ports: &[(&str, PathBuf)]| {
        let mut t = String::new();
        for (name, path) in ports {
            t.push_str(&pty_port(path).replace("name = \"pty\"", &format!("name = \"{name}\"")));
            t.push_str("netrom_quality = 192\n");
        }
        format!("{t}[netrom]\nalias = \"{alias}\"\nbroadcast = \"10s\"\n")
    };
    let a = Daemon::start_bbs(
        "N0AAA",
        &[("N0USR", "pw", "")],
        &node("AAA", &[("pty", p("a"))]),
    );
    let b = Daemon::start_bbs(
        "N0BBB",
        &[],
        &node("BBB", &[("west", p("b1")), ("east", p("b2"))]),
    );
    let c = Daemon::start_bbs("N0CCC", &[], &node("CCC", &[("pty", p("c"))]));
    for (d, n) in [(&a, "a"), (&b, "b1"), (&b, "b2"), (&c, "c")] {
        wait_for(d, &p(n));
    }
    bridge(&p("a"), &p("b1"));
    bridge(&p("b2"), &p("c"));
    // The first broadcasts went before the bridges: the next ones (10 s) or B's answers to
    // A's and C's do it.
    a.wait_for_log_within(
        "NET/ROM route learned: CCC:N0CCC-1 via N0BBB-1 on port pty",
        Duration::from_secs(60),
    );
    let mut u = a.connect();
    u.expect("Callsign:");
    u.send("N0USR");
    u.expect("Password:");
    u.send("pw");
    u.expect("de N0AAA>");
    u.send("C CCC");
    u.expect("*** Connected to CCC:N0CCC-1");
    u.expect("de N0CCC>");
    u.send("B");
    u.expect("*** Disconnected from CCC. Back at N0AAA.");
    u.expect("de N0AAA>");
}
