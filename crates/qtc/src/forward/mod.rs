//! Store and forward between BBSes: runs one `qtc_fbb::Session` per connection, over any byte
//! stream (a TCP socket now, an AX.25 link later), and connects its events to the store.
//!
//! Exactly once: a received block is committed to the store (one transaction) before the
//! session may send anything after it; our messages leave a partner's queue only on the
//! protocol's acknowledgement; BIDs arriving from one partner are answered "later" to any other
//! partner proposing them meanwhile.

pub mod call;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use qtc_fbb::{Answer, Event, Mode, Outcome, Outgoing, ProposalFormat, Role, Session};
use qtc_store::{FwdOutcome, Incoming, Pending, Stored};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use crate::clock;
use crate::config::Partner;
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
}

/// What one session did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Messages received and stored.
    pub received: usize,
    /// Of ours, delivered or refused as already there.
    pub sent: usize,
    /// Why it ended badly, if it did.
    pub error: Option<String>,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} received, {} sent", self.received, self.sent)?;
        if let Some(e) = &self.error {
            write!(f, ", error: {e}")?;
        }
        Ok(())
    }
}

/// What every forwarding session shares.
pub struct Forwarder {
    /// The store thread.
    pub store: StoreHandle,
    /// Our callsign.
    pub call: String,
    /// Configured partners.
    pub partners: Vec<Partner>,
    /// Hold and reject rules, applied to proposals before anything is transferred.
    rules: Vec<qtc_mail::rules::Rule>,
    base: qtc_fbb::Config,
    /// BID -> partner it is arriving from right now.
    in_flight: Mutex<HashMap<String, String>>,
    /// Partner -> its session in progress (at most one each).
    active: Mutex<HashMap<String, Active>>,
}

impl Forwarder {
    /// Shared state for forwarding with `partners`; `base` holds the session settings.
    pub fn new(
        store: StoreHandle,
        call: &str,
        partners: Vec<Partner>,
        rules: Vec<qtc_mail::rules::Rule>,
        base: qtc_fbb::Config,
    ) -> Self {
        Forwarder {
            store,
            call: call.to_string(),
            partners,
            rules,
            base,
            in_flight: Mutex::new(HashMap::new()),
            active: Mutex::new(HashMap::new()),
        }
    }

    /// The configured partner with this callsign.
    pub fn partner(&self, call: &str) -> Option<&Partner> {
        self.partners
            .iter()
            .find(|p| p.call.eq_ignore_ascii_case(call))
    }

    fn session_config(&self, partner: &str) -> qtc_fbb::Config {
        let mut cfg = self.base.clone();
        let p = self.partner(partner);
        cfg.max_mode = p.map_or(Mode::B1, |p| p.max_mode);
        cfg.secret = p.and_then(|p| p.secret.clone());
        cfg
    }

