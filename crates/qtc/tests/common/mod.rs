//! A real qtc daemon on loopback, and a real TCP client, for end-to-end tests.
#![allow(dead_code, clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub mod forging;
pub mod jnos;
pub mod jnos_mail;
pub mod netns;
pub mod programs;
pub mod tls;
pub mod watch;
pub mod web;
pub mod xvfb;

/// How long a test waits for something that should come at once before it fails (a hang guard,
/// not a timing assertion).
pub const PATIENCE: Duration = Duration::from_secs(20);

pub struct Daemon {
    pub dir: tempfile::TempDir,
    pub child: Child,
    /// The first telnet port.
    pub port: u16,
    /// The first raw forwarding port, if any.
    pub fwd_port: Option<u16>,
    pub stdout: Vec<String>,
}

pub fn qtc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qtc"))
}

pub fn config_path(dir: &Path) -> PathBuf {
    dir.join("qtc.toml")
}

/// Runs `qtc -c DIR/qtc.toml ARGS...` to completion, with `stdin` as standard input.
pub fn cli(dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = qtc()
        .arg("-c")
        .arg(config_path(dir))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Ends inside `[telnet]`, so `extra` text may add telnet keys first, then other tables.
pub const BASE_CONFIG: &str =
    "[station]\ncallsign = \"N0CALL\"\nhaddr = \"N0CALL.#NCA.CA.USA.NOAM\"\n\
[store]\ndurability = \"normal\"\n[log]\nlevel = \"info\"\n[telnet]\nlisten = [\"127.0.0.1:0\"]\n";

impl Daemon {
    /// Starts qtc with BASE_CONFIG plus `extra`, with users N0USR/pw, N0OTH/x, N0SYS/root (sysop).
    pub fn start(extra: &str) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(config_path(dir.path()), format!("{BASE_CONFIG}{extra}")).unwrap();
        for (call, pw, flag) in [
            ("N0USR", "pw", ""),
            ("N0OTH", "x", ""),
            ("N0SYS", "root", "--sysop"),
        ] {
            let mut args = vec!["user", "add", call, "--password", pw];
            if !flag.is_empty() {
                args.push(flag);
            }
            let out = cli(dir.path(), &args, "");
            assert!(out.status.success(), "{out:?}");
        }
        Self::start_in(dir)
    }

    /// Starts a BBS with its own callsign, users given as (call, password, flags), and `extra`
    /// config text (inside `[telnet]` first, as for [`BASE_CONFIG`]).
    pub fn start_bbs(call: &str, users: &[(&str, &str, &str)], extra: &str) -> Daemon {
        Self::start_bbs_at("127.0.0.1:0", &[], call, users, extra)
    }

    /// [`Daemon::start_bbs`] with its telnet port at `telnet` (`IP:PORT`), run under `wrapper`
    /// (`ip netns exec NS`; empty: none).
    pub fn start_bbs_at(
        telnet: &str,
        wrapper: &[&str],
        call: &str,
        users: &[(&str, &str, &str)],
        extra: &str,
    ) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[station]\ncallsign = \"{call}\"\nhaddr = \"{call}.#NCA.CA.USA.NOAM\"\n\
             [store]\ndurability = \"normal\"\n[log]\nlevel = \"debug\"\n\
             [telnet]\nlisten = [\"{telnet}\"]\n{extra}"
        );
        std::fs::write(config_path(dir.path()), text).unwrap();
        for (call, pw, flags) in users {
            let mut args = vec!["user", "add", call, "--password", pw];
            args.extend(flags.split_whitespace());
            let out = cli(dir.path(), &args, "");
            assert!(out.status.success(), "{out:?}");
        }
        if wrapper.is_empty() {
            Self::start_in(dir)
        } else {
            Self::start_wrapped(dir, wrapper)
        }
    }

    /// Starts qtc on an existing directory holding qtc.toml.
    pub fn start_in(dir: tempfile::TempDir) -> Daemon {
        Self::start_with(dir, qtc())
    }

    /// Starts qtc on an existing directory under a wrapper command (`prlimit ... --`).
    pub fn start_wrapped(dir: tempfile::TempDir, wrapper: &[&str]) -> Daemon {
        let mut cmd = Command::new(wrapper[0]);
        cmd.args(&wrapper[1..]).arg(env!("CARGO_BIN_EXE_qtc"));
        Self::start_with(dir, cmd)
    }

    fn start_with(dir: tempfile::TempDir, mut cmd: Command) -> Daemon {
        let mut child = cmd
            .arg("-c")
            .arg(config_path(dir.path()))
            .arg("run")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.path().join("qtc.log")).unwrap())
            .spawn()
            .unwrap();
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut stdout = Vec::new();
        let mut port = None;
        let mut fwd_port = None;
        // The start-up report ends with the data line.
        while !stdout
            .last()
            .is_some_and(|l: &String| l.starts_with("data: "))
        {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 {
                panic!("qtc exited before listening: {stdout:?}");
            }
            let port_of = |addr: &str| addr.rsplit(':').next().and_then(|p| p.parse().ok());
            if let Some(addr) = line.trim().strip_prefix("telnet: listening on ") {
                port = port.or(port_of(addr));
            }
            if let Some(addr) = line.trim().strip_prefix("forward: listening on ") {
                fwd_port = fwd_port.or(port_of(addr));
            }
            stdout.push(line.trim().to_string());
        }
        // Keep draining stdout so the daemon never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = reader.read_to_end(&mut sink);
        });
        Daemon {
            dir,
            child,
            port: port.unwrap(),
            fwd_port,
            stdout,
        }
    }

    /// The port of the listener the start-up report calls `name` (`imaps`, `telnet-tls`...).
    pub fn listener_port(&self, name: &str) -> u16 {
        let prefix = format!("{name}: listening on ");
        self.stdout
            .iter()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|a| a.rsplit(':').next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} listener in {:?}", self.stdout))
    }

    /// Where its log (standard error) goes, written as it logs.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("qtc.log")
    }

    /// The daemon's log so far: every line it wrote before this call. A line for something
    /// that happens after what the test saw (a session's end after its close) may not be there
    /// yet: wait for it ([`Daemon::wait_for_log`]).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// `qtc ctl ARGS`, returning standard output; panics with the log when it fails.
    pub fn ctl(&self, args: &[&str]) -> String {
        let mut all = vec!["ctl"];
        all.extend_from_slice(args);
        let out = self.cli(&all);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "ctl {args:?}: {text} {}\n--- log ---\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        text
    }

    /// Waits until the daemon's log says `what` (its word that something happened).
    pub fn wait_for_log(&self, what: &str) {
        self.wait_for_log_within(what, PATIENCE);
    }

    /// [`Daemon::wait_for_log`] for things that come later than at once (a hang guard of
    /// `within`).
    pub fn wait_for_log_within(&self, what: &str, within: Duration) {
        self.wait_for_log_times(what, 1, within);
    }

    /// Waits until the daemon's log has said `what` `n` times (or more).
    pub fn wait_for_log_count(&self, what: &str, n: usize) {
        self.wait_for_log_times(what, n, PATIENCE);
    }

    /// [`Daemon::wait_for_log_count`] for things that come later than at once (a hang guard
    /// of `within`).
    pub fn wait_for_log_count_within(&self, what: &str, n: usize, within: Duration) {
        self.wait_for_log_times(what, n, within);
    }

    /// Reads the log as it grows, woken by each write (no looking every few ms), until `what`
    /// has come `n` times; panics with the log after `within` (a hang guard).
    fn wait_for_log_times(&self, what: &str, n: usize, within: Duration) {
        assert!(!what.is_empty());
        let path = self.log_path();
        // Watching before the first look: a line written in between still wakes the wait.
        let watch = watch::FileWatch::new(&path);
        let deadline = Instant::now() + within;
        let mut log = std::fs::File::open(&path).unwrap();
        let mut seen = 0;
        // What the log gained since the last look, after the end of what came before it that
        // could hold the start of `what`.
        let mut new = Vec::new();
        loop {
            log.read_to_end(&mut new).unwrap();
            while let Some(at) = find(&new, what.as_bytes()) {
                seen += 1;
                new.drain(..at + what.len());
            }
            if seen >= n {
                return;
            }
            new.drain(..new.len().saturating_sub(what.len() - 1));
            assert!(
                watch.changed(deadline),
                "{what:?} {seen} times of {n} in the log:\n{}",
                self.log()
            );
        }
    }

    pub fn connect(&self) -> Client {
        Client::connect(self.port)
    }

    /// A client logged in as `call`, with the prompt read.
    pub fn login(&self, call: &str, pw: &str) -> Client {
        self.login_to("N0CALL", call, pw)
    }

    /// A client logged in as `call` on the BBS `bbs` (its callsign), with the prompt read.
    pub fn login_to(&self, bbs: &str, call: &str, pw: &str) -> Client {
        let mut c = self.connect();
        c.expect("Callsign:");
        c.send(call);
        c.expect("Password:");
        c.send(pw);
        c.expect(&format!("de {bbs}>"));
        c
    }

    pub fn cli(&self, args: &[&str]) -> Output {
        cli(self.dir.path(), args, "")
    }

    /// The web listener's port, from the start-up report.
    pub fn web_port(&self) -> u16 {
        self.stdout
            .iter()
            .find_map(|l| l.strip_prefix("web: listening on "))
            .and_then(|a| a.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .expect("a web listener in the start-up report")
    }

    /// One series of `GET /metrics` (`name{labels}` exactly as exposed): its value, or None
    /// when the scrape does not have it.
    pub fn metric(&self, series: &str) -> Option<u64> {
        let mut s = TcpStream::connect(("127.0.0.1", self.web_port())).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut body = String::new();
        s.read_to_string(&mut body).unwrap();
        body.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    /// `qtc msg list --json`, one line per message.
    pub fn messages(&self) -> Vec<String> {
        let out = self.cli(&["msg", "list", "--json"]);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(
            watch::exited(&self.child, PATIENCE),
            "qtc did not exit after SIGTERM\n{}",
            tail(&self.log(), 4000)
        );
        self.child.wait().unwrap()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Client {
    pub stream: TcpStream,
    pub seen: Vec<u8>,
}

impl Client {
    pub fn connect(port: u16) -> Client {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        Client {
            stream,
            seen: Vec::new(),
        }
    }

    pub fn send(&mut self, line: &str) {
        self.send_raw(format!("{line}\r\n").as_bytes());
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Reads until `what` appears; returns everything up to and including it.
    pub fn expect(&mut self, what: &str) -> String {
        self.expect_bytes(what.as_bytes())
    }

    pub fn expect_bytes(&mut self, what: &[u8]) -> String {
        self.expect_bytes_within(what, PATIENCE)
    }

    /// [`Client::expect`] for what comes later than at once (a hang guard of `within`).
    pub fn expect_within(&mut self, what: &str, within: Duration) -> String {
        self.expect_bytes_within(what.as_bytes(), within)
    }

    fn expect_bytes_within(&mut self, what: &[u8], within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(pos) = find(&self.seen, what) {
                let rest = self.seen.split_off(pos + what.len());
                let got = std::mem::replace(&mut self.seen, rest);
                return String::from_utf8_lossy(&got).into_owned();
            }
            assert!(
                Instant::now() < deadline,
                "never saw {:?}; got {:?}",
                String::from_utf8_lossy(what),
                String::from_utf8_lossy(&self.seen)
            );
            let mut buf = [0u8; 65536];
            match self.stream.read(&mut buf) {
                Ok(0) => panic!(
                    "connection closed before {:?}; got {:?}",
                    String::from_utf8_lossy(what),
                    String::from_utf8_lossy(&self.seen)
                ),
                Ok(n) => self.seen.extend_from_slice(&buf[..n]),
                Err(e) if is_timeout(&e) => {}
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    /// Reads until `a` or `b` appears; returns everything up to and including it.
    pub fn expect_either(&mut self, a: &str, b: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let at = [a, b]
                .iter()
                .filter_map(|w| find(&self.seen, w.as_bytes()).map(|p| p + w.len()))
                .min();
            if let Some(end) = at {
                let rest = self.seen.split_off(end);
                let got = std::mem::replace(&mut self.seen, rest);
                return String::from_utf8_lossy(&got).into_owned();
            }
            assert!(
                Instant::now() < deadline,
                "never saw {a:?} or {b:?}; got {:?}",
                String::from_utf8_lossy(&self.seen)
            );
            let mut buf = [0u8; 65536];
            match self.stream.read(&mut buf) {
                Ok(0) => panic!(
                    "connection closed before {a:?} or {b:?}; got {:?}",
                    String::from_utf8_lossy(&self.seen)
                ),
                Ok(n) => self.seen.extend_from_slice(&buf[..n]),
                Err(e) if is_timeout(&e) => {}
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    /// Reads until the server closes the connection; returns what came before.
    pub fn expect_close(&mut self) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            assert!(Instant::now() < deadline, "the server did not close");
            let mut buf = [0u8; 65536];
            match self.stream.read(&mut buf) {
                Ok(0) => return String::from_utf8_lossy(&std::mem::take(&mut self.seen)).into(),
                Ok(n) => self.seen.extend_from_slice(&buf[..n]),
                Err(e) if is_timeout(&e) => {}
                Err(_) => return String::from_utf8_lossy(&std::mem::take(&mut self.seen)).into(),
            }
        }
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

// ---------------------------------------------------------------------------------------------
// Helpers for the forwarding tests (tests/forward_*.rs): seeded message generation, import,
// guarded `qtc ctl forward`, and reading messages back through `qtc msg list/show`.

/// A hang guard for one whole forwarding session run by `qtc ctl forward` (not a timing
/// assertion: a healthy session ends long before).
pub const SESSION_PATIENCE: Duration = Duration::from_secs(300);

/// A small seeded generator (SplitMix64): the same seed gives the same test data.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    /// True with `pct` percent probability.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.next_u64() % 100 < pct
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.range(0, items.len() - 1)]
    }
}

/// A message to import, and what the other side must end up with.
#[derive(Clone, Debug)]
pub struct GenMsg {
    /// 'P' or 'B'.
    pub kind: char,
    pub to: String,
    pub at: String,
    pub from: String,
    pub bid: String,
    pub subject: String,
    /// Body lines without line ends (no CR, LF, NUL or Ctrl-Z in them).
    pub lines: Vec<Vec<u8>>,
}

impl GenMsg {
    /// The body as stored: every line ended by CR LF.
    pub fn body(&self) -> Vec<u8> {
        let mut b = Vec::new();
        for l in &self.lines {
            b.extend_from_slice(l);
            b.extend_from_slice(b"\r\n");
        }
        b
    }

    /// The `qtc msg import` block; line ends LF or CR LF as `rng` says.
    pub fn import_block(&self, rng: &mut Rng) -> Vec<u8> {
        let mut out = format!(
            "S{} {} @ {} < {} ${}\n{}\n",
            self.kind, self.to, self.at, self.from, self.bid, self.subject
        )
        .into_bytes();
        for l in &self.lines {
            out.extend_from_slice(l);
            out.extend_from_slice(if rng.chance(50) { b"\r\n" } else { b"\n" });
        }
        out.extend_from_slice(b"/EX\n");
        out
    }
}

/// CP437 box drawing, accented letters, shading, and the bytes that must survive telnet.
const CP437: &[u8] = &[
    0x80, 0x81, 0x82, 0x84, 0x8e, 0x94, 0x99, 0x9a, 0xa0, 0xa4, 0xb0, 0xb1, 0xb2, 0xb3, 0xba, 0xbf,
    0xc0, 0xc4, 0xc9, 0xcd, 0xd9, 0xda, 0xdb, 0xe1, 0xf8, 0xfa, 0xfd, 0xfe,
];
const UTF8: &[&str] = &[
    "\u{e9}",
    "\u{fc}",
    "\u{df}",
    "\u{2014}",
    "\u{20ac}",
    "\u{444}",
    "\u{3b1}",
    "\u{65e5}",
    "\u{1f4fb}",
];
const WORDS: &[&str] = &[
    "de", "qtc", "cq", "73", "rig", "antenna", "packet", "bbs", "net", "the", "and", "tnc", "kiss",
    "9600", "1200", "baud", "node", "digi", "weather", "report", "swr", "vhf", "hf",
];

/// One body line of up to about `max` bytes: words, CP437 bytes, UTF-8, 0xFF, tabs. Never starts
/// with `R:`, never is `/EX`, never holds CR, LF, NUL or Ctrl-Z.
pub fn gen_line(rng: &mut Rng, max: usize) -> Vec<u8> {
    let want = match rng.range(0, 9) {
        0 => 0,
        1..=6 => rng.range(1, 80.min(max)),
        _ => rng.range(1, max),
    };
    let mut l = Vec::with_capacity(want + 8);
    while l.len() < want {
        match rng.range(0, 19) {
            0..=11 => l.extend_from_slice(rng.pick(WORDS).as_bytes()),
            12 | 13 => l.push(*rng.pick(CP437)),
            14 => l.extend_from_slice(rng.pick(UTF8).as_bytes()),
            15 => l.push(0xff),
            16 => l.push(b'\t'),
            17 => l.extend_from_slice(format!("{}", rng.next_u64() % 100_000).as_bytes()),
            _ => l.push(*rng.pick(b"!\"#%&'()*+,-./:;<=>?@[\\]^_`{|}~")),
        }
        l.push(b' ');
    }
    if rng.chance(70) {
        // Most lines without a trailing space; some keep it (it must survive too).
        while l.last() == Some(&b' ') {
            l.pop();
        }
    }
    if l.starts_with(b"R:") || l.trim_ascii().eq_ignore_ascii_case(b"/EX") {
        l.insert(0, b'x');
    }
    l
}

/// Body lines adding up to about `size` bytes (0 gives an empty body).
pub fn gen_lines(rng: &mut Rng, size: usize, max_line: usize) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    let mut total = 0;
    while total < size {
        let l = gen_line(rng, max_line.min(size - total + 1).max(1));
        total += l.len() + 2;
        lines.push(l);
    }
    lines
}

/// A body size, mostly small, some up to 100 KB.
pub fn gen_size(rng: &mut Rng) -> usize {
    match rng.range(0, 99) {
        0..=2 => 0,
        3..=64 => rng.range(1, 2_000),
        65..=94 => rng.range(2_000, 12_000),
        _ => rng.range(12_000, 100_000),
    }
}

/// `n` messages from `home` (BIDs `<prefix><i>_<home>`): personal ones `@ other`, bulletins
/// `@ WW`; body sizes by [`gen_size`], one empty and one of 100 KB among them.
pub fn gen_messages(rng: &mut Rng, n: usize, prefix: &str, home: &str, other: &str) -> Vec<GenMsg> {
    const TO: &[&str] = &["N0XYZ", "W1AW", "K9ABC", "DL1ABC", "G4XYZ", "VK2RT"];
    const ALL: &[&str] = &["ALL", "QST", "KEPS", "WX", "SALE"];
    const FROM: &[&str] = &["N0ABC", "N0DEF", "KA1XYZ", "F6FBB", "W0RLI"];
    (0..n)
        .map(|i| {
            let personal = rng.chance(50);
            let size = match i {
                0 => 0,
                1 => 100 * 1024,
                _ => gen_size(rng),
            };
            let at = if !personal {
                "WW".to_string()
            } else if rng.chance(20) {
                format!("{other}.#NCA.CA.USA.NOAM")
            } else {
                other.to_string()
            };
            GenMsg {
                kind: if personal { 'P' } else { 'B' },
                to: if personal {
                    rng.pick(TO)
                } else {
                    rng.pick(ALL)
                }
                .to_string(),
                at,
                from: rng.pick(FROM).to_string(),
                bid: format!("{prefix}{i}_{home}"),
                subject: format!("{prefix}{i} {} bytes from {home}", size),
                lines: gen_lines(rng, size, 250),
            }
        })
        .collect()
}

/// Writes `msgs` into an import file in `dir` and returns its path.
pub fn write_import(dir: &Path, name: &str, msgs: &[GenMsg], rng: &mut Rng) -> PathBuf {
    let mut data = Vec::new();
    for m in msgs {
        data.extend_from_slice(&m.import_block(rng));
        if rng.chance(10) {
            data.extend_from_slice(b"\n");
        }
    }
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path
}

/// One line of `qtc msg list --json`.
#[derive(Clone, Debug)]
pub struct Listed {
    pub number: u64,
    pub kind: String,
    pub status: String,
    pub to: String,
    pub at: String,
    pub from: String,
    pub bid: String,
    pub subject: String,
    pub size: u64,
}

/// A message as `qtc msg show` prints it: the R: lines (with their line ends) and the body.
#[derive(Clone, Debug)]
pub struct Shown {
    pub rlines: Vec<Vec<u8>>,
    pub body: Vec<u8>,
}

impl Shown {
    /// Splits `msg show` output: headers, a blank line, R: lines, body.
    pub fn parse(out: &[u8]) -> Shown {
        let subj = find(out, b"\nSubject: ").expect("no Subject: header");
        let blank = subj + 1 + find(&out[subj + 1..], b"\n\n").expect("no blank line");
        let mut rest = &out[blank + 2..];
        let mut rlines = Vec::new();
        while rest.starts_with(b"R:") {
            let end = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |p| p + 1);
            rlines.push(rest[..end].to_vec());
            rest = &rest[end..];
        }
        Shown {
            rlines,
            body: rest.to_vec(),
        }
    }
}

impl Daemon {
    /// `qtc msg import FILE`; panics unless all `n` were stored.
    pub fn import(&self, file: &Path, n: usize) {
        let out = self.cli(&["msg", "import", file.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains(&format!("imported {n} of {n} messages")),
            "import: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `qtc ctl ARGS` under [`SESSION_PATIENCE`]: (succeeded, standard output). Never panics on
    /// an `error:` answer; panics with the log if the command hangs.
    pub fn try_ctl(&self, args: &[&str]) -> (bool, String) {
        let mut child = qtc()
            .arg("-c")
            .arg(config_path(self.dir.path()))
            .arg("ctl")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Its output ends when it exits: read on a thread, waited for with a hang guard.
        let mut stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = stdout.read_to_end(&mut s);
            let _ = tx.send(s);
        });
        let Ok(out) = rx.recv_timeout(SESSION_PATIENCE) else {
            let _ = child.kill();
            panic!("qtc ctl {args:?} hung\n--- log ---\n{}", self.log());
        };
        let status = child.wait().unwrap();
        (status.success(), String::from_utf8_lossy(&out).into_owned())
    }

    /// `qtc ctl forward CALL`, which must report `ok:`; returns its output.
    pub fn forward_ok(&self, call: &str, peer: &Daemon) -> String {
        let (ok, out) = self.try_ctl(&["forward", call]);
        assert!(
            ok && out.starts_with("ok:"),
            "ctl forward {call}: {out}\n--- caller log ---\n{}\n--- peer log ---\n{}",
            tail(&self.log(), 6000),
            tail(&peer.log(), 6000)
        );
        out
    }

    /// `qtc msg list --json`, parsed.
    pub fn listed(&self) -> Vec<Listed> {
        self.messages()
            .iter()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                Listed {
                    number: v["number"].as_u64().unwrap(),
                    kind: s("type"),
                    status: s("status"),
                    to: s("to"),
                    at: s("at"),
                    from: s("from"),
                    bid: s("bid"),
                    subject: s("subject"),
                    size: v["size"].as_u64().unwrap_or(0),
                }
            })
            .collect()
    }

    /// `qtc msg show N`, raw output.
    pub fn show_raw(&self, number: u64) -> Vec<u8> {
        let out = self.cli(&["msg", "show", &number.to_string()]);
        assert!(out.status.success(), "msg show {number}: {out:?}");
        out.stdout
    }

    /// A message's body as stored, its R: lines apart (the last `Size:` bytes `msg show`
    /// prints: a body's own line starting `R:` stays in it).
    pub fn stored_body(&self, number: u64) -> Vec<u8> {
        let out = self.show_raw(number);
        let text = String::from_utf8_lossy(&out);
        let size: usize = text
            .lines()
            .find_map(|l| l.strip_prefix("Size:"))
            .and_then(|s| s.trim().parse().ok())
            .expect("a Size: line");
        out[out.len() - size..].to_vec()
    }

    /// `qtc msg show` for each number, a few at once; results in the same order.
    pub fn show_many(&self, numbers: &[u64]) -> Vec<Shown> {
        let chunk = numbers.len().div_ceil(4).max(1);
        std::thread::scope(|s| {
            let handles: Vec<_> = numbers
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        part.iter()
                            .map(|&n| Shown::parse(&self.show_raw(n)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        })
    }

    /// `qtc fwd queue [CALL]` output.
    pub fn fwd_queue(&self, call: Option<&str>) -> String {
        let mut args = vec!["fwd", "queue"];
        args.extend(call);
        let out = self.cli(&args);
        assert!(out.status.success(), "fwd queue: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// The last `n` bytes of a log, for failure messages.
pub fn tail(s: &str, n: usize) -> &str {
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Checks that every message of `sent` is at `to` exactly once with the same type and body,
/// its first R: line naming `receiver` (and the second `origin`, when given); returns
/// how many were checked. `only` limits the body check to every n-th message (1: all).
pub fn check_arrived(
    to: &Daemon,
    sent: &[&GenMsg],
    receiver: &str,
    origin: Option<&str>,
    only: usize,
) -> usize {
    let listed = to.listed();
    let mut by_bid: std::collections::HashMap<&str, Vec<&Listed>> = Default::default();
    for l in &listed {
        by_bid.entry(l.bid.as_str()).or_default().push(l);
    }
    let mut numbers = Vec::new();
    let mut expected = Vec::new();
    for (i, m) in sent.iter().enumerate() {
        let found = by_bid.get(m.bid.as_str()).map_or(&[][..], |v| &v[..]);
        assert_eq!(found.len(), 1, "{} at {receiver}: {found:?}", m.bid);
        let l = found[0];
        assert_eq!(l.kind, m.kind.to_string(), "{}: {l:?}", m.bid);
        assert_eq!(l.to, m.to, "{}: {l:?}", m.bid);
        assert_eq!(l.from, m.from, "{}: {l:?}", m.bid);
        assert_eq!(l.subject, m.subject, "{}: {l:?}", m.bid);
        if i % only == 0 {
            numbers.push(l.number);
            expected.push(*m);
        }
    }
    let shown = to.show_many(&numbers);
    let rcv = format!(" @:{receiver}.");
    for (m, s) in expected.iter().zip(&shown) {
        let first = s
            .rlines
            .first()
            .map(|l| String::from_utf8_lossy(l).into_owned());
        assert!(
            first
                .as_deref()
                .is_some_and(|l| l.contains(&rcv) && l.ends_with("\r\n")),
            "{}: first R: line should name {receiver}: {:?}",
            m.bid,
            s.rlines
        );
        if let Some(o) = origin {
            let o = format!(" @:{o}.");
            assert!(
                s.rlines
                    .get(1)
                    .is_some_and(|l| String::from_utf8_lossy(l).contains(&o)),
                "{}: second R: line should name {o}: {:?}",
                m.bid,
                s.rlines
            );
        }
        let want = m.body();
        if s.body != want {
            let at = s
                .body
                .iter()
                .zip(&want)
                .position(|(a, b)| a != b)
                .unwrap_or(s.body.len().min(want.len()));
            let from = at.saturating_sub(40);
            panic!(
                "{}: body differs at {receiver} (got {} bytes, want {}); first difference at \
                 byte {at}: got {:?} want {:?}",
                m.bid,
                s.body.len(),
                want.len(),
                String::from_utf8_lossy(&s.body[from..(at + 40).min(s.body.len())]),
                String::from_utf8_lossy(&want[from..(at + 40).min(want.len())]),
            );
        }
    }
    numbers.len()
}

impl Daemon {
    /// Kills the daemon with SIGKILL (no chance to clean up) and starts it again on the same
    /// data directory and configuration.
    pub fn sigkill_restart(mut self) -> Daemon {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        drop(self);
        Daemon::start_in(dir)
    }
}

/// A loopback port that was free a moment ago, for a daemon that must come back on the same
/// port after a restart.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
