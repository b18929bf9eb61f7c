//! The task that drives one radio port: device bytes in and out, a `qtc_ax25::Port`, one
//! duplex stream per link, one timer.

use std::collections::BTreeMap;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use qtc_ax25::{
    Address, CommandResponse, DisconnectReason, Event, Frame, LinkId, Path, Pid, PortEvent, State,
};
use qtc_callsign::Callsign;
use tokio::io::{AsyncRead, DuplexStream, ReadBuf};
use tokio::sync::{mpsc, watch};

use super::to_session::ToSession;
use super::{heard, ConnectError, Heard, Local, Outgoing, PortCmd};

mod datagram_links;
mod ip;
mod netrom;
use crate::clock;
use crate::config::radio::RadioPort;
use crate::phy::{self, Device, Kind, KissSetup, Opening};

/// Bytes buffered inside each link's duplex stream, each way.
pub const DUPLEX_BUF: usize = 4096;
/// Reopen delays after a device fails: from the first, doubling up to the cap.
pub const MIN_BACKOFF: Duration = Duration::from_secs(1);
/// The cap on the reopen delay.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Most frames kept while the device opens (a link's SABM, a few frames a NET/ROM start sends).
const HELD_WHILE_OPENING: usize = 16;
/// Where an ID beacon goes.
const BEACON_TO: Callsign = match Callsign::new("ID", 0) {
    Ok(call) => call,
    Err(_) => panic!("ID is a callsign"),
};
/// How long at shutdown the port may spend sending its DISCs.
const FLUSH_AT_STOP: Duration = Duration::from_millis(300);

/// Called for each accepted incoming link (or NET/ROM circuit) with its stream and who is
/// calling which way.
pub type Incoming = Arc<dyn Fn(DuplexStream, super::Caller) + Send + Sync>;

/// What a port task needs.
pub struct PortSetup {
    /// The port's configuration.
    pub port: RadioPort,
    /// Callsigns we answer to.
    pub locals: Vec<Callsign>,
    /// Accept incoming connects.
    pub accept: bool,
    /// Where incoming links go.
    pub on_incoming: Option<Incoming>,
    /// The heard list to fill.
    pub heard: Heard,
    /// Where the task publishes its device state and frame counts.
    pub health: Arc<super::PortHealth>,
    /// The daemon's counters (the port's bytes and AX.25 link counts).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The NET/ROM node's side, when this port has a NET/ROM quality.
    pub netrom: Option<super::netrom::PortHook>,
    /// The IP router's side, when this port carries IP.
    pub ip: Option<super::ip::PortHook>,
}

struct LinkIo {
    io: DuplexStream,
    /// Received data on its way to the session.
    to_user: ToSession,
    /// The link is down: flush `to_user`, then drop the stream.
    gone: bool,
    /// An outgoing link still connecting: its stream, handed over once connected.
    pending: Option<(DuplexStream, super::ConnectReply)>,
    /// The far end called us (its session came from `on_incoming`).
    incoming: bool,
    /// Told when the far end's call crosses our outgoing link's late.
    crossed_late: Option<tokio::sync::oneshot::Sender<()>>,
}

impl LinkIo {
    fn new() -> (LinkIo, DuplexStream) {
        let (ours, theirs) = tokio::io::duplex(DUPLEX_BUF);
        (
            LinkIo {
                io: ours,
                to_user: ToSession::default(),
                gone: false,
                pending: None,
                incoming: false,
                crossed_late: None,
            },
            theirs,
        )
    }
}

enum DevState {
    /// Open since then.
    Up(Box<dyn Device>, std::time::Instant),
    Opening(Opening),
    /// Down; opened again at this time.
    Waiting(std::time::Instant),
}

struct Task {
    name: String,
    kind: Kind,
    /// The KISS channel and the parameters sent each time the device opens.
    kiss: KissSetup,
    port: qtc_ax25::Port,
    dev: DevState,
    backoff: Duration,
    links: BTreeMap<LinkId, LinkIo>,
    rx: Vec<u8>,
    frames: Vec<Vec<u8>>,
    heard: Heard,
    health: Arc<super::PortHealth>,
    on_incoming: Option<Incoming>,
    dropped: u64,
    /// Frames the links sent while the device was opening, sent once it is open.
    held: Vec<Vec<u8>>,
    mycall: Option<Callsign>,
    /// AX.25 frame bytes in and out, for /metrics.
    bytes: std::sync::Arc<crate::metrics::PortBytes>,
    metrics: Arc<crate::metrics::Metrics>,
    netrom: Option<netrom::PortNetrom>,
    ip: Option<ip::PortIp>,
}

