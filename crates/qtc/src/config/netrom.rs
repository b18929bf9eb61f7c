//! `[netrom]` and each `[[port]]`'s `netrom_quality`: the NET/ROM node, checked into
//! [`Netrom`]. NET/ROM is on when any port has a quality above 0; it then needs an alias.

use std::time::Duration;

use qtc_callsign::Callsign;
use qtc_netrom::{Alias, LockedRoute};
use serde::Deserialize;

use super::radio::{Ax25, RadioPort};
use super::{parse_duration, KeyError};

/// `[netrom]` as written; a key not written keeps the node's default
/// ([`qtc_netrom::Config::new`], the one place the defaults are written).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(super) struct NetromCfg {
    /// The node's alias, 1-6 characters (JNOS `netrom alias`, LinBPQ `NODEALIAS`).
    alias: String,
    /// The node callsign (default: `[station] callsign` with the lowest SSID that is not a BBS
    /// one).
    callsign: String,
    /// How often NODES go out, and routes age ("30m").
    broadcast: Option<String>,
    /// Routes below this quality are neither learned nor broadcast.
    min_quality: Option<u8>,
    /// A route's obsolescence count when heard.
    obsolescence: Option<u8>,
    /// Routes below this count are not broadcast.
    obsolescence_min: Option<u8>,
    /// Most nodes kept.
    max_nodes: Option<usize>,
    /// Most neighbours kept.
    max_neighbours: Option<usize>,
    /// Most circuits at once.
    max_circuits: Option<usize>,
    /// Most circuits from one originating node.
    max_circuits_per_node: Option<usize>,
    /// Most circuits in through one neighbour (default: half of `max_circuits`).
    max_circuits_per_neighbour: Option<usize>,
    /// Time to live of our datagrams.
    ttl: Option<u8>,
    /// Circuit window.
    window: Option<u8>,
    /// Transport timeout: how long a frame waits for its acknowledgement.
    transport_timeout: Option<String>,
    /// Tries before a circuit is given up.
    transport_retries: Option<u8>,
    /// How long an acknowledgement may wait for data to ride on.
    ack_delay: Option<String>,
    /// Locked routes.
    route: Vec<RouteCfg>,
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
    station: Callsign,
    ax25: &Ax25,
    ports: &[RadioPort],
) -> Result<Option<Netrom>, KeyError> {
    let key = |k: &str| format!("[netrom] {k}");
    let Some(on) = ports.iter().find(|p| p.netrom_quality > 0) else {
        return Ok(None);
    };
    let alias: Alias = cfg.alias.parse().map_err(|_| {
        KeyError::new(
            key("alias"),
            format!(
                "NET/ROM is on ([[port]] {} netrom_quality = {}): give the node an alias of 1 to \
                 6 letters and digits, such as \"QTCA\", got {:?}",
                on.name, on.netrom_quality, cfg.alias
            ),
        )
    })?;
    let call =
        node_call(&cfg.callsign, station, ax25).map_err(|m| KeyError::new(key("callsign"), m))?;
    let mut node = qtc_netrom::Config::new(call, alias);
    let dur = |k: &str, v: &str| {
        parse_duration(v).filter(|d| !d.is_zero()).ok_or_else(|| {
            KeyError::new(
                key(k),
                format!("expected a duration such as \"30m\", got {v:?}"),
            )
        })
    };
    if let Some(v) = &cfg.broadcast {
        node.broadcast = dur("broadcast", v)?;
    }
    if let Some(v) = &cfg.transport_timeout {
        node.circuit.timeout = dur("transport_timeout", v)?;
    }
    if let Some(v) = &cfg.ack_delay {
        node.circuit.ack_delay = dur("ack_delay", v)?.min(Duration::from_secs(60));
    }
    node.ports = ports.iter().map(|p| p.netrom_quality).collect();
    node.min_quality = cfg.min_quality.unwrap_or(node.min_quality);
    let written = |v: Option<_>, default, k: &str| nonzero(v.unwrap_or(default), key(k));
    node.obsolescence = written(cfg.obsolescence, node.obsolescence, "obsolescence")?;
    node.obsolescence_min = cfg
        .obsolescence_min
        .unwrap_or(node.obsolescence_min)
        .min(node.obsolescence);
    let count = |v: Option<usize>, default, k: &str| nonzero(v.unwrap_or(default), key(k));
    node.max_nodes = count(cfg.max_nodes, node.max_nodes, "max_nodes")?;
    node.max_neighbours = count(cfg.max_neighbours, node.max_neighbours, "max_neighbours")?;
    node.max_circuits = count(cfg.max_circuits, node.max_circuits, "max_circuits")?;
    if node.max_circuits > qtc_netrom::MAX_CIRCUITS {
        return Err(KeyError::new(
            key("max_circuits"),
            format!("expected 1 to {}", qtc_netrom::MAX_CIRCUITS),
        ));
    }
    node.max_circuits_per_node = count(
        cfg.max_circuits_per_node,
        node.max_circuits_per_node,
        "max_circuits_per_node",
    )?;
    let per_neighbour = (node.max_circuits / 2).max(1);
    node.max_circuits_per_neighbour = count(
        cfg.max_circuits_per_neighbour,
        per_neighbour,
        "max_circuits_per_neighbour",
    )?;
    // The BBS's calls are never another node's (a neighbour advertising them would take
    // users' `C N0QTC` away).
    node.own_calls = ax25.bbs_calls.clone();
    node.ttl = written(cfg.ttl, node.ttl, "ttl")?;
    let window = cfg.window.unwrap_or(node.circuit.window);
    if !(1..=qtc_netrom::wire::MAX_WINDOW).contains(&window) {
        return Err(KeyError::new(key("window"), "expected 1 to 127"));
    }
    node.circuit.window = window;
    let retries = cfg.transport_retries.unwrap_or(node.circuit.retries);
    node.circuit.retries = nonzero(retries, key("transport_retries"))?;
    for (i, r) in cfg.route.iter().enumerate() {
        node.locked
            .push(locked(r, ports).map_err(|e| e.within(&format!("[[netrom.route]] #{}", i + 1)))?);
    }
    Ok(Some(Netrom { node }))
}

