//! Users' own clients on the BBS, driven by the tests: curl (SMTP, POP3, IMAP), fetchmail,
//! neomutt, Python's nntplib, against a real daemon configured with `[mail]` as
//! docs/mail-clients.md says, beside telnet users and a forwarding partner.
#![allow(clippy::disallowed_methods)]

mod common;

use std::process::{Command, Output, Stdio};

use common::Daemon;

const MAIL: &str = "[mail]\nsmtp_listen = \"127.0.0.1:0\"\npop3_listen = \"127.0.0.1:0\"\n\
imap_listen = \"127.0.0.1:0\"\nnntp_listen = \"127.0.0.1:0\"\n";

/// A required client program; missing in CI is a failure, here a skip with a note.
fn have(program: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found && std::env::var_os("QTC_REQUIRE_PEERS").is_some() {
        panic!("{program} is required (QTC_REQUIRE_PEERS): apt-get install it");
    }
    if !found {
        eprintln!("{program} not installed: skipped");
    }
    found
}

/// The port a `[mail]` listener reported at start-up.
fn port(d: &Daemon, proto: &str) -> u16 {
    d.stdout
        .iter()
        .find_map(|l| l.strip_prefix(&format!("{proto}: listening on ")))
        .and_then(|a| a.rsplit(':').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {proto} listener in {:?}", d.stdout))
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.stdin(Stdio::null()).output().expect("run a client");
    out
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// curl submits a message with AUTH over SMTP.
fn curl_send(d: &Daemon, user: &str, pw: &str, rcpt: &str, mail: &str) -> Output {
    let file = d.dir.path().join("outgoing.eml");
    std::fs::write(&file, mail).unwrap();
    run(Command::new("curl")
        .args(["-sS", "--max-time", "20"])
        .arg(format!("smtp://127.0.0.1:{}", port(d, "smtp")))
        .args(["--mail-from", &format!("{user}@elsewhere.example")])
        .args(["--mail-rcpt", rcpt, "--user", &format!("{user}:{pw}"), "-T"])
        .arg(&file))
}

fn curl_get(url: &str, user: &str, pw: &str) -> Output {
    run(Command::new("curl")
        .args(["-sS", "--max-time", "20", url, "--user", &format!("{user}:{pw}")]))
}

#[test]
fn curl_sends_over_smtp_and_reads_over_pop3_and_imap_and_telnet_sees_the_same_mail() {
    if !have("curl") {
        return;
    }
    let d = Daemon::start(MAIL);
    let sent = curl_send(
        &d,
        "N0USR",
        "pw",
        "N0OTH@N0CALL",
        "From: Someone Else <spoof@example.org>\r\nTo: N0OTH@N0CALL\r\nSubject: Field day\r\n\r\nMeet at the club.\r\n",
    );
    assert!(sent.status.success(), "{}\n{}", text(&sent), d.log());
    // The sender is the logged-in call, whatever From: said.
    let pop = curl_get(&format!("pop3://127.0.0.1:{}/1", port(&d, "pop3")), "N0OTH", "x");
    let pop_text = text(&pop);
    assert!(pop.status.success(), "{pop_text}\n{}", d.log());
    assert!(pop_text.contains("Subject: Field day"), "{pop_text}");
    assert!(pop_text.contains("From: N0USR@N0CALL"), "{pop_text}");
    assert!(pop_text.contains("Meet at the club."), "{pop_text}");
    let imap = format!("imap://127.0.0.1:{}/INBOX;UID=1", port(&d, "imap"));
    let got = curl_get(&imap, "N0OTH", "x");
    assert!(got.status.success(), "{}\n{}", text(&got), d.log());
    assert!(text(&got).contains("Meet at the club."), "{}", text(&got));
    let wrong = curl_get(&imap, "N0OTH", "wrong");
    assert!(!wrong.status.success(), "a wrong password was let in: {}", text(&wrong));
    // The telnet user has it, already read (RETR and FETCH set the same read mark as R).
    let mut t = d.login("N0OTH", "x");
    t.send("LM");
    let listed = t.expect("de N0CALL>");
    assert!(listed.contains("Field day") && listed.contains("PY"), "{listed}");
    t.send("R 1");
    assert!(t.expect("de N0CALL>").contains("Meet at the club."));
}
