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
        .arg(format!("smtp://127.0.0.1:{}", d.listener_port("smtp")))
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
        &format!("pop3://127.0.0.1:{}/1", d.listener_port("pop3")),
        "N0OTH",
        "x",
    );
    let pop_text = text(&pop);
    assert!(pop.status.success(), "{pop_text}\n{}", d.log());
    assert!(pop_text.contains("Subject: Field day"), "{pop_text}");
    assert!(pop_text.contains("From: N0USR@N0CALL"), "{pop_text}");
    assert!(pop_text.contains("Meet at the club."), "{pop_text}");
    let imap = format!("imap://127.0.0.1:{}/INBOX;UID=1", d.listener_port("imap"));
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
    let nntp = d.listener_port("nntp");
    // Reading takes the BBS login, as LinBPQ's NNTP does.
    let anonymous = python(&format!(
        "import nntplib\n\
         s = nntplib.NNTP('127.0.0.1', {nntp})\n\
         s.group('wx.ww')\n"
    ));
    assert!(
        !anonymous.status.success() && text(&anonymous).contains("480"),
        "read without a login: {}",
        text(&anonymous)
    );
    let read = python(&format!(
        "import nntplib\n\
         s = nntplib.NNTP('127.0.0.1', {nntp}, user='N0OTH', password='x')\n\
         name = [g.group for g in s.list()[1] if 'wx' in g.group][0]\n\
         resp, count, first, last, name = s.group(name)\n\
         resp, overviews = s.over((last, last))\n\
         lines = overviews[0][1][':lines']\n\
         resp, info = s.article(str(last))\n\
         text = b'\\n'.join(info.lines).decode()\n\
         print(name, count, 'lines', lines, text)\n\
         s.quit()\n"
    ));
    let out = text(&read);
    assert!(read.status.success(), "{out}\n{}", d.log());
    assert!(out.starts_with("wx.ww 2 lines 1 "), "{out}");
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
    let (out, mbox) = fetchmail(
        &home,
        &format!(
            "poll 127.0.0.1 service {} protocol pop3 user \"N0OTH\" password \"x\" mda \"cat >> MBOX\" no keep sslproto \"\"\n",
            d.listener_port("pop3")
        ),
    );
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
        &format!("pop3://127.0.0.1:{}/1", b.listener_port("pop3")),
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
    let mut imap = common::Client::connect(d.listener_port("imap"));
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
        .arg(format!("smtp://127.0.0.1:{}", d.listener_port("smtp")))
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
        format!("pop3://127.0.0.1:{}/1", d.listener_port("pop3")),
        format!("imap://127.0.0.1:{}/INBOX;UID=1", d.listener_port("imap")),
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

