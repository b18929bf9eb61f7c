//! Store and forward between BBSes: runs one `qtc_fbb::Session` per connection, over any byte
//! stream (a TCP socket now, an AX.25 link later), and connects its events to the store.
//!
//! Exactly once: a received block is committed to the store (one transaction) before the
//! session may send anything after it; our messages leave a partner's queue only on the
//! protocol's acknowledgement; BIDs arriving from one partner are answered "later" to any other
//! partner proposing them meanwhile.

mod b2f;
pub mod call;
mod forwarder;
mod greeting;
mod handle;
mod offer;
mod payload;
mod peer_text;
mod receive;
pub mod schedule;
mod trace;

pub use forwarder::Forwarder;
pub use handle::ForwardHandle;

use std::collections::HashSet;
use std::sync::Arc;

use qtc_callsign::Callsign;
use qtc_fbb::{Event, Mode, Outcome, Role, Session};
use qtc_store::Incoming;

use crate::clock;
use crate::connection::{Connection, Wake};
use crate::link::Codec;

/// Bytes read from the connection at once.
const READ_BUF: usize = 32 * 1024;

/// What a session waits for besides its connection.
enum Besides {
    /// Its timer (or the partner's SID's deadline).
    Timer,
    /// The partner logged in again: this session is dead from its side.
    Replaced,
}

/// A forwarding session in progress, for `qtc ctl status`.
#[derive(Clone, Debug)]
pub struct Active {
    /// Who called whom.
    pub role: Role,
    /// When it began (Unix seconds).
    pub since: i64,
    /// The agreed mode, once known.
    pub mode: Option<Mode>,
    /// Ends the session (a new login of the partner replaces it, or a crossed call is kept).
    stop: forwarder::Claimed,
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
    /// Another session with the partner carries the mail: this one found it running, or
    /// yielded to it when the two calls crossed. Not an error.
    pub busy: bool,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} received, {} sent", self.received, self.sent)?;
        if self.refused > 0 {
            write!(f, ", {} refused by the partner", self.refused)?;
        }
        if self.busy {
            write!(f, ", another session with it carries the mail")?;
        }
        if let Some(e) = &self.error {
            write!(f, ", error: {e}")?;
        }
        Ok(())
    }
}

