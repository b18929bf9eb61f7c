//! Who may be a forwarding partner over the air, and by which way.
//!
//! Over AX.25 and NET/ROM a callsign is only a claim, and over NET/ROM any node can make it: a
//! circuit's user is whatever its origin node says. A forwarding partner's session (its SID,
//! its queue, the right to send as anyone) is granted over the air only where the sysop expects
//! the partner ([`decide`]):
//!
//! - by its configured way: `connect = "ax25:PORT:CALL"` is a link from CALL (any SSID) on PORT;
//!   `connect = "netrom:NODE"` is a circuit whose origin is NODE (any SSID of its callsign:
//!   LinBPQ's BBS answers as N0BPQ-1 and calls as N0BPQ) that came through a neighbour we have a
//!   learned or locked route to that node through, or a link from NODE's callsign on a port
//!   where NODE is a neighbour;
//! - or any other way once it answers a challenge from its `secret` ([`challenge`]): FBB's
//!   `SYS` challenge in its MD5 form, which qtc answers when it calls (qtc-fbb's `challenge`).
//!
//! Anyone else naming a partner's call gets a user's session at most
//! ([`qtc_bbs::Access::Claimed`]). The driver of a connection asks [`grant`] before the
//! session starts and runs [`challenge`] before the forwarding session when it says so.

use std::time::Duration;

use qtc_bbs::Access;
use qtc_callsign::Callsign;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::config::forward::{Connect, Partner};
use crate::forward::Forwarder;
use crate::link::Codec;
use crate::radio::netrom::NodeRow;
use crate::radio::{Arrival, Caller, Radios};

/// How long a caller has to answer the challenge.
pub const CHALLENGE_TIME: Duration = Duration::from_secs(30);
/// The longest answer line read (an MD5 answer is 32 characters).
const MAX_ANSWER: usize = 128;

/// What a caller over the air gets for the callsign it gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// Not a partner's call, or a partner by the way the sysop gave: what its account says.
    AsAccount,
    /// A partner's call by another way: its forwarding session once it answers a challenge
    /// from this secret.
    Challenge(String),
    /// A partner's call by another way, and no secret to challenge it with: a user's session.
    UserOnly,
}

impl Grant {
    /// How the BBS session identifies `call` with this grant.
    pub fn access(&self, call: Callsign) -> Access {
        match self {
            Grant::UserOnly => Access::Claimed(call),
            Grant::AsAccount | Grant::Challenge(_) => Access::Callsign(call),
        }
    }

    /// The secret to challenge with before the forwarding session, if any.
    pub fn secret(&self) -> Option<String> {
        match self {
            Grant::Challenge(s) => Some(s.clone()),
            _ => None,
        }
    }
}

/// What `caller` gets: [`decide`] with the partner its callsign names and, for a NET/ROM
/// partner, its node as the NET/ROM tables know it now.
pub async fn grant(forwarder: &Forwarder, radios: &Radios, caller: &Caller) -> Grant {
    let Some(partner) = forwarder.partner(caller.remote) else {
        return Grant::AsAccount;
    };
    let node = match (&partner.connect, radios.netrom()) {
        (Connect::Netrom { node }, Some(n)) => n.find(node).await,
        _ => None,
    };
    let g = decide(&partner, caller, node.as_ref());
    if g != Grant::AsAccount {
        tracing::warn!(partner = %partner.call, way = %way(&caller.arrival), expected = %partner.connect,
        "a forwarding partner's call by a way not configured for it: {}",
        match g {
            Grant::Challenge(_) => "challenged",
            _ => "user session only (give the partner a secret, or this way as its connect)",
        });
    }
    g
}

/// What a caller claiming `partner`'s call by `caller.arrival` gets; `node` is the partner's
/// NET/ROM node (`connect = "netrom:..."`) as the tables know it, if they do.
pub fn decide(partner: &Partner, caller: &Caller, node: Option<&NodeRow>) -> Grant {
    if expected(partner, caller, node) {
        return Grant::AsAccount;
    }
    match &partner.secret {
        Some(s) => Grant::Challenge(s.clone()),
        None => Grant::UserOnly,
    }
}

/// Whether the caller came the way the partner's `connect` says.
fn expected(partner: &Partner, caller: &Caller, node: Option<&NodeRow>) -> bool {
    let node_call = node.and_then(|n| n.call.parse::<Callsign>().ok());
    match (&partner.connect, &caller.arrival) {
        (Connect::Ax25 { port, call, .. }, Arrival::Ax25 { port: came }) => {
            port == came && call.base() == caller.remote.base()
        }
        (Connect::Netrom { .. }, Arrival::Netrom { origin, routed, .. }) => {
            *routed && node_call.is_some_and(|n| n.base() == origin.base())
        }
        // The partner's node calling straight over AX.25 from where it is our neighbour.
        (Connect::Netrom { .. }, Arrival::Ax25 { port }) => node.is_some_and(|n| {
            node_call.is_some_and(|c| c.base() == caller.remote.base())
                && n.routes
                    .iter()
                    .any(|r| r.port == *port && r.neighbour == n.call && r.kind != "recorded")
        }),
        _ => false,
    }
}

