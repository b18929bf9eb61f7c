//! Replays the sessions captured against xfbbd 7.0.12 (tests/data/*_transcript.txt: `>>>` is
//! what the client sent, `<<<` what xfbbd answered) against qtc's called side on its raw
//! forwarding port, and checks that qtc answers as xfbbd did wherever the protocol fixes the
//! answer. The transcripts logged in with `.CALL` on xfbbd's telnet port; here the client logs
//! in at qtc's `Callsign:` / `Password:` prompts as the BBS user N0PTR instead.

mod common;

use common::{Client, Daemon, Shown};

const PROBES: &str = include_str!("data/protocol_probes_transcript.txt");
const B1_INBOUND: &str = include_str!("data/b1_inbound_transcript.txt");
const B1_TRANSFER: &[u8] = include_bytes!("data/b1-transfer-5000.bin");
const TEXT_05000: &[u8] = include_bytes!("data/text_05000.txt");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// `>>>`: the client (us).
    Sent,
    /// `<<<`: the BBS.
    Got,
}

/// One connection of a transcript.
#[derive(Debug)]
struct Session {
    name: String,
    steps: Vec<(Dir, Vec<u8>)>,
}

/// A Python bytes literal as `repr()` writes it: `b'...'` or `b"..."`.
fn py_bytes(lit: &str) -> Vec<u8> {
    let inner = lit
        .strip_prefix("b'")
        .and_then(|s| s.strip_suffix('\''))
        .or_else(|| lit.strip_prefix("b\"").and_then(|s| s.strip_suffix('"')))
        .unwrap_or_else(|| panic!("not a bytes literal: {lit:?}"));
    let b = inner.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let e = b[i + 1];
        i += 2;
        out.push(match e {
            b'r' => b'\r',
            b'n' => b'\n',
            b't' => b'\t',
            b'\\' | b'\'' | b'"' => e,
            b'x' => {
                let h = std::str::from_utf8(&b[i..i + 2]).unwrap();
                i += 2;
                u8::from_str_radix(h, 16).unwrap()
            }
            _ => panic!("unknown escape \\{} in {lit:?}", e as char),
        });
    }
    out
}

/// Splits a transcript into connections: a new one starts at each login banner.
fn parse(text: &str) -> Vec<Session> {
    let mut sessions: Vec<Session> = Vec::new();
    let mut name = String::from("session");
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("#####") {
            name = h.trim().to_string();
            continue;
        }
        let (dir, lit) = if let Some(l) = line.strip_prefix(">>> ") {
            (Dir::Sent, l)
        } else if let Some(l) = line.strip_prefix("<<< ") {
            (Dir::Got, l)
        } else if line.trim().is_empty() {
            continue;
        } else {
            panic!("unexpected transcript line {line:?}");
        };
        let bytes = py_bytes(lit);
        if dir == Dir::Got && bytes.windows(9).any(|w| w == b"Callsign ") {
            let n = sessions
                .iter()
                .filter(|s| s.name.starts_with(&name))
                .count();
            sessions.push(Session {
                name: format!("{name} #{}", n + 1),
                steps: Vec::new(),
            });
        }
        sessions
            .last_mut()
            .expect("the transcript starts with a login banner")
            .steps
            .push((dir, bytes));
    }
    sessions
}

/// The BBS under test: N0BBS, with N0PTR as a BBS partner that only calls in.
fn bbs() -> Daemon {
    Daemon::start_bbs(
        "N0BBS",
        &[("N0PTR", "ptrpw", "--bbs"), ("N0USR", "pw", "")],
        "[forward]\nlisten = [\"127.0.0.1:0\"]\n[[partner]]\ncallsign = \"N0PTR\"\n\
         protocol = \"b1\"\nroutes = [\"N0PTR\"]\n",
    )
}

