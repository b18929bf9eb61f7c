//! qtc calling a LinBPQ BBS, played from LinBPQ 6.0.25's source (MBLRoutines.c and its
//! FBBPORT): no login prompts, CR-only lines, a bare `>` to a non-BPQ SID (MBL only), `F>`
//! read as the reverse-forward request, a bare `>` after a message answered with its next one
//! or, with none left, `F>` (the turn handed back), `*** DONE` and a disconnect at the end.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use common::Daemon;
use qtc_fbb::wire::{block, proposal};

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

/// qtc, with one message queued for N0BPQ and its partner entry offering `protocol`, calls a
/// BPQ played by `bpq` (given the connection after the login); returns qtc and what
/// `qtc ctl forward N0BPQ` said.
fn call_bpq(
    protocol: &str,
    bpq: impl FnOnce(TcpStream) + Send + 'static,
) -> (Daemon, (bool, String)) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let a = qtc_calling_bpq(protocol, port);
    queue_one(&a);
    let played = std::thread::spawn(move || bpq(accept_login(&l)));
    let said = a.try_ctl(&["forward", "N0BPQ"]);
    played.join().unwrap();
    (a, said)
}

#[test]
fn fbb_toward_bpq_falls_back_to_mbl_and_sends_ours_when_bpq_hands_over() {
    let (a, (ok, out)) = call_bpq("fbb", |mut s| {
        let ours = read_until(&mut s, b"F>\r");
        assert!(ours.starts_with(b"[QTC-"), "{ours:?}");
        assert!(ours.windows(3).any(|w| w == b"FB "), "{ours:?}");
        // `>` for the SID; FB means nothing to BPQ; `F>` asks it to reverse-forward.
        s.write_all(b">\rSP N0AAA @ N0AAA < N0BPQ $5_N0BPQ\r")
            .unwrap();
        read_until(&mut s, b"OK\r");
        // LinBPQ's MBL message: its R: line (LinBPQ's stamp), a blank line after it (the
        // message is its own), the body and, after the body's line end, `\r/ex\r`.
        s.write_all(
            b"Hello from BPQ\rR:261203/1712Z 5@N0BPQ.#NCA.CA.USA.NOAM LinBPQ6.0.25\r\r\
              first line\rsecond line\r\r/ex\r",
        )
        .unwrap();
        // qtc still has mail: a bare `>`, and BPQ, with nothing more, hands the turn back.
        let prompt = read_until(&mut s, b">\r");
        assert_eq!(prompt, b">\r", "not F>: BPQ would end the session");
        s.write_all(b"F>\r").unwrap();
        let sline = read_until(&mut s, b"\r");
        assert!(
            sline.starts_with(b"SP N0XYZ @ N0BPQ < N0USR $"),
            "{sline:?}"
        );
        s.write_all(b"OK\r").unwrap();
        let msg = read_until(&mut s, b"\x1a\r");
        assert!(msg.windows(9).any(|w| w == b"hello bpq"), "{msg:?}");
        s.write_all(b">\r").unwrap();
        read_until(&mut s, b"F>\r");
        s.write_all(b"*** DONE\r").unwrap();
    });
    assert!(ok, "{out}\n{}", common::tail(&a.log(), 4000));
    assert!(out.starts_with("ok: N0BPQ: 1 received, 1 sent"), "{out}");
    a.wait_for_log("going on in MBL");
    // The blank line after BPQ's R: line, and the one before its `/ex`, are not the body's.
    let got = a.listed().into_iter().find(|m| m.from == "N0BPQ").unwrap();
    let shown = common::Shown::parse(&a.show_raw(got.number));
    assert_eq!(shown.body, b"first line\r\nsecond line\r\n");
    assert!(a
        .fwd_queue(Some("N0BPQ"))
        .lines()
        .all(|l| !l.contains("N0XYZ")));
}

#[test]
fn fbb_toward_bpq_with_nothing_for_us_is_reported_failed_not_ok() {
    let (a, (_, out)) = call_bpq("fbb", |mut s| {
        read_until(&mut s, b"F>\r");
        // Our `F>` asks it for its mail: it has none, and ends the session.
        s.write_all(b">\r*** DONE\r").unwrap();
    });
    assert!(
        out.starts_with("error: N0BPQ: the partner speaks MBL only"),
        "{out}"
    );
    assert!(a.fwd_queue(Some("N0BPQ")).contains("N0XYZ"), "still queued");
}

#[test]
fn mbl_toward_bpq_reports_a_refused_proposal_and_ends_at_done() {
    let (a, (ok, out)) = call_bpq("mbl", |mut s| {
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
    assert!(ok, "{out}\n{}", common::tail(&a.log(), 4000));
    assert!(
        out.starts_with("ok: N0BPQ: 0 received, 0 sent, 1 refused"),
        "{out}"
    );
}

#[test]
fn b2_from_bpq_is_stored_without_the_blank_line_after_its_r_line() {
    // LinBPQ's B2F message for one it originated (CreateB2Message in FBBRoutines.c): its R:
    // line at the top of the body, then a blank line, as in its other modes.
    let body = b"R:261203/1712Z 5@N0BPQ.#NCA.CA.USA.NOAM LinBPQ6.0.25\r\n\r\nfirst line\r\nsecond line\r\n";
    let mut b2f = format!(
        "MID: 5_N0BPQ\r\nDate: 2026/12/03 17:12\r\nType: Private\r\nFrom: N0BPQ@N0BPQ\r\n\
         To: N0USR@N0AAA\r\nSubject: b2 from bpq\r\nMbo: N0BPQ\r\n\
         Content-Type: text/plain\r\nContent-Transfer-Encoding: 8bit\r\nBody: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    b2f.extend_from_slice(body);
    let file = qtc_lzhuf::compress_with_crc(&b2f);
    let (a, (ok, out)) = call_bpq("b2", move |mut s| {
        // It has ours: `-`; then its own block.
        let mut ours = read_until(&mut s, b"F> ");
        while !ours.ends_with(b"\r") {
            ours.extend(read_until(&mut s, b"\r"));
        }
        let line = format!("FC EM 5_N0BPQ {} {} 0", b2f.len(), file.len());
        let sum = proposal::checksum_value(proposal::checksum_add(0, line.as_bytes()));
        s.write_all(format!("FS -\r{line}\rF> {sum:02X}\r").as_bytes())
            .unwrap();
        read_until(&mut s, b"FS Y\r");
        let mut wire = Vec::new();
        let mut e = block::Encoder::new();
        e.header(b"b2 from bpq", 0, block::OffsetPad::Zero, &mut wire);
        e.data(&file, &mut wire);
        e.finish(&mut wire);
        s.write_all(&wire).unwrap();
        read_until(&mut s, b"FF\r");
        s.write_all(b"FQ\r").unwrap();
    });
    assert!(ok, "{out}\n{}", common::tail(&a.log(), 4000));
    assert!(
        out.starts_with("ok: N0BPQ: 1 received, 0 sent, 1 refused"),
        "{out}"
    );
    let got = a.listed().into_iter().find(|m| m.bid == "5_N0BPQ").unwrap();
    assert_eq!(a.stored_body(got.number), b"first line\r\nsecond line\r\n");
}
