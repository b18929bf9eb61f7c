//! Golden vectors: payloads produced by LinFBB 7.0.12 and by wl2k-go's test data.

use qtc_lzhuf::{compress, compress_with_crc, decompress, decompress_with_crc, fbb_text, Limits};

fn data(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Index of the first differing byte, for readable failures.
fn assert_same(ours: &[u8], theirs: &[u8], what: &str) {
    if ours != theirs {
        let at = ours
            .iter()
            .zip(theirs)
            .position(|(a, b)| a != b)
            .unwrap_or(ours.len().min(theirs.len()));
        let lo = at.saturating_sub(4);
        panic!(
            "{what}: {} vs {} bytes, first difference at {at}: ours {} theirs {}",
            ours.len(),
            theirs.len(),
            hex(&ours[lo..(at + 8).min(ours.len())]),
            hex(&theirs[lo..(at + 8).min(theirs.len())]),
        );
    }
}

const FBB_TEXTS: [&str; 4] = ["text_00000", "text_00001", "text_00100", "text_05000"];

#[test]
fn fbb_texts_encode_byte_identically() {
    for name in FBB_TEXTS {
        let text = data(&format!("{name}.txt"));
        // The texts have CRLF line ends already: FBB's text mode leaves them as they are.
        assert_eq!(fbb_text(&text), text, "{name}");
        assert_same(
            &compress_with_crc(&text),
            &data(&format!("{name}.b1.lzh")),
            &format!("{name}.b1"),
        );
        assert_same(
            &compress(&text),
            &data(&format!("{name}.b0.lzh")),
            &format!("{name}.b0"),
        );
    }
}

#[test]
fn fbb_texts_decode() {
    for name in FBB_TEXTS {
        let text = data(&format!("{name}.txt"));
        let b1 = data(&format!("{name}.b1.lzh"));
        let b0 = data(&format!("{name}.b0.lzh"));
        assert_eq!(
            decompress_with_crc(&b1, &Limits::default()).unwrap(),
            text,
            "{name}"
        );
        assert_eq!(decompress(&b0, &Limits::default()).unwrap(), text, "{name}");
    }
}

#[test]
fn lf_only_input_goes_through_text_mode() {
    let raw = data("lf_only_input.txt");
    let converted = fbb_text(&raw);
    assert_eq!(converted, data("lf_only_input.decoded.txt"));
    assert_same(
        &compress_with_crc(&converted),
        &data("lf_only_input.b1.lzh"),
        "lf_only_input.b1",
    );
    assert_same(
        &compress(&converted),
        &data("lf_only_input.b0.lzh"),
        "lf_only_input.b0",
    );
    assert_eq!(
        decompress_with_crc(&data("lf_only_input.b1.lzh"), &Limits::default()).unwrap(),
        converted
    );
    assert_eq!(
        decompress(&data("lf_only_input.b0.lzh"), &Limits::default()).unwrap(),
        converted
    );
}

#[test]
fn wl2k_vectors_are_raw_input() {
    for name in ["gettysburg.txt", "LPE5NXDVLVSQ.b2f"] {
        let raw = data(name);
        let lzh = data(&format!("{name}.lzh"));
        assert_same(&compress_with_crc(&raw), &lzh, name);
        assert_eq!(decompress_with_crc(&lzh, &Limits::default()).unwrap(), raw);
    }
}

#[test]
fn empty_input_forms() {
    // FBB: header plus the dummy symbol.
    assert_eq!(compress(b""), [0, 0, 0, 0, 0xc6, 0x00]);
    // Winlink: header only. Both decode to nothing.
    assert_eq!(decompress(&[0, 0, 0, 0], &Limits::default()).unwrap(), b"");
    assert_eq!(
        decompress(&[0, 0, 0, 0, 0xc6, 0], &Limits::default()).unwrap(),
        b""
    );
    let winlink_b2 = [0, 0, 0, 0, 0, 0];
    assert_eq!(
        decompress_with_crc(&winlink_b2, &Limits::default()).unwrap(),
        b""
    );
}
