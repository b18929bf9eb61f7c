//! Text as users see it: Winlink subjects may be RFC 2047 encoded words
//! (`=?ISO-8859-1?q?Gr=FC=DFe?=`), bodies UTF-8 or ISO-8859-1. Stored bytes never change; these
//! functions make the text shown.

/// Bytes as text: UTF-8 when they are valid UTF-8, else ISO-8859-1 (every byte a character).
pub fn decode_8bit(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

/// Bytes in a declared charset as text: UTF-8, ISO-8859-1 / Latin-1 (and Windows-1252, shown
/// as Latin-1) and US-ASCII are known; anything else is read as [`decode_8bit`] does.
pub fn decode_charset(charset: &str, bytes: &[u8]) -> String {
    match charset.to_ascii_lowercase().as_str() {
        "utf-8" | "utf8" => String::from_utf8_lossy(bytes).into_owned(),
        "iso-8859-1" | "iso8859-1" | "latin1" | "latin-1" | "windows-1252" | "cp1252" => {
            bytes.iter().map(|&b| char::from(b)).collect()
        }
        _ => decode_8bit(bytes),
    }
}

/// A header value (subject) as text: RFC 2047 encoded words decoded (Q and B), the rest as
/// [`decode_8bit`]. Whitespace between two encoded words is dropped, as RFC 2047 says.
pub fn decode_header(value: &[u8]) -> String {
    let text = decode_8bit(value);
    let mut out = String::new();
    let mut rest = text.as_str();
    let mut after_word = false;
    while let Some(start) = rest.find("=?") {
        let (before, tail) = rest.split_at(start);
        let Some((word, len)) = encoded_word(tail) else {
            out.push_str(before);
            out.push_str("=?");
            rest = &tail[2..];
            after_word = false;
            continue;
        };
        if !(after_word && before.trim().is_empty()) {
            out.push_str(before);
        }
        out.push_str(&word);
        rest = &tail[len..];
        after_word = true;
    }
    out.push_str(rest);
    out
}

/// One `=?charset?Q|B?text?=` at the start of `s`: its text and its length in `s`.
fn encoded_word(s: &str) -> Option<(String, usize)> {
    let inner = s.strip_prefix("=?")?;
    let (charset, inner) = inner.split_once('?')?;
    let (enc, inner) = inner.split_once('?')?;
    let end = inner.find("?=")?;
    let data = &inner[..end];
    if charset.is_empty() || data.contains(' ') {
        return None;
    }
    let bytes = match enc {
        "Q" | "q" => q_decode(data)?,
        "B" | "b" => b64_decode(data)?,
        _ => return None,
    };
    // "=?" + charset + "?" + enc + "?" + data + "?="
    let len = 2 + charset.len() + 1 + enc.len() + 1 + end + 2;
    Some((decode_charset(charset, &bytes), len))
}

fn q_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'_' => out.push(b' '),
            b'=' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    Some(out)
}

fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects() {
        assert_eq!(decode_header(b"=?ISO-8859-1?q?Gr=FC=DFe?="), "Grüße");
        assert_eq!(
            decode_header(b"=?UTF-8?q?Gr=C3=BC=C3=9Fe_aus?= K\xc3\xb6ln"),
            "Grüße aus Köln"
        );
        assert_eq!(
            decode_header(b"=?utf-8?B?S8O2bG4=?= =?utf-8?q?_ok?="),
            "Köln ok"
        );
        assert_eq!(decode_header(b"plain K\xf6ln"), "plain Köln");
        assert_eq!(decode_header(b"=?bad"), "=?bad");
        assert_eq!(decode_header(b"a =?x?z?y?= b"), "a =?x?z?y?= b");
    }

    #[test]
    fn bodies() {
        assert_eq!(decode_8bit("Köln".as_bytes()), "Köln");
        assert_eq!(decode_8bit(b"K\xf6ln"), "Köln");
        assert_eq!(decode_charset("ISO-8859-1", b"\xe9"), "é");
    }
}
