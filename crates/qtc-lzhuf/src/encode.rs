//! Encoder: LZSS with a binary search tree over the ring buffer, symbols through the adaptive
//! Huffman model, match positions through the fixed position code.
//!
//! The match search reproduces the reference encoder decision for decision (same tree, same
//! tie-break towards the nearest position, same buffer contents past the end of the input), which
//! is what makes the output byte-identical to FBB's and Winlink's.

use crate::huff::{Model, P_CODE, R, T};
use crate::{F, N, THRESHOLD};

const _: () = assert!(N <= 4096 && F < 1 << 8);

/// "No node" marker of the search tree.
const NIL: usize = N;
/// Tree arrays: nodes `0..N`, `NIL`, and the 256 per-first-byte roots `N + 1 ..= N + 256`.
const TREE: usize = 4096;
const TREE_MASK: usize = TREE - 1;
const _: () = assert!(N + 257 <= TREE);
/// Ring buffer: `N` bytes, the first `F - 1` mirrored after them so a key never wraps. Indexes
/// are masked with `BUF_MASK` and the array has 8 bytes of slack past `BUF`, so 8-byte loads at
/// any masked index are provably in range.
const BUF: usize = 4096;
const BUF_MASK: usize = BUF - 1;
const _: () = assert!(N + F + 8 <= BUF);
/// Where a `kids` word holds the right child: its top bits, so that shifting it down gives an
/// index below `TREE` with no masking (the left child is in the low bits, masked with
/// `TREE_MASK`). One operation each between loading a node's children and loading theirs.
const RIGHT: u32 = 32 - TREE.trailing_zeros();
const _: () = assert!(TREE.is_power_of_two() && RIGHT >= TREE.trailing_zeros());
/// `kids` value of a node without children.
const BOTH_NIL: u32 = (NIL as u32) << RIGHT | NIL as u32;

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

struct Encoder {
    text: [u8; BUF + 8],
    /// Children of node `p`, packed: the left child (smaller strings) in the low bits, the
    /// right one in the high bits (see [`RIGHT`]), so one load fetches both.
    kids: [u32; TREE],
    /// Bytes 1 to 8 of node `p`'s string as a big-endian word. A string in the tree never changes
    /// (the ring is only written F bytes ahead of the newest node), so this is set once on
    /// insertion, and the search loads it together with the children instead of after them.
    /// Sized like `kids` (only nodes `0..N` are used) so that one masked index serves both loads.
    key: [u64; TREE],
    dad: [u16; TREE],
    match_length: usize,
    match_position: usize,
    model: Model<false>,
    bits: BitWriter,
}

#[inline(always)]
fn load64(buf: &[u8; BUF + 8], at: usize) -> u64 {
    let at = at & BUF_MASK;
    let mut w = [0u8; 8];
    w.copy_from_slice(&buf[at..at + 8]);
    u64::from_be_bytes(w)
}

impl Encoder {
    fn new(out: Vec<u8>) -> Box<Self> {
        let mut e = Box::new(Encoder {
            text: [0; BUF + 8],
            kids: [0; TREE],
            key: [0; TREE],
            dad: [0; TREE],
            match_length: 0,
            match_position: 0,
            model: Model::new(),
            bits: BitWriter { out, acc: 0, n: 0 },
        });
        for root in N + 1..=N + 256 {
            e.set_r(root, NIL);
        }
        for x in &mut e.dad[..N] {
            *x = NIL as u16;
        }
        // Ring starts as spaces up to the lookahead; the lookahead region is zero (C statics),
        // which matters for inputs shorter than F.
        e.text[..N - F].fill(b' ');
        e
    }

    #[inline(always)]
    fn kid(&self, i: usize, right: usize) -> usize {
        (self.kids[i & TREE_MASK] >> (RIGHT * (right as u32 & 1))) as usize & TREE_MASK
    }
    #[inline(always)]
    fn set_kid(&mut self, i: usize, right: usize, v: usize) {
        let shift = RIGHT * (right as u32 & 1);
        let slot = &mut self.kids[i & TREE_MASK];
        let mask = TREE_MASK as u32;
        *slot = (*slot & !(mask << shift)) | ((v as u32 & mask) << shift);
    }
    #[inline(always)]
    fn l(&self, i: usize) -> usize {
        self.kid(i, 0)
    }
    #[inline(always)]
    fn r(&self, i: usize) -> usize {
        self.kid(i, 1)
    }
    #[inline(always)]
    fn d(&self, i: usize) -> usize {
        usize::from(self.dad[i & TREE_MASK])
    }
    #[inline(always)]
    fn set_l(&mut self, i: usize, v: usize) {
        self.set_kid(i, 0, v);
    }
    #[inline(always)]
    fn set_r(&mut self, i: usize, v: usize) {
        self.set_kid(i, 1, v);
    }
    #[inline(always)]
    fn set_d(&mut self, i: usize, v: usize) {
        self.dad[i & TREE_MASK] = v as u16;
    }

