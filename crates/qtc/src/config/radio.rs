//! `[ax25]` and the `[[port]]` tables: radio ports and their AX.25 parameters, checked into
//! [`Ax25`] and [`RadioPort`]s.

use std::collections::BTreeMap;
use std::time::Duration;

use qtc_callsign::Callsign;
use serde::Deserialize;

use super::{parse_duration, Config, KeyError};
use crate::phy::{Kind, KissParams};

/// A `[[port]]` table as written. The keys saying where the device is are its kind's
/// ([`crate::phy::Keys`]); a key nobody knows is refused by [`check`].
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub(super) struct PortCfg {
    /// The port's name (used by `connect = "ax25:NAME:..."` and in logs).
    pub(super) name: String,
    /// kiss-tcp, axudp, kiss-pty or kiss-serial.
    pub(super) kind: String,
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
    /// Carry IP here (docs/radio.md, "IP over AX.25").
    #[serde(default)]
    pub(super) ip: bool,
    /// How IP datagrams go from here when a route does not say: "datagram" or "vc".
    #[serde(default)]
    pub(super) ip_mode: String,
    /// Where the device is: `address`, `listen`, `peers`, `device`, `create`, `baud`.
    #[serde(flatten)]
    pub(super) device: crate::phy::Keys,
    /// Keys neither the port nor any kind knows (a typo): refused.
    #[serde(flatten)]
    pub(super) unknown: BTreeMap<String, toml::Value>,
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

/// `[ax25]`, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Ax25 {
    /// `[station] callsign` with each of `bbs_ssids`: the calls that connect to the BBS.
    pub bbs_calls: Vec<Callsign>,
    /// Lines per page before `More?` for users on the air (0: no paging).
    pub page_lines: usize,
}

/// The air model of a port of `kind` with no `[[port]]` keys beyond what it is attached to:
/// a 1200-baud modem with Direwolf's keying on KISS, none on AXUDP.
pub fn default_air(kind: &Kind) -> qtc_ax25::Air {
    air(kind.default_modem_baud(), &KissParams::default())
}

/// The air model of a modem at `baud` keyed with `kiss`; 0: none.
fn air(baud: u32, kiss: &KissParams) -> qtc_ax25::Air {
    match baud {
        0 => qtc_ax25::Air::NONE,
        baud => kiss.air(baud),
    }
}

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
    /// IP here, and how its datagrams travel by default; `None`: no IP here.
    pub ip: Option<qtc_ip::Mode>,
    /// The port says its modem's speed (`modem_baud`); without it the speed is a guess
    /// (1200 bit/s on KISS), which start-up and `qtc check` point out.
    pub modem_baud_given: bool,
}

impl RadioPort {
    /// What the start-up report says of the modem's speed: nothing where air time is not
    /// modelled, the speed where the port gives it, and the guess with the fix where not.
    pub fn speed_note(&self) -> String {
        let baud = self.link.air.bit_rate;
        match (baud, self.modem_baud_given) {
            (0, _) => String::new(),
            (_, true) => format!(", modem {baud} bit/s"),
            (_, false) => format!(
                ", modem speed not set: assumed {baud} bit/s (set modem_baud to the modem's \
                 speed, Direwolf's MODEM line; a wrong guess costs time, docs/radio.md)"
            ),
        }
    }
}

/// Checks `[ax25]` and `[[port]]`.
pub(super) fn check(cfg: &Config, station: Callsign) -> Result<(Ax25, Vec<RadioPort>), KeyError> {
    if cfg.ax25.bbs_ssids.is_empty() || cfg.ax25.bbs_ssids.iter().any(|&s| s > 15) {
        return Err(KeyError::new(
            "[ax25] bbs_ssids",
            "expected a list of SSIDs 0 to 15, such as [0] or [0, 1]",
        ));
    }
    let mut out: Vec<RadioPort> = Vec::new();
    for (i, p) in cfg.port.iter().enumerate() {
        let section = format!("[[port]] #{} ({})", i + 1, p.name);
        let in_section = |e: KeyError| e.within(&section);
        if p.name.is_empty() || p.name.contains([':', ' ', ',']) {
            return Err(in_section(KeyError::new(
                "name",
                "expected a name without spaces, commas or colons",
            )));
        }
        if out.iter().any(|q| q.name == p.name) {
            return Err(in_section(KeyError::new(
                "name",
                format!("{:?} is used twice", p.name),
            )));
        }
        out.push(check_port(p, station).map_err(in_section)?);
    }
    let ax25 = Ax25 {
        bbs_calls: cfg
            .ax25
            .bbs_ssids
            .iter()
            .filter_map(|&ssid| station.with_ssid(ssid).ok())
            .collect(),
        page_lines: cfg.ax25.page_lines,
    };
    Ok((ax25, out))
}

/// One `[[port]]`; errors name the key within the table.
fn check_port(p: &PortCfg, callsign: Callsign) -> Result<RadioPort, KeyError> {
    if let Some(k) = p.unknown.keys().next() {
        return Err(KeyError::new(
            k.as_str(),
            "no such key in a [[port]] table (docs/radio.md lists them)",
        ));
    }
    let kind = Kind::check(&p.kind, &p.device).map_err(|e| KeyError::new(e.key, e.problem))?;
    let (link, kiss) = port_link(p, &kind)?;
    let beacon = if p.beacon.is_empty() || p.beacon == "0" {
        None
    } else {
        let every = duration("beacon", &p.beacon)?;
        let text = if p.beacon_text.is_empty() {
            format!("{callsign} BBS")
        } else {
            p.beacon_text.clone()
        };
        Some((every, text))
    };
    Ok(RadioPort {
        name: p.name.clone(),
        kind,
        kiss_port: p.kiss_port,
        kiss,
        link,
        max_links: p.max_links.max(1),
        beacon,
        netrom_quality: p.netrom_quality,
        ip: port_mode(p.ip, &p.ip_mode)?,
        modem_baud_given: p.modem_baud.is_some(),
    })
}

