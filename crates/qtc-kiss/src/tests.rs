use super::*;
use proptest::prelude::*;

fn decode_all(d: &mut Decoder, input: &[u8]) -> Vec<Frame> {
    let mut v = Vec::new();
    d.decode(input, &mut |f| v.push(f));
    v
}

fn data(port: u8, payload: &[u8]) -> Frame {
    Frame {
        port,
        command: Command::Data,
        payload: payload.to_vec(),
    }
}

#[test]
fn encode_golden() {
    let mut out = Vec::new();
    encode(0, Command::Data, b"TEST", &mut out).unwrap();
    assert_eq!(out, [0xC0, 0x00, b'T', b'E', b'S', b'T', 0xC0]);

    // Both special bytes escaped; TFEND/TFESC alone are plain data.
    out.clear();
    encode(0, Command::Data, &[0xC0, 0xDB, 0xDC, 0xDD], &mut out).unwrap();
    assert_eq!(out, [0xC0, 0x00, 0xDB, 0xDC, 0xDB, 0xDD, 0xDC, 0xDD, 0xC0]);

    // Port nibble, and a type byte that needs escaping (port 12, SlotTime -> 0xC3 is fine,
    // port 12 Data -> 0xC0 must be escaped).
    out.clear();
    encode(12, Command::Data, &[1], &mut out).unwrap();
    assert_eq!(out, [0xC0, 0xDB, 0xDC, 0x01, 0xC0]);

    out.clear();
    encode(1, Command::TxDelay, &[30], &mut out).unwrap();
    assert_eq!(out, [0xC0, 0x11, 30, 0xC0]);

    out.clear();
    encode(0, Command::Return, &[], &mut out).unwrap();
    assert_eq!(out, [0xC0, 0xFF, 0xC0]);
}

#[test]
fn encoded_len_matches() {
    let payload = [0xC0, 1, 2, 0xDB, 0xDB];
    let mut out = Vec::new();
    encode(12, Command::Data, &payload, &mut out).unwrap();
    assert_eq!(out.len(), encoded_len(0xC0, &payload));
}

#[test]
fn encode_errors() {
    let mut out = Vec::new();
    assert_eq!(
        encode(16, Command::Data, b"x", &mut out),
        Err(Error::InvalidPort(16))
    );
    assert_eq!(
        encode(0, Command::Other(3), b"x", &mut out),
        Err(Error::InvalidCommand(3))
    );
    assert_eq!(
        encode(15, Command::Other(15), b"x", &mut out),
        Err(Error::InvalidCommand(15))
    );
    let big = vec![0u8; MAX_KISS_FRAME + 1];
    assert_eq!(
        encode(0, Command::Data, &big, &mut out),
        Err(Error::FrameTooLarge {
            len: MAX_KISS_FRAME + 1
        })
    );
    assert!(out.is_empty(), "nothing written on error");
    encode(0, Command::Data, &big[1..], &mut out).unwrap();
}

#[test]
fn type_byte_split() {
    assert_eq!(Command::from_type_byte(0x00), (0, Command::Data));
    assert_eq!(Command::from_type_byte(0x21), (2, Command::TxDelay));
    assert_eq!(Command::from_type_byte(0x02), (0, Command::Persistence));
    assert_eq!(Command::from_type_byte(0x03), (0, Command::SlotTime));
    assert_eq!(Command::from_type_byte(0x04), (0, Command::TxTail));
    assert_eq!(Command::from_type_byte(0x05), (0, Command::FullDuplex));
    assert_eq!(Command::from_type_byte(0x06), (0, Command::SetHardware));
    assert_eq!(Command::from_type_byte(0xFF), (15, Command::Return));
    assert_eq!(Command::from_type_byte(0x0C), (0, Command::Other(12)));
    assert_eq!(Command::from_type_byte(0xEF), (14, Command::Other(15)));
}

#[test]
fn decode_simple_and_garbage() {
    let mut d = Decoder::new();
    let f = decode_all(&mut d, b"cmd:\r\nnoise\xC0\x00hello\xC0");
    assert_eq!(f, vec![data(0, b"hello")]);
    assert_eq!(d.stats().garbage_bytes, 11);
    assert_eq!(d.stats().frames, 1);
}

#[test]
fn back_to_back_and_shared_fend() {
    let mut d = Decoder::new();
    // Frames sharing one FEND, and doubled FENDs, which make no empty frame.
    let f = decode_all(&mut d, b"\xC0\x00a\xC0\x10b\xC0\xC0\xC0\x00c\xC0");
    assert_eq!(f, vec![data(0, b"a"), data(1, b"b"), data(0, b"c")]);
    assert_eq!(d.stats().empty_frames, 0);
}

