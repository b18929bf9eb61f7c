//! Calling a partner: connect, run the login script, then the forwarding session as caller.
//! A partner with a session running is not called (that session carries the mail both
//! ways), and on an AX.25 link both ends asked for at once the lower callsign is the caller.

use std::sync::Arc;

use qtc_callsign::Callsign;
use qtc_fbb::login::{LoginEvent, Script};
use qtc_fbb::Role;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::greeting::{self, FAILURE_TEXTS};
use super::{Forwarder, Side, Summary};
use crate::clock;
use crate::config::forward::Connect;
use crate::connection::Connection;
use crate::link::Codec;
use crate::phy::ByteStream;
use crate::radio::Radios;

use super::greeting::ANSWER_TIME;

/// Calls `partner` now and forwards until the session ends. A call that fails before the
/// session starts is kept as the partner's last result here; a session keeps its own.
pub async fn call(
    fwd: Arc<Forwarder>,
    radios: &Radios,
    partner: Callsign,
    shutdown: watch::Receiver<bool>,
) -> Summary {
    if fwd.in_session(partner) {
        tracing::info!(%partner, "not calling: a session with it is running and carries the mail");
        return busy();
    }
    match connect_and_run(fwd.clone(), radios, partner, shutdown).await {
        Ok(summary) => summary,
        Err(Failed::Busy) => {
            tracing::info!(%partner, "not calling: its link to us is up, its session carries the mail");
            busy()
        }
        Err(Failed::Why(e)) => {
            tracing::warn!(%partner, error = %e, "call failed");
            let summary = Summary {
                error: Some(e),
                ..Default::default()
            };
            fwd.record(partner, Role::Caller, &summary);
            summary
        }
    }
}

/// What a call that found another session with the partner answers.
fn busy() -> Summary {
    Summary {
        busy: true,
        ..Default::default()
    }
}

/// Why a call's session never started.
enum Failed {
    /// The partner's link to us is up: its session carries the mail.
    Busy,
    /// Anything else.
    Why(String),
}

impl From<String> for Failed {
    fn from(why: String) -> Failed {
        Failed::Why(why)
    }
}

/// Connects, logs in, waits for the partner's SID and runs the session; `Err` says why the
/// session never started.
async fn connect_and_run(
    fwd: Arc<Forwarder>,
    radios: &Radios,
    partner: Callsign,
    mut shutdown: watch::Receiver<bool>,
) -> Result<Summary, Failed> {
    let Some(p) = fwd.partner(partner) else {
        return Err(format!("{partner} is not a configured [[partner]]").into());
    };
    let addr = p.connect.to_string();
    let Opened {
        mut stream,
        crossed,
        crossed_late,
    } = open_stream(&fwd, radios, &p).await?;
    let mut codec = codec_for(&p);
    // Both ends asked for the AX.25 link and both hold it as their call: the lower callsign's
    // is the call, so the other end answers as the called BBS (its SID first).
    let theirs_kept = p.script.is_empty() && !fwd.ours_kept(p.call);
    if crossed && theirs_kept {
        tracing::info!(partner = %p.call, "calls crossed on the AX.25 link: the partner's is kept, we answer it");
        let mut conn = Connection::outgoing(stream, shutdown);
        let summary = super::run(&fwd, &mut conn, &mut codec, Side::called(), p.call, &[]).await;
        conn.close().await;
        return Ok(summary);
    }
    let crossed_late = crossed_late.filter(|_| theirs_kept);
    // Over AX.25 with no script the link's callsign is the login: nothing to answer.
    let mut early_answers = 0;
    let input = if p.script.is_empty() {
        Vec::new()
    } else {
        let script = Script::new(p.script.clone())
            .with_line_end(codec.line_end())
            .with_timeout(ANSWER_TIME)
            .with_failure_texts(FAILURE_TEXTS.iter().map(|t| t.to_string()).collect());
        early_answers = script.blind_sends();
        login(&mut stream, &mut codec, script, &mut shutdown)
            .await
            .map_err(|f| f.describe(p.call, &addr))?
    };
    let side = Side {
        role: Role::Caller,
        tcp_caller: matches!(p.connect, Connect::Tcp(_) | Connect::Tls { .. }),
        early_answers,
    };
    let mut conn = Connection::outgoing(stream, shutdown);
    let summary = match crossed_late {
        None => super::run(&fwd, &mut conn, &mut codec, side, p.call, &input).await,
        Some(late) => {
            caller_unless_crossed_late(&fwd, &mut conn, &mut codec, side, p.call, late).await
        }
    };
    // Closing our end lets an AX.25 link send what is left, then DISC.
    conn.close().await;
    Ok(summary)
}

