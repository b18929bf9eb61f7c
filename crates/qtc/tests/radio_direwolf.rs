//! Interop with real Direwolf on a real-time radio channel (docs/radio.md): two Direwolf
//! 1200-baud soundcard modems joined by `tests/data/afsk/chan.py`, which plays each one's audio
//! to the other at the true sample rate, half duplex (a transmitting station hears nothing), with
//! carrier detect; `pair.py` starts it and the modems on free ports. Two qtc with `[[port]]`
//! tables that name nothing but the modem: a user calls B through A's modem, then A forwards
//! 20 × 2 KB bulletins to B in B1, which must arrive exactly once. Nothing here depends on how
//! long it takes (about 4 minutes of real time; bench row 11 times it against the channel's
//! limit).
//!
//! Needs `direwolf` and `python3`; without them the test says so and passes, unless
//! `QTC_REQUIRE_PEERS=1` (CI). Real time: run with
//! `cargo test -p qtc --test radio_direwolf -- --ignored --nocapture`.
#![allow(clippy::disallowed_methods)]

mod common;
mod radio_util;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use common::Daemon;
use radio_util::{assert_exactly_once, seed_sized, Call};

fn have(cmd: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var("QTC_REQUIRE_PEERS").as_deref() != Ok("1"),
            "{cmd} is not installed and QTC_REQUIRE_PEERS=1 (apt-get install direwolf python3)"
        );
        eprintln!("skipped: {cmd} is not installed");
    }
    found
}

/// `pair.py`: the channel and the two modems, stopped (and their statistics read) at the end.
struct Channel {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
    kiss_a: u16,
    kiss_b: u16,
    dir: tempfile::TempDir,
}

impl Channel {
    fn start() -> Channel {
        let dir = tempfile::Builder::new()
            .prefix(&format!("qtc-afsk-{}-", std::process::id()))
            .tempdir()
            .unwrap();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/afsk/pair.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        eprintln!("channel: {}", line.trim());
        let port = |key: &str| -> u16 {
            let at = line
                .find(&format!("\"{key}\": "))
                .expect("pair.py did not start")
                + key.len()
                + 4;
            line[at..]
                .split([',', '}'])
                .next()
                .and_then(|v| v.trim().parse().ok())
                .unwrap()
        };
        let (kiss_a, kiss_b) = (port("kiss_a"), port("kiss_b"));
        Channel {
            child,
            stdin,
            out,
            kiss_a,
            kiss_b,
            dir,
        }
    }

    /// Stops the channel; chan.py's statistics (seconds each side transmitted, collisions,
    /// late ticks).
    fn stop(mut self) -> String {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.flush();
        }
        let mut line = String::new();
        let _ = self.out.read_line(&mut line);
        let _ = self.child.wait();
        line.trim().to_string()
    }

    fn modem_log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("{name}.log"))).unwrap_or_default()
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// A port that names the modem and nothing else: what a sysop writes.
fn kiss_port(port: u16) -> String {
    format!("[[port]]\nname = \"vhf\"\nkind = \"kiss-tcp\"\naddress = \"127.0.0.1:{port}\"\n")
}

/// The `link down` line of a daemon's log (the link's counters).
fn link_down(d: &Daemon) -> String {
    d.log()
        .lines()
        .rfind(|l| l.contains("link down"))
        .unwrap_or("")
        .to_string()
}

#[test]
#[ignore = "real time: about 4 minutes on a 1200-baud channel; CI runs it with --ignored"]
fn b1_forwarding_over_a_real_time_1200_baud_channel_exactly_once() {
    if !have("direwolf") || !have("python3") {
        return;
    }
    let chan = Channel::start();
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "x", "--bbs")],
        &format!(
            "{}[[partner]]\ncallsign = \"N0AAA\"\nconnect = \"ax25:vhf:N0AAA\"\nprotocol = \"b1\"\n\
             routes = [\"N0AAA\"]\n",
            kiss_port(chan.kiss_b)
        ),
    );
    let a = Daemon::start_bbs(
        "N0AAA",
        &[],
        &format!(
            "{}[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"ax25:vhf:N0BBB\"\nprotocol = \"b1\"\n\
             routes = [\"N0BBB\", \"WW\"]\n",
            kiss_port(chan.kiss_a)
        ),
    );
    // A user on A's modem (Direwolf allows 3 KISS clients per port) calls B.
    let mut c = Call::start(
        &format!("kiss-tcp:127.0.0.1:{}", chan.kiss_a),
        "N0ZZZ",
        "N0BBB",
    );
    c.expect("de N0BBB>");
    c.send("B");
    assert!(c.finish().success());

    seed_sized(&a, 20, "A", 2000);
    let started = Instant::now();
    let out = a.ctl(&["forward", "N0BBB"]);
    let took = started.elapsed();
    let modems = format!(
        "--- modem A ---\n{}\n--- modem B ---\n{}",
        chan.modem_log("a"),
        chan.modem_log("b")
    );
    assert!(
        out.contains("ok: N0BBB: 0 received, 20 sent"),
        "{out}\n--- A ---\n{}\n--- B ---\n{}\n{modems}",
        a.log(),
        b.log()
    );
    assert_exactly_once(&b, "A", 20);
    // The link's counters come with its end (DISC, UA), a moment after the session's.
    a.wait_for_log("link down");
    let stats = chan.stop();
    eprintln!("20 x 2 KB in B1 over the real-time 1200-baud channel in {took:?}");
    eprintln!("A: {}", link_down(&a));
    eprintln!("channel: {stats}");
}
