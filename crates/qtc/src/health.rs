//! The station's health in one model, for `qtc ctl status` (text and `--json`) and the web:
//! each radio port's device state and traffic, each partner's queue, last session and next
//! call, the sessions in progress, and the store's size against its quota.

use std::sync::Arc;

use qtc_callsign::Callsign;
use serde::Serialize;

use crate::config::forward::Partner;
use crate::forward::{ForwardHandle, LastResult};
use crate::metrics::Metrics;
use crate::online::Online;
use crate::radio::{PortReport, Radios};
use crate::store_thread::StoreHandle;

/// Everything `qtc ctl status` shows.
#[derive(Debug, Serialize)]
pub struct Health {
    /// Radio ports, by name.
    pub ports: Vec<PortReport>,
    /// Configured partners, and any other with queued mail.
    pub partners: Vec<PartnerReport>,
    /// Forwarding sessions in progress.
    pub sessions: Vec<SessionReport>,
    /// Telnet connections open now.
    pub telnet_sessions: i64,
    /// Users logged in now (telnet and radio).
    pub users: Vec<UserReport>,
    /// The message store.
    pub store: StoreReport,
    /// The NET/ROM node, when `[netrom]` is on.
    pub netrom: Option<crate::radio::netrom::NetromView>,
    /// The IP router, when `[ip]` is on.
    pub ip: Option<crate::radio::ip::IpView>,
}

/// One partner.
#[derive(Debug, Serialize)]
pub struct PartnerReport {
    /// Its callsign.
    pub call: String,
    /// Messages waiting for it.
    pub queued: u64,
    /// How its last session (or call attempt) since start ended.
    pub last: Option<LastReport>,
    /// When the schedule calls it next (Unix seconds); none: only on demand.
    pub next_call: Option<i64>,
    /// Seconds before it is called again while mail waits (`[[partner]] interval`; new mail
    /// goes at once); none: only on demand, or not configured.
    pub interval: Option<u64>,
    /// Seconds between calls with nothing to send (`[[partner]] poll`, reverse forwarding);
    /// none: never, or not configured.
    pub poll: Option<u64>,
    /// Bytes read from it since start, all sessions.
    pub bytes_in: u64,
    /// Bytes written to it since start, all sessions.
    pub bytes_out: u64,
    /// Its last sessions since start, newest first (the first is `last`).
    pub history: Vec<LastReport>,
}

/// A user logged in.
#[derive(Debug, Serialize)]
pub struct UserReport {
    /// Callsign.
    pub call: String,
    /// `telnet` or the radio port's name.
    pub via: String,
    /// Since when (Unix seconds).
    pub since: i64,
}

/// How a session ended.
#[derive(Clone, Debug, Serialize)]
pub struct LastReport {
    /// When (Unix seconds).
    pub at: i64,
    /// `outgoing` (we called) or `incoming` (it called us).
    pub role: &'static str,
    /// The `qtc ctl forward` line for it.
    pub result: String,
    /// Whether it ended well.
    pub ok: bool,
    /// Messages received.
    pub received: usize,
    /// Messages delivered.
    pub sent: usize,
    /// Messages the partner refused.
    pub refused: usize,
}

/// A forwarding session in progress.
#[derive(Debug, Serialize)]
pub struct SessionReport {
    /// The partner.
    pub partner: String,
    /// `outgoing` (we called) or `incoming` (it called us).
    pub role: &'static str,
    /// Since when (Unix seconds).
    pub since: i64,
    /// The agreed mode, once known.
    pub mode: Option<String>,
}

/// The store's size.
#[derive(Debug, Serialize)]
pub struct StoreReport {
    /// Its file.
    pub path: String,
    /// The database and its write-ahead log, in bytes.
    pub bytes: u64,
    /// The store's cap in bytes (`[store] max_mb`, or derived from the disk); 0: no quota.
    pub quota_bytes: u64,
}

/// Who opened a forwarding session: `outgoing` (we called the partner) or `incoming` (it
/// called us). ("called" read as the partner having called.)
fn role(r: qtc_fbb::Role) -> &'static str {
    match r {
        qtc_fbb::Role::Caller => "outgoing",
        qtc_fbb::Role::Called => "incoming",
    }
}

fn last_report(partner: Callsign, l: LastResult) -> LastReport {
    LastReport {
        at: l.at,
        role: role(l.role),
        result: crate::forward::forward_answer(partner, &l.summary),
        ok: l.summary.error.is_none(),
        received: l.summary.received,
        sent: l.summary.sent,
        refused: l.summary.refused,
    }
}