fn is_up(state: State) -> bool {
    matches!(state, State::Connected | State::TimerRecovery)
}

/// The session's bytes to its link, only while the link is up and can take more (the duplex
/// stream holds the rest: backpressure to the session). End of stream disconnects the link.
fn session_to_link(
    cx: &mut Context<'_>,
    now: std::time::Instant,
    l: &mut LinkIo,
    link: &mut qtc_ax25::Link,
    buf: &mut [u8],
) -> bool {
    if l.to_user.is_closed() || l.gone || l.pending.is_some() {
        return false;
    }
    let cap = link.send_capacity().min(buf.len());
    if !is_up(link.state()) || cap == 0 {
        return false;
    }
    let mut rb = ReadBuf::new(&mut buf[..cap]);
    match Pin::new(&mut l.io).poll_read(cx, &mut rb) {
        Poll::Ready(Ok(())) if !rb.filled().is_empty() => {
            let _ = link.send(now, rb.filled());
            true
        }
        Poll::Ready(_) => {
            l.to_user.close();
            link.disconnect(now);
            true
        }
        Poll::Pending => false,
    }
}

/// The link's end in the log, with what it carried: the bench and the real-time tests read
/// `window=`, `paclen=` and the bytes each way from it.
fn log_link_down(port: &str, reason: DisconnectReason, link: &qtc_ax25::Link) {
    let st = link.stats();
    tracing::info!(
        port = %port,
        ?reason,
        remote = %link.remote(),
        window = link.window(),
        paclen = link.n1(),
        i_sent = st.i_frames_sent,
        i_resent = st.i_frames_resent,
        i_bytes = st.i_bytes_sent,
        i_bytes_in = st.i_bytes_received,
        t1_expiries = st.t1_expiries,
        srt_ms = link.srt().as_millis() as u64,
        "link down"
    );
}

/// A call the user gave up on (`C`, then Enter) before it connected: the link is aborted.
fn abandoned(
    l: &mut LinkIo,
    link: Option<&mut qtc_ax25::Link>,
    now: std::time::Instant,
    cx: &mut Context<'_>,
) -> bool {
    if !l
        .pending
        .as_mut()
        .is_some_and(|(_, r)| r.poll_closed(cx).is_ready())
    {
        return false;
    }
    l.pending = None;
    l.gone = true;
    if let Some(link) = link {
        tracing::info!(remote = %link.remote(), "call abandoned");
        link.abort(now);
    }
    true
}

/// The call a user's link goes out under: theirs as it is unless `taken`, then 15 minus its
/// SSID (the node convention, as NET/ROM and LinBPQ nodes do), then 15, 14, ... 0.
fn pick_call(user: Callsign, taken: impl Fn(&Callsign) -> bool) -> Callsign {
    let ssid = user.ssid();
    [ssid, 15 - ssid.min(15)]
        .into_iter()
        .chain((0..=15).rev())
        .filter_map(|s| user.with_ssid(s).ok())
        .find(|c| !taken(c))
        .unwrap_or(user)
}

