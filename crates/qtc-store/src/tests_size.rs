//! Costs independent of the store's size: listing query plans, the tallies behind the counts,
//! housekeeping in chunks and incremental vacuum.

use super::*;
use crate::housekeep::CHUNK;
use crate::tests::call;

fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Durability::Normal).unwrap();
    store.set_station(Station::new(call("N0AAA")));
    (dir, store)
}

fn new(kind: MsgType, to: &str, at: &str, from: &str) -> NewMessage {
    NewMessage {
        kind,
        status: MsgStatus::New,
        to: to.into(),
        at: at.into(),
        from: from.into(),
        bid: None,
        subject: b"Test".to_vec(),
        rlines: Vec::new(),
        body: vec![b'x'; 300],
    }
}

/// `n` bytes that do not compress (text is kept deflated: a test of the file's size needs
/// bodies that keep theirs).
fn noise(n: usize) -> Vec<u8> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The query plan SQLite picks for a listing, one line per step.
fn plan(s: &Store, f: &ListFilter) -> String {
    let at =
        f.at.as_ref()
            .map(|at| counts::at_match(&s.conn, at, f.last).unwrap());
    let (sql, args) = list_query(f, at.as_ref(), true);
    sql_plan(s, &sql, params_from_iter(args.iter()))
}

