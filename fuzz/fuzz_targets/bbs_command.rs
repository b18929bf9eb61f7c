//! Fuzz the BBS command line parser and the line splitter in front of it: arbitrary bytes, cut
//! into chunks whose sizes come from the input, must split the same way as in one piece, give
//! only lines within the limit and without line ends, and parse (or be refused) without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtc_bbs::{parse, Command, Line, LineReader};

/// Small, so the fuzzer reaches the too-long path easily.
const MAX_LINE: usize = 40;

fn split(chunks: &mut dyn Iterator<Item = &[u8]>) -> Vec<Line> {
    let mut reader = LineReader::new(MAX_LINE);
    let mut lines = Vec::new();
    for chunk in chunks {
        reader.push(chunk, |l| lines.push(l));
    }
    lines
}

fuzz_target!(|data: &[u8]| {
    // The whole input as one command line, as the session sees it after the splitter.
    let text = String::from_utf8_lossy(data);
    if let Ok(Command::Send(s)) = parse(&text) {
        assert_eq!(s.to, s.to.to_ascii_uppercase());
        assert_eq!(s.at, s.at.to_ascii_uppercase());
    }

    let Some((&step, input)) = data.split_first() else {
        return;
    };
    let whole = split(&mut std::iter::once(input));
    let step = usize::from(step % 32).max(1);
    let chunked = split(&mut input.chunks(step));
    assert_eq!(whole, chunked, "chunking changed the lines");
    for line in &whole {
        if let Line::Text(t) = line {
            assert!(t.len() <= MAX_LINE);
            assert!(!t.contains(&b'\r') && !t.contains(&b'\n'));
            let _ = parse(&String::from_utf8_lossy(t));
        }
    }
});
