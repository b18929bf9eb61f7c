//! The node and neighbour tables NODES broadcasts build (NET/ROM's routing), with their
//! limits.
//!
//! A *neighbour* is a node heard directly on a port; a *node* is any destination, reached
//! through up to [`MAX_ROUTES`] neighbours. A route heard in a neighbour's broadcast gets
//! quality `(advertised × neighbour quality + 128) / 256` (JNOS rounds; the NET/ROM
//! definition is the product over 256), where the neighbour quality is the port's
//! `netrom_quality` or a locked route's. Each learned route starts at the obsolescence count
//! and loses one at each of our broadcasts; a broadcast that still advertises it sets it back.
//! At 0 the route goes; below the minimum count it is no longer advertised. Locked routes
//! (the sysop's) never age and keep their quality; recorded routes (quality 0) are learned
//! from datagrams whose origin we had no route to, so their circuits can be answered, and are
//! never advertised.

use std::collections::BTreeMap;

use qtc_callsign::Callsign;

use crate::wire::{Alias, Nodes, NodesEntry};

/// Routes kept per node (the best ones), as NET/ROM nodes keep three.
pub const MAX_ROUTES: usize = 3;

/// A neighbour: a node heard directly, on one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Via {
    /// The port (index into the node's ports).
    pub port: usize,
    /// Its callsign.
    pub call: Callsign,
}

/// How a route came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteKind {
    /// From a NODES broadcast; ages.
    Learned,
    /// Set by the sysop; never ages, keeps its quality.
    Locked,
    /// Guessed from a datagram's origin (quality 0); ages, never advertised.
    Recorded,
}

/// One way to reach a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// Through which neighbour.
    pub via: Via,
    /// 0-255.
    pub quality: u8,
    /// Broadcasts left before it goes (locked routes: not counted).
    pub obsolescence: u8,
    /// Learned, locked or recorded.
    pub kind: RouteKind,
}

/// A destination node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEntry {
    /// Its callsign.
    pub call: Callsign,
    /// Its alias (may be empty).
    pub alias: Alias,
    /// Best first, at most [`MAX_ROUTES`].
    pub routes: Vec<Route>,
}

impl NodeEntry {
    /// The route datagrams take: the best quality.
    #[must_use]
    pub fn best(&self) -> Option<&Route> {
        self.routes.first()
    }
}

/// A neighbour's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// Where it is.
    pub via: Via,
    /// The quality its broadcasts are weighed with: a locked route's, else its port's (0
    /// until its first broadcast, for a neighbour known only from a datagram).
    pub quality: u8,
    /// The sysop locked its quality.
    pub locked: bool,
    /// Our broadcasts since its last one; `None` until it has broadcast (a neighbour known only
    /// from a datagram or the sysop's route).
    pub missed: Option<u8>,
}

/// Something that changed in the tables, for the log and the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// A new route to `node` (a new node, or another way to one we knew).
    RouteLearned {
        /// The destination.
        node: Callsign,
        /// Its alias.
        alias: Alias,
        /// Through which neighbour.
        via: Via,
        /// Its quality.
        quality: u8,
    },
    /// A route went.
    RouteLost {
        /// The destination.
        node: Callsign,
        /// Its alias.
        alias: Alias,
        /// Through which neighbour.
        via: Via,
        /// Why.
        why: Loss,
        /// It was the node's last route: the node is gone from the table.
        last: bool,
    },
}

/// Why a route went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// Its obsolescence count ran out: no broadcast advertised it for that long.
    Obsolete,
    /// A better route took its place among the [`MAX_ROUTES`].
    Replaced,
    /// The node table was full and a better node took its place.
    Evicted,
    /// The AX.25 link to its neighbour failed (no answer, or refused): the neighbour is gone.
    LinkFailed,
}

/// A neighbour none of whose broadcasts came in for this many of ours is called (the node
/// sends it a datagram, which needs an AX.25 link): if the link fails the neighbour is gone,
/// and its routes with it. Broadcasts are UI frames and get lost; a link is proof either way.
/// Without this, the routes through a neighbour that went away lasted their whole obsolescence
/// count (six of our intervals by default) and were used all that time.
pub const SILENT_AFTER: u8 = 3;

