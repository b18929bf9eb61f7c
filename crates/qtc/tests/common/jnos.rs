//! JNOS 2.0o.2 as a test peer: built from the copy in `tests/peers/jnos/` (its README lists
//! every quirk), cached under `target/jnos`, and run in a network namespace of its own, named
//! with the test process's id and cleaned up on drop (also when a test fails). Inside the
//! namespace JNOS is 127.0.0.3 and the Linux side 127.0.0.2: a qtc under test runs there
//! (`Daemon::start_bbs_at("127.0.0.2", &jnos.wrapper(), ...)`), and the test's own sockets are
//! opened there by [`Jnos::in_ns`].
//!
//! Without root, a tun device, `ip` or `socat` JNOS cannot run: its tests are skipped, unless
//! `QTC_REQUIRE_PEERS=1` (CI), where that fails them. A failed build fails them always.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use super::{Client, PATIENCE};

/// The JNOS files, copied from the project's shelf (`/work/shared/peers/jnos`); stop.sh here
/// also removes the killed JNOS's lock on its KISS pty (README.md's quirks).
pub const PEER_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/jnos");

/// JNOS inside its namespace, and the Linux side of it.
pub const JNOS_IP: &str = "127.0.0.3";
/// JNOS's user telnet BBS (run.sh's default `--telnet`).
pub const JNOS_TELNET: u16 = 2323;
/// The address a qtc under test listens on (and JNOS's `connect` lines call).
pub const HOST_IP: &str = "127.0.0.2";

/// The JNOS binary, built once (`build.sh`, which reuses an earlier build of the same
/// tarball under `target/jnos`). `None`: JNOS cannot run on this machine and the caller skips.
pub fn binary() -> Option<PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(why) = missing() {
            assert!(
                std::env::var("QTC_REQUIRE_PEERS").as_deref() != Ok("1"),
                "JNOS cannot run here ({why}) and QTC_REQUIRE_PEERS=1"
            );
            eprintln!("skipped: JNOS cannot run here: {why}");
            return None;
        }
        clean_stale_namespaces();
        Some(build())
    })
    .clone()
}

/// Why JNOS cannot run here, if it cannot.
fn missing() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root (network namespaces)".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    for tool in ["ip", "socat", "flock"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!("no `{tool}`"));
        }
    }
    None
}

/// `target/` of this build (the qtc binary is `target/<profile>/qtc`).
fn target_dir() -> PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_qtc"));
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// Builds JNOS under `target/jnos` (a lock keeps two test processes from building at once).
fn build() -> PathBuf {
    let target = target_dir();
    let out = Command::new("flock")
        .arg(target.join("jnos.lock"))
        .arg(Path::new(PEER_DIR).join("build.sh"))
        .arg(target.join("jnos"))
        .output()
        .expect("run build.sh");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "JNOS did not build:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(
        text.lines()
            .last()
            .expect("build.sh names the binary")
            .trim(),
    )
}

/// Namespaces left by test processes that died without cleaning up: their processes are
/// killed (by pid, as `ip netns pids` lists them) and the namespace deleted.
fn clean_stale_namespaces() {
    let list = run(Command::new("ip").args(["netns", "list"]));
    for line in String::from_utf8_lossy(&list.stdout).lines() {
        let Some(ns) = line.split_whitespace().next() else {
            continue;
        };
        // Only this harness's names, `qtc-jnos-<pid>-<n>`: anyone else's are left alone.
        let Some(pid) = ns
            .strip_prefix("qtc-jnos-")
            .and_then(|r| r.split_once('-'))
            .filter(|(pid, n)| {
                !pid.is_empty()
                    && pid.bytes().all(|b| b.is_ascii_digit())
                    && !n.is_empty()
                    && n.bytes().all(|b| b.is_ascii_digit())
            })
            .map(|(pid, _)| pid)
        else {
            continue;
        };
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        let pids = run(Command::new("ip").args(["netns", "pids", ns]));
        for p in String::from_utf8_lossy(&pids.stdout).split_whitespace() {
            let _ = Command::new("kill").args(["-9", p]).status();
        }
        let _ = Command::new("ip").args(["netns", "del", ns]).status();
    }
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run a command")
}

/// How to start one JNOS: `run.sh`'s options (tests/peers/jnos/README.md), its login script
/// and its extra console commands.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    args: Vec<String>,
    script: Vec<String>,
    extra: Vec<String>,
}

impl Setup {
    /// A `run.sh` option and its value (`--fbb`, `1`).
    pub fn opt(mut self, name: &str, value: &str) -> Setup {
        self.args.push(name.to_string());
        self.args.push(value.to_string());
        self
    }

