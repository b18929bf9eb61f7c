//! Helpers for the NET/ROM tests over AXUDP: a scripted neighbour (an AX.25 port and NET/ROM
//! frames made here, to play a hostile node, LinBPQ, or a node that restarts) and a small
//! network of qtc nodes with chosen links (to kill one and see the others route round it).
#![allow(dead_code, clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use qtc_ax25::{Address, CommandResponse, Event, Frame, LinkId, Path, Pid, Port, PortEvent};
use qtc_callsign::Callsign;
use qtc_netrom::wire::{NetHeader, Nodes, NodesEntry, Transport};

use crate::common::Daemon;
use crate::radio_util::free_udp_port;

/// The broadcast address of NODES.
pub fn nodes_call() -> Callsign {
    "NODES".parse().unwrap()
}

pub fn call(s: &str) -> Callsign {
    s.parse().unwrap()
}

/// A NET/ROM node played by the test: its own AXUDP socket, a `qtc_ax25::Port` for its links,
/// and the frames it heard.
pub struct Neighbour {
    pub call: Callsign,
    pub listen: u16,
    sock: UdpSocket,
    to: SocketAddr,
    port: Port,
    /// Datagrams waiting for the link to their node.
    outbox: BTreeMap<Callsign, Vec<Vec<u8>>>,
    /// NODES broadcasts heard: (when, from, what).
    pub nodes: Vec<(Instant, Callsign, Nodes)>,
    /// Datagrams received: header and transport frame.
    pub got: Vec<(NetHeader, Transport)>,
    /// Answer information frames (as a live node would); off: a node that fell silent.
    pub acks: bool,
    /// Our circuits we no longer know (the node restarted): nothing on them is answered.
    forgotten: Vec<(u8, u8)>,
}

