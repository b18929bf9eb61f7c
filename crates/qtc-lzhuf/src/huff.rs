//! The adaptive Huffman model shared by the encoder and the decoder, and the fixed prefix code of
//! the upper position bits.
//!
//! Layout (as in the 1989 algorithm): the tree lives in node slots `0..T`, sorted by frequency
//! (`freq` is non-decreasing over the slots: the sibling property), the root in slot `R`. For an
//! internal slot `son` is the first of its two children, which always sit in an even/odd pair of
//! slots (`son`, `son + 1`); for a leaf `son` is `symbol + T`. `prnt` maps a slot to the slot of
//! its parent, and `prnt[symbol + T]` to the slot holding the symbol's leaf.
//!
//! All arrays have [`SLOTS`] entries, a power of two above every index the model uses, and every
//! index is masked with [`SLOT_MASK`]: the compiler then proves each access in range, so the hot
//! loops run without bounds checks (and without `unsafe`).

/// Symbols: 256 literal bytes plus the match lengths `THRESHOLD + 1 ..= F`.
pub(crate) const N_CHAR: usize = 256 - crate::THRESHOLD + crate::F;
/// Number of tree slots (leaves plus internal nodes).
pub(crate) const T: usize = N_CHAR * 2 - 1;
/// Slot of the root.
pub(crate) const R: usize = T - 1;
/// The tree is rebuilt with halved frequencies when the root's frequency reaches this.
pub(crate) const MAX_FREQ: u16 = 0x8000;

/// Size of each model array (>= `T + N_CHAR`).
const SLOTS: usize = 1024;
const SLOT_MASK: usize = SLOTS - 1;
const _: () = assert!(T + N_CHAR <= SLOTS);

/// A [`Model::jump`] entry: the descent node reached (bits 0-10, see [`leaf_node`]), the
/// second slot passed (bits 11-20) and the number of bits used (bits 21-22: 0, 1 or 2).
const JUMP_NODE_MASK: u32 = 0x7ff;
const JUMP_SLOT_SHIFT: u32 = 11;
const JUMP_USED_SHIFT: u32 = 21;
/// Entries: two per slot `0..T` and four per leaf node `T + 2 * symbol`.
const JUMPS: usize = 4096;
const _: () = assert!(2 * (T + 2 * N_CHAR) <= JUMPS && T + 2 * N_CHAR <= JUMP_NODE_MASK as usize);
const JUMP_MASK: usize = JUMPS - 1;

/// See [`Model::young`].
const YOUNG: u16 = 2048;
const _: () = assert!(YOUNG < MAX_FREQ / 2);
/// Entries of [`Model::le`]: a young model's counts are below the root's, below `YOUNG`.
const LE: usize = YOUNG as usize;
const LE_MASK: usize = LE - 1;
const _: () = assert!(LE.is_power_of_two());

/// Adaptive Huffman tree. With `JUMP` (the decoder's model) it also keeps a two-level jump
/// table so that the decoder descends two bits per load.
pub(crate) struct Model<const JUMP: bool> {
    freq: [u16; SLOTS + 1],
    son: [u16; SLOTS],
    prnt: [u16; SLOTS],
    /// For a child pair at even slot `c` and two stream bits `b1 b2`, entry `2 * c + b1b2`
    /// describes the descent from slot `s1 = c + b1`: if `s1` is a leaf, its node (see
    /// [`leaf_node`]), one bit used; otherwise the node `son[s2]`, the slot `s2 = son[s1] + b2`
    /// and two bits used. A leaf node's own four entries lead back to it and use no bits, so a
    /// descent may take more steps than the code has bits. Entry `2 * s1 + b2` depends on
    /// `son[s1]` and on `son[son[s1] + b2]`, so changing `son[x]` invalidates entries `2x`,
    /// `2x + 1` and `2 * prnt[x] + (x & 1)`: [`Model::swap_up`] refreshes exactly those.
    jump: [u32; JUMPS],
    /// While the model is young ([`Model::young`]): `le[v]` is the number of slots `0..T` whose
    /// count is at most `v`. Counts are sorted over the slots, so the last slot of a run of
    /// count `v` is `le[v] - 1`, and an update finds its swap partner with one load instead of
    /// a search: on a fresh model's near-equal counts the search's branches go whichever way
    /// the message's symbols take them, which no branch predictor learns across messages. Not
    /// kept once the model is no longer young (it never gets young again).
    le: [u16; LE],
    /// Whether `jump` is kept up to date. A decoder whose model is still young (most updates
    /// swap nodes) descends without it and rebuilds it once it switches back to jumps.
    jumps_live: bool,
}