/// What the tables need from the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableConfig {
    /// Our node callsign (entries naming it are loops and ignored).
    pub call: Callsign,
    /// The station's other callsigns (its BBS's): never nodes elsewhere.
    pub own: Vec<Callsign>,
    /// Our alias: never another node's.
    pub alias: Alias,
    /// Routes below this quality are neither learned nor advertised.
    pub min_quality: u8,
    /// A learned route's obsolescence count when heard.
    pub obsolescence: u8,
    /// Routes whose count fell below this are not advertised.
    pub obsolescence_min: u8,
    /// Most nodes kept.
    pub max_nodes: usize,
    /// Most neighbours kept.
    pub max_neighbours: usize,
}

/// The tables.
#[derive(Debug, Clone)]
pub struct Tables {
    cfg: TableConfig,
    nodes: BTreeMap<Callsign, NodeEntry>,
    neighbours: BTreeMap<Via, Neighbour>,
    changes: Vec<Change>,
}

impl Tables {
    /// Empty tables.
    #[must_use]
    pub fn new(cfg: TableConfig) -> Tables {
        Tables {
            cfg,
            nodes: BTreeMap::new(),
            neighbours: BTreeMap::new(),
            changes: Vec::new(),
        }
    }

    /// The nodes, by callsign.
    pub fn nodes(&self) -> impl Iterator<Item = &NodeEntry> {
        self.nodes.values()
    }

    /// The neighbours.
    pub fn neighbours(&self) -> impl Iterator<Item = &Neighbour> {
        self.neighbours.values()
    }

    /// One node.
    #[must_use]
    pub fn node(&self, call: &Callsign) -> Option<&NodeEntry> {
        self.nodes.get(call)
    }

