//! The limits a forwarding partner meets, on qtc's raw forwarding port, each with the answer
//! the partner gets: a proposal larger than `[limits] max_message` is refused (`FS R`) before
//! any of it moves, and the rest of the block still arrives; more proposals in one block than
//! FBB allows (5) is a protocol error that names the limit and ends the session. A hold/reject
//! rule added by a reload (SIGHUP) applies at the BBS prompt and to proposals alike.

mod common;

use common::{Client, Daemon};

/// N0BBS, taking messages of up to 10,000 bytes from its partner N0PTR.
fn bbs() -> Daemon {
    Daemon::start_bbs(
        "N0BBS",
        &[("N0PTR", "ptrpw", "--bbs"), ("N0USR", "pw", "")],
        "[limits]\nmax_message = 10000\n[forward]\nlisten = [\"127.0.0.1:0\"]\n\
         [[partner]]\ncallsign = \"N0PTR\"\nprotocol = \"fbb\"\n",
    )
}

/// Logs in as N0PTR, reads qtc's SID and prompt, answers with an FBB ASCII SID.
fn login(d: &Daemon) -> Client {
    let mut c = Client::connect(d.fwd_port.unwrap());
    c.expect("Callsign:");
    c.send_raw(b"N0PTR\r");
    c.expect("Password:");
    c.send_raw(b"ptrpw\r");
    c.expect(">\r");
    c.send_raw(b"[TST-1.0-FHM$]\r");
    c
}

/// A proposal block: the lines, then `F>` with the checksum that makes the bytes sum to 0.
fn block(lines: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l.as_bytes());
        out.push(b'\r');
    }
    let sum = out.iter().fold(0u8, |a, &b| a.wrapping_add(b));
    out.extend_from_slice(format!("F> {:02X}\r", sum.wrapping_neg()).as_bytes());
    out
}

/// N0PTR proposes `refused`, then a small message for N0USR: the first is refused (`FS R+`)
/// before it moves, and only the second is stored.
fn only_the_second_is_taken(d: &Daemon, refused: &str) {
    let mut c = login(d);
    c.send_raw(&block(&[
        refused.into(),
        "FB P N0PTR N0BBS N0USR OK1_N0PTR 20".into(),
    ]));
    c.expect("FS R+\r");
    c.send_raw(b"Small one\rbody line\r\x1a\r");
    c.expect("FF\r");
    c.send_raw(b"FF\r");
    c.expect("FQ\r");
    c.expect_close();
    let bids: Vec<String> = d.listed().into_iter().map(|m| m.bid).collect();
    assert_eq!(bids, ["OK1_N0PTR"]);
}

#[test]
fn an_oversized_proposal_is_refused_before_it_moves() {
    let d = bbs();
    only_the_second_is_taken(&d, "FB P N0PTR N0BBS N0USR BIG1_N0PTR 20000");
    d.wait_for_log("proposal refused: larger than [limits] max_message");
    let log = d.log();
    assert!(
        log.lines().any(
            |l| l.contains("proposal refused: larger than [limits] max_message")
                && l.contains("BIG1_N0PTR")
        ),
        "{log}"
    );
}

#[test]
fn more_than_five_proposals_is_a_protocol_error() {
    let d = bbs();
    let mut c = login(&d);
    let lines: Vec<String> = (1..=6)
        .map(|i| format!("FB P N0PTR N0BBS N0USR M{i}_N0PTR 20"))
        .collect();
    c.send_raw(&block(&lines));
    let said = c.expect_close();
    assert!(
        said.contains("*** Protocol error") && said.contains('5'),
        "{said:?}"
    );
    assert!(d.listed().is_empty());
}

#[test]
fn a_rule_added_by_sighup_applies_to_users_and_partners_alike() {
    let d = bbs();
    let path = common::config_path(d.dir.path());
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("[[rule]]\naction = \"reject\"\nfield = \"to\"\npattern = \"N0BAD\"\n");
    std::fs::write(&path, text).unwrap();
    let pid = d.child.id().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap();
    assert!(kill.success());
    d.wait_for_log("configuration reloaded");
    // Entered at the BBS prompt: refused by the new rule.
    let mut u = d.connect();
    u.expect("Callsign:");
    u.send("N0USR");
    u.expect("Password:");
    u.send("pw");
    u.expect("de N0BBS>");
    u.send("SP N0BAD");
    u.expect("Subject:");
    u.send("hello");
    u.expect("/EX");
    u.send("body");
    u.send("/EX");
    assert!(u
        .expect("de N0BBS>")
        .contains("does not accept that message"));
    // Proposed by a partner: refused by the same rule before it moves.
    only_the_second_is_taken(&d, "FB P N0PTR N0BBS N0BAD BAD1_N0PTR 20");
}
