//! The real inetutils `telnet` client against the daemon, driven through a pty as a user would
//! drive it: keys typed into the terminal, the screen read back.
//!
//! Two modes, two tests:
//! - `telnet HOST PORT` (a port other than 23) negotiates nothing and the server offers nothing:
//!   the client stays in **line mode**; the terminal edits and echoes, and sends whole lines.
//! - `telnet -- HOST -PORT` negotiates as on port 23 and asks for SUPPRESS-GO-AHEAD: the server
//!   agrees and echoes, so the client ends up in **character mode** and the server does the
//!   editing (BS, DEL, Ctrl-U) and never echoes the password.
//!
//! The bar for both: log in, type `LX`, Backspace, `B`, Enter: `LB` runs; no `^M` on the screen.
//! In line mode Ctrl-Z reaches the BBS as `IAC SUSP IAC DO TIMING-MARK` and ends a message.
//! Skipped (with the reason printed) when `telnet` is not installed, unless `QTC_REQUIRE_PEERS=1`.
#![allow(clippy::disallowed_methods)]

mod common;

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use common::{Daemon, PATIENCE};

/// The `telnet` client on a pty: what we type goes in, what its screen shows comes out.
struct Terminal {
    child: Child,
    keys: std::fs::File,
    /// The client's side of the pty, to read the terminal modes it sets.
    tty: OwnedFd,
    screen: mpsc::Receiver<Vec<u8>>,
    /// Everything shown so far.
    shown: Vec<u8>,
    /// How much of `shown` the last `expect` consumed.
    read_to: usize,
}

impl Terminal {
    fn telnet(args: &[String]) -> Terminal {
        let pty = nix::pty::openpty(None, None).unwrap();
        let slave = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
        // In a session of its own with the pty as its controlling terminal, as in a terminal
        // window: keys such as Ctrl-Z become signals to it (util-linux `setsid --ctty`).
        let child = Command::new("setsid")
            .args(["--ctty", "telnet"])
            .args(args)
            .stdin(slave(&pty.slave))
            .stdout(slave(&pty.slave))
            .stderr(slave(&pty.slave))
            .spawn()
            .expect("the inetutils telnet client (apt install inetutils-telnet)");
        let tty = pty.slave;
        let keys = std::fs::File::from(pty.master);
        let mut reader = keys.try_clone().unwrap();
        let (tx, screen) = mpsc::channel();
        // A blocking reader on its own thread; the test waits on the channel with a deadline.
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Terminal {
            child,
            keys,
            tty,
            screen,
            shown: Vec::new(),
            read_to: 0,
        }
    }

    /// Waits until the client has turned its terminal's local echo off, as it does once it has
    /// agreed to the server's ECHO: keys typed before that would be echoed twice. A person does
    /// not type within those milliseconds; a test does.
    fn wait_for_server_echo(&self) {
        use nix::sys::termios::{tcgetattr, LocalFlags};
        let deadline = Instant::now() + PATIENCE;
        while tcgetattr(&self.tty)
            .unwrap()
            .local_flags
            .contains(LocalFlags::ECHO)
        {
            assert!(Instant::now() < deadline, "the client kept its local echo");
            std::thread::yield_now();
        }
    }

    /// Bytes the client has sent to the daemon on `port` so far (TCP's own count, from `ss`).
    fn sent(port: u16) -> u64 {
        let out = Command::new("ss")
            .args([
                "-tinH",
                "state",
                "established",
                &format!("( dport = :{port} )"),
            ])
            .output()
            .expect("ss (iproute2)");
        let text = String::from_utf8_lossy(&out.stdout);
        text.split_whitespace()
            .find_map(|w| w.strip_prefix("bytes_sent:"))
            .map_or(0, |n| n.parse().unwrap())
    }

    /// Types a line and waits until the client has sent it to the daemon on `port`.
    fn type_line_and_wait(&mut self, line: &[u8], port: u16) {
        let before = Self::sent(port);
        self.type_keys(line);
        self.type_keys(b"\r");
        let deadline = Instant::now() + PATIENCE;
        while Self::sent(port) < before + line.len() as u64 + 2 {
            assert!(Instant::now() < deadline, "the client never sent {line:?}");
            std::thread::yield_now();
        }
    }

    fn type_keys(&mut self, keys: &[u8]) {
        self.keys.write_all(keys).unwrap();
    }

    /// Waits until the screen shows `what` after the last expectation; returns what was shown.
    fn expect(&mut self, what: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(pos) = common::find(&self.shown[self.read_to..], what.as_bytes()) {
                let end = self.read_to + pos + what.len();
                let got = String::from_utf8_lossy(&self.shown[self.read_to..end]).into_owned();
                self.read_to = end;
                return got;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.screen.recv_timeout(left) {
                Ok(chunk) => self.shown.extend_from_slice(&chunk),
                Err(_) => panic!(
                    "the screen never showed {what:?}; it shows {:?}",
                    String::from_utf8_lossy(&self.shown)
                ),
            }
        }
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.shown).into_owned()
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True when the `telnet` client is installed; otherwise says why the test is skipped (or fails
/// under `QTC_REQUIRE_PEERS=1`, as in CI).
fn have_telnet() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("telnet").is_file()));
    if !found {
        assert!(
            std::env::var("QTC_REQUIRE_PEERS").as_deref() != Ok("1"),
            "telnet is not installed and QTC_REQUIRE_PEERS=1 (apt-get install inetutils-telnet)"
        );
        eprintln!("skipped: telnet is not installed (Debian package inetutils-telnet)");
    }
    found
}

/// A bulletin for `LB` to list.
fn daemon_with_bulletin() -> Daemon {
    let d = Daemon::start("");
    let mut c = d.login("N0OTH", "x");
    c.send("SB ALL");
    c.expect("Subject:");
    c.send("Swapfest Sunday");
    c.expect("Enter message");
    c.send("/EX");
    c.expect("de N0CALL>");
    d
}

