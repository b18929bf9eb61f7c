//! Where a message goes next: the routing rules of the spec (§6), as pure functions.
//!
//! - Personal and NTS mail: to the one partner whose routes match the most specific element of
//!   the hierarchical `@` address (the first element is the most specific); the first partner
//!   in the configuration wins a tie. Mail for this BBS stays here.
//! - Bulletins: flooded to every partner whose routes match any element of `@` (or the
//!   bulletin's `to` category), except the partner it came from and any BBS already named in
//!   its R: lines.

use qtc_callsign::Callsign;

use crate::message::MsgType;

/// One forwarding partner's routing entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartnerRoutes {
    /// The partner's call (no SSID).
    pub call: Callsign,
    /// `@` elements it takes, upper case: a BBS call, `#NCA`, `CA`, `USA`, `NOAM`, `WW`...
    pub routes: Vec<String>,
    /// A Winlink station (a B2 partner): it collects the personal mail here addressed to its
    /// own callsign and to the calls among its routes, so that mail waits in its queue.
    pub collects: bool,
}

/// What the router needs to know about a message.
#[derive(Clone, Copy, Debug)]
pub struct RouteQuery<'a> {
    /// P, B or T.
    pub kind: MsgType,
    /// Addressee.
    pub to: &'a str,
    /// Hierarchical `@` address, may be empty.
    pub at: &'a str,
    /// The partner it arrived from; `None` when written here.
    pub origin: Option<&'a str>,
    /// BBS calls named in its R: lines.
    pub seen: &'a [String],
}

/// The `@` address's elements, most specific first, upper case.
fn elements(at: &str) -> impl Iterator<Item = String> + '_ {
    at.split('.')
        .filter(|e| !e.is_empty())
        .map(|e| e.to_ascii_uppercase())
}

/// True when the first element of `at` is this BBS, `own_call` (no SSID), or `at` is empty:
/// deliver here.
pub fn is_local(at: &str, own_call: Callsign) -> bool {
    match elements(at).next() {
        None => true,
        Some(first) => first == own_call.base(),
    }
}

/// The partners a message must be queued for, in configuration order.
pub fn targets(
    q: &RouteQuery<'_>,
    own_call: Callsign,
    partners: &[PartnerRoutes],
) -> Vec<Callsign> {
    // Origin and R: lines are text from the wire: compared as text with the partner's call.
    let excluded = |call: Callsign| {
        let call = call.base();
        q.origin.is_some_and(|o| o.eq_ignore_ascii_case(call))
            || q.seen.iter().any(|s| s.eq_ignore_ascii_case(call))
    };
    match q.kind {
        MsgType::Bulletin => {
            let mut wanted: Vec<String> = elements(q.at).collect();
            wanted.push(q.to.to_ascii_uppercase());
            partners
                .iter()
                .filter(|p| !excluded(p.call))
                .filter(|p| p.routes.iter().any(|r| wanted.contains(r)))
                .map(|p| p.call)
                .collect()
        }
        MsgType::Personal | MsgType::Traffic => {
            if is_local(q.at, own_call) {
                let to = q.to.split('-').next().unwrap_or(q.to).to_ascii_uppercase();
                return partners
                    .iter()
                    .filter(|p| p.collects && !excluded(p.call))
                    .find(|p| p.call.base() == to || p.routes.contains(&to))
                    .map(|p| vec![p.call])
                    .unwrap_or_default();
            }
            for element in elements(q.at) {
                if let Some(p) = partners
                    .iter()
                    .find(|p| p.routes.contains(&element) && !excluded(p.call))
                {
                    return vec![p.call];
                }
            }
            Vec::new()
        }
    }
}

/// The BBS calls named in a block of R: lines (`R:... @:N0BBS.#NCA...` or `@N0BBS`).
pub fn rline_calls(rlines: &[u8]) -> Vec<String> {
    let mut calls = Vec::new();
    for line in rlines.split(|&b| b == b'\n' || b == b'\r') {
        if !line.starts_with(b"R:") {
            continue;
        }
        let text = String::from_utf8_lossy(line);
        if let Some(pos) = text.find('@') {
            let rest = text[pos + 1..].trim_start_matches(':');
            let call: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if !call.is_empty() {
                calls.push(call.to_ascii_uppercase());
            }
        }
    }
    calls
}