/// Runs a port until `shutdown`.
pub async fn run_port(
    setup: PortSetup,
    mut cmds: mpsc::Receiver<PortCmd>,
    mut shutdown: watch::Receiver<bool>,
) {
    let PortSetup {
        port: cfg,
        locals,
        accept,
        on_incoming,
        heard,
        health,
        metrics,
        netrom,
        ip,
    } = setup;
    let mut port = qtc_ax25::Port::new(cfg.link.clone());
    for c in &locals {
        port.add_local(*c);
    }
    let (netrom, mut from_node) = netrom::attach(&mut port, netrom);
    let (ip, mut from_router) = ip::attach(&mut port, ip);
    port.set_accept(accept);
    port.set_max_links(cfg.max_links);
    let kiss = KissSetup {
        kiss_port: cfg.kiss_port,
        params: cfg.kiss,
    };
    let mut t = Task {
        name: cfg.name.clone(),
        kind: cfg.kind.clone(),
        kiss,
        port,
        dev: DevState::Opening(cfg.kind.open(kiss)),
        backoff: MIN_BACKOFF,
        links: BTreeMap::new(),
        rx: vec![0u8; phy::READ_BUF],
        frames: Vec::new(),
        heard,
        health,
        on_incoming,
        dropped: 0,
        held: Vec::new(),
        mycall: locals.first().copied(),
        bytes: metrics.port_bytes(&cfg.name),
        metrics,
        netrom,
        ip,
    };
    let mut timer = clock::Timer::new();
    let beacon = cfg.beacon.clone();
    let mut beacon_timer = clock::Timer::new();
    beacon_timer.set(beacon.as_ref().map(|b| clock::now() + b.0));
    let mut cmds_open = true;
    loop {
        let now = clock::now();
        t.drain(now);
        timer.set(t.deadline());
        tokio::select! {
            () = poll_fn(|cx| t.poll_io(cx)) => {}
            () = timer.fired() => t.handle_timeout(clock::now()),
            o = netrom::next(&mut from_node) => match o {
                Some(o) => t.netrom_out(clock::now(), o),
                None => from_node = None,
            },
            o = ip::next(&mut from_router) => match o {
                Some(o) => t.ip_out(clock::now(), o),
                None => from_router = None,
            },
            () = beacon_timer.fired() => {
                if let Some((every, text)) = &beacon {
                    t.beacon(text);
                    beacon_timer.set(Some(clock::now() + *every));
                }
            }
            c = cmds.recv(), if cmds_open => match c {
                Some(c) => t.command(clock::now(), c),
                None => cmds_open = false,
            },
            _ = shutdown.changed() => break,
        }
    }
    t.stop().await;
}

impl Task {
    /// Settles the port: frames to the device, events to the links' streams.
    fn drain(&mut self, now: std::time::Instant) {
        loop {
            let mut any = false;
            while let Some(f) = self.port.poll_transmit(now) {
                any = true;
                self.send_frame(&f);
            }
            while let Some(ev) = self.port.poll_event() {
                any = true;
                self.on_event(now, ev);
            }
            if !any {
                break;
            }
        }
        self.metrics.ax25(&self.name, self.port.stats());
    }

    fn send_frame(&mut self, f: &Frame) {
        match &self.dev {
            DevState::Up(..) => self.write_to_device(&f.to_bytes()),
            // Opening takes moments (a socket, a pty, a TCP connect): what the links say
            // meanwhile, such as a caller's first SABM, waits for it instead of costing a T1.
            DevState::Opening(_) if self.held.len() < HELD_WHILE_OPENING => {
                self.held.push(f.to_bytes());
            }
            _ => self.dropped += 1,
        }
    }

    fn write_to_device(&mut self, bytes: &[u8]) {
        let DevState::Up(d, _) = &mut self.dev else {
            self.dropped += 1;
            return;
        };
        self.bytes.sent(bytes.len());
        self.health.frame_out();
        if !d.queue(bytes) {
            self.dropped += 1;
            tracing::debug!(port = %self.name, dropped = self.dropped, "device queue full, frame dropped");
        }
    }

    fn beacon(&mut self, text: &str) {
        let Some(src) = self.mycall else {
            return;
        };
        let f = Frame::ui(
            Address::new(BEACON_TO, src, CommandResponse::Command),
            Pid::NO_LAYER3,
            text.as_bytes().to_vec(),
        );
        // The beacon holds the modem too: the links' timers count it.
        self.port.sent_other(clock::now(), f.buffer_len());
        self.send_frame(&f);
    }

    fn command(&mut self, now: std::time::Instant, c: PortCmd) {
        match c {
            PortCmd::Connect {
                local,
                remote,
                via,
                reply,
            } => {
                let path = match Path::from_calls(&via) {
                    Ok(p) => p,
                    Err(e) => {
                        let why = format!("bad digipeater path: {e}");
                        let _ = reply.send(Err(ConnectError::Failed(why)));
                        return;
                    }
                };
                let local = self.local_call(local);
                match self.port.connect(now, local, remote, path) {
                    Ok(id) => {
                        tracing::info!(port = %self.name, %remote, %local, "calling");
                        let (mut l, theirs) = LinkIo::new();
                        l.pending = Some((theirs, reply));
                        self.links.insert(id, l);
                    }
                    Err(qtc_ax25::Error::LinkExists) => {
                        let _ = reply.send(Err(ConnectError::LinkUp));
                    }
                    Err(e) => {
                        let why = format!("cannot call {remote}: {e}");
                        let _ = reply.send(Err(ConnectError::Failed(why)));
                    }
                }
            }
        }
    }

