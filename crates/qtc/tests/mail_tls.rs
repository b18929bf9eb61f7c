//! TLS out of the box for users' own clients (issue 37): a station set up as a sysop would,
//! with `qtc init` (which makes the certificate) and the `[mail]` keys docs/mail-clients.md
//! gives, then the real clients driven with the files that page shows: mutt and neomutt with
//! their defaults (which force TLS) over IMAPS/SMTPS and STARTTLS, fetchmail over POP3S and
//! STLS, curl on each implicit-TLS port, slrn over NNTPS, Python's nntplib over NNTPS and
//! STARTTLS, and Claws Mail under Xvfb over IMAPS/SMTPS and STARTTLS. Each client trusts the
//! certificate file `qtc init` made, as the page tells users to. The files are read out of
//! the page (`<!-- file: NAME -->` before a fenced block); the test replaces only the host and
//! ports (`bbs.example.org:993` becomes the daemon's `localhost:PORT`, Claws's
//! `imap_port=993` its port) and the home directory. Then the sysop's warning and the client's
//! refusal on a plain listener nobody elsewhere could log in on, from a real other address.
#![allow(clippy::disallowed_methods)]

mod common;

use std::net::{Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use common::netns::Netns;
use common::programs::{have, python, text};
use common::tls::{read_until, tls_client};
use common::{Client, Daemon, PATIENCE};
use tokio::io::AsyncWriteExt;

/// The page the files come from.
const DOC: &str = include_str!("../../../docs/mail-clients.md");

/// The documented port of each mail listener (the start-up report's names).
const PORTS: [(u16, &str); 8] = [
    (587, "smtp"),
    (465, "smtps"),
    (110, "pop3"),
    (995, "pop3s"),
    (143, "imap"),
    (993, "imaps"),
    (119, "nntp"),
    (563, "nntps"),
];

/// The file docs/mail-clients.md shows after `<!-- file: NAME -->`, as it is.
fn doc_file(name: &str) -> String {
    let marker = format!("<!-- file: {name} -->\n");
    let at = DOC
        .find(&marker)
        .unwrap_or_else(|| panic!("docs/mail-clients.md has no file {name:?}"));
    let block = DOC[at + marker.len()..]
        .strip_prefix("```")
        .unwrap_or_else(|| panic!("{name:?}: no fenced block after its marker"));
    let body = &block[block.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].to_string()
}

/// `qtc init`'s config with the docs' `[mail]` keys written in, as a sysop does it: each key's
/// line (commented out in the example, or set) replaced by the docs' line.
fn with_docs_mail_keys(init: &str) -> String {
    let mail = init.find("\n[mail]\n").expect("the example has [mail]") + 1;
    let end = init[mail + 1..]
        .find("\n[")
        .map_or(init.len(), |e| mail + 2 + e);
    let mut section: Vec<String> = init[mail..end].lines().map(String::from).collect();
    for line in doc_file("qtc.toml [mail]").lines().skip(1) {
        let key = line.split(" = ").next().unwrap();
        let at = section
            .iter()
            .position(|l| {
                l.starts_with(&format!("{key} = ")) || l.starts_with(&format!("# {key} = "))
            })
            .unwrap_or_else(|| panic!("the example's [mail] has no {key}"));
        section[at] = line.to_string();
    }
    format!("{}{}\n{}", &init[..mail], section.join("\n"), &init[end..])
}

/// A station as the docs set it up, and what its sysop was told.
struct Station {
    d: Daemon,
    /// What `qtc init` printed.
    init: String,
    /// What `qtc check` printed on the docs' config.
    check: String,
    /// The certificate `qtc init` made.
    cert: PathBuf,
}

impl Station {
    /// `qtc init`, the docs' `[mail]` keys, `qtc check`; then the daemon on free loopback
    /// ports, with N0USR (the docs' user, password "secret") and N0OTH.
    fn start() -> Station {
        let dir = tempfile::tempdir().unwrap();
        let config = common::config_path(dir.path());
        let out = common::qtc().arg("init").arg(&config).output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let init = text(&out);
        let written = std::fs::read_to_string(&config).unwrap();
        std::fs::write(&config, with_docs_mail_keys(&written)).unwrap();
        let out = common::cli(dir.path(), &["check"], "");
        assert!(out.status.success(), "{}", text(&out));
        let check = text(&out);
        // Free ports on loopback for the test; everything else as the sysop has it.
        let local = std::fs::read_to_string(&config)
            .unwrap()
            .replace("0.0.0.0:", "127.0.0.1:")
            .replace("127.0.0.1:6300", "127.0.0.1:0");
        let local = PORTS.iter().fold(local, |t, (p, _)| {
            t.replace(&format!("127.0.0.1:{p}\""), "127.0.0.1:0\"")
        });
        std::fs::write(&config, local).unwrap();
        for (call, pw) in [("N0USR", "secret"), ("N0OTH", "x")] {
            let out = common::cli(dir.path(), &["user", "add", call, "--password", pw], "");
            assert!(out.status.success(), "{}", text(&out));
        }
        let cert = dir.path().join("qtc-cert.pem");
        Station {
            d: Daemon::start_in(dir),
            init,
            check,
            cert,
        }
    }

    /// N0OTH sends a one-line message at the telnet prompt (`command` is `SP CALL` or `SB ...`);
    /// the session is left at the next prompt.
    fn post(&self, command: &str, subject: &str, line: &str) -> Client {
        let mut t = self.d.login("N0OTH", "x");
        t.send(command);
        t.expect("Subject:");
        t.send(subject);
        t.expect("/EX");
        t.send(line);
        t.send("/EX");
        t.expect("de N0CALL>");
        t
    }

    /// A docs file with the host and ports made this daemon's: `bbs.example.org:993` (or
    /// fetchmail's `bbs.example.org service 993`) becomes `localhost` and the port `imaps`
    /// listens on.
    fn localized(&self, file: &str) -> String {
        let mut t = doc_file(file);
        for (documented, name) in PORTS {
            let port = self.d.listener_port(name);
            for (from, to) in [
                (
                    format!("bbs.example.org:{documented}"),
                    format!("localhost:{port}"),
                ),
                (
                    format!("bbs.example.org service {documented}"),
                    format!("localhost service {port}"),
                ),
                // Claws Mail's accountrc and the names of its accepted certificates.
                (format!("_port={documented}\n"), format!("_port={port}\n")),
                (
                    format!("bbs.example.org.{documented}.cert"),
                    format!("localhost.{port}.cert"),
                ),
            ] {
                t = t.replace(&from, &to);
            }
        }
        let t = t.replace("_server=bbs.example.org\n", "_server=localhost\n");
        assert!(!t.contains("bbs.example.org:"), "a port left unmapped: {t}");
        t
    }

    /// A user's home directory holding the BBS's certificate where the docs put it.
    fn home(&self, name: &str) -> PathBuf {
        let home = self.d.dir.path().join(name);
        std::fs::create_dir_all(home.join(".mutt")).unwrap();
        std::fs::copy(&self.cert, home.join(".mutt/bbs-cert.pem")).unwrap();
        std::fs::copy(&self.cert, home.join("bbs-cert.pem")).unwrap();
        home
    }

    /// The log lines of TLS sessions started on the listener named `name`.
    fn tls_started(&self, name: &str) -> usize {
        let tag = format!("proto=\"{name}\"");
        self.d
            .log()
            .lines()
            .filter(|l| l.contains(&tag) && l.contains("TLS started"))
            .count()
    }
}

/// The fingerprint on the `tls:` line of a report.
fn fingerprint(report: &str) -> &str {
    report
        .lines()
        .find_map(|l| l.split_once("SHA-256 fingerprint ").map(|(_, f)| f.trim()))
        .unwrap_or_else(|| panic!("no fingerprint in {report}"))
}

#[test]
fn init_and_the_docs_mail_keys_name_every_listener_and_imap_logs_in_over_tls_and_starttls() {
    use std::os::unix::fs::PermissionsExt;
    let s = Station::start();
    // `qtc check` names every mail listener as the docs configure it, and the certificate
    // `qtc init` made, by the fingerprint init printed; nothing is left without a way in.
    for (port, name) in PORTS {
        let line = format!("{name}: would listen on 0.0.0.0:{port}\n");
        assert!(s.check.contains(&line), "{line:?} not in:\n{}", s.check);
    }
    assert_eq!(fingerprint(&s.check), fingerprint(&s.init));
    assert!(!s.check.contains("warning:"), "{}", s.check);
    // The start-up report says it too.
    assert_eq!(fingerprint(&s.d.stdout.join("\n")), fingerprint(&s.init));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = s.d.dir.path();
    assert_eq!(mode(&dir.join("qtc-key.pem")), 0o600);
    assert_eq!(mode(&common::config_path(dir)), 0o600);

    // IMAP over implicit TLS and over STARTTLS, with a client that trusts exactly that
    // certificate and checks the name.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let name = || rustls_pki_types::ServerName::try_from("localhost").unwrap();
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(("localhost", s.d.listener_port("imaps")))
            .await
            .unwrap();
        let mut imaps = tls_client(&s.cert).connect(name(), tcp).await.unwrap();
        read_until(&mut imaps, "* OK").await;
        imaps.write_all(b"a LOGIN N0USR secret\r\n").await.unwrap();
        read_until(&mut imaps, "a OK").await;

        let mut tcp = tokio::net::TcpStream::connect(("localhost", s.d.listener_port("imap")))
            .await
            .unwrap();
        let caps = read_until(&mut tcp, "\r\n").await;
        assert!(caps.contains("STARTTLS"), "{caps}");
        tcp.write_all(b"a STARTTLS\r\n").await.unwrap();
        read_until(&mut tcp, "a OK").await;
        let mut tls = tls_client(&s.cert).connect(name(), tcp).await.unwrap();
        tls.write_all(b"b LOGIN N0USR secret\r\n").await.unwrap();
        read_until(&mut tls, "b OK").await;
    });
    assert_eq!((s.tls_started("imaps"), s.tls_started("imap")), (1, 1));
}

