//! The AX.25 connected-mode data link (spec §3), one [`Link`] per (local, remote) pair.
//!
//! This follows the AX.25 2.2 SDL as described in the spec, in quinn-proto's sans-IO style. The
//! link never reads a clock: every call that can arm a timer takes `now`, and time must not go
//! backwards between calls.
//!
//! # Driving a link
//!
//! 1. Feed input: [`Link::handle_frame`] (or [`Link::handle_bytes`]) for each received frame
//!    addressed to this link, and [`Link::handle_timeout`] when the deadline from
//!    [`Link::poll_timeout`] has passed (a spurious call does nothing).
//! 2. Apply commands: [`Link::connect`], [`Link::send`], [`Link::disconnect`], [`Link::abort`],
//!    [`Link::set_busy`].
//! 3. Drain output, in this order: [`Link::poll_transmit`] until `None` (frames to put on the
//!    air), [`Link::poll_event`] until `None`, then [`Link::poll_timeout`] for the next wake-up.
//!
//! Acknowledgements are sent the next time `poll_transmit` is called, so a driver that handles a
//! whole burst of received frames before polling sends one RR for the burst (the "ack when the
//! transmitter is next keyed" rule, §3.5). A non-zero [`Config::t2`] holds them back longer.
//!
//! Best results come from pulling frames when the transmitter can actually send them (for
//! example while the TNC's queue is short): T1 starts and N(R) is taken at `poll_transmit`, so
//! frames that wait in a long TNC queue age (T1 may expire before they are even on the air).
//! Draining everything at once also works, just with more retries on slow channels.
//!
//! Modulo 8 with k = 4 (half the sequence space) cannot tell an acknowledgement that was
//! overtaken by a full window of newer ones from a fresh one; that needs reordering no real
//! channel produces, but use k ≤ 3 or modulo 128 where frames can be reordered.
//!
//! # Where this differs from the SDL, and why
//!
//! - A UA received while connected is ignored (Linux does the same) instead of re-establishing
//!   the link: a digipeated duplicate of the connect handshake must not reset a working link.
//! - On any re-establishment (peer SABM while connected, FRMR, N(R) error) frames sent but not
//!   acknowledged are put back at the head of the send queue (as Linux does) instead of being
//!   thrown away; [`Event::Reset`] tells the application that data in flight may be lost or
//!   repeated.
//! - An N(R) that lies up to k behind V(A) is treated as a stale (reordered or duplicated)
//!   acknowledgement and ignored rather than triggering N(R) error recovery. N(R) may also run
//!   up to the highest N(S) sent even while a retransmission has pulled V(S) back.
//! - An out-of-sequence I frame that is an old duplicate (behind V(R)) does not trigger REJ.
//! - After the enquiry in timer recovery is answered and frames remain outstanding, the link
//!   retransmits and returns to the connected state with RC = 0 (the 1998 SDL); Direwolf stays
//!   in timer recovery. It retransmits only when the answer acknowledges nothing new: one that
//!   does shows our frames still arriving (a modem slower than the air model), and the rest
//!   may yet be on the air.
//! - A poll from the peer (command, P=1) whose N(R) lags what we sent, after all of it had
//!   left, sends the frame at N(R) again at once: the last frame of a turn was lost, and
//!   nothing else would ask for it before our T1.
//! - A DM with F=1 answering SABME falls back to SABM (Direwolf), as do FRMR and
//!   [`Config::max_v22_attempts`] unanswered SABMEs.
//! - [`Link::disconnect`] is graceful (queued data is delivered first); [`Link::abort`] is the
//!   SDL's DL-DISCONNECT request.

mod recv;
mod timer;
mod timing;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::air::Air;
use qtc_callsign::Callsign;

use crate::wire::{
    Address, Classes, CommandResponse, Control, Frame, HdlcFunctions, Modulo, Path, Pid,
    Supervisory, Unnumbered, XidParams, ADDRESS_LEN, MAX_INFO_LEN,
};
use crate::Error;
use timer::{Timer, TimerTable};

/// Most control frames queued for transmission; further ones are dropped (the peer's timers
/// recover). Bounds memory when the driver does not poll.
pub const MAX_TX_QUEUE: usize = 64;
/// Largest k for modulo 8.
pub const MAX_K_MOD8: u8 = 7;
/// Largest k for modulo 128 (must stay at most half the sequence space for SREJ).
pub const MAX_K_MOD128: u8 = 63;
/// Largest N2 accepted from configuration or XID.
pub const MAX_N2: u8 = 31;
/// Largest T1 accepted from XID.
pub const MAX_XID_T1: Duration = Duration::from_secs(30);

