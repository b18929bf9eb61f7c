use super::util::*;
use crate::{Error, Event, Mode, Outcome, Outgoing, Role, Session};
use bytes::Bytes;
use std::time::Duration;

const MODES: [Mode; 5] = [Mode::Mbl, Mode::FbbAscii, Mode::B0, Mode::B1, Mode::B2];

fn outbox(mode: Mode, prefix: &str, sizes: &[usize], seed: u64) -> Vec<Outgoing> {
    let mut rng = Rng::new(seed);
    let alpha = mixed_alphabet();
    sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let bid = format!("{i}_{prefix}");
            let body = text_body(&mut rng, len, &alpha);
            let body = if len == 0 { Bytes::new() } else { body };
            let text = if mode == Mode::B2 {
                b2f_text(&bid, &format!("Subject {i}"), &body)
            } else {
                body
            };
            let mut m = msg(
                seed * 100 + i as u64,
                &bid,
                &format!("Title {i} {prefix}"),
                text,
            );
            m.from = prefix.into();
            m
        })
        .collect()
}

fn assert_delivered(sent: &[Outgoing], to: &App, mode: Mode) {
    for m in sent {
        let got = to
            .store
            .iter()
            .find(|s| s.proposal.bid == m.bid)
            .unwrap_or_else(|| panic!("{} not delivered in {mode:?}", m.bid));
        assert_eq!(got.text, m.text, "text of {} in {mode:?}", m.bid);
        if mode == Mode::B2 {
            assert_eq!(got.title, m.title);
        } else {
            assert_eq!(got.title, m.title, "title in {mode:?}");
            assert_eq!(got.proposal.from, m.from);
            assert_eq!(got.proposal.to, m.to);
        }
    }
}

fn assert_acked_sent(sent: &[Outgoing], app: &App) {
    for m in sent {
        assert!(
            app.acks
                .iter()
                .any(|(id, o)| *id == m.id && *o == Outcome::Sent),
            "{} not acknowledged as sent: {:?}",
            m.bid,
            app.acks
        );
    }
}

#[test]
fn every_mode_both_directions() {
    for mode in MODES {
        for seed in 1..4u64 {
            let a = outbox(mode, "N0CLR", &[0, 1, 300, 5000, 100_000, 20, 7], seed);
            let b = outbox(mode, "N0BBS", &[40, 0, 12_000], seed + 50);
            let mut p = Pair::new(mode, App::with(a.clone()), App::with(b.clone()), seed);
            p.max_chunk = [1, 7, 300, 4096][seed as usize % 4];
            p.drive();
            assert_eq!(p.caller_app.mode, Some(mode));
            assert_eq!(p.called_app.mode, Some(mode));
            assert_eq!(p.caller_app.closed, Some(None), "{mode:?}");
            assert_eq!(p.called_app.closed, Some(None), "{mode:?}");
            assert_delivered(&a, &p.called_app, mode);
            assert_delivered(&b, &p.caller_app, mode);
            assert_acked_sent(&a, &p.caller_app);
            assert_acked_sent(&b, &p.called_app);
            assert!(p.caller_app.outbox.is_empty() && p.called_app.outbox.is_empty());
        }
    }
}

#[test]
fn nothing_to_send_ends_with_ff_fq() {
    for mode in MODES {
        let mut p = Pair::new(mode, App::default(), App::default(), 9);
        p.drive();
        assert_eq!(p.caller_app.closed, Some(None));
        assert_eq!(p.called_app.closed, Some(None));
        if mode.is_batch() {
            assert!(p.wire_to_called.ends_with(b"FF\r"));
            assert!(p.wire_to_caller.ends_with(b"FQ\r"));
        }
    }
}

#[test]
fn duplicates_are_refused_and_acknowledged() {
    for mode in MODES {
        let a = outbox(mode, "N0CLR", &[10, 20, 30], 3);
        let mut called = App::default();
        called.bids.insert(a[1].bid.clone());
        let mut p = Pair::new(mode, App::with(a.clone()), called, 3);
        p.drive();
        assert_eq!(p.called_app.store.len(), 2, "{mode:?}");
        assert!(p.caller_app.acks.contains(&(a[1].id, Outcome::Rejected)));
        assert!(p.caller_app.acks.contains(&(a[0].id, Outcome::Sent)));
    }
}

