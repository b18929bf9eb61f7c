//! IMAP, command by command, against the memory store (N0OTH's INBOX holds message 1, with a
//! copy to N0CC and an attachment).

use qtc_mail::{MessageStore, MsgStatus, MsgType, NewMessage};

use super::*;
use crate::store::Thread;
use crate::testing::{settings, Client};

fn client() -> Client<Imap> {
    Client::new(Imap::new(settings(), 42))
}

pub(super) fn logged_in() -> Client<Imap> {
    let mut c = client();
    c.send("");
    assert!(c
        .send("a LOGIN n0oth x\r\n")
        .starts_with("a OK [CAPABILITY"));
    c
}

fn selected() -> Client<Imap> {
    let mut c = logged_in();
    assert!(c.send("b SELECT INBOX\r\n").contains("b OK [READ-WRITE]"));
    c
}

/// A personal message to N0OTH, answering `<1_N0CALL@bbs.example.org>`; its number.
fn reply_to_n0oth(c: &mut Client<Imap>) -> u64 {
    let msg = NewMessage {
        kind: MsgType::Personal,
        status: MsgStatus::New,
        to: "N0OTH".into(),
        at: String::new(),
        from: "N0USR".into(),
        bid: None,
        subject: b"Re: s".to_vec(),
        rlines: Vec::new(),
        body: b"yes\r\n".to_vec(),
    };
    let thread = Thread {
        in_reply_to: "<1_N0CALL@bbs.example.org>".into(),
        references: "<1_N0CALL@bbs.example.org>".into(),
    };
    c.store.insert(&msg, Vec::new(), thread).unwrap()
}

#[test]
fn greeting_and_logins() {
    let mut c = client();
    let hello = c.send("");
    assert!(hello.starts_with("* OK [CAPABILITY IMAP4rev1 IDLE") && hello.contains("AUTH=PLAIN"));
    assert!(c.send("a LOGIN n0oth {1}\r\n").starts_with("+ go ahead"));
    let ok = c.send("x\r\n");
    assert!(
        ok.starts_with("a OK [CAPABILITY") && !ok.contains("AUTH="),
        "{ok}"
    );
    let mut c = client();
    c.send("");
    assert!(c
        .send("a LOGIN n0oth y\r\n")
        .starts_with("a NO [AUTHENTICATIONFAILED]"));
    assert!(c
        .send("b SELECT INBOX\r\n")
        .starts_with("b BAD log in first"));
    assert_eq!(c.send("c AUTHENTICATE PLAIN\r\n"), "+ \r\n");
    assert_eq!(c.send("*\r\n"), "c BAD AUTHENTICATE cancelled\r\n");
    assert!(c
        .send("d AUTHENTICATE CRAM-MD5\r\n")
        .starts_with("d NO [CANNOT]"));
    assert!(c
        .send("e AUTHENTICATE PLAIN AE4wT1RIAHg=\r\n")
        .starts_with("e OK [CAPABILITY"));
}

#[test]
fn starttls_first_where_passwords_may_not_go_in_clear() {
    let mut set = settings();
    set.plain_auth = false;
    set.starttls = true;
    let mut c = Client::new(Imap::new(set, 42));
    assert!(c.send("").contains("STARTTLS LOGINDISABLED"));
    assert!(c
        .send("a LOGIN n0oth x\r\n")
        .starts_with("a NO [PRIVACYREQUIRED]"));
    assert_eq!(
        c.send("b STARTTLS\r\n"),
        "b OK begin TLS negotiation now\r\n"
    );
    assert!(c.send("c LOGIN n0oth x\r\n").starts_with("c OK"));
}

#[test]
fn list_lsub_namespace_status() {
    let mut c = logged_in();
    assert_eq!(
        c.send("a LIST \"\" *\r\n"),
        "* LIST (\\HasNoChildren) \"/\" INBOX\r\n\
         * LIST (\\Noselect \\HasChildren) \"/\" \"Bulletins\"\r\n\
         * LIST (\\HasNoChildren) \"/\" \"Bulletins/WX\"\r\na OK LIST completed\r\n"
    );
    assert!(c
        .send("b LIST \"\" \"\"\r\n")
        .starts_with("* LIST (\\Noselect)"));
    assert!(c.send("c LSUB \"\" %\r\n").starts_with("* LSUB"));
    assert!(c.send("d NAMESPACE\r\n").starts_with("* NAMESPACE"));
    assert_eq!(
        c.send("e STATUS INBOX (MESSAGES UNSEEN UIDNEXT)\r\n"),
        "* STATUS INBOX (MESSAGES 1 UIDNEXT 2 UNSEEN 1)\r\ne OK STATUS completed\r\n"
    );
    assert!(c
        .send("f STATUS Sent (MESSAGES)\r\n")
        .starts_with("f NO [NONEXISTENT]"));
    assert!(c
        .send("g SELECT Sent\r\n")
        .starts_with("g NO [NONEXISTENT]"));
    assert_eq!(c.send("h CREATE Sent\r\n"), "h OK CREATE completed\r\n");
}

