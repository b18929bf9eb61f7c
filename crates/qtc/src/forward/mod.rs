//! Store and forward between BBSes: runs one `qtc_fbb::Session` per connection, over any byte
//! stream (a TCP socket now, an AX.25 link later), and connects its events to the store.
//!
//! Exactly once: a received block is committed to the store (one transaction) before the
//! session may send anything after it; our messages leave a partner's queue only on the
//! protocol's acknowledgement; BIDs arriving from one partner are answered "later" to any other
//! partner proposing them meanwhile.

mod b2f;
pub mod call;
mod greeting;
mod handle;
mod payload;
mod peer_text;

pub use handle::ForwardHandle;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use qtc_fbb::{Answer, Event, Mode, Outcome, Outgoing, Payload, Role, Session};
use qtc_store::{FwdOutcome, Incoming, Pending, Stored};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use crate::clock;
use crate::config::forward::Partner;
use crate::cpu_pool::CpuPool;
use crate::link::Codec;
use crate::store_thread::StoreHandle;

/// Bytes read from the connection at once.
const READ_BUF: usize = 32 * 1024;

/// A forwarding session in progress, for `qtc ctl status`.
#[derive(Clone, Debug)]
pub struct Active {
    /// Who called whom.
    pub role: Role,
    /// When it began (Unix seconds).
    pub since: i64,
    /// The agreed mode, once known.
    pub mode: Option<Mode>,
    /// Ends the session (a new login of the partner replaces it).
    stop: CancellationToken,
}

/// What one session did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Messages received and stored.
    pub received: usize,
    /// Of ours, delivered.
    pub sent: usize,
    /// Of ours, proposed and refused by the partner (it has them, or will not take them).
    pub refused: usize,
    /// Why it ended badly, if it did.
    pub error: Option<String>,
    /// Bytes read from the partner's connection.
    pub bytes_in: u64,
    /// Bytes written to it.
    pub bytes_out: u64,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} received, {} sent", self.received, self.sent)?;
        if self.refused > 0 {
            write!(f, ", {} refused by the partner", self.refused)?;
        }
        if let Some(e) = &self.error {
            write!(f, ", error: {e}")?;
        }
        Ok(())
    }
}

/// The one-line answer to a forward request, for `qtc ctl forward` and the web's Forward now:
/// `ok: CALL: counts` or `error: CALL why` (with the counts when something moved first).
pub fn forward_answer(partner: &str, s: &Summary) -> String {
    let counts = Summary {
        error: None,
        ..s.clone()
    };
    let Some(e) = &s.error else {
        return format!("ok: {partner}: {counts}");
    };
    // Reasons from the call name the partner already ("N0BBB refused our login").
    let why = if e.starts_with(partner) {
        e.clone()
    } else {
        format!("{partner}: {e}")
    };
    if s.received + s.sent + s.refused == 0 {
        format!("error: {why}")
    } else {
        format!("error: {why} (after {counts})")
    }
}

/// How the last session (or call attempt) with a partner ended.
#[derive(Clone, Debug)]
pub struct LastResult {
    /// When it ended (Unix seconds).
    pub at: i64,
    /// Who called whom.
    pub role: Role,
    /// What it did.
    pub summary: Summary,
}

/// Sessions kept per partner for its history.
const HISTORY: usize = 10;

/// A partner's sessions since start.
#[derive(Clone, Debug, Default)]
pub struct PartnerLog {
    /// The last [`HISTORY`] results, newest first.
    pub recent: std::collections::VecDeque<LastResult>,
    /// Bytes read from it, all sessions.
    pub bytes_in: u64,
    /// Bytes written to it, all sessions.
    pub bytes_out: u64,
}

/// What every forwarding session shares.
pub struct Forwarder {
    /// The store thread.
    pub store: StoreHandle,
    /// Our callsign.
    pub call: String,
    /// Configured partners; a reload replaces them (sessions in progress keep theirs).
    partners: Mutex<Arc<[Partner]>>,
    /// Where compressed forms are made: neither the event thread nor the store thread.
    packer: CpuPool,
    base: qtc_fbb::Config,
    /// BID -> partner it is arriving from right now.
    in_flight: Mutex<HashMap<String, String>>,
    /// Partner -> its session in progress (at most one each).
    active: Mutex<HashMap<String, Active>>,
    /// Told when a session ends and frees its partner.
    released: Notify,
    /// Partner -> how its last sessions ended, and its traffic.
    log: Mutex<HashMap<String, PartnerLog>>,
    /// Partners a session failed with while our resumed transfer was unacknowledged: they get
    /// whole messages from then on (until restart). 64-bit LinFBB refuses every resume.
    no_resume: Mutex<HashSet<String>>,
    /// Partner -> when its schedule calls it next (Unix seconds).
    next_calls: Mutex<HashMap<String, i64>>,
    /// The daemon's counters.
    pub metrics: Arc<crate::metrics::Metrics>,
}

