//! The real LinFBB: xfbbd 7.0.11 (Debian package `fbb`) in a private tree, and the mail flows
//! both ways in one session, whoever calls: xfbbd calling qtc's raw forwarding port or its
//! telnet port (there without `iac_escaped`: its SID says it), or qtc calling xfbbd's telnet
//! port (`qtc ctl forward`, `telnet = true`). In B1 50 messages each way,
//! one of 100 KB; in FBB ASCII and MBL (what xfbbd falls back to when qtc's SID, set by the
//! partner's `protocol`, offers no more) 5 each way. Every body carries CP437 and 0xFF bytes,
//! some UTF-8 text (xfbbd doubles 0xFF on its outgoing forwarding link: the partner is
//! `iac_escaped`). Skipped when xfbbd is missing, unless QTC_REQUIRE_XFBBD is set (CI sets it).
#![allow(clippy::disallowed_methods)]

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::watch::until_file;
use common::{forging, free_port, Daemon, Rng, Shown};

const XFBBD: &str = "/usr/sbin/xfbbd";
const XFBBC: &str = "/usr/sbin/xfbbC";
const PATIENCE: Duration = Duration::from_secs(120);

/// A message body: CR LF lines of ASCII, CP437 (0x80-0xFF, 0xFF included) or UTF-8 text,
/// first line a tag that finds it again.
fn body(rng: &mut Rng, tag: &str, size: usize) -> Vec<u8> {
    let words: [&[u8]; 8] = [
        b"packet",
        b"radio",
        "Köln".as_bytes(),
        "☺ €".as_bytes(),
        b"\x80\x9a\xe1\xfe",
        b"x \xff\xff",
        b"73 de",
        b"0123456789",
    ];
    // CP437 and 0xFF in every message, whatever the random words are; a line starting 0xFF
    // 0xFF, whose next two bytes xfbbd lost in the text modes when qtc ended lines with bare CR
    // on xfbbd's IAC-escaped link (docs/forwarding.md, LinFBB).
    let mut out = format!("{tag}\r\n").into_bytes();
    out.extend_from_slice(b"\xff\xff x CP437 \x80\x9a\xe1 \xff\xff\r\n");
    let mut line = Vec::new();
    while out.len() + line.len() < size {
        line.extend_from_slice(words[rng.range(0, words.len() - 1)]);
        line.push(b' ');
        if line.len() > 60 {
            out.extend_from_slice(&line);
            out.extend_from_slice(b"\r\n");
            line.clear();
        }
    }
    line.push(b'.');
    out.extend_from_slice(&line);
    out.extend_from_slice(b"\r\n");
    out
}

/// `n` body sizes; the 8th (when there are that many) is 100 KB.
fn sizes(rng: &mut Rng, n: usize) -> Vec<usize> {
    (0..n)
        .map(|i| if i == 7 { 100_000 } else { rng.range(40, 4000) })
        .collect()
}

