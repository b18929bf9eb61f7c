//! Hostile users and partners (issue 14), through the public interface on loopback: connection
//! floods that never log in, slowloris trickles, password guessing in parallel, sessions that
//! outlive their user, and the web listener's framing and Host checks.
//!
//! Attackers connect from many loopback addresses (127.x.y.z all reach the daemon), since a
//! real flood comes from many hosts and the per-address cap would stop one host alone.
#![allow(clippy::disallowed_methods)]

mod common;
mod radio_util;

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};

use common::{Client, Daemon, PATIENCE};

/// Opens `per_address` connections from each of `addresses` (127.`net`.0.1, .2, ...) to
/// `port`, each sending `first` once; returns them open. A connection the daemon refuses or
/// closes is still returned (the attacker does not care).
fn flood(port: u16, net: u8, addresses: u8, per_address: usize, first: &[u8]) -> Vec<TcpStream> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut held = Vec::new();
        for a in 1..=addresses {
            let from = IpAddr::V4(Ipv4Addr::new(127, net, 0, a));
            for _ in 0..per_address {
                let sock = tokio::net::TcpSocket::new_v4().unwrap();
                sock.bind(SocketAddr::new(from, 0)).unwrap();
                let mut s = sock
                    .connect(SocketAddr::from(([127, 0, 0, 1], port)))
                    .await
                    .unwrap();
                if !first.is_empty() {
                    use tokio::io::AsyncWriteExt;
                    let _ = s.write_all(first).await;
                }
                held.push(s.into_std().unwrap());
            }
        }
        held
    })
}

/// Logs in on `d`'s telnet port; returns the client at the prompt.
fn login(d: &Daemon, call: &str, pw: &str) -> Client {
    let mut c = d.connect();
    c.expect("Callsign:");
    c.send(call);
    c.expect("Password:");
    c.send(pw);
    c.expect(">\r\n");
    c
}

/// Raises this test process's open-file limit to its hard limit; returns it.
fn raise_fd_limit() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    hard
}

/// One HTTP/1.1 request with `Connection: close`: status and whole answer.
fn http(port: u16, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

fn get(port: u16, path: &str, cookie: &str) -> (u16, String) {
    let cookie = if cookie.is_empty() {
        String::new()
    } else {
        format!("Cookie: {cookie}\r\n")
    };
    http(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{cookie}Connection: close\r\n\r\n"),
    )
}

fn post_request(path: &str, cookie: &str, form: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\nConnection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
        form.len()
    )
}

/// The login form's CSRF token and the cookie that goes with it.
fn login_token(port: u16) -> (String, String) {
    let (_, page) = get(port, "/login", "");
    let at = page.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    let token = page[at..at + 32].to_string();
    (token.clone(), format!("qtc_login={token}"))
}

/// Logs in to the dashboard; returns the session cookie, or the refusal's status.
fn web_login(port: u16, call: &str, password: &str) -> Result<String, u16> {
    let (token, cookie) = login_token(port);
    let (status, text) = http(
        port,
        &post_request(
            "/login",
            &cookie,
            &format!("call={call}&password={password}&csrf={token}"),
        ),
    );
    text.lines()
        .find_map(|l| l.strip_prefix("set-cookie: qtc_session="))
        .and_then(|v| v.split(';').next())
        .map(|id| format!("qtc_session={id}"))
        .ok_or(status)
}

