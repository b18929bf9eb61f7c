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
    /// `C`: connect the user to `call` (through `via`) on a radio port (`None`: the first
    /// one), under the user's own callsign; the daemon says what it is calling, and answers
    /// with [`Answer::Disconnected`] when the link is over or [`Answer::Refused`].
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
    /// For [`Ask::Connect`]: nothing was called (no such port, a port named without a call,
    /// the user gave up); the line says why.
    Refused(String),
}