/// The node's callsign: as written, or the station's with the lowest SSID the BBS does not
/// answer to. It must not be a BBS callsign: a connect to the node call is a NET/ROM link
/// first (JNOS's interface call beside its `bbscall`, LinBPQ's NODECALL beside its BBS).
fn node_call(written: &str, station: Callsign, ax25: &Ax25) -> Result<Callsign, String> {
    if written.is_empty() {
        return (0..=qtc_callsign::MAX_SSID)
            .filter_map(|ssid| station.with_ssid(ssid).ok())
            .find(|c| !ax25.bbs_calls.contains(c))
            .ok_or_else(|| "every SSID is a BBS one ([ax25] bbs_ssids): give the node one".into());
    }
    let call: Callsign = written
        .parse()
        .map_err(|e| format!("{written:?} is no AX.25 callsign: {e}"))?;
    if ax25.bbs_calls.contains(&call) {
        return Err(format!(
            "{call} is also a BBS callsign ([ax25] bbs_ssids): give the node an SSID of its own, \
             as JNOS's netrom call beside its bbscall"
        ));
    }
    Ok(call)
}

fn nonzero<T: PartialEq + Default>(v: T, key: String) -> Result<T, KeyError> {
    if v == T::default() {
        return Err(KeyError::new(key, "expected a number above 0"));
    }
    Ok(v)
}