#[test]
fn floods_that_never_log_in_keep_out_no_user_partner_or_sysop() {
    // Scaled to the descriptors this machine allows: each attack connection costs one here
    // and, while held, one in the daemon.
    let limit = raise_fd_limit();
    let per_listener = (((limit.saturating_sub(500)) / 8).min(1000) as usize / 10) * 10;
    assert!(
        per_listener >= 100,
        "open-file hard limit {limit} is too low"
    );
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs"), ("N0USR", "pw", "")],
        "[forward]\nlisten = [\"127.0.0.1:0\"]\n[[partner]]\ncallsign = \"N0AAA\"\n\
         routes = [\"N0AAA\"]\n",
    );
    let a = Daemon::start_bbs(
        "N0AAA",
        &[
            ("N0BBB", "fwdpw", "--bbs"),
            ("N0USR", "pw", ""),
            ("N0SYS", "root", "--sysop"),
        ],
        &format!(
            "[web]\nlisten = \"127.0.0.1:0\"\n[[partner]]\ncallsign = \"N0BBB\"\n\
             connect = \"tcp:127.0.0.1:{}\"\npassword = \"fwdpw\"\nroutes = [\"N0BBB\"]\n",
            b.fwd_port.unwrap()
        ),
    );
    // A calls B's forwarding port while B's telnet and forwarding ports and A's web port are
    // flooded; a user logs in on B's telnet port, a sysop on A's dashboard.
    let addresses = (per_listener / 10) as u8;
    let web = a.web_port();
    let mut held = Vec::new();
    held.extend(flood(b.port, 1, addresses, 10, b""));
    held.extend(flood(b.fwd_port.unwrap(), 2, addresses, 10, b""));
    held.extend(flood(web, 4, addresses, 10, b""));
    // Slowloris: 100 more on each, half a line or half a request, never finished.
    held.extend(flood(b.port, 5, 10, 10, b"N0"));
    held.extend(flood(b.fwd_port.unwrap(), 6, 10, 10, b"N0B"));
    held.extend(flood(web, 8, 10, 10, b"GET / HTTP/1.1\r\nHost: 127"));
    eprintln!(
        "holding {} attack connections ({per_listener} + 100 per listener)",
        held.len()
    );

    let mut u = login(&b, "N0USR", "pw");
    u.send("SP N0USR @ N0AAA");
    u.expect("Subject:");
    u.send("through the flood");
    u.expect("Enter message");
    u.send("it got through\r\n/EX");
    u.expect("stored");
    assert!(web_login(web, "N0SYS", "root").is_ok());
    // The partner forwards.
    a.forward_ok("N0BBB", &b);
    let got = a.listed();
    assert!(
        got.iter().any(|m| m.subject == "through the flood"),
        "{got:?}"
    );
    drop(held);
}

#[test]
fn a_trickle_of_bytes_keeps_no_connection() {
    // The login deadline comes before the idle timeout, so it is the one that fires first.
    let d = Daemon::start("[limits]\nlogin_timeout = \"1s\"\nidle_timeout = \"2s\"\n");
    // Before login: one byte at a time, never a whole line, is closed at the login deadline.
    let trickle = |mut s: TcpStream| {
        std::thread::spawn(move || {
            // The attack itself: a byte every 100 ms until the daemon hangs up (the sleep is
            // the trickle under test, not a wait for something).
            while s.write_all(b"N").is_ok() {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        })
    };
    let mut c = d.connect();
    c.expect("Callsign:");
    trickle(c.stream.try_clone().unwrap());
    // (The goodbye line may be lost to the reset a trickled byte after the close causes: the
    // log says why the daemon closed.)
    c.expect_close();
    d.wait_for_log("no login in time");
    // Logged in: bytes without a line end do not count as activity.
    let mut c = d.login("N0USR", "pw");
    trickle(c.stream.try_clone().unwrap());
    c.expect_close();
    d.wait_for_log("idle for too long");
}

#[test]
fn partners_have_their_own_places() {
    let d = Daemon::start_bbs(
        "N0CALL",
        &[("N0USR", "pw", ""), ("N0BBB", "fwd", "--bbs")],
        "max_sessions = 1\n",
    );
    let _user = d.login("N0USR", "pw");
    // Every user place is taken; the partner still logs in (and gets the SID).
    let mut p = d.connect();
    p.expect("Callsign:");
    p.send("N0BBB");
    p.expect("Password:");
    p.send("fwd");
    let out = p.expect("[QTC");
    assert!(!out.contains("in use"), "{out}");
}

/// A daemon with user N0USR/pw and room for 1,000 logins, started under `prlimit LIMIT`.
fn daemon_with_nofile(limit: &str) -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        common::config_path(dir.path()),
        format!("{}max_logins = 1000\n", common::BASE_CONFIG),
    )
    .unwrap();
    let out = common::cli(
        dir.path(),
        &["user", "add", "N0USR", "--password", "pw"],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    Daemon::start_wrapped(dir, &["prlimit", limit, "--"])
}