/// Link parameters. [`Config::default`] gives Direwolf's defaults (spec §3.2).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// Try AX.25 2.2 (SABME, modulo 128) first when connecting; fall back to SABM.
    pub prefer_v22: bool,
    /// FRACK: the base T1 value for a direct path (T1 starts at FRACK × (2 × digipeaters + 1)).
    pub frack: Duration,
    /// N2: retries before giving up.
    pub n2: u8,
    /// k for modulo 8 (MAXFRAME), 1–7.
    pub k_mod8: u8,
    /// k for modulo 128 (EMAXFRAME), 1–63.
    pub k_mod128: u8,
    /// N1 / PACLEN: largest information field we send, 1–2048 bytes.
    pub n1: usize,
    /// T2: how long to hold back an acknowledgement for more frames of the peer's
    /// transmission (restarted by each). Zero: derived from [`Config::air`] (the air time of
    /// the longest I frame heard), or, when air time is not modelled, sent at the next
    /// [`Link::poll_transmit`].
    pub t2: Duration,
    /// T3: idle keep-alive interval.
    pub t3: Duration,
    /// MAXV22: SABMEs sent before falling back to SABM.
    pub max_v22_attempts: u8,
    /// Use SREJ on modulo-128 links.
    pub srej: bool,
    /// Send XID after a SABME connect.
    pub xid: bool,
    /// Bytes [`Link::send`] may queue that are not yet sent.
    pub send_buffer: usize,
    /// Received bytes not yet taken with [`Link::poll_event`] before the link reports itself busy
    /// (RNR) to the peer.
    pub receive_buffer: usize,
    /// Lower bound for the smoothed round-trip time (Direwolf: 1 s)...
    pub min_srt: Duration,
    /// ...plus this much per digipeater (Direwolf: 2 s).
    pub srt_per_digipeater: Duration,
    /// PID of outgoing I frames.
    pub pid: Pid,
    /// The channel's air time (bit rate, the modem's keying): derived T2, T1's bounds, the
    /// poll on the frame that fills the window. [`Air::NONE`] (the default) models nothing.
    pub air: Air,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            prefer_v22: true,
            frack: Duration::from_secs(3),
            n2: 10,
            k_mod8: 4,
            k_mod128: 32,
            n1: 256,
            t2: Duration::ZERO,
            t3: Duration::from_secs(300),
            max_v22_attempts: 3,
            srej: true,
            xid: true,
            send_buffer: 64 * 1024,
            receive_buffer: 64 * 1024,
            min_srt: Duration::from_secs(1),
            srt_per_digipeater: Duration::from_secs(2),
            pid: Pid::NO_LAYER3,
            air: Air::NONE,
        }
    }
}

/// The most air time a window of full frames should take by default: a transmission that long
/// already keeps other stations off the channel, and a half-duplex modem waiting to answer
/// gives up after 60 s (Direwolf drops a frame that waited that long for a clear channel).
pub const MAX_WINDOW_AIR: Duration = Duration::from_secs(20);

impl Config {
    /// The defaults for a link on `air`: N1 256 bytes (128 below 1200 bit/s, where a full frame
    /// takes over 8 s), and windows (k) as many full frames as fit in [`MAX_WINDOW_AIR`], at
    /// most Direwolf's defaults (MAXFRAME 7 here, EMAXFRAME 32): at 1200 bit/s 7 and 10, at
    /// 9600 7 and 32. Without an air model, [`Config::default`].
    #[must_use]
    pub fn for_air(air: Air) -> Config {
        let mut cfg = Config {
            air,
            ..Config::default()
        };
        if !air.is_modelled() {
            return cfg;
        }
        cfg.n1 = if air.bit_rate < 1200 { 128 } else { 256 };
        let frame = air.frame_time(2 * ADDRESS_LEN + 2 + 1 + cfg.n1);
        let fit = (MAX_WINDOW_AIR.as_secs_f64() / frame.as_secs_f64()).floor();
        let fit = fit.clamp(1.0, 255.0) as u8;
        cfg.k_mod8 = fit.min(MAX_K_MOD8);
        cfg.k_mod128 = fit.min(32);
        cfg
    }
}

impl Config {
    fn sanitized(mut self) -> Self {
        self.n2 = self.n2.clamp(1, MAX_N2);
        self.k_mod8 = self.k_mod8.clamp(1, MAX_K_MOD8);
        self.k_mod128 = self.k_mod128.clamp(1, MAX_K_MOD128);
        self.n1 = self.n1.clamp(1, MAX_INFO_LEN);
        self.max_v22_attempts = self.max_v22_attempts.max(1);
        if self.frack.is_zero() {
            self.frack = Duration::from_secs(3);
        }
        self
    }
}

/// Data-link states (spec §3.1, Direwolf numbering in brackets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// \[0\] No link.
    Disconnected,
    /// \[1\] SABM sent, waiting for UA.
    AwaitingConnection,
    /// \[2\] DISC sent, waiting for UA.
    AwaitingRelease,
    /// \[3\] Information transfer.
    Connected,
    /// \[4\] T1 expired; polling the peer.
    TimerRecovery,
    /// \[5\] SABME sent, waiting for UA.
    AwaitingV22Connection,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Disconnected => "disconnected",
            State::AwaitingConnection => "awaiting connection",
            State::AwaitingRelease => "awaiting release",
            State::Connected => "connected",
            State::TimerRecovery => "timer recovery",
            State::AwaitingV22Connection => "awaiting v2.2 connection",
        }
    }
}

/// Why a link went to the disconnected state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DisconnectReason {
    /// We disconnected and the peer confirmed (UA or DM).
    Local,
    /// The peer sent DISC.
    Remote,
    /// The peer answered our connect request with DM.
    Refused,
    /// The peer sent DM on an established link.
    PeerDisconnectedMode,
    /// N2 retries ran out (no answer to SABM, DISC or the timer-recovery poll).
    Timeout,
    /// [`Link::abort`] was called.
    Aborted,
}

/// Something the application should know about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// The link is up (after our SABM(E) was answered, or we accepted the peer's).
    Connected {
        /// Modulo 8 (v2.0 behaviour) or 128 (v2.2).
        modulo: Modulo,
    },
    /// In-sequence data from the peer (one I frame's information field).
    Data(Vec<u8>),
    /// An in-sequence I frame whose PID is a layer-3 protocol's (NET/ROM, IP, ARP): one
    /// packet, kept whole.
    Datagram {
        /// The frame's PID.
        pid: Pid,
        /// Its information field.
        data: Vec<u8>,
    },
    /// The link was re-established after data had flowed. Frames in flight at that moment may
    /// have been lost or may be delivered twice.
    Reset,
    /// The peer asked for the link we asked for and got, before any data moved: its SABM came
    /// after ours was answered (its first went unanswered: it was away, or restarted, while we
    /// called it). Both ends asked for the link, as when SABMs cross, and
    /// [`Link::crossed`] now says so: what runs on the link settles who called.
    CrossedLate,
    /// The link is down.
    Disconnected {
        /// Why.
        reason: DisconnectReason,
    },
}