/// Reads one CR-ended line (a LF after the CR, should one come, is skipped).
fn read_line(c: &mut Client) -> Vec<u8> {
    let got = c.expect_bytes(b"\r");
    let bytes = got.into_bytes();
    let line = bytes.strip_suffix(b"\r").unwrap_or(&bytes);
    line.strip_prefix(b"\n").unwrap_or(line).to_vec()
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What the protocol fixes about xfbbd's answer `theirs`, checked against qtc's `ours`.
/// Returns false when xfbbd's answer is its own wording that qtc need not copy.
fn check(session: &str, theirs: &[u8], ours: &[u8], log: &dyn Fn() -> String) -> bool {
    let (t, o) = (lossy(theirs), lossy(ours));
    let ok = if t.starts_with("OK") {
        // MBL: the sender looks at the first letter; FBB adds a trailing space.
        o.starts_with("OK")
    } else if t.starts_with("N - ") || t == "NO" {
        // A duplicate BID: qtc answers as FBB does.
        o == "N - BID"
    } else if t == ">" {
        o.ends_with('>')
    } else if t.starts_with("FS ") || t == "FF" || t == "FQ" || t.starts_with("*** Checksum error")
    {
        o == t
    } else {
        return false;
    };
    assert!(
        ok,
        "{session}: xfbbd answered {t:?}, qtc {o:?}\n--- log ---\n{}",
        log()
    );
    true
}

/// Replays one connection; returns a note when xfbbd's answer stopped being comparable (its
/// own error wording) or qtc said more than xfbbd before closing.
fn replay(d: &Daemon, s: &Session) -> Option<String> {
    let log = || common::tail(&d.log(), 8000).to_string();
    let mut c = Client::connect(d.fwd_port.unwrap());
    let mut steps = s.steps.iter().peekable();
    // Login: xfbbd's banner and `.N0PTR` become qtc's prompts and N0PTR + password.
    let (dir, _) = steps.next().unwrap();
    assert_eq!(*dir, Dir::Got);
    let (dir, login) = steps.next().unwrap();
    assert_eq!(*dir, Dir::Sent);
    assert_eq!(login, b".N0PTR\r", "{}", s.name);
    c.expect("Callsign:");
    c.send_raw(b"N0PTR\r");
    c.expect("Password:");
    c.send_raw(b"ptrpw\r");
    // xfbbd's SID, greeting and prompt (maybe in several reads): qtc's SID, then a prompt.
    while steps.peek().is_some_and(|(d, _)| *d == Dir::Got) {
        steps.next();
    }
    let mut sid = None;
    loop {
        let line = read_line(&mut c);
        if line.starts_with(b"[") && line.ends_with(b"]") && sid.is_none() {
            sid = Some(lossy(&line));
        }
        if line.ends_with(b">") {
            break;
        }
    }
    let sid = sid.unwrap_or_else(|| panic!("{}: no SID before the prompt", s.name));
    let flags = sid.rsplit('-').next().unwrap();
    for f in ["B1", "F", "H", "$"] {
        assert!(flags.contains(f), "{}: SID {sid} lacks {f}", s.name);
    }

    let mut free = None;
    while let Some((dir, bytes)) = steps.next() {
        match dir {
            Dir::Sent => {
                if bytes.first() == Some(&0x01) {
                    // The B1 transfer in the transcript is the vector file, byte for byte.
                    assert_eq!(&bytes[..], B1_TRANSFER);
                }
                if free.is_some() {
                    let _ = std::io::Write::write_all(&mut c.stream, bytes);
                } else {
                    c.send_raw(bytes);
                }
            }
            Dir::Got if free.is_some() => {}
            Dir::Got => {
                let mut all = bytes.clone();
                while let Some((Dir::Got, more)) = steps.peek() {
                    all.extend_from_slice(more);
                    steps.next();
                }
                for theirs in all.split(|&b| b == b'\r').filter(|l| !l.is_empty()) {
                    // A line of xfbbd's own wording: from here on only the outcome counts.
                    if !theirs.starts_with(b"OK")
                        && !theirs.starts_with(b"N")
                        && theirs != b">"
                        && !theirs.starts_with(b"F")
                        && !theirs.starts_with(b"*** Checksum")
                    {
                        free = Some(lossy(theirs));
                        break;
                    }
                    let ours = read_line(&mut c);
                    assert!(check(&s.name, theirs, &ours, &log));
                }
            }
        }
    }
    // xfbbd ended every one of these connections; so must qtc.
    let rest = c.expect_close();
    match free {
        Some(theirs) => Some(format!("xfbbd: {theirs:?}; qtc: {rest:?}")),
        None if rest.trim_matches(['\r', '\n']).is_empty() => None,
        None => Some(format!("xfbbd: closed; qtc: {rest:?}, closed")),
    }
}

#[test]
fn transcripts_parse() {
    let probes = parse(PROBES);
    assert_eq!(probes.len(), 4);
    let b1 = parse(B1_INBOUND);
    assert_eq!(b1.len(), 2);
    assert!(b1[1]
        .steps
        .iter()
        .any(|(d, b)| *d == Dir::Sent && b == B1_TRANSFER));
}

#[test]
fn protocol_probes_answered_as_xfbbd() {
    let d = bbs();
    let sessions = parse(PROBES);
    let mut notes = Vec::new();
    for s in &sessions {
        if let Some(n) = replay(&d, s) {
            notes.push(format!("{}: {n}", s.name));
        }
    }
    // Only the aborted binary transfer (C) ends in xfbbd's own error wording.
    eprintln!("{notes:?}");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].starts_with("C:"), "{notes:?}");
    let listed = d.listed();
    let bids: Vec<&str> = listed.iter().map(|m| m.bid.as_str()).collect();
    for bid in ["M1_N0PTR", "M2_N0PTR", "A1_N0PTR", "A2_N0PTR"] {
        assert_eq!(
            bids.iter().filter(|b| **b == bid).count(),
            1,
            "{bid} once: {listed:?}"
        );
    }
    // The aborted one (C1) and the one behind the wrong checksum (D1) are not stored.
    assert_eq!(listed.len(), 4, "{listed:?}");
    let m1 = listed.iter().find(|m| m.bid == "M1_N0PTR").unwrap();
    assert_eq!(
        (m1.kind.as_str(), m1.to.as_str(), m1.from.as_str()),
        ("P", "N0USR", "N0PTR")
    );
    assert_eq!(m1.subject, "MBL test title");
    let shown = Shown::parse(&d.show_raw(m1.number));
    assert_eq!(shown.body, b"line one\r\nline two\r\n");
    let m2 = listed.iter().find(|m| m.bid == "M2_N0PTR").unwrap();
    assert_eq!(
        Shown::parse(&d.show_raw(m2.number)).body,
        b"body\r\n",
        "/EX ends an MBL message too"
    );
    for bid in ["A1_N0PTR", "A2_N0PTR"] {
        let m = listed.iter().find(|m| m.bid == bid).unwrap();
        let s = Shown::parse(&d.show_raw(m.number));
        assert_eq!(s.body, b"body line\r\n", "{bid}");
        assert!(lossy(&s.rlines[0]).contains(" @:N0BBS."), "{bid}");
    }
    for mode in ["Mbl", "FbbAscii", "B1"] {
        d.wait_for_log(&format!("mode={mode} "));
    }
}

