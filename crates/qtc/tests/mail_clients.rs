//! Users' own clients on the BBS, driven by the tests: curl (SMTP, POP3, IMAP), fetchmail,
//! neomutt, Python's nntplib, against a real daemon configured with `[mail]` as
//! docs/mail-clients.md says, beside telnet users and a forwarding partner.
#![allow(clippy::disallowed_methods)]

mod common;

use std::process::{Command, Output, Stdio};

use common::programs::{have, python, text};
use common::Daemon;

const MAIL: &str = "[mail]\nsmtp_listen = \"127.0.0.1:0\"\npop3_listen = \"127.0.0.1:0\"\n\
imap_listen = \"127.0.0.1:0\"\nnntp_listen = \"127.0.0.1:0\"\n";

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
    run(Command::new("curl").args([
        "-sS",
        "--max-time",
        "20",
        url,
        "--user",
        &format!("{user}:{pw}"),
    ]))
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
    let pop = curl_get(
        &format!("pop3://127.0.0.1:{}/1", port(&d, "pop3")),
        "N0OTH",
        "x",
    );
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
    assert!(
        !wrong.status.success(),
        "a wrong password was let in: {}",
        text(&wrong)
    );
    // The telnet user has it, already read (RETR and FETCH set the same read mark as R).
    let mut t = d.login("N0OTH", "x");
    t.send("LM");
    let listed = t.expect("de N0CALL>");
    assert!(
        listed.contains("Field day") && listed.contains("PY"),
        "{listed}"
    );
    t.send("R 1");
    assert!(t.expect("de N0CALL>").contains("Meet at the club."));
}

#[test]
fn a_bulletin_typed_at_telnet_is_the_last_article_of_its_newsgroup_and_a_post_reaches_telnet() {
    if !have("python3") {
        return;
    }
    let d = Daemon::start(MAIL);
    let mut t = d.login("N0USR", "pw");
    for (i, subject) in ["Earlier", "Storm warning"].iter().enumerate() {
        t.send("SB WX @ WW");
        t.expect("Subject:");
        t.send(subject);
        t.expect("/EX");
        t.send(&format!("Bulletin {i}"));
        t.send("/EX");
        t.expect("de N0CALL>");
    }
    let nntp = port(&d, "nntp");
    let read = python(&format!(
        "import nntplib\n\
         s = nntplib.NNTP('127.0.0.1', {nntp})\n\
         name = [g.group for g in s.list()[1] if 'wx' in g.group][0]\n\
         resp, count, first, last, name = s.group(name)\n\
         resp, info = s.article(str(last))\n\
         text = b'\\n'.join(info.lines).decode()\n\
         print(name, count, text)\n\
         s.quit()\n"
    ));
    let out = text(&read);
    assert!(read.status.success(), "{out}\n{}", d.log());
    assert!(out.starts_with("wx.ww 2 "), "{out}");
    assert!(
        out.contains("Subject: Storm warning") && out.contains("Bulletin 1"),
        "{out}"
    );
    let post = python(&format!(
        "import nntplib, io\n\
         s = nntplib.NNTP('127.0.0.1', {nntp}, user='N0OTH', password='x')\n\
         s.post(io.BytesIO(b'From: n0oth@n0call\\r\\nNewsgroups: wx.ww\\r\\nSubject: All clear\\r\\n\\r\\nSun is out.\\r\\n'))\n\
         s.quit()\n"
    ));
    assert!(post.status.success(), "{}\n{}", text(&post), d.log());
    t.send("LB");
    let listed = t.expect("de N0CALL>");
    assert!(
        listed.contains("All clear") && listed.contains("N0OTH"),
        "{listed}"
    );
    let anon_post = python(&format!(
        "import nntplib, io\n\
         s = nntplib.NNTP('127.0.0.1', {nntp})\n\
         s.post(io.BytesIO(b'Newsgroups: wx.ww\\r\\nSubject: x\\r\\n\\r\\nx\\r\\n'))\n"
    ));
    assert!(!anon_post.status.success(), "posted without a login");
}

