//! `CONV`: a BBS user in the conference. The user's typing goes through the sans-IO
//! [`qtc_bbs::Conv`]; what others say on the channel arrives on [`Online`]'s broadcast and is
//! written out. Returns when the user types `/Q` (back to the BBS) or goes.

use std::sync::Arc;

use qtc_bbs::{Conv, ConvEvent};
use qtc_callsign::Callsign;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{broadcast, watch};

use crate::link::Codec;
use crate::online::Online;

/// Runs the conference for `call` from `channel`. True: back to the BBS; false: the user's
/// connection ended (or the daemon stops).
pub async fn run<S: AsyncRead + AsyncWrite + Unpin>(
    online: &Arc<Online>,
    call: Callsign,
    channel: u16,
    max_line: usize,
    stream: &mut S,
    codec: &mut Codec,
    shutdown: &mut watch::Receiver<bool>,
) -> bool {
    let mut lines = online.conv_lines();
    let call = call.to_string();
    let me = online.enter_conv(&call, channel);
    let mut conv = Conv::new(channel, max_line);
    let mut buf = vec![0u8; 4096];
    let (mut app, mut net, mut own) = (Vec::new(), Vec::new(), Vec::new());
    codec.encode_text(conv.welcome().as_bytes(), &mut net);
    loop {
        if !net.is_empty() {
            if stream.write_all(&net).await.is_err() {
                return false;
            }
            net.clear();
        }
        tokio::select! {
            r = stream.read(&mut buf) => {
                let n = match r {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => n,
                };
                app.clear();
                codec.decode(&buf[..n], &mut app, &mut net);
                own.clear();
                for ev in conv.input(&app, &mut own) {
                    match ev {
                        ConvEvent::Say(text) => me.say(qtc_bbs::said(&call, &text)),
                        ConvEvent::Who => {
                            let who = me.who().join(" ");
                            own.extend_from_slice(
                                format!("*** Channel {}: {who}\r", conv.channel()).as_bytes(),
                            );
                        }
                        ConvEvent::Join(n) => me.join(n),
                        ConvEvent::Quit => {
                            codec.encode_text(&own, &mut net);
                            let _ = stream.write_all(&net).await;
                            return true;
                        }
                    }
                }
                codec.encode_text(&own, &mut net);
            }
            line = lines.recv() => match line {
                Ok(l) if l.channel == conv.channel() && l.from != me.id() => {
                    codec.encode_text(l.text.as_bytes(), &mut net);
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    codec.encode_text(format!("*** {n} lines missed\r").as_bytes(), &mut net);
                }
                Err(broadcast::error::RecvError::Closed) => return true,
            },
            _ = shutdown.changed() => return false,
        }
    }
}
