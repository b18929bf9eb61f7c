//! `C`: a BBS user connected out through a radio port, or over NET/ROM to a node by its alias
//! or callsign (as the user's own callsign). The user's stream and the AX.25 link (from
//! [`crate::radio::Radios::connect`], the engine `qtc call` uses) or the circuit are joined
//! until either side goes; then the user is back at the BBS prompt.

use qtc_ax25::Callsign;
use qtc_bbs::Ask;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::watch;

use crate::link::Codec;
use crate::radio::Radios;

/// How a downlink ended.
enum End {
    /// The far end (or the link) went: back to the BBS.
    Far,
    /// The user's connection ended, or the daemon stops: the session ends too.
    User,
}

/// Runs a user's `C`: `None` when the user's connection ended meanwhile, else how the link
/// went (`Err`: it never came up, and why).
pub async fn run<S: AsyncRead + AsyncWrite + Unpin>(
    radios: &Radios,
    ask: &Ask,
    local: &str,
    user: &str,
    stream: &mut S,
    codec: &mut Codec,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<Result<(), String>> {
    let Ask::Connect { port, call, via } = ask else {
        return Some(Err("not a connect request".into()));
    };
    let netrom = radios
        .netrom()
        .filter(|n| port.is_none() && via.is_empty() && n.find(call).is_some());
    let opened = match netrom {
        Some(n) => circuit(n, user, call).await,
        None => open(radios, port.as_deref(), local, call, via)
            .await
            .map(|l| (l, call.clone())),
    };
    let (link, name) = match opened {
        Ok(x) => x,
        Err(e) => return Some(Err(e)),
    };
    tracing::info!(%call, ?via, netrom = netrom.is_some(), "user connected out");
    let mut hello = Vec::new();
    codec.encode_text(format!("*** Connected to {name}\r").as_bytes(), &mut hello);
    if stream.write_all(&hello).await.is_err() {
        return None;
    }
    match join(stream, codec, link, shutdown).await {
        End::Far => Some(Ok(())),
        End::User => None,
    }
}

/// Opens the link: on `port` (the first if `None`), from `local` to `call` via `via`.
async fn open(
    radios: &Radios,
    port: Option<&str>,
    local: &str,
    call: &str,
    via: &[String],
) -> Result<DuplexStream, String> {
    let port = match port {
        Some(p) => p.to_string(),
        None => radios
            .names()
            .next()
            .ok_or_else(|| "this BBS has no radio port".to_string())?,
    };
    let parse = |c: &str| {
        c.parse::<Callsign>()
            .map_err(|e| format!("{c} is not a callsign ({e})"))
    };
    let via = via
        .iter()
        .map(|d| parse(d))
        .collect::<Result<Vec<_>, _>>()?;
    radios
        .connect(&port, parse(local)?, parse(call)?, via)
        .await
}

/// Opens a NET/ROM circuit for `user` to the node `name`; the stream and `ALIAS:CALL`.
async fn circuit(
    netrom: &crate::radio::netrom::NetromHandle,
    user: &str,
    name: &str,
) -> Result<(DuplexStream, String), String> {
    let user = user
        .parse::<Callsign>()
        .map_err(|e| format!("{user} is not a callsign ({e})"))?;
    let (stream, node) = netrom.connect(user, name).await?;
    Ok((stream, node.name()))
}

/// Moves text between the user and the link until one of them goes. Lines typed go out with
/// CR ends (AX.25 text); what comes back is encoded for the user's connection.
async fn join<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    codec: &mut Codec,
    mut link: DuplexStream,
    shutdown: &mut watch::Receiver<bool>,
) -> End {
    let mut from_user = vec![0u8; 4096];
    let mut from_link = vec![0u8; 4096];
    let (mut app, mut net) = (Vec::new(), Vec::new());
    loop {
        tokio::select! {
            r = stream.read(&mut from_user) => {
                let n = match r {
                    Ok(0) | Err(_) => return End::User,
                    Ok(n) => n,
                };
                app.clear();
                net.clear();
                codec.decode(&from_user[..n], &mut app, &mut net);
                if !net.is_empty() && stream.write_all(&net).await.is_err() {
                    return End::User;
                }
                if link.write_all(&to_radio(&app)).await.is_err() {
                    return End::Far;
                }
            }
            r = link.read(&mut from_link) => {
                let n = match r {
                    Ok(0) | Err(_) => return End::Far,
                    Ok(n) => n,
                };
                net.clear();
                codec.encode_text(&from_link[..n], &mut net);
                if stream.write_all(&net).await.is_err() {
                    return End::User;
                }
            }
            _ = shutdown.changed() => return End::User,
        }
    }
}

/// A user's line ends (CR LF, CR NUL already CR, LF) as AX.25 text wants them: CR.
fn to_radio(typed: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(typed.len());
    let mut after_cr = false;
    for &b in typed {
        match b {
            b'\n' if after_cr => {}
            b'\n' => out.push(b'\r'),
            _ => out.push(b),
        }
        after_cr = b == b'\r';
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn line_ends_become_cr() {
        assert_eq!(super::to_radio(b"a\r\nb\nc\rd"), b"a\rb\rc\rd");
    }
}