/// Runs `program` (mutt or neomutt) on a terminal (`script` gives it one) with `rc`, pushing
/// `keys`; its compiled-in defaults, not the system's Muttrc (`-n`).
fn mutt_on_a_terminal(program: &str, home: &Path, rc: &Path, keys: &str) -> Output {
    let cmd = format!("{program} -n -F {} -e 'push \"{keys}\"'", rc.display());
    Command::new("timeout")
        .args(["60", "script", "-qec", &cmd, "/dev/null"])
        .env("HOME", home)
        .env("TERM", "vt100")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn mutt_and_neomutt_read_and_send_over_tls_and_starttls_with_the_docs_muttrc() {
    if !have("mutt") || !have("neomutt") || !have("script") {
        return;
    }
    let s = Station::start();
    for program in ["mutt", "neomutt"] {
        for (file, imap, smtp) in [
            ("muttrc", "imaps", "smtps"),
            ("muttrc STARTTLS", "imap", "smtp"),
        ] {
            let home = s.home(&format!("{program}-{imap}"));
            let rc = home.join("muttrc");
            std::fs::write(&rc, s.localized(file)).unwrap();
            let before = (s.tls_started(imap), s.tls_started(smtp));
            // Send: mutt's batch mode, over SMTP submission.
            let subject = format!("{program} over {smtp}");
            let sent = Command::new(program)
                .args(["-n", "-F"])
                .arg(&rc)
                .args(["-s", &subject, "N0USR@bbs.example.org"])
                .env("HOME", &home)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .and_then(|mut c| {
                    std::io::Write::write_all(c.stdin.as_mut().unwrap(), b"Sent with TLS.\n")?;
                    c.wait_with_output()
                })
                .unwrap();
            assert!(
                sent.status.success(),
                "{file}: {}\n{}",
                text(&sent),
                s.d.log()
            );
            // Read: the newest message of the INBOX piped to a file.
            let got = home.join("got.txt");
            let keys = format!(
                "<last-entry><pipe-entry>cat > {}<enter><quit>",
                got.display()
            );
            let read = mutt_on_a_terminal(program, &home, &rc, &keys);
            let message = std::fs::read_to_string(&got).unwrap_or_default();
            assert!(
                message.contains(&format!("Subject: {subject}"))
                    && message.contains("Sent with TLS."),
                "{program} {file}: {message}\n{}\n{}",
                text(&read),
                s.d.log()
            );
            // Both went over TLS: at connect or after STARTTLS.
            assert!(
                s.tls_started(imap) > before.0,
                "{program} {file}: {}",
                s.d.log()
            );
            assert!(
                s.tls_started(smtp) > before.1,
                "{program} {file}: {}",
                s.d.log()
            );
        }
    }
}

/// A forwarded message (message/rfc822, with its own PDF) after a text and HTML body.
const NESTED: &str = "From: N0OTH@bbs.example.org\r\nSubject: Fwd: net report\r\n\
MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n\
--outer\r\nContent-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n\
--alt\r\nContent-Type: text/plain\r\n\r\nSee below.\r\n\
--alt\r\nContent-Type: text/html\r\n\r\n<p>See below.</p>\r\n--alt--\r\n\
--outer\r\nContent-Type: message/rfc822\r\n\r\n\
From: G8BPQ@GB7BPQ\r\nSubject: Net report\r\n\
Content-Type: multipart/mixed; boundary=\"inner\"\r\n\r\n\
--inner\r\nContent-Type: text/plain\r\n\r\nTwelve stations.\r\n\
--inner\r\nContent-Type: application/pdf; name=\"net.pdf\"\r\n\
Content-Transfer-Encoding: base64\r\n\r\nJVBERi0=\r\n--inner--\r\n\
--outer--\r\n";

/// A message with nested MIME kept in a folder: the server's BODYSTRUCTURE shows its tree,
/// and mutt (which reads the MIME of what it fetches itself) lists the forwarded message's
/// PDF among the attachments and saves it as it was.
#[test]
fn mutt_saves_the_pdf_of_a_forwarded_message_kept_in_a_folder() {
    if !have("mutt") || !have("script") {
        return;
    }
    let s = Station::start();
    let append = format!("APPEND Fwd {{{}+}}\r\n{NESTED}", NESTED.len());
    let answers = imap_asks(
        &s,
        &["CREATE Fwd", &append, "SELECT Fwd", "FETCH 1 BODYSTRUCTURE"],
    );
    assert!(answers[1].contains("OK [APPENDUID"), "{answers:?}");
    // The server's structure is nested the same way (what clients that fetch parts read).
    let st = &answers[3];
    assert!(
        st.contains("\"TEXT\" \"HTML\"")
            && st.contains("\"ALTERNATIVE\"")
            && st.contains("\"RFC822\""),
        "{st}"
    );
    let home = s.home("mutt-nested");
    let rc = home.join("muttrc");
    std::fs::write(&rc, s.localized("muttrc")).unwrap();
    // In mutt's list of the message's attachments, the forwarded message's PDF, saved.
    let saved = home.join("net.pdf");
    let keys = format!(
        "<change-folder>+Fwd<enter><view-attachments><search>net.pdf<enter>\
         <save-entry><kill-line>{}<enter><exit><quit>",
        saved.display()
    );
    let out = mutt_on_a_terminal("mutt", &home, &rc, &keys);
    assert_eq!(
        std::fs::read(&saved).unwrap_or_default(),
        b"%PDF-",
        "{}\n{answers:?}",
        text(&out)
    );
}

#[test]
fn fetchmail_collects_over_pop3s_stls_and_imaps_with_the_docs_fetchmailrc() {
    if !have("fetchmail") {
        return;
    }
    let s = Station::start();
    let _t = s.post("SP N0USR", "Fetch me", "over TLS");
    for (file, name, said) in [
        ("fetchmailrc", "pop3s", "SSL/TLS: using protocol"),
        ("fetchmailrc STLS", "pop3", "upgrade to TLS succeeded"),
        // With IMAP it fetches the INBOX too (--all: the POP3 runs marked the message read).
        ("fetchmailrc IMAPS", "imaps", "SSL/TLS: using protocol"),
    ] {
        let home = s.home(name);
        let rc = home.join("fetchmailrc");
        let text_of_rc = s
            .localized(file)
            .replace("/home/n0usr", &home.display().to_string());
        std::fs::write(&rc, text_of_rc).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&rc, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mbox = home.join("mbox");
        // Delivered into a file instead of the local mail system; kept on the BBS.
        let out = Command::new("fetchmail")
            .args(["--nosyslog", "--nodetach", "-v", "--all", "--keep", "--mda"])
            .arg(format!("cat >> {}", mbox.display()))
            .arg("-f")
            .arg(&rc)
            .env("HOME", &home)
            .env("FETCHMAILHOME", &home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let out = text(&out);
        let got = std::fs::read_to_string(&mbox).unwrap_or_default();
        assert!(
            got.contains("Subject: Fetch me") && out.contains(said),
            "{file}: {got}\n{out}\n{}",
            s.d.log()
        );
        assert_eq!(s.tls_started(name), 1, "{}", s.d.log());
    }
}

fn curl(args: &[&str]) -> Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "20"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn curl_checks_each_implicit_tls_port_against_the_certificate() {
    if !have("curl") {
        return;
    }
    let s = Station::start();
    let ca = s.cert.display().to_string();
    let url =
        |name: &str, path: &str| format!("{name}://localhost:{}{path}", s.d.listener_port(name));
    let mail = s.d.dir.path().join("msg.txt");
    std::fs::write(&mail, "Subject: Over SMTPS\r\n\r\nchecked by curl\r\n").unwrap();
    let sent = curl(&[
        "--cacert",
        &ca,
        "-u",
        "N0USR:secret",
        "--mail-rcpt",
        "n0oth@bbs.example.org",
        "-T",
        &mail.display().to_string(),
        &url("smtps", ""),
    ]);
    assert!(sent.status.success(), "{}\n{}", text(&sent), s.d.log());
    for got in [
        curl(&["--cacert", &ca, "-u", "N0OTH:x", &url("pop3s", "/1")]),
        curl(&[
            "--cacert",
            &ca,
            "-u",
            "N0OTH:x",
            &url("imaps", "/INBOX;UID=1"),
        ]),
    ] {
        assert!(
            text(&got).contains("checked by curl"),
            "{}\n{}",
            text(&got),
            s.d.log()
        );
    }
    // Another certificate is not this one: curl refuses before any password is sent.
    let other = s.d.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let (stranger, _) = common::tls::self_signed(&other, "stranger");
    let refused = curl(&[
        "--cacert",
        &stranger,
        "-u",
        "N0OTH:x",
        &url("imaps", "/INBOX"),
    ]);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert_eq!(
        (
            s.tls_started("smtps"),
            s.tls_started("pop3s"),
            s.tls_started("imaps")
        ),
        (1, 1, 1),
        "{}",
        s.d.log()
    );
}

#[test]
fn news_over_nntps_and_starttls_with_nntplib_and_slrn() {
    if !have("python3") || !have("slrn") || !have("script") {
        return;
    }
    let s = Station::start();
    let mut t = s.post("SB WX @ WW", "Storm warning", "Gale tonight.");
    let (cert, nntps, nntp) = (
        s.cert.display(),
        s.d.listener_port("nntps"),
        s.d.listener_port("nntp"),
    );
    // nntplib checks the certificate (and the name) with a context trusting the file; reading
    // takes the login (no `news_without_login` in the docs' keys).
    let script = format!(
        "import nntplib, ssl, io\n\
         ctx = ssl.create_default_context(cafile='{cert}')\n\
         s = nntplib.NNTP_SSL('localhost', {nntps}, ssl_context=ctx)\n\
         s.login('N0USR', 'secret')\n\
         resp, count, first, last, name = s.group('wx.ww')\n\
         resp, info = s.article(str(last))\n\
         print(b'\\n'.join(info.lines).decode())\n\
         s.post(io.BytesIO(b'Newsgroups: wx.ww\\r\\nSubject: Over NNTPS\\r\\n\\r\\nposted\\r\\n'))\n\
         s.quit()\n\
         p = nntplib.NNTP('localhost', {nntp})\n\
         p.starttls(ctx)\n\
         p.login('N0USR', 'secret')\n\
         p.post(io.BytesIO(b'Newsgroups: wx.ww\\r\\nSubject: After STARTTLS\\r\\n\\r\\nposted\\r\\n'))\n\
         p.quit()\n"
    );
    let out = python(&script);
    assert!(
        out.status.success() && text(&out).contains("Gale tonight."),
        "{}\n{}",
        text(&out),
        s.d.log()
    );
    t.send("LB");
    let listed = t.expect("de N0CALL>");
    assert!(
        listed.contains("Over NNTPS") && listed.contains("After STARTTLS"),
        "{listed}"
    );
    assert_eq!((s.tls_started("nntps"), s.tls_started("nntp")), (1, 1));

    // slrn with the docs' .slrnrc, over NNTPS: it lists the groups into its newsrc, then
    // saves it and quits as group mode starts (a hook the test adds: slrn has no batch mode).
    let home = s.home("slrn");
    let hook = home.join("quit.sl");
    let quit = "define group_mode_startup_hook () { call (\"save_newsrc\"); quit (0); }\n";
    std::fs::write(&hook, quit).unwrap();
    let rc = format!(
        "{}interpret \"{}\"\n",
        s.localized("slrnrc"),
        hook.display()
    );
    std::fs::write(home.join(".slrnrc"), rc).unwrap();
    let server = format!("snews://localhost:{nntps}");
    let out = Command::new("timeout")
        .args([
            "60",
            "script",
            "-qec",
            &format!("slrn -h {server} --create"),
            "/dev/null",
        ])
        .env("HOME", &home)
        .env("TERM", "vt100")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let newsrc = std::fs::read_to_string(home.join(".jnewsrc-bbs")).unwrap_or_default();
    assert!(
        newsrc.contains("wx.ww"),
        "{newsrc}\n{}\n{}",
        text(&out),
        s.d.log()
    );
    assert_eq!(s.tls_started("nntps"), 2, "{}", s.d.log());
}

/// Claws Mail on a virtual display, in a home directory holding the docs' files. Its output
/// (`--debug`, which carries its network log) goes to a file the test waits on.
struct Claws {
    child: Child,
    home: PathBuf,
    display: String,
}

impl Claws {
    /// Starts Claws and returns when its start-up is over (it has made its folders).
    fn start(home: &Path, display: &str) -> Claws {
        let log = std::fs::File::create(home.join("claws.log")).unwrap();
        let mut cmd = Command::new("claws-mail");
        cmd.arg("--debug")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let claws = Claws {
            child: Claws::env(&mut cmd, home, display).spawn().unwrap(),
            home: home.to_path_buf(),
            display: display.to_string(),
        };
        claws.wait_for("TIMING main startup", 1);
        claws
    }

    /// The environment of a Claws in `home`: its own control socket (under the cache
    /// directory), the display, no desktop bus.
    fn env<'c>(cmd: &'c mut Command, home: &Path, display: &str) -> &'c mut Command {
        cmd.env("HOME", home)
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("DISPLAY", display)
            .env("NO_AT_BRIDGE", "1")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.home.join("claws.log")).unwrap_or_default()
    }

    /// Waits until Claws's output has said `what` `n` times, woken by each write.
    fn wait_for(&self, what: &str, n: usize) {
        let said = || self.log().matches(what).count() >= n;
        assert!(
            common::watch::until_file(&self.home.join("claws.log"), PATIENCE, said),
            "Claws never said {what:?} {n} times:\n{}",
            self.log()
        );
    }

    /// Hands a command to the running Claws (`--receive-all`, `--select`...): a second
    /// `claws-mail` passes it on over the control socket and exits.
    fn remote(&self, args: &[&str]) {
        let mut cmd = Command::new("claws-mail");
        cmd.args(args).stdin(Stdio::null());
        let out = Claws::env(&mut cmd, &self.home, &self.display)
            .output()
            .unwrap();
        assert!(out.status.success(), "claws-mail {args:?}: {}", text(&out));
    }

    /// The files Claws keeps of the IMAP folder `folder` (its cache: a file per message,
    /// named by its UID).
    fn cached(&self, folder: &str) -> PathBuf {
        self.home
            .join(".claws-mail/imapcache/localhost/N0USR")
            .join(folder)
    }
}