fn locked(r: &RouteCfg, ports: &[RadioPort]) -> Result<LockedRoute, KeyError> {
    let port = ports
        .iter()
        .position(|p| p.name == r.port)
        .ok_or_else(|| KeyError::new("port", format!("no [[port]] is named {:?}", r.port)))?;
    let call = |k: &str, v: &str| {
        v.parse::<Callsign>()
            .map_err(|e| KeyError::new(k, format!("{v:?} is no callsign: {e}")))
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
        r.alias
            .parse()
            .map_err(|_| KeyError::new("alias", format!("{:?}: 1 to 6 characters", r.alias)))?
    };
    Ok(LockedRoute {
        port,
        neighbour,
        node,
        alias,
        quality: r.quality,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::parse;
    use std::path::Path;

    const PORT: &str =
        "[[port]]\nname = \"vhf\"\nkind = \"kiss-tcp\"\naddress = \"127.0.0.1:8001\"\n";

    fn load(text: &str) -> Result<crate::config::Loaded, crate::config::ConfigError> {
        parse(
            &format!("[station]\ncallsign = \"N0QTC\"\n{text}"),
            "qtc.toml",
            Path::new("/etc/qtc"),
        )
    }

    #[test]
    fn off_without_a_port_quality_and_defaults_when_on() {
        assert!(load(PORT).unwrap().netrom.is_none());
        let l = load(&format!(
            "{PORT}netrom_quality = 192\n[netrom]\nalias = \"qtca\"\n"
        ))
        .unwrap();
        let n = l.netrom.unwrap().node;
        assert_eq!(n.alias.as_str(), "QTCA");
        // The BBS answers to N0QTC (bbs_ssids = [0]): the node takes the next SSID.
        assert_eq!(n.call.to_string(), "N0QTC-1");
        assert_eq!(n.ports, vec![192]);
        assert_eq!(n.broadcast, std::time::Duration::from_secs(1800));
        assert_eq!(
            (n.obsolescence, n.obsolescence_min, n.min_quality),
            (6, 5, 10)
        );
        assert_eq!(
            (
                n.max_circuits,
                n.max_circuits_per_node,
                n.max_circuits_per_neighbour
            ),
            (32, 8, 16)
        );
        assert_eq!(n.own_calls, vec!["N0QTC".parse().unwrap()]);
        assert_eq!(n.circuit.timeout, std::time::Duration::from_secs(30));
    }

    #[test]
    fn the_example_writes_the_nodes_defaults() {
        let example = crate::config::EXAMPLE;
        let at = example.find("[netrom]\n").unwrap();
        let section = &example[at..];
        let section = &section[..section.find("\n\n[").unwrap()];
        let on = format!("{PORT}netrom_quality = 192\n");
        let written = load(&format!("{on}{section}\nalias = \"QTCA\"\n")).unwrap();
        let unwritten = load(&format!("{on}[netrom]\nalias = \"QTCA\"\n")).unwrap();
        assert_eq!(written.netrom.unwrap().node, unwritten.netrom.unwrap().node);
    }

    #[test]
    fn errors_name_the_key_and_the_fix() {
        let e = load(&format!("{PORT}netrom_quality = 192\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("[netrom] alias") && e.contains("netrom_quality = 192"),
            "{e}"
        );
        let e = load(&format!(
            "{PORT}netrom_quality = 192\n[netrom]\nalias = \"Q\"\ncallsign = \"N0QTC\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("[netrom] callsign") && e.contains("bbs_ssids"),
            "{e}"
        );
        let e = load(&format!(
            "{PORT}netrom_quality = 192\n[netrom]\nalias = \"Q\"\nbroadcast = \"often\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("[netrom] broadcast"), "{e}");
        let e = load(&format!(
            "{PORT}netrom_quality = 192\n[netrom]\nalias = \"Q\"\n\
             [[netrom.route]]\nport = \"uhf\"\nneighbour = \"N0BBB\"\nquality = 200\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("[[netrom.route]] #1 port"), "{e}");
        let e = load(&format!(
            "{PORT}[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"netrom:BBB\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("connect") && e.contains("NET/ROM is off"), "{e}");
    }

    #[test]
    fn a_locked_route() {
        let l = load(&format!(
            "{PORT}netrom_quality = 192\n[netrom]\nalias = \"Q\"\ncallsign = \"N0QTC-7\"\n\
             [[netrom.route]]\nport = \"vhf\"\nneighbour = \"N0BBB-1\"\nquality = 200\n\
             [[netrom.route]]\nport = \"vhf\"\nneighbour = \"N0BBB-1\"\nnode = \"N0CCC\"\nalias = \"ccc\"\nquality = 150\n"
        ))
        .unwrap();
        let n = l.netrom.unwrap().node;
        assert_eq!(n.call.to_string(), "N0QTC-7");
        assert_eq!(n.locked.len(), 2);
        assert_eq!(n.locked[0].node, n.locked[0].neighbour);
        assert_eq!(n.locked[1].alias.as_str(), "CCC");
    }
}