#[test]
fn a_daemon_started_with_few_descriptors_raises_its_limit_and_logs_emfile_once() {
    // The hard limit is the soft one: the daemon cannot raise it and runs out.
    let d = daemon_with_nofile("--nofile=64:64");
    let held = flood(d.port, 1, 10, 10, b"");
    // A user waits in the backlog while accept fails; once the flood ends they get in.
    let mut u = Client::connect(d.port);
    d.wait_for_log("accept failed");
    drop(held);
    u.expect("Callsign:");
    u.send("N0USR");
    u.expect("Password:");
    u.send("pw");
    u.expect("de N0CALL>");
    let log = d.log();
    assert_eq!(log.matches("accept failed").count(), 1, "{log}");

    // With room under the hard limit, the daemon raises its soft limit and holds the flood.
    let d = daemon_with_nofile("--nofile=64:4096");
    let held = flood(d.port, 1, 20, 10, b"");
    let _u = d.login("N0USR", "pw");
    d.wait_for_log("open-file limit raised");
    assert!(!d.log().contains("accept failed"), "{}", d.log());
    drop(held);
}

/// A telnet client connecting from `ip` (any 127.x.y.z).
fn connect_from(ip: [u8; 4], port: u16) -> Client {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stream = rt.block_on(async {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind(SocketAddr::from((ip, 0))).unwrap();
        let s = sock
            .connect(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .unwrap();
        s.into_std().unwrap()
    });
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_millis(200)))
        .unwrap();
    Client {
        stream,
        seen: Vec::new(),
    }
}

/// Sends a callsign and password on a fresh connection from `ip`; returns the client after
/// the password went out.
fn try_login(d: &Daemon, ip: [u8; 4], call: &str, pw: &str) -> Client {
    let mut c = connect_from(ip, d.port);
    c.expect("Callsign:");
    c.send(call);
    c.expect("Password:");
    c.send(pw);
    c
}

#[test]
fn parallel_telnet_guesses_are_counted_before_they_are_checked() {
    let d = Daemon::start("max_per_address = 20\n");
    // Twelve guesses at once from one address: ten are checked, two are refused unchecked.
    let mut guesses: Vec<Client> = (0..12)
        .map(|_| {
            let mut c = connect_from([127, 0, 0, 1], d.port);
            c.expect("Callsign:");
            c.send("N0SYS");
            c.expect("Password:");
            c
        })
        .collect();
    for c in &mut guesses {
        c.send("guess");
    }
    // The two past the limit are told so (too many at once, or locked once the first ten
    // have failed), not that their password was wrong.
    let mut wrong = 0;
    for c in &mut guesses {
        let out = c.expect_either("Login incorrect", " N0SYS ");
        wrong += usize::from(out.contains("Login incorrect"));
    }
    assert_eq!(wrong, 10);
    d.wait_for_log_count("login refused unchecked", 2);
    let log = d.log();
    assert_eq!(log.matches("login refused unchecked").count(), 2, "{log}");
    // The account is locked too: its right password from another address is refused, and
    // the refusal says so.
    let mut c = try_login(&d, [127, 0, 0, 2], "N0SYS", "root");
    let out = c.expect_close();
    assert!(
        out.contains("Logins to N0SYS from here are locked"),
        "{out}"
    );
    assert!(!out.contains("de N0CALL>"), "{out}");
    // And the guessing address gets no prompt at all.
    let mut c = connect_from([127, 0, 0, 1], d.port);
    let out = c.expect_close();
    assert!(out.contains("Too many failed logins"), "{out}");
}

#[test]
fn a_good_login_on_another_account_does_not_reset_the_lockout() {
    let d = Daemon::start("[limits]\nlockout_after = 3\n");
    for _ in 0..2 {
        try_login(&d, [127, 0, 0, 1], "N0SYS", "guess").expect("Login incorrect");
    }
    // The attacker's own account logs in fine from the same address...
    try_login(&d, [127, 0, 0, 1], "N0USR", "pw").expect("de N0CALL>");
    // ...and the next wrong guess still completes the lockout.
    let out = try_login(&d, [127, 0, 0, 1], "N0SYS", "guess").expect_close();
    assert!(
        out.contains("Too many failed logins from your address"),
        "{out}"
    );
    let out = connect_from([127, 0, 0, 1], d.port).expect_close();
    assert!(out.contains("Too many failed logins"), "{out}");
}

