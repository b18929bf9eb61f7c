//! `strace -f -c -p PID` around a stretch of work: the system call count of every thread.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::util::{signal, sleep, wait_for, Ctx, R};

/// strace attached to a process.
pub struct Strace {
    child: Option<Child>,
    out: PathBuf,
}

/// What strace counted.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// All calls.
    pub total: u64,
    /// Calls per syscall name, most first.
    pub by_name: Vec<(String, u64)>,
}

impl Counts {
    /// The `n` most frequent calls as `name N, name N`.
    pub fn top(&self, n: usize) -> String {
        if self.by_name.is_empty() {
            return "none".into();
        }
        self.by_name
            .iter()
            .take(n)
            .map(|(s, c)| format!("{s} {c}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// True when strace is installed and may attach (ptrace allowed).
pub fn available() -> bool {
    Command::new("strace")
        .args(["-c", "-qq", "-o", "/dev/null", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn traced(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    let mut any = false;
    for t in tasks.flatten() {
        any = true;
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let tracer = status
            .lines()
            .find_map(|l| l.strip_prefix("TracerPid:"))
            .map(str::trim)
            .unwrap_or("0");
        if tracer == "0" {
            return false;
        }
    }
    any
}

impl Strace {
    /// Attaches to every thread of `pid`; returns once all of them are traced.
    pub fn attach(pid: u32, out: &Path) -> R<Strace> {
        let child = Command::new("strace")
            .args(["-f", "-c", "-qq", "-o"])
            .arg(out)
            .arg("-p")
            .arg(pid.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ctx("cannot start strace")?;
        let s = Strace {
            child: Some(child),
            out: out.to_path_buf(),
        };
        wait_for(Duration::from_secs(10), Duration::from_millis(20), || {
            traced(pid).then_some(())
        })
        .ctx("strace did not attach to every thread within 10 s")?;
        Ok(s)
    }

    /// Detaches and returns the counts.
    pub fn stop(mut self) -> R<Counts> {
        let mut child = self.child.take().ctx("strace stopped twice")?;
        signal(child.id(), "INT")?;
        let st = child.wait().ctx("strace")?;
        // strace exits non-zero when the traced process has gone; the summary is still written.
        let _ = st;
        // A moment for the file to be complete on slow disks.
        sleep(Duration::from_millis(10));
        let text = std::fs::read_to_string(&self.out).ctx("strace output")?;
        Ok(parse(&text))
    }
}

impl Drop for Strace {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = signal(c.id(), "INT");
            let _ = c.wait();
        }
    }
}

/// Reads an `strace -c` summary table.
pub fn parse(text: &str) -> Counts {
    let mut c = Counts::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // % time, seconds, usecs/call, calls, [errors,] name
        if f.len() < 5 || f[0].parse::<f64>().is_err() {
            continue;
        }
        let Ok(calls) = f[3].parse::<u64>() else {
            continue;
        };
        let name = f[f.len() - 1];
        if name == "total" {
            c.total = calls;
        } else {
            c.by_name.push((name.to_string(), calls));
        }
    }
    if c.total == 0 {
        c.total = c.by_name.iter().map(|(_, n)| n).sum();
    }
    c.by_name.sort_by_key(|e| std::cmp::Reverse(e.1));
    c
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_summary() {
        let t = "% time     seconds  usecs/call     calls    errors syscall\n\
------ ----------- ----------- --------- --------- ----------------\n\
 60.00    0.000600          30        20           write\n\
 40.00    0.000400          10        40         3 read\n\
------ ----------- ----------- --------- --------- ----------------\n\
100.00    0.001000          16        60         3 total\n";
        let c = super::parse(t);
        assert_eq!(c.total, 60);
        assert_eq!(c.by_name[0], ("read".to_string(), 40));
        assert_eq!(c.top(1), "read 40");
        assert_eq!(super::parse("").total, 0);
    }
}
