//! The node: NODES broadcasts in and out, the tables, layer-3 routing and the circuits that
//! end here. It plays the role of quinn's `Endpoint` for NET/ROM.

mod transport;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use qtc_callsign::Callsign;

use crate::circuit::{
    Circuit, CircuitConfig, CircuitEvent, CircuitState, CircuitStats, CloseReason,
};
use crate::schedule::Schedule;
use crate::table::{Change, Loss, Neighbour, NodeEntry, TableConfig, Tables, Via};
use crate::wire::{Alias, NetHeader, Nodes, Transport, MAX_WINDOW, NET_HEADER_LEN};
use crate::Error;

mod ip;
pub use ip::NETROM_IP;

/// Frames queued for the ports; beyond this, transit datagrams are dropped.
pub const MAX_TX_QUEUE: usize = 256;
/// Table changes waiting for [`Node::poll_event`]; beyond this the oldest are dropped.
pub const MAX_TABLE_EVENTS: usize = 1024;
/// Circuits at once, at most (indexes are one byte; 0 is not used).
pub const MAX_CIRCUITS: usize = 254;

/// A route the sysop set, that never ages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedRoute {
    /// The port the neighbour is on.
    pub port: usize,
    /// The neighbour.
    pub neighbour: Callsign,
    /// The destination (the neighbour itself to fix its quality).
    pub node: Callsign,
    /// The destination's alias.
    pub alias: Alias,
    /// The route's quality.
    pub quality: u8,
}

/// A node's settings. [`Config::new`] gives the defaults docs/netrom.md lists.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// Our node callsign: the source of broadcasts and the address of our circuits.
    pub call: Callsign,
    /// Our alias.
    pub alias: Alias,
    /// How often we broadcast (and age the routes).
    pub broadcast: Duration,
    /// Each port's NET/ROM quality, by port index; 0 = no NET/ROM on that port.
    pub ports: Vec<u8>,
    /// Routes below this quality are neither learned nor broadcast.
    pub min_quality: u8,
    /// A learned route's obsolescence count.
    pub obsolescence: u8,
    /// Routes whose count fell below this are not broadcast.
    pub obsolescence_min: u8,
    /// Most nodes in the table.
    pub max_nodes: usize,
    /// Most neighbours.
    pub max_neighbours: usize,
    /// Most circuits at once (up to [`MAX_CIRCUITS`]).
    pub max_circuits: usize,
    /// Most circuits other nodes open to us from one originating node.
    pub max_circuits_per_node: usize,
    /// Most circuits other nodes open to us through one neighbour.
    pub max_circuits_per_neighbour: usize,
    /// The station's other callsigns (its BBS's): never learned as nodes, never taken as a
    /// neighbour's.
    pub own_calls: Vec<Callsign>,
    /// Time to live of the datagrams we originate.
    pub ttl: u8,
    /// The circuits' parameters.
    pub circuit: CircuitConfig,
    /// The sysop's locked routes.
    pub locked: Vec<LockedRoute>,
    /// The id every circuit slot starts at. JNOS starts at 0 at each boot, so a node that
    /// restarts names its first circuits as before, and a neighbour still holding one of those
    /// acknowledges the new request on the old circuit; the daemon picks this afresh per start.
    pub first_circuit_id: u8,
    /// Seeds the broadcasts' jitter; the daemon picks it afresh per start, so that nodes
    /// started together do not broadcast in step.
    pub seed: u64,
}

impl Config {
    /// Defaults for a node called `call` with `alias`.
    #[must_use]
    pub fn new(call: Callsign, alias: Alias) -> Config {
        Config {
            call,
            alias,
            broadcast: Duration::from_secs(30 * 60),
            ports: Vec::new(),
            min_quality: 10,
            obsolescence: 6,
            obsolescence_min: 5,
            max_nodes: 500,
            max_neighbours: 32,
            max_circuits: 32,
            max_circuits_per_node: 8,
            max_circuits_per_neighbour: 16,
            own_calls: Vec::new(),
            ttl: 16,
            circuit: CircuitConfig::default(),
            locked: Vec::new(),
            first_circuit_id: 0,
            seed: 0,
        }
    }
}