#[test]
fn select_says_plain_words_fetchmail_cannot_take_for_counts() {
    let mut c = logged_in();
    let sel = c.send("b SELECT INBOX\r\n");
    assert!(
        sel.contains("* 1 EXISTS\r\n")
            && sel.contains("[PERMANENTFLAGS (\\Seen \\Answered \\Deleted)]")
            && sel.contains("[UIDVALIDITY 42]")
            && sel.contains("[UNSEEN 1]")
            && sel.contains("[UIDNEXT 2]"),
        "{sel}"
    );
    // fetchmail takes any untagged line holding one of these words for that count.
    for line in sel
        .lines()
        .filter(|l| l.starts_with("* OK") || l.starts_with("* FLAGS"))
    {
        let upper = line.to_ascii_uppercase();
        for word in [" EXPUNGE", " EXISTS", " RECENT", "[READ-ONLY]"] {
            assert!(!upper.contains(word), "{line}");
        }
    }
    let ex = c.send("c EXAMINE INBOX\r\n");
    assert!(ex.contains("c OK [READ-ONLY] EXAMINE completed"), "{ex}");
    assert!(c
        .send("d STORE 1 +FLAGS (\\Seen)\r\n")
        .starts_with("d NO [READ-ONLY]"));
}

#[test]
fn fetch_reads_peek_does_not() {
    let mut c = selected();
    let peek = c.send("a FETCH 1 (FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)])\r\n");
    assert!(
        peek.starts_with("* 1 FETCH (FLAGS () BODY[HEADER.FIELDS (SUBJECT)] {"),
        "{peek}"
    );
    assert_eq!(c.status(1), MsgStatus::New);
    let f = c.send("b UID FETCH 1 (BODY[] BODYSTRUCTURE)\r\n");
    assert!(f.starts_with("* 1 FETCH (UID 1 BODY[] {"), "{f}");
    assert!(f.contains("(\"APPLICATION\" \"OCTET-STREAM\""), "{f}");
    assert!(
        f.contains("FLAGS (\\Seen))\r\nb OK UID FETCH completed"),
        "{f}"
    );
    assert_eq!(c.status(1), MsgStatus::Read);
    let all = c.send("c FETCH 1:* (UID RFC822.SIZE INTERNALDATE)\r\n");
    assert!(all.starts_with("* 1 FETCH (UID 1 RFC822.SIZE "), "{all}");
}

#[test]
fn a_reply_threads_and_answered_is_kept() {
    let mut c = logged_in();
    let n = reply_to_n0oth(&mut c);
    c.send("a SELECT INBOX\r\n");
    let env = c.send(&format!("b UID FETCH {n} (ENVELOPE BODY.PEEK[HEADER])\r\n"));
    // ENVELOPE's in-reply-to, then message-id.
    let ids = format!("NIL NIL \"<1_N0CALL@bbs.example.org>\" \"<{n}_N0CALL@bbs.example.org>\")");
    assert!(env.contains(&ids), "{env}");
    assert!(
        env.contains("In-Reply-To: <1_N0CALL@bbs.example.org>\r\n"),
        "{env}"
    );
    assert!(
        env.contains("References: <1_N0CALL@bbs.example.org>\r\n"),
        "{env}"
    );
    assert_eq!(
        c.send("c STORE 1 +FLAGS (\\Answered)\r\n"),
        "* 1 FETCH (FLAGS (\\Answered))\r\nc OK STORE completed\r\n"
    );
    assert_eq!(
        c.send("d SEARCH ANSWERED\r\n"),
        "* SEARCH 1\r\nd OK SEARCH completed\r\n"
    );
    assert_eq!(
        c.send("e SEARCH UNANSWERED\r\n"),
        "* SEARCH 2\r\ne OK SEARCH completed\r\n"
    );
    // Kept in the store: a new session sees it, another user would not.
    let mut again = logged_in();
    again.store = c.store.clone();
    again.send("f SELECT INBOX\r\n");
    assert!(again
        .send("g FETCH 1 FLAGS\r\n")
        .contains("FLAGS (\\Answered)"));
    assert!(c
        .send("h STORE 1 -FLAGS.SILENT (\\Answered)\r\n")
        .starts_with("h OK STORE"));
    assert!(c.send("i FETCH 1 FLAGS\r\n").contains("FLAGS ()"));
}

