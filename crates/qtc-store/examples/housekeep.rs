//! Times housekeeping passes on a store: `housekeep DIR [PASSES]` runs PASSES whole passes
//! (default 3: the first expires, the second removes what it killed, the third finds nothing)
//! and prints each one's wall time, CPU time and what it did.
//!
//!     cargo run --release -p qtc-store --example housekeep -- DIR 3
#![allow(clippy::disallowed_methods)]

use qtc_store::{Durability, Lifetimes, Store};

/// CPU time of this thread in seconds (/proc/thread-self/schedstat: nanoseconds on a CPU).
fn cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
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
        let mut run = qtc_store::Housekeeping::new(now, &Lifetimes::default());
        let mut times = Vec::new();
        loop {
            let c = cpu();
            let more = run.step(&mut store).expect("housekeeping");
            times.push(format!("{:.1}", (cpu() - c) * 1e3));
            if !more {
                break;
            }
        }
        if std::env::var_os("HK_STEPS").is_some() {
            println!("step CPU ms: {}", times.join(" "));
        }
        let done = run.done();
        println!(
            "pass {pass}: {:.4} s wall, {:.4} s CPU: {done}",
            t0.elapsed().as_secs_f64(),
            cpu() - c0
        );
    }
}