#[test]
fn more_than_a_block() {
    for mode in [Mode::FbbAscii, Mode::B1, Mode::B2] {
        let sizes = [100usize; 13];
        let a = outbox(mode, "N0CLR", &sizes, 4);
        let mut p = Pair::new(mode, App::with(a.clone()), App::default(), 4);
        p.drive();
        assert_delivered(&a, &p.called_app, mode);
        assert_eq!(p.caller_app.closed, Some(None));
        // No block above 5 proposals.
        let text = String::from_utf8_lossy(&p.wire_to_called).into_owned();
        let mut run = 0;
        for l in text.split('\r') {
            if l.starts_with("FA ") || l.starts_with("FB ") || l.starts_with("FC ") {
                run += 1;
                assert!(run <= 5);
            } else if l.starts_with("F>") {
                run = 0;
            }
        }
    }
}

/// Cut the link after every `step` bytes of a reference run, then retry: everything arrives
/// once, nothing acknowledged that the peer had not stored.
#[test]
fn cuts_at_every_phase_then_retry() {
    for mode in MODES {
        let a = outbox(mode, "N0CLR", &[0, 700, 3000, 90], 5);
        let b = outbox(mode, "N0BBS", &[500, 10], 6);
        let mut reference = Pair::new(mode, App::with(a.clone()), App::with(b.clone()), 5);
        reference.drive();
        let total = reference.transferred;
        let step = (total / 150).max(1);
        let mut cut = 1;
        while cut < total {
            let mut p = Pair::new(mode, App::with(a.clone()), App::with(b.clone()), cut as u64);
            p.cut_at = Some(cut);
            p.drive();
            for (side, sent, peer) in [
                (&p.caller_app, &a, &p.called_app),
                (&p.called_app, &b, &p.caller_app),
            ] {
                assert!(side.closed.is_some(), "{mode:?} cut {cut}");
                for (id, o) in &side.acks {
                    if matches!(o, Outcome::Sent | Outcome::Held) {
                        let m = sent.iter().find(|m| m.id == *id).unwrap();
                        assert!(
                            peer.bids.contains(&m.bid),
                            "{mode:?} cut {cut}: {} acknowledged, not stored",
                            m.bid
                        );
                    }
                }
            }
            let mut p = p.reconnect(cut as u64 + 1);
            p.drive();
            assert_eq!(
                p.caller_app.closed,
                Some(None),
                "{mode:?} retry after cut {cut}"
            );
            assert_eq!(
                p.called_app.closed,
                Some(None),
                "{mode:?} retry after cut {cut}"
            );
            assert_delivered(&a, &p.called_app, mode);
            assert_delivered(&b, &p.caller_app, mode);
            assert_eq!(p.called_app.store.len(), a.len());
            assert_eq!(p.caller_app.store.len(), b.len());
            cut += step;
        }
    }
}

#[test]
fn b1_resume_at_an_offset() {
    for mode in [Mode::B1, Mode::B2] {
        let a = outbox(mode, "N0CLR", &[60_000], 7);
        let mut reference = Pair::new(mode, App::with(a.clone()), App::default(), 7);
        reference.drive();
        let full = reference.transferred;
        // Cut in the middle of the binary transfer.
        let mut p = Pair::new(mode, App::with(a.clone()), App::default(), 7);
        p.cut_at = Some(full / 2);
        p.drive();
        let partial = p
            .called_app
            .partials
            .get(&a[0].bid)
            .expect("partial kept")
            .clone();
        assert!(partial.len() > 1000, "{}", partial.len());
        let mut p = p.reconnect(8);
        p.drive();
        assert_eq!(p.called_app.resumed, 1);
        assert_delivered(&a, &p.called_app, mode);
        assert!(p.called_app.partials.is_empty());
        assert!(
            p.transferred < full - partial.len() / 2,
            "resume sent {} of {full}",
            p.transferred
        );
        let fs = String::from_utf8_lossy(&p.wire_to_caller).into_owned();
        assert!(fs.contains(&format!("FS A{}", partial.len())), "{fs}");
    }
}