    /// The earliest deadline: the links' timers, the idle NET/ROM links and the device's
    /// reopening.
    fn deadline(&self) -> Option<std::time::Instant> {
        let reopen = match self.dev {
            DevState::Waiting(at) => Some(at),
            _ => None,
        };
        self.port
            .poll_timeout()
            .into_iter()
            .chain(self.netrom_deadline())
            .chain(self.ip_deadline())
            .chain(reopen)
            .min()
    }

    /// The deadline passed: the links' timers, the NET/ROM links', the device's reopening.
    /// The clock may lag the timer by a hair; a spurious call does nothing.
    fn handle_timeout(&mut self, now: std::time::Instant) {
        self.port.handle_timeout(now);
        self.netrom_timeout(now);
        self.ip_timeout(now);
        if matches!(self.dev, DevState::Waiting(at) if at <= now) {
            self.dev = DevState::Opening(self.kind.open(self.kiss));
        }
    }

    /// A station that called us gets its session (or a DM if nothing takes sessions here).
    fn accept(&mut self, now: std::time::Instant, id: LinkId, remote: Callsign) {
        match &self.on_incoming {
            Some(f) => {
                let (mut l, theirs) = LinkIo::new();
                l.incoming = true;
                self.links.insert(id, l);
                f(theirs, self.caller(remote));
            }
            None => {
                if let Some(link) = self.port.link_mut(id) {
                    link.abort(now);
                }
            }
        }
    }

    /// `remote` calling in on this port.
    fn caller(&self, remote: Callsign) -> super::Caller {
        super::Caller {
            remote,
            arrival: super::Arrival::Ax25 {
                port: self.name.clone(),
            },
        }
    }

    /// The callsign an outgoing link carries (see [`Local`]).
    fn local_call(&self, local: Local) -> Callsign {
        let user = match local {
            Local::Station(c) => return c,
            Local::User(c) => c,
        };
        let heard = self.heard.lock().unwrap_or_else(|e| e.into_inner());
        let taken = |c: &Callsign| {
            heard.contains_key(c)
                || self.port.is_local(c)
                || self.links.keys().any(|&id| {
                    self.port
                        .link(id)
                        .is_some_and(|l| l.local() == *c || l.remote() == *c)
                })
        };
        pick_call(user, taken)
    }

    fn on_event(&mut self, now: std::time::Instant, ev: PortEvent) {
        match ev {
            PortEvent::Incoming { id, local, remote } => {
                tracing::info!(port = %self.name, %remote, %local, "incoming link");
                if !self.netrom_defers(now, id, local, remote)
                    && !self.ip_defers(now, id, local, remote)
                {
                    self.accept(now, id, remote);
                }
            }
            PortEvent::Link { id, event } => {
                let Some(event) = self.ip_event(now, id, event) else {
                    return;
                };
                let Some(event) = self.netrom_event(now, id, event) else {
                    return;
                };
                let Some(l) = self.links.get_mut(&id) else {
                    return;
                };
                match event {
                    Event::Connected { modulo } => {
                        tracing::info!(port = %self.name, ?modulo, "link up");
                        if let Some((stream, reply)) = l.pending.take() {
                            let crossed = self.port.link(id).is_some_and(|k| k.crossed());
                            let (tx, crossed_late) = tokio::sync::oneshot::channel();
                            l.crossed_late = Some(tx);
                            let _ = reply.send(Ok(Outgoing {
                                stream,
                                crossed,
                                crossed_late,
                            }));
                        }
                    }
                    Event::CrossedLate => {
                        tracing::info!(port = %self.name, "the far end asked for our link too, after it was up");
                        if let Some(tx) = l.crossed_late.take() {
                            let _ = tx.send(());
                        }
                    }
                    Event::Data(d) => {
                        let hold = l.to_user.push(&d);
                        match self.port.link_mut(id) {
                            Some(link) if hold => link.set_busy(now, true),
                            _ => {}
                        }
                    }
                    Event::Reset => self.on_reset(id),
                    Event::Disconnected { reason } => {
                        match self.port.link(id) {
                            Some(link) => log_link_down(&self.name, reason, link),
                            None => tracing::info!(port = %self.name, ?reason, "link down"),
                        }
                        l.gone = true;
                        if let Some((_, reply)) = l.pending.take() {
                            let why = match reason {
                                DisconnectReason::Refused => "refused (DM)".to_string(),
                                DisconnectReason::Timeout => "no answer".to_string(),
                                other => format!("{other:?}"),
                            };
                            let _ = reply.send(Err(ConnectError::Failed(why)));
                        }
                    }
                    _ => {}
                }
            }
            PortEvent::Ui(f) => {
                tracing::debug!(port = %self.name, from = %f.address.src, to = %f.address.dest, pid = ?f.pid, "UI frame");
                self.netrom_ui(&f);
                self.ip_ui(&f);
            }
            _ => {}
        }
    }

