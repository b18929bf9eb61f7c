//! Links on a half-duplex channel with air time (`radio`): T1 from when frames leave the modem,
//! one poll at a time, delayed acknowledgement, windows sized for the speed.

use std::time::Duration;

use super::radio::{is_s, Radio};
use crate::air::Air;
use crate::link::{Config, Event, State};
use crate::wire::{CommandResponse, Control, Supervisory};

const KB20: usize = 20 * 1024;

/// Seconds of air the real-time channel's README counts for `n` payload bytes at PACLEN `p`,
/// window `k` and `air` (modulo 128: two control bytes): the frames, TXDELAY + TXTAIL per
/// transmission of a window, and one RR transmission per window.
fn channel_limit(air: &Air, n: usize, p: usize, k: usize) -> Duration {
    let frames = n.div_ceil(p);
    let windows = u32::try_from(frames.div_ceil(k)).unwrap();
    let frame = air.frame_time(14 + 2 + 1 + p);
    let rr = air.frame_time(14 + 2);
    frame * u32::try_from(frames).unwrap()
        + (air.txdelay + air.txtail) * windows
        + (air.txdelay + rr + air.txtail) * windows
}

/// A sends `data` to B; returns when B has it all (panics after `limit`).
fn send_all(r: &mut Radio, data: &[u8], limit: Duration) {
    r.a.to_send.extend(data);
    let n = data.len();
    let ok = r.run_until(limit, |r| r.b.rx.len() >= n);
    let a =
        r.a.link
            .and_then(|id| r.a.port.link(id))
            .map(|l| (l.state(), l.stats()));
    assert!(
        ok,
        "stalled at {:?}: B has {} of {n}; A {a:?} events {:?}; B events {:?}",
        r.elapsed(),
        r.b.rx.len(),
        r.a.events,
        r.b.events
    );
    assert!(r.b.rx == data, "data corrupted or repeated");
}

/// A transfer that took `took` kept within 1.1 times the channel's `limit`.
fn assert_within_limit(took: Duration, limit: Duration) {
    assert!(
        took.as_secs_f64() <= limit.as_secs_f64() * 1.1,
        "{took:?} against a limit of {limit:?}"
    );
}

fn stats_a(r: &Radio) -> crate::link::LinkStats {
    r.a.link
        .and_then(|id| r.a.port.link(id))
        .map(|l| l.stats())
        .unwrap()
}

/// Two stations on a 1200-baud KISS channel with the speed's defaults (version 2.2 or 2.0),
/// frames spoiled at `noise`, connected.
fn connected_at_1200(v22: bool, seed: u64, noise: f64) -> Radio {
    let air = Air::kiss(1200);
    let cfg = Config {
        prefer_v22: v22,
        ..Config::for_air(air)
    };
    let mut r = Radio::new(air, cfg.clone(), cfg, seed);
    r.noise = noise;
    r.connect();
    r
}

fn data(n: usize, seed: u64) -> Vec<u8> {
    super::util::Rng::new(seed).bytes(n)
}

#[test]
fn the_defaults_follow_the_speed() {
    let slow = Config::for_air(Air::kiss(1200));
    assert_eq!((slow.n1, slow.k_mod8, slow.k_mod128), (256, 7, 10));
    let fast = Config::for_air(Air::kiss(9600));
    assert_eq!((fast.n1, fast.k_mod8, fast.k_mod128), (256, 7, 32));
    let hf = Config::for_air(Air::kiss(300));
    assert_eq!((hf.n1, hf.k_mod8, hf.k_mod128), (128, 4, 4));
    assert_eq!(Config::for_air(Air::NONE), Config::default());
}

/// Issue 31's failure, on the old timers: with T1 started when frames are handed to the modem
/// and a 32-frame window, T1 expires while the window still waits in the modem, polls pile up
/// behind it and the window goes again behind itself.
#[test]
fn without_the_air_model_t1_expires_while_the_window_waits_in_the_modem() {
    let air = Air::kiss(1200);
    let old = Config::default();
    let mut r = Radio::new(air, old.clone(), old, 1);
    r.connect();
    r.a.to_send.extend(data(KB20, 2));
    r.run_for(Duration::from_secs(120));
    assert!(
        r.a.max_polls_queued >= 5,
        "{} polls queued",
        r.a.max_polls_queued
    );
    let timeout = Event::Disconnected {
        reason: crate::link::DisconnectReason::Timeout,
    };
    assert!(r.a.events.contains(&timeout), "{:?}", r.a.events);
    assert!(r.b.rx.len() < KB20);
}