#[test]
fn sys_guesses_over_ax25_lock_the_sysop_account_out() {
    // An RF caller is identified by its callsign alone; SYS asks the sysop's password.
    let (ours, theirs) = (radio_util::free_udp_port(), radio_util::free_udp_port());
    let d = Daemon::start(&format!(
        "[limits]\nlockout_after = 2\n\
         [[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:{ours}\"\n\
         peers = [{{ callsign = \"N0SYS\", address = \"127.0.0.1:{theirs}\" }}]\nfrack = \"2s\"\n"
    ));
    let spec = format!("axudp:127.0.0.1:{theirs}:127.0.0.1:{ours}");
    let sys = |c: &mut radio_util::Call, password: &str| -> String {
        c.send("SYS");
        c.expect("Password:");
        c.send(password);
        c.expect("de N0CALL>")
    };
    // The port's socket is bound after the start-up report (a SABM before it waits for T1).
    d.wait_for_log("device open port=udp");
    let mut c = radio_util::Call::start(&spec, "N0SYS", "N0CALL");
    c.expect("de N0CALL>");
    for _ in 0..2 {
        let out = sys(&mut c, "guess");
        assert!(out.contains("Wrong password."), "{out}");
    }
    c.send("B");
    assert!(c.finish().success());
    // The account is locked, not the link: on a new link the right password is refused
    // unchecked.
    let mut c = radio_util::Call::start(&spec, "N0SYS", "N0CALL");
    c.expect("de N0CALL>");
    let out = sys(&mut c, "root");
    assert!(out.contains("*** Locked after repeated failures"), "{out}");
    assert!(!out.contains("granted"), "{out}");
    d.wait_for_log_count("login refused unchecked", 1);
    d.wait_for_log_count("SYS: wrong password", 2);
    let log = d.log();
    assert_eq!(log.matches("login refused unchecked").count(), 1, "{log}");
    assert_eq!(log.matches("SYS: wrong password").count(), 2, "{log}");
}

