//! Our sessions against the bytes xfbbd 7.0.12 sent and received (tests/data/*transcript*).

use super::util::*;
use crate::{Answer, Error, Event, Mode, MsgType, Outcome, Outgoing, Role, Session};
use bytes::Bytes;

const XFBBD_GREETING: &[u8] = b"[FBB-7.0.12-AB1FHMRX$]\rN0BBS BBS, QTH FN31PR.\rHello [TST-1.0-B1F, you are now on channel 1.\rHere are 3 active messages, 103 is last message and \r83 is the last you have listed.\r\rAssigned channels:\rCh. 1   (TELNET) :  N0PTR-0  - Wed 02/12/26 12:31\r\r\r**********************************************************\rThis is the content of /etc/ax25/fbb/lang/english.ent file\r**********************************************************\r\r(1) N0BBS BBS (H for help) >\r";
const B1_TRANSFER: &[u8] = include_bytes!("../../tests/data/b1-transfer-5000.bin");
const TEXT_5000: &[u8] = include_bytes!("../../tests/data/text_05000.txt");
const PROBES: &[u8] = include_bytes!("../../tests/data/protocol_probes_transcript.txt");

pub(super) fn tx(s: &mut Session) -> Vec<u8> {
    let mut out = Vec::new();
    while s.poll_transmit(&mut out) > 0 {}
    out
}

pub(super) fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn called(mode: Mode, caller_sid: &[u8]) -> Session {
    let now = base_time();
    let mut s = Session::new(Role::Called, config("N0BBS", mode));
    s.start(now);
    let hello = tx(&mut s);
    assert!(hello.starts_with(b"[QTC-"), "{hello:?}");
    assert!(hello.ends_with(b"de N0BBS>\r"), "{hello:?}");
    s.handle_input(now, caller_sid);
    s
}

fn our_sid(mode: Mode) -> Vec<u8> {
    format!(
        "[QTC-{}-{}]\r",
        env!("CARGO_PKG_VERSION"),
        crate::Flags::ours(mode)
    )
    .into_bytes()
}

fn fbb_msg(
    id: u64,
    kind: MsgType,
    to: &str,
    at: &str,
    bid: &str,
    title: &str,
    text: &[u8],
) -> Outgoing {
    let mut m = msg(id, bid, title, Bytes::copy_from_slice(text));
    m.kind = kind;
    m.from = "N0PTR".into();
    m.at = at.into();
    m.to = to.into();
    m
}

