//! Test harness: two stations on a simulated half-duplex radio channel with real air time, each a
//! [`Port`] with one link, driven the way qtc's port task drives a KISS modem: every frame the
//! port offers goes to the modem at once. The modems behave as Direwolf's transmitter does
//! (`xmit.c`): wait for a clear channel, p-persistence slots (seeded), TXDELAY, every queued
//! frame in one transmission, TXTAIL. A transmitting station hears nothing; a frame is lost if
//! its receiver transmitted at any time while it was on the air (both ends of a collision lose),
//! or to seeded noise (per 10 ms of air, like the real-time channel's chan.py). Carrier detect
//! lags the other station's key-up by [`DCD_DELAY`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::util::{call, Rng};
use crate::air::Air;
use crate::link::{Config, Event};
use crate::port::{LinkId, Port, PortEvent};
use crate::wire::{CommandResponse, Control, Frame, Modulo, Path, Supervisory};
use qtc_callsign::Callsign;

/// How long after the other station keys up a modem notices the carrier.
pub(crate) const DCD_DELAY: Duration = Duration::from_millis(20);
/// Direwolf checks the carrier every 10 ms while it waits for a clear channel.
const DCD_POLL: Duration = Duration::from_millis(10);
/// The noise model's unit of air time.
const TICK: Duration = Duration::from_millis(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    /// Waiting for a free slot; `busy_seen`: the carrier was up at the last check, so the next
    /// free check starts a new slot wait.
    Waiting {
        next: Instant,
        busy_seen: bool,
    },
    KeyUp {
        until: Instant,
    },
    Sending {
        start: Instant,
        until: Instant,
    },
    Tail {
        until: Instant,
    },
}

/// A frame on the air.
struct OnAir {
    from_a: bool,
    start: Instant,
    end: Instant,
    bytes: Vec<u8>,
}

/// One frame a station put on the air.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sent {
    pub(crate) control: Control,
    pub(crate) cr: CommandResponse,
}

/// One station: its port, its link, its modem.
pub(crate) struct Station {
    pub(crate) port: Port,
    pub(crate) call: Callsign,
    pub(crate) link: Option<LinkId>,
    /// Data received on the link, concatenated.
    pub(crate) rx: Vec<u8>,
    /// Link events other than data.
    pub(crate) events: Vec<Event>,
    /// Data still to give the link as its send buffer frees.
    pub(crate) to_send: VecDeque<u8>,
    /// Every frame this station transmitted, in order.
    pub(crate) sent: Vec<Sent>,
    /// The most polls (P=1 commands) waiting in the modem at once.
    pub(crate) max_polls_queued: usize,
    /// Frames waiting in the modem, with the modulus they were made in (for the record).
    queue: VecDeque<(Vec<u8>, Modulo)>,
    phase: Phase,
    /// This station's transmissions (key-up to carrier off), for who heard what.
    keyed: Vec<(Instant, Instant)>,
    keyed_since: Option<Instant>,
}

impl Station {
    fn new(cfg: Config, me: &str) -> Station {
        let call = call(me);
        let mut port = Port::new(cfg);
        port.add_local(call);
        Station {
            port,
            call,
            link: None,
            rx: Vec::new(),
            events: Vec::new(),
            to_send: VecDeque::new(),
            sent: Vec::new(),
            max_polls_queued: 0,
            queue: VecDeque::new(),
            phase: Phase::Idle,
            keyed: Vec::new(),
            keyed_since: None,
        }
    }

    /// Frames this station sent that match `f`.
    pub(crate) fn count(&self, f: impl Fn(&Sent) -> bool) -> usize {
        self.sent.iter().filter(|s| f(s)).count()
    }

    /// This station's transmissions so far, key-up to carrier off.
    pub(crate) fn keyed(&self) -> &[(Instant, Instant)] {
        &self.keyed
    }

    /// RR/RNR/REJ/SREJ frames sent.
    pub(crate) fn supervisory(&self) -> usize {
        self.count(|s| matches!(s.control, Control::S { .. }))
    }

    /// Polls: supervisory commands with P=1.
    pub(crate) fn polls(&self) -> usize {
        self.count(|s| {
            matches!(s.control, Control::S { pf: true, .. }) && s.cr == CommandResponse::Command
        })
    }

    /// Whether this station was transmitting at any time in [from, to].
    fn transmitted_during(&self, from: Instant, to: Instant) -> bool {
        self.keyed_since.is_some_and(|s| s <= to)
            || self.keyed.iter().any(|&(s, e)| s <= to && e >= from)
    }

