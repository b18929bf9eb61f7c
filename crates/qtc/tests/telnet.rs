//! The telnet BBS end to end: the real daemon on an ephemeral loopback port, a real TCP client,
//! a real SQLite file.

mod common;

use common::{cli, config_path, Client, Daemon, BASE_CONFIG};

const IAC: u8 = 255;
const DO: u8 = 253;
const WILL: u8 = 251;
const WONT: u8 = 252;
const TTYPE: u8 = 24;
const ECHO: u8 = 1;

#[test]
fn send_list_read_kill_over_telnet() {
    let d = Daemon::start("");
    assert!(
        d.stdout.iter().any(|l| l.starts_with("data: ")),
        "{:?}",
        d.stdout
    );

    let mut oth = d.login("N0OTH", "x");
    oth.send("SP N0USR @ N0CALL.#NCA.CA.USA.NOAM");
    oth.expect("Subject:");
    oth.send("Field day");
    oth.expect("Enter message, end with /EX or ^Z:");
    // A telnet client doubles 0xFF (IAC IAC); the BBS must store one.
    oth.send_raw(b"Meet at the club.\r\n73 de N0OTH \xff\xff\xfe\x80\r\n/EX\r\n");
    let stored = oth.expect("de N0CALL>");
    assert!(
        stored.contains("Message #1 stored, BID 1_N0CALL"),
        "{stored}"
    );
    oth.send("B");
    oth.expect_close();

    let mut usr = d.connect();
    // Prompts are whole lines (wl2k-go reads up to CR and matches the first word).
    usr.expect("\r\nCallsign:\r\n");
    usr.send("n0usr");
    // The password prompt asks the client to stop echoing, then starts a line of its own.
    usr.expect_bytes(&[IAC, WILL, ECHO, b'\r', b'\n']);
    usr.expect_bytes(b"Password:\r\n");
    usr.send("pw");
    let greeting = usr.expect("de N0CALL>");
    assert!(greeting.contains("You have 1 message, 1 new"), "{greeting}");

    usr.send("L");
    let list = usr.expect("de N0CALL>");
    assert!(
        list.contains("Msg#   TSLD   Size To     @BBS    From   Date/Time Subject"),
        "{list}"
    );
    assert!(list.contains("PN"), "{list}");
    assert!(list.contains("N0USR  @N0CALL N0OTH"), "{list}");
    assert!(list.contains("Field day"), "{list}");

    usr.send("R 1");
    let read = usr.expect("de N0CALL>");
    assert!(read.contains("Subject: Field day"), "{read}");
    assert!(read.contains("Meet at the club.\r\n"), "{read}");

    let json = d.messages();
    assert_eq!(json.len(), 1);
    assert!(json[0].contains("\"status\":\"Y\""), "{}", json[0]);
    assert!(json[0].contains("\"bid\":\"1_N0CALL\""), "{}", json[0]);
    // The body's bytes, 0xFF included (doubled as IAC IAC on the wire), are stored as sent.
    let show = d.cli(&["msg", "show", "1"]);
    assert!(
        show.stdout.windows(4).any(|w| w == b"\xff\xfe\x80\r"),
        "{show:?}"
    );

    usr.send("K 1");
    assert!(usr.expect("de N0CALL>").contains("Message #1 killed."));
    assert!(d.messages()[0].contains("\"status\":\"K\""));
}

#[test]
fn bad_passwords_close_the_connection() {
    let d = Daemon::start("");
    let mut c = d.connect();
    for _ in 0..3 {
        c.expect("Callsign:");
        c.send("N0USR");
        c.expect("Password:");
        c.send("guess");
        c.expect("Login incorrect.");
    }
    let end = c.expect_close();
    assert!(end.contains("Too many failed logins"), "{end}");
}

#[test]
fn telnet_negotiation_is_answered_and_never_reaches_the_bbs() {
    let d = Daemon::start("");
    let mut c = d.login("N0USR", "pw");
    // A client asking for terminal type in the middle of a command line.
    c.send_raw(&[b'L', IAC, DO, TTYPE, b'B', b'\r', b'\n']);
    c.expect_bytes(&[IAC, WONT, TTYPE]);
    let out = c.expect("de N0CALL>");
    assert!(out.contains("No messages."), "LB expected: {out}");
}

