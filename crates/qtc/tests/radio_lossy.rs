//! Never lose, never duplicate, over a bad radio channel: two real qtc instances forward over
//! AX.25 (AXUDP on loopback) through a relay that drops a seeded share of the frames both ways,
//! and once, mid-transfer, drops everything for long enough that the link gives up (the band
//! closes). A calls B again until its queue is empty; then every message is at B exactly once,
//! byte-identical, and A's records agree.

// The relay keeps time for its blackout; it is the test harness, not a sans-IO core.
#![allow(clippy::disallowed_methods)]

mod common;
mod radio_util;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{check_arrived, gen_lines, write_import, Daemon, GenMsg, Rng};
use radio_util::free_udp_port;

/// Percent of frames the relay drops, each way.
const LOSS_PERCENT: u64 = 15;
/// Calls A may need: the one the blackout breaks, and the next, which resumes. (Before B handed
/// a link the caller re-established to a new session, B's stale session dropped the new call
/// and B refused calls with DM for minutes: 11 calls here.)
const MAX_CALLS: usize = 4;
/// After this many frames have passed, nothing passes until A's session has failed (its link
/// gave up after 5 tries of T1), or `BLACKOUT_MAX` at the most.
const BLACKOUT_AFTER: usize = 250;
const BLACKOUT_MAX: Duration = Duration::from_secs(60);

/// The channel both directions of the relay share.
struct Channel {
    stop: AtomicBool,
    /// Frames passed, both directions.
    passed: AtomicUsize,
    /// Frames dropped at random, per direction (A to B, B to A).
    lost: [AtomicUsize; 2],
    /// When the blackout began, and whether it is over.
    blackout: Mutex<Option<(Instant, bool)>>,
    /// A's log: the blackout ends once it shows the failed session.
    a_log: std::path::PathBuf,
    /// Frames dropped in the blackout.
    blacked_out: AtomicUsize,
}

impl Channel {
    /// Whether a frame may pass now; starts the blackout when its time has come.
    fn open(&self) -> bool {
        let mut b = self.blackout.lock().unwrap();
        match *b {
            None if self.passed.load(Ordering::Relaxed) >= BLACKOUT_AFTER => {
                *b = Some((Instant::now(), false));
                false
            }
            None | Some((_, true)) => true,
            Some((since, false)) => {
                let failed = std::fs::read_to_string(&self.a_log)
                    .is_ok_and(|l| l.contains("forwarding session failed"));
                if failed || since.elapsed() > BLACKOUT_MAX {
                    *b = Some((since, true));
                }
                failed
            }
        }
    }
}

/// Moves datagrams arriving at `from` to `to` (sent from `via`): some are lost at random, all
/// in the blackout.
fn relay(
    from: UdpSocket,
    via: UdpSocket,
    to: SocketAddr,
    dir: usize,
    channel: Arc<Channel>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut rng = Rng(0x1055 + dir as u64);
        from.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut buf = [0u8; 4096];
        while !channel.stop.load(Ordering::Relaxed) {
            let Ok(n) = from.recv(&mut buf) else { continue };
            if !channel.open() {
                channel.blacked_out.fetch_add(1, Ordering::Relaxed);
            } else if rng.next_u64() % 100 < LOSS_PERCENT {
                channel.lost[dir].fetch_add(1, Ordering::Relaxed);
            } else {
                channel.passed.fetch_add(1, Ordering::Relaxed);
                let _ = via.send_to(&buf[..n], to);
            }
        }
    })
}

/// `t3 = "5s"`: when the blackout swallows the far end's frames and its link gives up, the
/// near end may have nothing unacknowledged and sit waiting for data; only T3 (300 s by default,
/// as long as the test's patience) makes it poll and find the link gone.
fn port_table(listen: u16, peer_call: &str, peer: SocketAddr) -> String {
    format!(
        "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:{listen}\"\n\
         peers = [{{ callsign = \"{peer_call}\", address = \"{peer}\" }}]\n\
         frack = \"1s\"\nretries = 5\npaclen = 128\nt3 = \"5s\"\n"
    )
}

