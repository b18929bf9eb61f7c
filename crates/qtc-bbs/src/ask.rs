//! Questions only the daemon can answer (who else is on, what the radio ports heard), and the
//! answers it gives back. The interpreter asks through [`crate::Session::pending_ask`] and gets
//! the answer through [`crate::Session::answer`]; it never sees another session or a port.

/// What a command needs from outside the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ask {
    /// `U`: the users online.
    Users,
    /// `J` / `MH`: the stations heard on each radio port.
    Heard,
    /// `PORTS`: the radio ports.
    Ports,
    /// `CONV [n]`: the user enters the conference on channel n; answered with
    /// [`Answer::ConvEnded`] when they leave it.
    Conv {
        /// The channel.
        channel: u16,
    },
    /// `NODES [name]`: the NET/ROM nodes, or (with a name) the routes to that one.
    Nodes {
        /// The alias or callsign asked about.
        node: Option<String>,
    },
    /// `ROUTES`: the NET/ROM neighbours.
    Routes,
    /// `C`: connect the user to `call` (through `via`) on a radio port (`None`: the first
    /// one, or a NET/ROM circuit when `call` is a known node), under the user's own callsign;
    /// the daemon says what it is calling, and answers with [`Answer::Disconnected`] when the
    /// link is over or [`Answer::Refused`].
    Connect {
        /// The port's name, as `PORTS` shows it.
        port: Option<String>,
        /// The station to call.
        call: String,
        /// Digipeaters, in order.
        via: Vec<String>,
    },
}

/// One user online, for `U`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnlineUser {
    /// Callsign.
    pub call: String,
    /// How they came in: `telnet` or the radio port's name.
    pub via: String,
}

/// One station heard, for `J`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeardStation {
    /// Callsign with SSID.
    pub call: String,
    /// When it was last heard (Unix seconds).
    pub last: i64,
}

/// One radio port, for `PORTS` and `J`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// Its name in the config.
    pub name: String,
    /// What it is attached to (`kiss-tcp 127.0.0.1:8001`).
    pub what: String,
    /// Stations heard, most recent first (only for [`Ask::Heard`]).
    pub heard: Vec<HeardStation>,
}

/// One NET/ROM node, for `NODES`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// Its alias (may be empty).
    pub alias: String,
    /// Its callsign.
    pub call: String,
    /// Routes to it, best first.
    pub routes: Vec<RouteInfo>,
}

/// One route to a node, for `NODES name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteInfo {
    /// Quality 0-255.
    pub quality: u8,
    /// Broadcasts left before it goes; `None`: locked by the sysop.
    pub obsolescence: Option<u8>,
    /// The radio port.
    pub port: String,
    /// The neighbour it goes through.
    pub neighbour: String,
}

/// One NET/ROM neighbour, for `ROUTES`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeighbourInfo {
    /// The radio port.
    pub port: String,
    /// Its callsign.
    pub call: String,
    /// Its quality.
    pub quality: u8,
    /// Locked by the sysop.
    pub locked: bool,
    /// Nodes whose best route goes through it.
    pub nodes: usize,
}

/// The daemon's answer to an [`Ask`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// For [`Ask::Users`].
    Users(Vec<OnlineUser>),
    /// For [`Ask::Heard`] and [`Ask::Ports`].
    Ports(Vec<PortInfo>),
    /// For [`Ask::Conv`]: the user left the conference.
    ConvEnded,
    /// For [`Ask::Connect`]: the link is over, or never came up (`Err` says why).
    Disconnected(Result<(), String>),
    /// For [`Ask::Nodes`]: the nodes (only the one asked about, if found); `None`: this BBS
    /// runs no NET/ROM node.
    Nodes(Option<Vec<NodeInfo>>),
    /// For [`Ask::Routes`]; `None`: no NET/ROM node.
    Routes(Option<Vec<NeighbourInfo>>),
    /// For [`Ask::Connect`]: nothing was called (no such port, a port named without a call,
    /// the user gave up); the line says why.
    Refused(String),
}
