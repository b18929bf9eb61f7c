//! `[ax25]` and the `[[port]]` tables: radio ports and their AX.25 parameters, checked into
//! [`Ax25`] and [`RadioPort`]s.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use nix::sys::termios::BaudRate;
use qtc_callsign::Callsign;
use serde::Deserialize;

use super::forward::Connect;
use super::{parse_duration, Config};

/// One AXUDP peer: who is at which address.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct PeerCfg {
    /// The peer station's callsign (frames to it go to `address`).
    pub(super) callsign: String,
    /// Its UDP address, "IP:PORT".
    pub(super) address: String,
}

/// A `[[port]]` table as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct PortCfg {
    /// The port's name (used by `connect = "ax25:NAME:..."` and in logs).
    pub(super) name: String,
    /// kiss-tcp, axudp, kiss-pty or kiss-serial.
    pub(super) kind: String,
    /// kiss-tcp: the TNC's KISS TCP address (Direwolf: 127.0.0.1:8001).
    #[serde(default)]
    pub(super) address: String,
    /// axudp: the local UDP address to receive on.
    #[serde(default)]
    pub(super) listen: String,
    /// axudp: the peers.
    #[serde(default)]
    pub(super) peers: Vec<PeerCfg>,
    /// kiss-pty / kiss-serial: an existing pty or tty to open.
    #[serde(default)]
    pub(super) device: String,
    /// kiss-pty: create a new pty pair and publish the peer side as a symlink here.
    #[serde(default)]
    pub(super) create: String,
    /// kiss-serial: the baud rate.
    #[serde(default = "default_baud")]
    pub(super) baud: u32,
    /// The TNC port (KISS channel) 0-15.
    #[serde(default)]
    pub(super) kiss_port: u8,
    /// The modem's bit rate on the air (Direwolf's MODEM); 0: air time not modelled. Default:
    /// 1200 on KISS kinds, 0 on AXUDP.
    #[serde(default)]
    pub(super) modem_baud: Option<u32>,
    /// KISS TXDELAY, 10 ms units, sent to the modem at start (default: not sent).
    #[serde(default)]
    pub(super) txdelay: Option<u8>,
    /// KISS persistence P (p = (P + 1) / 256), sent at start (default: not sent).
    #[serde(default)]
    pub(super) persist: Option<u8>,
    /// KISS SlotTime, 10 ms units, sent at start (default: not sent).
    #[serde(default)]
    pub(super) slottime: Option<u8>,
    /// KISS TXtail, 10 ms units, sent at start (default: not sent).
    #[serde(default)]
    pub(super) txtail: Option<u8>,
    /// KISS FullDuplex, sent at start (default: not sent).
    #[serde(default)]
    pub(super) fullduplex: Option<bool>,
    /// N1: the largest information field sent, 1-2048 bytes (default: for the modem's speed).
    #[serde(default)]
    pub(super) paclen: Option<usize>,
    /// k: frames outstanding (modulo 8: 1-7; modulo 128 links use `emaxframe`).
    #[serde(default)]
    pub(super) maxframe: Option<u8>,
    /// k for AX.25 2.2 (modulo 128) links, 1-63.
    #[serde(default)]
    pub(super) emaxframe: Option<u8>,
    /// FRACK: the T1 base for a direct path.
    #[serde(default = "default_frack")]
    pub(super) frack: String,
    /// T3: the idle keep-alive interval.
    #[serde(default = "default_t3")]
    pub(super) t3: String,
    /// N2: retries.
    #[serde(default = "default_retries")]
    pub(super) retries: u8,
    /// Try AX.25 2.2 (SABME) first when calling.
    #[serde(default = "default_true")]
    pub(super) v22: bool,
    /// An ID beacon interval ("10m"); empty or "0": none.
    #[serde(default)]
    pub(super) beacon: String,
    /// The beacon's text (default: "CALL BBS").
    #[serde(default)]
    pub(super) beacon_text: String,
    /// Most links at once on this port.
    #[serde(default = "default_max_links")]
    pub(super) max_links: usize,
    /// NET/ROM quality of neighbours heard here (JNOS `netrom interface`); 0: no NET/ROM.
    #[serde(default)]
    pub(super) netrom_quality: u8,
}

fn default_baud() -> u32 {
    9600
}
fn default_frack() -> String {
    "3s".into()
}
fn default_t3() -> String {
    "300s".into()
}
fn default_retries() -> u8 {
    10
}
fn default_true() -> bool {
    true
}
fn default_max_links() -> usize {
    qtc_ax25::port::DEFAULT_MAX_LINKS
}