#[test]
fn forwarding_over_a_lossy_ax25_link_is_exactly_once() {
    let mut rng = Rng(0x1055);
    let msgs: Vec<GenMsg> = (0..40)
        .map(|i| {
            let size = rng.range(100, 4_000);
            GenMsg {
                kind: 'B',
                to: "ALL".into(),
                at: "WW".into(),
                from: "N0ABC".into(),
                bid: format!("L{i}_N0AAA"),
                subject: format!("lossy test {i}, {size} bytes"),
                lines: gen_lines(&mut rng, size, 200),
            }
        })
        .collect();

    let (a_port, b_port) = (free_udp_port(), free_udp_port());
    // A sends to the relay's `to_b` socket, B to its `to_a` socket.
    let to_b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to_a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (to_b_addr, to_a_addr) = (to_b.local_addr().unwrap(), to_a.local_addr().unwrap());
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs")],
        &format!(
            "{}[[partner]]\ncallsign = \"N0AAA\"\nconnect = \"ax25:udp:N0AAA\"\nroutes = [\"N0AAA\"]\n",
            port_table(b_port, "N0AAA", to_a_addr)
        ),
    );
    let a = Daemon::start_bbs(
        "N0AAA",
        &[],
        &format!(
            "{}[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"ax25:udp:N0BBB\"\nprotocol = \"b1\"\n\
             routes = [\"N0BBB\", \"WW\"]\n",
            port_table(a_port, "N0BBB", to_b_addr)
        ),
    );
    let path = write_import(a.dir.path(), "lossy.txt", &msgs, &mut rng);
    let out = a.cli(&["msg", "import", path.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");

    let channel = Arc::new(Channel {
        stop: AtomicBool::new(false),
        passed: AtomicUsize::new(0),
        lost: [AtomicUsize::new(0), AtomicUsize::new(0)],
        blackout: Mutex::new(None),
        a_log: a.dir.path().join("qtc.log"),
        blacked_out: AtomicUsize::new(0),
    });
    let b_addr: SocketAddr = format!("127.0.0.1:{b_port}").parse().unwrap();
    let a_addr: SocketAddr = format!("127.0.0.1:{a_port}").parse().unwrap();
    let relays = [
        relay(
            to_b.try_clone().unwrap(),
            to_a.try_clone().unwrap(),
            b_addr,
            0,
            channel.clone(),
        ),
        relay(to_a, to_b, a_addr, 1, channel.clone()),
    ];

    let mut calls = 0;
    while !a.fwd_queue(None).ends_with("\n0 queued\n") {
        calls += 1;
        assert!(
            calls <= MAX_CALLS,
            "A's queue is not empty after {MAX_CALLS} calls\n{}\n--- A ---\n{}\n--- B ---\n{}",
            a.fwd_queue(None),
            common::tail(&a.log(), 6000),
            common::tail(&b.log(), 6000)
        );
        let (_, out) = a.try_ctl(&["forward", "N0BBB"]);
        eprintln!("call {calls}: {}", out.trim());
    }
    channel.stop.store(true, Ordering::Relaxed);
    for r in relays {
        r.join().unwrap();
    }
    let lost = [0, 1].map(|d| channel.lost[d].load(Ordering::Relaxed));
    let blacked_out = channel.blacked_out.load(Ordering::Relaxed);
    eprintln!(
        "radio_lossy: {} messages in {calls} calls; {} frames passed; dropped at random: {} A->B, \
         {} B->A; {blacked_out} lost in the blackout",
        msgs.len(),
        channel.passed.load(Ordering::Relaxed),
        lost[0],
        lost[1]
    );
    assert!(
        lost[0] + lost[1] >= 20,
        "too few frames were dropped to test anything"
    );
    // The blackout broke a session: A had to call again and carried on where it was.
    assert!(calls >= 2, "the blackout did not end a session");
    // Every message exactly once at B, byte-identical, with both R: lines; A's queue is empty.
    assert_eq!(b.listed().len(), msgs.len(), "{:?}", b.listed());
    check_arrived(
        &b,
        &msgs.iter().collect::<Vec<_>>(),
        "N0BBB",
        Some("N0AAA"),
        1,
    );
}