/// Splits received text into its leading R: lines (each with its line end) and the body. A
/// blank line after the R: lines, before a line starting `R:`, is the separator [`join_rlines`]
/// puts there: neither R: line nor body.
pub fn split_rlines(text: &[u8]) -> (&[u8], &[u8]) {
    let mut end = 0;
    while text[end..].starts_with(b"R:") {
        match text[end..].iter().position(|&b| b == b'\n') {
            Some(nl) => end += nl + 1,
            None => {
                end = text.len();
                break;
            }
        }
    }
    let (rlines, body) = text.split_at(end);
    if rlines.is_empty() {
        return (rlines, body);
    }
    match strip_blank_line(body) {
        Some(rest) if starts_r_line(rest) => (rlines, rest),
        _ => (rlines, body),
    }
}

/// The R: lines and the body of a message as one text, as it is forwarded: a body whose first
/// line, its blank lines aside, starts `R:` gets a blank line before it, so that no partner
/// takes the body's line for an R: line (JNOS and LinBPQ separate their own R: line from a
/// body the same way). [`split_rlines`] takes it off again.
pub fn join_rlines(rlines: &[u8], body: &[u8]) -> Vec<u8> {
    let mut text = Vec::with_capacity(rlines.len() + body.len() + 2);
    text.extend_from_slice(rlines);
    if !rlines.is_empty() && starts_r_line(body) {
        text.extend_from_slice(b"\r\n");
    }
    text.extend_from_slice(body);
    text
}

/// The text after its first line, when that line is blank (CR LF or LF).
fn strip_blank_line(text: &[u8]) -> Option<&[u8]> {
    text.strip_prefix(b"\r\n")
        .or_else(|| text.strip_prefix(b"\n"))
}

/// Whether `text`, its blank lines aside, starts with a line starting `R:`.
fn starts_r_line(mut text: &[u8]) -> bool {
    while let Some(rest) = strip_blank_line(text) {
        text = rest;
    }
    text.starts_with(b"R:")
}

/// Splits off the first line (with its line end) of a block of lines.
pub fn split_first_line(text: &[u8]) -> (&[u8], &[u8]) {
    match text.iter().position(|&b| b == b'\n') {
        Some(nl) => text.split_at(nl + 1),
        None => (text, &text[text.len()..]),
    }
}