/// Counters, for logs and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinkStats {
    /// I frames sent for the first time.
    pub i_frames_sent: u64,
    /// I frames sent again.
    pub i_frames_resent: u64,
    /// Information bytes of the I frames sent for the first time.
    pub i_bytes_sent: u64,
    /// I frames received (any sequence number).
    pub i_frames_received: u64,
    /// Information bytes handed to the application (each I frame once, in sequence).
    pub i_bytes_received: u64,
    /// REJ frames sent.
    pub rej_sent: u64,
    /// SREJ frames sent.
    pub srej_sent: u64,
    /// T1 expiries.
    pub t1_expiries: u64,
    /// Frames dropped because the transmit queue was full.
    pub tx_dropped: u64,
}

impl LinkStats {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &LinkStats) {
        self.i_frames_sent += other.i_frames_sent;
        self.i_frames_resent += other.i_frames_resent;
        self.i_bytes_sent += other.i_bytes_sent;
        self.i_frames_received += other.i_frames_received;
        self.i_bytes_received += other.i_bytes_received;
        self.rej_sent += other.rej_sent;
        self.srej_sent += other.srej_sent;
        self.t1_expiries += other.t1_expiries;
        self.tx_dropped += other.tx_dropped;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum XidState {
    Idle,
    /// XID command sent, waiting for the response; the count of retries so far.
    Pending(u8),
}

/// One AX.25 data link between `local` and `remote`.
#[derive(Debug)]
pub struct Link {
    cfg: Config,
    local: Callsign,
    remote: Callsign,
    path: Path,
    state: State,
    modulo: Modulo,

    // Sequence variables (spec §3.1). `vs_max` is the highest V(S) ever reached since the last
    // reset: frames from V(A) to vs_max are outstanding; V(S) < vs_max while retransmitting.
    vs: u8,
    vr: u8,
    va: u8,
    vs_max: u8,
    rc: u8,

    // Working parameters (set by "set version" and XID).
    k: u8,
    n1: usize,
    n2: u8,
    srej: bool,

    peer_busy: bool,
    own_busy: bool,
    /// We told the peer RNR and have not yet told it RR.
    announced_busy: bool,
    reject_exception: bool,
    ack_pending: bool,
    layer3_initiated: bool,
    /// The peer's SABM crossed ours: both ends asked for the link at once.
    crossed: bool,
    /// The last re-establishment came from the peer's SABM, not from our own recovery.
    reset_by_peer: bool,
    /// Data was delivered or acknowledged since the last (re)establishment.
    traffic_seen: bool,
    ever_connected: bool,
    close_pending: bool,
    xid: XidState,

    timers: TimerTable,
    /// When the last frame handed to the driver leaves the modem (`departs`), or was handed
    /// over.
    last_departure: Option<Instant>,
    /// N(S) of the frame timed for a round-trip sample (Karn: sent once, no poll since).
    probe: Option<u8>,
    /// The last round-trip sample, for the next "select T1 value".
    rtt_sample: Option<Duration>,
    /// I frames taken since we last sent V(R).
    rx_since_ack: u8,
    /// The most new I frames the peer sent in one transmission that then waited for our
    /// acknowledgement (T2 ran out), and how many such transmissions had that many: a
    /// sender seen to send that many frames at a time (its window, when smaller than ours).
    peer_run: u8,
    peer_runs: u8,
    /// When the frame that completed such a run, acknowledged at once, arrived.
    early_ack: Option<Instant>,
    /// The longest I frame heard on this link (bytes), for the derived T2.
    max_rx_len: usize,
    /// A frame was heard on the channel since our last poll was handed over.
    heard_since_poll: bool,
    /// T1 has already waited once more for the answer to our current poll (the channel was
    /// busy): the next expiry polls again, however busy the channel.
    waited_for_poll: bool,
    /// N(S) of the last I frame heard from the peer (for the frames lost before the next).
    last_rx_ns: Option<u8>,
    /// T1 and TM201 have been paused for the channel's busy time up to here.
    paused_until: Option<Instant>,
    srt: Duration,
    t1v: Duration,
    t1_initial: Duration,

    /// Bytes from `send` not yet put in an I frame.
    pending: VecDeque<u8>,
    /// Packets from `send_datagram` not yet sent, each one I frame, with its PID.
    datagrams: VecDeque<(Pid, Vec<u8>)>,
    /// Bytes held in `datagrams`.
    datagram_bytes: usize,
    /// Outstanding I frames, indexed by N(S).
    sent: Vec<Option<Outstanding>>,
    /// When the last copy of each I frame left (or was handed over), indexed by N(S).
    departed: Vec<Option<Instant>>,
    /// N(S) of the frame `poll_transmit` returned last, when it was an I frame.
    last_i: Option<u8>,
    /// N(S) values the peer asked for with SREJ.
    resend: VecDeque<u8>,
    /// Out-of-sequence I frames (PID, information) kept for SREJ recovery, indexed by N(S).
    rx_stash: Vec<Option<(Pid, Vec<u8>)>>,
    /// Bit n set: SREJ for N(S) = n sent and not yet answered.
    srej_requested: u128,
    rx_undelivered: usize,