    /// A link that had carried data was re-established. A station that called us and calls
    /// again after losing the link (its retries ran out while ours did not), or a station we
    /// called that calls us (it restarted: its SABM on our link), starts a new session: the
    /// old one gets end-of-file, and the link is handed over afresh as an incoming
    /// connection. Otherwise the old session would take the new caller's first lines as the
    /// middle of the old conversation, or both would wait for the other (a forwarding call
    /// waiting for a SID).
    fn on_reset(&mut self, id: LinkId) {
        let link = self.port.link(id);
        let calls = link.map(|l| (l.local(), l.remote()));
        let by_peer = link.is_some_and(|l| l.reset_by_peer());
        match (
            self.links.get(&id).is_some_and(|l| l.incoming) || by_peer,
            &self.on_incoming,
            calls,
        ) {
            (true, Some(f), Some((_, remote))) => {
                tracing::warn!(port = %self.name, %remote, "link reset by the far end: a new session starts");
                let (mut l, theirs) = LinkIo::new();
                l.incoming = true;
                // Dropping the old stream ends the old session.
                self.links.insert(id, l);
                f(theirs, self.caller(remote));
            }
            _ => {
                tracing::warn!(port = %self.name, "link reset: data in flight may be lost or repeated")
            }
        }
    }

    /// Hands the frames read from the device to the link layer, noting who was heard.
    fn take_frames(&mut self, now: std::time::Instant) {
        let unix = clock::unix_now();
        // Our own call, any SSID, is never "heard": a digipeater (JNOS with `ax25 digipeat
        // on`) repeats our frames back to us.
        let mycall = self.mycall;
        let ours = |c: &Callsign| mycall.is_some_and(|m| m.base() == c.base());
        for f in self.frames.drain(..) {
            self.bytes.received(f.len());
            self.health.frame_in();
            match Address::parse(&f) {
                Ok((a, _)) if !ours(&a.src) => heard(&self.heard, a.src, unix),
                _ => {}
            }
            self.port.handle(now, &f);
        }
    }

