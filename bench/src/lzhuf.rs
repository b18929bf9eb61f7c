//! Row 6: the LZHUF codec's speed as a ratio to the C LZHUF core, both timed in the same run.
//!
//! qtc's side is the qtc-lzhuf `timing` example, the C side bench/c/lzhuf.c (built by
//! bench/lzhuf-c.sh); both take `INPUT REPS OUTPUT [PIECE]`, time REPS compressions and REPS
//! decompressions in-process and print the fastest of each in nanoseconds of the thread's CPU
//! time (so time spent preempted by the other processes of a busy machine does not count).
//! With PIECE each piece of the input is a message of its own: the bulletins row codes a
//! thousand different ones per run, as a BBS does, because one bulletin coded again and again
//! lets the CPU's branch predictors learn its path through the adaptive model. The
//! two are run in turn, several rounds, so that cache and core sharing hit both alike; the
//! fastest run of each counts. Each must decompress the other's output to the input (qtc parses
//! as the C core does but codes some matches nearer, so the two outputs differ by a few bytes);
//! the compress rows give both sizes.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::daemon::Opts;
use crate::report::Row;
use crate::util::{Ctx, TempDir, R};
use crate::Plan;

const HOW: &str = "bench/c/lzhuf.c (C LZHUF core, cc -O2) and qtc-lzhuf's `timing` example \
in turn on one input, fastest run of each in thread CPU time; each decodes the other's output";

/// qtc's targets as multiples of the C core's speed: (compress, decompress).
const TARGET: (f64, f64) = (2.0, 3.0);

/// One input: its name, the `timing` example's generator, length and seed, the size of each
/// message it is cut into (none: one message), runs per process (full, quick), and whether the
/// targets apply to it (otherwise its rows are figures only).
struct Input {
    name: &'static str,
    what: &'static str,
    kind: &'static str,
    len: usize,
    seed: u64,
    piece: Option<usize>,
    reps: (usize, usize),
    targets: bool,
}

const INPUTS: [Input; 2] = [
    Input {
        name: "text_3m",
        what: "3.1 MB English-like text",
        kind: "english",
        len: 3_100_000,
        seed: 11,
        piece: None,
        reps: (2, 1),
        targets: true,
    },
    Input {
        name: "bulletins_2k",
        what: "1,000 different 2 KB bulletins",
        kind: "english",
        len: 2_000_000,
        seed: 3,
        piece: Some(2_000),
        reps: (3, 1),
        targets: false,
    },
];

/// Fastest compress and decompress, nanoseconds.
#[derive(Clone, Copy)]
struct Times {
    enc: f64,
    dec: f64,
}

impl Times {
    fn min(self, o: Times) -> Times {
        Times {
            enc: self.enc.min(o.enc),
            dec: self.dec.min(o.dec),
        }
    }
}