/// A circuit's handle: its index and id at this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CircuitId {
    pub(crate) index: u8,
    pub(crate) id: u8,
}

impl std::fmt::Display for CircuitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.id)
    }
}

/// A frame for a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transmit {
    /// A NODES broadcast: a UI frame from our node call to `NODES`, PID 0xCF.
    Nodes {
        /// Which port.
        port: usize,
        /// The information field.
        info: Vec<u8>,
    },
    /// A datagram: one I frame with PID 0xCF on the AX.25 link from our node call to
    /// `neighbour` (opened if there is none).
    Datagram {
        /// Which port.
        port: usize,
        /// The next hop.
        neighbour: Callsign,
        /// Network header and transport frame.
        data: Vec<u8>,
    },
}

/// Something the daemon should know.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A user at another node opened a circuit to us; it is connected.
    Incoming {
        /// The circuit.
        circuit: CircuitId,
        /// The user's callsign.
        user: Callsign,
        /// The node they are on, as the connect request says.
        node: Callsign,
        /// The node the request came from (its layer-3 origin).
        origin: Callsign,
        /// The neighbour it came through.
        via: Via,
    },
    /// A circuit we opened is up.
    Connected {
        /// The circuit.
        circuit: CircuitId,
    },
    /// Data in order on a circuit.
    Data {
        /// The circuit.
        circuit: CircuitId,
        /// The bytes.
        data: Vec<u8>,
    },
    /// A circuit is over; its id is free again.
    Closed {
        /// The circuit.
        circuit: CircuitId,
        /// Why.
        reason: CloseReason,
    },
    /// The tables changed.
    Table(Change),
    /// An IP datagram for us from node `origin` (node/ip.rs).
    Ip {
        /// The node it came from.
        origin: Callsign,
        /// The datagram.
        datagram: Vec<u8>,
    },
}

/// A circuit as `ctl nodes` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CircuitInfo {
    /// Its handle.
    pub id: CircuitId,
    /// The far end opened it.
    pub incoming: bool,
    /// The user (theirs if incoming, ours if not).
    pub user: Callsign,
    /// The node at the other end.
    pub peer_node: Callsign,
    /// The neighbour it runs through (an outgoing circuit's, once answered).
    pub via: Option<Via>,
    /// Where it is.
    pub state: CircuitState,
    /// Its window.
    pub window: u8,
    /// Bytes queued or unacknowledged.
    pub unsent: usize,
    /// Its counters.
    pub stats: CircuitStats,
}

/// Counters for the node's routing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// NODES broadcasts heard.
    pub broadcasts_heard: u64,
    /// Datagrams received from neighbours.
    pub datagrams_in: u64,
    /// Datagrams passed on for other nodes.
    pub routed: u64,
    /// Datagrams dropped: no route, TTL spent, or the queue full.
    pub dropped: u64,
    /// Circuits opened, either way.
    pub circuits: u64,
    /// Counters of every circuit, open or closed.
    pub transport: CircuitStats,
}

/// A NET/ROM node.
#[derive(Debug)]
pub struct Node {
    cfg: Config,
    tables: Tables,
    circuits: Vec<Option<Circuit>>,
    /// The id the next circuit in each slot gets.
    ids: Vec<u8>,
    broadcasts: Schedule,
    /// Ports owed a broadcast now (a new neighbour or a poll), sent with the next frames.
    early: Vec<bool>,
    /// The first broadcast (with its poll) has gone.
    polled: bool,
    tx: VecDeque<Transmit>,
    events: VecDeque<Event>,
    cursor: usize,
    stats: NodeStats,
}

