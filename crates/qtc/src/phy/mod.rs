//! What a radio port is attached to: its kind (a KISS TNC on TCP, a pty or a serial line; AXUDP)
//! and the device it opens. The model is smoltcp's `phy`: the port task sees one [`Device`]
//! trait, and each kind is one file here that checks its `[[port]]` keys, reads its
//! `qtc call --port` argument into the same keys, describes itself and opens its device.
//! A new kind is that file, its row in [`KINDS`] and its keys in [`Keys`].

mod axudp;
mod kiss;
mod kiss_tcp;
mod tty;
pub mod tun;

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use qtc_callsign::Callsign;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite};

pub use kiss::KissParams;
pub use tty::baud_rate;

/// One read from a device takes up to this much.
pub const READ_BUF: usize = 4096;

/// A byte stream: what a KISS TNC sits on (TCP, a pty, a serial line) and what a forwarding
/// session runs over (TCP, TLS, an AX.25 link's or a NET/ROM circuit's stream).
pub trait ByteStream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> ByteStream for T {}

/// An open device: AX.25 frames (no FCS) out through a bounded queue, frames in. When the far
/// end stops reading, writes wait for writability (epoll) and frames beyond the bound are
/// dropped (AX.25 retransmits).
pub trait Device: Send {
    /// Queues one AX.25 frame (no FCS) for sending; false when it was dropped (queue full).
    fn queue(&mut self, frame: &[u8]) -> bool;

    /// Output is queued.
    fn has_output(&self) -> bool;

    /// Reads what is there; received AX.25 frames (no FCS) go to `frames`. `Ready(Ok(false))`
    /// means end of stream.
    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
        frames: &mut Vec<Vec<u8>>,
    ) -> Poll<io::Result<bool>>;

    /// Writes queued output until it is all written (`Ready(Ok)`) or the device is full
    /// (`Pending`, woken when writable).
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

/// A device being opened.
pub type Opening = Pin<Box<dyn Future<Output = io::Result<Box<dyn Device>>> + Send>>;

/// What a KISS device is sent when it opens, and the channel it uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KissSetup {
    /// The TNC port (channel) 0-15.
    pub kiss_port: u8,
    /// The parameters sent to the modem first.
    pub params: KissParams,
}

/// One kind of device, checked from its keys.
pub trait Spec: fmt::Debug + Send + Sync {
    /// One line saying what the port is attached to, for the start-up report. It names every
    /// value the kind holds: two ports with the same line are the same device.
    fn describe(&self) -> String;

    /// What the port is, for users (`PORTS`, `J`): the kind of link, never a device path or an
    /// address, which are the sysop's business.
    fn for_users(&self) -> String;

    /// The modem's bit rate when the port gives no `modem_baud`: 0 where there is no modem
    /// (air time not modelled).
    fn default_modem_baud(&self) -> u32;

    /// Opens the device.
    fn open(&self, kiss: KissSetup) -> Opening;
}

/// An AXUDP peer as written: who is at which address.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PeerKeys {
    /// The peer station's callsign (frames to it go to `address`).
    pub callsign: String,
    /// Its UDP address, "IP:PORT".
    pub address: String,
}

/// The `[[port]]` keys that say where the device is, as written (docs/radio.md has the table).
/// Each kind reads the ones it needs.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Keys {
    /// kiss-tcp: the TNC's KISS TCP address (Direwolf: 127.0.0.1:8001).
    #[serde(default)]
    pub address: String,
    /// axudp: the local UDP address to receive on.
    #[serde(default)]
    pub listen: String,
    /// axudp: the peers.
    #[serde(default)]
    pub peers: Vec<PeerKeys>,
    /// kiss-pty / kiss-serial: an existing pty or tty to open.
    #[serde(default)]
    pub device: String,
    /// kiss-pty: create a new pty pair and publish the peer side as a symlink here.
    #[serde(default)]
    pub create: String,
    /// kiss-serial: the baud rate.
    #[serde(default = "default_baud")]
    pub baud: u32,
}

fn default_baud() -> u32 {
    9600
}

impl Default for Keys {
    fn default() -> Self {
        Keys {
            address: String::new(),
            listen: String::new(),
            peers: Vec::new(),
            device: String::new(),
            create: String::new(),
            baud: default_baud(),
        }
    }
}

/// A key whose value is wrong, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadKey {
    /// The key, as in `[[port]]`.
    pub key: &'static str,
    /// What is wrong and what to write instead.
    pub problem: String,
}

