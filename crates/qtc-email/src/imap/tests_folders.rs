//! IMAP's folders, command by command, against the memory store: a user's own folders (CREATE,
//! DELETE, RENAME, APPEND, COPY, MOVE, LIST with SPECIAL-USE, the limits) and the bulletin
//! folders (N0USR's WX bulletins 2 and 3 of the sample store).

use qtc_mail::{ListFilter, MessageStore, MsgStatus};

use super::tests::logged_in;
use super::*;
use crate::folder::{MAX_FOLDERS, MAX_FOLDER_BYTES};
use crate::store::MailStore;
use crate::testing::{settings, Client};

const SENT: &str = "From: N0OTH@bbs.example.org\r\nTo: N0USR@bbs.example.org\r\n\
Subject: Field day\r\n\r\nSee you there.\r\n";

fn append(c: &mut Client<Imap>, tag: &str, folder: &str, msg: &str) -> String {
    let cmd = format!(
        "{tag} APPEND {folder} (\\Seen) {{{}+}}\r\n{msg}\r\n",
        msg.len()
    );
    c.send(&cmd)
}

/// The messages the BBS holds (any kind, any status): a folder's copy is never one of them.
fn bbs_messages(c: &mut Client<Imap>) -> usize {
    let f = ListFilter {
        include_killed: true,
        ..Default::default()
    };
    c.store.store.list(&f).unwrap().len()
}

#[test]
fn sent_is_made_kept_in_and_selected_and_drafts_and_trash_can_be_made() {
    let mut c = logged_in();
    for (i, name) in ["Sent", "Drafts", "Trash", "Queue"].iter().enumerate() {
        assert_eq!(
            c.send(&format!("c{i} CREATE {name}\r\n")),
            format!("c{i} OK CREATE completed\r\n")
        );
    }
    let list = c.send("l LIST \"\" %\r\n");
    for line in [
        "* LIST (\\HasNoChildren \\Sent) \"/\" \"Sent\"",
        "* LIST (\\HasNoChildren \\Drafts) \"/\" \"Drafts\"",
        "* LIST (\\HasNoChildren \\Trash) \"/\" \"Trash\"",
        "* LIST (\\HasNoChildren) \"/\" \"Queue\"",
        "* LIST (\\Noselect \\HasChildren) \"/\" \"Bulletins\"",
    ] {
        assert!(list.contains(line), "{line} in {list}");
    }
    assert!(!list.contains("Bulletins/WX"), "% stops at a level: {list}");
    let before = bbs_messages(&mut c);
    let ok = append(&mut c, "d", "Sent", SENT);
    assert!(ok.starts_with("d OK [APPENDUID "), "{ok}");
    assert!(ok.ends_with(" 1] APPEND completed\r\n"), "{ok}");
    assert_eq!(bbs_messages(&mut c), before, "a copy is no BBS message");
    let sel = c.send("e SELECT Sent\r\n");
    assert!(
        sel.contains("* 1 EXISTS") && sel.contains("e OK [READ-WRITE]"),
        "{sel}"
    );
    let body = c.send("f UID FETCH 1 (FLAGS BODY.PEEK[] ENVELOPE)\r\n");
    assert!(
        body.contains(&format!("BODY[] {{{}}}\r\n{SENT}", SENT.len())),
        "{body}"
    );
    assert!(
        body.contains("FLAGS (\\Seen)") && body.contains("\"Field day\""),
        "{body}"
    );
    let st = c.send("g STATUS Sent (MESSAGES UNSEEN)\r\n");
    assert!(
        st.starts_with("* STATUS \"Sent\" (MESSAGES 1 UNSEEN 0)"),
        "{st}"
    );
    // The INBOX is still the BBS's mail alone.
    let inbox = c.send("h STATUS INBOX (MESSAGES)\r\n");
    assert!(inbox.starts_with("* STATUS INBOX (MESSAGES 1)"), "{inbox}");
}