impl Drop for Claws {
    fn drop(&mut self) {
        // It is ours (by its pid): stop it even when the test failed half-way.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An IMAP session on the plain port from loopback (where the password is taken), asking
/// `commands` (tagged `a1`, `a2`...) and returning what each answered.
fn imap_asks(s: &Station, commands: &[&str]) -> Vec<String> {
    let mut c = Client::connect(s.d.listener_port("imap"));
    c.expect("* OK");
    c.send("a0 LOGIN N0USR secret");
    c.expect("a0 OK");
    let answers = commands
        .iter()
        .enumerate()
        .map(|(i, command)| {
            c.send(&format!("a{} {command}", i + 1));
            c.expect(&format!("a{} ", i + 1)) + &c.expect("\r\n")
        })
        .collect();
    c.send("z LOGOUT");
    answers
}

/// Claws Mail with the docs' files: its first start makes Queue, Sent, Drafts and Trash on
/// the BBS (the issue's Claws had none, and every send failed with "Could not queue
/// message"), it receives the INBOX and shows a message, and a message composed in it is
/// queued on the BBS, sent over SMTP and kept in Sent; once over implicit TLS, once over
/// STARTTLS, each trusting the certificate put where the docs say.
#[test]
fn claws_mail_receives_and_sends_over_tls_and_starttls_with_the_docs_files() {
    if !have("claws-mail") || !have("Xvfb") || !have("xdotool") || !have("openssl") {
        return;
    }
    let s = Station::start();
    let x = common::xvfb::Xvfb::start();
    let _t = s.post("SP N0USR", "For Claws", "Read in Claws Mail.");
    for (account, imap, smtp) in [
        ("claws accountrc", "imaps", "smtps"),
        ("claws accountrc STARTTLS", "imap", "smtp"),
    ] {
        let before = (s.tls_started(imap), s.tls_started(smtp));
        let home = s.home(&format!("claws-{imap}"));
        let certs = Command::new("sh")
            .args(["-ec", &s.localized("claws certs")])
            .current_dir(&home)
            .env("HOME", &home)
            .output()
            .unwrap();
        assert!(certs.status.success(), "{}", text(&certs));
        let rc = home.join(".claws-mail");
        for (file, name) in [
            (account, "accountrc"),
            ("claws passwordstorerc", "passwordstorerc"),
            ("claws folderlist.xml", "folderlist.xml"),
        ] {
            std::fs::write(rc.join(name), s.localized(file)).unwrap();
        }
        // This machine has no spelling dictionary, and Claws says so in a window that
        // would stop the test: not part of the BBS's setup.
        std::fs::write(rc.join("clawsrc"), "[Common]\nenable_aspell=0\n").unwrap();

        let claws = Claws::start(&home, &x.display);
        // The folders Claws made at its first start, in its list and on the BBS.
        let folders = std::fs::read_to_string(rc.join("folderlist.xml")).unwrap();
        for kind in ["inbox", "queue", "outbox", "draft", "trash"] {
            let item = format!("type=\"{kind}\"");
            assert!(
                folders.contains(&item),
                "{item}: {folders}\n{}",
                claws.log()
            );
        }
        let list = imap_asks(&s, &["LIST \"\" \"*\""]).concat();
        for folder in ["\"Queue\"", "\"Sent\"", "\"Drafts\"", "\"Trash\""] {
            assert!(list.contains(folder), "{folder}: {list}");
        }

        // Receive (Claws fetches the new message's headers), then show the message (UID 1:
        // the first message of the store), which fetches it whole into Claws's cache. Claws
        // takes remote commands one after the other (its control socket's handler does not
        // run again while one works), so the select comes after the receive.
        claws.remote(&["--receive-all"]);
        claws.wait_for(
            "UID FETCH 1 (UID FLAGS RFC822.SIZE BODY.PEEK[HEADER.FIELDS",
            1,
        );
        let shown = claws.cached("INBOX").join("1");
        std::fs::create_dir_all(shown.parent().unwrap()).unwrap();
        claws.remote(&["--select", "#imap/N0USR@bbs.example.org/INBOX/1"]);
        let fetched =
            || std::fs::read_to_string(&shown).is_ok_and(|m| m.contains("Read in Claws Mail."));
        assert!(
            common::watch::until_file(&shown, PATIENCE, fetched),
            "{account}: never fetched:\n{}",
            claws.log()
        );

        // Send: compose from a file, then Claws's "Send" (Ctrl+Return) in its window.
        let subject = format!("From Claws over {smtp}");
        let out = home.join("out.txt");
        let draft = format!("To: N0OTH@bbs.example.org\nSubject: {subject}\n\nSent from Claws.\n");
        std::fs::write(&out, draft).unwrap();
        claws.remote(&["--compose-from-file", &out.display().to_string()]);
        let keys = Command::new("xdotool")
            .args(["search", "--sync", "--name", "Compose message$"])
            .args([
                "windowfocus",
                "--sync",
                "key",
                "--clearmodifiers",
                "ctrl+Return",
            ])
            .env("DISPLAY", &x.display)
            .output()
            .unwrap();
        assert!(keys.status.success(), "xdotool: {}", text(&keys));
        s.d.wait_for_log("message stored from=N0USR to=N0OTH");
        // Queued in Queue (APPEND), copied to Sent (COPY, which Claws caches as its own copy),
        // then taken out of Queue (EXPUNGE).
        claws.wait_for("EXPUNGE completed", 1);
        let kept = std::fs::read_dir(claws.cached("Sent")).unwrap().any(|f| {
            std::fs::read_to_string(f.unwrap().path()).is_ok_and(|m| m.contains(&subject))
        });
        assert!(kept, "{account}: not in Claws's Sent\n{}", claws.log());
        let [sent, queue] = [
            imap_asks(&s, &["SELECT Sent", "FETCH * BODY[]"]).concat(),
            imap_asks(&s, &["SELECT Queue"]).concat(),
        ];
        assert!(
            sent.contains(&format!("Subject: {subject}")) && sent.contains("Sent from Claws."),
            "{account}: {sent}\n{}",
            claws.log()
        );
        assert!(queue.contains("* 0 EXISTS"), "{account}: {queue}");
        assert!(s.tls_started(imap) > before.0, "{}", s.d.log());
        assert!(s.tls_started(smtp) > before.1, "{}", s.d.log());
        drop(claws);
    }
}

/// A daemon in its own network namespace whose mail listeners are on an address that is not
/// loopback, without `[tls]`.
fn plain_off_loopback(ns: &Netns, extra: &str) -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    let at = "[fd00:29:0:1::1]:0";
    std::fs::write(
        common::config_path(dir.path()),
        format!(
            "[station]\ncallsign = \"N0CALL\"\n[store]\ndurability = \"normal\"\n\
             [telnet]\nlisten = [\"[::1]:0\"]\n[mail]\nimap_listen = \"{at}\"\n\
             pop3_listen = \"{at}\"\nsmtp_listen = \"{at}\"\nnntp_listen = \"{at}\"\n{extra}"
        ),
    )
    .unwrap();
    let out = common::cli(
        dir.path(),
        &["user", "add", "N0USR", "--password", "pw"],
        "",
    );
    assert!(out.status.success(), "{}", text(&out));
    Daemon::start_wrapped(dir, &["ip", "netns", "exec", &ns.0])
}

/// What the listener `name` of `d` answers a client on another address of the namespace
/// that sends `lines`, up to `until`.
fn from_elsewhere(ns: &Netns, d: &Daemon, name: &str, lines: &[&str], until: &str) -> String {
    let port = d.listener_port(name);
    let (ns, lines, until) = (ns.0.clone(), lines.join("\r\n") + "\r\n", until.to_string());
    std::thread::spawn(move || {
        Netns::enter(&ns);
        let mut c = Client {
            stream: connect_in_netns(port),
            seen: Vec::new(),
        };
        c.send_raw(lines.as_bytes());
        c.expect(&until)
    })
    .join()
    .unwrap()
}

/// A connection from fd00:29:0:1::2 to the daemon's fd00:29:0:1::1 (on a thread in the
/// namespace), reading as [`Client`] does.
fn connect_in_netns(port: u16) -> std::net::TcpStream {
    let ip = |last| Ipv6Addr::new(0xfd00, 0x29, 0, 1, 0, 0, 0, last);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let s = rt.block_on(async {
        let sock = tokio::net::TcpSocket::new_v6().unwrap();
        sock.bind(SocketAddr::from((ip(2), 0))).unwrap();
        sock.connect(SocketAddr::from((ip(1), port))).await.unwrap()
    });
    let s = s.into_std().unwrap();
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_millis(200)))
        .unwrap();
    s
}

