//! Forwarding through a TCP proxy that cuts the connection at seeded points: in the middle of a
//! proposal line, right after an FS answer, inside a message's data (a binary block in B0/B1/B2,
//! the text of a plain FB message) and after a random byte count. After each cut A calls again
//! (the planned cuts used up, the proxy lets the connection be); in the end every message is at
//! the other side exactly once, byte-identical, and the queues are empty. B1 must resume
//! interrupted transfers (`A<off>`), also when A is the one receiving (`b1_cut_both_ways`).

mod common;

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use common::{check_arrived, gen_lines, write_import, Daemon, GenMsg, Rng};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    AtoB = 0,
    BtoA = 1,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    MidProposal,
    AfterFs,
    MidData,
    Bytes,
}

/// Where to cut one connection: in `dir`, `plus` bytes after the end of the `nth` (0-based)
/// occurrence of `pattern` (after the CR ending that line, with `to_line_end`); or, with an
/// empty pattern, after `plus` bytes.
#[derive(Clone, Debug)]
struct Cut {
    kind: Kind,
    dir: Dir,
    pattern: &'static [u8],
    nth: usize,
    to_line_end: bool,
    plus: usize,
}

/// A cut in progress on one connection: how far the stream of `cut.dir` has been searched.
struct CutState {
    cut: Option<Cut>,
    seen: Vec<u8>,
    scanned: usize,
    matches: usize,
    anchor: Option<usize>,
    line_scanned: usize,
    at: Option<usize>,
    fired: bool,
    /// Bytes forwarded each way.
    moved: [usize; 2],
}

impl CutState {
    /// Takes `data` arriving in `dir`; returns how many of its bytes to forward and whether to
    /// cut after them.
    fn take(&mut self, dir: Dir, data: &[u8]) -> (usize, bool) {
        let Some(cut) = self.cut.clone().filter(|c| c.dir == dir) else {
            return (data.len(), false);
        };
        let start = self.seen.len();
        self.seen.extend_from_slice(data);
        if cut.pattern.is_empty() {
            self.at = Some(cut.plus);
        }
        while self.at.is_none() {
            if let Some(anchor) = self.anchor {
                if !cut.to_line_end {
                    self.at = Some(anchor + cut.plus);
                    break;
                }
                let from = self.line_scanned.max(anchor);
                match self.seen[from..].iter().position(|&b| b == b'\r') {
                    Some(p) => self.at = Some(from + p + 1 + cut.plus),
                    None => self.line_scanned = self.seen.len(),
                }
                break;
            }
            let from = self.scanned;
            let n = cut.pattern.len();
            match self.seen[from..].windows(n).position(|w| w == cut.pattern) {
                Some(p) => {
                    self.scanned = from + p + 1;
                    if self.matches == cut.nth {
                        self.anchor = Some(from + p + n);
                    }
                    self.matches += 1;
                }
                None => {
                    self.scanned = self.seen.len().saturating_sub(n - 1).max(from);
                    break;
                }
            }
        }
        match self.at {
            Some(at) if at <= self.seen.len() => (at.saturating_sub(start).min(data.len()), true),
            _ => (data.len(), false),
        }
    }
}

/// What one proxied connection did.
#[derive(Debug)]
struct Record {
    cut: Option<Cut>,
    fired: bool,
    moved: [usize; 2],
}

/// A TCP proxy to `target` that applies the next planned cut to each connection.
struct Proxy {
    port: u16,
    plans: Arc<Mutex<VecDeque<Cut>>>,
    records: Arc<Mutex<Vec<Record>>>,
}