/// The same transfer on the defaults: nothing expires, nothing is sent twice, B acknowledges
/// once per window, and the whole takes at most 1.1 times the channel's limit.
#[test]
fn bulk_at_1200_on_the_defaults_sends_each_frame_once() {
    let air = Air::kiss(1200);
    let mut r = Radio::defaults(air, 3);
    r.connect();
    let t0 = r.now;
    send_all(&mut r, &data(KB20, 4), Duration::from_secs(600));
    let took = r.now - t0;
    let st = stats_a(&r);
    assert_eq!(st.t1_expiries, 0, "{st:?}");
    assert_eq!(st.i_frames_resent, 0, "{st:?}");
    assert_eq!(r.collisions, 0);
    let cfg = Config::for_air(air);
    let windows = KB20.div_ceil(cfg.n1).div_ceil(usize::from(cfg.k_mod128));
    // One acknowledgement per window, whatever was sent before the transfer.
    let acks = r.b.supervisory();
    assert!(
        acks <= windows + 3,
        "{acks} acknowledgements for {windows} windows"
    );
    let limit = channel_limit(&air, KB20, cfg.n1, usize::from(cfg.k_mod128));
    assert_within_limit(took, limit);
}

#[test]
fn bulk_at_9600_on_the_defaults() {
    let air = Air::kiss(9600);
    let mut r = Radio::defaults(air, 5);
    r.connect();
    send_all(&mut r, &data(100 * 1024, 6), Duration::from_secs(600));
    let st = stats_a(&r);
    assert_eq!((st.t1_expiries, st.i_frames_resent), (0, 0), "{st:?}");
}

/// v2.0 peers (modulo 8, REJ) get the same: k = 7 at 1200.
#[test]
fn bulk_at_1200_v20() {
    let mut r = connected_at_1200(false, 7, 0.0);
    send_all(&mut r, &data(KB20, 8), Duration::from_secs(600));
    let st = stats_a(&r);
    assert_eq!((st.t1_expiries, st.i_frames_resent), (0, 0), "{st:?}");
}

/// Frames spoiled by noise: everything arrives once and in order, and A never has more than one
/// poll waiting in its modem.
#[test]
fn noisy_channel_one_poll_at_a_time() {
    for seed in 10..22 {
        for v22 in [true, false] {
            let mut r = connected_at_1200(v22, seed, 0.0005);
            send_all(&mut r, &data(8 * 1024, seed), Duration::from_secs(3600));
            assert!(
                r.a.max_polls_queued <= 1,
                "seed {seed}: {}",
                r.a.max_polls_queued
            );
            assert!(
                r.b.max_polls_queued <= 1,
                "seed {seed}: {}",
                r.b.max_polls_queued
            );
            // One poll per T1 expiry, no more.
            assert!(r.a.polls() as u64 <= stats_a(&r).t1_expiries, "seed {seed}");
        }
    }
}

/// Both ways at once on the half-duplex channel: the acknowledgements ride on the data.
#[test]
fn both_ways_acks_ride_on_data() {
    let air = Air::kiss(1200);
    let mut r = Radio::defaults(air, 30);
    r.connect();
    let (da, db) = (data(8 * 1024, 31), data(8 * 1024, 32));
    r.a.to_send.extend(&da);
    r.b.to_send.extend(&db);
    let n = da.len();
    assert!(r.run_until(Duration::from_secs(900), |r| r.b.rx.len() >= n
        && r.a.rx.len() >= n));
    assert_eq!((r.b.rx == da, r.a.rx == db), (true, true));
    let st = stats_a(&r);
    assert_eq!(st.t1_expiries, 0, "{st:?}");
}

