//! A deliberately naive LZHUF (plain arrays, byte-at-a-time compares, bit-at-a-time I/O, no
//! shortcuts) used as an oracle for the optimised codec on inputs the vectors do not cover:
//! long inputs (tree rebuilds, ring wrap-around), runs, binary data. Two parses: the 1989
//! encoder's binary tree, which FBB's output follows, and a brute-force greedy one, which ours
//! does; the same coding turns either into a stream.
#![allow(dead_code)]

use qtc_lzhuf::{compress, compress_with_crc, decompress, decompress_with_crc, Limits};

const N: usize = 2048;
const F: usize = 60;
const THRESHOLD: usize = 2;
const NIL: usize = N;
const N_CHAR: usize = 256 - THRESHOLD + F;
const T: usize = N_CHAR * 2 - 1;
const R: usize = T - 1;
const MAX_FREQ: u32 = 0x8000;

struct Huff {
    freq: Vec<u32>,
    son: Vec<usize>,
    prnt: Vec<usize>,
}

impl Huff {
    fn new() -> Self {
        let mut h = Huff {
            freq: vec![0; T + 1],
            son: vec![0; T],
            prnt: vec![0; T + N_CHAR],
        };
        for i in 0..N_CHAR {
            h.freq[i] = 1;
            h.son[i] = i + T;
            h.prnt[i + T] = i;
        }
        let (mut i, mut j) = (0, N_CHAR);
        while j <= R {
            h.freq[j] = h.freq[i] + h.freq[i + 1];
            h.son[j] = i;
            h.prnt[i] = j;
            h.prnt[i + 1] = j;
            i += 2;
            j += 1;
        }
        h.freq[T] = 0xffff;
        h.prnt[R] = 0;
        h
    }

    fn reconst(&mut self) {
        let mut j = 0;
        for i in 0..T {
            if self.son[i] >= T {
                self.freq[j] = self.freq[i].div_ceil(2);
                self.son[j] = self.son[i];
                j += 1;
            }
        }
        let mut i = 0;
        for j in N_CHAR..T {
            let f = self.freq[i] + self.freq[i + 1];
            let mut k = j - 1;
            while f < self.freq[k] {
                k -= 1;
            }
            k += 1;
            // Shift slots k..j up by one, one element at a time.
            let mut m = j;
            while m > k {
                self.freq[m] = self.freq[m - 1];
                self.son[m] = self.son[m - 1];
                m -= 1;
            }
            self.freq[k] = f;
            self.son[k] = i;
            i += 2;
        }
        for i in 0..T {
            let k = self.son[i];
            if k >= T {
                self.prnt[k] = i;
            } else {
                self.prnt[k] = i;
                self.prnt[k + 1] = i;
            }
        }
    }

    fn update(&mut self, sym: usize) {
        if self.freq[R] == MAX_FREQ {
            self.reconst();
        }
        let mut c = self.prnt[sym + T];
        loop {
            self.freq[c] += 1;
            let k = self.freq[c];
            if k > self.freq[c + 1] {
                let mut l = c + 1;
                while k > self.freq[l + 1] {
                    l += 1;
                }
                self.freq[c] = self.freq[l];
                self.freq[l] = k;
                let i = self.son[c];
                self.prnt[i] = l;
                if i < T {
                    self.prnt[i + 1] = l;
                }
                let j = self.son[l];
                self.son[l] = i;
                self.prnt[j] = c;
                if j < T {
                    self.prnt[j + 1] = c;
                }
                self.son[c] = j;
                c = l;
            }
            c = self.prnt[c];
            if c == 0 {
                break;
            }
        }
    }
}

fn p_table() -> Vec<(u32, u32)> {
    // (code, length) for the upper position bits, canonical from the length counts.
    let mut t = Vec::new();
    let mut code = 0u32;
    let mut prev = 3;
    for (len, count) in [(3u32, 1), (4, 3), (5, 8), (6, 12), (7, 24), (8, 16)] {
        code <<= len - prev;
        prev = len;
        for _ in 0..count {
            t.push((code, len));
            code += 1;
        }
    }
    t
}

