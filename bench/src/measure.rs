//! A measurement window over a running daemon: CPU ticks and every system call.

use std::path::Path;
use std::time::Duration;

use crate::strace::{Counts, Strace};
use crate::util::{clk_tck, cpu_ticks, now, sleep, status_kb, Ctx, R};

/// What a daemon did during a window.
#[derive(Clone, Debug)]
pub struct Window {
    /// Length in seconds.
    pub secs: f64,
    /// CPU ticks (utime + stime) used.
    pub ticks: u64,
    /// Clock ticks per second.
    pub tck: f64,
    /// System calls.
    pub calls: Counts,
}

impl Window {
    /// CPU use in percent of one core.
    pub fn cpu_pct(&self) -> f64 {
        self.ticks as f64 / self.tck / self.secs * 100.0
    }

    /// System calls per second.
    pub fn calls_per_s(&self) -> f64 {
        self.calls.total as f64 / self.secs
    }

    /// `0.00 % CPU (0 ticks), 0.0 syscalls/s (0 in 10 s)`.
    pub fn summary(&self) -> String {
        format!(
            "{:.2} % CPU ({} ticks), {:.1} syscalls/s ({} in {:.0} s)",
            self.cpu_pct(),
            self.ticks,
            self.calls_per_s(),
            self.calls.total,
            self.secs
        )
    }
}

/// Attaches strace to `pid`, then counts CPU ticks and calls for `dur`.
pub fn window(pid: u32, dur: Duration, scratch: &Path) -> R<Window> {
    let st = Strace::attach(pid, &scratch.join("strace.window"))?;
    let t0 = now();
    let c0 = cpu_ticks(pid)?;
    sleep(dur);
    let c1 = cpu_ticks(pid)?;
    let secs = t0.elapsed().as_secs_f64();
    let calls = st.stop()?;
    Ok(Window {
        secs,
        ticks: c1.saturating_sub(c0),
        tck: clk_tck(),
        calls,
    })
}

/// Peak resident set (VmHWM) in MB.
pub fn hwm_mb(pid: u32) -> R<f64> {
    Ok(status_kb(pid, "VmHWM")? as f64 / 1024.0)
}

/// Current resident set (VmRSS) in MB.
pub fn rss_mb(pid: u32) -> R<f64> {
    Ok(status_kb(pid, "VmRSS")? as f64 / 1024.0)
}

/// Open file descriptors of `pid`.
pub fn fds(pid: u32) -> R<usize> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ctx("/proc fd")?
        .count())
}

/// Bulletins in `qtc msg import` form: `n` messages of about `body` bytes, BIDs from `bid(i)`.
pub fn bulletins(n: usize, body: usize, seed: u64, bid: impl Fn(usize) -> String) -> Vec<u8> {
    let mut text = crate::util::Text::new(seed);
    let mut out = Vec::with_capacity(n * (body + 80));
    for i in 0..n {
        out.extend_from_slice(
            format!("SB ALL @ WW < N0ABC ${}\nBench bulletin {i}\n", bid(i)).as_bytes(),
        );
        text.body(body, b"\n", &mut out);
        out.extend_from_slice(b"/EX\n");
    }
    out
}

/// Total size of the files in `dir`, in MB.
pub fn dir_mb(dir: &Path) -> f64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum::<u64>()
        })
        .unwrap_or(0) as f64
        / 1e6
}