/// A question and its answer, as a user or a forwarding session exchanges them: the receiver
/// of each holds its acknowledgement (T2) and sends it with the answer, not in an RR of its own.
#[test]
fn answers_carry_the_acknowledgement() {
    let air = Air::kiss(1200);
    let mut r = Radio::defaults(air, 40);
    r.connect();
    let rr_before = r.b.count(|s| is_s(s, Supervisory::Rr));
    for i in 1..=5 {
        r.a.to_send.extend(b"LL 5\r");
        assert!(r.run_until(Duration::from_secs(60), |r| r.b.rx.len() >= i * 5));
        // B's application answers at once.
        r.b.to_send.extend(vec![b'x'; 300]);
        assert!(r.run_until(Duration::from_secs(60), |r| r.a.rx.len() >= i * 300));
    }
    let rr = r.b.count(|s| is_s(s, Supervisory::Rr)) - rr_before;
    assert_eq!(rr, 0, "B sent {rr} RRs of its own");
}

/// Polled with frames past a gap held, an SREJ link answers with SREJ F=1 for the gap: the
/// sender resends that frame alone and leaves timer recovery.
#[test]
fn a_poll_is_answered_with_srej_for_the_gap() {
    use crate::wire::{Address, Frame, Modulo, Pid};
    let air = Air::kiss(1200);
    let mut r = Radio::defaults(air, 50);
    r.connect();
    let now = r.now;
    let b = r.b.link.unwrap();
    let link = r.b.port.link_mut(b).unwrap();
    assert!(link.uses_srej());
    let (from, to) = (r.a.call, r.b.call);
    let i = |ns, poll| {
        Frame::information(
            Address::new(to, from, CommandResponse::Command),
            ns,
            0,
            poll,
            Pid::NO_LAYER3,
            vec![ns; 10],
            Modulo::Mod128,
        )
    };
    link.handle_frame(now, i(1, false));
    link.handle_frame(now, i(2, false));
    // SREJ for 0 asked at once; then the poll.
    while link.poll_transmit(now).is_some() {}
    link.handle_frame(
        now,
        Frame::supervisory(
            Address::new(to, from, CommandResponse::Command),
            Supervisory::Rr,
            0,
            true,
            Modulo::Mod128,
        ),
    );
    let answer = link.poll_transmit(now).unwrap();
    assert_eq!(
        answer.control,
        Control::S {
            kind: Supervisory::Srej,
            nr: 0,
            pf: true
        }
    );
    assert_eq!(link.state(), State::Connected);
    assert!(!r.b.events.contains(&Event::Reset));
}

/// Karn's rule: a round trip is sampled from frames sent once; after a retransmission the
/// estimate is left alone.
#[test]
fn karn_no_round_trip_from_a_retransmission() {
    let air = Air::kiss(1200);
    let mut r = Radio::defaults(air, 60);
    r.connect();
    send_all(&mut r, &data(2048, 61), Duration::from_secs(300));
    let a = r.a.link.unwrap();
    let srt = r.a.port.link(a).unwrap().srt();
    // The peer's turnaround on this channel: a slot wait, TXDELAY, an RR or a short I frame.
    assert!(srt < Duration::from_secs(3), "{srt:?}");
    // Everything from now on is lost: T1 expires, polls go unanswered; no sample is taken.
    r.noise = 1.0;
    r.a.to_send.extend(data(256, 62));
    r.run_for(Duration::from_secs(20));
    let l = r.a.port.link(a).unwrap();
    assert!(l.stats().t1_expiries > 0);
    assert_eq!(l.srt(), srt, "no sample while nothing is answered");
}

/// Many seeds of the noisy 1200-baud channel, both versions, both ways at once. Slow; run with
/// `cargo test -p qtc-ax25 --release -- --ignored air_seed_sweep`.
#[test]
#[ignore]
fn air_seed_sweep() {
    let from: u64 = std::env::var("AIR_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    for seed in from..400 {
        for v22 in [true, false] {
            let mut r = connected_at_1200(v22, seed, 0.001);
            let (da, db) = (data(4096, seed), data(2048, seed + 1));
            r.a.to_send.extend(&da);
            r.b.to_send.extend(&db);
            let ok = r.run_until(Duration::from_secs(7200), |r| {
                r.b.rx.len() >= da.len() && r.a.rx.len() >= db.len()
            });
            assert!(ok && r.b.rx == da && r.a.rx == db, "seed {seed} v22 {v22}");
            assert!(
                r.a.max_polls_queued <= 1 && r.b.max_polls_queued <= 1,
                "seed {seed} v22 {v22}: polls queued {} {}",
                r.a.max_polls_queued,
                r.b.max_polls_queued
            );
        }
    }
}

