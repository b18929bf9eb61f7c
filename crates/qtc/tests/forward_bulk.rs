//! Bulk forwarding between real daemons, in every mode: A and B exchange 1,000 mixed messages
//! (500 seeded at each side: personal ones addressed to the other BBS, and bulletins; bodies of
//! 0 B to 100 KB with CP437, UTF-8 and 0xFF bytes) in both directions in one session; then B
//! floods the bulletins on to a third BBS, C.

mod common;

use common::{check_arrived, gen_messages, write_import, Daemon, GenMsg, Rng};

/// The three BBSes: C (called by B), B (called by A), A. B's partners are A (routes N0AAA, WW)
/// and C (routes N0CCC, WW); A's partner is B, C's partner is B.
fn trio(protocol: &str) -> (Daemon, Daemon, Daemon) {
    let c = Daemon::start_bbs(
        "N0CCC",
        &[("N0BBB", "cpw", "--bbs")],
        &format!(
            "[forward]\nlisten = [\"127.0.0.1:0\"]\n[[partner]]\ncallsign = \"N0BBB\"\n\
             protocol = \"{protocol}\"\nroutes = [\"N0BBB\", \"WW\"]\n"
        ),
    );
    let cport = c.fwd_port.unwrap();
    let b = Daemon::start_bbs(
        "N0BBB",
        &[("N0AAA", "fwdpw", "--bbs")],
        &format!(
            "[forward]\nlisten = [\"127.0.0.1:0\"]\n\
             [[partner]]\ncallsign = \"N0AAA\"\nprotocol = \"{protocol}\"\nroutes = [\"N0AAA\", \"WW\"]\n\
             [[partner]]\ncallsign = \"N0CCC\"\nconnect = \"tcp:127.0.0.1:{cport}\"\npassword = \"cpw\"\n\
             protocol = \"{protocol}\"\nroutes = [\"N0CCC\", \"WW\"]\n"
        ),
    );
    let bport = b.fwd_port.unwrap();
    let a = Daemon::start_bbs(
        "N0AAA",
        &[],
        &format!(
            "[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:127.0.0.1:{bport}\"\n\
             password = \"fwdpw\"\nprotocol = \"{protocol}\"\nroutes = [\"N0BBB\", \"WW\"]\n"
        ),
    );
    (a, b, c)
}

fn bulletins(msgs: &[GenMsg]) -> Vec<&GenMsg> {
    msgs.iter().filter(|m| m.kind == 'B').collect()
}