#[test]
fn empty_data_frame_dropped_but_commands_kept() {
    let mut d = Decoder::new();
    let f = decode_all(&mut d, b"\xC0\x00\xC0\x0E\xC0\xFF\xC0");
    assert_eq!(
        f,
        vec![
            Frame {
                port: 0,
                command: Command::Other(14),
                payload: vec![]
            },
            Frame {
                port: 15,
                command: Command::Return,
                payload: vec![]
            }
        ]
    );
    assert_eq!(d.stats().empty_frames, 1);
    assert_eq!(d.stats().dropped_frames(), 1);
}

#[test]
fn escapes_and_bad_escapes() {
    let mut d = Decoder::new();
    // TFEND and TFESC without FESC are data; FESC + 'x' is a bad escape: 'x' is dropped.
    let f = decode_all(&mut d, b"\xC0\x00\xDB\xDC\xDC\xDB\xDDx\xDBxy\xC0");
    assert_eq!(f, vec![data(0, b"\xC0\xDC\xDBxy")]);
    assert_eq!(d.stats().bad_escapes, 1);

    // FESC right before FEND still ends the frame.
    let f = decode_all(&mut d, b"\x00ab\xDB\xC0\x00c\xC0");
    assert_eq!(f, vec![data(0, b"ab"), data(0, b"c")]);
    assert_eq!(d.stats().bad_escapes, 2);
}

#[test]
fn oversize_dropped_and_resync() {
    let mut d = Decoder::with_max_frame(8);
    let mut input = vec![0xC0, 0x00];
    input.extend_from_slice(&[7u8; 8]); // exactly at the limit: kept
    input.push(0xC0);
    input.push(0x00);
    input.extend_from_slice(&[9u8; 9]); // one over: dropped
    input.extend_from_slice(&[0xDB, 0xDC]); // escapes inside a discarded frame are skipped
    input.push(0xC0);
    input.extend_from_slice(b"\x00ok\xC0");
    let f = decode_all(&mut d, &input);
    assert_eq!(f, vec![data(0, &[7u8; 8]), data(0, b"ok")]);
    assert_eq!(d.stats().oversize_frames, 1);
    assert_eq!(d.stats().bad_escapes, 0);
}

#[test]
fn max_kiss_frame_accepted() {
    let payload = vec![0xC0u8; MAX_KISS_FRAME];
    let mut wire = Vec::new();
    encode(3, Command::Data, &payload, &mut wire).unwrap();
    let mut d = Decoder::new();
    let f = decode_all(&mut d, &wire);
    assert_eq!(f, vec![data(3, &payload)]);
}

#[test]
fn reset_discards_partial() {
    let mut d = Decoder::new();
    assert!(decode_all(&mut d, b"\xC0\x00abc").is_empty());
    assert!(d.in_frame());
    d.reset();
    assert!(!d.in_frame());
    // After reset we hunt again: "def" is garbage, not the tail of a frame.
    let f = decode_all(&mut d, b"def\xC0\x00g\xC0");
    assert_eq!(f, vec![data(0, b"g")]);
}

fn arb_frame() -> impl Strategy<Value = Frame> {
    let cmd = prop_oneof![
        Just(Command::Data),
        Just(Command::TxDelay),
        Just(Command::Persistence),
        Just(Command::SlotTime),
        Just(Command::TxTail),
        Just(Command::FullDuplex),
        Just(Command::SetHardware),
        Just(Command::Return),
        (7u8..=14).prop_map(Command::Other),
    ];
    (
        0u8..=15,
        cmd,
        proptest::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(|(port, command, mut payload)| {
            let port = if command == Command::Return { 15 } else { port };
            if command == Command::Data && payload.is_empty() {
                payload.push(0xC0);
            }
            Frame {
                port,
                command,
                payload,
            }
        })
}

proptest! {
    #[test]
    fn roundtrip(frames in proptest::collection::vec(arb_frame(), 0..8)) {
        let mut wire = Vec::new();
        for f in &frames {
            f.encode(&mut wire).unwrap();
        }
        let mut d = Decoder::new();
        prop_assert_eq!(decode_all(&mut d, &wire), frames);
    }

    #[test]
    fn chunking_invariance(
        frames in proptest::collection::vec(arb_frame(), 0..6),
        noise in proptest::collection::vec(any::<u8>(), 0..40),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let mut wire = noise;
        for f in &frames {
            f.encode(&mut wire).unwrap();
        }
        let mut whole = Decoder::new();
        let expected = decode_all(&mut whole, &wire);

        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(wire.len() + 1)).collect();
        points.sort_unstable();
        let mut d = Decoder::new();
        let mut got = Vec::new();
        let mut start = 0;
        for p in points.into_iter().chain(std::iter::once(wire.len())) {
            d.decode(&wire[start..p], &mut |f| got.push(f));
            start = p;
        }
        prop_assert_eq!(got, expected);
        prop_assert_eq!(d.stats(), whole.stats());
    }

    #[test]
    fn arbitrary_input_bounded(input in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let mut d = Decoder::with_max_frame(64);
        d.decode(&input, &mut |f| assert!(f.payload.len() <= 64));
    }
}
