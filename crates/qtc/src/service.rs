//! Service integration: systemd's notify protocol (`READY=1`, `STOPPING=1`, `WATCHDOG=1`) and
//! the SIGHUP reload.
//!
//! sd_notify is a datagram with `KEY=VALUE` lines sent to the unix socket named by
//! `$NOTIFY_SOCKET` (a path, or an abstract name when it starts with `@`); a few lines with
//! std's `UnixDatagram`, no crate. Without `$NOTIFY_SOCKET` nothing is sent. The watchdog ping
//! is the only periodic wake-up qtc has, and only when systemd asks for it (`WatchdogSec=`,
//! which sets `$WATCHDOG_USEC`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;

use crate::config::{self, Loaded};
use crate::housekeeping::Housekeeper;
use crate::store_thread::StoreHandle;

/// Sends `state` (e.g. `"READY=1"`) to systemd when run under `Type=notify`; otherwise nothing.
pub fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(e) = send_notify(&path, state) {
        tracing::warn!(error = %e, "sd_notify failed");
    }
}

fn send_notify(path: &std::ffi::OsStr, state: &str) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let sock = UnixDatagram::unbound()?;
    let bytes = path.as_bytes();
    let addr = if let Some(name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        SocketAddr::from_abstract_name(name)?
    } else {
        SocketAddr::from_pathname(std::path::Path::new(path))?
    };
    sock.send_to_addr(state.as_bytes(), &addr)?;
    Ok(())
}

/// The watchdog interval systemd asks for (half of `$WATCHDOG_USEC`), if it asks us.
pub fn watchdog_interval() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.trim().parse().ok()?;
    if let Ok(pid) = std::env::var("WATCHDOG_PID") {
        if pid.trim().parse::<u32>().ok()? != std::process::id() {
            return None;
        }
    }
    (usec > 0).then(|| Duration::from_micros(usec / 2))
}

/// Catches SIGHUP from now on (before the daemon announces itself, so that a reload request
/// can never kill it); [`start`] acts on it.
pub fn catch_hup() -> anyhow::Result<tokio::signal::unix::Signal> {
    use tokio::signal::unix::{signal, SignalKind};
    signal(SignalKind::hangup()).context("cannot catch SIGHUP")
}

/// Starts the SIGHUP reload and, under systemd's watchdog, the watchdog ping.
pub fn start(
    c: &Loaded,
    mut hup: tokio::signal::unix::Signal,
    store: StoreHandle,
    housekeeper: Arc<Housekeeper>,
    stop: &watch::Receiver<bool>,
    tasks: &TaskTracker,
) {
    let mut current = c.clone();
    let mut st = stop.clone();
    tasks.spawn(async move {
        loop {
            tokio::select! {
                r = hup.recv() => if r.is_none() { return },
                _ = st.changed() => return,
            }
            notify("RELOADING=1");
            match reload(&current, &store, &housekeeper).await {
                Ok(new) => current = new,
                Err(e) => {
                    tracing::error!("reload failed, keeping the running configuration: {e:#}")
                }
            }
            notify("READY=1");
        }
    });
    if let Some(every) = watchdog_interval() {
        let mut st = stop.clone();
        tracing::info!(
            interval_ms = every.as_millis() as u64,
            "systemd watchdog on"
        );
        tasks.spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = tick.tick() => notify("WATCHDOG=1"),
                    _ = st.changed() => return,
                }
            }
        });
    }
}

/// Where the running configuration came from, for a reload: `None` for the built-in defaults.
fn source_path(c: &Loaded) -> Option<std::path::PathBuf> {
    (c.source != "built-in defaults").then(|| std::path::PathBuf::from(&c.source))
}

/// Reloads the config file and applies what is safe while running: the partners' routes and
/// the hold/reject rules (both in the store's copy of the Station) and the housekeeping settings. Everything else
/// is logged as needing a restart.
pub async fn reload(
    old: &Loaded,
    store: &StoreHandle,
    housekeeper: &Housekeeper,
) -> anyhow::Result<Loaded> {
    let new = config::load(source_path(old).as_deref())?;
    let station = new.station.clone();
    store
        .call(move |s| s.set_station(station))
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    housekeeper.set(new.housekeeping);
    let routes_changed = old
        .partners
        .iter()
        .map(|p| (&p.call, &p.routes))
        .ne(new.partners.iter().map(|p| (&p.call, &p.routes)));
    let restart = restart_needed(old, &new);
    tracing::info!(
        config = %new.source,
        routes_changed,
        rules_changed = old.station.rules != new.station.rules,
        housekeeping_changed = old.housekeeping != new.housekeeping,
        "configuration reloaded: partner routes, rules and housekeeping applied"
    );
    for key in &restart {
        tracing::warn!("{key} changed in {}: restart qtc to apply it", new.source);
    }
    Ok(new)
}

