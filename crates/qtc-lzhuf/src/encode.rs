//! Encoder: a greedy LZSS parse with hash chains, symbols through the adaptive Huffman model,
//! match positions through the fixed position code.
//!
//! The parse is the reference encoder's: at each symbol the longest match (compared over at
//! most `F` bytes, clamped to the input left) among the strings the reference's binary tree
//! holds, a literal if that is `THRESHOLD` bytes or less. So the adaptive model sees the same
//! symbol sequence as FBB's. The position differs where the reference's tree search misses the
//! nearest of several equally long matches: ours is always the nearest, and a nearer position
//! never has a longer code, so the output is never longer than FBB's (on text about 1.7 %
//! shorter) and any LZHUF decoder reads it. `tests/reference` checks this against the tree
//! encoder and a brute-force parse.
//!
//! Unlike the tree, which inserts every position and searches as it does, the chains insert
//! every position in O(1) and search only where a symbol starts.

use crate::huff::{Model, P_CODE, R, T};
use crate::{F, N, THRESHOLD};

/// The farthest match: the reference's tree holds the strings 1 to `N - F` bytes behind the
/// coder (it deletes each one as the byte `F` ahead of the coder overwrites its ring slot).
const MAX_DIST: usize = N - F;
/// Chain heads, by a hash of a position's first 3 bytes (a match needs at least 3).
const HASH_BITS: u32 = 12;
/// Chain link of a position whose predecessor is out of reach (any value above `MAX_DIST`).
const FAR: u16 = u16::MAX;
const _: () = assert!(N.is_power_of_two() && MAX_DIST < FAR as usize && THRESHOLD == 2);
/// Bytes after the input in the working copy, so that 8-byte loads never leave it.
const PAD: usize = 8;

/// Bit sink, MSB first.
struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    /// Pending bits, in the low end of `acc`; always < 32 between calls.
    n: u32,
}

impl BitWriter {
    #[inline(always)]
    fn put(&mut self, code: u32, len: u32) {
        debug_assert!(len <= 32);
        self.acc = (self.acc << len) | u64::from(code);
        self.n += len;
        if self.n >= 32 {
            self.n -= 32;
            let word = (self.acc >> self.n) as u32;
            self.out.extend_from_slice(&word.to_be_bytes());
        }
    }

    /// Flush, padding the last byte with zero bits.
    fn finish(mut self) -> Vec<u8> {
        while self.n >= 8 {
            self.n -= 8;
            self.out.push((self.acc >> self.n) as u8);
        }
        if self.n > 0 {
            self.out.push((self.acc << (8 - self.n)) as u8);
        }
        self.out
    }
}

/// Hash chains over a linear copy of the input: `head` has the newest position of each hash,
/// `prev` the distance from each position in the window to the previous one of the same hash.
struct Chains {
    /// Newest position of each hash plus `N` (0: none, which is out of reach of any position).
    head: [usize; 1 << HASH_BITS],
    prev: [u16; N],
}

#[inline(always)]
fn load64(buf: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(w)
}

/// Chain of the 3 bytes at `at` (multiplicative hashing: the top bits of the product).
#[inline(always)]
fn hash(buf: &[u8], at: usize) -> usize {
    let w = u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], 0]);
    (w.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
}

/// Length of the common prefix of the strings at `a` and `r`, up to `limit`. Both are followed by
/// at least `PAD` bytes, and `r + limit` is at most the input's end.
#[inline(always)]
fn common_prefix(buf: &[u8], a: usize, r: usize, limit: usize) -> usize {
    let mut k = 0;
    while k < limit {
        let x = load64(buf, a + k) ^ load64(buf, r + k);
        if x != 0 {
            return (k + (x.trailing_zeros() / 8) as usize).min(limit);
        }
        k += 8;
    }
    limit
}

impl Chains {
    fn new() -> Box<Self> {
        Box::new(Chains {
            head: [0; 1 << HASH_BITS],
            prev: [FAR; N],
        })
    }

    #[inline(always)]
    fn insert(&mut self, buf: &[u8], at: usize) {
        let h = hash(buf, at);
        let key = at + N;
        self.prev[at & (N - 1)] = (key - self.head[h]).min(usize::from(FAR)) as u16;
        self.head[h] = key;
    }

