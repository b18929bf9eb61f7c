//! JNOS 2.0o.2 for row 11's JNOS passes, driven through the test peer's own scripts
//! (`crates/qtc/tests/peers/jnos`, its README lists every quirk): `build.sh` builds it once under
//! `target/jnos`, `run.sh --kiss` starts it in a network namespace of its own with its AX.25
//! port `ax0` on a pty pair, and socat joins the pty's other end to a modem's KISS TCP port, as
//! a sysop joins JNOS to Direwolf. Needs root (namespaces, a tun device), `ip` and `socat`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::util::{Ctx, R};

/// The test peer's folder.
fn peer(root: &Path) -> PathBuf {
    root.join("crates/qtc/tests/peers/jnos")
}

/// Builds JNOS (once: build.sh reuses its earlier build under `target/jnos`); the binary.
pub fn build(root: &Path) -> R<PathBuf> {
    let target = root.join("target");
    let out = Command::new("flock")
        .arg(target.join("jnos.lock"))
        .arg(peer(root).join("build.sh"))
        .arg(target.join("jnos"))
        .output()
        .ctx("flock build.sh (JNOS)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "JNOS did not build: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(PathBuf::from(
        text.lines().last().unwrap_or_default().trim(),
    ))
}

/// One JNOS on a modem, stopped (SIGKILL, its namespace deleted) when dropped.
pub struct Jnos {
    peer: PathBuf,
    /// Its data directory (`spool/mail/AREA.txt`, `console.log`).
    pub data: PathBuf,
    ns: String,
    bridge: Option<Child>,
}

/// Namespaces made by this process so far.
static STARTED: AtomicUsize = AtomicUsize::new(0);

impl Jnos {
    /// Starts JNOS `call` (BBS call `call`-1) in `dir` with run.sh's `opts`, its KISS port
    /// joined to the modem on KISS TCP port `kiss`.
    pub fn start(
        root: &Path,
        bin: &Path,
        dir: &Path,
        call: &str,
        opts: &[&str],
        kiss: u16,
    ) -> R<Jnos> {
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let mut j = Jnos {
            peer: peer(root),
            data: dir.join(call.to_ascii_lowercase()),
            ns: format!("qtc-bench-jnos-{}-{n}", std::process::id()),
            bridge: None,
        };
        // Its output to a file: run.sh leaves socat running with it, so a pipe never ends.
        let report = dir.join(format!("{}-run.out", call.to_ascii_lowercase()));
        let file = std::fs::File::create(&report).ctx("run.sh's output file")?;
        let status = Command::new(j.peer.join("run.sh"))
            .arg("--jnos")
            .arg(bin)
            .arg("--dir")
            .arg(&j.data)
            .args(["--ns", &j.ns, "--call", call, "--kiss", "--smtp-timer", "1"])
            .args(opts)
            .stdin(Stdio::null())
            .stdout(file.try_clone().ctx("run.sh's output file")?)
            .stderr(file)
            .status()
            .ctx("run.sh (JNOS)")?;
        if !status.success() {
            return Err(format!(
                "run.sh: {}{}",
                std::fs::read_to_string(&report).unwrap_or_default(),
                j.console_tail()
            ));
        }
        // JNOS spins when nothing drains its pty: the bridge comes at once.
        let pty = j.data.join("kiss.pty");
        j.bridge = Some(
            Command::new("socat")
                .arg(format!("FILE:{},raw,echo=0", pty.display()))
                .arg(format!("TCP:127.0.0.1:{kiss}"))
                .stdin(Stdio::null())
                .spawn()
                .ctx("socat (JNOS's pty to the modem)")?,
        );
        Ok(j)
    }

    /// The last lines of its console log.
    pub fn console_tail(&self) -> String {
        let t = std::fs::read_to_string(self.data.join("console.log")).unwrap_or_default();
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(12)..].join("\n")
    }

    /// Console commands through the sysop's telnet session (`jnos-cmd.sh`).
    pub fn console(&self, commands: &[&str]) -> R<String> {
        let out = Command::new(self.peer.join("jnos-cmd.sh"))
            .arg(&self.data)
            .args(commands)
            .output()
            .ctx("jnos-cmd.sh")?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            return Err(format!("jnos-cmd.sh {commands:?}: {text}"));
        }
        Ok(text)
    }

    /// User `user` (password `pw`) posts each message on the telnet BBS: `(command, subject,
    /// body lines)`, as `SP N0ABC @ N0BBB`, then `smtp kick` files them.
    pub fn post(&self, user: &str, pw: &str, msgs: &[(String, String, String)]) -> R<()> {
        let mut script = format!("WAIT login:\n{user}\nWAIT assword\n{pw}\nWAIT >\n");
        for (cmd, subject, body) in msgs {
            script += &format!("{cmd}\nWAIT ubject\n{subject}\nWAIT /EX\n{body}/EX\nWAIT >\n");
        }
        script += "B\n";
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.ns])
            .arg(self.peer.join("jnos-tn.sh"))
            .args(["127.0.0.3", "2323"])
            .env("TN_TIMEOUT", "60")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ctx("jnos-tn.sh")?;
        child
            .stdin
            .take()
            .ctx("jnos-tn.sh stdin")?
            .write_all(script.as_bytes())
            .ctx("jnos-tn.sh")?;
        let out = child.wait_with_output().ctx("jnos-tn.sh")?;
        let said = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || said.matches("queued").count() < msgs.len() {
            let lines: Vec<&str> = said.lines().collect();
            let tail = lines[lines.len().saturating_sub(12)..].join("\n");
            return Err(format!("posting at JNOS: {tail}"));
        }
        self.console(&["smtp kick"])?;
        Ok(())
    }

    /// Messages in its mail area `area` (`spool/mail/AREA.txt`).
    pub fn held(&self, area: &str) -> usize {
        std::fs::read(self.data.join(format!("spool/mail/{area}.txt")))
            .unwrap_or_default()
            .split(|&b| b == b'\n')
            .filter(|l| l.starts_with(b"From "))
            .count()
    }
}

impl Drop for Jnos {
    fn drop(&mut self) {
        let _ = Command::new(self.peer.join("stop.sh"))
            .arg(&self.data)
            .status();
        if let Some(mut b) = self.bridge.take() {
            let _ = b.kill();
            let _ = b.wait();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.ns])
            .stderr(Stdio::null())
            .status();
    }
}