    tx: VecDeque<Frame>,
    events: VecDeque<Event>,
    stats: LinkStats,
}

impl Link {
    /// A link in the disconnected state. `path` is the digipeater path towards `remote` (H bits
    /// are cleared when frames are built).
    #[must_use]
    pub fn new(config: Config, local: Callsign, remote: Callsign, path: Path) -> Link {
        let cfg = config.sanitized();
        let path = Path::from_calls(&path.as_slice().iter().map(|d| d.call).collect::<Vec<_>>())
            .unwrap_or_default();
        let hops = u32::try_from(path.len()).unwrap_or(0);
        let t1_initial = cfg.frack * (2 * hops + 1);
        let mut link = Link {
            local,
            remote,
            path,
            state: State::Disconnected,
            modulo: Modulo::Mod8,
            vs: 0,
            vr: 0,
            va: 0,
            vs_max: 0,
            rc: 0,
            k: cfg.k_mod8,
            n1: cfg.n1,
            n2: cfg.n2,
            srej: false,
            peer_busy: false,
            own_busy: false,
            announced_busy: false,
            reject_exception: false,
            ack_pending: false,
            layer3_initiated: false,
            crossed: false,
            reset_by_peer: false,
            traffic_seen: false,
            ever_connected: false,
            close_pending: false,
            xid: XidState::Idle,
            timers: TimerTable::default(),
            last_departure: None,
            probe: None,
            rtt_sample: None,
            rx_since_ack: 0,
            peer_run: 0,
            peer_runs: 0,
            early_ack: None,
            max_rx_len: 0,
            heard_since_poll: false,
            waited_for_poll: false,
            last_rx_ns: None,
            paused_until: None,
            srt: t1_initial / 2,
            t1v: t1_initial,
            t1_initial,
            pending: VecDeque::new(),
            datagrams: VecDeque::new(),
            datagram_bytes: 0,
            sent: vec![None; 128],
            departed: vec![None; 128],
            last_i: None,
            resend: VecDeque::new(),
            rx_stash: vec![None; 128],
            srej_requested: 0,
            rx_undelivered: 0,
            tx: VecDeque::new(),
            events: VecDeque::new(),
            stats: LinkStats::default(),
            cfg,
        };
        link.set_version(Modulo::Mod8);
        link.t1v = link.t1v.max(link.t1_floor());
        link
    }

    // ------------------------------------------------------------------ accessors

    /// Current state.
    #[must_use]
    pub fn state(&self) -> State {
        self.state
    }

    /// Our callsign.
    #[must_use]
    pub fn local(&self) -> Callsign {
        self.local
    }

    /// The peer's callsign.
    #[must_use]
    pub fn remote(&self) -> Callsign {
        self.remote
    }

    /// Digipeater path towards the peer.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The modulus in use: parse this link's incoming frames with it.
    #[must_use]
    pub fn modulo(&self) -> Modulo {
        self.modulo
    }

    /// Window size k in use.
    #[must_use]
    pub fn window(&self) -> u8 {
        self.k
    }

    /// N1 in use: largest information field sent.
    #[must_use]
    pub fn n1(&self) -> usize {
        self.n1
    }

    /// N2 in use.
    #[must_use]
    pub fn n2(&self) -> u8 {
        self.n2
    }

    /// Whether SREJ recovery is in use.
    #[must_use]
    pub fn uses_srej(&self) -> bool {
        self.srej
    }

    /// Smoothed round-trip time estimate.
    #[must_use]
    pub fn srt(&self) -> Duration {
        self.srt
    }

    /// Current T1 value.
    #[must_use]
    pub fn t1(&self) -> Duration {
        self.t1v
    }

    /// Whether the peer said RNR.
    #[must_use]
    pub fn peer_busy(&self) -> bool {
        self.peer_busy
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// Bytes queued by [`Link::send`] and [`Link::send_datagram`] and not yet put in an I
    /// frame.
    #[must_use]
    pub fn pending_bytes(&self) -> usize {
        self.pending.len() + self.datagram_bytes
    }

    /// How many more bytes [`Link::send`] would accept now.
    #[must_use]
    pub fn send_capacity(&self) -> usize {
        self.cfg.send_buffer.saturating_sub(self.pending_bytes())
    }

    /// Whether everything sent has been acknowledged and nothing is queued.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.pending.is_empty() && self.datagrams.is_empty() && self.va == self.vs_max
    }

    /// Disconnected with no output left to drain: the link can be dropped.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.state == State::Disconnected && self.tx.is_empty() && self.events.is_empty()
    }

    // ------------------------------------------------------------------ commands

    /// DL-CONNECT request: send SABME (if [`Config::prefer_v22`]) or SABM.
    pub fn connect(&mut self, now: Instant) -> Result<(), Error> {
        if self.state != State::Disconnected {
            return Err(Error::InvalidState(self.state.name()));
        }
        let modulo = if self.cfg.prefer_v22 {
            Modulo::Mod128
        } else {
            Modulo::Mod8
        };
        self.set_version(modulo);
        self.reset_sequence();
        self.close_pending = false;
        self.layer3_initiated = true;
        self.crossed = false;
        self.establish(now);
        Ok(())
    }

    /// Whether the link we asked for came up while the peer asked for it too (its SABM crossed
    /// ours): both ends then take it for their own call, and whatever runs on it must settle
    /// who called by a rule both ends apply alike.
    #[must_use]
    pub fn crossed(&self) -> bool {
        self.crossed
    }

    /// Whether the last [`Event::Reset`] came from the peer calling again (its SABM on a
    /// connected link: it lost the link, or restarted) rather than from our own recovery.
    #[must_use]
    pub fn reset_by_peer(&self) -> bool {
        self.reset_by_peer
    }