    /// A mailbox user.
    pub fn user(self, call: &str, pw: &str) -> Setup {
        self.opt("--user", &format!("{call}:{pw}"))
    }

    /// The forwarding partner (a user that may forward to JNOS, and its area).
    pub fn partner(self, call: &str, pw: &str) -> Setup {
        self.opt("--partner", &format!("{call}:{pw}"))
    }

    /// The `forward.bbs` connect line to the partner and its login script (JNOS syntax).
    pub fn connect(mut self, line: &str, script: &[&str]) -> Setup {
        self.script = script.iter().map(|s| s.to_string()).collect();
        self.opt("--connect", line)
    }

    /// The KISS port `ax0` on a pty pair (the other end: [`Jnos::kiss_pty`]).
    pub fn kiss(mut self) -> Setup {
        self.args.push("--kiss".into());
        self
    }

    /// A console command run at start (autoexec.nos, before the `start` lines).
    pub fn extra(mut self, command: &str) -> Setup {
        self.extra.push(command.to_string());
        self
    }
}

/// One running JNOS, stopped (SIGKILL, as it must be) and its namespace deleted on drop.
pub struct Jnos {
    /// Its network namespace.
    pub ns: String,
    /// Its data directory (config, spool, logs, console.log).
    pub dir: tempfile::TempDir,
    bin: PathBuf,
    setup: Setup,
}

/// Namespaces made by this process so far.
static STARTED: AtomicUsize = AtomicUsize::new(0);

impl Jnos {
    /// Starts JNOS (from [`binary`]) with `setup`, in a namespace of its own.
    pub fn start(bin: &Path, setup: Setup) -> Jnos {
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let j = Jnos {
            ns: format!("qtc-jnos-{}-{n}", std::process::id()),
            // No `.` in the path: JNOS names a mail area's lock file by cutting the path at its
            // first dot, and with one in a directory name every area reads "Mail file is busy".
            dir: tempfile::Builder::new()
                .prefix("qtc-jnos-")
                .tempdir()
                .unwrap(),
            bin: bin.to_path_buf(),
            setup,
        };
        j.run_sh();
        j
    }

    /// `run.sh` with the setup (again after [`Jnos::kill`]: the mail under spool/ is kept).
    fn run_sh(&self) {
        let data = self.data();
        assert!(
            !data.to_string_lossy().contains('.'),
            "JNOS's data directory {data:?} must not contain a '.' (set TMPDIR)"
        );
        let mut cmd = Command::new(Path::new(PEER_DIR).join("run.sh"));
        cmd.arg("--jnos").arg(&self.bin).arg("--dir").arg(&data);
        cmd.args(["--ns", &self.ns]).args(&self.setup.args);
        if !self.setup.script.is_empty() {
            let path = self.dir.path().join("login.bbs");
            std::fs::write(&path, self.setup.script.join("\n") + "\n").unwrap();
            cmd.arg("--script").arg(path);
        }
        if !self.setup.extra.is_empty() {
            let path = self.dir.path().join("extra.nos");
            std::fs::write(&path, self.setup.extra.join("\n") + "\n").unwrap();
            cmd.arg("--extra").arg(path);
        }
        // Its output to a file: with --kiss it leaves socat running with its standard output,
        // so a pipe would never end.
        let report = self.dir.path().join("run.out");
        let file = std::fs::File::create(&report).unwrap();
        let status = cmd
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .status()
            .expect("run.sh");
        assert!(
            status.success(),
            "run.sh failed: {}\n--- console.log ---\n{}",
            std::fs::read_to_string(&report).unwrap_or_default(),
            self.console_log()
        );
    }

    /// JNOS's root directory.
    pub fn data(&self) -> PathBuf {
        self.dir.path().join("jnos")
    }

    /// What JNOS wrote to its console and its log files (`logs/`: logins, proposals,
    /// answers, the mail filed), for a failure message.
    pub fn console_log(&self) -> String {
        let mut text = std::fs::read(self.data().join("console.log")).unwrap_or_default();
        let mut logs: Vec<PathBuf> = std::fs::read_dir(self.data().join("logs"))
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        logs.sort();
        for p in logs {
            text.extend(std::fs::read(p).unwrap_or_default());
        }
        String::from_utf8_lossy(&text).into_owned()
    }

    /// The command prefix that runs a program in JNOS's namespace.
    pub fn wrapper(&self) -> [&str; 4] {
        ["ip", "netns", "exec", &self.ns]
    }

