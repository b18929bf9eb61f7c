//! `[forward]`, `[[partner]]` and `[[rule]]`: forwarding settings, the partners as written
//! and checked into [`Partner`]s, and the hold/reject rules.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use qtc_callsign::Callsign;
use serde::Deserialize;

use super::radio::RadioPort;
use super::{parse_addrs, KeyError};

/// `[forward]`
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(super) struct ForwardCfg {
    /// Raw forwarding TCP ports (no telnet escaping, like LinBPQ's FBBPORT).
    pub(super) listen: Vec<String>,
    /// Silence from a partner longer than this ends the session ("5m", "90s").
    pub(super) idle_timeout: String,
    /// Proposals per block (1 to 5).
    pub(super) max_proposals: usize,
    /// A block stops growing past this many bytes.
    pub(super) block_bytes: usize,
    /// Raw forwarding ports speaking TLS (needs `[tls]`).
    pub(super) tls_listen: Vec<String>,
}

impl Default for ForwardCfg {
    fn default() -> Self {
        ForwardCfg {
            listen: Vec::new(),
            idle_timeout: "5m".into(),
            max_proposals: 5,
            block_bytes: 10_000,
            tls_listen: Vec::new(),
        }
    }
}

/// `[forward]`, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Forward {
    /// Raw forwarding listen addresses.
    pub listen: Vec<SocketAddr>,
    /// Raw forwarding listen addresses speaking TLS.
    pub tls_listen: Vec<SocketAddr>,
    /// Silence from a partner longer than this ends the session.
    pub idle: Duration,
    /// Proposals per block (1 to 5).
    pub max_proposals: usize,
    /// A block stops growing past this many bytes.
    pub block_bytes: usize,
}

/// `[[rule]]`: hold or reject mail whose field matches a pattern.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct RuleCfg {
    /// "hold" or "reject".
    pub(super) action: String,
    /// "from", "to", "at", "bid" or "subject".
    pub(super) field: String,
    /// Glob pattern: `*` any run, `?` one character, case-insensitive.
    pub(super) pattern: String,
}

/// One step of a partner login script.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct ScriptStep {
    /// Wait for this text (case-insensitive substring).
    pub(super) expect: Option<String>,
    /// Then send this line.
    pub(super) send: Option<String>,
}

/// `[[partner]]`: a neighbour BBS we exchange mail with.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct PartnerCfg {
    /// Its callsign (no SSID).
    pub(super) callsign: String,
    /// How to reach it: "tcp:HOST:PORT"; empty: it only calls us.
    #[serde(default)]
    pub(super) connect: String,
    /// Telnet port (IAC escaping) instead of a raw forwarding port.
    #[serde(default)]
    pub(super) telnet: bool,
    /// Its bytes on a raw TCP link are IAC-escaped (0xFF doubled) with no telnet negotiation,
    /// as xfbbd's outgoing forwarding always is: qtc undoes and applies the doubling when it
    /// calls us on the raw forwarding port and when we call it with `telnet = false`.
    #[serde(default)]
    pub(super) iac_escaped: bool,
    /// What we answer to its callsign/login/user prompt (default: our callsign).
    #[serde(default)]
    pub(super) login: String,
    /// What we answer to its password prompt (never logged).
    #[serde(default)]
    pub(super) password: String,
    /// The secret for its login challenges (FBB `SYS` numbers or MD5 form, Winlink `;PQ`);
    /// empty: the password.
    #[serde(default)]
    pub(super) secret: String,
    /// The highest mode we offer it: mbl, fbb, b0, b1 or b2.
    #[serde(default = "default_protocol")]
    pub(super) protocol: String,
    /// `@` elements it takes (its call, regions, countries, WW...).
    #[serde(default)]
    pub(super) routes: Vec<String>,
    /// How soon we call it again while mail waits for it ("10m", "1h"); with an interval,
    /// new mail for it goes at once. "0": calls only on demand and at `poll`.
    #[serde(default = "default_interval")]
    pub(super) interval: String,
    /// How often we call it with nothing to send, to collect its mail (reverse forwarding);
    /// "0": never. Unset: the interval.
    #[serde(default)]
    pub(super) poll: Option<String>,
    /// A login script replacing the default one.
    #[serde(default)]
    pub(super) script: Vec<ScriptStep>,
    /// Log every protocol line exchanged with this partner (at info, target `qtc::trace`).
    #[serde(default)]
    pub(super) trace: bool,
    /// For `connect = "tls:..."`: PEM file with the certificate(s) to trust for this partner.
    #[serde(default)]
    pub(super) tls_ca: PathBuf,
    /// For `connect = "tls:..."`: the name its certificate must carry (default: the host).
    #[serde(default)]
    pub(super) tls_name: String,
}

fn default_protocol() -> String {
    qtc_fbb::Mode::DEFAULT.name().to_ascii_lowercase()
}