impl<const JUMP: bool> Model<JUMP> {
    /// The initial tree: every symbol with frequency 1, leaves paired up in slot order. Built
    /// at compile time: a model starts as a copy of it, which costs less than building it.
    const INITIAL: Self = Self::initial();

    pub(crate) fn new() -> Self {
        if JUMP {
            // The decoder's jump table (16 KB of zeros) is zeroed rather than read from the copy.
            Model {
                jump: [0; JUMPS],
                ..Self::INITIAL
            }
        } else {
            Self::INITIAL
        }
    }

    const fn initial() -> Self {
        let mut m = Model {
            freq: [0; SLOTS + 1],
            son: [0; SLOTS],
            prnt: [0; SLOTS],
            jump: [0; JUMPS],
            le: [0; LE],
            jumps_live: false,
        };
        let mut i = 0;
        while i < N_CHAR {
            m.freq[i] = 1;
            m.son[i] = (i + T) as u16;
            m.prnt[i + T] = i as u16;
            i += 1;
        }
        let mut i = 0;
        let mut j = N_CHAR;
        while j < T {
            m.freq[j] = m.freq[i] + m.freq[i + 1];
            m.son[j] = i as u16;
            m.prnt[i] = j as u16;
            m.prnt[i + 1] = j as u16;
            i += 2;
            j += 1;
        }
        // Sentinels (slot T and every unused slot above it) that stop the search for a swap
        // partner in `update`, also when it looks a few slots ahead.
        let mut j = T;
        while j <= SLOTS {
            m.freq[j] = 0xffff;
            j += 1;
        }
        m.prnt[R] = 0;
        let mut s = 0;
        while s < T {
            let mut v = m.freq[s] as usize;
            while v < LE {
                m.le[v] += 1;
                v += 1;
            }
            s += 1;
        }
        m
    }

    /// Starts or stops keeping the jump table (a decoder's model starts without it).
    pub(crate) fn set_jumps_live(&mut self, live: bool) {
        if JUMP && live && !self.jumps_live {
            self.jumps_live = true;
            self.rebuild_jumps();
        }
        self.jumps_live = live;
    }

    /// One step of the decoder's descent: from node `c` (a child pair, or a leaf node once
    /// there) with the next two stream bits `two`, bump (see [`Model::bump`]) the slots passed.
    /// Returns the node reached, the bits used and whether a bump broke the frequency order.
    #[inline(always)]
    pub(crate) fn descend_two(&mut self, c: usize, two: usize) -> (usize, u32, bool) {
        let e = self.jump[(2 * c + two) & JUMP_MASK];
        let used = e >> JUMP_USED_SHIFT;
        // The first slot is bumped if a bit was used, the second if both were.
        let mut broken = self.bump(c + (two >> 1), ((used + 1) >> 1) as u16);
        broken |= self.bump((e >> JUMP_SLOT_SHIFT) as usize, (used >> 1) as u16);
        ((e & JUMP_NODE_MASK) as usize, used, broken)
    }

    fn jump_entry(&self, s1: usize, b2: usize) -> u32 {
        let c1 = self.son(s1);
        if c1 >= T {
            leaf_node(c1) as u32 | 1 << JUMP_USED_SHIFT
        } else {
            let s2 = c1 + b2;
            leaf_node(self.son(s2)) as u32 | (s2 as u32) << JUMP_SLOT_SHIFT | 2 << JUMP_USED_SHIFT
        }
    }

