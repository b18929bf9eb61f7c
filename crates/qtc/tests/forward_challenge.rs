//! qtc calls partners that challenge the caller after the login: a Winlink-style partner that
//! sends `;PQ:` with its SID and an FBB partner that sends a `SYS` challenge in its MD5 form. The
//! partners are played here over real TCP; qtc is the real daemon.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use common::{Client, Daemon};

/// A daemon N0AAA whose partner N0PTR listens at `port` and knows `secret`.
fn caller(port: u16, protocol: &str) -> Daemon {
    Daemon::start_bbs(
        "N0AAA",
        &[],
        &format!(
            "[[partner]]\ncallsign = \"N0PTR\"\nconnect = \"tcp:127.0.0.1:{port}\"\n\
             password = \"FOOBAR\"\nprotocol = \"{protocol}\"\nroutes = [\"N0PTR\"]\n"
        ),
    )
}

/// Accepts qtc's call and walks it through `Callsign`/`Password`.
fn accept_and_log_in(l: &TcpListener, prompts: (&str, &str)) -> Client {
    let (stream, _) = l.accept().unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut c = Client {
        stream,
        seen: Vec::new(),
    };
    c.send_raw(prompts.0.as_bytes());
    c.expect("N0AAA\r");
    c.send_raw(prompts.1.as_bytes());
    c.expect("FOOBAR\r");
    c
}

/// qtc (N0AAA) calls a partner played here: the login, then `challenge` (the partner's lines
/// up to its prompt, checking qtc's answers), then an empty exchange: qtc has nothing queued
/// (`FF`), neither has the partner (`FQ`), and the call ends well.
fn call_with(protocol: &str, prompts: (&str, &str), challenge: impl FnOnce(&mut Client)) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = caller(l.local_addr().unwrap().port(), protocol);
    std::thread::scope(|s| {
        let call = s.spawn(|| a.ctl(&["forward", "N0PTR"]));
        let mut p = accept_and_log_in(&l, prompts);
        challenge(&mut p);
        p.expect("FF\r");
        p.send_raw(b"FQ\r");
        let out = call.join().unwrap();
        assert!(out.contains("ok: N0PTR: 0 received, 0 sent"), "{out}");
    });
}

#[test]
fn answers_a_winlink_secure_login() {
    call_with("b2", ("Callsign: ", "Password: "), |p| {
        p.send_raw(b"[WL2K-5.0-B2FWIHJM$]\r;PQ: 23753528\rCMS>\r");
        let sid = p.expect("\r");
        assert!(sid.starts_with("[QTC-"), "{sid:?}");
        // The published answer for this challenge and secret.
        assert_eq!(p.expect("\r"), ";PR: 72768415\r");
    });
}

#[test]
fn answers_an_fbb_sys_challenge_in_md5_form() {
    call_with("b1", ("Callsign : ", "Password : "), |p| {
        p.send_raw(b"3 1 4 1 5 0123456789\r");
        // Upper-case hex MD5 of "0123456789" followed by the secret.
        assert_eq!(p.expect("\r"), "21403A08E933437AC0F17103974DCF26\r");
        p.send_raw(b"[FBB-7.0.12-AB1FHMRX$]\rN0PTR BBS >\r");
        let sid = p.expect("\r");
        assert!(sid.starts_with("[QTC-"), "{sid:?}");
    });
}