    /// The longest match of the string at `r` (up to `limit` bytes, `THRESHOLD < limit <= F`)
    /// within `MAX_DIST` behind it, and the smallest distance at which it occurs; (`THRESHOLD`,
    /// 0) if there is none longer.
    ///
    /// The walk goes from the nearest position to the farthest and stops at a match of `limit`
    /// bytes. At worst (every candidate passes the one-byte check and matches nearly `limit`
    /// bytes) it compares up to `F` bytes at each of `MAX_DIST` positions per symbol: N × F, the
    /// order of the reference tree's degenerate case.
    fn longest(&self, buf: &[u8], r: usize, limit: usize) -> (usize, usize) {
        let (mut best, mut best_dist) = (THRESHOLD, 0);
        let mut d = r + N - self.head[hash(buf, r)];
        while d <= MAX_DIST {
            let p = r - d;
            // Only a candidate longer than the best so far counts: it must match the byte there.
            if buf[p + best] == buf[r + best] {
                let len = common_prefix(buf, p, r, limit);
                if len > best {
                    (best, best_dist) = (len, d);
                    if len == limit {
                        break;
                    }
                }
            }
            d += usize::from(self.prev[p & (N - 1)]);
        }
        (best, best_dist)
    }
}

struct Encoder {
    model: Model<false>,
    bits: BitWriter,
}

impl Encoder {
    fn encode_char(&mut self, sym: usize) {
        if self.model.full() {
            self.encode_char_plain(sym);
            return;
        }
        // Leaf-to-root walk; the bit of each slot is its parity (odd = second child). The slots
        // are kept for the model update that follows.
        let mut path = [0u16; 32];
        let mut k = self.model.prnt(sym + T);
        let mut code: u32 = 0;
        let mut len: usize = 0;
        loop {
            if len == 32 {
                self.encode_char_plain(sym);
                return;
            }
            path[len] = k as u16;
            code |= (k as u32 & 1) << len;
            len += 1;
            k = self.model.prnt(k);
            if k == R {
                break;
            }
        }
        self.bits.put(code, len as u32);
        self.model
            .update_along(path[..len].iter().map(|&s| usize::from(s)));
    }

    /// Code the symbol, then the reference update: before a tree rebuild (which must see the
    /// counts as they were) and for codes longer than 32 bits, which cannot occur with
    /// MAX_FREQ = 0x8000 (a Huffman tree's depth is logarithmic in its total weight) but stay
    /// correct rather than assume it.
    #[cold]
    fn encode_char_plain(&mut self, sym: usize) {
        let mut path = Vec::new();
        let mut k = self.model.prnt(sym + T);
        loop {
            path.push((k & 1) as u32);
            k = self.model.prnt(k);
            if k == R {
                break;
            }
        }
        for &b in path.iter().rev() {
            self.bits.put(b, 1);
        }
        self.model.update(sym);
    }

    fn encode_position(&mut self, pos: usize) {
        let (code, len) = P_CODE[(pos >> 6) & 63];
        self.bits.put(
            (u32::from(code) << 6) | (pos as u32 & 0x3f),
            u32::from(len) + 6,
        );
    }

    fn run(&mut self, data: &[u8]) {
        // The reference's ring starts as spaces, but its tree holds only the last F of them
        // (virtual positions -F..-1); positions past the input are never compared (a match is
        // clamped to the input left, where the reference compares stale bytes and then clamps).
        let end = F + data.len();
        let mut buf = Vec::with_capacity(end + PAD);
        buf.resize(F, b' ');
        buf.extend_from_slice(data);
        buf.resize(end + PAD, 0);
        let mut chains = Chains::new();
        for at in 0..F {
            chains.insert(&buf, at);
        }
        let mut r = F;
        while r < end {
            let limit = F.min(end - r);
            let (len, dist) = if limit > THRESHOLD {
                chains.longest(&buf, r, limit)
            } else {
                (THRESHOLD, 0)
            };
            let step = if len > THRESHOLD {
                self.encode_char(255 - THRESHOLD + len);
                self.encode_position(dist - 1);
                len
            } else {
                self.encode_char(usize::from(buf[r]));
                1
            };
            for at in r..r + step {
                chains.insert(&buf, at);
            }
            r += step;
        }
    }
}

/// Append the LZHUF bit stream of `data` to `out`.
pub(crate) fn encode_stream(data: &[u8], out: Vec<u8>) -> Vec<u8> {
    let mut e = Encoder {
        model: Model::new(),
        bits: BitWriter { out, acc: 0, n: 0 },
    };
    if data.is_empty() {
        // FBB's encoder has no early exit for empty input: it codes the (zero) byte under the
        // lookahead as one literal before noticing the input is empty. Reproduce it (`c6 00`).
        e.encode_char(0);
    } else {
        e.run(data);
    }
    e.bits.finish()
}