#[test]
fn resume_with_a_stale_partial_fails_cleanly() {
    let a = outbox(Mode::B1, "N0CLR", &[20_000], 8);
    let mut called = App::default();
    called
        .partials
        .insert(a[0].bid.clone(), Bytes::from(vec![0x55u8; 900]));
    let mut p = Pair::new(Mode::B1, App::with(a.clone()), called, 8);
    p.drive();
    assert_eq!(p.called_app.closed, Some(Some(Error::ResumeMismatch)));
    assert!(p.called_app.store.is_empty());
    assert!(!p.caller_app.acks.iter().any(|(_, o)| *o == Outcome::Sent));
    // The stale partial is dropped: the next session takes the message from 0, not
    // `A900` again (xfbbd does the same).
    assert!(p.called_app.partials.is_empty());
    let mut p = p.reconnect(9);
    p.drive();
    assert_delivered(&a, &p.called_app, Mode::B1);
    assert!(!String::from_utf8_lossy(&p.wire_to_caller).contains("FS A"));
}

#[test]
fn a_cut_resume_with_wrong_check_bytes_drops_the_partial() {
    // The called side kept 900 bytes of another file; the caller's resume is cut after its
    // check bytes: they are not appended to the partial (it would grow by 6 every try).
    let a = outbox(Mode::B1, "N0CLR", &[20_000], 8);
    let stale = || {
        let mut called = App::default();
        called
            .partials
            .insert(a[0].bid.clone(), Bytes::from(vec![0x55u8; 900]));
        called
    };
    let mut reference = Pair::new(Mode::B1, App::with(a.clone()), stale(), 8);
    reference.drive();
    let mut p = Pair::new(Mode::B1, App::with(a.clone()), stale(), 8);
    p.cut_at = Some(reference.transferred - 100);
    p.drive();
    assert_eq!(p.called_app.closed, Some(Some(Error::ConnectionLost)));
    assert!(
        p.called_app.partials.is_empty(),
        "{:?}",
        p.called_app.partials.keys()
    );
}

#[test]
fn a_partner_that_fails_resumes_gets_the_whole_message() {
    // 64-bit LinFBB asks `A<offset>` and then refuses what comes: with send_resumes off we
    // answer its `A` with the whole file (offset 0), which a receiver takes as a new start.
    let a = outbox(Mode::B1, "N0CLR", &[20_000], 8);
    let mut reference = Pair::new(Mode::B1, App::with(a.clone()), App::default(), 8);
    reference.drive();
    let full = reference.transferred;
    let mut p = Pair::new(Mode::B1, App::with(a.clone()), App::default(), 8);
    p.cut_at = Some(full / 2);
    p.drive();
    assert!(!p.called_app.partials.is_empty());
    let mut caller_cfg = config("N0CLR", Mode::B1);
    caller_cfg.send_resumes = false;
    let mut p = Pair::with_configs(
        caller_cfg,
        config("N0BBS", Mode::B1),
        p.caller_app,
        p.called_app,
        9,
    );
    p.drive();
    assert_eq!(p.called_app.resumed, 1);
    assert_delivered(&a, &p.called_app, Mode::B1);
    assert!(p.transferred >= full - 200, "{} of {full}", p.transferred);
}