    /// Moves bytes between the device, the port and the links' streams; `Ready` when anything
    /// happened (the caller then settles the port and comes back).
    fn poll_io(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let now = clock::now();
        let mut progress = self.poll_device(cx);
        self.take_frames(now);
        let mut buf = [0u8; phy::READ_BUF];
        let mut remove = Vec::new();
        let ids: Vec<LinkId> = self.links.keys().copied().collect();
        for id in ids {
            progress |= self.poll_link(cx, now, id, &mut buf);
            if self
                .links
                .get(&id)
                .is_some_and(|l| l.gone && l.to_user.flushed())
            {
                remove.push(id);
            }
        }
        for id in remove {
            self.links.remove(&id);
            progress = true;
        }
        if progress {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// The device: opens it, waits out the back-off, writes queued frames and reads what came;
    /// a failure closes it and schedules the next try. True when anything happened.
    fn poll_device(&mut self, cx: &mut Context<'_>) -> bool {
        let mut progress = false;
        let mut down: Option<String> = None;
        match &mut self.dev {
            DevState::Opening(f) => {
                if let Poll::Ready(r) = f.as_mut().poll(cx) {
                    progress = true;
                    match r {
                        Ok(d) => {
                            tracing::info!(port = %self.name, "device open");
                            self.health.up(clock::unix_now());
                            self.dev = DevState::Up(d, clock::now());
                            for bytes in std::mem::take(&mut self.held) {
                                self.write_to_device(&bytes);
                            }
                        }
                        Err(e) => down = Some(format!("cannot open: {e}")),
                    }
                }
            }
            // The timer reopens it (`handle_timeout`).
            DevState::Waiting(_) => {}
            DevState::Up(d, _) => {
                if d.has_output() {
                    if let Poll::Ready(Err(e)) = d.poll_send(cx) {
                        down = Some(format!("write: {e}"));
                    }
                }
                if down.is_none() {
                    match d.poll_recv(cx, &mut self.rx, &mut self.frames) {
                        Poll::Ready(Ok(true)) => progress = true,
                        Poll::Ready(Ok(false)) => down = Some("the far end hung up".into()),
                        Poll::Ready(Err(e)) => down = Some(format!("read: {e}")),
                        Poll::Pending => {}
                    }
                }
            }
        }
        if let Some(why) = down {
            self.device_down(&why);
            progress = true;
        }
        progress
    }

    fn device_down(&mut self, why: &str) {
        if let DevState::Up(_, since) = &self.dev {
            if clock::now().saturating_duration_since(*since) > Duration::from_secs(30) {
                self.backoff = MIN_BACKOFF;
            }
        }
        // Frames held for an opening that failed are lost, as on a dead device.
        self.dropped += self.held.len() as u64;
        self.held.clear();
        tracing::warn!(port = %self.name, reason = %why, retry_in = ?self.backoff, "device down");
        let unix = clock::unix_now();
        self.health
            .down(unix, why, unix + self.backoff.as_secs() as i64);
        self.dev = DevState::Waiting(clock::now() + self.backoff);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// One link's stream: the session's bytes to the link while it can take them, the link's
    /// data to the session, and the busy condition between. True when anything moved.
    fn poll_link(
        &mut self,
        cx: &mut Context<'_>,
        now: std::time::Instant,
        id: LinkId,
        buf: &mut [u8],
    ) -> bool {
        let Some(l) = self.links.get_mut(&id) else {
            return false;
        };
        if abandoned(l, self.port.link_mut(id), now, cx) {
            return true;
        }
        let mut progress = false;
        let link = self.port.link_mut(id);
        if link.is_none() && !l.gone {
            // The port dropped the link without a word to us: treat it as down.
            l.gone = true;
            if let Some((_, reply)) = l.pending.take() {
                let _ = reply.send(Err(ConnectError::Failed("the link closed".into())));
            }
        }
        if let Some(link) = link {
            progress |= session_to_link(cx, now, l, link, buf);
        }
        let flush = l.to_user.poll_write(&mut l.io, cx);
        progress |= flush.moved || flush.release;
        if let Some(link) = self.port.link_mut(id) {
            if flush.gone {
                link.disconnect(now);
            }
            if flush.release {
                link.set_busy(now, false);
            }
        }
        progress
    }

    /// Shutdown: disconnect every link and give the DISCs a moment to leave.
    async fn stop(&mut self) {
        let now = clock::now();
        // The NET/ROM links too: a neighbour that kept one would send its next datagrams on a
        // link this port no longer has after a restart.
        let ids: Vec<LinkId> = self
            .links
            .keys()
            .copied()
            .chain(self.netrom_links())
            .collect();
        for id in ids {
            if let Some(link) = self.port.link_mut(id) {
                link.abort(now);
            }
        }
        self.drain(now);
        if let DevState::Up(d, _) = &mut self.dev {
            let _ = tokio::time::timeout(FLUSH_AT_STOP, poll_fn(|cx| d.poll_send(cx))).await;
        }
    }
}

#[cfg(test)]
mod tests {
    //! The port task over AXUDP on loopback against a peer `qtc_ax25::Port` driven here.
    use super::*;
    use crate::config::radio::RadioPort;
    use std::sync::Mutex;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::UdpSocket;

    struct Peer {
        port: qtc_ax25::Port,
        sock: UdpSocket,
        to: std::net::SocketAddr,
        data: Vec<u8>,
        saw_busy: bool,
        connected: bool,
        /// Data still to hand to the peer's link as its send buffer allows.
        outbox: Vec<u8>,
    }

    impl Peer {
        /// Runs the peer for `d`, moving frames and timers.
        async fn run(&mut self, d: Duration) {
            let end = clock::now() + d;
            let mut buf = vec![0u8; 4096];
            loop {
                let now = clock::now();
                if let Some(id) = self.port.find(call("N0ZZZ"), call("N0BBB")) {
                    if let Some(l) = self.port.link_mut(id) {
                        let n = l.send_capacity().min(self.outbox.len());
                        if n > 0 && l.send(now, &self.outbox[..n]).is_ok() {
                            self.outbox.drain(..n);
                        }
                    }
                }
                while let Some(f) = self.port.poll_transmit(now) {
                    let mut b = f.to_bytes();
                    qtc_ax25::wire::append_fcs(&mut b);
                    let _ = self.sock.send_to(&b, self.to).await;
                }
                while let Some(ev) = self.port.poll_event() {
                    match ev {
                        PortEvent::Link {
                            event: Event::Data(d),
                            ..
                        } => self.data.extend_from_slice(&d),
                        PortEvent::Link {
                            event: Event::Connected { .. },
                            ..
                        } => self.connected = true,
                        _ => {}
                    }
                }
                let wake = self.port.poll_timeout().map_or(end, |t| t.min(end));
                if clock::now() >= end {
                    return;
                }
                tokio::select! {
                    r = self.sock.recv(&mut buf) => {
                        if let Ok(n) = r {
                            if let Ok(f) = qtc_ax25::wire::check_fcs(&buf[..n]) {
                                // An RNR from the BBS side: it has told us to wait.
                                if f.get(14) == Some(&0x05) {
                                    self.saw_busy = true;
                                }
                                self.port.handle(clock::now(), f);
                            }
                        }
                    }
                    () = tokio::time::sleep_until(wake.into()) => self.port.handle_timeout(clock::now()),
                }
            }
        }
    }

    #[test]
    fn a_users_call_gets_another_ssid_only_when_it_is_taken() {
        let none = |_: &Callsign| false;
        assert_eq!(pick_call(call("N0USR"), none), call("N0USR"));
        // Their own station is on the air (heard), or another link has the call.
        let own = |c: &Callsign| *c == call("N0USR");
        assert_eq!(pick_call(call("N0USR"), own), call("N0USR-15"));
        let own3 = |c: &Callsign| *c == call("N0USR-3");
        assert_eq!(pick_call(call("N0USR-3"), own3), call("N0USR-12"));
        let busy = |c: &Callsign| c.ssid() >= 14 || c.ssid() == 0;
        assert_eq!(pick_call(call("N0USR"), busy), call("N0USR-13"));
    }

    fn call(s: &str) -> Callsign {
        s.parse().unwrap()
    }

    /// A port task for N0BBB on `a`, with its peer N0ZZZ on `b`; incoming streams are handed
    /// to the test through `streams`.
    async fn setup() -> (
        Peer,
        Arc<Mutex<Vec<DuplexStream>>>,
        watch::Sender<bool>,
        Arc<tokio::sync::Notify>,
    ) {
        let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        drop(a);
        let mut link = qtc_ax25::Config::default();
        link.send_buffer = 8 * 1024;
        link.receive_buffer = 8 * 1024;
        let rp = RadioPort {
            name: "t".into(),
            kind: Kind::check(
                "axudp",
                &phy::Keys {
                    listen: a_addr.to_string(),
                    peers: vec![phy::PeerKeys {
                        callsign: "N0ZZZ".into(),
                        address: b_addr.to_string(),
                    }],
                    ..Default::default()
                },
            )
            .unwrap(),
            kiss_port: 0,
            kiss: Default::default(),
            link: link.clone(),
            max_links: 4,
            beacon: None,
            netrom_quality: 0,
            ip: None,
            modem_baud_given: true,
        };
        let health = Arc::<crate::radio::PortHealth>::default();
        let streams = Arc::new(Mutex::new(Vec::new()));
        let notify = Arc::new(tokio::sync::Notify::new());
        let (s2, n2) = (streams.clone(), notify.clone());
        let on: Incoming = Arc::new(move |s, _| {
            s2.lock().unwrap().push(s);
            n2.notify_one();
        });
        let (_tx, rx) = mpsc::channel(1);
        let (stop_tx, stop_rx) = watch::channel(false);
        tokio::spawn(run_port(
            PortSetup {
                port: rp,
                locals: vec![call("N0BBB")],
                accept: true,
                on_incoming: Some(on),
                heard: Heard::default(),
                health: health.clone(),
                metrics: Default::default(),
                netrom: None,
                ip: None,
            },
            rx,
            stop_rx,
        ));
        std::mem::forget(_tx);
        let mut port = qtc_ax25::Port::new(link);
        port.add_local(call("N0ZZZ"));
        // The task has bound its socket before the peer calls.
        health.opened().await;
        port.connect(clock::now(), call("N0ZZZ"), call("N0BBB"), Path::default())
            .unwrap();
        let peer = Peer {
            port,
            sock: b,
            to: a_addr,
            data: Vec::new(),
            saw_busy: false,
            connected: false,
            outbox: Vec::new(),
        };
        (peer, streams, stop_tx, notify)
    }

    // On paused time: the clock jumps to the next timer only once every task waits, so the
    // frames on loopback have always arrived first, and a wait for "a while" is a wait until
    // everything has settled.
    #[tokio::test(start_paused = true)]
    async fn a_session_that_stops_reading_sets_the_link_busy_and_loses_nothing() {
        let (mut peer, streams, _stop, _n) = setup().await;
        peer.run(Duration::from_millis(500)).await;
        assert!(peer.connected);
        let id = peer.port.find(call("N0ZZZ"), call("N0BBB")).unwrap();
        let sent: Vec<u8> = (0..48 * 1024).map(|i| (i % 251) as u8).collect();
        peer.outbox = sent.clone();
        // Nobody reads the session side: the BBS side must say RNR.
        peer.run(Duration::from_secs(2)).await;
        assert!(peer.saw_busy, "no RNR while the session did not read");
        assert!(
            !peer.outbox.is_empty() || !peer.port.link(id).unwrap().is_idle(),
            "everything went through regardless"
        );
        // Now the session reads: everything arrives, once, in order.
        let mut s = streams.lock().unwrap().pop().unwrap();
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while got.len() < 48 * 1024 {
                let n = s.read(&mut buf).await.unwrap();
                assert!(n > 0);
                got.extend_from_slice(&buf[..n]);
            }
            got
        });
        let deadline = clock::now() + Duration::from_secs(30);
        while !reader.is_finished() && clock::now() < deadline {
            peer.run(Duration::from_millis(200)).await;
        }
        assert!(reader.is_finished(), "the session never got everything");
        let got = reader.await.unwrap();
        assert_eq!(got, sent);
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_writing_faster_than_the_air_is_held_back() {
        let (mut peer, streams, _stop, _n) = setup().await;
        peer.run(Duration::from_millis(500)).await;
        assert!(peer.connected);
        let mut s = streams.lock().unwrap().pop().unwrap();
        // The peer stops answering: nothing is acknowledged.
        let written = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let w = written.clone();
        let writer = tokio::spawn(async move {
            let chunk = [b'x'; 1024];
            for _ in 0..1024 {
                if s.write_all(&chunk).await.is_err() {
                    return;
                }
                w.fetch_add(chunk.len(), std::sync::atomic::Ordering::SeqCst);
            }
        });
        // Until everything has settled (paused time): the writer waits on the full stream.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let n = written.load(std::sync::atomic::Ordering::SeqCst);
        // At most: the link's send buffer, the duplex buffer, a window of frames in flight
        // and one read's worth (4 KiB) in hand.
        assert!(
            (DUPLEX_BUF..=8 * 1024 + DUPLEX_BUF + 32 * 256 + 4096).contains(&n),
            "{n} bytes accepted"
        );
        assert!(!writer.is_finished());
        // The peer answers again: the rest flows.
        let deadline = clock::now() + Duration::from_secs(60);
        while !writer.is_finished() && clock::now() < deadline {
            peer.run(Duration::from_millis(200)).await;
        }
        assert!(
            writer.is_finished(),
            "only {} bytes got through",
            peer.data.len()
        );
        peer.run(Duration::from_millis(500)).await;
        assert_eq!(peer.data.len(), 1024 * 1024);
    }
}