/// A duration that is not zero, such as "3s".
fn duration(key: &str, v: &str) -> Result<Duration, KeyError> {
    parse_duration(v).filter(|d| !d.is_zero()).ok_or_else(|| {
        KeyError::new(
            key,
            format!("expected a duration such as \"3s\", got {v:?}"),
        )
    })
}

/// `key`'s value, when given, is within `lo..=hi`.
fn range(key: &str, v: Option<usize>, lo: usize, hi: usize) -> Result<(), KeyError> {
    match v {
        Some(v) if !(lo..=hi).contains(&v) => {
            Err(KeyError::new(key, format!("expected {lo} to {hi}")))
        }
        _ => Ok(()),
    }
}

/// A port's link parameters and the KISS parameters it sends: the defaults for the modem's
/// speed (`qtc_ax25::Config::for_air`), then whatever the port sets.
fn port_link(p: &PortCfg, kind: &Kind) -> Result<(qtc_ax25::Config, KissParams), KeyError> {
    if p.kiss_port > 15 {
        return Err(KeyError::new("kiss_port", "expected 0 to 15"));
    }
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
    let air = air(p.modem_baud.unwrap_or(kind.default_modem_baud()), &kiss);
    let mut link = qtc_ax25::Config::for_air(air);
    link.frack = duration("frack", &p.frack)?;
    link.t3 = duration("t3", &p.t3)?;
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

/// A `[[port]]`'s `ip` and `ip_mode`: the mode its datagrams travel in, `None` without IP.
pub(super) fn port_mode(ip: bool, mode: &str) -> Result<Option<qtc_ip::Mode>, KeyError> {
    if !ip {
        if !mode.is_empty() {
            return Err(KeyError::new("ip_mode", "set ip = true first"));
        }
        return Ok(None);
    }
    ip_mode_of(mode)
        .map(Some)
        .map_err(|m| KeyError::new("ip_mode", m))
}

pub(super) fn ip_mode_of(word: &str) -> Result<qtc_ip::Mode, String> {
    match word {
        "" | "datagram" => Ok(qtc_ip::Mode::Datagram),
        "vc" => Ok(qtc_ip::Mode::VirtualCircuit),
        other => Err(format!(
            "expected \"datagram\" (UI frames) or \"vc\" (a connected link), got {other:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<RadioPort>, KeyError> {
        let mut cfg: Config = toml::from_str(text).unwrap();
        let station = cfg.station.check()?;
        check(&cfg, station).map(|(_, ports)| ports)
    }

    #[test]
    fn defaults_follow_the_spec() {
        let p =
            parse("[[port]]\nname = \"vhf\"\nkind = \"kiss-tcp\"\naddress = \"127.0.0.1:8001\"\n")
                .unwrap();
        assert_eq!(p[0].kind.describe(), "kiss-tcp 127.0.0.1:8001");
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
        assert_eq!(
            p[0].kind.describe(),
            "axudp 127.0.0.1:10093 peers N0BBB-1@127.0.0.1:10094"
        );
        assert_eq!(
            p[0].beacon,
            Some((Duration::from_secs(600), "N0ABC BBS".into()))
        );
        assert_eq!(
            p[1].kind.describe(),
            "kiss-pty created, peer side at /tmp/x"
        );
        assert!(!p[1].link.prefer_v22);
        assert_eq!(p[2].kind.describe(), "kiss-serial /dev/ttyUSB0 1200 baud");
    }

    #[test]
    fn errors_name_the_key() {
        let e = parse("[[port]]\nname = \"a\"\nkind = \"kiss\"\n").unwrap_err();
        assert_eq!(e.key, "[[port]] #1 (a) kind", "{e:?}");
        assert!(
            e.problem
                .contains("kiss-tcp, axudp, kiss-pty or kiss-serial"),
            "{e:?}"
        );
        let e = parse("[[port]]\nname = \"a\"\nkind = \"kiss-pty\"\n").unwrap_err();
        assert!(e.problem.contains("exactly one"), "{e:?}");
        let e =
            parse("[[port]]\nname = \"a\"\nkind = \"kiss-tcp\"\naddress = \"x\"\n").unwrap_err();
        assert!(e.key.contains("address"), "{e:?}");
        let e =
            parse("[[port]]\nname = \"a\"\nkind = \"kiss-tcp\"\naddress = \"h:1\"\nmaxframe = 8\n")
                .unwrap_err();
        assert!(e.key.contains("maxframe"), "{e:?}");
        let e = parse("[ax25]\nbbs_ssids = [16]\n").unwrap_err();
        assert!(e.key.contains("bbs_ssids"), "{e:?}");
        // A typo is refused by name; another kind's key is let be, as it always was.
        let e =
            parse("[[port]]\nname = \"a\"\nkind = \"kiss-tcp\"\naddress = \"h:1\"\nadress = 1\n")
                .unwrap_err();
        assert_eq!(e.key, "[[port]] #1 (a) adress", "{e:?}");
        assert!(e.problem.contains("docs/radio.md"), "{e:?}");
        parse("[[port]]\nname = \"a\"\nkind = \"kiss-tcp\"\naddress = \"h:1\"\nbaud = 1200\n")
            .unwrap();
    }
}