#[test]
fn idle_timeout_only_while_waiting_for_the_peer() {
    let now = base_time();
    let mut cfg = config("N0CLR", Mode::B1);
    cfg.idle_timeout = Duration::from_secs(30);
    let mut s = Session::new(Role::Caller, cfg);
    s.start(now);
    assert_eq!(s.poll_timeout(), Some(now + Duration::from_secs(30)));
    s.handle_input(now + Duration::from_secs(10), b"[FBB-7.0.12-AB1FHMRX$]\r");
    let t = s.poll_timeout().unwrap();
    assert_eq!(t, now + Duration::from_secs(40));
    s.handle_timeout(now + Duration::from_secs(39));
    assert!(!s.is_closed());
    s.handle_input(
        now + Duration::from_secs(20),
        b"(1) N0BBS BBS (H for help) >\r",
    );
    // Waiting for the application: no timer.
    assert!(matches!(
        s.poll_event(),
        Some(Event::Connected { mode: Mode::B1, .. })
    ));
    assert_eq!(s.poll_event(), Some(Event::NeedOutgoing { max: 5 }));
    assert_eq!(s.poll_timeout(), None);
    s.offer(now + Duration::from_secs(100), vec![]).unwrap();
    assert_eq!(s.poll_timeout(), Some(now + Duration::from_secs(130)));
    s.handle_timeout(now + Duration::from_secs(130));
    assert_eq!(
        s.poll_event(),
        Some(Event::Closed {
            error: Some(Error::Timeout {
                waiting_for: "proposals, FF or FQ"
            })
        })
    );
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn mbl_reverse_forwarding() {
    let a = outbox(Mode::Mbl, "N0CLR", &[10, 20], 10);
    let b = outbox(Mode::Mbl, "N0BBS", &[30, 40, 50], 11);
    let mut p = Pair::new(Mode::Mbl, App::with(a.clone()), App::with(b.clone()), 12);
    p.drive();
    assert_delivered(&a, &p.called_app, Mode::Mbl);
    assert_delivered(&b, &p.caller_app, Mode::Mbl);
    let to_called = String::from_utf8_lossy(&p.wire_to_called).into_owned();
    assert!(to_called.contains("\rF>\r"), "{to_called:?}");
    assert!(to_called.ends_with("\rB\r"), "{to_called:?}");
    // Without reverse forwarding the caller says B at once.
    let mut cfg = config("N0CLR", Mode::Mbl);
    cfg.mbl_reverse = false;
    let mut p = Pair::with_configs(
        cfg,
        config("N0BBS", Mode::Mbl),
        App::with(a.clone()),
        App::with(b),
        13,
    );
    p.drive();
    assert_delivered(&a, &p.called_app, Mode::Mbl);
    assert!(p.caller_app.store.is_empty());
    assert_eq!(p.caller_app.closed, Some(None));
    assert_eq!(p.called_app.closed, Some(None));
}

#[test]
fn modes_negotiate_down() {
    for (x, y) in [
        (Mode::B2, Mode::B1),
        (Mode::B1, Mode::FbbAscii),
        (Mode::B0, Mode::Mbl),
    ] {
        let a = outbox(y, "N0CLR", &[100], 14);
        let mut p = Pair::with_configs(
            config("N0CLR", x),
            config("N0BBS", y),
            App::with(a.clone()),
            App::default(),
            14,
        );
        p.drive();
        assert_eq!(p.caller_app.mode, Some(y));
        assert_delivered(&a, &p.called_app, y);
    }
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    fn canonical(lines: Vec<Vec<u8>>) -> Bytes {
        let mut out = Vec::new();
        for mut l in lines {
            l.retain(|&b| b != b'\r' && b != b'\n');
            out.extend_from_slice(&l);
            out.extend_from_slice(b"\r\n");
        }
        Bytes::from(out)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn any_body_any_chunking(
            m in 0usize..5,
            bodies in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..120), 0..40),
                1..4,
            ),
            chunk in 1usize..2000,
            seed: u64,
        ) {
            let mode = MODES[m];
            let a: Vec<Outgoing> = bodies
                .into_iter()
                .enumerate()
                .map(|(i, lines)| {
                    let bid = format!("P{i}_N0CLR");
                    let body = canonical(lines);
                    let text = if mode == Mode::B2 { b2f_text(&bid, "s", &body) } else { body };
                    msg(i as u64, &bid, "t", text)
                })
                .collect();
            let mut p = Pair::new(mode, App::with(a.clone()), App::default(), seed);
            p.max_chunk = chunk;
            p.drive();
            prop_assert_eq!(&p.caller_app.closed, &Some(None));
            for m in &a {
                let got = p.called_app.store.iter().find(|s| s.proposal.bid == m.bid);
                prop_assert_eq!(got.map(|s| &s.text), Some(&m.text));
            }
        }
    }
}

#[test]
fn caller_answers_sys_and_winlink_challenges_with_its_secret() {
    let now = base_time();
    let mut cfg = config("N0CLR", Mode::B2);
    cfg.secret = Some("FOOBAR".into());
    let mut s = Session::new(Role::Caller, cfg);
    s.start(now);
    // FBB's SYS challenge before the SID: five positions into the secret.
    s.handle_input(now, b"1 2 3 4 6\r");
    let mut out = Vec::new();
    while s.poll_transmit(&mut out) > 0 {}
    assert_eq!(out, b"FOOBR\r");
    // Winlink: the challenge comes with the SID; the answer follows our SID.
    s.handle_input(now, b"[WL2K-5.0-B2FWIHJM$]\r;PQ: 23753528\rCMS>\r");
    out.clear();
    while s.poll_transmit(&mut out) > 0 {}
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.split('\r').collect();
    assert!(lines[0].starts_with("[QTC-"), "{text:?}");
    assert_eq!(lines[1], ";PR: 72768415", "{text:?}");
}