/// xfbbd's configuration and data tree under `root`: one telnet port, N0AAA (qtc) as its
/// forwarding partner at `qtc_port`, logging in as N0FBB with `pw`.
/// `mask` gives new users B (BBS) and M (modem/telnet: without it xfbbd lets a telnet caller in
/// read-only, "Login in read-only mode"), not P (paging).
fn fbb_tree(root: &Path, telnet_port: u16, qtc_port: u16, pw: &str) {
    let conf = root.join("conf");
    let data = root.join("data");
    for d in ["lang", "fwd"] {
        std::fs::create_dir_all(conf.join(d)).unwrap();
    }
    for d in ["fbbdos/yapp", "docs", "log", "wp", "sat", "oldmail"] {
        std::fs::create_dir_all(data.join(d)).unwrap();
    }
    for i in 0..10 {
        std::fs::create_dir_all(data.join(format!("mail/mail{i}"))).unwrap();
        std::fs::create_dir_all(data.join(format!("binmail/mail{i}"))).unwrap();
    }
    for f in std::fs::read_dir("/etc/ax25/fbb").unwrap() {
        let p = f.unwrap().path();
        if p.extension().is_some_and(|e| e == "sys") {
            std::fs::copy(&p, conf.join(p.file_name().unwrap())).unwrap();
        }
    }
    for f in ["english.txt", "english.hlp", "english.inf"] {
        std::fs::copy(
            Path::new("/etc/ax25/fbb/lang").join(f),
            conf.join("lang").join(f),
        )
        .unwrap();
    }
    std::fs::copy(
        "/etc/ax25/fbb/lang/english.ent.sample",
        conf.join("lang/english.ent"),
    )
    .unwrap();
    let (c, d) = (conf.display(), data.display());
    // mask 3728 = 2048 + 1024 + 512 + 128 (Modem) + 16 (BBS).
    std::fs::write(
        conf.join("fbb.conf"),
        format!(
            "version = FBB7.0.11\ncallsign = N0FBB.#NCA.CA.USA.NOAM\nssid = 0\nqraloc = CM87UX\n\
             city = Test\nname = Test\nsysop = N0FBB\ndata = {d}\nconfig = {c}\n\
             messages = {d}/mail\ncompressed = {d}/binmail\nfbbdos = *,*,{d}/fbbdos,*,*,*,*,*\n\
             yapp = {d}/fbbdos/yapp\ndocs = {d}/docs\n\
             pg = /usr/lib/x86_64-linux-gnu/fbb/pg\nfdir = /usr/lib/x86_64-linux-gnu/fbb/filter\n\
             sdir = /usr/lib/x86_64-linux-gnu/fbb/server\ntdir = /usr/lib/x86_64-linux-gnu/fbb/tool\n\
             import = {d}/mail/mail.in\nlogs = OK\ntest = NO\nfbbfwd = OK 160\nfbbcomp = OK 3\n\
             askinfo = NO\nmask = 3728\nsecurity = 0 4 59\nwarning = 255\nhousekeeping = 2\n\
             timeout = 10 20\nmaxdownload = 0 0\nlocaltime = 0\nbeacon = 8\n\
             scroll = 1500 1500 1500\nfwdheader = [$c] $$:$R\nmaxbids = 30000\nlifetime = 30\n\
             zipcode = 00000\nunprotoes = 500 5 P\n"
        ),
    )
    .unwrap();
    std::fs::write(conf.join("langue.sys"), "1 1 1\nENGLISH\n").unwrap();
    // One telnet port (interface 9, port in hex); its forward timer once an hour: this test
    // starts the forwarding with the console's FW command.
    std::fs::write(
        conf.join("port.sys"),
        format!(
            "  1      1\n 1   9   {telnet_port:X}   0\n\
             0   0    0   0        0     0     0     0      00/01   ----  File-fwd.\n\
             1   4    1   0        250   2     4     10     00/60   TUY   Telnet\n"
        ),
    )
    .unwrap();
    let mut bbs = String::from("01 N0AAA\n");
    for i in 2..=80 {
        bbs.push_str(&format!("{i:02} \n"));
    }
    std::fs::write(conf.join("bbs.sys"), bbs).unwrap();
    std::fs::write(
        conf.join("forward.sys"),
        format!(
            "A N0AAA\nP A\nC C N0AAA 127.0.0.1 {qtc_port}\nV N0FBB$W{pw}$W\n\
             B N0AAA\nF N0AAA\n-------\n"
        ),
    )
    .unwrap();
}

struct Xfbbd {
    child: Child,
    console_port: u16,
}

