//! Decoder: walks the adaptive Huffman tree with bits peeked from a 64-bit buffer, copies
//! matches straight out of the output (which doubles as the ring buffer).

use crate::huff::{node_symbol, Model, D_CODE, R, T};
use crate::{Error, F, N, THRESHOLD};

/// Zero bytes the reader may supply past the end of the stream before decoding gives up early.
/// A symbol is at most a few dozen bits, so more padding than this means the stream is cut.
const MAX_PAD_BYTES: usize = 16;

/// MSB-first bit source over a byte slice. `acc` holds `n` valid bits at its top.
struct BitReader<'a> {
    data: &'a [u8],
    /// Next byte to load (counts the zero bytes supplied past the end).
    pos: usize,
    acc: u64,
    n: u32,
}

impl<'a> BitReader<'a> {
    fn new(data: &'a [u8]) -> Self {
        BitReader {
            data,
            pos: 0,
            acc: 0,
            n: 0,
        }
    }

    /// Top up to at least 56 valid bits.
    #[inline(always)]
    fn refill(&mut self) {
        let chunk = self.data.get(self.pos..).and_then(|s| s.first_chunk::<8>());
        if let Some(chunk) = chunk {
            // Load 8 bytes, keep the whole ones that fit; the spare bits below `n` are the
            // following stream bits and get rewritten with the same values next time.
            self.acc |= u64::from_be_bytes(*chunk) >> self.n;
            self.pos += ((63 - self.n) >> 3) as usize;
            self.n |= 56;
        } else {
            self.refill_tail();
        }
    }

    #[cold]
    #[inline(never)]
    fn refill_tail(&mut self) {
        while self.n <= 56 {
            // Past the end the reference decoder reads zero bits; so do we, and
            // `overrun`/`consumed_bits` tell whether any of them were actually used.
            let b = self.data.get(self.pos).copied().unwrap_or(0);
            self.acc |= u64::from(b) << (56 - self.n);
            self.pos += 1;
            self.n += 8;
        }
    }

    #[inline(always)]
    fn consume(&mut self, bits: u32) {
        self.acc <<= bits;
        self.n -= bits;
    }

    /// True when the reader has gone so far past the end that decoding cannot be valid.
    #[inline(always)]
    fn overrun(&self) -> bool {
        self.pos > self.data.len() + MAX_PAD_BYTES
    }

    fn consumed_bits(&self) -> usize {
        self.pos * 8 - self.n as usize
    }
}

/// Code bits decoded from one refill (at least 56 are valid); deeper codes never happen,
/// [`decode_symbol_plain`] handles them anyway.
const MAX_FAST_BITS: u32 = 54;

/// How the decoder updates the model; both ways give the same tree.
///
/// Folding the update into the descent ([`decode_symbol_fused`]) is fastest while the frequency
/// order rarely breaks (text: under one symbol in ten), but each break costs an undo. On a young
/// model (every count equal: the first few hundred symbols of every message) and on
/// incompressible data (literals of near-equal counts) it breaks on most symbols, and
/// remembering the path for a separate update pass ([`decode_symbol_path`]) wins; that mode
/// also leaves the jump table alone, and it is rebuilt when the fused mode takes over. A score
/// tracks the recent break rate: +3 per break, -1 otherwise; it enters path mode above
/// [`ModeScore::ENTER`] and leaves below [`ModeScore::LEAVE`], so that the (rebuilding) switch
/// back is rare.
struct ModeScore {
    score: u32,
    path: bool,
}

impl ModeScore {
    const ENTER: u32 = 32;
    const LEAVE: u32 = 16;
    const MAX: u32 = 64;

    /// A new model breaks the order on nearly every symbol: start in path mode (and stay in
    /// it while the model is young, see `decode_stream`).
    fn new() -> Self {
        ModeScore {
            score: Self::MAX,
            path: true,
        }
    }