/// Runs our call's session as the caller, unless the partner's call crosses ours late on the
/// AX.25 link (it asked for the link after it was up, before any data moved: its first SABM
/// went unanswered while it came back) and the partner's is the call kept: then our session,
/// still waiting for the partner's SID, yields and we answer the partner's call on the same
/// link (our SID first), as when the SABMs cross at once.
async fn caller_unless_crossed_late(
    fwd: &Arc<Forwarder>,
    conn: &mut Connection,
    codec: &mut Codec,
    side: Side,
    partner: Callsign,
    late: tokio::sync::oneshot::Receiver<()>,
) -> Summary {
    let crossed = std::sync::atomic::AtomicBool::new(false);
    let watch = async {
        if late.await.is_ok() {
            crossed.store(true, std::sync::atomic::Ordering::Relaxed);
            fwd.yield_caller(partner);
        }
        std::future::pending::<()>().await
    };
    let summary = tokio::select! {
        summary = super::run(fwd, conn, codec, side, partner, &[]) => summary,
        () = watch => unreachable!("the watch never ends"),
    };
    let crossed = crossed.load(std::sync::atomic::Ordering::Relaxed);
    if !(crossed && summary.busy && summary.error.is_none()) {
        return summary;
    }
    tracing::info!(%partner, "calls crossed on the AX.25 link, the partner's late: the partner's is kept, we answer it");
    super::run(fwd, conn, codec, Side::called(), partner, &[]).await
}

/// The connection a call goes over.
struct Opened {
    stream: Box<dyn ByteStream>,
    /// The partner asked for the same AX.25 link at once.
    crossed: bool,
    /// Fires if the partner asks for the AX.25 link after it came up ([`Outgoing`]).
    ///
    /// [`Outgoing`]: crate::radio::Outgoing
    crossed_late: Option<tokio::sync::oneshot::Receiver<()>>,
}

/// Opens the connection a call to `p` goes over: TCP, TLS, an AX.25 link or a NET/ROM
/// circuit; `Err` says why there is none.
async fn open_stream(
    fwd: &Forwarder,
    radios: &Radios,
    p: &crate::config::forward::Partner,
) -> Result<Opened, Failed> {
    let addr = p.connect.to_string();
    let silent = || format!("no answer from {addr} in {} s", ANSWER_TIME.as_secs());
    let stream: Box<dyn ByteStream> = match &p.connect {
        Connect::Tcp(a) => {
            tracing::info!(partner = %p.call, addr = %a, "calling");
            match tokio::time::timeout(ANSWER_TIME, TcpStream::connect(a)).await {
                Ok(Ok(s)) => {
                    let _ = s.set_nodelay(true);
                    let s = crate::metrics::Counted::new(s, fwd.metrics.port_bytes("tcp-out"));
                    Box::new(s)
                }
                Ok(Err(e)) => return Err(format!("cannot connect to {addr}: {e}").into()),
                Err(_) => return Err(silent().into()),
            }
        }
        Connect::Tls { addr: a, name, ca } => {
            tracing::info!(partner = %p.call, addr = %a, "calling over TLS");
            let bytes = fwd.metrics.port_bytes("tcp-out");
            match tokio::time::timeout(ANSWER_TIME, tls_connect(a, name, ca, bytes)).await {
                Ok(Ok(s)) => Box::new(s),
                Ok(Err(e)) => {
                    return Err(format!("cannot connect to {addr} over TLS: {e:#}").into())
                }
                Err(_) => return Err(silent().into()),
            }
        }
        Connect::Ax25 { port, call, via } => {
            tracing::info!(partner = %p.call, via = %addr, "calling over AX.25");
            let local = crate::radio::Local::Station(fwd.call);
            return match radios.connect(port, local, *call, via.clone()).await {
                Ok(link) => Ok(Opened {
                    stream: Box::new(link.stream),
                    crossed: link.crossed,
                    crossed_late: Some(link.crossed_late),
                }),
                Err(crate::radio::ConnectError::LinkUp) => Err(Failed::Busy),
                Err(e) => Err(format!("cannot connect to {addr}: {e}").into()),
            };
        }
        Connect::Netrom { node } => {
            tracing::info!(partner = %p.call, via = %addr, "calling over NET/ROM");
            let Some(nr) = radios.netrom() else {
                return Err("NET/ROM is off: no [[port]] has a netrom_quality"
                    .to_string()
                    .into());
            };
            match nr.connect(fwd.call, node).await {
                Ok((c, _)) => Box::new(c.stream),
                Err(e) => return Err(format!("cannot connect to {addr}: {e}").into()),
            }
        }
        Connect::None => {
            return Err(format!("{} has no connect = address: it only calls us", p.call).into())
        }
    };
    Ok(Opened {
        stream,
        crossed: false,
        crossed_late: None,
    })
}

