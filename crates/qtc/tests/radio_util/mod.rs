//! Helpers for the radio tests: a `qtc call` terminal driven from the test, seeding messages,
//! free loopback ports.
#![allow(dead_code, clippy::disallowed_methods)]

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use crate::common::{self, Daemon, PATIENCE};

/// A UDP port on 127.0.0.1 that was free a moment ago.
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `qtc call`, its output collected by a thread.
pub struct Call {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Vec<u8>>,
    pub seen: Vec<u8>,
}

impl Call {
    pub fn start(port: &str, mycall: &str, remote: &str) -> Call {
        Call::start_logging(port, mycall, remote, "warn")
    }

    /// As [`Call::start`], its standard error logging at `filter` (RUST_LOG syntax).
    pub fn start_logging(port: &str, mycall: &str, remote: &str, filter: &str) -> Call {
        let mut child = common::qtc()
            .args(["call", "--port", port, "--mycall", mycall, remote])
            .env("RUST_LOG", filter)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Call {
            child,
            stdin,
            rx,
            seen: Vec::new(),
        }
    }

    /// Reads until `what` appears; returns everything up to it.
    pub fn expect(&mut self, what: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(pos) = common::find(&self.seen, what.as_bytes()) {
                let rest = self.seen.split_off(pos + what.len());
                let got = std::mem::replace(&mut self.seen, rest);
                return String::from_utf8_lossy(&got).into_owned();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(b) => self.seen.extend_from_slice(&b),
                Err(_) => {
                    let _ = self.child.kill();
                    let mut err = String::new();
                    if let Some(mut e) = self.child.stderr.take() {
                        let _ = e.read_to_string(&mut err);
                    }
                    panic!(
                        "qtc call never printed {what:?}; got {:?}; stderr: {err}",
                        String::from_utf8_lossy(&self.seen)
                    );
                }
            }
        }
    }

    pub fn send(&mut self, line: &str) {
        let s = self.stdin.as_mut().unwrap();
        s.write_all(format!("{line}\n").as_bytes()).unwrap();
        s.flush().unwrap();
    }

    /// As [`Call::finish`], with what it wrote to standard error.
    pub fn finish_with_log(mut self) -> (std::process::ExitStatus, String) {
        let err = self.child.stderr.take();
        let status = self.finish();
        let mut log = String::new();
        if let Some(mut e) = err {
            e.read_to_string(&mut log).unwrap();
        }
        (status, log)
    }

    /// Closes standard input and waits for the exit (the link must come down).
    pub fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        // Its output ends when it exits.
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(b) => self.seen.extend_from_slice(&b),
                Err(mpsc::RecvTimeoutError::Disconnected) => return self.child.wait().unwrap(),
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("qtc call did not exit"),
            }
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Imports `n` bulletins @ WW into `d` with `qtc msg import`.
pub fn seed(d: &Daemon, n: usize, tag: &str) {
    seed_with(
        d,
        n,
        tag,
        "A second line of text so the message has a body.\n",
    );
}

/// Imports `n` bulletins @ WW of about `bytes` bytes each: lines of packet-radio words.
pub fn seed_sized(d: &Daemon, n: usize, tag: &str, bytes: usize) {
    const WORDS: &[&str] = &[
        "the", "band", "was", "open", "to", "europe", "on", "twenty", "meters", "packet", "radio",
        "node", "bulletin", "forward", "net", "tonight", "antenna", "club", "check",
    ];
    let mut body = String::new();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while body.len() < bytes {
        let mut line = String::new();
        while line.len() < 60 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            line.push_str(WORDS[(x % WORDS.len() as u64) as usize]);
            line.push(' ');
        }
        body.push_str(line.trim_end());
        body.push('\n');
    }
    seed_with(d, n, tag, &body);
}

fn seed_with(d: &Daemon, n: usize, tag: &str, body: &str) {
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "SB ALL @ WW\n{tag} bulletin {i}\nThis is bulletin number {i} from {tag}.\n{body}/EX\n"
        ));
    }
    let path = d.dir.path().join("import.txt");
    std::fs::write(&path, text).unwrap();
    let out = d.cli(&["msg", "import", path.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
}

/// Subjects of the messages in `d`'s store.
pub fn subjects(d: &Daemon) -> Vec<String> {
    d.messages()
        .iter()
        .map(|m| {
            let v: serde_json::Value = serde_json::from_str(m).unwrap();
            v["subject"].as_str().unwrap_or("").to_string()
        })
        .collect()
}

/// Every subject once, and `n` of them tagged `tag`.
pub fn assert_exactly_once(d: &Daemon, tag: &str, n: usize) {
    let subjects = subjects(d);
    let mut mine: Vec<&String> = subjects
        .iter()
        .filter(|s| s.starts_with(&format!("{tag} bulletin ")))
        .collect();
    let total = mine.len();
    mine.sort();
    mine.dedup();
    assert_eq!(total, mine.len(), "duplicates: {subjects:?}");
    assert_eq!(
        total,
        n,
        "expected {n} from {tag}, got {total}\n{}",
        d.log()
    );
}
