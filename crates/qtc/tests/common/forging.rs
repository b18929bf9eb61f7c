//! A message body written to forge mail wherever a partner reads it as protocol (issue 35): a
//! forged R: line, the ends of a message every BBS knows (`/EX`, `/ex`, ^Z, LinFBB's `/AB`,
//! JNOS's 127-byte pieces) each followed by send lines `< N0SYS`. It reaches qtc from a user
//! by SMTP (which takes no control characters: the ^Z lines stay out) or from a partner in B1
//! (whose R: lines are the partner's word: the forged one stays out); every partner qtc
//! forwards it to must store it whole, and nothing else.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use qtc_fbb::wire::{block, proposal};

use super::Client;

/// The line JNOS reads in two pieces, the second `/EX`.
pub fn long_line() -> Vec<u8> {
    let mut l = vec![b'a'; 127];
    l.extend_from_slice(b"/EX");
    l
}

/// Every line of the body.
fn all_lines() -> Vec<Vec<u8>> {
    let lines: [&[u8]; 18] = [
        b"R:260101/0000Z @:N0SYS.#NCA.CA.USA.NOAM #:1 $:FORGED0",
        b"Dear sysop,",
        b"/EX",
        b"SP N0USR @ N0QQQ < N0SYS $FORGED1",
        b"Forged personal",
        b"/ex",
        b"SB ALL @ WW < N0SYS $FORGED2",
        b"Forged bulletin",
        b"x",
        b"\x1a",
        b"SP N0USR @ N0QQQ < N0SYS $FORGED3",
        b"Forged after a Ctrl-Z",
        b"/EXIT or /ABORT: LinFBB ends or aborts a message at a line starting so",
        b"/ABORT",
        b"  /EX",
        b"x\x1a",
        b"LONG",
        b"end of text",
    ];
    lines
        .iter()
        .map(|l| {
            if *l == b"LONG" {
                long_line()
            } else {
                l.to_vec()
            }
        })
        .collect()
}

/// The body as a user submits it by SMTP (without the ^Z lines, which SMTP refuses).
pub fn smtp_lines() -> Vec<Vec<u8>> {
    all_lines()
        .into_iter()
        .filter(|l| !l.contains(&0x1a))
        .collect()
}

/// The body as a partner sends it in B1 (without the forged R: line, which would be the
/// partner's own).
pub fn relayed_lines() -> Vec<Vec<u8>> {
    all_lines().into_iter().skip(1).collect()
}

/// `lines` as a partner that is not qtc stores them (docs/forwarding.md): a blank line before
/// the body's own R: line (the R: lines above it are the BBSes'), one space more before each
/// line a receiver would read as protocol (and before JNOS's second piece of the long line).
/// `ctrl_z` (B0, B1): the ^Z bytes travel, a line ending with one with a space more after it;
/// else (MBL, FBB ASCII) they are left out.
pub fn escaped(lines: &[Vec<u8>], ctrl_z: bool) -> Vec<Vec<u8>> {
    let at_risk = |s: &[u8]| {
        let s = s.trim_ascii_start().to_ascii_uppercase();
        s.starts_with(b"/EX") || s.starts_with(b"/AB") || s.first() == Some(&0x1a)
    };
    let mut out = Vec::new();
    if lines.first().is_some_and(|l| l.starts_with(b"R:")) {
        out.push(Vec::new());
    }
    for l in lines {
        let mut l: Vec<u8> = l.iter().copied().filter(|&b| ctrl_z || b != 0x1a).collect();
        if at_risk(&l) {
            l.insert(0, b' ');
        } else if l.len() > 127 && at_risk(&l[127..]) {
            l.insert(127, b' ');
        }
        if l.trim_ascii_end().last() == Some(&0x1a) {
            l.push(b' ');
        }
        out.push(l);
    }
    out
}