struct Bits {
    out: Vec<u8>,
    cur: u8,
    n: u32,
}

impl Bits {
    fn bit(&mut self, b: u32) {
        self.cur = (self.cur << 1) | (b as u8 & 1);
        self.n += 1;
        if self.n == 8 {
            self.out.push(self.cur);
            self.cur = 0;
            self.n = 0;
        }
    }
    fn bits(&mut self, v: u32, len: u32) {
        for i in (0..len).rev() {
            self.bit(v >> i);
        }
    }
}

struct Enc {
    text: Vec<u8>,
    lson: Vec<usize>,
    rson: Vec<usize>,
    dad: Vec<usize>,
    ml: usize,
    mp: usize,
}

impl Enc {
    fn insert(&mut self, r: usize) {
        let mut cmp: i32 = 1;
        let mut p = N + 1 + self.text[r] as usize;
        self.rson[r] = NIL;
        self.lson[r] = NIL;
        self.ml = 0;
        loop {
            if cmp >= 0 {
                if self.rson[p] != NIL {
                    p = self.rson[p];
                } else {
                    self.rson[p] = r;
                    self.dad[r] = p;
                    return;
                }
            } else if self.lson[p] != NIL {
                p = self.lson[p];
            } else {
                self.lson[p] = r;
                self.dad[r] = p;
                return;
            }
            let mut i = 1;
            while i < F {
                cmp = self.text[r + i] as i32 - self.text[p + i] as i32;
                if cmp != 0 {
                    break;
                }
                i += 1;
            }
            if i > THRESHOLD {
                let c = ((r + N - p) % N) - 1;
                if i > self.ml {
                    self.mp = c;
                    self.ml = i;
                    if i >= F {
                        break;
                    }
                }
                if i == self.ml && c < self.mp {
                    self.mp = c;
                }
            }
        }
        self.dad[r] = self.dad[p];
        self.lson[r] = self.lson[p];
        self.rson[r] = self.rson[p];
        let (l, rr) = (self.lson[p], self.rson[p]);
        self.dad[l] = r;
        self.dad[rr] = r;
        let d = self.dad[p];
        if self.rson[d] == p {
            self.rson[d] = r;
        } else {
            self.lson[d] = r;
        }
        self.dad[p] = NIL;
    }

    fn delete(&mut self, p: usize) {
        if self.dad[p] == NIL {
            return;
        }
        let q = if self.rson[p] == NIL {
            self.lson[p]
        } else if self.lson[p] == NIL {
            self.rson[p]
        } else {
            let mut q = self.lson[p];
            if self.rson[q] != NIL {
                while self.rson[q] != NIL {
                    q = self.rson[q];
                }
                let dq = self.dad[q];
                self.rson[dq] = self.lson[q];
                let lq = self.lson[q];
                self.dad[lq] = dq;
                self.lson[q] = self.lson[p];
                let lp = self.lson[p];
                self.dad[lp] = q;
            }
            self.rson[q] = self.rson[p];
            let rp = self.rson[p];
            self.dad[rp] = q;
            q
        };
        self.dad[q] = self.dad[p];
        let d = self.dad[p];
        if self.rson[d] == p {
            self.rson[d] = q;
        } else {
            self.lson[d] = q;
        }
        self.dad[p] = NIL;
    }
}

fn put_symbol(h: &mut Huff, bits: &mut Bits, sym: usize) {
    let mut path = Vec::new();
    let mut k = h.prnt[sym + T];
    loop {
        path.push((k & 1) as u32);
        k = h.prnt[k];
        if k == R {
            break;
        }
    }
    for b in path.into_iter().rev() {
        bits.bit(b);
    }
    h.update(sym);
}

/// One symbol of a parse: a literal, or a match of `len` bytes at `pos` (its distance minus 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sym {
    Literal(u8),
    Match { len: usize, pos: usize },
}

impl Sym {
    /// Input bytes the symbol stands for.
    pub fn len(self) -> usize {
        match self {
            Sym::Literal(_) => 1,
            Sym::Match { len, .. } => len,
        }
    }
}