    /// Queue data for the peer. It is cut into I frames of at most N1 bytes. All or nothing:
    /// fails with [`Error::SendBufferFull`] if it does not fit in [`Link::send_capacity`].
    /// Data may be queued while the link is still connecting.
    pub fn send(&mut self, _now: Instant, data: &[u8]) -> Result<(), Error> {
        match self.state {
            State::Disconnected | State::AwaitingRelease => return Err(Error::NotConnected),
            _ if self.close_pending => return Err(Error::InvalidState("closing")),
            _ => {}
        }
        if data.len() > self.send_capacity() {
            return Err(Error::SendBufferFull);
        }
        self.pending.extend(data);
        Ok(())
    }

    /// Queue one packet to go as one I frame with `pid` (a NET/ROM datagram), however long
    /// the link's N1: such packets are never cut or joined. All or nothing, as [`Link::send`];
    /// [`Error::InfoTooLong`] beyond [`MAX_INFO_LEN`].
    pub fn send_datagram(&mut self, _now: Instant, pid: Pid, data: Vec<u8>) -> Result<(), Error> {
        match self.state {
            State::Disconnected | State::AwaitingRelease => return Err(Error::NotConnected),
            _ if self.close_pending => return Err(Error::InvalidState("closing")),
            _ => {}
        }
        if data.len() > MAX_INFO_LEN {
            return Err(Error::InfoTooLong { len: data.len() });
        }
        if data.len() > self.send_capacity() {
            return Err(Error::SendBufferFull);
        }
        self.datagram_bytes += data.len();
        self.datagrams.push_back((pid, data));
        Ok(())
    }

    /// Graceful disconnect: once everything queued has been sent and acknowledged, send DISC.
    /// While connecting, gives up at once and sends DISC.
    pub fn disconnect(&mut self, now: Instant) {
        match self.state {
            State::Connected | State::TimerRecovery => {
                self.close_pending = true;
                self.maybe_start_close(now);
            }
            State::AwaitingConnection | State::AwaitingV22Connection => self.abort(now),
            State::Disconnected | State::AwaitingRelease => {}
        }
    }

    /// DL-DISCONNECT request (SDL): throw away queued and unacknowledged data and send DISC now.
    pub fn abort(&mut self, now: Instant) {
        match self.state {
            State::Disconnected | State::AwaitingRelease => {}
            _ => {
                self.discard_queue();
                self.start_release(now);
            }
        }
    }

    /// Set or clear our own busy condition. While busy, received I frames are refused with RNR.
    pub fn set_busy(&mut self, _now: Instant, busy: bool) {
        self.own_busy = busy;
        if busy {
            self.announce_busy();
        }
        // Clearing is announced by the next poll_transmit (it also covers the receive buffer).
    }

    // ------------------------------------------------------------------ input

    /// Parse `bytes` (an AX.25 frame without FCS) with this link's modulus and handle it.
    pub fn handle_bytes(&mut self, now: Instant, bytes: &[u8]) -> Result<(), Error> {
        let frame = Frame::parse(bytes, self.modulo)?;
        self.handle_frame(now, frame);
        Ok(())
    }

    /// Handle one received frame. Frames not addressed from `remote` to `local`, or still on
    /// their way through the digipeaters, are ignored.
    pub fn handle_frame(&mut self, now: Instant, frame: Frame) {
        if frame.address.dest != self.local || frame.address.src != self.remote {
            tracing::trace!("frame for another link ignored");
            return;
        }
        if !frame.address.path.all_repeated() {
            return;
        }
        let m = self.modulo.mask();
        let in_range = match frame.control {
            Control::I { ns, nr, .. } => ns <= m && nr <= m,
            Control::S { nr, .. } => nr <= m,
            Control::U { .. } => true,
        };
        if !in_range {
            // Only possible for a hand-built Frame; parsed frames are always in range.
            tracing::debug!("sequence number out of range for the modulus, frame ignored");
            return;
        }
        tracing::trace!(state = self.state.name(), control = ?frame.control, "rx");
        match frame.control {
            Control::U { kind, pf } => self.on_unnumbered(now, kind, pf, &frame),
            Control::S { kind, nr, pf } => {
                if frame.modulo == self.modulo {
                    self.on_supervisory(now, kind, nr, pf, &frame);
                }
            }
            Control::I { ns, nr, poll } => {
                if frame.modulo == self.modulo {
                    self.on_information(now, ns, nr, poll, frame);
                }
            }
        }
    }

