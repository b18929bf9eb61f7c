//! Our calling side against LinBPQ 6.0.25's BBS as its MBL code answers (MBLRoutines.c):
//! a non-BPQ caller gets a bare `>` after its SID, `F>` asks it to reverse-forward, and it
//! ends with `*** DONE` and a disconnect.

use super::util::*;
use crate::{Answer, Event, Mode, MsgType, Outcome, Outgoing, Role, Session};
use bytes::Bytes;

const BPQ_HELLO: &[u8] = b"[BPQ-6.0.25.23-B12FWIHJM$]\rHello from N0BPQ's BBS\rde N0BPQ>\r";

fn tx(s: &mut Session) -> Vec<u8> {
    let mut out = Vec::new();
    while s.poll_transmit(&mut out) > 0 {}
    out
}

fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn ours() -> Outgoing {
    let mut m = msg(
        7,
        "Q7_N0PTR",
        "to bpq",
        Bytes::from_static(b"hello bpq\r\n"),
    );
    m.kind = MsgType::Personal;
    m.from = "N0PTR".into();
    m.to = "N0USR".into();
    m.at = "N0BPQ".into();
    m
}

fn caller(mode: Mode) -> Session {
    let now = base_time();
    let mut s = Session::new(Role::Caller, config("N0PTR", mode));
    s.start(now);
    s.handle_input(now, BPQ_HELLO);
    s
}

/// BPQ's reverse forwarding after our `F>`: one message, and our prompt after it (`F>` when
/// we have nothing, a bare `>` while our mail waits).
fn take_bpq_message(s: &mut Session, prompt: &[u8]) {
    let now = base_time();
    s.handle_input(now, b"SP N0PTR @ N0PTR < N0BPQ $B5_N0BPQ\r");
    let evs = events(s);
    let [Event::Proposals(ps)] = &evs[..] else {
        panic!("{evs:?}")
    };
    assert_eq!(ps[0].mode, Mode::Mbl);
    assert_eq!(ps[0].bid, "B5_N0BPQ");
    s.answer(now, vec![Answer::Accept]).unwrap();
    assert_eq!(tx(s), b"OK\r");
    s.handle_input(
        now,
        b"from bpq\rR:261203/1712Z 5@N0BPQ.#NCA.CA.USA.NOAM BPQ6.0.25\r\rbody\r\r\x1a",
    );
    let evs = events(s);
    assert!(
        matches!(&evs[..], [Event::Received { .. }, Event::BlockComplete]),
        "{evs:?}"
    );
    s.committed(now).unwrap();
    assert_eq!(tx(s), prompt);
}

/// BPQ has nothing more and ends.
fn bpq_done(s: &mut Session) {
    s.handle_input(base_time(), b"*** DONE\r");
    assert_eq!(tx(s), b"B\r");
    assert_eq!(events(s), vec![Event::Closed { error: None }]);
}

#[test]
fn fbb_proposals_answered_with_a_bare_prompt_fall_back_to_mbl() {
    let now = base_time();
    let mut s = caller(Mode::FbbAscii);
    events(&mut s);
    s.offer(now, vec![ours()]).unwrap();
    let sent = tx(&mut s);
    assert!(
        sent.ends_with(b"FB P N0PTR N0BPQ N0USR Q7_N0PTR 11\rF>\r"),
        "{sent:?}"
    );
    // `>` answers our SID; the FB line means nothing to BPQ; our `F>` is its
    // reverse-forward request.
    s.handle_input(now, b">\r");
    assert_eq!(
        events(&mut s),
        vec![Event::Connected {
            peer_sid: s.peer_sid().cloned(),
            mode: Mode::Mbl
        }]
    );
    assert_eq!(s.mode(), Some(Mode::Mbl));
    take_bpq_message(&mut s, b">\r");
    // With nothing more it hands the turn back: ours goes in MBL.
    s.handle_input(now, b"F>\r");
    assert_eq!(tx(&mut s), b"SP N0USR @ N0BPQ < N0PTR $Q7_N0PTR\r");
    s.handle_input(now, b"OK\r");
    assert_eq!(tx(&mut s), b"to bpq\rhello bpq\r\x1a\r");
    s.handle_input(now, b">\r");
    let evs = events(&mut s);
    assert!(
        matches!(
            &evs[..],
            [
                Event::Acknowledged {
                    outcome: Outcome::Sent,
                    ..
                },
                Event::NeedOutgoing { max: 1 }
            ]
        ),
        "{evs:?}"
    );
    s.offer(now, vec![]).unwrap();
    assert_eq!(tx(&mut s), b"F>\r");
    bpq_done(&mut s);
}

#[test]
fn ff_answered_with_a_bare_prompt_falls_back_to_mbl() {
    let now = base_time();
    let mut s = caller(Mode::FbbAscii);
    events(&mut s);
    s.offer(now, vec![]).unwrap();
    assert!(tx(&mut s).ends_with(b"FF\r"));
    s.handle_input(now, b">\r");
    let evs = events(&mut s);
    assert!(
        matches!(
            &evs[..],
            [
                Event::Connected {
                    mode: Mode::Mbl,
                    ..
                },
                Event::NeedOutgoing { max: 1 }
            ]
        ),
        "{evs:?}"
    );
    // In MBL our message goes as an S line.
    s.offer(now, vec![ours()]).unwrap();
    assert_eq!(tx(&mut s), b"SP N0USR @ N0BPQ < N0PTR $Q7_N0PTR\r");
}

