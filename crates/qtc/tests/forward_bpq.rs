//! qtc calling a LinBPQ BBS, played from LinBPQ 6.0.25's source (MBLRoutines.c and its
//! FBBPORT): no login prompts, CR-only lines, a bare `>` to a non-BPQ SID (MBL only), `F>`
//! read as the reverse-forward request, `*** DONE` and a disconnect at the end.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use common::Daemon;

const BPQ_HELLO: &[u8] = b"[BPQ-6.0.25.23-B12FWIHJM$]\rHello from N0BPQ's BBS\rde N0BPQ>\r";

/// Reads until `end` has arrived; returns everything read.
fn read_until(s: &mut TcpStream, end: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    let mut b = [0u8; 4096];
    while !got.windows(end.len()).any(|w| w == end) {
        let n = s.read(&mut b).expect("read from qtc");
        assert!(n > 0, "qtc closed; got {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&b[..n]);
    }
    got
}

/// Accepts qtc's call and checks its prompt-less login: `CALL CR password CR`, no LF.
fn accept_login(l: &TcpListener) -> TcpStream {
    let (mut s, _) = l.accept().unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let login = read_until(&mut s, b"bpqpw\r");
    assert_eq!(login, b"N0AAA\rbpqpw\r");
    s.write_all(BPQ_HELLO).unwrap();
    s
}

fn qtc_calling_bpq(protocol: &str, port: u16) -> Daemon {
    Daemon::start_bbs(
        "N0AAA",
        &[("N0USR", "pw", "")],
        &format!(
            "[[partner]]\ncallsign = \"N0BPQ\"\nconnect = \"tcp:127.0.0.1:{port}\"\n\
             login = \"N0AAA\"\npassword = \"bpqpw\"\nprotocol = \"{protocol}\"\n\
             routes = [\"N0BPQ\"]\n\
             script = [ {{ send = \"{{login}}\" }}, {{ send = \"{{password}}\" }} ]\n"
        ),
    )
}

fn queue_one(d: &Daemon) {
    let mut c = d.connect();
    c.expect("Callsign:");
    c.send("N0USR");
    c.expect("Password:");
    c.send("pw");
    c.expect("de N0AAA>");
    c.send("SP N0XYZ @ N0BPQ");
    c.expect("Subject:");
    c.send("for bpq");
    c.expect("Enter message");
    c.send("hello bpq");
    c.send("/EX");
    assert!(c.expect(">\r\n").contains("stored"));
    c.send("B");
}

#[test]
fn fbb_toward_bpq_falls_back_to_mbl_and_done_is_a_normal_end() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let a = qtc_calling_bpq("fbb", port);
    queue_one(&a);
    let bpq = std::thread::spawn(move || {
        let mut s = accept_login(&l);
        let ours = read_until(&mut s, b"F>\r");
        assert!(ours.starts_with(b"[QTC-"), "{ours:?}");
        assert!(ours.windows(3).any(|w| w == b"FB "), "{ours:?}");
        // `>` for the SID; FB means nothing to BPQ; `F>` asks it to reverse-forward.
        s.write_all(b">\rSP N0AAA @ N0AAA < N0BPQ $5_N0BPQ\r")
            .unwrap();
        read_until(&mut s, b"OK\r");
        s.write_all(
            b"Hello from BPQ\rR:261203/1712Z 5@N0BPQ.#NCA.CA.USA.NOAM BPQ6.0.25\r\r\
              first line\rsecond line\r\r\x1a",
        )
        .unwrap();
        read_until(&mut s, b"F>\r");
        s.write_all(b"*** DONE\r").unwrap();
    });
    let (ok, out) = a.try_ctl(&["forward", "N0BPQ"]);
    bpq.join().unwrap();
    assert!(ok, "{out}\n{}", common::tail(&a.log(), 4000));
    assert!(out.starts_with("ok: N0BPQ: 1 received, 0 sent"), "{out}");
    assert!(a.log().contains("going on in MBL"));
    // The blank line BPQ puts after its R: line is not the body's first line.
    let got = a.listed().into_iter().find(|m| m.from == "N0BPQ").unwrap();
    let shown = String::from_utf8(a.show_raw(got.number)).unwrap();
    let lines: Vec<&str> = shown.lines().map(|l| l.trim_end()).collect();
    let r = lines.iter().position(|l| l.ends_with("BPQ6.0.25")).unwrap();
    assert_eq!(
        lines[r + 1..r + 3],
        ["first line", "second line"],
        "{shown}"
    );
    // Ours stays queued for the next session (an MBL one, once the sysop says so).
    assert!(a.fwd_queue(Some("N0BPQ")).contains("N0XYZ"));
}

#[test]
fn mbl_toward_bpq_reports_a_refused_proposal_and_ends_at_done() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let a = qtc_calling_bpq("mbl", port);
    queue_one(&a);
    let bpq = std::thread::spawn(move || {
        let mut s = accept_login(&l);
        let sid = read_until(&mut s, b"]\r");
        assert!(sid.starts_with(b"[QTC-"), "{sid:?}");
        s.write_all(b">\r").unwrap();
        let sline = read_until(&mut s, b"\r");
        assert!(
            sline.starts_with(b"SP N0XYZ @ N0BPQ < N0USR $"),
            "{sline:?}"
        );
        // BPQ's answer to a BID it has: `NO - BID`, then its prompt.
        s.write_all(b"NO - BID\r>\r").unwrap();
        read_until(&mut s, b"F>\r");
        s.write_all(b"*** DONE\r").unwrap();
    });
    let (ok, out) = a.try_ctl(&["forward", "N0BPQ"]);
    bpq.join().unwrap();
    assert!(ok, "{out}\n{}", common::tail(&a.log(), 4000));
    assert!(
        out.starts_with("ok: N0BPQ: 0 received, 0 sent, 1 refused"),
        "{out}"
    );
}
