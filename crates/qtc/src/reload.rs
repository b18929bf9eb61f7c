//! Applying a changed configuration while running, for SIGHUP and for the web's `/config`
//! page alike: the file is loaded and checked as `qtc check` does, and what can change live is
//! applied: the partners (routes, how each is called, its interval and schedule; added and
//! removed), the hold/reject rules and the housekeeping settings. Everything else is named as
//! needing a restart. One [`Reloader`] holds the running configuration, so a reload and a web
//! change never compare against a stale one, and runs one change at a time.

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::{self, Loaded};
use crate::forward::schedule::Schedules;
use crate::housekeeping::Housekeeper;
use crate::store_thread::StoreHandle;

/// What a reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// What changed and was applied now (`partners`, `rules`, `housekeeping`).
    pub applied: Vec<&'static str>,
    /// What changed and needs a restart (`[telnet]`, `[ax25]/[[port]]`...).
    pub restart: Vec<&'static str>,
}

impl Applied {
    /// One line for people: "applied: partners; restart qtc to apply: [limits]".
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if self.applied.is_empty() && self.restart.is_empty() {
            parts.push("nothing changed".to_string());
        }
        if !self.applied.is_empty() {
            parts.push(format!("applied now: {}", self.applied.join(", ")));
        }
        if !self.restart.is_empty() {
            parts.push(format!("restart qtc to apply: {}", self.restart.join(", ")));
        }
        parts.join("; ")
    }
}

/// Why a change from the web was not made.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// The daemon runs on the built-in defaults: there is no file to write.
    #[error(
        "qtc runs on the built-in defaults, so there is no file to change: start it with -c FILE"
    )]
    NoFile,
    /// The change itself, or the file it would make, is refused (the key and the fix).
    #[error("{0}")]
    Invalid(String),
    /// The file could not be read or written.
    #[error("{0}")]
    Io(String),
}

/// The running configuration and what applies a new one.
pub struct Reloader {
    current: tokio::sync::Mutex<Loaded>,
    /// The config file; `None`: the built-in defaults.
    path: Option<PathBuf>,
    store: StoreHandle,
    housekeeper: Arc<Housekeeper>,
    schedules: Arc<Schedules>,
}

impl Reloader {
    /// For the daemon started with `c`.
    pub fn new(
        c: &Loaded,
        store: StoreHandle,
        housekeeper: Arc<Housekeeper>,
        schedules: Arc<Schedules>,
    ) -> Reloader {
        Reloader {
            path: (c.source != "built-in defaults").then(|| PathBuf::from(&c.source)),
            current: tokio::sync::Mutex::new(c.clone()),
            store,
            housekeeper,
            schedules,
        }
    }

    /// The config file, if the daemon runs on one.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    /// Reloads the file (SIGHUP) and applies what can change while running.
    pub async fn reload(&self) -> anyhow::Result<Applied> {
        let mut current = self.current.lock().await;
        let new = config::load(self.path.as_deref())?;
        self.apply(&mut current, new).await
    }

    /// Changes the file as `edit` says (given its text, the new text or why not), checks the
    /// result as `qtc check` does, writes it in one step and applies it as a reload does;
    /// `by` is who asked (logged).
    pub async fn save(
        &self,
        by: &str,
        edit: impl FnOnce(&str) -> Result<String, String> + Send + 'static,
    ) -> Result<Applied, SaveError> {
        let path = self.path.clone().ok_or(SaveError::NoFile)?;
        let mut current = self.current.lock().await;
        // Reading, checking and writing (with its fsyncs) run off the event thread.
        let new = tokio::task::spawn_blocking(move || written(&path, edit))
            .await
            .map_err(|e| SaveError::Io(e.to_string()))??;
        tracing::info!(config = %new.source, %by, "configuration changed on the web");
        self.apply(&mut current, new)
            .await
            .map_err(|e| SaveError::Io(format!("{e:#}")))
    }

