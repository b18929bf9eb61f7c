//! Deterministic test inputs: an English-like BBS text generator and pseudo-random bytes.
#![allow(dead_code)]

/// xorshift64*: small, seeded, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() >> 33) as usize % n
    }
}

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "packet",
    "radio",
    "station",
    "message",
    "bulletin",
    "forward",
    "frequency",
    "repeater",
    "antenna",
    "licence",
    "amateur",
    "operator",
    "network",
    "node",
    "digipeater",
    "weather",
    "report",
    "emergency",
    "traffic",
    "net",
    "tonight",
    "meeting",
    "club",
    "contest",
    "band",
    "conditions",
    "propagation",
    "signal",
    "power",
    "battery",
    "solar",
    "mountain",
    "river",
    "county",
    "state",
    "national",
    "school",
    "children",
    "government",
    "between",
    "through",
    "before",
    "after",
    "should",
    "because",
    "people",
    "little",
    "great",
    "first",
    "never",
    "always",
    "thank",
    "please",
    "regards",
    "73",
];

const CALLS: &[&str] = &[
    "W1AW", "N0CALL", "DL1ABC", "F6FBB", "G4XYZ", "VK2DEF", "JA1QRZ",
];

/// About `len` bytes of CRLF text: sentences of common words, callsigns, numbers, headers.
pub fn english(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(len + 128);
    let mut col = 0;
    while out.len() < len {
        if rng.below(40) == 0 {
            let hdr = format!(
                "R:{:06}/{:04}Z @:{}.#{}.USA.NOAM #:{}\r\n",
                rng.below(1_000_000),
                rng.below(2400),
                CALLS[rng.below(CALLS.len())],
                ["NCA", "SCA", "WPA", "EMA"][rng.below(4)],
                rng.below(100_000)
            );
            out.extend_from_slice(hdr.as_bytes());
            col = 0;
            continue;
        }
        let sentence = 4 + rng.below(12);
        for w in 0..sentence {
            let word: String = match rng.below(30) {
                0 => CALLS[rng.below(CALLS.len())].to_string(),
                1 => format!("{}", rng.below(10_000)),
                _ => WORDS[rng.below(WORDS.len())].to_string(),
            };
            let word = if w == 0 {
                let mut c = word.chars();
                c.next()
                    .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                    .unwrap_or_default()
            } else {
                word
            };
            if col + word.len() > 72 {
                out.extend_from_slice(b"\r\n");
                col = 0;
            } else if w > 0 {
                out.push(b' ');
                col += 1;
            }
            out.extend_from_slice(word.as_bytes());
            col += word.len();
        }
        out.push([b'.', b'.', b'.', b'?', b'!'][rng.below(5)]);
        col += 1;
        if rng.below(6) == 0 {
            out.extend_from_slice(b"\r\n\r\n");
            col = 0;
        }
    }
    out.truncate(len);
    out
}

/// `len` pseudo-random bytes.
pub fn random(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    (0..len).map(|_| rng.next() as u8).collect()
}