/// BIDs A was offered by B during the session, from A's debug log (`proposal ... bid=X`).
fn offered_to(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains(" proposal ") && l.contains(" answer="))
        .filter_map(|l| l.split(" bid=").nth(1))
        .map(|rest| rest.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

fn bulk(protocol: &str, per_side: usize, seed: u64) {
    let (a, b, c) = trio(protocol);
    let mut rng = Rng(seed);
    let from_a = gen_messages(&mut rng, per_side, "A", "N0AAA", "N0BBB");
    let from_b = gen_messages(&mut rng, per_side, "B", "N0BBB", "N0AAA");
    let file = write_import(a.dir.path(), "a.txt", &from_a, &mut rng);
    a.import(&file, per_side);
    let file = write_import(b.dir.path(), "b.txt", &from_b, &mut rng);
    b.import(&file, per_side);
    let bull_a = bulletins(&from_a);
    let bull_b = bulletins(&from_b);
    assert!(
        a.ctl(&["status"])
            .contains(&format!("N0BBB    {per_side} queued")),
        "{}",
        a.ctl(&["status"])
    );

    // One session, both directions.
    let out = a.forward_ok("N0BBB", &b);
    assert!(
        out.contains(&format!("ok: N0BBB: {per_side} received, {per_side} sent")),
        "{out}"
    );
    a.wait_for_log(&format!("mode={} ", mode_name(protocol)));
    let checked_b = check_arrived(
        &b,
        &from_a.iter().collect::<Vec<_>>(),
        "N0BBB",
        Some("N0AAA"),
        1,
    );
    let checked_a = check_arrived(
        &a,
        &from_b.iter().collect::<Vec<_>>(),
        "N0AAA",
        Some("N0BBB"),
        1,
    );
    assert_eq!((checked_a, checked_b), (per_side, per_side));
    assert_eq!(a.listed().len(), 2 * per_side);
    assert_eq!(b.listed().len(), 2 * per_side);

    // B offered A each of its own messages once, and none of A's (no bulletin went back).
    let mut offered = offered_to(&a.log());
    let back: Vec<&String> = offered.iter().filter(|b| b.ends_with("_N0AAA")).collect();
    assert!(back.is_empty(), "B offered A its own messages: {back:?}");
    offered.sort();
    let mut want: Vec<String> = from_b.iter().map(|m| m.bid.to_ascii_uppercase()).collect();
    want.sort();
    assert_eq!(offered, want, "B's offers to A, from A's log");
    assert!(
        a.fwd_queue(None).contains("\n0 queued"),
        "{}",
        a.fwd_queue(None)
    );
    assert!(
        b.fwd_queue(Some("N0AAA")).contains("\n0 queued"),
        "{}",
        b.fwd_queue(Some("N0AAA"))
    );
    // The bulletins of both wait at B for C, once each.
    let for_c = bull_a.len() + bull_b.len();
    assert!(
        b.fwd_queue(Some("N0CCC"))
            .contains(&format!("\n{for_c} queued")),
        "{}",
        b.fwd_queue(Some("N0CCC"))
    );

    // B floods them to C.
    let out = b.forward_ok("N0CCC", &c);
    assert!(
        out.contains(&format!("ok: N0CCC: 0 received, {for_c} sent")),
        "{out}"
    );
    // C had nothing for B: none of the bulletins went back from C to B.
    let log = b.log();
    let from_c = log
        .lines()
        .filter(|l| l.contains(" proposal partner=N0CCC "))
        .count();
    assert_eq!(from_c, 0, "C offered B {from_c} messages");
    let at_c = c.listed();
    assert_eq!(at_c.len(), for_c, "C holds only the bulletins");
    assert!(at_c.iter().all(|m| m.kind == "B"));
    // Bodies at C: every 5th (the exactly-once check covers all).
    check_arrived(&c, &bull_a, "N0CCC", Some("N0BBB"), 5);
    check_arrived(&c, &bull_b, "N0CCC", Some("N0BBB"), 5);
    assert!(
        b.fwd_queue(None).contains("\n0 queued"),
        "{}",
        b.fwd_queue(None)
    );
    assert!(
        c.fwd_queue(None).contains("\n0 queued"),
        "{}",
        c.fwd_queue(None)
    );

    // Calling again moves nothing and duplicates nothing.
    let out = a.forward_ok("N0BBB", &b);
    assert!(out.contains("ok: N0BBB: 0 received, 0 sent"), "{out}");
    let out = b.forward_ok("N0CCC", &c);
    assert!(out.contains("ok: N0CCC: 0 received, 0 sent"), "{out}");
    assert_eq!(a.listed().len(), 2 * per_side);
    assert_eq!(b.listed().len(), 2 * per_side);
    assert_eq!(c.listed().len(), for_c);
}

fn mode_name(protocol: &str) -> &'static str {
    match protocol {
        "b1" => "B1",
        "b2" => "B2",
        "b0" => "B0",
        "fbb" => "FbbAscii",
        _ => "Mbl",
    }
}

#[test]
fn bulk_b1() {
    bulk("b1", 500, 0xb1);
}

#[test]
fn bulk_b2() {
    bulk("b2", 500, 0xb2);
}

#[test]
fn bulk_b0() {
    bulk("b0", 500, 0xb0);
}

#[test]
fn bulk_fbb() {
    bulk("fbb", 500, 0xfb);
}

#[test]
fn bulk_mbl() {
    bulk("mbl", 500, 0x3b1);
}
