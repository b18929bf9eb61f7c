//! Binary framing of compressed bodies (spec §5): `SOH` header with title and offset,
//! `STX` data blocks, `EOT` checksum, `CAN` abort. Encoder plus an incremental decoder.

use crate::Error;

/// Start of header.
pub const SOH: u8 = 0x01;
/// Start of a data block.
pub const STX: u8 = 0x02;
/// End of transfer (followed by the checksum).
pub const EOT: u8 = 0x04;
/// Abort (followed by a length and a reason).
pub const CAN: u8 = 0x18;
/// Largest data block FBB sends; we send the same.
pub const MAX_DATA_BLOCK: usize = 250;
/// Longest title we put into a header (longer ones are cut).
pub const MAX_TITLE_LEN: usize = 80;
/// Default cap on the data of one transfer.
pub const DEFAULT_MAX_TRANSFER: usize = 1 << 20;

/// How the header's offset is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetPad {
    /// `%6ld`, space padded, as FBB sends it (B0/B1).
    Space,
    /// `%06d`, zero padded, as LinBPQ sends it in B2: wl2k-go parses the field as an integer
    /// and aborts on spaces.
    Zero,
}

/// Incremental checksum and block writer for one transfer.
#[derive(Debug, Default, Clone)]
pub struct Encoder {
    sum: u8,
}

impl Encoder {
    /// A fresh encoder.
    pub fn new() -> Encoder {
        Encoder::default()
    }

    /// Append the `SOH` header: title (cut at NUL or [`MAX_TITLE_LEN`]) and the offset
    /// printed six wide, padded as `pad` says.
    pub fn header(&mut self, title: &[u8], offset: u32, pad: OffsetPad, out: &mut Vec<u8>) {
        let title = title.split(|&b| b == 0).next().unwrap_or(&[]);
        let title = &title[..title.len().min(MAX_TITLE_LEN)];
        let off = match pad {
            OffsetPad::Space => format!("{offset:>6}"),
            OffsetPad::Zero => format!("{offset:06}"),
        };
        out.push(SOH);
        // title + NUL + offset + NUL; at most 80 + 1 + 10 + 1, fits in a byte.
        out.push((title.len() + off.len() + 2) as u8);
        out.extend_from_slice(title);
        out.push(0);
        out.extend_from_slice(off.as_bytes());
        out.push(0);
    }

    /// Append `data` as `STX` blocks of at most [`MAX_DATA_BLOCK`] bytes.
    pub fn data(&mut self, data: &[u8], out: &mut Vec<u8>) {
        for chunk in data.chunks(MAX_DATA_BLOCK) {
            self.block(chunk, out);
        }
    }

    /// Append one `STX` block (1..=256 bytes; 256 is sent as length 0).
    pub fn block(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        debug_assert!(!chunk.is_empty() && chunk.len() <= 256);
        out.push(STX);
        out.push(chunk.len() as u8); // 256 wraps to 0, which means 256
        out.extend_from_slice(chunk);
        self.sum = chunk.iter().fold(self.sum, |s, &b| s.wrapping_add(b));
    }

    /// Append `EOT` and the checksum of every data byte written.
    pub fn finish(self, out: &mut Vec<u8>) {
        out.push(EOT);
        out.push(self.sum.wrapping_neg());
    }
}

/// Append a whole transfer: header (offset FBB style), data blocks, EOT.
pub fn encode(title: &[u8], offset: u32, data: &[u8], out: &mut Vec<u8>) {
    let mut e = Encoder::new();
    e.header(title, offset, OffsetPad::Space, out);
    e.data(data, out);
    e.finish(out);
}

/// Append a `CAN` abort with a reason (cut to 255 bytes).
pub fn emit_abort(reason: &[u8], out: &mut Vec<u8>) {
    let r = &reason[..reason.len().min(255)];
    out.push(CAN);
    out.push(r.len() as u8);
    out.extend_from_slice(r);
}

/// What the decoder produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete transfer with a correct checksum.
    Message {
        /// Title from the header.
        title: Vec<u8>,
        /// Offset from the header (B1 resume).
        offset: u32,
        /// Every data byte of the STX blocks.
        data: Vec<u8>,
    },
    /// The sender aborted with `CAN` and this reason.
    Aborted(Vec<u8>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Start,
    HeaderLen,
    Header(usize),
    Kind,
    BlockLen,
    Block(usize),
    Sum,
    CanLen,
    Can(usize),
    Done,
}

/// Incremental decoder for one transfer. Feed it any chunks; it stops right after a frame.
#[derive(Debug, Clone)]
pub struct Decoder {
    st: St,
    max: usize,
    buf: Vec<u8>,
    header: Option<(Vec<u8>, u32)>,
    data: Vec<u8>,
    sum: u8,
}

impl Decoder {
    /// A decoder refusing transfers of more than `max_data` data bytes.
    pub fn new(max_data: usize) -> Decoder {
        Decoder {
            st: St::Start,
            max: max_data,
            buf: Vec::new(),
            header: None,
            data: Vec::new(),
            sum: 0,
        }
    }

