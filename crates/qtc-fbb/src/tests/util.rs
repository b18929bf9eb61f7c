//! Test harness: a Caller and a Called session joined by in-memory queues, each with a fake
//! application that stores what it receives and offers what it has.

use crate::{Answer, Config, Error, Event, Mode, Outcome, Outgoing, Proposal, Role, Session};
use bytes::Bytes;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// The one clock read of the tests: every time is `base_time() + Duration`.
#[allow(clippy::disallowed_methods)]
pub(crate) fn base_time() -> Instant {
    Instant::now()
}

/// Small deterministic RNG (xorshift64*).
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A message as the fake application stored it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    pub proposal: Proposal,
    pub title: Bytes,
    pub text: Bytes,
}

/// The fake application: an outbox, a store, BIDs, partial files.
#[derive(Debug, Default)]
pub(crate) struct App {
    pub outbox: Vec<Outgoing>,
    pub offered: HashSet<u64>,
    pub store: Vec<Stored>,
    pub staged: Vec<Stored>,
    pub bids: HashSet<String>,
    pub acks: Vec<(u64, Outcome)>,
    pub partials: HashMap<String, Bytes>,
    pub closed: Option<Option<Error>>,
    pub mode: Option<Mode>,
    pub proposals_seen: Vec<Proposal>,
    pub resumed: usize,
}

impl App {
    pub(crate) fn with(outbox: Vec<Outgoing>) -> App {
        App {
            outbox,
            ..App::default()
        }
    }

    /// Forget per-session state before a new session.
    pub(crate) fn reset_session(&mut self) {
        self.offered.clear();
        self.staged.clear();
        self.closed = None;
        self.mode = None;
    }

    pub(crate) fn answer_for(&mut self, p: &Proposal, in_block: &HashSet<String>) -> Answer {
        if self.bids.contains(&p.bid) || in_block.contains(&p.bid) {
            Answer::Reject
        } else if let Some(prefix) = self.partials.get(&p.bid) {
            self.resumed += 1;
            Answer::AcceptFrom {
                offset: prefix.len() as u32,
                prefix: prefix.clone(),
            }
        } else {
            Answer::Accept
        }
    }

    pub(crate) fn on_event(&mut self, s: &mut Session, now: Instant, ev: Event) {
        match ev {
            Event::Connected { mode, .. } => self.mode = Some(mode),
            Event::NeedOutgoing { .. } => {
                let msgs: Vec<Outgoing> = self
                    .outbox
                    .iter()
                    .filter(|m| !self.offered.contains(&m.id))
                    .cloned()
                    .collect();
                self.offered.extend(msgs.iter().map(|m| m.id));
                s.offer(now, msgs).expect("offer");
            }
            Event::Proposals(ps) => {
                let mut in_block = HashSet::new();
                let answers = ps
                    .iter()
                    .map(|p| {
                        let a = self.answer_for(p, &in_block);
                        in_block.insert(p.bid.clone());
                        a
                    })
                    .collect();
                self.proposals_seen.extend(ps);
                s.answer(now, answers).expect("answer");
            }
            Event::Received {
                proposal,
                title,
                text,
            } => self.staged.push(Stored {
                proposal,
                title,
                text,
            }),
            Event::BlockComplete => {
                for m in self.staged.drain(..) {
                    assert!(self.bids.insert(m.proposal.bid.clone()), "duplicate {m:?}");
                    self.partials.remove(&m.proposal.bid);
                    self.store.push(m);
                }
                s.committed(now).expect("committed");
            }
            Event::Partial { bid, data, .. } if data.is_empty() => {
                self.partials.remove(&bid);
            }
            Event::Partial { bid, data, .. } => {
                self.partials.insert(bid, data);
            }
            Event::Acknowledged { id, outcome } => {
                if outcome != Outcome::Later {
                    self.outbox.retain(|m| m.id != id);
                }
                self.acks.push((id, outcome));
            }
            Event::Closed { error } => self.closed = Some(error),
        }
    }
}

/// Two sessions and their apps, joined by queues.
pub(crate) struct Pair {
    pub caller: Session,
    pub called: Session,
    pub caller_app: App,
    pub called_app: App,
    pub now: Instant,
    to_called: Vec<u8>,
    to_caller: Vec<u8>,
    /// Bytes delivered so far, both directions.
    pub transferred: usize,
    /// Cut the connection once this many bytes have been delivered.
    pub cut_at: Option<usize>,
    /// Largest chunk handed to `handle_input` at once.
    pub max_chunk: usize,
    rng: Rng,
    /// Every byte that went from caller to called, and back.
    pub wire_to_called: Vec<u8>,
    /// Every byte that went from called to caller.
    pub wire_to_caller: Vec<u8>,
}

pub(crate) fn config(call: &str, mode: Mode) -> Config {
    let mut c = Config::new(call.parse().expect("a callsign"));
    c.max_mode = mode;
    c
}

impl Pair {
    pub(crate) fn new(mode: Mode, caller_app: App, called_app: App, seed: u64) -> Pair {
        Pair::with_configs(
            config("N0CLR", mode),
            config("N0BBS", mode),
            caller_app,
            called_app,
            seed,
        )
    }

