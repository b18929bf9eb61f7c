//! B1 and B2 from partners on links without telnet negotiation: xfbbd calling qtc's raw
//! forwarding port (it doubles 0xFF on every outgoing forwarding link: `iac_escaped`), and
//! raw TCP clients such as JNOS and LinBPQ on qtc's telnet port (they never send a telnet
//! command, double nothing and read no IAC: the telnet port's rule makes their link raw).
//! Their binary blocks carry CR NUL as it is; qtc undoes xfbbd's doubling and takes the raw
//! clients' bytes as they are.

mod common;

use common::{Client, Daemon, Shown};
use qtc_fbb::wire::{block, proposal};

/// A CR LF text of `len` bytes whose B1 file holds both 0xFF and CR NUL (the length header of
/// a 3,328-3,583-byte message always holds CR NUL).
fn awkward_text(len: usize) -> (Vec<u8>, Vec<u8>) {
    let mut x = 0x9e37_79b9_u32;
    let mut text = Vec::with_capacity(len);
    while text.len() < len - 2 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let alphabet = b"abcdefghij KLMNOPQ 0123456789 \xc3\xa4\xc3\xb6 \xe4\xf6\xfc";
        text.push(alphabet[x as usize % alphabet.len()]);
        if x % 61 == 0 {
            text.extend_from_slice(b"\r\n");
        }
    }
    text.truncate(len - 2);
    text.extend_from_slice(b"\r\n");
    let file = qtc_lzhuf::compress_with_crc(&qtc_lzhuf::fbb_text(&text));
    assert!(file.contains(&0xff), "no 0xFF in the compressed file");
    assert!(file.windows(2).any(|w| w == b"\r\0"), "no CR NUL");
    (text, file)
}

fn doubled(data: &[u8]) -> Vec<u8> {
    data.iter()
        .flat_map(|&b| if b == 0xff { vec![0xff, 0xff] } else { vec![b] })
        .collect()
}

/// After the login: SID, one FA proposal, the transfer (0xFF doubled if `escaped`); qtc
/// answers and stores it.
fn send_b1(c: &mut Client, sid: &[u8], bid: &str, text: &[u8], file: &[u8], escaped: bool) {
    let line = format!("FA P N0PTR N0BBS N0USR {bid} {}", text.len());
    send_one(c, sid, &line, file, escaped);
}

/// After the login: SID, one proposal `line`, the transfer of `file` (0xFF doubled if
/// `escaped`); qtc accepts and stores it, has nothing for us, and the session ends.
fn send_one(c: &mut Client, sid: &[u8], line: &str, file: &[u8], escaped: bool) {
    c.send_raw(sid);
    let sum = proposal::checksum_value(proposal::checksum_add(0, line.as_bytes()));
    c.send_raw(format!("{line}\rF> {sum:02X}\r").as_bytes());
    c.expect("FS Y");
    let mut wire = Vec::new();
    block::encode(b"escaped", 0, file, &mut wire);
    c.send_raw(&if escaped { doubled(&wire) } else { wire });
    c.expect("FF");
    c.send_raw(b"FQ\r");
    c.expect_close();
}

fn stored_body(d: &Daemon, bid: &str) -> Vec<u8> {
    let listed = d.listed();
    let m = listed
        .iter()
        .find(|m| m.bid == bid)
        .unwrap_or_else(|| panic!("{bid} not stored: {listed:?}\n{}", d.log()));
    Shown::parse(&d.show_raw(m.number)).body
}

#[test]
fn xfbbd_on_the_raw_port_and_a_raw_client_on_the_telnet_port_deliver_b1_intact() {
    let d = Daemon::start_bbs(
        "N0BBS",
        &[("N0PTR", "ptrpw", "--bbs"), ("N0JNO", "jnopw", "--bbs")],
        "[forward]\nlisten = [\"127.0.0.1:0\"]\n\
         [[partner]]\ncallsign = \"N0PTR\"\niac_escaped = true\nroutes = [\"N0PTR\"]\n\
         [[partner]]\ncallsign = \"N0JNO\"\nroutes = [\"N0JNO\"]\n",
    );
    let (text, file) = awkward_text(3400);

    // xfbbd: raw port, `.CALL` login, every 0xFF doubled.
    let mut c = Client::connect(d.fwd_port.unwrap());
    c.expect("Callsign:");
    c.send_raw(b".N0PTR\r");
    c.expect("Password:");
    c.send_raw(b"ptrpw\r");
    c.expect(">\r");
    send_b1(
        &mut c,
        b"[FBB-7.0.11-AB1FHMRX$]\r",
        "X1_N0PTR",
        &text,
        &file,
        true,
    );
    assert_eq!(stored_body(&d, "X1_N0PTR"), text);

    // JNOS: telnet port, CR LF login, no telnet command: binary as it is (0xFF single, CR NUL).
    let mut c = Client::connect(d.port);
    c.expect("Callsign:");
    c.send_raw(b"N0JNO\r\n");
    c.expect("Password:");
    c.send_raw(b"jnopw\r\n");
    c.expect(">\r\n");
    send_b1(
        &mut c,
        b"[JNOS-2.0o.2-B1FHIM$]\r\n",
        "J1_N0JNO",
        &text,
        &file,
        false,
    );
    assert_eq!(stored_body(&d, "J1_N0JNO"), text);
}

