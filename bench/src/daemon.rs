//! A qtc daemon started from the release binary on a generated config in a scratch directory.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::client::Client;
use crate::util::{now, signal, sleep, wait_for, Ctx, TempDir, R};

/// Settings every daemon of a run shares.
#[derive(Clone, Debug)]
pub struct Opts {
    /// The qtc binary.
    pub bin: PathBuf,
    /// `[store] durability`.
    pub durability: String,
    /// `[log] level`.
    pub log_level: String,
}

/// What qtc's standard input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stdin {
    /// /dev/null.
    Null,
    /// No file descriptor 0 at all.
    Closed,
}

/// One daemon to create.
pub struct Spec<'a> {
    /// Station callsign.
    pub call: &'a str,
    /// Users: (call, password, extra flags such as "--bbs").
    pub users: &'a [(&'a str, &'a str, &'a str)],
    /// Open a raw forwarding listener too.
    pub forward_listen: bool,
    /// `[telnet] max_sessions`.
    pub max_sessions: usize,
    /// More TOML after `[forward]` (partner tables).
    pub extra: String,
    /// Standard input.
    pub stdin: Stdin,
    /// Where its directory goes (`None`: the system's temporary directory).
    pub parent: Option<&'a Path>,
}

impl Default for Spec<'_> {
    fn default() -> Self {
        Spec {
            call: "N0BEN",
            users: &[("N0USR", "pw", "")],
            forward_listen: false,
            max_sessions: 100,
            extra: String::new(),
            stdin: Stdin::Null,
            parent: None,
        }
    }
}

/// A running (or stopped) daemon and its directory.
pub struct Daemon {
    /// Where its config, store and log live.
    pub dir: TempDir,
    bin: PathBuf,
    child: Option<Child>,
    stdin: Stdin,
    /// Its telnet port.
    pub telnet: u16,
    /// Its raw forwarding port, if it has one.
    pub fwd: Option<u16>,
    /// Its web port (/metrics), if it has one.
    pub web: Option<u16>,
    /// Its NNTP port, if it has one.
    pub nntp: Option<u16>,
    /// Its IMAP port, if it has one.
    pub imap: Option<u16>,
    /// Its callsign.
    pub call: String,
}

impl Daemon {
    /// Writes the config, adds the users and starts the daemon.
    pub fn create(o: &Opts, s: &Spec<'_>) -> R<Daemon> {
        let mut d = Daemon::prepare(o, s)?;
        d.start()?;
        Ok(d)
    }

    /// Writes the config and adds the users; [`Daemon::start`] starts it.
    pub fn prepare(o: &Opts, s: &Spec<'_>) -> R<Daemon> {
        let tag = s.call.to_ascii_lowercase();
        let dir = match s.parent {
            Some(parent) => TempDir::new_in(parent, &tag)?,
            None => TempDir::new(&tag)?,
        };
        let fwd = if s.forward_listen {
            "listen = [\"127.0.0.1:0\"]\n"
        } else {
            ""
        };
        // The rows' many users are one account (N0USR): its cap is the places' count.
        let cfg = format!(
            "[station]\ncallsign = \"{call}\"\n[store]\ndir = \"data\"\ndurability = \"{dur}\"\n\
             [telnet]\nlisten = [\"127.0.0.1:0\"]\nmax_sessions = {max}\nmax_per_address = {max}\n\
             max_sessions_per_user = {max}\n[log]\nlevel = \"{lvl}\"\n\
             [forward]\n{fwd}{extra}",
            call = s.call,
            dur = o.durability,
            max = s.max_sessions,
            lvl = o.log_level,
            extra = s.extra,
        );
        std::fs::write(dir.path().join("qtc.toml"), cfg).ctx("write qtc.toml")?;
        let d = Daemon {
            dir,
            bin: o.bin.clone(),
            child: None,
            stdin: s.stdin,
            telnet: 0,
            fwd: None,
            web: None,
            nntp: None,
            imap: None,
            call: s.call.to_string(),
        };
        for (call, pw, flags) in s.users {
            let mut args = vec!["user", "add", call, "--password", pw];
            args.extend(flags.split_whitespace());
            d.cli(&args, b"")?;
        }
        Ok(d)
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("qtc.toml")
    }