    /// Title and offset, once the header is in.
    pub fn header(&self) -> Option<(&[u8], u32)> {
        self.header.as_ref().map(|(t, o)| (t.as_slice(), *o))
    }

    /// Data bytes received so far (for keeping a partial B1 file).
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Whether the decoder has seen nothing yet.
    pub fn is_idle(&self) -> bool {
        self.st == St::Start
    }

    fn parse_header(&mut self) -> Result<(), Error> {
        let h = &self.buf;
        let nul = h
            .iter()
            .position(|&b| b == 0)
            .ok_or(Error::BadBlock("header has no NUL after the title"))?;
        let rest = &h[nul + 1..];
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(Error::BadBlock("header has no NUL after the offset"))?;
        if end + 1 != rest.len() {
            return Err(Error::BadBlock("trailing bytes in header"));
        }
        let off = rest[..end].trim_ascii();
        let offset = if off.is_empty() {
            0
        } else {
            if off.len() > 10 || !off.iter().all(u8::is_ascii_digit) {
                return Err(Error::BadBlock("header offset is not a number"));
            }
            let v = off.iter().fold(0u64, |v, d| v * 10 + u64::from(d - b'0'));
            u32::try_from(v).map_err(|_| Error::BadBlock("header offset too large"))?
        };
        self.header = Some((h[..nul].to_vec(), offset));
        Ok(())
    }

    /// Feed `input`. Returns how many bytes were used and the frame, if one completed
    /// (bytes after it are left for the caller). Need-more is `Ok((input.len(), None))`.
    /// After an error or a frame the decoder must not be fed again.
    pub fn decode(&mut self, input: &[u8]) -> Result<(usize, Option<Frame>), Error> {
        let mut i = 0;
        while i < input.len() {
            let (used, frame) = match self.st {
                St::Header(_) | St::Block(_) | St::Can(_) => self.on_run(&input[i..])?,
                _ => (1, self.on_byte(input[i])?),
            };
            i += used;
            if frame.is_some() {
                return Ok((i, frame));
            }
        }
        Ok((i, None))
    }

    /// The states that read one byte: the packets' kinds and lengths, and the checksum.
    fn on_byte(&mut self, b: u8) -> Result<Option<Frame>, Error> {
        match self.st {
            St::Done => return Err(Error::BadBlock("decoder used after its frame")),
            St::Start => {
                self.st = match b {
                    SOH => St::HeaderLen,
                    CAN => St::CanLen,
                    _ => return Err(Error::BadBlock("binary packet is not a header (SOH)")),
                };
            }
            St::HeaderLen => {
                if b < 2 {
                    return Err(Error::BadBlock("header too short"));
                }
                self.st = St::Header(usize::from(b));
            }
            St::Kind => {
                self.st = match b {
                    STX => St::BlockLen,
                    EOT => St::Sum,
                    CAN => St::CanLen,
                    SOH => return Err(Error::BadBlock("second header inside a transfer")),
                    _ => return Err(Error::BadBlock("expected STX, EOT or CAN")),
                };
            }
            St::BlockLen => {
                let n = if b == 0 { 256 } else { usize::from(b) };
                if self.data.len() + n > self.max {
                    return Err(Error::MessageTooLarge { max: self.max });
                }
                self.st = St::Block(n);
            }
            St::Sum => {
                self.st = St::Done;
                if self.sum.wrapping_add(b) != 0 {
                    return Err(Error::BlockChecksum {
                        expected: self.sum.wrapping_neg(),
                        got: b,
                    });
                }
                let (title, offset) = self.header.take().unwrap_or_default();
                let data = std::mem::take(&mut self.data);
                return Ok(Some(Frame::Message {
                    title,
                    offset,
                    data,
                }));
            }
            St::CanLen => {
                self.st = St::Can(usize::from(b));
                if b == 0 {
                    self.st = St::Done;
                    return Ok(Some(Frame::Aborted(Vec::new())));
                }
            }
            St::Header(_) | St::Block(_) | St::Can(_) => unreachable!("runs go to on_run"),
        }
        Ok(None)
    }