impl Neighbour {
    /// A node `call` on UDP port `listen`, whose peer is the daemon's AXUDP port `daemon`.
    pub fn new(call_: &str, listen: u16, daemon: u16) -> Neighbour {
        let sock = UdpSocket::bind(("127.0.0.1", listen)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let mut cfg = qtc_ax25::Config::default();
        cfg.frack = Duration::from_secs(1);
        let mut port = Port::new(cfg);
        port.add_local(call(call_));
        port.add_ui_destination(nodes_call());
        Neighbour {
            call: call(call_),
            listen,
            sock,
            to: ([127, 0, 0, 1], daemon).into(),
            port,
            outbox: BTreeMap::new(),
            nodes: Vec::new(),
            got: Vec::new(),
            acks: true,
            forgotten: Vec::new(),
        }
    }

    /// Forgets our circuit `(index, id)`, as a node that restarted has.
    pub fn forget(&mut self, index: u8, id: u8) {
        self.forgotten.push((index, id));
    }

    /// Opens a plain AX.25 link from our call to `to`.
    pub fn open(&mut self, to: &str) {
        let now = Instant::now();
        let _ = self.link_to(now, call(to));
        self.flush(now);
    }

    /// Whether our link to `to` is up.
    pub fn connected(&self, to: &str) -> bool {
        self.port
            .find(self.call, call(to))
            .and_then(|id| self.port.link(id))
            .is_some_and(|l| matches!(l.state(), qtc_ax25::State::Connected))
    }

    fn send_frame(&self, f: &Frame) {
        let mut b = f.to_bytes();
        qtc_ax25::wire::append_fcs(&mut b);
        let _ = self.sock.send_to(&b, self.to);
    }

    /// A NODES broadcast: our alias, and `entries` as (node, alias, best neighbour, quality).
    pub fn broadcast(&mut self, alias: &str, entries: &[(&str, &str, &str, u8)]) {
        let msg = Nodes {
            poll: false,
            alias: alias.parse().unwrap(),
            entries: entries
                .iter()
                .map(|&(dest, alias, neighbour, quality)| NodesEntry {
                    dest: call(dest),
                    alias: alias.parse().unwrap(),
                    neighbour: call(neighbour),
                    quality,
                })
                .collect(),
            skipped: 0,
        };
        let mut info = Vec::new();
        msg.emit(&mut info);
        let f = Frame::ui(
            Address::new(nodes_call(), self.call, CommandResponse::Command),
            Pid::NETROM,
            info,
        );
        self.send_frame(&f);
    }

    /// Sends `t` from `origin` to the node `dest` (the daemon's node call), over our link to it
    /// (opened first if there is none).
    pub fn send(&mut self, dest: &str, origin: &str, t: &Transport) {
        let data = NetHeader {
            origin: call(origin),
            dest: call(dest),
            ttl: 7,
        }
        .datagram(&t.to_bytes());
        let dest = call(dest);
        let now = Instant::now();
        let id = self.link_to(now, dest);
        let up = self
            .port
            .link(id)
            .is_some_and(|l| matches!(l.state(), qtc_ax25::State::Connected));
        if up {
            let _ = self
                .port
                .link_mut(id)
                .unwrap()
                .send_datagram(now, Pid::NETROM, data);
        } else {
            self.outbox.entry(dest).or_default().push(data);
        }
        self.flush(now);
    }

    fn link_to(&mut self, now: Instant, dest: Callsign) -> LinkId {
        match self.port.find(self.call, dest) {
            Some(id) => id,
            None => self
                .port
                .connect(now, self.call, dest, Path::new())
                .unwrap(),
        }
    }

    fn flush(&mut self, now: Instant) {
        while let Some(f) = self.port.poll_transmit(now) {
            self.send_frame(&f);
        }
    }

    /// Moves frames and timers until `done` holds (true) or `within` passes (false).
    pub fn run_until(
        &mut self,
        within: Duration,
        mut done: impl FnMut(&Neighbour) -> bool,
    ) -> bool {
        let end = Instant::now() + within;
        let mut buf = [0u8; 4096];
        loop {
            let now = Instant::now();
            self.port.handle_timeout(now);
            self.events(now);
            self.flush(now);
            if done(self) {
                return true;
            }
            if now >= end {
                return false;
            }
            if let Ok((n, _)) = self.sock.recv_from(&mut buf) {
                if let Ok(f) = qtc_ax25::wire::check_fcs(&buf[..n]) {
                    self.port.handle(Instant::now(), f);
                }
            }
        }
    }

    fn events(&mut self, now: Instant) {
        while let Some(e) = self.port.poll_event() {
            match e {
                PortEvent::Ui(f) if f.address.dest == nodes_call() => {
                    if let Ok(n) = Nodes::parse(&f.info) {
                        self.nodes.push((now, f.address.src, n));
                    }
                }
                PortEvent::Link {
                    id,
                    event: Event::Connected { .. },
                } => {
                    let Some(remote) = self.port.link(id).map(|l| l.remote()) else {
                        continue;
                    };
                    for data in self.outbox.remove(&remote).unwrap_or_default() {
                        let _ =
                            self.port
                                .link_mut(id)
                                .unwrap()
                                .send_datagram(now, Pid::NETROM, data);
                    }
                }
                PortEvent::Link {
                    id,
                    event: Event::Datagram { data, .. },
                } => self.datagram(now, id, &data),
                _ => {}
            }
        }
    }

    /// A datagram for us: kept; an information frame is acknowledged while `acks` is on.
    fn datagram(&mut self, now: Instant, id: LinkId, data: &[u8]) {
        let Ok((h, rest)) = NetHeader::parse(data) else {
            return;
        };
        let Ok(t) = Transport::parse(rest) else {
            return;
        };
        let answers = |index: &u8, id: &u8| self.acks && !self.forgotten.contains(&(*index, *id));
        if let (
            true,
            Transport::Info {
                your_index,
                your_id,
                tx_seq,
                ..
            },
        ) = (
            match &t {
                Transport::Info {
                    your_index,
                    your_id,
                    ..
                } => answers(your_index, your_id),
                _ => false,
            },
            &t,
        ) {
            // Our circuit ids are the ones the daemon names: answer on its circuit, which the
            // connect acknowledge told us (kept by the test in `circuits`).
            if let Some((index, id_)) = self.theirs(*your_index, *your_id) {
                let ack = Transport::InfoAck {
                    your_index: index,
                    your_id: id_,
                    rx_seq: tx_seq.wrapping_add(1),
                    flags: Default::default(),
                };
                let back = NetHeader {
                    origin: h.dest,
                    dest: h.origin,
                    ttl: 7,
                }
                .datagram(&ack.to_bytes());
                if let Some(l) = self.port.link_mut(id) {
                    let _ = l.send_datagram(now, Pid::NETROM, back);
                }
            }
        }
        self.got.push((h, t));
    }

    /// The daemon's circuit (index, id) for our circuit `(index, id)`, from its acknowledge.
    fn theirs(&self, index: u8, id: u8) -> Option<(u8, u8)> {
        self.answer(index, id).flatten()
    }

    /// The acknowledge of our circuit `(index, id)`: `Some(Some((their index, their id)))` when
    /// accepted, `Some(None)` when refused, `None` before it came.
    pub fn answer(&self, index: u8, id: u8) -> Option<Option<(u8, u8)>> {
        self.got.iter().find_map(|(_, t)| match *t {
            Transport::ConnectAck {
                your_index,
                your_id,
                my_index,
                my_id,
                refused,
                ..
            } if (your_index, your_id) == (index, id) => {
                Some((!refused).then_some((my_index, my_id)))
            }
            _ => None,
        })
    }

    /// The text received on our circuit `(index, id)`.
    pub fn text(&self, index: u8, id: u8) -> String {
        let bytes: Vec<u8> = self
            .got
            .iter()
            .filter_map(|(_, t)| match t {
                Transport::Info {
                    your_index,
                    your_id,
                    data,
                    ..
                } if (*your_index, *your_id) == (index, id) => Some(data.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A connect request for our circuit `(index, id)`, from `user` at `node`.
pub fn connect_request(index: u8, id: u8, user: &str, node: &str) -> Transport {
    Transport::ConnectRequest {
        my_index: index,
        my_id: id,
        window: 4,
        user: call(user),
        node: call(node),
        bpq_timeout: None,
    }
}

/// Information on the daemon's circuit `theirs`, as our frame `seq`.
pub fn info(theirs: (u8, u8), seq: u8, data: &[u8]) -> Transport {
    Transport::Info {
        your_index: theirs.0,
        your_id: theirs.1,
        tx_seq: seq,
        rx_seq: 0,
        flags: Default::default(),
        data: data.to_vec(),
    }
}

/// The AX.25 timers of [`axudp_port`] for a network with nodes killed under it: a link to a
/// dead neighbour fails within some seconds.
pub const QUICK_LINKS: &str = "frack = \"1s\"\nretries = 3\n";

/// A qtc node's `[[port]]` on AXUDP with NET/ROM, its peers by (callsign, UDP port), the
/// links' timers as `timers` says (`frack`, `retries`).
pub fn axudp_port(listen: u16, peers: &[(&str, u16)], timers: &str) -> String {
    let peers: Vec<String> = peers
        .iter()
        .map(|(c, p)| format!("{{ callsign = \"{c}\", address = \"127.0.0.1:{p}\" }}"))
        .collect();
    format!(
        "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:{listen}\"\n\
         peers = [{}]\n{timers}netrom_quality = 192\n",
        peers.join(", ")
    )
}

/// A network of qtc nodes on AXUDP, each hearing only the ones it is linked to. Node `i` is
/// station `N0xxx` (its BBS) with node call `N0xxx-1` and alias `xxx`, for the names given.
pub struct Network {
    pub names: Vec<String>,
    pub ports: Vec<u16>,
    pub links: Vec<(usize, usize)>,
    pub nodes: Vec<Option<Daemon>>,
}

impl Network {
    /// Starts nodes named `names` (three letters: `AAA` is N0AAA) joined by `links`, each with
    /// `[netrom]` `extra` keys and its BBS users `users`.
    pub fn start(names: &[&str], links: &[(usize, usize)], netrom: &str) -> Network {
        let ports: Vec<u16> = names.iter().map(|_| free_udp_port()).collect();
        let mut net = Network {
            names: names.iter().map(|s| s.to_string()).collect(),
            ports,
            links: links.to_vec(),
            nodes: Vec::new(),
        };
        for i in 0..names.len() {
            let d = net.start_node(i, netrom);
            net.nodes.push(Some(d));
        }
        net
    }

    /// The calls node `i` hears: its links' far ends' node calls.
    fn peers(&self, i: usize) -> Vec<(String, u16)> {
        self.links
            .iter()
            .filter_map(|&(a, b)| match (a == i, b == i) {
                (true, _) => Some(b),
                (_, true) => Some(a),
                _ => None,
            })
            // One entry per station: AXUDP finds a peer by the base call (its BBS and its node
            // call live at the same address).
            .map(|j| (format!("N0{}-1", self.names[j]), self.ports[j]))
            .collect()
    }

    fn start_node(&self, i: usize, netrom: &str) -> Daemon {
        let peers = self.peers(i);
        let peers: Vec<(&str, u16)> = peers.iter().map(|(c, p)| (c.as_str(), *p)).collect();
        let name = &self.names[i];
        Daemon::start_bbs(
            &format!("N0{name}"),
            &[("N0USR", "pw", "")],
            &format!(
                "{}[netrom]\nalias = \"{name}\"\nbroadcast = \"5s\"\n{netrom}",
                axudp_port(self.ports[i], &peers, QUICK_LINKS)
            ),
        )
    }

    pub fn node(&self, i: usize) -> &Daemon {
        self.nodes[i].as_ref().expect("a running node")
    }

    /// Kills node `i` with SIGKILL: gone without a word to its neighbours.
    pub fn kill(&mut self, i: usize) {
        // Dropping a daemon kills it.
        drop(self.nodes[i].take());
    }

    /// Waits until node `i` has learned a route to every node named in `aliases`.
    pub fn wait_learned(&self, i: usize, aliases: &[&str], within: Duration) {
        for a in aliases {
            self.node(i)
                .wait_for_log_within(&format!("NET/ROM route learned: {a}:N0{a}-1"), within);
        }
    }
}
