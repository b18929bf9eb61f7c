//! Air time: what a frame costs on the radio channel, and when the frames handed to a KISS modem
//! have left it.
//!
//! A KISS host hands frames to the modem and hears nothing back about when they go out: a
//! Direwolf or a TNC waits for a clear channel (p-persistence), keys up (TXDELAY), sends every
//! frame it holds in one transmission and drops the carrier after TXTAIL. At 1200 bit/s a
//! 256-byte frame takes 1.9 s, so a window of frames handed over at once leaves over tens of
//! seconds. [`Air`] describes the channel (bit rate and the modem's keying parameters) and
//! [`TxQueue`] follows the modem's queue, so the link can start T1 when a frame can have left
//! (`Link::departs`) rather than when it was handed over.
//!
//! The model errs late rather than early: a frame heard from the other station means the channel
//! was theirs, so what the modem still held had not gone out yet ([`TxQueue::heard`]).

use std::time::{Duration, Instant};

/// Bit stuffing adds up to one bit in six; on real data about 3 % (the channel README's figure).
const STUFFING: f64 = 1.03;
/// Bytes of a frame on the air besides what [`crate::Frame`] holds: the FCS.
const FCS_LEN: usize = 2;
/// Bits of the flag between frames.
const FLAG_BITS: f64 = 8.0;

/// The radio channel a port transmits on, as far as timing goes. Keying parameters are the KISS
/// ones (spec §1.2): what qtc sends the modem when the sysop sets them, else the modem's own
/// defaults (Direwolf's, [`Air::kiss`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Air {
    /// Bits per second on the air (Direwolf's `MODEM 1200`). 0: not modelled (AXUDP, a wire):
    /// frames leave at once and cost no time.
    pub bit_rate: u32,
    /// Key-up delay before the first frame of a transmission (KISS TXDELAY).
    pub txdelay: Duration,
    /// Carrier kept after the last frame (KISS TXtail).
    pub txtail: Duration,
    /// The p-persistence slot (KISS SlotTime).
    pub slot_time: Duration,
    /// KISS persistence P: the modem keys up in a free slot with probability (P + 1) / 256.
    pub persistence: u8,
    /// The modem transmits without waiting for a clear channel, and hears while it sends.
    pub full_duplex: bool,
}

impl Default for Air {
    fn default() -> Self {
        Air::NONE
    }
}

impl Air {
    /// No air model: frames leave the moment they are handed over.
    pub const NONE: Air = Air {
        bit_rate: 0,
        txdelay: Duration::ZERO,
        txtail: Duration::ZERO,
        slot_time: Duration::ZERO,
        persistence: 255,
        full_duplex: true,
    };

    /// A half-duplex KISS modem at `bit_rate` with Direwolf's default keying: TXDELAY 300 ms,
    /// TXTAIL 100 ms, SLOTTIME 100 ms, PERSIST 63 (the KISS spec's defaults differ only in
    /// TXDELAY, 500 ms).
    #[must_use]
    pub fn kiss(bit_rate: u32) -> Air {
        Air {
            bit_rate,
            txdelay: Duration::from_millis(300),
            txtail: Duration::from_millis(100),
            slot_time: Duration::from_millis(100),
            persistence: 63,
            full_duplex: false,
        }
    }

    /// Whether air time is modelled at all.
    #[must_use]
    pub fn is_modelled(&self) -> bool {
        self.bit_rate > 0
    }

    /// Air time of one frame of `len` bytes (address to information field, as
    /// `Frame::buffer_len` counts them): the FCS, bit stuffing and one flag added.
    #[must_use]
    pub fn frame_time(&self, len: usize) -> Duration {
        if self.bit_rate == 0 {
            return Duration::ZERO;
        }
        let bits = (len + FCS_LEN) as f64 * 8.0 * STUFFING + FLAG_BITS;
        Duration::from_secs_f64(bits / f64::from(self.bit_rate))
    }

    /// The mean wait for a free slot: the first try comes after one slot and succeeds with
    /// probability p, so 1/p slots on average (none in full duplex).
    #[must_use]
    pub fn access_time(&self) -> Duration {
        if !self.is_modelled() || self.full_duplex {
            return Duration::ZERO;
        }
        let p = (f64::from(self.persistence) + 1.0) / 256.0;
        self.slot_time.mul_f64(1.0 / p)
    }

    /// From handing a frame to an idle modem until its first bit is on the air: the slot wait
    /// and TXDELAY.
    #[must_use]
    pub fn key_up(&self) -> Duration {
        if !self.is_modelled() {
            return Duration::ZERO;
        }
        self.access_time() + self.txdelay
    }

    /// One transmission of a single `len`-byte frame, key-up to carrier off: what the other
    /// station's shortest answer costs.
    #[must_use]
    pub fn transmission(&self, len: usize) -> Duration {
        if !self.is_modelled() {
            return Duration::ZERO;
        }
        self.key_up() + self.frame_time(len) + self.txtail
    }
}

/// The modem's transmit queue as the host can know it: when what it was handed will have left.
#[derive(Debug, Clone)]
pub struct TxQueue {
    air: Air,
    /// When the last frame handed over has left (its last bit on the air), as far as known.
    until: Option<Instant>,
}

impl TxQueue {
    /// An empty queue on `air`.
    #[must_use]
    pub fn new(air: Air) -> TxQueue {
        TxQueue { air, until: None }
    }

    /// The channel.
    #[must_use]
    pub fn air(&self) -> &Air {
        &self.air
    }

    /// A frame of `len` bytes handed to the modem at `now`: when its last bit will have left.
    /// Frames handed over while the modem is still sending go in the same transmission (as
    /// Direwolf and TNCs bundle them); to an idle modem they wait for a slot and TXDELAY first.
    pub fn queue(&mut self, now: Instant, len: usize) -> Instant {
        if !self.air.is_modelled() {
            return now;
        }
        let start = match self.until {
            Some(t) if t >= now => t,
            _ => now + self.air.key_up(),
        };
        let end = start + self.air.frame_time(len);
        self.until = Some(end);
        end
    }

    /// Another station's transmission was heard, on the air for `busy` until `now` (a frame's
    /// air time, and that of frames of the same transmission that were lost). A half-duplex
    /// modem does not send while the channel is busy (nor hears while it sends): whatever this
    /// model had leaving during or after that time was still in the modem, and goes out after a
    /// new slot wait and TXDELAY. Returns the time from which departures were moved and by how
    /// much, or `None` when nothing was waiting.
    pub fn heard(&mut self, now: Instant, busy: Duration) -> Option<(Instant, Duration)> {
        if !self.air.is_modelled() || self.air.full_duplex {
            return None;
        }
        let began = now.checked_sub(busy).unwrap_or(now);
        let until = self.until.filter(|&t| t > began)?;
        let shift = (now + self.air.key_up()).saturating_duration_since(began);
        self.until = Some(until + shift);
        Some((began, shift))
    }

    /// When everything handed over so far will have left (`None`: nothing ever was).
    #[must_use]
    pub fn until(&self) -> Option<Instant> {
        self.until
    }
}
