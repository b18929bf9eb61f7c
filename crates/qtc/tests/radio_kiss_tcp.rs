//! A KISS TCP port against a TNC played by the test: qtc connects, answers a SABM with UA and
//! the BBS greeting, sends its ID beacon, and reconnects after the TNC drops the connection.
#![allow(clippy::disallowed_methods)]

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::{Daemon, PATIENCE};

fn addr(call: &str, ssid: u8, c: bool, last: bool) -> Vec<u8> {
    let mut v: Vec<u8> = format!("{call:<6}").bytes().map(|b| b << 1).collect();
    v.push(if c { 0x80 } else { 0 } | 0x60 | (ssid << 1) | u8::from(last));
    v
}

fn kiss(frame: &[u8]) -> Vec<u8> {
    let mut out = vec![0xC0, 0x00];
    for &b in frame {
        match b {
            0xC0 => out.extend_from_slice(&[0xDB, 0xDC]),
            0xDB => out.extend_from_slice(&[0xDB, 0xDD]),
            b => out.push(b),
        }
    }
    out.push(0xC0);
    out
}

fn accept(l: &TcpListener) -> TcpStream {
    l.set_nonblocking(false).unwrap();
    let (s, _) = l.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    s
}

/// Reads until `pred` holds for what arrived.
fn read_until(s: &mut TcpStream, what: &str, pred: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let deadline = Instant::now() + PATIENCE;
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !pred(&seen) {
        assert!(Instant::now() < deadline, "never saw {what}: {seen:02x?}");
        match s.read(&mut buf) {
            Ok(0) => panic!("qtc closed the KISS connection before {what}"),
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    seen
}

#[test]
fn kiss_tcp_link_beacon_and_reconnect() {
    let tnc = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tnc.local_addr().unwrap().port();
    let d = Daemon::start_bbs(
        "N0BBB",
        &[],
        &format!(
            "[ax25]\nbbs_ssids = [0, 1]\n[[port]]\nname = \"vhf\"\nkind = \"kiss-tcp\"\n\
             address = \"127.0.0.1:{port}\"\nbeacon = \"1s\"\nbeacon_text = \"N0BBB test BBS\"\n"
        ),
    );
    let mut s = accept(&tnc);
    // The ID beacon: a UI frame to ID carrying the text.
    read_until(&mut s, "the beacon", |b| {
        common::find(b, b"N0BBB test BBS").is_some()
    });
    // SABM from N0ZZZ to N0BBB-1 (an SSID in bbs_ssids).
    let mut sabm = addr("N0BBB", 1, true, false);
    sabm.extend(addr("N0ZZZ", 0, false, true));
    sabm.push(0x3F);
    s.write_all(&kiss(&sabm)).unwrap();
    let got = read_until(&mut s, "the greeting", |b| {
        common::find(b, b"de N0BBB>").is_some()
    });
    // UA with F=1, from N0BBB-1 back to N0ZZZ.
    let mut ua = addr("N0ZZZ", 0, false, false);
    ua.extend(addr("N0BBB", 1, true, true));
    ua.push(0x73);
    assert!(common::find(&got, &kiss(&ua)).is_some(), "{got:02x?}");
    assert!(d.ctl(&["heard"]).contains("N0ZZZ"));
    // The TNC goes away; qtc reconnects after its 1 s backoff (what the log says it waits, not
    // a clock reading: tests assert no wall-clock time).
    drop(s);
    let _s2 = accept(&tnc);
    d.wait_for_log("device down port=vhf reason=the far end hung up retry_in=1s");
}

#[test]
fn kiss_parameters_go_to_the_modem_when_it_opens() {
    // The keying a `[[port]]` sets goes to the modem as KISS commands (spec §1.2: TXDELAY 1,
    // P 2, SlotTime 3, TXtail 4, FullDuplex 5; the channel in the high nibble) before any
    // frame, and again each time the modem is opened.
    let tnc = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tnc.local_addr().unwrap().port();
    let _d = Daemon::start_bbs(
        "N0BBB",
        &[],
        &format!(
            "[[port]]\nname = \"vhf\"\nkind = \"kiss-tcp\"\naddress = \"127.0.0.1:{port}\"\n\
             kiss_port = 1\ntxdelay = 25\npersist = 200\nslottime = 5\ntxtail = 3\n\
             fullduplex = true\nbeacon = \"1s\"\nbeacon_text = \"N0BBB test BBS\"\n"
        ),
    );
    let params: Vec<u8> = [(1u8, 25u8), (2, 200), (3, 5), (4, 3), (5, 1)]
        .iter()
        .flat_map(|&(command, v)| [0xC0, 0x10 | command, v, 0xC0])
        .collect();
    for open in ["first", "second"] {
        let mut s = accept(&tnc);
        let got = read_until(&mut s, "the parameters", |b| b.len() >= params.len());
        assert_eq!(
            &got[..params.len()],
            &params[..],
            "{open} opening: {got:02x?}"
        );
        // Then the beacon, as a data frame on the same channel.
        read_until(&mut s, "the beacon", |b| {
            common::find(b, b"N0BBB test BBS").is_some()
        });
    }
}
