//! `[netrom]` and each `[[port]]`'s `netrom_quality`: the NET/ROM node, checked into
//! [`Netrom`]. NET/ROM is on when any port has a quality above 0; it then needs an alias.

use std::time::Duration;

use qtc_ax25::Callsign;
use qtc_netrom::{Alias, LockedRoute};
use serde::Deserialize;

use super::parse_duration;
use super::radio::RadioPort;

/// `[netrom]` as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(super) struct NetromCfg {
    /// The node's alias, 1-6 characters (JNOS `netrom alias`, LinBPQ `NODEALIAS`).
    alias: String,
    /// The node callsign (default: `[station] callsign`).
    callsign: String,
    /// How often NODES go out, and routes age ("30m").
    broadcast: String,
    /// Routes below this quality are neither learned nor broadcast.
    min_quality: u8,
    /// A route's obsolescence count when heard.
    obsolescence: u8,
    /// Routes below this count are not broadcast.
    obsolescence_min: u8,
    /// Most nodes kept.
    max_nodes: usize,
    /// Most neighbours kept.
    max_neighbours: usize,
    /// Most circuits at once.
    max_circuits: usize,
    /// Time to live of our datagrams.
    ttl: u8,
    /// Circuit window.
    window: u8,
    /// Transport timeout: how long a frame waits for its acknowledgement.
    transport_timeout: String,
    /// Tries before a circuit is given up.
    transport_retries: u8,
    /// How long an acknowledgement may wait for data to ride on.
    ack_delay: String,
    /// Locked routes.
    route: Vec<RouteCfg>,
}

impl Default for NetromCfg {
    fn default() -> Self {
        NetromCfg {
            alias: String::new(),
            callsign: String::new(),
            broadcast: "30m".into(),
            min_quality: 10,
            obsolescence: 6,
            obsolescence_min: 5,
            max_nodes: 500,
            max_neighbours: 32,
            max_circuits: 32,
            ttl: 16,
            window: 4,
            transport_timeout: "60s".into(),
            transport_retries: 3,
            ack_delay: "3s".into(),
            route: Vec::new(),
        }
    }
}

/// `[[netrom.route]]`: a route the sysop locks (LinBPQ `ROUTES:`, JNOS `netrom route add`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct RouteCfg {
    /// The port the neighbour is on.
    port: String,
    /// The neighbour's callsign.
    neighbour: String,
    /// The route's quality.
    quality: u8,
    /// The destination (default: the neighbour itself, fixing its quality).
    #[serde(default)]
    node: String,
    /// The destination's alias.
    #[serde(default)]
    alias: String,
}

/// The NET/ROM node, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Netrom {
    /// The node's settings; `ports` follows the order of the `[[port]]` tables.
    pub node: qtc_netrom::Config,
}

/// Checks `[netrom]` against the ports; `None` when no port has a NET/ROM quality.
pub(super) fn check(
    cfg: &NetromCfg,
    station: &str,
    ports: &[RadioPort],
) -> Result<Option<Netrom>, (String, String)> {
    let key = |k: &str| format!("[netrom] {k}");
    let Some(on) = ports.iter().find(|p| p.netrom_quality > 0) else {
        return Ok(None);
    };
    let alias: Alias = cfg.alias.parse().map_err(|_| {
        (
            key("alias"),
            format!(
                "NET/ROM is on ([[port]] {} netrom_quality = {}): give the node an alias of 1 to \
                 6 letters and digits, such as \"QTCA\", got {:?}",
                on.name, on.netrom_quality, cfg.alias
            ),
        )
    })?;
    let call = if cfg.callsign.is_empty() {
        station
    } else {
        &cfg.callsign
    };
    let call: Callsign = call.parse().map_err(|e| {
        (
            key("callsign"),
            format!("{call:?} is no AX.25 callsign: {e}"),
        )
    })?;
    let mut node = qtc_netrom::Config::new(call, alias);
    let dur = |k: &str, v: &str| {
        parse_duration(v).filter(|d| !d.is_zero()).ok_or_else(|| {
            (
                key(k),
                format!("expected a duration such as \"30m\", got {v:?}"),
            )
        })
    };
    node.broadcast = dur("broadcast", &cfg.broadcast)?;
    node.circuit.timeout = dur("transport_timeout", &cfg.transport_timeout)?;
    node.circuit.ack_delay = dur("ack_delay", &cfg.ack_delay)?.min(Duration::from_secs(60));
    node.ports = ports.iter().map(|p| p.netrom_quality).collect();
    node.min_quality = cfg.min_quality;
    node.obsolescence = nonzero(cfg.obsolescence, key("obsolescence"))?;
    node.obsolescence_min = cfg.obsolescence_min.min(cfg.obsolescence);
    node.max_nodes = nonzero(cfg.max_nodes, key("max_nodes"))?;
    node.max_neighbours = nonzero(cfg.max_neighbours, key("max_neighbours"))?;
    node.max_circuits = nonzero(cfg.max_circuits, key("max_circuits"))?;
    if node.max_circuits > qtc_netrom::MAX_CIRCUITS {
        return Err((
            key("max_circuits"),
            format!("expected 1 to {}", qtc_netrom::MAX_CIRCUITS),
        ));
    }
    node.ttl = nonzero(cfg.ttl, key("ttl"))?;
    if !(1..=qtc_netrom::wire::MAX_WINDOW).contains(&cfg.window) {
        return Err((key("window"), "expected 1 to 127".into()));
    }
    node.circuit.window = cfg.window;
    node.circuit.retries = nonzero(cfg.transport_retries, key("transport_retries"))?;
    for (i, r) in cfg.route.iter().enumerate() {
        node.locked.push(
            locked(r, ports).map_err(|m| (format!("[[netrom.route]] #{} {}", i + 1, m.0), m.1))?,
        );
    }
    Ok(Some(Netrom { node }))
}

fn nonzero<T: PartialEq + Default>(v: T, key: String) -> Result<T, (String, String)> {
    if v == T::default() {
        return Err((key, "expected a number above 0".into()));
    }
    Ok(v)
}

fn locked(r: &RouteCfg, ports: &[RadioPort]) -> Result<LockedRoute, (String, String)> {
    let port = ports.iter().position(|p| p.name == r.port).ok_or_else(|| {
        (
            "port".to_string(),
            format!("no [[port]] is named {:?}", r.port),
        )
    })?;
    let call = |k: &str, v: &str| {
        v.parse::<Callsign>()
            .map_err(|e| (k.to_string(), format!("{v:?} is no callsign: {e}")))
    };
    let neighbour = call("neighbour", &r.neighbour)?;
    let node = if r.node.is_empty() {
        neighbour
    } else {
        call("node", &r.node)?
    };
    let alias = if r.alias.is_empty() {
        Alias::NONE
    } else {
        r.alias.parse().map_err(|_| {
            (
                "alias".to_string(),
                format!("{:?}: 1 to 6 characters", r.alias),
            )
        })?
    };
    Ok(LockedRoute {
        port,
        neighbour,
        node,
        alias,
        quality: r.quality,
    })
}
