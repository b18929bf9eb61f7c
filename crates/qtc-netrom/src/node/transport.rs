//! Layer-4 frames addressed to this node: which circuit takes each, new circuits and their
//! limits, and what a frame for no circuit gets.
//!
//! A frame names its circuit by our index and id, as JNOS (`get_n4circ`) and LinBPQ
//! (`FRAMEFORUS`) take it, whatever node it says it comes from: LinBPQ acknowledges a connect
//! to one of its applications from the application's call (N0BPQ-1) and sends the circuit's
//! data from its node call (N0BPQ). What keeps a stranger from injecting into a circuit is the
//! neighbour the frame came through: the one the circuit was set up through, or one we have a
//! learned or locked route to the far node through. A frame for a circuit we have that comes
//! any other way is dropped without a word (an answer would reach the real far end and close
//! its circuit).

use std::time::Instant;

use qtc_callsign::Callsign;

use super::{CircuitId, Event, Node};
use crate::circuit::{Circuit, CircuitState};
use crate::table::Via;
use crate::wire::{NetHeader, Transport, MAX_WINDOW};

/// Why a connect request was refused, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Every circuit is in use.
    Full,
    /// The originating node holds its share already.
    PerNode,
    /// Circuits through this neighbour hold their share already.
    PerNeighbour,
    /// A window of 0, or over 127.
    BadWindow,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::Full => "no free circuit",
            Refusal::PerNode => "its node has max_circuits_per_node circuits here",
            Refusal::PerNeighbour => {
                "the neighbour it came through carries max_circuits_per_neighbour circuits here"
            }
            Refusal::BadWindow => "bad window",
        })
    }
}

/// A connect request, as it arrived.
struct Request {
    origin: Callsign,
    via: Via,
    your: (u8, u8),
    window: u8,
    user: Callsign,
    user_node: Callsign,
}

impl Node {
    /// A transport frame addressed to us by `origin`, come through the neighbour `via`.
    pub(super) fn on_transport(&mut self, now: Instant, via: Via, origin: Callsign, bytes: &[u8]) {
        let t = match Transport::parse(bytes) {
            Ok(t) => t,
            Err(e) => {
                tracing::debug!(%origin, error = %e, "bad NET/ROM transport frame");
                return;
            }
        };
        match t {
            Transport::ConnectRequest {
                my_index,
                my_id,
                window,
                user,
                node,
                ..
            } => self.on_connect_request(Request {
                origin,
                via,
                your: (my_index, my_id),
                window,
                user,
                user_node: node,
            }),
            Transport::Reset {
                your_index: 0,
                your_id: 0,
                peer_index,
                peer_id,
            } => {
                // It names the circuit by the ids the sender chose for its end, which another
                // node may have chosen too: the sender must be that node (any SSID of its call,
                // as LinBPQ's node and applications are).
                let found = self.circuits.iter().flatten().position(|c| {
                    c.your == Some((peer_index, peer_id))
                        && c.peer_node.base() == origin.base()
                        && self.runs_through(c, via)
                });
                if let Some(i) = found {
                    if let Some(c) = self.circuits.iter_mut().flatten().nth(i) {
                        c.on_frame(now, t);
                    }
                }
            }
            Transport::Extension {
                family,
                proto,
                data,
            } => self.on_extension(origin, family, proto, data),
            other => self.for_circuit(now, via, origin, other),
        }
    }

    /// Whether a frame come through `via` may be `c`'s: the neighbour it was set up through,
    /// or one with a learned or locked route to its far node (never a route a datagram left:
    /// anyone can send those).
    pub(super) fn runs_through(&self, c: &Circuit, via: Via) -> bool {
        c.via == Some(via) || self.tables.has_route_via(&c.peer_node, via)
    }

    fn for_circuit(&mut self, now: Instant, via: Via, origin: Callsign, t: Transport) {
        let Some((index, id)) = t.circuit() else {
            return;
        };
        let circuit = CircuitId { index, id };
        let ours = self.circuit(circuit).map(|c| self.runs_through(c, via));
        match ours {
            Some(true) => {
                if let Some(c) = self.circuit_mut(circuit) {
                    c.via.get_or_insert(via);
                    c.on_frame(now, t);
                }
            }
            Some(false) => {
                tracing::debug!(%origin, neighbour = %via.call, %circuit, frame = t.name(),
                    "frame for a circuit that does not run through that neighbour, dropped");
            }
            None => self.answer_stranger(origin, &t),
        }
    }