    /// The states that read a run of bytes: a header, a data block, an abort's reason.
    /// Returns how many bytes of `input` were used, and the frame if one completed.
    fn on_run(&mut self, input: &[u8]) -> Result<(usize, Option<Frame>), Error> {
        match self.st {
            St::Header(n) => {
                let take = (n - self.buf.len()).min(input.len());
                self.buf.extend_from_slice(&input[..take]);
                if self.buf.len() == n {
                    self.parse_header()?;
                    self.buf.clear();
                    self.st = St::Kind;
                }
                Ok((take, None))
            }
            St::Block(n) => {
                let take = n.min(input.len());
                let chunk = &input[..take];
                self.sum = chunk.iter().fold(self.sum, |s, &b| s.wrapping_add(b));
                self.data.extend_from_slice(chunk);
                self.st = if take == n {
                    St::Kind
                } else {
                    St::Block(n - take)
                };
                Ok((take, None))
            }
            St::Can(n) => {
                let take = (n - self.buf.len()).min(input.len());
                self.buf.extend_from_slice(&input[..take]);
                if self.buf.len() < n {
                    return Ok((take, None));
                }
                self.st = St::Done;
                Ok((take, Some(Frame::Aborted(std::mem::take(&mut self.buf)))))
            }
            _ => unreachable!("single bytes go to on_byte"),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    const VECTOR: &[u8] = include_bytes!("../../tests/data/b1-transfer-5000.bin");
    const FILE: &[u8] = include_bytes!("../../tests/data/text_05000.b1.lzh");

    fn decode_chunked(input: &[u8], chunk: usize) -> Result<(usize, Option<Frame>), Error> {
        let mut d = Decoder::new(DEFAULT_MAX_TRANSFER);
        let mut used = 0;
        for c in input.chunks(chunk.max(1)) {
            let (n, f) = d.decode(c)?;
            used += n;
            if f.is_some() {
                return Ok((used, f));
            }
        }
        Ok((used, None))
    }

    #[test]
    fn decodes_xfbbd_vector_in_any_chunks() {
        for chunk in [1, 2, 3, 7, 250, 251, 252, 1000, VECTOR.len()] {
            let (used, f) = decode_chunked(VECTOR, chunk).unwrap();
            assert_eq!(used, VECTOR.len());
            assert_eq!(
                f,
                Some(Frame::Message {
                    title: b"Vector text_05000".to_vec(),
                    offset: 0,
                    data: FILE.to_vec()
                })
            );
        }
    }

    #[test]
    fn b2_offset_is_zero_padded_like_linbpq() {
        let mut out = Vec::new();
        Encoder::new().header(b"T", 42, OffsetPad::Zero, &mut out);
        assert_eq!(out, b"\x01\x09T\x00000042\x00");
        let (_, f) = decode_chunked(b"\x01\x09T\x00000000\x00\x02\x01x\x04\x88", 1).unwrap();
        assert!(matches!(f, Some(Frame::Message { offset: 0, .. })));
    }

    #[test]
    fn encoder_reproduces_xfbbd_bytes() {
        let mut out = Vec::new();
        encode(b"Vector text_05000", 0, FILE, &mut out);
        assert_eq!(out, VECTOR);
    }

    #[test]
    fn unpadded_offset_and_256_blocks() {
        let mut t = vec![SOH, 5, b'T', 0, b'1', b'2', 0, STX, 0];
        t.extend(std::iter::repeat_n(1u8, 256));
        t.extend([EOT, 0]);
        let (_, f) = decode_chunked(&t, 5).unwrap();
        match f {
            Some(Frame::Message {
                title,
                offset,
                data,
            }) => {
                assert_eq!((title.as_slice(), offset, data.len()), (&b"T"[..], 12, 256));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors() {
        let mut bad = VECTOR.to_vec();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(matches!(
            decode_chunked(&bad, 100),
            Err(Error::BlockChecksum { .. })
        ));
        assert!(matches!(
            Decoder::new(100).decode(VECTOR),
            Err(Error::MessageTooLarge { max: 100 })
        ));
        assert!(Decoder::new(100).decode(b"FS +").is_err());
        assert!(Decoder::new(100)
            .decode(&[SOH, 3, b'a', b'b', b'c'])
            .is_err());
        assert!(Decoder::new(100)
            .decode(&[SOH, 4, b'a', 0, b'x', 0])
            .is_err());
        // A frame stops the decoder; what follows is left to the caller.
        let mut two = VECTOR.to_vec();
        two.extend_from_slice(b"FF\r");
        let (used, f) = Decoder::new(DEFAULT_MAX_TRANSFER).decode(&two).unwrap();
        assert!(f.is_some());
        assert_eq!(&two[used..], b"FF\r");
        // Need-more is not an error.
        let (used, f) = Decoder::new(DEFAULT_MAX_TRANSFER)
            .decode(&VECTOR[..100])
            .unwrap();
        assert_eq!((used, f), (100, None));
    }

    #[test]
    fn abort() {
        // protocol_probes_transcript.txt session C: the client sent `18 05 "abcde"`.
        let mut d = Decoder::new(10);
        assert_eq!(
            d.decode(b"\x18\x05abcde").unwrap(),
            (7, Some(Frame::Aborted(b"abcde".to_vec())))
        );
        let mut out = Vec::new();
        emit_abort(b"abcde", &mut out);
        assert_eq!(out, b"\x18\x05abcde");
    }

    proptest! {
        #[test]
        fn round_trip(
            title in proptest::collection::vec(1u8..=255, 0..80),
            offset: u32,
            data in proptest::collection::vec(any::<u8>(), 0..2000),
            chunk in 1usize..600,
        ) {
            let mut out = Vec::new();
            encode(&title, offset, &data, &mut out);
            let (used, f) = decode_chunked(&out, chunk).unwrap();
            prop_assert_eq!(used, out.len());
            prop_assert_eq!(f, Some(Frame::Message { title, offset, data }));
        }

        #[test]
        fn garbage_never_panics(input in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = Decoder::new(300).decode(&input);
        }
    }
}
