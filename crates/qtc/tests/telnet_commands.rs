//! The user commands of the old BBSes, end to end: the real daemon on loopback, a telnet client,
//! one test per command.

mod common;

use common::{Client, Daemon};

/// `n` bulletins to ALL from N0OTH, numbered 1 to n.
fn bulletins(d: &Daemon, n: usize) {
    let mut c = d.login("N0OTH", "x");
    for i in 1..=n {
        c.send("SB ALL @ WW");
        c.expect("Subject:");
        c.send(&format!("Bulletin {i}"));
        c.expect("Enter message");
        c.send("line one\r\nline two\r\n/EX");
        c.expect("de N0CALL>");
    }
}

/// A personal message from N0OTH to N0USR.
fn personal(d: &Daemon, subject: &str) {
    let mut c = d.login("N0OTH", "x");
    c.send("SP N0USR");
    c.expect("Subject:");
    c.send(subject);
    c.expect("Enter message");
    c.send("Hello.\r\n/EX");
    c.expect("de N0CALL>");
}

/// The message numbers of a listing's lines.
fn listed(out: &str) -> Vec<u64> {
    out.split("\r\n")
        .filter(|l| l.contains("Bulletin") || l.contains(" PN ") || l.contains(" PY "))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

fn ask(c: &mut Client, line: &str) -> String {
    c.send(line);
    c.expect("de N0CALL>")
}

#[test]
fn l_n_lists_from_n_up() {
    let d = Daemon::start("");
    bulletins(&d, 20);
    let mut u = d.login("N0USR", "pw");
    assert_eq!(
        listed(&ask(&mut u, "L 3")),
        (3..=20).rev().collect::<Vec<_>>()
    );
    assert_eq!(listed(&ask(&mut u, "LB 4-6 > ALL")), vec![6, 5, 4]);
    assert_eq!(listed(&ask(&mut u, "LL 2")), vec![20, 19]);
}

#[test]
fn op_pages_and_a_aborts() {
    let d = Daemon::start("");
    bulletins(&d, 20);
    let mut u = d.login("N0USR", "pw");
    assert!(ask(&mut u, "OP 5").contains("5 lines per page."));
    u.send("L");
    let page = u.expect("More? (Enter/A=abort/n=next message)\r\n");
    // The header and four messages: five lines, then the question.
    let page = page.trim_start_matches("\r\n");
    assert_eq!(page.matches("\r\n").count(), 6, "{page:?}");
    assert_eq!(listed(page), vec![20, 19, 18, 17]);
    u.send("");
    assert_eq!(listed(&u.expect("More?")), vec![16, 15, 14, 13, 12]);
    u.send("A");
    let rest = u.expect("de N0CALL>");
    assert!(listed(&rest).is_empty(), "{rest:?}");
}

#[test]
fn op_is_kept_across_sessions() {
    let d = Daemon::start("");
    bulletins(&d, 20);
    let mut u = d.login("N0USR", "pw");
    assert!(ask(&mut u, "OP 5").contains("5 lines per page."));
    u.send("B");
    u.expect_close();
    // Logged in again: L pages at 5 without a new OP.
    let mut u = d.login("N0USR", "pw");
    u.send("L");
    let page = u.expect("More?");
    assert_eq!(listed(&page), vec![20, 19, 18, 17]);
}

#[test]
fn lr_lists_oldest_first_and_ly_lists_read() {
    let d = Daemon::start("");
    personal(&d, "First");
    personal(&d, "Second");
    let mut u = d.login("N0USR", "pw");
    assert_eq!(listed(&ask(&mut u, "LR")), vec![1, 2]);
    ask(&mut u, "R 1");
    assert_eq!(listed(&ask(&mut u, "LY")), vec![1]);
}

#[test]
fn ln_lists_and_rn_reads_my_unread() {
    let d = Daemon::start("");
    personal(&d, "Unread one");
    let mut u = d.login("N0USR", "pw");
    assert!(ask(&mut u, "LN").contains("Unread one"));
    let read = ask(&mut u, "RN");
    assert!(read.contains("Subject: Unread one"), "{read}");
    assert!(ask(&mut u, "LN").contains("No messages."));
}

#[test]
fn lc_shows_bulletin_categories() {
    let d = Daemon::start("");
    bulletins(&d, 2);
    let mut u = d.login("N0USR", "pw");
    let lc = ask(&mut u, "LC");
    assert!(lc.contains("ALL       2"), "{lc}");
}

#[test]
fn sr_replies_to_the_message_read() {
    let d = Daemon::start("");
    personal(&d, "Sked");
    let mut u = d.login("N0USR", "pw");
    ask(&mut u, "R 1");
    u.send("SR");
    assert!(u
        .expect("Enter message")
        .contains("To N0OTH, subject: Re: Sked"));
    u.send("OK, 1900Z.\r\n/EX");
    assert!(u.expect("de N0CALL>").contains("Message #2 stored"));
    let mut o = d.login("N0OTH", "x");
    assert!(ask(&mut o, "R 2").contains("Subject: Re: Sked"));
}

#[test]
fn pw_changes_the_password() {
    let d = Daemon::start("");
    let mut u = d.login("N0USR", "pw");
    u.send("PW");
    u.expect("Old password: ");
    u.send("pw");
    u.expect("New password: ");
    u.send("s3cret");
    u.expect("Again: ");
    u.send("s3cret");
    assert!(u.expect("de N0CALL>").contains("Password changed."));
    d.login("N0USR", "s3cret");
}

#[test]
fn x_gives_short_prompts() {
    let d = Daemon::start("");
    let mut u = d.login("N0USR", "pw");
    u.send("X");
    u.expect("Expert mode: short prompts.\r\n>\r\n");
    u.send("X");
    u.expect("Expert mode off.\r\nde N0CALL>");
}

#[test]
fn a_at_the_prompt_has_nothing_to_abort() {
    let d = Daemon::start("");
    let mut u = d.login("N0USR", "pw");
    assert!(ask(&mut u, "A").contains("Nothing to abort."));
}

/// A line of 300 bytes typed into a message (over the 255-byte command limit) is stored whole;
/// an arrow key typed after a command is dropped, not echoed in the answer.
#[test]
fn long_text_lines_are_kept_and_arrow_keys_dropped() {
    let d = Daemon::start("");
    let mut u = d.login("N0USR", "pw");
    let long = "0123456789".repeat(30);
    u.send("SP N0OTH");
    u.expect("Subject:");
    u.send("a long line");
    u.expect("Enter message");
    u.send(&long);
    u.send("/EX");
    let out = u.expect("de N0CALL>");
    assert!(out.contains("stored"), "{out}");
    let shown = String::from_utf8_lossy(&d.cli(&["msg", "show", "1"]).stdout).into_owned();
    assert!(shown.contains(&long), "{shown}");
    let out = ask(&mut u, "LX\x1b[A");
    assert!(out.contains("Unknown command LX."), "{out:?}");
    assert!(!out.contains('\x1b'), "{out:?}");
}

/// A bulletin is new for every user until that user reads it: another user's `LN` lists it,
/// and the status column (`L`, `LB`, `LN`, `R`) is each user's own (the web's:
/// web_dashboard.rs).
#[test]
fn a_new_bulletin_is_new_for_each_user_until_they_read_it() {
    let d = Daemon::start("");
    bulletins(&d, 1);
    let status_of = |out: &str| {
        out.split("\r\n")
            .find(|l| l.contains("Bulletin 1") && !l.starts_with("Subject"))
            .and_then(|l| l.split_whitespace().nth(1))
            .map(str::to_string)
    };
    let mut u = d.login("N0USR", "pw");
    let mut s = d.login("N0SYS", "root");
    for c in [&mut u, &mut s] {
        assert_eq!(status_of(&ask(c, "LN")).as_deref(), Some("BN"));
        assert_eq!(status_of(&ask(c, "LB")).as_deref(), Some("BN"));
    }
    assert!(ask(&mut u, "R 1").contains("Msg #1 BN"));
    assert_eq!(status_of(&ask(&mut u, "L 1")).as_deref(), Some("BY"));
    assert_eq!(status_of(&ask(&mut u, "LN")), None);
    // Nobody else has read it.
    assert_eq!(status_of(&ask(&mut s, "LN")).as_deref(), Some("BN"));
    assert_eq!(status_of(&ask(&mut s, "L 1")).as_deref(), Some("BN"));
}
