//! The routing table: address prefixes, where each leads (a station on a radio port, reached
//! through ARP, or a NET/ROM node), and how datagrams travel there (UI frames or a connected
//! link). The longest prefix that holds an address wins.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use qtc_callsign::Callsign;

/// Most routes a table holds (the config's `[[ip.route]]` and the station's own network).
pub const MAX_ROUTES: usize = 256;

/// An address prefix such as `44.128.0.0/24`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prefix {
    addr: Ipv4Addr,
    len: u8,
}

impl Prefix {
    /// The prefix of `len` bits (at most 32) holding `addr`; the host bits are cleared.
    #[must_use]
    pub fn new(addr: Ipv4Addr, len: u8) -> Prefix {
        let len = len.min(32);
        Prefix {
            addr: Ipv4Addr::from(u32::from(addr) & mask(len)),
            len,
        }
    }

    /// The network address.
    #[must_use]
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// Its length in bits.
    #[must_use]
    pub fn len(&self) -> u8 {
        self.len
    }

    /// Whether it is the default route (`0.0.0.0/0`).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `ip` is inside.
    #[must_use]
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & mask(self.len) == u32::from(self.addr)
    }

    /// The directed broadcast address (all host bits set); the address itself for a /32.
    #[must_use]
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) | !mask(self.len))
    }
}

fn mask(len: u8) -> u32 {
    match len {
        0 => 0,
        n => u32::MAX << (32 - u32::from(n.min(32))),
    }
}

/// Why text is no prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected an IPv4 address with an optional /length such as \"44.128.0.0/24\", got {0:?}")]
pub struct BadPrefix(pub String);

impl FromStr for Prefix {
    type Err = BadPrefix;

    /// `A.B.C.D/N` or `A.B.C.D` (a /32); host bits are cleared.
    fn from_str(s: &str) -> Result<Prefix, BadPrefix> {
        let bad = || BadPrefix(s.to_string());
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, l.parse::<u8>().map_err(|_| bad())?),
            None => (s, 32),
        };
        if len > 32 {
            return Err(bad());
        }
        let addr: Ipv4Addr = addr.parse().map_err(|_| bad())?;
        Ok(Prefix::new(addr, len))
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// How datagrams travel to a station over AX.25 (JNOS's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Each datagram in a UI frame (the default: no link, no acknowledgement).
    #[default]
    Datagram,
    /// I frames on a connected link to the station, opened when needed.
    VirtualCircuit,
}

impl Mode {
    /// The config's word for it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Mode::Datagram => "datagram",
            Mode::VirtualCircuit => "vc",
        }
    }
}

/// Where a route leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// Over AX.25: to the destination itself (no gateway: it is on the air), or to a gateway
    /// station, found by ARP on `port` (any IP port when `None`).
    Radio {
        /// The next station's address, when not the destination's.
        gateway: Option<Ipv4Addr>,
        /// The radio port, when the route names one.
        port: Option<usize>,
    },
    /// Inside NET/ROM datagrams to this node (JNOS's `route add ... netrom`).
    NetRom {
        /// The node's callsign.
        node: Callsign,
    },
}

/// One route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// The addresses it covers.
    pub to: Prefix,
    /// Where they go.
    pub hop: Hop,
    /// How, when not the port's own mode.
    pub mode: Option<Mode>,
}

/// The routes, longest prefix first.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    routes: Vec<Route>,
}

impl Routes {
    /// A table of `routes` (the first [`MAX_ROUTES`]); of two with the same prefix, the first
    /// wins.
    #[must_use]
    pub fn new(mut routes: Vec<Route>) -> Routes {
        routes.truncate(MAX_ROUTES);
        // Stable: routes with one length keep their order.
        routes.sort_by_key(|r| std::cmp::Reverse(r.to.len()));
        Routes { routes }
    }

    /// The route for `ip`: the longest prefix that holds it.
    #[must_use]
    pub fn lookup(&self, ip: Ipv4Addr) -> Option<&Route> {
        self.routes.iter().find(|r| r.to.contains(ip))
    }

    /// Every route, longest prefix first.
    pub fn iter(&self) -> impl Iterator<Item = &Route> {
        self.routes.iter()
    }
}