#[test]
fn b1_inbound_transfer_stored_byte_identical() {
    let d = bbs();
    let sessions = parse(B1_INBOUND);
    // #1: logged in, then `B` instead of a SID: xfbbd logs off silently, qtc may explain why
    // it closes; either way the connection ends.
    let note = replay(&d, &sessions[0]);
    eprintln!("{}: {note:?}", sessions[0].name);
    assert_eq!(replay(&d, &sessions[1]), None, "{}", sessions[1].name);
    let listed = d.listed();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let m = &listed[0];
    assert_eq!(m.bid, "1_N0PTR");
    assert_eq!(m.subject, "Vector text_05000");
    assert_eq!(
        (
            m.kind.as_str(),
            m.to.as_str(),
            m.at.as_str(),
            m.from.as_str()
        ),
        ("P", "N0USR", "N0BBS", "N0PTR")
    );
    let shown = Shown::parse(&d.show_raw(m.number));
    assert_eq!(shown.rlines.len(), 1, "{:?}", shown.rlines);
    assert!(lossy(&shown.rlines[0]).contains(" @:N0BBS."));
    assert!(
        shown.body == TEXT_05000,
        "body differs from text_05000.txt ({} bytes)",
        shown.body.len()
    );
    // And once is enough: the same proposal again is refused by BID.
    let again = Session {
        name: "again".into(),
        steps: parse(B1_INBOUND).remove(1).steps,
    };
    let mut c = Client::connect(d.fwd_port.unwrap());
    c.expect("Callsign:");
    c.send_raw(b"N0PTR\r");
    c.expect("Password:");
    c.send_raw(b"ptrpw\r");
    c.expect(">\r");
    c.send_raw(&again.steps[3].1); // SID
    c.send_raw(&again.steps[4].1); // the FA proposal
    assert_eq!(read_line(&mut c), b"FS N");
}
