//! `[ip]`, `[[ip.route]]`, `[[ip.arp]]` and each `[[port]]`'s `ip` keys: the station as an IP
//! router between its TUN device and its radio ports (docs/radio.md, "IP over AX.25"), checked
//! into [`Ip`]. IP is on when `[ip] address` is set.

use std::net::Ipv4Addr;

use qtc_callsign::Callsign;
use qtc_ip::{Hop, PortConfig, Prefix, Route, StaticArp};
use serde::Deserialize;

use super::radio::{Ax25, RadioPort};
use super::{parse_duration, KeyError};

/// `[ip]` as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(super) struct IpCfg {
    /// The station's address and network on the air, "44.128.0.1/24"; empty: no IP.
    address: String,
    /// The TUN interface qtc creates and gives the address.
    tun: String,
    /// Our callsign for IP (default: `[station] callsign` with the lowest SSID that is not a
    /// BBS one, as the NET/ROM node's).
    callsign: String,
    /// The TUN interface's MTU (default: the largest of the IP ports' PACLEN).
    mtu: Option<usize>,
    /// Most ARP entries learned.
    max_arp: usize,
    /// How long a learned ARP entry lives.
    arp_life: String,
    /// Routes beyond the network.
    route: Vec<RouteCfg>,
    /// ARP entries the sysop fixes.
    arp: Vec<ArpCfg>,
}

impl Default for IpCfg {
    fn default() -> Self {
        IpCfg {
            address: String::new(),
            tun: "qtc0".into(),
            callsign: String::new(),
            mtu: None,
            max_arp: qtc_ip::arp_table::DEFAULT_MAX_ENTRIES,
            arp_life: "15m".into(),
            route: Vec::new(),
            arp: Vec::new(),
        }
    }
}

/// `[[ip.route]]`: addresses reached through a gateway on the air or a NET/ROM node.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct RouteCfg {
    /// The addresses, "44.130.0.0/16" (a bare address: that host).
    to: String,
    /// The gateway station's address (default: none, the addresses are on the air).
    #[serde(default)]
    via: String,
    /// The radio port (default: any IP port, where ARP finds the station).
    #[serde(default)]
    port: String,
    /// A NET/ROM node's callsign instead: datagrams go inside NET/ROM datagrams to it.
    #[serde(default)]
    netrom: String,
    /// "datagram" (UI frames) or "vc" (a connected link); default: the port's `ip_mode`.
    #[serde(default)]
    mode: String,
}

/// `[[ip.arp]]`: a station whose address the sysop fixes (JNOS's `arp add`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct ArpCfg {
    /// Its address.
    address: String,
    /// Its callsign.
    callsign: String,
    /// The radio port it is on.
    port: String,
}

/// IP, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Ip {
    /// The TUN interface's name.
    pub tun: String,
    /// Its MTU.
    pub mtu: usize,
    /// Our callsign for IP on every IP port.
    pub call: Callsign,
    /// The router's settings (ports by index, routes, static ARP).
    pub router: qtc_ip::Config,
}

