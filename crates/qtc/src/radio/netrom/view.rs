//! The node's tables and circuits as the sysop and the users see them: `qtc ctl nodes`, the
//! web Status page, `NODES` and `ROUTES`.

use std::fmt::Write;

use qtc_netrom::{Node, RouteKind};
use serde::Serialize;

/// A snapshot of the node.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NetromView {
    /// Our node callsign.
    pub call: String,
    /// Our alias.
    pub alias: String,
    /// Destinations, by callsign.
    pub nodes: Vec<NodeRow>,
    /// Neighbours.
    pub neighbours: Vec<NeighbourRow>,
    /// Circuits open now.
    pub circuits: Vec<CircuitRow>,
    /// Counters since start.
    pub totals: Totals,
}

/// The node's counters since start.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Totals {
    /// NODES broadcasts heard.
    pub broadcasts_heard: u64,
    /// Datagrams received from neighbours.
    pub datagrams_in: u64,
    /// Datagrams passed on for other nodes.
    pub routed: u64,
    /// Datagrams dropped (no route, TTL spent, queue full).
    pub dropped: u64,
    /// Circuits opened, either way.
    pub circuits: u64,
    /// Information frames sent (first time).
    pub info_sent: u64,
    /// Information frames sent again.
    pub info_resent: u64,
    /// Transport timeouts.
    pub timeouts: u64,
}

/// One destination.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct NodeRow {
    /// Its alias (may be empty).
    pub alias: String,
    /// Its callsign.
    pub call: String,
    /// Its routes, best first.
    pub routes: Vec<RouteRow>,
}

/// One route to a destination.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct RouteRow {
    /// The neighbour it goes through.
    pub neighbour: String,
    /// The neighbour's port.
    pub port: String,
    /// Quality 0-255.
    pub quality: u8,
    /// Broadcasts left before it goes; `None` for a locked route.
    pub obsolescence: Option<u8>,
    /// `learned`, `locked` or `recorded`.
    pub kind: &'static str,
}

/// One neighbour.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct NeighbourRow {
    /// Its port.
    pub port: String,
    /// Its callsign.
    pub call: String,
    /// The quality its broadcasts are weighed with.
    pub quality: u8,
    /// The sysop locked it.
    pub locked: bool,
    /// Destinations whose best route goes through it.
    pub nodes: usize,
}

/// One circuit.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CircuitRow {
    /// Its index/id here.
    pub id: String,
    /// `in` (opened by the far end) or `out`.
    pub direction: &'static str,
    /// The user (the far end's if in, ours if out).
    pub user: String,
    /// The node at the other end.
    pub node: String,
    /// `connecting`, `connected`, `disconnecting`.
    pub state: &'static str,
    /// Its window.
    pub window: u8,
    /// Bytes queued or unacknowledged.
    pub unsent: usize,
    /// Information frames sent again.
    pub resent: u64,
}

impl NodeRow {
    /// `ALIAS:CALL`, as NET/ROM nodes list them (just the call with no alias).
    pub fn name(&self) -> String {
        if self.alias.is_empty() {
            self.call.clone()
        } else {
            format!("{}:{}", self.alias, self.call)
        }
    }
}

