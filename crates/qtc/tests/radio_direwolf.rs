//! Interop with real Direwolf on a real-time radio channel (docs/radio.md): two Direwolf
//! 1200-baud soundcard modems joined by `tests/data/afsk/chan.py`, which plays each one's audio
//! to the other at the true sample rate, half duplex (a transmitting station hears nothing), with
//! carrier detect; `pair.py` starts it and the modems on free ports. Two qtc with `[[port]]`
//! tables that name nothing but the modem: a user calls B through A's modem, then A forwards
//! 20 × 2 KB bulletins to B in B1, which must arrive exactly once. And the real JNOS 2.0o.2 on
//! one modem (its KISS pty joined to the modem's KISS TCP port, as docs/radio.md tells a
//! sysop), qtc on the other: JNOS forwards 5 messages of about 2 KB to qtc, then qtc 5 to JNOS,
//! in B1, each once and byte for byte. Nothing here depends on how long it takes (about 4 and
//! 3 minutes of real time; the two run at once; the times are printed against the channel's
//! limit, and bench row 11 measures them).
//!
//! Needs `direwolf` and `python3` (and for JNOS what tests/peers/jnos needs: root, a tun
//! device, `ip`, `socat`); without them a test says so and passes, unless
//! `QTC_REQUIRE_PEERS=1` (CI). Real time: run with
//! `cargo test -p qtc --test radio_direwolf -- --ignored --nocapture`.
#![allow(clippy::disallowed_methods)]

mod common;
mod radio_util;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::jnos::{self, Jnos, Setup};
use common::jnos_mail::{
    check_at_jnos, check_at_qtc, for_jnos, from_jnos, post_at_jnos, shrink, wait_filed_at_jnos,
    AX25_MAX_BODY, JNOS_AREAS,
};
use common::{write_import, Daemon, Rng, SESSION_PATIENCE};
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

/// A modem's KISS TCP port joined to a pty by socat, as a sysop joins JNOS (which speaks KISS
/// on a serial line or pty) to Direwolf; stopped when dropped.
struct Bridge(Child);