/// Checks `[ip]` against the ports and the NET/ROM node; `None` when no address is set.
pub(super) fn check(
    cfg: &IpCfg,
    station: Callsign,
    ax25: &Ax25,
    ports: &[RadioPort],
    netrom: bool,
) -> Result<Option<Ip>, KeyError> {
    let key = |k: &str| format!("[ip] {k}");
    if cfg.address.is_empty() {
        if let Some(p) = ports.iter().find(|p| p.ip.is_some()) {
            return Err(KeyError::new(
                key("address"),
                format!(
                    "[[port]] {} has ip = true: give the station its address on the air, such \
                     as \"44.128.0.1/24\"",
                    p.name
                ),
            ));
        }
        return Ok(None);
    }
    let (address, prefix_len) =
        address(&cfg.address).map_err(|m| KeyError::new(key("address"), m))?;
    let call =
        ip_call(&cfg.callsign, station, ax25).map_err(|m| KeyError::new(key("callsign"), m))?;
    let mut router = qtc_ip::Config::new(address, prefix_len);
    router.ports = ip_ports(ports, call)?;
    for (i, r) in cfg.route.iter().enumerate() {
        let section = format!("[[ip.route]] #{} ({})", i + 1, r.to);
        router
            .routes
            .push(route(r, &router, ports, netrom).map_err(|e| e.within(&section))?);
    }
    for (i, a) in cfg.arp.iter().enumerate() {
        let section = format!("[[ip.arp]] #{} ({})", i + 1, a.address);
        router
            .arp
            .push(static_arp(a, ports).map_err(|e| e.within(&section))?);
    }
    if router.ports.iter().all(Option::is_none)
        && !router
            .routes
            .iter()
            .any(|r| matches!(r.hop, Hop::NetRom { .. }))
    {
        return Err(KeyError::new(
            key("address"),
            "IP needs a way onto the air: set ip = true on a [[port]], or add an [[ip.route]] \
             with netrom = \"CALL\"",
        ));
    }
    router.max_arp = cfg.max_arp.max(1);
    router.arp_life = parse_duration(&cfg.arp_life)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| KeyError::new(key("arp_life"), "expected a duration such as \"15m\""))?;
    let mtu = tun_mtu(cfg.mtu, &router).map_err(|m| KeyError::new(key("mtu"), m))?;
    check_tun_name(&cfg.tun).map_err(|m| KeyError::new(key("tun"), m))?;
    Ok(Some(Ip {
        tun: cfg.tun.clone(),
        mtu,
        call,
        router,
    }))
}

/// "A.B.C.D/N": the station's address and its network's length.
fn address(text: &str) -> Result<(Ipv4Addr, u8), String> {
    let bad = || {
        format!(
            "expected the station's address and network, such as \"44.128.0.1/24\", got {text:?}"
        )
    };
    let (a, len) = text.split_once('/').ok_or_else(bad)?;
    let a: Ipv4Addr = a.parse().map_err(|_| bad())?;
    let len: u8 = len
        .parse()
        .ok()
        .filter(|l| (1..=30).contains(l))
        .ok_or_else(bad)?;
    let net = Prefix::new(a, len);
    if a == net.addr() || a == net.broadcast() {
        return Err(format!(
            "{a} is the network's own or broadcast address in {net}: give the station a host \
             address, such as \"44.128.0.1/24\""
        ));
    }
    Ok((a, len))
}

/// The IP callsign: as written, or the station's with the lowest SSID the BBS does not answer
/// to (the NET/ROM node's default too: one interface call, as JNOS's). A BBS call would give
/// every link IP opens a BBS session.
fn ip_call(written: &str, station: Callsign, ax25: &Ax25) -> Result<Callsign, String> {
    let call: Callsign = if written.is_empty() {
        (0..=qtc_callsign::MAX_SSID)
            .filter_map(|ssid| station.with_ssid(ssid).ok())
            .find(|c| !ax25.bbs_calls.contains(c))
            .ok_or("every SSID is a BBS one ([ax25] bbs_ssids): give IP one")?
    } else {
        written
            .parse()
            .map_err(|e| format!("{written:?} is no AX.25 callsign: {e}"))?
    };
    if ax25.bbs_calls.contains(&call) {
        return Err(format!(
            "{call} is a BBS callsign ([ax25] bbs_ssids): give IP an SSID of its own, as JNOS's \
             interface call beside its bbscall"
        ));
    }
    Ok(call)
}

/// Each port's IP settings, by index; its MTU is its PACLEN.
fn ip_ports(ports: &[RadioPort], call: Callsign) -> Result<Vec<Option<PortConfig>>, KeyError> {
    ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let Some(mode) = p.ip else {
                return Ok(None);
            };
            if p.link.n1 < qtc_ip::frag::MIN_MTU {
                return Err(KeyError::new(
                    "paclen",
                    format!(
                        "IP needs frames of at least {} bytes, the port's paclen is {}",
                        qtc_ip::frag::MIN_MTU,
                        p.link.n1
                    ),
                )
                .within(&format!("[[port]] #{} ({})", i + 1, p.name)));
            }
            Ok(Some(PortConfig {
                call,
                mtu: p.link.n1,
                mode,
            }))
        })
        .collect()
}