    /// Applies `new` over `current` and keeps it as the running configuration.
    async fn apply(&self, current: &mut Loaded, new: Loaded) -> anyhow::Result<Applied> {
        let station = new.station.clone();
        self.store
            .call(move |s| s.set_station(station))
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        self.housekeeper.set(new.housekeeping);
        self.schedules.apply(&new.partners);
        let mut applied = Vec::new();
        if current.partners != new.partners {
            applied.push("partners");
        }
        if current.station.rules != new.station.rules {
            applied.push("rules");
        }
        if current.housekeeping != new.housekeeping {
            applied.push("housekeeping");
        }
        let restart = restart_needed(current, &new);
        tracing::info!(
            config = %new.source,
            applied = %applied.join(","),
            "configuration reloaded: partners, rules and housekeeping applied"
        );
        for key in &restart {
            tracing::warn!("{key} changed in {}: restart qtc to apply it", new.source);
        }
        *current = new;
        Ok(Applied { applied, restart })
    }
}

/// The file at `path` changed by `edit`, checked as `qtc check` does and written in one step;
/// the configuration it holds.
fn written(
    path: &std::path::Path,
    edit: impl FnOnce(&str) -> Result<String, String>,
) -> Result<Loaded, SaveError> {
    let io = |e: std::io::Error| SaveError::Io(format!("{}: {e}", path.display()));
    let text = std::fs::read_to_string(path).map_err(io)?;
    let new_text = edit(&text).map_err(SaveError::Invalid)?;
    let source = path.display().to_string();
    let base = path.parent().filter(|d| !d.as_os_str().is_empty());
    let new = config::parse(
        &new_text,
        &source,
        base.unwrap_or(std::path::Path::new(".")),
    )
    .map_err(|e| SaveError::Invalid(e.to_string()))?;
    crate::config_file::replace(path, &new_text).map_err(io)?;
    Ok(new)
}

/// The parts of the configuration a reload does not apply (compared as checked, so "30m" and
/// "1800s" are no change).
pub fn restart_needed(a: &Loaded, b: &Loaded) -> Vec<&'static str> {
    let mut v = Vec::new();
    if !a.station.same_identity(&b.station) {
        v.push("[station]");
    }
    for (changed, what) in [
        (a.store != b.store, "[store]"),
        (a.telnet != b.telnet, "[telnet]"),
        (a.limits != b.limits, "[limits]"),
        (a.log != b.log, "[log]"),
        (a.forward != b.forward, "[forward]"),
        (a.web != b.web, "[web]"),
        (a.mail != b.mail, "[mail]"),
        (a.tls != b.tls, "[tls]"),
        (
            a.ax25 != b.ax25 || a.radio_ports != b.radio_ports,
            "[ax25]/[[port]]",
        ),
        (a.netrom != b.netrom, "[netrom]"),
        (a.ip != b.ip, "[ip]"),
    ] {
        if changed {
            v.push(what);
        }
    }
    v
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
        // The same values written otherwise, and partners changed (applied by the reload).
        let b = load(
            "[limits]\nidle_timeout = \"1800s\"\n\
             [[partner]]\ncallsign = \"n0bbb\"\nroutes = [\"N0BBB\", \"WW\"]\ninterval = \"5m\"\n",
        );
        assert!(restart_needed(&a, &b).is_empty());
        let c = load(
            "[telnet]\nmax_sessions = 7\n\
             [[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:bbs.example:6300\"\n",
        );
        assert_eq!(restart_needed(&a, &c), ["[telnet]"]);
        let port = "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:10093\"\n\
                    peers = [{ callsign = \"N0JNS\", address = \"127.0.0.1:10094\" }]\nip = true\n";
        let ip = |addr: &str| load(&format!("{port}[ip]\naddress = \"{addr}\"\n"));
        assert_eq!(
            restart_needed(&ip("44.128.0.1/24"), &ip("44.128.0.5/24")),
            ["[ip]"]
        );
        let line = Applied {
            applied: vec!["partners"],
            restart: vec!["[telnet]"],
        }
        .line();
        assert_eq!(
            line,
            "applied now: partners; restart qtc to apply: [telnet]"
        );
    }
}
