//! Test harness: two [`Link`]s joined by queues with seeded loss, duplication and reordering,
//! and a manual clock (after quinn-proto's `tests/util.rs` `Pair`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::link::{Config, Event, Link};
use crate::wire::{Address, CommandResponse, Control, Frame, Path, Unnumbered};
use qtc_callsign::Callsign;

/// xorshift64*: small, seeded, good enough to pick lost frames.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub(crate) fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

/// How the simulated far end treats SABME from side A (before side B sees it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SabmePolicy {
    /// Answer FRMR (what a pre-2.2 TNC "should" do).
    Frmr,
    /// Answer DM (KPC-3+).
    Dm,
    /// Say nothing (TM-D710).
    Silent,
}

struct InFlight {
    at: Instant,
    order: u64,
    bytes: Vec<u8>,
}

/// One end of the pair.
pub(crate) struct Side {
    pub(crate) link: Link,
    /// Data received, concatenated.
    pub(crate) rx: Vec<u8>,
    /// Every event except `Data`.
    pub(crate) events: Vec<Event>,
    /// Data still to hand to `send` as buffer space frees up.
    pub(crate) to_send: VecDeque<u8>,
    /// Frames this side transmitted (control fields, in order).
    pub(crate) sent: Vec<Control>,
    /// When false, events are left in the link (to test the receive-buffer busy condition).
    pub(crate) drain_events: bool,
    inbound: Vec<InFlight>,
}

impl Side {
    fn new(link: Link) -> Side {
        Side {
            link,
            rx: Vec::new(),
            events: Vec::new(),
            to_send: VecDeque::new(),
            sent: Vec::new(),
            drain_events: true,
            inbound: Vec::new(),
        }
    }

    pub(crate) fn count_sent(&self, f: impl Fn(&Control) -> bool) -> usize {
        self.sent.iter().filter(|c| f(c)).count()
    }

    fn feed(&mut self, now: Instant) {
        if self.to_send.is_empty() {
            return;
        }
        let n = self.to_send.len().min(self.link.send_capacity());
        if n == 0 {
            return;
        }
        let chunk: Vec<u8> = self.to_send.iter().take(n).copied().collect();
        if self.link.send(now, &chunk).is_ok() {
            self.to_send.drain(..n);
        }
    }

    fn drain(&mut self) {
        if !self.drain_events {
            return;
        }
        while let Some(e) = self.link.poll_event() {
            match e {
                Event::Data(d) => self.rx.extend_from_slice(&d),
                other => self.events.push(other),
            }
        }
    }
}

pub(crate) fn call(s: &str) -> Callsign {
    s.parse().unwrap()
}

/// Two links, A (`N0CALL-1`) and B (`W1AW`), joined by a simulated channel.
pub(crate) struct Pair {
    pub(crate) a: Side,
    pub(crate) b: Side,
    pub(crate) now: Instant,
    start: Instant,
    pub(crate) rng: Rng,
    /// Probability that a frame is lost.
    pub(crate) loss: f64,
    /// Probability that a frame arrives twice.
    pub(crate) dup: f64,
    /// One-way delay.
    pub(crate) latency: Duration,
    /// Extra random delay in [0, jitter): frames sent close together may arrive in another
    /// order.
    pub(crate) jitter: Duration,
    /// Channel speed in bits per second. Each direction sends one frame at a time, so a frame
    /// takes `8 × len / baud` of airtime; this keeps reordering to a realistic span (a whole
    /// sequence cycle never fits inside the jitter, which no protocol could survive).
    pub(crate) baud: u32,
    busy_until_a: Instant,
    busy_until_b: Instant,
    /// Pull every frame as soon as the link offers it (plain KISS: the TNC queues them), rather
    /// than only when the channel is free.
    pub(crate) greedy: bool,
    /// Intercept SABMEs from A.
    pub(crate) sabme_policy: Option<SabmePolicy>,
    /// When true, nothing gets through in either direction.
    pub(crate) blackout: bool,
    order: u64,
    pub(crate) steps: u64,
}