    /// The daemon's log file.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("qtc.log")
    }

    /// The store's files (qtc.sqlite and its WAL).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Starts `qtc run` (again) and waits for its start-up report.
    pub fn start(&mut self) -> R<()> {
        if self.child.is_some() {
            return Err("already running".into());
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .ctx("qtc.log")?;
        let mut cmd = match self.stdin {
            Stdin::Null => {
                let mut c = Command::new(&self.bin);
                c.stdin(Stdio::null());
                c
            }
            Stdin::Closed => {
                // exec with fd 0 closed: the daemon's first open file or socket becomes fd 0.
                let mut c = Command::new("sh");
                c.arg("-c").arg("exec \"$0\" \"$@\" <&-").arg(&self.bin);
                c
            }
        };
        cmd.arg("-c")
            .arg(self.config())
            .arg("run")
            .stdout(Stdio::piped())
            .stderr(log);
        let mut child = cmd.spawn().ctx("cannot start qtc")?;
        let out = child.stdout.take().ctx("no stdout")?;
        let (tx, rx) = mpsc::channel::<String>();
        // Drains stdout for the daemon's whole life, so it never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut r = BufReader::new(out);
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 0) {
                let _ = tx.send(line.trim().to_string());
                line.clear();
            }
        });
        self.child = Some(child);
        // Port 0 in the config: every start gets new ports.
        self.telnet = 0;
        self.fwd = None;
        self.web = None;
        self.nntp = None;
        self.imap = None;
        let port_of = |a: &str| a.rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
        let end = now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        loop {
            let left = end.saturating_duration_since(now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(a) = line.strip_prefix("telnet: listening on ") {
                        self.telnet = port_of(a).ctx("telnet port")?;
                    }
                    if let Some(a) = line.strip_prefix("forward: listening on ") {
                        self.fwd = self.fwd.or(port_of(a));
                    }
                    if let Some(a) = line.strip_prefix("web: listening on ") {
                        self.web = self.web.or(port_of(a));
                    }
                    if let Some(a) = line.strip_prefix("nntp: listening on ") {
                        self.nntp = self.nntp.or(port_of(a));
                    }
                    if let Some(a) = line.strip_prefix("imap: listening on ") {
                        self.imap = self.imap.or(port_of(a));
                    }
                    let done = line.starts_with("data: ");
                    seen.push(line);
                    if done {
                        return Ok(());
                    }
                }
                Err(_) => {
                    return Err(format!(
                        "qtc did not start: {seen:?}; log: {}",
                        self.log_tail()
                    ))
                }
            }
        }
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// How often its log says `what`.
    pub fn log_count(&self, what: &str) -> usize {
        std::fs::read_to_string(self.log_path())
            .unwrap_or_default()
            .matches(what)
            .count()
    }

    /// Waits until its log says `what` more than `seen` times.
    pub fn wait_log(&self, what: &str, seen: usize) -> R<()> {
        wait_for(Duration::from_secs(60), Duration::from_millis(20), || {
            (self.log_count(what) > seen).then_some(())
        })
        .ctx(format!("no {what:?} in the log: {}", self.log_tail()))
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let t = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(8)..].join("\n")
    }

    /// Runs `qtc -c CONFIG ARGS` with `input` on standard input; returns standard output.
    pub fn cli(&self, args: &[&str], input: &[u8]) -> R<String> {
        cli(&self.bin, &self.config(), args, input)
    }

    /// `qtc msg import -` of `data`.
    pub fn import(&self, data: &[u8]) -> R<()> {
        let out = self.cli(&["msg", "import", "-"], data)?;
        if !out.contains("imported") {
            return Err(format!("msg import: {out}"));
        }
        Ok(())
    }

    /// How many messages the store holds (`qtc msg list --json`).
    pub fn count(&self) -> R<usize> {
        Ok(self.cli(&["msg", "list", "--json"], b"")?.lines().count())
    }

    /// Logs in on the telnet port and reads up to the first prompt.
    pub fn login(&self, call: &str, pw: &str) -> R<Client> {
        let mut c = Client::connect(self.telnet)?;
        c.expect("Callsign:")?;
        c.line(call)?;
        c.expect("Password:")?;
        c.line(pw)?;
        c.expect(&self.prompt())?;
        Ok(c)
    }

    /// The BBS prompt.
    pub fn prompt(&self) -> String {
        format!("de {}>", self.call)
    }

    /// SIGKILL: gone without a word to anyone; [`Daemon::start`] brings it back on the same
    /// directory.
    pub fn kill(&mut self) -> R<()> {
        let mut child = self.child.take().ctx("not running")?;
        child.kill().ctx("kill")?;
        child.wait().ctx("wait")?;
        Ok(())
    }

    /// SIGTERM, then waits up to 10 s; returns how long the exit took.
    pub fn terminate(&mut self) -> R<Duration> {
        let mut child = self.child.take().ctx("not running")?;
        let t0 = now();
        signal(child.id(), "TERM")?;
        loop {
            if let Some(st) = child.try_wait().ctx("wait")? {
                let took = t0.elapsed();
                if !st.success() {
                    return Err(format!("qtc exited with {st} after SIGTERM"));
                }
                return Ok(took);
            }
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                return Err("qtc did not exit within 10 s of SIGTERM".into());
            }
            sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs `BIN -c CONFIG ARGS` to completion.
pub fn cli(bin: &Path, config: &Path, args: &[&str], input: &[u8]) -> R<String> {
    let mut child = Command::new(bin)
        .arg("-c")
        .arg(config)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ctx("cannot run qtc")?;
    let mut stdin = child.stdin.take().ctx("stdin")?;
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().ctx("qtc")?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(format!(
            "qtc {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