/// The way a caller came, for the log.
fn way(a: &Arrival) -> String {
    match a {
        Arrival::Ax25 { port } => format!("AX.25 on {port}"),
        Arrival::Netrom {
            origin,
            port,
            neighbour,
            ..
        } => format!("NET/ROM from node {origin} through {neighbour} on {port}"),
    }
}

/// Puts FBB's `SYS` challenge in its MD5 form (five positions and a 10-digit number) to the
/// caller and reads its answer: the upper-case hex MD5 of the number followed by the secret.
/// `Some(bytes)` when it answered right, with what it sent after the answer; `None` (the
/// caller told why) when it did not, in time.
pub async fn challenge<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    codec: &mut Codec,
    call: Callsign,
    secret: &str,
) -> Option<Vec<u8>> {
    let seed = crate::clock::random_seed();
    let positions: Vec<String> = (0..5)
        .map(|i| ((seed >> (i * 8)) % 16 + 1).to_string())
        .collect();
    let number = format!("{:010}", (seed >> 20) % 10_000_000_000);
    let line = format!("{} {number}", positions.join(" "));
    let want = qtc_fbb::challenge::sys_answer(line.as_bytes(), secret)?;
    let mut out = Vec::new();
    codec.encode_text(format!("{line}\r").as_bytes(), &mut out);
    stream.write_all(&out).await.ok()?;
    let answer = tokio::time::timeout(CHALLENGE_TIME, read_line(stream, codec)).await;
    match answer {
        Ok(Some((line, rest))) if line.trim().eq_ignore_ascii_case(&want) => {
            tracing::info!(partner = %call, "challenge answered");
            Some(rest)
        }
        _ => {
            tracing::warn!(partner = %call, "challenge not answered: disconnected");
            let mut out = Vec::new();
            codec.encode_text(b"*** Challenge not answered. 73!\r", &mut out);
            let _ = stream.write_all(&out).await;
            None
        }
    }
}

