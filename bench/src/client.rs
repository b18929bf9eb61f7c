//! A plain TCP client for the telnet and forwarding ports: send lines, wait for text.
//! Telnet option requests from qtc are left unanswered (qtc does not wait for answers).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::util::{find_from, now, Ctx, R};

/// How long a wait for something that should come at once may take before the run is broken.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// One connection.
pub struct Client {
    /// The socket.
    pub stream: TcpStream,
    seen: Vec<u8>,
    scanned: usize,
}

impl Client {
    /// Connects to 127.0.0.1:`port`.
    pub fn connect(port: u16) -> R<Client> {
        let stream = TcpStream::connect(("127.0.0.1", port)).ctx(format!("connect to :{port}"))?;
        stream.set_nodelay(true).ctx("nodelay")?;
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .ctx("timeout")?;
        Ok(Client {
            stream,
            seen: Vec::new(),
            scanned: 0,
        })
    }

    /// Sends `line` and CR LF.
    pub fn line(&mut self, line: &str) -> R<()> {
        self.raw(format!("{line}\r\n").as_bytes())
    }

    /// Sends bytes as they are.
    pub fn raw(&mut self, bytes: &[u8]) -> R<()> {
        self.stream.write_all(bytes).ctx("send")
    }

    /// Reads until `what` appears within `limit`; returns what came up to and including it.
    pub fn expect_within(&mut self, what: &str, limit: Duration) -> R<Vec<u8>> {
        self.wait(what.as_bytes(), limit, true).map(|(_, v)| v)
    }

    /// [`Client::expect_within`] with [`PATIENCE`].
    pub fn expect(&mut self, what: &str) -> R<Vec<u8>> {
        self.expect_within(what, PATIENCE)
    }

    /// Reads until `what`, keeping nothing; returns how many bytes came up to and including it.
    pub fn skip_to(&mut self, what: &str, limit: Duration) -> R<usize> {
        self.wait(what.as_bytes(), limit, false).map(|(n, _)| n)
    }

    fn wait(&mut self, what: &[u8], limit: Duration, keep: bool) -> R<(usize, Vec<u8>)> {
        let end = now() + limit;
        let mut dropped = 0usize;
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            if let Some(pos) = find_from(&self.seen, what, self.scanned) {
                let rest = self.seen.split_off(pos + what.len());
                let got = std::mem::replace(&mut self.seen, rest);
                self.scanned = 0;
                return Ok((dropped + got.len(), if keep { got } else { Vec::new() }));
            }
            self.scanned = self.seen.len().saturating_sub(what.len() - 1);
            if !keep && self.scanned > 0 {
                dropped += self.scanned;
                self.seen.drain(..self.scanned);
                self.scanned = 0;
            }
            if now() >= end {
                let tail = &self.seen[self.seen.len().saturating_sub(300)..];
                return Err(format!(
                    "never saw {:?} within {:?}; last bytes {:?}",
                    String::from_utf8_lossy(what),
                    limit,
                    String::from_utf8_lossy(tail)
                ));
            }
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    return Err(format!(
                        "connection closed before {:?}; got {:?}",
                        String::from_utf8_lossy(what),
                        String::from_utf8_lossy(&self.seen[self.seen.len().saturating_sub(300)..])
                    ))
                }
                Ok(n) => self.seen.extend_from_slice(&buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }

    /// Reads whatever arrives within `limit` (or until close); returns the byte count.
    pub fn drain(&mut self, limit: Duration) -> usize {
        let end = now() + limit;
        let mut n = std::mem::take(&mut self.seen).len();
        self.scanned = 0;
        let mut buf = vec![0u8; 256 * 1024];
        while now() < end {
            match self.stream.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if n > 0 {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        n
    }
}
