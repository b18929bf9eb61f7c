//! The node's task: frames from the ports, circuits' streams, requests, one timer.

use std::collections::BTreeMap;
use std::future::poll_fn;
use std::task::{Context, Poll};
use std::time::Instant;

use qtc_netrom::{Change, CircuitId, CloseReason, Event, Loss, Node, Transmit, Via};
use tokio::sync::mpsc;

use super::bridge::CircuitIo;
use super::{NetCmd, NetIn, NetOut, NetromView, Setup};
use crate::clock;
use crate::radio::{Arrival, Caller};

struct Task {
    node: Node,
    ports: Vec<Option<mpsc::Sender<NetOut>>>,
    port_names: Vec<String>,
    circuits: BTreeMap<CircuitId, CircuitIo>,
    on_incoming: crate::radio::Incoming,
    /// Frames a full port queue refused.
    dropped: u64,
    /// The IP router, for IP datagrams that came to our node.
    to_ip: Option<mpsc::Sender<super::IpFromNode>>,
}

/// Runs the node until shutdown.
pub async fn run(setup: Setup) {
    let Setup {
        node,
        ports,
        port_names,
        mut inbox,
        mut cmds,
        on_incoming,
        mut shutdown,
        to_ip,
    } = setup;
    tracing::info!(node = %node.call(), alias = %node.alias(), "NET/ROM node up");
    log_next_broadcast(&node, "first", clock::now());
    let mut t = Task {
        node,
        ports,
        port_names,
        circuits: BTreeMap::new(),
        on_incoming,
        dropped: 0,
        to_ip,
    };
    let mut timer = clock::Timer::new();
    let mut cmds_open = true;
    loop {
        t.drain(clock::now());
        timer.set(t.node.poll_timeout());
        tokio::select! {
            () = poll_fn(|cx| t.poll_io(cx)) => {}
            m = inbox.recv() => match m {
                Some(m) => t.input(clock::now(), m),
                None => break,
            },
            c = cmds.recv(), if cmds_open => match c {
                Some(c) => t.command(clock::now(), c),
                None => cmds_open = false,
            },
            () = timer.fired() => t.on_timer(clock::now()),
            _ = shutdown.changed() => break,
        }
    }
    t.stop();
}

impl Task {
    /// Settles the node: frames to the ports, events to the circuits' streams and the log.
    fn drain(&mut self, now: Instant) {
        loop {
            let mut any = false;
            while let Some(tx) = self.node.poll_transmit(now) {
                any = true;
                self.send(tx);
            }
            while let Some(e) = self.node.poll_event() {
                any = true;
                self.on_event(e);
            }
            if !any {
                break;
            }
        }
    }

    /// The node's timer: circuits' timers, or a broadcast (whose next one is logged: a random
    /// share of the interval earlier than the interval, so that nodes do not keep in step).
    fn on_timer(&mut self, now: Instant) {
        let due = self.node.next_broadcast();
        self.node.handle_timeout(now);
        if self.node.next_broadcast() != due {
            log_next_broadcast(&self.node, "NODES sent; next", now);
        }
    }

    fn send(&mut self, tx: Transmit) {
        let (port, out) = match tx {
            Transmit::Nodes { port, info } => (port, NetOut::Nodes(info)),
            Transmit::Datagram {
                port,
                neighbour,
                data,
            } => (port, NetOut::Datagram { neighbour, data }),
        };
        let Some(Some(ch)) = self.ports.get(port) else {
            return;
        };
        if ch.try_send(out).is_err() {
            self.dropped += 1;
            tracing::debug!(
                port,
                dropped = self.dropped,
                "port queue full, NET/ROM frame dropped"
            );
        }
    }

    fn input(&mut self, now: Instant, m: NetIn) {
        match m {
            NetIn::Nodes { port, from, info } => {
                tracing::debug!("NODES heard from {from} on {}", self.port_name(port));
                self.node.handle_nodes(now, port, from, &info)
            }
            NetIn::Datagram { port, from, data } => {
                self.node.handle_datagram(now, port, from, &data)
            }
            NetIn::LinkFailed { port, neighbour } => {
                tracing::info!(port = self.port_name(port), %neighbour, "NET/ROM neighbour does not answer: its routes go");
                self.node.link_failed(
                    now,
                    Via {
                        port,
                        call: neighbour,
                    },
                );
            }
        }
    }

    fn port_name(&self, port: usize) -> &str {
        self.port_names.get(port).map_or("?", String::as_str)
    }