/// The index of the IP port called `name`.
fn ip_port(name: &str, ports: &[RadioPort]) -> Result<usize, KeyError> {
    match ports.iter().position(|p| p.name == name) {
        Some(i) if ports[i].ip.is_some() => Ok(i),
        Some(_) => Err(KeyError::new(
            "port",
            format!("[[port]] {name} carries no IP: set ip = true there"),
        )),
        None => Err(KeyError::new(
            "port",
            format!("no [[port]] is named {name:?}"),
        )),
    }
}

fn route(
    r: &RouteCfg,
    router: &qtc_ip::Config,
    ports: &[RadioPort],
    netrom: bool,
) -> Result<Route, KeyError> {
    let to: Prefix =
        r.to.parse()
            .map_err(|e: qtc_ip::route::BadPrefix| KeyError::new("to", e.to_string()))?;
    if !r.netrom.is_empty() {
        if !r.via.is_empty() || !r.port.is_empty() || !r.mode.is_empty() {
            return Err(KeyError::new(
                "netrom",
                "a route over NET/ROM takes no via, port or mode",
            ));
        }
        if !netrom {
            return Err(KeyError::new(
                "netrom",
                "NET/ROM is off: give a [[port]] a netrom_quality and [netrom] an alias",
            ));
        }
        let node: Callsign = r.netrom.parse().map_err(|e| {
            KeyError::new("netrom", format!("the node's callsign {:?}: {e}", r.netrom))
        })?;
        return Ok(Route {
            to,
            hop: Hop::NetRom { node },
            mode: None,
        });
    }
    let gateway = if r.via.is_empty() {
        None
    } else {
        let via: Ipv4Addr = r
            .via
            .parse()
            .map_err(|_| KeyError::new("via", format!("expected an address, got {:?}", r.via)))?;
        if !router.network.contains(via) {
            return Err(KeyError::new(
                "via",
                format!("the gateway must be on the air, inside {}", router.network),
            ));
        }
        Some(via)
    };
    let port = if r.port.is_empty() {
        None
    } else {
        Some(ip_port(&r.port, ports)?)
    };
    let mode = if r.mode.is_empty() {
        None
    } else {
        Some(super::radio::ip_mode_of(&r.mode).map_err(|m| KeyError::new("mode", m))?)
    };
    Ok(Route {
        to,
        hop: Hop::Radio { gateway, port },
        mode,
    })
}

fn static_arp(a: &ArpCfg, ports: &[RadioPort]) -> Result<StaticArp, KeyError> {
    let ip: Ipv4Addr = a.address.parse().map_err(|_| {
        KeyError::new(
            "address",
            format!("expected an address, got {:?}", a.address),
        )
    })?;
    let call: Callsign = a
        .callsign
        .parse()
        .map_err(|e| KeyError::new("callsign", format!("{:?}: {e}", a.callsign)))?;
    Ok(StaticArp {
        ip,
        call,
        port: ip_port(&a.port, ports)?,
    })
}

/// The TUN device's MTU: as written, or the largest of the IP ports' (NET/ROM's alone).
fn tun_mtu(written: Option<usize>, router: &qtc_ip::Config) -> Result<usize, String> {
    let widest = router
        .ports
        .iter()
        .flatten()
        .map(|p| p.mtu)
        .max()
        .unwrap_or(qtc_ip::NETROM_MTU);
    match written {
        None => Ok(widest),
        Some(m) if (qtc_ip::frag::MIN_MTU..=65535).contains(&m) => Ok(m),
        Some(m) => Err(format!(
            "expected {} to 65535, got {m}",
            qtc_ip::frag::MIN_MTU
        )),
    }
}

/// A Linux interface name: 1 to 15 bytes, no `/`, no space.
fn check_tun_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 15
        || name.contains(['/', ' ', ':'])
        || name == "."
        || name == ".."
    {
        return Err(format!(
            "expected an interface name of 1 to 15 characters without '/', ':' or spaces, such as \"qtc0\", got {name:?}"
        ));
    }
    Ok(())
}

