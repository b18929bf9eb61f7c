//! Times housekeeping passes on a store: `housekeep DIR [PASSES]` runs PASSES whole passes
//! (default 3: the first expires, the second removes what it killed, the third finds nothing)
//! and prints each one's wall time, CPU time and what it did.
//!
//!     cargo run --release -p qtc-store --example housekeep -- DIR 3
#![allow(clippy::disallowed_methods)]

use qtc_store::{Durability, Lifetimes, Store};

/// utime + stime of this process, in seconds (/proc/self/stat, clock ticks of 10 ms).
fn cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or_default();
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / 100.0
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = std::path::PathBuf::from(args.first().expect("usage: housekeep DIR [PASSES]"));
    let passes: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut store = Store::open(&dir, Durability::Full).expect("open the store");
    for pass in 1..=passes {
        let (t0, c0) = (std::time::Instant::now(), cpu());
        let done = store
            .housekeep(now, &Lifetimes::default())
            .expect("housekeeping");
        println!(
            "pass {pass}: {:.3} s wall, {:.2} s CPU: {done}",
            t0.elapsed().as_secs_f64(),
            cpu() - c0
        );
    }
}