    /// A frame for a circuit we do not have: tell the sender, so it stops.
    fn answer_stranger(&mut self, origin: Callsign, t: &Transport) {
        let answer = match *t {
            // It thinks a connect of ours is up: close its end.
            Transport::ConnectAck {
                my_index,
                my_id,
                refused: false,
                ..
            } => Transport::DisconnectRequest {
                your_index: my_index,
                your_id: my_id,
            },
            // G8PZT's reset, naming its circuit by the ids it used for ours.
            Transport::DisconnectRequest {
                your_index,
                your_id,
            }
            | Transport::Info {
                your_index,
                your_id,
                ..
            }
            | Transport::InfoAck {
                your_index,
                your_id,
                ..
            } => Transport::Reset {
                your_index: 0,
                your_id: 0,
                peer_index: your_index,
                peer_id: your_id,
            },
            _ => return,
        };
        tracing::debug!(%origin, frame = t.name(), "frame for no circuit, answered");
        self.send_transport(origin, &answer);
    }

    fn send_transport(&mut self, dest: Callsign, t: &Transport) {
        let h = NetHeader {
            origin: self.cfg.call,
            dest,
            ttl: self.cfg.ttl,
        };
        self.route(dest, h.datagram(&t.to_bytes()));
    }

    fn on_connect_request(&mut self, r: Request) {
        let same = self.circuits.iter_mut().flatten().find(|c| {
            c.incoming
                && c.state() != CircuitState::Closed
                && c.peer_node == r.origin
                && c.your == Some(r.your)
                && c.user == r.user
                && c.via == Some(r.via)
        });
        if let Some(c) = same {
            // The same request again (our acknowledge was lost): acknowledge again.
            if c.awaits_first_frame() {
                let ack = c.connect_ack();
                self.send_transport(r.origin, &ack);
                return;
            }
            // The peer has used this circuit: the same ids again mean a node that restarted
            // (ids start over at boot, in JNOS too) asks for a new circuit; the old one is dead.
            tracing::info!(user = %r.user, node = %r.origin, "NET/ROM connect request on a used circuit's ids: the peer restarted, old circuit dropped");
            c.drop_stale();
        }
        let slot = match self.admit(&r) {
            Ok(slot) => slot,
            Err(why) => {
                tracing::info!(user = %r.user, node = %r.origin, neighbour = %r.via.call, "NET/ROM connect refused: {why}");
                self.refuse(&r);
                return;
            }
        };
        self.probe_older(&r);
        let circuit = self.slot_id(slot);
        let mut c = Circuit::incoming(
            self.cfg.circuit.clone(),
            (circuit.index, circuit.id),
            r.your,
            r.window,
            r.origin,
            r.user,
            r.user_node,
        );
        c.via = Some(r.via);
        self.circuits[slot] = Some(c);
        self.stats.circuits += 1;
        self.events.push_back(Event::Incoming {
            circuit,
            user: r.user,
            node: r.user_node,
            origin: r.origin,
            via: r.via,
        });
    }

    /// A free slot for the request, within the caps on its node and its neighbour.
    fn admit(&self, r: &Request) -> Result<usize, Refusal> {
        if !(1..=MAX_WINDOW).contains(&r.window) {
            return Err(Refusal::BadWindow);
        }
        let open = || {
            self.circuits
                .iter()
                .flatten()
                .filter(|c| c.incoming && c.state() != CircuitState::Closed)
        };
        if open().filter(|c| c.peer_node == r.origin).count() >= self.cfg.max_circuits_per_node {
            return Err(Refusal::PerNode);
        }
        if open().filter(|c| c.via == Some(r.via)).count() >= self.cfg.max_circuits_per_neighbour {
            return Err(Refusal::PerNeighbour);
        }
        self.circuits
            .iter()
            .position(Option::is_none)
            .ok_or(Refusal::Full)
    }

    fn refuse(&mut self, r: &Request) {
        let refusal = Transport::ConnectAck {
            your_index: r.your.0,
            your_id: r.your.1,
            my_index: 0,
            my_id: 0,
            window: 0,
            refused: true,
            bpq_ttl: None,
        };
        self.send_transport(r.origin, &refusal);
    }

    /// The same user from the same node opens another circuit: their node may have restarted
    /// and forgotten the old ones (JNOS and LinBPQ drop frames for circuits they do not have,
    /// so nothing would ever close them). Each older circuit is asked for an acknowledgement;
    /// one whose far end is gone is given up after its retries, like any other.
    fn probe_older(&mut self, r: &Request) {
        for c in self.circuits.iter_mut().flatten() {
            if c.incoming && c.peer_node == r.origin && c.user == r.user {
                c.probe();
            }
        }
    }
}
