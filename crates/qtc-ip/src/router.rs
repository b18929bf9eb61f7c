//! The router: datagrams from the host (the TUN device), from stations on the radio ports and
//! from NET/ROM nodes go where the routing table says, with ARP finding the station behind each
//! address on the air.

use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use qtc_callsign::Callsign;

use crate::arp_table::{ArpTable, Entry, Learned, DEFAULT_LIFE, DEFAULT_MAX_ENTRIES};
use crate::frag::fragment;
use crate::route::{Hop, Mode, Prefix, Route, Routes};
use crate::wire::icmp::{self, Problem};
use crate::wire::ipv4::{rewrite, Header};
use crate::wire::{Arp, Op, PID_ARP, PID_IP};
use crate::Error;

/// Addresses waiting for an ARP answer at once; datagrams for more are refused.
pub const MAX_PENDING: usize = 32;
/// Datagrams held per address while ARP asks (JNOS's ARP_QUEUE).
pub const MAX_QUEUED: usize = 5;
/// Most frames waiting to be taken by [`Router::poll_transmit`]; a datagram whose fragments
/// would not all fit is dropped whole.
pub const MAX_TX_QUEUE: usize = 256;
/// Most events waiting to be taken.
pub const MAX_EVENTS: usize = 64;
/// The IP MTU of NET/ROM: what a 256-byte AX.25 frame holds after the 20 bytes of network
/// and transport header (JNOS's `NR4MAXINFO`, its NET/ROM interface's MTU).
pub const NETROM_MTU: usize = 236;

/// AX.25's broadcast address, where ARP requests and broadcast datagrams go.
pub const QST: Callsign = match Callsign::new("QST", 0) {
    Ok(c) => c,
    Err(_) => panic!("QST is a callsign"),
};

/// IP on one radio port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortConfig {
    /// Our callsign for IP there (ARP answers with it, datagrams come from it).
    pub call: Callsign,
    /// The largest datagram a frame carries (the port's PACLEN).
    pub mtu: usize,
    /// How datagrams travel when the route does not say.
    pub mode: Mode,
}

/// An ARP entry the sysop fixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticArp {
    /// The address.
    pub ip: Ipv4Addr,
    /// The station that has it.
    pub call: Callsign,
    /// The radio port it is on.
    pub port: usize,
}

/// The router's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The station's address on the air (the host's, on the TUN device).
    pub address: Ipv4Addr,
    /// The network on the air it is part of (reached directly on the IP ports).
    pub network: Prefix,
    /// IP on each radio port, by the port's index (`None`: no IP there).
    pub ports: Vec<Option<PortConfig>>,
    /// Routes beyond the station's network.
    pub routes: Vec<Route>,
    /// Static ARP entries.
    pub arp: Vec<StaticArp>,
    /// Most learned ARP entries.
    pub max_arp: usize,
    /// Life of a learned ARP entry.
    pub arp_life: Duration,
    /// Time between ARP requests for one address.
    pub arp_retry: Duration,
    /// Requests before an address is given up (its datagrams answered "host unreachable").
    pub arp_tries: u8,
    /// Time to live of the ICMP messages the router sends.
    pub ttl: u8,
}

impl Config {
    /// `address` on the network of `prefix_len` bits, no ports yet, the limits' defaults.
    #[must_use]
    pub fn new(address: Ipv4Addr, prefix_len: u8) -> Config {
        Config {
            address,
            network: Prefix::new(address, prefix_len),
            ports: Vec::new(),
            routes: Vec::new(),
            arp: Vec::new(),
            max_arp: DEFAULT_MAX_ENTRIES,
            arp_life: DEFAULT_LIFE,
            arp_retry: Duration::from_secs(5),
            arp_tries: 3,
            ttl: 64,
        }
    }
}

/// Something to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transmit {
    /// A datagram for the host: write it to the TUN device.
    Host(Vec<u8>),
    /// A frame on a radio port from our IP callsign there.
    Radio {
        /// The port's index.
        port: usize,
        /// The station (or [`QST`] for ARP requests and broadcasts).
        dest: Callsign,
        /// [`PID_IP`] or [`PID_ARP`].
        pid: u8,
        /// A UI frame, or an I frame on a link to `dest`.
        mode: Mode,
        /// The information field.
        data: Vec<u8>,
    },
    /// A datagram inside a NET/ROM datagram to `node`.
    NetRom {
        /// The node.
        node: Callsign,
        /// The IP datagram.
        data: Vec<u8>,
    },
}