    /// Compare the key at `r` with the string at `p` from byte 9 on, bytes 0 to 8 being equal.
    /// Returns the first differing offset (`F` if none) and 1 if the key is larger there, else 0.
    #[cold]
    fn compare_tail(&self, r: usize, p: usize) -> (usize, usize) {
        // Big-endian words: the first differing byte is the most significant differing one, so
        // comparing the words as integers orders the strings.
        let mut off = 9;
        while off < F {
            let a = load64(&self.text, r + off);
            let b = load64(&self.text, p + off);
            if a != b {
                let i = off + ((a ^ b).leading_zeros() / 8) as usize;
                return if i >= F {
                    (F, 1)
                } else {
                    (i, usize::from(a > b))
                };
            }
            off += 8;
        }
        (F, 1)
    }

    /// Insert the string at `r` into the tree, leaving the longest (then nearest) match in
    /// `match_length` / `match_position` if `MATCH` (the strings inside a match are inserted
    /// only to keep the tree as the reference has it; their matches are not used). A
    /// full-length match replaces the older node.
    fn insert_node<const MATCH: bool>(&mut self, r: usize) {
        let a = load64(&self.text, r + 1);
        self.key[r & TREE_MASK] = a;
        self.kids[r & TREE_MASK] = BOTH_NIL;
        // Longest match first, then the smallest position: the best candidate has the largest
        // `length << 12 | (4095 - position)`. Lengths up to THRESHOLD may win here too; the
        // caller codes those as a literal either way, as the reference does.
        let mut best = 0usize;
        // Every string in this tree starts with the same byte; the root keeps it on the right.
        let mut p = N + 1 + usize::from(self.text[r & BUF_MASK]);
        let mut dir = 1;
        let mut next = self.kid(p, 1);
        if next != NIL {
            // The search is a chain of dependent loads. Fetch each node's key word and children
            // one level early, for both children, so that choosing a child is a register select.
            let mut b = self.key[next & TREE_MASK];
            let mut kids = self.kids[next & TREE_MASK];
            loop {
                p = next;
                let lk = kids as usize & TREE_MASK;
                let rk = (kids >> RIGHT) as usize;
                let (bl, kl) = (self.key[lk & TREE_MASK], self.kids[lk & TREE_MASK]);
                let (br, kr) = (self.key[rk & TREE_MASK], self.kids[rk & TREE_MASK]);
                let (i, d) = if a != b {
                    (
                        1 + ((a ^ b).leading_zeros() / 8) as usize,
                        usize::from(a > b),
                    )
                } else {
                    self.compare_tail(r, p)
                };
                if MATCH {
                    let pos = (r.wrapping_sub(p) & (N - 1)).wrapping_sub(1);
                    best = best.max((i << 12) | (4095 - pos));
                }
                if i >= F {
                    if MATCH {
                        self.set_best(best);
                    }
                    self.replace_node(p, r);
                    return;
                }
                dir = d;
                // Selects by mask: LLVM turns `if` selects here into branches, which mispredict
                // half the time. Both masks are ready before the loads are (they come from the
                // key compared above), so `(x & n) | (y & m)` puts two steps after the loads on
                // the chain, where `x ^ ((x ^ y) & m)` put three (-3 % encoding time).
                let (m32, n32) = (0u32.wrapping_sub(d as u32), (d as u32).wrapping_sub(1));
                let (m64, n64) = (0u64.wrapping_sub(d as u64), (d as u64).wrapping_sub(1));
                next = ((lk as u32 & n32) | (rk as u32 & m32)) as usize;
                if next == NIL {
                    break;
                }
                b = (bl & n64) | (br & m64);
                kids = (kl & n32) | (kr & m32);
            }
        }
        self.set_kid(p, dir, r);
        self.set_d(r, p);
        if MATCH {
            self.set_best(best);
        }
    }