/// Logs in, types `LX` Backspace `B` and a subject with backspaces; checks what ran and was
/// stored, and that the screen is clean.
fn type_like_a_user(d: &Daemon, mut t: Terminal) -> String {
    t.expect("Callsign:");
    t.type_keys(b"N0USR\r");
    t.expect("Password:");
    t.type_keys(b"pw\r");
    let login = t.expect("de N0CALL>");
    assert!(!login.contains("pw"), "the password was shown: {login:?}");
    // The Backspace key of a Linux terminal sends DEL.
    t.type_keys(b"LX\x7fB\r");
    let listed = t.expect("de N0CALL>");
    assert!(listed.contains("Swapfest Sunday"), "{listed:?}");
    assert!(!listed.contains("Unknown command"), "{listed:?}");
    // Ctrl-U and Backspace inside a subject.
    t.type_keys(b"SP N0OTH\r");
    t.expect("Subject:");
    t.type_keys(b"oops\x15subj\x7f\x7fok\r");
    t.expect("Enter message");
    t.type_keys(b"hi\r/EX\r");
    t.expect("stored");
    t.expect("de N0CALL>");
    let list = String::from_utf8_lossy(&d.cli(&["msg", "list"]).stdout).into_owned();
    assert!(list.contains("suok"), "{list}");
    let screen = t.screen();
    assert!(!screen.contains("^M"), "{screen:?}");
    assert!(!screen.contains("^?"), "{screen:?}");
    screen
}

#[test]
fn linux_telnet_in_line_mode() {
    if !have_telnet() {
        return;
    }
    let d = daemon_with_bulletin();
    let t = Terminal::telnet(&["127.0.0.1".into(), d.port.to_string()]);
    type_like_a_user(&d, t);
}

#[test]
fn linux_telnet_in_character_mode() {
    if !have_telnet() {
        return;
    }
    let d = daemon_with_bulletin();
    // A '-' before the port makes the client negotiate as it does on port 23.
    let t = Terminal::telnet(&["--".into(), "127.0.0.1".into(), format!("-{}", d.port)]);
    t.wait_for_server_echo();
    let screen = type_like_a_user(&d, t);
    // The server did the erasing on the screen.
    assert!(screen.contains("LX\x08 \x08B"), "{screen:?}");
}

/// Ctrl-Z in line mode: the client sends `IAC SUSP IAC DO TIMING-MARK` (not the key), and shows
/// nothing more from the server until the mark is answered; Enter then ends the message.
#[test]
fn ctrl_z_ends_a_message_from_linux_telnet_in_line_mode() {
    if !have_telnet() {
        return;
    }
    let d = Daemon::start("");
    let mut t = Terminal::telnet(&["127.0.0.1".into(), d.port.to_string()]);
    t.expect("Callsign:");
    t.type_keys(b"N0USR\r");
    t.expect("Password:");
    t.type_keys(b"pw\r");
    t.expect("de N0CALL>");
    t.type_keys(b"SP N0OTH\r");
    t.expect("Subject:");
    t.type_keys(b"ended with ctrl-z\r");
    t.expect("Enter message");
    // Ctrl-Z flushes what the client has not sent yet: a person types it after the line has
    // gone, a test waits for that. The terminal turns the key into a signal; the client sends
    // the telnet commands.
    t.type_line_and_wait(b"first line", d.port);
    t.type_keys(b"\x1a");
    t.type_keys(b"\r");
    t.expect("stored");
    t.expect("de N0CALL>");
    let list = String::from_utf8_lossy(&d.cli(&["msg", "list"]).stdout).into_owned();
    assert!(list.contains("ended with ctrl-z"), "{list}");
    let shown = String::from_utf8_lossy(&d.cli(&["msg", "show", "1"]).stdout).into_owned();
    assert!(shown.contains("first line"), "{shown}");
}

#[test]
fn a_partner_on_the_real_telnet_client_keeps_the_telnet_rules() {
    // The telnet port's rule: a client that spoke telnet (this one answers the server's
    // WILL ECHO at the password prompt) keeps IAC doubling in its forwarding session, so the
    // 0xFF it sends as IAC IAC is one 0xFF in the message. (A raw client's bytes are taken as
    // they are: forward_escaped.rs, and pat on the telnet port in forward_pat.rs.)
    if !have_telnet() {
        return;
    }
    let d = Daemon::start_bbs(
        "N0QTC",
        &[("N0TEL", "telpw", "--bbs")],
        "[[partner]]\ncallsign = \"N0TEL\"\nprotocol = \"mbl\"\nroutes = [\"N0TEL\"]\n",
    );
    let mut t = Terminal::telnet(&["127.0.0.1".into(), d.port.to_string()]);
    t.expect("Callsign:");
    t.type_keys(b"N0TEL\r");
    t.expect("Password:");
    t.type_keys(b"telpw\r");
    t.expect("de N0QTC>");
    t.type_keys(b"[TST-1.0-HM$]\r");
    t.expect(">");
    t.type_keys(b"SP N0USR < N0TEL $T1_N0TEL\r");
    t.expect("OK");
    t.type_keys(b"typed at a telnet client\rK\xf6ln \xff end\r/EX\r");
    t.expect(">");
    t.type_keys(b"B\r");
    d.wait_for_log("forwarding session ended partner=N0TEL");
    assert!(!d.log().contains("never spoke telnet"), "{}", d.log());
    let got = d.listed();
    let shown = common::Shown::parse(&d.show_raw(got[0].number));
    assert_eq!(shown.body, b"K\xf6ln \xff end\r\n");
}
