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

use crate::config::Loaded;
use crate::reload::Reloader;

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
    mut hup: tokio::signal::unix::Signal,
    reloader: Arc<Reloader>,
    stop: &watch::Receiver<bool>,
    tasks: &TaskTracker,
) {
    let mut st = stop.clone();
    tasks.spawn(async move {
        loop {
            tokio::select! {
                r = hup.recv() => if r.is_none() { return },
                _ = st.changed() => return,
            }
            notify("RELOADING=1");
            if let Err(e) = reloader.reload().await {
                tracing::error!("reload failed, keeping the running configuration: {e:#}")
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

/// Loads `[tls]` (`None`: no TLS); the error names the key and the way to a certificate.
pub fn our_certificate(c: &Loaded) -> anyhow::Result<Option<crate::tls::Ours>> {
    let Some((cert, key)) = &c.tls else {
        return Ok(None);
    };
    crate::tls::ours(cert, key).map(Some).with_context(|| {
        format!(
            "[tls] cert and key in {}: give a PEM certificate and its key, or remove both \
             files and run `qtc -c {} cert` to make a self-signed pair",
            c.source, c.source
        )
    })
}

/// `qtc check`: the configuration is loaded and checked (nothing is bound or opened, but
/// `[tls]` is read: its fingerprint is printed); prints what qtc would listen on, and every
/// listener where no password could ever be taken.
pub fn check(c: &Loaded) -> anyhow::Result<()> {
    let tls = our_certificate(c)?;
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
    for l in &c.mail.listeners {
        outln!("{}: would listen on {}", l.name(), l.addr);
    }
    if let (Some((cert, _)), Some(ours)) = (&c.tls, &tls) {
        outln!("{}", crate::tls::certificate_line(cert, &ours.fingerprint));
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
