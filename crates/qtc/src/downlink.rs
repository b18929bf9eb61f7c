//! `C`: a BBS user connected out through a radio port, or over NET/ROM to a node by its alias
//! or callsign, always under the user's own callsign (on a radio port an SSID picked by the
//! port when the plain call is taken, [`Local::User`]): the far station sees who is calling,
//! never this BBS, so a user cannot use the station's identity (its mail, its forwarding
//! logins) at a neighbour. The user's stream and the AX.25 link (from
//! [`crate::radio::Radios::connect`], the engine `qtc call` uses) or the circuit are joined
//! until either side goes; then the user is back at the BBS prompt.

use qtc_bbs::{Answer, Ask};
use qtc_callsign::Callsign;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::watch;

use crate::link::Codec;
use crate::radio::{Local, Radios};

/// How a downlink ended.
pub enum End {
    /// The far end (or the link) went: back to the BBS.
    Far,
    /// The user's connection ended, or the daemon stops: the session ends too.
    User,
}

/// Where a `C` goes, once checked.
struct Target {
    port: String,
    call: Callsign,
    via: Vec<Callsign>,
    local: Local,
}

/// Runs a user's `C`: `None` when the user's connection ended meanwhile, else the answer for
/// the interpreter (refused before calling, failed, or over).
pub async fn run<S: AsyncRead + AsyncWrite + Unpin>(
    radios: &Radios,
    ask: &Ask,
    user: Callsign,
    stream: &mut S,
    codec: &mut Codec,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<Answer> {
    if let Some((netrom, node)) = netrom_target(radios, ask).await {
        return run_circuit(netrom, user, node, stream, codec, shutdown).await;
    }
    let t = match target(radios, ask, user) {
        Ok(t) => t,
        Err(why) => return Some(Answer::Refused(why)),
    };
    let line = format!(
        "Connecting to {} on {}... (Enter gives up)\r",
        t.call, t.port
    );
    say(stream, codec, &line).await?;
    let call = t.call;
    let link = tokio::select! {
        r = radios.connect(&t.port, t.local, t.call, t.via) => r,
        gave_up = until_a_line(stream, codec) => {
            // Dropping the connect abandons the call: the port aborts the link.
            return gave_up.then(|| Answer::Refused(format!("Call to {call} given up.")));
        }
        _ = shutdown.changed() => return None,
    };
    let link = match link {
        Ok(link) => link.stream,
        Err(e) => return Some(Answer::Disconnected(Err(e.to_string()))),
    };
    tracing::info!(%call, "user connected out");
    say(stream, codec, &format!("*** Connected to {call}\r")).await?;
    match join(stream, codec, link, shutdown).await {
        End::Far => Some(Answer::Disconnected(Ok(()))),
        End::User => None,
    }
}

/// Checks a `C` against the ports: a port named alone (`C vhf`) or a port that does not exist
/// is refused before anything is sent; no port means the first one configured.
fn target(radios: &Radios, ask: &Ask, user: Callsign) -> Result<Target, String> {
    let Ask::Connect { port, call, via } = ask else {
        return Err("not a connect request".into());
    };
    let port = match port {
        Some(p) => radios
            .find(p)
            .ok_or_else(|| format!("There is no radio port {p}: PORTS lists them."))?,
        None if radios.find(call).is_some() => {
            return Err(format!(
                "{call} is a radio port: C {call} CALL calls out on it."
            ))
        }
        None => radios
            .names()
            .next()
            .ok_or_else(|| "This BBS has no radio port.".to_string())?,
    };
    let parse = |c: &str| {
        c.parse::<Callsign>()
            .map_err(|e| format!("{c} is not a callsign ({e})."))
    };
    Ok(Target {
        port,
        call: parse(call)?,
        via: via.iter().map(|d| parse(d)).collect::<Result<_, _>>()?,
        local: Local::User(user),
    })
}

/// Writes a line for the user; `None` when the connection is gone.
async fn say<S: AsyncWrite + Unpin>(stream: &mut S, codec: &mut Codec, text: &str) -> Option<()> {
    let mut out = Vec::new();
    codec.encode_text(text.as_bytes(), &mut out);
    stream.write_all(&out).await.ok()
}

/// Reads the user's input until a line ends (true) or the connection does (false), answering
/// the codec's negotiation meanwhile.
async fn until_a_line<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    codec: &mut Codec,
) -> bool {
    let mut buf = [0u8; 512];
    let (mut app, mut net) = (Vec::new(), Vec::new());
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        app.clear();
        net.clear();
        codec.decode(&buf[..n], &mut app, &mut net);
        if !net.is_empty() && stream.write_all(&net).await.is_err() {
            return false;
        }
        if app.iter().any(|&b| b == b'\r' || b == b'\n') {
            return true;
        }
    }
}