impl Proxy {
    fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let plans: Arc<Mutex<VecDeque<Cut>>> = Arc::default();
        let records: Arc<Mutex<Vec<Record>>> = Arc::default();
        let (p, r) = (plans.clone(), records.clone());
        std::thread::spawn(move || {
            for a in listener.incoming() {
                let Ok(a) = a else { return };
                let b = TcpStream::connect(("127.0.0.1", target)).unwrap();
                let cut = p.lock().unwrap().pop_front();
                let r = r.clone();
                std::thread::spawn(move || connection(a, b, cut, r));
            }
        });
        Proxy {
            port,
            plans,
            records,
        }
    }

    fn fired(&self) -> Vec<Cut> {
        let r = self.records.lock().unwrap();
        r.iter()
            .filter(|r| r.fired)
            .filter_map(|r| r.cut.clone())
            .collect()
    }
}

fn connection(a: TcpStream, b: TcpStream, cut: Option<Cut>, records: Arc<Mutex<Vec<Record>>>) {
    let _ = a.set_nodelay(true);
    let _ = b.set_nodelay(true);
    let state = Arc::new(Mutex::new(CutState {
        cut: cut.clone(),
        seen: Vec::new(),
        scanned: 0,
        matches: 0,
        anchor: None,
        line_scanned: 0,
        at: None,
        fired: false,
        moved: [0, 0],
    }));
    let pumps = [
        (Dir::AtoB, a.try_clone().unwrap(), b.try_clone().unwrap()),
        (Dir::BtoA, b.try_clone().unwrap(), a.try_clone().unwrap()),
    ]
    .map(|(dir, from, to)| {
        let state = state.clone();
        let (ka, kb) = (a.try_clone().unwrap(), b.try_clone().unwrap());
        std::thread::spawn(move || pump(dir, from, to, &state, &ka, &kb))
    });
    for p in pumps {
        let _ = p.join();
    }
    let s = state.lock().unwrap();
    records.lock().unwrap().push(Record {
        cut,
        fired: s.fired,
        moved: s.moved,
    });
}

fn pump(
    dir: Dir,
    mut from: TcpStream,
    mut to: TcpStream,
    state: &Mutex<CutState>,
    a: &TcpStream,
    b: &TcpStream,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => n,
        };
        let (send, cut) = {
            let mut s = state.lock().unwrap();
            if s.fired {
                return;
            }
            let (send, cut) = s.take(dir, &buf[..n]);
            s.fired = cut;
            s.moved[dir as usize] += send;
            (send, cut)
        };
        if to.write_all(&buf[..send]).is_err() {
            return;
        }
        if cut {
            let _ = a.shutdown(Shutdown::Both);
            let _ = b.shutdown(Shutdown::Both);
            return;
        }
    }
}

/// `count` cuts, cycling through the kinds with seeded parameters. `proposal`: how a proposal
/// line starts (`FA `, `FB `, `FC `: only the first of a session follows a CR, later ones follow
/// the previous block's data). `data_max`: how far into a message's data a mid-data cut may
/// fall.
fn plan(
    rng: &mut Rng,
    count: usize,
    proposal: &'static [u8],
    data_max: usize,
    both_ways: bool,
) -> Vec<Cut> {
    // With traffic both ways, proposals and data also flow from B to A, and A answers FS.
    let sender = |rng: &mut Rng| {
        if both_ways && rng.chance(50) {
            Dir::BtoA
        } else {
            Dir::AtoB
        }
    };
    (0..count)
        .map(|i| match i % 4 {
            0 => Cut {
                kind: Kind::MidProposal,
                dir: sender(rng),
                pattern: proposal,
                nth: rng.range(0, 3),
                to_line_end: false,
                plus: rng.range(1, 20),
            },
            1 => Cut {
                kind: Kind::AfterFs,
                dir: match sender(rng) {
                    Dir::AtoB => Dir::BtoA,
                    Dir::BtoA => Dir::AtoB,
                },
                pattern: b"FS ",
                nth: rng.range(0, 2),
                to_line_end: true,
                plus: 0,
            },
            2 => Cut {
                kind: Kind::MidData,
                dir: sender(rng),
                pattern: b"\rF>",
                nth: rng.range(0, 1),
                to_line_end: true,
                plus: rng.range(1, data_max),
            },
            _ if !both_ways && rng.chance(25) => Cut {
                kind: Kind::Bytes,
                dir: Dir::BtoA,
                pattern: b"",
                nth: 0,
                to_line_end: false,
                // B sends little: its prompt, SID and FS / FF lines.
                plus: rng.range(0, 250),
            },
            _ => Cut {
                kind: Kind::Bytes,
                dir: sender(rng),
                pattern: b"",
                nth: 0,
                to_line_end: false,
                plus: if rng.chance(20) {
                    rng.range(0, 300)
                } else {
                    rng.range(300, 4 * data_max)
                },
            },
        })
        .collect()
}