fn default_interval() -> String {
    "0".into()
}

/// How to reach a partner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connect {
    /// It only calls us.
    None,
    /// TCP to `host:port`.
    Tcp(String),
    /// TLS over TCP to `addr`, checking the certificate against `ca` for `name`.
    Tls {
        /// `host:port`.
        addr: String,
        /// The name the certificate must carry.
        name: String,
        /// Trusted certificates.
        ca: PathBuf,
    },
    /// AX.25 on a radio port: `ax25:PORT:CALL[,DIGI...]`.
    Ax25 {
        /// The `[[port]]` name.
        port: String,
        /// The partner's callsign with SSID.
        call: qtc_callsign::Callsign,
        /// Digipeaters, in order.
        via: Vec<qtc_callsign::Callsign>,
    },
    /// A NET/ROM circuit to a node: `netrom:ALIAS` or `netrom:CALL`.
    Netrom {
        /// The node's alias or callsign, as written (upper case).
        node: String,
    },
}

/// As a sysop writes it in `connect = "..."`; a partner that only calls us: "calls us".
impl std::fmt::Display for Connect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Connect::None => f.write_str("calls us"),
            Connect::Tcp(addr) => write!(f, "tcp:{addr}"),
            Connect::Tls { addr, name, ca } => {
                write!(
                    f,
                    "tls:{addr} (certificate for {name} from {})",
                    ca.display()
                )
            }
            Connect::Ax25 { port, call, via } => {
                write!(f, "ax25:{port}:{call}")?;
                via.iter().try_for_each(|d| write!(f, ",{d}"))
            }
            Connect::Netrom { node } => write!(f, "netrom:{node}"),
        }
    }
}

/// A checked `[[partner]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Partner {
    /// Its call (no SSID: a partner is the station, whichever SSID it comes in on).
    pub call: Callsign,
    /// How to reach it.
    pub connect: Connect,
    /// IAC escaping on the link.
    pub telnet: bool,
    /// 0xFF doubled on its raw TCP links, nothing negotiated.
    pub iac_escaped: bool,
    /// The login script.
    pub script: Vec<qtc_fbb::login::Step>,
    /// The highest mode offered.
    pub max_mode: qtc_fbb::Mode,
    /// Routes, upper case.
    pub routes: Vec<String>,
    /// How soon it is called again while mail waits (new mail goes at once); `None`: only
    /// on demand and at `poll`.
    pub interval: Option<Duration>,
    /// How often it is called with nothing to send (reverse forwarding); `None`: never.
    pub poll: Option<Duration>,
    /// Log every protocol line with this partner.
    pub trace: bool,
    /// The secret for its login challenges, if any.
    pub secret: Option<String>,
}

impl Partner {
    /// What the store routes by: its call, its routes, and whether it collects its mail.
    pub fn routes(&self) -> qtc_mail::route::PartnerRoutes {
        qtc_mail::route::PartnerRoutes {
            call: self.call,
            routes: self.routes.clone(),
            // A Winlink station (Pat, Winlink Express): the local mail for it waits in its
            // queue until it calls.
            collects: self.max_mode.is_winlink(),
        }
    }

    /// One line for the start-up report and `qtc check`: how it is reached, the highest mode
    /// we offer and when we call it.
    pub fn describe(&self) -> String {
        let when = match (self.interval, self.poll) {
            (None, None) => "on demand".to_string(),
            (Some(i), p) if p == Some(i) => format!("every {}s", i.as_secs()),
            (Some(i), None) => format!("every {}s while mail waits, no poll", i.as_secs()),
            (Some(i), Some(p)) => format!(
                "every {}s while mail waits, poll every {}s",
                i.as_secs(),
                p.as_secs()
            ),
            (None, Some(p)) => format!("on demand, poll every {}s", p.as_secs()),
        };
        format!(
            "{} ({}, up to {}, {when})",
            self.call, self.connect, self.max_mode
        )
    }
}

/// What is allowed but probably wrong about the partners: one that we call over TCP or TLS with
/// the default login and no password answers every password prompt with an empty line.
pub(super) fn warnings(partners: &[PartnerCfg]) -> Vec<String> {
    partners
        .iter()
        .filter(|p| {
            let internet = p.connect.starts_with("tcp:") || p.connect.starts_with("tls:");
            internet && p.password.is_empty() && p.script.is_empty()
        })
        .map(|p| {
            format!(
                "partner {}: connect is set but password is empty: its password prompt gets an empty answer",
                p.callsign
            )
        })
        .collect()
}