    #[inline(always)]
    fn refresh_jumps(&mut self, x: usize) {
        if JUMP && self.jumps_live {
            for b2 in 0..2 {
                self.jump[(2 * x + b2) & JUMP_MASK] = self.jump_entry(x, b2);
            }
            let p = self.prnt(x);
            self.jump[(2 * p + (x & 1)) & JUMP_MASK] = self.jump_entry(p, x & 1);
        }
    }

    fn rebuild_jumps(&mut self) {
        if JUMP && self.jumps_live {
            for s1 in 0..T {
                for b2 in 0..2 {
                    self.jump[2 * s1 + b2] = self.jump_entry(s1, b2);
                }
            }
            // A descent that reached a leaf stays there: a leaf node's entries use no bits.
            // (Written here, not in `new`: a 2 KB message's decoder never goes live.)
            for sym in 0..N_CHAR {
                let v = leaf_node(sym + T);
                for two in 0..4 {
                    self.jump[2 * v + two] = v as u32;
                }
            }
        }
    }

    /// `son` of a slot.
    #[inline(always)]
    pub(crate) fn son(&self, slot: usize) -> usize {
        usize::from(self.son[slot & SLOT_MASK])
    }

    /// `prnt` of a slot (or of `symbol + T`).
    #[inline(always)]
    pub(crate) fn prnt(&self, slot: usize) -> usize {
        usize::from(self.prnt[slot & SLOT_MASK])
    }

    #[inline(always)]
    fn freq(&self, slot: usize) -> u16 {
        self.freq[slot & SLOT_MASK]
    }

    /// Whether the model is still young: fewer than about `YOUNG` symbols counted since it
    /// started from all counts equal (the root's count is the total; a tree rebuild halves
    /// counts of at least `MAX_FREQ`, so a model never gets young again).
    #[inline(always)]
    pub(crate) fn young(&self) -> bool {
        self.freq(R) < YOUNG
    }

    /// Count one more occurrence of `sym` and restore the sibling property.
    pub(crate) fn update(&mut self, sym: usize) {
        if self.young() {
            self.climb_young(self.prnt(sym + T));
            return;
        }
        if self.freq(R) == MAX_FREQ {
            self.reconst();
        }
        self.climb(self.prnt(sym + T));
    }

    /// True when the next update rebuilds the tree (callers then use [`Model::update`]).
    #[inline(always)]
    pub(crate) fn full(&self) -> bool {
        self.freq(R) == MAX_FREQ
    }

    /// Fast-path update, one slot at a time: add `inc` (0 or 1) to slot `s` and say whether
    /// that broke the frequency order. Applied to the root and to every slot on a symbol's path,
    /// in any order, this equals [`Model::update`] as long as no call returns true: an update
    /// only swaps where the order breaks, a node is never out of order with one of its own
    /// ancestors, and its descendants sit in lower slots, so no check sees another one's
    /// increment. Text breaks the order on under one symbol in ten; then the caller takes the
    /// increments back with [`Model::unbump`] and calls [`Model::update`]. (With `inc == 0`
    /// nothing changes, and true comes back only where an earlier bump already broke the order;
    /// `s` is taken modulo the slots, so the decoder's no-op steps may name any slot.)
    #[inline(always)]
    pub(crate) fn bump(&mut self, s: usize, inc: u16) -> bool {
        let s = s & SLOT_MASK;
        let k = self.freq[s] + inc;
        self.freq[s] = k;
        k > self.freq[s + 1]
    }

    /// Undo a [`Model::bump`] by one.
    #[inline(always)]
    pub(crate) fn unbump(&mut self, s: usize) {
        self.freq[s & SLOT_MASK] -= 1;
    }