impl Forwarder {
    /// Shared state for forwarding with `partners`; `base` holds the session settings, `packer`
    /// makes compressed forms, `metrics` counts sessions, messages and errors.
    pub fn new(
        store: StoreHandle,
        call: &str,
        partners: Vec<Partner>,
        base: qtc_fbb::Config,
        packer: CpuPool,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Self {
        Forwarder {
            store,
            call: call.to_string(),
            partners: Mutex::new(partners.into()),
            packer,
            base,
            in_flight: Mutex::new(HashMap::new()),
            active: Mutex::new(HashMap::new()),
            released: Notify::new(),
            log: Mutex::new(HashMap::new()),
            no_resume: Mutex::new(HashSet::new()),
            next_calls: Mutex::new(HashMap::new()),
            metrics,
        }
    }

    /// The configured partner with this callsign, as configured now.
    pub fn partner(&self, call: &str) -> Option<Partner> {
        self.partners()
            .iter()
            .find(|p| p.call.eq_ignore_ascii_case(call))
            .cloned()
    }

    /// The configured partners, as configured now.
    pub fn partners(&self) -> Arc<[Partner]> {
        self.partners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the partners (a reload): the next session or call with each uses its new
    /// settings.
    pub fn set_partners(&self, partners: Vec<Partner>) {
        *self.partners.lock().unwrap_or_else(|e| e.into_inner()) = partners.into();
    }

    fn session_config(&self, partner: &str) -> qtc_fbb::Config {
        let mut cfg = self.base.clone();
        let p = self.partner(partner);
        cfg.max_mode = p.as_ref().map_or(Mode::DEFAULT, |p| p.max_mode);
        cfg.secret = p.and_then(|p| p.secret);
        cfg.send_resumes = !self
            .no_resume
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(partner);
        cfg
    }

    /// Sessions in progress, by partner.
    pub fn active(&self) -> Vec<(String, Active)> {
        let map = self.active.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<_> = map.iter().map(|(k, a)| (k.clone(), a.clone())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Keeps how a session or call with `partner` ended, as its last result.
    pub fn record(&self, partner: &str, role: Role, summary: &Summary) {
        let result = LastResult {
            at: clock::unix_now(),
            role,
            summary: summary.clone(),
        };
        let mut map = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let log = map.entry(partner.to_ascii_uppercase()).or_default();
        log.bytes_in += summary.bytes_in;
        log.bytes_out += summary.bytes_out;
        log.recent.truncate(HISTORY - 1);
        log.recent.push_front(result);
    }

    /// A partner's recent sessions and traffic since the daemon started.
    pub fn partner_log(&self, partner: &str) -> PartnerLog {
        let map = self.log.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&partner.to_ascii_uppercase())
            .cloned()
            .unwrap_or_default()
    }

    /// Notes when the schedule calls `partner` next (`None`: it does not).
    pub fn set_next_call(&self, partner: &str, at: Option<i64>) {
        let mut map = self.next_calls.lock().unwrap_or_else(|e| e.into_inner());
        match at {
            Some(at) => map.insert(partner.to_ascii_uppercase(), at),
            None => map.remove(&partner.to_ascii_uppercase()),
        };
    }

    /// When the schedule calls `partner` next, if it has one.
    pub fn next_call(&self, partner: &str) -> Option<i64> {
        let map = self.next_calls.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&partner.to_ascii_uppercase()).copied()
    }

    /// Reserves the partner for one session: the token that ends it, or the token of the
    /// session it already has.
    fn claim(&self, partner: &str, role: Role) -> Result<CancellationToken, CancellationToken> {
        let mut map = self.active.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = map.get(partner) {
            return Err(a.stop.clone());
        }
        let stop = CancellationToken::new();
        map.insert(
            partner.to_string(),
            Active {
                role,
                since: clock::unix_now(),
                mode: None,
                stop: stop.clone(),
            },
        );
        Ok(stop)
    }

    /// Takes the partner for a session. A partner that logs in while a session with it runs
    /// has lost that one (killed, its link down, a cut nobody saw): the old session is
    /// closed, keeping its partial transfer, and this one waits for it to end. Our own call
    /// never displaces a session: `None` then.
    async fn take(&self, partner: &str, role: Role) -> Option<CancellationToken> {
        let deadline = tokio::time::Instant::now() + greeting::ANSWER_TIME;
        loop {
            // Registered before the check, so a release in between is not missed.
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            match self.claim(partner, role) {
                Ok(stop) => return Some(stop),
                Err(old) if role == Role::Called => {
                    if !old.is_cancelled() {
                        tracing::warn!(%partner, "the partner logged in again: closing its old session");
                        old.cancel();
                    }
                }
                Err(_) => return None,
            }
            if tokio::time::timeout_at(deadline, released).await.is_err() {
                return None;
            }
        }
    }

    fn set_mode(&self, partner: &str, mode: Mode) {
        if let Some(a) = self
            .active
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(partner)
        {
            a.mode = Some(mode);
        }
    }

    fn release(&self, partner: &str, bids: &HashSet<String>) {
        self.active
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(partner);
        let mut fl = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        fl.retain(|bid, p| !(p == partner && bids.contains(bid)));
        drop(fl);
        self.released.notify_waiters();
    }

    /// Marks a BID as arriving from `partner`; false when another partner is sending it.
    fn take_bid(&self, bid: &str, partner: &str) -> bool {
        let mut fl = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        match fl.get(bid) {
            Some(p) if p != partner => false,
            _ => {
                fl.insert(bid.to_string(), partner.to_string());
                true
            }
        }
    }
}

/// Which end of a session we are, and whether we called over TCP (where JNOS's mailbox
/// reads our text lines with telnet's 0xFF rule: [`Codec::jnos_called_over_tcp`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    /// Caller or called.
    pub role: Role,
    /// We called the partner over TCP (or TLS).
    pub tcp_caller: bool,
    /// Login answers our script sent before any prompt (their prompts may follow).
    pub early_answers: usize,
}

impl Side {
    /// The called end of a session.
    pub fn called() -> Side {
        Side {
            role: Role::Called,
            tcp_caller: false,
            early_answers: 0,
        }
    }
}

/// Runs a forwarding session with `partner` over `io` until it ends. `initial` is input that
/// arrived before the session took over (after a login).
pub async fn run<S: AsyncRead + AsyncWrite + Unpin>(
    fwd: &Arc<Forwarder>,
    io: &mut S,
    codec: &mut Codec,
    side: Side,
    partner: &str,
    initial: &[u8],
    shutdown: &mut watch::Receiver<bool>,
) -> Summary {
    let partner = partner.to_ascii_uppercase();
    let Some(stop) = fwd.take(&partner, side.role).await else {
        tracing::warn!(%partner, "a forwarding session with this partner is already running");
        let mut net = Vec::new();
        codec.encode_raw(
            b"*** A forwarding session with you is already running.\r",
            &mut net,
        );
        let _ = io.write_all(&net).await;
        return Summary {
            error: Some("already in a session".into()),
            ..Default::default()
        };
    };
    let mut d = Driver::new(fwd, &partner, side, codec.session_line_end(), stop);
    let _counted =
        crate::metrics::SessionGuard::new(&fwd.metrics, crate::metrics::SessionKind::Forward);
    tracing::info!(%partner, role = ?side.role, "forwarding session started");
    d.session.start(clock::now());
    if !initial.is_empty() {
        if d.trace {
            trace_lines(&partner, "<", initial);
        }
        d.greet(initial);
        d.session.handle_input(clock::now(), initial);
    }
    d.drive(io, codec, shutdown).await;
    // The acknowledgements went to the store without waiting; the session is over once they
    // are recorded.
    let _ = fwd.store.call(|_| ()).await;
    fwd.finish(
        &partner,
        side.role,
        &d.taken,
        &d.summary,
        d.session.resumed_unacked(),
    );
    d.summary
}

impl Forwarder {
    /// Books the end of a session with `partner`: frees it for the next one, counts it, keeps
    /// its result.
    fn finish(
        &self,
        partner: &str,
        role: Role,
        taken: &HashSet<String>,
        summary: &Summary,
        resumed_unacked: bool,
    ) {
        self.release(partner, taken);
        self.metrics
            .forwarded(partner, summary.received as u64, summary.sent as u64);
        if summary.error.is_some() {
            self.metrics.error("forward");
            if resumed_unacked {
                tracing::warn!(%partner, "the session failed during a transfer we resumed at its request: sending it whole messages from now on");
                self.no_resume
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(partner.to_string());
            }
        }
        self.record(partner, role, summary);
        match &summary.error {
            None => tracing::info!(%partner, %summary, "forwarding session ended"),
            Some(_) => tracing::warn!(%partner, %summary, "forwarding session failed"),
        }
    }
}

/// Our messages for the partner, the queue mark they were read at and the compressed forms
/// made for them, on their way from the store thread and the packing thread.
type NextOffer = std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = Result<
                    Result<(Vec<Outgoing>, u64, Made), qtc_mail::StoreError>,
                    crate::store_thread::StoreGone,
                >,
            > + Send,
    >,
>;

/// Compressed forms made in this session (message number, bytes), in the session's one form.
type Made = Vec<(u64, qtc_fbb::Bytes)>;

struct Driver {
    fwd: Arc<Forwarder>,
    partner: String,
    session: Session,
    side: Side,
    /// Cancelled when the partner logs in again: this session is dead from its side.
    stop: CancellationToken,
    /// The highest of our message numbers offered in this session: the queue is read above it,
    /// so nothing is offered twice in one session.
    offered_max: u64,
    /// The partner's queue mark when its queue was last found exhausted: until the mark moves
    /// there is nothing new to offer, and the receiving side of a long transfer skips a store
    /// call and a read transaction at each of its turns.
    queue_dry_at: Option<u64>,
    /// The store's room as this session last knew it (measured again now and then).
    room: crate::room::Estimate,
    /// The next block of our messages (for NeedOutgoing of this size), already being read.
    next_offer: Option<(usize, NextOffer)>,
    /// Acknowledgements not yet recorded: written in one transaction per batch of events.
    acks: Vec<(u64, Outcome)>,
    /// Compressed forms made for messages offered and not yet acknowledged. They are kept in
    /// the store with the acknowledgement, and only for messages someone still waits for.
    made: Made,
    /// `[[partner]] trace`: log the protocol lines.
    trace: bool,
    /// BIDs this session accepted and holds in flight.
    taken: HashSet<String>,
    /// Messages of the block being received.
    block: Vec<Incoming>,
    summary: Summary,
    closed: bool,
    /// When we called: what the partner says until its SID, and when it must have come.
    greeting: Option<(greeting::AfterLogin, std::time::Instant)>,
}

impl Driver {
    fn new(
        fwd: &Arc<Forwarder>,
        partner: &str,
        side: Side,
        line_end: qtc_fbb::LineEnd,
        stop: CancellationToken,
    ) -> Driver {
        let mut cfg = fwd.session_config(partner);
        cfg.line_end = line_end;
        Driver {
            fwd: fwd.clone(),
            partner: partner.to_string(),
            session: Session::new(side.role, cfg),
            side,
            stop,
            offered_max: 0,
            queue_dry_at: None,
            room: crate::room::Estimate::default(),
            next_offer: None,
            made: Vec::new(),
            acks: Vec::new(),
            trace: fwd.partner(partner).is_some_and(|p| p.trace),
            taken: HashSet::new(),
            block: Vec::new(),
            summary: Summary::default(),
            closed: false,
            greeting: (side.role == Role::Caller).then(|| {
                (
                    greeting::AfterLogin::new(side.early_answers),
                    clock::now() + greeting::ANSWER_TIME,
                )
            }),
        }
    }