/// Writes a fetchmail run control file `poll` in `home` (mode 0600, as fetchmail wants; `MBOX`
/// stands for the mbox) and runs fetchmail on it; its output and the mbox it delivered to.
fn fetchmail(home: &std::path::Path, poll: &str) -> (Output, std::path::PathBuf) {
    std::fs::create_dir_all(home).unwrap();
    let mbox = home.join("mbox");
    let rc = home.join("fetchmailrc");
    std::fs::write(&rc, poll.replace("MBOX", &mbox.display().to_string())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rc, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = run(Command::new("fetchmail")
        .args(["--nosyslog", "--nodetach", "-f"])
        .arg(&rc)
        .env("HOME", home)
        .env("FETCHMAILHOME", home));
    (out, mbox)
}

/// fetchmail reads any untagged IMAP line holding EXPUNGE, EXISTS or RECENT as that count:
/// the SELECT answer's texts must not hold them ("bogus EXPUNGE count", status 4, before).
#[test]
fn fetchmail_over_imap_fetches_the_inbox() {
    if !have("fetchmail") || !have("curl") {
        return;
    }
    let d = Daemon::start(MAIL);
    for subject in ["First by IMAP", "Second by IMAP"] {
        let mail = format!("Subject: {subject}\r\n\r\nbody of {subject}\r\n");
        let sent = curl_send(&d, "N0USR", "pw", "<n0oth@n0call>", &mail);
        assert!(sent.status.success(), "{}", text(&sent));
    }
    let home = d.dir.path().join("fetchimap");
    let (out, mbox) = fetchmail(
        &home,
        &format!(
            "poll 127.0.0.1 service {} protocol imap user \"N0OTH\" password \"x\" mda \"cat >> MBOX\" keep sslproto \"\"\n",
            d.listener_port("imap")
        ),
    );
    assert!(out.status.success(), "{}\n{}", text(&out), d.log());
    let got = std::fs::read_to_string(&mbox).unwrap_or_default();
    assert!(
        got.contains("Subject: First by IMAP") && got.contains("body of Second by IMAP"),
        "{got}"
    );
    // It read them: at the prompt they are read too.
    let mut t = d.login("N0OTH", "x");
    t.send("LM");
    let listed = t.expect("de N0CALL>");
    assert_eq!(listed.matches("PY").count(), 2, "{listed}");
}

/// A text file attached with mutt (lines ending in LF, as on the disk) comes back typed
/// `text/plain` with its name, and decodes to the file: its bytes, in MIME's canonical CR LF
/// form when it travelled as text, which a client turns back into its own line ends (as mutt
/// does). Before, it came back as `application/octet-stream` with CR LF added (591 -> 641).
#[test]
fn a_text_attachment_from_mutt_round_trips_byte_exact_as_text_plain() {
    if !have("mutt") || !have("python3") {
        return;
    }
    let d = Daemon::start(MAIL);
    let home = d.dir.path().join("mutthome");
    std::fs::create_dir_all(&home).unwrap();
    let file = home.join("notes.txt");
    // 591 bytes, as in the report, the last line cut short but ended.
    let lines: String = (0..45)
        .map(|i| format!("line {i:02} of the field day notes\n"))
        .collect();
    let content = format!("{}\n", &lines[..590]);
    std::fs::write(&file, &content).unwrap();
    let muttrc = home.join("muttrc");
    std::fs::write(
        &muttrc,
        format!(
            "set smtp_url = \"smtp://N0USR@127.0.0.1:{}/\"\nset smtp_pass = \"pw\"\n\
             set from = \"N0USR@N0CALL\"\nset use_from = yes\nset ssl_starttls = no\n\
             set ssl_force_tls = no\nset record = \"\"\nset copy = no\nset charset = \"utf-8\"\n",
            d.listener_port("smtp")
        ),
    )
    .unwrap();
    let body = home.join("body.txt");
    std::fs::write(&body, "The notes are attached.\n").unwrap();
    let sent = Command::new("mutt")
        .args(["-n", "-F"])
        .arg(&muttrc)
        .args(["-s", "Field day notes", "-a"])
        .arg(&file)
        .args(["--", "N0OTH@N0CALL"])
        .stdin(std::fs::File::open(&body).unwrap())
        .env("HOME", &home)
        .env("TERM", "dumb")
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}\n{}", text(&sent), d.log());
    let imap = d.listener_port("imap");
    let got = python(&format!(
        "import imaplib, email\n\
         i = imaplib.IMAP4('127.0.0.1', {imap})\n\
         i.login('N0OTH', 'x')\n\
         i.select('INBOX')\n\
         typ, data = i.uid('FETCH', '1', '(BODY.PEEK[])')\n\
         m = email.message_from_bytes(data[0][1])\n\
         part = [p for p in m.walk() if p.get_filename()][0]\n\
         raw = part.get_payload(decode=True)\n\
         open('{}', 'wb').write(raw.replace(b'\\r\\n', b'\\n'))\n\
         print(part.get_content_type(), part.get_filename(), len(raw))\n",
        home.join("fetched.txt").display()
    ));
    let out = text(&got);
    assert!(got.status.success(), "{out}\n{}", d.log());
    assert!(out.starts_with("text/plain notes.txt "), "{out}");
    let fetched = std::fs::read(home.join("fetched.txt")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&fetched),
        content,
        "{out}: the file as mutt had it"
    );
}

/// A text attachment sent base64 (as clients send a file they take for binary) keeps its
/// bytes exactly, LF line ends and all.
#[test]
fn a_base64_text_attachment_comes_back_with_its_exact_bytes() {
    if !have("curl") {
        return;
    }
    let d = Daemon::start(MAIL);
    let mail = "Subject: Log\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n\
--x\r\nContent-Type: text/plain\r\n\r\nsee the log\r\n\
--x\r\nContent-Type: text/plain; charset=us-ascii\r\nContent-Disposition: attachment; filename=\"a.log\"\r\n\
Content-Transfer-Encoding: base64\r\n\r\nb25lCnR3bwp0aHJlZQo=\r\n--x--\r\n";
    let sent = curl_send(&d, "N0USR", "pw", "<n0oth@n0call>", mail);
    assert!(sent.status.success(), "{}", text(&sent));
    let got = curl_get(
        &format!("imap://127.0.0.1:{}/INBOX;UID=1", d.listener_port("imap")),
        "N0OTH",
        "x",
    );
    let got = text(&got);
    assert!(
        got.contains("Content-Type: text/plain; charset=us-ascii; name=\"a.log\"\r\n"),
        "{got}"
    );
    assert!(got.contains("\r\n\r\nb25lCnR3bwp0aHJlZQo=\r\n"), "{got}");
}