#[test]
fn store_search_expunge_close() {
    let mut c = selected();
    assert!(c.send("a SEARCH UNSEEN\r\n").starts_with("* SEARCH 1\r\n"));
    assert_eq!(
        c.send("b STORE 1 +FLAGS (\\Seen)\r\n"),
        "* 1 FETCH (FLAGS (\\Seen))\r\nb OK STORE completed\r\n"
    );
    assert_eq!(c.status(1), MsgStatus::Read);
    c.send("c STORE 1 -FLAGS (\\Seen)\r\n");
    assert_eq!(c.status(1), MsgStatus::New);
    c.send("d STORE 1 +FLAGS.SILENT (\\Deleted)\r\n");
    assert!(c.send("e SEARCH DELETED\r\n").starts_with("* SEARCH 1\r\n"));
    assert_eq!(
        c.send("f EXPUNGE\r\n"),
        "* 1 EXPUNGE\r\nf OK EXPUNGE completed\r\n"
    );
    assert_eq!(c.status(1), MsgStatus::Killed);
    assert_eq!(c.send("g CLOSE\r\n"), "g OK CLOSE completed\r\n");
    assert!(c
        .send("h FETCH 1 FLAGS\r\n")
        .starts_with("h BAD select a mailbox first"));
}

#[test]
fn uid_expunge_check_unselect_and_the_commands_taken_as_done() {
    let mut c = selected();
    c.send("a STORE 1 +FLAGS.SILENT (\\Deleted)\r\n");
    assert_eq!(c.send("b CHECK\r\n"), "b OK NOOP completed\r\n");
    // UIDPLUS's UID EXPUNGE takes only the UIDs named: UID 2 is not there, UID 1 goes.
    assert_eq!(c.send("c UID EXPUNGE 2\r\n"), "c OK EXPUNGE completed\r\n");
    assert_eq!(c.status(1), MsgStatus::New);
    assert_eq!(
        c.send("d UID EXPUNGE 1\r\n"),
        "* 1 EXPUNGE\r\nd OK EXPUNGE completed\r\n"
    );
    assert_eq!(c.status(1), MsgStatus::Killed);
    // Subscriptions are not kept and ENABLE turns nothing on: each is answered, nothing more.
    for (tag, cmd) in [
        ("e", "SUBSCRIBE INBOX"),
        ("f", "UNSUBSCRIBE INBOX"),
        ("g", "ENABLE X"),
    ] {
        assert_eq!(
            c.send(&format!("{tag} {cmd}\r\n")),
            format!("{tag} OK done\r\n")
        );
    }
    assert_eq!(c.send("h UNSELECT\r\n"), "h OK UNSELECT completed\r\n");
    assert!(c
        .send("i FETCH 1 FLAGS\r\n")
        .starts_with("i BAD select a mailbox first"));
}

#[test]
fn idle_tells_of_new_mail_and_kills_elsewhere() {
    let mut c = selected();
    assert_eq!(c.send("a IDLE\r\n"), "+ idling\r\n");
    assert!(c.state.watching);
    let n = reply_to_n0oth(&mut c);
    assert_eq!(c.change(), "* 2 EXISTS\r\n");
    c.store.store.set_status(n, MsgStatus::Killed).unwrap();
    assert_eq!(c.change(), "* 2 EXPUNGE\r\n");
    assert_eq!(c.change(), "", "nothing new");
    assert_eq!(c.send("DONE\r\n"), "a OK IDLE terminated\r\n");
    assert!(!c.state.watching);
    assert!(c.send("b NOOP\r\n").ends_with("b OK NOOP completed\r\n"));
}

#[test]
fn bad_input_and_logout() {
    let mut c = logged_in();
    assert_eq!(c.send("a FROB\r\n"), "a BAD syntax error\r\n");
    assert!(c
        .send("b CAPABILITY\r\n")
        .starts_with("* CAPABILITY IMAP4rev1"));
    assert!(c.send("c ID NIL\r\n").starts_with("* ID"));
    assert_eq!(
        c.send("d LOGOUT\r\n"),
        "* BYE 73\r\nd OK LOGOUT completed\r\n"
    );
    assert!(c.state.closed && !c.core.wants_input());
}