    async fn drive<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        io: &mut S,
        codec: &mut Codec,
        shutdown: &mut watch::Receiver<bool>,
    ) {
        let mut buf = vec![0u8; READ_BUF];
        let mut tx = Vec::with_capacity(READ_BUF);
        let mut net = Vec::with_capacity(READ_BUF);
        let mut app = Vec::with_capacity(READ_BUF);
        let mut timer = clock::Timer::new();
        loop {
            // Events can make output and output-making calls can raise events: settle both.
            loop {
                while self.session.poll_transmit(&mut tx) > 0 {}
                if self.trace && !tx.is_empty() {
                    trace_lines(&self.partner, ">", &tx);
                }
                if !tx.is_empty() {
                    codec.encode_session(&tx, &mut net);
                    tx.clear();
                }
                let mut any = false;
                while let Some(ev) = self.session.poll_event() {
                    any = true;
                    match ev {
                        Event::Acknowledged { id, outcome } => self.acks.push((id, outcome)),
                        Event::Connected { mode, ref peer_sid } => {
                            self.frame(codec, mode, peer_sid.as_ref());
                            self.on_event(ev).await;
                        }
                        ev => self.on_event(ev).await,
                    }
                }
                if !self.acks.is_empty() {
                    let acks = std::mem::take(&mut self.acks);
                    self.acknowledged(acks);
                }
                if !any {
                    break;
                }
            }
            if !net.is_empty() {
                if let Err(e) = io.write_all(&net).await {
                    self.fail(format!("write: {e}"));
                    return;
                }
                self.summary.bytes_out += net.len() as u64;
                net.clear();
            }
            if self.closed {
                let _ = io.flush().await;
                return;
            }
            let sid_due = self.greeting.as_ref().map(|(_, due)| *due);
            timer.set(match (self.session.poll_timeout(), sid_due) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            });
            tokio::select! {
                r = io.read(&mut buf) => match r {
                    Ok(0) | Err(_) => {
                        if self.greeting.is_some() {
                            self.fail(greeting::closed(&self.partner));
                        }
                        self.session.handle_eof(clock::now());
                    }
                    Ok(n) => {
                        self.summary.bytes_in += n as u64;
                        app.clear();
                        codec.decode(&buf[..n], &mut app, &mut net);
                        if !app.is_empty() {
                            if self.trace {
                                trace_lines(&self.partner, "<", &app);
                            }
                            self.greet(&app);
                            self.session.handle_input(clock::now(), &app);
                        }
                    }
                },
                _ = timer.fired() => {
                    let now = clock::now();
                    if sid_due.is_some_and(|due| now >= due) {
                        self.fail(greeting::no_sid(&self.partner));
                    } else {
                        self.session.handle_timeout(now);
                    }
                }
                _ = shutdown.changed() => {
                    tracing::info!(partner = %self.partner, "closing for shutdown");
                    self.session.close(clock::now());
                }
                _ = self.stop.cancelled() => {
                    tracing::info!(partner = %self.partner, "closing: the partner logged in again");
                    self.session.close(clock::now());
                    self.fail("replaced by a new login of the partner".into());
                }
            }
        }
    }

    /// The mode is agreed: the link's framing for it (binary blocks, the line end of the
    /// phase), and JNOS's quirk when we called it over TCP.
    fn frame(&mut self, codec: &mut Codec, mode: Mode, peer: Option<&qtc_fbb::SidInfo>) {
        if self.side.tcp_caller && peer.is_some_and(|p| p.name.eq_ignore_ascii_case("JNOS")) {
            codec.jnos_called_over_tcp();
        }
        codec.set_binary(mode.is_compressed());
        self.session.set_line_end(codec.session_line_end());
    }

    /// Watches input until the partner's SID: a refused login ends the call at once.
    fn greet(&mut self, input: &[u8]) {
        let Some((g, _)) = self.greeting.as_mut() else {
            return;
        };
        match g.input(input) {
            greeting::Heard::Sid => self.greeting = None,
            greeting::Heard::Refused => self.fail(greeting::refused(&self.partner)),
            greeting::Heard::Waiting => {}
        }
    }

    fn fail(&mut self, why: String) {
        if self.summary.error.is_none() {
            self.summary.error = Some(why);
        }
        self.closed = true;
    }

    async fn on_event(&mut self, ev: Event) {
        match ev {
            Event::Connected { peer_sid, mode } => {
                // The session is under way: whatever the partner sends now is not a login
                // answer (an MBL prompt without a line end never ends the watch by itself).
                self.greeting = None;
                tracing::info!(partner = %self.partner, ?mode, sid = ?peer_sid.map(|s| format!("{}-{}", s.name, s.version)), "forwarding mode agreed");
                self.fwd.set_mode(&self.partner, mode);
                self.queue_collected().await;
            }
            Event::NeedOutgoing { max } => self.offer(max).await,
            Event::Proposals(ps) => self.answer(ps).await,
            Event::Received {
                proposal,
                title,
                text,
            } => {
                let peer = self.session.peer_sid();
                let msg = payload::received(&proposal, title, text, peer, &self.partner);
                self.block.push(msg);
            }
            Event::BlockComplete => self.commit_block().await,
            Event::Partial { bid, mode, data } => {
                let partner = self.partner.clone();
                let now = clock::unix_now();
                let r = self
                    .fwd
                    .store
                    .call(move |s| {
                        if data.is_empty() {
                            s.drop_partial(&bid)
                        } else {
                            s.save_partial(&bid, &partner, mode.name(), &data, now)
                        }
                    })
                    .await;
                if let Ok(Err(e)) = r {
                    tracing::warn!(error = %e, "partial transfer not kept");
                }
            }
            Event::Acknowledged { id, outcome } => self.acks.push((id, outcome)),
            Event::Closed { error } => {
                if let Some(e) = error {
                    self.fail(e.to_string());
                    if !self.block.is_empty() {
                        // A cut inside a block: the messages that came whole are kept (CRC
                        // checked); unacknowledged, the partner offers them again and is
                        // told we have them.
                        tracing::info!(partner = %self.partner, messages = self.block.len(), "keeping the messages of the cut block that came whole");
                        let _ = self.store_block().await;
                    }
                }
                self.closed = true;
            }
        }
    }

    /// Queues the personal mail here for the calls the partner announced with `;FW:` (a Winlink
    /// station collecting its own mail): only its own call and calls in its routes count, so a
    /// partner cannot collect anyone's mail by naming them.
    async fn queue_collected(&mut self) {
        let routes = self
            .fwd
            .partner(&self.partner)
            .map(|p| p.routes.clone())
            .unwrap_or_default();
        let calls: Vec<String> = self
            .session
            .peer_forwards()
            .iter()
            .filter(|c| c.eq_ignore_ascii_case(&self.partner) || routes.contains(c))
            .cloned()
            .collect();
        if calls.is_empty() {
            return;
        }
        let partner = self.partner.clone();
        let now = clock::unix_now();
        match self
            .fwd
            .store
            .call(move |s| s.queue_collected(&partner, &calls, now))
            .await
        {
            Ok(Ok(n)) if n > 0 => {
                tracing::info!(partner = %self.partner, messages = n, "queued mail the partner collects (;FW:)")
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot queue the mail the partner collects"),
            _ => {}
        }
    }

    async fn offer(&mut self, max: usize) {
        let marks = self.fwd.store.queue_marks();
        if self.queue_dry_at == Some(marks.get(&self.partner)) {
            if let Err(e) = self.session.offer(clock::now(), Vec::new()) {
                tracing::error!(error = %e, "forwarding session refused our offer");
            }
            return;
        }
        let r = match self.next_offer.take() {
            Some((m, next)) if m == max => next.await,
            _ => self.fetch_offer(max).await,
        };
        let outs = match r {
            Ok(Ok((o, mark, mut made))) => {
                self.queue_dry_at = (o.len() < max).then_some(mark);
                self.made.append(&mut made);
                o
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cannot read the forwarding queue; offering nothing");
                Vec::new()
            }
            Err(_) => Vec::new(),
        };
        self.offered_max = outs.iter().map(|o| o.id).fold(self.offered_max, u64::max);
        let full = outs.len() == max;
        if let Err(e) = self.session.offer(clock::now(), outs) {
            tracing::error!(error = %e, "forwarding session refused our offer");
        }
        if full {
            // More is likely queued: read (and compress what is not yet) the next block while
            // the partner takes in this one.
            self.next_offer = Some((max, Box::pin(self.fetch_offer(max))));
        }
    }

    /// Starts reading up to `max` of the partner's queue above what this session offered, in
    /// the form the agreed mode sends. The store thread only reads; forms not made yet are
    /// made on the packing thread and come back with the block, to be kept when it is
    /// acknowledged.
    fn fetch_offer(&self, max: usize) -> NextOffer {
        let marks = self.fwd.store.queue_marks().clone();
        let partner = self.partner.clone();
        let after = self.offered_max;
        let mode = self.session.mode();
        let form = payload::form(mode);
        let read = self.fwd.store.start(move |s| {
            // Read before the query: a message queued after it moves the mark.
            let mark = marks.get(&partner);
            s.pending(&partner, max, after, form).map(|p| (p, mark))
        });
        let (packer, mbo) = (self.fwd.packer.clone(), self.fwd.call.clone());
        // A task of its own, so the packing starts now, not when the session awaits it.
        let task = tokio::spawn(async move {
            let (pending, mark) = match read.await? {
                Ok(r) => r,
                Err(e) => return Ok(Err(e)),
            };
            // Only compressing goes to another thread; plain FBB, and forms already kept, are
            // sent as stored.
            let to_pack = form.packed.is_some() && pending.iter().any(|p| p.compressed.is_none());
            let convert = move || {
                let mut made = Vec::new();
                let out: Vec<Outgoing> = pending
                    .into_iter()
                    .map(|p| outgoing(p, mode, &mbo, &mut made))
                    .collect();
                (out, made)
            };
            let (out, made) = if to_pack {
                packer
                    .run(convert)
                    .await
                    .map_err(|_| crate::store_thread::StoreGone)?
            } else {
                convert()
            };
            Ok(Ok((out, mark, made)))
        });
        Box::pin(async move { task.await.unwrap_or(Err(crate::store_thread::StoreGone)) })
    }

    async fn answer(&mut self, ps: Vec<qtc_fbb::Proposal>) {
        let partner = self.partner.clone();
        let bids = resume_keys(&ps);
        // The largest proposal decides whether the store is asked to make room.
        let largest = ps
            .iter()
            .map(|p| u64::from(p.size.max(p.compressed_size.unwrap_or(0))))
            .max()
            .unwrap_or(0);
        let addressed: Vec<[String; 3]> = ps
            .iter()
            .map(|p| [p.from.clone(), p.to.clone(), p.at.clone()])
            .collect();
        let need = crate::room::need(largest);
        let measure = self.room.must_measure(need);
        let known = self
            .fwd
            .store
            .call(move |s| {
                let room = measure.then(|| crate::room::room(s, need));
                let verdicts: Vec<_> = addressed
                    .iter()
                    .zip(&bids)
                    .map(|([from, to, at], (bid, _))| {
                        s.rule_action(&qtc_mail::rules::RuleInput {
                            from,
                            to,
                            at,
                            bid,
                            subject: b"",
                        })
                    })
                    .collect();
                s.proposal_info(&bids).map(|k| (k, room, verdicts))
            })
            .await;
        let (known, mut room, verdicts) = match known {
            Ok(Ok((known, measured, verdicts))) => {
                (known, self.room.begin_block(measured), verdicts)
            }
            _ => {
                // No store: ask for everything later rather than lose or refuse anything.
                let later = vec![Answer::Later; ps.len()];
                let _ = self.session.answer(clock::now(), later);
                return;
            }
        };
        let mut seen_here = HashSet::new();
        let mut answers = Vec::with_capacity(ps.len());
        for ((p, (known, partial)), verdict) in ps.iter().zip(known).zip(verdicts) {
            let bid = p.bid.to_ascii_uppercase();
            let max = self.fwd.base.max_message_size;
            let too_large =
                p.size as usize > max || p.compressed_size.is_some_and(|c| c as usize > max);
            let a = if known || (!bid.is_empty() && !seen_here.insert(bid.clone())) {
                Answer::Reject
            } else if verdict == Some(qtc_mail::rules::RuleAction::Reject) {
                Answer::RejectedByRule
            } else if too_large {
                // Refused before a byte of it moves (FBB `R`, MBL `NO`): taking it would only
                // fail the transfer, and the partner would offer it again every session.
                tracing::warn!(
                    partner = %partner, %bid, size = p.size, max,
                    "proposal refused: larger than [limits] max_message"
                );
                Answer::RejectedByRule
            } else if crate::room::need(u64::from(p.size)) > room {
                // A full store refuses before the transfer: the partner keeps the message.
                tracing::warn!(
                    partner = %partner, %bid, size = p.size, room,
                    "proposal deferred: the message store is full"
                );
                Answer::Later
            } else if bid.is_empty() {
                room -= crate::room::need(u64::from(p.size));
                Answer::Accept
            } else if !self.fwd.take_bid(&bid, &partner) {
                Answer::Later
            } else {
                self.taken.insert(bid.clone());
                room -= crate::room::need(u64::from(p.size));
                match partial {
                    Some(prefix) if prefix.len() > 6 => Answer::AcceptFrom {
                        offset: prefix.len() as u32,
                        prefix: prefix.into(),
                    },
                    _ => Answer::Accept,
                }
            };
            tracing::debug!(partner = %partner, %bid, answer = ?a, "proposal");
            answers.push(a);
        }
        self.room.end_block(room);
        if let Err(e) = self.session.answer(clock::now(), answers) {
            tracing::error!(error = %e, "forwarding session refused our answers");
        }
    }

    /// Stores the received block (the session's acknowledgement follows once it is safe).
    async fn commit_block(&mut self) {
        match self.store_block().await {
            Ok(()) => {
                if let Err(e) = self.session.committed(clock::now()) {
                    tracing::error!(error = %e, "forwarding session refused the commit");
                }
            }
            Err(why) => {
                // Nothing acknowledged: the partner keeps the block and offers it again later.
                tracing::error!(partner = %self.partner, error = %why, "cannot store the received block; closing");
                self.session.close(clock::now());
                self.fail(why);
            }
        }
    }

    /// Stores the messages received in this block in one transaction and counts them.
    async fn store_block(&mut self) -> Result<(), String> {
        let block = std::mem::take(&mut self.block);
        let partner = self.partner.clone();
        let bids: Vec<String> = block.iter().map(|m| m.bid.to_ascii_uppercase()).collect();
        let r = self
            .fwd
            .store
            .call(move |s| {
                let now = clock::unix_now();
                s.store_received(&partner, &block, now)
            })
            .await;
        match r {
            Ok(Ok(stored)) => {
                // The session's end logs the count at info; per block and per message is
                // debug (a log write per block shows in the syscall count).
                for (bid, st) in bids.iter().zip(&stored) {
                    match st {
                        Stored::Held(n) => {
                            tracing::warn!(partner = %self.partner, %bid, number = n, "received and held")
                        }
                        other => {
                            tracing::debug!(partner = %self.partner, %bid, outcome = ?other, "received")
                        }
                    }
                }
                let kept = stored
                    .iter()
                    .filter(|s| matches!(s, Stored::Stored(_) | Stored::Held(_)))
                    .count();
                tracing::debug!(partner = %self.partner, stored = kept, of = stored.len(), "block received");
                self.summary.received += kept;
                let mut fl = self.fwd.in_flight.lock().unwrap_or_else(|e| e.into_inner());
                for bid in &bids {
                    fl.remove(bid);
                    self.taken.remove(bid);
                }
                drop(fl);
                Ok(())
            }
            Ok(Err(e)) => Err(format!("store: {e}")),
            Err(e) => Err(e.to_string()),
        }
    }

    fn acknowledged(&mut self, acks: Vec<(u64, Outcome)>) {
        let mut outcomes = Vec::new();
        for (id, outcome) in acks {
            let o = match outcome {
                Outcome::Sent | Outcome::Held => FwdOutcome::Sent,
                Outcome::Rejected => FwdOutcome::Refused,
                Outcome::Later => FwdOutcome::Later,
                Outcome::RejectedByRule => FwdOutcome::RejectedByRule,
                Outcome::FormatError | Outcome::Unsendable(_) => {
                    tracing::warn!(partner = %self.partner, number = id, ?outcome, "message not forwardable to this partner");
                    FwdOutcome::RejectedByRule
                }
            };
            match o {
                FwdOutcome::Sent => self.summary.sent += 1,
                FwdOutcome::Refused | FwdOutcome::RejectedByRule => {
                    self.summary.refused += 1;
                    tracing::info!(partner = %self.partner, number = id, outcome = ?outcome, "proposal refused by the partner");
                }
                FwdOutcome::Later => {}
            }
            tracing::debug!(partner = %self.partner, number = id, outcome = ?o, "acknowledged");
            outcomes.push((id, o));
        }
        let partner = self.partner.clone();
        // The forms made for these messages go with their outcomes (the store keeps those
        // still waited for); the rest stay for a later acknowledgement.
        let (kept, rest): (Made, Made) = std::mem::take(&mut self.made)
            .into_iter()
            .partition(|(n, _)| outcomes.iter().any(|(id, _)| id == n));
        self.made = rest;
        let form = self
            .session
            .mode()
            .and_then(Mode::packed)
            .map(Payload::name);
        // Not waited for: the session goes on while the store records it, and the next store
        // call runs after it.
        let _ = self.fwd.store.submit(move |s| {
            let kept: Vec<(u64, &[u8])> = kept.iter().map(|(n, c)| (*n, c.as_ref())).collect();
            let made = form.map(|f| (f, &kept[..]));
            if let Err(e) = s.forwarded(&partner, &outcomes, made, clock::unix_now()) {
                // Not recorded: the message will be offered again and refused by BID: no loss.
                tracing::error!(error = %e, "cannot record forwarded messages");
            }
        });
    }
}