/// The one-line answer to a forward request, for `qtc ctl forward` and the web's Forward now:
/// `ok: CALL: counts` or `error: CALL why` (with the counts when something moved first).
pub fn forward_answer(partner: Callsign, s: &Summary) -> String {
    let counts = Summary {
        error: None,
        ..s.clone()
    };
    let Some(e) = &s.error else {
        return format!("ok: {partner}: {counts}");
    };
    // Reasons from the call name the partner already ("N0BBB refused our login").
    let why = if e.starts_with(&partner.to_string()) {
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

/// Runs a forwarding session with `partner` on `conn` until it ends. `initial` is input that
/// arrived before the session took over (after a login).
pub async fn run(
    fwd: &Arc<Forwarder>,
    conn: &mut Connection,
    codec: &mut Codec,
    side: Side,
    partner: Callsign,
    initial: &[u8],
) -> Summary {
    let Some(stop) = fwd.take(partner, side.role).await else {
        tracing::info!(%partner, role = ?side.role, "a forwarding session with this partner is running: it carries the mail");
        if side.role == Role::Called {
            // A partner that called tells this from a refused login.
            codec.encode_raw(greeting::BUSY.as_bytes(), &mut conn.out.net);
            codec.encode_raw(b"\r", &mut conn.out.net);
            let _ = conn.flush().await;
        }
        fwd.note_end(partner);
        return Summary {
            busy: true,
            ..Default::default()
        };
    };
    conn.read_up_to(READ_BUF);
    let mut d = Driver::new(fwd, partner, side, codec.session_line_end(), stop);
    let _counted =
        crate::metrics::SessionGuard::new(&fwd.metrics, crate::metrics::SessionKind::Forward);
    tracing::info!(%partner, role = ?side.role, "forwarding session started");
    d.session.start(clock::now());
    if !initial.is_empty() {
        if d.trace {
            trace::lines(partner, "<", initial);
        }
        d.greet(initial);
        d.session.handle_input(clock::now(), initial);
    }
    d.drive(conn, codec).await;
    // The acknowledgements went to the store without waiting; the session is over once they
    // are recorded.
    let _ = fwd.store.call(|_| ()).await;
    fwd.finish(
        partner,
        side.role,
        &d.taken,
        &d.summary,
        d.session.resumed_unacked(),
    );
    d.summary
}

/// Our messages for the partner, the queue mark they were read at and the compressed forms
/// made for them, on their way from the store thread and the packing thread.
type NextOffer = std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = Result<
                    Result<(Vec<qtc_fbb::Outgoing>, u64, Made), qtc_mail::StoreError>,
                    crate::store_thread::StoreGone,
                >,
            > + Send,
    >,
>;

/// Compressed forms made in this session (message number, bytes), in the session's one form.
type Made = Vec<(u64, qtc_fbb::Bytes)>;

struct Driver {
    fwd: Arc<Forwarder>,
    partner: Callsign,
    session: Session,
    side: Side,
    /// Cancelled when the partner logs in again (this session is dead from its side), or when
    /// a crossed call is kept instead.
    stop: forwarder::Claimed,
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
    /// The link's 0xFF rule is a guess ([`Codec::settle`]): text that may have been changed
    /// by it is held for the sysop.
    framing_guessed: bool,
}

impl Driver {
    fn new(
        fwd: &Arc<Forwarder>,
        partner: Callsign,
        side: Side,
        line_end: qtc_fbb::LineEnd,
        stop: forwarder::Claimed,
    ) -> Driver {
        let mut cfg = fwd.session_config(partner);
        cfg.line_end = line_end;
        Driver {
            fwd: fwd.clone(),
            partner,
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
            framing_guessed: false,
        }
    }

    /// Runs the session on `conn` until it closes: its output written, then input, its timer,
    /// the daemon's shutdown or a new login of the partner.
    async fn drive(&mut self, conn: &mut Connection, codec: &mut Codec) {
        let mut app = Vec::with_capacity(READ_BUF);
        let mut timer = clock::Timer::new();
        loop {
            self.settle(codec, &mut conn.out.net).await;
            let pending = conn.out.pending().len() as u64;
            if let Err(e) = conn.flush().await {
                self.fail(format!("write: {e}"));
                return;
            }
            self.summary.bytes_out += pending;
            if self.closed {
                return;
            }
            let sid_due = self.greeting.as_ref().map(|(_, due)| *due);
            timer.set(match (self.session.poll_timeout(), sid_due) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            });
            let stop = &self.stop.stop;
            let besides = async {
                tokio::select! {
                    _ = timer.fired() => Besides::Timer,
                    _ = stop.cancelled() => Besides::Replaced,
                }
            };
            match conn.wait(true, besides).await {
                Wake::Input(n) => {
                    self.summary.bytes_in += n as u64;
                    app.clear();
                    conn.decode(n, codec, &mut app);
                    if !app.is_empty() {
                        if self.trace {
                            trace::lines(self.partner, "<", &app);
                        }
                        self.greet(&app);
                        self.session.handle_input(clock::now(), &app);
                    }
                }
                Wake::InputClosed | Wake::Gone => {
                    if self.greeting.is_some() {
                        self.fail(greeting::closed(self.partner));
                    }
                    self.session.handle_eof(clock::now());
                }
                Wake::Wrote => {}
                Wake::Ended(_) => {
                    tracing::info!(partner = %self.partner, "closing for shutdown");
                    self.session.close(clock::now());
                }
                Wake::Core(Besides::Timer) => {
                    let now = clock::now();
                    if sid_due.is_some_and(|due| now >= due) {
                        self.fail(greeting::no_sid(self.partner));
                    } else {
                        self.session.handle_timeout(now);
                    }
                }
                Wake::Core(Besides::Replaced) => self.replaced(),
            }
        }
    }

    /// Takes the session's output (encoded into `net`) and acts on its events until neither
    /// is left: events can make output, and output-making calls can raise events.
    async fn settle(&mut self, codec: &mut Codec, net: &mut Vec<u8>) {
        let mut tx = Vec::new();
        loop {
            while self.session.poll_transmit(&mut tx) > 0 {}
            if self.trace && !tx.is_empty() {
                trace::lines(self.partner, ">", &tx);
            }
            if !tx.is_empty() {
                codec.encode_session(&tx, net);
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
                return;
            }
        }
    }

    /// The mode is agreed: the link's framing for it (the 0xFF rule of the partner's software
    /// where the link waited for it, binary blocks, the line end of the phase), and JNOS's
    /// quirk when we called it over TCP.
    fn frame(&mut self, codec: &mut Codec, mode: Mode, peer: Option<&qtc_fbb::SidInfo>) {
        if !codec.settle(peer) {
            self.framing_guessed = true;
            tracing::warn!(partner = %self.partner, sid = ?peer.map(|p| &p.name), "the partner's software is not known here and it spoke no telnet on the telnet port: its 0xFF are taken as they are (set iac_escaped = true if it doubles them, or have it call the forwarding port)");
        }
        if self.side.tcp_caller && peer.is_some_and(|p| p.name.eq_ignore_ascii_case("JNOS")) {
            codec.jnos_called_over_tcp();
        }
        codec.set_binary(mode.is_compressed());
        self.session.set_line_end(codec.session_line_end());
    }

    /// Another session with the partner took over: a new login of the partner (this one is
    /// dead from its side), or a crossed call kept instead of this one (not an error).
    fn replaced(&mut self) {
        self.session.close(clock::now());
        if self.stop.yielded.load(std::sync::atomic::Ordering::Relaxed) {
            tracing::info!(partner = %self.partner, "closing: calls crossed and the other one is kept");
            self.summary.busy = true;
            self.closed = true;
        } else {
            tracing::info!(partner = %self.partner, "closing: the partner logged in again");
            self.fail("replaced by a new login of the partner".into());
        }
    }

    /// Watches input until the partner's SID: a refused login ends the call at once, and so
    /// does a partner whose session with us is running (calls crossed; that one carries the
    /// mail).
    fn greet(&mut self, input: &[u8]) {
        let Some((g, _)) = self.greeting.as_mut() else {
            return;
        };
        match g.input(input) {
            greeting::Heard::Sid => self.greeting = None,
            greeting::Heard::Refused => self.fail(greeting::refused(self.partner)),
            greeting::Heard::Busy => {
                tracing::info!(partner = %self.partner, "the partner has a session with us running: it carries the mail");
                self.summary.busy = true;
                self.closed = true;
            }
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
                self.fwd.set_mode(self.partner, mode);
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
                let mut msg = payload::received(&proposal, title, text, peer, self.partner);
                let guessed = self.framing_guessed;
                payload::hold_if_framing_guessed(&mut msg, proposal.mode, guessed, self.partner);
                self.block.push(msg);
            }
            Event::BlockComplete => self.commit_block().await,
            Event::Partial { bid, mode, data } => {
                let partner = self.partner;
                let now = clock::unix_now();
                let r = self
                    .fwd
                    .store
                    .call(move |s| {
                        if data.is_empty() {
                            s.drop_partial(&bid)
                        } else {
                            s.save_partial(&bid, partner, mode.name(), &data, now)
                        }
                    })
                    .await;
                if let Ok(Err(e)) = r {
                    tracing::warn!(error = %e, "partial transfer not kept");
                }
            }
            Event::Acknowledged { id, outcome } => self.acks.push((id, outcome)),
            Event::Closed { error } => {
                // A session that gave way (`busy`) closed itself: no error of its own.
                if let Some(e) = error.filter(|_| !self.summary.busy) {
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
}