/// A `C` with no port and no digipeaters to a node the NET/ROM node knows goes over a circuit.
async fn netrom_target<'a>(
    radios: &'a Radios,
    ask: &'a Ask,
) -> Option<(&'a crate::radio::netrom::NetromHandle, &'a str)> {
    let Ask::Connect { port, call, via } = ask else {
        return None;
    };
    let netrom = radios.netrom()?;
    if port.is_some() || !via.is_empty() {
        return None;
    }
    netrom.find(call).await.map(|_| (netrom, call.as_str()))
}

/// Runs a `C` over a NET/ROM circuit to the node `name`, as the user's own callsign.
async fn run_circuit<S: AsyncRead + AsyncWrite + Unpin>(
    netrom: &crate::radio::netrom::NetromHandle,
    call: Callsign,
    name: &str,
    stream: &mut S,
    codec: &mut Codec,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<Answer> {
    let line = format!("Connecting to {name} over NET/ROM... (Enter gives up)\r");
    say(stream, codec, &line).await?;
    let opened = tokio::select! {
        r = netrom.connect(call, name) => r,
        gave_up = until_a_line(stream, codec) => {
            return gave_up.then(|| Answer::Refused(format!("Call to {name} given up.")));
        }
        _ = shutdown.changed() => return None,
    };
    let (circuit, node) = match opened {
        Ok(x) => x,
        Err(e) => return Some(Answer::Disconnected(Err(e))),
    };
    tracing::info!(node = %node.name(), "user connected out over NET/ROM");
    say(
        stream,
        codec,
        &format!("*** Connected to {}\r", node.name()),
    )
    .await?;
    let mut failure = circuit.failure;
    match join(stream, codec, circuit.stream, shutdown).await {
        // A far end that stopped answering (gone, or restarted and forgot the circuit) is
        // given up after the circuit's retries: the user hears why, back at the prompt.
        End::Far => Some(Answer::Disconnected(failure.try_recv().map_or(Ok(()), Err))),
        End::User => None,
    }
}

/// Moves text between the user and the link until one of them goes. Lines typed go out with
/// CR ends (AX.25 text); what comes back is shown with its control characters made visible
/// (the far station's escape sequences must not reach the user's terminal, as no other
/// station's text does) and encoded for the user's connection.
pub async fn join<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    codec: &mut Codec,
    mut link: DuplexStream,
    shutdown: &mut watch::Receiver<bool>,
) -> End {
    let mut from_user = vec![0u8; 4096];
    let mut from_link = vec![0u8; 4096];
    let (mut app, mut net) = (Vec::new(), Vec::new());
    // An unfinished UTF-8 character at the end of the last piece from the link.
    let mut carry = Vec::new();
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
                carry.extend_from_slice(&from_link[..n]);
                let whole = qtc_mail::text::complete_utf8(&carry);
                let rest = carry.split_off(whole);
                net.clear();
                codec.encode_text(&qtc_mail::text::visible_8bit(&carry), &mut net);
                carry = rest;
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