impl Pair {
    pub(crate) fn new(cfg_a: Config, cfg_b: Config, seed: u64) -> Pair {
        let (ca, cb) = (call("N0CALL-1"), call("W1AW"));
        let now = Instant::now_for_tests();
        Pair {
            a: Side::new(Link::new(cfg_a, ca, cb, Path::new())),
            b: Side::new(Link::new(cfg_b, cb, ca, Path::new())),
            now,
            start: now,
            rng: Rng::new(seed),
            loss: 0.0,
            dup: 0.0,
            latency: Duration::from_millis(50),
            jitter: Duration::ZERO,
            baud: 9600,
            busy_until_a: now,
            busy_until_b: now,
            greedy: false,
            sabme_policy: None,
            blackout: false,
            order: 0,
            steps: 0,
        }
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    /// Put a frame on the air from the side opposite `to_a`; returns when it has been sent.
    fn airtime(&mut self, to_a: bool, len: usize) -> Instant {
        let busy = if to_a {
            &mut self.busy_until_b
        } else {
            &mut self.busy_until_a
        };
        let start = (*busy).max(self.now);
        let bits = u64::try_from(len * 8).unwrap_or(u64::MAX);
        let end = start + Duration::from_micros(bits * 1_000_000 / u64::from(self.baud.max(1)));
        *busy = end;
        end
    }

    fn schedule(&mut self, to_a: bool, sent_at: Instant, bytes: Vec<u8>) {
        let jitter = self.jitter.mul_f64(self.rng.unit());
        let at = sent_at + self.latency + jitter;
        self.order += 1;
        let item = InFlight {
            at,
            order: self.order,
            bytes,
        };
        if to_a {
            self.a.inbound.push(item);
        } else {
            self.b.inbound.push(item);
        }
    }

    fn route(&mut self, from_a: bool, f: Frame) {
        if std::env::var_os("AX25_TRACE").is_some() {
            eprintln!(
                "{:>10.3} {} {:?} {} len={} [A {:?} B {:?}]",
                self.elapsed().as_secs_f64(),
                if from_a { "A->B" } else { "B->A" },
                f.address.cr,
                fmt_control(&f.control),
                f.info.len(),
                self.a.link.state(),
                self.b.link.state(),
            );
        }
        if from_a {
            self.a.sent.push(f.control);
        } else {
            self.b.sent.push(f.control);
        }
        if self.blackout {
            return;
        }
        if from_a {
            if let (
                Some(policy),
                Control::U {
                    kind: Unnumbered::Sabme,
                    ..
                },
            ) = (self.sabme_policy, f.control)
            {
                let reply = Address::new(f.address.src, f.address.dest, CommandResponse::Response);
                let answer = match policy {
                    SabmePolicy::Frmr => {
                        let mut r = Frame::unnumbered(reply, Unnumbered::Frmr, true);
                        r.info = vec![0x7F, 0x00, 0x01];
                        Some(r)
                    }
                    SabmePolicy::Dm => Some(Frame::unnumbered(reply, Unnumbered::Dm, true)),
                    SabmePolicy::Silent => None,
                };
                if let Some(r) = answer {
                    let bytes = r.to_bytes();
                    let end = self.airtime(true, bytes.len());
                    self.schedule(true, end, bytes);
                }
                return;
            }
        }
        let bytes = f.to_bytes();
        let end = self.airtime(!from_a, bytes.len());
        if self.rng.chance(self.loss) {
            return;
        }
        if self.rng.chance(self.dup) {
            // Heard twice, e.g. direct and through a digipeater.
            self.schedule(!from_a, end, bytes.clone());
        }
        self.schedule(!from_a, end, bytes);
    }

    /// Feed data, then let each side transmit while its channel is free. Frames are pulled
    /// from the link only when they can go on the air (as a driver that watches the TNC's
    /// queue would), so N(R) is fresh and T1 starts when the frame is really sent.
    pub(crate) fn transmit(&mut self) {
        let now = self.now;
        self.a.feed(now);
        self.b.feed(now);
        while self.greedy || self.busy_until_a <= now {
            let Some(f) = self.a.link.poll_transmit(now) else {
                break;
            };
            self.route(true, f);
            self.a.feed(now);
        }
        while self.greedy || self.busy_until_b <= now {
            let Some(f) = self.b.link.poll_transmit(now) else {
                break;
            };
            self.route(false, f);
            self.b.feed(now);
        }
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let now = self.now;
        [
            self.a.inbound.iter().map(|f| f.at).min(),
            self.b.inbound.iter().map(|f| f.at).min(),
            self.a.link.poll_timeout(),
            self.b.link.poll_timeout(),
            Some(self.busy_until_a).filter(|&t| t > now),
            Some(self.busy_until_b).filter(|&t| t > now),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Deliver every frame due by now. Returns whether anything was delivered.
    fn deliver(&mut self) -> bool {
        let mut any = false;
        for to_a in [true, false] {
            let now = self.now;
            let side = if to_a { &mut self.a } else { &mut self.b };
            let mut due: Vec<InFlight> = Vec::new();
            let mut i = 0;
            while i < side.inbound.len() {
                if side.inbound[i].at <= now {
                    due.push(side.inbound.swap_remove(i));
                } else {
                    i += 1;
                }
            }
            due.sort_by_key(|f| (f.at, f.order));
            for f in due {
                any = true;
                // Parse with the receiver's modulus, as a real driver would.
                let _ = side.link.handle_bytes(now, &f.bytes);
            }
            side.drain();
        }
        any
    }

    /// One step: transmit, deliver what is due, or else advance the clock to the next event.
    /// Returns false when nothing will ever happen again.
    pub(crate) fn step(&mut self) -> bool {
        self.steps += 1;
        self.transmit();
        if self.deliver() {
            return true;
        }
        let Some(next) = self.next_wakeup() else {
            return false;
        };
        self.now = self.now.max(next);
        self.a.link.handle_timeout(self.now);
        self.b.link.handle_timeout(self.now);
        self.a.drain();
        self.b.drain();
        true
    }

    /// Step until `cond` holds, the simulated time exceeds `limit`, or nothing is left to do.
    pub(crate) fn drive_until(&mut self, limit: Duration, cond: impl Fn(&Pair) -> bool) -> bool {
        loop {
            if cond(self) {
                return true;
            }
            if self.elapsed() > limit || self.steps > 5_000_000 {
                return false;
            }
            if !self.step() {
                return cond(self);
            }
        }
    }

    /// Advance the clock by `d`, running everything due on the way.
    pub(crate) fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        loop {
            self.transmit();
            if self.deliver() {
                continue;
            }
            match self.next_wakeup() {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    self.a.link.handle_timeout(self.now);
                    self.b.link.handle_timeout(self.now);
                    self.a.drain();
                    self.b.drain();
                }
                _ => {
                    self.now = end;
                    return;
                }
            }
        }
    }

    /// Connect A to B and run until both report it.
    pub(crate) fn connect(&mut self) {
        self.a.link.connect(self.now).unwrap();
        let ok = self.drive_until(Duration::from_secs(600), |p| {
            p.a.events
                .iter()
                .any(|e| matches!(e, Event::Connected { .. }))
                && p.b
                    .events
                    .iter()
                    .any(|e| matches!(e, Event::Connected { .. }))
        });
        assert!(
            ok,
            "connect failed: A {:?} B {:?}",
            self.a.events, self.b.events
        );
    }
}

/// `Instant::now` is disallowed in this crate (sans-IO), but tests need one fixed base.
trait NowForTests {
    fn now_for_tests() -> Instant;
}

impl NowForTests for Instant {
    #[allow(clippy::disallowed_methods)]
    fn now_for_tests() -> Instant {
        // The only clock read in the crate: a base for the manual test clock.
        Instant::now()
    }
}

fn fmt_control(c: &Control) -> String {
    match *c {
        Control::I { ns, nr, poll } => format!("I ns={ns} nr={nr}{}", if poll { " P" } else { "" }),
        Control::S { kind, nr, pf } => format!("{kind:?} nr={nr}{}", if pf { " PF" } else { "" }),
        Control::U { kind, pf } => format!("{kind:?}{}", if pf { " PF" } else { "" }),
    }
}
