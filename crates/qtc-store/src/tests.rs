use super::*;

pub(crate) fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Durability::Normal).unwrap();
    (dir, store)
}

/// A callsign written in a test.
pub(crate) fn call(text: &str) -> Callsign {
    text.parse().unwrap()
}

pub(crate) fn msg(kind: MsgType, to: &str, from: &str, bid: Option<&str>) -> NewMessage {
    NewMessage {
        kind,
        status: MsgStatus::New,
        to: to.into(),
        at: String::new(),
        from: from.into(),
        bid: bid.map(Into::into),
        subject: b"Test".to_vec(),
        rlines: Vec::new(),
        body: b"hello\r\n\xff\xfe cp437 \x80\r\n".to_vec(),
    }
}

#[test]
fn stores_and_reads_back_bytes_exactly() {
    let (_d, mut s) = open();
    let m = msg(MsgType::Personal, "n0usr", "n0abc", None);
    let n = s.insert_message(&m, call("N0CALL"), 1_700_000_000).unwrap();
    assert_eq!(n, 1);
    let got = s.message(n).unwrap().unwrap();
    assert_eq!(got.body, m.body);
    assert_eq!(got.header.to, "N0USR");
    assert_eq!(got.header.bid, "1_N0CALL");
    assert_eq!(got.header.size, m.body.len() as u64);
    assert!(s.bid_known("1_n0call").unwrap());
}

#[test]
fn a_reader_beside_the_writer_reads_heads_and_body_pieces() {
    let (d, mut s) = open();
    let mut m = msg(MsgType::Bulletin, "ALL", "N0ABC", None);
    m.body = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let n = s.insert_message(&m, call("N0CALL"), 1_700_000_000).unwrap();
    let mut r = Store::open_read_only(d.path()).unwrap();
    // The reader sees the writer's commit, and cannot write.
    let head = r.message_head(n).unwrap().unwrap();
    assert!(head.body.is_empty());
    assert_eq!(head.header.size, 100_000);
    let mut body = Vec::new();
    loop {
        let piece = r.body_chunk(n, body.len() as u64, 16 * 1024).unwrap();
        body.extend_from_slice(&piece);
        if piece.len() < 16 * 1024 {
            break;
        }
    }
    assert_eq!(body, m.body);
    assert!(r.body_chunk(n, 200_000, 10).unwrap().is_empty());
    assert!(r.body_chunk(n + 1, 0, 10).unwrap().is_empty());
    assert!(r.message_head(n + 1).unwrap().is_none());
    assert!(r.mark_read(n, call(&head.header.to)).is_err());
    // A later commit is seen by the next read.
    s.set_status(n, MsgStatus::Killed).unwrap();
    let head = r.message_head(n).unwrap().unwrap();
    assert_eq!(head.header.status, MsgStatus::Killed);
}

#[test]
fn duplicate_bid_is_refused_and_nothing_stored() {
    let (_d, mut s) = open();
    let m = msg(MsgType::Bulletin, "ALL", "N0ABC", Some("X1_N0ABC"));
    s.insert_message(&m, call("N0CALL"), 0).unwrap();
    let err = s.insert_message(&m, call("N0CALL"), 0).unwrap_err();
    assert!(matches!(err, StoreError::DuplicateBid(b) if b == "X1_N0ABC"));
    assert_eq!(s.counts().unwrap(), (1, 1));
    // Killing does not free the BID.
    s.set_status(1, MsgStatus::Killed).unwrap();
    assert!(matches!(
        s.insert_message(&m, call("N0CALL"), 0),
        Err(StoreError::DuplicateBid(_))
    ));
}

#[test]
fn generated_bid_is_cut_to_twelve() {
    assert_eq!(generated_bid(123456, call("N0CALL")), "123456_N0CAL");
}

#[test]
fn list_filters() {
    let (_d, mut s) = open();
    s.insert_message(
        &msg(MsgType::Personal, "N0USR", "N0ABC", None),
        call("N0CALL"),
        0,
    )
    .unwrap();
    s.insert_message(
        &msg(MsgType::Personal, "N0XYZ", "N0ABC", None),
        call("N0CALL"),
        0,
    )
    .unwrap();
    let mut b = msg(MsgType::Bulletin, "ALL", "N0XYZ", None);
    b.at = "WW".into();
    s.insert_message(&b, call("N0CALL"), 0).unwrap();
    let mut p = msg(MsgType::Personal, "N0QQQ", "N0USR", None);
    p.at = "N0BBS.#NCA.CA.USA.NOAM".into();
    s.insert_message(&p, call("N0CALL"), 0).unwrap();

    let numbers = |s: &mut Store, f: ListFilter| -> Vec<u64> {
        s.list(&f).unwrap().iter().map(|h| h.number).collect()
    };
    assert_eq!(numbers(&mut s, ListFilter::default()), vec![4, 3, 2, 1]);
    let visible = ListFilter {
        visible_to: Some("N0USR".into()),
        ..Default::default()
    };
    assert_eq!(numbers(&mut s, visible), vec![4, 3, 1]);
    let at = ListFilter {
        at: Some("usa".into()),
        ..Default::default()
    };
    assert_eq!(numbers(&mut s, at), vec![4]);
    let last = ListFilter {
        last: Some(2),
        ..Default::default()
    };
    assert_eq!(numbers(&mut s, last), vec![4, 3]);
    let range = ListFilter {
        range: Some((2, 3)),
        kind: Some(MsgType::Bulletin),
        ..Default::default()
    };
    assert_eq!(numbers(&mut s, range), vec![3]);
    // `L n`: from n to the top of the u64 range (bound as i64::MAX, not as -1).
    let up = ListFilter {
        range: Some((3, u64::MAX)),
        ..Default::default()
    };
    assert_eq!(numbers(&mut s, up), vec![4, 3]);
    let oldest = ListFilter {
        last: Some(2),
        oldest_first: true,
        ..Default::default()
    };
    assert_eq!(numbers(&mut s, oldest), vec![1, 2]);
    s.set_status(1, MsgStatus::Killed).unwrap();
    let from = ListFilter {
        from: Some("n0abc".into()),
        ..Default::default()
    };
    assert_eq!(numbers(&mut s, from.clone()), vec![2]);
    let lk = ListFilter {
        include_killed: true,
        ..from
    };
    assert_eq!(numbers(&mut s, lk), vec![2, 1]);
}

/// Whether `password` is `call`'s, as the daemon's password check finds it.
fn password_ok(s: &mut Store, user: &str, password: &str) -> bool {
    s.password_hash(call(user))
        .unwrap()
        .is_some_and(|phc| verify_password(&phc, password))
}

#[test]
fn users_and_passwords() {
    let (_d, mut s) = open();
    s.add_user(call("n0usr"), Some("secret"), false, false)
        .unwrap();
    assert!(matches!(
        s.add_user(call("N0USR"), None, false, false),
        Err(StoreError::UserExists(_))
    ));
    assert!(password_ok(&mut s, "N0USR", "secret"));
    assert!(!password_ok(&mut s, "N0USR", "wrong"));
    assert!(!password_ok(&mut s, "N0NONE", "secret"));
    s.set_password(call("N0USR"), "other").unwrap();
    assert!(password_ok(&mut s, "n0usr", "other"));
    let mut u = s.user(call("N0USR")).unwrap().unwrap();
    u.name = "Ann".into();
    u.last_listed = 9;
    assert_eq!(u.page_len, None, "a new user pages at the port's default");
    u.page_len = Some(5);
    s.update_user(&u).unwrap();
    assert_eq!(s.user("n0usr".parse().unwrap()).unwrap().unwrap(), u);
    assert_eq!(s.users().unwrap().len(), 1);
    s.delete_user(call("N0USR")).unwrap();
    assert!(matches!(
        s.delete_user(call("N0USR")),
        Err(StoreError::NoSuchUser(_))
    ));
}