impl BadKey {
    fn new(key: &'static str, problem: impl Into<String>) -> Self {
        BadKey {
            key,
            problem: problem.into(),
        }
    }
}

/// One row of [`KINDS`]: a kind's name and its two ways in.
pub struct KindDef {
    /// `kind = "..."` in `[[port]]`, and the prefix of `qtc call --port`.
    pub name: &'static str,
    /// The `--port` argument's syntax, for the error message.
    pub arg: &'static str,
    /// Checks the keys.
    pub check: fn(&Keys) -> Result<Kind, BadKey>,
    /// Reads the `--port` argument after `NAME:` into keys; `remote` is the called station
    /// (an AXUDP peer is taken to be it). `None`: not this syntax.
    pub from_arg: fn(&str, Callsign) -> Option<Keys>,
}

/// Every kind of device.
pub const KINDS: &[KindDef] = &[kiss_tcp::KIND, axudp::KIND, tty::PTY, tty::SERIAL];

/// What a port is attached to, checked.
#[derive(Clone, Debug)]
pub struct Kind(Arc<dyn Spec>);

impl PartialEq for Kind {
    fn eq(&self, other: &Self) -> bool {
        self.describe() == other.describe()
    }
}

impl Kind {
    /// A kind from its checked value (each kind's `check`).
    fn new(spec: impl Spec + 'static) -> Kind {
        Kind(Arc::new(spec))
    }

    /// Checks a `[[port]]`'s `kind` and keys.
    pub fn check(kind: &str, keys: &Keys) -> Result<Kind, BadKey> {
        match KINDS.iter().find(|k| k.name == kind) {
            Some(k) => (k.check)(keys),
            None => Err(BadKey::new(
                "kind",
                format!(
                    "expected {}, got {kind:?}",
                    one_of(KINDS.iter().map(|k| k.name.to_string()))
                ),
            )),
        }
    }

    /// Reads `qtc call --port KIND:...`, the same keys in one argument.
    pub fn from_arg(spec: &str, remote: Callsign) -> Result<Kind, String> {
        let bad = || {
            let syntaxes = KINDS.iter().map(|k| format!("{}:{}", k.name, k.arg));
            format!("expected {}, got {spec:?}", one_of(syntaxes))
        };
        let (name, rest) = spec.split_once(':').ok_or_else(bad)?;
        let def = KINDS.iter().find(|k| k.name == name).ok_or_else(bad)?;
        let keys = (def.from_arg)(rest, remote).ok_or_else(bad)?;
        (def.check)(&keys).map_err(|e| e.problem)
    }

    /// One line saying what the port is attached to, for the start-up report.
    pub fn describe(&self) -> String {
        self.0.describe()
    }

    /// What the port is, for users.
    pub fn for_users(&self) -> String {
        self.0.for_users()
    }

    /// The modem's bit rate when the port gives none; 0: no modem.
    pub fn default_modem_baud(&self) -> u32 {
        self.0.default_modem_baud()
    }

    /// Opens the device.
    pub fn open(&self, kiss: KissSetup) -> Opening {
        self.0.open(kiss)
    }
}

/// "a, b, c or d".
fn one_of(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => items.concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qtc_calls_port_argument_is_the_same_grammar() {
        let remote: Callsign = "N0BBB".parse().unwrap();
        let port = |spec: &str| Kind::from_arg(spec, remote).map(|k| k.describe());
        for (spec, describe) in [
            ("kiss-tcp:127.0.0.1:8001", "kiss-tcp 127.0.0.1:8001"),
            (
                "axudp:127.0.0.1:10095:[::1]:10093",
                "axudp 127.0.0.1:10095 peers N0BBB@[::1]:10093",
            ),
            ("kiss-pty:/tmp/kisstnc", "kiss-pty /tmp/kisstnc"),
            (
                "kiss-serial:/dev/ttyUSB0:9600",
                "kiss-serial /dev/ttyUSB0 9600 baud",
            ),
        ] {
            assert_eq!(port(spec).as_deref(), Ok(describe), "{spec}");
        }
        // The table's checks, the table's words.
        assert_eq!(
            port("kiss-serial:/dev/ttyS0:1234").unwrap_err(),
            "unsupported baud rate 1234"
        );
        assert!(port("kiss-tcp:nohost").unwrap_err().contains("HOST:PORT"));
        let e = port("agwpe:127.0.0.1:8000").unwrap_err();
        assert!(
            e.contains("kiss-tcp:HOST:PORT, axudp:LISTEN_IP:PORT:PEER_IP:PORT"),
            "{e}"
        );
    }
}
