//! `[[partner]] trace`: the protocol lines with a partner, in the log.

use qtc_callsign::Callsign;

/// Logs protocol traffic with a partner line by line (`<` received, `>` sent). Text lines
/// are shown whole, non-ASCII included; from the first binary byte (a compressed block's
/// SOH/STX framing, NUL, other controls) the rest of the chunk is summarised, not split at
/// the CR and LF bytes inside it.
pub(super) fn lines(partner: Callsign, dir: &str, bytes: &[u8]) {
    let (text, binary) = split_binary(bytes);
    for line in text
        .split(|&b| b == b'\r' || b == b'\n')
        .filter(|l| !l.is_empty())
    {
        tracing::info!(target: "qtc::trace", %partner, "{dir} {}", shown(line));
    }
    if !binary.is_empty() {
        tracing::info!(target: "qtc::trace", %partner, "{dir} [{} bytes of binary data]", binary.len());
    }
}

/// Splits a chunk at the start of the line holding its first binary byte.
fn split_binary(bytes: &[u8]) -> (&[u8], &[u8]) {
    let is_binary = |b: &u8| *b < 0x20 && !matches!(b, b'\r' | b'\n' | b'\t' | 0x1a);
    match bytes.iter().position(is_binary) {
        None => (bytes, &[]),
        Some(p) => {
            let line_start = bytes[..p]
                .iter()
                .rposition(|&b| b == b'\r' || b == b'\n')
                .map_or(0, |i| i + 1);
            bytes.split_at(line_start)
        }
    }
}

/// A text line for the log: UTF-8 as it is, anything else read as Latin-1.
fn shown(line: &[u8]) -> String {
    match std::str::from_utf8(line) {
        Ok(s) => s.to_owned(),
        Err(_) => line.iter().map(|&b| char::from(b)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_keeps_text_lines_whole_and_binary_apart() {
        let chunk = b"FS Y\rK\xf6ln\r\x01\x05title\x00\r\n\x02\xfa";
        let (text, binary) = split_binary(chunk);
        assert_eq!(text, b"FS Y\rK\xf6ln\r");
        assert_eq!(binary.len(), 12);
        assert_eq!(shown(b"K\xf6ln"), "K\u{f6}ln");
        assert_eq!(shown("Köln".as_bytes()), "Köln");
    }
}