#[test]
fn a_thousand_parallel_web_guesses_check_at_most_ten_and_lock_the_right_one_out() {
    raise_fd_limit();
    let d = Daemon::start(
        "[web]\nlisten = \"127.0.0.1:0\"\nmax_connections = 1100\nmax_per_address = 1100\n",
    );
    let web = d.web_port();
    let (token, cookie) = login_token(web);
    let wrong = post_request(
        "/login",
        &cookie,
        &format!("call=N0SYS&password=guess&csrf={token}"),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let refused = rt.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // All 1,000 sent before any answer is read.
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..1000 {
            let mut s = tokio::net::TcpStream::connect(("127.0.0.1", web))
                .await
                .unwrap();
            s.write_all(wrong.as_bytes()).await.unwrap();
            set.spawn(async move {
                let mut raw = Vec::new();
                let _ = s.read_to_end(&mut raw).await;
                String::from_utf8_lossy(&raw).contains(" 429 ")
            });
        }
        // The refusals come at once; the checked ones wait out their back-off (not awaited).
        let mut refused = 0;
        while refused < 990 {
            match tokio::time::timeout(PATIENCE, set.join_next()).await {
                Ok(Some(Ok(true))) => refused += 1,
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        refused
    });
    assert!(
        refused >= 990,
        "only {refused} of 1000 refused before the check"
    );
    let checked = d.metric("qtc_login_failures_total").unwrap_or(0);
    assert!(checked <= 10, "{checked} guesses were checked");
    // The right password is refused while the lockout lasts.
    assert_eq!(web_login(web, "N0SYS", "root"), Err(429));
}

#[test]
fn web_sessions_end_when_the_user_is_deleted_demoted_or_given_a_new_password() {
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n");
    let web = d.web_port();
    let logged_in = |cookie: &str| get(web, "/", cookie).0 == 200;
    let ok = |args: &[&str], stdin: &str| {
        let out = common::cli(d.dir.path(), args, stdin);
        assert!(out.status.success(), "{out:?}");
    };

    let s = web_login(web, "N0SYS", "root").unwrap();
    assert!(logged_in(&s));
    ok(&["user", "passwd", "N0SYS"], "new-root\n");
    assert!(!logged_in(&s), "a new password ends the session");

    let s = web_login(web, "N0SYS", "new-root").unwrap();
    ok(&["user", "set", "N0SYS", "--sysop", "false"], "");
    assert!(!logged_in(&s), "demotion ends the session");

    ok(
        &["user", "add", "N0SY2", "--password", "two", "--sysop"],
        "",
    );
    let s = web_login(web, "N0SY2", "two").unwrap();
    assert!(logged_in(&s));
    ok(&["user", "del", "N0SY2"], "");
    assert!(!logged_in(&s), "deleting the user ends the session");
    // Deleted and recreated with the same call: the old session stays ended.
    ok(
        &["user", "add", "N0SY2", "--password", "two", "--sysop"],
        "",
    );
    assert!(!logged_in(&s));
}

#[test]
fn the_dashboard_cannot_be_framed_and_answers_only_its_own_host_names() {
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n");
    let web = d.web_port();
    let (status, text) = get(web, "/login", "");
    assert_eq!(status, 200);
    let head = text.to_ascii_lowercase();
    assert!(head.contains("x-frame-options: deny"), "{text}");
    assert!(
        head.contains("content-security-policy: frame-ancestors 'none'"),
        "{text}"
    );
    // DNS rebinding: a name that now points at 127.0.0.1 reaches neither the form nor /metrics.
    for path in ["/login", "/metrics"] {
        let (status, text) = http(
            web,
            &format!(
                "GET {path} HTTP/1.1\r\nHost: attacker.example:{web}\r\nConnection: close\r\n\r\n"
            ),
        );
        assert_eq!(status, 421, "{text}");
        assert!(text.to_ascii_lowercase().contains("x-frame-options: deny"));
    }
    // A configured name is accepted, and then only it.
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\nhosts = [\"bbs.example.org\"]\n");
    let web = d.web_port();
    let req = |host: &str| {
        http(
            web,
            &format!("GET /login HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        )
        .0
    };
    assert_eq!(req(&format!("bbs.example.org:{web}")), 200);
    assert_eq!(req(&format!("127.0.0.1:{web}")), 421);
}

/// Sends a bulletin as a logged-in user; returns what the BBS answered.
fn send_bulletin(c: &mut Client, subject: &str, body: &str) -> String {
    c.send("SB ALL @ WW");
    c.expect("Subject:");
    c.send(subject);
    c.expect("Enter message");
    c.send_raw(body.as_bytes());
    c.send("/EX");
    c.expect("de N0CALL>")
}

#[test]
fn held_mail_is_the_sysops_alone_until_released() {
    let d =
        Daemon::start("[[rule]]\naction = \"hold\"\nfield = \"subject\"\npattern = \"*secret*\"\n");
    let mut author = d.login("N0USR", "pw");
    send_bulletin(&mut author, "top secret", "held body\r\n");
    // Nobody but the sysop lists or reads it, not even its author.
    for (call, pw) in [("N0OTH", "x"), ("N0USR", "pw")] {
        let mut c = d.login(call, pw);
        for cmd in ["LB", "L", "LL 10"] {
            c.send(cmd);
            let out = c.expect("de N0CALL>");
            assert!(!out.contains("top secret"), "{call} {cmd}: {out}");
        }
        c.send("R 1");
        let out = c.expect("de N0CALL>");
        assert!(out.contains("No message #1 for you"), "{out}");
        assert!(!out.contains("held body"), "{out}");
        c.send("K 1");
        let out = c.expect("de N0CALL>");
        assert!(out.contains("No message #1 for you"), "{out}");
    }
    let mut s = d.login("N0SYS", "root");
    s.send("LH");
    assert!(s.expect("de N0CALL>").contains("top secret"));
    s.send("R 1");
    assert!(s.expect("de N0CALL>").contains("held body"));
    // Released, it is everybody's bulletin.
    let out = d.cli(&["msg", "release", "1"]);
    assert!(out.status.success(), "{out:?}");
    let mut c = d.login("N0OTH", "x");
    c.send("LB");
    assert!(c.expect("de N0CALL>").contains("top secret"));
}

#[test]
fn escape_sequences_from_other_people_never_reach_a_terminal_raw() {
    const CLEAR: &str = "\x1b[2J";
    const TITLE: &str = "\x1b]0;pwned\x07";
    const CLIPBOARD: &str = "\x1b]52;c;cm0gLXJmIH4=\x07";
    let d = Daemon::start("");
    let mut evil = d.login("N0OTH", "x");
    evil.send(&format!("N Eve{CLEAR}"));
    evil.expect("de N0CALL>");
    evil.send(&format!("NH N0BBB{TITLE}"));
    evil.expect("de N0CALL>");
    send_bulletin(
        &mut evil,
        &format!("hello{TITLE}"),
        &format!("body{CLEAR}{CLIPBOARD}\u{9b}31m\r\n"),
    );
    // Typed, the escape sequences are dropped on the way in (a terminal's keys send them);
    // forwarded (or imported) they are stored as they came, and shown neutralised.
    let file = d.dir.path().join("evil.txt");
    std::fs::write(
        &file,
        format!("SB ALL @ WW < N0OTH\nhello{TITLE}\nbody{CLEAR}{CLIPBOARD}\u{9b}31m\n/EX\n"),
    )
    .unwrap();
    assert!(d
        .cli(&["msg", "import", file.to_str().unwrap()])
        .status
        .success());
    // A failed login with an escape sequence for a callsign, for the log.
    let mut c = d.connect();
    c.expect("Callsign:");
    c.send(&format!("N0{CLEAR}"));
    c.expect("Callsign:");

    let mut reader = d.login("N0USR", "pw");
    for cmd in ["LB", "R 2", "V 2", "R 1"] {
        reader.send(cmd);
        let out = reader.expect("de N0CALL>");
        assert!(
            !out.contains('\x1b') && !out.contains('\u{9b}'),
            "{cmd}: {out:?}"
        );
        assert!(out.contains("\\x07"), "{cmd}: {out:?}");
        assert_eq!(out.contains("\\x1B"), !cmd.ends_with('1'), "{cmd}: {out:?}");
    }
    // The sysop's command line and the log.
    for args in [&["msg", "list"][..], &["user", "list"]] {
        let out = d.cli(args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains('\x1b'), "{args:?}: {text:?}");
    }
    let users = String::from_utf8_lossy(&d.cli(&["user", "list"]).stdout).into_owned();
    assert!(users.contains("Eve ") && !users.contains("[2J"), "{users}");
    let log = d.log();
    assert!(!log.contains('\x1b'), "{log:?}");
}

#[test]
fn a_station_may_allow_ansi_art_in_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::BASE_CONFIG.replace("[station]\n", "[station]\nraw_bodies = true\n");
    std::fs::write(common::config_path(dir.path()), config).unwrap();
    for (call, pw) in [("N0OTH", "x"), ("N0USR", "pw")] {
        let out = common::cli(dir.path(), &["user", "add", call, "--password", pw], "");
        assert!(out.status.success(), "{out:?}");
    }
    let d = Daemon::start_in(dir);
    let mut artist = d.login("N0OTH", "x");
    send_bulletin(&mut artist, "art\x1b[5m", "\x1b[31mred\x1b[0m\r\n");
    let mut reader = d.login("N0USR", "pw");
    reader.send("R 1");
    let out = reader.expect("de N0CALL>");
    // The body as drawn; the subject, a command's answer, never holds one (typed, it is
    // dropped like an arrow key).
    assert!(out.contains("\x1b[31mred\x1b[0m"), "{out:?}");
    assert!(out.contains("Subject: art\r\n"), "{out:?}");
}

/// The permission bits of a path.
fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_store_and_a_new_config_are_private_whatever_the_umask() {
    // `sh -c 'umask 000; exec qtc ARGS'`: the most open umask there is.
    const UMASK_000: [&str; 3] = ["sh", "-c", "umask 000; exec \"$0\" \"$@\""];
    let run = |dir: &std::path::Path, args: &[&str]| {
        let out = std::process::Command::new(UMASK_000[0])
            .args(&UMASK_000[1..])
            .arg(env!("CARGO_BIN_EXE_qtc"))
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    let init = tempfile::tempdir().unwrap();
    run(init.path(), &["init", "qtc.toml"]);
    assert_eq!(mode(&init.path().join("qtc.toml")), 0o600);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(common::config_path(dir.path()), common::BASE_CONFIG).unwrap();
    run(
        dir.path(),
        &["-c", "qtc.toml", "user", "add", "N0USR", "--password", "pw"],
    );
    let data = dir.path().join("qtc-data");
    let db = data.join("qtc.sqlite");
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&db), 0o600);
    // A store left readable by an older version is made private when next opened.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    // The daemon, under the same umask, writing mail: the WAL is private too.
    let d = Daemon::start_wrapped(dir, &UMASK_000);
    let mut c = d.login("N0USR", "pw");
    send_bulletin(&mut c, "into the WAL", "text\r\n");
    assert_eq!(mode(&data_of(&d)), 0o700);
    for f in ["qtc.sqlite", "qtc.sqlite-wal", "qtc.sqlite-shm"] {
        assert_eq!(mode(&data_of(&d).join(f)), 0o600, "{f}");
    }
}

fn data_of(d: &Daemon) -> std::path::PathBuf {
    d.dir.path().join("qtc-data")
}

#[test]
fn a_user_cannot_fill_the_store_but_the_sysop_is_exempt() {
    let d = Daemon::start("[limits]\nmessages_per_hour = 2\nkb_per_day = 4\n");
    let mut u = d.login("N0USR", "pw");
    for i in 0..2 {
        assert!(send_bulletin(&mut u, &format!("n{i}"), "short\r\n").contains("stored"));
    }
    let out = send_bulletin(&mut u, "n2", "short\r\n");
    assert!(
        out.contains(
            "You have sent 2 messages this hour, the most allowed here: message not stored"
        ),
        "{out}"
    );
    let mut o = d.login("N0OTH", "x");
    let out = send_bulletin(&mut o, "big", &"0123456789abcdef\r\n".repeat(300));
    assert!(out.contains("allowance of 4 KB a day"), "{out}");
    let mut s = d.login("N0SYS", "root");
    for i in 0..3 {
        let out = send_bulletin(
            &mut s,
            &format!("s{i}"),
            &"0123456789abcdef\r\n".repeat(200),
        );
        assert!(out.contains("stored"), "{out}");
    }
    assert_eq!(d.messages().len(), 5);
}

#[test]
fn the_default_quota_from_the_free_disk_is_the_one_status_shows() {
    // `[store] max_mb = 0`, the default: a cap derived from the disk, not "no quota".
    let d = Daemon::start("[web]\nlisten = \"127.0.0.1:0\"\n");
    let status = d.ctl(&["status"]);
    let store = status
        .lines()
        .find(|l| l.starts_with("store:"))
        .unwrap_or_else(|| panic!("{status}"));
    assert!(
        store.contains("B of ") && !store.contains("KiB") && !store.contains("no quota"),
        "{store}"
    );
    let web = d.web_port();
    let cookie = web_login(web, "N0SYS", "root").unwrap();
    let (code, page) = get(web, "/status", &cookie);
    assert_eq!(code, 200, "{page}");
    assert!(
        page.contains("B of ") && !page.contains("KiB") && !page.contains("no quota"),
        "{page}"
    );
}

/// A mail client is told in its protocol's words why it is refused at connect (it was just
/// dropped), and hears the answer to its last wrong password before the close (it heard
/// nothing).
#[test]
fn mail_doors_answer_refusals_and_the_last_wrong_password() {
    let d = Daemon::start(
        "max_per_address = 1\n[mail]\npop3_listen = \"127.0.0.1:0\"\n\
         [web]\nlisten = \"127.0.0.1:0\"\n",
    );
    let pop3 = d.listener_port("pop3");
    let mut first = Client::connect(pop3);
    first.expect("+OK");
    let mut second = Client::connect(pop3);
    let said = second.expect_close();
    assert!(
        said.starts_with("-ERR [SYS/TEMP] Too many connections from your address"),
        "{said:?}"
    );
    // Three wrong passwords: each answered, the third too, then the close.
    for _ in 0..3 {
        first.send("USER N0USR");
        first.expect("+OK");
        first.send("PASS wrong");
        first.expect("-ERR");
    }
    first.expect_close();
    // The mail door's bytes are counted per listener, both ways, as the BBS doors' are.
    for dir in ["in", "out"] {
        let series =
            format!("qtc_port_bytes_total{{port=\"pop3:127.0.0.1:{pop3}\",direction=\"{dir}\"}}");
        assert!(d.metric(&series).is_some_and(|n| n > 0), "{series}");
    }
}

/// An account's sessions are capped at the mail doors as at telnet, every door together.
#[test]
fn one_account_is_capped_across_the_mail_doors() {
    let d = Daemon::start(
        "max_sessions_per_user = 1\n\
         [mail]\npop3_listen = \"127.0.0.1:0\"\nimap_listen = \"127.0.0.1:0\"\n",
    );
    let (pop3, imap) = (d.listener_port("pop3"), d.listener_port("imap"));
    let mut imap = Client::connect(imap);
    imap.expect("* OK");
    imap.send("a LOGIN N0USR pw");
    imap.expect("a OK");
    let mut again = Client::connect(pop3);
    again.expect("+OK");
    again.send("USER N0USR");
    again.expect("+OK");
    again.expect("\r\n");
    again.send("PASS pw");
    let out = again.expect("\r\n");
    assert!(
        out.contains("-ERR") && out.contains("N0USR has 1 sessions open here already"),
        "{out:?}"
    );
}
