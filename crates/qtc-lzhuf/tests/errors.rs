//! Untrusted input: every malformed payload gives its error, never a panic.

mod corpus;
mod reference;

use proptest::prelude::*;
use qtc_lzhuf::{
    compress, compress_with_crc, crc16_xmodem, decompress, decompress_with_crc, Error, Limits,
    DEFAULT_MAX_OUTPUT, MAX_RATIO,
};

fn b0(declared: u32, stream: &[u8]) -> Vec<u8> {
    let mut v = declared.to_le_bytes().to_vec();
    v.extend_from_slice(stream);
    v
}

fn with_crc(body: &[u8]) -> Vec<u8> {
    let mut v = crc16_xmodem(body).to_le_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

#[test]
fn crc_check_value() {
    assert_eq!(crc16_xmodem(b"123456789"), 0x31C3);
}

#[test]
fn default_limits() {
    assert_eq!(Limits::default().max_output, DEFAULT_MAX_OUTPUT);
    assert_eq!(DEFAULT_MAX_OUTPUT, 16 << 20);
}

#[test]
fn short_headers_are_truncated() {
    let l = Limits::default();
    for n in 0..4 {
        assert_eq!(
            decompress(&[0; 4][..n], &l),
            Err(Error::Truncated),
            "b0 {n}"
        );
    }
    for n in 0..6 {
        assert_eq!(
            decompress_with_crc(&[0; 6][..n], &l),
            Err(Error::Truncated),
            "b1 {n}"
        );
    }
}

#[test]
fn cut_streams_are_truncated() {
    let text = corpus::english(20_000, 5);
    let full = compress(&text);
    let l = Limits::default();
    // Every cut short of the last byte loses bits the decoder needs (the last byte may hold
    // only padding after the final symbol, so it is left out of this check).
    for cut in (4..full.len() - 1)
        .step_by(97)
        .chain([4, 5, full.len() - 2])
    {
        let expect = |size: usize| {
            if text.len() > size * MAX_RATIO {
                Error::Bomb {
                    declared: text.len() as u32,
                    compressed: size,
                }
            } else {
                Error::Truncated
            }
        };
        assert_eq!(decompress(&full[..cut], &l), Err(expect(cut)), "cut {cut}");
        // With a CRC that matches the cut data, the stream itself is found short.
        let cut_b1 = with_crc(&full[..cut]);
        assert_eq!(decompress_with_crc(&cut_b1, &l), Err(expect(cut + 2)));
    }
    // The same cut with the original CRC: the CRC catches it first.
    let b1 = compress_with_crc(&text);
    assert!(matches!(
        decompress_with_crc(&b1[..b1.len() - 10], &l),
        Err(Error::BadCrc { .. })
    ));
}

#[test]
fn bad_crc_reports_both_values() {
    let mut b1 = compress_with_crc(b"Hello, packet world\r\n");
    let expected = u16::from_le_bytes([b1[0], b1[1]]);
    b1[10] ^= 0x40;
    let actual = crc16_xmodem(&b1[2..]);
    assert_eq!(
        decompress_with_crc(&b1, &Limits::default()),
        Err(Error::BadCrc { expected, actual })
    );
    // A flipped CRC byte too.
    let mut b1 = compress_with_crc(b"x");
    b1[0] ^= 1;
    assert!(matches!(
        decompress_with_crc(&b1, &Limits::default()),
        Err(Error::BadCrc { .. })
    ));
}

#[test]
fn declared_length_over_the_limit() {
    let payload = compress(&vec![b'a'; 5000]);
    let l = Limits::new(4999);
    assert_eq!(
        decompress(&payload, &l),
        Err(Error::TooLarge {
            declared: 5000,
            limit: 4999
        })
    );
    assert_eq!(
        decompress(&payload, &Limits::new(5000)).unwrap().len(),
        5000
    );
    // Checked before anything is allocated: a 4 GiB claim fails at once.
    let huge = b0(u32::MAX, &[0; 64]);
    assert!(matches!(
        decompress(&huge, &Limits::new(usize::MAX)),
        Err(Error::Bomb { .. })
    ));
    assert!(matches!(
        decompress(&huge, &Limits::default()),
        Err(Error::TooLarge { .. })
    ));
}

#[test]
fn bomb_guard_uses_the_whole_payload() {
    let l = Limits::new(usize::MAX);
    let stream = [0u8; 4];
    let payload = b0(0, &stream);
    let n = payload.len(); // 8
    let at = |declared: u32| {
        let mut p = payload.clone();
        p[..4].copy_from_slice(&declared.to_le_bytes());
        p
    };
    // At the ratio: not a bomb (the zero stream then runs out).
    let ok = (n * MAX_RATIO) as u32;
    assert_eq!(decompress(&at(ok), &l), Err(Error::Truncated));
    assert_eq!(
        decompress(&at(ok + 1), &l),
        Err(Error::Bomb {
            declared: ok + 1,
            compressed: n
        })
    );
    // B1: the CRC bytes count as compressed size too.
    let b1 = with_crc(&at((n + 2) as u32 * MAX_RATIO as u32 + 1));
    assert!(matches!(
        decompress_with_crc(&b1, &l),
        Err(Error::Bomb { compressed: 10, .. })
    ));
}

#[test]
fn zero_length_is_empty_in_every_form() {
    let l = Limits::default();
    assert_eq!(decompress(&b0(0, &[]), &l).unwrap(), b"");
    assert_eq!(decompress(&b0(0, &[0xc6, 0]), &l).unwrap(), b"");
    // Whatever follows a zero length is ignored.
    assert_eq!(decompress(&b0(0, &[0xff; 9]), &l).unwrap(), b"");
    assert_eq!(
        decompress_with_crc(&with_crc(&b0(0, &[])), &l).unwrap(),
        b""
    );
    assert_eq!(compress_with_crc(b"").len(), 8);
}

#[test]
fn decoding_stops_at_the_declared_length() {
    let l = Limits::default();
    let mut p = compress(b"hello world");
    p[..4].copy_from_slice(&5u32.to_le_bytes());
    assert_eq!(decompress(&p, &l).unwrap(), b"hello");
    // Cut inside a match: "a" then one 59-byte match.
    let mut p = compress(&[b'a'; 60]);
    p[..4].copy_from_slice(&7u32.to_le_bytes());
    assert_eq!(decompress(&p, &l).unwrap(), b"aaaaaaa");
    // Trailing bytes after the stream are ignored.
    let mut p = compress(b"hello world");
    p.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(decompress(&p, &l).unwrap(), b"hello world");
}

/// A stream of one match (length `len`, position `pos`) from the start.
fn first_match(len: usize, pos: usize) -> Vec<u8> {
    let mut bits = reference::initial_code(253 + len);
    bits.extend(reference::position_code(pos));
    reference::pack(&bits)
}

#[test]
fn matches_into_the_initial_spaces() {
    // The ring starts with N - F spaces before the first byte: FBB's decoder hands them out.
    let l = Limits::default();
    let s = first_match(3, 0);
    assert_eq!(decompress(&b0(3, &s), &l).unwrap(), b"   ");
    let s = first_match(5, 1987); // the farthest space
    assert_eq!(decompress(&b0(5, &s), &l).unwrap(), b"     ");
}

#[test]
fn impossible_positions_are_corrupt() {
    let l = Limits::default();
    // Beyond the spaces: the never-written look-ahead area.
    let s = first_match(3, 1988);
    assert!(matches!(decompress(&b0(3, &s), &l), Err(Error::Corrupt(_))));
    // Upper position bits >= 32: the 4096-byte window of the original codec.
    let s = first_match(3, 2048);
    assert!(matches!(decompress(&b0(3, &s), &l), Err(Error::Corrupt(_))));
    let s = first_match(3, 4095);
    assert!(matches!(decompress(&b0(3, &s), &l), Err(Error::Corrupt(_))));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        let l = Limits::new(1 << 16);
        let _ = decompress(&data, &l);
        let _ = decompress_with_crc(&data, &l);
        // Same bytes with a valid CRC, so the decoder proper runs on them.
        let _ = decompress_with_crc(&with_crc(&data), &l);
    }

    #[test]
    fn flipped_bits_never_panic(pos in 0usize..2000, bit in 0u8..8) {
        let text = corpus::english(3000, 9);
        let mut p = compress(&text);
        let i = 4 + pos % (p.len() - 4);
        p[i] ^= 1 << bit;
        match decompress(&p, &Limits::default()) {
            Ok(out) => prop_assert_eq!(out.len(), text.len()),
            Err(e) => prop_assert!(matches!(e, Error::Truncated | Error::Corrupt(_)), "{e}"),
        }
    }
}