/// The 1989 encoder's parse of `input`: its binary tree over the ring buffer, decision for
/// decision (FBB's and Winlink's encoders give exactly this).
pub fn tree_parse(input: &[u8]) -> Vec<Sym> {
    let mut syms = Vec::new();
    let mut e = Enc {
        text: vec![0; N + F - 1],
        lson: vec![0; N + 1],
        rson: vec![NIL; N + 257],
        dad: vec![NIL; N + 1],
        ml: 0,
        mp: 0,
    };
    for b in &mut e.text[..N - F] {
        *b = b' ';
    }
    let mut s = 0usize;
    let mut r = N - F;
    let mut next = 0;
    let mut len: isize = 0;
    while (len as usize) < F && next < input.len() {
        e.text[r + len as usize] = input[next];
        next += 1;
        len += 1;
    }
    for i in 1..=F {
        e.insert(r - i);
    }
    e.insert(r);
    loop {
        if e.ml as isize > len {
            e.ml = len.max(0) as usize;
        }
        if e.ml <= THRESHOLD {
            e.ml = 1;
            syms.push(Sym::Literal(e.text[r]));
        } else {
            syms.push(Sym::Match {
                len: e.ml,
                pos: e.mp,
            });
        }
        let last = e.ml;
        let mut i = 0;
        while i < last && next < input.len() {
            let c = input[next];
            next += 1;
            e.delete(s);
            e.text[s] = c;
            if s < F - 1 {
                e.text[s + N] = c;
            }
            s = (s + 1) % N;
            r = (r + 1) % N;
            e.insert(r);
            i += 1;
        }
        while i < last {
            i += 1;
            e.delete(s);
            s = (s + 1) % N;
            r = (r + 1) % N;
            len -= 1;
            if len != 0 {
                e.insert(r);
            }
        }
        if len <= 0 {
            break;
        }
    }
    syms
}

/// The greedy parse by brute force: at each symbol the longest match (at most `F` bytes, and no
/// more than the input left) against every string 1 to `N - F` bytes back, where the input is
/// preceded by `F` spaces, the nearest of equally long ones; a literal if it is `THRESHOLD` bytes
/// or less. Like FBB, empty input gives one literal zero.
pub fn greedy_parse(input: &[u8]) -> Vec<Sym> {
    if input.is_empty() {
        return vec![Sym::Literal(0)];
    }
    let mut text = vec![b' '; F];
    text.extend_from_slice(input);
    let mut syms = Vec::new();
    let mut r = F;
    while r < text.len() {
        let limit = F.min(text.len() - r);
        let (mut best, mut best_d) = (0, 0);
        for d in 1..=(N - F).min(r) {
            let mut k = 0;
            while k < limit && text[r - d + k] == text[r + k] {
                k += 1;
            }
            if k > best {
                (best, best_d) = (k, d);
            }
        }
        let sym = if best > THRESHOLD {
            Sym::Match {
                len: best,
                pos: best_d - 1,
            }
        } else {
            Sym::Literal(text[r])
        };
        syms.push(sym);
        r += sym.len();
    }
    syms
}

/// The raw LZHUF stream (no headers) of a parse: the adaptive Huffman code of each literal or
/// match length, each match position through the fixed position code.
pub fn code(syms: &[Sym]) -> Vec<u8> {
    let mut h = Huff::new();
    let mut bits = Bits {
        out: Vec::new(),
        cur: 0,
        n: 0,
    };
    let pt = p_table();
    for &sym in syms {
        match sym {
            Sym::Literal(c) => put_symbol(&mut h, &mut bits, usize::from(c)),
            Sym::Match { len, pos } => {
                put_symbol(&mut h, &mut bits, 255 - THRESHOLD + len);
                let (code, clen) = pt[pos >> 6];
                bits.bits(code, clen);
                bits.bits((pos & 63) as u32, 6);
            }
        }
    }
    if bits.n > 0 {
        let pad = 8 - bits.n;
        bits.bits(0, pad);
    }
    bits.out
}