/// The query plan SQLite picks for `sql`, one line per step.
fn sql_plan(s: &Store, sql: &str, args: impl rusqlite::Params) -> String {
    let mut st = s
        .conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap();
    let rows = st
        .query_map(args, |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows.join("\n")
}

/// A store with mail of every kind, so the planner sees realistic tables.
fn filled() -> (tempfile::TempDir, Store) {
    let (d, mut s) = open();
    let mut batch = Vec::new();
    for i in 0..300 {
        batch.push(new(
            MsgType::Bulletin,
            "ALL",
            "WW",
            &format!("N{}AB", i % 7),
        ));
        batch.push(new(
            MsgType::Personal,
            &format!("N{}US", i % 10),
            "",
            "N0ABC",
        ));
    }
    batch.push(new(MsgType::Traffic, "12345", "NTSCA", "N0ABC"));
    batch.push(new(
        MsgType::Bulletin,
        "WX",
        "N0BBS.#NCA.CA.USA.NOAM",
        "N0ABC",
    ));
    s.insert_many(&batch, 0).unwrap();
    s.set_status(5, MsgStatus::Killed).unwrap();
    s.set_status(6, MsgStatus::Held).unwrap();
    (d, s)
}

/// Every listing the BBS (`L`, `LL n`, `LM`, `L<`, `L>`, `L@`, `LT`, `LB`, `LP`, `LK`, `LH`,
/// `LN`, paged with a cursor) and the web use walks an index or the table newest first and
/// stops at its LIMIT: no full scan of the messages, no sort of them. A user's own mail is
/// several walks merged; only a rare `@` is sorted, read through its index.
#[test]
fn every_listing_is_an_index_walk() {
    let (_d, s) = filled();
    let user = |f: ListFilter| ListFilter {
        visible_to: Some("N1US".into()),
        last: Some(21),
        ..f
    };
    // The sysop's listings show the sysop's own read marks.
    let sysop = |f: ListFilter| ListFilter {
        last: Some(21),
        reader: Some("N0SYS".into()),
        ..f
    };
    let paged = |f: ListFilter| ListFilter {
        range: Some((0, 400)),
        ..f
    };
    // Walked newest first: dense filters (everything visible, bulletins, one area).
    let walks = [
        user(ListFilter::default()),
        user(ListFilter {
            after: Some(100),
            ..Default::default()
        }),
        paged(user(ListFilter::default())),
        user(ListFilter {
            kind: Some(MsgType::Bulletin),
            ..Default::default()
        }),
        user(ListFilter {
            at: Some("WW".into()),
            ..Default::default()
        }),
        sysop(ListFilter {
            include_killed: true,
            ..Default::default()
        }),
    ];
    // Through an index whose entries are in number order for one key.
    let indexed = [
        user(ListFilter {
            from: Some("N1AB".into()),
            ..Default::default()
        }),
        paged(user(ListFilter {
            from: Some("N1AB".into()),
            ..Default::default()
        })),
        user(ListFilter {
            to: Some("ALL".into()),
            ..Default::default()
        }),
        user(ListFilter {
            kind: Some(MsgType::Traffic),
            ..Default::default()
        }),
        sysop(ListFilter {
            status: Some(MsgStatus::Killed),
            ..Default::default()
        }),
        paged(sysop(ListFilter {
            status: Some(MsgStatus::Held),
            ..Default::default()
        })),
    ];
    // One user's own mail (`LM`, `RM`, `LP`, `LN`): each way in (addressee, copy, sender,
    // unread bulletins) walked in number order and merged, never gathered and sorted.
    let merged = [
        user(ListFilter {
            to_or_copy: Some("N1US".into()),
            ..Default::default()
        }),
        user(ListFilter {
            to_or_copy: Some("N1US".into()),
            status: Some(MsgStatus::New),
            oldest_first: true,
            ..Default::default()
        }),
        user(ListFilter {
            kind: Some(MsgType::Personal),
            ..Default::default()
        }),
        user(ListFilter {
            unread_by: Some("N1US".into()),
            reader: Some("N1US".into()),
            ..Default::default()
        }),
    ];
    // A rare `@`: found through its index, then sorted.
    let own = [user(ListFilter {
        at: Some("USA".into()),
        ..Default::default()
    })];
    for f in walks.iter().chain(&indexed).chain(&merged).chain(&own) {
        let p = plan(&s, f);
        if merged.contains(f) {
            assert!(p.contains("MERGE (UNION)"), "{f:?} is not merged:\n{p}");
        }
        for line in p.lines() {
            let bare_scan = line.starts_with("SCAN messages") && !line.contains("INDEX");
            // `LN`'s unread bulletins are walked like `LB`'s.
            let walk = (walks.contains(f) || f.unread_by.is_some()) && line == "SCAN messages";
            assert!(!bare_scan || walk, "{f:?} scans the messages:\n{p}");
        }
        let sorted = p.contains("TEMP B-TREE FOR ORDER BY");
        assert!(!sorted || own.contains(f), "{f:?} sorts:\n{p}");
        if indexed.contains(f) {
            assert!(p.contains("USING INDEX"), "{f:?} has no index:\n{p}");
        }
    }
}

/// `L` with nothing new, paged: the range starts at the last listed number, not at 0, so the
/// walk newest first stops at once.
/// `LM` and `LP` for a user with thousands of messages cost a page, not the mailbox: the
/// merged walks stop at the LIMIT (they gathered and sorted the whole mailbox: 1 M store,
/// 5,000 messages, 93-102 ms).
#[test]
fn a_big_mailbox_is_listed_a_page_at_a_time() {
    let (_d, mut s) = open();
    let mut batch = Vec::new();
    for i in 0..2000 {
        batch.push(new(MsgType::Personal, "N1US", "", "N0ABC"));
        batch.push(new(MsgType::Personal, "N0ABC", "", "N1US"));
        batch.push(new(
            MsgType::Bulletin,
            "ALL",
            "WW",
            &format!("N{}AB", i % 7),
        ));
    }
    s.insert_many(&batch, 0).unwrap();
    let lm = ListFilter {
        to_or_copy: Some("N1US".into()),
        visible_to: Some("N1US".into()),
        last: Some(101),
        ..Default::default()
    };
    let lp = ListFilter {
        kind: Some(MsgType::Personal),
        visible_to: Some("N1US".into()),
        last: Some(101),
        ..Default::default()
    };
    let ln = ListFilter {
        unread_by: Some("N1US".into()),
        visible_to: Some("N1US".into()),
        last: Some(101),
        ..Default::default()
    };
    for f in [lm, lp, ln] {
        let (sql, args) = list_query(&f, None, true);
        let mut st = s.conn.prepare(&sql).unwrap();
        let n = st
            .query_map(params_from_iter(args.iter()), |_| Ok(()))
            .unwrap()
            .count();
        assert_eq!(n, 101);
        // A page of 101 rows from each way: about 50 steps per row; the whole mailbox of 2,000
        // or 4,000 would be 100,000 and more.
        let steps = st.get_status(rusqlite::StatementStatus::VmStep);
        assert!(steps < 30_000, "{steps} steps: {f:?}");
        drop(st);
        assert_eq!(s.list(&f).unwrap().len(), 101);
    }
}

#[test]
fn nothing_new_is_found_without_a_walk() {
    let (_d, mut s) = filled();
    let f = ListFilter {
        after: Some(602),
        range: Some((0, u64::MAX)),
        visible_to: Some("N1US".into()),
        last: Some(21),
        ..Default::default()
    };
    let (sql, args) = list_query(&f, None, true);
    let mut st = s.conn.prepare(&sql).unwrap();
    let mut rows = st.query(params_from_iter(args.iter())).unwrap();
    assert!(rows.next().unwrap().is_none());
    drop(rows);
    // Walking the 603 messages would take thousands of VM steps.
    let steps = st.get_status(rusqlite::StatementStatus::VmStep);
    assert!(steps < 100, "{steps} steps: {sql}");
    drop(st);
    let older = ListFilter {
        after: Some(590),
        range: Some((595, 600)),
        ..Default::default()
    };
    let got: Vec<u64> = s.list(&older).unwrap().iter().map(|h| h.number).collect();
    assert_eq!(got, vec![600, 599, 598, 597, 596, 595]);
}

/// `L@` reads matching values through the index when they are few, walks when they are many,
/// and matches any element of the address either way.
#[test]
fn at_listing_matches_any_element_by_either_plan() {
    let (_d, mut s) = filled();
    let rare = ListFilter {
        at: Some("usa".into()),
        ..Default::default()
    };
    assert!(counts::at_match(&s.conn, "USA", None).unwrap().by_index);
    assert_eq!(s.list(&rare).unwrap().len(), 1);
    let dense = ListFilter {
        at: Some("WW".into()),
        last: Some(5),
        ..Default::default()
    };
    assert!(!counts::at_match(&s.conn, "WW", Some(5)).unwrap().by_index);
    let got = s.list(&dense).unwrap();
    assert_eq!(got.len(), 5);
    assert!(got.windows(2).all(|w| w[0].number > w[1].number));
    assert!(s
        .list(&ListFilter {
            at: Some("NOWHERE".into()),
            ..Default::default()
        })
        .unwrap()
        .is_empty());
}

/// The tallies agree with counting the rows after every kind of write: insert, a received
/// block, status change, read mark, addressee change, removal, housekeeping.
#[test]
fn tallies_follow_every_write() {
    let (_d, mut s) = filled();
    let agree = |s: &mut Store| {
        // Each key: the store counts inserts itself (once per key for a transaction), the
        // triggers the other writes.
        let by_key = |sql: &str| -> Vec<(String, String, String, String, i64)> {
            s.conn
                .prepare(sql)
                .unwrap()
                .query_map([], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(
            by_key(
                "SELECT kind, status, CASE kind WHEN 'B' THEN to_call ELSE '' END, at, COUNT(*) \
                 FROM messages GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4"
            ),
            by_key(
                "SELECT kind, status, area, at, n FROM tallies WHERE n != 0 \
                 ORDER BY 1, 2, 3, 4"
            )
        );
        let counted: Vec<(String, String, i64)> = s
            .conn
            .prepare(
                "SELECT kind, status, COUNT(*) FROM messages GROUP BY kind, status \
                 ORDER BY kind, status",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let tallied: Vec<(String, String, i64)> = s
            .message_tallies()
            .unwrap()
            .into_iter()
            .map(|(k, st, n)| (k.to_string(), st.to_string(), n as i64))
            .collect();
        assert_eq!(counted, tallied);
    };
    agree(&mut s);
    // A block: bulletins to two areas, one held by its sender's partner, personal mail, and a
    // duplicate (not stored, not counted).
    let mut held = crate::tests::incoming("RX_3", MsgType::Bulletin, "WW", b"x\r\n");
    held.hold = true;
    let mut wx = crate::tests::incoming("RX_2", MsgType::Bulletin, "EU", b"x\r\n");
    wx.to = "WX".into();
    let block = [
        crate::tests::incoming("RX_1", MsgType::Bulletin, "WW", b"x\r\n"),
        wx,
        held,
        crate::tests::incoming("RX_4", MsgType::Bulletin, "WW", b"x\r\n"),
        crate::tests::incoming("RX_5", MsgType::Personal, "", b"x\r\n"),
        crate::tests::incoming("RX_1", MsgType::Bulletin, "WW", b"x\r\n"),
    ];
    s.store_received(call("N0BBB"), &block, 0).unwrap();
    agree(&mut s);
    let to = s.message(2).unwrap().unwrap().header.to;
    s.mark_read(2, crate::tests::call(&to)).unwrap();
    s.set_status(3, MsgStatus::Killed).unwrap();
    s.set_status(3, MsgStatus::Killed).unwrap();
    s.conn
        .execute("UPDATE messages SET to_call = 'WX' WHERE number = 1", [])
        .unwrap();
    agree(&mut s);
    s.conn
        .execute("DELETE FROM messages WHERE number = 7", [])
        .unwrap();
    agree(&mut s);
    s.housekeep(100 * 86_400, &Lifetimes::default()).unwrap();
    agree(&mut s);
    assert_eq!(
        s.counts().unwrap(),
        (2, 607),
        "only the two held messages are left"
    );
}

/// The greeting, `I` and `LC` answer as the listings they replace did.
#[test]
fn greeting_and_categories_agree_with_the_listings() {
    let (_d, mut s) = filled();
    // A copy to N1US of someone else's message counts as theirs.
    let mut copy = new(MsgType::Personal, "N2US", "", "N0ABC");
    copy.body = b"x".to_vec();
    let n = s.insert_message(&copy, call("N0AAA"), 0).unwrap();
    s.conn
        .execute(
            "INSERT INTO recipients (number, pos, cc, addr, call) VALUES (?1, 1, 1, 'N1US', 'N1US')",
            [n as i64],
        )
        .unwrap();
    let to = s.message(2).unwrap().unwrap().header.to;
    s.mark_read(2, crate::tests::call(&to)).unwrap();
    s.set_status(4, MsgStatus::Held).unwrap();
    s.set_status(21, MsgStatus::Held).unwrap();
    for (call, sysop) in [
        ("N1US", false),
        ("N1US", true),
        ("N6US", false),
        ("N0BODY", false),
    ] {
        let mine = s
            .list(&ListFilter {
                to_or_copy: Some(call.into()),
                visible_to: (!sysop).then(|| call.into()),
                ..Default::default()
            })
            .unwrap();
        let want = GreetingCounts {
            mine: mine.len() as u64,
            new: mine.iter().filter(|h| h.status == MsgStatus::New).count() as u64,
            latest: n,
        };
        assert_eq!(
            s.greeting_counts(call.parse().unwrap(), sysop).unwrap(),
            want,
            "{call}"
        );
    }
    let active = s.list(&ListFilter::default()).unwrap().len() as u64;
    assert_eq!(s.counts().unwrap(), (active, n));
    assert_eq!(
        s.categories().unwrap(),
        vec![("ALL".to_string(), 298), ("WX".to_string(), 1)],
        "killed and held bulletins are not counted"
    );
}

/// Housekeeping works in steps of at most CHUNK rows, and on a new store gives the freed
/// pages back with incremental vacuum.
#[test]
fn housekeeping_runs_in_chunks_and_returns_space() {
    let (_d, mut s) = open();
    assert!(s.incremental_vacuum().unwrap());
    let n = 2 * CHUNK + 10;
    let mut big = new(MsgType::Bulletin, "ALL", "WW", "N0ABC");
    big.body = noise(4000);
    s.insert_many(&vec![big; n], 0).unwrap();
    let l = Lifetimes::default();
    let day = 86_400;
    let mut run = Housekeeping::new(20 * day, &l);
    let mut steps = 0;
    while run.step(&mut s).unwrap() {
        steps += 1;
    }
    assert_eq!(run.done().expired, n as u64);
    assert!(steps >= 3, "{n} expiries in one step");
    assert_eq!(s.counts().unwrap().0, 0);
    let before = std::fs::metadata(s.path()).unwrap().len();
    let r = s.housekeep(30 * day, &l).unwrap();
    assert_eq!(r.removed, n as u64);
    assert!(r.returned_pages > 0 && r.unreturned_pages == 0, "{r}");
    // A step gives back 4 MB, whatever the page size: three removal steps, four of the
    // other stages, the vacuum's, and the one that finds nothing left (512 pages a step
    // took 12 steps here).
    let page: u64 = s
        .conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    assert!(
        r.steps <= 8 + (r.returned_pages * page).div_ceil(4 << 20),
        "a step gives back 4 MB: {r}"
    );
    assert_eq!(s.free_pages().unwrap(), 0);
    let after = std::fs::metadata(s.path()).unwrap().len();
    assert!(after * 2 < before, "{before} -> {after}");
    assert!(s.check().unwrap().is_empty());
}

/// Each removal step gives back the pages it freed in its own transaction: the free list
/// never grows long enough for a page given back to search it (housekeep.rs,
/// `give_back_freed`).
#[test]
fn a_removal_step_leaves_no_free_pages() {
    let (_d, mut s) = open();
    let n = 2 * CHUNK + 10;
    let mut big = new(MsgType::Bulletin, "ALL", "WW", "N0ABC");
    big.body = noise(2000);
    s.insert_many(&vec![big; n], 0).unwrap();
    let (l, day) = (Lifetimes::default(), 86_400);
    s.housekeep(20 * day, &l).unwrap();
    let mut run = Housekeeping::new(30 * day, &l);
    run.set_step_rows(300);
    let mut removing = 0;
    while run.step(&mut s).unwrap() {
        if run.done().removed > removing {
            removing = run.done().removed;
            assert_eq!(s.free_pages().unwrap(), 0, "after {removing} removed");
        }
    }
    assert_eq!(removing, n as u64);
    assert!(run.done().returned_pages > 0, "{}", run.done());
    assert!(s.check().unwrap().is_empty());
}

/// A step changes at most the rows it is asked for, and a run in small steps does what one
/// in full steps does.
#[test]
fn housekeeping_steps_take_the_rows_asked_for() {
    let (_d, mut s) = open();
    let n = 250;
    s.insert_many(&vec![new(MsgType::Bulletin, "ALL", "WW", "N0ABC"); n], 0)
        .unwrap();
    let l = Lifetimes::default();
    let day = 86_400;
    let mut run = Housekeeping::new(20 * day, &l);
    run.set_step_rows(100);
    let mut expired = vec![];
    while run.step(&mut s).unwrap() {
        let e = run.done().expired;
        expired.push(e - expired.iter().sum::<u64>());
    }
    assert_eq!(run.done().expired, n as u64);
    assert_eq!(
        &expired[..4],
        [0, 100, 100, 50],
        "removal, then expiry by 100"
    );
    assert_eq!(s.counts().unwrap().0, 0);
}

/// A store made before incremental vacuum keeps its free pages (no whole-file VACUUM on the
/// live writer) and says so, until `compact` switches it.
#[test]
fn an_old_store_is_switched_to_incremental_vacuum_by_compact() {
    let dir = tempfile::tempdir().unwrap();
    Connection::open(dir.path().join(DB_FILE))
        .unwrap()
        .execute_batch("PRAGMA auto_vacuum = NONE; CREATE TABLE t (x); DROP TABLE t;")
        .unwrap();
    let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
    assert!(!s.incremental_vacuum().unwrap());
    s.set_station(Station::new(call("N0AAA")));
    let mut big = new(MsgType::Bulletin, "ALL", "WW", "N0ABC");
    big.body = noise(4000);
    s.insert_many(&vec![big; 50], 0).unwrap();
    let l = Lifetimes::default();
    s.housekeep(20 * 86_400, &l).unwrap();
    let r = s.housekeep(30 * 86_400, &l).unwrap();
    assert!(r.unreturned_pages > 0 && r.returned_pages == 0, "{r}");
    s.compact().unwrap();
    assert!(s.incremental_vacuum().unwrap());
    assert_eq!(s.free_pages().unwrap(), 0);
}

/// The queue counts (/metrics, the Status page) read queued entries only: a store that has
/// forwarded a million messages costs no more to count than one that has forwarded none.
#[test]
fn queue_counts_read_no_delivered_entry() {
    let (_d, mut s) = open();
    s.set_station(crate::tests::station());
    let mut batch = Vec::new();
    for i in 0..40 {
        let mut b = new(MsgType::Bulletin, "ALL", "WW", "N0ABC");
        b.bid = Some(format!("Q{i}_N0ABC"));
        batch.push(b);
    }
    let numbers: Vec<u64> = s
        .insert_many(&batch, 0)
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let sent: Vec<_> = numbers[..30]
        .iter()
        .map(|n| (*n, crate::forward::FwdOutcome::Sent))
        .collect();
    s.forwarded(crate::tests::call("N0BBB"), &sent, None, 1)
        .unwrap();
    s.set_status(numbers[35], MsgStatus::Killed).unwrap();
    assert_eq!(
        s.queue_counts().unwrap(),
        [("N0BBB".to_string(), 9), ("N0CCC".to_string(), 39)]
    );
    let plan = sql_plan(&s, crate::forward::QUEUE_COUNTS, []);
    assert!(
        !plan.contains("SCAN fwd_queue") && !plan.contains("SCAN q"),
        "{plan}"
    );
}

/// The WAL keeps its working size (its blocks stay allocated, so a commit's `fdatasync`
/// writes no file system metadata): made whole when the store opens, never truncated by a
/// checkpoint, housekeeping or the last connection's close; only `shrink_wal` gives it back.
#[test]
fn the_wal_keeps_its_size() {
    let (dir, mut s) = open();
    let wal = dir.path().join("qtc.sqlite-wal");
    let size = || std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    let working = size();
    assert!(working >= CHECKPOINT_AFTER as u64, "{working}");
    let mut big = new(MsgType::Bulletin, "ALL", "WW", "N0ABC");
    big.body = noise(3000);
    for _ in 0..3 {
        s.insert_many(&vec![big.clone(); 300], 0).unwrap();
    }
    let grown = size();
    assert!(grown >= working);
    s.housekeep(0, &Lifetimes::default()).unwrap();
    drop(s);
    assert_eq!(size(), grown, "housekeeping and the close keep the WAL");
    let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
    assert_eq!(size(), grown);
    s.shrink_wal().unwrap();
    assert_eq!(size(), 0);
    drop(s);
    let _s = Store::open(dir.path(), Durability::Normal).unwrap();
    assert!(size() >= working, "made whole again at the next start");
}

/// With the checkpointer (the daemon's set-up), a writer that keeps committing, as a partner
/// sending blocks of five does, never copies the WAL into the database whole: the
/// checkpointer's passes do, while it commits; the writer copies at most the few frames a pass
/// left, so that the WAL starts over. The WAL stays inside its working size all along (no
/// growth, so no file system metadata to sync), and nothing is lost across the close.
#[test]
fn the_checkpointer_copies_the_wal_while_the_writer_goes_on() {
    let (dir, mut s) = open();
    s.checkpoint_apart().unwrap();
    let wal = dir.path().join("qtc.sqlite-wal");
    let size = || std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    let (working, blocks) = write_three_wals(&mut s, &wal);
    let c = s.checkpoint_counts().unwrap();
    assert!(c.passes >= 2, "{c:?}");
    assert!(c.tails <= c.passes + c.waits, "{c:?}");
    drop(s);
    assert_eq!(size(), working, "the close keeps the WAL");
    let mut s = Store::open(dir.path(), Durability::Normal).unwrap();
    let stored: i64 = s
        .conn
        .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored as usize, 5 * blocks);
    assert_eq!(s.checkpoint_counts(), None, "only asked for");
    // Giving the WAL back (a nearly full disk) waits for a pass the checkpointer is running.
    s.checkpoint_apart().unwrap();
    s.checkpoint_soon().unwrap();
    s.shrink_wal().unwrap();
    assert_eq!(size(), 0);
}

/// A checkpointer thread that has ended (a panic on it) leaves the writer copying the WAL
/// itself, as SQLite's own checkpoint did: no commit waits for a pass that will never end, and
/// the WAL keeps its size.
#[test]
fn a_writer_whose_checkpointer_ended_checkpoints_itself() {
    let (dir, mut s) = open();
    s.checkpoint_apart().unwrap();
    s.checkpointer.as_mut().unwrap().end_thread();
    let wal = dir.path().join("qtc.sqlite-wal");
    write_three_wals(&mut s, &wal);
    assert_eq!(s.checkpoint_counts().unwrap().passes, 0);
    s.checkpoint_soon().unwrap();
    s.shrink_wal().unwrap();
    assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0);
}

/// Commits blocks of five 2 KB bulletins, about three times what the WAL holds before its
/// checkpoint, asserting after each that the WAL kept its working size; returns that size and
/// the blocks written.
fn write_three_wals(s: &mut Store, wal: &std::path::Path) -> (u64, usize) {
    let size = || std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0);
    let working = size();
    let mut m = new(MsgType::Bulletin, "ALL", "WW", "N0ABC");
    m.body = noise(2000);
    let blocks = 3 * CHECKPOINT_AFTER as usize / (5 * 2000);
    for _ in 0..blocks {
        s.insert_many(&vec![m.clone(); 5], 0).unwrap();
        assert_eq!(size(), working, "the WAL grew past its room");
    }
    (working, blocks)
}

/// Housekeeping with nothing due costs a few steps however much the store keeps: the walk for
/// lifetimes starts where the last one ended (the personal mail it kept cannot be due before
/// it turns 30 days old), and old BIDs are looked for among those of removed messages only.
#[test]
fn housekeeping_with_nothing_due_does_not_walk_what_it_keeps() {
    let (_d, mut s) = open();
    let day = 86_400;
    s.insert_many(&vec![new(MsgType::Personal, "N0USR", "", "N0ABC"); 2500], 0)
        .unwrap();
    s.insert_many(&vec![new(MsgType::Bulletin, "ALL", "WW", "N0ABC"); 500], 0)
        .unwrap();
    s.insert_many(
        &vec![new(MsgType::Bulletin, "ALL", "WW", "N0ABC"); 10],
        19 * day,
    )
    .unwrap();
    let l = Lifetimes::default();
    let run = |s: &mut Store, now: i64| {
        let mut run = Housekeeping::new(now, &l);
        run.set_step_rows(100);
        while run.step(s).unwrap() {}
        run.done()
    };
    // Day 15: the old bulletins expire, walking all 3,000 old messages.
    let first = run(&mut s, 15 * day);
    assert_eq!(first.expired, 500);
    assert!(first.steps > 30, "{first}");
    // Day 18: they are removed (their BIDs are kept 180 days); the walk does not come back.
    let second = run(&mut s, 18 * day);
    assert_eq!(second.removed, 500);
    for now in [19 * day, 25 * day] {
        let idle = run(&mut s, now);
        assert_eq!((idle.expired, idle.removed, idle.bids), (0, 0, 0));
        assert!(idle.steps < 12, "day {}: {idle}", now / day);
    }
    // Day 31: the personal mail could be read by now (30 days): walked again, still kept.
    let again = run(&mut s, 31 * day);
    assert!(again.steps > 25, "{again}");
    assert_eq!(again.expired, 0);
    // Day 200: the removed bulletins' BIDs are due, found without walking every BID.
    let bids = run(&mut s, 200 * day);
    assert_eq!(bids.bids, 500);
}

/// A held message released after a walk passed it is looked at again: it expires as if it
/// had never been held.
#[test]
fn a_released_message_is_walked_again() {
    let (_d, mut s) = open();
    let day = 86_400;
    let mut held = new(MsgType::Bulletin, "ALL", "WW", "N0ABC");
    held.status = MsgStatus::Held;
    s.insert_many(&[held], 0).unwrap();
    s.insert_many(
        &vec![new(MsgType::Bulletin, "ALL", "WW", "N0ABC"); 5],
        19 * day,
    )
    .unwrap();
    let l = Lifetimes::default();
    assert_eq!(s.housekeep(20 * day, &l).unwrap().expired, 0);
    assert!(s.release(1, 20 * day).unwrap());
    assert_eq!(s.housekeep(21 * day, &l).unwrap().expired, 1);
}

/// A line, then `n` bytes of noise in 16 letters (deflates to about half, as a bulletin does).
fn noisy_body(line: &str, n: usize) -> Vec<u8> {
    let mut b = format!("{line}\r\n").into_bytes();
    b.extend(noise(n).iter().map(|x| b'a' + x % 16));
    b
}

/// Stores `m` in a transaction of its own (a local post: its text in a row of its own).
fn post_alone(s: &mut Store, m: NewMessage) -> u64 {
    *s.insert_many(&[m], 0).unwrap()[0].as_ref().unwrap()
}

/// Keeps message `n`'s text plain, as the upgrade to schema step 16 left texts.
fn keep_plain(s: &Store, n: u64) {
    let text = texts::get(&s.conn, n).unwrap().unwrap().text().unwrap();
    s.conn
        .execute(
            "UPDATE texts SET packed = 0, data = ?2 WHERE number = ?1",
            params![n as i64, text],
        )
        .unwrap();
}

/// `qtc store pack`: texts kept alone (posted one by one; made plain as schema step 16 left
/// them) go into blocks of five consecutive messages, a lone plain one is deflated, a large
/// one and those in a block already stay; every text reads back the same, the file shrinks,
/// and a second pack finds nothing left to do.
#[test]
fn packing_loose_texts_keeps_them_and_shrinks_the_file() {
    let (_d, mut s) = open();
    let body = |i: usize| noisy_body(&format!("bulletin {i}: the band was open to europe"), 400);
    let mut numbers = Vec::new();
    for i in 0..240 {
        let mut m = new(MsgType::Bulletin, "ALL", "WW", "N0ABC");
        m.body = body(i);
        m.rlines = format!("R:251206/1200Z @:N0AAA.#NCA #:{i} $:{i}_N0AAA\r\n").into_bytes();
        if i == 17 {
            m.body = vec![b'y'; 70 * 1024];
        }
        numbers.push(post_alone(&mut s, m));
    }
    // A received block of five in the middle, and a message whose text stays alone.
    let mut block: Vec<NewMessage> = (0..5)
        .map(|_| new(MsgType::Bulletin, "ALL", "WW", "N0ABC"))
        .collect();
    block[0].body = body(1000);
    let in_block = s.insert_many(&block, 0).unwrap();
    let mut lone = new(MsgType::Personal, "N0USR", "", "N0ABC");
    lone.body = body(2000);
    let lone = post_alone(&mut s, lone);
    // The first 200 texts plain, as the upgrade to schema 16 kept them, and the lone one.
    for &n in numbers[..200].iter().chain([&lone]) {
        keep_plain(&s, n);
    }
    let wanted: Vec<(u64, Vec<u8>, Vec<u8>)> = numbers
        .iter()
        .chain(in_block.iter().map(|r| r.as_ref().unwrap()))
        .chain([&lone])
        .map(|&n| {
            let m = s.message(n).unwrap().unwrap();
            (n, m.rlines, m.body)
        })
        .collect();
    let blocks_before: i64 = s
        .conn
        .query_row("SELECT COUNT(*) FROM text_blocks", [], |r| r.get(0))
        .unwrap();
    let before = s.pragma_count("page_count").unwrap();
    let packed = s.pack_texts().unwrap();
    // 0-16: three blocks of five, then 15 and 16 in one; 18-237 in 44 blocks, then 238 and
    // 239 in one; the lone one (after a block) deflated.
    assert_eq!(
        packed,
        Packed {
            texts: 239,
            blocks: 3 + 1 + 44 + 1,
            deflated: 1,
        }
    );
    let count = |sql: &str| -> i64 { s.conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(
        count("SELECT COUNT(*) FROM text_blocks"),
        blocks_before + 49
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM texts"),
        2,
        "the large text and the lone one"
    );
    for (n, rlines, body) in &wanted {
        let m = s.message(*n).unwrap().unwrap();
        assert_eq!((&m.rlines, &m.body), (rlines, body), "message {n}");
    }
    let after = s.pragma_count("page_count").unwrap();
    assert!(after * 10 < before * 9, "{before} -> {after} pages");
    assert_eq!(s.free_pages().unwrap(), 0);
    assert_eq!(s.pack_texts().unwrap(), Packed::default());
    assert!(s.check().unwrap().is_empty());
}

/// A run of loose texts after a message without a row of its own starts from nothing: the
/// bytes of the run before it do not cut it short. 30 KB, then a large text (no row of its
/// own to pack), then two of 20 KB: those two go into one block (40 KB), where counting the
/// first run's 30 KB in left each alone.
#[test]
fn packing_starts_each_run_from_nothing() {
    let (_d, mut s) = open();
    let mut numbers = Vec::new();
    for size in [30_000, 70 * 1024, 20_000, 20_000] {
        let mut m = new(MsgType::Bulletin, "ALL", "WW", "N0ABC");
        m.body = vec![b'y'; size];
        numbers.push(post_alone(&mut s, m));
    }
    assert_eq!(
        s.pack_texts().unwrap(),
        Packed {
            texts: 2,
            blocks: 1,
            deflated: 0,
        }
    );
    for (&n, size) in numbers.iter().zip([30_000, 70 * 1024, 20_000, 20_000]) {
        assert_eq!(s.message(n).unwrap().unwrap().body, vec![b'y'; size]);
    }
}

/// A step of `qtc store pack` ends when it holds 4 MB of stored text, not only after 5,000
/// messages: 400 plain texts of 12 KB (4.8 MB) take two steps, the first ending inside a
/// run, and every text is packed and reads back as it was.
#[test]
fn packing_steps_end_at_their_bytes_and_keep_every_text() {
    let (_d, mut s) = open();
    let mut wanted = Vec::new();
    for i in 0..400 {
        let mut m = new(MsgType::Bulletin, "ALL", "WW", "N0ABC");
        m.body = noisy_body(&format!("bulletin {i}"), 12_000);
        let n = post_alone(&mut s, m);
        keep_plain(&s, n);
        wanted.push((n, s.message(n).unwrap().unwrap().body));
    }
    let packed = s.pack_texts().unwrap();
    assert_eq!(packed.texts + packed.deflated, 400, "{packed:?}");
    assert!(packed.blocks >= 80, "{packed:?}");
    for (n, body) in wanted {
        assert_eq!(s.message(n).unwrap().unwrap().body, body, "message {n}");
    }
    assert_eq!(s.pack_texts().unwrap(), Packed::default());
}
