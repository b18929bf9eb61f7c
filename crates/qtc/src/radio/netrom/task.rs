//! The node's task: frames from the ports, circuits' streams, requests, one timer.

use std::collections::BTreeMap;
use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use qtc_netrom::{Change, CircuitId, CloseReason, Event, Loss, Node, Transmit};
use tokio::sync::mpsc;

use super::bridge::CircuitIo;
use super::{NetCmd, NetIn, NetOut, NetromView, Setup};
use crate::clock;

struct Task {
    node: Node,
    ports: Vec<Option<mpsc::Sender<NetOut>>>,
    port_names: Vec<String>,
    circuits: BTreeMap<CircuitId, CircuitIo>,
    on_incoming: crate::radio::Incoming,
    view: Arc<Mutex<NetromView>>,
    /// The view is out of date.
    dirty: bool,
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
        view,
        mut shutdown,
        to_ip,
    } = setup;
    tracing::info!(node = %node.call(), alias = %node.alias(), "NET/ROM node up");
    let mut t = Task {
        node,
        ports,
        port_names,
        circuits: BTreeMap::new(),
        on_incoming,
        view,
        dirty: true,
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
            () = timer.fired() => t.node.handle_timeout(clock::now()),
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
        if self.dirty {
            self.dirty = false;
            let v = NetromView::of(&self.node, &self.port_names);
            *self.view.lock().unwrap_or_else(|e| e.into_inner()) = v;
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
            NetIn::Nodes { port, from, info } => self.node.handle_nodes(now, port, from, &info),
            NetIn::Datagram { port, from, data } => {
                self.node.handle_datagram(now, port, from, &data)
            }
        }
    }

    fn command(&mut self, now: Instant, c: NetCmd) {
        match c {
            NetCmd::Connect { user, dest, reply } => match self.node.connect(now, user, dest) {
                Ok(id) => {
                    tracing::info!(%user, node = %dest, circuit = %id, "NET/ROM connecting");
                    let (mut io, theirs) = CircuitIo::new();
                    io.pending = Some((theirs, reply));
                    self.circuits.insert(id, io);
                    self.dirty = true;
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
        }
    }

    fn on_event(&mut self, e: Event) {
        match e {
            Event::Incoming {
                circuit,
                user,
                node,
            } => {
                tracing::info!(%user, %node, %circuit, "NET/ROM circuit in");
                let (io, theirs) = CircuitIo::new();
                self.circuits.insert(circuit, io);
                // As for a link: (stream, where it came to, who is calling).
                (self.on_incoming)(theirs, node, user);
                self.dirty = true;
            }
            Event::Connected { circuit } => {
                tracing::info!(%circuit, "NET/ROM circuit up");
                if let Some(io) = self.circuits.get_mut(&circuit) {
                    io.connected();
                }
                self.dirty = true;
            }
            Event::Data { circuit, data } => {
                if let Some(io) = self.circuits.get_mut(&circuit) {
                    io.received(&mut self.node, circuit, &data);
                }
            }
            Event::Closed { circuit, reason } => {
                tracing::info!(%circuit, ?reason, "NET/ROM circuit closed");
                if let Some(io) = self.circuits.get_mut(&circuit) {
                    io.closed(why(reason));
                }
                self.dirty = true;
            }
            Event::Table(change) => {
                self.log_change(&change);
                self.dirty = true;
            }
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

/// Why a circuit closed, for a user waiting on a connect.
fn why(reason: CloseReason) -> &'static str {
    match reason {
        CloseReason::Refused => "refused (busy)",
        CloseReason::Timeout => "no answer",
        CloseReason::Reset => "reset by the far node",
        CloseReason::Unreachable => "no route any more",
        CloseReason::Remote => "closed by the far end",
        _ => "closed",
    }
}
