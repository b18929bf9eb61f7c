//! KISS framing on a byte stream: the device of every KISS kind (TCP, pty, serial).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::{ByteStream, Device, KissSetup};

/// Most bytes of encoded KISS waiting for the device; frames beyond it are dropped.
pub const MAX_KISS_QUEUE: usize = 32 * 1024;

/// The modem bit rate of KISS ports when `modem_baud` is not given.
pub const DEFAULT_MODEM_BAUD: u32 = 1200;

/// KISS parameters to send the modem when the device opens (spec §1.2); `None`: not sent, the
/// modem keeps its own setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KissParams {
    /// TXDELAY, 10 ms units.
    pub txdelay: Option<u8>,
    /// Persistence P.
    pub persist: Option<u8>,
    /// SlotTime, 10 ms units.
    pub slottime: Option<u8>,
    /// TXtail, 10 ms units.
    pub txtail: Option<u8>,
    /// Full duplex.
    pub full_duplex: Option<bool>,
}

impl KissParams {
    /// The channel as qtc models it: these parameters where set, the modem's own defaults
    /// (Direwolf's, [`qtc_ax25::Air::kiss`]) elsewhere.
    pub fn air(&self, bit_rate: u32) -> qtc_ax25::Air {
        let mut air = qtc_ax25::Air::kiss(bit_rate);
        let tens = |v: u8| Duration::from_millis(u64::from(v) * 10);
        if let Some(v) = self.txdelay {
            air.txdelay = tens(v);
        }
        if let Some(v) = self.txtail {
            air.txtail = tens(v);
        }
        if let Some(v) = self.slottime {
            air.slot_time = tens(v);
        }
        if let Some(v) = self.persist {
            air.persistence = v;
        }
        if let Some(v) = self.full_duplex {
            air.full_duplex = v;
        }
        air
    }
}

/// A KISS TNC on a byte stream.
pub(super) struct KissDev {
    io: Box<dyn ByteStream>,
    /// Incoming KISS state.
    dec: qtc_kiss::Decoder,
    /// Encoded frames not yet written, from `sent` on.
    out: Vec<u8>,
    /// How much of `out` is written.
    sent: usize,
    /// TNC port (channel).
    kiss_port: u8,
}

impl KissDev {
    /// The device on `io`, with the parameter frames that are set (TXDELAY, persistence, slot
    /// time, TXtail, full duplex: spec §1.2) queued first, each a one-byte frame.
    pub(super) fn open(io: Box<dyn ByteStream>, setup: KissSetup) -> Box<dyn Device> {
        let mut out = Vec::new();
        let p = setup.params;
        let set = [
            (qtc_kiss::Command::TxDelay, p.txdelay),
            (qtc_kiss::Command::Persistence, p.persist),
            (qtc_kiss::Command::SlotTime, p.slottime),
            (qtc_kiss::Command::TxTail, p.txtail),
            (qtc_kiss::Command::FullDuplex, p.full_duplex.map(u8::from)),
        ];
        for (command, value) in set {
            if let Some(v) = value {
                // One byte, a valid port: encoding cannot fail.
                let _ = qtc_kiss::encode(setup.kiss_port, command, &[v], &mut out);
            }
        }
        Box::new(KissDev {
            io,
            dec: qtc_kiss::Decoder::new(),
            out,
            sent: 0,
            kiss_port: setup.kiss_port,
        })
    }
}

impl Device for KissDev {
    fn queue(&mut self, frame: &[u8]) -> bool {
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        }
        if self.out.len() - self.sent + frame.len() * 2 + 4 > MAX_KISS_QUEUE {
            return false;
        }
        qtc_kiss::encode(
            self.kiss_port,
            qtc_kiss::Command::Data,
            frame,
            &mut self.out,
        )
        .is_ok()
    }

    fn has_output(&self) -> bool {
        self.sent < self.out.len()
    }

    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
        frames: &mut Vec<Vec<u8>>,
    ) -> Poll<io::Result<bool>> {
        let mut rb = ReadBuf::new(buf);
        match Pin::new(&mut self.io).poll_read(cx, &mut rb) {
            Poll::Ready(Ok(())) => {
                let data = rb.filled();
                if data.is_empty() {
                    return Poll::Ready(Ok(false));
                }
                let want = self.kiss_port;
                self.dec.decode(data, &mut |f| {
                    if f.port == want && f.command == qtc_kiss::Command::Data {
                        frames.push(f.payload);
                    }
                });
                Poll::Ready(Ok(true))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.out.len() {
            match Pin::new(&mut self.io).poll_write(cx, &self.out[self.sent..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.sent += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.out.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}