/// Logs protocol traffic with a partner line by line (`<` received, `>` sent). Text lines
/// are shown whole, non-ASCII included; from the first binary byte (a compressed block's
/// SOH/STX framing, NUL, other controls) the rest of the chunk is summarised, not split at
/// the CR and LF bytes inside it.
fn trace_lines(partner: &str, dir: &str, bytes: &[u8]) {
    let (text, binary) = split_binary(bytes);
    for line in text
        .split(|&b| b == b'\r' || b == b'\n')
        .filter(|l| !l.is_empty())
    {
        tracing::info!(target: "qtc::trace", %partner, "{dir} {}", shown(line));
    }
    if !binary.is_empty() {
        tracing::info!(target: "qtc::trace", %partner, "{dir} [{} bytes of binary data]", binary.len());
    }
}

/// Splits a chunk at the start of the line holding its first binary byte.
fn split_binary(bytes: &[u8]) -> (&[u8], &[u8]) {
    let is_binary = |b: &u8| *b < 0x20 && !matches!(b, b'\r' | b'\n' | b'\t' | 0x1a);
    match bytes.iter().position(is_binary) {
        None => (bytes, &[]),
        Some(p) => {
            let line_start = bytes[..p]
                .iter()
                .rposition(|&b| b == b'\r' || b == b'\n')
                .map_or(0, |i| i + 1);
            bytes.split_at(line_start)
        }
    }
}