    /// [`Encoder::insert_node`], keeping the match found only for the `last` string of a match
    /// or literal (the next symbol's).
    #[inline(always)]
    fn insert(&mut self, r: usize, last: bool) {
        if last {
            self.insert_node::<true>(r);
        } else {
            self.insert_node::<false>(r);
        }
    }

    /// Node `r` takes the place of node `p` (same string), which leaves the tree.
    fn replace_node(&mut self, p: usize, r: usize) {
        let dp = self.d(p);
        let kids = self.kids[p & TREE_MASK];
        self.kids[r & TREE_MASK] = kids;
        self.set_d(r, dp);
        self.set_d(kids as usize & TREE_MASK, r);
        self.set_d((kids >> RIGHT) as usize, r);
        let side = usize::from(self.r(dp) == p);
        self.set_kid(dp, side, r);
        self.set_d(p, NIL);
    }

    #[inline(always)]
    fn set_best(&mut self, best: usize) {
        self.match_length = best >> 12;
        self.match_position = 4095 - (best & 4095);
    }

    fn delete_node(&mut self, p: usize) {
        if self.d(p) == NIL {
            return;
        }
        let kp = self.kids[p & TREE_MASK];
        let (lp, rp) = (kp as usize & TREE_MASK, (kp >> RIGHT) as usize);
        let q = if lp == NIL || rp == NIL {
            // At most one child: it takes p's place (NIL ^ x ^ NIL = x).
            lp ^ rp ^ NIL
        } else {
            // Two children: p's in-order predecessor (rightmost of the left subtree) does.
            let mut q = lp;
            if self.r(q) != NIL {
                while self.r(q) != NIL {
                    q = self.r(q);
                }
                let dq = self.d(q);
                let lq = self.l(q);
                self.set_r(dq, lq);
                self.set_d(lq, dq);
                self.set_l(q, lp);
                self.set_d(lp, q);
            }
            self.set_r(q, rp);
            self.set_d(rp, q);
            q
        };
        let dp = self.d(p);
        self.set_d(q, dp);
        let side = usize::from(self.r(dp) == p);
        self.set_kid(dp, side, q);
        self.set_d(p, NIL);
    }

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
        let mut s = 0usize;
        let mut r = N - F;
        let mut len = data.len().min(F);
        self.text[r..r + len].copy_from_slice(&data[..len]);
        let mut next_in = len;
        for i in 1..=F {
            self.insert_node::<false>(r - i);
        }
        self.insert_node::<true>(r);
        loop {
            if self.match_length > len {
                self.match_length = len;
            }
            if self.match_length <= THRESHOLD {
                self.match_length = 1;
                let c = self.text[r & BUF_MASK];
                self.encode_char(usize::from(c));
            } else {
                self.encode_char(255 - THRESHOLD + self.match_length);
                self.encode_position(self.match_position);
            }
            let last = self.match_length;
            let mut i = 0;
            while i < last && next_in < data.len() {
                let c = data[next_in];
                next_in += 1;
                self.delete_node(s);
                self.text[s & BUF_MASK] = c;
                if s < F - 1 {
                    self.text[(s + N) & BUF_MASK] = c;
                }
                s = (s + 1) & (N - 1);
                r = (r + 1) & (N - 1);
                self.insert(r, i + 1 == last);
                i += 1;
            }
            while i < last {
                i += 1;
                self.delete_node(s);
                s = (s + 1) & (N - 1);
                r = (r + 1) & (N - 1);
                len -= 1;
                if len != 0 {
                    self.insert(r, i == last);
                }
            }
            if len == 0 {
                break;
            }
        }
    }
}

/// Append the LZHUF bit stream of `data` to `out`.
pub(crate) fn encode_stream(data: &[u8], out: Vec<u8>) -> Vec<u8> {
    let mut e = Encoder::new(out);
    if data.is_empty() {
        // FBB's encoder has no early exit for empty input: it codes the (zero) byte under the
        // lookahead as one literal before noticing the input is empty. Reproduce it (`c6 00`).
        e.encode_char(0);
    } else {
        e.run(data);
    }
    e.bits.finish()
}
