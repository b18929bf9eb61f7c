//! A listener on both modems of row 11's channel: one more KISS TCP client on each Direwolf
//! (it allows three), which hands every client each frame it received, so this hears every
//! frame the other station sent, timed at the end of its reception. Row 11 reads from it how
//! long the receiver of I frames takes to acknowledge them.

use std::io::Read;
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::util::{now, Ctx, R};

/// One frame heard: when its reception ended, which modem heard it (0: A, 1: B), the AX.25
/// frame without FCS.
type Heard = (Instant, usize, Vec<u8>);

/// The listener; it stops when dropped.
pub struct Monitor {
    heard: Arc<Mutex<Vec<Heard>>>,
    streams: Vec<TcpStream>,
    threads: Vec<JoinHandle<()>>,
}

impl Monitor {
    /// Listens on the modems' KISS TCP ports `kiss` (A's, B's).
    pub fn start(kiss: (u16, u16)) -> R<Monitor> {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let mut m = Monitor {
            heard,
            streams: Vec::new(),
            threads: Vec::new(),
        };
        for (modem, port) in [kiss.0, kiss.1].into_iter().enumerate() {
            let s = TcpStream::connect(("127.0.0.1", port)).ctx("the modem's KISS port")?;
            let reader = s.try_clone().ctx("KISS socket")?;
            let heard = Arc::clone(&m.heard);
            m.threads
                .push(std::thread::spawn(move || listen(reader, modem, &heard)));
            m.streams.push(s);
        }
        Ok(m)
    }

    /// How long the receiver took to answer the sender's I frames: for the last I frame of
    /// each of A's runs (heard by B) and the next frame B sent that can acknowledge it (an S
    /// frame or an I frame, heard by A), the time between the ends of the two: B's
    /// acknowledgement delay plus its keying and the answer's own air time. The median and the
    /// count, or `None` when there are none.
    pub fn answer_median(&self) -> Option<(f64, usize)> {
        let heard = self.heard.lock().ok()?;
        let mut gaps = Vec::new();
        let mut pending: Option<Instant> = None;
        for (at, modem, frame) in heard.iter() {
            match (modem, control(frame)) {
                (1, Some(c)) if c & 1 == 0 => pending = Some(*at),
                (0, Some(c)) if c & 3 != 3 => {
                    if let Some(sent) = pending.take() {
                        gaps.push(at.duration_since(sent).as_secs_f64());
                    }
                }
                _ => {}
            }
        }
        if gaps.is_empty() {
            return None;
        }
        gaps.sort_by(f64::total_cmp);
        Some((gaps[gaps.len() / 2], gaps.len()))
    }
}

impl Monitor {
    /// The longest time between two frames heard, in seconds (a link that stalls shows here).
    pub fn longest_quiet(&self) -> f64 {
        let Ok(heard) = self.heard.lock() else {
            return 0.0;
        };
        heard
            .windows(2)
            .map(|w| w[1].0.duration_since(w[0].0).as_secs_f64())
            .fold(0.0, f64::max)
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        for s in &self.streams {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The first control byte of an AX.25 frame (after the address field, whose last byte has its
/// low bit set).
fn control(frame: &[u8]) -> Option<u8> {
    let end = frame.iter().position(|b| b & 1 == 1)?;
    frame.get(end + 1).copied()
}

/// Reads KISS data frames from one modem until the connection ends.
fn listen(mut s: TcpStream, modem: usize, heard: &Mutex<Vec<Heard>>) {
    let (mut buf, mut frame, mut escaped) = ([0u8; 4096], Vec::new(), false);
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            return;
        }
        let at = now();
        for &b in &buf[..n] {
            if b == 0xc0 {
                // A data frame on any KISS port: type byte low nibble 0.
                if frame.len() > 1 && frame[0] & 0x0f == 0 {
                    if let Ok(mut h) = heard.lock() {
                        h.push((at, modem, frame[1..].to_vec()));
                    }
                }
                frame.clear();
            } else if b == 0xdb && !escaped {
                escaped = true;
                continue;
            } else {
                frame.push(match (b, escaped) {
                    (0xdc, true) => 0xc0,
                    (0xdd, true) => 0xdb,
                    _ => b,
                });
            }
            escaped = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_byte_follows_the_address_field() {
        let mut f = vec![0x9c; 13];
        f.push(0x61); // last address byte
        f.extend_from_slice(&[0x10, 0xf0, b'x']);
        assert_eq!(control(&f), Some(0x10));
    }
}