/// What a port is attached to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// KISS over TCP to a TNC (Direwolf).
    KissTcp(String),
    /// AX.25 + FCS in UDP datagrams.
    Axudp {
        /// Local address.
        listen: SocketAddr,
        /// Peers by callsign.
        peers: Vec<(Callsign, SocketAddr)>,
    },
    /// KISS on an existing pty or tty.
    PtyDevice(PathBuf),
    /// KISS on a pty pair we create; the peer side's name is published at this path.
    PtyCreate(PathBuf),
    /// KISS on a serial port.
    Serial {
        /// The device.
        device: PathBuf,
        /// Baud rate.
        baud: u32,
    },
}

/// `[ax25]`, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Ax25 {
    /// `[station] callsign` with each of `bbs_ssids`: the calls that connect to the BBS.
    pub bbs_calls: Vec<Callsign>,
    /// Lines per page before `More?` for users on the air (0: no paging).
    pub page_lines: usize,
}

/// KISS parameters to send the modem when the device opens (spec §1.2); `None`: not sent, the
/// modem keeps its own setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KissParams {
    /// TXDELAY, 10 ms units.
    pub txdelay: Option<u8>,
    /// Persistence P.
    pub persist: Option<u8>,
    /// SlotTime, 10 ms units.
    pub slottime: Option<u8>,
    /// TXtail, 10 ms units.
    pub txtail: Option<u8>,
    /// Full duplex.
    pub full_duplex: Option<bool>,
}

impl KissParams {
    /// The channel as qtc models it: these parameters where set, the modem's own defaults
    /// (Direwolf's, [`qtc_ax25::Air::kiss`]) elsewhere.
    pub fn air(&self, bit_rate: u32) -> qtc_ax25::Air {
        let mut air = qtc_ax25::Air::kiss(bit_rate);
        let tens = |v: u8| Duration::from_millis(u64::from(v) * 10);
        if let Some(v) = self.txdelay {
            air.txdelay = tens(v);
        }
        if let Some(v) = self.txtail {
            air.txtail = tens(v);
        }
        if let Some(v) = self.slottime {
            air.slot_time = tens(v);
        }
        if let Some(v) = self.persist {
            air.persistence = v;
        }
        if let Some(v) = self.full_duplex {
            air.full_duplex = v;
        }
        air
    }
}

/// The air model of a port of `kind` with no `[[port]]` keys beyond what it is attached to:
/// a 1200-baud modem with Direwolf's keying on KISS, none on AXUDP.
pub fn default_air(kind: &Kind) -> qtc_ax25::Air {
    match kind {
        Kind::Axudp { .. } => qtc_ax25::Air::NONE,
        _ => KissParams::default().air(DEFAULT_MODEM_BAUD),
    }
}

/// The modem bit rate of KISS ports when `modem_baud` is not given.
pub const DEFAULT_MODEM_BAUD: u32 = 1200;

/// A checked radio port.
#[derive(Debug, Clone, PartialEq)]
pub struct RadioPort {
    /// Its name.
    pub name: String,
    /// Its device.
    pub kind: Kind,
    /// KISS channel.
    pub kiss_port: u8,
    /// KISS parameters sent when the device opens.
    pub kiss: KissParams,
    /// Link parameters.
    pub link: qtc_ax25::Config,
    /// Most links at once.
    pub max_links: usize,
    /// ID beacon: interval and text.
    pub beacon: Option<(Duration, String)>,
    /// NET/ROM quality of this port's neighbours; 0: no NET/ROM here.
    pub netrom_quality: u8,
}

/// An error naming the key: (key, message).
type KeyError = (String, String);

