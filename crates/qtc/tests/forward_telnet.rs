//! A partner reached over B's TELNET port (`telnet = true`): A logs in at B's `Callsign:` /
//! `Password:` prompts as the BBS user N0AAA, then forwards. Every 0xFF byte, in message text
//! and in compressed data, must be doubled (IAC IAC) on the wire and undoubled at the other
//! end, both ways.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use common::{check_arrived, gen_messages, write_import, Daemon, GenMsg, Rng};

/// A pass-through TCP proxy to `target` that records what crosses it each way.
struct Tap {
    port: u16,
    /// [A to B, B to A]
    wire: Arc<Mutex<[Vec<u8>; 2]>>,
}

impl Tap {
    fn start(target: u16) -> Tap {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let wire: Arc<Mutex<[Vec<u8>; 2]>> = Arc::default();
        let w = wire.clone();
        std::thread::spawn(move || {
            for a in listener.incoming() {
                let Ok(a) = a else { return };
                let b = TcpStream::connect(("127.0.0.1", target)).unwrap();
                let ends = [
                    (0, a.try_clone().unwrap(), b.try_clone().unwrap()),
                    (1, b, a),
                ];
                for (i, mut from, mut to) in ends {
                    let w = w.clone();
                    std::thread::spawn(move || {
                        let mut buf = vec![0u8; 16 * 1024];
                        loop {
                            match from.read(&mut buf) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => {
                                    w.lock().unwrap()[i].extend_from_slice(&buf[..n]);
                                    if to.write_all(&buf[..n]).is_err() {
                                        break;
                                    }
                                }
                            }
                        }
                        let _ = to.shutdown(Shutdown::Write);
                    });
                }
            }
        });
        Tap { port, wire }
    }
}

fn telnet_pair(protocol: &str) -> (Daemon, Daemon, Tap) {
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs")],
        &format!(
            "[[partner]]\ncallsign = \"N0AAA\"\nprotocol = \"{protocol}\"\n\
             routes = [\"N0AAA\", \"WW\"]\n"
        ),
    );
    let tap = Tap::start(b.port);
    let a = Daemon::start_bbs(
        "N0AAA",
        &[],
        &format!(
            "[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:127.0.0.1:{}\"\ntelnet = true\n\
             password = \"fwdpw\"\nprotocol = \"{protocol}\"\nroutes = [\"N0BBB\", \"WW\"]\n",
            tap.port
        ),
    );
    (a, b, tap)
}

/// Messages dense in 0xFF: runs of it, and pairs that would be telnet commands if they were
/// not escaped (IAC WILL, IAC DO, IAC SB ... IAC SE, IAC NOP, IAC DONT, IAC WONT).
fn iac_messages(prefix: &str, home: &str, other: &str) -> Vec<GenMsg> {
    let tricky: Vec<Vec<u8>> = vec![
        vec![0xff],
        vec![0xff; 7],
        b"\xff\xfbA \xff\xfdC \xff\xfa X\xff\xf0 \xff\xf1".to_vec(),
        b"text \xff\xff\xff\xff end".to_vec(),
        b"\xff\xfe!\xff\xfc\"\xff".to_vec(),
        b"tail 0xff\xff".to_vec(),
    ];
    (0..6)
        .map(|i| {
            let mut lines = Vec::new();
            for k in 0..(1 + i * 200) {
                lines.push(tricky[k % tricky.len()].clone());
            }
            GenMsg {
                kind: if i % 2 == 0 { 'P' } else { 'B' },
                to: if i % 2 == 0 { "N0XYZ" } else { "ALL" }.into(),
                at: if i % 2 == 0 { other } else { "WW" }.into(),
                from: "N0ABC".into(),
                bid: format!("{prefix}F{i}_{home}"),
                subject: format!("IAC test {i}"),
                lines,
            }
        })
        .collect()
}

fn over_telnet(protocol: &str, seed: u64) {
    let (a, b, tap) = telnet_pair(protocol);
    let mut rng = Rng(seed);
    let mut from_a = iac_messages("A", "N0AAA", "N0BBB");
    from_a.extend(gen_messages(&mut rng, 30, "A", "N0AAA", "N0BBB"));
    let mut from_b = iac_messages("B", "N0BBB", "N0AAA");
    from_b.extend(gen_messages(&mut rng, 30, "B", "N0BBB", "N0AAA"));
    let file = write_import(a.dir.path(), "a.txt", &from_a, &mut rng);
    a.import(&file, from_a.len());
    let file = write_import(b.dir.path(), "b.txt", &from_b, &mut rng);
    b.import(&file, from_b.len());

    let out = a.forward_ok("N0BBB", &b);
    let (na, nb) = (from_a.len(), from_b.len());
    assert!(
        out.contains(&format!("ok: N0BBB: {nb} received, {na} sent")),
        "{out}"
    );
    check_arrived(
        &b,
        &from_a.iter().collect::<Vec<_>>(),
        "N0BBB",
        Some("N0AAA"),
        1,
    );
    check_arrived(
        &a,
        &from_b.iter().collect::<Vec<_>>(),
        "N0AAA",
        Some("N0BBB"),
        1,
    );
    // It really went through B's telnet port.
    let log = b.log();
    assert!(
        log.lines()
            .any(|l| l.contains("telnet{") && l.contains("forwarding session started")),
        "{log}"
    );
    assert!(b.fwd_port.is_none());
    // On the wire every 0xFF went doubled, both ways: in text modes the line of four 0xFF
    // shows as eight; compressed data shows IAC IAC pairs.
    {
        let wire = tap.wire.lock().unwrap();
        for (dir, bytes) in ["A to B", "B to A"].iter().zip(wire.iter()) {
            let want: &[u8] = if matches!(protocol, "fbb" | "mbl") {
                b"text \xff\xff\xff\xff\xff\xff\xff\xff end"
            } else {
                b"\xff\xff"
            };
            assert!(
                common::find(bytes, want).is_some(),
                "{dir}: no {want:?} on the wire"
            );
        }
    }
    let out = a.forward_ok("N0BBB", &b);
    assert!(out.contains("ok: N0BBB: 0 received, 0 sent"), "{out}");
}

#[test]
fn b1_over_telnet_keeps_0xff() {
    over_telnet("b1", 0x7e1);
}

#[test]
fn fbb_ascii_over_telnet_keeps_0xff() {
    over_telnet("fbb", 0x7e2);
}

#[test]
fn mbl_over_telnet_keeps_0xff() {
    over_telnet("mbl", 0x7e3);
}

#[test]
fn b2_over_telnet_keeps_0xff() {
    over_telnet("b2", 0x7e4);
}