/// A text line for the log: UTF-8 as it is, anything else read as Latin-1.
fn shown(line: &[u8]) -> String {
    match std::str::from_utf8(line) {
        Ok(s) => s.to_owned(),
        Err(_) => line.iter().map(|&b| char::from(b)).collect(),
    }
}

/// Each proposal's BID, and the mode in which a kept partial of it may be resumed: a
/// resumable mode (B1, B2), and a partial only in the mode it came in (a B2 start is another
/// file).
fn resume_keys(ps: &[qtc_fbb::Proposal]) -> Vec<(String, Option<&'static str>)> {
    ps.iter()
        .map(|p| {
            let mode = p.mode.is_resumable().then(|| p.mode.name());
            (p.bid.to_ascii_uppercase(), mode)
        })
        .collect()
}

/// A queued message in the session's terms. Its compressed form is made once (by the first
/// session that sends it in that form) and, while other partners still wait for the message,
/// kept in the store for them: forms made here are pushed to `made`.
fn outgoing(
    mut p: Pending,
    mode: Option<Mode>,
    mbo: &str,
    made: &mut Vec<(u64, qtc_fbb::Bytes)>,
) -> Outgoing {
    let text = payload::text(mode.map_or(Payload::FbbText, Mode::payload), &mut p, mbo);
    let compressed = mode
        .and_then(Mode::packed)
        .map(|form| match p.compressed.take() {
            Some(c) => qtc_fbb::Bytes::from(c),
            None => {
                let c = qtc_fbb::Bytes::from(payload::pack(form, &text));
                made.push((p.number, c.clone()));
                c
            }
        });
    Outgoing {
        id: p.number,
        kind: p.kind,
        from: p.from,
        at: p.at,
        to: p.to,
        bid: p.bid,
        title: p.subject.into(),
        text,
        compressed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_keeps_text_lines_whole_and_binary_apart() {
        let chunk = b"FS Y\rK\xf6ln\r\x01\x05title\x00\r\n\x02\xfa";
        let (text, binary) = split_binary(chunk);
        assert_eq!(text, b"FS Y\rK\xf6ln\r");
        assert_eq!(binary.len(), 12);
        assert_eq!(shown(b"K\xf6ln"), "K\u{f6}ln");
        assert_eq!(shown("Köln".as_bytes()), "Köln");
    }
}