#[test]
fn reopen_keeps_data_and_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = Store::open(dir.path(), Durability::Full).unwrap();
        s.insert_message(
            &msg(MsgType::Personal, "N0USR", "N0ABC", None),
            call("N0CALL"),
            0,
        )
        .unwrap();
    }
    let mut s = Store::open(dir.path(), Durability::Full).unwrap();
    assert_eq!(s.counts().unwrap(), (1, 1));
    assert!(s.check().unwrap().is_empty());
    let v: i64 = s
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, schema::CURRENT_VERSION);
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = Store::open(dir.path(), Durability::Normal).unwrap();
        s.conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let err = Store::open(dir.path(), Durability::Normal).err().unwrap();
    assert!(err.to_string().contains("newer"), "{err}");
}

#[test]
fn mark_read_counts() {
    let (_d, mut s) = open();
    s.insert_message(
        &msg(MsgType::Personal, "N0USR", "N0ABC", None),
        call("N0CALL"),
        0,
    )
    .unwrap();
    s.mark_read(1, call("n0usr")).unwrap();
    s.mark_read(1, call("N0USR")).unwrap();
    // Someone who is not a recipient (a sysop reading) counts for nothing.
    s.mark_read(1, call("N0SYS")).unwrap();
    let m = s.message(1).unwrap().unwrap();
    assert_eq!(m.read_count, 2);
    assert_eq!(m.header.status, MsgStatus::Read);
}

#[test]
fn copies_of_mail_read_before_the_upgrade_stay_read() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
        s.set_station(station());
        for (bid, to) in [("OLD1", "N0USR"), ("OLD2", "N0TWO")] {
            let mut m = incoming(bid, MsgType::Personal, "", b"hi\r\n");
            m.recipients = [to, "N0OTH"]
                .iter()
                .map(|c| Recipient {
                    cc: *c == "N0OTH",
                    addr: c.to_string(),
                })
                .collect();
            s.store_received(call("N0CCC"), &[m], 0).unwrap();
        }
        s.mark_read(1, call("N0USR")).unwrap();
        // Back to the schema before per-recipient marks (migration 9 and 11 undone; the
        // later ones run again on top).
        s.conn
            .execute_batch("ALTER TABLE recipients DROP COLUMN read;")
            .unwrap();
        undo_schema_11(&s.conn, 8);
    }
    let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
    let f = ListFilter {
        to_or_copy: Some("N0OTH".into()),
        oldest_first: true,
        ..Default::default()
    };
    let seen: Vec<MsgStatus> = s.list(&f).unwrap().iter().map(|h| h.status).collect();
    assert_eq!(seen, [MsgStatus::Read, MsgStatus::New]);
}

/// Takes a store back to before migration 16: the text in the messages' rows again (and no
/// housekeeping tables of 17, the tally trigger of 8 that 22 dropped back).
fn undo_schema_16(conn: &rusqlite::Connection) {
    conn.execute_batch(
        "CREATE TRIGGER tally_insert AFTER INSERT ON messages BEGIN
            INSERT INTO tallies (kind, status, area, at, n)
            VALUES (NEW.kind, NEW.status, CASE NEW.kind WHEN 'B' THEN NEW.to_call ELSE '' END,
                    NEW.at, 1)
            ON CONFLICT (kind, status, area, at) DO UPDATE SET n = n + 1;
         END;",
    )
    .unwrap();
    conn.execute_batch(
        "DROP TRIGGER bid_gone; DROP TABLE bids_gone;
         DROP TRIGGER expiry_reset; DROP TABLE expiry;",
    )
    .unwrap();
    conn.execute_batch(
        "ALTER TABLE messages ADD COLUMN rlines BLOB NOT NULL DEFAULT x'';
         ALTER TABLE messages ADD COLUMN body BLOB NOT NULL DEFAULT x'';",
    )
    .unwrap();
    let numbers: Vec<u64> = conn
        .prepare("SELECT number FROM messages")
        .unwrap()
        .query_map([], |r| r.get::<_, i64>(0))
        .unwrap()
        .map(|n| n.unwrap() as u64)
        .collect();
    for n in numbers {
        let Some(text) = texts::get(conn, n).unwrap() else {
            continue;
        };
        let (rlines, body) = text.split().unwrap();
        conn.execute(
            "UPDATE messages SET rlines = ?1, body = ?2 WHERE number = ?3",
            params![rlines, body, n as i64],
        )
        .unwrap();
    }
    conn.execute_batch(
        "DROP TABLE texts; DROP TRIGGER text_block_gone; DROP TABLE text_blocks;
         DROP TRIGGER number_floor_keep; DROP TABLE number_floor;",
    )
    .unwrap();
}

/// Takes a store back to before migration 11 (and the later ones) and says it has schema
/// `version`.
fn undo_schema_11(conn: &rusqlite::Connection, version: i64) {
    undo_schema_16(conn);
    conn.execute_batch(&format!(
        "DROP TABLE mail_folder_messages;
         DROP TABLE mail_folders;
         DROP INDEX messages_area;
         DROP TABLE mail_threads;
         DROP TABLE mail_answered;
         ALTER TABLE attachments DROP COLUMN mime;
         DROP TABLE login_places;
         DROP TABLE bulletin_reads;
         ALTER TABLE partials DROP COLUMN mode;
         ALTER TABLE bids DROP COLUMN number;
         CREATE INDEX messages_bid ON messages (bid);
         DROP INDEX fwd_done;
         CREATE INDEX fwd_done ON fwd_queue (state, updated);
         PRAGMA user_version = {version};"
    ))
    .unwrap();
}

#[test]
fn the_bid_of_a_message_still_here_is_kept_after_the_upgrade() {
    // Before schema 11 `bids` did not hold the message's number; the migration finds it, so
    // housekeeping still keeps the BID of a stored message and forgets one whose message is gone.
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
        let mut held = msg(MsgType::Bulletin, "ALL", "N0ABC", Some("KEPT_B"));
        held.status = MsgStatus::Held;
        s.insert_message(&held, call("N0AAA"), 0).unwrap();
        let gone = msg(MsgType::Bulletin, "ALL", "N0ABC", Some("GONE_B"));
        let gone = s.insert_message(&gone, call("N0AAA"), 0).unwrap();
        s.conn
            .execute("DELETE FROM messages WHERE number = ?1", [gone as i64])
            .unwrap();
        undo_schema_11(&s.conn, 10);
    }
    let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
    let r = s.housekeep(400 * 86_400, &Lifetimes::default()).unwrap();
    assert_eq!(r.bids, 1);
    assert!(s.bid_known("KEPT_B").unwrap());
    assert!(!s.bid_known("GONE_B").unwrap());
    assert!(s.check().unwrap().is_empty());
}

