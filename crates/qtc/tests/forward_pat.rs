//! qtc with a real Winlink client: Pat (`pat-winlink`, built on wl2k-go) logs in to qtc's raw
//! forwarding port, sends its outbox and collects the mail addressed to its bare callsign, in
//! one `pat connect` each. Skipped (with the reason printed) when Pat is not installed, unless
//! `QTC_REQUIRE_PEERS=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::Daemon;

const PAT: &str = "pat-winlink";

/// True when Pat can run; otherwise prints why the test is skipped (or fails under
/// `QTC_REQUIRE_PEERS=1`).
fn have_pat() -> bool {
    let found = Command::new(PAT)
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var("QTC_REQUIRE_PEERS").as_deref() != Ok("1"),
            "{PAT} is not installed and QTC_REQUIRE_PEERS=1 (apt-get install pat)"
        );
        eprintln!("skipped: {PAT} is not installed (Debian package pat)");
    }
    found
}

/// One Pat station with its own home, config and mailbox in a temp directory.
struct Pat {
    call: &'static str,
    dir: tempfile::TempDir,
}

impl Pat {
    fn new(call: &'static str) -> Pat {
        Pat::with_listener(call, 0)
    }

    /// A station whose telnet listener (for `--listen telnet`) is on `port` with password
    /// `lpw` (0: none configured).
    fn with_listener(call: &'static str, port: u16) -> Pat {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.json"),
            format!(
                r#"{{"mycall": "{call}", "secure_login_password": "", "locator": "JO59fx",
                    "telnet": {{"listen_addr": "127.0.0.1:{port}", "password": "lpw"}}}}"#
            ),
        )
        .unwrap();
        Pat { call, dir }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(PAT);
        c.env("HOME", self.dir.path())
            .arg("--config")
            .arg(self.path("config.json"))
            .arg("--mbox")
            .arg(self.path("mbox"))
            .arg("--event-log")
            .arg(self.path("events.json"))
            .arg("--log")
            .arg(self.path("pat.log"))
            .arg("--forms")
            .arg(self.path("forms"))
            .args(args);
        c
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn run(&self, args: &[&str], stdin: &[u8]) -> Output {
        use std::io::Write;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        child.wait_with_output().unwrap()
    }

    /// `pat compose` from the command line: body on stdin.
    fn compose(&self, args: &[&str], body: &str) {
        let mut all = vec!["compose"];
        all.extend(args);
        let out = self.run(&all, body.as_bytes());
        assert!(out.status.success(), "pat compose: {out:?}");
    }

    /// One `pat connect` to qtc's forwarding port (or any port of qtc's); returns Pat's
    /// output.
    fn connect(&self, port: u16, extra: &[&str]) -> String {
        let url = format!("telnet://{}:patpw@127.0.0.1:{port}/N0QTC", self.call);
        let mut args: Vec<&str> = extra.to_vec();
        args.extend(["connect", &url]);
        let out = self.run(&args, b"");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "pat connect failed:\n{text}");
        text
    }

    /// The B2F files in one of Pat's mailbox folders (`in`, `out`, `sent`).
    fn folder(&self, name: &str) -> Vec<Vec<u8>> {
        let dir = self.path("mbox").join(self.call).join(name);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        files.sort();
        files.iter().map(|p| std::fs::read(p).unwrap()).collect()
    }
}

/// qtc N0QTC with the Pat stations N0PAT and N0PAU as B2 partners that call in, and users
/// N0USR, N0OTH.
fn qtc() -> Daemon {
    Daemon::start_bbs(
        "N0QTC",
        &[
            ("N0PAT", "patpw", "--bbs"),
            ("N0PAU", "patpw", "--bbs"),
            ("N0USR", "pw", ""),
            ("N0OTH", "pw", ""),
            ("N0SYS", "root", "--sysop"),
        ],
        "[web]\nlisten = \"127.0.0.1:0\"\n[forward]\nlisten = [\"127.0.0.1:0\"]\n\
         [[partner]]\ncallsign = \"N0PAT\"\nprotocol = \"b2\"\nroutes = [\"N0PAT\"]\n\
         [[partner]]\ncallsign = \"N0PAU\"\nprotocol = \"b2\"\nroutes = [\"N0PAU\"]\n",
    )
}

/// A telnet user logged in to N0QTC, at its prompt.
fn login(d: &Daemon, call: &str) -> common::Client {
    let mut c = d.connect();
    c.expect("Callsign:");
    c.send(call);
    c.expect("Password:");
    c.send("pw");
    c.expect("de N0QTC>");
    c
}