/// The parts of the configuration a reload does not apply (compared as checked, so "30m" and
/// "1800s" are no change).
pub fn restart_needed(a: &Loaded, b: &Loaded) -> Vec<&'static str> {
    let mut v = Vec::new();
    if !a.station.same_identity(&b.station) {
        v.push("[station]");
    }
    if a.store != b.store {
        v.push("[store]");
    }
    if a.telnet != b.telnet {
        v.push("[telnet]");
    }
    if a.limits != b.limits {
        v.push("[limits]");
    }
    if a.log != b.log {
        v.push("[log]");
    }
    if a.forward != b.forward {
        v.push("[forward]");
    }
    if a.web != b.web {
        v.push("[web]");
    }
    if a.ax25 != b.ax25 || a.radio_ports != b.radio_ports {
        v.push("[ax25]/[[port]]");
    }
    if a.netrom != b.netrom {
        v.push("[netrom]");
    }
    // Routes are applied; anything else about a partner (connect, login, protocol, interval,
    // a partner added or removed) is held by the running forwarder.
    let strip = |ps: &[config::forward::Partner]| {
        ps.iter()
            .map(|p| config::forward::Partner {
                routes: Vec::new(),
                ..p.clone()
            })
            .collect::<Vec<_>>()
    };
    if strip(&a.partners) != strip(&b.partners) {
        v.push("[[partner]] connection settings");
    }
    v
}

/// `qtc check`: the configuration is loaded and checked (nothing is bound or opened); prints
/// what qtc would listen on.
pub fn check(c: &Loaded) -> anyhow::Result<()> {
    outln!(
        "ok: {} ({}), config: {}",
        c.station.call,
        c.station.haddr,
        c.source
    );
    for a in &c.telnet.listen {
        outln!("telnet: would listen on {a}");
    }
    for a in &c.forward.listen {
        outln!("forward: would listen on {a}");
    }
    for (what, addrs) in [
        ("telnet-tls", &c.telnet.tls_listen),
        ("forward-tls", &c.forward.tls_listen),
    ] {
        for a in addrs {
            outln!("{what}: would listen on {a}");
        }
    }
    if let Some(w) = &c.web {
        outln!("web: would listen on {}", w.listen);
    }
    for line in crate::radio::report_lines(c) {
        outln!("{line}");
    }
    for p in &c.partners {
        outln!("partner: {}", p.describe());
    }
    for w in &c.warnings {
        outln!("warning: {w}");
    }
    outln!("housekeeping: daily at {:02}:00 UTC", c.housekeeping.hour);
    outln!("control: {}", crate::ctl::path(&c.store.dir).display());
    outln!("data: {}", c.store.dir.join("qtc.sqlite").display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Loaded {
        config::parse(text, "qtc.toml", std::path::Path::new("/etc/qtc")).unwrap()
    }

    #[test]
    fn a_restart_is_asked_for_changed_values_not_changed_spellings() {
        let a = load(
            "[limits]\nidle_timeout = \"30m\"\n\
             [[partner]]\ncallsign = \"N0BBB\"\nroutes = [\"N0BBB\"]\n",
        );
        // The same values written otherwise, and new routes (applied by the reload).
        let b = load(
            "[limits]\nidle_timeout = \"1800s\"\n\
             [[partner]]\ncallsign = \"n0bbb\"\nroutes = [\"N0BBB\", \"WW\"]\n",
        );
        assert!(restart_needed(&a, &b).is_empty());
        let c = load(
            "[telnet]\nmax_sessions = 7\n\
             [[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:bbs.example:6300\"\n",
        );
        assert_eq!(
            restart_needed(&a, &c),
            ["[telnet]", "[[partner]] connection settings"]
        );
    }
}