impl Drop for Xfbbd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts xfbbd in `root` and waits until it says it runs.
fn start_xfbbd(root: &Path) -> Xfbbd {
    let console_port = free_port();
    // What it reports on standard error, for a failure message.
    let report = root.join("xfbbd.err");
    let mut child = Command::new(XFBBD)
        .args(["-p", &console_port.to_string()])
        .env("FBBCONF", root.join("conf/fbb.conf"))
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&report).unwrap())
        .spawn()
        .expect("start xfbbd");
    // It asks before creating each of its files, reading standard input buffered: keep "Y"
    // coming (the writer blocks once the pipe is full, and ends when xfbbd does).
    let mut yes = child.stdin.take().unwrap();
    std::thread::spawn(move || while yes.write_all(&b"Y\n".repeat(512)).is_ok() {});
    // Killed on drop from here on, also when it does not come up.
    let fbb = Xfbbd {
        child,
        console_port,
    };
    let said = || String::from_utf8_lossy(&std::fs::read(&report).unwrap_or_default()).into_owned();
    // Its console port listening means it is up. Nothing says so as it happens (its report is
    // block-buffered, it writes no file then): this looks for the port every 100 ms, as the
    // peer scripts look for JNOS's pty.
    let deadline = Instant::now() + PATIENCE;
    while std::net::TcpStream::connect(("127.0.0.1", console_port)).is_err() {
        let report = said();
        assert!(
            Instant::now() < deadline,
            "xfbbd did not start\n{}",
            common::tail(&report, 3000)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    fbb
}

/// xfbbd's sysop console (xfbbC), driven line by line.
struct Console {
    child: Child,
    shown: std::path::PathBuf,
}

impl Console {
    fn open(root: &Path, port: u16) -> Console {
        let shown = root.join("console.out");
        let child = Command::new(XFBBC)
            .args([
                "-c",
                "-r",
                "-h",
                "127.0.0.1",
                "-i",
                "N0FBB",
                "-w",
                "password",
            ])
            .args(["-p", &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(std::fs::File::create(&shown).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .expect("start xfbbC");
        let c = Console { child, shown };
        c.wait_for("BBS>", 1);
        c
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.shown).unwrap_or_default()).into_owned()
    }

    /// Waits until `what` has been shown `n` times.
    fn wait_for(&self, what: &str, n: usize) {
        let shown = until_file(&self.shown, PATIENCE, || {
            self.text().matches(what).count() >= n
        });
        assert!(shown, "the console never showed {what:?}\n{}", self.text());
    }

    /// The sysop's `EU call`: a new user (with the flags of `fbb.conf`'s mask) and its
    /// password (`W`), saved by an empty line.
    fn add_bbs_user(&mut self, call: &str, pw: &str) {
        let menu = "zip code. >";
        self.say(&format!("EU {call}"));
        self.wait_for("Create it (Y/N) ?", 1);
        self.say("Y");
        self.wait_for(menu, 1);
        self.say(&format!("W {pw}"));
        self.wait_for(menu, 2);
        self.say("");
        self.wait_for("BBS>", 2);
    }

    fn say(&mut self, line: &str) {
        let input = self.child.stdin.as_mut().unwrap();
        input.write_all(format!("{line}\n").as_bytes()).unwrap();
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The files xfbbd stored messages in.
fn fbb_messages(root: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..10 {
        let Ok(dir) = std::fs::read_dir(root.join(format!("data/mail/mail{i}"))) else {
            continue;
        };
        for f in dir {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|e| e == "mes") {
                out.push(std::fs::read(p).unwrap());
            }
        }
    }
    out
}

#[test]
fn xfbbd_forwards_b1_both_ways_with_qtc() {
    forward_both_ways(Caller::Xfbbd, "b1", "B1", 50);
}

#[test]
fn qtc_calls_xfbbd_and_forwards_b1_both_ways() {
    forward_both_ways(Caller::Qtc, "b1", "B1", 50);
}

#[test]
fn xfbbd_forwards_fbb_ascii_both_ways_with_qtc() {
    forward_both_ways(Caller::Xfbbd, "fbb", "FbbAscii", 5);
}

#[test]
fn qtc_calls_xfbbd_and_forwards_fbb_ascii_both_ways() {
    forward_both_ways(Caller::Qtc, "fbb", "FbbAscii", 5);
}

#[test]
fn xfbbd_forwards_mbl_both_ways_with_qtc() {
    forward_both_ways(Caller::Xfbbd, "mbl", "Mbl", 5);
}

/// xfbbd calling qtc's telnet port, its partner entry without `iac_escaped`: xfbbd speaks no
/// telnet there but doubles 0xFF, as on every link it opens; its SID names it, and qtc frames
/// the link so (issue 36: every 0xFF was stored doubled, B1 failed as a malformed block).
#[test]
fn xfbbd_calls_the_telnet_port_in_b1() {
    forward_both_ways(Caller::XfbbdToTelnetPort, "b1", "B1", 10);
}

#[test]
fn xfbbd_calls_the_telnet_port_in_b0() {
    forward_both_ways(Caller::XfbbdToTelnetPort, "b0", "B0", 10);
}

#[test]
fn xfbbd_calls_the_telnet_port_in_fbb_ascii() {
    forward_both_ways(Caller::XfbbdToTelnetPort, "fbb", "FbbAscii", 10);
}

#[test]
fn xfbbd_calls_the_telnet_port_in_mbl() {
    forward_both_ways(Caller::XfbbdToTelnetPort, "mbl", "Mbl", 10);
}

#[test]
fn qtc_calls_xfbbd_and_forwards_mbl_both_ways() {
    forward_both_ways(Caller::Qtc, "mbl", "Mbl", 5);
}

/// Who opens the forwarding session.
#[derive(Clone, Copy, PartialEq)]
enum Caller {
    /// xfbbd calls qtc's raw forwarding port (the sysop's `FW N0AAA` at its console).
    Xfbbd,
    /// xfbbd calls qtc's telnet port, nothing said of it in its partner entry.
    XfbbdToTelnetPort,
    /// qtc calls xfbbd's telnet port (`qtc ctl forward N0FBB`), logging in as a user xfbbd's
    /// sysop made with `EU`, with the B and M flags and a password.
    Qtc,
}

/// The partner entry on qtc for xfbbd (N0FBB) when `caller` calls.
fn partner(caller: Caller, protocol: &str, telnet_port: u16) -> String {
    let how = match caller {
        Caller::Xfbbd => "iac_escaped = true\n".to_string(),
        Caller::XfbbdToTelnetPort => String::new(),
        Caller::Qtc => format!(
            "connect = \"tcp:127.0.0.1:{telnet_port}\"\npassword = \"{QTC_ON_FBB_PW}\"\n\
             telnet = true\n"
        ),
    };
    format!(
        "[forward]\nlisten = [\"127.0.0.1:0\"]\n[[partner]]\ncallsign = \"N0FBB\"\n{how}\
         protocol = \"{protocol}\"\nroutes = [\"N0FBB\"]\n"
    )
}

/// qtc's (N0AAA's) password on xfbbd.
const QTC_ON_FBB_PW: &str = "qtcpw";

/// xfbbd calls qtc, or qtc calls xfbbd (`caller`), whose partner entry for it says `protocol`,
/// and `per_side` messages go each way in a session qtc logs as `mode` (its debug name).
fn forward_both_ways(caller: Caller, protocol: &str, mode: &str, per_side: usize) {
    if !Path::new(XFBBD).exists() {
        assert!(
            std::env::var_os("QTC_REQUIRE_XFBBD").is_none(),
            "QTC_REQUIRE_XFBBD is set but {XFBBD} is missing"
        );
        eprintln!("skipped: apt-get install fbb to run it");
        return;
    }
    let telnet_port = free_port();
    let qtc = Daemon::start_bbs(
        "N0AAA",
        &[("N0FBB", "fbbpw", "--bbs"), ("N0USR", "pw", "")],
        &partner(caller, protocol, telnet_port),
    );
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    let qtc_port = match caller {
        Caller::XfbbdToTelnetPort => qtc.port,
        _ => qtc.fwd_port.unwrap(),
    };
    fbb_tree(root, telnet_port, qtc_port, "fbbpw");

    // The mail for each side to send: xfbbd imports its own from mail.in (LF line ends).
    let mut rng = Rng(0x5eed_f00d);
    let to_qtc: Vec<Vec<u8>> = sizes(&mut rng, per_side)
        .into_iter()
        .enumerate()
        .map(|(i, n)| body(&mut rng, &format!("fbb-to-qtc {i}"), n))
        .collect();
    let to_fbb: Vec<Vec<u8>> = sizes(&mut rng, per_side)
        .into_iter()
        .enumerate()
        .map(|(i, n)| body(&mut rng, &format!("qtc-to-fbb {i}"), n))
        .collect();
    let mut mail_in = Vec::new();
    for (i, b) in to_qtc.iter().enumerate() {
        mail_in.extend_from_slice(format!("SP N0USR @ N0AAA < N0FBB\nfrom fbb {i}\n").as_bytes());
        mail_in.extend(b.iter().filter(|&&c| c != b'\r'));
        mail_in.extend_from_slice(b"/EX\n");
    }
    let mail_in_path = root.join("data/mail/mail.in");
    std::fs::write(&mail_in_path, mail_in).unwrap();
    let mut import = Vec::new();
    for (i, b) in to_fbb.iter().enumerate() {
        import.extend_from_slice(format!("SP N0XYZ @ N0FBB < N0USR\nfrom qtc {i}\n").as_bytes());
        import.extend_from_slice(b);
        import.extend_from_slice(b"/EX\r\n");
    }
    let import_path = qtc.dir.path().join("to-fbb.txt");
    std::fs::write(&import_path, import).unwrap();
    qtc.import(&import_path, per_side);

    let fbb = start_xfbbd(root);
    assert!(
        until_file(&mail_in_path, PATIENCE, || !mail_in_path.exists()),
        "xfbbd did not import mail.in"
    );
    let mut console = Console::open(root, fbb.console_port);
    match caller {
        // The sysop's `FW N0AAA` at the console: forward to N0AAA now.
        Caller::Xfbbd | Caller::XfbbdToTelnetPort => {
            console.say("FW N0AAA");
            // xfbbd takes about a second for each message in MBL: a session may be long.
            let ended = "forwarding session ended partner=N0FBB";
            qtc.wait_for_log_within(ended, common::SESSION_PATIENCE);
        }
        Caller::Qtc => {
            console.add_bbs_user("N0AAA", QTC_ON_FBB_PW);
            let out = qtc.forward_ok("N0FBB", &qtc);
            assert!(
                out.contains(&format!("{per_side} received, {per_side} sent")),
                "{out}"
            );
        }
    }
    qtc.wait_for_log(&format!("mode={mode}"));
    let log = qtc.log();
    assert!(
        !log.contains("forwarding session failed"),
        "{}",
        common::tail(&log, 6000)
    );

    // Everything xfbbd sent is here, byte for byte (after the header lines xfbbd adds).
    let listed = qtc.listed();
    let from_fbb: Vec<_> = listed.iter().filter(|m| m.from == "N0FBB").collect();
    assert_eq!(from_fbb.len(), per_side, "{}", common::tail(&log, 6000));
    let numbers: Vec<u64> = from_fbb.iter().map(|m| m.number).collect();
    let shown: Vec<Shown> = qtc.show_many(&numbers);
    for b in &to_qtc {
        assert!(
            shown.iter().any(|s| s.body.ends_with(b)),
            "not arrived intact: {:?}",
            String::from_utf8_lossy(&b[..20])
        );
    }
    // And everything qtc sent is in xfbbd's message files.
    let stored = fbb_messages(root);
    for b in &to_fbb {
        // The tag line, CR LF included ("... 1" is not "... 19").
        let tag = &b[..=b.iter().position(|&c| c == b'\n').unwrap()];
        let as_stored = stored
            .iter()
            .find(|m| m.windows(tag.len()).any(|w| w == tag));
        assert!(
            as_stored.is_some_and(|m| m.ends_with(b)),
            "not in xfbbd intact: {:?}, stored as {:?}",
            String::from_utf8_lossy(b),
            as_stored.map(|m| String::from_utf8_lossy(m))
        );
    }
    eprintln!(
        "xfbbd, {mode}, {} calling: {} xfbbd -> qtc and {} qtc -> xfbbd, each once, byte for byte",
        if caller == Caller::Qtc {
            "qtc"
        } else {
            "xfbbd"
        },
        to_qtc.len(),
        to_fbb.len()
    );

    drop(console);
    drop(fbb);
}

/// An SMTP body that ends a message wherever it is read raw, each end followed by send lines,
/// and one a partner relays in B1 with ^Z lines too (issue 35; `common::forging`): xfbbd
/// stores each as one message, whole (each such line with one space more before it), and no
/// other. qtc calls (xfbbd calls only when it has mail for qtc).
fn forging_to_xfbbd(protocol: &str, mode: &str) {
    if !Path::new(XFBBD).exists() {
        assert!(
            std::env::var_os("QTC_REQUIRE_XFBBD").is_none(),
            "QTC_REQUIRE_XFBBD is set but {XFBBD} is missing"
        );
        return;
    }
    let telnet_port = free_port();
    let qtc = Daemon::start_bbs(
        "N0AAA",
        &[
            ("N0FBB", "fbbpw", "--bbs"),
            ("N0USR", "pw", ""),
            ("N0PTR", "ptrpw", "--bbs"),
        ],
        &format!(
            "{}{}[mail]\nsmtp_listen = \"127.0.0.1:0\"\n",
            partner(Caller::Qtc, protocol, telnet_port),
            forging::RELAY_PARTNER
        ),
    );
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    fbb_tree(root, telnet_port, qtc.fwd_port.unwrap(), "fbbpw");
    let smtp = std::net::TcpStream::connect(("127.0.0.1", qtc.listener_port("smtp"))).unwrap();
    let body = forging::text(&forging::smtp_lines());
    forging::submit(smtp, "N0USR", "pw", "N0XYZ@N0FBB", "forging", &body);
    let relay = std::net::TcpStream::connect(("127.0.0.1", qtc.fwd_port.unwrap())).unwrap();
    let relayed = forging::text(&forging::relayed_lines());
    forging::deliver_b1(
        relay,
        "N0PTR",
        "ptrpw",
        ("N0XYZ", "N0FBB"),
        "RELAY1_N0PTR",
        &relayed,
    );

    let fbb = start_xfbbd(root);
    let mut console = Console::open(root, fbb.console_port);
    console.add_bbs_user("N0AAA", QTC_ON_FBB_PW);
    let out = qtc.forward_ok("N0FBB", &qtc);
    assert!(out.contains("0 received, 2 sent"), "{out}");
    qtc.wait_for_log(&format!("mode={mode}"));
    let log = qtc.log();
    assert!(
        !log.contains("forwarding session failed"),
        "{}",
        common::tail(&log, 6000)
    );
    let stored = fbb_messages(root);
    let shown = || {
        stored
            .iter()
            .map(|m| String::from_utf8_lossy(m).into_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(stored.len(), 2, "{:?}", shown());
    for want in forging::both_escaped(protocol == "b1") {
        let want = forging::text(&want);
        assert!(
            stored.iter().any(|m| m.ends_with(&want)),
            "not stored whole: {:?} in {:?}",
            String::from_utf8_lossy(&want),
            shown()
        );
    }
    drop(console);
    drop(fbb);
}

#[test]
fn a_body_written_to_forge_mail_arrives_whole_at_xfbbd_and_forges_nothing() {
    for (protocol, mode) in [("mbl", "Mbl"), ("fbb", "FbbAscii"), ("b1", "B1")] {
        forging_to_xfbbd(protocol, mode);
    }
}