/// Runs `script` with Python's smtplib against the daemon's SMTP port, logged in as N0USR.
fn smtp_script(d: &Daemon, script: &str) -> Output {
    python(&format!(
        "import smtplib\n\
         s = smtplib.SMTP('127.0.0.1', {})\n\
         s.login('N0USR', 'pw')\n\
         {script}",
        d.listener_port("smtp")
    ))
}

/// At the hourly limit a message to five is refused at the RCPT that passes it (452), then
/// whole at DATA: none of its copies is stored (before, the first were stored and the rest
/// refused, and a client sending it again duplicated them). Addresses the BBS cannot route are
/// refused at RCPT in the words of a BBS.
#[test]
fn smtp_stores_a_message_for_all_its_recipients_or_none() {
    if !have("python3") {
        return;
    }
    let d = Daemon::start(&format!("[limits]\nmessages_per_hour = 6\n{MAIL}"));
    let out = smtp_script(
        &d,
        "s.sendmail('n0usr@n0call', ['n0oth@n0call', 'n0sys@n0call'], 'Subject: two\\r\\n\\r\\nx\\r\\n')\n\
         code, why = s.rcpt('someone@gmail.com')\n\
         print(code, why.decode())\n\
         s.rset()\n\
         code, why = s.rcpt('g8bpq@gb7bpq.#23.gbr.euro')\n\
         print(code, why.decode())\n\
         s.rset()\n\
         five = ['n0oth@n0call', 'n0sys@n0call', 'n0usr@n0call', 'n0abc@n0call', 'n0xyz@n0call']\n\
         try:\n\
         \x20   s.sendmail('n0usr@n0call', five, 'Subject: five\\r\\n\\r\\nx\\r\\n')\n\
         \x20   print('sent')\n\
         except smtplib.SMTPException as e:\n\
         \x20   print('refused', e)\n",
    );
    let said = text(&out);
    assert!(out.status.success(), "{said}\n{}", d.log());
    assert!(
        said.contains("550 5.1.1 someone@gmail.com: no Internet gateway here"),
        "{said}"
    );
    assert!(
        said.contains("550 5.1.2 no route to GB7BPQ: it would wait here"),
        "{said}"
    );
    assert!(said.contains("refused") && said.contains("452"), "{said}");
    let stored = d.listed();
    assert_eq!(
        stored.len(),
        2,
        "only the first message's two copies: {stored:?}"
    );
    assert!(stored.iter().all(|m| m.subject == "two"), "{stored:?}");
}

/// Sends a message to N0OTH at the prompt of `t` (N0USR's); what the BBS answered.
fn prompt_send(t: &mut common::Client, subject: &str) -> String {
    t.send("SP N0OTH");
    t.expect("Subject:");
    t.send(subject);
    t.expect("/EX");
    t.send("Typed at the prompt.");
    t.send("/EX");
    t.expect("de N0CALL>")
}

/// Sends a message to N0OTH over SMTP as N0USR; "stored" or "refused" and why.
fn smtp_send_one(d: &Daemon, subject: &str) -> String {
    let out = smtp_script(
        d,
        &format!(
            "try:\n\
             \x20   s.sendmail('n0usr@n0call', ['n0oth@n0call'], 'Subject: {subject}\\r\\n\\r\\nx\\r\\n')\n\
             \x20   print('stored')\n\
             except smtplib.SMTPException as e:\n\
             \x20   print('refused', e)\n"
        ),
    );
    assert!(out.status.success(), "{}\n{}", text(&out), d.log());
    text(&out)
}

