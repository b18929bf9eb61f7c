//! Round trips, and differential tests against the naive reference model: the encoder against
//! its brute-force greedy parse and the 1989 tree encoder's, the decoder against its decoder.

mod corpus;
mod reference;

use proptest::prelude::*;
use qtc_lzhuf::{compress, compress_with_crc, decompress, decompress_with_crc, Limits, F, N};
use reference::check;

fn limits() -> Limits {
    Limits::default()
}

/// Bytes from a small alphabet, so that matches of every length and distance occur.
fn matchy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b' ')], 0..3000),
        proptest::collection::vec(0u8..4, 0..6000),
        proptest::collection::vec(any::<u8>(), 0..3000),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn round_trip_arbitrary_bytes(input in proptest::collection::vec(any::<u8>(), 0..5000)) {
        let b0 = compress(&input);
        prop_assert_eq!(decompress(&b0, &limits()).unwrap(), input.clone());
        let b1 = compress_with_crc(&input);
        prop_assert_eq!(decompress_with_crc(&b1, &limits()).unwrap(), input);
    }

    #[test]
    fn encodes_as_reference(input in matchy()) {
        check(&input);
    }

    #[test]
    fn any_stream_decodes_as_the_reference_does(
        stream in proptest::collection::vec(any::<u8>(), 8..400),
        size in 1usize..300,
    ) {
        // Arbitrary bits, not our encoder's output: every stream the decoder accepts must give
        // what the bit-at-a-time reference decoder gives (it refuses only impossible matches
        // and streams that end early, where the reference would read zero bits).
        let mut payload = (size as u32).to_le_bytes().to_vec();
        payload.extend_from_slice(&stream);
        if let Ok(out) = decompress(&payload, &limits()) {
            prop_assert_eq!(out, reference::decode(&stream, size));
        }
    }

    #[test]
    fn short_inputs_encode_as_reference(input in proptest::collection::vec(prop_oneof![Just(0u8), Just(b' '), any::<u8>()], 0..130)) {
        // Inputs shorter than the look-ahead exercise the buffer contents past the end.
        check(&input);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn young_model_then_repetition_encodes_as_reference(
        text in 0usize..8000,
        seed in any::<u64>(),
        run in 1usize..6000,
        period in 1u32..9,
    ) {
        // The decoder keeps a young model (fewer than ~1,700 symbols) in its path mode and may
        // switch modes right after; text of any length, then a run that rarely breaks the
        // frequency order, puts that point anywhere.
        let mut input = corpus::english(text, seed);
        input.extend((0..run as u32).map(|i| (i % period) as u8));
        check(&input);
    }
}

#[test]
fn long_text_encodes_as_reference() {
    // Far beyond 0x8000 symbols: several tree rebuilds, many ring wrap-arounds.
    check(&corpus::english(400_000, 1));
}

#[test]
fn long_random_encodes_as_reference() {
    check(&corpus::random(120_000, 2));
}

#[test]
fn mixed_content_encodes_as_reference() {
    // Text, then incompressible bytes, then text again: the decoder switches its model-update
    // strategy both ways (see decode.rs); the result must not depend on it.
    let mut input = corpus::english(30_000, 3);
    input.extend(corpus::random(30_000, 4));
    input.extend(corpus::english(30_000, 5));
    input.extend(corpus::random(3_000, 6));
    input.extend(corpus::english(3_000, 7));
    check(&input);
}

#[test]
fn runs_encode_as_reference() {
    let mut input = vec![b' '; 70_000];
    input.extend_from_slice(&[0u8; 5000]);
    input.extend((0..50_000u32).map(|i| (i % 7) as u8));
    input.extend((0..30_000u32).map(|i| (i / 300) as u8));
    check(&input);
}

#[test]
fn farthest_match_is_n_minus_f_back() {
    // The tree holds the strings up to N - F bytes back (it deletes each as the byte F ahead of
    // the coder overwrites its slot): a repeat that far back is a match, one byte farther not.
    for gap in [N - F, N - F + 1] {
        let mut input = b"QTCX".to_vec();
        input.extend(corpus::random(gap - 4, 8));
        input.extend_from_slice(b"QTCX");
        let far = reference::Sym::Match {
            len: 4,
            pos: gap - 1,
        };
        assert_eq!(
            reference::tree_parse(&input).last() == Some(&far),
            gap == N - F
        );
        check(&input);
    }
}

#[test]
fn text_mode_round_trip() {
    let text = qtc_lzhuf::fbb_text(b"line one\nline two\r\nthree\r\rfour\n\r");
    assert_eq!(text, b"line one\r\nline two\r\nthreefour\r\n");
    check(&text);
}