/// Checks `[ax25]` and `[[port]]`; errors are (key, message).
pub(super) fn check(cfg: &Config) -> Result<(Ax25, Vec<RadioPort>), KeyError> {
    if cfg.ax25.bbs_ssids.is_empty() || cfg.ax25.bbs_ssids.iter().any(|&s| s > 15) {
        return Err((
            "[ax25] bbs_ssids".into(),
            "expected a list of SSIDs 0 to 15, such as [0] or [0, 1]".into(),
        ));
    }
    let mut out: Vec<RadioPort> = Vec::new();
    for (i, p) in cfg.port.iter().enumerate() {
        let key = |k: &str| format!("[[port]] #{} ({}) {k}", i + 1, p.name);
        if p.name.is_empty() || p.name.contains([':', ' ', ',']) {
            return Err((
                key("name"),
                "expected a name without spaces, commas or colons".into(),
            ));
        }
        if out.iter().any(|q| q.name == p.name) {
            return Err((key("name"), format!("{:?} is used twice", p.name)));
        }
        let kind = port_kind(p, &key)?;
        let dur = |k: &str, v: &str| {
            parse_duration(v).filter(|d| !d.is_zero()).ok_or_else(|| {
                (
                    key(k),
                    format!("expected a duration such as \"3s\", got {v:?}"),
                )
            })
        };
        let (link, kiss) = port_link(p, &kind, &key, &dur)?;
        let beacon = if p.beacon.is_empty() || p.beacon == "0" {
            None
        } else {
            let every = dur("beacon", &p.beacon)?;
            let text = if p.beacon_text.is_empty() {
                format!("{} BBS", cfg.station.callsign)
            } else {
                p.beacon_text.clone()
            };
            Some((every, text))
        };
        out.push(RadioPort {
            name: p.name.clone(),
            kind,
            kiss_port: p.kiss_port,
            kiss,
            link,
            max_links: p.max_links.max(1),
            beacon,
            netrom_quality: p.netrom_quality,
        });
    }
    let ax25 = Ax25 {
        bbs_calls: cfg
            .ax25
            .bbs_ssids
            .iter()
            .filter_map(|&ssid| Callsign::new(&cfg.station.callsign, ssid).ok())
            .collect(),
        page_lines: cfg.ax25.page_lines,
    };
    Ok((ax25, out))
}

/// What a `[[port]]` is attached to.
fn port_kind(p: &PortCfg, key: &dyn Fn(&str) -> String) -> Result<Kind, KeyError> {
    Ok(match p.kind.as_str() {
        "kiss-tcp" => {
            if p.address
                .rsplit_once(':')
                .and_then(|(_, port)| port.parse::<u16>().ok())
                .is_none()
            {
                return Err((
                    key("address"),
                    format!(
                        "expected \"HOST:PORT\" such as \"127.0.0.1:8001\", got {:?}",
                        p.address
                    ),
                ));
            }
            Kind::KissTcp(p.address.clone())
        }
        "axudp" => {
            let listen = p.listen.parse().map_err(|_| {
                (
                    key("listen"),
                    format!(
                        "expected \"IP:PORT\" such as \"127.0.0.1:10093\", got {:?}",
                        p.listen
                    ),
                )
            })?;
            let mut peers = Vec::new();
            for peer in &p.peers {
                let call: Callsign = peer
                    .callsign
                    .parse()
                    .map_err(|e| (key("peers"), format!("callsign {:?}: {e}", peer.callsign)))?;
                let addr = peer.address.parse().map_err(|_| {
                    (
                        key("peers"),
                        format!("expected address \"IP:PORT\", got {:?}", peer.address),
                    )
                })?;
                peers.push((call, addr));
            }
            Kind::Axudp { listen, peers }
        }
        "kiss-pty" => match (p.device.is_empty(), p.create.is_empty()) {
            (false, true) => Kind::PtyDevice(p.device.clone().into()),
            (true, false) => Kind::PtyCreate(p.create.clone().into()),
            _ => {
                return Err((
                    key("device"),
                    "a kiss-pty port needs exactly one of device = PATH or create = PATH".into(),
                ))
            }
        },
        "kiss-serial" => {
            if p.device.is_empty() {
                return Err((
                    key("device"),
                    "a kiss-serial port needs device = PATH".into(),
                ));
            }
            if baud_rate(p.baud).is_none() {
                return Err((key("baud"), format!("unsupported baud rate {}", p.baud)));
            }
            Kind::Serial {
                device: p.device.clone().into(),
                baud: p.baud,
            }
        }
        other => {
            return Err((
                key("kind"),
                format!("expected kiss-tcp, axudp, kiss-pty or kiss-serial, got {other:?}"),
            ))
        }
    })
}

