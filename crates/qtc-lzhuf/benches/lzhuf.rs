//! Throughput of compress / decompress on a 2 KB bulletin, the FBB text vector, generated
//! English-like BBS text of ~1 MB and ~3.1 MB, and random bytes. Run: `cargo bench -p qtc-lzhuf` (or `-- --quick`).
// criterion's macros generate undocumented public items.
#![allow(missing_docs)]

#[path = "../tests/corpus/mod.rs"]
mod corpus;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use qtc_lzhuf::{compress_with_crc, decompress_with_crc, Limits};
use std::hint::black_box;
use std::time::Duration;

fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        // A typical bulletin: forwarding decodes one of these per message, so the model's
        // start-up cost counts as much as the steady rate. Coded again and again, its path
        // through the young model is learnt by the branch predictors, which makes it up to
        // twice as fast as a new bulletin each time; row 6 of bench/run.sh times 1,000
        // different ones.
        ("text_02000", corpus::english(2_000, 3)),
        (
            "text_05000",
            include_bytes!("../tests/data/text_05000.txt").to_vec(),
        ),
        ("text_1m", corpus::english(1 << 20, 7)),
        ("text_3m", corpus::english(3_100_000, 11)),
        ("random_1m", corpus::random(1 << 20, 13)),
    ]
}

fn bench(c: &mut Criterion) {
    let inputs = inputs();
    let limits = Limits::default();

    let mut enc = c.benchmark_group("compress");
    for (name, data) in &inputs {
        enc.throughput(Throughput::Bytes(data.len() as u64));
        if data.len() > 100_000 {
            enc.sample_size(10).measurement_time(Duration::from_secs(4));
        }
        enc.bench_with_input(BenchmarkId::from_parameter(name), data, |b, d| {
            b.iter(|| compress_with_crc(black_box(d)))
        });
    }
    enc.finish();

    let mut dec = c.benchmark_group("decompress");
    for (name, data) in &inputs {
        let packed = compress_with_crc(data);
        dec.throughput(Throughput::Bytes(data.len() as u64));
        if data.len() > 100_000 {
            dec.sample_size(20).measurement_time(Duration::from_secs(3));
        }
        dec.bench_with_input(BenchmarkId::from_parameter(name), &packed, |b, p| {
            b.iter(|| decompress_with_crc(black_box(p), &limits))
        });
    }
    dec.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench
}
criterion_main!(benches);