    /// [`Model::update`] for a symbol whose slots the caller already knows: `slots` yields the
    /// leaf's slot and then each ancestor's up to, not including, the root (the path just used
    /// to code or decode the symbol). Until the first swap the tree's shape does not change, so these
    /// are the slots the `prnt` chain would visit (a young model climbs by `prnt` from the
    /// leaf's slot, see [`Model::le`]). Returns whether a swap happened. The caller has checked
    /// [`Model::full`].
    #[inline(always)]
    pub(crate) fn update_along(&mut self, mut slots: impl Iterator<Item = usize>) -> bool {
        if self.young() {
            return slots.next().is_some_and(|leaf| self.climb_young(leaf));
        }
        for c in slots {
            let k = self.freq(c) + 1;
            self.freq[c & SLOT_MASK] = k;
            if k > self.freq(c + 1) {
                let l = self.swap_up(c, k);
                self.climb(self.prnt(l));
                return true;
            }
        }
        self.freq[R & SLOT_MASK] += 1;
        false
    }

    /// Increment slot `c` and every ancestor, swapping where the order breaks.
    #[inline(always)]
    fn climb(&mut self, mut c: usize) {
        loop {
            let k = self.freq(c) + 1;
            self.freq[c & SLOT_MASK] = k;
            if k > self.freq(c + 1) {
                c = self.swap_up(c, k);
            }
            c = self.prnt(c);
            if c == 0 {
                break;
            }
        }
    }

    /// [`Model::climb`] for a young model, the swap partner read from `le`. Returns whether a
    /// swap happened.
    #[inline(always)]
    fn climb_young(&mut self, mut c: usize) -> bool {
        let mut swapped = false;
        loop {
            let old = self.freq(c);
            let k = old + 1;
            self.freq[c & SLOT_MASK] = k;
            // Slot `c` no longer counts `old`. The slots that still count at most `old` are
            // those below `c` and the run `c + 1..=l` of `old` above it: `l` of them.
            let le = &mut self.le[usize::from(old) & LE_MASK];
            *le -= 1;
            let l = usize::from(*le);
            if k > self.freq(c + 1) {
                c = self.swap_with(c, l, k);
                swapped = true;
            }
            c = self.prnt(c);
            if c == 0 {
                return swapped;
            }
        }
    }

    /// Slot `c` was just incremented to `k` and now exceeds slot `c + 1`: exchange its node with
    /// the last node of the run of `k - 1` counts above it. Returns the node's new slot.
    #[inline(always)]
    fn swap_up(&mut self, c: usize, k: u16) -> usize {
        // Slots c+1..=l all hold k-1 (freq is sorted): move the node to the last of them.
        let l = self.run_end(c + 1, k);
        self.swap_with(c, l, k)
    }

    /// [`Model::swap_up`] with the partner `l` found.
    #[inline(always)]
    fn swap_with(&mut self, c: usize, l: usize, k: u16) -> usize {
        self.freq[c & SLOT_MASK] = self.freq(l);
        self.freq[l & SLOT_MASK] = k;

        let i = self.son(c);
        self.prnt[i & SLOT_MASK] = l as u16;
        if i < T {
            self.prnt[(i + 1) & SLOT_MASK] = l as u16;
        }
        let j = self.son(l);
        self.son[l & SLOT_MASK] = i as u16;
        self.prnt[j & SLOT_MASK] = c as u16;
        if j < T {
            self.prnt[(j + 1) & SLOT_MASK] = c as u16;
        }
        self.son[c & SLOT_MASK] = j as u16;
        self.refresh_jumps(c);
        self.refresh_jumps(l);
        l
    }

    /// Last slot `l >= from` with `freq[l] < k`, given `freq[from] < k` and freq sorted
    /// (the `freq[T]` sentinel ends every run).
    ///
    /// Galloping, then bisecting: runs are short once a model is no longer young (young ones
    /// use [`Model::le`]), and the first probe or two settle it; after a tree rebuild halves
    /// the counts a run can be long again.
    #[inline(always)]
    fn run_end(&self, from: usize, k: u16) -> usize {
        // Invariant: freq[lo] < k and freq[lo + step] >= k once the gallop stops.
        let mut lo = from;
        let mut step = 1;
        while k > self.freq(lo + step) {
            lo += step;
            step *= 2;
        }
        // The answer is in lo..lo + step; bisect.
        while step > 1 {
            step /= 2;
            if k > self.freq(lo + step) {
                lo += step;
            }
        }
        lo
    }

