//! One radio port: routes received frames to [`Link`]s by (local, remote) callsign pair, accepts
//! incoming connects for the local callsigns (the BBS), and answers DM to frames for no link.
//!
//! This plays the role of quinn's `Endpoint`. The port owns its links; reach one with
//! [`Port::link_mut`].
//!
//! # Driving a port
//!
//! 1. [`Port::handle`] for each received AX.25 frame (KISS data payload, no FCS), and
//!    [`Port::handle_timeout`] when [`Port::poll_timeout`] has passed.
//! 2. Commands: [`Port::connect`], or [`Port::link_mut`] and the [`Link`] methods.
//! 3. Drain [`Port::poll_transmit`], then [`Port::poll_event`], then read [`Port::poll_timeout`].
//!
//! Frames to other stations are ignored: the port never sends DM to a stranger that is not
//! talking to one of our callsigns (spec §5), and frames still on their way through
//! digipeaters (an H bit clear) are not ours yet.
//!
//! The port follows its modem's transmit queue ([`TxQueue`], from [`Config::air`]): every frame
//! [`Port::poll_transmit`] hands out is counted in, and its link told when it will have left
//! ([`Link::departs`]); every frame heard, for us or not, tells the model the channel was busy.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Instant;

use crate::air::TxQueue;
use crate::link::{Config, Event, Link, LinkStats};
use crate::wire::{Address, CommandResponse, Control, Frame, Modulo, Path, Unnumbered};
use crate::Error;
use qtc_callsign::Callsign;

/// Default limit on simultaneous links per port.
pub const DEFAULT_MAX_LINKS: usize = 32;
/// Most port-level frames (DMs) queued; more are dropped.
pub const MAX_PORT_TX_QUEUE: usize = 64;
/// Most port-level events queued; more UI frames are dropped.
pub const MAX_PORT_EVENTS: usize = 256;

/// Handle of a link owned by a [`Port`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkId(u64);

/// Something that happened on the port.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PortEvent {
    /// A station connected to one of our callsigns; the link is already up (UA sent).
    Incoming {
        /// The new link.
        id: LinkId,
        /// Which of our callsigns was called.
        local: Callsign,
        /// Who called.
        remote: Callsign,
    },
    /// An event from one link. After `Event::Disconnected` the link is dropped.
    Link {
        /// Which link.
        id: LinkId,
        /// What happened.
        event: Event,
    },
    /// A UI frame addressed to one of our callsigns or to a UI destination
    /// ([`Port::add_ui_destination`]).
    Ui(Frame),
}

/// A radio port with its links.
#[derive(Debug)]
pub struct Port {
    config: Config,
    max_links: usize,
    locals: BTreeSet<Callsign>,
    /// Destinations whose UI frames we take (`NODES`), without answering to them.
    ui_destinations: BTreeSet<Callsign>,
    links: BTreeMap<LinkId, Link>,
    by_pair: BTreeMap<(Callsign, Callsign), LinkId>,
    next_id: u64,
    /// Round-robin start for `poll_transmit`.
    cursor: u64,
    tx: VecDeque<Frame>,
    events: VecDeque<PortEvent>,
    accept: bool,
    /// Counters of the links already removed.
    gone: LinkStats,
    /// The modem's transmit queue.
    air: TxQueue,
}

impl Port {
    /// A port whose links use `config`.
    #[must_use]
    pub fn new(config: Config) -> Port {
        let air = TxQueue::new(config.air);
        Port {
            config,
            max_links: DEFAULT_MAX_LINKS,
            locals: BTreeSet::new(),
            ui_destinations: BTreeSet::new(),
            links: BTreeMap::new(),
            by_pair: BTreeMap::new(),
            next_id: 0,
            cursor: 0,
            tx: VecDeque::new(),
            events: VecDeque::new(),
            accept: true,
            gone: LinkStats::default(),
            air,
        }
    }

    /// Answer to a callsign (exact SSID): accept connects and receive UI frames for it.
    pub fn add_local(&mut self, call: Callsign) {
        self.locals.insert(call);
    }

    /// Take UI frames sent to `dest` (a broadcast address such as NET/ROM's `NODES`) as
    /// [`PortEvent::Ui`]. Nothing else addressed to it is answered: it is no station of ours.
    pub fn add_ui_destination(&mut self, dest: Callsign) {
        self.ui_destinations.insert(dest);
    }

    /// Whether the port answers to `call` (exact SSID).
    #[must_use]
    pub fn is_local(&self, call: &Callsign) -> bool {
        self.locals.contains(call)
    }

