//! Incremental KISS decoder.

use crate::{Command, Frame, FEND, FESC, MAX_KISS_FRAME, TFEND, TFESC};

/// Counters kept by a [`Decoder`]. They only grow; read them whenever you like.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Frames handed to the callback.
    pub frames: u64,
    /// Bytes skipped before the first FEND (line noise, a TNC's text banner).
    pub garbage_bytes: u64,
    /// Data frames dropped because they had no payload.
    pub empty_frames: u64,
    /// Frames dropped because they grew past the size limit.
    pub oversize_frames: u64,
    /// Bytes after FESC that were neither TFEND nor TFESC (dropped; the frame went on).
    pub bad_escapes: u64,
}

impl Stats {
    /// Total frames the decoder threw away (empty plus oversize).
    #[must_use]
    pub fn dropped_frames(&self) -> u64 {
        self.empty_frames + self.oversize_frames
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first FEND: skip everything.
    Hunt,
    /// Inside a frame (possibly empty, right after a FEND).
    Frame,
    /// Inside a frame, the previous byte was FESC.
    Escape,
    /// The current frame grew too large; skip to the next FEND.
    Discard,
}

/// Incremental KISS decoder.
///
/// Feed bytes in chunks of any size with [`Decoder::decode`]; the result does not depend on where
/// the chunks are cut. Memory use is bounded by the size limit (at most `max_frame + 1` bytes are
/// buffered). The decoder never fails: malformed input is dropped and counted in [`Stats`].
#[derive(Debug, Clone)]
pub struct Decoder {
    state: State,
    /// Unescaped bytes of the current frame, type byte first.
    buf: Vec<u8>,
    max_frame: usize,
    stats: Stats,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder {
    /// A decoder with the [`MAX_KISS_FRAME`] payload limit.
    #[must_use]
    pub fn new() -> Self {
        Self::with_max_frame(MAX_KISS_FRAME)
    }

    /// A decoder that drops frames whose payload (after the type byte) exceeds `max_frame` bytes.
    /// Values above [`MAX_KISS_FRAME`] are lowered to it.
    #[must_use]
    pub fn with_max_frame(max_frame: usize) -> Self {
        Decoder {
            state: State::Hunt,
            buf: Vec::new(),
            max_frame: max_frame.min(MAX_KISS_FRAME),
            stats: Stats::default(),
        }
    }

    /// The counters so far.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Forget any partial frame and go back to hunting for a FEND (for example after the serial
    /// port was reopened). Counters are kept.
    pub fn reset(&mut self) {
        self.state = State::Hunt;
        self.buf.clear();
    }

    /// Whether a frame is partly received (bytes since the last FEND are buffered).
    #[must_use]
    pub fn in_frame(&self) -> bool {
        !self.buf.is_empty() || matches!(self.state, State::Escape | State::Discard)
    }

    /// Consume `input`, calling `out` once for each complete frame, in order.
    pub fn decode(&mut self, input: &[u8], out: &mut impl FnMut(Frame)) {
        for &b in input {
            match self.state {
                State::Hunt => {
                    if b == FEND {
                        self.state = State::Frame;
                    } else {
                        self.stats.garbage_bytes += 1;
                    }
                }
                State::Discard => {
                    if b == FEND {
                        self.state = State::Frame;
                    }
                }
                State::Frame => match b {
                    FEND => self.finish(out),
                    FESC => self.state = State::Escape,
                    b => self.push(b),
                },
                State::Escape => match b {
                    // FESC FEND: the escape is bad, but FEND always ends the frame so that we
                    // stay in sync with the sender.
                    FEND => {
                        self.stats.bad_escapes += 1;
                        tracing::trace!("KISS: FESC before FEND");
                        self.finish(out);
                    }
                    TFEND => {
                        self.state = State::Frame;
                        self.push(FEND);
                    }
                    TFESC => {
                        self.state = State::Frame;
                        self.push(FESC);
                    }
                    // KISS paper: ignore the byte and keep building the frame.
                    other => {
                        self.stats.bad_escapes += 1;
                        tracing::trace!(byte = other, "KISS: bad escape, byte dropped");
                        self.state = State::Frame;
                    }
                },
            }
        }
    }

    fn push(&mut self, b: u8) {
        // buf holds the type byte plus the payload.
        if self.buf.len() > self.max_frame {
            self.stats.oversize_frames += 1;
            tracing::debug!(limit = self.max_frame, "KISS: oversize frame dropped");
            self.buf.clear();
            self.state = State::Discard;
        } else {
            self.buf.push(b);
        }
    }

    fn finish(&mut self, out: &mut impl FnMut(Frame)) {
        self.state = State::Frame;
        let Some((&type_byte, payload)) = self.buf.split_first() else {
            // FEND FEND: not a frame.
            return;
        };
        let (port, command) = Command::from_type_byte(type_byte);
        if command == Command::Data && payload.is_empty() {
            self.stats.empty_frames += 1;
            self.buf.clear();
            return;
        }
        let frame = Frame {
            port,
            command,
            payload: payload.to_vec(),
        };
        self.buf.clear();
        self.stats.frames += 1;
        out(frame);
    }
}