/// Our R: line for a message stored here as number `number`, CR LF ended, at most 79
/// characters before the line end: `R:YYMMDD/HHMMZ @:CALL.HADDR #:NUM $:BID`.
pub fn rline(now: i64, haddr: &str, number: u64, bid: &str) -> Vec<u8> {
    let stamp = crate::Utc::from_unix(now).rline_stamp();
    let mut line = format!("R:{stamp} @:{haddr} #:{number} $:{bid}");
    let mut cut = line.len().min(79);
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    line.truncate(cut);
    line.push_str("\r\n");
    line.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partners() -> Vec<PartnerRoutes> {
        let p = |c: &str, r: &[&str]| PartnerRoutes {
            call: c.parse().unwrap(),
            routes: r.iter().map(|s| s.to_string()).collect(),
            collects: c == "N0PAT",
        };
        vec![
            p("N0BBB", &["N0BBB", "#NCA", "CA", "USA", "WW"]),
            p("N0CCC", &["N0CCC", "NOAM", "WW"]),
            p("N0DDD", &["N0XYZ", "USA"]),
            p("N0PAT", &["N0PAT", "N0PAU"]),
        ]
    }

    #[test]
    fn local_mail_for_a_winlink_station_waits_in_its_queue() {
        let p = partners();
        let t = |to, at| names(targets(&q(MsgType::Personal, to, at, &[]), own(), &p));
        assert_eq!(t("N0PAT", ""), vec!["N0PAT"]);
        assert_eq!(t("N0PAU", "N0AAA"), vec!["N0PAT"]);
        assert_eq!(t("N0PAT-5", "N0AAA.#NCA.CA"), vec!["N0PAT"]);
        // A BBS partner collects nothing; a local user's mail stays here.
        assert!(t("N0BBB", "").is_empty());
        assert!(t("N0USR", "").is_empty());
    }

    /// The BBS the tests route from.
    fn own() -> Callsign {
        "N0AAA".parse().unwrap()
    }

    /// The partners' calls as text, to compare with the expected ones.
    fn names(calls: Vec<Callsign>) -> Vec<String> {
        calls.iter().map(ToString::to_string).collect()
    }

    fn q<'a>(kind: MsgType, to: &'a str, at: &'a str, seen: &'a [String]) -> RouteQuery<'a> {
        RouteQuery {
            kind,
            to,
            at,
            origin: None,
            seen,
        }
    }

    #[test]
    fn personal_mail_takes_the_most_specific_match() {
        let p = partners();
        let t = |at| names(targets(&q(MsgType::Personal, "N0USR", at, &[]), own(), &p));
        assert_eq!(t("N0XYZ.#SCA.CA.USA.NOAM"), vec!["N0DDD"]);
        assert_eq!(t("N0QQQ.#SCA.CA.USA.NOAM"), vec!["N0BBB"]);
        assert_eq!(t("N0QQQ.ON.CAN.NOAM"), vec!["N0CCC"]);
        assert!(t("N0AAA.#NCA.CA.USA.NOAM").is_empty(), "ours: local");
        assert!(t("").is_empty());
        assert!(t("G0XXX.GBR.EURO").is_empty(), "no route: stays here");
    }

    #[test]
    fn bulletins_flood_except_origin_and_seen() {
        let p = partners();
        let seen = vec!["N0CCC".to_string()];
        let mut query = q(MsgType::Bulletin, "ALL", "WW", &[]);
        assert_eq!(names(targets(&query, own(), &p)), vec!["N0BBB", "N0CCC"]);
        query.origin = Some("N0BBB");
        assert_eq!(names(targets(&query, own(), &p)), vec!["N0CCC"]);
        query.seen = &seen;
        assert!(names(targets(&query, own(), &p)).is_empty());
        let usa = q(MsgType::Bulletin, "ALL", "USA", &[]);
        assert_eq!(names(targets(&usa, own(), &p)), vec!["N0BBB", "N0DDD"]);
    }

    #[test]
    fn rlines_are_parsed_split_and_made() {
        let text = b"R:261202/1231Z @:N0BBB.#NCA.CA.USA.NOAM #:12 $:1_N0BBB\r\nR:261202/1200Z 45@N0CCC.NOAM\r\nHello\r\nR: not a header\r\n";
        let (r, body) = split_rlines(text);
        assert_eq!(body, b"Hello\r\nR: not a header\r\n");
        assert_eq!(rline_calls(r), vec!["N0BBB", "N0CCC"]);
        let mine = rline(1_796_214_665, "N0AAA.#NCA.CA.USA.NOAM", 7, "7_N0AAA");
        assert_eq!(
            mine,
            b"R:261202/1231Z @:N0AAA.#NCA.CA.USA.NOAM #:7 $:7_N0AAA\r\n"
        );
        // A body whose first line starts R: is kept apart from the R: lines by a blank line.
        for body in [
            &b"R:forged\r\n"[..],
            b"\r\nR:forged\r\n",
            b"plain\r\n",
            b"\r\nplain\r\n",
        ] {
            let joined = join_rlines(&mine, body);
            assert_eq!(
                joined.len() - mine.len() - body.len(),
                if starts_r_line(body) { 2 } else { 0 }
            );
            assert_eq!(split_rlines(&joined), (&mine[..], body));
        }
        assert_eq!(join_rlines(b"", b"R:x\r\n"), b"R:x\r\n");
        let long = rline(0, &"X".repeat(100), 1, "B");
        assert_eq!(long.len(), 81);
        // Found by fuzzing: the cut must not split a character.
        let odd = rline(0, "N0BBS", 12345, &format!("A{}", "\u{e9}".repeat(26)));
        assert!(std::str::from_utf8(&odd).is_ok());
    }
}
