//! Fuzz a forwarding session of either role with arbitrary peer input, an application that
//! accepts everything and offers one message, and timeouts. No input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_fbb::{Answer, Bytes, Config, Event, Mode, MsgType, Outgoing, Role, Session};
use std::time::{Duration, Instant};

fn drain(s: &mut Session, now: Instant, offered: &mut bool) {
    let mut out = Vec::new();
    while s.poll_transmit(&mut out) > 0 {}
    while let Some(ev) = s.poll_event() {
        match ev {
            Event::NeedOutgoing { .. } => {
                let msgs = if *offered {
                    vec![]
                } else {
                    *offered = true;
                    vec![Outgoing {
                        id: 1,
                        kind: MsgType::Personal,
                        from: "N0CLR".into(),
                        at: "N0BBS".into(),
                        to: "N0USR".into(),
                        bid: "1_N0CLR".into(),
                        title: Bytes::from_static(b"fuzz"),
                        text: Bytes::from_static(b"Mid: 1_N0CLR\r\nBody: 3\r\n\r\nabc"),
                        compressed: None,
                    }]
                };
                let _ = s.offer(now, msgs);
            }
            Event::Proposals(ps) => {
                let a = ps
                    .iter()
                    .enumerate()
                    .map(|(i, _)| match i % 3 {
                        0 => Answer::Accept,
                        1 => Answer::AcceptFrom {
                            offset: 6,
                            prefix: Bytes::from_static(&[1, 2, 3, 4, 5, 6]),
                        },
                        _ => Answer::Reject,
                    })
                    .collect();
                let _ = s.answer(now, a);
            }
            Event::BlockComplete => {
                let _ = s.committed(now);
            }
            _ => {}
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, input)) = data.split_first() else {
        return;
    };
    let role = if ctl & 1 == 0 {
        Role::Caller
    } else {
        Role::Called
    };
    let mode = [Mode::Mbl, Mode::FbbAscii, Mode::B0, Mode::B1, Mode::B2][usize::from(ctl >> 1) % 5];
    let mut cfg = Config::new("N0BBS".parse().expect("a callsign"));
    cfg.max_mode = mode;
    cfg.max_message_size = 64 * 1024;
    // Half the runs answer login challenges (SYS, ;PQ) as a caller with a secret would.
    if ctl & 0x08 != 0 {
        cfg.secret = Some("S3cretWord".into());
    }
    let mut s = Session::new(role, cfg);
    #[allow(clippy::disallowed_methods)]
    let mut now = Instant::now();
    let mut offered = false;
    s.start(now);
    drain(&mut s, now, &mut offered);
    let step = usize::from(ctl >> 4) * 7 + 1;
    for chunk in input.chunks(step) {
        now += Duration::from_millis(10);
        s.handle_input(now, chunk);
        drain(&mut s, now, &mut offered);
    }
    if let Some(t) = s.poll_timeout() {
        s.handle_timeout(t);
    }
    s.handle_eof(now);
    drain(&mut s, now, &mut offered);
    assert!(s.is_closed());
});
