//! Our messages as Winlink B2F messages and back (B2 mode). The R: lines travel at the top of
//! the body, as LinBPQ sends them; `Type:` carries P/B/T, `To:` carries `to@at`.
//!
//! The B2F form of a message depends only on the message and our callsign (`Date:` is when it
//! was stored here), so its compressed form is made once and sent to every B2 partner.

use qtc_fbb::wire::b2f::{Header, Message};
use qtc_mail::{MsgType, Utc};

use crate::{Incoming, Pending};

/// The B2F form of a queued message; `mbo` is our callsign.
pub fn encode(p: &Pending, mbo: &str) -> Vec<u8> {
    let t = Utc::from_unix(p.created);
    let date = format!(
        "{:04}/{:02}/{:02} {:02}:{:02}",
        t.year, t.month, t.day, t.hour, t.minute
    );
    let to = if p.at.is_empty() {
        p.to.clone()
    } else {
        format!("{}@{}", p.to, p.at)
    };
    let kind = match p.kind {
        MsgType::Personal => "Private",
        MsgType::Bulletin => "Bulletin",
        MsgType::Traffic => "Traffic",
    };
    let len = p.text.len().to_string();
    let headers = vec![
        Header {
            name: "Mid",
            value: p.bid.as_bytes(),
        },
        Header {
            name: "Date",
            value: date.as_bytes(),
        },
        Header {
            name: "Type",
            value: kind.as_bytes(),
        },
        Header {
            name: "From",
            value: p.from.as_bytes(),
        },
        Header {
            name: "To",
            value: to.as_bytes(),
        },
        Header {
            name: "Subject",
            value: &p.subject,
        },
        Header {
            name: "Mbo",
            value: mbo.as_bytes(),
        },
        Header {
            name: "Body",
            value: len.as_bytes(),
        },
    ];
    let msg = Message {
        headers,
        body: &p.text,
        files: Vec::new(),
    };
    let mut out = Vec::with_capacity(p.text.len() + 200);
    msg.emit(&mut out);
    out
}

/// A received B2F message as a message to store; `None` when it is not B2F.
pub fn decode(text: &[u8]) -> Option<Incoming> {
    let m = Message::parse(text).ok()?;
    let field = |name: &str| {
        String::from_utf8_lossy(m.get(name).unwrap_or_default())
            .trim()
            .to_string()
    };
    let kind = match field("Type").to_ascii_lowercase().as_str() {
        "bulletin" => MsgType::Bulletin,
        "traffic" => MsgType::Traffic,
        _ => MsgType::Personal,
    };
    let to_field = field("To");
    // Winlink addresses may carry a scheme ("SMTP:"): keep what follows it.
    let to_field = to_field.rsplit(':').next().unwrap_or_default().to_string();
    let (to, at) = match to_field.split_once('@') {
        Some((t, a)) => (t.to_string(), a.to_string()),
        None => (to_field, String::new()),
    };
    let from = field("From");
    let from = from.split('@').next().unwrap_or_default().to_string();
    Some(Incoming {
        kind,
        from,
        to,
        at,
        bid: String::from_utf8_lossy(m.mid()).trim().to_string(),
        title: m.subject().to_vec(),
        text: m.body.to_vec(),
        hold: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let p = Pending {
            number: 3,
            kind: MsgType::Bulletin,
            from: "N0AAA".into(),
            to: "ALL".into(),
            at: "WW".into(),
            bid: "3_N0AAA".into(),
            subject: b"Hello \xff".to_vec(),
            text: b"R:261202/1231Z @:N0AAA #:3 $:3_N0AAA\r\nbody \x80\r\n".to_vec(),
            created: 1_796_214_665,
            compressed: None,
        };
        let b2f = encode(&p, "N0AAA");
        assert!(b2f.starts_with(b"Mid: 3_N0AAA\r\nDate: 2026/12/02 12:31\r\nType: Bulletin\r\n"));
        let back = decode(&b2f).unwrap();
        assert_eq!(back.kind, MsgType::Bulletin);
        assert_eq!((back.to.as_str(), back.at.as_str()), ("ALL", "WW"));
        assert_eq!(back.from, "N0AAA");
        assert_eq!(back.bid, "3_N0AAA");
        assert_eq!(back.title, p.subject);
        assert_eq!(back.text, p.text);
    }
}