    /// Sessions in progress, by partner.
    pub fn active(&self) -> Vec<(String, Active)> {
        let map = self.active.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<_> = map.iter().map(|(k, a)| (k.clone(), a.clone())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Reserves the partner for one session; false when it already has one.
    fn claim(&self, partner: &str, role: Role) -> bool {
        let mut map = self.active.lock().unwrap_or_else(|e| e.into_inner());
        if map.contains_key(partner) {
            return false;
        }
        map.insert(
            partner.to_string(),
            Active {
                role,
                since: clock::unix_now(),
                mode: None,
            },
        );
        true
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

/// Runs a forwarding session with `partner` over `io` until it ends. `initial` is input that
/// arrived before the session took over (after a login).
pub async fn run<S: AsyncRead + AsyncWrite + Unpin>(
    fwd: &Arc<Forwarder>,
    io: &mut S,
    codec: &mut Codec,
    role: Role,
    partner: &str,
    initial: &[u8],
    shutdown: &mut watch::Receiver<bool>,
) -> Summary {
    let partner = partner.to_ascii_uppercase();
    if !fwd.claim(&partner, role) {
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
    }
    let mut d = Driver {
        fwd: fwd.clone(),
        partner: partner.clone(),
        session: Session::new(role, fwd.session_config(&partner)),
        offered_max: 0,
        queue_dry_at: None,
        next_offer: None,
        acks: Vec::new(),
        trace: fwd.partner(&partner).is_some_and(|p| p.trace),
        taken: HashSet::new(),
        block: Vec::new(),
        summary: Summary::default(),
        closed: false,
    };
    let _counted = crate::metrics::SessionGuard::new(crate::metrics::SessionKind::Forward);
    tracing::info!(%partner, ?role, "forwarding session started");
    d.session.start(clock::now());
    if !initial.is_empty() {
        d.session.handle_input(clock::now(), initial);
    }
    d.drive(io, codec, shutdown).await;
    // The acknowledgements went to the store without waiting; the session is over once they
    // are recorded.
    let _ = fwd.store.call(|_| ()).await;
    fwd.release(&partner, &d.taken);
    crate::metrics::forwarded(&partner, d.summary.received as u64, d.summary.sent as u64);
    if d.summary.error.is_some() {
        crate::metrics::error("forward");
    }
    match &d.summary.error {
        None => tracing::info!(%partner, summary = %d.summary, "forwarding session ended"),
        Some(_) => tracing::warn!(%partner, summary = %d.summary, "forwarding session failed"),
    }
    d.summary
}

/// Our messages for the partner and the queue mark they were read at, on their way from the
/// store thread.
type NextOffer = std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = Result<
                    Result<(Vec<Outgoing>, u64), qtc_mail::StoreError>,
                    crate::store_thread::StoreGone,
                >,
            > + Send,
    >,
>;

struct Driver {
    fwd: Arc<Forwarder>,
    partner: String,
    session: Session,
    /// The highest of our message numbers offered in this session: the queue is read above it,
    /// so nothing is offered twice in one session.
    offered_max: u64,
    /// The partner's queue mark when its queue was last found exhausted: until the mark moves
    /// there is nothing new to offer, and the receiving side of a long transfer skips a store
    /// call and a read transaction at each of its turns.
    queue_dry_at: Option<u64>,
    /// The next block of our messages (for NeedOutgoing of this size), already being read.
    next_offer: Option<(usize, NextOffer)>,
    /// Acknowledgements not yet recorded: written in one transaction per batch of events.
    acks: Vec<(u64, Outcome)>,
    /// `[[partner]] trace`: log the protocol lines.
    trace: bool,
    /// BIDs this session accepted and holds in flight.
    taken: HashSet<String>,
    /// Messages of the block being received.
    block: Vec<Incoming>,
    summary: Summary,
    closed: bool,
}

impl Driver {
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
                    codec.encode_raw(&tx, &mut net);
                    tx.clear();
                }
                let mut any = false;
                while let Some(ev) = self.session.poll_event() {
                    any = true;
                    match ev {
                        Event::Acknowledged { id, outcome } => self.acks.push((id, outcome)),
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
                net.clear();
            }
            if self.closed {
                let _ = io.flush().await;
                return;
            }
            timer.set(self.session.poll_timeout());
            tokio::select! {
                r = io.read(&mut buf) => match r {
                    Ok(0) | Err(_) => self.session.handle_eof(clock::now()),
                    Ok(n) => {
                        app.clear();
                        codec.decode(&buf[..n], &mut app, &mut net);
                        if !app.is_empty() {
                            if self.trace {
                                trace_lines(&self.partner, "<", &app);
                            }
                            self.session.handle_input(clock::now(), &app);
                        }
                    }
                },
                _ = timer.fired() => self.session.handle_timeout(clock::now()),
                _ = shutdown.changed() => {
                    tracing::info!(partner = %self.partner, "closing for shutdown");
                    self.session.close(clock::now());
                }
            }
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
                tracing::info!(partner = %self.partner, ?mode, sid = ?peer_sid.map(|s| format!("{}-{}", s.name, s.version)), "forwarding mode agreed");
                self.fwd.set_mode(&self.partner, mode);
            }
            Event::NeedOutgoing { max } => self.offer(max).await,
            Event::Proposals(ps) => self.answer(ps).await,
            Event::Received {
                proposal,
                title,
                text,
            } => {
                let msg = match proposal.format {
                    ProposalFormat::B2 { .. } => qtc_store::b2f::decode(&text),
                    _ => Some(Incoming {
                        kind: mail_type(proposal.kind),
                        from: proposal.from.clone(),
                        to: proposal.to.clone(),
                        at: proposal.at.clone(),
                        bid: proposal.bid.clone(),
                        title: title.to_vec(),
                        text: text.to_vec(),
                        hold: false,
                    }),
                };
                match msg {
                    Some(m) => self.block.push(m),
                    None => {
                        tracing::warn!(partner = %self.partner, bid = %proposal.bid, "received B2 payload is not a B2F message: dropped")
                    }
                }
            }
            Event::BlockComplete => self.commit_block().await,
            Event::Partial { bid, data } => {
                let partner = self.partner.clone();
                let now = clock::unix_now();
                let r = self
                    .fwd
                    .store
                    .call(move |s| s.save_partial(&bid, &partner, &data, now))
                    .await;
                if let Ok(Err(e)) = r {
                    tracing::warn!(error = %e, "partial transfer not kept");
                }
            }
            Event::Acknowledged { id, outcome } => self.acks.push((id, outcome)),
            Event::Closed { error } => {
                if let Some(e) = error {
                    self.fail(e.to_string());
                }
                self.closed = true;
            }
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
            Ok(Ok((o, mark))) => {
                self.queue_dry_at = (o.len() < max).then_some(mark);
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
            // More is likely queued: read (and, in B2, compress) the next block on the store
            // thread while the partner takes in this one.
            self.next_offer = Some((max, Box::pin(self.fetch_offer(max))));
        }
    }

    /// Starts reading up to `max` of the partner's queue above what this session offered, in
    /// the form the agreed mode sends.
    fn fetch_offer(&self, max: usize) -> NextOffer {
        let marks = self.fwd.store.queue_marks().clone();
        let partner = self.partner.clone();
        let after = self.offered_max;
        let mode = self.session.mode();
        let mbo = self.fwd.call.clone();
        Box::pin(self.fwd.store.start(
            move |s| -> Result<(Vec<Outgoing>, u64), qtc_mail::StoreError> {
                // Read before the query: a message queued after it moves the mark.
                let mark = marks.get(&partner);
                let packed = packed_form(mode);
                let pending = s.pending(&partner, max, after, packed)?;
                let mut made = Vec::new();
                let out: Vec<Outgoing> = pending
                    .into_iter()
                    .map(|p| outgoing(p, mode, &mbo, &mut made))
                    .collect();
                if let Some(packed) = packed {
                    let made: Vec<(u64, &[u8])> =
                        made.iter().map(|(n, c)| (*n, c.as_ref())).collect();
                    s.cache_compressed(packed, &made)?;
                }
                Ok((out, mark))
            },
        ))
    }

    async fn answer(&mut self, ps: Vec<qtc_fbb::Proposal>) {
        let partner = self.partner.clone();
        let bids: Vec<(String, bool)> = ps
            .iter()
            .map(|p| {
                (
                    p.bid.to_ascii_uppercase(),
                    matches!(p.format, ProposalFormat::Compressed),
                )
            })
            .collect();
        // The largest proposal decides whether the store is asked to make room.
        let largest = ps
            .iter()
            .map(|p| u64::from(p.size.max(p.compressed_size.unwrap_or(0))))
            .max()
            .unwrap_or(0);
        let known = self
            .fwd
            .store
            .call(move |s| {
                let room = crate::room::room(s, crate::room::need(largest));
                s.proposal_info(&bids).map(|k| (k, room))
            })
            .await;
        let (known, mut room) = match known {
            Ok(Ok(k)) => k,
            _ => {
                // No store: ask for everything later rather than lose or refuse anything.
                let later = vec![Answer::Later; ps.len()];
                let _ = self.session.answer(clock::now(), later);
                return;
            }
        };
        let mut seen_here = HashSet::new();
        let mut answers = Vec::with_capacity(ps.len());
        for (p, (known, partial)) in ps.iter().zip(known) {
            let bid = p.bid.to_ascii_uppercase();
            let verdict = qtc_mail::rules::check(
                &self.fwd.rules,
                &qtc_mail::rules::RuleInput {
                    from: &p.from,
                    to: &p.to,
                    at: &p.at,
                    bid: &bid,
                    subject: b"",
                },
            )
            .map(|r| r.action);
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
        if let Err(e) = self.session.answer(clock::now(), answers) {
            tracing::error!(error = %e, "forwarding session refused our answers");
        }
    }

    async fn commit_block(&mut self) {
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
                if let Err(e) = self.session.committed(clock::now()) {
                    tracing::error!(error = %e, "forwarding session refused the commit");
                }
            }
            Ok(Err(e)) => {
                // Nothing acknowledged: the partner keeps the block and offers it again later.
                tracing::error!(partner = %self.partner, error = %e, "cannot store the received block; closing");
                self.session.close(clock::now());
                self.fail(format!("store: {e}"));
            }
            Err(e) => {
                self.session.close(clock::now());
                self.fail(e.to_string());
            }
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
            if matches!(o, FwdOutcome::Sent | FwdOutcome::Refused) {
                self.summary.sent += 1;
            }
            tracing::debug!(partner = %self.partner, number = id, outcome = ?o, "acknowledged");
            outcomes.push((id, o));
        }
        let partner = self.partner.clone();
        // Not waited for: the session goes on while the store records it, and the next store
        // call runs after it.
        let _ = self.fwd.store.submit(move |s| {
            if let Err(e) = s.forwarded(&partner, &outcomes, clock::unix_now()) {
                // Not recorded: the message will be offered again and refused by BID: no loss.
                tracing::error!(error = %e, "cannot record forwarded messages");
            }
        });
    }
}

/// Logs protocol traffic with a partner line by line (`<` received, `>` sent); binary data
/// (compressed blocks) is summarised, not dumped.
fn trace_lines(partner: &str, dir: &str, bytes: &[u8]) {
    for line in bytes
        .split(|&b| b == b'\r' || b == b'\n')
        .filter(|l| !l.is_empty())
    {
        let text = if line.iter().all(|b| (0x20..0x7f).contains(b)) {
            String::from_utf8_lossy(line).into_owned()
        } else {
            format!("[{} bytes of binary data]", line.len())
        };
        tracing::info!(target: "qtc::trace", %partner, "{dir} {text}");
    }
}

fn mail_type(t: qtc_fbb::MsgType) -> qtc_mail::MsgType {
    match t {
        qtc_fbb::MsgType::Bulletin => qtc_mail::MsgType::Bulletin,
        qtc_fbb::MsgType::Traffic => qtc_mail::MsgType::Traffic,
        _ => qtc_mail::MsgType::Personal,
    }
}

fn fbb_type(t: qtc_mail::MsgType) -> qtc_fbb::MsgType {
    match t {
        qtc_mail::MsgType::Bulletin => qtc_fbb::MsgType::Bulletin,
        qtc_mail::MsgType::Traffic => qtc_fbb::MsgType::Traffic,
        qtc_mail::MsgType::Personal => qtc_fbb::MsgType::Personal,
    }
}

/// The compressed form a session in `mode` sends.
pub fn packed_form(mode: Option<Mode>) -> Option<qtc_store::Packed> {
    match mode {
        Some(Mode::B0 | Mode::B1) => Some(qtc_store::Packed::B1),
        Some(Mode::B2) => Some(qtc_store::Packed::B2),
        _ => None,
    }
}

/// A queued message in the session's terms. Its compressed form is made once (when it was
/// stored, for the partners configured then), kept in the store and reused for every partner:
/// forms made here are pushed to `made` for keeping.
fn outgoing(
    mut p: Pending,
    mode: Option<Mode>,
    mbo: &str,
    made: &mut Vec<(u64, qtc_fbb::Bytes)>,
) -> Outgoing {
    let compressed = packed_form(mode).map(|form| match p.compressed.take() {
        Some(c) => qtc_fbb::Bytes::from(c),
        None => {
            let c = qtc_fbb::Bytes::from(form.make(&p, mbo));
            made.push((p.number, c.clone()));
            c
        }
    });
    let text = match mode {
        Some(Mode::B2) => qtc_fbb::Bytes::from(qtc_store::b2f::encode(&p, mbo)),
        _ => qtc_fbb::Bytes::from(p.text),
    };
    Outgoing {
        id: p.number,
        kind: fbb_type(p.kind),
        from: p.from,
        at: p.at,
        to: p.to,
        bid: p.bid,
        title: p.subject.into(),
        text,
        compressed,
    }
}
