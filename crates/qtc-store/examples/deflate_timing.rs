//! Times the deflate of received blocks (texts.rs): libdeflate's level 1, which the store uses,
//! against miniz_oxide's level 2 with its per-block reset, which it used before, on blocks of
//! five bulletins of about 2 KB (row 2's). Prints each one's fastest round in microseconds per
//! block and its deflated bytes per message: the fastest round, so that time spent preempted
//! on a busy machine does not count.
//!
//! `cargo run --release -p qtc-store --example deflate_timing`

use std::time::Instant;

use libdeflater::{CompressionLvl, Compressor};
use miniz_oxide::deflate::core::{
    compress, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush, TDEFLStatus,
};

const BLOCKS: usize = 200;
const PER_BLOCK: usize = 5;
const ROUNDS: usize = 15;

/// Blocks of five texts: an R: line, then 2,000 bytes of 60-character lines of words.
fn blocks() -> Vec<Vec<u8>> {
    const WORDS: &[&str] = &[
        "the", "band", "was", "open", "to", "europe", "on", "twenty", "meters", "net", "tonight",
        "repeater", "club", "meeting", "antenna", "contest", "log", "please", "send", "reports",
    ];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut word = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        WORDS[(x % WORDS.len() as u64) as usize]
    };
    (0..BLOCKS)
        .map(|b| {
            let mut block = Vec::new();
            for i in 0..PER_BLOCK {
                let n = b * PER_BLOCK + i;
                block.extend_from_slice(
                    format!("R:261207/0200Z @:N0ABC.#NCA.CA.USA.NOAM $:F{n}_N0ABC\r\n").as_bytes(),
                );
                let start = block.len();
                while block.len() - start < 2000 {
                    let line = block.len();
                    while block.len() - line < 60 {
                        block.extend_from_slice(word().as_bytes());
                        block.push(b' ');
                    }
                    block.extend_from_slice(b"\r\n");
                }
            }
            block
        })
        .collect()
}

/// The fastest round's microseconds per block, and the deflated bytes per message.
// A timing example reads the clock (the lint keeps it out of the store and the cores).
#[allow(clippy::disallowed_methods)]
fn time(blocks: &[Vec<u8>], mut deflate: impl FnMut(&[u8], &mut [u8]) -> usize) -> (f64, usize) {
    let mut out = vec![0u8; blocks.iter().map(Vec::len).max().unwrap_or(0)];
    let mut best = f64::MAX;
    let mut bytes = 0;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        bytes = blocks.iter().map(|b| deflate(b, &mut out[..b.len()])).sum();
        best = best.min(start.elapsed().as_secs_f64() * 1e6 / blocks.len() as f64);
    }
    (best, bytes / (blocks.len() * PER_BLOCK))
}

fn main() {
    let blocks = blocks();
    let mut miniz = Box::new(CompressorOxide::new(create_comp_flags_from_zip_params(
        2, -15, 0,
    )));
    let before = time(&blocks, |text, out| {
        miniz.reset();
        let (status, _, n) = compress(&mut miniz, text, out, TDEFLFlush::Finish);
        assert_eq!(status, TDEFLStatus::Done, "a block does not shrink");
        n
    });
    let level = CompressionLvl::new(1).expect("libdeflate has a level 1");
    let mut libdeflate = Compressor::new(level);
    let after = time(&blocks, |text, out| {
        libdeflate
            .deflate_compress(text, out)
            .expect("a block does not shrink")
    });
    let input = blocks.iter().map(Vec::len).sum::<usize>() / (blocks.len() * PER_BLOCK);
    println!(
        "{BLOCKS} blocks of {PER_BLOCK} texts, {input} bytes a text; fastest of {ROUNDS} rounds"
    );
    for (name, (us, bytes)) in [
        ("miniz_oxide level 2 with reset", before),
        ("libdeflate level 1", after),
    ] {
        println!("{name}: {us:.1} us a block, {bytes} bytes a text");
    }
    println!("ratio: {:.2} x the time", after.0 / before.0);
}