#[test]
fn bad_commands_and_long_lines_get_a_hint_and_keep_the_session() {
    let d = Daemon::start("");
    let mut c = d.login("N0USR", "pw");
    c.send("FROBNICATE");
    assert!(c
        .expect("de N0CALL>")
        .contains("Unknown command FROBNICATE. Type H for help."));
    c.send(&"X".repeat(1000));
    assert!(c.expect("de N0CALL>").contains("Line too long"));
    c.send("V");
    assert!(c.expect("de N0CALL>").contains("qtc 0.1"));
}

#[test]
fn a_session_dropped_mid_message_stores_nothing() {
    let d = Daemon::start("");
    let mut c = d.login("N0USR", "pw");
    c.send("SB ALL @ WW");
    c.expect("Subject:");
    c.send("Half written");
    c.expect("Enter message");
    c.send("first line of a message that never ends");
    drop(c);
    // The next user sees nothing, and the store has nothing.
    let mut c2 = d.login("N0OTH", "x");
    c2.send("LL 10");
    assert!(c2.expect("de N0CALL>").contains("No messages."));
    assert!(d.messages().is_empty());
}

#[test]
fn sigterm_stops_cleanly_and_keeps_the_mail() {
    let mut d = Daemon::start("");
    let mut c = d.login("N0USR", "pw");
    c.send("SP N0OTH");
    c.expect("Subject:");
    c.send("Kept");
    c.expect("Enter message");
    c.send("/EX");
    c.expect("de N0CALL>");
    let status = d.stop();
    assert!(status.success(), "{status:?}");
    let bye = c.expect_close();
    assert!(bye.contains("shutting down"), "{bye}");
    assert_eq!(d.messages().len(), 1);
    let check = d.cli(&["msg", "show", "1"]);
    assert!(String::from_utf8_lossy(&check.stdout).contains("Subject: Kept"));
}

#[test]
fn a_user_pasting_a_large_message_is_served() {
    let d = Daemon::start("");
    let mut c = d.login("N0USR", "pw");
    c.send("SP N0OTH");
    c.expect("Subject:");
    c.send("Paste");
    c.expect("Enter message");
    let line =
        "The quick brown fox jumps over the lazy dog 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ\r\n";
    let mut paste = line.repeat(64 * 1024 / line.len());
    paste.push_str("/EX\r\n");
    c.send_raw(paste.as_bytes());
    let out = c.expect("de N0CALL>");
    assert!(out.contains("Message #1 stored"), "{out}");
    let json = d.messages();
    let size = (64 * 1024 / line.len()) * line.len();
    assert!(json[0].contains(&format!("\"size\":{size}")), "{}", json[0]);
}

