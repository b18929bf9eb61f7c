//! A message kept in a user's folder, as the client sent it (APPEND), in the shape FETCH
//! reads: where its header ends and, for BODYSTRUCTURE and `BODY[1.2]`, its MIME tree (a
//! multipart's parts, a `message/rfc822` part's message, each read in turn). Nothing in it is
//! changed.

use std::ops::Range;

use crate::render::{Part, Rendered};

/// The most parts read in all, at every level; what is past them stays in the bytes of the
/// part they are in.
const MAX_PARTS: usize = 100;

/// The deepest nesting read (a multipart in a message in a multipart...); a multipart or
/// message deeper down is one part holding its bytes (BODYSTRUCTURE offers it as
/// `application/octet-stream`).
const MAX_DEPTH: usize = 8;

/// The message's pieces, its bytes untouched.
pub fn rendered(bytes: Vec<u8>) -> Rendered {
    let header_len = header_end(&bytes, 0);
    let mut budget = MAX_PARTS;
    let top = entity(
        &bytes,
        0..header_len,
        header_len..bytes.len(),
        0,
        &mut budget,
    );
    if top.media.0 == "MULTIPART" && !top.inner.is_empty() {
        let boundary = param(&top, "BOUNDARY").unwrap_or_default();
        return Rendered {
            bytes,
            header_len,
            parts: top.inner,
            multipart: true,
            subtype: top.media.1,
            boundary,
        };
    }
    Rendered {
        bytes,
        header_len,
        parts: vec![top],
        multipart: false,
        subtype: String::new(),
        boundary: String::new(),
    }
}

/// The entity with its header at `mime` and its body at `body`, and what it holds: a
/// multipart's parts, a `message/rfc822`'s message (while depth and the part budget last).
fn entity(
    b: &[u8],
    mime: Range<usize>,
    body: Range<usize>,
    depth: usize,
    budget: &mut usize,
) -> Part {
    let mut p = part(b, mime, body.clone());
    if depth >= MAX_DEPTH {
        return p;
    }
    match (p.media.0.as_str(), p.media.1.as_str()) {
        ("MULTIPART", _) => {
            if let Some(boundary) = param(&p, "BOUNDARY") {
                p.inner = parts(b, body, &boundary, depth + 1, budget);
            }
        }
        ("MESSAGE", "RFC822") if *budget > 0 => {
            *budget -= 1;
            let head = header_end_within(b, body.clone());
            p.inner = vec![entity(
                b,
                body.start..head,
                head..body.end,
                depth + 1,
                budget,
            )];
        }
        _ => {}
    }
    p
}

fn param(p: &Part, name: &str) -> Option<String> {
    p.params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

/// The value of header field `name` in `header` (the first, unfolded), if present.
pub fn field(header: &[u8], name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(header);
    let mut found: Option<String> = None;
    for line in text.split('\n') {
        let line = line.trim_end_matches('\r');
        match &mut found {
            Some(v) if line.starts_with([' ', '\t']) => v.push_str(line),
            Some(_) => break,
            None => {
                if let Some((n, v)) = line.split_once(':') {
                    if n.trim().eq_ignore_ascii_case(name) {
                        found = Some(v.trim().to_string());
                    }
                }
            }
        }
        if line.is_empty() {
            break;
        }
    }
    found
}

/// Where the header starting at `from` ends, blank line included (the end when none).
pub(crate) fn header_end(b: &[u8], from: usize) -> usize {
    let rest = &b[from..];
    if rest.starts_with(b"\r\n") {
        return from + 2;
    }
    if rest.starts_with(b"\n") {
        return from + 1;
    }
    let crlf = rest
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| p + 4);
    let lf = rest.windows(2).position(|w| w == b"\n\n").map(|p| p + 2);
    let end = match (crlf, lf) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b).unwrap_or(rest.len()),
    };
    from + end
}

/// Where the header at the start of `within` ends, blank line included (at most its end).
fn header_end_within(b: &[u8], within: Range<usize>) -> usize {
    header_end(&b[..within.end], within.start)
}