/// Posts a bulletin to wx.ww over NNTP as N0USR; the server's answer or "refused" and why.
fn nntp_post_one(d: &Daemon, subject: &str) -> String {
    let out = python(&format!(
        "import nntplib, io\n\
         s = nntplib.NNTP('127.0.0.1', {}, user='N0USR', password='pw')\n\
         try:\n\
         \x20   print(s.post(io.BytesIO(b'Newsgroups: wx.ww\\r\\nSubject: {subject}\\r\\n\\r\\nx\\r\\n')))\n\
         except nntplib.NNTPError as e:\n\
         \x20   print('refused', e)\n",
        d.listener_port("nntp")
    ));
    assert!(out.status.success(), "{}\n{}", text(&out), d.log());
    text(&out)
}

/// A message typed at the prompt, one sent by SMTP and one posted over NNTP go the one way a
/// user's message is stored (`submission`, as the web's compose page): the sysop's reject rule
/// refuses each alike, and they count against one hourly allowance, whatever door the next
/// comes by. (The room is measured again for each as well: store_quota.rs.)
#[test]
fn the_prompt_smtp_and_nntp_share_the_allowance_and_the_rules() {
    if !have("python3") {
        return;
    }
    let d = Daemon::start(&format!(
        "[limits]\nmessages_per_hour = 3\n{MAIL}\
         [[rule]]\naction = \"reject\"\nfield = \"subject\"\npattern = \"*contest*\"\n"
    ));
    let mut t = d.login("N0USR", "pw");
    let said = prompt_send(&mut t, "contest results");
    assert!(said.contains("does not accept that message"), "{said}");
    let said = smtp_send_one(&d, "contest results");
    assert!(said.contains("refused") && said.contains("554"), "{said}");
    let said = nntp_post_one(&d, "contest results");
    assert!(said.contains("441 this BBS does not accept"), "{said}");
    // Refusals count for nothing: three go, one by each door.
    assert!(prompt_send(&mut t, "one").contains("stored"));
    assert!(smtp_send_one(&d, "two").starts_with("stored"));
    let said = nntp_post_one(&d, "three");
    assert!(said.contains("240 "), "{said}\n{}", d.log());
    // The fourth, by any door, is over the one allowance.
    let over = "You have sent 3 messages this hour";
    let said = prompt_send(&mut t, "four");
    assert!(said.contains(over), "{said}");
    let said = smtp_send_one(&d, "four");
    assert!(said.contains("452") && said.contains(over), "{said}");
    let said = nntp_post_one(&d, "four");
    assert!(said.contains("441") && said.contains(over), "{said}");
    let mut subjects: Vec<String> = d.listed().into_iter().map(|m| m.subject).collect();
    subjects.sort();
    assert_eq!(subjects, ["one", "three", "two"]);
}

/// Killed while clients submit three-recipient messages, the daemon comes back with each
/// message stored for all three or for none (before, each copy was its own transaction).
#[test]
fn a_sigkill_during_submission_never_leaves_a_message_for_some_recipients() {
    if !have("python3") {
        return;
    }
    let mut d = Daemon::start(&format!("[limits]\nmessages_per_hour = 0\n{MAIL}"));
    for round in 0..3 {
        let smtp = d.listener_port("smtp");
        let sender = Command::new("python3")
            .args(["-c", &format!(
                "import smtplib\n\
                 s = smtplib.SMTP('127.0.0.1', {smtp})\n\
                 s.login('N0USR', 'pw')\n\
                 for i in range(100000):\n\
                 \x20   s.sendmail('n0usr@n0call', ['n0oth@n0call', 'n0sys@n0call', 'n0abc@n0call'], \
                 'Subject: r{round} m%d\\r\\n\\r\\nx\\r\\n' % i)\n"
            )])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Killed in the middle of the stream, at a copy's log line.
        d.wait_for_log_count("mail client: message stored", 3 * (round + 1) * 4 + 1);
        d = d.sigkill_restart();
        let mut sender = sender;
        let _ = sender.kill();
        let _ = sender.wait();
    }
    let mut copies = std::collections::BTreeMap::<String, usize>::new();
    for m in d.listed() {
        *copies.entry(m.subject).or_default() += 1;
    }
    assert!(!copies.is_empty());
    let partial: Vec<_> = copies.iter().filter(|(_, n)| **n != 3).collect();
    assert!(
        partial.is_empty(),
        "stored for only some recipients: {partial:?}"
    );
}

