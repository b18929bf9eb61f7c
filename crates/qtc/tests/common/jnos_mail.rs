//! Mail between qtc and JNOS in the tests: bodies JNOS keeps whole, messages for each side,
//! posting them on JNOS's BBS, and checking that each arrived once, byte for byte.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;

use super::jnos::{Jnos, Stored, User, JNOS_TELNET};
use super::{gen_lines, Daemon, GenMsg, Rng};

/// The whole log of both, for a failure message.
pub fn logs(qtc: &Daemon, jnos: &Jnos) -> String {
    format!(
        "--- qtc ---\n{}\n--- JNOS console ---\n{}",
        super::tail(&qtc.log(), 8000),
        super::tail(&jnos.console_log(), 8000)
    )
}

/// The longest line JNOS keeps whole: it reads lines into 128 bytes (`MBXLINE`), line end and
/// NUL included; a received compressed message's lines end in CR LF there (`fgets` in
/// fbbfwd.c), so a line of 126 bytes is split and its line end becomes a line of its own.
pub const JNOS_MAX_LINE: usize = 125;

/// Body lines for a message that JNOS stores or a JNOS user types: at most
/// [`JNOS_MAX_LINE`] bytes, the first not empty (JNOS's blank line after its R: line is dropped on
/// arrival: an author's leading blank line cannot be told from it), none starting `From `.
pub fn jnos_lines(rng: &mut Rng, size: usize) -> Vec<Vec<u8>> {
    let mut lines = gen_lines(rng, size, JNOS_MAX_LINE);
    for l in &mut lines {
        l.truncate(JNOS_MAX_LINE);
    }
    if lines.first().is_some_and(|l| l.is_empty()) {
        lines[0] = b"first".to_vec();
    }
    // CP437 and 0xFF in every message, a line starting with 0xFF 0xFF among them.
    lines.push(b"\xff\xff CP437 \x80\x9a\xe1 \xff UTF-8 K\xc3\xb6ln".to_vec());
    lines
}

/// The body size of message `i`: the second is 100 KB.
pub fn size_of(rng: &mut Rng, i: usize) -> usize {
    if i == 1 {
        100 * 1024
    } else {
        super::gen_size(rng).min(20_000)
    }
}

/// `n` messages qtc forwards to JNOS: personal mail `@ N0JNS` (some hierarchical) and
/// bulletins `@ WW` to areas JNOS does not forward to qtc.
pub fn for_jnos(rng: &mut Rng, n: usize) -> Vec<GenMsg> {
    (0..n)
        .map(|i| {
            let personal = rng.chance(50);
            let size = size_of(rng, i);
            GenMsg {
                kind: if personal { 'P' } else { 'B' },
                to: if personal {
                    rng.pick(&["N0XYZ", "W1AW", "K9ABC"])
                } else {
                    rng.pick(&["KEPS", "WX", "SALE"])
                }
                .to_string(),
                at: match (personal, rng.chance(20)) {
                    (false, _) => "WW".into(),
                    (true, true) => "N0JNS.#TST.USA.NOAM".into(),
                    (true, false) => "N0JNS".into(),
                },
                from: rng.pick(&["N0ABC", "KA1XYZ", "W0RLI"]).to_string(),
                bid: format!("QJ{i}_N0QTC"),
                subject: format!("qj{i} {size} bytes from qtc"),
                lines: jnos_lines(rng, size),
            }
        })
        .collect()
}

/// The bulletin areas JNOS forwards to qtc. JNOS 2.0o.2 skips the next bulletin of an area
/// (for good: it is never proposed again) when the partner answers `FF` to a full block of 5
/// from that area and JNOS goes on in it: the forwarded marks rewrite the area's index under
/// the offset it goes on from (`dofbbsend` in fbbfwd.c). With at most 5 bulletins per area
/// and session that never happens; docs/forwarding.md tells JNOS sysops.
pub const JNOS_AREAS: [&str; 5] = ["ALL", "QST", "NEWS", "DX", "ARES"];

/// `n` messages a JNOS user (N0USR) posts for qtc: every other one `SP N0ABC @ N0QTC`, the
/// others `SB AREA @ WW` spread over [`JNOS_AREAS`].
pub fn from_jnos(rng: &mut Rng, n: usize) -> Vec<GenMsg> {
    assert!(n <= 50, "at most 5 bulletins per JNOS area and session");
    (0..n)
        .map(|i| {
            let personal = i % 2 == 0;
            let size = size_of(rng, i);
            GenMsg {
                kind: if personal { 'P' } else { 'B' },
                to: if personal {
                    "N0ABC"
                } else {
                    JNOS_AREAS[i / 2 % JNOS_AREAS.len()]
                }
                .into(),
                at: if personal { "N0QTC" } else { "WW" }.into(),
                from: "N0USR".into(),
                bid: String::new(),
                subject: format!("jq{i} {size} bytes from jnos"),
                lines: jnos_lines(rng, size),
            }
        })
        .collect()
}

/// N0USR types `msgs` at JNOS's telnet BBS; returns once JNOS's SMTP queue has filed them
/// all for qtc (personal mail in area n0qtc, bulletins in all).
pub fn post_at_jnos(jnos: &Jnos, msgs: &[GenMsg]) {
    let mut user = User::login(jnos, JNOS_TELNET, "n0usr", "pw");
    for m in msgs {
        let cmd = format!("S{} {} @ {}", m.kind, m.to, m.at);
        user.post(&cmd, &m.subject, &m.lines);
    }
    user.bye();
    jnos.console(&["smtp kick"]);
    // Personal mail for qtc waits in area n0qtc, bulletins in the area named by their `to`.
    let mut areas: HashMap<String, usize> = HashMap::new();
    for m in msgs {
        let area = if m.kind == 'P' {
            "n0qtc".into()
        } else {
            m.to.to_ascii_lowercase()
        };
        *areas.entry(area).or_default() += 1;
    }
    for (area, want) in areas {
        jnos.wait_area(&area, &format!("{want} messages filed"), |s| {
            s.len() >= want
        });
    }
}