/// The parts between the `--boundary` lines of the multipart body at `within`.
fn parts(
    b: &[u8],
    within: Range<usize>,
    boundary: &str,
    depth: usize,
    budget: &mut usize,
) -> Vec<Part> {
    let delim = format!("--{boundary}");
    let mut starts = Vec::new();
    let mut pos = within.start;
    for line in b[within.clone()].split_inclusive(|&c| c == b'\n') {
        let l = line.trim_ascii_end();
        if l.starts_with(delim.as_bytes()) {
            let closing = l[delim.len()..].starts_with(b"--");
            starts.push((pos, pos + line.len(), closing));
            if closing || starts.len() > *budget {
                break;
            }
        }
        pos += line.len();
    }
    let mut out = Vec::new();
    for w in starts.windows(2) {
        let ((_, begin, closing), (next, _, _)) = (w[0], w[1]);
        if closing || *budget == 0 {
            break;
        }
        *budget -= 1;
        // The line end before the next delimiter belongs to the delimiter (RFC 2046 5.1.1).
        let mut end = next;
        for eol in [b'\n', b'\r'] {
            if end > begin && b[end - 1] == eol {
                end -= 1;
            }
        }
        let head = header_end_within(b, begin..end);
        out.push(entity(b, begin..head, head..end, depth, budget));
    }
    out
}

fn part(b: &[u8], mime: Range<usize>, body: Range<usize>) -> Part {
    let header = &b[mime.clone()];
    let (media, params) = content_type(field(header, "Content-Type").as_deref());
    let encoding = match field(header, "Content-Transfer-Encoding")
        .unwrap_or_default()
        .to_ascii_uppercase()
        .as_str()
    {
        "BASE64" => "BASE64",
        "QUOTED-PRINTABLE" => "QUOTED-PRINTABLE",
        "8BIT" => "8BIT",
        "BINARY" => "BINARY",
        _ => "7BIT",
    };
    let name = params
        .iter()
        .find(|(k, _)| k == "NAME")
        .map(|(_, v)| v.clone());
    // Its lines, the last one counted when no line end closes it (a part's last line end
    // belongs to the boundary after it).
    let text = &b[body.clone()];
    let lines = text.iter().filter(|&&c| c == b'\n').count()
        + usize::from(!text.is_empty() && !text.ends_with(b"\n"));
    Part {
        mime,
        body,
        media,
        params,
        encoding,
        lines,
        name,
        inner: Vec::new(),
    }
}

type Media = ((String, String), Vec<(String, String)>);

/// A Content-Type's type, subtype and parameters (names upper case); text/plain when none.
fn content_type(v: Option<&str>) -> Media {
    let v = v.unwrap_or("text/plain; charset=us-ascii");
    let mut fields = v.split(';');
    let (t, sub) = fields
        .next()
        .and_then(|t| t.trim().split_once('/'))
        .unwrap_or(("text", "plain"));
    let params = fields
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| {
            let v = v.trim().trim_matches('"');
            (k.trim().to_ascii_uppercase(), v.to_string())
        })
        .collect();
    let up = |s: &str| s.trim().to_ascii_uppercase();
    ((up(t), up(sub)), params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_message_is_one_part_and_keeps_its_bytes() {
        let m = b"From: a@b\r\nSubject: hi\r\n\r\nline\r\n".to_vec();
        let r = rendered(m.clone());
        assert_eq!(r.bytes, m);
        assert_eq!(r.header_len, 26);
        assert!(!r.multipart);
        assert_eq!(r.parts[0].media, ("TEXT".into(), "PLAIN".into()));
        assert_eq!(field(&m, "subject").as_deref(), Some("hi"));
    }

    #[test]
    fn a_multipart_message_has_its_parts() {
        let m = b"Content-Type: multipart/mixed; boundary=\"XX\"\r\n\r\npre\r\n--XX\r\n\
Content-Type: text/plain\r\n\r\nbody\r\n--XX\r\nContent-Type: image/png; name=\"a.png\"\r\n\
Content-Transfer-Encoding: base64\r\n\r\nAAAA\r\n--XX--\r\n"
            .to_vec();
        let r = rendered(m.clone());
        assert!(r.multipart);
        assert_eq!(r.parts.len(), 2);
        assert_eq!(&m[r.parts[0].body.clone()], b"body");
        assert_eq!(&m[r.parts[1].body.clone()], b"AAAA");
        assert_eq!(r.parts[1].name.as_deref(), Some("a.png"));
        assert_eq!(r.parts[1].encoding, "BASE64");
    }

    #[test]
    fn no_header_end_is_all_header() {
        let r = rendered(b"junk without end".to_vec());
        assert_eq!(r.header_len, 16);
        assert_eq!(r.parts[0].body, 16..16);
    }
}
