//! `qtc call`: a terminal on an AX.25 link, on the same port task as the daemon. Lines typed go
//! out with CR line ends; received text is printed with LF; it exits when the link is down.

use anyhow::{anyhow, Context};
use qtc_callsign::Callsign;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::{run_port, PortSetup, RadioHandle, Radios};
use crate::config::radio::RadioPort;
use crate::phy::Kind;

/// Runs the terminal until the link is down.
pub fn run(port: &str, mycall: &str, remote: &str, via: &[String]) -> anyhow::Result<()> {
    let mycall: Callsign = mycall
        .parse()
        .map_err(|e| anyhow!("--mycall {mycall:?}: {e}"))?;
    let remote_call: Callsign = remote.parse().map_err(|e| anyhow!("{remote:?}: {e}"))?;
    let via: Vec<Callsign> = via
        .iter()
        .filter(|v| !v.eq_ignore_ascii_case("via") && !v.eq_ignore_ascii_case("v"))
        .map(|v| v.parse().map_err(|e| anyhow!("digipeater {v:?}: {e}")))
        .collect::<anyhow::Result<_>>()?;
    // The `[[port]]` keys in one argument (`kiss-tcp:HOST:PORT`): the AXUDP peer is `remote`.
    let kind = Kind::from_arg(port, remote_call).map_err(|e| anyhow!("--port: {e}"))?;
    // Logs only when asked (RUST_LOG=debug): standard error is the terminal's status line.
    let filter = crate::config::log_filter_env_or("error");
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async move {
        let mut link = qtc_ax25::Config::for_air(crate::config::radio::default_air(&kind));
        link.send_buffer = 8 * 1024;
        let rp = RadioPort {
            name: "call".into(),
            kind,
            kiss_port: 0,
            kiss: Default::default(),
            link,
            max_links: 1,
            beacon: None,
            netrom_quality: 0,
            ip: None,
            modem_baud_given: false,
        };
        let heard = super::Heard::default();
        let health = std::sync::Arc::<super::PortHealth>::default();
        let (tx, rx) = mpsc::channel(4);
        let (stop_tx, stop_rx) = watch::channel(false);
        let task = tokio::spawn(run_port(
            PortSetup {
                port: rp,
                locals: vec![mycall],
                accept: false,
                on_incoming: None,
                heard: heard.clone(),
                health: health.clone(),
                metrics: Default::default(),
                netrom: None,
                ip: None,
            },
            rx,
            stop_rx,
        ));
        let radios = Radios::new(vec![(
            "call".to_string(),
            RadioHandle {
                cmd: tx,
                heard,
                health,
            },
        )]);
        eprintln!("*** calling {remote_call} from {mycall}");
        let result = match radios
            .connect("call", super::Local::Station(mycall), remote_call, via)
            .await
        {
            Ok(link) => {
                eprintln!("*** connected to {remote_call}");
                terminal(link.stream).await;
                eprintln!("*** disconnected");
                Ok(())
            }
            Err(e) => Err(anyhow!("cannot connect to {remote_call}: {e}")),
        };
        let _ = stop_tx.send(true);
        let _ = task.await;
        result
    })
}

async fn terminal(stream: tokio::io::DuplexStream) {
    let (mut rd, mut wr) = tokio::io::split(stream);
    let to_link = async move {
        let mut stdin = tokio::io::stdin();
        let mut buf = vec![0u8; 4096];
        let mut out = Vec::new();
        loop {
            match stdin.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    out.clear();
                    for &b in &buf[..n] {
                        match b {
                            b'\n' => out.push(b'\r'),
                            b'\r' => {}
                            b => out.push(b),
                        }
                    }
                    if wr.write_all(&out).await.is_err() {
                        return;
                    }
                }
            }
        }
        // End of input: close our side; the link sends what is left, then DISC.
        let _ = wr.shutdown().await;
        std::future::pending::<()>().await
    };
    let from_link = async move {
        let mut stdout = tokio::io::stdout();
        let mut buf = vec![0u8; 4096];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let text: Vec<u8> = buf[..n]
                        .iter()
                        .map(|&b| if b == b'\r' { b'\n' } else { b })
                        .collect();
                    if stdout.write_all(&text).await.is_err() {
                        break;
                    }
                    let _ = stdout.flush().await;
                }
            }
        }
    };
    tokio::select! {
        () = from_link => {}
        () = to_link => {}
    }
}