#[test]
fn names_rename_delete_and_what_is_refused() {
    let mut c = logged_in();
    c.send("a CREATE Sent\r\n");
    for (cmd, answer) in [
        ("CREATE Sent", "NO [CANNOT] a folder of that name exists"),
        (
            "CREATE INBOX",
            "NO [CANNOT] INBOX is the BBS's personal mail",
        ),
        ("CREATE Bulletins/XX", "NO [CANNOT] the bulletin folders"),
        ("CREATE \"a*b\"", "NO [CANNOT] a folder name has no control"),
        (
            "CREATE \"a//b\"",
            "NO [CANNOT] a folder name has no empty level",
        ),
        ("DELETE INBOX", "NO [CANNOT] INBOX"),
        ("DELETE Nope", "NO [NONEXISTENT]"),
        ("RENAME Nope Other", "NO [NONEXISTENT]"),
        ("RENAME Sent INBOX", "NO [CANNOT] INBOX"),
        ("APPEND Nope {1+}\r\nx", "NO [TRYCREATE]"),
        (
            "APPEND INBOX {1+}\r\nx",
            "NO [CANNOT] INBOX holds mail sent to you",
        ),
        (
            "APPEND Bulletins/WX {1+}\r\nx",
            "NO [CANNOT] bulletins are sent over SMTP",
        ),
    ] {
        let out = c.send(&format!("t {cmd}\r\n"));
        assert!(out.starts_with(&format!("t {answer}")), "{cmd}: {out}");
    }
    append(&mut c, "b", "Sent", SENT);
    assert_eq!(c.send("c RENAME Sent Old\r\n"), "c OK RENAME completed\r\n");
    let st = c.send("d STATUS Old (MESSAGES)\r\n");
    assert!(st.starts_with("* STATUS \"Old\" (MESSAGES 1)"), "{st}");
    c.send("e SELECT Old\r\n");
    assert_eq!(c.send("f DELETE Old\r\n"), "f OK DELETE completed\r\n");
    assert!(c
        .send("g FETCH 1 FLAGS\r\n")
        .starts_with("g BAD select a mailbox first"));
    assert!(c.send("h SELECT Old\r\n").starts_with("h NO [NONEXISTENT]"));
}

#[test]
fn a_users_folders_are_their_own() {
    let mut c = logged_in();
    c.send("a CREATE Sent\r\n");
    append(&mut c, "b", "Sent", SENT);
    let mut other = Client::new(Imap::new(settings(), 42));
    other.store = c.store.clone();
    other.send("");
    assert!(other.send("a LOGIN n0usr pw\r\n").starts_with("a OK"));
    assert!(!other.send("b LIST \"\" *\r\n").contains("Sent"));
    assert!(other
        .send("c SELECT Sent\r\n")
        .starts_with("c NO [NONEXISTENT]"));
    assert_eq!(other.send("d CREATE Sent\r\n"), "d OK CREATE completed\r\n");
    assert!(other.send("e SELECT Sent\r\n").contains("* 0 EXISTS"));
}

#[test]
fn the_limits_answer_no_with_the_reason() {
    let mut c = logged_in();
    for i in 0..MAX_FOLDERS {
        assert!(c.send(&format!("a CREATE f{i}\r\n")).starts_with("a OK"));
    }
    let out = c.send("b CREATE onemore\r\n");
    assert!(out.starts_with("b NO [OVERQUOTA] 100 folders"), "{out}");
    let big = "x".repeat(MAX_FOLDER_BYTES as usize / 8 + 1);
    let mut refused = String::new();
    for _ in 0..8 {
        refused = append(&mut c, "c", "f0", &big);
    }
    assert!(
        refused.starts_with("c NO [OVERQUOTA] your folders may hold 50 MB"),
        "{refused}"
    );
    c.store.full = true;
    let out = c.send("d COPY 1 f1\r\n");
    assert!(out.starts_with("d BAD select a mailbox first"), "{out}");
    c.send("e SELECT INBOX\r\n");
    let out = c.send("f COPY 1 f1\r\n");
    assert!(
        out.starts_with("f NO [OVERQUOTA] the message store is full"),
        "{out}"
    );
    let too_long = format!("g APPEND f1 {{{}}}\r\n", super::folders::MAX_APPEND + 1);
    assert!(c.send(&too_long).starts_with("g BAD literal too long"));
}