/// One line for the start-up report and `qtc check`: the address, the device, each port with
/// its mode, the routes and the static ARP entries.
pub fn describe(ip: &Ip, ports: &[RadioPort]) -> String {
    let on: Vec<String> = ip
        .router
        .ports
        .iter()
        .zip(ports)
        .filter_map(|(c, p)| c.map(|c| format!("{} ({}, mtu {})", p.name, c.mode.name(), c.mtu)))
        .collect();
    let routes: Vec<String> = ip
        .router
        .routes
        .iter()
        .map(|r| describe_route(r, ports))
        .collect();
    let mut line = format!(
        "{}/{} on tun {} (mtu {}), as {} on {}",
        ip.router.address,
        ip.router.network.len(),
        ip.tun,
        ip.mtu,
        ip.call,
        if on.is_empty() {
            "no port".to_string()
        } else {
            on.join(", ")
        }
    );
    if !routes.is_empty() {
        line.push_str(&format!("; routes {}", routes.join(", ")));
    }
    let arp: Vec<String> = ip
        .router
        .arp
        .iter()
        .map(|a| {
            let port = ports.get(a.port).map_or("?", |p| p.name.as_str());
            format!("{} is {} on {port}", a.ip, a.call)
        })
        .collect();
    if !arp.is_empty() {
        line.push_str(&format!("; arp {}", arp.join(", ")));
    }
    line
}

/// A route as the report and the web show it: `44.130.0.0/16 via 44.128.0.3 on vhf (vc)`.
pub fn describe_route(r: &Route, ports: &[RadioPort]) -> String {
    let mut s = r.to.to_string();
    match r.hop {
        Hop::NetRom { node } => s.push_str(&format!(" over NET/ROM to {node}")),
        Hop::Radio { gateway, port } => {
            if let Some(g) = gateway {
                s.push_str(&format!(" via {g}"));
            }
            if let Some(p) = port.and_then(|p| ports.get(p)) {
                s.push_str(&format!(" on {}", p.name));
            }
        }
    }
    if let Some(m) = r.mode {
        s.push_str(&format!(" ({})", m.name()));
    }
    s
}

#[cfg(test)]
mod tests {
    use crate::config::parse;
    use qtc_ip::{Hop, Mode};
    use std::path::Path;

    const PORT: &str = "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:10093\"\n\
         peers = [{ callsign = \"N0JNS\", address = \"127.0.0.1:10094\" }]\n";

    fn load(text: &str) -> Result<crate::config::Loaded, crate::config::ConfigError> {
        parse(
            &format!("[station]\ncallsign = \"N0QTC\"\n{text}"),
            "qtc.toml",
            Path::new("/etc/qtc"),
        )
    }

    fn error(text: &str) -> String {
        load(text).unwrap_err().to_string()
    }

    #[test]
    fn off_without_an_address_and_the_defaults_when_on() {
        assert!(load(PORT).unwrap().ip.is_none());
        let l = load(&format!(
            "{PORT}ip = true\n[ip]\naddress = \"44.128.0.1/24\"\n"
        ))
        .unwrap();
        let ip = l.ip.unwrap();
        assert_eq!(
            (ip.tun.as_str(), ip.call.to_string()),
            ("qtc0", "N0QTC-1".into())
        );
        assert_eq!(ip.router.network.to_string(), "44.128.0.0/24");
        let port = ip.router.ports[0].unwrap();
        assert_eq!((port.mtu, port.mode), (256, Mode::Datagram));
        assert_eq!(ip.mtu, 256);
        assert_eq!(
            super::describe(&ip, &l.radio_ports),
            "44.128.0.1/24 on tun qtc0 (mtu 256), as N0QTC-1 on udp (datagram, mtu 256)"
        );
    }