/// Lines joined, each ended by CR LF.
pub fn text(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Submits a message by SMTP on `stream` (AUTH PLAIN as `user`), to `rcpt`.
pub fn submit(stream: TcpStream, user: &str, pw: &str, rcpt: &str, subject: &str, body: &[u8]) {
    stream
        .set_read_timeout(Some(super::PATIENCE))
        .expect("a read timeout");
    let mut w = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    let mut expect = |code: &str| loop {
        let mut line = String::new();
        r.read_line(&mut line).expect("an SMTP reply");
        assert!(line.starts_with(code), "SMTP: {line:?}, not {code}");
        if line.as_bytes().get(3) == Some(&b' ') {
            break;
        }
    };
    expect("220");
    let mut say = |bytes: &[u8], code: &str| {
        w.write_all(bytes).unwrap();
        expect(code);
    };
    say(b"EHLO client.example\r\n", "250");
    let plain = base64(format!("\0{user}\0{pw}").as_bytes());
    say(format!("AUTH PLAIN {plain}\r\n").as_bytes(), "235");
    say(
        format!("MAIL FROM:<{user}@client.example>\r\n").as_bytes(),
        "250",
    );
    say(format!("RCPT TO:<{rcpt}>\r\n").as_bytes(), "250");
    say(b"DATA\r\n", "354");
    let mut data =
        format!("From: {user}@client.example\r\nTo: {rcpt}\r\nSubject: {subject}\r\n\r\n")
            .into_bytes();
    // Dot-stuffed, as every SMTP client sends a body.
    for line in body.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(b".") {
            data.push(b'.');
        }
        data.extend_from_slice(line);
    }
    data.extend_from_slice(b".\r\n");
    say(&data, "250");
    say(b"QUIT\r\n", "221");
}

fn base64(data: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, &b| n << 8 | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A LinBPQ partner (its SID; logged in as `call` with `pw` on qtc's forwarding port at
/// `stream`) sends one personal message `TO @ AT` in B1 with `text`, and ends the session once
/// qtc has stored it.
pub fn deliver_b1(
    stream: TcpStream,
    call: &str,
    pw: &str,
    to_at: (&str, &str),
    bid: &str,
    text: &[u8],
) {
    stream
        .set_read_timeout(Some(std::time::Duration::from_millis(200)))
        .unwrap();
    let mut c = Client {
        stream,
        seen: Vec::new(),
    };
    c.expect("Callsign:");
    c.send_raw(format!("{call}\r").as_bytes());
    c.expect("Password:");
    c.send_raw(format!("{pw}\r").as_bytes());
    c.expect(">\r");
    c.send_raw(b"[BPQ-6.0.25.23-B12FWIHJM$]\r");
    let (to, at) = to_at;
    let line = format!("FA P {call} {at} {to} {bid} {}", text.len());
    let sum = proposal::checksum_value(proposal::checksum_add(0, line.as_bytes()));
    c.send_raw(format!("{line}\rF> {sum:02X}\r").as_bytes());
    c.expect("FS Y");
    let file = qtc_lzhuf::compress_with_crc(&qtc_lzhuf::fbb_text(text));
    let mut wire = Vec::new();
    block::encode(b"forging, relayed", 0, &file, &mut wire);
    c.send_raw(&wire);
    c.expect("FF");
    c.send_raw(b"FQ\r");
    c.expect_close();
}

/// The partner entry and user that [`deliver_b1`] needs on qtc: N0PTR, password `ptrpw`.
pub const RELAY_PARTNER: &str = "[[partner]]\ncallsign = \"N0PTR\"\nroutes = [\"N0PTR\"]\n";

/// What a partner stores of the two messages: (the text of each, escaped as it should be
/// there) for the SMTP one and the relayed one. `ctrl_z`: as [`escaped`].
pub fn both_escaped(ctrl_z: bool) -> [Vec<Vec<u8>>; 2] {
    [
        escaped(&smtp_lines(), ctrl_z),
        escaped(&relayed_lines(), ctrl_z),
    ]
}
