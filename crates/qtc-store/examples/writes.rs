//! What the store writes to disk per received message: `store_received` in blocks of five, as
//! forwarding delivers them, durability full, then a checkpoint (until one has run, the
//! messages are only in the WAL); /proc/self/io `write_bytes` before and after.
//!
//!     cargo run --release -p qtc-store --example writes -- [MESSAGES] [DIR]
//!
//! `WRITES_HUB=1`: every bulletin is also queued onward for a second partner. `WRITES_KEEP=1`:
//! stop before the checkpoint and leave the store in DIR. `WRITES_PREFILL=N`: N small bulletins
//! stored first, so the indexes are those of a store in use.
//!
//! Bench row 12 measures the same through the daemon (`bench/run.sh --only disk`).
#![allow(clippy::disallowed_methods)]

use qtc_callsign::Callsign;
use qtc_mail::{route, MsgType, Station};
use qtc_store::{Durability, Incoming, Store};

fn write_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Sectors written to the block device `name` (`/sys/block/NAME/stat`, field 7), in bytes.
fn device_bytes(name: &str) -> u64 {
    std::fs::read_to_string(format!("/sys/block/{name}/stat"))
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(6)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |sectors| sectors * 512)
}

/// A bulletin as bench row 2 sends them: an R: line, then lines of about 60 characters of
/// words drawn from the bench's 40 (bench/src/util.rs, `Text`), to 2,050 bytes.
fn body(i: usize) -> Vec<u8> {
    // The bench's 40 words (bench/src/util.rs, `WORDS`).
    const WORDS: &str =
        "the band was open to europe on twenty meters packet radio node digipeater \
        bulletin forward net tonight at local time antenna tower work weekend club meeting \
        repeater frequency check in please send reports of propagation contest rules and log";
    let words: Vec<&str> = WORDS.split_whitespace().collect();
    let mut out =
        format!("R:261205/1200Z @:N0BBB.#NCA.CA.USA.NOAM #:{i} $:B{i}_N0BBB\r\n\r\n").into_bytes();
    let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while out.len() < 2050 {
        let mut line = 0;
        while line < 60 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let w = words[(x % words.len() as u64) as usize];
            if line > 0 {
                out.push(b' ');
                line += 1;
            }
            out.extend_from_slice(w.as_bytes());
            line += w.len();
        }
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let dir = args
        .get(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("qtc-store-writes-{}", std::process::id()))
        });
    let _ = std::fs::remove_dir_all(&dir);
    let mut store = Store::open(&dir, Durability::Full).unwrap();
    let p = |c: &str, r: &[&str]| route::PartnerRoutes {
        call: call(c),
        routes: r.iter().map(|s| s.to_string()).collect(),
        collects: false,
    };
    store.set_station(Station {
        haddr: "N0AAA.#NCA.CA.USA.NOAM".into(),
        // With `WRITES_HUB` set, every bulletin is queued onward for a second partner.
        partners: if std::env::var_os("WRITES_HUB").is_some() {
            vec![p("N0BBB", &["N0BBB"]), p("N0CCC", &["WW"])]
        } else {
            vec![p("N0BBB", &["N0BBB"])]
        },
        ..Station::new(call("N0AAA"))
    });
    // `WRITES_PREFILL=N`: N small bulletins (200 bytes, from 2,000 senders) stored first, so
    // the indexes are those of a store in use rather than a fresh one.
    let prefill: usize = std::env::var("WRITES_PREFILL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    for block in 0..prefill / 5 {
        let msgs: Vec<Incoming> = (0..5)
            .map(|j| {
                let i = block * 5 + j;
                Incoming {
                    kind: MsgType::Bulletin,
                    from: format!("K{}X{:03}", i % 10, (i / 10) % 200),
                    to: "ALL".into(),
                    at: "WW".into(),
                    bid: format!("P{}_{}", (i * 7919) % 100_000, i),
                    title: format!("Old bulletin {i}").into_bytes(),
                    text: vec![b'x'; 200],
                    hold: false,
                    recipients: Vec::new(),
                    files: Vec::new(),
                    charset: String::new(),
                }
            })
            .collect();
        store
            .store_received(call("N0BBB"), &msgs, 1_764_000_000)
            .unwrap();
    }
    let mut stored = 0u64;
    let t0 = std::time::Instant::now();
    let device = std::env::var("WRITES_DEVICE").ok();
    let d0 = device.as_deref().map_or(0, device_bytes);
    let w0 = write_bytes();
    for block in 0..n / 5 {
        let msgs: Vec<Incoming> = (0..5)
            .map(|j| {
                let i = block * 5 + j;
                let text = body(i);
                stored += text.len() as u64;
                Incoming {
                    kind: MsgType::Bulletin,
                    from: "N0XYZ".into(),
                    to: "ALL".into(),
                    at: "WW".into(),
                    bid: format!("B{i}_N0BBB"),
                    title: format!("Bulletin {i}").into_bytes(),
                    text,
                    hold: false,
                    recipients: Vec::new(),
                    files: Vec::new(),
                    charset: String::new(),
                }
            })
            .collect();
        store
            .store_received(call("N0BBB"), &msgs, 1_765_000_000)
            .unwrap();
    }
    if std::env::var_os("WRITES_KEEP").is_some() {
        // Leave the WAL as it is (no checkpoint, none at close either), to read its frames:
        // each frame's header starts with the page it holds.
        println!("kept {}", dir.display());
        std::process::exit(0);
    }
    // Until a checkpoint has copied them into the database, the messages are only in the WAL:
    // count that copy too (housekeeping with nothing due makes one).
    store
        .housekeep(1_765_000_000, &qtc_store::Lifetimes::default())
        .unwrap();
    let written = write_bytes() - w0;
    let per = written as f64 / n as f64;
    println!(
        "{n} messages: {written} bytes written, {per:.0} per message = {:.2} × the message ({} bytes); {:.1} µs per message",
        per / (stored as f64 / n as f64),
        stored / n as u64,
        t0.elapsed().as_secs_f64() * 1e6 / n as f64
    );
    drop(store);
    if let Some(name) = device.as_deref() {
        // What reaches the device: the page cache written back and the journal committed.
        let _ = std::process::Command::new("sync")
            .arg("-f")
            .arg(&dir)
            .status();
        let d = device_bytes(name) - d0;
        println!(
            "device {name}: {d} bytes = {:.2} × the messages' {stored} bytes",
            d as f64 / stored as f64
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A callsign written here.
fn call(text: &str) -> Callsign {
    text.parse().expect("a callsign")
}
