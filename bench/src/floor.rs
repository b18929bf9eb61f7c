//! Row 2f: the B1 receiver's CPU per message as a multiple of a C floor, both timed in the
//! same run, their passes interleaved (row 2's B1 group runs it, --only forward --modes b1).
//!
//! A capture pass puts a recording relay between row 2's sender A and receiver B and keeps what
//! A sends in B1 for the row's 2 KB bulletins (1,000 in a quick run): the very bytes qtc's receiver gets. The floor
//! (bench/c/floor.c, built by bench/lzhuf-c.sh) reads that capture from a pipe 8 KB at a time,
//! checks every transfer's EOT checksum and B1 CRC, decodes it with the C LZHUF core of row 6,
//! writes the text to a file and calls `fdatasync` once per proposal block (up to 5 messages,
//! as qtc's `full` durability does), and reports its own CPU (getrusage). qtc's side is row 2's
//! B1 timing passes (a fresh pair, B with a second partner to queue for), B's CPU taken with
//! [`cpu_ns`].

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;

use crate::daemon::Opts;
use crate::forward::{forward_all, onward, pair_with, seed, sender_via, Spread};
use crate::report::Row;
use crate::util::{clk_tck, thousands, Ctx, TempDir, R};

/// The bar: qtc's receiver at most this multiple of the floor's CPU per message.
const TARGET: f64 = 1.1;

pub const HOW: &str =
    "per pass: the floor (bench/c/floor.c: read 8 KB, EOT checksum, B1 CRC, C LZHUF \
decode, write, fdatasync per block) on a capture of A's B1 bytes, getrusage; qtc: row 2's B1 \
timing passes, B's threads' schedstat + helper ticks; passes interleaved, medians";

/// A one-connection relay on loopback in front of `to`, keeping the bytes its caller sends.
struct Relay {
    port: u16,
    kept: JoinHandle<R<Vec<u8>>>,
}

impl Relay {
    fn start(to: u16) -> R<Relay> {
        let l = TcpListener::bind("127.0.0.1:0").ctx("relay bind")?;
        let port = l.local_addr().ctx("relay address")?.port();
        let kept = std::thread::spawn(move || -> R<Vec<u8>> {
            let (mut a, _) = l.accept().ctx("relay accept")?;
            let mut b = TcpStream::connect(("127.0.0.1", to)).ctx("relay connect")?;
            let (mut a_back, mut b_back) = (
                a.try_clone().ctx("relay clone")?,
                b.try_clone().ctx("relay clone")?,
            );
            let back = std::thread::spawn(move || {
                let _ = std::io::copy(&mut b_back, &mut a_back);
                let _ = a_back.shutdown(Shutdown::Write);
            });
            let mut kept = Vec::new();
            let mut buf = [0u8; 16384];
            loop {
                let n = a.read(&mut buf).ctx("relay read")?;
                if n == 0 {
                    break;
                }
                kept.extend_from_slice(&buf[..n]);
                b.write_all(&buf[..n]).ctx("relay write")?;
            }
            let _ = b.shutdown(Shutdown::Write);
            back.join().map_err(|_| "relay thread panicked")?;
            Ok(kept)
        });
        Ok(Relay { port, kept })
    }
}

/// What A sends B in B1 for `n` bulletins, recorded on the way.
fn capture(o: &Opts, n: usize) -> R<Vec<u8>> {
    let (_, b) = pair_with(o, "b1", &onward("b1"))?;
    let relay = Relay::start(b.fwd.ctx("the receiver has no forwarding port")?)?;
    let a = sender_via(o, &b, relay.port, "b1")?;
    seed(&a, n)?;
    forward_all(&a, &b, n)?;
    relay.kept.join().map_err(|_| "relay panicked")?
}