    /// Runs `f` on a thread inside JNOS's namespace: sockets it opens belong there (and can be
    /// used from any thread afterwards).
    pub fn in_ns<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        in_ns(&self.ns, f)
    }

    /// A relay in the namespace, listening on 127.0.0.2:`port`, to `to` (`IP:PORT` there)
    /// for the next `connections` calls; the first is cut (both ways closed, as a link that
    /// drops) once `cut_after` bytes have gone toward `to`.
    pub fn relay(&self, port: u16, to: (&str, u16), connections: usize, cut_after: usize) {
        let listener = self.in_ns(|| TcpListener::bind((HOST_IP, port)).expect("relay port"));
        let (ns, ip, to_port) = (self.ns.clone(), to.0.to_string(), to.1);
        std::thread::spawn(move || {
            for n in 0..connections {
                let Ok((caller, _)) = listener.accept() else {
                    return;
                };
                let callee = in_ns(&ns, || TcpStream::connect((ip.as_str(), to_port)))
                    .expect("the relay's call");
                pipe(&caller, &callee, (n == 0).then_some(cut_after));
                pipe(&callee, &caller, None);
            }
        });
    }

    /// A TCP connection to JNOS's `port`, as a line client.
    pub fn connect(&self, port: u16) -> Client {
        let stream = self.in_ns(|| TcpStream::connect((JNOS_IP, port)).expect("connect to JNOS"));
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        Client {
            stream,
            seen: Vec::new(),
        }
    }

    /// A listener on the Linux side of the namespace (127.0.0.2, port 0), for JNOS to call.
    pub fn listen(&self) -> TcpListener {
        self.in_ns(|| TcpListener::bind((HOST_IP, 0)).expect("listen in the namespace"))
    }

    /// Console commands, run as the sysop through the telnet BBS (`jnos-cmd.sh`): a headless
    /// JNOS reads no console. Returns the session's text.
    pub fn console(&self, commands: &[&str]) -> String {
        let out = run(Command::new(Path::new(PEER_DIR).join("jnos-cmd.sh"))
            .arg(self.data())
            .args(commands));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "jnos-cmd.sh {commands:?}: {text}\n--- console.log ---\n{}",
            super::tail(&self.console_log(), 4000)
        );
        text
    }

    /// The other end of its KISS pty (`Setup::kiss`).
    pub fn kiss_pty(&self) -> PathBuf {
        self.data().join("kiss.pty")
    }

    /// SIGKILLs JNOS, keeping its namespace and data (a cut nobody closes).
    pub fn kill(&self) {
        let status = Command::new(Path::new(PEER_DIR).join("stop.sh"))
            .arg(self.data())
            .arg("--keep-ns")
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Starts JNOS again after [`Jnos::kill`], on the same data.
    pub fn restart(&self) {
        self.run_sh();
    }

    /// The messages of one mail area (`spool/mail/AREA.txt`), as stored.
    pub fn area(&self, name: &str) -> Vec<Stored> {
        let path = self.data().join(format!("spool/mail/{name}.txt"));
        Stored::parse_mbox(&std::fs::read(path).unwrap_or_default())
    }

    /// Waits until `check` holds on JNOS's area `name`. Mail reaches an area through JNOS's
    /// SMTP queue, run every few seconds or by `smtp kick`; a delivery that finds the area
    /// locked by another is retried about 30 s later.
    pub fn wait_area(&self, name: &str, what: &str, check: impl Fn(&[Stored]) -> bool) {
        // Looked at again each time JNOS writes the area's file.
        let path = self.data().join(format!("spool/mail/{name}.txt"));
        let filed = super::watch::until_file(&path, PATIENCE * 6, || check(&self.area(name)));
        assert!(
            filed,
            "JNOS area {name}: {what}\n--- console.log ---\n{}",
            super::tail(&self.console_log(), 4000)
        );
    }
}

/// Runs `f` on a thread inside network namespace `ns`.
fn in_ns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    let path = Path::new("/var/run/netns").join(ns);
    std::thread::scope(|s| {
        s.spawn(|| {
            let ns = std::fs::File::open(&path).expect("open the namespace");
            rustix::thread::move_into_link_name_space(
                std::os::fd::AsFd::as_fd(&ns),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )
            .expect("enter the namespace");
            f()
        })
        .join()
        .unwrap()
    })
}

