//! One layer-4 circuit: a reliable byte stream between a user here and a user at another node,
//! over datagrams that may be lost, repeated or held back (when an AX.25 link on the way
//! resets).
//!
//! The circuit makes [`Transport`] frames for its peer node and takes the peer's; the
//! [`Node`](crate::Node) routes them. Sending follows JNOS (nr4.c): up to `window` information
//! frames outstanding, each acknowledged by the N(R) of any frame coming back; a gap in what
//! arrives is asked for once with a NAK; unacknowledged frames are sent again after each
//! transport timeout (not doubled, as LinBPQ does: a far end that is gone is given up at most
//! `timeout × (retries + 1)` after the first frame it did not answer). A receiver
//! whose application does not keep up chokes the sender (choke flag), which takes its window
//! back and waits until unchoked or the choke timeout. Acknowledgements ride on data; alone,
//! they wait up to the ack delay, or go at once when half a window has come in.

mod recv;
mod timer;

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use qtc_callsign::Callsign;

use crate::table::Via;
use crate::wire::{Flags, Transport, MAX_INFO};
use timer::{Timer, Timers};

/// Transport-frame queue bound (control frames); more are dropped, the timers recover.
const MAX_OUT: usize = 64;

/// A circuit's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CircuitConfig {
    /// Frames outstanding (proposed; the smaller of both ends' is used), 1-127.
    pub window: u8,
    /// How long an unacknowledged frame, connect or disconnect waits before it is sent again.
    pub timeout: Duration,
    /// Times a frame is sent again before the circuit is given up.
    pub retries: u8,
    /// How long an acknowledgement may wait for data to ride on.
    pub ack_delay: Duration,
    /// How long a choke from the peer holds before we try again.
    pub choke_timeout: Duration,
    /// Bytes [`Node::send`](crate::Node::send) may queue on a circuit.
    pub send_buffer: usize,
    /// Received bytes not yet taken by the application before we choke the peer.
    pub receive_buffer: usize,
}

impl Default for CircuitConfig {
    fn default() -> Self {
        CircuitConfig {
            window: 4,
            timeout: Duration::from_secs(30),
            retries: 3,
            ack_delay: Duration::from_secs(3),
            choke_timeout: Duration::from_secs(180),
            send_buffer: 8 * 1024,
            receive_buffer: 8 * 1024,
        }
    }
}

/// Where a circuit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    /// Connect request sent, no answer yet.
    Connecting,
    /// Data flows.
    Connected,
    /// Disconnect request sent.
    Disconnecting,
    /// Over.
    Closed,
}

/// Why a circuit closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// We closed it and the peer confirmed (or we gave up the connect).
    Local,
    /// The peer closed it.
    Remote,
    /// The peer refused the connect (choke on the acknowledge).
    Refused,
    /// Retries ran out.
    Timeout,
    /// The peer reset it (G8PZT): it has no such circuit.
    Reset,
    /// The last route to the peer's node went.
    Unreachable,
}

/// What a circuit tells its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CircuitEvent {
    Connected,
    Data(Vec<u8>),
    Closed(CloseReason),
}

/// Counters, for `ctl nodes` and the bench.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CircuitStats {
    /// Information frames sent for the first time.
    pub info_sent: u64,
    /// Information frames sent again.
    pub info_resent: u64,
    /// Information frames received (any sequence).
    pub info_received: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
}

impl CircuitStats {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &CircuitStats) {
        self.info_sent += other.info_sent;
        self.info_resent += other.info_resent;
        self.info_received += other.info_received;
        self.timeouts += other.timeouts;
    }
}

/// An information frame sent and not yet acknowledged.
#[derive(Debug, Clone)]
struct Sent {
    seq: u8,
    data: Vec<u8>,
}

/// One circuit.
#[derive(Debug)]
pub(crate) struct Circuit {
    cfg: CircuitConfig,
    pub(crate) my_index: u8,
    pub(crate) my_id: u8,
    /// The peer's circuit index and id (known once connected).
    pub(crate) your: Option<(u8, u8)>,
    /// The node at the other end.
    pub(crate) peer_node: Callsign,
    /// The user at the other end (incoming) or ours (outgoing).
    pub(crate) user: Callsign,
    /// The node the user is on.
    pub(crate) user_node: Callsign,
    /// The neighbour it was set up through (for an outgoing circuit, once the far end answered).
    pub(crate) via: Option<Via>,
    pub(crate) incoming: bool,
    state: CircuitState,
    /// Whether any frame came from the peer for this circuit (beyond its connect request).
    heard: bool,
    window: u8,
    tries: u8,