impl ForwardCfg {
    /// `[forward]`: the listeners, the idle timeout, the block's size.
    pub(super) fn check(&self) -> Result<Forward, KeyError> {
        let idle = super::duration(
            "[forward] idle_timeout",
            &self.idle_timeout,
            "\"5m\" or \"90s\"",
            false,
        )?;
        if !(1..=5).contains(&self.max_proposals) {
            return Err(KeyError::new("[forward] max_proposals", "expected 1 to 5"));
        }
        Ok(Forward {
            listen: parse_addrs("[forward] listen", &self.listen)?,
            tls_listen: parse_addrs("[forward] tls_listen", &self.tls_listen)?,
            idle,
            max_proposals: self.max_proposals,
            block_bytes: self.block_bytes,
        })
    }
}

/// The key of the `i`th (from 0) `[[partner]]`, as written (`callsign`).
fn partner_key(i: usize, callsign: &str) -> String {
    format!("[[partner]] #{} ({callsign})", i + 1)
}

/// `[[partner]]`, each checked, none twice; `own` is our callsign (the default login).
pub(super) fn check_partners(
    written: &[PartnerCfg],
    own: Callsign,
    base: &Path,
) -> Result<Vec<Partner>, KeyError> {
    let mut partners = Vec::new();
    for (i, p) in written.iter().enumerate() {
        let partner =
            check_partner(p, own, base).map_err(|e| e.within(&partner_key(i, &p.callsign)))?;
        if partners.iter().any(|q: &Partner| q.call == partner.call) {
            return Err(KeyError::new(
                format!("[[partner]] #{}", i + 1),
                format!("{} is configured twice", partner.call),
            ));
        }
        partners.push(partner);
    }
    Ok(partners)
}

/// What the partners reach through other areas: a `[[port]]` for each `ax25:` partner, the
/// NET/ROM node (`netrom`: it is on) for a `netrom:` one.
pub(super) fn check_partner_links(
    partners: &[Partner],
    radio_ports: &[RadioPort],
    netrom: bool,
) -> Result<(), KeyError> {
    for (i, p) in partners.iter().enumerate() {
        let key = || format!("{} connect", partner_key(i, &p.call.to_string()));
        if let Connect::Ax25 { port, .. } = &p.connect {
            if !radio_ports.iter().any(|r| &r.name == port) {
                return Err(KeyError::new(
                    key(),
                    format!("no [[port]] is named {port:?}"),
                ));
            }
        }
        if matches!(p.connect, Connect::Netrom { .. }) && !netrom {
            return Err(KeyError::new(
                key(),
                "NET/ROM is off: give a [[port]] a netrom_quality (and [netrom] an alias)",
            ));
        }
    }
    Ok(())
}

/// `[[rule]]`, each checked.
pub(super) fn check_rules(written: &[RuleCfg]) -> Result<Vec<qtc_mail::rules::Rule>, KeyError> {
    written
        .iter()
        .enumerate()
        .map(|(i, r)| check_rule(r).map_err(|e| e.within(&format!("[[rule]] #{}", i + 1))))
        .collect()
}

fn check_rule(r: &RuleCfg) -> Result<qtc_mail::rules::Rule, KeyError> {
    use qtc_mail::rules::{Rule, RuleAction, RuleField};
    let action = match r.action.to_ascii_lowercase().as_str() {
        "hold" => RuleAction::Hold,
        "reject" => RuleAction::Reject,
        other => {
            return Err(KeyError::new(
                "action",
                format!("expected \"hold\" or \"reject\", got {other:?}"),
            ))
        }
    };
    let field = match r.field.to_ascii_lowercase().as_str() {
        "from" => RuleField::From,
        "to" => RuleField::To,
        "at" => RuleField::At,
        "bid" => RuleField::Bid,
        "subject" => RuleField::Subject,
        other => {
            return Err(KeyError::new(
                "field",
                format!("expected from, to, at, bid or subject, got {other:?}"),
            ))
        }
    };
    if r.pattern.is_empty() || r.pattern.len() > 80 {
        return Err(KeyError::new("pattern", "expected 1 to 80 characters"));
    }
    Ok(Rule {
        action,
        field,
        pattern: r.pattern.clone(),
    })
}

fn check_partner(p: &PartnerCfg, own: Callsign, base: &Path) -> Result<Partner, KeyError> {
    let call = Callsign::parse_station(&p.callsign)
        .map_err(|e| KeyError::new("callsign", e.to_string()))?;
    let connect = p.check_connect(base)?;
    let max_mode = qtc_fbb::Mode::from_name(&p.protocol).ok_or_else(|| {
        let names: Vec<String> = qtc_fbb::Mode::ALL
            .iter()
            .map(|m| m.name().to_ascii_lowercase())
            .collect();
        let (last, rest) = names.split_last().expect("modes");
        KeyError::new(
            "protocol",
            format!(
                "expected {} or {last}, got {:?}",
                rest.join(", "),
                p.protocol.to_ascii_lowercase()
            ),
        )
    })?;
    let interval = super::duration("interval", &p.interval, "\"10m\" or \"0\"", true)?;
    let poll = match &p.poll {
        Some(text) => super::duration("poll", text, "\"1h\" or \"0\"", true)?,
        None => interval,
    };
    let script = p.check_script(own, &connect)?;
    Ok(Partner {
        call: call.without_ssid(),
        connect,
        telnet: p.telnet,
        iac_escaped: p.iac_escaped,
        script,
        max_mode,
        routes: p.routes.iter().map(|r| r.to_ascii_uppercase()).collect(),
        interval: (!interval.is_zero()).then_some(interval),
        poll: (!poll.is_zero()).then_some(poll),
        trace: p.trace,
        secret: [&p.secret, &p.password]
            .into_iter()
            .find(|s| !s.is_empty())
            .cloned(),
    })
}