/// A reply keeps the ids it answers (mutt and Thunderbird thread by them), and `\Answered`
/// set by one session is there for the next.
#[test]
fn replies_thread_and_answered_is_kept() {
    if !have("curl") || !have("python3") {
        return;
    }
    let d = Daemon::start(MAIL);
    let sent = curl_send(
        &d,
        "N0USR",
        "pw",
        "<n0oth@n0call>",
        "Subject: Q\r\n\r\nask\r\n",
    );
    assert!(sent.status.success(), "{}", text(&sent));
    let reply = "Subject: Re: Q\r\nIn-Reply-To: <1_N0CALL@N0CALL>\r\nReferences: <1_N0CALL@N0CALL>\r\n\r\nanswer\r\n";
    let sent = curl_send(&d, "N0OTH", "x", "<n0usr@n0call>", reply);
    assert!(sent.status.success(), "{}", text(&sent));
    let imap = d.listener_port("imap");
    let script = |user: &str, pw: &str, body: &str| {
        python(&format!(
            "import imaplib\n\
             i = imaplib.IMAP4('127.0.0.1', {imap})\n\
             i.login('{user}', '{pw}')\n\
             i.select('INBOX')\n\
             {body}"
        ))
    };
    let got = script(
        "N0USR",
        "pw",
        "print(i.uid('FETCH', '2', '(ENVELOPE BODY.PEEK[HEADER.FIELDS (IN-REPLY-TO REFERENCES)])'))\n",
    );
    let said = text(&got);
    assert!(
        said.contains("\"<1_N0CALL@N0CALL>\" \"<2_N0CALL@N0CALL>\""),
        "{said}"
    );
    assert!(said.contains("References: <1_N0CALL@N0CALL>"), "{said}");
    let set = script(
        "N0OTH",
        "x",
        "print(i.uid('STORE', '1', '+FLAGS', '(\\\\Answered)'))\n",
    );
    assert!(set.status.success(), "{}", text(&set));
    let again = script("N0OTH", "x", "print(i.uid('FETCH', '1', '(FLAGS)'))\n");
    assert!(text(&again).contains("\\\\Answered"), "{}", text(&again));
}

/// An IMAP command over the socket, its literal sent once the daemon says go ahead.
fn imap_append(imap: &mut common::Client, tag: &str, folder: &str, msg: &str) -> String {
    imap.send(&format!("{tag} APPEND {folder} (\\Seen) {{{}}}", msg.len()));
    imap.expect("+ go ahead");
    imap.send_raw(msg.as_bytes());
    imap.send("");
    imap.expect("APPEND completed")
}

/// Issue 37's bar over the socket: `CREATE Sent` + `APPEND` + `SELECT Sent` show the message,
/// Drafts and Trash can be made, a client in IDLE on Sent hears of a copy kept by another of
/// the user's sessions; another user's new WX bulletin is in `Bulletins/WX`, and reading it
/// there takes it out of the reader's `LN`. The copy in Sent is never a BBS message.
#[test]
fn imap_folders_keep_the_users_copies_and_a_bulletin_read_there_leaves_ln() {
    let d = Daemon::start(MAIL);
    let mut imap = common::Client::connect(d.listener_port("imap"));
    imap.expect("IMAP4rev1");
    imap.send("a LOGIN N0OTH x");
    imap.expect("a OK");
    for (tag, name) in [("b", "Sent"), ("c", "Drafts"), ("d", "Trash")] {
        imap.send(&format!("{tag} CREATE {name}"));
        imap.expect(&format!("{tag} OK CREATE completed"));
    }
    let sent = "From: N0OTH@N0CALL\r\nTo: N0USR@N0CALL\r\nSubject: Kept copy\r\n\r\nHello\r\n";
    let appended = imap_append(&mut imap, "e", "Sent", sent);
    assert!(appended.contains("e OK [APPENDUID 1 1]"), "{appended}");
    imap.send("f SELECT Sent");
    assert!(imap.expect("f OK").contains("* 1 EXISTS"));
    imap.send("g FETCH 1 BODY.PEEK[]");
    assert!(imap.expect("g OK").contains("Subject: Kept copy"));
    imap.send("h LIST \"\" *");
    let list = imap.expect("h OK");
    assert!(
        list.contains("(\\HasNoChildren \\Sent) \"/\" \"Sent\""),
        "{list}"
    );
    assert!(
        list.contains("\\Drafts") && list.contains("\\Trash"),
        "{list}"
    );
    // A second session of the same user keeps a copy: the one idling on Sent hears of it.
    imap.send("i IDLE");
    imap.expect("+ idling");
    let mut other = common::Client::connect(d.listener_port("imap"));
    other.expect("IMAP4rev1");
    other.send("a LOGIN N0OTH x");
    other.expect("a OK");
    imap_append(&mut other, "b", "Sent", sent);
    imap.expect("* 2 EXISTS");
    imap.send("DONE");
    imap.expect("i OK IDLE terminated");
    // Nobody else sees the copies, at the prompt or anywhere.
    let mut t = d.login("N0USR", "pw");
    t.send("L");
    assert!(!t.expect("de N0CALL>").contains("Kept copy"));
    t.send("SB WX @ WW");
    t.expect("Subject:");
    t.send("Gale warning");
    t.expect("/EX");
    t.send("Force 9 tonight");
    t.send("/EX");
    t.expect("de N0CALL>");
    let mut reader = d.login("N0OTH", "x");
    reader.send("LN");
    assert!(reader.expect("de N0CALL>").contains("Gale warning"));
    imap.send("j LIST \"\" Bulletins/*");
    assert!(imap.expect("j OK").contains("\"Bulletins/WX\""));
    imap.send("k SELECT Bulletins/WX");
    assert!(imap.expect("k OK [READ-WRITE]").contains("* 1 EXISTS"));
    imap.send("l FETCH 1 (FLAGS BODY[])");
    let read = imap.expect("l OK");
    assert!(
        read.contains("Force 9 tonight") && read.contains("\\Seen"),
        "{read}"
    );
    reader.send("LN");
    let ln = reader.expect("de N0CALL>");
    assert!(
        !ln.contains("Gale warning"),
        "read over IMAP, gone from LN: {ln}"
    );
    imap.send("m STORE 1 +FLAGS (\\Deleted)");
    imap.expect("m NO [CANNOT]");
    reader.send("L");
    assert!(
        reader.expect("de N0CALL>").contains("Gale warning"),
        "still there"
    );
}