    /// The node a user means by `name`: an alias (any case) or a callsign.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<&NodeEntry> {
        if let Some(n) = self.nodes.values().find(|n| n.alias.matches(name)) {
            return Some(n);
        }
        let call: Callsign = name.parse().ok()?;
        self.nodes.get(&call)
    }

    /// The changes since the last call, oldest first.
    pub fn take_changes(&mut self) -> Vec<Change> {
        std::mem::take(&mut self.changes)
    }

    /// Sets a route the sysop locked: `node` (alias `alias`) through `via` at `quality`.
    /// Locking a neighbour's own route also fixes the quality its broadcasts are weighed with.
    pub fn lock(&mut self, node: Callsign, alias: Alias, via: Via, quality: u8) {
        if node == via.call {
            self.neighbours.insert(
                via,
                Neighbour {
                    via,
                    quality,
                    locked: true,
                    missed: None,
                },
            );
        }
        self.offer(node, alias, via, quality, RouteKind::Locked);
    }

    /// A NODES broadcast from `via` heard on a port whose NET/ROM quality is `port_quality`.
    /// Returns whether `via` is a neighbour we had not heard before.
    pub fn hear(&mut self, via: Via, port_quality: u8, msg: &Nodes) -> bool {
        if self.is_ours(&via.call) {
            // Our own broadcast heard back, or someone sending as us.
            return false;
        }
        let known = self.neighbours.get(&via);
        let new = known.is_none();
        if new && self.neighbours.len() >= self.cfg.max_neighbours {
            tracing::debug!(neighbour = %via.call, "neighbour table full, broadcast ignored");
            return false;
        }
        let nq = known
            .filter(|n| n.locked)
            .map_or(port_quality, |n| n.quality);
        // A neighbour calling itself by our alias would take users' `C ALIAS` away from us.
        let alias = if msg.alias == self.cfg.alias {
            Alias::NONE
        } else {
            msg.alias
        };
        self.offer(via.call, alias, via, nq, RouteKind::Learned);
        if let Some(n) = self.neighbours.get_mut(&via) {
            n.quality = nq;
            n.missed = Some(0);
        }
        for e in &msg.entries {
            self.hear_entry(via, nq, e);
        }
        new
    }

    fn hear_entry(&mut self, via: Via, nq: u8, e: &NodesEntry) {
        // A route through us, to us, or back to the sender itself would loop.
        if e.dest == self.cfg.call || e.neighbour == self.cfg.call || e.dest == via.call {
            return;
        }
        // Our station's other calls and our alias are ours alone: learned, they would send
        // users' `C N0QTC` (or `C QTCA`) to whoever advertised them.
        if self.is_ours(&e.dest) || (!e.alias.is_empty() && e.alias == self.cfg.alias) {
            tracing::debug!(neighbour = %via.call, dest = %e.dest, alias = %e.alias,
                "NODES entry naming this station ignored");
            return;
        }
        let q = combine(e.quality, nq);
        if q < self.cfg.min_quality || q == 0 {
            return;
        }
        self.offer(e.dest, e.alias, via, q, RouteKind::Learned);
    }

    /// A datagram from `origin` came through `via`: unless we have a better-founded route to
    /// `origin` through `via`, remember one (quality 0) so we can answer.
    pub fn record(&mut self, origin: Callsign, via: Via) {
        if self.is_ours(&origin) {
            return;
        }
        // A recorded route is kept fresh by the traffic that made it (JNOS); a learned or
        // locked one through the same neighbour is left as it is.
        if self.neighbours.contains_key(&via) || self.neighbours.len() < self.cfg.max_neighbours {
            self.offer(origin, Alias::NONE, via, 0, RouteKind::Recorded);
        }
    }

    /// One of our broadcasts is due: every route that is not locked ages by one; those at 0 go.
    /// Returns the neighbours silent for another [`SILENT_AFTER`] broadcasts, to be called.
    pub fn age(&mut self) -> Vec<Via> {
        let mut silent = Vec::new();
        for n in self.neighbours.values_mut() {
            if let Some(m) = n.missed.as_mut() {
                *m = m.saturating_add(1);
                if *m % SILENT_AFTER == 0 {
                    silent.push(n.via);
                }
            }
        }
        let mut lost = Vec::new();
        for n in self.nodes.values_mut() {
            n.routes.retain_mut(|r| {
                if r.kind == RouteKind::Locked {
                    return true;
                }
                r.obsolescence = r.obsolescence.saturating_sub(1);
                if r.obsolescence == 0 {
                    lost.push((n.call, n.alias, r.via));
                }
                r.obsolescence > 0
            });
        }
        for (node, alias, via) in lost {
            self.lost(node, alias, via, Loss::Obsolete);
        }
        silent.retain(|v| self.neighbours.contains_key(v));
        silent
    }

    /// Every route through `via` goes (but the sysop's locked ones), with the neighbour.
    pub fn drop_via(&mut self, via: Via, why: Loss) {
        let mut lost = Vec::new();
        for n in self.nodes.values_mut() {
            n.routes.retain(|r| {
                let goes = r.via == via && r.kind != RouteKind::Locked;
                if goes {
                    lost.push((n.call, n.alias));
                }
                !goes
            });
        }
        for (node, alias) in lost {
            self.lost(node, alias, via, why);
        }
    }

    /// Whether we have a learned or locked route to `node` through `via` (a recorded one is
    /// no proof: any datagram leaves one).
    #[must_use]
    pub fn has_route_via(&self, node: &Callsign, via: Via) -> bool {
        self.nodes.get(node).is_some_and(|n| {
            n.routes
                .iter()
                .any(|r| r.via == via && r.kind != RouteKind::Recorded)
        })
    }

    /// Our node call, or one of the station's other calls.
    fn is_ours(&self, call: &Callsign) -> bool {
        *call == self.cfg.call || self.cfg.own.contains(call)
    }

    /// The entries of our broadcast: each node's best route that is fresh enough and good
    /// enough, and never a recorded one.
    #[must_use]
    pub fn advertised(&self) -> Vec<NodesEntry> {
        self.nodes
            .values()
            .filter_map(|n| {
                let r = n.routes.iter().find(|r| {
                    r.kind == RouteKind::Locked
                        || (r.kind == RouteKind::Learned
                            && r.obsolescence >= self.cfg.obsolescence_min)
                })?;
                (r.quality >= self.cfg.min_quality && r.quality > 0).then_some(NodesEntry {
                    dest: n.call,
                    alias: n.alias,
                    neighbour: r.via.call,
                    quality: r.quality,
                })
            })
            .collect()
    }

    /// Adds or refreshes a route.
    fn offer(&mut self, node: Callsign, alias: Alias, via: Via, quality: u8, kind: RouteKind) {
        if !self.nodes.contains_key(&node) && !self.make_room(quality) {
            return;
        }
        let obsolescence = self.cfg.obsolescence.max(1);
        let entry = self.nodes.entry(node).or_insert(NodeEntry {
            call: node,
            alias,
            routes: Vec::new(),
        });
        if !alias.is_empty() && kind != RouteKind::Recorded {
            entry.alias = alias;
        }
        let alias = entry.alias;
        let mut learned = false;
        let mut replaced = None;
        if let Some(r) = entry.routes.iter_mut().find(|r| r.via == via) {
            match (r.kind, kind) {
                // The sysop's word stands; a recorded guess never overrides a broadcast.
                (RouteKind::Locked, k) if k != RouteKind::Locked => {}
                (RouteKind::Learned, RouteKind::Recorded) => {}
                _ => {
                    // A guess from traffic that a broadcast (or the sysop) now founds is a
                    // route learned: by its alias, to be advertised.
                    learned = r.kind == RouteKind::Recorded && kind != RouteKind::Recorded;
                    *r = Route {
                        via,
                        quality,
                        obsolescence,
                        kind,
                    };
                }
            }
        } else {
            let new = Route {
                via,
                quality,
                obsolescence,
                kind,
            };
            if entry.routes.len() < MAX_ROUTES {
                entry.routes.push(new);
                learned = true;
            } else if let Some(worst) = worst_route(&entry.routes) {
                if entry.routes[worst].quality < quality {
                    replaced = Some(entry.routes[worst].via);
                    entry.routes[worst] = new;
                    learned = true;
                }
            }
        }
        // Best first; a locked route wins a tie.
        entry
            .routes
            .sort_by_key(|r| (std::cmp::Reverse(r.quality), r.kind != RouteKind::Locked));
        self.neighbours.entry(via).or_insert(Neighbour {
            via,
            quality: 0,
            locked: false,
            missed: None,
        });
        if let Some(old) = replaced {
            self.changes.push(Change::RouteLost {
                node,
                alias,
                via: old,
                why: Loss::Replaced,
                last: false,
            });
            self.drop_unused_neighbour(old);
        }
        if learned {
            self.changes.push(Change::RouteLearned {
                node,
                alias,
                via,
                quality,
            });
        }
    }

    /// Makes room for a new node of `quality` when the table is full: the node with the
    /// poorest best route goes if it is worse (locked nodes stay). False: no room.
    fn make_room(&mut self, quality: u8) -> bool {
        if self.nodes.len() < self.cfg.max_nodes {
            return true;
        }
        let worst = self
            .nodes
            .values()
            .filter(|n| n.routes.iter().all(|r| r.kind != RouteKind::Locked))
            .min_by_key(|n| n.best().map_or(0, |r| r.quality))
            .map(|n| (n.call, n.best().map_or(0, |r| r.quality)));
        match worst {
            Some((call, q)) if q < quality => {
                if let Some(n) = self.nodes.remove(&call) {
                    let count = n.routes.len();
                    for (i, r) in n.routes.iter().enumerate() {
                        self.changes.push(Change::RouteLost {
                            node: call,
                            alias: n.alias,
                            via: r.via,
                            why: Loss::Evicted,
                            last: i + 1 == count,
                        });
                        self.drop_unused_neighbour(r.via);
                    }
                }
                true
            }
            _ => {
                tracing::debug!("node table full, route ignored");
                false
            }
        }
    }

    /// Notes a route already taken out of its node, drops the node if it has none left, and
    /// the neighbour if nothing uses it.
    fn lost(&mut self, node: Callsign, alias: Alias, via: Via, why: Loss) {
        let last = self.nodes.get(&node).is_some_and(|n| n.routes.is_empty());
        if last {
            self.nodes.remove(&node);
        }
        self.changes.push(Change::RouteLost {
            node,
            alias,
            via,
            why,
            last,
        });
        self.drop_unused_neighbour(via);
    }

    fn drop_unused_neighbour(&mut self, via: Via) {
        let locked = self.neighbours.get(&via).is_some_and(|n| n.locked);
        let used = self
            .nodes
            .values()
            .any(|n| n.routes.iter().any(|r| r.via == via));
        if !locked && !used {
            self.neighbours.remove(&via);
        }
    }
}

/// A route's quality through a neighbour: NET/ROM's product over 256, rounded as JNOS does.
#[must_use]
pub fn combine(advertised: u8, neighbour: u8) -> u8 {
    let q = (u32::from(advertised) * u32::from(neighbour) + 128) / 256;
    u8::try_from(q).unwrap_or(u8::MAX)
}

/// The poorest route that is not locked.
fn worst_route(routes: &[Route]) -> Option<usize> {
    routes
        .iter()
        .enumerate()
        .filter(|(_, r)| r.kind != RouteKind::Locked)
        .min_by_key(|(_, r)| r.quality)
        .map(|(i, _)| i)
}