#[test]
fn each_recipient_has_its_own_read_mark() {
    let (_d, mut s) = open();
    s.set_station(station());
    let mut m = incoming("WL2KMID2", MsgType::Personal, "", b"hi\r\n");
    m.recipients = ["N0USR", "N0TWO", "N0OTH"]
        .iter()
        .enumerate()
        .map(|(i, c)| Recipient {
            cc: i == 2,
            addr: c.to_string(),
        })
        .collect();
    let r = s.store_received(call("N0CCC"), &[m], 0).unwrap();
    let [forward::Stored::Stored(n)] = r[..] else {
        panic!("{r:?}")
    };
    let seen_by = |s: &mut Store, call: &str| {
        let mine = ListFilter {
            to_or_copy: Some(call.into()),
            ..Default::default()
        };
        let unread = ListFilter {
            status: Some(MsgStatus::New),
            ..mine.clone()
        };
        let listed = ListFilter {
            visible_to: Some(call.into()),
            ..Default::default()
        };
        (
            s.list(&mine).unwrap()[0].status,
            s.list(&unread).unwrap().len(),
            s.list(&listed).unwrap()[0].status,
        )
    };
    let unread = (MsgStatus::New, 1, MsgStatus::New);
    let read = (MsgStatus::Read, 0, MsgStatus::Read);
    // The addressee reads: the Cc and the second To still have it unread.
    s.mark_read(n, call("N0USR")).unwrap();
    assert_eq!(seen_by(&mut s, "N0USR"), read);
    assert_eq!(seen_by(&mut s, "N0OTH"), unread);
    assert_eq!(seen_by(&mut s, "N0TWO"), unread);
    // The Cc reads: only theirs changes.
    s.mark_read(n, call("N0OTH")).unwrap();
    assert_eq!(seen_by(&mut s, "N0OTH"), read);
    assert_eq!(seen_by(&mut s, "N0TWO"), unread);
    // Everyone else (and the sysop's listing) sees the message's own status.
    let all = s.list(&ListFilter::default()).unwrap();
    assert_eq!(all[0].status, MsgStatus::Read);
    assert_eq!(s.message(n).unwrap().unwrap().read_count, 2);
}

pub(crate) fn station() -> Station {
    let p = |c: &str, r: &[&str]| route::PartnerRoutes {
        call: call(c),
        routes: r.iter().map(|s| s.to_string()).collect(),
        collects: false,
    };
    Station {
        haddr: "N0AAA.#NCA.CA.USA.NOAM".into(),
        partners: vec![p("N0BBB", &["N0BBB", "USA", "WW"]), p("N0CCC", &["WW"])],
        ..Station::new(call("N0AAA"))
    }
}

pub(crate) fn incoming(bid: &str, kind: MsgType, at: &str, text: &[u8]) -> Incoming {
    Incoming {
        kind,
        from: "N0XYZ".into(),
        to: if kind == MsgType::Bulletin {
            "ALL"
        } else {
            "N0USR"
        }
        .into(),
        at: at.into(),
        bid: bid.into(),
        title: b"T".to_vec(),
        text: text.to_vec(),
        hold: false,
        recipients: Vec::new(),
        files: Vec::new(),
        charset: String::new(),
    }
}

#[test]
fn local_messages_get_our_rline_and_are_queued_by_route() {
    let (_d, mut s) = open();
    s.set_station(station());
    let mut b = msg(MsgType::Bulletin, "ALL", "N0USR", None);
    b.at = "WW".into();
    let n = s.insert_message(&b, call("N0AAA"), 1_796_214_665).unwrap();
    let m = s.message(n).unwrap().unwrap();
    assert_eq!(
        m.rlines,
        b"R:261202/1231Z @:N0AAA.#NCA.CA.USA.NOAM #:1 $:1_N0AAA\r\n"
    );
    assert_eq!(
        s.queue_counts().unwrap(),
        vec![("N0BBB".into(), 1), ("N0CCC".into(), 1)]
    );
    let p = s.pending(call("N0BBB"), 5, 0, B1).unwrap();
    assert_eq!(p.len(), 1);
    assert!(p[0].text.starts_with(b"R:261202/1231Z"));
    assert!(p[0].text.ends_with(&m.body));
    // Storing compresses nothing: the forms are made when a session first sends the message.
    assert_eq!(p[0].compressed, None);
    // Each queueing moved the partner's mark.
    let marks = s.queue_marks();
    assert_eq!((marks.get(call("N0BBB")), marks.get(call("n0ccc"))), (1, 1));
    // Personal mail for a local user stays here: no mark moves, nothing is compressed.
    let local = msg(MsgType::Personal, "N0USR", "N0OTH", None);
    let l = s.insert_message(&local, call("N0AAA"), 0).unwrap();
    assert_eq!(s.queue(None).unwrap().len(), 2);
    assert_eq!((marks.get(call("N0BBB")), marks.get(call("N0CCC"))), (1, 1));
    let mut p = msg(MsgType::Personal, "N0QQQ", "N0USR", None);
    p.at = "N0QQQ.USA".into();
    let n = s.insert_message(&p, call("N0AAA"), 0).unwrap();
    assert_eq!((marks.get(call("N0BBB")), marks.get(call("N0CCC"))), (2, 1));
    let p = s.pending(call("N0BBB"), 5, n - 1, B1).unwrap();
    assert_eq!((p[0].number, p[0].compressed.as_deref()), (n, None));
    assert!(l < n);
}

/// A store holding one bulletin for N0BBB and N0CCC, stored at `now`, with no compressed form
/// made yet; returns its number.
fn bulletin_for_two(now: i64) -> (tempfile::TempDir, Store, u64) {
    let (d, mut s) = open();
    s.set_station(station());
    let mut b = msg(MsgType::Bulletin, "ALL", "N0USR", None);
    b.at = "WW".into();
    let n = s.insert_message(&b, call("N0AAA"), now).unwrap();
    (d, s, n)
}

/// How a B1 (B0) and a B2 session read the queue.
const B1: Form = Form {
    packed: Some("fbb"),
    every_part: false,
};
const B2: Form = Form {
    packed: Some("b2f"),
    every_part: true,
};

/// Makes a compressed form (the bytes stand for it: the store keeps them as they come) of the
/// one message pending for `partner`, as a sending session in `form` does, and records the
/// partner's answer `Later` with it: the message is still queued, so the form is kept.
fn pack_for(s: &mut Store, partner: Callsign, form: Form) -> Vec<u8> {
    let p = s.pending(partner, 5, 0, form).unwrap();
    assert_eq!(p[0].compressed, None, "made before it was sent");
    let name = form.packed.unwrap();
    let packed = format!("{name} form of {}", p[0].number).into_bytes();
    let made = [(p[0].number, &packed[..])];
    s.forwarded(
        partner,
        &[(p[0].number, FwdOutcome::Later)],
        Some((name, &made)),
        1,
    )
    .unwrap();
    packed
}

/// How many compressed forms of each kind the store keeps: (B1, B2).
fn forms_kept(s: &Store) -> (i64, i64) {
    let count = |t: &str| {
        s.conn
            .query_row(&format!("SELECT COUNT(*) FROM {t}"), [], |r| r.get(0))
            .unwrap()
    };
    (count("compressed"), count("compressed_b2"))
}

#[test]
fn a_form_is_kept_only_while_another_partner_waits_for_its_message() {
    // A bulletin for N0BBB and N0CCC: N0BBB took it; its B1 form is kept for N0CCC.
    let (_d, mut s, n) = bulletin_for_two(0);
    let b1 = [(n, &b"zip"[..])];
    let made = Some(("fbb", &b1[..]));
    s.forwarded(call("N0BBB"), &[(n, FwdOutcome::Sent)], made, 1)
        .unwrap();
    assert_eq!(forms_kept(&s), (1, 0));
    let p = s.pending(call("N0CCC"), 5, 0, B1).unwrap();
    assert_eq!(p[0].compressed.as_deref(), Some(&b"zip"[..]));
    // N0CCC took it too, with a B2 form made for it: nobody waits, so that one is not written.
    let b2 = [(n, &b"zap"[..])];
    let made = Some(("b2f", &b2[..]));
    s.forwarded(call("N0CCC"), &[(n, FwdOutcome::Sent)], made, 2)
        .unwrap();
    assert_eq!(forms_kept(&s), (1, 0));
}