/// One line from the caller (up to [`MAX_ANSWER`] bytes), and what came after it.
async fn read_line<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    codec: &mut Codec,
) -> Option<(String, Vec<u8>)> {
    let mut buf = [0u8; 256];
    let (mut app, mut net) = (Vec::new(), Vec::new());
    loop {
        let n = stream.read(&mut buf).await.ok().filter(|&n| n > 0)?;
        net.clear();
        codec.decode(&buf[..n], &mut app, &mut net);
        if !net.is_empty() {
            stream.write_all(&net).await.ok()?;
        }
        // Line ends from before the answer (a CR LF split across reads) are not the answer.
        let start = app.iter().position(|&b| b != b'\r' && b != b'\n');
        let Some(start) = start else {
            app.clear();
            continue;
        };
        if let Some(end) = app[start..].iter().position(|&b| b == b'\r' || b == b'\n') {
            let line = String::from_utf8_lossy(&app[start..start + end]).into_owned();
            let mut rest = app.split_off(start + end + 1);
            if rest.first() == Some(&b'\n') {
                rest.remove(0);
            }
            return Some((line, rest));
        }
        if app.len() > MAX_ANSWER {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(s: &str) -> Callsign {
        s.parse().unwrap()
    }

    fn partner(connect: Connect, secret: Option<&str>) -> Partner {
        Partner {
            call: "N0PTR".parse().unwrap(),
            connect,
            telnet: false,
            iac_escaped: false,
            script: Vec::new(),
            max_mode: qtc_fbb::Mode::DEFAULT,
            routes: Vec::new(),
            interval: None,
            poll: None,
            trace: false,
            secret: secret.map(str::to_string),
        }
    }

    fn ax25(port: &str, remote: &str) -> Caller {
        Caller {
            remote: call(remote),
            arrival: Arrival::Ax25 { port: port.into() },
        }
    }

    fn circuit(origin: &str, neighbour: &str, routed: bool) -> Caller {
        Caller {
            remote: call("N0PTR"),
            arrival: Arrival::Netrom {
                origin: call(origin),
                port: "vhf".into(),
                neighbour: call(neighbour),
                routed,
            },
        }
    }

    fn node(call: &str, via: &str) -> NodeRow {
        NodeRow {
            alias: "PTR".into(),
            call: call.into(),
            routes: vec![crate::radio::netrom::RouteRow {
                neighbour: via.into(),
                port: "vhf".into(),
                quality: 192,
                obsolescence: Some(6),
                kind: "learned",
            }],
        }
    }

    #[test]
    fn an_ax25_partner_is_its_call_on_its_port() {
        let p = partner(
            Connect::Ax25 {
                port: "vhf".into(),
                call: call("N0PTR-1"),
                via: Vec::new(),
            },
            None,
        );
        assert_eq!(decide(&p, &ax25("vhf", "N0PTR"), None), Grant::AsAccount);
        assert_eq!(decide(&p, &ax25("vhf", "N0PTR-7"), None), Grant::AsAccount);
        assert_eq!(decide(&p, &ax25("udp", "N0PTR"), None), Grant::UserOnly);
        let n = node("N0PTR-1", "N0NB");
        assert_eq!(
            decide(&p, &circuit("N0PTR-1", "N0NB", true), Some(&n)),
            Grant::UserOnly
        );
    }

    #[test]
    fn a_netrom_partner_is_a_circuit_from_its_node_through_a_neighbour_that_routes_to_it() {
        let p = partner(Connect::Netrom { node: "PTR".into() }, None);
        let n = node("N0PTR-1", "N0NB");
        assert_eq!(
            decide(&p, &circuit("N0PTR-1", "N0NB", true), Some(&n)),
            Grant::AsAccount
        );
        // LinBPQ: its BBS is N0PTR-1, its node (which opens the circuits) N0PTR.
        assert_eq!(
            decide(&p, &circuit("N0PTR", "N0NB", true), Some(&n)),
            Grant::AsAccount
        );
        // A stranger node naming the partner's call.
        assert_eq!(
            decide(&p, &circuit("N0EVL-1", "N0NB", true), Some(&n)),
            Grant::UserOnly
        );
        // The partner's node as origin, through a neighbour with no route to it.
        assert_eq!(
            decide(&p, &circuit("N0PTR-1", "N0EVL", false), Some(&n)),
            Grant::UserOnly
        );
        // The node unknown to the tables: nothing to compare with.
        assert_eq!(
            decide(&p, &circuit("N0PTR-1", "N0NB", true), None),
            Grant::UserOnly
        );
        // Straight over AX.25 from where its node is a neighbour; not from elsewhere.
        let neighbour = node("N0PTR-1", "N0PTR-1");
        assert_eq!(
            decide(&p, &ax25("vhf", "N0PTR"), Some(&neighbour)),
            Grant::AsAccount
        );
        assert_eq!(decide(&p, &ax25("vhf", "N0PTR"), Some(&n)), Grant::UserOnly);
        assert_eq!(
            decide(&p, &ax25("udp", "N0PTR"), Some(&neighbour)),
            Grant::UserOnly
        );
    }

    #[test]
    fn a_partner_by_another_way_is_challenged_when_it_has_a_secret() {
        for connect in [Connect::None, Connect::Tcp("bbs.example.org:6300".into())] {
            let p = partner(connect, Some("SECRETWORD"));
            assert_eq!(
                decide(&p, &ax25("vhf", "N0PTR"), None),
                Grant::Challenge("SECRETWORD".into())
            );
            let p = Partner { secret: None, ..p };
            assert_eq!(decide(&p, &ax25("vhf", "N0PTR"), None), Grant::UserOnly);
            assert_eq!(
                Grant::UserOnly.access(call("N0PTR")),
                Access::Claimed(call("N0PTR"))
            );
        }
    }

    #[tokio::test]
    async fn a_challenge_is_passed_with_the_md5_answer_and_failed_without_it() {
        for (answer_right, expect) in [(true, true), (false, false)] {
            let (mut ours, mut theirs) = tokio::io::duplex(1024);
            let caller = tokio::spawn(async move {
                let mut buf = vec![0u8; 256];
                let n = theirs.read(&mut buf).await.unwrap();
                let line = String::from_utf8_lossy(&buf[..n]).trim().to_string();
                let answer = if answer_right {
                    qtc_fbb::challenge::sys_answer(line.as_bytes(), "SECRETWORD").unwrap()
                } else {
                    "0123456789ABCDEF0123456789ABCDEF".into()
                };
                theirs
                    .write_all(format!("{answer}\r[QTC-1-B1FHM$]\r").as_bytes())
                    .await
                    .unwrap();
                theirs
            });
            let mut codec = Codec::raw();
            let got = challenge(
                &mut ours,
                &mut codec,
                "N0PTR".parse().unwrap(),
                "SECRETWORD",
            )
            .await;
            assert_eq!(got.is_some(), expect);
            if let Some(rest) = got {
                assert_eq!(rest, b"[QTC-1-B1FHM$]\r");
            }
            drop(caller.await.unwrap());
        }
    }
}