/// The xfbbd bytes of one `<<<`/`>>>` line of a transcript, by the text they contain.
fn transcript_has(needle: &[u8]) -> bool {
    PROBES.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn called_answers_fs_plus_minus_plus() {
    // Session B: SID with F, no B; M1_N0PTR is known.
    let now = base_time();
    let mut s = called(Mode::B1, b"[TST-1.0-FHM$]\r");
    assert!(matches!(
        events(&mut s)[..],
        [Event::Connected {
            mode: Mode::FbbAscii,
            ..
        }]
    ));
    s.handle_input(now, b"FB P N0PTR N0BBS N0USR A1_N0PTR 40\rFB P N0PTR N0BBS N0USR M1_N0PTR 40\rFB B N0PTR WW ALL A2_N0PTR 30\rF> 9B\r");
    let ev = events(&mut s);
    let [Event::Proposals(ps)] = &ev[..] else {
        panic!("{ev:?}")
    };
    assert_eq!(ps.len(), 3);
    assert_eq!(
        (ps[2].kind, ps[2].at.as_str(), ps[2].size),
        (MsgType::Bulletin, "WW", 30)
    );
    assert_eq!(ps[0].mode, Mode::FbbAscii);
    s.answer(now, vec![Answer::Accept, Answer::Reject, Answer::Accept])
        .unwrap();
    assert_eq!(tx(&mut s), b"FS +-+\r");
    assert!(transcript_has(b"FS +-+\\r"));
    s.handle_input(
        now,
        b"ASCII title 0\rbody line\r\x1a\rASCII title 1\rbody line\r\x1a\r",
    );
    let ev = events(&mut s);
    assert_eq!(ev.len(), 3, "{ev:?}");
    for (i, e) in ev[..2].iter().enumerate() {
        let Event::Received {
            proposal,
            title,
            text,
        } = e
        else {
            panic!("{e:?}")
        };
        assert_eq!(title.as_ref(), format!("ASCII title {i}").as_bytes());
        assert_eq!(text.as_ref(), b"body line\r\n");
        assert_eq!(proposal.bid, ["A1_N0PTR", "A2_N0PTR"][i]);
    }
    assert_eq!(ev[2], Event::BlockComplete);
    assert_eq!(tx(&mut s), b"", "nothing before commit");
    s.committed(now).unwrap();
    assert_eq!(events(&mut s), vec![Event::NeedOutgoing { max: 5 }]);
    s.offer(now, vec![]).unwrap();
    assert_eq!(tx(&mut s), b"FF\r");
    // xfbbd's client answered FF with FF; the side that has nothing either sends FQ.
    s.handle_input(now, b"FF\r");
    assert_eq!(events(&mut s), vec![Event::NeedOutgoing { max: 5 }]);
    s.offer(now, vec![]).unwrap();
    assert_eq!(tx(&mut s), b"FQ\r");
    assert_eq!(events(&mut s), vec![Event::Closed { error: None }]);
}

#[test]
fn called_answers_fs_ny_and_takes_can() {
    // Session C: B1 SID, a known and a new BID, `F>` without checksum, then a CAN.
    let now = base_time();
    let mut s = called(Mode::B1, b"[TST-1.0-B1FHM$]\r");
    assert!(matches!(
        events(&mut s)[..],
        [Event::Connected { mode: Mode::B1, .. }]
    ));
    s.handle_input(
        now,
        b"FA P N0PTR N0BBS N0USR A1_N0PTR 40\rFA P N0PTR N0BBS N0USR C1_N0PTR 40\rF>\r",
    );
    let ev = events(&mut s);
    let [Event::Proposals(ps)] = &ev[..] else {
        panic!("{ev:?}")
    };
    assert_eq!(ps[1].mode, Mode::B1);
    s.answer(now, vec![Answer::Reject, Answer::Accept]).unwrap();
    assert_eq!(tx(&mut s), b"FS NY\r");
    assert!(transcript_has(b"FS NY\\r"));
    s.handle_input(now, b"\x18\x05abcde");
    assert_eq!(
        events(&mut s),
        vec![Event::Closed {
            error: Some(Error::PeerAborted("abcde".into()))
        }]
    );
}

#[test]
fn called_rejects_a_bad_checksum_like_xfbbd() {
    // Session D.
    let now = base_time();
    let mut s = called(Mode::B1, b"[TST-1.0-FHM$]\r");
    let _ = events(&mut s);
    s.handle_input(now, b"FB P N0PTR N0BBS N0USR D1_N0PTR 40\rF> 00\r");
    let out = tx(&mut s);
    assert_eq!(
        out,
        b"*** Checksum error (Checsum of proposals is wrong.)\r"
    );
    assert!(transcript_has(
        b"*** Checksum error (Checsum of proposals is wrong.)\\r"
    ));
    let ev = events(&mut s);
    assert!(
        matches!(
            &ev[..],
            [Event::Closed {
                error: Some(Error::ProposalChecksum { got: 0, .. })
            }]
        ),
        "{ev:?}"
    );
}

#[test]
fn called_receives_the_xfbbd_b1_transfer() {
    // b1_inbound_transcript.txt, our side playing xfbbd.
    for chunk in [1usize, 13, 250, 4096] {
        let now = base_time();
        let mut s = called(Mode::B1, b"[TST-1.0-B1FHM$]\r");
        let _ = events(&mut s);
        s.handle_input(now, b"FA P N0PTR N0BBS N0USR 1_N0PTR 5000\rF> 52\r");
        assert!(matches!(&events(&mut s)[..], [Event::Proposals(_)]));
        s.answer(now, vec![Answer::Accept]).unwrap();
        assert_eq!(tx(&mut s), b"FS Y\r");
        for c in B1_TRANSFER.chunks(chunk) {
            s.handle_input(now, c);
        }
        let ev = events(&mut s);
        let [Event::Received {
            proposal,
            title,
            text,
        }, Event::BlockComplete] = &ev[..]
        else {
            panic!("{ev:?}")
        };
        assert_eq!(proposal.size, 5000);
        assert_eq!(title.as_ref(), b"Vector text_05000");
        assert_eq!(text.as_ref(), TEXT_5000);
        s.committed(now).unwrap();
        let _ = events(&mut s);
        s.offer(now, vec![]).unwrap();
        assert_eq!(tx(&mut s), b"FF\r");
        s.handle_input(now, b"FF\r");
        let _ = events(&mut s);
        s.offer(now, vec![]).unwrap();
        assert_eq!(tx(&mut s), b"FQ\r");
    }
}

/// Title, offset and file of a whole binary transfer.
fn transfer_file(transfer: &[u8]) -> (Vec<u8>, u32, Vec<u8>) {
    let mut d = crate::wire::block::Decoder::new(crate::wire::block::DEFAULT_MAX_TRANSFER);
    match d.decode(transfer).unwrap() {
        (
            n,
            Some(crate::wire::block::Frame::Message {
                title,
                offset,
                data,
            }),
        ) if n == transfer.len() => (title, offset, data),
        other => panic!("{other:?}"),
    }
}

#[test]
fn caller_sends_what_xfbbd_received_in_b1() {
    let now = base_time();
    let mut s = Session::new(Role::Caller, config("N0PTR", Mode::B1));
    s.start(now);
    assert_eq!(tx(&mut s), b"");
    // The prompt may arrive in pieces; the SID before it counts.
    s.handle_input(now, &XFBBD_GREETING[..100]);
    assert!(events(&mut s).is_empty());
    s.handle_input(now, &XFBBD_GREETING[100..]);
    let ev = events(&mut s);
    let Event::Connected {
        peer_sid: Some(sid),
        mode: Mode::B1,
    } = &ev[0]
    else {
        panic!("{ev:?}")
    };
    assert_eq!((sid.name.as_str(), sid.version.as_str()), ("FBB", "7.0.12"));
    assert_eq!(ev[1], Event::NeedOutgoing { max: 5 });
    assert_eq!(tx(&mut s), our_sid(Mode::B1));
    let m = fbb_msg(
        1,
        MsgType::Personal,
        "N0USR",
        "N0BBS",
        "1_N0PTR",
        "Vector text_05000",
        TEXT_5000,
    );
    s.offer(now, vec![m]).unwrap();
    assert_eq!(tx(&mut s), b"FA P N0PTR N0BBS N0USR 1_N0PTR 5000\rF> 52\r");
    s.handle_input(now, b"FS Y\r");
    // Framed as in the transfer xfbbd accepted; the file is ours, which parses the text as
    // LinFBB's encoder does but may code a match nearer (qtc-lzhuf): never longer than theirs.
    let sent = tx(&mut s);
    let (title, offset, ours) = transfer_file(&sent);
    let (their_title, their_offset, theirs) = transfer_file(B1_TRANSFER);
    assert_eq!((&title, offset), (&their_title, their_offset));
    assert_eq!(ours, qtc_lzhuf::compress_with_crc(TEXT_5000));
    assert!(ours.len() <= theirs.len());
    for (file, transfer) in [(&ours, &sent[..]), (&theirs, B1_TRANSFER)] {
        let mut framed = Vec::new();
        crate::wire::block::encode(&title, offset, file, &mut framed);
        assert_eq!(framed, transfer);
    }
    assert!(
        events(&mut s).is_empty(),
        "not acknowledged before the peer's turn"
    );
    s.handle_input(now, b"FF\r");
    assert_eq!(
        events(&mut s),
        vec![
            Event::Acknowledged {
                id: 1,
                outcome: Outcome::Sent
            },
            Event::NeedOutgoing { max: 5 }
        ]
    );
    s.offer(now, vec![]).unwrap();
    assert_eq!(tx(&mut s), b"FQ\r");
    assert_eq!(events(&mut s), vec![Event::Closed { error: None }]);
}

#[test]
fn caller_in_mbl_against_xfbbd() {
    // Session A, our side playing the client: `OK ` and `N - BID` then `>`.
    let now = base_time();
    let mut cfg = config("N0PTR", Mode::Mbl);
    cfg.mbl_reverse = false;
    let mut s = Session::new(Role::Caller, cfg);
    s.start(now);
    s.handle_input(now, XFBBD_GREETING);
    assert_eq!(tx(&mut s), our_sid(Mode::Mbl));
    assert!(matches!(
        &events(&mut s)[..],
        [Event::Connected {
            mode: Mode::Mbl,
            ..
        }]
    ));
    s.handle_input(now, b">\r");
    assert_eq!(events(&mut s), vec![Event::NeedOutgoing { max: 1 }]);
    let msgs = vec![
        fbb_msg(
            1,
            MsgType::Personal,
            "N0USR",
            "N0BBS",
            "M1_N0PTR",
            "MBL test title",
            b"line one\r\nline two\r\n",
        ),
        fbb_msg(
            2,
            MsgType::Personal,
            "N0USR",
            "N0BBS",
            "M1_N0PTR",
            "MBL test title",
            b"line one\r\n",
        ),
        fbb_msg(
            3,
            MsgType::Bulletin,
            "ALL",
            "WW",
            "M2_N0PTR",
            "MBL bulletin",
            b"body\r\n",
        ),
    ];
    s.offer(now, msgs).unwrap();
    assert_eq!(tx(&mut s), b"SP N0USR @ N0BBS < N0PTR $M1_N0PTR\r");
    s.handle_input(now, b"OK \r");
    assert_eq!(tx(&mut s), b"MBL test title\rline one\rline two\r\x1a\r");
    assert!(events(&mut s).is_empty());
    s.handle_input(now, b">\r");
    assert_eq!(
        events(&mut s),
        vec![Event::Acknowledged {
            id: 1,
            outcome: Outcome::Sent
        }]
    );
    assert_eq!(tx(&mut s), b"SP N0USR @ N0BBS < N0PTR $M1_N0PTR\r");
    s.handle_input(now, b"N - BID\r>\r");
    assert_eq!(
        events(&mut s),
        vec![Event::Acknowledged {
            id: 2,
            outcome: Outcome::Rejected
        }]
    );
    assert_eq!(tx(&mut s), b"SB ALL @ WW < N0PTR $M2_N0PTR\r");
    s.handle_input(now, b"OK \r");
    assert_eq!(tx(&mut s), b"MBL bulletin\rbody\r\x1a\r");
    s.handle_input(now, b">\r");
    assert_eq!(
        events(&mut s),
        vec![
            Event::Acknowledged {
                id: 3,
                outcome: Outcome::Sent
            },
            Event::NeedOutgoing { max: 1 }
        ]
    );
    s.offer(now, vec![]).unwrap();
    assert_eq!(tx(&mut s), b"B\r");
    assert_eq!(events(&mut s), vec![Event::Closed { error: None }]);
    for line in [&b"OK \\r"[..], b"N - BID\\r>\\r", b"B\\r"] {
        assert!(transcript_has(line));
    }
}

#[test]
fn caller_in_mbl_ends_when_xfbbd_hangs_up_after_our_reverse_request() {
    let now = base_time();
    // Our MBL caller with nothing to send, having asked xfbbd for its mail (`F>`).
    let asking = || {
        let mut s = Session::new(Role::Caller, config("N0PTR", Mode::Mbl));
        s.start(now);
        s.handle_input(now, XFBBD_GREETING);
        s.handle_input(now, b">\r");
        s.offer(now, vec![]).unwrap();
        assert!(tx(&mut s).ends_with(b"F>\r"));
        events(&mut s);
        s
    };
    // xfbbd has nothing for us and disconnects: a normal end.
    let mut s = asking();
    s.handle_eof(now);
    assert_eq!(events(&mut s), vec![Event::Closed { error: None }]);
    // Cut in the middle of an S line, it is a lost connection.
    let mut s = asking();
    s.handle_input(now, b"SP N0PTR @ N0");
    s.handle_eof(now);
    assert_eq!(
        events(&mut s),
        vec![Event::Closed {
            error: Some(Error::ConnectionLost)
        }]
    );
}

#[test]
fn called_in_mbl_takes_the_transcript_client() {
    let now = base_time();
    let mut s = called(Mode::B1, b"[TST-1.0-HM$]\r");
    assert!(matches!(
        &events(&mut s)[..],
        [Event::Connected {
            mode: Mode::Mbl,
            ..
        }]
    ));
    assert_eq!(tx(&mut s), b">\r");
    s.handle_input(now, b"SP N0USR @ N0BBS < N0PTR $M1_N0PTR\r");
    let ev = events(&mut s);
    let [Event::Proposals(ps)] = &ev[..] else {
        panic!("{ev:?}")
    };
    assert_eq!(
        (ps[0].from.as_str(), ps[0].bid.as_str()),
        ("N0PTR", "M1_N0PTR")
    );
    s.answer(now, vec![Answer::Accept]).unwrap();
    assert_eq!(tx(&mut s), b"OK\r");
    s.handle_input(now, b"MBL test title\rline one\rline two\r\x1a\r");
    let ev = events(&mut s);
    let [Event::Received { text, .. }, Event::BlockComplete] = &ev[..] else {
        panic!("{ev:?}")
    };
    assert_eq!(text.as_ref(), b"line one\r\nline two\r\n");
    assert_eq!(tx(&mut s), b"");
    s.committed(now).unwrap();
    assert_eq!(tx(&mut s), b">\r");
    s.handle_input(now, b"SP N0USR @ N0BBS < N0PTR $M1_N0PTR\r");
    let _ = events(&mut s);
    s.answer(now, vec![Answer::Reject]).unwrap();
    assert_eq!(tx(&mut s), b"N - BID\r>\r");
    s.handle_input(
        now,
        b"SB ALL @ WW < N0PTR $M2_N0PTR\rMBL bulletin\rbody\r/EX\r",
    );
    let _ = events(&mut s);
    s.answer(now, vec![Answer::Accept]).unwrap();
    let ev = events(&mut s);
    let [Event::Received { title, text, .. }, Event::BlockComplete] = &ev[..] else {
        panic!("{ev:?}")
    };
    assert_eq!(
        (title.as_ref(), text.as_ref()),
        (&b"MBL bulletin"[..], &b"body\r\n"[..])
    );
    s.committed(now).unwrap();
    s.handle_input(now, b"B\r");
    assert_eq!(events(&mut s), vec![Event::Closed { error: None }]);
}

#[test]
fn malformed_proposal_names_the_line() {
    let now = base_time();
    let mut s = called(Mode::B1, b"[TST-1.0-FHM$]\r");
    let _ = events(&mut s);
    s.handle_input(now, b"FB P N0PTR\r");
    let out = tx(&mut s);
    assert!(
        out.starts_with(b"*** Protocol error: "),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    let ev = events(&mut s);
    let [Event::Closed {
        error: Some(Error::Protocol { line, .. }),
    }] = &ev[..]
    else {
        panic!("{ev:?}")
    };
    assert_eq!(line, "FB P N0PTR");
    // Anything after the close is ignored.
    s.handle_input(now, b"FF\r");
    assert!(events(&mut s).is_empty());
    assert_eq!(tx(&mut s), b"");
}

#[test]
fn corrupt_transfer_is_not_received() {
    let now = base_time();
    let mut s = called(Mode::B1, b"[TST-1.0-B1FHM$]\r");
    let _ = events(&mut s);
    s.handle_input(now, b"FA P N0PTR N0BBS N0USR 1_N0PTR 5000\rF> 52\r");
    let _ = events(&mut s);
    s.answer(now, vec![Answer::Accept]).unwrap();
    let _ = tx(&mut s);
    let mut bad = B1_TRANSFER.to_vec();
    bad[500] ^= 0x40;
    s.handle_input(now, &bad);
    assert_eq!(
        tx(&mut s),
        b"*** Checksum error (Checsum of message is wrong.)\r"
    );
    let ev = events(&mut s);
    assert!(
        matches!(
            &ev[..],
            [Event::Closed {
                error: Some(Error::BlockChecksum { .. })
            }]
        ),
        "{ev:?}"
    );
    // A cut (not corrupt) transfer leaves a partial file instead.
    let mut s = called(Mode::B1, b"[TST-1.0-B1FHM$]\r");
    let _ = events(&mut s);
    s.handle_input(now, b"FA P N0PTR N0BBS N0USR 1_N0PTR 5000\rF> 52\r");
    let _ = events(&mut s);
    s.answer(now, vec![Answer::Accept]).unwrap();
    s.handle_input(now, &B1_TRANSFER[..1000]);
    s.handle_eof(now);
    let ev = events(&mut s);
    let [Event::Partial { bid, data, .. }, Event::Closed {
        error: Some(Error::ConnectionLost),
    }] = &ev[..]
    else {
        panic!("{ev:?}")
    };
    assert_eq!(bid, "1_N0PTR");
    let file = include_bytes!("../../tests/data/text_05000.b1.lzh");
    assert!(data.len() > 900 && file.starts_with(data));
}

#[test]
fn peer_error_line_while_waiting_for_fs() {
    let now = base_time();
    let mut s = Session::new(Role::Caller, config("N0PTR", Mode::B1));
    s.start(now);
    s.handle_input(now, XFBBD_GREETING);
    let _ = events(&mut s);
    let m = fbb_msg(
        1,
        MsgType::Personal,
        "N0USR",
        "N0BBS",
        "1_N0PTR",
        "t",
        b"x\r\n",
    );
    s.offer(now, vec![m]).unwrap();
    s.handle_input(now, b"*** Protocol error: whatever\r");
    let ev = events(&mut s);
    assert!(
        matches!(
            &ev[..],
            [Event::Closed {
                error: Some(Error::PeerError(_))
            }]
        ),
        "{ev:?}"
    );
}

#[test]
fn peer_that_keeps_proposing_after_all_refused() {
    // wl2k-go style: after our all-refused FS it proposes again instead of handing over.
    let now = base_time();
    let mut s = called(Mode::B1, b"[TST-1.0-FHM$]\r");
    let _ = events(&mut s);
    s.handle_input(now, b"FB P N0PTR N0BBS N0USR A1_N0PTR 40\rF>\r");
    let _ = events(&mut s);
    s.answer(now, vec![Answer::Reject]).unwrap();
    assert_eq!(tx(&mut s), b"FS -\r");
    assert_eq!(events(&mut s), vec![Event::NeedOutgoing { max: 5 }]);
    s.handle_input(now, b"FB P N0PTR N0BBS N0USR A2_N0PTR 40\rF>\r");
    assert!(matches!(&events(&mut s)[..], [Event::Proposals(_)]));
    // The application's answer to the earlier NeedOutgoing arrives now: kept for our turn.
    let m = fbb_msg(
        7,
        MsgType::Personal,
        "N0PTR",
        "N0TST",
        "Q1_N0BBS",
        "t",
        b"x\r\n",
    );
    s.offer(now, vec![m]).unwrap();
    s.answer(now, vec![Answer::Accept]).unwrap();
    assert_eq!(tx(&mut s), b"FS +\r");
    s.handle_input(now, b"t2\rbody\r\x1a\r");
    assert!(matches!(
        &events(&mut s)[..],
        [Event::Received { .. }, Event::BlockComplete]
    ));
    s.committed(now).unwrap();
    assert!(events(&mut s).is_empty(), "no second NeedOutgoing");
    assert_eq!(tx(&mut s), b"FB P N0PTR N0TST N0PTR Q1_N0BBS 3\rF>\r");
}

#[test]
fn api_misuse_is_an_error_not_a_panic() {
    let now = base_time();
    let mut s = Session::new(Role::Caller, config("N0PTR", Mode::B1));
    s.start(now);
    assert!(s.offer(now, vec![]).is_err());
    assert!(s.answer(now, vec![]).is_err());
    assert!(s.committed(now).is_err());
    let mut s = called(Mode::B1, b"[TST-1.0-FHM$]\r");
    s.handle_input(now, b"FB P N0PTR N0BBS N0USR A1_N0PTR 40\rF>\r");
    assert_eq!(
        s.answer(now, vec![]),
        Err(Error::AnswerCount {
            expected: 1,
            got: 0
        })
    );
}

#[test]
fn unsendable_messages_are_reported() {
    let now = base_time();
    let mut s = Session::new(Role::Caller, config("N0PTR", Mode::B1));
    s.start(now);
    s.handle_input(now, XFBBD_GREETING);
    let _ = events(&mut s);
    let _ = tx(&mut s);
    let bad = fbb_msg(
        1,
        MsgType::Personal,
        "N0USR.X",
        "N0BBS",
        "1_N0PTR",
        "t",
        b"x\r\n",
    );
    s.offer(now, vec![bad]).unwrap();
    let ev = events(&mut s);
    assert!(
        matches!(
            &ev[..],
            [Event::Acknowledged {
                id: 1,
                outcome: Outcome::Unsendable(_)
            }]
        ),
        "{ev:?}"
    );
    assert_eq!(tx(&mut s), b"FF\r");
}

#[test]
fn a_partner_saying_bye_before_its_sid_is_a_clean_end() {
    let mut s = crate::Session::new(
        crate::Role::Called,
        crate::Config::new("N0BBS".parse().unwrap()),
    );
    let now = crate::tests::util::base_time();
    s.start(now);
    let mut out = Vec::new();
    while s.poll_transmit(&mut out) > 0 {}
    s.handle_input(now, b"B\r");
    let events: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
    assert!(
        events.contains(&crate::Event::Closed { error: None }),
        "{events:?}"
    );
    out.clear();
    while s.poll_transmit(&mut out) > 0 {}
    assert!(
        out.is_empty(),
        "no error line: {:?}",
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn a_login_stuck_at_the_pager_prompt_times_out_early_and_says_why() {
    // xfbbd pages a user without the B flag: `-->` with no line end, and then nothing.
    let now = base_time();
    let mut s = Session::new(Role::Caller, config("N0PTR", Mode::B1));
    s.start(now);
    s.handle_input(now, b"N0BBS BBS, QTH FN31PR.\rHello N0PTR\r-->");
    assert!(tx(&mut s).is_empty());
    let deadline = s
        .poll_timeout()
        .expect("armed while waiting for the prompt");
    assert!(deadline <= now + std::time::Duration::from_secs(60));
    s.handle_timeout(deadline);
    let [Event::Closed { error: Some(e) }] = &events(&mut s)[..] else {
        panic!("not closed")
    };
    assert!(e.to_string().contains("prompt after the login"), "{e}");
    assert!(e.to_string().contains("-->"), "{e}");
}

#[test]
fn cr_lf_line_ends_for_jnos_telnet_ports_reach_every_protocol_line_and_text() {
    // JNOS without `cronly` waits for the LF after a bare CR: the session's own lines and a
    // plain-text message's lines all end in CR LF when asked; blocks stay as they are.
    let now = base_time();
    let mut cfg = config("N0BBS", Mode::FbbAscii);
    cfg.line_end = crate::LineEnd::CrLf;
    let mut s = Session::new(Role::Called, cfg);
    s.start(now);
    let hello = tx(&mut s);
    assert!(hello.ends_with(b"]\r\nde N0BBS>\r\n"), "{hello:?}");
    s.handle_input(now, b"[JNOS-2.0o.2-FHIM$]\r\nFF\r\n");
    let evs = events(&mut s);
    assert!(evs.iter().any(|e| matches!(e, Event::NeedOutgoing { .. })));
    let msg = Outgoing {
        id: 1,
        kind: MsgType::Personal,
        from: "N0ABC".into(),
        at: "N0JNS".into(),
        to: "N0XYZ".into(),
        bid: "1_N0BBS".into(),
        title: Bytes::from_static(b"hi"),
        text: Bytes::from_static(b"one\r\ntwo"),
        compressed: None,
    };
    s.offer(now, vec![msg]).unwrap();
    let out = tx(&mut s);
    assert!(
        out.starts_with(b"FB P N0ABC N0JNS N0XYZ 1_N0BBS 8\r\nF>\r\n"),
        "{out:?}"
    );
    s.handle_input(now, b"FS +\r\n");
    assert_eq!(tx(&mut s), b"hi\r\none\r\ntwo\r\n\x1a\r\n");
}

#[test]
fn a_block_that_does_not_parse_leaves_no_partial_but_a_cut_does() {
    // 0xFF doubled where it should not be breaks the framing: the start is known-bad, and
    // offering it for resume next time would fail that session too.
    let now = base_time();
    for (cut, partial) in [(false, false), (true, true)] {
        let mut s = called(Mode::B1, b"[TST-1.0-B1FHM$]\r");
        let _ = events(&mut s);
        s.handle_input(now, b"FA P N0PTR N0BBS N0USR 1_N0PTR 5000\rF> 52\r");
        let _ = events(&mut s);
        s.answer(now, vec![Answer::Accept]).unwrap();
        let _ = tx(&mut s);
        s.handle_input(now, &B1_TRANSFER[..600]);
        if cut {
            s.handle_eof(now);
        } else {
            s.handle_input(now, &[0x99; 600]);
        }
        let ev = events(&mut s);
        assert!(
            matches!(ev.last(), Some(Event::Closed { error: Some(_) })),
            "{ev:?}"
        );
        let kept = ev
            .iter()
            .any(|e| matches!(e, Event::Partial { data, .. } if !data.is_empty()));
        assert_eq!(kept, partial, "{ev:?}");
    }
}

#[test]
fn a_ctrl_z_inside_a_line_is_text_at_its_start_or_end_the_end() {
    // As JNOS reads a message (mboxmail.c): qtc ends one only where senders put ^Z, not at
    // any ^Z a body may hold (LinFBB's reading, which an unescaped body could end early).
    let now = base_time();
    let mut s = called(Mode::Mbl, b"[JNOS-2.0o.2-B1FHIM$]\r");
    events(&mut s);
    tx(&mut s);
    for (body, stored) in [
        (
            &b"one\x1atwo\rthree\x1a\r"[..],
            &b"one\x1atwo\r\nthree\r\n"[..],
        ),
        (b"one\r\x1a and the rest\r", b"one\r\n"),
    ] {
        s.handle_input(now, b"SP N0USR @ N0BBS < N0JNS $Z1_N0JNS\r");
        events(&mut s);
        s.answer(now, vec![Answer::Accept]).unwrap();
        assert_eq!(tx(&mut s), b"OK\r");
        s.handle_input(now, &[&b"title\r"[..], body].concat());
        let evs = events(&mut s);
        let [Event::Received { text, .. }, Event::BlockComplete] = &evs[..] else {
            panic!("{evs:?}")
        };
        assert_eq!(&text[..], stored);
        s.committed(now).unwrap();
        assert_eq!(tx(&mut s), b">\r");
    }
}