/// Where the model is read from; made in `daemon.rs`.
#[derive(Clone)]
pub struct Sources {
    /// Forwarding: partners, sessions, last results.
    pub forward: ForwardHandle,
    /// The store: queues, its file.
    pub store: StoreHandle,
    /// The radio ports.
    pub radios: Radios,
    /// The counters (telnet sessions).
    pub metrics: Arc<Metrics>,
    /// Who is logged in.
    pub online: Arc<Online>,
}

/// Reads the model now.
pub async fn gather(sources: &Sources) -> Result<Health, String> {
    let Sources {
        forward: fwd,
        store,
        radios,
        metrics,
        online,
    } = sources;
    let (counts, path, quota) = store
        .call(|s| {
            // The quota as it is now (one that follows the disk is measured again).
            crate::room::refresh(s);
            let quota = s.max_size()?;
            s.queue_counts().map(|c| (c, s.path().to_path_buf(), quota))
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("the store is not available: {e}"))?;
    let configured = fwd.partners();
    // The configured partners, then any other the queue names (its rows are the calls' text).
    let mut calls: Vec<String> = configured.iter().map(|p| p.call.to_string()).collect();
    for (p, _) in &counts {
        if !calls.contains(p) {
            calls.push(p.clone());
        }
    }
    let setting = |call: Option<Callsign>, key: fn(&Partner) -> Option<std::time::Duration>| {
        configured
            .iter()
            .find(|p| Some(p.call) == call)
            .and_then(key)
            .map(|d| d.as_secs())
    };
    let partners = calls
        .into_iter()
        .map(|name| {
            // A queue row's name that is no callsign has no sessions here.
            let call = Callsign::parse_station(&name).ok();
            let log = call.map(|c| fwd.partner_log(c)).unwrap_or_default();
            let history: Vec<LastReport> = call
                .map(|c| log.recent.into_iter().map(|l| last_report(c, l)).collect())
                .unwrap_or_default();
            PartnerReport {
                queued: counts
                    .iter()
                    .find(|(c, _)| *c == name)
                    .map_or(0, |(_, n)| *n),
                last: history.first().cloned(),
                next_call: call.and_then(|c| fwd.next_call(c)),
                interval: setting(call, |p| p.interval),
                poll: setting(call, |p| p.poll),
                bytes_in: log.bytes_in,
                bytes_out: log.bytes_out,
                history,
                call: name,
            }
        })
        .collect();
    let sessions = fwd
        .active()
        .into_iter()
        .map(|(partner, a)| SessionReport {
            partner: partner.to_string(),
            role: role(a.role),
            since: a.since,
            mode: a.mode.map(|m| m.to_string()),
        })
        .collect();
    let netrom = match radios.netrom() {
        Some(n) => Some(n.view().await),
        None => None,
    };
    let size = |suffix: &str| {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        std::fs::metadata(p).map_or(0, |m| m.len())
    };
    Ok(Health {
        ports: radios.health(),
        partners,
        sessions,
        telnet_sessions: metrics.telnet_sessions(),
        users: online
            .who()
            .into_iter()
            .map(|(u, since)| UserReport {
                call: u.call,
                via: u.via,
                since,
            })
            .collect(),
        store: StoreReport {
            bytes: size("") + size("-wal"),
            path: path.display().to_string(),
            quota_bytes: quota,
        },
        netrom,
        ip: radios.ip().map(|i| i.view()),
    })
}

impl StoreReport {
    /// `43.2 MB of 1.8 GB`, or `43.2 MB, no quota`.
    pub fn size_line(&self) -> String {
        match self.quota_bytes {
            0 => format!("{}, no quota", size(self.bytes)),
            q => format!("{} of {}", size(self.bytes), size(q)),
        }
    }
}

/// A store's size for people: `812 KB`, `4.2 MB`, `51 MB`, `1.8 GB` (decimal units, as disks
/// are sold), three digits at most.
pub fn size(n: u64) -> String {
    let f = n as f64;
    let (v, unit) = match n {
        0..1_000_000 => (f / 1e3, "KB"),
        1_000_000..1_000_000_000 => (f / 1e6, "MB"),
        _ => (f / 1e9, "GB"),
    };
    if v < 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.0} {unit}")
    }
}

/// A byte count, short: `512 B`, `12 KiB`, `3 MiB`.
pub fn bytes(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{} KiB", n / 1024),
        _ => format!("{} MiB", n / 1_048_576),
    }
}