/// Logs in to qtc's telnet port as N0USR and sends personal mail `SP to` with `body`.
fn post(d: &Daemon, to: &str, subject: &str, body: &[u8]) {
    let mut c = login(d, "N0USR");
    c.send(&format!("SP {to}"));
    c.expect("Subject:");
    c.send(subject);
    c.expect("Enter message");
    c.send_raw(body);
    c.send("/EX");
    let out = c.expect("de N0QTC>");
    assert!(out.contains("stored"), "{out}");
    c.send("B");
}

/// Mail for Pat's bare callsign (UTF-8, Latin-1) and one `@` this BBS (which reaches Pat as
/// `To: N0PAT`, not an internet address): it waits in Pat's queue for the sysop to see
/// before Pat calls.
fn post_for_pat_and_see_it_queued(d: &Daemon) {
    post(d, "N0PAT", "utf8 for pat", "Köln ist schön\r\n".as_bytes());
    post(d, "N0PAT", "latin1 for pat", b"K\xf6ln in Latin-1\r\n");
    post(d, "N0PAT@N0QTC", "at this bbs", b"addressed @ here\r\n");
    let queue = d.fwd_queue(Some("N0PAT"));
    assert!(queue.matches("N0PAT").count() >= 3, "{queue}");
    let status = d.ctl(&["status"]);
    assert!(status.contains("N0PAT    3 queued"), "{status}");
    let (_, page) = web_page(d, "/forwarding");
    let page = String::from_utf8_lossy(&page);
    let row = page
        .split("<tr>")
        .find(|r| r.contains("<b>N0PAT</b>"))
        .unwrap_or_default();
    assert!(row.contains("<td data-label=\"Queued\">3</td>"), "{page}");
}

/// One HTTP/1.1 request to the dashboard: (head, body bytes).
fn http(port: u16, request: &str) -> (String, Vec<u8>) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(common::PATIENCE)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let end = common::find(&raw, b"\r\n\r\n").unwrap();
    let body = raw.split_off(end + 4);
    (String::from_utf8_lossy(&raw).into_owned(), body)
}

/// The value of cookie `name` set in `head`.
fn cookie(head: &str, name: &str) -> String {
    let at = head.find(&format!("{name}=")).unwrap() + name.len() + 1;
    head[at..].split(';').next().unwrap().to_string()
}