/// Decode `size` bytes from a raw stream, reading zero bits past its end like the C code.
pub fn decode(stream: &[u8], size: usize) -> Vec<u8> {
    let mut h = Huff::new();
    let pt = p_table();
    let mut bitpos = 0usize;
    let mut get = || {
        let b = stream
            .get(bitpos / 8)
            .map_or(0, |&x| (x >> (7 - bitpos % 8)) & 1);
        bitpos += 1;
        b as usize
    };
    let mut text = vec![0u8; N];
    for b in &mut text[..N - F] {
        *b = b' ';
    }
    let mut r = N - F;
    let mut out = Vec::new();
    while out.len() < size {
        let mut c = h.son[R];
        while c < T {
            c = h.son[c + get()];
        }
        let sym = c - T;
        h.update(sym);
        if sym < 256 {
            out.push(sym as u8);
            text[r] = sym as u8;
            r = (r + 1) % N;
        } else {
            // Prefix code for the upper bits, by searching the table.
            let (mut code, mut clen) = (0u32, 0u32);
            let hi = loop {
                code = (code << 1) | get() as u32;
                clen += 1;
                if let Some(i) = pt.iter().position(|&(c, l)| l == clen && c == code) {
                    break i;
                }
            };
            let mut lo = 0;
            for _ in 0..6 {
                lo = (lo << 1) | get();
            }
            let pos = (hi << 6) | lo;
            let start = (r + 2 * N - pos - 1) % N;
            for k in 0..(sym - 253) {
                let b = text[(start + k) % N];
                out.push(b);
                text[r] = b;
                r = (r + 1) % N;
            }
        }
    }
    out.truncate(size);
    out
}

/// Bits (root first) of `sym` in the initial tree, and of the upper position bits `hi`.
pub fn initial_code(sym: usize) -> Vec<u8> {
    let h = Huff::new();
    let mut path = Vec::new();
    let mut k = h.prnt[sym + T];
    loop {
        path.push((k & 1) as u8);
        k = h.prnt[k];
        if k == R {
            break;
        }
    }
    path.reverse();
    path
}

/// Bits of the position `pos` (up to 12 bits: the 4096-window table has 64 upper codes).
pub fn position_code(pos: usize) -> Vec<u8> {
    let (code, len) = p_table()[pos >> 6];
    let mut v: Vec<u8> = (0..len).rev().map(|i| ((code >> i) & 1) as u8).collect();
    v.extend((0..6).rev().map(|i| ((pos >> i) & 1) as u8));
    v
}

/// Pack bits MSB first, zero padded.
pub fn pack(bits: &[u8]) -> Vec<u8> {
    bits.chunks(8)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u8, |a, (i, &b)| a | (b << (7 - i)))
        })
        .collect()
}

/// Check qtc's encoder on `input` against both parses, and the round trip of both forms.
pub fn check(input: &[u8]) {
    let b0 = compress(input);
    assert_eq!(
        &b0[..4],
        &(input.len() as u32).to_le_bytes(),
        "length header"
    );
    let ours = greedy_parse(input);
    let fbb = tree_parse(input);
    // The same parse as FBB's: the same symbols, each match at the same or a nearer position.
    assert_eq!(
        ours.len(),
        fbb.len(),
        "symbol count differs from the tree's"
    );
    for (i, (&a, &b)) in ours.iter().zip(&fbb).enumerate() {
        let ok = match (a, b) {
            (Sym::Literal(x), Sym::Literal(y)) => x == y,
            (Sym::Match { len, pos }, Sym::Match { len: l, pos: p }) => len == l && pos <= p,
            _ => false,
        };
        assert!(ok, "symbol {i}: greedy {a:?}, tree {b:?}");
    }
    assert!(
        b0[4..] == code(&ours)[..],
        "stream differs from the greedy parse's"
    );
    assert!(
        b0.len() - 4 <= code(&fbb).len(),
        "longer than the tree encoder's"
    );
    assert_eq!(decode(&b0[4..], input.len()), input);
    let limits = Limits::default();
    assert_eq!(decompress(&b0, &limits).unwrap(), input);
    let b1 = compress_with_crc(input);
    assert_eq!(&b1[2..], &b0[..]);
    assert_eq!(decompress_with_crc(&b1, &limits).unwrap(), input);
}