    /// Hands the port's frames to the modem and collects its events.
    fn drive(&mut self, now: Instant) {
        if let Some(link) = self.link.and_then(|id| self.port.link_mut(id)) {
            let n = self.to_send.len().min(link.send_capacity());
            if n > 0 {
                let chunk: Vec<u8> = self.to_send.drain(..n).collect();
                link.send(now, &chunk).expect("send within capacity");
            }
        }
        while let Some(f) = self.port.poll_transmit(now) {
            self.queue.push_back((f.to_bytes(), f.modulo));
            let polls = self.queue.iter().filter(|(b, m)| is_poll(b, *m)).count();
            self.max_polls_queued = self.max_polls_queued.max(polls);
        }
        while let Some(e) = self.port.poll_event() {
            match e {
                PortEvent::Incoming { id, .. } => self.link = Some(id),
                PortEvent::Link {
                    event: Event::Data(d),
                    ..
                } => self.rx.extend_from_slice(&d),
                PortEvent::Link { event, .. } => self.events.push(event),
                PortEvent::Ui(_) => {}
            }
        }
    }
}

fn is_poll(bytes: &[u8], modulo: Modulo) -> bool {
    Frame::parse(bytes, modulo).is_ok_and(|f| {
        matches!(f.control, Control::S { pf: true, .. }) && f.address.cr == CommandResponse::Command
    })
}

/// Two stations, A (N0AAA, calls) and B (N0BBB, answers), on one half-duplex channel.
pub(crate) struct Radio {
    pub(crate) a: Station,
    pub(crate) b: Station,
    pub(crate) now: Instant,
    start: Instant,
    rng: Rng,
    /// The real channel and modems (what the ports only model).
    pub(crate) air: Air,
    /// Chance that a 10 ms tick of a frame is spoiled.
    pub(crate) noise: f64,
    on_air: Vec<OnAir>,
    /// Frames lost because their receiver was transmitting.
    pub(crate) collisions: u64,
    /// Frames lost to noise.
    pub(crate) noise_lost: u64,
    /// Where the time went, for the figures in docs/performance.md.
    pub(crate) spent: Spent,
}

/// The channel's time by what it was doing (the first that applies): a frame on the air,
/// a station keying up or holding its tail, a station waiting for a slot (p-persistence,
/// or the other's carrier), or nothing at all (a receiver holding its acknowledgement, a
/// timer running).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Spent {
    pub(crate) frames: Duration,
    pub(crate) keying: Duration,
    pub(crate) access: Duration,
    pub(crate) idle: Duration,
}

impl Radio {
    /// A channel at `air` whose stations use `cfg_a` and `cfg_b`.
    pub(crate) fn new(air: Air, cfg_a: Config, cfg_b: Config, seed: u64) -> Radio {
        let now = super::util::Pair::new(Config::default(), Config::default(), 0).now;
        Radio {
            a: Station::new(cfg_a, "N0AAA"),
            b: Station::new(cfg_b, "N0BBB"),
            now,
            start: now,
            rng: Rng::new(seed),
            air,
            noise: 0.0,
            on_air: Vec::new(),
            collisions: 0,
            noise_lost: 0,
            spent: Spent::default(),
        }
    }

    /// Both stations on the defaults for `air` (what a sysop who sets nothing gets).
    pub(crate) fn defaults(air: Air, seed: u64) -> Radio {
        Radio::new(air, Config::for_air(air), Config::for_air(air), seed)
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    /// A calls B; runs until both links are up.
    pub(crate) fn connect(&mut self) {
        let (a, b) = (self.a.call, self.b.call);
        let id = self.a.port.connect(self.now, a, b, Path::new()).unwrap();
        self.a.link = Some(id);
        let up = |s: &Station| {
            s.events
                .iter()
                .any(|e| matches!(e, Event::Connected { .. }))
        };
        assert!(
            self.run_until(Duration::from_secs(300), |r| up(&r.a) && up(&r.b)),
            "no connection: A {:?} B {:?}",
            self.a.events,
            self.b.events
        );
    }

    /// Steps until `cond` holds or `limit` of simulated time has passed.
    pub(crate) fn run_until(&mut self, limit: Duration, cond: impl Fn(&Radio) -> bool) -> bool {
        let end = self.now + limit;
        loop {
            self.a.drive(self.now);
            self.b.drive(self.now);
            if cond(self) {
                return true;
            }
            let Some(next) = self.next_event() else {
                return cond(self);
            };
            if next > end {
                return false;
            }
            self.account(next);
            self.now = self.now.max(next);
            self.advance();
        }
    }

    /// Runs for `d` of simulated time.
    pub(crate) fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        self.run_until(d, |r| r.now >= end);
        self.now = self.now.max(end);
    }