    /// Counts one symbol; true when the mode changed.
    #[inline(always)]
    fn record(&mut self, broke: bool) -> bool {
        self.score = if broke {
            (self.score + 3).min(Self::MAX)
        } else {
            self.score.saturating_sub(1)
        };
        let path = if self.path {
            self.score >= Self::LEAVE
        } else {
            self.score > Self::ENTER
        };
        let changed = path != self.path;
        self.path = path;
        changed
    }
}

/// Next symbol from the adaptive Huffman code, the model updated; also whether the update
/// broke the frequency order.
///
/// The descent and the model update are one pass: each slot on the way down is incremented
/// (see [`Model::bump`]); when that breaks the order, the increments are taken back and the
/// reference update runs instead.
#[inline(always)]
fn decode_symbol_fused(model: &mut Model<true>, rd: &mut BitReader<'_>) -> (usize, bool) {
    if model.full() {
        return (decode_symbol_plain(model, rd), false);
    }
    rd.refill();
    let mut bits = rd.acc;
    let mut used = 0;
    let mut broken = model.bump(R, 1);
    let mut c = model.son(R);
    // Two levels per load: the jump entry gives the node two bits down (or the leaf one bit
    // down) and the slot in between. The first steps run whatever the code's length (a leaf
    // node stays put), so short codes cost no branch on their depth.
    let mut step = |c: usize, bits: &mut u64, used: &mut u32, broken: &mut bool| {
        let (next, n, broke) = model.descend_two(c, (*bits >> 62) as usize);
        *broken |= broke;
        *used += n;
        *bits <<= n;
        next
    };
    for _ in 0..UNCONDITIONAL_STEPS {
        c = step(c, &mut bits, &mut used, &mut broken);
    }
    while c < T {
        if used >= MAX_FAST_BITS {
            undo_bumps(model, rd.acc, used);
            return (decode_symbol_plain(model, rd), true);
        }
        c = step(c, &mut bits, &mut used, &mut broken);
    }
    let sym = node_symbol(c);
    if broken {
        undo_bumps(model, rd.acc, used);
        model.update(sym);
    }
    rd.consume(used);
    (sym, broken)
}

/// Descent steps taken before checking for a leaf (one covers codes of up to 2 bits, the
/// commonest match lengths). Measured on the 3.1 MB text on a quiet machine: 1 step 19.2 ms,
/// 2 steps 20.0, 3 steps 20.3, none (the loop alone) 20.4.
const UNCONDITIONAL_STEPS: usize = 1;

/// [`decode_symbol_fused`]'s counterpart for data that breaks the order often: descend one bit
/// at a time remembering the slots (no jump table), then update along them
/// ([`Model::update_along`]).
#[inline(always)]
fn decode_symbol_path(
    model: &mut Model<true>,
    rd: &mut BitReader<'_>,
    path: &mut [u16; 64],
) -> (usize, bool) {
    if model.full() {
        return (decode_symbol_plain(model, rd), false);
    }
    rd.refill();
    let mut bits = rd.acc;
    let mut used = 0;
    let mut c = model.son(R);
    while c < T {
        if used >= MAX_FAST_BITS as usize {
            return (decode_symbol_plain(model, rd), true);
        }
        let slot = c + (bits >> 63) as usize;
        path[used & 63] = slot as u16;
        used += 1;
        bits <<= 1;
        c = model.son(slot);
    }
    rd.consume(used as u32);
    let swapped = model.update_along(path[..used].iter().rev().map(|&s| usize::from(s)));
    (c - T, swapped)
}

/// Take back the increments of a fast descent along the first `used` bits of `bits`. The tree's
/// shape has not changed, so a plain descent visits the same slots.
#[cold]
fn undo_bumps(model: &mut Model<true>, mut bits: u64, used: u32) {
    model.unbump(R);
    let mut c = model.son(R);
    for _ in 0..used {
        let slot = c + (bits >> 63) as usize;
        model.unbump(slot);
        c = model.son(slot);
        bits <<= 1;
    }
}

