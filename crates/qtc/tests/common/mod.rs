//! A real qtc daemon on loopback, and a real TCP client, for end-to-end tests.
#![allow(dead_code, clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

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
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[station]\ncallsign = \"{call}\"\nhaddr = \"{call}.#NCA.CA.USA.NOAM\"\n\
             [store]\ndurability = \"normal\"\n[log]\nlevel = \"debug\"\n\
             [telnet]\nlisten = [\"127.0.0.1:0\"]\n{extra}"
        );
        std::fs::write(config_path(dir.path()), text).unwrap();
        for (call, pw, flags) in users {
            let mut args = vec!["user", "add", call, "--password", pw];
            args.extend(flags.split_whitespace());
            let out = cli(dir.path(), &args, "");
            assert!(out.status.success(), "{out:?}");
        }
        Self::start_in(dir)
    }

    /// Starts qtc on an existing directory holding qtc.toml.
    pub fn start_in(dir: tempfile::TempDir) -> Daemon {
        let mut child = qtc()
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

    /// The daemon's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("qtc.log")).unwrap_or_default()
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

    pub fn connect(&self) -> Client {
        Client::connect(self.port)
    }

    /// A client logged in as `call`, with the prompt read.
    pub fn login(&self, call: &str, pw: &str) -> Client {
        let mut c = self.connect();
        c.expect("Callsign: ");
        c.send(call);
        c.expect("Password: ");
        c.send(pw);
        c.expect("de N0CALL>");
        c
    }

    pub fn cli(&self, args: &[&str]) -> Output {
        cli(self.dir.path(), args, "")
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
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "qtc did not exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
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
        let deadline = Instant::now() + PATIENCE;
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