/// Something worth a line in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// ARP found (or found anew) the station behind an address.
    ArpLearned {
        /// The address.
        ip: Ipv4Addr,
        /// Its station.
        call: Callsign,
        /// On this port.
        port: usize,
    },
    /// Nobody answered ARP for an address; its datagrams were dropped.
    ArpFailed {
        /// The address.
        ip: Ipv4Addr,
    },
    /// A station claims our own address.
    AddressClaimed {
        /// Who.
        call: Callsign,
        /// On this port.
        port: usize,
    },
}

/// Counters since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams from the host.
    pub from_host: u64,
    /// Datagrams to the host.
    pub to_host: u64,
    /// Datagrams heard on the radio ports for us.
    pub radio_in: u64,
    /// Frames carrying datagrams sent on the radio ports.
    pub radio_out: u64,
    /// Datagrams from NET/ROM.
    pub netrom_in: u64,
    /// Datagrams sent into NET/ROM.
    pub netrom_out: u64,
    /// ARP packets heard.
    pub arp_in: u64,
    /// ARP packets sent.
    pub arp_out: u64,
    /// Datagrams passed between stations (radio or NET/ROM to radio or NET/ROM).
    pub forwarded: u64,
    /// Datagrams and ARP packets that did not parse.
    pub malformed: u64,
    /// Datagrams dropped for want of a route, an ARP answer or room in a queue.
    pub dropped: u64,
    /// Datagrams whose time to live ran out here.
    pub ttl_expired: u64,
}

impl Stats {
    /// Each counter with its name, for a status page.
    #[must_use]
    pub fn named(&self) -> [(&'static str, u64); 12] {
        [
            ("from host", self.from_host),
            ("to host", self.to_host),
            ("radio in", self.radio_in),
            ("radio out", self.radio_out),
            ("NET/ROM in", self.netrom_in),
            ("NET/ROM out", self.netrom_out),
            ("ARP in", self.arp_in),
            ("ARP out", self.arp_out),
            ("forwarded", self.forwarded),
            ("malformed", self.malformed),
            ("dropped", self.dropped),
            ("TTL expired", self.ttl_expired),
        ]
    }
}

/// Where a datagram came from, which is where an ICMP error about it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Back {
    /// From the host: errors go straight back to it.
    Host,
    /// From a station: errors are routed to its source address.
    Route,
}

/// A datagram waiting for ARP.
#[derive(Debug, Clone)]
struct Queued {
    header: Header,
    datagram: Vec<u8>,
    mode: Option<Mode>,
    back: Back,
}

/// An address ARP is asking for.
#[derive(Debug, Clone)]
struct Pending {
    /// The port the route names, if any.
    port: Option<usize>,
    /// Requests sent so far.
    tries: u8,
    /// When to ask again (or give up).
    next: Instant,
    queue: Vec<Queued>,
}

/// The router.
#[derive(Debug)]
pub struct Router {
    cfg: Config,
    routes: Routes,
    arp: ArpTable,
    pending: BTreeMap<Ipv4Addr, Pending>,
    tx: VecDeque<Transmit>,
    events: VecDeque<Event>,
    stats: Stats,
    next_id: u16,
}

impl Router {
    /// A router with `cfg`; its network is a route over every IP port.
    #[must_use]
    pub fn new(cfg: Config) -> Router {
        let mut routes = cfg.routes.clone();
        routes.push(Route {
            to: cfg.network,
            hop: Hop::Radio {
                gateway: None,
                port: None,
            },
            mode: None,
        });
        let mut arp = ArpTable::new(cfg.max_arp, cfg.arp_life);
        for s in &cfg.arp {
            arp.add_static(s.ip, s.call, s.port);
        }
        Router {
            routes: Routes::new(routes),
            arp,
            pending: BTreeMap::new(),
            tx: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            next_id: 0,
            cfg,
        }
    }

    // ------------------------------------------------------------------ input

    /// A datagram the host sent (read from the TUN device).
    pub fn handle_host(&mut self, now: Instant, bytes: &[u8]) {
        self.stats.from_host += 1;
        let Some((h, datagram)) = self.parse(bytes, "host") else {
            return;
        };
        if self.is_broadcast(h.dst) {
            self.broadcast(&h, datagram);
            return;
        }
        if h.dst.is_multicast() || h.dst == self.cfg.address {
            self.stats.dropped += 1;
            return;
        }
        match self.routes.lookup(h.dst).copied() {
            Some(route) => self.send(now, &route, h, datagram.to_vec(), Back::Host),
            None => {
                self.stats.dropped += 1;
                self.icmp(now, &h, datagram, Problem::NetUnreachable, Back::Host);
            }
        }
    }