fn messages(
    rng: &mut Rng,
    n: usize,
    min: usize,
    max: usize,
    home: &str,
    other: &str,
) -> Vec<GenMsg> {
    (0..n)
        .map(|i| {
            let personal = rng.chance(50);
            let size = rng.range(min, max);
            GenMsg {
                kind: if personal { 'P' } else { 'B' },
                to: if personal { "N0XYZ" } else { "ALL" }.into(),
                at: if personal { other } else { "WW" }.into(),
                from: "N0ABC".into(),
                bid: format!("C{i}_{home}"),
                subject: format!("cut test {i}, {size} bytes"),
                lines: gen_lines(rng, size, 250),
            }
        })
        .collect()
}

/// A sends `msgs` to B (and B sends `back` to A) through the cutting proxy, calling again
/// after each cut until both queues are empty.
fn cut_run(protocol: &str, seed: u64, msgs: &[GenMsg], back: &[GenMsg], cuts: Vec<Cut>) {
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs")],
        &format!(
            "[forward]\nlisten = [\"127.0.0.1:0\"]\n[[partner]]\ncallsign = \"N0AAA\"\n\
             protocol = \"{protocol}\"\nroutes = [\"N0AAA\", \"WW\"]\n"
        ),
    );
    let proxy = Proxy::start(b.fwd_port.unwrap());
    let a = Daemon::start_bbs(
        "N0AAA",
        &[],
        &format!(
            "[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:127.0.0.1:{}\"\n\
             password = \"fwdpw\"\nprotocol = \"{protocol}\"\nroutes = [\"N0BBB\", \"WW\"]\n",
            proxy.port
        ),
    );
    let mut rng = Rng(seed ^ 0x5eed);
    let file = write_import(a.dir.path(), "a.txt", msgs, &mut rng);
    a.import(&file, msgs.len());
    if !back.is_empty() {
        let file = write_import(b.dir.path(), "b.txt", back, &mut rng);
        b.import(&file, back.len());
    }
    let planned = cuts.len();
    proxy.plans.lock().unwrap().extend(cuts);

    let mut calls = 0;
    loop {
        calls += 1;
        assert!(
            calls <= planned + 20,
            "still not done after {calls} calls\n--- A ---\n{}\n--- B ---\n{}",
            common::tail(&a.log(), 6000),
            common::tail(&b.log(), 6000)
        );
        let (ok, out) = a.try_ctl(&["forward", "N0BBB"]);
        let queue = a.fwd_queue(None);
        if ok && queue.contains("\n0 queued") && b.fwd_queue(None).contains("\n0 queued") {
            break;
        }
        if !ok {
            assert!(out.starts_with("error: N0BBB"), "{out}");
        }
    }
    let fired = proxy.fired();
    let records = proxy.records.lock().unwrap();
    eprintln!(
        "{protocol}: {calls} calls, {} cuts fired: {:?}",
        fired.len(),
        records
            .iter()
            .filter(|r| r.fired)
            .map(|r| format!("{:?}@{:?}", r.cut.as_ref().unwrap().kind, r.moved))
            .collect::<Vec<_>>()
    );
    drop(records);
    assert!(fired.len() >= 20, "only {} cuts fired", fired.len());
    for k in [Kind::MidProposal, Kind::AfterFs, Kind::MidData, Kind::Bytes] {
        assert!(
            fired.iter().filter(|c| c.kind == k).count() >= 3,
            "{k:?} fired less than 3 times"
        );
    }
    let total = msgs.len() + back.len();
    assert_eq!(b.listed().len(), total, "{:?}", b.listed());
    assert_eq!(a.listed().len(), total, "{:?}", a.listed());
    check_arrived(
        &a,
        &back.iter().collect::<Vec<_>>(),
        "N0AAA",
        Some("N0BBB"),
        1,
    );
    check_arrived(
        &b,
        &msgs.iter().collect::<Vec<_>>(),
        "N0BBB",
        Some("N0AAA"),
        1,
    );
    let queue = a.fwd_queue(None);
    assert!(queue.ends_with("\n0 queued\n"), "{queue}");
    let queue = b.fwd_queue(None);
    assert!(queue.ends_with("\n0 queued\n"), "{queue}");
    // A last call finds nothing to do.
    let out = a.forward_ok("N0BBB", &b);
    assert!(out.contains("ok: N0BBB: 0 received, 0 sent"), "{out}");
    if protocol == "b1" {
        let mut receivers = vec![("B", &b)];
        if !back.is_empty() {
            receivers.push(("A", &a));
        }
        for (name, d) in receivers {
            let log = d.log();
            eprintln!(
                "b1: {name} answered A<off> {} times",
                log.matches("answer=AcceptFrom").count()
            );
            assert!(
                log.contains("answer=AcceptFrom"),
                "{name} never resumed a transfer (no A<off> answer)\n{}",
                common::tail(&log, 8000)
            );
        }
    }
}

