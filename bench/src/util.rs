//! Small helpers: errors as text, scratch directories, the clock, /proc readings, test data.

use std::fmt::Display;
use std::io::BufReader;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A benchmark step's result; the error says what broke.
pub type R<T> = Result<T, String>;

/// A connection to 127.0.0.1:`port` for a line protocol (IMAP, NNTP), Nagle off: its
/// buffered reading half and its writing half.
pub fn line_conn(port: u16, what: &str) -> R<(BufReader<TcpStream>, TcpStream)> {
    let w = TcpStream::connect(("127.0.0.1", port)).ctx(format!("connect to {what}"))?;
    w.set_nodelay(true).ctx("nodelay")?;
    Ok((BufReader::new(w.try_clone().ctx("clone")?), w))
}

/// Adds context to an error.
pub trait Ctx<T> {
    /// Prefixes the error with `what`.
    fn ctx(self, what: impl Display) -> R<T>;
}

impl<T, E: Display> Ctx<T> for Result<T, E> {
    fn ctx(self, what: impl Display) -> R<T> {
        self.map_err(|e| format!("{what}: {e}"))
    }
}

impl<T> Ctx<T> for Option<T> {
    fn ctx(self, what: impl Display) -> R<T> {
        self.ok_or_else(|| what.to_string())
    }
}

/// Monotonic now.
pub fn now() -> Instant {
    Instant::now()
}

/// The middle value (the upper one of an even count) of timings or rates.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Waits. The driver measures a daemon from outside, so it sleeps between readings.
pub fn sleep(d: Duration) {
    std::thread::sleep(d);
}

/// Polls `f` every `every` until it returns `Some` or `limit` passes.
pub fn wait_for<T>(
    limit: Duration,
    every: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> Option<T> {
    let end = now() + limit;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if now() >= end {
            return None;
        }
        sleep(every);
    }
}

/// A UDP port on 127.0.0.1 that was free a moment ago.
pub fn free_udp_port() -> R<u16> {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").ctx("UDP socket")?;
    Ok(s.local_addr().ctx("UDP port")?.port())
}

/// A scratch directory, removed when dropped.
pub struct TempDir(PathBuf);

static SEQ: AtomicUsize = AtomicUsize::new(0);

impl TempDir {
    /// A fresh directory under the system temp dir.
    pub fn new(tag: &str) -> R<TempDir> {
        TempDir::new_in(&std::env::temp_dir(), tag)
    }

    /// A fresh directory under `parent`.
    pub fn new_in(parent: &Path, tag: &str) -> R<TempDir> {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let p = parent.join(format!("qtc-bench-{}-{n}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).ctx(format!("cannot create {}", p.display()))?;
        Ok(TempDir(p))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("QTC_BENCH_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Clock ticks per second for /proc/PID/stat times.
pub fn clk_tck() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// utime + stime of a process (all its threads), in clock ticks.
pub fn cpu_ticks(pid: u32) -> R<u64> {
    let stat =
        std::fs::read_to_string(format!("/proc/{pid}/stat")).ctx(format!("/proc/{pid}/stat"))?;
    // The command name is in parentheses and may hold spaces: count fields after the last ')'.
    let rest = &stat[stat.rfind(')').ctx("bad /proc stat")? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of stat(5); `rest` starts at field 3.
    let ut: u64 = f.get(11).and_then(|v| v.parse().ok()).ctx("no utime")?;
    let st: u64 = f.get(12).and_then(|v| v.parse().ok()).ctx("no stime")?;
    Ok(ut + st)
}

/// CPU ticks of `pid` plus those of its children it has waited for (cutime + cstime): a daemon
/// that hands work to helper processes (qtc's password checks) is charged for them too.
pub fn cpu_ticks_with_children(pid: u32) -> R<u64> {
    let stat =
        std::fs::read_to_string(format!("/proc/{pid}/stat")).ctx(format!("/proc/{pid}/stat"))?;
    let rest = &stat[stat.rfind(')').ctx("bad /proc stat")? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 to 17 of stat(5): utime, stime, cutime, cstime.
    (11..15)
        .map(|i| {
            f.get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .ctx("short stat")
        })
        .sum()
}

/// A `kB` line of /proc/PID/status (VmHWM, VmRSS, ...), in kB.
pub fn status_kb(pid: u32, key: &str) -> R<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ctx(format!("/proc/{pid}/status"))?;
    s.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ctx(format!("no {key} in /proc/{pid}/status"))
}

/// Sends a signal by name with kill(1).
pub fn signal(pid: u32, sig: &str) -> R<()> {
    let st = std::process::Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status()
        .ctx("kill")?;
    if !st.success() {
        return Err(format!("kill -{sig} {pid} failed"));
    }
    Ok(())
}

/// A deterministic text generator (xorshift over a small word list), for message bodies.
pub struct Text(u64);

const WORDS: &[&str] = &[
    "the",
    "band",
    "was",
    "open",
    "to",
    "europe",
    "on",
    "twenty",
    "meters",
    "packet",
    "radio",
    "node",
    "digipeater",
    "bulletin",
    "forward",
    "net",
    "tonight",
    "at",
    "local",
    "time",
    "antenna",
    "tower",
    "work",
    "weekend",
    "club",
    "meeting",
    "repeater",
    "frequency",
    "check",
    "in",
    "please",
    "send",
    "reports",
    "of",
    "propagation",
    "contest",
    "rules",
    "and",
    "log",
];

impl Text {
    /// A generator with its own sequence.
    pub fn new(seed: u64) -> Text {
        Text(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Lines of about 60 characters, each ended by `eol`, until `bytes` are reached.
    pub fn body(&mut self, bytes: usize, eol: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        while out.len() - start < bytes {
            let mut line = 0;
            while line < 60 {
                let w = WORDS[(self.next() % WORDS.len() as u64) as usize];
                if line > 0 {
                    out.push(b' ');
                    line += 1;
                }
                out.extend_from_slice(w.as_bytes());
                line += w.len();
            }
            out.extend_from_slice(eol);
        }
    }
}

/// `12345` as `12,345`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let groups: Vec<&str> = s
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|g| std::str::from_utf8(g).unwrap_or(""))
        .collect();
    groups.join(",")
}

/// Finds `needle` in `hay` from `from`.
pub fn find_from(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    let last = hay.len() - needle.len();
    let mut i = from;
    while i <= last {
        match hay[i..=last].iter().position(|&b| b == needle[0]) {
            None => return None,
            Some(p) => {
                let at = i + p;
                if &hay[at..at + needle.len()] == needle {
                    return Some(at);
                }
                i = at + 1;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds() {
        assert_eq!(find_from(b"abcabd", b"abd", 0), Some(3));
        assert_eq!(find_from(b"abcabd", b"abc", 1), None);
        assert_eq!(find_from(b"ab", b"abc", 0), None);
    }

    #[test]
    fn formats_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn text_reaches_size() {
        let mut v = Vec::new();
        Text::new(1).body(2048, b"\r\n", &mut v);
        assert!(v.len() >= 2048 && v.len() < 2200);
        assert!(v.ends_with(b"\r\n"));
    }
}