/// A port's link parameters and the KISS parameters it sends: the defaults for the modem's
/// speed (`qtc_ax25::Config::for_air`), then whatever the port sets.
fn port_link(
    p: &PortCfg,
    kind: &Kind,
    key: &dyn Fn(&str) -> String,
    dur: &dyn Fn(&str, &str) -> Result<Duration, KeyError>,
) -> Result<(qtc_ax25::Config, KissParams), KeyError> {
    if p.kiss_port > 15 {
        return Err((key("kiss_port"), "expected 0 to 15".into()));
    }
    let range = |k: &str, v: Option<usize>, lo: usize, hi: usize| match v {
        Some(v) if !(lo..=hi).contains(&v) => Err((key(k), format!("expected {lo} to {hi}"))),
        _ => Ok(()),
    };
    range("paclen", p.paclen, 1, 2048)?;
    range("maxframe", p.maxframe.map(usize::from), 1, 7)?;
    range("emaxframe", p.emaxframe.map(usize::from), 1, 63)?;
    range(
        "retries",
        Some(usize::from(p.retries)),
        1,
        usize::from(qtc_ax25::link::MAX_N2),
    )?;
    range("modem_baud", p.modem_baud.map(|b| b as usize), 0, 1_000_000)?;
    let kiss = KissParams {
        txdelay: p.txdelay,
        persist: p.persist,
        slottime: p.slottime,
        txtail: p.txtail,
        full_duplex: p.fullduplex,
    };
    let air = match kind {
        Kind::Axudp { .. } if p.modem_baud.is_none() => qtc_ax25::Air::NONE,
        _ => match p.modem_baud.unwrap_or(DEFAULT_MODEM_BAUD) {
            0 => qtc_ax25::Air::NONE,
            baud => kiss.air(baud),
        },
    };
    let mut link = qtc_ax25::Config::for_air(air);
    link.frack = dur("frack", &p.frack)?;
    link.t3 = dur("t3", &p.t3)?;
    link.n1 = p.paclen.unwrap_or(link.n1);
    link.k_mod8 = p.maxframe.unwrap_or(link.k_mod8);
    link.k_mod128 = p.emaxframe.unwrap_or(link.k_mod128);
    link.n2 = p.retries;
    link.prefer_v22 = p.v22;
    // Small buffers keep backpressure real: a BBS session writing faster than the air
    // carries is held back at the duplex stream, not queued here.
    link.send_buffer = 8 * 1024;
    link.receive_buffer = 8 * 1024;
    Ok((link, kiss))
}

/// Parses the part after `ax25:`: `PORT:CALL[,DIGI...]`.
pub fn parse_ax25_connect(rest: &str) -> Result<Connect, String> {
    let (port, calls) = rest
        .split_once(':')
        .ok_or_else(|| "no callsign after the port name".to_string())?;
    if port.is_empty() {
        return Err("no port name".into());
    }
    let mut it = calls.split(',').map(str::trim);
    let call: Callsign = it
        .next()
        .unwrap_or("")
        .parse()
        .map_err(|e| format!("callsign: {e}"))?;
    let via = it
        .map(|d| d.parse().map_err(|e| format!("digipeater {d:?}: {e}")))
        .collect::<Result<Vec<Callsign>, String>>()?;
    if via.len() > 8 {
        return Err("at most 8 digipeaters".into());
    }
    Ok(Connect::Ax25 {
        port: port.to_string(),
        call,
        via,
    })
}