impl NetromView {
    /// The snapshot of `node`, with port names by index.
    pub fn of(node: &Node, ports: &[String]) -> NetromView {
        let port = |i: usize| ports.get(i).cloned().unwrap_or_else(|| i.to_string());
        let nodes = node
            .nodes()
            .map(|n| NodeRow {
                alias: n.alias.to_string(),
                call: n.call.to_string(),
                routes: n
                    .routes
                    .iter()
                    .map(|r| RouteRow {
                        neighbour: r.via.call.to_string(),
                        port: port(r.via.port),
                        quality: r.quality,
                        obsolescence: (r.kind != RouteKind::Locked).then_some(r.obsolescence),
                        kind: match r.kind {
                            RouteKind::Learned => "learned",
                            RouteKind::Locked => "locked",
                            RouteKind::Recorded => "recorded",
                        },
                    })
                    .collect(),
            })
            .collect::<Vec<_>>();
        let neighbours = node
            .neighbours()
            .map(|n| NeighbourRow {
                port: port(n.via.port),
                call: n.via.call.to_string(),
                quality: n.quality,
                locked: n.locked,
                nodes: node
                    .nodes()
                    .filter(|d| d.best().is_some_and(|r| r.via == n.via))
                    .count(),
            })
            .collect();
        let circuits = node
            .circuits()
            .into_iter()
            .map(|c| CircuitRow {
                id: c.id.to_string(),
                direction: if c.incoming { "in" } else { "out" },
                user: c.user.to_string(),
                node: c.peer_node.to_string(),
                state: match c.state {
                    qtc_netrom::CircuitState::Connecting => "connecting",
                    qtc_netrom::CircuitState::Connected => "connected",
                    qtc_netrom::CircuitState::Disconnecting => "disconnecting",
                    qtc_netrom::CircuitState::Closed => "closed",
                },
                window: c.window,
                unsent: c.unsent,
                resent: c.stats.info_resent,
            })
            .collect();
        let s = node.stats();
        NetromView {
            call: node.call().to_string(),
            alias: node.alias().to_string(),
            nodes,
            neighbours,
            circuits,
            totals: Totals {
                broadcasts_heard: s.broadcasts_heard,
                datagrams_in: s.datagrams_in,
                routed: s.routed,
                dropped: s.dropped,
                circuits: s.circuits,
                info_sent: s.transport.info_sent,
                info_resent: s.transport.info_resent,
                timeouts: s.transport.timeouts,
            },
        }
    }

    /// The node a user means by `name`: an alias (any case) or a callsign.
    pub fn find(&self, name: &str) -> Option<&NodeRow> {
        self.nodes
            .iter()
            .find(|n| !n.alias.is_empty() && n.alias.eq_ignore_ascii_case(name))
            .or_else(|| {
                self.nodes
                    .iter()
                    .find(|n| n.call.eq_ignore_ascii_case(name))
            })
    }

    /// `qtc ctl nodes`.
    pub fn text(&self) -> String {
        let mut out = format!("node {}:{}\n", self.alias, self.call);
        let _ = writeln!(out, "nodes ({}):", self.nodes.len());
        for n in &self.nodes {
            let _ = write!(out, "  {:<16}", n.name());
            for r in &n.routes {
                let obs = r.obsolescence.map_or("locked".into(), |o| o.to_string());
                let _ = write!(
                    out,
                    " {} via {} {} q{} obs {}",
                    r.kind, r.port, r.neighbour, r.quality, obs
                );
                out.push(';');
            }
            out.pop();
            out.push('\n');
        }
        let _ = writeln!(out, "neighbours ({}):", self.neighbours.len());
        for n in &self.neighbours {
            let lock = if n.locked { " locked" } else { "" };
            let _ = writeln!(
                out,
                "  {:<8} {:<9} q{}{lock}, best route to {} node(s)",
                n.port, n.call, n.quality, n.nodes
            );
        }
        let t = &self.totals;
        let _ = writeln!(
            out,
            "since start: {} broadcasts heard, {} datagrams in, {} passed on, {} dropped; \
             {} circuits, {} information frames sent, {} sent again, {} timeouts",
            t.broadcasts_heard,
            t.datagrams_in,
            t.routed,
            t.dropped,
            t.circuits,
            t.info_sent,
            t.info_resent,
            t.timeouts
        );
        let _ = writeln!(out, "circuits ({}):", self.circuits.len());
        for c in &self.circuits {
            let _ = writeln!(
                out,
                "  {:<7} {:<3} {:<9} at {:<9} {} window {} unsent {} resent {}",
                c.id, c.direction, c.user, c.node, c.state, c.window, c.unsent, c.resent
            );
        }
        out
    }
}