#[test]
fn a_listener_nobody_elsewhere_could_log_in_on_is_named_and_its_refusal_says_what_to_do() {
    let ns = Netns::new("mtls");
    let d = plain_off_loopback(&ns, "");
    // The sysop is told at start, listener by listener, and so by `qtc check`.
    let report = d.stdout.join("\n");
    let check = text(&d.cli(&["check"]));
    // News takes the login too (no `news_without_login`), so NNTP is named the same way.
    for name in ["smtp", "pop3", "imap", "nntp"] {
        let warning = format!("warning: {name} on [fd00:29:0:1::1]:0: nobody on another host");
        assert!(report.contains(&warning), "{warning:?} not in:\n{report}");
        assert!(check.contains(&warning), "{warning:?} not in:\n{check}");
    }
    // A client on another address is told what to do, not sent to a TLS that is not there.
    let what_to_do = "and this BBS has no TLS: log in on the BBS's own host, or ask its sysop";
    for (name, lines) in [
        ("imap", &["a LOGIN N0USR pw"][..]),
        ("pop3", &["USER N0USR"][..]),
        ("smtp", &["EHLO me", "AUTH PLAIN AE4wVVNSAHB3"][..]),
        ("nntp", &["AUTHINFO USER N0USR"][..]),
    ] {
        let got = from_elsewhere(&ns, &d, name, lines, what_to_do);
        assert!(!got.contains("TLS first"), "{name}: {got}");
    }
    // The sysop's one key for a trusted LAN: no warning, and the login works.
    drop(d);
    let lan = plain_off_loopback(&ns, "passwords_in_clear = true\n");
    assert!(
        !lan.stdout.join("\n").contains("warning:"),
        "{:?}",
        lan.stdout
    );
    from_elsewhere(&ns, &lan, "imap", &["a LOGIN N0USR pw"], "a OK");
    // Where the sysop opens news to anonymous readers, they read from elsewhere without a
    // password, and the warning says only that nobody there can post.
    drop(lan);
    let open = plain_off_loopback(&ns, "news_without_login = true\n");
    let report = open.stdout.join("\n");
    assert!(
        report.contains("warning: nntp on [fd00:29:0:1::1]:0: news is read there without a login"),
        "{report}"
    );
    from_elsewhere(
        &ns,
        &open,
        "nntp",
        &["LIST"],
        "215 list of newsgroups follows",
    );
}