impl Node {
    /// A node that broadcasts first within a tenth of its interval after `now`.
    #[must_use]
    pub fn new(mut cfg: Config, now: Instant) -> Node {
        cfg.max_circuits = cfg.max_circuits.clamp(1, MAX_CIRCUITS);
        cfg.circuit.window = cfg.circuit.window.clamp(1, MAX_WINDOW);
        let mut tables = Tables::new(TableConfig {
            call: cfg.call,
            own: cfg.own_calls.clone(),
            alias: cfg.alias,
            min_quality: cfg.min_quality,
            obsolescence: cfg.obsolescence,
            obsolescence_min: cfg.obsolescence_min,
            max_nodes: cfg.max_nodes,
            max_neighbours: cfg.max_neighbours,
        });
        for l in &cfg.locked {
            let via = Via {
                port: l.port,
                call: l.neighbour,
            };
            tables.lock(l.node, l.alias, via, l.quality);
        }
        let on_air = cfg.ports.iter().any(|&q| q > 0);
        let mut node = Node {
            circuits: (0..cfg.max_circuits).map(|_| None).collect(),
            ids: vec![cfg.first_circuit_id; cfg.max_circuits],
            broadcasts: Schedule::new(cfg.broadcast, cfg.seed, now, on_air),
            early: vec![false; cfg.ports.len()],
            polled: false,
            tx: VecDeque::new(),
            events: VecDeque::new(),
            cursor: 0,
            stats: NodeStats::default(),
            tables,
            cfg,
        };
        node.flush_changes();
        node
    }

    // ------------------------------------------------------------------ views

    /// Our node callsign.
    #[must_use]
    pub fn call(&self) -> Callsign {
        self.cfg.call
    }

    /// Our alias.
    #[must_use]
    pub fn alias(&self) -> Alias {
        self.cfg.alias
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The nodes known, by callsign.
    pub fn nodes(&self) -> impl Iterator<Item = &NodeEntry> {
        self.tables.nodes()
    }

    /// The neighbours.
    pub fn neighbours(&self) -> impl Iterator<Item = &Neighbour> {
        self.tables.neighbours()
    }

    /// The node a user means by `name` (alias or callsign).
    #[must_use]
    pub fn find(&self, name: &str) -> Option<&NodeEntry> {
        self.tables.find(name)
    }

    /// Whether we have a learned or locked route to `node` through `via` (one a datagram left
    /// proves nothing: anyone can send those).
    #[must_use]
    pub fn has_route_via(&self, node: &Callsign, via: Via) -> bool {
        self.tables.has_route_via(node, via)
    }

    /// The circuits open now.
    #[must_use]
    pub fn circuits(&self) -> Vec<CircuitInfo> {
        self.circuits
            .iter()
            .flatten()
            .map(|c| CircuitInfo {
                id: CircuitId {
                    index: c.my_index,
                    id: c.my_id,
                },
                incoming: c.incoming,
                user: c.user,
                peer_node: c.peer_node,
                via: c.via,
                state: c.state(),
                window: c.window(),
                unsent: c.unsent(),
                stats: c.stats(),
            })
            .collect()
    }

    /// Routing counters, and the circuits' (closed ones included).
    #[must_use]
    pub fn stats(&self) -> NodeStats {
        let mut s = self.stats;
        for c in self.circuits.iter().flatten() {
            s.transport.add(&c.stats());
        }
        s
    }

    // ------------------------------------------------------------------ input

    /// A UI frame to `NODES` with PID 0xCF, from `from`, heard on `port`.
    pub fn handle_nodes(&mut self, now: Instant, port: usize, from: Callsign, info: &[u8]) {
        let _ = now;
        let quality = self.port_quality(port);
        if quality == 0 {
            return;
        }
        let msg = match Nodes::parse(info) {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(%from, port, error = %e, "bad NODES broadcast");
                return;
            }
        };
        self.stats.broadcasts_heard += 1;
        let answer = if msg.poll {
            true
        } else {
            self.tables.hear(Via { port, call: from }, quality, &msg)
        };
        // A new neighbour (or a poll) hears from us at once instead of at our next broadcast;
        // made when the frames are taken, so it has all that was heard meanwhile.
        if answer {
            self.early[port] = true;
        }
        self.flush_changes();
    }