impl PartnerCfg {
    /// `connect`: how we reach it (`tls_ca` and `tls_name` for a TLS one), or nothing.
    fn check_connect(&self, base: &Path) -> Result<Connect, KeyError> {
        let wrong = |expected: &str| {
            KeyError::new(
                "connect",
                format!("expected {expected}, got {:?}", self.connect),
            )
        };
        if self.connect.is_empty() {
            Ok(Connect::None)
        } else if let Some(addr) = self.connect.strip_prefix("tcp:") {
            if addr
                .rsplit_once(':')
                .and_then(|(_, port)| port.parse::<u16>().ok())
                .is_none()
            {
                return Err(wrong("\"tcp:HOST:PORT\""));
            }
            Ok(Connect::Tcp(addr.to_string()))
        } else if let Some(addr) = self.connect.strip_prefix("tls:") {
            let Some((host, _)) = addr
                .rsplit_once(':')
                .filter(|(_, port)| port.parse::<u16>().is_ok())
            else {
                return Err(wrong("\"tls:HOST:PORT\""));
            };
            if self.tls_ca.as_os_str().is_empty() {
                return Err(KeyError::new(
                    "tls_ca",
                    "a tls: partner needs tls_ca = \"FILE\": the PEM certificate(s) to trust for it",
                ));
            }
            let host = host.trim_start_matches('[').trim_end_matches(']');
            Ok(Connect::Tls {
                addr: addr.to_string(),
                name: if self.tls_name.is_empty() {
                    host.to_string()
                } else {
                    self.tls_name.clone()
                },
                ca: base.join(&self.tls_ca),
            })
        } else if let Some(rest) = self.connect.strip_prefix("ax25:") {
            parse_ax25_connect(rest)
                .map_err(|m| wrong(&format!("\"ax25:PORTNAME:CALL[,DIGI1,DIGI2]\" ({m})")))
        } else if let Some(node) = self.connect.strip_prefix("netrom:") {
            let ok = node.parse::<qtc_netrom::Alias>().is_ok()
                || node.parse::<qtc_callsign::Callsign>().is_ok();
            if !ok {
                return Err(wrong("\"netrom:ALIAS\" or \"netrom:CALL\""));
            }
            Ok(Connect::Netrom {
                node: node.to_ascii_uppercase(),
            })
        } else {
            Err(wrong(
                "\"tcp:HOST:PORT\", \"ax25:PORTNAME:CALL[,DIGI...]\" or \"netrom:ALIAS\"",
            ))
        }
    }

    /// `script`, `login` and `password`: the steps that log us in over `connect`; `own` is
    /// our callsign (the default login).
    fn check_script(
        &self,
        own: Callsign,
        connect: &Connect,
    ) -> Result<Vec<qtc_fbb::login::Step>, KeyError> {
        use qtc_fbb::login::Step;
        let login = if self.login.is_empty() {
            own.to_string()
        } else {
            self.login.clone()
        };
        if self.script.is_empty()
            && matches!(connect, Connect::Ax25 { .. } | Connect::Netrom { .. })
        {
            // Over AX.25 the link's source callsign is the login, over NET/ROM the circuit's
            // user callsign: no prompts to answer.
            return Ok(Vec::new());
        }
        if self.script.is_empty() {
            return Ok(vec![
                Step::Expect(vec!["callsign".into(), "login:".into(), "user:".into()]),
                Step::Send(login),
                Step::ExpectOptional(vec!["password".into()]),
                Step::SendIfMatched(self.password.clone()),
            ]);
        }
        let mut steps = Vec::new();
        for s in &self.script {
            if let Some(e) = &s.expect {
                steps.push(Step::Expect(vec![e.clone()]));
            }
            match &s.send {
                Some(text) => steps.push(Step::Send(
                    text.replace("{login}", &login)
                        .replace("{password}", &self.password),
                )),
                None if s.expect.is_none() => {
                    return Err(KeyError::new(
                        "script",
                        "each step needs expect, send or both",
                    ))
                }
                None => {}
            }
        }
        Ok(steps)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