    /// Rebuild the tree from the leaves with their frequencies halved (rounded up).
    fn reconst(&mut self) {
        // Collect the leaves, in slot order, into the first N_CHAR slots.
        let mut j = 0;
        for i in 0..T {
            if self.son(i) >= T {
                self.freq[j] = self.freq[i].div_ceil(2);
                self.son[j] = self.son[i];
                j += 1;
            }
        }
        // Join the two lowest free nodes, inserting the parent so that freq stays sorted
        // (after any equal counts, as the reference's downward scan does).
        let mut i = 0;
        for j in N_CHAR..T {
            let f = self.freq[i] + self.freq[i + 1];
            let k = self.freq[..j].partition_point(|&x| x <= f);
            self.freq.copy_within(k..j, k + 1);
            self.freq[k] = f;
            self.son.copy_within(k..j, k + 1);
            self.son[k] = i as u16;
            i += 2;
        }
        for i in 0..T {
            let k = self.son(i);
            self.prnt[k & SLOT_MASK] = i as u16;
            if k < T {
                self.prnt[(k + 1) & SLOT_MASK] = i as u16;
            }
        }
        self.rebuild_jumps();
    }
}

/// The decoder's descent node for a `son` value: an internal child pair as it is, a leaf
/// (`symbol + T`) as `T + 2 * symbol`, spaced so that each leaf has its own jump entries.
fn leaf_node(son: usize) -> usize {
    if son >= T {
        2 * son - T
    } else {
        son
    }
}

/// The symbol of a leaf node (`node >= T`) of the decoder's descent.
#[inline(always)]
pub(crate) fn node_symbol(node: usize) -> usize {
    (node - T) / 2
}

/// Code lengths of the upper 6 position bits: 1 code of 3 bits, 3 of 4, 8 of 5, 12 of 6,
/// 24 of 7 and 16 of 8 (a complete prefix code, assigned canonically in this order).
const P_LEN_COUNTS: [(u8, usize); 6] = [(3, 1), (4, 3), (5, 8), (6, 12), (7, 24), (8, 16)];

/// Encoder table for the upper position bits: `(code, length)`, code right-aligned.
pub(crate) const P_CODE: [(u8, u8); 64] = build_p_code();

/// Decoder table indexed by the next 8 stream bits: `(upper bits, code length)`.
pub(crate) const D_CODE: [(u8, u8); 256] = build_d_code();

const fn build_p_code() -> [(u8, u8); 64] {
    let mut t = [(0u8, 0u8); 64];
    let mut code: u32 = 0;
    let mut prev_len: u8 = 3;
    let mut sym = 0;
    let mut g = 0;
    while g < P_LEN_COUNTS.len() {
        let (len, count) = P_LEN_COUNTS[g];
        code <<= len - prev_len;
        prev_len = len;
        let mut n = 0;
        while n < count {
            t[sym] = (code as u8, len);
            code += 1;
            sym += 1;
            n += 1;
        }
        g += 1;
    }
    t
}

