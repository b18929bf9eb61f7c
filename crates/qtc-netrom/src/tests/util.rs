//! A simulated NET/ROM network: [`Node`]s joined by links that carry broadcasts to every node
//! on the port and datagrams to the named neighbour, with seeded loss and a fixed delay, on a
//! manual clock (after quinn-proto's `tests/util.rs`). Datagram loss stands for what an AX.25
//! link that resets loses; broadcasts are UI frames and may be lost too.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use qtc_callsign::Callsign;

use crate::{Alias, CircuitId, Config, Event, Node, Transmit};

/// splitmix64: seeded, small, enough to pick lost frames.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

pub(crate) fn call(s: &str) -> Callsign {
    s.parse().unwrap()
}

/// A node's config for the tests: one port of quality 192 per link it is on.
pub(crate) fn config(c: &str, alias: &str, ports: usize) -> Config {
    let mut cfg = Config::new(call(c), alias.parse::<Alias>().unwrap());
    cfg.broadcast = Duration::from_secs(10);
    cfg.ports = vec![192; ports];
    cfg.circuit.timeout = Duration::from_secs(5);
    cfg.circuit.ack_delay = Duration::from_millis(500);
    cfg
}

struct Flight {
    at: Instant,
    to: usize,
    port: usize,
    from: Callsign,
    nodes: bool,
    data: Vec<u8>,
}

/// One end of a node, with what it has said.
pub(crate) struct Member {
    pub(crate) node: Node,
    /// Whether its frames go anywhere (false: it is switched off).
    pub(crate) up: bool,
    pub(crate) events: Vec<Event>,
    /// Data received, per circuit.
    pub(crate) rx: BTreeMap<CircuitId, Vec<u8>>,
    /// Data still to hand to `send`, per circuit.
    pub(crate) to_send: BTreeMap<CircuitId, Vec<u8>>,
    /// Events left in the node (to test a reader that does not keep up).
    pub(crate) hold_events: bool,
}

/// Nodes and the links between them.
pub(crate) struct Net {
    pub(crate) now: Instant,
    pub(crate) members: Vec<Member>,
    /// (node, port) pairs that hear each other.
    links: Vec<((usize, usize), (usize, usize))>,
    flights: Vec<Flight>,
    pub(crate) loss: f64,
    pub(crate) delay: Duration,
    rng: Rng,
    /// Datagrams delivered, for the counts.
    pub(crate) delivered: u64,
}

impl Net {
    pub(crate) fn new(configs: Vec<Config>, seed: u64) -> Net {
        let now = base();
        Net {
            now,
            members: configs
                .into_iter()
                .map(|c| Member {
                    node: Node::new(c, now),
                    up: true,
                    events: Vec::new(),
                    rx: BTreeMap::new(),
                    to_send: BTreeMap::new(),
                    hold_events: false,
                })
                .collect(),
            links: Vec::new(),
            flights: Vec::new(),
            loss: 0.0,
            delay: Duration::from_millis(100),
            rng: Rng::new(seed),
            delivered: 0,
        }
    }

    /// Node `a`'s port `pa` and node `b`'s port `pb` hear each other.
    pub(crate) fn link(&mut self, a: (usize, usize), b: (usize, usize)) {
        self.links.push((a, b));
    }

    /// The nodes `(a, port)` hears on that port.
    fn hearers(&self, a: usize, port: usize) -> Vec<(usize, usize)> {
        self.links
            .iter()
            .filter_map(|&(x, y)| {
                if x == (a, port) {
                    Some(y)
                } else if y == (a, port) {
                    Some(x)
                } else {
                    None
                }
            })
            .collect()
    }

    /// Moves every frame and event that is ready now.
    fn settle(&mut self) {
        for i in 0..self.members.len() {
            self.feed_sends(i);
            while let Some(t) = self.members[i].node.poll_transmit(self.now) {
                self.launch(i, t);
            }
            if !self.members[i].hold_events {
                while let Some(e) = self.members[i].node.poll_event() {
                    let m = &mut self.members[i];
                    match e {
                        Event::Data { circuit, data } => {
                            m.rx.entry(circuit).or_default().extend_from_slice(&data)
                        }
                        other => m.events.push(other),
                    }
                }
            }
        }
    }

    fn feed_sends(&mut self, i: usize) {
        let m = &mut self.members[i];
        for (&id, data) in m.to_send.iter_mut() {
            let n = m.node.send_capacity(id).min(data.len());
            if n > 0 && m.node.send(id, &data[..n]).is_ok() {
                data.drain(..n);
            }
        }
    }

    fn launch(&mut self, from: usize, t: Transmit) {
        if !self.members[from].up {
            return;
        }
        let at = self.now + self.delay;
        let src = self.members[from].node.call();
        match t {
            Transmit::Nodes { port, info } => {
                for (to, p) in self.hearers(from, port) {
                    if !self.rng.chance(self.loss) {
                        self.flights.push(Flight {
                            at,
                            to,
                            port: p,
                            from: src,
                            nodes: true,
                            data: info.clone(),
                        });
                    }
                }
            }
            Transmit::Datagram {
                port,
                neighbour,
                data,
            } => {
                let to = self
                    .hearers(from, port)
                    .into_iter()
                    .find(|&(n, _)| self.members[n].node.call() == neighbour);
                if let Some((to, p)) = to {
                    if !self.rng.chance(self.loss) {
                        self.flights.push(Flight {
                            at,
                            to,
                            port: p,
                            from: src,
                            nodes: false,
                            data,
                        });
                    }
                }
            }
        }
    }

    /// One step: settle, then move the clock to the next arrival or timer and handle it.
    pub(crate) fn step(&mut self) {
        self.settle();
        let next_flight = self.flights.iter().map(|f| f.at).min();
        let next_timer = self
            .members
            .iter()
            .filter(|m| m.up)
            .filter_map(|m| m.node.poll_timeout())
            .min();
        let Some(t) = next_flight.into_iter().chain(next_timer).min() else {
            return;
        };
        self.now = self.now.max(t);
        let (due, later): (Vec<Flight>, Vec<Flight>) =
            self.flights.drain(..).partition(|f| f.at <= self.now);
        self.flights = later;
        for f in due {
            let m = &mut self.members[f.to];
            if !m.up {
                continue;
            }
            if f.nodes {
                m.node.handle_nodes(self.now, f.port, f.from, &f.data);
            } else {
                self.delivered += 1;
                m.node.handle_datagram(self.now, f.port, f.from, &f.data);
            }
        }
        for m in self.members.iter_mut().filter(|m| m.up) {
            if m.node.poll_timeout().is_some_and(|t| t <= self.now) {
                m.node.handle_timeout(self.now);
            }
        }
        self.settle();
    }

    /// Steps until `done` holds or `limit` of simulated time passes; returns whether it held.
    pub(crate) fn run_until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&Net) -> bool,
    ) -> bool {
        let end = self.now + limit;
        while self.now < end {
            if done(self) {
                return true;
            }
            self.step();
        }
        done(self)
    }

    /// Steps for `d` of simulated time.
    pub(crate) fn run_for(&mut self, d: Duration) {
        let _ = self.run_until(d, |_| false);
    }
}

/// The clock's starting point (the cores never read a clock; the tests need one base).
#[allow(clippy::disallowed_methods)]
fn base() -> Instant {
    Instant::now()
}