    /// Limit the number of links; incoming connects beyond it get DM.
    pub fn set_max_links(&mut self, n: usize) {
        self.max_links = n;
    }

    /// Whether incoming connects are accepted (when not, they get DM).
    pub fn set_accept(&mut self, accept: bool) {
        self.accept = accept;
    }

    /// The counters of every link this port has had, live or gone.
    #[must_use]
    pub fn stats(&self) -> LinkStats {
        let mut total = self.gone;
        for l in self.links.values() {
            total.add(&l.stats());
        }
        total
    }

    /// Number of links.
    #[must_use]
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// A link by id.
    #[must_use]
    pub fn link(&self, id: LinkId) -> Option<&Link> {
        self.links.get(&id)
    }

    /// A link by id, to call its commands.
    pub fn link_mut(&mut self, id: LinkId) -> Option<&mut Link> {
        self.links.get_mut(&id)
    }

    /// The link between `local` and `remote`, if any.
    #[must_use]
    pub fn find(&self, local: Callsign, remote: Callsign) -> Option<LinkId> {
        self.by_pair.get(&(local, remote)).copied()
    }

    /// Open a link from `local` to `remote` via `path` and send the connect request.
    pub fn connect(
        &mut self,
        now: Instant,
        local: Callsign,
        remote: Callsign,
        path: Path,
    ) -> Result<LinkId, Error> {
        self.collect_closed();
        if self.by_pair.contains_key(&(local, remote)) {
            return Err(Error::LinkExists);
        }
        if self.links.len() >= self.max_links {
            return Err(Error::TooManyLinks);
        }
        let id = self.insert(Link::new(self.config.clone(), local, remote, path));
        if let Some(link) = self.links.get_mut(&id) {
            link.connect(now)?;
        }
        Ok(id)
    }

    fn insert(&mut self, link: Link) -> LinkId {
        let id = LinkId(self.next_id);
        self.next_id += 1;
        self.by_pair.insert((link.local(), link.remote()), id);
        self.links.insert(id, link);
        id
    }

    fn push_tx(&mut self, f: Frame) {
        if self.tx.len() < MAX_PORT_TX_QUEUE {
            self.tx.push_back(f);
        } else {
            tracing::debug!("port transmit queue full, frame dropped");
        }
    }

    fn dm(&mut self, to: &Address, pf: bool) {
        let f = Frame::unnumbered(to.reply(CommandResponse::Response), Unnumbered::Dm, pf);
        self.push_tx(f);
    }

    /// Handle one received AX.25 frame (no FCS): any frame heard on the channel, ours or not.
    pub fn handle(&mut self, now: Instant, bytes: &[u8]) {
        self.channel_heard(now, bytes);
        let Ok((addr, _)) = Address::parse(bytes) else {
            tracing::trace!("unparsable address field");
            return;
        };
        if !addr.path.all_repeated() {
            return;
        }
        let key = (addr.dest, addr.src);
        // A link we opened from a callsign that is not one of ours (a user connected out
        // through the node under their own call) gets its frames; nothing else for that call.
        let ours = self.locals.contains(&addr.dest);
        if !ours && !self.by_pair.contains_key(&key) {
            if self.ui_destinations.contains(&addr.dest) {
                self.broadcast_ui(bytes);
            }
            return;
        }
        if let Some(&id) = self.by_pair.get(&key) {
            let closed = self.links.get(&id).is_none_or(Link::is_closed);
            if !closed {
                if let Some(link) = self.links.get_mut(&id) {
                    if let Err(e) = link.handle_bytes(now, bytes) {
                        tracing::debug!(error = %e, remote = %addr.src, "bad frame");
                    }
                }
                // A UI frame is no part of the link (the link answers only its P bit): its
                // information goes up as from a station we have no link with. JNOS sends some
                // IP datagrams in UI frames beside its virtual-circuit link.
                self.broadcast_ui(bytes);
                return;
            }
            self.remove(id);
            self.by_pair.remove(&key);
            if !ours {
                return;
            }
        }
        let Ok(frame) =
            Frame::parse(bytes, Modulo::Mod8).or_else(|_| Frame::parse(bytes, Modulo::Mod128))
        else {
            tracing::debug!(remote = %addr.src, "bad frame for no link");
            return;
        };
        let cmd = addr.cr != CommandResponse::Response;
        match frame.control {
            Control::U {
                kind: Unnumbered::Ui,
                pf,
            } => {
                if cmd && pf {
                    self.dm(&addr, true);
                }
                if self.events.len() < MAX_PORT_EVENTS {
                    self.events.push_back(PortEvent::Ui(frame));
                }
            }
            Control::U {
                kind: Unnumbered::Sabm | Unnumbered::Sabme,
                pf,
            } => {
                if !self.accept || self.links.len() >= self.max_links {
                    self.dm(&addr, pf);
                    return;
                }
                let link = Link::new(
                    self.config.clone(),
                    addr.dest,
                    addr.src,
                    addr.path.reversed(),
                );
                let id = self.insert(link);
                self.events.push_back(PortEvent::Incoming {
                    id,
                    local: addr.dest,
                    remote: addr.src,
                });
                if let Some(link) = self.links.get_mut(&id) {
                    link.handle_frame(now, frame);
                }
            }
            // Responses to a link we do not have: nothing to say.
            Control::U {
                kind: Unnumbered::Dm | Unnumbered::Ua | Unnumbered::Frmr,
                ..
            } => {}
            Control::I { poll, .. } => self.dm(&addr, poll),
            Control::S { pf, .. } | Control::U { pf, .. } => {
                if cmd {
                    self.dm(&addr, pf);
                }
            }
        }
    }