#[test]
fn a_full_store_refuses_a_message_and_the_bbs_goes_on() {
    // A 1 MiB store quota ([store] max_mb) stands in for a full disk.
    let dir = tempfile::tempdir().unwrap();
    let config = BASE_CONFIG.replace("[store]\n", "[store]\nmax_mb = 1\n");
    std::fs::write(config_path(dir.path()), config).unwrap();
    let out = cli(
        dir.path(),
        &["user", "add", "N0USR", "--password", "pw"],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    let d = Daemon::start_in(dir);
    let mut c = d.login("N0USR", "pw");
    let send = |c: &mut Client, subject: &str, body: &str| {
        c.send("SP N0OTH");
        c.expect("Subject:");
        c.send(subject);
        c.expect("Enter message");
        c.send_raw(format!("{body}/EX\r\n").as_bytes());
        c.expect("de N0CALL>")
    };
    let line = "0123456789 the store has room for this line, but not for 1.5 MB of them\r\n";
    let big = line.repeat(1_500_000 / line.len());
    let out = send(&mut c, "Too big for the store", &big);
    assert!(
        out.contains("*** The message store is full: message not stored. Please tell the sysop."),
        "{out}"
    );
    // Nothing half-stored; the session and the daemon go on, and a small message fits.
    assert!(d.messages().is_empty());
    let out = send(&mut c, "Small", "fits\r\n");
    assert!(out.contains("Message #1 stored"), "{out}");
    assert_eq!(d.messages().len(), 1);
    d.wait_for_log("message store full");
}

#[test]
fn session_limit_refuses_politely_and_keeps_a_place_for_the_sysop() {
    let d = Daemon::start("max_sessions = 1\n");
    let _first = d.login("N0USR", "pw");
    let mut second = Client::connect(d.port);
    second.expect("Callsign:");
    second.send("N0OTH");
    second.expect("Password:");
    second.send("x");
    let out = second.expect_close();
    assert!(out.contains("all 1 sessions are in use"), "{out}");
    assert!(!out.contains("de N0CALL>"), "{out}");
    // Every user place is taken, but the sysop still gets in.
    let _sysop = d.login("N0SYS", "root");
}

#[test]
fn connections_per_address_are_limited() {
    let d = Daemon::start("max_per_address = 2\n");
    let _a = d.login("N0USR", "pw");
    let _b = d.login("N0OTH", "x");
    let mut third = Client::connect(d.port);
    let out = third.expect_close();
    assert!(
        out.contains("Too many connections from your address"),
        "{out}"
    );
}

#[test]
fn a_silent_session_is_closed_with_a_message() {
    let d = Daemon::start("[limits]\nidle_timeout = \"1s\"\n");
    let mut c = d.login("N0USR", "pw");
    let out = c.expect_close();
    assert!(out.contains("idle for too long"), "{out}");
}

#[test]
fn log_modules_set_levels_per_module() {
    // [log] level is info; qtc::daemon is turned down to warn, the BBS session keeps info.
    let d = Daemon::start("[log.modules]\n\"qtc::daemon\" = \"warn\"\n");
    let mut c = d.login("N0USR", "pw");
    c.send("B");
    c.expect_close();
    d.wait_for_log("logged in");
    let log = d.log();
    assert!(!log.contains("qtc::daemon: ready"), "{log}");
}

#[test]
fn logins_cost_the_daemon_no_argon2_memory_and_non_callsigns_are_never_logged() {
    let d = Daemon::start("");
    let mut c = d.connect();
    // A password typed a line early, at `Callsign:`: refused without echo or log.
    c.expect("Callsign:");
    let before = peak_rss_kb(d.child.id());
    c.send("MySecretPassw0rd!");
    c.expect("not a callsign");
    // An unknown callsign is asked for a password and checked (against a dummy hash) like a
    // real one.
    c.expect("Callsign:");
    c.send("N9ZZZ");
    c.expect("Password:");
    c.send("pw");
    c.expect("Login incorrect.");
    c.expect("Callsign:");
    c.send("N0USR");
    c.expect("Password:");
    c.send("pw");
    c.expect("de N0CALL>");
    d.wait_for_log("login failed: not a callsign");
    d.wait_for_log("call=N9ZZZ");
    let log = d.log();
    assert!(!log.contains("MySecret"), "{log}");
    // Three argon2 checks ran (19 MiB each), in helper processes: the daemon's peak resident
    // memory never grew by one.
    let after = peak_rss_kb(d.child.id());
    assert!(
        after < before + 19 * 1024,
        "peak RSS {before} kB before the logins, {after} kB after"
    );
}

/// The process's peak resident memory so far (`VmHWM`).
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A scripted client that sends its commands and closes its sending side
/// (`printf 'LL 1\r' | nc -N`) still gets every answer before the session ends.
#[test]
fn a_client_that_closes_its_sending_side_gets_its_answers() {
    let d = Daemon::start("");
    let mut c = d.login("N0USR", "pw");
    c.send("I");
    c.stream.shutdown(std::net::Shutdown::Write).unwrap();
    c.expect("active messages");
    c.expect_close();
}
