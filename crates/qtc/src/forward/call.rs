//! Calling a partner: connect, run the login script, then the forwarding session as caller.
//! Also the schedule that calls each partner at its interval.

use std::sync::Arc;

use qtc_fbb::login::{LoginEvent, Script};
use qtc_fbb::Role;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::{Forwarder, Summary};
use crate::clock;
use crate::config::Connect;
use crate::link::Codec;
use crate::radio::Radios;

/// Calls `partner` now and forwards until the session ends.
pub async fn call(
    fwd: Arc<Forwarder>,
    radios: &Radios,
    partner: &str,
    mut shutdown: watch::Receiver<bool>,
) -> Summary {
    let failed = |e: String| {
        tracing::warn!(%partner, error = %e, "call failed");
        Summary {
            error: Some(e),
            ..Default::default()
        }
    };
    let Some(p) = fwd.partner(partner).cloned() else {
        return failed(format!("{partner} is not a configured [[partner]]"));
    };
    let (mut stream, addr): (Box<dyn Stream>, String) = match &p.connect {
        Connect::Tcp(a) => {
            tracing::info!(partner = %p.call, addr = %a, "calling");
            match TcpStream::connect(a).await {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    let s = crate::metrics::Counted::new(s, crate::metrics::port_bytes("tcp-out"));
                    (Box::new(s), a.clone())
                }
                Err(e) => return failed(format!("cannot connect to {a}: {e}")),
            }
        }
        Connect::Tls { addr, name, ca } => {
            tracing::info!(partner = %p.call, %addr, "calling over TLS");
            match tls_connect(addr, name, ca).await {
                Ok(s) => (Box::new(s), addr.clone()),
                Err(e) => return failed(format!("cannot connect to {addr} over TLS: {e:#}")),
            }
        }
        Connect::Ax25 { port, call, via } => {
            let what = format!("{call} on radio port {port}");
            tracing::info!(partner = %p.call, via = %what, "calling over AX.25");
            let Ok(local) = fwd.call.parse::<qtc_ax25::Callsign>() else {
                return failed(format!(
                    "our callsign {} is not an AX.25 callsign",
                    fwd.call
                ));
            };
            match radios.connect(port, local, *call, via.clone()).await {
                Ok(s) => (Box::new(s), what),
                Err(e) => return failed(format!("cannot connect to {what}: {e}")),
            }
        }
        Connect::None => {
            return failed(format!(
                "{partner} has no connect = address: it only calls us"
            ))
        }
    };
    let mut codec = if p.telnet {
        Codec::telnet(qtc_telnet::Role::Client)
    } else if p.iac_escaped && matches!(p.connect, Connect::Tcp(_) | Connect::Tls { .. }) {
        Codec::iac()
    } else {
        Codec::raw()
    };
    // Over AX.25 with no script the link's callsign is the login: nothing to answer.
    let leftover = if p.script.is_empty() {
        Vec::new()
    } else {
        let script = Script::new(p.script.clone()).with_line_end(codec.line_end());
        match login(&mut stream, &mut codec, script, &mut shutdown).await {
            Ok(l) => l,
            Err(e) => return failed(format!("login to {addr}: {e}")),
        }
    };
    let summary = super::run(
        &fwd,
        &mut stream,
        &mut codec,
        Role::Caller,
        &p.call,
        &leftover,
        &mut shutdown,
    )
    .await;
    // Closing our end lets an AX.25 link send what is left, then DISC.
    let _ = stream.shutdown().await;
    summary
}

/// A connection to a partner: TCP or an AX.25 link's stream.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// A TLS connection to a partner whose certificate is in `ca` and carries `name`.
async fn tls_connect(
    addr: &str,
    name: &str,
    ca: &std::path::Path,
) -> anyhow::Result<tokio_rustls::client::TlsStream<crate::metrics::Counted<TcpStream>>> {
    let connector = crate::tls::connector(ca)?;
    let server = crate::tls::server_name(name)?;
    let tcp = TcpStream::connect(addr).await?;
    let _ = tcp.set_nodelay(true);
    let tcp = crate::metrics::Counted::new(tcp, crate::metrics::port_bytes("tcp-out"));
    Ok(connector.connect(server, tcp).await?)
}

/// Runs the login script; returns the input that followed its last match.
async fn login<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    codec: &mut Codec,
    mut script: Script,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Vec<u8>, String> {
    let mut buf = vec![0u8; 4096];
    let mut tx = Vec::new();
    let mut net = Vec::new();
    let mut app = Vec::new();
    let mut timer = clock::Timer::new();
    script.start(clock::now());
    loop {
        while script.poll_transmit(&mut tx) > 0 {}
        if !tx.is_empty() {
            codec.encode_raw(&tx, &mut net);
            tx.clear();
        }
        if !net.is_empty() {
            io.write_all(&net).await.map_err(|e| e.to_string())?;
            net.clear();
        }
        match script.poll_event() {
            Some(LoginEvent::Done { leftover }) => return Ok(leftover),
            Some(LoginEvent::Failed(e)) => return Err(e.to_string()),
            None => {}
        }
        timer.set(script.poll_timeout());
        tokio::select! {
            r = io.read(&mut buf) => match r {
                Ok(0) | Err(_) => script.handle_eof(clock::now()),
                Ok(n) => {
                    app.clear();
                    codec.decode(&buf[..n], &mut app, &mut net);
                    script.handle_input(clock::now(), &app);
                }
            },
            _ = timer.fired() => script.handle_timeout(clock::now()),
            _ = shutdown.changed() => return Err("shutting down".into()),
        }
    }
}

/// Calls `partner` every `interval` until shutdown. The timer is the forwarding schedule the
/// sysop asked for; nothing else wakes this task.
pub async fn schedule(
    fwd: Arc<Forwarder>,
    radios: Radios,
    partner: String,
    interval: std::time::Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => return,
        }
        let summary = call(fwd.clone(), &radios, &partner, shutdown.clone()).await;
        tracing::info!(%partner, %summary, "scheduled call done");
    }
}