#[test]
fn without_a_secret_challenges_go_unanswered() {
    let now = base_time();
    let mut s = Session::new(Role::Caller, config("N0CLR", Mode::B2));
    s.start(now);
    s.handle_input(
        now,
        b"1 2 3 4 6\r[WL2K-5.0-B2FWIHJM$]\r;PQ: 23753528\rCMS>\r",
    );
    let mut out = Vec::new();
    while s.poll_transmit(&mut out) > 0 {}
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("[QTC-"), "{text:?}");
    assert!(!text.contains(";PR"), "{text:?}");
}

/// A body written to forge mail wherever it is read as MBL or FBB protocol: the end of a
/// message (`/EX`, ^Z, LinFBB's `/AB`, one of JNOS's 127-byte pieces), then send lines.
fn forging_body() -> Bytes {
    let mut long = vec![b'a'; 127];
    long.extend_from_slice(b"/EX");
    let lines: [&[u8]; 12] = [
        b"Dear sysop,",
        b"/EX",
        b"SP N0USR @ N0QQQ < N0SYS $FORGED1",
        b"forged",
        b"/ex",
        b"\x1aSB ALL @ WW < N0SYS $FORGED2",
        b"x\x1a",
        b"/ABORT",
        b"  /EX",
        b"mid\x1adle, NUL \x00 BS \x08 DEL \x7f",
        &long,
        b"end",
    ];
    let mut body = Vec::new();
    for l in lines {
        body.extend_from_slice(l);
        body.extend_from_slice(b"\r\n");
    }
    Bytes::from(body)
}

fn forging_outbox(mode: Mode) -> Vec<Outgoing> {
    let body = forging_body();
    let text = if mode == Mode::B2 {
        b2f_text("F1_N0CLR", "s", &body)
    } else {
        body
    };
    vec![msg(1, "F1_N0CLR", "forging", text)]
}

#[test]
fn a_body_that_would_forge_mail_arrives_whole_at_qtc_in_every_mode() {
    for mode in MODES {
        for chunk in [1, 300] {
            let a = forging_outbox(mode);
            let mut p = Pair::new(mode, App::with(a.clone()), App::default(), 5);
            p.max_chunk = chunk;
            p.drive();
            assert_eq!(p.called_app.closed, Some(None), "{mode:?}");
            assert_eq!(p.called_app.store.len(), 1, "{mode:?}");
            assert_delivered(&a, &p.called_app, mode);
            if !mode.is_compressed() {
                // On the wire every such line has one space more before it.
                let wire = String::from_utf8_lossy(&p.wire_to_called).into_owned();
                assert!(wire.contains("\r /EX\rSP N0USR"), "{wire:?}");
                assert!(
                    wire.contains(&format!("{} /EX\r", "a".repeat(127))),
                    "{wire:?}"
                );
            }
        }
    }
}

#[test]
fn another_software_gets_the_body_escaped_and_reads_no_protocol_in_it() {
    for mode in [Mode::Mbl, Mode::FbbAscii] {
        let (mut caller, mut called) = (config("N0CLR", mode), config("N0BBS", mode));
        (caller.software, called.software) = ("OTHER".into(), "OTHER".into());
        let a = forging_outbox(mode);
        let mut p = Pair::with_configs(caller, called, App::with(a), App::default(), 6);
        p.drive();
        assert_eq!(p.called_app.closed, Some(None), "{mode:?}");
        let [got] = &p.called_app.store[..] else {
            panic!("{mode:?}: {:?}", p.called_app.store)
        };
        let text = String::from_utf8_lossy(&got.text).into_owned();
        let want = format!(
            "Dear sysop,\r\n /EX\r\nSP N0USR @ N0QQQ < N0SYS $FORGED1\r\nforged\r\n /ex\r\n\
             SB ALL @ WW < N0SYS $FORGED2\r\nx\r\n /ABORT\r\n   /EX\r\n\
             middle, NUL  BS  DEL \r\n{} /EX\r\nend\r\n",
            "a".repeat(127)
        );
        assert_eq!(text, want, "{mode:?}");
    }
}