/// Runs one timing program (`INPUT REPS OUTPUT [PIECE]`) and reads its two figures.
fn time(prog: &Path, input: &Path, reps: usize, output: &Path, piece: Option<usize>) -> R<Times> {
    let out = Command::new(prog)
        .arg(input)
        .arg(reps.to_string())
        .arg(output)
        .args(piece.map(|p| p.to_string()))
        .output()
        .ctx(format!("cannot run {}", prog.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect();
    match (out.status.success(), &v[..]) {
        (true, &[enc, dec]) => Ok(Times { enc, dec }),
        _ => Err(format!(
            "{} failed: {} {}",
            prog.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// Runs `prog ARGS... PAYLOAD OUTPUT` (its decode mode) and checks that OUTPUT is `want`.
fn check_decodes(prog: &Path, args: &[&str], payload: &Path, want: &[u8], dir: &Path) -> R<()> {
    let back = dir.join("back");
    let st = Command::new(prog)
        .args(args)
        .arg(payload)
        .arg(&back)
        .status()
        .ctx(format!("cannot run {}", prog.display()))?;
    if !st.success() || std::fs::read(&back).ctx("decoded output")? != want {
        return Err(format!(
            "{} does not decode {} to the input",
            prog.display(),
            payload.display()
        ));
    }
    Ok(())
}

/// Both sides on one input, `rounds` times in turn: (qtc, C) times and compressed sizes.
fn measure(
    qtc: &Path,
    c: &Path,
    dir: &Path,
    input: &Input,
    p: &Plan,
) -> R<((Times, Times), (usize, usize))> {
    let data = dir.join(input.name);
    let st = Command::new(qtc)
        .arg("--corpus")
        .arg(input.kind)
        .arg(input.len.to_string())
        .arg(input.seed.to_string())
        .arg(&data)
        .status()
        .ctx(format!("cannot run {}", qtc.display()))?;
    if !st.success() {
        return Err(format!("{} --corpus failed: {st}", qtc.display()));
    }
    let reps = if p.quick { input.reps.1 } else { input.reps.0 };
    let rounds = if p.quick { 2 } else { 5 };
    let (qtc_out, c_out) = (dir.join("qtc.lzh"), dir.join("c.lzh"));
    let mut best: Option<(Times, Times)> = None;
    for _ in 0..rounds {
        let tc = time(c, &data, reps, &c_out, input.piece)?;
        let tq = time(qtc, &data, reps, &qtc_out, input.piece)?;
        best = Some(best.map_or((tq, tc), |(q, cc)| (q.min(tq), cc.min(tc))));
    }
    // The outputs are the first message's form.
    let mut want = std::fs::read(&data).ctx("input")?;
    want.truncate(input.piece.unwrap_or(want.len()));
    check_decodes(c, &["-d"], &qtc_out, &want, dir)?;
    check_decodes(qtc, &["--decode"], &c_out, &want, dir)?;
    let size = |f: &Path| {
        std::fs::metadata(f)
            .map(|m| m.len() as usize)
            .ctx("output size")
    };
    let sizes = (size(&qtc_out)?, size(&c_out)?);
    Ok((best.ok_or("no rounds")?, sizes))
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn mb_s(bytes: usize, ns: f64) -> f64 {
    bytes as f64 / ns * 1e3
}

/// Runs row 6.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let c = root.join("target/bench-c/lzhuf-c");
    let qtc = o
        .bin
        .parent()
        .map(|d| d.join("examples/timing"))
        .unwrap_or_default();
    let load_before = load_average();
    let dir = match TempDir::new("lzhuf") {
        Ok(d) => d,
        Err(e) => return (vec![Row::broken("6", "LZHUF", &e, HOW)], Vec::new()),
    };
    let mut rows = Vec::new();
    for input in &INPUTS {
        let ((q, cc), (q_size, c_size)) = match measure(&qtc, &c, dir.path(), input, p) {
            Ok(t) => t,
            Err(e) => {
                rows.push(Row::broken("6", &format!("LZHUF, {}", input.what), &e, HOW));
                continue;
            }
        };
        let first = if input.piece.is_some() { "first " } else { "" };
        let sizes = format!("; {first}output qtc {q_size} B, C {c_size} B");
        for (what, qns, cns, target, extra) in [
            ("compress", q.enc, cc.enc, TARGET.0, sizes.as_str()),
            ("decompress", q.dec, cc.dec, TARGET.1, ""),
        ] {
            let ratio = cns / qns;
            let figure = format!(
                "{ratio:.2}× the C core (qtc {:.1} MB/s, C {:.1} MB/s{extra})",
                mb_s(input.len, qns),
                mb_s(input.len, cns)
            );
            let what = format!("LZHUF {what}, {}", input.what);
            rows.push(if input.targets {
                Row::check(
                    "6",
                    &what,
                    figure,
                    &format!(">= {target}× the C core"),
                    ratio >= target,
                    HOW,
                )
            } else {
                Row::info("6", &what, figure, "", HOW)
            });
        }
    }
    let notes = vec![format!(
        "Row 6: load average {load_before} before, {} after.",
        load_average()
    )];
    (rows, notes)
}
