//! Golden vectors: payloads produced by LinFBB 7.0.12 and by wl2k-go's test data. We decode
//! them; the tree encoder of `tests/reference` reproduces them, and ours parses as it does.

mod reference;

use qtc_lzhuf::{compress, decompress, decompress_with_crc, fbb_text, Limits};

fn data(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Our bytes equal a captured payload's; on failure, where they first differ.
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

/// A captured B0 payload is the reference tree encoder's output (which makes that model
/// LinFBB's), and ours is the greedy parse's, decodes, and is no longer (`reference::check`).
fn check_vector(input: &[u8], b0: &[u8], what: &str) {
    assert_eq!(&b0[..4], &(input.len() as u32).to_le_bytes(), "{what}");
    let tree = reference::code(&reference::tree_parse(input));
    assert_same(&tree, &b0[4..], what);
    reference::check(input);
}

#[test]
fn fbb_texts() {
    for name in FBB_TEXTS {
        let text = data(&format!("{name}.txt"));
        // The texts have CRLF line ends already: FBB's text mode leaves them as they are.
        assert_eq!(fbb_text(&text), text, "{name}");
        let b1 = data(&format!("{name}.b1.lzh"));
        let b0 = data(&format!("{name}.b0.lzh"));
        assert_eq!(
            decompress_with_crc(&b1, &Limits::default()).unwrap(),
            text,
            "{name}"
        );
        assert_eq!(decompress(&b0, &Limits::default()).unwrap(), text, "{name}");
        assert_eq!(&b1[2..], &b0[..], "{name}");
        check_vector(&text, &b0, name);
    }
}

#[test]
fn lf_only_input_goes_through_text_mode() {
    let raw = data("lf_only_input.txt");
    let converted = fbb_text(&raw);
    assert_eq!(converted, data("lf_only_input.decoded.txt"));
    let b1 = data("lf_only_input.b1.lzh");
    let b0 = data("lf_only_input.b0.lzh");
    assert_eq!(
        decompress_with_crc(&b1, &Limits::default()).unwrap(),
        converted
    );
    assert_eq!(decompress(&b0, &Limits::default()).unwrap(), converted);
    assert_eq!(&b1[2..], &b0[..]);
    check_vector(&converted, &b0, "lf_only_input");
}

#[test]
fn wl2k_vectors_are_raw_input() {
    for name in ["gettysburg.txt", "LPE5NXDVLVSQ.b2f"] {
        let raw = data(name);
        let lzh = data(&format!("{name}.lzh"));
        assert_eq!(decompress_with_crc(&lzh, &Limits::default()).unwrap(), raw);
        check_vector(&raw, &lzh[2..], name);
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