    pub(crate) fn with_configs(
        caller_cfg: Config,
        called_cfg: Config,
        mut caller_app: App,
        mut called_app: App,
        seed: u64,
    ) -> Pair {
        caller_app.reset_session();
        called_app.reset_session();
        let now = base_time();
        let mut p = Pair {
            caller: Session::new(Role::Caller, caller_cfg),
            called: Session::new(Role::Called, called_cfg),
            caller_app,
            called_app,
            now,
            to_called: Vec::new(),
            to_caller: Vec::new(),
            transferred: 0,
            cut_at: None,
            max_chunk: 300,
            rng: Rng::new(seed),
            wire_to_called: Vec::new(),
            wire_to_caller: Vec::new(),
        };
        p.caller.start(now);
        p.called.start(now);
        p
    }

    /// A new session between the same apps (after a cut).
    pub(crate) fn reconnect(self, seed: u64) -> Pair {
        let (a, b) = (self.caller_app, self.called_app);
        let mut p = Pair::with_configs(
            self.caller.config().clone(),
            self.called.config().clone(),
            a,
            b,
            seed,
        );
        p.max_chunk = self.max_chunk;
        p
    }

    fn pump_events(&mut self) -> bool {
        let mut any = false;
        while let Some(ev) = self.caller.poll_event() {
            any = true;
            self.caller_app.on_event(&mut self.caller, self.now, ev);
        }
        while let Some(ev) = self.called.poll_event() {
            any = true;
            self.called_app.on_event(&mut self.called, self.now, ev);
        }
        any
    }

    fn pump_transmit(&mut self) -> bool {
        let mut any = false;
        while self.caller.poll_transmit(&mut self.to_called) > 0 {
            any = true;
        }
        while self.called.poll_transmit(&mut self.to_caller) > 0 {
            any = true;
        }
        any
    }

    fn cut(&mut self) {
        self.to_called.clear();
        self.to_caller.clear();
        self.caller.handle_eof(self.now);
        self.called.handle_eof(self.now);
        self.cut_at = None;
    }

    /// Deliver one chunk in each direction; false if nothing was queued.
    fn deliver(&mut self) -> bool {
        let mut any = false;
        for dir in [true, false] {
            let q = if dir {
                &mut self.to_called
            } else {
                &mut self.to_caller
            };
            if q.is_empty() {
                continue;
            }
            let mut n = 1 + self.rng.below(self.max_chunk).min(q.len() - 1);
            n = n.min(q.len());
            let mut cut_now = false;
            if let Some(c) = self.cut_at {
                if self.transferred + n >= c {
                    n = c.saturating_sub(self.transferred);
                    cut_now = true;
                }
            }
            let chunk: Vec<u8> = q.drain(..n).collect();
            self.transferred += n;
            any = true;
            if dir {
                self.wire_to_called.extend_from_slice(&chunk);
                if !self.called.is_closed() {
                    self.called.handle_input(self.now, &chunk);
                }
            } else {
                self.wire_to_caller.extend_from_slice(&chunk);
                if !self.caller.is_closed() {
                    self.caller.handle_input(self.now, &chunk);
                }
            }
            if cut_now {
                self.cut();
                return true;
            }
        }
        any
    }

    /// Run until both sessions are closed or nothing can happen.
    pub(crate) fn drive(&mut self) {
        for _ in 0..2_000_000 {
            let mut progress = self.pump_transmit();
            progress |= self.pump_events();
            progress |= self.pump_transmit();
            if self.cut_at == Some(self.transferred) {
                self.cut();
                progress = true;
            }
            progress |= self.deliver();
            if progress {
                continue;
            }
            if self.caller.is_closed() && self.called.is_closed() {
                return;
            }
            // Nothing in flight: let time pass to the next deadline.
            let next = [self.caller.poll_timeout(), self.called.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            match next {
                Some(t) => {
                    self.now = self.now.max(t);
                    self.caller.handle_timeout(self.now);
                    self.called.handle_timeout(self.now);
                }
                None => return,
            }
        }
        panic!("pair did not settle");
    }
}

/// Canonical text: random lines of bytes (no CR, LF, ^Z), each ended by CR LF, about
/// `len` bytes long.
pub(crate) fn text_body(rng: &mut Rng, len: usize, alphabet: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(len + 80);
    while out.len() < len {
        let line = rng.below(90);
        for _ in 0..line {
            out.push(alphabet[rng.below(alphabet.len())]);
        }
        out.extend_from_slice(b"\r\n");
    }
    Bytes::from(out)
}

/// Bytes for bodies: ASCII, 0xFF, CP437 box drawing, UTF-8.
pub(crate) fn mixed_alphabet() -> Vec<u8> {
    let mut a: Vec<u8> = (0x20u8..0x7f).collect();
    a.extend_from_slice(&[
        0xFF, 0xFF, 0xC9, 0xCD, 0xBB, 0xBA, 0xB0, 0xB1, 0xB2, 0xDB, 0x09,
    ]);
    a.extend_from_slice("ÆØÅ ñ € 😀".as_bytes());
    a
}

/// A B2F message around `body`.
pub(crate) fn b2f_text(mid: &str, subject: &str, body: &[u8]) -> Bytes {
    let mut out = format!(
        "Mid: {mid}\r\nBody: {}\r\nDate: 2026/01/02 03:04\r\nFrom: N0CLR\r\nSubject: {subject}\r\nTo: N0USR\r\nType: Private\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    Bytes::from(out)
}

/// An outgoing message for tests.
pub(crate) fn msg(id: u64, bid: &str, title: &str, text: Bytes) -> Outgoing {
    Outgoing {
        id,
        kind: crate::MsgType::Personal,
        from: "N0CLR".into(),
        at: "N0BBS.#NCA.CA.USA.NOAM".into(),
        to: "N0USR".into(),
        bid: bid.into(),
        title: Bytes::copy_from_slice(title.as_bytes()),
        text,
        compressed: None,
    }
}