#[test]
fn b1_cut_and_resumed() {
    let mut rng = Rng(0xc1);
    // Big messages, so that cuts fall inside binary blocks and resume offsets are used.
    let msgs = messages(&mut rng, 80, 20_000, 100_000, "N0AAA", "N0BBB");
    let cuts = plan(&mut rng, 36, b"FA ", 30_000, false);
    cut_run("b1", 0xc1, &msgs, &[], cuts);
}

#[test]
fn b1_cut_both_ways() {
    // B has big messages for A too: cuts also hit A's side as the receiver, and A resumes.
    let mut rng = Rng(0xc3);
    let msgs = messages(&mut rng, 50, 20_000, 100_000, "N0AAA", "N0BBB");
    let back = messages(&mut rng, 50, 20_000, 100_000, "N0BBB", "N0AAA");
    let cuts = plan(&mut rng, 40, b"FA ", 30_000, true);
    cut_run("b1", 0xc3, &msgs, &back, cuts);
}

#[test]
fn fbb_ascii_cut() {
    let mut rng = Rng(0xc2);
    let msgs = messages(&mut rng, 150, 0, 20_000, "N0AAA", "N0BBB");
    let cuts = plan(&mut rng, 28, b"FB ", 10_000, false);
    cut_run("fbb", 0xc2, &msgs, &[], cuts);
}

#[test]
fn b0_cut() {
    // B0 has no resume: every interrupted message starts again from its beginning.
    let mut rng = Rng(0xc4);
    let msgs = messages(&mut rng, 80, 5_000, 60_000, "N0AAA", "N0BBB");
    let cuts = plan(&mut rng, 28, b"FA ", 20_000, false);
    cut_run("b0", 0xc4, &msgs, &[], cuts);
}

#[test]
fn b2_cut() {
    let mut rng = Rng(0xc5);
    let msgs = messages(&mut rng, 80, 5_000, 60_000, "N0AAA", "N0BBB");
    let cuts = plan(&mut rng, 28, b"FC ", 20_000, false);
    cut_run("b2", 0xc5, &msgs, &[], cuts);
}