/// Copies `from` to `to` on a thread of its own; after `cut` bytes (if given) it closes both
/// connections both ways, which ends the copy the other way too.
fn pipe(from: &TcpStream, to: &TcpStream, cut: Option<usize>) {
    let (mut from, mut to) = (from.try_clone().unwrap(), to.try_clone().unwrap());
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut moved = 0;
        loop {
            let n = match std::io::Read::read(&mut from, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let n = cut.map_or(n, |c| n.min(c - moved));
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
            moved += n;
            if cut.is_some_and(|c| moved >= c) {
                let _ = from.shutdown(std::net::Shutdown::Both);
                let _ = to.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
}

impl Drop for Jnos {
    fn drop(&mut self) {
        if std::thread::panicking() && std::env::var_os("QTC_KEEP_JNOS").is_some() {
            // For a post-mortem: JNOS stopped, its data kept.
            self.kill();
            eprintln!("JNOS data kept in {:?}", self.dir.path());
            std::mem::forget(std::mem::replace(
                &mut self.dir,
                tempfile::tempdir().unwrap(),
            ));
            return;
        }
        let _ = Command::new(Path::new(PEER_DIR).join("stop.sh"))
            .arg(self.data())
            .status();
        // stop.sh knows the namespace once run.sh wrote run.env; make sure in any case.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.ns])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// One message of a JNOS mail area: its headers and its body (LF line ends, as stored).
#[derive(Clone, Debug)]
pub struct Stored {
    /// `Message-Id:` without the brackets and the `@host` part: the BID.
    pub bid: String,
    /// `Subject:`.
    pub subject: String,
    /// The body: the lines after the headers, without the blank line that ends the message
    /// in the mbox file.
    pub body: Vec<u8>,
}

impl Stored {
    /// Splits an mbox file at its `From ` lines (a body line starting so is stored `>From `).
    pub fn parse_mbox(file: &[u8]) -> Vec<Stored> {
        let mut out = Vec::new();
        let mut lines = file.split_inclusive(|&b| b == b'\n').peekable();
        while let Some(first) = lines.next() {
            if !first.starts_with(b"From ") {
                continue;
            }
            let (mut bid, mut subject) = (String::new(), String::new());
            for h in lines.by_ref() {
                let h = h.strip_suffix(b"\n").unwrap_or(h);
                if h.is_empty() {
                    break;
                }
                let text = String::from_utf8_lossy(h);
                if let Some(v) = text.strip_prefix("Message-Id: <") {
                    bid = v.split('@').next().unwrap_or_default().to_string();
                } else if let Some(v) = text.strip_prefix("Subject: ") {
                    subject = v.to_string();
                }
            }
            let mut body = Vec::new();
            while let Some(l) = lines.next_if(|l| !l.starts_with(b"From ")) {
                body.extend_from_slice(l);
            }
            if body.ends_with(b"\n\n") {
                body.pop();
            }
            out.push(Stored { bid, subject, body });
        }
        out
    }
}

/// A user of JNOS's telnet BBS (port 2323 by default), logged in.
pub struct User {
    client: Client,
}

impl User {
    /// Logs `call` in with `pw` at JNOS's telnet BBS on `port`.
    pub fn login(jnos: &Jnos, port: u16, call: &str, pw: &str) -> User {
        let mut client = jnos.connect(port);
        client.expect("login:");
        client.send(call);
        client.expect("assword");
        client.send(pw);
        client.expect(">\r\n");
        User { client }
    }

    /// Sends one message the way a user types it: `SP TO @ AT` (or `SB`), the subject, the
    /// body lines (0xFF doubled: JNOS's mailbox reads its telnet users with telnet's rules;
    /// lines of at most 126 bytes: its mailbox reads 127 into a line, and the line end after a
    /// 127-byte line makes an empty line of its own), `/EX`; waits for the prompt after it.
    pub fn post(&mut self, command: &str, subject: &str, lines: &[Vec<u8>]) {
        self.client.send(command);
        self.client.expect("ubject");
        self.client.send(subject);
        self.client.expect("/EX");
        let mut typed = Vec::new();
        for l in lines {
            assert!(l.len() <= 126, "JNOS takes lines of up to 126 bytes");
            for &b in l {
                typed.push(b);
                if b == 0xff {
                    typed.push(0xff);
                }
            }
            typed.extend_from_slice(b"\r\n");
        }
        typed.extend_from_slice(b"/EX\r\n");
        self.client.stream.write_all(&typed).unwrap();
        let said = self.client.expect(">\r\n");
        assert!(said.contains("queued"), "JNOS did not queue it: {said}");
    }

    /// Logs off.
    pub fn bye(mut self) {
        self.client.send("B");
        let _ = self.client.expect_close();
    }
}
