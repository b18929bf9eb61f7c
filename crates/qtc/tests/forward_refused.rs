//! A call that cannot log in ends at once with the reason, and the reason stays as the
//! partner's last result: against a qtc that refuses our password, and a LinBPQ-style partner
//! that hangs up after `password:`.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;

use common::Daemon;

/// A caller with one partner, N0BBB, reached at `port` with `password`.
fn caller(port: u16, password: &str) -> Daemon {
    Daemon::start_bbs(
        "N0AAA",
        &[],
        &format!(
            "[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:127.0.0.1:{port}\"\npassword = \"{password}\"\nroutes = [\"N0BBB\"]\n"
        ),
    )
}

#[test]
fn a_wrong_password_at_another_qtc_is_named() {
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs")],
        "[forward]\nlisten = [\"127.0.0.1:0\"]\n[[partner]]\ncallsign = \"N0AAA\"\n",
    );
    let a = caller(b.fwd_port.unwrap(), "wrong");
    let (ok, out) = a.try_ctl(&["forward", "N0BBB"]);
    assert!(!ok, "{out}");
    assert_eq!(
        out.trim(),
        "error: N0BBB refused our login (password)",
        "{}",
        a.log()
    );
    let status = a.ctl(&["status"]);
    assert!(
        status.contains("N0BBB    0 queued; last: we called at ")
            && status.contains("N0BBB refused our login (password)"),
        "{status}"
    );
}

#[test]
fn a_partner_hanging_up_after_the_password_is_named() {
    // A LinBPQ-style stub: `user:`, `password:`, then it hangs up.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        let mut wait = |s: &mut std::net::TcpStream, what: &[u8], seen: &mut Vec<u8>| {
            while common::find(seen, what).is_none() {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0, "caller hung up first");
                seen.extend_from_slice(&buf[..n]);
            }
            seen.clear();
        };
        s.write_all(b"user:").unwrap();
        wait(&mut s, b"N0AAA\r", &mut seen);
        s.write_all(b"password:").unwrap();
        wait(&mut s, b"wrong\r", &mut seen);
        // Dropped: LinBPQ hangs up on a wrong password. (Raw links end login lines in CR alone.)
    });
    let a = caller(port, "wrong");
    let (ok, out) = a.try_ctl(&["forward", "N0BBB"]);
    t.join().unwrap();
    assert!(!ok, "{out}");
    assert!(
        out.starts_with("error: N0BBB closed the connection before its SID"),
        "{out}"
    );
}
