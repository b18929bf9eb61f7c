//! Questions about the node rather than the mail, which the daemon answers: who is on (`U`),
//! what the radio ports heard (`J`), the ports (`PORTS`) and the NET/ROM tables (`NODES`,
//! `ROUTES`).

use qtc_mail::Utc;

use super::help::Help;
use crate::ask::{Ask, NeighbourInfo, NodeInfo, OnlineUser, PortInfo};
use crate::session::Session;

pub(super) const HELP_USERS: Help = Help {
    names: &["U", "USERS"],
    usage: "U",
    what: "users online, and how they came in",
    example: "U",
};

pub(super) const HELP_HEARD: Help = Help {
    names: &["J", "MH"],
    usage: "J | MH",
    what: "stations heard on each radio port",
    example: "J",
};

pub(super) const HELP_NODES: Help = Help {
    names: &["NODES"],
    usage: "NODES [alias|call]",
    what: "NET/ROM nodes known; routes to one",
    example: "NODES BBSB",
};

pub(super) const HELP_ROUTES: Help = Help {
    names: &["ROUTES"],
    usage: "ROUTES",
    what: "NET/ROM neighbours and their quality",
    example: "ROUTES",
};

pub(super) const HELP_PORTS: Help = Help {
    names: &["PORTS"],
    usage: "PORTS",
    what: "the radio ports",
    example: "PORTS",
};

/// Nodes per line of `NODES`.
const NODES_PER_LINE: usize = 3;

/// Heard stations shown per port: enough for 1200 baud.
const HEARD_SHOWN: usize = 10;

impl Session {
    /// `U`.
    pub(super) fn show_users(&mut self, users: Vec<OnlineUser>) {
        self.say(&format!("{} online:\r", users.len()));
        for u in users {
            self.say(&format!("{:<9} {}\r", u.call, u.via));
        }
    }

    /// `PORTS`, and `J` with the stations heard.
    pub(super) fn show_ports(&mut self, ports: Vec<PortInfo>) {
        if ports.is_empty() {
            return self.say("No radio ports.\r");
        }
        for p in ports {
            self.say(&format!("{:<8} {}\r", p.name, p.what));
            for h in p.heard.iter().take(HEARD_SHOWN) {
                let t = Utc::from_unix(h.last);
                self.say(&format!(
                    "  {:<9} {:02}/{:02} {:02}:{:02}\r",
                    h.call, t.month, t.day, t.hour, t.minute
                ));
            }
        }
    }

    /// `NODES`, or `NODES name`.
    pub(super) fn show_nodes(&mut self, ask: Ask, nodes: &[NodeInfo]) {
        match ask {
            Ask::Nodes { node: Some(name) } => self.node_routes(&name, nodes),
            _ => self.node_list(nodes),
        }
    }

    /// `NODES`: `ALIAS:CALL`, three to a line, as NET/ROM nodes list them.
    fn node_list(&mut self, nodes: &[NodeInfo]) {
        if nodes.is_empty() {
            self.say("Nodes: none known yet.\r");
            return;
        }
        self.say(&format!("Nodes ({}):\r", nodes.len()));
        for row in nodes.chunks(NODES_PER_LINE) {
            let line: Vec<String> = row
                .iter()
                .map(|n| {
                    let name = if n.alias.is_empty() {
                        n.call.clone()
                    } else {
                        format!("{}:{}", n.alias, n.call)
                    };
                    format!("{name:<17}")
                })
                .collect();
            self.say(&format!("{}\r", line.concat().trim_end()));
        }
    }

    /// `NODES name`: the routes to one node, best first.
    fn node_routes(&mut self, name: &str, nodes: &[NodeInfo]) {
        let Some(n) = nodes.first() else {
            self.say(&format!("No such node: {name}.\r"));
            return;
        };
        self.say(&format!("Routes to {}:{}\r", n.alias, n.call));
        for r in &n.routes {
            let obs = r
                .obsolescence
                .map_or("locked".to_string(), |o| o.to_string());
            self.say(&format!(
                "  quality {:>3}  obs {:<6} {:<8} via {}\r",
                r.quality, obs, r.port, r.neighbour
            ));
        }
    }

    /// `ROUTES`: the neighbours.
    pub(super) fn show_neighbours(&mut self, neighbours: &[NeighbourInfo]) {
        if neighbours.is_empty() {
            self.say("Routes: no neighbours heard yet.\r");
            return;
        }
        self.say("Routes (port, neighbour, quality, nodes):\r");
        for n in neighbours {
            let lock = if n.locked { " (locked)" } else { "" };
            self.say(&format!(
                "  {:<8} {:<9} {:>3} {:>4}{lock}\r",
                n.port, n.call, n.quality, n.nodes
            ));
        }
    }
}
