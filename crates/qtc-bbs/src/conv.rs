//! The conference (`CONV`, `CHAT`): what a user types there, as a sans-IO state machine. Lines
//! are said to the channel; `/W` asks who is on it, `/J n` moves to channel n, `/Q` leaves, `/H`
//! helps. The daemon carries what is said between users and shows what others say with
//! [`said`].

use crate::lines::{Line, LineReader};

/// What the user did, for the daemon to carry out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConvEvent {
    /// A line for everyone on the channel.
    Say(String),
    /// `/W`: who is on the channel.
    Who,
    /// `/J n`: leave this channel for channel n.
    Join(u16),
    /// `/Q`: back to the BBS.
    Quit,
}

const CONV_HELP: &str = "/W who is here  /J n channel n  /Q back to the BBS  /H this help\r";

/// One user in the conference.
pub struct Conv {
    channel: u16,
    lines: LineReader,
}

impl Conv {
    /// A user entering `channel`; `max_line` bounds what one line may hold.
    pub fn new(channel: u16, max_line: usize) -> Conv {
        Conv {
            channel,
            lines: LineReader::new(max_line),
        }
    }

    /// The greeting shown on entry.
    pub fn welcome(&self) -> String {
        format!("*** Conference channel {}. {CONV_HELP}", self.channel)
    }

    /// The channel the user is on.
    pub fn channel(&self) -> u16 {
        self.channel
    }

    /// Feeds what the user typed; text for the user alone goes to `out`.
    pub fn input(&mut self, typed: &[u8], out: &mut Vec<u8>) -> Vec<ConvEvent> {
        let mut lines = Vec::new();
        self.lines.push(typed, |l| lines.push(l));
        let mut events = Vec::new();
        for line in lines {
            let Line::Text(text) = line else {
                out.extend_from_slice(b"*** Line too long: not sent.\r");
                continue;
            };
            let text = String::from_utf8_lossy(&text).trim().to_string();
            let mut words = text.split_whitespace();
            let first = words.next().unwrap_or("").to_ascii_uppercase();
            match first.as_str() {
                "" => {}
                "/Q" | "/QUIT" | "/EX" => {
                    events.push(ConvEvent::Quit);
                    // Whatever follows /Q in the same chunk is for the BBS, which is not
                    // reading yet; it is dropped like type-ahead at a closed prompt.
                    break;
                }
                "/W" | "/WHO" => events.push(ConvEvent::Who),
                "/J" | "/JOIN" => match words.next().and_then(|n| n.parse().ok()) {
                    Some(n) => {
                        self.channel = n;
                        events.push(ConvEvent::Join(n));
                    }
                    None => out.extend_from_slice(b"*** Usage: /J n (a channel number)\r"),
                },
                "/H" | "/HELP" | "/?" => out.extend_from_slice(CONV_HELP.as_bytes()),
                _ if first.starts_with('/') => {
                    out.extend_from_slice(format!("*** Unknown {first}. {CONV_HELP}").as_bytes())
                }
                _ => events.push(ConvEvent::Say(text)),
            }
        }
        events
    }
}

/// How a line from `call` shows on the others' screens: control characters made visible, so no
/// escape sequence reaches another user's terminal.
pub fn said(call: &str, text: &str) -> String {
    format!("<{call}>: {}\r", qtc_mail::text::visible_line(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_commands_and_quit() {
        let mut c = Conv::new(0, 80);
        let mut out = Vec::new();
        let ev = c.input(b"hello all\r/w\r/j 7\r/x\r\r/q\rL\r", &mut out);
        assert_eq!(
            ev,
            vec![
                ConvEvent::Say("hello all".into()),
                ConvEvent::Who,
                ConvEvent::Join(7),
                ConvEvent::Quit
            ]
        );
        assert_eq!(c.channel(), 7);
        assert!(String::from_utf8_lossy(&out).contains("Unknown /X"));
        assert_eq!(said("N0USR", "hi"), "<N0USR>: hi\r");
        // Another user's escape sequence never reaches a terminal raw.
        assert!(!said("N0USR", "\x1b[2Jhi").contains('\x1b'));
    }
}