/// One bit at a time, then the reference update: before a tree rebuild (which must see the
/// counts as they were) and for codes deeper than [`MAX_FAST_BITS`] (the depth of a Huffman
/// tree whose counts stay below 0x8000 is far less, but stay correct rather than assume it).
#[cold]
fn decode_symbol_plain(model: &mut Model<true>, rd: &mut BitReader<'_>) -> usize {
    let mut c = model.son(R);
    while c < T {
        rd.refill();
        c = model.son(c + (rd.acc >> 63) as usize);
        rd.consume(1);
    }
    let sym = c - T;
    model.update(sym);
    sym
}

/// Room past the declared length: a match may run up to F bytes past it (the reference
/// decoder writes them too; they are cut off at the end) and copies go in 8-byte chunks.
const SLACK: usize = F + 16;

/// Decode exactly `declared` bytes from `stream`.
pub(crate) fn decode_stream(stream: &[u8], declared: usize) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; declared + SLACK];
    let mut o = 0;
    let mut model = Model::<true>::new();
    let mut rd = BitReader::new(stream);
    let mut mode = ModeScore::new();
    // The path mode's slots, kept across symbols (zeroing it per symbol cost 2 % of a young
    // model's instructions).
    let mut path = [0u16; 64];
    while o < declared {
        if rd.overrun() {
            return Err(Error::Truncated);
        }
        let (sym, broke) = if mode.path {
            decode_symbol_path(&mut model, &mut rd, &mut path)
        } else {
            decode_symbol_fused(&mut model, &mut rd)
        };
        // A young model stays in path mode: it breaks the order on most symbols anyway, and
        // each switch to the fused mode and back rebuilds the jump table.
        if !model.young() && mode.record(broke) {
            model.set_jumps_live(!mode.path);
        }
        if sym < 256 {
            out[o] = sym as u8;
            o += 1;
            continue;
        }
        if rd.n < 14 {
            rd.refill();
        }
        // Upper 6 bits by the fixed prefix code (at most 8 bits), then 6 raw bits.
        let top = (rd.acc >> 50) as usize;
        let (hi, len) = D_CODE[(top >> 6) & 0xff];
        let lo = (top >> (8 - len)) & 0x3f;
        rd.consume(u32::from(len) + 6);
        if usize::from(hi) >= N >> 6 {
            // The 4096-byte window of the original codec; FBB's 2048-byte one never sends this.
            return Err(Error::Corrupt("match position beyond the 2048-byte window"));
        }
        let dist = ((usize::from(hi) << 6) | lo) + 1;
        let count = sym + THRESHOLD + 1 - 256;
        if dist > o {
            copy_from_initial_window(&mut out, o, dist, count)?;
        } else if dist >= 16 {
            copy_chunks::<16>(&mut out, o - dist, o, count);
        } else if dist >= 8 {
            copy_chunks::<8>(&mut out, o - dist, o, count);
        } else {
            for k in o..o + count {
                out[k] = out[k - dist];
            }
        }
        o += count;
    }
    if rd.consumed_bits() > stream.len() * 8 {
        return Err(Error::Truncated);
    }
    out.truncate(declared);
    Ok(out)
}

/// Copy `count` bytes from `src` to `dst` in chunks of `C` bytes, `dst - src >= C`: a chunk
/// never overlaps its own source, so each reads bytes already final. Writes up to `C - 1`
/// bytes past `dst + count` (the output's slack).
#[inline(always)]
fn copy_chunks<const C: usize>(out: &mut [u8], mut src: usize, mut dst: usize, count: usize) {
    let end = dst + count;
    while dst < end {
        out.copy_within(src..src + C, dst);
        src += C;
        dst += C;
    }
}

/// A match reaching back before the first output byte reads the ring buffer's initial contents:
/// `N - F` spaces right before the start, and before those the never-written (zero) lookahead
/// area, which no encoder refers to.
#[cold]
fn copy_from_initial_window(
    out: &mut [u8],
    o: usize,
    dist: usize,
    count: usize,
) -> Result<(), Error> {
    for k in o..o + count {
        out[k] = if dist <= k {
            out[k - dist]
        } else if dist - k <= N - F {
            b' '
        } else {
            return Err(Error::Corrupt("match reaches before the initial window"));
        };
    }
    Ok(())
}