    // Sending.
    pending: VecDeque<u8>,
    outstanding: VecDeque<Sent>,
    next_seq: u8,
    resend: VecDeque<u8>,
    tx_retries: u8,
    peer_choked: bool,
    close_pending: bool,
    /// An empty information frame is owed: the far end must show it is still there.
    probe: bool,

    // Receiving.
    rx_expected: u8,
    stash: BTreeMap<u8, Vec<u8>>,
    nak_sent: bool,
    rx_unacked: u8,
    ack_now: bool,
    rx_undelivered: usize,
    own_busy: bool,
    announced_choke: bool,

    timers: Timers,
    out: VecDeque<Transport>,
    events: VecDeque<CircuitEvent>,
    stats: CircuitStats,
}

impl Circuit {
    fn new(cfg: CircuitConfig, my: (u8, u8), peer_node: Callsign, user: Callsign) -> Circuit {
        let window = cfg.window.clamp(1, crate::wire::MAX_WINDOW);
        Circuit {
            cfg,
            my_index: my.0,
            my_id: my.1,
            your: None,
            peer_node,
            user,
            user_node: peer_node,
            via: None,
            incoming: false,
            state: CircuitState::Connecting,
            heard: false,
            window,
            tries: 0,
            pending: VecDeque::new(),
            outstanding: VecDeque::new(),
            next_seq: 0,
            resend: VecDeque::new(),
            tx_retries: 0,
            peer_choked: false,
            close_pending: false,
            probe: false,
            rx_expected: 0,
            stash: BTreeMap::new(),
            nak_sent: false,
            rx_unacked: 0,
            ack_now: false,
            rx_undelivered: 0,
            own_busy: false,
            announced_choke: false,
            timers: Timers::default(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: CircuitStats::default(),
        }
    }

    /// A circuit we open for `user` (on our node `node`) to `peer_node`: sends the request.
    pub(crate) fn outgoing(
        now: Instant,
        cfg: CircuitConfig,
        my: (u8, u8),
        peer_node: Callsign,
        user: Callsign,
        node: Callsign,
    ) -> Circuit {
        let mut c = Circuit::new(cfg, my, peer_node, user);
        c.user_node = node;
        c.tries = 1;
        c.push(c.connect_request());
        c.timers.set(Timer::Handshake, now, c.cfg.timeout);
        c
    }

    /// A circuit the peer asked for: connected at once, the acknowledge queued.
    pub(crate) fn incoming(
        cfg: CircuitConfig,
        my: (u8, u8),
        your: (u8, u8),
        offered_window: u8,
        peer_node: Callsign,
        user: Callsign,
        user_node: Callsign,
    ) -> Circuit {
        let mut c = Circuit::new(cfg, my, peer_node, user);
        c.incoming = true;
        c.user_node = user_node;
        c.your = Some(your);
        c.window = c.window.min(offered_window.max(1));
        c.state = CircuitState::Connected;
        c.push(c.connect_ack());
        c
    }

    // ------------------------------------------------------------------ accessors

    pub(crate) fn state(&self) -> CircuitState {
        self.state
    }

    pub(crate) fn window(&self) -> u8 {
        self.window
    }

    pub(crate) fn stats(&self) -> CircuitStats {
        self.stats
    }

    /// Bytes queued and not yet acknowledged.
    pub(crate) fn unsent(&self) -> usize {
        self.pending.len() + self.outstanding.iter().map(|s| s.data.len()).sum::<usize>()
    }

    pub(crate) fn send_capacity(&self) -> usize {
        if self.close_pending
            || !matches!(
                self.state,
                CircuitState::Connecting | CircuitState::Connected
            )
        {
            return 0;
        }
        self.cfg.send_buffer.saturating_sub(self.pending.len())
    }

    /// Closed with nothing left to hand out: the slot can go.
    pub(crate) fn is_finished(&self) -> bool {
        self.state == CircuitState::Closed && self.out.is_empty() && self.events.is_empty()
    }

    // ------------------------------------------------------------------ commands

    /// Queues data; all or nothing.
    pub(crate) fn send(&mut self, data: &[u8]) -> Result<(), crate::Error> {
        if self.close_pending
            || !matches!(
                self.state,
                CircuitState::Connecting | CircuitState::Connected
            )
        {
            return Err(crate::Error::NotConnected);
        }
        if data.len() > self.send_capacity() {
            return Err(crate::Error::SendBufferFull);
        }
        self.pending.extend(data);
        Ok(())
    }

    /// Graceful close: once everything sent is acknowledged, the disconnect request goes.
    pub(crate) fn close(&mut self, now: Instant) {
        match self.state {
            CircuitState::Connecting => self.finish(CloseReason::Local),
            CircuitState::Connected => {
                self.close_pending = true;
                self.maybe_start_close(now);
            }
            CircuitState::Disconnecting | CircuitState::Closed => {}
        }
    }

    /// Closes at once for `why`: queued data is dropped, one disconnect request goes
    /// unconfirmed.
    pub(crate) fn abort(&mut self, why: CloseReason) {
        if let (CircuitState::Connected | CircuitState::Disconnecting, Some(_)) =
            (self.state, self.your)
        {
            self.push(self.disconnect_request());
        }
        if self.state != CircuitState::Closed {
            self.finish(why);
        }
    }

    /// The peer forgot this circuit (it restarted and reuses its ids): closed without a frame to
    /// the peer, since anything naming these ids would reach its new circuit.
    pub(crate) fn drop_stale(&mut self) {
        self.out.clear();
        if self.state != CircuitState::Closed {
            self.finish(CloseReason::Reset);
        }
    }

    /// An incoming circuit the peer has sent nothing on since its connect request: a request
    /// for it again means our acknowledge was lost.
    pub(crate) fn awaits_first_frame(&self) -> bool {
        self.state == CircuitState::Connected && !self.heard
    }

    /// The application is not reading: choke the peer (or stop choking it).
    pub(crate) fn set_busy(&mut self, busy: bool) {
        self.own_busy = busy;
    }

    /// Asks the far end to show it is still there: an information frame with no data, which
    /// JNOS, LinBPQ and qtc take (and acknowledge) without passing anything on. A far end that
    /// forgot the circuit never acknowledges it, and the circuit is given up after its retries.
    pub(crate) fn probe(&mut self) {
        if self.state == CircuitState::Connected && self.unsent() == 0 {
            self.probe = true;
        }
    }

    /// What went out was lost with the link to a neighbour: the connect request, or every frame
    /// not yet acknowledged, goes again now (by whatever route there is now). Not a retry: the
    /// far end never had the chance to answer.
    pub(crate) fn resend_now(&mut self, now: Instant) {
        match self.state {
            CircuitState::Connecting => {
                self.push(self.connect_request());
                self.timers.set(Timer::Handshake, now, self.cfg.timeout);
            }
            CircuitState::Connected => {
                // Our acknowledge of the far end's request may have been lost too.
                if self.awaits_first_frame() {
                    self.push(self.connect_ack());
                }
                if !self.outstanding.is_empty() && !self.peer_choked {
                    self.resend = self.outstanding.iter().map(|s| s.seq).collect();
                    self.timers.set(Timer::Retransmit, now, self.cfg.timeout);
                }
            }
            _ => {}
        }
    }

    // ------------------------------------------------------------------ output

    /// The next frame for the peer node.
    pub(crate) fn poll_frame(&mut self, now: Instant) -> Option<Transport> {
        if let Some(t) = self.out.pop_front() {
            return Some(t);
        }
        if !matches!(
            self.state,
            CircuitState::Connected | CircuitState::Disconnecting
        ) {
            return None;
        }
        let busy = self.busy();
        if busy != self.announced_choke {
            self.announced_choke = busy;
            self.ack_now = true;
        }
        if let Some(t) = self.next_info(now) {
            return Some(t);
        }
        if self.ack_now {
            return Some(self.info_ack(false));
        }
        if self.maybe_start_close(now) {
            return self.out.pop_front();
        }
        None
    }

    pub(crate) fn poll_event(&mut self) -> Option<CircuitEvent> {
        let e = self.events.pop_front()?;
        if let CircuitEvent::Data(d) = &e {
            self.rx_undelivered = self.rx_undelivered.saturating_sub(d.len());
        }
        Some(e)
    }

    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        for t in self.timers.expired(now) {
            match t {
                Timer::Retransmit => self.on_retransmit_timeout(now),
                Timer::Handshake => self.on_handshake_timeout(now),
                Timer::Ack => self.ack_now = true,
                Timer::Choke => {
                    tracing::debug!(circuit = self.my_index, "choke timed out, sending again");
                    self.peer_choked = false;
                    self.resend = self.outstanding.iter().map(|s| s.seq).collect();
                }
            }
        }
    }

