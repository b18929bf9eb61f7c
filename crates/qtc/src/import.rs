//! `qtc msg import`: messages from a file in the classic BBS import form, the same lines a user
//! would type (JNOS and LinFBB read mail files like this):
//!
//! ```text
//! SB ALL @ WW < N0ABC $1234_N0ABC
//! Subject line
//! Body lines...
//! /EX
//! ```
//!
//! Lines may end in LF or CR LF; body bytes are kept as they are (lines stored with CR LF).
//! `/EX` or a Ctrl-Z line ends a message. Without `< FROM` the sender is this BBS.

use qtc_bbs::{Command, SendCmd};
use qtc_callsign::Callsign;
use qtc_mail::{MsgStatus, NewMessage};

/// A problem at a line of the import file.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct ImportError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub what: String,
}

/// Parses an import file into messages, all or nothing.
pub fn parse(
    data: &[u8],
    own_call: Callsign,
    max_message: usize,
) -> Result<Vec<NewMessage>, ImportError> {
    let mut msgs = Vec::new();
    let mut lines = data.split(|&b| b == b'\n').enumerate().peekable();
    while let Some((i, raw)) = lines.next() {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.trim_ascii().is_empty() {
            continue;
        }
        let err = |what: String| ImportError { line: i + 1, what };
        let text = String::from_utf8_lossy(line);
        let cmd: SendCmd = match qtc_bbs::parse(&text) {
            Ok(Command::Send(s)) => s,
            Ok(_) => {
                return Err(err(format!(
                    "expected a send line (SP/SB/ST ...), got {text:?}"
                )))
            }
            Err(e) => return Err(err(e.to_string())),
        };
        let Some((si, subject)) = lines.next() else {
            return Err(err("the file ends before the subject".into()));
        };
        let subject = subject.strip_suffix(b"\r").unwrap_or(subject).to_vec();
        if subject.trim_ascii().is_empty() {
            return Err(ImportError {
                line: si + 1,
                what: "empty subject".into(),
            });
        }
        let mut body = Vec::new();
        let mut ended = false;
        for (_, raw) in lines.by_ref() {
            let l = raw.strip_suffix(b"\r").unwrap_or(raw);
            if l.trim_ascii().eq_ignore_ascii_case(b"/EX") {
                ended = true;
                break;
            }
            if let Some(pos) = l.iter().position(|&b| b == 0x1a) {
                if pos > 0 {
                    body.extend_from_slice(&l[..pos]);
                    body.extend_from_slice(b"\r\n");
                }
                ended = true;
                break;
            }
            body.extend_from_slice(l);
            body.extend_from_slice(b"\r\n");
        }
        if !ended {
            return Err(err("message not ended by /EX".into()));
        }
        if body.len() > max_message {
            return Err(err(format!(
                "message larger than [limits] max_message ({max_message} bytes)"
            )));
        }
        msgs.push(NewMessage {
            kind: cmd.kind,
            status: MsgStatus::New,
            to: cmd.to,
            at: cmd.at,
            from: cmd.from.unwrap_or_else(|| own_call.to_string()),
            bid: cmd.bid,
            subject,
            rlines: Vec::new(),
            body,
        });
    }
    Ok(msgs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The BBS importing.
    fn own() -> Callsign {
        "N0AAA".parse().unwrap()
    }

    #[test]
    fn parses_blocks() {
        let file = b"SB ALL @ WW < N0ABC $B1_N0ABC\nHello\nline \xff one\r\n\nlast\n/EX\n\nSP N0XYZ @ N0BBB\nTwo\n\x1a\n";
        let m = parse(file, own(), 1000).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].bid.as_deref(), Some("B1_N0ABC"));
        assert_eq!(m[0].body, b"line \xff one\r\n\r\nlast\r\n");
        assert_eq!(m[1].from, "N0AAA");
        assert_eq!(m[1].at, "N0BBB");
        assert!(m[1].body.is_empty());
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse(b"SP N0XYZ\nSubj\nbody\n", own(), 1000).unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse(b"\nL\n", own(), 1000).unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse(b"SP N0XYZ\nS\nxxxxxxxxxxxx\n/EX\n", own(), 5).unwrap_err();
        assert!(e.to_string().contains("max_message"));
    }
}