#[test]
fn fetchmail_collects_and_deletes_and_the_kill_shows_at_telnet() {
    if !have("fetchmail") || !have("curl") {
        return;
    }
    let d = Daemon::start(MAIL);
    let sent = curl_send(
        &d,
        "N0USR",
        "pw",
        "<n0oth@n0call>",
        "Subject: Take me\r\n\r\nfetch this\r\n",
    );
    assert!(sent.status.success(), "{}", text(&sent));
    let home = d.dir.path().join("fetchhome");
    std::fs::create_dir_all(&home).unwrap();
    let mbox = home.join("mbox");
    let rc = home.join("fetchmailrc");
    std::fs::write(
        &rc,
        format!(
            "poll 127.0.0.1 service {} protocol pop3 user \"N0OTH\" password \"x\" mda \"cat >> {}\" no keep sslproto \"\"\n",
            port(&d, "pop3"),
            mbox.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rc, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = run(Command::new("fetchmail")
        .args(["--nosyslog", "--nodetach", "-f"])
        .arg(&rc)
        .env("HOME", &home)
        .env("FETCHMAILHOME", &home));
    assert!(out.status.success(), "{}\n{}", text(&out), d.log());
    let got = std::fs::read_to_string(&mbox).unwrap_or_default();
    assert!(
        got.contains("Subject: Take me") && got.contains("fetch this"),
        "{got}"
    );
    // DELE then QUIT killed it: gone for the telnet user too.
    let mut t = d.login("N0OTH", "x");
    t.send("R 1");
    let r = t.expect("de N0CALL>");
    assert!(!r.contains("fetch this"), "{r}");
}

#[test]
fn mail_from_a_client_with_an_attachment_goes_to_a_partner_as_b2f_and_is_read_there() {
    if !have("curl") {
        return;
    }
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs"), ("N0USR", "pw", "")],
        &format!("{MAIL}[forward]\nlisten = [\"127.0.0.1:0\"]\n[[partner]]\ncallsign = \"N0AAA\"\nprotocol = \"b2\"\nroutes = [\"N0AAA\"]\n"),
    );
    let fwd = b.fwd_port.unwrap();
    let a = Daemon::start_bbs(
        "N0AAA",
        &[("N0USR", "pw", "")],
        &format!("{MAIL}[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:127.0.0.1:{fwd}\"\npassword = \"fwdpw\"\nprotocol = \"b2\"\nroutes = [\"N0BBB\", \"WW\"]\n"),
    );
    let mail = "Subject: Log file\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n\
--x\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nSee the attachment.\r\n\
--x\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"log.bin\"\r\n\
Content-Transfer-Encoding: base64\r\n\r\nAP8BAg==\r\n--x--\r\n";
    let sent = curl_send(&a, "N0USR", "pw", "N0USR@N0BBB.#NCA.CA.USA.NOAM", mail);
    assert!(sent.status.success(), "{}\n{}", text(&sent), a.log());
    a.forward_ok("N0BBB", &b);
    let pop = curl_get(
        &format!("pop3://127.0.0.1:{}/1", port(&b, "pop3")),
        "N0USR",
        "pw",
    );
    let got = text(&pop);
    assert!(pop.status.success(), "{got}\n{}", b.log());
    assert!(
        got.contains("See the attachment.") && got.contains("filename=\"log.bin\""),
        "{got}"
    );
    assert!(got.contains("AP8BAg=="), "{got}");
    assert!(got.contains("From: N0USR@N0AAA"), "{got}");
}

/// IDLE on the wire (curl has no IDLE): new mail typed at the telnet prompt and a kill there
/// reach a client waiting in IDLE at once, without it asking.
#[test]
fn an_idle_imap_client_hears_of_new_mail_and_kills_made_at_the_prompt() {
    let d = Daemon::start(MAIL);
    let mut imap = common::Client::connect(port(&d, "imap"));
    imap.expect("IMAP4rev1");
    imap.send("a LOGIN N0OTH x");
    imap.expect("a OK");
    imap.send("b SELECT INBOX");
    assert!(imap.expect("b OK").contains("* 0 EXISTS"));
    imap.send("c IDLE");
    imap.expect("+ idling");
    let mut t = d.login("N0USR", "pw");
    t.send("SP N0OTH");
    t.expect("Subject:");
    t.send("Pushed");
    t.expect("/EX");
    t.send("hello");
    t.send("/EX");
    t.expect("de N0CALL>");
    imap.expect("* 1 EXISTS");
    t.send("K 1");
    t.expect("de N0CALL>");
    imap.expect("* 1 EXPUNGE");
    imap.send("DONE");
    imap.expect("c OK IDLE terminated");
}

/// With `[tls]`, curl upgrades each connection with STARTTLS (`--ssl-reqd`) before it sends
/// the password: SMTP, POP3 (STLS) and IMAP.
#[test]
fn curl_insists_on_starttls_and_gets_it() {
    if !have("curl") {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let (cert, key) = (certs.path().join("c.pem"), certs.path().join("k.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    let d = Daemon::start(&format!(
        "{MAIL}[tls]\ncert = \"{}\"\nkey = \"{}\"\n",
        cert.display(),
        key.display()
    ));
    let file = d.dir.path().join("m.eml");
    std::fs::write(&file, "Subject: Over TLS\r\n\r\nsecret\r\n").unwrap();
    let sent = run(Command::new("curl")
        .args(["-sS", "--max-time", "20", "--ssl-reqd", "-k"])
        .arg(format!("smtp://127.0.0.1:{}", port(&d, "smtp")))
        .args([
            "--mail-from",
            "n0usr@n0call",
            "--mail-rcpt",
            "n0oth@n0call",
            "--user",
            "N0USR:pw",
            "-T",
        ])
        .arg(&file));
    assert!(sent.status.success(), "{}\n{}", text(&sent), d.log());
    for url in [
        format!("pop3://127.0.0.1:{}/1", port(&d, "pop3")),
        format!("imap://127.0.0.1:{}/INBOX;UID=1", port(&d, "imap")),
    ] {
        let got = run(Command::new("curl").args([
            "-sS",
            "--max-time",
            "20",
            "--ssl-reqd",
            "-k",
            &url,
            "--user",
            "N0OTH:x",
        ]));
        assert!(
            text(&got).contains("secret"),
            "{url}: {}\n{}",
            text(&got),
            d.log()
        );
    }
}