/// mutt keeps a copy of what it sends in the IMAP folder Sent (`record`), making the folder
/// as it goes (`confirmcreate = no`): the copy is there, as mutt wrote it, and the message
/// went to its addressee once.
#[test]
fn mutt_keeps_its_fcc_in_the_imap_sent_folder() {
    if !have("mutt") {
        return;
    }
    let d = Daemon::start(MAIL);
    let home = d.dir.path().join("mutthome");
    std::fs::create_dir_all(&home).unwrap();
    let muttrc = home.join("muttrc");
    std::fs::write(
        &muttrc,
        format!(
            "set smtp_url = \"smtp://N0OTH@127.0.0.1:{}/\"\nset smtp_pass = \"x\"\n\
             set folder = \"imap://N0OTH@127.0.0.1:{}/\"\nset imap_pass = \"x\"\n\
             set record = \"+Sent\"\nset copy = yes\nset confirmcreate = no\n\
             set from = \"N0OTH@N0CALL\"\nset use_from = yes\nset ssl_starttls = no\n\
             set ssl_force_tls = no\nset charset = \"utf-8\"\n",
            d.listener_port("smtp"),
            d.listener_port("imap")
        ),
    )
    .unwrap();
    let body = home.join("body.txt");
    std::fs::write(&body, "See you on the air.\n").unwrap();
    let sent = Command::new("mutt")
        .args(["-n", "-F"])
        .arg(&muttrc)
        .args(["-s", "Sked tonight", "--", "N0USR@N0CALL"])
        .stdin(std::fs::File::open(&body).unwrap())
        .env("HOME", &home)
        .env("TERM", "dumb")
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}\n{}", text(&sent), d.log());
    let mut imap = common::Client::connect(d.listener_port("imap"));
    imap.expect("IMAP4rev1");
    imap.send("a LOGIN N0OTH x");
    imap.expect("a OK");
    imap.send("b SELECT Sent");
    let sel = imap.expect("b OK");
    assert!(sel.contains("* 1 EXISTS"), "{sel}\n{}", d.log());
    imap.send("c FETCH 1 BODY.PEEK[]");
    let copy = imap.expect("c OK");
    assert!(copy.contains("Subject: Sked tonight") && copy.contains("See you on the air."));
    let mut t = d.login("N0USR", "pw");
    t.send("L");
    let listed = t.expect("de N0CALL>");
    assert_eq!(listed.matches("Sked tonight").count(), 1, "{listed}");
}