/// A sender of `k` frames at a time without P (JNOS as shipped: MAXFRAME 1; Direwolf's and
/// many TNCs' default MAXFRAME 4), version 2.0, with no air model of its own.
fn window_of(k: u8) -> Config {
    Config {
        prefer_v22: false,
        k_mod8: k,
        // Long enough for its window and our answer: its own T1 is not what is measured.
        frack: Duration::from_secs(30),
        ..Config::default()
    }
}

/// How long a sender on `tx` takes to move `n` bytes to a receiver on `rx`.
fn transfer(tx: Config, rx: Config, n: usize, seed: u64) -> Duration {
    let air = Air::kiss(1200);
    let mut r = Radio::new(air, tx, rx, seed);
    r.connect();
    let t0 = r.now;
    send_all(&mut r, &data(n, seed), Duration::from_secs(1800));
    let st = stats_a(&r);
    assert_eq!((st.t1_expiries, st.i_frames_resent), (0, 0), "{st:?}");
    r.now - t0
}

/// Issue 36: a sender seen to send `k` frames at a time and wait (its window, smaller than
/// ours) gets its RR at once after the k-th frame, not after T2 (the air time of the longest
/// frame heard): into qtc it is no slower than into a receiver that acknowledges at once
/// (JNOS acknowledging JNOS).
#[test]
fn a_sender_of_few_frames_at_a_time_is_acknowledged_at_once() {
    let air = Air::kiss(1200);
    let n = 40 * 256;
    let at_once = Config {
        t2: Duration::from_millis(1),
        ..Config::for_air(air)
    };
    for k in [1, 4] {
        let immediate = transfer(window_of(k), at_once.clone(), n, 70);
        let qtc = transfer(window_of(k), Config::for_air(air), n, 70);
        eprintln!(
            "{k} frames at a time, 40 frames: into qtc {qtc:?}, acknowledged at once {immediate:?}"
        );
        assert!(
            qtc.as_secs_f64() <= immediate.as_secs_f64() * 1.05,
            "k = {k}: into qtc {qtc:?}, into a receiver that acknowledges at once {immediate:?}"
        );
    }
}

/// A sender that keeps sending after an early RR is not one frame at a time: the receiver goes
/// back to holding its RR for the rest of the transmission, and the transfer keeps to the
/// channel's limit (the early RR costs an RR's air time in the same transmission).
#[test]
fn a_window_after_lone_frames_keeps_to_the_limit() {
    let air = Air::kiss(1200);
    let mut r = Radio::defaults(air, 80);
    r.connect();
    // Lone frames the application does not answer (T2 acknowledges each), then bulk.
    for i in 1..=3 {
        r.a.to_send.extend(b"line\r");
        assert!(r.run_until(Duration::from_secs(60), |r| r.b.rx.len() >= i * 5));
        r.run_for(Duration::from_secs(10));
    }
    let n = r.b.rx.len() + KB20;
    let t0 = r.now;
    r.a.to_send.extend(data(KB20, 81));
    assert!(r.run_until(Duration::from_secs(600), |r| r.b.rx.len() >= n));
    let took = r.now - t0;
    let cfg = Config::for_air(air);
    let limit = channel_limit(&air, KB20, cfg.n1, usize::from(cfg.k_mod128));
    assert_within_limit(took, limit);
    assert_eq!(stats_a(&r).t1_expiries, 0);
}

/// B on a connected 1200-baud link, everything sent so far drained; the frames A would send
/// it are built by `poll`.
fn b_link_after_connect(seed: u64) -> (Radio, crate::port::LinkId) {
    let air = Air::kiss(1200);
    let mut r = Radio::defaults(air, seed);
    r.connect();
    r.run_for(Duration::from_secs(5));
    let id = r.b.link.unwrap();
    (r, id)
}

/// Command RRs from A with P=1, acknowledging up to the N(R) given.
fn poll_from_a(r: &Radio) -> impl Fn(u8) -> crate::wire::Frame {
    use crate::wire::{Address, Frame, Modulo};
    let (a, b) = (r.a.call, r.b.call);
    move |nr| {
        Frame::supervisory(
            Address::new(b, a, CommandResponse::Command),
            Supervisory::Rr,
            nr,
            true,
            Modulo::Mod128,
        )
    }
}