    /// A frame heard on the channel kept it busy for its air time (and for what of its
    /// transmission we did not hear): the modem's queue waited, and so did every link.
    fn channel_heard(&mut self, now: Instant, bytes: &[u8]) {
        let mut busy = self.config.air.frame_time(bytes.len());
        if let Some(link) = Address::parse(bytes)
            .ok()
            .and_then(|(a, _)| self.by_pair.get(&(a.dest, a.src)))
            .and_then(|id| self.links.get(id))
        {
            busy += link.unheard_before(bytes);
        }
        let moved = self.air.heard(now, busy);
        for link in self.links.values_mut() {
            if let Some((after, by)) = moved {
                link.delay_departures(after, by);
            }
            link.channel_busy(now, busy);
        }
    }

    /// A UI frame to one of the UI destinations, or from a station we have a link with: passed
    /// up as it is, never answered (here).
    fn broadcast_ui(&mut self, bytes: &[u8]) {
        let Ok(f) = Frame::parse(bytes, Modulo::Mod8) else {
            return;
        };
        let ui = matches!(
            f.control,
            Control::U {
                kind: Unnumbered::Ui,
                ..
            }
        );
        if ui && self.events.len() < MAX_PORT_EVENTS {
            self.events.push_back(PortEvent::Ui(f));
        }
    }

    /// Run expired timers on every link.
    pub fn handle_timeout(&mut self, now: Instant) {
        for link in self.links.values_mut() {
            if link.poll_timeout().is_some_and(|t| t <= now) {
                link.handle_timeout(now);
            }
        }
    }

    /// The next frame to transmit: port-level frames first, then the links in turn.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Frame> {
        if let Some(f) = self.tx.pop_front() {
            self.air.queue(now, f.buffer_len());
            return Some(f);
        }
        let start = LinkId(self.cursor);
        let ids: Vec<LinkId> = self
            .links
            .range(start..)
            .chain(self.links.range(..start))
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            let Some(link) = self.links.get_mut(&id) else {
                continue;
            };
            if let Some(f) = link.poll_transmit(now) {
                link.departs(self.air.queue(now, f.buffer_len()));
                self.cursor = id.0 + 1;
                return Some(f);
            }
        }
        None
    }

    /// A frame the driver sends itself (a beacon) occupies the modem too.
    pub fn sent_other(&mut self, now: Instant, len: usize) {
        self.air.queue(now, len);
    }

    /// The next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<PortEvent> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        for (&id, link) in &mut self.links {
            if let Some(event) = link.poll_event() {
                return Some(PortEvent::Link { id, event });
            }
        }
        self.collect_closed();
        None
    }

    /// The earliest deadline of any link.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.links.values().filter_map(Link::poll_timeout).min()
    }

    fn collect_closed(&mut self) {
        let closed: Vec<LinkId> = self
            .links
            .iter()
            .filter(|(_, l)| l.is_closed())
            .map(|(&id, _)| id)
            .collect();
        for id in closed {
            self.remove(id);
        }
    }

    fn remove(&mut self, id: LinkId) {
        if let Some(l) = self.links.remove(&id) {
            self.by_pair.remove(&(l.local(), l.remote()));
            self.gone.add(&l.stats());
        }
    }
}
