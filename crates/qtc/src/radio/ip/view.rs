//! The router's tables as the sysop sees them: the web Status page and `qtc ctl status`.

use std::fmt::Write;
use std::time::Instant;

use qtc_ip::{Hop, Router};
use serde::Serialize;

/// A snapshot of the router.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IpView {
    /// Our address and network, "44.128.0.1/24".
    pub address: String,
    /// The TUN interface.
    pub tun: String,
    /// The ARP table.
    pub arp: Vec<ArpRow>,
    /// Addresses ARP is asking for.
    pub asking: Vec<String>,
    /// The routes, longest prefix first.
    pub routes: Vec<RouteRow>,
    /// Counters since start, by name.
    pub stats: Vec<(&'static str, u64)>,
}

/// One ARP entry.
#[derive(Clone, Debug, Serialize)]
pub struct ArpRow {
    /// The address.
    pub address: String,
    /// The station.
    pub callsign: String,
    /// The radio port.
    pub port: String,
    /// When it expires (Unix seconds); `None`: static.
    pub expires: Option<i64>,
}

/// One route.
#[derive(Clone, Debug, Serialize)]
pub struct RouteRow {
    /// The addresses.
    pub to: String,
    /// Where they go: "on the air", "via 44.128.0.3", "NET/ROM N0JNS".
    pub via: String,
    /// The radio port, when the route names one.
    pub port: Option<String>,
    /// "datagram", "vc", or the port's when `None`.
    pub mode: Option<String>,
}

impl IpView {
    /// The router's tables at `now` (`unix` in Unix seconds), ports named by `port_names`.
    pub fn of(r: &Router, tun: &str, port_names: &[String], now: Instant, unix: i64) -> IpView {
        let name = |i: usize| port_names.get(i).cloned().unwrap_or_else(|| i.to_string());
        let cfg = r.config();
        IpView {
            address: format!("{}/{}", cfg.address, cfg.network.len()),
            tun: tun.to_string(),
            arp: r
                .arp_entries(now)
                .map(|(ip, e)| ArpRow {
                    address: ip.to_string(),
                    callsign: e.call.to_string(),
                    port: name(e.port),
                    expires: e
                        .expires
                        .map(|t| unix + t.saturating_duration_since(now).as_secs() as i64),
                })
                .collect(),
            asking: r.arp_pending().map(|a| a.to_string()).collect(),
            routes: r
                .routes()
                .map(|rt| {
                    let (via, port) = match rt.hop {
                        Hop::NetRom { node } => (format!("NET/ROM {node}"), None),
                        Hop::Radio { gateway, port } => (
                            gateway.map_or("on the air".to_string(), |g| format!("via {g}")),
                            port.map(name),
                        ),
                    };
                    RouteRow {
                        to: rt.to.to_string(),
                        via,
                        port,
                        mode: rt.mode.map(|m| m.name().to_string()),
                    }
                })
                .collect(),
            stats: r.stats().named().to_vec(),
        }
    }
}

impl IpView {
    /// Without the ARP entries expired by `unix` (Unix seconds): the view is made when the
    /// tables change, and an entry ages with no event.
    pub fn at(mut self, unix: i64) -> IpView {
        self.arp.retain(|a| a.expires.is_none_or(|t| t > unix));
        self
    }

    /// The text `qtc ctl ip` prints: the ARP table, the routes, the counters.
    pub fn text(&self) -> String {
        let mut out = format!("ip {} on tun {}\n", self.address, self.tun);
        let _ = writeln!(out, "arp ({}):", self.arp.len());
        for a in &self.arp {
            let life = a.expires.map_or("static".to_string(), |t| {
                format!("until {}", qtc_mail::Utc::from_unix(t).rfc3339())
            });
            let _ = writeln!(
                out,
                "  {:<15} {:<9} on {} {life}",
                a.address, a.callsign, a.port
            );
        }
        if !self.asking.is_empty() {
            let _ = writeln!(out, "asking: {}", self.asking.join(", "));
        }
        let _ = writeln!(out, "routes ({}):", self.routes.len());
        for r in &self.routes {
            let _ = writeln!(out, "  {:<18} {}", r.to, r.hop());
        }
        let counters: Vec<String> = self
            .stats
            .iter()
            .map(|(name, n)| format!("{n} {name}"))
            .collect();
        let _ = writeln!(out, "since start: {}", counters.join(", "));
        out
    }
}

impl RouteRow {
    /// Where the route goes, with its port and mode: "via 44.128.0.3 on vhf (vc)".
    pub fn hop(&self) -> String {
        let mut s = self.via.clone();
        if let Some(p) = &self.port {
            let _ = write!(s, " on {p}");
        }
        if let Some(m) = &self.mode {
            let _ = write!(s, " ({m})");
        }
        s
    }
}