    /// A datagram (PID 0xCF I frame) from neighbour `from` on `port`.
    pub fn handle_datagram(&mut self, now: Instant, port: usize, from: Callsign, bytes: &[u8]) {
        if self.port_quality(port) == 0 {
            return;
        }
        let (h, transport) = match NetHeader::parse(bytes) {
            Ok(x) => x,
            Err(e) => {
                tracing::debug!(%from, error = %e, "bad NET/ROM datagram");
                return;
            }
        };
        self.stats.datagrams_in += 1;
        if h.origin == self.cfg.call {
            return;
        }
        let via = Via { port, call: from };
        self.tables.record(h.origin, via);
        self.flush_changes();
        if h.dest == self.cfg.call {
            self.on_transport(now, via, h.origin, transport);
        } else {
            self.pass_on(h, bytes);
        }
    }

    /// The AX.25 link to the neighbour `via` failed (its connect went unanswered or was
    /// refused, or its retries ran out): every route through it goes at once, and what the
    /// circuits lost with it goes again now by the routes left; a circuit whose far node has
    /// none left is closed (unreachable).
    pub fn link_failed(&mut self, now: Instant, via: Via) {
        if self.tables.neighbours().all(|n| n.via != via) {
            return;
        }
        tracing::debug!(neighbour = %via.call, port = via.port, "NET/ROM neighbour unreachable");
        // The circuits whose frames took that link: their next frames take another.
        let through: Vec<bool> = self
            .circuits
            .iter()
            .map(|c| {
                c.as_ref().is_some_and(|c| {
                    c.via == Some(via)
                        || self
                            .tables
                            .node(&c.peer_node)
                            .and_then(NodeEntry::best)
                            .is_some_and(|r| r.via == via)
                })
            })
            .collect();
        self.tables.drop_via(via, Loss::LinkFailed);
        self.flush_changes();
        for (c, _) in self.circuits.iter_mut().zip(through).filter(|(_, t)| *t) {
            if let Some(c) = c.as_mut().filter(|c| c.state() != CircuitState::Closed) {
                if c.via == Some(via) {
                    c.via = None;
                }
                c.resend_now(now);
            }
        }
    }