    fn command(&mut self, now: Instant, c: NetCmd) {
        match c {
            NetCmd::Connect { user, dest, reply } => match self.node.connect(now, user, dest) {
                Ok(id) => {
                    tracing::info!(%user, node = %dest, circuit = %id, "NET/ROM connecting");
                    self.circuits.insert(id, CircuitIo::outgoing(reply));
                }
                Err(e) => {
                    let _ = reply.send(Err(format!("cannot reach {dest}: {e}")));
                }
            },
            NetCmd::SendIp { node, datagram } => {
                if let Err(e) = self.node.send_ip(node, &datagram) {
                    tracing::debug!(%node, error = %e, "IP datagram not sent over NET/ROM");
                }
            }
            NetCmd::View { reply } => {
                let _ = reply.send(NetromView::of(&self.node, &self.port_names));
            }
        }
    }

    fn on_event(&mut self, e: Event) {
        match e {
            Event::Incoming {
                circuit,
                user,
                node,
                origin,
                via,
            } => {
                let port = self.port_name(via.port).to_string();
                tracing::info!(%user, %node, %origin, neighbour = %via.call, %port, %circuit, "NET/ROM circuit in");
                let (io, theirs) = CircuitIo::incoming();
                self.circuits.insert(circuit, io);
                let caller = Caller {
                    remote: user,
                    arrival: Arrival::Netrom {
                        origin,
                        port,
                        neighbour: via.call,
                        routed: self.node.has_route_via(&origin, via),
                    },
                };
                (self.on_incoming)(theirs, caller);
            }
            Event::Connected { circuit } => {
                tracing::info!(%circuit, "NET/ROM circuit up");
                if let Some(io) = self.circuits.get_mut(&circuit) {
                    io.connected();
                }
            }
            Event::Data { circuit, data } => {
                if let Some(io) = self.circuits.get_mut(&circuit) {
                    io.received(&mut self.node, circuit, &data);
                }
            }
            Event::Closed { circuit, reason } => {
                tracing::info!(%circuit, ?reason, "NET/ROM circuit closed");
                if let Some(io) = self.circuits.get_mut(&circuit) {
                    io.closed(failure(reason));
                }
            }
            Event::Table(change) => self.log_change(&change),
            Event::Ip { origin, datagram } => {
                if let Some(tx) = &self.to_ip {
                    if tx.try_send((origin, datagram)).is_err() {
                        tracing::debug!(node = %origin, "IP router busy, datagram dropped");
                    }
                }
            }
            _ => {}
        }
    }

    /// One log line per route learned or lost.
    fn log_change(&self, change: &Change) {
        let port = |i: usize| self.port_names.get(i).map_or("?", String::as_str);
        match change {
            Change::RouteLearned {
                node,
                alias,
                via,
                quality,
            } => tracing::info!(
                "NET/ROM route learned: {alias}:{node} via {} on port {}, quality {quality}",
                via.call,
                port(via.port)
            ),
            Change::RouteLost {
                node,
                alias,
                via,
                why,
                last,
            } => {
                let why = match why {
                    Loss::Obsolete => "obsolete",
                    Loss::Replaced => "a better route replaced it",
                    Loss::Evicted => "the node table is full",
                    Loss::LinkFailed => "its neighbour does not answer",
                };
                let gone = if *last { "; node gone" } else { "" };
                tracing::info!(
                    "NET/ROM route lost: {alias}:{node} via {} on port {} ({why}){gone}",
                    via.call,
                    port(via.port)
                );
            }
            _ => {}
        }
    }

    /// Moves bytes between the circuits and their streams; `Ready` when anything happened.
    fn poll_io(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let now = clock::now();
        let mut progress = false;
        for (&id, io) in self.circuits.iter_mut() {
            progress |= io.poll(cx, &mut self.node, id, now);
        }
        let before = self.circuits.len();
        self.circuits.retain(|_, io| !io.finished());
        progress |= self.circuits.len() != before;
        if progress {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Shutdown: every circuit closed at once, the disconnect requests handed to the ports.
    fn stop(&mut self) {
        let ids: Vec<CircuitId> = self.circuits.keys().copied().collect();
        for id in ids {
            self.node.abort(id);
        }
        let now = clock::now();
        while let Some(tx) = self.node.poll_transmit(now) {
            self.send(tx);
        }
    }
}

/// `what in N ms`: when the node broadcasts next (one line per broadcast: every 30 minutes by
/// default, and the sysop sees the jitter).
fn log_next_broadcast(node: &Node, what: &str, now: Instant) {
    if let Some(next) = node.next_broadcast() {
        let ms = next.saturating_duration_since(now).as_millis();
        tracing::info!("NET/ROM {what} broadcast in {ms} ms");
    }
}

/// What went wrong, when a circuit closed for a reason its user should hear; `None` for a
/// close by either end.
fn failure(reason: CloseReason) -> Option<&'static str> {
    match reason {
        CloseReason::Refused => Some("refused (busy)"),
        CloseReason::Timeout => Some("no answer"),
        CloseReason::Reset => Some("reset by the far node"),
        CloseReason::Unreachable => Some("no route any more"),
        _ => None,
    }
}
