//! Our sessions against Winlink software's wire behaviour (wl2k-go as Pat runs it): the
//! handshake Pat sends, zero-padded B2 offsets, and the turn after a whole block is refused.

use super::transcripts::{events, tx};
use super::util::*;
use crate::{Answer, Event, Mode, Outcome, Role, Session};

/// What Pat sends after our SID and prompt when it calls us.
const PAT_HELLO: &[u8] = b";FW: N0PAT\r[Pat-0.13.1-B2FHMG$]\r; N0BBS DE N0PAT (JO59)\r";

/// We are called by Pat; its hello is in, the application has been asked nothing yet.
fn called_by_pat() -> Session {
    let now = base_time();
    let mut s = Session::new(Role::Called, config("N0BBS", Mode::B2));
    s.start(now);
    let _ = tx(&mut s);
    s.handle_input(now, PAT_HELLO);
    assert!(matches!(
        &events(&mut s)[..],
        [Event::Connected { mode: Mode::B2, .. }]
    ));
    s
}

/// We call Pat (listening): Pat's handshake ends with a prompt; we propose first.
fn calling_pat() -> Session {
    let now = base_time();
    let mut s = Session::new(Role::Caller, config("N0BBS", Mode::B2));
    s.start(now);
    s.handle_input(
        now,
        b"[Pat-0.13.1-B2FHMG$]\r;FW: N0PAT\r; N0BBS DE N0PAT (JO59)>\r",
    );
    assert!(matches!(
        &events(&mut s)[..],
        [Event::Connected { .. }, Event::NeedOutgoing { .. }]
    ));
    assert_eq!(s.peer_forwards(), ["N0PAT"]);
    let _ = tx(&mut s);
    s
}

fn b2_msg(id: u64, mid: &str) -> crate::Outgoing {
    msg(id, mid, "hello", b2f_text(mid, "hello", b"body\r\n"))
}

#[test]
fn b2_offset_is_zero_padded() {
    let now = base_time();
    let mut s = calling_pat();
    s.offer(now, vec![b2_msg(1, "MID1")]).unwrap();
    let props = tx(&mut s);
    assert!(props.starts_with(b"FC EM MID1 "), "{props:?}");
    s.handle_input(now, b"FS Y\r");
    let out = tx(&mut s);
    // SOH, length, title, NUL, "000000", NUL: wl2k-go parses the offset as an integer.
    assert_eq!(&out[..2], &[0x01, 5 + 1 + 6 + 1]);
    assert_eq!(&out[2..15], b"hello\x00000000\x00");
}

#[test]
fn after_pat_refuses_a_whole_block_we_go_on() {
    let now = base_time();
    let mut s = calling_pat();
    let msgs = (1..=6).map(|i| b2_msg(i, &format!("MID{i}"))).collect();
    s.offer(now, msgs).unwrap();
    let block = tx(&mut s);
    assert_eq!(
        block
            .split(|&b| b == b'\r')
            .filter(|l| l.starts_with(b"FC"))
            .count(),
        5
    );
    // Pat has them all already: it answers and then waits, sending nothing more.
    s.handle_input(now, b"FS -----\r");
    let acks = events(&mut s);
    assert_eq!(
        acks.iter()
            .filter(|e| matches!(
                e,
                Event::Acknowledged {
                    outcome: Outcome::Rejected,
                    ..
                }
            ))
            .count(),
        5
    );
    // Our next block follows at once, not after the idle timeout.
    assert!(tx(&mut s).starts_with(b"FC EM MID6 "));
    s.handle_input(now, b"FS =\r");
    let _ = events(&mut s);
    // Nothing left: FF, and Pat's turn.
    assert!(events(&mut s).is_empty());
    s.offer(now, vec![]).ok();
    assert_eq!(tx(&mut s), b"FF\r");
    s.handle_input(now, b"FQ\r");
    assert!(events(&mut s).contains(&Event::Closed { error: None }));
}

#[test]
fn refusing_all_of_pats_block_waits_for_its_next_block() {
    let now = base_time();
    let mut s = called_by_pat();
    s.handle_input(now, b"FC EM MID1 100 80 0\rF> 04\r");
    let ev = events(&mut s);
    assert!(matches!(&ev[..], [Event::Proposals(_)]), "{ev:?}");
    s.answer(now, vec![Answer::Reject]).unwrap();
    assert_eq!(tx(&mut s), b"FS N\r");
    // Pat keeps the turn: we send nothing and ask the application for nothing yet.
    assert!(events(&mut s).is_empty());
    assert!(tx(&mut s).is_empty());
    s.handle_input(now, b"FF\r");
    assert!(matches!(&events(&mut s)[..], [Event::NeedOutgoing { .. }]));
    s.offer(now, vec![]).unwrap();
    assert_eq!(tx(&mut s), b"FQ\r");
}

/// A B2F message with `to` recipients and `files` one-byte attachments.
fn big_b2f(mid: &str, to: usize, files: usize) -> Vec<u8> {
    let mut m = format!("Mid: {mid}\r\nFrom: N0PAT\r\nSubject: many\r\nBody: 2\r\n").into_bytes();
    for i in 0..to {
        m.extend_from_slice(format!("To: N{i}ABC\r\n").as_bytes());
    }
    for i in 0..files {
        m.extend_from_slice(format!("File: 1 f{i}\r\n").as_bytes());
    }
    m.extend_from_slice(b"\r\nhi");
    if files > 0 {
        m.extend_from_slice(b"\r\n");
        for _ in 0..files {
            m.extend_from_slice(b"x\r\n");
        }
    }
    m
}

/// Pat proposes `text` as one FC message and sends it; returns what we delivered.
fn receive_from_pat(s: &mut Session, mid: &str, text: &[u8]) -> Vec<Event> {
    let now = base_time();
    let file = qtc_lzhuf::compress_with_crc(text);
    let prop = format!("FC EM {mid} {} {} 0", text.len(), file.len());
    let sum = crate::wire::proposal::checksum_add(0, prop.as_bytes());
    let block = format!(
        "{prop}\rF> {:02X}\r",
        crate::wire::proposal::checksum_value(sum)
    );
    s.handle_input(now, block.as_bytes());
    assert!(matches!(&events(s)[..], [Event::Proposals(_)]));
    s.answer(now, vec![Answer::Accept]).unwrap();
    assert_eq!(tx(s), b"FS Y\r");
    let mut wire = Vec::new();
    crate::wire::block::encode(b"many", 0, &file, &mut wire);
    s.handle_input(now, &wire);
    events(s)
}

#[test]
fn many_recipients_and_files_are_taken() {
    let mut s = called_by_pat();
    // 60 recipients and 40 files: past the old 64-line / 32-file limits.
    let ev = receive_from_pat(&mut s, "MANY1", &big_b2f("MANY1", 60, 40));
    assert!(
        matches!(&ev[..], [Event::Received { .. }, Event::BlockComplete]),
        "{ev:?}"
    );
}

#[test]
fn a_message_over_the_limits_does_not_poison_the_session() {
    let now = base_time();
    let mut s = called_by_pat();
    let text = big_b2f("HUGE1", 2000, 0);
    let ev = receive_from_pat(&mut s, "HUGE1", &text);
    // Delivered as it came (the application keeps it held), and the session goes on.
    let [Event::Received { text: got, .. }, Event::BlockComplete] = &ev[..] else {
        panic!("{ev:?}");
    };
    assert_eq!(got.as_ref(), text.as_slice());
    s.committed(now).unwrap();
    assert!(matches!(&events(&mut s)[..], [Event::NeedOutgoing { .. }]));
}