    #[test]
    fn routes_and_static_arp_are_read() {
        let l = load(&format!(
            "{PORT}ip = true\nip_mode = \"vc\"\nnetrom_quality = 192\n\
             [netrom]\nalias = \"QTC\"\n\
             [ip]\naddress = \"44.128.0.1/24\"\ntun = \"ax9\"\nmtu = 576\n\
             [[ip.route]]\nto = \"44.130.0.0/16\"\nvia = \"44.128.0.3\"\nport = \"udp\"\nmode = \"datagram\"\n\
             [[ip.route]]\nto = \"44.131.0.0/16\"\nnetrom = \"N0JNS\"\n\
             [[ip.arp]]\naddress = \"44.128.0.2\"\ncallsign = \"N0JNS\"\nport = \"udp\"\n"
        ))
        .unwrap();
        let ip = l.ip.unwrap();
        assert_eq!(ip.mtu, 576);
        assert_eq!(ip.router.ports[0].unwrap().mode, Mode::VirtualCircuit);
        let r = &ip.router.routes;
        assert_eq!(
            r[0].hop,
            Hop::Radio {
                gateway: Some("44.128.0.3".parse().unwrap()),
                port: Some(0)
            }
        );
        assert_eq!(r[0].mode, Some(Mode::Datagram));
        assert!(matches!(r[1].hop, Hop::NetRom { node } if node.to_string() == "N0JNS"));
        assert_eq!(ip.router.arp[0].call.to_string(), "N0JNS");
        let line = super::describe(&ip, &l.radio_ports);
        assert!(
            line.ends_with(
                "routes 44.130.0.0/16 via 44.128.0.3 on udp (datagram), 44.131.0.0/16 over NET/ROM to N0JNS; \
                 arp 44.128.0.2 is N0JNS on udp"
            ),
            "{line}"
        );
    }

    #[test]
    fn errors_name_the_key_and_the_fix() {
        let on = format!("{PORT}ip = true\n");
        for (text, wants) in [
            (on.clone(), "[ip] address: [[port]] udp has ip = true"),
            (format!("{on}[ip]\naddress = \"44.128.0.1\"\n"), "[ip] address: expected"),
            (format!("{on}[ip]\naddress = \"44.128.0.0/24\"\n"), "network's own or broadcast"),
            (format!("{PORT}[ip]\naddress = \"44.128.0.1/24\"\n"), "a way onto the air"),
            (format!("{PORT}ip_mode = \"vc\"\n"), "ip_mode: set ip = true first"),
            (format!("{on}ip_mode = \"tcp\"\n"), "ip_mode: expected \"datagram\""),
            (format!("{on}paclen = 60\n[ip]\naddress = \"44.128.0.1/24\"\n"), "paclen: IP needs frames of at least 68"),
            (format!("{on}[ip]\naddress = \"44.128.0.1/24\"\ncallsign = \"N0QTC\"\n"), "[ip] callsign: N0QTC is a BBS callsign"),
            (format!("{on}[ip]\naddress = \"44.128.0.1/24\"\ntun = \"a/b\"\n"), "[ip] tun: expected an interface name"),
            (format!("{on}[ip]\naddress = \"44.128.0.1/24\"\nmtu = 20\n"), "[ip] mtu: expected 68 to 65535"),
            (
                format!("{on}[ip]\naddress = \"44.128.0.1/24\"\n[[ip.route]]\nto = \"44.130.0.0/16\"\nvia = \"44.129.0.1\"\n"),
                "[[ip.route]] #1 (44.130.0.0/16) via: the gateway must be on the air, inside 44.128.0.0/24",
            ),
            (
                format!("{on}[ip]\naddress = \"44.128.0.1/24\"\n[[ip.route]]\nto = \"44.130.0.0/16\"\nnetrom = \"N0JNS\"\n"),
                "netrom: NET/ROM is off",
            ),
            (
                format!("{on}[ip]\naddress = \"44.128.0.1/24\"\n[[ip.route]]\nto = \"44.130.0.0/33\"\n"),
                "[[ip.route]] #1 (44.130.0.0/33) to: expected an IPv4 address",
            ),
            (
                format!("{on}[ip]\naddress = \"44.128.0.1/24\"\n[[ip.arp]]\naddress = \"44.128.0.2\"\ncallsign = \"N0JNS\"\nport = \"vhf\"\n"),
                "[[ip.arp]] #1 (44.128.0.2) port: no [[port]] is named \"vhf\"",
            ),
        ] {
            let e = error(&text);
            assert!(e.contains(wants), "{wants:?} not in {e:?}");
        }
    }
}