/// A page of the web dashboard, fetched as the sysop: (head, body bytes).
fn web_page(d: &Daemon, path: &str) -> (String, Vec<u8>) {
    let port = d.web_port();
    let get = |path: &str, cookie: &str| {
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nCookie: {cookie}\r\n\r\n")
    };
    let (head, _) = http(port, &get("/login", ""));
    let token = cookie(&head, "qtc_login");
    let form = format!("csrf={token}&call=N0SYS&password=root");
    let (head, _) = http(
        port,
        &format!(
            "POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nCookie: qtc_login={token}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        ),
    );
    let session = format!("qtc_session={}", cookie(&head, "qtc_session"));
    http(port, &get(path, &session))
}

/// Attachment `i` of message `n`, downloaded from the web dashboard as the sysop.
fn download(d: &Daemon, n: u64, i: usize) -> (String, Vec<u8>) {
    web_page(d, &format!("/messages/{n}/files/{i}"))
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    common::find(hay, needle).is_some()
}

fn file(path: &Path, len: usize) -> Vec<u8> {
    let data: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
    std::fs::write(path, &data).unwrap();
    data
}

#[test]
fn pat_sends_its_outbox_and_collects_its_mail_in_one_connect_each() {
    if !have_pat() {
        return;
    }
    let d = qtc();
    let port = d.fwd_port.unwrap();
    let pat = Pat::new("N0PAT");
    let photo = file(&pat.path("photo.bin"), 3000);
    pat.compose(
        &["-s", "Grüße from pat", "N0USR"],
        "Hello from Pat, Grüße\n",
    );
    pat.compose(
        &[
            "-s",
            "with a file",
            "-a",
            pat.path("photo.bin").to_str().unwrap(),
            "N0USR",
        ],
        "See the attachment.\n",
    );
    pat.compose(
        &["-s", "copied", "-c", "N0OTH", "N0USR"],
        "For both of you.\n",
    );
    pat.compose(&["-s", "two to", "N0USR", "N0OTH"], "To you both.\n");
    post_for_pat_and_see_it_queued(&d);

    let out = pat.connect(port, &[]);
    assert!(
        pat.folder("out").is_empty(),
        "Pat's outbox not sent:\n{out}"
    );
    let inbox = pat.folder("in");
    assert_eq!(inbox.len(), 3, "Pat collected its mail:\n{out}");
    let here = inbox.iter().find(|m| contains(m, b"at this bbs")).unwrap();
    assert!(contains(here, b"To: N0PAT\r\n"), "a bare call: {here:?}");
    let utf8 = inbox.iter().find(|m| contains(m, b"utf8 for pat")).unwrap();
    assert!(contains(utf8, "Köln ist schön".as_bytes()));
    assert!(contains(utf8, b"Content-Type: text/plain; charset=UTF-8"));
    let latin1 = inbox
        .iter()
        .find(|m| contains(m, b"latin1 for pat"))
        .unwrap();
    assert!(contains(latin1, b"K\xf6ln"));
    assert!(contains(
        latin1,
        b"Content-Type: text/plain; charset=ISO-8859-1"
    ));

    let listed = d.listed();
    let from_pat: Vec<_> = listed.iter().filter(|m| m.from == "N0PAT").collect();
    assert_eq!(from_pat.len(), 4, "{listed:?}");
    // The copy: N0OTH lists and reads it as well as N0USR.
    let copied = from_pat.iter().find(|m| m.subject == "copied").unwrap();
    let mut oth = login(&d, "N0OTH");
    oth.send("L");
    let list = oth.expect("de N0QTC>");
    assert!(list.contains("copied"), "{list}");
    oth.send(&format!("R {}", copied.number));
    let shown = oth.expect("de N0QTC>");
    assert!(shown.contains("For both of you."), "{shown}");
    assert!(shown.contains("\r\nCc: N0OTH\r\n"), "{shown}");
    // A second `To:` is an addressee, shown as such.
    let two = from_pat.iter().find(|m| m.subject == "two to").unwrap();
    oth.send(&format!("R {}", two.number));
    let shown = oth.expect("de N0QTC>");
    assert!(
        shown.contains("\r\nTo: N0OTH\r\n") && !shown.contains("Cc:"),
        "{shown}"
    );
    oth.send("B");
    // The attachment is listed under the message, with its size.
    let with_file = from_pat
        .iter()
        .find(|m| m.subject == "with a file")
        .unwrap();
    let mut usr = login(&d, "N0USR");
    // Pat sends a non-ASCII subject RFC 2047 encoded; listings show it decoded.
    usr.send("L");
    let list = usr.expect("de N0QTC>");
    assert!(list.contains("Grüße from pat"), "{list}");
    // `qtc msg list` shows the subject decoded too.
    let plain = listed
        .iter()
        .find(|m| m.subject == "Grüße from pat")
        .unwrap();
    usr.send(&format!("R {}", plain.number));
    let shown = usr.expect("de N0QTC>");
    // Pat sends the body in ISO-8859-1 and says so: stored as it came, shown decoded.
    assert!(
        shown.contains("Subject: Grüße from pat") && shown.contains("Hello from Pat, Grüße"),
        "{shown}"
    );
    assert!(contains(&d.show_raw(plain.number), b"Gr\xfc\xdfe"));
    // The web and `qtc msg show` show what telnet shows: the subject decoded, the body in
    // its charset, a second `To:` as To.
    let (_, page) = web_page(&d, &format!("/messages/{}", plain.number));
    let page = String::from_utf8_lossy(&page);
    assert!(
        page.contains("<td id=\"subject\">Grüße from pat</td>")
            && page.contains("Hello from Pat, Grüße"),
        "{page}"
    );
    let shown = String::from_utf8_lossy(&d.show_raw(plain.number)).into_owned();
    assert!(shown.contains("\nSubject: Grüße from pat\n"), "{shown}");
    let (_, page) = web_page(&d, &format!("/messages/{}", two.number));
    let page = String::from_utf8_lossy(&page);
    assert!(
        page.contains("<td id=\"to\">N0USR, N0OTH</td>") && !page.contains("Copies"),
        "{page}"
    );
    usr.send(&format!("R {}", with_file.number));
    let shown = usr.expect("de N0QTC>");
    assert!(shown.contains("photo.bin (3000 bytes)"), "{shown}");
    usr.send("B");
    // Kept byte-identical: the sysop downloads it from the web dashboard.
    let (head, bytes) = download(&d, with_file.number, 0);
    assert!(head.contains("filename=\"photo.bin\""), "{head}");
    assert_eq!(bytes, photo);

    // A second connect: nothing new either way.
    let again = pat.connect(port, &[]);
    assert_eq!(pat.folder("in").len(), 3, "{again}");

    // Relayed to a second Pat station: recipients and the attachment byte-identical.
    let pau = Pat::new("N0PAU");
    let relayed = file(&pat.path("relay.bin"), 3000);
    pat.compose(
        &[
            "-s",
            "relay",
            "-a",
            pat.path("relay.bin").to_str().unwrap(),
            "-c",
            "N0USR",
            "N0PAU",
        ],
        "Through qtc, Grüße.\n",
    );
    pat.connect(port, &[]);
    pau.connect(port, &[]);
    let got = pau.folder("in");
    assert_eq!(got.len(), 1);
    let head = String::from_utf8_lossy(&got[0][..400]).into_owned();
    assert!(
        contains(&got[0], b"To: N0PAU\r\n") && contains(&got[0], b"Cc: N0USR\r\n"),
        "{head}"
    );
    assert!(contains(&got[0], b"File: 3000 relay.bin\r\n"));
    // The body in the charset Pat declared it in, declared so again.
    assert!(contains(&got[0], b"Through qtc, Gr\xfc\xdfe."), "{head}");
    assert!(
        contains(&got[0], b"Content-Type: text/plain; charset=ISO-8859-1\r\n"),
        "{head}"
    );
    assert!(contains(&got[0], &relayed));
    eprintln!(
        "pat, B2, Pat calling the forward port: 5 Pat -> qtc, 4 qtc -> Pat (3 to N0PAT, 1 \
         relayed to N0PAU), each once, byte for byte"
    );
}

#[test]
fn pat_in_send_only_mode_refuses_our_mail_and_the_session_goes_on() {
    if !have_pat() {
        return;
    }
    let d = qtc();
    let port = d.fwd_port.unwrap();
    let pat = Pat::new("N0PAT");
    post(&d, "N0PAT", "later", b"for later\r\n");
    pat.compose(&["-s", "outbound", "N0USR"], "sent in send-only mode\n");
    // Pat defers everything we propose and sends neither FF nor proposals: qtc must go on
    // (FF / FQ) rather than wait for its idle timeout, and keep the message queued.
    let out = pat.connect(port, &["--send-only"]);
    assert!(pat.folder("out").is_empty(), "{out}");
    assert!(pat.folder("in").is_empty(), "{out}");
    assert!(d.fwd_queue(Some("N0PAT")).contains("N0PAT"), "still queued");
    // Without --send-only it comes.
    pat.connect(port, &[]);
    assert_eq!(pat.folder("in").len(), 1);
}

#[test]
fn the_addressee_and_the_copy_each_have_their_own_read_mark() {
    if !have_pat() {
        return;
    }
    let d = qtc();
    let pat = Pat::new("N0PAT");
    pat.compose(
        &["-s", "for two", "-c", "N0OTH", "N0USR"],
        "To one, copy to the other.\n",
    );
    pat.connect(d.fwd_port.unwrap(), &[]);
    // A user's greeting (their new count) and `LN` (their unread mail).
    let unread = |call: &str| {
        let mut c = d.connect();
        c.expect("Callsign:");
        c.send(call);
        c.expect("Password:");
        c.send("pw");
        let greeting = c.expect("de N0QTC>");
        c.send("LN");
        let ln = c.expect("de N0QTC>");
        (
            greeting.contains("1 message, 1 new"),
            ln.contains("for two"),
            c,
        )
    };
    // A user reads their unread mail and logs out.
    let read_new = |mut c: common::Client| {
        c.send("RN");
        assert!(c.expect("de N0QTC>").contains("To one, copy to the other."));
        c.send("B");
    };
    let (usr_new, usr_ln, usr) = unread("N0USR");
    let (oth_new, oth_ln, _) = unread("N0OTH");
    assert!(usr_new && usr_ln && oth_new && oth_ln);
    // The addressee reads it: the copy is still new to N0OTH.
    read_new(usr);
    let (usr_new, usr_ln, _) = unread("N0USR");
    assert!(!usr_new && !usr_ln);
    let (oth_new, oth_ln, oth) = unread("N0OTH");
    assert!(oth_new && oth_ln);
    // N0OTH reads its copy: now it is read for both.
    read_new(oth);
    let (oth_new, oth_ln, _) = unread("N0OTH");
    assert!(!oth_new && !oth_ln);
}

/// Pat listening (`--listen telnet`) until dropped; its stdin stays open so its interactive
/// prompt waits.
struct Listening(std::process::Child);

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn qtc_calls_a_listening_pat_and_both_sides_deliver() {
    if !have_pat() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let pat = Pat::with_listener("N0PAT", port);
    pat.compose(
        &["-s", "from the listener", "N0USR"],
        "Pat answered the call.\n",
    );
    let mut child = pat
        .command(&["--listen", "telnet", "interactive"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Its first output line says it listens.
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut first,
    )
    .unwrap();
    assert!(first.contains("Listening"), "{first}");
    let _pat = Listening(child);
    let d = Daemon::start_bbs(
        "N0QTC",
        &[("N0USR", "pw", "")],
        &format!(
            "[[partner]]\ncallsign = \"N0PAT\"\nconnect = \"tcp:127.0.0.1:{port}\"\n\
             password = \"lpw\"\nprotocol = \"b2\"\nroutes = [\"N0PAT\"]\n"
        ),
    );
    post(&d, "N0PAT", "to the listener", "Grüße\r\n".as_bytes());
    let out = d.forward_ok("N0PAT", &d);
    assert!(out.contains("1 received, 1 sent"), "{out}");
    let inbox = pat.folder("in");
    assert_eq!(inbox.len(), 1);
    assert!(contains(&inbox[0], "Grüße".as_bytes()));
    assert!(d.listed().iter().any(|m| m.subject == "from the listener"));
    eprintln!("pat, B2, qtc calling a listening Pat: {out}");
}

#[test]
fn pat_on_the_telnet_port_is_a_raw_client_and_its_binary_arrives_intact() {
    // Pat calls its raw TCP transport "telnet" and users point it at a BBS's telnet port: it
    // never sends a telnet command and doubles no 0xFF, so qtc takes its B2 blocks byte for
    // byte (before, they failed as "malformed binary block").
    if !have_pat() {
        return;
    }
    let d = qtc();
    let pat = Pat::new("N0PAT");
    let data = file(&pat.path("ff.bin"), 20_000);
    assert!(data.contains(&0xff));
    pat.compose(
        &[
            "-s",
            "via telnet",
            "-a",
            pat.path("ff.bin").to_str().unwrap(),
            "N0USR",
        ],
        "Over the telnet port.\n",
    );
    post(&d, "N0PAT", "for pat over telnet", b"K\xf6ln \xff\r\n");
    let out = pat.connect(d.port, &[]);
    assert!(pat.folder("out").is_empty(), "{out}\n{}", d.log());
    assert_eq!(pat.folder("in").len(), 1, "{out}");
    d.wait_for_log("never spoke telnet");
    let got = d
        .listed()
        .into_iter()
        .find(|m| m.subject == "via telnet")
        .unwrap();
    let (_, bytes) = download(&d, got.number, 0);
    assert_eq!(bytes, data);
    eprintln!("pat, B2, Pat calling the telnet port: 1 Pat -> qtc (20 KB file), 1 qtc -> Pat");
}

#[test]
fn a_file_attached_on_the_web_reaches_pat_as_a_b2f_attachment() {
    if !have_pat() {
        return;
    }
    use common::web::{http, login, post_multipart};
    let d = qtc();
    let port = d.web_port();
    let user = login(port, "N0USR", "pw").unwrap();
    let csrf = http(port, "GET", "/compose", &user, "").csrf();
    let photo: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 251) as u8).collect();
    let fields = [
        ("csrf", csrf.as_str()),
        ("kind", "P"),
        ("to", "N0PAT"),
        ("at", ""),
        ("subject", "From the web"),
        ("body", "A file for you."),
    ];
    let r = post_multipart(port, &user, "/compose", &fields, &[("shack.jpg", &photo)]);
    assert!(r.body.contains("stored"), "{}", r.body);
    let pat = Pat::new("N0PAT");
    let out = pat.connect(d.fwd_port.unwrap(), &[]);
    let inbox = pat.folder("in");
    assert_eq!(inbox.len(), 1, "{out}");
    assert!(
        contains(&inbox[0], b"File: 5000 shack.jpg\r\n"),
        "{:?}",
        String::from_utf8_lossy(&inbox[0][..300])
    );
    assert!(contains(&inbox[0], &photo), "the file byte for byte");
}
