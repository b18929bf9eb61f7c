//! The control socket (`qtc.ctl` in the data directory, mode 0600): how `qtc ctl ...` talks to a
//! running daemon. One request line per connection, a text answer, then close. Answers that
//! start with `error:` make the client exit non-zero.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio_util::task::TaskTracker;

use crate::health::Sources;

/// The socket's file name inside the data directory.
pub const SOCKET: &str = "qtc.ctl";
/// Longest request accepted.
const MAX_REQUEST: usize = 256;

/// The socket path for a data directory.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(SOCKET)
}

/// Whether a daemon runs on `data_dir`: its control socket takes a connection (one left by a
/// crash does not). The data directory's lock (crate::dir_lock) keeps a second daemon of this
/// version out before it gets here; this still stops one beside a daemon from before the lock.
fn daemon_answers(data_dir: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(path(data_dir)).is_ok()
}

/// Binds the control socket, replacing a stale one left by a crash.
pub fn bind(data_dir: &Path) -> anyhow::Result<UnixListener> {
    let p = path(data_dir);
    if p.exists() {
        if daemon_answers(data_dir) {
            bail!(
                "another qtc is running on this data directory ({} answers)",
                p.display()
            );
        }
        std::fs::remove_file(&p).with_context(|| format!("cannot remove stale {}", p.display()))?;
    }
    let l = UnixListener::bind(&p).with_context(|| format!("cannot create {}", p.display()))?;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))?;
    Ok(l)
}

/// Answers control requests from `sources` and `housekeeper` until shutdown.
pub async fn serve(
    listener: UnixListener,
    sources: Sources,
    mut shutdown: watch::Receiver<bool>,
    tasks: TaskTracker,
    housekeeper: Arc<crate::housekeeping::Housekeeper>,
) {
    loop {
        let conn = tokio::select! {
            c = listener.accept() => c,
            _ = shutdown.changed() => return,
        };
        match conn {
            Ok((stream, _)) => {
                tasks.spawn(request(stream, sources.clone(), housekeeper.clone()));
            }
            Err(e) => {
                tracing::warn!(error = %e, "control socket accept failed");
                return;
            }
        }
    }
}

async fn request(
    mut stream: UnixStream,
    sources: Sources,
    housekeeper: Arc<crate::housekeeping::Housekeeper>,
) {
    let mut buf = Vec::with_capacity(MAX_REQUEST);
    let mut chunk = [0u8; MAX_REQUEST];
    while !buf.contains(&b'\n') && buf.len() < MAX_REQUEST {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let line = String::from_utf8_lossy(&buf);
    let words: Vec<&str> = line.split_whitespace().collect();
    let answer = match words.as_slice() {
        ["forward", partner] => {
            format!("{}\n", sources.forward.forward_named(partner).await)
        }
        ["status"] => status(&sources, false).await,
        ["status", "json"] => status(&sources, true).await,
        ["heard"] => sources.radios.heard_report(),
        ["nodes"] => nodes(&sources, false).await,
        ["nodes", "json"] => nodes(&sources, true).await,
        ["ip"] => ip(&sources, false),
        ["ip", "json"] => ip(&sources, true),
        ["housekeep"] => match housekeeper.run_now("qtc ctl").await {
            Ok(line) => format!("ok: {line}\n"),
            Err(e) => format!("error: {e}\n"),
        },
        _ => {
            "error: unknown request; try `forward CALL`, `status [json]`, `heard`, `nodes [json]`, \
             `ip [json]` or `housekeep`\n"
                .to_string()
        }
    };
    let _ = stream.write_all(answer.as_bytes()).await;
}

/// `qtc ctl nodes`: the NET/ROM node's tables and circuits, as they are now.
async fn nodes(sources: &Sources, json: bool) -> String {
    let Some(n) = sources.radios.netrom() else {
        return "error: NET/ROM is off (no [[port]] has a netrom_quality)\n".into();
    };
    let v = n.view().await;
    if json {
        serde_json::to_string(&v).map_or_else(|e| format!("error: {e}\n"), |j| j + "\n")
    } else {
        v.text()
    }
}

/// `qtc ctl ip`: the IP router's ARP table, routes and counters.
fn ip(sources: &Sources, json: bool) -> String {
    let Some(i) = sources.radios.ip() else {
        return "error: IP is off (no [ip] address)\n".into();
    };
    let v = i.view();
    if json {
        serde_json::to_string(&v).map_or_else(|e| format!("error: {e}\n"), |j| j + "\n")
    } else {
        v.text()
    }
}

async fn status(sources: &Sources, json: bool) -> String {
    match crate::health::gather(sources).await {
        Ok(h) if json => {
            serde_json::to_string(&h).map_or_else(|e| format!("error: {e}\n"), |j| j + "\n")
        }
        Ok(h) => h.text(),
        Err(e) => format!("error: {e}\n"),
    }
}

/// Sends one request to the daemon running on `data_dir` and returns its answer.
pub fn client(data_dir: &Path, request: &str) -> anyhow::Result<String> {
    let p = path(data_dir);
    let mut s = std::os::unix::net::UnixStream::connect(&p).with_context(|| {
        format!(
            "no qtc daemon answers on {} (is `qtc run` running with this config?)",
            p.display()
        )
    })?;
    s.write_all(format!("{request}\n").as_bytes())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    Ok(answer)
}