/// B sends a prompt (one I frame) that leaves its modem 1 s later and is heard by nobody; A's
/// poll, acknowledging up to that frame, ends `poll_ends` after B handed the frame over.
/// Returns the frame's N(S) and what B sends after the poll.
fn prompt_lost_then_polled(seed: u64, poll_ends: Duration) -> (u8, Vec<Control>) {
    let (mut r, id) = b_link_after_connect(seed);
    let now = r.now;
    let poll = poll_from_a(&r);
    let link = r.b.port.link_mut(id).unwrap();
    link.send(now, b"de N0BBB>\r").unwrap();
    let f = link.poll_transmit(now).unwrap();
    let Control::I { ns, .. } = f.control else {
        panic!("{f:?}")
    };
    assert!(link.poll_transmit(now).is_none());
    link.departs(now + Duration::from_secs(1));
    let at = now + poll_ends;
    link.handle_frame(at, poll(ns));
    let sent = std::iter::from_fn(|| link.poll_transmit(at).map(|f| f.control)).collect();
    (ns, sent)
}

/// Issue 36: B's last I frame of a turn is lost; A polls with N(R) still at that frame, which
/// shows B it never arrived. B answers the poll and sends the frame again at once, rather than
/// waiting for its own T1.
#[test]
fn a_poll_that_shows_a_frame_missing_gets_it_again() {
    let (ns, sent) = prompt_lost_then_polled(90, Duration::from_secs(2));
    assert!(
        matches!(
            sent.as_slice(),
            [
                Control::S {
                    kind: Supervisory::Rr,
                    pf: true,
                    ..
                },
                Control::I { ns: n, .. }
            ] if *n == ns
        ),
        "after the poll: {sent:?}"
    );
}

/// A poll that left A before B's frame can have reached it is no news: nothing is sent twice.
#[test]
fn a_poll_sent_before_the_frame_arrived_is_only_answered() {
    // A's poll ends 50 ms after B's frame did: it was on the air before B's frame was over.
    let (_, sent) = prompt_lost_then_polled(91, Duration::from_millis(1050));
    assert_eq!(sent.len(), 1, "{sent:?}");
}

/// The longest time the channel was silent between two transmissions (either station's).
fn longest_silence(r: &Radio) -> Duration {
    let mut all: Vec<_> = r.a.keyed().iter().chain(r.b.keyed()).copied().collect();
    all.sort();
    let mut end = all.first().map(|k| k.1);
    let mut gap = Duration::ZERO;
    for (s, e) in all {
        if let Some(last) = end {
            gap = gap.max(s.saturating_duration_since(last));
            end = Some(last.max(e));
        }
    }
    gap
}

/// Issue 36: forwarding turns on the noisy channel (a message, then the other side's prompt),
/// as MBL forwarding goes: whatever frame is lost, the channel is never silent for longer than
/// T1 on this air can be (a full frame's exchange four times over, plus a window of the peer's
/// frames in timer recovery), while data is outstanding.
#[test]
fn turns_on_a_noisy_channel_never_stall() {
    let air = Air::kiss(1200);
    let cfg = Config::for_air(air);
    let full = air.transmission(14 + 2 + 1 + cfg.n1);
    let bound = full * 4 + air.frame_time(14 + 2 + 1 + cfg.n1) * u32::from(cfg.k_mod128);
    for seed in 100..108 {
        let mut r = connected_at_1200(true, seed, 0.0005);
        for turn in 1..=10 {
            r.a.to_send.extend(data(2048, seed + turn));
            let n = r.b.rx.len() + 2048;
            assert!(r.run_until(Duration::from_secs(900), |r| r.b.rx.len() >= n));
            r.b.to_send.extend(b"de N0BBB>\r");
            let n = r.a.rx.len() + 10;
            assert!(r.run_until(Duration::from_secs(900), |r| r.a.rx.len() >= n));
        }
        let gap = longest_silence(&r);
        assert!(
            gap <= bound,
            "seed {seed}: silent for {gap:?} (bound {bound:?})"
        );
    }
}