#[test]
fn copy_keeps_the_inbox_message_and_move_kills_it() {
    let mut c = logged_in();
    c.send("a CREATE Trash\r\n");
    c.send("b SELECT INBOX\r\n");
    let out = c.send("c COPY 1 Trash\r\n");
    assert!(
        out.starts_with("c OK [COPYUID ") && out.contains(" 1 1] COPY"),
        "{out}"
    );
    assert_eq!(c.status(1), MsgStatus::New);
    let out = c.send("d UID MOVE 1 Trash\r\n");
    assert!(
        out.starts_with("* OK [COPYUID ") && out.contains(" 1 2] moved\r\n"),
        "{out}"
    );
    assert!(
        out.ends_with("* 1 EXPUNGE\r\nd OK MOVE completed\r\n"),
        "{out}"
    );
    assert_eq!(c.status(1), MsgStatus::Killed);
    let sel = c.send("e SELECT Trash\r\n");
    assert!(sel.contains("* 2 EXISTS"), "{sel}");
    let f = c.send("f FETCH 2 BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]\r\n");
    assert!(
        f.contains("<1_N0CALL@bbs.example.org>"),
        "the INBOX message as rendered: {f}"
    );
    // In a folder, \Deleted and EXPUNGE take the copy away, nothing else.
    c.send("g STORE 1 +FLAGS.SILENT (\\Deleted)\r\n");
    assert_eq!(
        c.send("h EXPUNGE\r\n"),
        "* 1 EXPUNGE\r\nh OK EXPUNGE completed\r\n"
    );
    assert!(c
        .send("i STATUS Trash (MESSAGES)\r\n")
        .contains("(MESSAGES 1)"));
    assert!(c
        .send("j COPY 1 INBOX\r\n")
        .starts_with("j NO [CANNOT] INBOX"));
}

#[test]
fn a_bulletin_read_in_its_folder_leaves_ln_and_nothing_else_changes_it() {
    let mut c = logged_in();
    let unread = |c: &mut Client<Imap>| {
        let f = ListFilter {
            unread_by: Some("N0OTH".into()),
            visible_to: Some("N0OTH".into()),
            ..Default::default()
        };
        let heads = c.store.store.list(&f).unwrap();
        heads.iter().map(|h| h.number).collect::<Vec<_>>()
    };
    assert!(unread(&mut c).contains(&2));
    let sel = c.send("a SELECT Bulletins/WX\r\n");
    assert!(sel.contains("* 2 EXISTS") && sel.contains("[PERMANENTFLAGS (\\Seen \\Answered)]"));
    assert!(sel.contains("a OK [READ-WRITE]"), "{sel}");
    let f = c.send("b UID FETCH 2 (BODY[])\r\n");
    assert!(f.contains("FLAGS (\\Seen)"), "{f}");
    assert!(!unread(&mut c).contains(&2), "read in IMAP: out of LN");
    assert!(unread(&mut c).contains(&3));
    c.send("c UID STORE 3 +FLAGS (\\Seen)\r\n");
    assert!(!unread(&mut c).contains(&3), "\\Seen is the read mark");
    c.send("d UID STORE 3 -FLAGS (\\Seen)\r\n");
    assert!(
        unread(&mut c).contains(&3),
        "and clearing it clears the mark"
    );
    for (cmd, answer) in [
        ("STORE 1 +FLAGS (\\Deleted)", "NO [CANNOT] a bulletin stays"),
        ("MOVE 1 Trash", "NO [CANNOT] bulletins stay where they are"),
        (
            "COPY 1 Bulletins/WX",
            "NO [CANNOT] bulletins are sent over SMTP",
        ),
        ("EXPUNGE", "OK EXPUNGE completed"),
    ] {
        let out = c.send(&format!("t {cmd}\r\n"));
        assert!(out.starts_with(&format!("t {answer}")), "{cmd}: {out}");
    }
    assert_eq!(c.status(2), MsgStatus::New);
    // A bulletin may be kept as the user's copy.
    c.send("u CREATE Keep\r\n");
    assert!(c.send("v COPY 1:2 Keep\r\n").contains("v OK [COPYUID"));
    assert!(c
        .send("w STATUS Keep (MESSAGES)\r\n")
        .contains("(MESSAGES 2)"));
    assert!(c
        .send("x SELECT Bulletins\r\n")
        .starts_with("x NO [NONEXISTENT]"));
    assert!(c.send("y SELECT Bulletins/NONE\r\n").contains("* 0 EXISTS"));
}

#[test]
fn idle_in_a_folder_hears_of_a_copy_kept_elsewhere() {
    let mut c = logged_in();
    c.send("a CREATE Sent\r\n");
    c.send("b SELECT Sent\r\n");
    assert_eq!(c.send("c IDLE\r\n"), "+ idling\r\n");
    let copy = crate::folder::FolderMessage {
        seen: false,
        answered: false,
        created: 0,
        from: String::new(),
        subject: Vec::new(),
        bytes: SENT.as_bytes().to_vec(),
    };
    c.store
        .keep_copies("N0OTH".parse().unwrap(), "Sent", &[copy])
        .unwrap();
    assert_eq!(c.change(), "* 1 EXISTS\r\n");
    assert_eq!(c.send("DONE\r\n"), "c OK IDLE terminated\r\n");
}