#[test]
fn each_compressed_form_is_made_when_first_sent_and_kept_for_every_partner() {
    let (_d, mut s, n) = bulletin_for_two(1_796_214_665);
    // B2 (N0BBB): its form made by the session, kept for N0CCC.
    let packed = pack_for(&mut s, call("N0BBB"), B2);
    let p = s.pending(call("N0BBB"), 5, 0, B2).unwrap();
    assert_eq!((p[0].number, p[0].created), (n, 1_796_214_665));
    assert_eq!(p[0].compressed.as_deref(), Some(&packed[..]));
    // Another partner taking B2 gets the kept bytes; B1 is a form of its own.
    let p = s.pending(call("N0CCC"), 5, 0, B2).unwrap();
    assert_eq!(p[0].compressed.as_deref(), Some(&packed[..]));
    let b1 = pack_for(&mut s, call("N0CCC"), B1);
    assert_eq!(
        s.pending(call("N0CCC"), 5, 0, B1).unwrap()[0].compressed,
        Some(b1)
    );
    // No form asked, none read.
    assert_eq!(
        s.pending(call("N0BBB"), 5, 0, Form::default()).unwrap()[0].compressed,
        None
    );
    // A form the store has no table for is an error, not a panic.
    let unknown = Form {
        packed: Some("b9"),
        every_part: false,
    };
    assert!(s.pending(call("N0BBB"), 5, 0, unknown).is_err());
}

#[test]
fn received_blocks_are_stored_once_flooded_onward_and_loops_held() {
    let (_d, mut s) = open();
    s.set_station(station());
    let block = vec![
        incoming(
            "B1_N0XYZ",
            MsgType::Bulletin,
            "WW",
            b"R:261202/1200Z @:N0XYZ.NOAM #:5 $:B1_N0XYZ\r\nhello\r\n",
        ),
        incoming(
            "B1_N0XYZ",
            MsgType::Bulletin,
            "WW",
            b"dup in the same block\r\n",
        ),
        incoming(
            "L1_N0XYZ",
            MsgType::Bulletin,
            "WW",
            b"R:261202/1200Z @:N0AAA.#NCA.CA.USA.NOAM #:1\r\nloop\r\n",
        ),
        incoming(
            "P1_N0XYZ",
            MsgType::Personal,
            "N0QQQ.CA.USA.NOAM",
            b"to pass on\r\n",
        ),
    ];
    let r = s.store_received(call("N0CCC"), &block, 10).unwrap();
    assert!(matches!(r[0], Stored::Stored(_)));
    assert_eq!(r[1], Stored::Duplicate);
    assert!(matches!(r[2], Stored::Held(_)));
    assert!(matches!(r[3], Stored::Stored(_)));
    // The bulletin goes on to N0BBB but not back to N0CCC; the personal one to N0BBB (USA).
    let q = s.queue(None).unwrap();
    let to: Vec<(&str, &str)> = q
        .iter()
        .map(|e| (e.partner.as_str(), e.bid.as_str()))
        .collect();
    assert_eq!(to, vec![("N0BBB", "B1_N0XYZ"), ("N0BBB", "P1_N0XYZ")]);
    let Stored::Stored(n) = r[0] else {
        unreachable!()
    };
    let m = s.message(n).unwrap().unwrap();
    assert!(m.rlines.starts_with(
        b"R:700101/0000Z @:N0AAA.#NCA.CA.USA.NOAM #:1 $:B1_N0XYZ\r\nR:261202/1200Z @:N0XYZ"
    ));
    assert_eq!(m.body, b"hello\r\n");
    // A second copy from another partner is a duplicate.
    let again = s.store_received(call("N0BBB"), &block[..1], 11).unwrap();
    assert_eq!(again, vec![Stored::Duplicate]);
}

#[test]
fn a_blocks_texts_are_kept_together_and_read_back_each_whole() {
    let (_d, mut s) = open();
    s.set_station(station());
    let words = b"the band was open to europe on twenty meters packet radio node\r\n";
    let block: Vec<Incoming> = (0..5)
        .map(|i| {
            let mut text =
                format!("R:261202/1200Z @:N0XYZ.#NCA.CA.USA.NOAM $:T{i}_N0XYZ\r\n").into_bytes();
            text.extend(words.repeat(10 + i));
            incoming(&format!("T{i}_N0XYZ"), MsgType::Bulletin, "WW", &text)
        })
        .collect();
    let r = s.store_received(call("N0CCC"), &block, 10).unwrap();
    let numbers: Vec<u64> = r
        .iter()
        .map(|r| match r {
            Stored::Stored(n) => *n,
            other => panic!("{other:?}"),
        })
        .collect();
    let count = |s: &Store, table: &str| -> i64 {
        s.conn
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    };
    // One block, no row of their own.
    assert_eq!((count(&s, "text_blocks"), count(&s, "texts")), (1, 0));
    for (i, n) in numbers.iter().enumerate() {
        let m = s.message(*n).unwrap().unwrap();
        assert_eq!(m.body, words.repeat(10 + i), "message {n}");
        assert!(m.rlines.ends_with(format!("$:T{i}_N0XYZ\r\n").as_bytes()));
        assert_eq!(s.message_head(*n).unwrap().unwrap().rlines, m.rlines);
        let mut pieces = Vec::new();
        loop {
            let piece = s.body_chunk(*n, pieces.len() as u64, 100).unwrap();
            if piece.is_empty() {
                break;
            }
            pieces.extend(piece);
        }
        assert_eq!(pieces, m.body, "message {n} in pieces");
    }
    // Forwarding reads them too, whole.
    let sent = s.pending(call("N0BBB"), 10, 0, Form::default()).unwrap();
    assert_eq!(sent.len(), 5);
    for (p, m) in sent.iter().zip(&block) {
        assert!(p.text.ends_with(&m.text), "pending {}", p.number);
    }
    // The block stays while any of its messages does.
    for n in &numbers[..4] {
        s.conn
            .execute("DELETE FROM messages WHERE number = ?1", [*n as i64])
            .unwrap();
        assert_eq!(count(&s, "text_blocks"), 1);
    }
    assert_eq!(
        s.message(numbers[4]).unwrap().unwrap().body,
        words.repeat(14)
    );
    s.conn
        .execute(
            "DELETE FROM messages WHERE number = ?1",
            [numbers[4] as i64],
        )
        .unwrap();
    assert_eq!(count(&s, "text_blocks"), 0);
    assert!(s.check().unwrap().is_empty());
}