    // ------------------------------------------------------------------ internals

    fn busy(&self) -> bool {
        self.own_busy || self.rx_undelivered >= self.cfg.receive_buffer
    }

    fn push(&mut self, t: Transport) {
        if self.out.len() < MAX_OUT {
            self.out.push_back(t);
        }
    }

    fn finish(&mut self, why: CloseReason) {
        tracing::debug!(circuit = self.my_index, ?why, "circuit closed");
        self.state = CircuitState::Closed;
        self.timers.stop_all();
        self.pending.clear();
        self.outstanding.clear();
        self.resend.clear();
        self.stash.clear();
        self.events.push_back(CircuitEvent::Closed(why));
    }

    fn your_ids(&self) -> (u8, u8) {
        self.your.unwrap_or((0, 0))
    }

    fn connect_request(&self) -> Transport {
        Transport::ConnectRequest {
            my_index: self.my_index,
            my_id: self.my_id,
            window: self.window,
            user: self.user,
            node: self.user_node,
            bpq_timeout: None,
        }
    }

    pub(crate) fn connect_ack(&self) -> Transport {
        let (your_index, your_id) = self.your_ids();
        Transport::ConnectAck {
            your_index,
            your_id,
            my_index: self.my_index,
            my_id: self.my_id,
            window: self.window,
            refused: false,
            bpq_ttl: None,
        }
    }