#[test]
fn mbl_session_ends_normally_at_bpq_done() {
    let now = base_time();
    let mut s = caller(Mode::Mbl);
    events(&mut s);
    s.handle_input(now, b">\r");
    assert_eq!(events(&mut s), vec![Event::NeedOutgoing { max: 1 }]);
    s.offer(now, vec![]).unwrap();
    assert!(tx(&mut s).ends_with(b"F>\r"));
    take_bpq_message(&mut s, b"F>\r");
    bpq_done(&mut s);
}

/// The frames of a compressed transfer: the header's offset field and each STX block's data.
fn transfer_frames(mut wire: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>, u8) {
    assert_eq!(wire[0], 0x01, "{wire:?}");
    let header = &wire[2..2 + wire[1] as usize];
    let offset = header.split(|&b| b == 0).nth(1).unwrap().to_vec();
    wire = &wire[2 + wire[1] as usize..];
    let mut blocks = Vec::new();
    while wire[0] == 0x02 {
        let n = if wire[1] == 0 { 256 } else { wire[1] as usize };
        blocks.push(wire[2..2 + n].to_vec());
        wire = &wire[2 + n..];
    }
    assert_eq!(wire[0], 0x04, "{wire:?}");
    (offset, blocks, wire[1])
}

#[test]
fn a_b2_resume_toward_bpq_carries_the_restart_header_it_wants() {
    // LinBPQ answered `FS --!18500` and, with the data from the offset alone, said
    // `*** Restart Header Missing.`: it takes the file's first 6 bytes (CRC and length) as
    // a block of their own first, as in B1 (UnpackFBBBinary, NeedRestartHeader), and sends
    // them so itself (SendCompressedB2).
    let now = base_time();
    let mut s = caller(Mode::B2);
    s.handle_input(now, b"");
    let evs = events(&mut s);
    assert!(
        matches!(evs.last(), Some(Event::NeedOutgoing { .. })),
        "{evs:?}"
    );
    let mut x = 0x1234_5678_u32;
    let noise: Vec<u8> = (0..30_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            b'!' + (x % 90) as u8
        })
        .collect();
    // Two small ones BPQ has, then the big one it holds 18,500 bytes of.
    let msgs: Vec<Outgoing> = (0..3)
        .map(|i| {
            let mid = format!("B2R{i}_N0PTR");
            let body = if i == 2 { &noise[..] } else { b"small\r\n" };
            let mut m = msg(i, &mid, "big", b2f_text(&mid, "big", body));
            m.compressed = Some(Bytes::from(qtc_lzhuf::compress_with_crc(&m.text)));
            m
        })
        .collect();
    let file = msgs[2].compressed.clone().unwrap();
    assert!(file.len() > 18_500, "{}", file.len());
    s.offer(now, msgs).unwrap();
    let proposals = String::from_utf8_lossy(&tx(&mut s)).into_owned();
    assert!(proposals.contains("\rFC EM B2R0_N0PTR "), "{proposals:?}");
    s.handle_input(now, b"FS --!18500\r");
    let (offset, blocks, sum) = transfer_frames(&tx(&mut s));
    assert_eq!(offset, b"018500");
    assert_eq!(
        blocks[0],
        &file[..6],
        "the restart header, a block of its own"
    );
    let rest: Vec<u8> = blocks[1..].concat();
    assert_eq!(rest, &file[18_500..]);
    let all = blocks.concat();
    let total = all.iter().fold(sum, |a, &b| a.wrapping_add(b));
    assert_eq!(total, 0, "the sum covers the header's 6 bytes too");
}

#[test]
fn a_winlink_station_gets_a_b2_resume_without_the_restart_header() {
    // wl2k-go sends and takes a resumed B2 file from the offset alone.
    let now = base_time();
    let mut s = Session::new(Role::Caller, config("N0PTR", Mode::B2));
    s.start(now);
    s.handle_input(now, b"[WL2K-5.0-B2FWIHJM$]\rCMS>\r");
    events(&mut s);
    let mid = "WLR1_N0PTR";
    let mut m = msg(1, mid, "t", b2f_text(mid, "t", &[b'a'; 3000]));
    m.compressed = Some(Bytes::from(qtc_lzhuf::compress_with_crc(&m.text)));
    let file = m.compressed.clone().unwrap();
    s.offer(now, vec![m]).unwrap();
    tx(&mut s);
    s.handle_input(now, b"FS !20\r");
    let (offset, blocks, _) = transfer_frames(&tx(&mut s));
    assert_eq!(offset, b"000020");
    assert_eq!(blocks.concat(), &file[20..]);
}

#[test]
fn bpq_calling_with_realtelnet_puts_will_echo_before_its_sid() {
    // LinBPQ's telnet outward connect in REALTELNET mode (TelnetV6.c): `IAC WILL ECHO` before
    // the SID, on our raw forwarding port.
    let now = base_time();
    let mut s = Session::new(Role::Called, config("N0PTR", Mode::B2));
    s.start(now);
    tx(&mut s);
    s.handle_input(now, b"\xff\xfb\x01[BPQ-6.0.25.23-B12FWIHJM$]\r");
    let evs = events(&mut s);
    let [Event::Connected { peer_sid, mode }] = &evs[..] else {
        panic!("{evs:?}")
    };
    assert_eq!(peer_sid.as_ref().map(|p| p.name.as_str()), Some("BPQ"));
    assert_eq!(*mode, Mode::B2);
}