/// An interval as the config writes it: `90s`, `10m`, `2h`, `1d`.
pub fn every(secs: u64) -> String {
    match secs {
        s if s >= 86_400 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// When a partner is called, for `qtc ctl status`: `; calls every 10m` (as often with mail
/// and without), `; calls every 15s while mail waits, polls every 2h` or `... , no poll`,
/// `; polls every 2h`; nothing for a partner called only on demand.
pub fn calls(interval: Option<u64>, poll: Option<u64>) -> String {
    match (interval, poll) {
        (None, None) => String::new(),
        (Some(i), Some(p)) if i == p => format!("; calls every {}", every(i)),
        (Some(i), p) => format!(
            "; calls every {} while mail waits, {}",
            every(i),
            p.map_or("no poll".to_string(), |p| format!(
                "polls every {}",
                every(p)
            ))
        ),
        (None, Some(p)) => format!("; polls every {}", every(p)),
    }
}

/// A Unix time as RFC 3339 UTC.
pub fn time(t: i64) -> String {
    qtc_mail::Utc::from_unix(t).rfc3339()
}

impl Health {
    /// The text `qtc ctl status` prints.
    pub fn text(&self) -> String {
        let mut out = String::from("sessions:\n");
        if self.sessions.is_empty() {
            out.push_str("  none\n");
        }
        for s in &self.sessions {
            out.push_str(&format!(
                "  {:<8} {} since {} mode {}\n",
                s.partner,
                s.role,
                time(s.since),
                s.mode.as_deref().unwrap_or("-")
            ));
        }
        out.push_str(&format!("telnet users: {}\n", self.telnet_sessions));
        if !self.users.is_empty() {
            out.push_str("users online:\n");
        }
        for u in &self.users {
            out.push_str(&format!(
                "  {:<8} {} since {}\n",
                u.call,
                u.via,
                time(u.since)
            ));
        }
        out.push_str("queues:\n");
        for p in &self.partners {
            out.push_str(&format!("  {:<8} {} queued", p.call, p.queued));
            if let Some(l) = &p.last {
                let who = if l.role == role(qtc_fbb::Role::Caller) {
                    "we called"
                } else {
                    "it called"
                };
                out.push_str(&format!("; last: {who} at {}: {}", time(l.at), l.result));
            }
            out.push_str(&calls(p.interval, p.poll));
            if let Some(t) = p.next_call {
                out.push_str(&format!("; next call {}", time(t)));
            }
            out.push_str(&format!(
                "; {} in, {} out\n",
                bytes(p.bytes_in),
                bytes(p.bytes_out)
            ));
        }
        if let Some(n) = &self.netrom {
            out.push_str(&format!(
                "netrom: {}:{}, {} nodes, {} neighbours, {} circuits (qtc ctl nodes)\n",
                n.alias,
                n.call,
                n.nodes.len(),
                n.neighbours.len(),
                n.circuits.len()
            ));
        }
        if let Some(i) = &self.ip {
            out.push_str(&format!(
                "ip: {} on tun {}, {} in the ARP table, {} (qtc ctl ip)\n",
                i.address,
                i.tun,
                crate::out::plural(i.arp.len(), "station"),
                crate::out::plural(i.routes.len(), "route")
            ));
        }
        if !self.ports.is_empty() {
            out.push_str("radio ports:\n");
        }
        for p in &self.ports {
            let state = if p.device.up {
                format!("up since {}", time(p.device.since))
            } else {
                format!(
                    "DOWN since {} ({}){}",
                    time(p.device.since),
                    p.device.reason.as_deref().unwrap_or("?"),
                    p.device
                        .next_retry
                        .map(|t| format!(", retry at {}", time(t)))
                        .unwrap_or_default()
                )
            };
            out.push_str(&format!(
                "  {:<8} {state}; frames in {} out {}; {} heard\n",
                p.name,
                p.frames_in,
                p.frames_out,
                crate::out::plural(p.heard, "station")
            ));
        }
        out.push_str(&format!(
            "store: {} ({})\n",
            self.store.size_line(),
            self.store.path
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_we_made_is_outgoing() {
        assert_eq!(role(qtc_fbb::Role::Caller), "outgoing");
        assert_eq!(role(qtc_fbb::Role::Called), "incoming");
    }

    #[test]
    fn intervals_read_as_written() {
        assert_eq!(every(90), "90s");
        assert_eq!(every(600), "10m");
        assert_eq!(every(7200), "2h");
        assert_eq!(every(86_400), "1d");
    }

    #[test]
    fn store_sizes_read_in_mb_and_gb() {
        assert_eq!(size(812_345), "812 KB");
        assert_eq!(size(4_234_567), "4.2 MB");
        assert_eq!(size(51_234_567), "51 MB");
        assert_eq!(size(1_834_567_890), "1.8 GB");
        let r = StoreReport {
            path: String::new(),
            bytes: 43_200_000,
            quota_bytes: 1_800_000_000,
        };
        assert_eq!(r.size_line(), "43 MB of 1.8 GB");
    }
}