/// CPU of all of a process's live threads (nanoseconds, from each one's `schedstat`) and its
/// waited-for children's (ticks, cutime + cstime, as nanoseconds).
pub fn cpu_ns(pid: u32) -> R<f64> {
    let mut ns = 0.0;
    let tasks = format!("/proc/{pid}/task");
    for t in std::fs::read_dir(&tasks).ctx(&tasks)? {
        let path = t.ctx(&tasks)?.path().join("schedstat");
        // A thread may end between the listing and the read: it no longer counts either way.
        if let Ok(s) = std::fs::read_to_string(&path) {
            ns += s
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .ctx("schedstat")?;
        }
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ctx("stat")?;
    let f: Vec<&str> = stat[stat.rfind(')').ctx("bad stat")? + 2..]
        .split_whitespace()
        .collect();
    let children: f64 = (13..15)
        .map(|i| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0))
        .sum();
    Ok(ns + children / clk_tck() * 1e9)
}

/// The floor's CPU per message on the capture, ms.
fn floor_pass(c: &Path, (capture, n): (&[u8], usize), dir: &Path) -> R<f64> {
    let out = dir.join("floor.txt");
    let mut child = Command::new(c)
        .arg(&out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ctx(c.display())?;
    let mut stdin = child.stdin.take().ctx("floor stdin")?;
    let data = capture.to_vec();
    let feed = std::thread::spawn(move || stdin.write_all(&data));
    let done = child.wait_with_output().ctx("floor")?;
    feed.join()
        .map_err(|_| "feeder panicked")?
        .ctx("feeding the floor")?;
    let _ = std::fs::remove_file(&out);
    let said = String::from_utf8_lossy(&done.stdout).into_owned();
    let f: Vec<f64> = said
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    if !done.status.success() || f.len() != 4 || f[1] != n as f64 {
        return Err(format!("floor-c: {} {said:?}", done.status));
    }
    Ok(f[0] / 1e3 / n as f64)
}

/// The floor's side of row 2f: the capture and the floor's passes, made next to row 2's B1
/// timing passes (the qtc side).
pub struct Floor {
    c: PathBuf,
    capture: Vec<u8>,
    n: usize,
    dir: TempDir,
    runs: Vec<f64>,
}

impl Floor {
    /// Finds the floor (bench/lzhuf-c.sh builds it) and captures `n` bulletins, as many as
    /// each of row 2's passes moves.
    pub fn start(o: &Opts, n: usize) -> R<Floor> {
        let c = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-c/floor-c");
        if !c.exists() {
            return Err(format!(
                "{} is missing: bench/lzhuf-c.sh builds it",
                c.display()
            ));
        }
        eprintln!("  forward B1: capturing A's B1 bytes for {n} bulletins (row 2f)");
        Ok(Floor {
            c,
            capture: capture(o, n)?,
            n,
            dir: TempDir::new("floor")?,
            runs: Vec::new(),
        })
    }

    /// One pass of the floor.
    pub fn pass(&mut self) -> R<()> {
        let ms = floor_pass(&self.c, (&self.capture, self.n), self.dir.path())?;
        self.runs.push(ms);
        Ok(())
    }

    /// The floor's row and one per qtc: `(tag, B's CPU per message in each timing pass)`.
    pub fn rows(&self, qtc: &[(&str, Vec<f64>)]) -> Vec<Row> {
        if self.runs.is_empty() {
            return Vec::new();
        }
        let floor = Spread::of(self.runs.clone());
        let mut rows = vec![Row::info(
            "2f",
            &format!(
                "B1: C floor's receive CPU per message ({} B captured)",
                thousands(self.capture.len() as u64)
            ),
            format!("{} ms/msg", floor.show(4)),
            "",
            HOW,
        )];
        for (tag, runs) in qtc.iter().filter(|(_, r)| !r.is_empty()) {
            let q = Spread::of(runs.clone());
            let ratio = q.median() / floor.median();
            rows.push(Row::check(
                "2f",
                &format!("B1{tag}: receiver B CPU per message against the C floor"),
                format!("{ratio:.2}× the floor (B {} ms/msg)", q.show(4)),
                &format!("<= {TARGET}× the C floor"),
                ratio <= TARGET,
                HOW,
            ));
        }
        rows
    }
}