/// LinBPQ logged in on qtc's telnet port: CR-only login lines, no telnet command, its SID.
fn bpq_on_the_telnet_port(d: &Daemon, call: &str, pw: &str) -> Client {
    let mut c = Client::connect(d.port);
    c.expect("Callsign:");
    c.send_raw(format!("{call}\r").as_bytes());
    c.expect("Password:");
    c.send_raw(format!("{pw}\r").as_bytes());
    // Its login lines ended in a bare CR: so do qtc's session lines.
    c.expect(">\r");
    c
}

#[test]
fn linbpq_on_the_telnet_port_delivers_b2_and_b1_intact() {
    // LinBPQ's forwarding script to a telnet port sends no telnet command and doubles no 0xFF
    // (its TCP links are raw): the telnet port takes its blocks byte for byte, in B2 as in B1.
    let d = Daemon::start_bbs(
        "N0BBS",
        &[("N0BPQ", "bpqpw", "--bbs"), ("N0BPR", "bprpw", "--bbs")],
        "[[partner]]\ncallsign = \"N0BPQ\"\nprotocol = \"b2\"\nroutes = [\"N0BPQ\"]\n\
         [[partner]]\ncallsign = \"N0BPR\"\nprotocol = \"b1\"\nroutes = [\"N0BPR\"]\n",
    );
    let sid = b"[BPQ-6.0.25.23-B12FWIHJM$]\r";
    let (text, file) = awkward_text(3400);

    // B2: a B2F message whose body holds 8-bit text; its compressed form 0xFF and CR NUL.
    let mut b2f = format!(
        "Mid: BPQB2MID01\r\nDate: 2026/12/05 10:00\r\nType: Private\r\nFrom: N0BPQ\r\n\
         To: N0USR\r\nSubject: b2 from bpq\r\nMbo: N0BPQ\r\nBody: {}\r\n\r\n",
        text.len()
    )
    .into_bytes();
    b2f.extend_from_slice(&text);
    let packed = qtc_lzhuf::compress_with_crc(&b2f);
    assert!(packed.contains(&0xff), "no 0xFF in the B2 file");
    let mut c = bpq_on_the_telnet_port(&d, "N0BPQ", "bpqpw");
    let line = format!("FC EM BPQB2MID01 {} {} 0", b2f.len(), packed.len());
    send_one(&mut c, sid, &line, &packed, false);
    assert_eq!(stored_body(&d, "BPQB2MID01"), text);

    // B1, the same text as an FBB file.
    let mut c = bpq_on_the_telnet_port(&d, "N0BPR", "bprpw");
    let line = format!("FA P N0BPR N0BBS N0USR B1_N0BPR {}", text.len());
    send_one(&mut c, sid, &line, &file, false);
    assert_eq!(stored_body(&d, "B1_N0BPR"), text);
    d.wait_for_log("never spoke telnet");
}

#[test]
fn text_a_guessed_framing_may_have_doubled_is_held_for_the_sysop() {
    // Software not known here, on the telnet port, no telnet spoken: its link is taken as raw,
    // a guess. A message whose every 0xFF comes doubled may hold one or two: held, not stored
    // as if known; a lone 0xFF says nothing was doubled.
    let d = Daemon::start_bbs(
        "N0BBS",
        &[("N0XYZ", "xyzpw", "--bbs")],
        "[[partner]]\ncallsign = \"N0XYZ\"\nprotocol = \"mbl\"\nroutes = [\"N0XYZ\"]\n",
    );
    let mut c = bpq_on_the_telnet_port(&d, "N0XYZ", "xyzpw");
    c.send_raw(b"[XYZ-1.0-HM$]\r");
    c.expect(">\r");
    for (bid, line) in [
        ("U1_N0XYZ", &b"doubled \xff\xff here"[..]),
        ("U2_N0XYZ", b"a lone \xff here, and \xff\xff"),
    ] {
        c.send_raw(format!("SP N0USR @ N0BBS < N0XYZ ${bid}\r").as_bytes());
        c.expect("OK\r");
        c.send_raw(&[&b"title\r"[..], line, b"\r/EX\r"].concat());
        c.expect(">\r");
    }
    c.send_raw(b"B\r");
    c.expect_close();
    d.wait_for_log("held for the sysop: its 0xFF bytes all come doubled");
    let listed = d.listed();
    let status = |bid: &str| listed.iter().find(|m| m.bid == bid).unwrap().status.clone();
    assert_eq!(status("U1_N0XYZ"), "H", "{listed:?}");
    assert_ne!(status("U2_N0XYZ"), "H", "{listed:?}");
}