    /// Runs what is due: the broadcast (with the routes' ageing) and circuits' timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.broadcasts.due(now) {
            for via in self.tables.age() {
                self.call_silent(via);
            }
            self.flush_changes();
            for port in 0..self.cfg.ports.len() {
                if self.cfg.ports[port] > 0 {
                    self.early[port] = false;
                    self.broadcast_on(port);
                    if !self.polled {
                        // Just started: neighbours that know us already would not answer our
                        // broadcast before their next one; a poll (JNOS's 0xFE) asks them now.
                        self.push_tx(Transmit::Nodes {
                            port,
                            info: Nodes::poll(self.cfg.alias),
                        });
                    }
                }
            }
            self.polled = true;
        }
        for c in self.circuits.iter_mut().flatten() {
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
        }
    }

    // ------------------------------------------------------------------ commands

    /// Opens a circuit for `user` to node `dest`.
    pub fn connect(
        &mut self,
        now: Instant,
        user: Callsign,
        dest: Callsign,
    ) -> Result<CircuitId, Error> {
        if dest == self.cfg.call {
            return Err(Error::ToSelf);
        }
        let node = self.tables.node(&dest).ok_or(Error::UnknownNode)?;
        let first_hop = node.best().ok_or(Error::NoRoute)?.via;
        let slot = self
            .circuits
            .iter()
            .position(Option::is_none)
            .ok_or(Error::TooManyCircuits)?;
        let id = self.slot_id(slot);
        let mut c = Circuit::outgoing(
            now,
            self.cfg.circuit.clone(),
            (id.index, id.id),
            dest,
            user,
            self.cfg.call,
        );
        c.via = Some(first_hop);
        tracing::debug!(circuit = %id, %user, %dest, "connecting");
        self.circuits[slot] = Some(c);
        self.stats.circuits += 1;
        Ok(id)
    }

    /// Queues data on a circuit; all or nothing.
    pub fn send(&mut self, id: CircuitId, data: &[u8]) -> Result<(), Error> {
        self.circuit_mut(id)
            .ok_or(Error::UnknownCircuit)?
            .send(data)
    }

    /// How many bytes [`Node::send`] would take now.
    #[must_use]
    pub fn send_capacity(&self, id: CircuitId) -> usize {
        self.circuit(id).map_or(0, Circuit::send_capacity)
    }

    /// Whether the circuit is connected (data flows).
    #[must_use]
    pub fn is_connected(&self, id: CircuitId) -> bool {
        self.circuit(id)
            .is_some_and(|c| c.state() == CircuitState::Connected)
    }

    /// Closes a circuit once its data is acknowledged.
    pub fn close(&mut self, now: Instant, id: CircuitId) {
        if let Some(c) = self.circuit_mut(id) {
            c.close(now);
        }
    }

    /// Closes a circuit at once (shutdown).
    pub fn abort(&mut self, id: CircuitId) {
        if let Some(c) = self.circuit_mut(id) {
            c.abort(CloseReason::Local);
        }
    }

    /// The application is (not) keeping up with a circuit's data: choke its peer (or stop).
    pub fn set_busy(&mut self, id: CircuitId, busy: bool) {
        if let Some(c) = self.circuit_mut(id) {
            c.set_busy(busy);
        }
    }

    // ------------------------------------------------------------------ output

    /// The next frame for a port.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        loop {
            if let Some(t) = self.tx.pop_front() {
                return Some(t);
            }
            if let Some(port) = self.early.iter().position(|&e| e) {
                self.early[port] = false;
                self.broadcast_on(port);
                continue;
            }
            let (peer, frame) = self.next_circuit_frame(now)?;
            let h = NetHeader {
                origin: self.cfg.call,
                dest: peer,
                ttl: self.cfg.ttl,
            };
            let data = h.datagram(&frame.to_bytes());
            self.route(peer, data);
        }
    }

    /// The next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        for c in self.circuits.iter_mut().flatten() {
            let circuit = CircuitId {
                index: c.my_index,
                id: c.my_id,
            };
            if let Some(e) = c.poll_event() {
                return Some(match e {
                    CircuitEvent::Connected => Event::Connected { circuit },
                    CircuitEvent::Data(data) => Event::Data { circuit, data },
                    CircuitEvent::Closed(reason) => Event::Closed { circuit, reason },
                });
            }
        }
        self.collect_finished();
        None
    }

    /// When the next NODES broadcast is due.
    #[must_use]
    pub fn next_broadcast(&self) -> Option<Instant> {
        self.broadcasts.next()
    }

    /// When [`Node::handle_timeout`] should run next.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.circuits
            .iter()
            .flatten()
            .filter_map(Circuit::poll_timeout)
            .chain(self.broadcasts.next())
            .min()
    }

    // ------------------------------------------------------------------ internals

    fn port_quality(&self, port: usize) -> u8 {
        self.cfg.ports.get(port).copied().unwrap_or(0)
    }

    fn push_tx(&mut self, t: Transmit) {
        if self.tx.len() < MAX_TX_QUEUE {
            self.tx.push_back(t);
        } else {
            self.stats.dropped += 1;
            tracing::debug!("NET/ROM transmit queue full, frame dropped");
        }
    }

    fn broadcast_on(&mut self, port: usize) {
        for info in Nodes::frames(self.cfg.alias, &self.tables.advertised()) {
            self.push_tx(Transmit::Nodes { port, info });
        }
    }

    /// A neighbour silent for [`crate::SILENT_AFTER`] broadcasts: a datagram to it (a protocol
    /// extension frame, which JNOS, LinBPQ and qtc drop unread) makes the port open an AX.25
    /// link to it. A neighbour that is gone does not answer, and [`Node::link_failed`] follows.
    fn call_silent(&mut self, via: Via) {
        tracing::debug!(neighbour = %via.call, "NET/ROM neighbour silent, calling it");
        let h = NetHeader {
            origin: self.cfg.call,
            dest: via.call,
            ttl: 1,
        };
        let probe = Transport::Extension {
            family: 0,
            proto: 0,
            data: Vec::new(),
        };
        self.push_tx(Transmit::Datagram {
            port: via.port,
            neighbour: via.call,
            data: h.datagram(&probe.to_bytes()),
        });
    }

    /// Table changes become events; a node whose last route went takes its circuits along.
    fn flush_changes(&mut self) {
        for ch in self.tables.take_changes() {
            if let Change::RouteLost {
                node, last: true, ..
            } = &ch
            {
                for c in self.circuits.iter_mut().flatten() {
                    if c.peer_node == *node {
                        c.abort(CloseReason::Unreachable);
                    }
                }
            }
            if self.events.len() >= MAX_TABLE_EVENTS {
                self.events.pop_front();
            }
            self.events.push_back(Event::Table(ch));
        }
    }

    /// Sends a datagram for `dest` towards it; dropped (and counted) if there is no route.
    fn route(&mut self, dest: Callsign, data: Vec<u8>) {
        match self.tables.node(&dest).and_then(NodeEntry::best) {
            Some(r) => {
                let (port, neighbour) = (r.via.port, r.via.call);
                self.push_tx(Transmit::Datagram {
                    port,
                    neighbour,
                    data,
                });
            }
            None => {
                self.stats.dropped += 1;
                tracing::debug!(%dest, "no route, datagram dropped");
            }
        }
    }

    /// A datagram for another node: one hop less to live, then on its way.
    fn pass_on(&mut self, h: NetHeader, bytes: &[u8]) {
        if h.ttl <= 1 {
            self.stats.dropped += 1;
            tracing::debug!(origin = %h.origin, dest = %h.dest, "TTL spent, datagram dropped");
            return;
        }
        let mut data = bytes.to_vec();
        data[NET_HEADER_LEN - 1] = h.ttl - 1;
        self.stats.routed += 1;
        self.route(h.dest, data);
    }

    /// The next frame any circuit has, round robin, with its peer node.
    fn next_circuit_frame(&mut self, now: Instant) -> Option<(Callsign, Transport)> {
        let n = self.circuits.len();
        for k in 0..n {
            let i = (self.cursor + k) % n;
            if let Some(c) = self.circuits[i].as_mut() {
                if let Some(f) = c.poll_frame(now) {
                    self.cursor = (i + 1) % n;
                    return Some((c.peer_node, f));
                }
            }
        }
        None
    }

    fn slot_id(&self, slot: usize) -> CircuitId {
        CircuitId {
            index: u8::try_from(slot + 1).unwrap_or(u8::MAX),
            id: self.ids[slot],
        }
    }

    fn slot(&self, id: CircuitId) -> Option<usize> {
        let slot = usize::from(id.index).checked_sub(1)?;
        let c = self.circuits.get(slot)?.as_ref()?;
        (c.my_id == id.id).then_some(slot)
    }

    fn circuit(&self, id: CircuitId) -> Option<&Circuit> {
        self.slot(id).and_then(|s| self.circuits[s].as_ref())
    }

    fn circuit_mut(&mut self, id: CircuitId) -> Option<&mut Circuit> {
        self.slot(id).and_then(|s| self.circuits[s].as_mut())
    }

    fn collect_finished(&mut self) {
        for slot in 0..self.circuits.len() {
            if self.circuits[slot]
                .as_ref()
                .is_some_and(Circuit::is_finished)
            {
                if let Some(c) = self.circuits[slot].take() {
                    self.stats.transport.add(&c.stats());
                }
                self.ids[slot] = self.ids[slot].wrapping_add(1);
            }
        }
    }
}