const fn build_d_code() -> [(u8, u8); 256] {
    let p = build_p_code();
    let mut t = [(0u8, 0u8); 256];
    let mut sym = 0;
    while sym < 64 {
        let (code, len) = p[sym];
        let first = (code as usize) << (8 - len);
        let span = 1usize << (8 - len);
        let mut b = first;
        while b < first + span {
            t[b] = (sym as u8, len);
            b += 1;
        }
        sym += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_tables_are_the_published_ones() {
        // Spot checks against the 1989 tables: p_code is listed left-aligned in 8 bits there.
        let left = |s: usize| P_CODE[s].0 << (8 - P_CODE[s].1);
        assert_eq!((left(0), P_CODE[0].1), (0x00, 3));
        assert_eq!((left(1), P_CODE[1].1), (0x20, 4));
        assert_eq!((left(4), P_CODE[4].1), (0x50, 5));
        assert_eq!((left(12), P_CODE[12].1), (0x90, 6));
        assert_eq!((left(23), P_CODE[23].1), (0xBC, 6));
        assert_eq!((left(24), P_CODE[24].1), (0xC0, 7));
        assert_eq!((left(47), P_CODE[47].1), (0xEE, 7));
        assert_eq!((left(48), P_CODE[48].1), (0xF0, 8));
        assert_eq!((left(63), P_CODE[63].1), (0xFF, 8));
        assert_eq!(D_CODE[0x1f], (0, 3));
        assert_eq!(D_CODE[0xc0], (0x18, 7));
        assert_eq!(D_CODE[0xff], (0x3f, 8));
    }

    /// Symbols from a linear congruential generator: every `one_in`-th any symbol, the others
    /// among the first `common`, so that some counts grow fast.
    fn skewed_symbols(seed: u32, one_in: u32, common: usize) -> impl Iterator<Item = usize> {
        let mut x = seed;
        (0u32..).map(move |n| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let r = (x >> 16) as usize;
            if n % one_in == 0 {
                r % N_CHAR
            } else {
                r % common
            }
        })
    }

    /// A young model's `le` against a count of the slots.
    fn check_le<const JUMP: bool>(m: &Model<JUMP>) {
        if m.young() {
            for v in 0..LE {
                let at_most = (0..T).filter(|&s| usize::from(m.freq[s]) <= v).count();
                assert_eq!(usize::from(m.le[v]), at_most, "le[{v}]");
            }
        }
    }

    fn check_invariants(m: &Model<true>) {
        check_le(m);
        for s in 0..T - 1 {
            assert!(m.freq[s] <= m.freq[s + 1], "freq sorted at {s}");
        }
        for s in 0..T {
            let k = m.son(s);
            if k >= T {
                assert_eq!(m.prnt(k), s);
            } else {
                assert_eq!(k % 2, 0);
                assert_eq!(m.prnt(k), s);
                assert_eq!(m.prnt(k + 1), s);
                assert_eq!(m.freq[s], m.freq[k] + m.freq[k + 1]);
            }
            for b2 in 0..2 {
                if m.jumps_live {
                    assert_eq!(m.jump[2 * s + b2], m.jump_entry(s, b2), "jump {s} {b2}");
                }
            }
        }
        for sym in 0..N_CHAR {
            let v = leaf_node(sym + T);
            assert_eq!(node_symbol(v), sym);
            for two in 0..4 {
                if m.jumps_live {
                    assert_eq!(m.jump[2 * v + two], v as u32, "leaf {sym} stays");
                }
            }
        }
    }

    #[test]
    fn update_and_reconst_keep_the_sibling_property() {
        let mut m = Model::<true>::new();
        m.set_jumps_live(true);
        check_invariants(&m);
        for (n, sym) in skewed_symbols(1, 3, 20).take(100_000).enumerate() {
            m.update(sym);
            if n % 9973 == 0 {
                check_invariants(&m);
            }
        }
        check_invariants(&m);
    }

    #[test]
    fn a_young_model_updates_as_the_reference_climb_does() {
        // `update` on a young model finds swap partners through `le`; the reference climb
        // searches for them. Both must leave the same tree after every symbol.
        let (mut young, mut reference) = (Model::<false>::new(), Model::<false>::new());
        let mut symbols = skewed_symbols(7, 4, 40);
        let mut n = 0;
        while young.young() {
            let sym = symbols.next().unwrap_or(0);
            young.update(sym);
            reference.climb(reference.prnt(sym + T));
            assert_eq!(young.freq, reference.freq, "freq after symbol {n}");
            assert_eq!(young.son, reference.son, "son after symbol {n}");
            assert_eq!(
                young.prnt[..T + N_CHAR],
                reference.prnt[..T + N_CHAR],
                "prnt after {n}"
            );
            if n % 97 == 0 {
                check_le(&young);
            }
            n += 1;
        }
        assert!(n > 1000, "young for {n} symbols");
    }
}
