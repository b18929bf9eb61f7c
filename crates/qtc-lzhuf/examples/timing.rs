//! The qtc side of bench/run.sh's LZHUF row, with the same interface as the C core it is
//! compared with (bench/c/lzhuf.c), so that both are timed the same way:
//!
//! ```text
//! timing INPUT REPS OUTPUT [PIECE]  compress INPUT REPS times, decompress it REPS times, check
//!                                   the round trip, write the B0 form to OUTPUT, print
//!                                   "encode_ns decode_ns": the fastest run of each, in
//!                                   CPU time of the thread (time preempted by other
//!                                   processes does not count); with PIECE, each PIECE
//!                                   bytes on their own, as many different messages (a run
//!                                   is all of them; OUTPUT gets the first one's form)
//! timing --corpus english|random LEN SEED OUTPUT
//!                                   write the benchmark's generated input
//! timing --decode PAYLOAD OUTPUT    decompress a B0 PAYLOAD (the C core's: the benchmark checks
//!                                   that each side decodes the other's) to OUTPUT
//! ```
//! Run: `cargo run --release -p qtc-lzhuf --example timing -- ...`.

#[path = "../tests/corpus/mod.rs"]
mod corpus;

use nix::time::{clock_gettime, ClockId};
use qtc_lzhuf::{compress, decompress, Limits};
use std::hint::black_box;
use std::process::ExitCode;

const USAGE: &str =
    "usage: timing INPUT REPS OUTPUT [PIECE] | timing --corpus english|random LEN SEED \
OUTPUT | timing --decode PAYLOAD OUTPUT";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["--corpus", kind, len, seed, out] => write_corpus(kind, len, seed, out),
        ["--decode", payload, out] => decode(payload, out),
        [input, reps, out] => time(input, reps, out, None),
        [input, reps, out, piece] => number(piece).and_then(|p| time(input, reps, out, Some(p))),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("timing: {e}");
            ExitCode::FAILURE
        }
    }
}

fn number(s: &str) -> Result<usize, String> {
    s.parse().map_err(|_| format!("not a number: {s}\n{USAGE}"))
}

fn write_corpus(kind: &str, len: &str, seed: &str, out: &str) -> Result<(), String> {
    let (len, seed) = (number(len)?, number(seed)? as u64);
    let data = match kind {
        "english" => corpus::english(len, seed),
        "random" => corpus::random(len, seed),
        _ => return Err(USAGE.to_string()),
    };
    std::fs::write(out, data).map_err(|e| format!("{out}: {e}"))
}

fn decode(payload: &str, out: &str) -> Result<(), String> {
    let packed = std::fs::read(payload).map_err(|e| format!("{payload}: {e}"))?;
    let data = decompress(&packed, &Limits::default()).map_err(|e| format!("{payload}: {e}"))?;
    std::fs::write(out, data).map_err(|e| format!("{out}: {e}"))
}

/// CPU time this thread has used, nanoseconds.
fn cpu_ns() -> i128 {
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("thread CPU clock");
    i128::from(t.tv_sec()) * 1_000_000_000 + i128::from(t.tv_nsec())
}

/// Fastest of `reps` runs of `f` in thread CPU time, nanoseconds, and `f`'s last result.
fn fastest<T>(reps: usize, mut f: impl FnMut() -> T) -> (i128, T) {
    let mut best = i128::MAX;
    let mut last = None;
    for _ in 0..reps {
        let t0 = cpu_ns();
        let r = black_box(f());
        best = best.min(cpu_ns() - t0);
        last = Some(r);
    }
    (best, last.expect("reps >= 1"))
}

fn time(input: &str, reps: &str, out: &str, piece: Option<usize>) -> Result<(), String> {
    let data = std::fs::read(input).map_err(|e| format!("{input}: {e}"))?;
    let reps = number(reps)?.max(1);
    let pieces: Vec<&[u8]> = data.chunks(piece.unwrap_or(data.len()).max(1)).collect();
    let (enc, packed) = fastest(reps, || {
        pieces
            .iter()
            .map(|p| compress(black_box(p)))
            .collect::<Vec<_>>()
    });
    let limits = Limits::default();
    let (dec, back) = fastest(reps, || {
        packed
            .iter()
            .map(|p| decompress(black_box(p), &limits))
            .collect::<Result<Vec<_>, _>>()
    });
    if back.map_err(|e| e.to_string())?.concat() != data {
        return Err("round trip differs".into());
    }
    let first = packed.first().ok_or("empty input")?;
    std::fs::write(out, first).map_err(|e| format!("{out}: {e}"))?;
    println!("{enc} {dec}");
    Ok(())
}