/// Every message of `sent` is at qtc exactly once, type, addressee and subject as posted, its
/// body byte for byte, under qtc's R: line and JNOS's.
pub fn check_at_qtc(qtc: &Daemon, jnos: &Jnos, sent: &[GenMsg]) {
    let listed = qtc.listed();
    let mut by_subject: HashMap<&str, Vec<&super::Listed>> = HashMap::new();
    for l in &listed {
        by_subject.entry(l.subject.as_str()).or_default().push(l);
    }
    let mut numbers = Vec::new();
    for m in sent {
        let found = by_subject
            .get(m.subject.as_str())
            .map_or(&[][..], |v| &v[..]);
        if found.len() != 1 {
            let strays: Vec<_> = listed
                .iter()
                .filter(|l| {
                    l.size > 50000
                        || (l.from == "N0USR" && !sent.iter().any(|m| m.subject == l.subject))
                })
                .collect();
            panic!(
                "{:?} at qtc: {found:?}; not sent so: {strays:?}\n{}",
                m.subject,
                logs(qtc, jnos)
            );
        }
        let l = found[0];
        assert_eq!(
            (l.kind.as_str(), l.to.as_str()),
            (&*m.kind.to_string(), &*m.to)
        );
        assert_eq!(l.from, m.from, "{l:?}");
        numbers.push(l.number);
    }
    for (m, s) in sent.iter().zip(qtc.show_many(&numbers)) {
        let rl: Vec<String> = s
            .rlines
            .iter()
            .map(|l| String::from_utf8_lossy(l).into())
            .collect();
        assert!(
            rl.len() == 2 && rl[0].contains("@:N0QTC.") && rl[1].contains("@:N0JNS."),
            "{}: R: lines {rl:?}",
            m.subject
        );
        assert_body(&m.subject, &s.body, &m.body());
    }
}

/// Runs JNOS's SMTP queue and waits until each of `sent` (messages qtc forwarded to it) is
/// filed in its area.
pub fn wait_filed_at_jnos(jnos: &Jnos, sent: &[GenMsg]) {
    jnos.console(&["smtp kick"]);
    for m in sent {
        let area = m.to.to_ascii_lowercase();
        jnos.wait_area(&area, &format!("{} filed", m.bid), |s| {
            s.iter().any(|s| s.bid.eq_ignore_ascii_case(&m.bid))
        });
    }
}

/// Every message of `sent` is in JNOS's mail areas exactly once, its body byte for byte (LF
/// line ends, as JNOS stores) under qtc's R: line.
pub fn check_at_jnos(qtc: &Daemon, jnos: &Jnos, sent: &[GenMsg]) {
    let mut stored: HashMap<String, Vec<Stored>> = HashMap::new();
    for e in std::fs::read_dir(jnos.data().join("spool/mail")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "txt") {
            for s in Stored::parse_mbox(&std::fs::read(&p).unwrap()) {
                stored
                    .entry(s.bid.to_ascii_uppercase())
                    .or_default()
                    .push(s);
            }
        }
    }
    for m in sent {
        // JNOS lower-cases the BIDs of personal mail it takes in MBL (`Message-Id`).
        let found = stored
            .get(&m.bid.to_ascii_uppercase())
            .map_or(&[][..], |v| &v[..]);
        assert_eq!(
            found.len(),
            1,
            "{} at JNOS: {found:?}\n{}",
            m.bid,
            logs(qtc, jnos)
        );
        let s = &found[0];
        assert_eq!(s.subject, m.subject);
        let body = s.body.strip_prefix(b"R:").map(|r| {
            let end = r.iter().position(|&b| b == b'\n').unwrap();
            assert!(r.starts_with(b"") && r[..end].windows(7).any(|w| w == b"@:N0QTC"));
            &r[end + 1..]
        });
        let want: Vec<u8> = m.body().into_iter().filter(|&b| b != b'\r').collect();
        assert_body(&m.bid, body.expect("qtc's R: line first"), &want);
    }
}

/// The largest body sent over AX.25 with JNOS.
pub const AX25_MAX_BODY: usize = 2_000;

/// Drops body lines from the end until the body is at most `max` bytes (the last line, with
/// CP437, UTF-8 and 0xFF in it, is kept).
pub fn shrink(m: &mut GenMsg, max: usize) {
    let last = m.lines.pop().unwrap_or_default();
    while m.lines.iter().map(|l| l.len() + 2).sum::<usize>() + last.len() + 2 > max {
        m.lines.pop();
    }
    m.lines.push(last);
    if let Some(rest) = m.subject.split_once(' ') {
        m.subject = format!("{} {} bytes, shortened for AX.25", rest.0, m.body().len());
    }
}

/// `got` is `want`; otherwise a message showing where they part.
pub fn assert_body(what: &str, got: &[u8], want: &[u8]) {
    if got == want {
        return;
    }
    let at = got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let from = at.saturating_sub(40);
    let line_start = want[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let line = want[line_start..]
        .split(|&b| b == b'\n')
        .next()
        .unwrap_or_default();
    panic!(
        "{what}: body differs (got {} bytes, want {}) at byte {at}, in a line of {} bytes \
         ({:?}): got {:?} want {:?}",
        got.len(),
        want.len(),
        line.len(),
        String::from_utf8_lossy(line),
        String::from_utf8_lossy(&got[from..(at + 40).min(got.len())]),
        String::from_utf8_lossy(&want[from..(at + 40).min(want.len())]),
    );
}