    /// The information field of a UI or I frame with PID `pid` from `from` on radio port
    /// `port`: IP datagrams and ARP packets; anything else is not ours.
    pub fn handle_frame(
        &mut self,
        now: Instant,
        port: usize,
        from: Callsign,
        pid: u8,
        info: &[u8],
    ) {
        if self.port(port).is_none() {
            return;
        }
        match pid {
            PID_IP => {
                self.stats.radio_in += 1;
                self.station_datagram(now, info, "radio");
            }
            PID_ARP => self.handle_arp(now, port, from, info),
            _ => {}
        }
    }

    /// An IP datagram that came inside a NET/ROM datagram from node `node`.
    pub fn handle_netrom(&mut self, now: Instant, node: Callsign, datagram: &[u8]) {
        self.stats.netrom_in += 1;
        tracing::trace!(%node, len = datagram.len(), "IP from NET/ROM");
        self.station_datagram(now, datagram, "NET/ROM");
    }

    /// Runs what is due: ARP requests to repeat, and addresses to give up on.
    pub fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<Ipv4Addr> = self
            .pending
            .iter()
            .filter(|(_, p)| p.next <= now)
            .map(|(ip, _)| *ip)
            .collect();
        for ip in due {
            let Some(p) = self.pending.get_mut(&ip) else {
                continue;
            };
            if p.tries < self.cfg.arp_tries {
                p.tries += 1;
                p.next = now + self.cfg.arp_retry;
                let port = p.port;
                self.ask(ip, port);
                continue;
            }
            let Some(p) = self.pending.remove(&ip) else {
                continue;
            };
            self.push_event(Event::ArpFailed { ip });
            for q in p.queue {
                self.unreachable(now, q);
            }
        }
    }

    // ------------------------------------------------------------------ output

    /// The next thing to send.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.tx.pop_front()
    }

    /// The next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`Router::handle_timeout`] should run next: only while ARP waits for an answer.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.pending.values().map(|p| p.next).min()
    }

    // ------------------------------------------------------------------ views

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The live ARP entries, by address.
    pub fn arp_entries(&self, now: Instant) -> impl Iterator<Item = (Ipv4Addr, &Entry)> {
        self.arp.entries(now)
    }

    /// The addresses ARP is asking for.
    pub fn arp_pending(&self) -> impl Iterator<Item = Ipv4Addr> + '_ {
        self.pending.keys().copied()
    }

    /// The routes, longest prefix first (the station's network among them).
    pub fn routes(&self) -> impl Iterator<Item = &Route> {
        self.routes.iter()
    }

    /// The counters.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.stats
    }

    // ------------------------------------------------------------------ internals

    fn port(&self, port: usize) -> Option<PortConfig> {
        self.cfg.ports.get(port).copied().flatten()
    }

    fn ip_ports(&self) -> impl Iterator<Item = (usize, PortConfig)> + '_ {
        self.cfg
            .ports
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|p| (i, p)))
    }

    fn is_broadcast(&self, ip: Ipv4Addr) -> bool {
        ip.is_broadcast() || ip == self.cfg.network.broadcast()
    }

    fn parse<'a>(&mut self, bytes: &'a [u8], from: &str) -> Option<(Header, &'a [u8])> {
        match Header::parse(bytes) {
            Ok(x) => Some(x),
            Err(e) => {
                self.stats.malformed += 1;
                tracing::debug!(from, error = %e, "bad IP datagram dropped");
                None
            }
        }
    }

    /// A datagram from a station (on the air or over NET/ROM): the host's, unless a route
    /// sends it on to another station.
    fn station_datagram(&mut self, now: Instant, bytes: &[u8], from: &str) {
        let Some((h, datagram)) = self.parse(bytes, from) else {
            return;
        };
        let route = match self.routes.lookup(h.dst).copied() {
            Some(r) if !self.is_broadcast(h.dst) && h.dst != self.cfg.address => r,
            // Ours, a broadcast, or nothing we route: the host's stack takes it (or its own
            // routes do).
            _ => {
                self.deliver_to_host(datagram.to_vec());
                return;
            }
        };
        if h.ttl <= 1 {
            self.stats.ttl_expired += 1;
            self.icmp(now, &h, datagram, Problem::TtlExceeded, Back::Route);
            return;
        }
        let h = Header {
            ttl: h.ttl - 1,
            ..h
        };
        let mut datagram = datagram.to_vec();
        rewrite(&mut datagram, &h);
        self.stats.forwarded += 1;
        self.send(now, &route, h, datagram, Back::Route);
    }

    fn deliver_to_host(&mut self, datagram: Vec<u8>) {
        self.stats.to_host += 1;
        self.push_tx(Transmit::Host(datagram));
    }

    /// Sends a datagram along `route`.
    fn send(&mut self, now: Instant, route: &Route, h: Header, datagram: Vec<u8>, back: Back) {
        match route.hop {
            Hop::NetRom { node } => {
                let Some(pieces) = self.cut(&h, &datagram, NETROM_MTU, back, now) else {
                    return;
                };
                self.stats.netrom_out += pieces.len() as u64;
                for data in pieces {
                    self.push_tx(Transmit::NetRom { node, data });
                }
            }
            Hop::Radio { gateway, port } => {
                let next = gateway.unwrap_or(h.dst);
                let known = self
                    .arp
                    .lookup(now, next)
                    .filter(|e| port.is_none_or(|p| p == e.port))
                    .copied();
                let q = Queued {
                    header: h,
                    datagram,
                    mode: route.mode,
                    back,
                };
                match known {
                    Some(e) => self.send_to_station(now, e.port, e.call, q),
                    None => self.resolve(now, next, port, q),
                }
            }
        }
    }

    /// Fragments for a link of `mtu`, or `None` (and the error answered) when it cannot be
    /// cut or the pieces would not all fit the queue.
    fn cut(
        &mut self,
        h: &Header,
        datagram: &[u8],
        mtu: usize,
        back: Back,
        now: Instant,
    ) -> Option<Vec<Vec<u8>>> {
        match fragment(h, datagram, mtu) {
            Ok(p) if self.tx.len() + p.len() <= MAX_TX_QUEUE => Some(p),
            Ok(_) => {
                self.stats.dropped += 1;
                tracing::debug!(dst = %h.dst, "transmit queue full, datagram dropped");
                None
            }
            Err(Error::DontFragment { .. }) => {
                self.stats.dropped += 1;
                let mtu = u16::try_from(mtu).unwrap_or(u16::MAX);
                self.icmp(now, h, datagram, Problem::NeedsFragmenting { mtu }, back);
                None
            }
            Err(e) => {
                self.stats.dropped += 1;
                tracing::debug!(dst = %h.dst, error = %e, "datagram dropped");
                None
            }
        }
    }

    /// A datagram to the station `call` on `port`.
    fn send_to_station(&mut self, now: Instant, port: usize, call: Callsign, q: Queued) {
        let Some(pc) = self.port(port) else {
            self.stats.dropped += 1;
            return;
        };
        let mode = q.mode.unwrap_or(pc.mode);
        let Some(pieces) = self.cut(&q.header, &q.datagram, pc.mtu, q.back, now) else {
            return;
        };
        self.stats.radio_out += pieces.len() as u64;
        for data in pieces {
            self.push_tx(Transmit::Radio {
                port,
                dest: call,
                pid: PID_IP,
                mode,
                data,
            });
        }
    }

    /// Holds a datagram for `next` while ARP asks who has it.
    fn resolve(&mut self, now: Instant, next: Ipv4Addr, port: Option<usize>, q: Queued) {
        if let Some(p) = self.pending.get_mut(&next) {
            if p.queue.len() < MAX_QUEUED {
                p.queue.push(q);
            } else {
                self.stats.dropped += 1;
            }
            return;
        }
        if self.pending.len() >= MAX_PENDING {
            self.unreachable(now, q);
            return;
        }
        self.pending.insert(
            next,
            Pending {
                port,
                tries: 1,
                next: now + self.cfg.arp_retry,
                queue: vec![q],
            },
        );
        self.ask(next, port);
    }

    /// An ARP request for `target` on `port`, or on every IP port.
    fn ask(&mut self, target: Ipv4Addr, port: Option<usize>) {
        let ports: Vec<(usize, PortConfig)> = self
            .ip_ports()
            .filter(|(i, _)| port.is_none_or(|p| p == *i))
            .collect();
        for (i, pc) in ports {
            self.stats.arp_out += 1;
            let req = Arp::request(pc.call, self.cfg.address, target);
            self.push_tx(Transmit::Radio {
                port: i,
                dest: QST,
                pid: PID_ARP,
                mode: Mode::Datagram,
                data: req.to_bytes(),
            });
        }
    }

    /// A datagram to the network's broadcast address: a UI frame to QST on every IP port.
    fn broadcast(&mut self, h: &Header, datagram: &[u8]) {
        let ports: Vec<(usize, PortConfig)> = self.ip_ports().collect();
        for (port, pc) in ports {
            let Ok(pieces) = fragment(h, datagram, pc.mtu) else {
                self.stats.dropped += 1;
                continue;
            };
            for data in pieces {
                self.stats.radio_out += 1;
                self.push_tx(Transmit::Radio {
                    port,
                    dest: QST,
                    pid: PID_IP,
                    mode: Mode::Datagram,
                    data,
                });
            }
        }
    }

    /// An ARP packet heard on `port` (RFC 826's algorithm): an entry we hold is brought up
    /// to date; one is added when we are the target; a request for our address is answered.
    fn handle_arp(&mut self, now: Instant, port: usize, from: Callsign, info: &[u8]) {
        self.stats.arp_in += 1;
        let a = match Arp::parse(info) {
            Ok(a) => a,
            Err(e) => {
                self.stats.malformed += 1;
                tracing::debug!(%from, error = %e, "bad ARP packet dropped");
                return;
            }
        };
        // As JNOS: 0.0.0.0 either side, or a sender claiming the broadcast call, is nonsense.
        // So is a sender at a broadcast or multicast address, or the network's own.
        if a.sender_ip.is_unspecified()
            || a.target_ip.is_unspecified()
            || a.sender_call.base() == QST.base()
            || self.is_broadcast(a.sender_ip)
            || a.sender_ip.is_multicast()
            || a.sender_ip == self.cfg.network.addr()
        {
            return;
        }
        if a.sender_ip == self.cfg.address {
            self.push_event(Event::AddressClaimed {
                call: a.sender_call,
                port,
            });
            return;
        }
        let for_us = a.target_ip == self.cfg.address;
        let known = self.arp.knows(now, a.sender_ip) || self.pending.contains_key(&a.sender_ip);
        // Only addresses we would send to over the air: a flood of invented senders cannot
        // fill the table beyond the network's size (and the table's bound).
        let on_air = matches!(
            self.routes.lookup(a.sender_ip).map(|r| r.hop),
            Some(Hop::Radio { .. })
        );
        if (for_us || known) && on_air {
            self.learn(now, a.sender_ip, a.sender_call, port);
        }
        if for_us && a.op == Op::Request {
            if let Some(pc) = self.port(port) {
                self.stats.arp_out += 1;
                self.push_tx(Transmit::Radio {
                    port,
                    dest: a.sender_call,
                    pid: PID_ARP,
                    mode: Mode::Datagram,
                    data: a.reply(pc.call).to_bytes(),
                });
            }
        }
    }

    /// Records `ip` at `call` on `port` and sends what waited for it.
    fn learn(&mut self, now: Instant, ip: Ipv4Addr, call: Callsign, port: usize) {
        if self.arp.learn(now, ip, call, port) == Learned::New {
            self.push_event(Event::ArpLearned { ip, call, port });
        }
        let Some(e) = self.arp.lookup(now, ip).copied() else {
            return;
        };
        if let Some(p) = self.pending.remove(&ip) {
            for q in p.queue {
                self.send_to_station(now, e.port, e.call, q);
            }
        }
    }

    /// An ICMP error about a datagram, back where it came from.
    /// A queued datagram that cannot go: counted as dropped, its sender told (ICMP host
    /// unreachable).
    fn unreachable(&mut self, now: Instant, q: Queued) {
        self.stats.dropped += 1;
        self.icmp(
            now,
            &q.header,
            &q.datagram,
            Problem::HostUnreachable,
            q.back,
        );
    }

    fn icmp(&mut self, now: Instant, h: &Header, datagram: &[u8], problem: Problem, back: Back) {
        if !icmp::may_answer(h, datagram, self.cfg.network.broadcast()) {
            return;
        }
        self.next_id = self.next_id.wrapping_add(1);
        let msg = icmp::error(
            self.cfg.address,
            h,
            datagram,
            problem,
            self.cfg.ttl,
            self.next_id,
        );
        tracing::debug!(to = %h.src, ?problem, "ICMP error sent");
        if back == Back::Host {
            self.deliver_to_host(msg);
            return;
        }
        let Ok((mh, _)) = Header::parse(&msg) else {
            return;
        };
        match self.routes.lookup(mh.dst).copied() {
            Some(route) if mh.dst != self.cfg.address => {
                // No error is ever sent about an ICMP error: this ends here.
                self.send(now, &route, mh, msg, Back::Host);
            }
            _ => self.deliver_to_host(msg),
        }
    }

    fn push_tx(&mut self, t: Transmit) {
        if self.tx.len() < MAX_TX_QUEUE {
            self.tx.push_back(t);
        } else {
            self.stats.dropped += 1;
        }
    }

    fn push_event(&mut self, e: Event) {
        if self.events.len() < MAX_EVENTS {
            self.events.push_back(e);
        }
    }
}