    fn disconnect_request(&self) -> Transport {
        let (your_index, your_id) = self.your_ids();
        Transport::DisconnectRequest {
            your_index,
            your_id,
        }
    }

    fn flags(&self, nak: bool) -> Flags {
        Flags {
            choke: self.busy(),
            nak,
            more: false,
        }
    }

    fn info_ack(&mut self, nak: bool) -> Transport {
        self.ack_now = false;
        self.rx_unacked = 0;
        self.timers.stop(Timer::Ack);
        let (your_index, your_id) = self.your_ids();
        Transport::InfoAck {
            your_index,
            your_id,
            rx_seq: self.rx_expected,
            flags: self.flags(nak),
        }
    }

    fn info(&mut self, now: Instant, seq: u8, data: Vec<u8>) -> Transport {
        // Data carries our acknowledgement.
        self.ack_now = false;
        self.rx_unacked = 0;
        self.timers.stop(Timer::Ack);
        if !self.timers.is_running(Timer::Retransmit) {
            self.timers.set(Timer::Retransmit, now, self.cfg.timeout);
        }
        let (your_index, your_id) = self.your_ids();
        Transport::Info {
            your_index,
            your_id,
            tx_seq: seq,
            rx_seq: self.rx_expected,
            flags: self.flags(false),
            data,
        }
    }

    /// A frame to send again (asked for, or timed out), else a new one if the window is open.
    fn next_info(&mut self, now: Instant) -> Option<Transport> {
        if self.peer_choked || self.state != CircuitState::Connected {
            return None;
        }
        while let Some(seq) = self.resend.pop_front() {
            if let Some(s) = self.outstanding.iter().find(|s| s.seq == seq) {
                let data = s.data.clone();
                self.stats.info_resent += 1;
                return Some(self.info(now, seq, data));
            }
        }
        if self.outstanding.len() >= usize::from(self.window)
            || (self.pending.is_empty() && !std::mem::take(&mut self.probe))
        {
            return None;
        }
        let len = self.pending.len().min(MAX_INFO);
        let data: Vec<u8> = self.pending.drain(..len).collect();
        let seq = self.next_seq;
        self.next_seq = seq.wrapping_add(1);
        self.outstanding.push_back(Sent {
            seq,
            data: data.clone(),
        });
        self.stats.info_sent += 1;
        Some(self.info(now, seq, data))
    }

    fn maybe_start_close(&mut self, now: Instant) -> bool {
        if !(self.close_pending
            && self.state == CircuitState::Connected
            && self.pending.is_empty()
            && self.outstanding.is_empty())
        {
            return false;
        }
        self.state = CircuitState::Disconnecting;
        self.tries = 1;
        self.timers.stop(Timer::Retransmit);
        self.push(self.disconnect_request());
        self.timers.set(Timer::Handshake, now, self.cfg.timeout);
        true
    }

    fn on_retransmit_timeout(&mut self, now: Instant) {
        if self.outstanding.is_empty() || self.state != CircuitState::Connected {
            return;
        }
        self.stats.timeouts += 1;
        if self.tx_retries >= self.cfg.retries {
            tracing::debug!(
                circuit = self.my_index,
                "no acknowledgement, circuit given up"
            );
            self.push(self.disconnect_request());
            self.finish(CloseReason::Timeout);
            return;
        }
        self.tx_retries += 1;
        if self.peer_choked {
            return;
        }
        self.resend = self.outstanding.iter().map(|s| s.seq).collect();
        self.timers.set(Timer::Retransmit, now, self.cfg.timeout);
    }

    fn on_handshake_timeout(&mut self, now: Instant) {
        let again = match self.state {
            CircuitState::Connecting => self.connect_request(),
            CircuitState::Disconnecting => self.disconnect_request(),
            _ => return,
        };
        // As for data: the first try and `retries` more, each a timeout apart.
        if self.tries > self.cfg.retries {
            let why = if self.state == CircuitState::Connecting {
                CloseReason::Timeout
            } else {
                CloseReason::Local
            };
            self.finish(why);
            return;
        }
        self.tries += 1;
        self.push(again);
        self.timers.set(Timer::Handshake, now, self.cfg.timeout);
    }
}