/// A poll of ours unanswered while the channel stays busy (other stations, or the peer's own
/// polls): T1 waits once more for the answer, then polls again, so the frames outstanding go
/// again within a bound however busy the channel.
#[test]
fn a_busy_channel_delays_the_next_poll_once() {
    let (mut r, id) = b_link_after_connect(92);
    let t0 = r.now;
    let link = r.b.port.link_mut(id).unwrap();
    link.send(t0, b"de N0BBB>\r").unwrap();
    while link.poll_transmit(t0).is_some() {}
    let mut polls = 0;
    let mut now = t0;
    while now < t0 + Duration::from_secs(240) {
        now += Duration::from_secs(2);
        link.channel_busy(now, Duration::from_millis(300));
        link.handle_timeout(now);
        while let Some(f) = link.poll_transmit(now) {
            polls += usize::from(matches!(f.control, Control::S { pf: true, .. }));
        }
    }
    let t1 = link.t1();
    assert!(polls >= 3, "{polls} polls in 240 s (T1 {t1:?})");
}

/// Issue 36: a 300-baud modem on a port that does not say its speed (timed as 1200 bit/s).
/// T1 expires while the window is still on the air and the answers to those polls come in
/// as the frames arrive; they acknowledge more each time, so nothing goes again (before: 18
/// of 32 frames sent twice, 1.5x the channel's limit; with `modem_baud = 300`, 1.05x).
#[test]
fn a_slower_modem_than_guessed_gets_each_frame_once() {
    let real = Air::kiss(300);
    let guess = Config::for_air(Air::kiss(1200));
    let mut r = Radio::new(real, guess.clone(), guess, 5);
    r.connect();
    let t0 = r.now;
    send_all(&mut r, &data(8192, 1), Duration::from_secs(3600));
    let took = r.now - t0;
    let st = stats_a(&r);
    assert_eq!(st.i_frames_resent, 0, "{st:?}");
    let set = Config::for_air(real);
    let limit = channel_limit(&real, 8192, set.n1, usize::from(set.k_mod128));
    assert_within_limit(took, limit);
}

/// Where a forwarding session's time goes on the air: `turns` exchanges of a `bytes` message
/// from A and a one-line answer from B (an MBL turn), on `air` with its defaults.
fn forwarding_turns(air: Air, turns: usize, bytes: usize, seed: u64) -> super::radio::Spent {
    let mut r = Radio::defaults(air, seed);
    r.connect();
    r.spent = super::radio::Spent::default();
    for turn in 0..turns {
        r.a.to_send.extend(data(bytes, seed + turn as u64));
        let n = r.b.rx.len() + bytes;
        assert!(r.run_until(Duration::from_secs(900), |r| r.b.rx.len() >= n));
        r.b.to_send.extend(b"de N0BBB>\r");
        let n = r.a.rx.len() + 10;
        assert!(r.run_until(Duration::from_secs(900), |r| r.a.rx.len() >= n));
    }
    r.spent
}

/// The figures for docs/performance.md (issue 36: where a 9600-baud session's time goes).
/// Run with `cargo test -p qtc-ax25 --lib -- --ignored --nocapture where_the_time_goes`.
#[test]
#[ignore]
fn where_the_time_goes() {
    let mut quick = Air::kiss(9600);
    quick.txdelay = Duration::from_millis(100);
    let mut alone = quick;
    alone.persistence = 255;
    for (what, air) in [
        ("1200 bit/s", Air::kiss(1200)),
        ("9600 bit/s", Air::kiss(9600)),
        ("9600 bit/s, TXDELAY 10", quick),
        ("9600 bit/s, TXDELAY 10, PERSIST 255", alone),
    ] {
        let s = forwarding_turns(air, 20, 2048, 7);
        let total = s.frames + s.keying + s.access + s.idle;
        let pc = |d: Duration| 100.0 * d.as_secs_f64() / total.as_secs_f64();
        eprintln!(
            "{what}, 20 turns of 2 KB and a prompt: {:.1} s; frames {:.1} s ({:.0} %), \
             TXDELAY+TXTAIL {:.1} s ({:.0} %), slot waits {:.1} s ({:.0} %), idle {:.1} s ({:.0} %)",
            total.as_secs_f64(),
            s.frames.as_secs_f64(),
            pc(s.frames),
            s.keying.as_secs_f64(),
            pc(s.keying),
            s.access.as_secs_f64(),
            pc(s.access),
            s.idle.as_secs_f64(),
            pc(s.idle)
        );
    }
}