impl Bridge {
    fn start(pty: &Path, kiss: u16) -> Bridge {
        let child = Command::new("socat")
            .arg(format!("FILE:{},raw,echo=0", pty.display()))
            .arg(format!("TCP:127.0.0.1:{kiss}"))
            .stdin(Stdio::null())
            .spawn()
            .expect("socat");
        Bridge(child)
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A figure of the last `link down` line of a daemon's log (`window=10`, `i_bytes=...`).
fn link_figure(d: &Daemon, key: &str) -> u64 {
    link_down(d)
        .split(&format!(" {key}="))
        .nth(1)
        .and_then(|v| v.split([' ', ',']).next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The channel's limit for `n` bytes of I-frame payload sent at PACLEN 256 in windows of `k`
/// frames on a modulo-8 link (JNOS speaks AX.25 2.0), with one RR transmission per window
/// (the channel README's formula, bench row 11's): seconds.
fn limit(n: u64, k: u64) -> f64 {
    let frames = n.div_ceil(256);
    let windows = frames.div_ceil(k.max(1)) as f64;
    let frame = (256.0 + 18.0) * 8.0 * 1.03 + 8.0;
    let rr = 17.0 * 8.0 * 1.03 + 8.0;
    (frames as f64 * frame + windows * rr) / 1200.0 + windows * 2.0 * (0.3 + 0.1)
}

/// Messages each way with JNOS.
const WITH_JNOS: usize = 5;

#[test]
#[ignore = "real time: about 3 minutes on a 1200-baud channel; CI runs it with --ignored"]
fn jnos_and_qtc_forward_both_ways_over_a_real_time_1200_baud_channel_exactly_once() {
    if !have("direwolf") || !have("python3") {
        return;
    }
    let Some(bin) = jnos::binary() else {
        return;
    };
    let chan = Channel::start();
    // JNOS as docs/radio.md sets it up beside qtc: its forward.bbs calls qtc's callsign on its
    // KISS interface; qtc knows JNOS as a BBS user and a partner reached at its BBS call.
    let jnos = Jnos::start(
        &bin,
        Setup::default()
            .user("n0usr", "pw")
            .partner("n0qtc", "qtcpw")
            .opt("--areas", &JNOS_AREAS.join(" ").to_ascii_lowercase())
            .opt("--smtp-timer", "1")
            .kiss()
            .connect("connect ax0 n0qtc", &[]),
    );
    let bridge = Bridge::start(&jnos.kiss_pty(), chan.kiss_a);
    let qtc = Daemon::start_bbs(
        "N0QTC",
        &[("N0JNS", "x", "--bbs")],
        &format!(
            "{}[[partner]]\ncallsign = \"N0JNS\"\nconnect = \"ax25:vhf:N0JNS-1\"\n\
             protocol = \"b1\"\nroutes = [\"N0JNS\", \"WW\"]\n",
            kiss_port(chan.kiss_b)
        ),
    );
    let mut rng = Rng(0x0a12_4a4e);
    let mut to_qtc = from_jnos(&mut rng, WITH_JNOS);
    let mut to_jnos = for_jnos(&mut rng, WITH_JNOS);
    for m in to_qtc.iter_mut().chain(&mut to_jnos) {
        shrink(m, AX25_MAX_BODY);
    }

    // JNOS calls and sends; qtc has nothing for it yet.
    post_at_jnos(&jnos, &to_qtc);
    let started = Instant::now();
    jnos.console(&["mbox kick n0qtc"]);
    let patience = SESSION_PATIENCE * 3;
    qtc.wait_for_log_within("forwarding session ended partner=N0JNS", patience);
    let jnos_to_qtc = started.elapsed();
    // The link's end (DISC, UA) comes a moment after the session's, with its counters.
    qtc.wait_for_log_within("link down", patience);
    check_at_qtc(&qtc, &jnos, &to_qtc);
    let (bytes_in, frames_in) = (link_figure(&qtc, "i_bytes_in"), link_down(&qtc));

    // qtc calls and sends.
    let file = write_import(qtc.dir.path(), "to-jnos.txt", &to_jnos, &mut rng);
    qtc.import(&file, WITH_JNOS);
    let started = Instant::now();
    let out = qtc.ctl(&["forward", "N0JNS"]);
    let qtc_to_jnos = started.elapsed();
    assert!(
        out.contains(&format!("0 received, {WITH_JNOS} sent")),
        "{out}\n{}",
        common::jnos_mail::logs(&qtc, &jnos)
    );
    wait_filed_at_jnos(&jnos, &to_jnos);
    check_at_jnos(&qtc, &jnos, &to_jnos);
    qtc.wait_for_log_count_within("link down", 2, patience);
    let (bytes_out, window) = (link_figure(&qtc, "i_bytes"), link_figure(&qtc, "window"));
    drop(jnos);
    drop(bridge);
    let stats = chan.stop();
    // JNOS as it comes sends one frame and waits for its acknowledgement (`ax25 maxframe 1`).
    let report = |what: &str, took: Duration, bytes: u64, k: u64| {
        let limit = limit(bytes, k);
        eprintln!(
            "{what}: {WITH_JNOS} messages, {bytes} bytes of I frames in {:.1} s over the \
             real-time 1200-baud channel = {:.2} × its limit ({limit:.1} s at window {k})",
            took.as_secs_f64(),
            took.as_secs_f64() / limit
        );
    };
    report("JNOS -> qtc", jnos_to_qtc, bytes_in, 1);
    report("qtc -> JNOS", qtc_to_jnos, bytes_out, window);
    eprintln!("qtc, JNOS's call: {frames_in}");
    eprintln!("qtc, its call: {}", link_down(&qtc));
    eprintln!("channel: {stats}");
}