    /// Handle expired timers. Calling it early, or twice, does nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        for t in Timer::ALL {
            if self.timers.take_expired(t, now) {
                match t {
                    Timer::T1 => self.on_t1(now),
                    Timer::Xid => self.on_xid_timer(now),
                    Timer::T2 => self.on_t2(),
                    Timer::T3 => self.on_t3(now),
                }
            }
        }
    }

    // ------------------------------------------------------------------ output

    /// The next frame to transmit, if any. A driver that knows when it will have left the
    /// modem says so with [`Link::departs`] before polling again.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Frame> {
        self.last_i = None;
        let f = self.next_frame(now)?;
        self.handed_over(now);
        Some(f)
    }

    fn next_frame(&mut self, now: Instant) -> Option<Frame> {
        if self.announced_busy && !self.busy() && self.is_connected() {
            // Busy cleared: tell the peer it may send again.
            self.announced_busy = false;
            self.push_s(Supervisory::Rr, false, CommandResponse::Response);
        }
        if let Some(f) = self.tx.pop_front() {
            return Some(f);
        }
        if !self.is_connected() {
            return None;
        }
        if let Some(f) = self.next_i_frame(now) {
            return Some(f);
        }
        if self.ack_pending && self.t2_value().is_zero() {
            self.acknowledged();
            let kind = self.rr_or_rnr();
            return Some(self.s_frame(kind, false, CommandResponse::Response));
        }
        if self.maybe_start_close(now) {
            return self.tx.pop_front();
        }
        None
    }

    /// The next event for the application, if any.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        let e = self.events.pop_front()?;
        if let Event::Data(d) | Event::Datagram { data: d, .. } = &e {
            self.rx_undelivered = self.rx_undelivered.saturating_sub(d.len());
        }
        Some(e)
    }

    /// When [`Link::handle_timeout`] should next be called; `None` when no timer is armed.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next_timeout()
    }

    // ------------------------------------------------------------------ internals: helpers

    fn is_connected(&self) -> bool {
        matches!(self.state, State::Connected | State::TimerRecovery)
    }

    fn busy(&self) -> bool {
        self.own_busy || self.rx_undelivered >= self.cfg.receive_buffer
    }

    fn rr_or_rnr(&self) -> Supervisory {
        if self.busy() {
            Supervisory::Rnr
        } else {
            Supervisory::Rr
        }
    }

    fn set_state(&mut self, s: State) {
        if s != self.state {
            tracing::debug!(from = self.state.name(), to = s.name(), remote = %self.remote, "link state");
            self.state = s;
        }
    }

    fn seq_add(&self, a: u8, b: u8) -> u8 {
        (a.wrapping_add(b)) & self.modulo.mask()
    }

    /// (a - b) mod m.
    fn seq_sub(&self, a: u8, b: u8) -> u8 {
        (a.wrapping_sub(b)) & self.modulo.mask()
    }

    fn address(&self, cr: CommandResponse) -> Address {
        Address {
            dest: self.remote,
            src: self.local,
            path: self.path,
            cr,
        }
    }

    fn s_frame(&self, kind: Supervisory, pf: bool, cr: CommandResponse) -> Frame {
        Frame::supervisory(self.address(cr), kind, self.vr, pf, self.modulo)
    }

    fn push_frame(&mut self, f: Frame) {
        if self.tx.len() >= MAX_TX_QUEUE {
            self.stats.tx_dropped += 1;
            tracing::debug!("transmit queue full, frame dropped");
            return;
        }
        self.tx.push_back(f);
    }

    fn push_u(&mut self, kind: Unnumbered, pf: bool, cr: CommandResponse) {
        let f = Frame::unnumbered(self.address(cr), kind, pf);
        self.push_frame(f);
    }

    fn push_s(&mut self, kind: Supervisory, pf: bool, cr: CommandResponse) {
        let f = self.s_frame(kind, pf, cr);
        self.push_frame(f);
    }

    /// "Set version 2.0/2.2" (spec §3.2).
    fn set_version(&mut self, modulo: Modulo) {
        self.modulo = modulo;
        match modulo {
            Modulo::Mod8 => {
                self.k = self.cfg.k_mod8;
                self.srej = false;
            }
            Modulo::Mod128 => {
                self.k = self.cfg.k_mod128;
                self.srej = self.cfg.srej;
            }
        }
        self.n1 = self.cfg.n1;
        self.n2 = self.cfg.n2;
    }

    fn reset_sequence(&mut self) {
        self.vs = 0;
        self.vr = 0;
        self.va = 0;
        self.vs_max = 0;
        self.sent.iter_mut().for_each(|s| *s = None);
        self.resend.clear();
        self.rx_stash.iter_mut().for_each(|s| *s = None);
        self.srej_requested = 0;
        self.probe = None;
        self.last_rx_ns = None;
    }

    fn clear_exceptions(&mut self) {
        self.peer_busy = false;
        self.reject_exception = false;
        self.acknowledged();
        self.announced_busy = false;
        self.srej_requested = 0;
    }

    /// Put unacknowledged data back at the head of the send queue and reset the sequence.
    /// Must run before any change of modulus (the sequence numbers are in the old one).
    fn requeue_unacked(&mut self) {
        let mut seq = self.vs_max;
        let count = self.seq_sub(self.vs_max, self.va);
        for _ in 0..count {
            seq = self.seq_sub(seq, 1);
            match self.sent[usize::from(seq)].take() {
                Some(Outstanding {
                    datagram: Some(pid),
                    data,
                }) => {
                    self.datagram_bytes += data.len();
                    self.datagrams.push_front((pid, data));
                }
                Some(Outstanding {
                    datagram: None,
                    data,
                }) => {
                    for &b in data.iter().rev() {
                        self.pending.push_front(b);
                    }
                }
                None => {}
            }
        }
        self.reset_sequence();
    }

    fn discard_queue(&mut self) {
        self.pending.clear();
        self.datagrams.clear();
        self.datagram_bytes = 0;
        self.reset_sequence();
        self.close_pending = false;
    }

    fn go_disconnected(&mut self, reason: DisconnectReason) {
        self.discard_queue();
        self.timers.stop_all();
        self.xid = XidState::Idle;
        self.set_state(State::Disconnected);
        self.events.push_back(Event::Disconnected { reason });
    }

    fn became_connected(&mut self) {
        let event = if self.ever_connected && self.traffic_seen {
            Event::Reset
        } else if self.ever_connected {
            // Re-established before any data moved: nothing for the application to know.
            self.set_state(State::Connected);
            return;
        } else {
            Event::Connected {
                modulo: self.modulo,
            }
        };
        self.ever_connected = true;
        self.traffic_seen = false;
        self.set_state(State::Connected);
        self.events.push_back(event);
    }

    // ------------------------------------------------------------------ internals: procedures

    fn sabm_kind(&self) -> Unnumbered {
        match self.modulo {
            Modulo::Mod8 => Unnumbered::Sabm,
            Modulo::Mod128 => Unnumbered::Sabme,
        }
    }

    /// "Establish data link": SABM(E) with P=1, T1 restarted, T3 stopped; enter state 1 or 5.
    fn establish(&mut self, now: Instant) {
        self.clear_exceptions();
        self.rc = 0;
        let kind = self.sabm_kind();
        self.push_u(kind, true, CommandResponse::Command);
        self.timers.stop(Timer::T3);
        self.timers.stop(Timer::Xid);
        self.xid = XidState::Idle;
        self.start_t1(now);
        self.set_state(match self.modulo {
            Modulo::Mod8 => State::AwaitingConnection,
            Modulo::Mod128 => State::AwaitingV22Connection,
        });
    }

    /// Re-establish after a protocol error, in `modulo`: keep unacknowledged data for the new
    /// link.
    fn reestablish(&mut self, now: Instant, modulo: Modulo) {
        self.requeue_unacked();
        self.set_version(modulo);
        self.layer3_initiated = false;
        self.reset_by_peer = false;
        self.establish(now);
    }

    fn start_release(&mut self, now: Instant) {
        self.clear_exceptions();
        self.rc = 0;
        self.close_pending = false;
        self.push_u(Unnumbered::Disc, true, CommandResponse::Command);
        self.timers.stop(Timer::T3);
        self.timers.stop(Timer::Xid);
        self.xid = XidState::Idle;
        self.start_t1(now);
        self.set_state(State::AwaitingRelease);
    }

    /// Start the graceful close if it was asked for and everything is acknowledged.
    fn maybe_start_close(&mut self, now: Instant) -> bool {
        if self.close_pending && self.is_connected() && self.is_idle() {
            self.start_release(now);
            return true;
        }
        false
    }

    /// RR (or RNR) command with P=1, then start T1 (spec §3.4).
    fn transmit_enquiry(&mut self, now: Instant) {
        let kind = self.rr_or_rnr();
        if kind == Supervisory::Rnr {
            self.announced_busy = true;
        }
        self.push_s(kind, true, CommandResponse::Command);
        self.heard_since_poll = false;
        self.waited_for_poll = false;
        self.acknowledged();
        self.start_t1(now);
    }

    /// The answer to a poll, F=1: RR (or RNR when busy); on an SREJ link holding frames past a
    /// gap, SREJ for the gap instead, so the peer resends that frame alone rather than
    /// everything from it (spec §2.3: SREJ F=1 acknowledges up to N(R) - 1).
    fn enquiry_response(&mut self) {
        let kind = self.rr_or_rnr();
        if kind == Supervisory::Rnr {
            self.announced_busy = true;
        }
        // The peer is polling: it may be waiting on SREJs we sent that got lost; let later
        // frames ask again.
        self.srej_requested = 0;
        let holes = if kind == Supervisory::Rr && self.srej {
            self.holes()
        } else {
            Vec::new()
        };
        if holes.is_empty() {
            self.push_s(kind, true, CommandResponse::Response);
        }
        for seq in holes {
            // F=1 on the one for V(R) (as Direwolf), each further hole its own SREJ.
            self.srej_requested |= 1u128 << seq;
            self.stats.srej_sent += 1;
            let mut f = self.s_frame(Supervisory::Srej, seq == self.vr, CommandResponse::Response);
            if let Control::S { nr, .. } = &mut f.control {
                *nr = seq;
            }
            self.push_frame(f);
        }
        self.acknowledged();
    }

    /// The frames missing below the highest one kept out of sequence (none: nothing kept).
    fn holes(&self) -> Vec<u8> {
        let seq = |i: u8| self.seq_add(self.vr, i);
        let Some(top) = (1..self.k)
            .rev()
            .find(|&i| self.rx_stash[usize::from(seq(i))].is_some())
        else {
            return Vec::new();
        };
        (0..top)
            .map(seq)
            .filter(|&s| self.rx_stash[usize::from(s)].is_none())
            .collect()
    }

    fn announce_busy(&mut self) {
        if self.is_connected() && !self.announced_busy {
            self.announced_busy = true;
            self.acknowledged();
            self.push_s(Supervisory::Rnr, false, CommandResponse::Response);
        }
    }

    fn our_xid(&self) -> XidParams {
        let hops = u32::try_from(self.path.len()).unwrap_or(0);
        let frack = self.t1_initial / (2 * hops + 1);
        XidParams {
            classes: Some(Classes {
                balanced: true,
                half_duplex: true,
                full_duplex: false,
            }),
            hdlc: Some(HdlcFunctions {
                rej: true,
                srej: self.srej,
                extended_address: true,
                mod8: self.modulo == Modulo::Mod8,
                mod128: self.modulo == Modulo::Mod128,
                fcs16: true,
                sync_tx: true,
                ..HdlcFunctions::default()
            }),
            n1_rx_bits: u32::try_from(self.n1 * 8).ok(),
            window_rx: Some(self.k),
            ack_timer_ms: u32::try_from(frack.as_millis()).ok(),
            retries: Some(self.n2),
        }
    }

    fn send_xid_command(&mut self, now: Instant) {
        let mut info = Vec::new();
        self.our_xid().emit(&mut info);
        let f = Frame {
            address: self.address(CommandResponse::Command),
            control: Control::U {
                kind: Unnumbered::Xid,
                pf: true,
            },
            pid: None,
            info,
            modulo: self.modulo,
        };
        self.push_frame(f);
        self.start_xid_timer(now);
    }

    /// Apply negotiated XID values (the response's values, or the ones we answer with).
    fn apply_xid(&mut self, p: &XidParams) {
        if let Some(bits) = p.n1_rx_bits {
            let bytes = usize::try_from(bits / 8).unwrap_or(MAX_INFO_LEN);
            self.n1 = bytes.clamp(1, self.cfg.n1);
        }
        if let Some(k) = p.window_rx {
            let max = match self.modulo {
                Modulo::Mod8 => self.cfg.k_mod8,
                Modulo::Mod128 => self.cfg.k_mod128,
            };
            self.k = k.clamp(1, max);
        }
        if let Some(n2) = p.retries {
            self.n2 = n2.clamp(1, MAX_N2);
        }
        if let Some(ms) = p.ack_timer_ms {
            let t1 = Duration::from_millis(u64::from(ms)).min(MAX_XID_T1);
            if !t1.is_zero() {
                let hops = u32::try_from(self.path.len()).unwrap_or(0);
                self.t1_initial = t1 * (2 * hops + 1);
            }
        }
        if let Some(h) = p.hdlc {
            self.srej = self.modulo == Modulo::Mod128 && self.cfg.srej && h.srej;
        }
        tracing::debug!(
            n1 = self.n1,
            k = self.k,
            n2 = self.n2,
            srej = self.srej,
            "XID applied"
        );
    }

    /// Our answer to an XID command: the smaller N1 and k, the larger T1 and N2, one of
    /// REJ/SREJ (spec §3.8).
    fn xid_answer(&self, offer: &XidParams) -> XidParams {
        let mut ours = self.our_xid();
        if let (Some(a), Some(b)) = (ours.n1_rx_bits, offer.n1_rx_bits) {
            ours.n1_rx_bits = Some(a.min(b).max(8));
        }
        if let (Some(a), Some(b)) = (ours.window_rx, offer.window_rx) {
            ours.window_rx = Some(a.min(b).max(1));
        }
        if let (Some(a), Some(b)) = (ours.ack_timer_ms, offer.ack_timer_ms) {
            ours.ack_timer_ms = Some(a.max(b));
        }
        if let (Some(a), Some(b)) = (ours.retries, offer.retries) {
            ours.retries = Some(a.max(b));
        }
        let peer_srej = offer.hdlc.map_or(self.modulo == Modulo::Mod128, |h| h.srej);
        let srej = self.modulo == Modulo::Mod128 && self.cfg.srej && peer_srej;
        if let Some(h) = ours.hdlc.as_mut() {
            h.srej = srej;
            h.rej = !srej;
        }
        ours
    }

    // ------------------------------------------------------------------ internals: sending I

    fn outstanding(&self, seq: u8) -> bool {
        self.seq_sub(seq, self.va) < self.seq_sub(self.vs_max, self.va)
    }

    fn next_i_frame(&mut self, now: Instant) -> Option<Frame> {
        if self.peer_busy {
            return None;
        }
        // Frames the peer asked for with SREJ.
        while let Some(seq) = self.resend.pop_front() {
            if !self.outstanding(seq) {
                continue;
            }
            if let Some(o) = self.sent[usize::from(seq)].clone() {
                self.stats.i_frames_resent += 1;
                self.forget_probe();
                return Some(self.i_frame(now, seq, o));
            }
        }
        // Go-back-N retransmission in progress.
        if self.vs != self.vs_max {
            let seq = self.vs;
            if let Some(o) = self.sent[usize::from(seq)].clone() {
                self.vs = self.seq_add(seq, 1);
                self.stats.i_frames_resent += 1;
                self.forget_probe();
                return Some(self.i_frame(now, seq, o));
            }
            // Cannot happen (slots between V(A) and vs_max are filled); resynchronise.
            self.vs = self.vs_max;
        }
        // New data, within the window: whole packets first, then the byte stream.
        if self.seq_sub(self.vs, self.va) >= self.k {
            return None;
        }
        let o = if let Some((pid, data)) = self.datagrams.pop_front() {
            self.datagram_bytes -= data.len();
            Outstanding {
                datagram: Some(pid),
                data,
            }
        } else if !self.pending.is_empty() {
            let len = self.pending.len().min(self.n1);
            Outstanding {
                datagram: None,
                data: self.pending.drain(..len).collect(),
            }
        } else {
            return None;
        };
        let seq = self.vs;
        self.sent[usize::from(seq)] = Some(o.clone());
        self.vs = self.seq_add(seq, 1);
        self.vs_max = self.vs;
        self.stats.i_frames_sent += 1;
        self.stats.i_bytes_sent += o.data.len() as u64;
        if self.probe.is_none() {
            self.probe = Some(seq);
        }
        Some(self.i_frame(now, seq, o))
    }

    fn i_frame(&mut self, now: Instant, ns: u8, o: Outstanding) -> Frame {
        self.last_i = Some(ns);
        self.acknowledged();
        self.ensure_t1(now);
        // On a modelled channel the frame that fills the window asks for the answer at once
        // (P=1): the peer need not wait out T2 for more of a transmission that is over.
        let poll = self.cfg.air.is_modelled()
            && self.vs == self.vs_max
            && self.seq_sub(self.vs, self.va) >= self.k;
        Frame::information(
            self.address(CommandResponse::Command),
            ns,
            self.vr,
            poll,
            o.datagram.unwrap_or(self.cfg.pid),
            o.data,
            self.modulo,
        )
    }

    /// Bytes of an I frame with `info` bytes on this link's path and modulus.
    fn i_frame_len(&self, info: usize) -> usize {
        let control = match self.modulo {
            Modulo::Mod8 => 1,
            Modulo::Mod128 => 2,
        };
        ADDRESS_LEN * (2 + self.path.len()) + control + 1 + info
    }
}

/// An I frame sent and not yet acknowledged: its information field, and the PID it went with
/// when it is a whole packet from [`Link::send_datagram`] (`None`: a piece of the byte stream,
/// sent with [`Config::pid`]).
#[derive(Debug, Clone)]
struct Outstanding {
    datagram: Option<Pid>,
    data: Vec<u8>,
}
