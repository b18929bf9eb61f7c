//! A partner that vanished without closing (killed, its link down) and calls again: its new
//! login replaces its own dead session at once (the old one is closed, its partial transfer
//! kept and resumed), instead of `already running` until the idle timeout.

mod common;

use common::{Client, Daemon};
use qtc_fbb::wire::{block, proposal};

/// A CR LF text whose B1 file is long enough to be cut half-way.
fn text() -> Vec<u8> {
    let mut t = Vec::new();
    let mut x = 0x2545_f491_u32;
    while t.len() < 20_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        t.extend_from_slice(format!("line {x:08x} of the long one\r\n").as_bytes());
    }
    t
}

/// Logs N0PTR in on the forwarding port, sends its SID and proposes `messages` (BID, size)
/// in B1; returns the connection after qtc's answer and the answer. It logs in as LinFBB's
/// transparent login does (`.CALL`): its bytes go as they are (a LinFBB that logs in plainly
/// doubles 0xFF, and qtc reads its link so).
fn propose_all(d: &Daemon, messages: &[(&str, usize)]) -> (Client, String) {
    let mut c = Client::connect(d.fwd_port.unwrap());
    c.expect("Callsign:");
    c.send_raw(b".N0PTR\r");
    c.expect("Password:");
    c.send_raw(b"ptrpw\r");
    c.expect(">\r");
    c.send_raw(b"[FBB-7.0.11-AB1FHMRX$]\r");
    let mut block = String::new();
    let mut sum = 0;
    for (bid, size) in messages {
        let line = format!("FA P N0PTR N0BBS N0USR {bid} {size}");
        sum = proposal::checksum_add(sum, line.as_bytes());
        block += &format!("{line}\r");
    }
    let sum = proposal::checksum_value(sum);
    c.send_raw(format!("{block}F> {sum:02X}\r").as_bytes());
    let answer = c.expect("\r");
    (c, answer.trim().to_string())
}

fn propose(d: &Daemon, bid: &str, size: usize) -> (Client, String) {
    propose_all(d, &[(bid, size)])
}

#[test]
fn a_partner_logging_in_again_replaces_its_dead_session_and_resumes() {
    let d = Daemon::start_bbs(
        "N0BBS",
        &[("N0PTR", "ptrpw", "--bbs")],
        "[forward]\nlisten = [\"127.0.0.1:0\"]\n\
         [[partner]]\ncallsign = \"N0PTR\"\nroutes = [\"N0PTR\"]\n",
    );
    let text = text();
    let file = qtc_lzhuf::compress_with_crc(&qtc_lzhuf::fbb_text(&text));
    let mut wire = Vec::new();
    block::encode(b"the long one", 0, &file, &mut wire);

    // Half the transfer, then the partner is gone without a FIN (its old socket stays open).
    let (mut old, answer) = propose(&d, "R1_N0PTR", text.len());
    assert_eq!(answer, "FS Y");
    old.send_raw(&wire[..wire.len() / 2]);

    // It calls again: the old session is closed at once and its partial kept.
    let (mut new, answer) = propose(&d, "R1_N0PTR", text.len());
    old.expect_close();
    d.wait_for_log("the partner logged in again: closing its old session");
    let offset: usize = answer
        .strip_prefix("FS A")
        .unwrap_or_else(|| panic!("no resume: {answer}\n{}", d.log()))
        .parse()
        .unwrap();
    assert!(
        offset > 0 && offset < file.len(),
        "{offset} of {}",
        file.len()
    );
    // FBB resume: the header with the offset, the file's first 6 bytes, then the rest.
    let mut resumed = Vec::new();
    let mut e = block::Encoder::new();
    e.header(
        b"the long one",
        offset as u32,
        block::OffsetPad::Space,
        &mut resumed,
    );
    e.block(&file[..6], &mut resumed);
    e.data(&file[offset..], &mut resumed);
    e.finish(&mut resumed);
    new.send_raw(&resumed);
    new.expect("FF");
    new.send_raw(b"FQ\r");
    new.expect_close();
    let got = d.listed();
    assert_eq!(got.len(), 1, "{got:?}");
    let shown = common::Shown::parse(&d.show_raw(got[0].number));
    assert_eq!(shown.body, text);
    assert!(!d.log().contains("already running"), "{}", d.log());
}

#[test]
fn a_cut_keeps_the_messages_of_the_block_that_came_whole() {
    let d = Daemon::start_bbs(
        "N0BBS",
        &[("N0PTR", "ptrpw", "--bbs")],
        "[forward]\nlisten = [\"127.0.0.1:0\"]\n\
         [[partner]]\ncallsign = \"N0PTR\"\nroutes = [\"N0PTR\"]\n",
    );
    let short = b"a short one\r\n".to_vec();
    let long = text();
    let files: Vec<Vec<u8>> = [&short, &long]
        .iter()
        .map(|t| qtc_lzhuf::compress_with_crc(&qtc_lzhuf::fbb_text(t)))
        .collect();
    let both = [("K1_N0PTR", short.len()), ("K2_N0PTR", long.len())];
    let (mut c, answer) = propose_all(&d, &both);
    assert_eq!(answer, "FS YY");
    let mut wire = Vec::new();
    block::encode(b"short", 0, &files[0], &mut wire);
    let mut second = Vec::new();
    block::encode(b"long", 0, &files[1], &mut second);
    wire.extend_from_slice(&second[..second.len() / 2]);
    c.send_raw(&wire);
    drop(c);
    d.wait_for_log("keeping the messages of the cut block that came whole");
    assert_eq!(d.listed().len(), 1, "the first message is kept");
    // The partner offers both again: it is told it has the first, and resumes the second.
    let (_c, answer) = propose_all(&d, &both);
    assert!(answer.starts_with("FS NA"), "{answer}");
}