/// The byte layer of a call to `p`: telnet, IAC-escaped (xfbbd over TCP) or raw.
fn codec_for(p: &crate::config::forward::Partner) -> Codec {
    if p.telnet {
        Codec::telnet(qtc_telnet::Role::Client)
    } else if p.iac_escaped && matches!(p.connect, Connect::Tcp(_) | Connect::Tls { .. }) {
        Codec::iac()
    } else {
        Codec::raw()
    }
}

/// A TLS connection to a partner whose certificate is in `ca` and carries `name`.
async fn tls_connect(
    addr: &str,
    name: &str,
    ca: &std::path::Path,
    bytes: std::sync::Arc<crate::metrics::PortBytes>,
) -> anyhow::Result<tokio_rustls::client::TlsStream<crate::metrics::Counted<TcpStream>>> {
    let connector = crate::tls::connector(ca)?;
    let server = crate::tls::server_name(name)?;
    let tcp = TcpStream::connect(addr).await?;
    let _ = tcp.set_nodelay(true);
    let tcp = crate::metrics::Counted::new(tcp, bytes);
    Ok(connector.connect(server, tcp).await?)
}

/// Why a call ended during the login script.
#[derive(Debug, PartialEq, Eq)]
enum LoginFailure {
    /// Nothing at all came within [`ANSWER_TIME`].
    Silent,
    /// Text came, but not the prompt the script waits for.
    NoPrompt(String),
    /// The partner hung up during the login script.
    Closed,
    /// A failure text came.
    Refused,
    /// The connection failed.
    Io(String),
    /// The daemon is stopping.
    ShuttingDown,
}

impl LoginFailure {
    fn describe(&self, partner: Callsign, addr: &str) -> String {
        let secs = ANSWER_TIME.as_secs();
        match self {
            LoginFailure::Silent => format!("no answer from {addr} in {secs} s"),
            LoginFailure::NoPrompt(heard) => {
                format!("no login prompt from {partner} at {addr} in {secs} s (it said {heard:?})")
            }
            LoginFailure::Closed => format!("{partner} closed the connection during our login"),
            LoginFailure::Refused => greeting::refused(partner),
            LoginFailure::Io(e) => format!("{addr}: {e}"),
            LoginFailure::ShuttingDown => "shutting down".into(),
        }
    }
}

/// The end of what a partner said during the login, kept for the error message.
const MAX_HEARD: usize = 80;

/// Runs the login script; returns the input that followed its last match.
async fn login<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    codec: &mut Codec,
    mut script: Script,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Vec<u8>, LoginFailure> {
    let mut buf = vec![0u8; 4096];
    let mut tx = Vec::new();
    let mut net = Vec::new();
    let mut app = Vec::new();
    let mut timer = clock::Timer::new();
    let mut heard: Vec<u8> = Vec::new();
    script.start(clock::now());
    loop {
        while script.poll_transmit(&mut tx) > 0 {}
        if !tx.is_empty() {
            codec.encode_raw(&tx, &mut net);
            tx.clear();
        }
        if !net.is_empty() {
            io.write_all(&net)
                .await
                .map_err(|e| LoginFailure::Io(e.to_string()))?;
            net.clear();
        }
        match script.poll_event() {
            Some(LoginEvent::Done { leftover }) => return Ok(leftover),
            // Only its failure texts fail the script: its timeout and the connection's end are
            // handled below, where what they mean is known.
            Some(LoginEvent::Failed(_)) => return Err(LoginFailure::Refused),
            None => {}
        }
        timer.set(script.poll_timeout());
        tokio::select! {
            r = io.read(&mut buf) => match r {
                Ok(0) | Err(_) => return Err(LoginFailure::Closed),
                Ok(n) => {
                    app.clear();
                    codec.decode(&buf[..n], &mut app, &mut net);
                    heard.extend_from_slice(&app);
                    if heard.len() > MAX_HEARD {
                        heard.drain(..heard.len() - MAX_HEARD);
                    }
                    script.handle_input(clock::now(), &app);
                }
            },
            _ = timer.fired() => {
                return Err(if heard.is_empty() {
                    LoginFailure::Silent
                } else {
                    LoginFailure::NoPrompt(String::from_utf8_lossy(heard.trim_ascii()).into_owned())
                });
            }
            _ = shutdown.changed() => return Err(LoginFailure::ShuttingDown),
        }
    }
}