    fn next_event(&self) -> Option<Instant> {
        let phase = |s: &Station| match s.phase {
            Phase::Idle => (!s.queue.is_empty()).then_some(self.now),
            Phase::Waiting { next, .. } => Some(next),
            Phase::KeyUp { until } | Phase::Sending { until, .. } | Phase::Tail { until } => {
                Some(until)
            }
        };
        [
            phase(&self.a),
            phase(&self.b),
            self.a.port.poll_timeout(),
            self.b.port.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Counts the time from now to `next` by what the channel does meanwhile.
    fn account(&mut self, next: Instant) {
        let d = next.saturating_duration_since(self.now);
        let phases = [self.a.phase, self.b.phase];
        let any = |f: fn(&Phase) -> bool| phases.iter().any(f);
        let slot = if any(|p| matches!(p, Phase::Sending { .. })) {
            &mut self.spent.frames
        } else if any(|p| matches!(p, Phase::KeyUp { .. } | Phase::Tail { .. })) {
            &mut self.spent.keying
        } else if any(|p| matches!(p, Phase::Waiting { .. })) {
            &mut self.spent.access
        } else {
            &mut self.spent.idle
        };
        *slot += d;
    }

    /// Runs everything due at `now`.
    fn advance(&mut self) {
        let now = self.now;
        for from_a in [true, false] {
            self.step_modem(from_a, now);
        }
        self.a.port.handle_timeout(now);
        self.b.port.handle_timeout(now);
    }

    fn carrier_heard_by(&self, to_a: bool, now: Instant) -> bool {
        let other = if to_a { &self.b } else { &self.a };
        other.keyed_since.is_some_and(|s| s + DCD_DELAY <= now)
    }

    fn step_modem(&mut self, from_a: bool, now: Instant) {
        let busy = self.carrier_heard_by(from_a, now);
        let air = self.air;
        let p = f64::from(air.persistence) / 256.0;
        let roll = self.rng.unit();
        let st = if from_a { &mut self.a } else { &mut self.b };
        match st.phase {
            Phase::Idle if !st.queue.is_empty() => {
                st.phase = Phase::Waiting {
                    next: now + DCD_POLL,
                    busy_seen: true,
                };
            }
            Phase::Waiting { next, busy_seen } if next <= now => {
                st.phase = if busy {
                    Phase::Waiting {
                        next: now + DCD_POLL,
                        busy_seen: true,
                    }
                } else if busy_seen {
                    Phase::Waiting {
                        next: now + air.slot_time,
                        busy_seen: false,
                    }
                } else if roll <= p || air.full_duplex {
                    st.keyed_since = Some(now);
                    Phase::KeyUp {
                        until: now + air.txdelay,
                    }
                } else {
                    Phase::Waiting {
                        next: now + air.slot_time,
                        busy_seen: false,
                    }
                };
            }
            Phase::KeyUp { until } if until <= now => self.next_frame(from_a, now),
            Phase::Sending { start, until } if until <= now => {
                self.frame_done(from_a, start, now);
                self.next_frame(from_a, now);
            }
            Phase::Tail { until } if until <= now => {
                let st = if from_a { &mut self.a } else { &mut self.b };
                if let Some(s) = st.keyed_since.take() {
                    st.keyed.push((s, now));
                }
                st.phase = Phase::Idle;
            }
            _ => {}
        }
    }

    /// Starts the next queued frame of this transmission, or the tail.
    fn next_frame(&mut self, from_a: bool, now: Instant) {
        let air = self.air;
        let st = if from_a { &mut self.a } else { &mut self.b };
        st.phase = match st.queue.pop_front() {
            Some((bytes, modulo)) => {
                let until = now + air.frame_time(bytes.len());
                if let Ok(f) = Frame::parse(&bytes, modulo) {
                    if std::env::var_os("AX25_TRACE").is_some() {
                        eprintln!(
                            "{:>9.3} {} {:?} {:?} len={}",
                            (now - self.start).as_secs_f64(),
                            if from_a { "A>" } else { "B>" },
                            f.address.cr,
                            f.control,
                            bytes.len()
                        );
                    }
                    st.sent.push(Sent {
                        control: f.control,
                        cr: f.address.cr,
                    });
                }
                self.on_air.push(OnAir {
                    from_a,
                    start: now,
                    end: until,
                    bytes,
                });
                Phase::Sending { start: now, until }
            }
            None => Phase::Tail {
                until: now + air.txtail,
            },
        };
    }

    /// A frame's last bit left: the other station gets it unless it was transmitting
    /// meanwhile, or noise spoiled it.
    fn frame_done(&mut self, from_a: bool, start: Instant, now: Instant) {
        let Some(i) = self
            .on_air
            .iter()
            .position(|f| f.from_a == from_a && f.start == start)
        else {
            return;
        };
        let f = self.on_air.swap_remove(i);
        let receiver = if from_a { &self.b } else { &self.a };
        let trace = std::env::var_os("AX25_TRACE").is_some();
        if receiver.transmitted_during(f.start, f.end) {
            if trace {
                eprintln!(
                    "{:>9.3}   lost: collision",
                    (now - self.start).as_secs_f64()
                );
            }
            self.collisions += 1;
            return;
        }
        let ticks = (f.end - f.start).as_secs_f64() / TICK.as_secs_f64();
        let p_lost = 1.0 - (1.0 - self.noise).powf(ticks);
        if self.rng.chance(p_lost) {
            if trace {
                eprintln!("{:>9.3}   lost: noise", (now - self.start).as_secs_f64());
            }
            self.noise_lost += 1;
            return;
        }
        let receiver = if from_a { &mut self.b } else { &mut self.a };
        receiver.port.handle(now, &f.bytes);
    }
}

/// Whether a sent frame is an RR, RNR, REJ or SREJ of `kind`.
pub(crate) fn is_s(s: &Sent, kind: Supervisory) -> bool {
    matches!(s.control, Control::S { kind: k, .. } if k == kind)
}