#[test]
fn a_number_is_never_given_twice_though_sqlite_sequence_runs_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
    s.set_station(station());
    let seq = |s: &Store| -> i64 {
        s.conn
            .query_row(
                "SELECT seq FROM sqlite_sequence WHERE name = 'messages'",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    let mut next_bid = 0;
    let mut store = |s: &mut Store, n: usize| -> Vec<u64> {
        let block: Vec<Incoming> = (0..n)
            .map(|_| {
                next_bid += 1;
                incoming(
                    &format!("N{next_bid}_N0XYZ"),
                    MsgType::Bulletin,
                    "WW",
                    b"hi\r\n",
                )
            })
            .collect();
        s.store_received(call("N0CCC"), &block, 10)
            .unwrap()
            .iter()
            .map(|r| match r {
                Stored::Stored(n) => *n,
                other => panic!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(store(&mut s, 5), [1, 2, 3, 4, 5]);
    let ahead = seq(&s);
    assert!(ahead >= 5, "{ahead}");
    // Blocks within the numbers taken ahead leave sqlite_sequence as it is.
    assert_eq!(store(&mut s, 5), [6, 7, 8, 9, 10]);
    assert_eq!(seq(&s), ahead);
    // The newest removed: its number is not given again, nor after every message is gone, nor
    // after a restart.
    let delete = |s: &Store, cond: &str| {
        s.conn
            .execute(&format!("DELETE FROM messages WHERE {cond}"), [])
            .unwrap();
    };
    delete(&s, "number IN (9, 10)");
    assert_eq!(store(&mut s, 1), [11]);
    delete(&s, "1");
    drop(s);
    let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
    s.set_station(station());
    assert_eq!(store(&mut s, 2), [12, 13]);
    assert_eq!(
        s.insert_message(
            &msg(MsgType::Personal, "N0USR", "N0ABC", None),
            call("N0AAA"),
            0
        )
        .unwrap(),
        14
    );
    // Past the numbers taken ahead, more are taken.
    let many = store(&mut s, (ahead - 14 + 1) as usize);
    assert_eq!(many.last().copied(), Some(ahead as u64 + 1));
    assert!(seq(&s) > ahead);
}

#[test]
fn acknowledgements_empty_the_queue() {
    let (_d, mut s) = open();
    s.set_station(station());
    let mut p = msg(MsgType::Personal, "N0QQQ", "N0USR", None);
    p.at = "N0QQQ.USA".into();
    let n = s.insert_message(&p, call("N0AAA"), 0).unwrap();
    let made = [(n, &b"zip"[..])];
    s.forwarded(
        call("N0BBB"),
        &[(n, FwdOutcome::Later)],
        Some(("fbb", &made)),
        0,
    )
    .unwrap();
    assert_eq!(
        s.pending(call("N0BBB"), 5, 0, B1).unwrap()[0]
            .compressed
            .as_deref(),
        Some(&b"zip"[..])
    );
    assert_eq!(s.pending(call("N0BBB"), 5, n, B1).unwrap().len(), 0);
    s.forwarded(call("N0BBB"), &[(n, FwdOutcome::Later)], None, 1)
        .unwrap();
    assert_eq!(s.pending(call("N0BBB"), 5, 0, B1).unwrap().len(), 1);
    s.forwarded(call("N0BBB"), &[(n, FwdOutcome::Sent)], None, 2)
        .unwrap();
    assert!(s.pending(call("N0BBB"), 5, 0, B1).unwrap().is_empty());
    assert_eq!(
        s.message(n).unwrap().unwrap().header.status,
        MsgStatus::Forwarded
    );
}

#[test]
fn partials_are_kept_for_resume() {
    let (_d, mut s) = open();
    s.set_station(station());
    let ask = |s: &mut Store| {
        s.proposal_info(&[("X1".into(), Some("b1")), ("X1".into(), None)])
            .unwrap()
    };
    assert_eq!(ask(&mut s), vec![(false, None), (false, None)]);
    s.save_partial("x1", call("N0BBB"), "b1", b"abc", 0)
        .unwrap();
    // Offered only for a compressed proposal.
    assert_eq!(
        ask(&mut s),
        vec![(false, Some(b"abc".to_vec())), (false, None)]
    );
    // A partial of a B2 transfer is not offered to a B1 proposal (another file).
    s.save_partial("x1", call("N0BBB"), "b2", b"b2f", 0)
        .unwrap();
    assert_eq!(ask(&mut s), vec![(false, None), (false, None)]);
    let b2 = s.proposal_info(&[("X1".into(), Some("b2"))]).unwrap();
    assert_eq!(b2, vec![(false, Some(b"b2f".to_vec()))]);
    // One that did not match the partner's file is dropped: taken from 0 next time.
    s.drop_partial("X1").unwrap();
    assert_eq!(ask(&mut s), vec![(false, None), (false, None)]);
    s.save_partial("x1", call("N0BBB"), "b1", b"abc", 0)
        .unwrap();
    // The whole message arriving drops the partial, in the same transaction.
    s.store_received(
        call("N0BBB"),
        &[incoming("X1", MsgType::Bulletin, "WW", b"x\r\n")],
        0,
    )
    .unwrap();
    assert_eq!(ask(&mut s), vec![(true, None), (true, None)]);
}

#[test]
fn every_earlier_schema_version_migrates() {
    for from in 0..schema::CURRENT_VERSION {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
            for (i, step) in schema::MIGRATIONS.iter().enumerate().take(from as usize) {
                conn.execute_batch(step).unwrap();
                conn.pragma_update(None, "user_version", i as i64 + 1)
                    .unwrap();
            }
            if from >= 1 {
                let tx = conn.transaction().unwrap();
                // R: lines and a body with a NUL in it: migration 16 moves them to `texts`.
                if from < 16 {
                    tx.execute(
                        "INSERT INTO messages (kind, status, to_call, from_call, bid, subject, rlines, body, size, created) \
                         VALUES ('P', 'N', 'N0USR', 'N0ABC', 'OLD_1', x'', x'523a310d0a', x'68006900', 4, 0)",
                        [],
                    )
                    .unwrap();
                } else {
                    tx.execute_batch(
                        "INSERT INTO messages (kind, status, to_call, from_call, bid, subject, size, created) \
                         VALUES ('P', 'N', 'N0USR', 'N0ABC', 'OLD_1', x'', 4, 0);
                         INSERT INTO texts (number, rlines, size, packed, data) \
                         VALUES (1, 5, 9, 0, x'523a310d0a68006900');",
                    )
                    .unwrap();
                }
                // Counted by hand since schema 22, as a tool writing rows must.
                if from >= 22 {
                    tx.execute_batch(
                        "INSERT INTO tallies (kind, status, area, at, n) VALUES ('P', 'N', '', '', 1)",
                    )
                    .unwrap();
                }
                tx.commit().unwrap();
            }
        }
        // `qtc store check` before the upgrade (no tallies before schema 8).
        let found = Store::check_dir(dir.path()).unwrap();
        assert!(found.is_empty(), "before migrating from {from}: {found:?}");
        let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
        assert!(s.check().unwrap().is_empty());
        if from >= 1 {
            let m = s.message(1).unwrap().unwrap();
            assert_eq!(
                (&m.rlines[..], &m.body[..]),
                (&b"R:1\r\n"[..], &b"h\0i\0"[..])
            );
            assert_eq!(s.body_chunk(1, 1, 2).unwrap(), b"\0i");
        }
        s.set_station(station());
        s.insert_message(
            &msg(MsgType::Bulletin, "ALL", "N0USR", None),
            call("N0AAA"),
            0,
        )
        .unwrap();
        // Kept by a trigger before schema 22, by the store since: each row counted once.
        let found = s.check().unwrap();
        assert!(found.is_empty(), "after migrating from {from}: {found:?}");
    }
}

#[test]
fn housekeeping_expires_by_type_and_keeps_held_mail() {
    let (_d, mut s) = open();
    s.set_station(station());
    let day = 86_400;
    let read = s
        .insert_message(
            &msg(MsgType::Personal, "N0USR", "N0ABC", None),
            call("N0AAA"),
            0,
        )
        .unwrap();
    s.mark_read(read, call("N0USR")).unwrap();
    let unread = s
        .insert_message(
            &msg(MsgType::Personal, "N0USR", "N0ABC", None),
            call("N0AAA"),
            0,
        )
        .unwrap();
    let mut b = msg(MsgType::Bulletin, "ALL", "N0ABC", Some("OLD_B"));
    b.at = "WW".into();
    let bull = s.insert_message(&b, call("N0AAA"), 0).unwrap();
    let mut h = msg(MsgType::Bulletin, "ALL", "N0ABC", None);
    h.status = MsgStatus::Held;
    let held = s.insert_message(&h, call("N0AAA"), 0).unwrap();
    s.save_partial("P1", call("N0BBB"), "b1", b"x", 0).unwrap();
    let l = Lifetimes::default();
    // Day 20: the bulletin (14 days) expires; read personal mail (30) not yet.
    let r = s.housekeep(20 * day, &l).unwrap();
    assert_eq!((r.expired, r.partials), (1, 1));
    assert_eq!(
        s.message(bull).unwrap().unwrap().header.status,
        MsgStatus::Killed
    );
    // Day 40: read mail expires; the bulletin, killed for longer than 2 days, is removed.
    let r = s.housekeep(40 * day, &l).unwrap();
    assert_eq!(r.expired, 1);
    assert!(s.message(read).unwrap().is_some());
    assert!(s.message(bull).unwrap().is_none());
    assert!(
        s.bid_known("OLD_B").unwrap(),
        "the BID outlives the message"
    );
    let r = s.housekeep(400 * day, &l).unwrap();
    assert!(r.bids >= 1);
    assert!(!s.bid_known("OLD_B").unwrap());
    assert_eq!(
        s.message(unread).unwrap().unwrap().header.status,
        MsgStatus::Killed
    );
    assert_eq!(
        s.message(held).unwrap().unwrap().header.status,
        MsgStatus::Held
    );
    assert!(s.check().unwrap().is_empty());
}

#[test]
fn housekeeping_drops_compressed_forms_once_every_partner_has_the_message() {
    let (_d, mut s, n) = bulletin_for_two(0);
    pack_for(&mut s, call("N0BBB"), B2);
    pack_for(&mut s, call("N0CCC"), B1);
    let l = Lifetimes::default();
    assert_eq!(s.housekeep(1, &l).unwrap().compressed, 0);
    s.forwarded(call("N0BBB"), &[(n, FwdOutcome::Sent)], None, 2)
        .unwrap();
    // N0CCC still waits for it: both forms stay (they are per message, not per partner).
    assert_eq!(s.housekeep(3, &l).unwrap().compressed, 0);
    s.forwarded(call("N0CCC"), &[(n, FwdOutcome::Sent)], None, 4)
        .unwrap();
    let r = s.housekeep(5, &l).unwrap();
    assert_eq!(r.compressed, 2);
    assert!(r.to_string().contains("2 compressed forms dropped"), "{r}");
}

#[test]
fn white_pages_are_learned_from_received_rlines() {
    let (_d, mut s) = open();
    s.set_station(station());
    let m = incoming(
        "W1_N0XYZ",
        MsgType::Bulletin,
        "WW",
        b"R:261202/1200Z @:N0CCC.#SCA.CA.USA.NOAM #:5\r\nhi\r\n",
    );
    s.store_received(call("N0CCC"), &[m], 10).unwrap();
    assert_eq!(
        s.home_bbs("n0xyz").unwrap().as_deref(),
        Some("N0CCC.#SCA.CA.USA.NOAM")
    );
    // Personal mail with no @ to that call now routes there (N0BBB takes USA).
    let p = msg(MsgType::Personal, "N0XYZ", "N0USR", None);
    let n = s.insert_message(&p, call("N0AAA"), 11).unwrap();
    assert_eq!(
        s.message(n).unwrap().unwrap().header.at,
        "N0CCC.#SCA.CA.USA.NOAM"
    );
    assert!(s
        .queue(Some("N0BBB"))
        .unwrap()
        .iter()
        .any(|q| q.number == n));
}

#[test]
fn a_block_learns_each_origin_in_message_order() {
    // One transaction learns a sender's home once for a run of the same R: line, yet a home
    // named again after another one is learned again, as message by message.
    let (_d, mut s) = open();
    s.set_station(station());
    let from = |bid: &str, home: &str| {
        let text = format!("R:261202/1200Z @:{home} #:5\r\nhi\r\n");
        incoming(bid, MsgType::Bulletin, "WW", text.as_bytes())
    };
    let block = [
        from("W1_N0XYZ", "N0CCC.#SCA.CA.USA.NOAM"),
        from("W2_N0XYZ", "N0CCC.#SCA.CA.USA.NOAM"),
        from("W3_N0XYZ", "N0DDD.#NCA.CA.USA.NOAM"),
        from("W4_N0XYZ", "N0CCC.#SCA.CA.USA.NOAM"),
    ];
    s.store_received(call("N0CCC"), &block, 10).unwrap();
    assert_eq!(
        s.home_bbs("N0XYZ").unwrap().as_deref(),
        Some("N0CCC.#SCA.CA.USA.NOAM")
    );
    s.store_received(call("N0CCC"), &block[2..3], 10).unwrap();
    assert_eq!(
        s.home_bbs("N0XYZ").unwrap().as_deref(),
        Some("N0CCC.#SCA.CA.USA.NOAM"),
        "a known BID teaches nothing"
    );
    s.store_received(call("N0CCC"), &[from("W5_N0XYZ", "N0DDD")], 10)
        .unwrap();
    assert_eq!(s.home_bbs("N0XYZ").unwrap().as_deref(), Some("N0DDD"));
}

#[test]
fn rules_hold_or_reject_and_held_mail_is_released() {
    use qtc_mail::rules::{Rule, RuleAction, RuleField};
    let (_d, mut s) = open();
    let mut st = station();
    st.rules = vec![
        Rule {
            action: RuleAction::Hold,
            field: RuleField::To,
            pattern: "SALE".into(),
        },
        Rule {
            action: RuleAction::Reject,
            field: RuleField::Subject,
            pattern: "*lottery*".into(),
        },
    ];
    s.set_station(st);
    let mut spam = msg(MsgType::Bulletin, "ALL", "N0ABC", None);
    spam.subject = b"Win the LOTTERY".to_vec();
    assert!(matches!(
        s.insert_message(&spam, call("N0AAA"), 0),
        Err(StoreError::Rejected(_))
    ));
    let mut sale = msg(MsgType::Bulletin, "SALE", "N0ABC", None);
    sale.at = "WW".into();
    let n = s.insert_message(&sale, call("N0AAA"), 0).unwrap();
    assert_eq!(
        s.message(n).unwrap().unwrap().header.status,
        MsgStatus::Held
    );
    assert!(
        s.queue(None).unwrap().is_empty(),
        "held mail is not forwarded"
    );
    let r = s.store_received(
        call("N0CCC"),
        &[incoming("S1", MsgType::Bulletin, "WW", b"x\r\n")],
        0,
    );
    assert_eq!(r.unwrap(), vec![Stored::Stored(n + 1)]);
    let mut junk = incoming("S2", MsgType::Bulletin, "WW", b"x\r\n");
    junk.title = b"lottery!".to_vec();
    assert_eq!(
        s.store_received(call("N0CCC"), &[junk], 0).unwrap(),
        vec![Stored::Rejected]
    );
    assert!(
        !s.bid_known("S2").unwrap(),
        "a refused message's BID is not kept"
    );
    assert!(s.release(n, 1).unwrap());
    assert!(!s.release(n, 1).unwrap(), "only held mail is released");
    assert_eq!(s.message(n).unwrap().unwrap().header.status, MsgStatus::New);
    assert!(s.queue(None).unwrap().iter().any(|q| q.number == n));
}

#[test]
fn a_full_store_refuses_cleanly_and_keeps_what_it_had() {
    let (_d, mut s) = open();
    s.set_station(station());
    s.insert_message(
        &msg(MsgType::Personal, "N0USR", "N0ABC", None),
        call("N0AAA"),
        0,
    )
    .unwrap();
    s.set_max_size(256 * 1024).unwrap();
    let mut big = msg(MsgType::Bulletin, "ALL", "N0ABC", None);
    big.at = "WW".into();
    big.body = vec![b'x'; 1024 * 1024];
    assert!(matches!(
        s.insert_message(&big, call("N0AAA"), 0),
        Err(StoreError::Full)
    ));
    let block = vec![incoming("F1", MsgType::Bulletin, "WW", &big.body)];
    assert!(matches!(
        s.store_received(call("N0CCC"), &block, 0),
        Err(StoreError::Full)
    ));
    assert_eq!(s.counts().unwrap(), (1, 1));
    assert!(
        !s.bid_known("F1").unwrap(),
        "nothing of the refused block stays"
    );
    s.set_max_size(0).unwrap();
    assert!(s.insert_message(&big, call("N0AAA"), 0).is_ok());
    assert!(s.check().unwrap().is_empty());
}

#[test]
fn every_b2f_recipient_is_routed_and_sees_it_and_attachments_are_kept() {
    let (_d, mut s) = open();
    s.set_station(station());
    let mut m = incoming("WL2KMID1", MsgType::Personal, "", b"hi\r\n");
    m.recipients = vec![
        Recipient {
            cc: false,
            addr: "N0USR".into(),
        },
        Recipient {
            cc: true,
            addr: "N0XYZ@N0BBB".into(),
        },
        Recipient {
            cc: true,
            addr: "N0OTH".into(),
        },
    ];
    m.files = vec![Attachment {
        name: b"a.bin".to_vec(),
        data: vec![0, 0xff, 1],
    }];
    let r = s.store_received(call("N0CCC"), &[m], 0).unwrap();
    let [forward::Stored::Stored(n)] = r[..] else {
        panic!("{r:?}")
    };
    // The Cc @N0BBB goes to N0BBB; the local ones stay.
    let q = s.queue(None).unwrap();
    assert_eq!(q.len(), 1);
    assert_eq!((q[0].partner.as_str(), q[0].number), ("N0BBB", n));
    // N0OTH, a copy, lists and reads it.
    let f = ListFilter {
        visible_to: Some("N0OTH".into()),
        ..Default::default()
    };
    assert_eq!(s.list(&f).unwrap().len(), 1);
    // It is N0OTH's own unread mail (`RM`, `LM`), and still N0USR's; nobody else's.
    for (call, mine) in [("N0OTH", 1), ("N0USR", 1), ("N0ABC", 0)] {
        let f = ListFilter {
            to_or_copy: Some(call.into()),
            status: Some(MsgStatus::New),
            ..Default::default()
        };
        assert_eq!(s.list(&f).unwrap().len(), mine, "{call}");
    }
    let got = s.message(n).unwrap().unwrap();
    assert_eq!(got.copies, ["N0XYZ", "N0OTH"]);
    assert_eq!(got.files[0].size, 3);
    assert_eq!(
        s.attachment(n, 0).unwrap(),
        Some(Attachment {
            name: b"a.bin".to_vec(),
            data: vec![0, 0xff, 1]
        })
    );
    // The B2 form carries every recipient and the file.
    let p = s.pending(call("N0BBB"), 5, 0, B2).unwrap();
    assert_eq!(p[0].recipients.len(), 3);
    assert_eq!(p[0].files.len(), 1);
    // A one-addressee (B1) partner gets it addressed to the copy behind it.
    let p = s.pending(call("N0BBB"), 5, 0, B1).unwrap();
    assert_eq!((p[0].to.as_str(), p[0].at.as_str()), ("N0XYZ", "N0BBB"));
    assert!(p[0].files.is_empty());
}

#[test]
fn a_winlink_partner_collects_mail_for_the_calls_it_announces() {
    let (_d, mut s) = open();
    s.set_station(station());
    let now = 0;
    // Mail for N0PAT's bare call, one @ this BBS, one elsewhere, and a bulletin.
    for (to, at, kind) in [
        ("N0PAT", "", MsgType::Personal),
        ("N0PAT", "N0AAA.#NCA", MsgType::Personal),
        ("N0PAT", "N0BBB", MsgType::Personal),
        ("ALL", "", MsgType::Bulletin),
    ] {
        let mut m = msg(kind, to, "N0USR", None);
        m.at = at.into();
        s.insert_message(&m, call("N0AAA"), now).unwrap();
    }
    let calls = ["N0PAT".to_string()];
    assert_eq!(s.queue_collected(call("N0PAT"), &calls, now).unwrap(), 2);
    // Twice is once.
    assert_eq!(s.queue_collected(call("N0PAT"), &calls, now).unwrap(), 0);
    let p = s.pending(call("N0PAT"), 5, 0, Form::default()).unwrap();
    assert_eq!(p.iter().map(|p| p.number).collect::<Vec<_>>(), [1, 2]);
    // Once the partner took them they are forwarded, not queued again.
    s.forwarded(
        call("N0PAT"),
        &[(1, FwdOutcome::Sent), (2, FwdOutcome::Sent)],
        None,
        now,
    )
    .unwrap();
    assert_eq!(s.queue_collected(call("N0PAT"), &calls, now).unwrap(), 0);
    assert_eq!(
        s.message(1).unwrap().unwrap().header.status,
        MsgStatus::Forwarded
    );
}

#[test]
fn a_locked_user_has_no_password_to_check_until_unlocked() {
    let (_d, mut s) = open();
    s.add_user(call("N0USR"), Some("pw"), false, false).unwrap();
    let stamp = s.login_stamp(call("n0usr")).unwrap().unwrap();
    assert!(stamp.starts_with("U:$argon2"), "{stamp}");
    assert!(s.set_locked(call("N0USR"), true).unwrap());
    assert!(
        !s.set_locked(call("N0USR"), true).unwrap(),
        "already locked"
    );
    assert_eq!(s.password_hash(call("N0USR")).unwrap(), None);
    assert_eq!(s.login_stamp(call("N0USR")).unwrap(), None);
    assert!(!password_ok(&mut s, "N0USR", "pw"));
    assert_eq!(s.locked_users().unwrap(), vec!["N0USR".to_string()]);
    assert!(s.set_locked(call("N0USR"), false).unwrap());
    assert!(password_ok(&mut s, "N0USR", "pw"));
    assert_eq!(s.login_stamp(call("N0USR")).unwrap(), Some(stamp));
    s.set_flags(call("N0USR"), Some(true), None).unwrap();
    assert!(s
        .login_stamp(call("N0USR"))
        .unwrap()
        .unwrap()
        .starts_with("S:"));
}

#[test]
fn a_reader_sees_every_commit_whatever_its_size() {
    // The writer's WAL frames are held by walvfs until each commit's last frame. A reader (on
    // SQLite's own VFS) must see every commit as soon as it is made: a small one, one larger
    // than a single write (128 KB) and one larger than what is ever held (1 MB). Durability
    // normal: no sync, so nothing but the commit frame sends what is held.
    let (dir, mut s) = open();
    let mut r = Store::open_read_only(dir.path()).unwrap();
    for size in [10, 3_000, 200_000, 3_000_000] {
        let mut m = msg(MsgType::Personal, "N0USR", "N0ABC", None);
        m.body = (0..size).map(|i| (i % 251) as u8).collect();
        let n = s.insert_message(&m, call("N0AAA"), 0).unwrap();
        assert_eq!(r.message(n).unwrap().unwrap().body, m.body, "{size} bytes");
    }
    drop(s);
    let mut s = Store::open(dir.path(), Durability::Full).unwrap();
    assert!(s.check().unwrap().is_empty());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(16))]
    /// Whatever a writer's commits hold (walvfs keeps their WAL frames back until the commit
    /// frame; past 1 MB a transaction spills), a reader on SQLite's own VFS sees each commit at
    /// once, with or without a sync per commit, and the store reopens intact.
    #[test]
    fn every_commit_is_seen_at_once_whatever_it_holds(
        commits in proptest::collection::vec(
            proptest::collection::vec(0usize..1_500_000, 1..4), 1..5),
        synced: bool,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let durability = if synced { Durability::Full } else { Durability::Normal };
        let mut s = Store::open(dir.path(), durability).unwrap();
        s.set_station(station());
        let mut r = Store::open_read_only(dir.path()).unwrap();
        for sizes in commits {
            let msgs: Vec<NewMessage> = sizes
                .iter()
                .map(|&n| {
                    let mut m = msg(MsgType::Personal, "N0USR", "N0ABC", None);
                    m.body = (0..n).map(|i| (i % 253) as u8).collect();
                    m
                })
                .collect();
            let numbers = s.insert_many(&msgs, 0).unwrap();
            for (n, m) in numbers.into_iter().zip(&msgs) {
                let got = r.message(n.unwrap()).unwrap().unwrap();
                proptest::prop_assert_eq!(got.body.len(), m.body.len());
                proptest::prop_assert!(got.body == m.body);
            }
        }
        drop(r);
        drop(s);
        let mut s = Store::open(dir.path(), Durability::Full).unwrap();
        proptest::prop_assert!(s.check().unwrap().is_empty());
    }
}

#[test]
fn checkpoints_through_walvfs_keep_every_message() {
    // With small pages a message is a run of pages: walvfs holds a checkpoint's writes to the
    // database up to each 4 KB boundary and reads the WAL ahead. Readers on SQLite's own VFS
    // see every message between checkpoints, another writer (a sysop's command) may restart
    // the WAL between ours, and the file stays intact.
    let (dir, mut s) = open();
    s.set_station(station());
    let mut r = Store::open_read_only(dir.path()).unwrap();
    let mut numbers = Vec::new();
    for round in 0..40u32 {
        let msgs: Vec<NewMessage> = (0..5u32)
            .map(|j| {
                let mut m = msg(MsgType::Personal, "N0USR", "N0ABC", None);
                m.body = (0..2_000 + 97 * j + round)
                    .map(|i| (i % 251) as u8)
                    .collect();
                m
            })
            .collect();
        for (n, m) in s.insert_many(&msgs, 0).unwrap().into_iter().zip(msgs) {
            numbers.push((n.unwrap(), m.body));
        }
        if round % 7 == 3 {
            s.shrink_wal().unwrap();
        }
        if round % 11 == 5 {
            // Another writer, as `qtc msg kill` would be, then its own checkpoint.
            let mut other = Store::open(dir.path(), Durability::Full).unwrap();
            other.set_status(numbers[0].0, MsgStatus::Read).unwrap();
            other.shrink_wal().unwrap();
        }
        for (n, body) in &numbers {
            assert_eq!(&r.message(*n).unwrap().unwrap().body, body, "message {n}");
        }
    }
    drop(r);
    drop(s);
    let mut s = Store::open(dir.path(), Durability::Full).unwrap();
    assert!(s.check().unwrap().is_empty());
    for (n, body) in &numbers {
        assert_eq!(&s.message(*n).unwrap().unwrap().body, body);
    }
}

#[test]
fn each_user_has_their_own_read_mark_on_a_bulletin() {
    let (_d, mut s) = open();
    let b = s
        .insert_message(
            &msg(MsgType::Bulletin, "ALL", "N0ABC", None),
            call("N0AAA"),
            0,
        )
        .unwrap();
    let seen = |s: &mut Store, who: &str| {
        let f = ListFilter {
            reader: Some(who.into()),
            ..Default::default()
        };
        s.list(&f).unwrap()[0].status
    };
    let unread = |s: &mut Store, who: &str| {
        let f = ListFilter {
            unread_by: Some(who.into()),
            visible_to: Some(who.into()),
            ..Default::default()
        };
        s.list(&f).unwrap().len()
    };
    for who in ["N0USR", "N0OTH"] {
        assert_eq!(seen(&mut s, who), MsgStatus::New, "{who}");
        assert_eq!(unread(&mut s, who), 1, "{who}");
    }
    s.mark_read(b, call("n0usr")).unwrap();
    s.mark_read(b, call("N0USR")).unwrap();
    assert_eq!(seen(&mut s, "N0USR"), MsgStatus::Read);
    assert_eq!(unread(&mut s, "N0USR"), 0);
    assert_eq!(
        s.status_seen_by(b, call("N0USR")).unwrap(),
        Some(MsgStatus::Read)
    );
    // Nobody else's mark moved, nor the bulletin's own status.
    assert_eq!(seen(&mut s, "N0OTH"), MsgStatus::New);
    assert_eq!(unread(&mut s, "N0OTH"), 1);
    assert_eq!(
        s.status_seen_by(b, call("N0OTH")).unwrap(),
        Some(MsgStatus::New)
    );
    assert_eq!(s.message(b).unwrap().unwrap().header.status, MsgStatus::New);
    // A bulletin's readings are its readers' marks; its count is for personal mail.
    assert_eq!(s.message(b).unwrap().unwrap().read_count, 0);
    // Gone with the bulletin.
    s.conn
        .execute("DELETE FROM messages WHERE number = ?1", [b as i64])
        .unwrap();
    let marks: i64 = s
        .conn
        .query_row("SELECT COUNT(*) FROM bulletin_reads", [], |r| r.get(0))
        .unwrap();
    assert_eq!(marks, 0);
    // A message sent to someone else shows its own status to its sender (it showed Y).
    let p = s
        .insert_message(
            &msg(MsgType::Personal, "N0OTH", "N0USR", None),
            call("N0AAA"),
            0,
        )
        .unwrap();
    assert_eq!(
        s.status_seen_by(p, call("N0USR")).unwrap(),
        Some(MsgStatus::New)
    );
}

/// A store never told which station it is refuses to store, release or route, saying why,
/// and keeps nothing: it would have stamped an empty call into the R: line and the BID.
#[test]
fn a_store_without_a_station_refuses_to_store_and_keeps_nothing() {
    let (_d, mut s) = open();
    let e = s
        .insert_many(&[msg(MsgType::Bulletin, "ALL", "N0ABC", None)], 0)
        .unwrap_err();
    assert!(e.to_string().contains("no station set"), "{e}");
    assert!(s
        .release(1, 0)
        .unwrap_err()
        .to_string()
        .contains("no station set"));
    assert!(s.destination(MsgType::Personal, "N0USR", "").is_err());
    assert!(s.list(&ListFilter::default()).unwrap().is_empty());
}