/// The termios speed for a baud rate, if supported.
pub fn baud_rate(baud: u32) -> Option<BaudRate> {
    Some(match baud {
        1200 => BaudRate::B1200,
        2400 => BaudRate::B2400,
        4800 => BaudRate::B4800,
        9600 => BaudRate::B9600,
        19200 => BaudRate::B19200,
        38400 => BaudRate::B38400,
        57600 => BaudRate::B57600,
        115200 => BaudRate::B115200,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<RadioPort>, (String, String)> {
        let cfg: Config = toml::from_str(text).unwrap();
        check(&cfg).map(|(_, ports)| ports)
    }

    #[test]
    fn defaults_follow_the_spec() {
        let p =
            parse("[[port]]\nname = \"vhf\"\nkind = \"kiss-tcp\"\naddress = \"127.0.0.1:8001\"\n")
                .unwrap();
        assert_eq!(p[0].kind, Kind::KissTcp("127.0.0.1:8001".into()));
        // A 1200-baud modem with Direwolf's keying: windows of about 20 s of air.
        assert_eq!(p[0].link.air, qtc_ax25::Air::kiss(1200));
        assert_eq!(p[0].link.n1, 256);
        assert_eq!(p[0].link.k_mod8, 7);
        assert_eq!(p[0].link.k_mod128, 10);
        assert_eq!(p[0].kiss, KissParams::default());
        assert_eq!(p[0].link.frack, Duration::from_secs(3));
        assert_eq!(p[0].link.t3, Duration::from_secs(300));
        assert_eq!(p[0].link.n2, 10);
        assert!(p[0].link.prefer_v22);
        assert!(p[0].beacon.is_none());
    }

    #[test]
    fn the_modem_speed_and_kiss_parameters() {
        let p = parse(
            "[[port]]\nname = \"a\"\nkind = \"kiss-tcp\"\naddress = \"h:1\"\nmodem_baud = 9600\n\
             txdelay = 20\npersist = 255\nslottime = 5\ntxtail = 3\nfullduplex = false\n\
             [[port]]\nname = \"u\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:10093\"\n\
             [[port]]\nname = \"w\"\nkind = \"kiss-tcp\"\naddress = \"h:1\"\nmodem_baud = 0\n\
             paclen = 128\nemaxframe = 4\n",
        )
        .unwrap();
        let air = p[0].link.air;
        assert_eq!(air.bit_rate, 9600);
        assert_eq!(air.txdelay, Duration::from_millis(200));
        assert_eq!(
            (air.persistence, air.slot_time),
            (255, Duration::from_millis(50))
        );
        assert_eq!(air.txtail, Duration::from_millis(30));
        assert_eq!((p[0].link.k_mod8, p[0].link.k_mod128), (7, 32));
        assert_eq!(p[0].kiss.txdelay, Some(20));
        assert_eq!(p[0].kiss.full_duplex, Some(false));
        // AXUDP: no air model, the old windows.
        assert_eq!(p[1].link.air, qtc_ax25::Air::NONE);
        assert_eq!((p[1].link.k_mod8, p[1].link.k_mod128), (4, 32));
        // Keys given win over the speed's defaults.
        assert_eq!(p[2].link.air, qtc_ax25::Air::NONE);
        assert_eq!((p[2].link.n1, p[2].link.k_mod128), (128, 4));
    }

    #[test]
    fn every_kind_parses() {
        let p = parse(
            "[station]\ncallsign = \"N0ABC\"\n\
             [[port]]\nname = \"u\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:10093\"\n\
             peers = [{ callsign = \"N0BBB-1\", address = \"127.0.0.1:10094\" }]\nbeacon = \"10m\"\n\
             [[port]]\nname = \"p\"\nkind = \"kiss-pty\"\ncreate = \"/tmp/x\"\nv22 = false\n\
             [[port]]\nname = \"s\"\nkind = \"kiss-serial\"\ndevice = \"/dev/ttyUSB0\"\nbaud = 1200\n",
        )
        .unwrap();
        assert!(matches!(&p[0].kind, Kind::Axudp { peers, .. } if peers[0].0.ssid() == 1));
        assert_eq!(
            p[0].beacon,
            Some((Duration::from_secs(600), "N0ABC BBS".into()))
        );
        assert_eq!(p[1].kind, Kind::PtyCreate("/tmp/x".into()));
        assert!(!p[1].link.prefer_v22);
        assert!(matches!(p[2].kind, Kind::Serial { baud: 1200, .. }));
    }

    #[test]
    fn errors_name_the_key() {
        let e = parse("[[port]]\nname = \"a\"\nkind = \"kiss\"\n").unwrap_err();
        assert!(e.0.contains("kind"), "{e:?}");
        let e = parse("[[port]]\nname = \"a\"\nkind = \"kiss-pty\"\n").unwrap_err();
        assert!(e.1.contains("exactly one"), "{e:?}");
        let e =
            parse("[[port]]\nname = \"a\"\nkind = \"kiss-tcp\"\naddress = \"x\"\n").unwrap_err();
        assert!(e.0.contains("address"), "{e:?}");
        let e =
            parse("[[port]]\nname = \"a\"\nkind = \"kiss-tcp\"\naddress = \"h:1\"\nmaxframe = 8\n")
                .unwrap_err();
        assert!(e.0.contains("maxframe"), "{e:?}");
        let e = parse("[ax25]\nbbs_ssids = [16]\n").unwrap_err();
        assert!(e.0.contains("bbs_ssids"), "{e:?}");
    }

    #[test]
    fn ax25_connect_strings() {
        let c = parse_ax25_connect("vhf:N0BBB-1,N0DIG,N0DIG-2").unwrap();
        let Connect::Ax25 { port, call, via } = c else {
            panic!()
        };
        assert_eq!(port, "vhf");
        assert_eq!(call.to_string(), "N0BBB-1");
        assert_eq!(via.len(), 2);
        assert!(parse_ax25_connect("vhf").is_err());
        assert!(parse_ax25_connect(":N0BBB").is_err());
        assert!(parse_ax25_connect("vhf:N0BBB,BAD_CALL").is_err());
    }
}
