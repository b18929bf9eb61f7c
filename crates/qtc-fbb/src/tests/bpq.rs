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
