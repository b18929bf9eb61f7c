use super::*;

fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Durability::Normal).unwrap();
    (dir, store)
}

fn msg(kind: MsgType, to: &str, from: &str, bid: Option<&str>) -> NewMessage {
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
    let n = s.insert_message(&m, "N0CALL", 1_700_000_000).unwrap();
    assert_eq!(n, 1);
    let got = s.message(n).unwrap().unwrap();
    assert_eq!(got.body, m.body);
    assert_eq!(got.header.to, "N0USR");
    assert_eq!(got.header.bid, "1_N0CALL");
    assert_eq!(got.header.size, m.body.len() as u64);
    assert!(s.bid_known("1_n0call").unwrap());
}

#[test]
fn duplicate_bid_is_refused_and_nothing_stored() {
    let (_d, mut s) = open();
    let m = msg(MsgType::Bulletin, "ALL", "N0ABC", Some("X1_N0ABC"));
    s.insert_message(&m, "N0CALL", 0).unwrap();
    let err = s.insert_message(&m, "N0CALL", 0).unwrap_err();
    assert!(matches!(err, StoreError::DuplicateBid(b) if b == "X1_N0ABC"));
    assert_eq!(s.counts().unwrap(), (1, 1));
    // Killing does not free the BID.
    s.set_status(1, MsgStatus::Killed).unwrap();
    assert!(matches!(
        s.insert_message(&m, "N0CALL", 0),
        Err(StoreError::DuplicateBid(_))
    ));
}

#[test]
fn generated_bid_is_cut_to_twelve() {
    assert_eq!(generated_bid(123456, "N0CALL"), "123456_N0CAL");
}

#[test]
fn list_filters() {
    let (_d, mut s) = open();
    s.insert_message(&msg(MsgType::Personal, "N0USR", "N0ABC", None), "N0CALL", 0)
        .unwrap();
    s.insert_message(&msg(MsgType::Personal, "N0XYZ", "N0ABC", None), "N0CALL", 0)
        .unwrap();
    let mut b = msg(MsgType::Bulletin, "ALL", "N0XYZ", None);
    b.at = "WW".into();
    s.insert_message(&b, "N0CALL", 0).unwrap();
    let mut p = msg(MsgType::Personal, "N0QQQ", "N0USR", None);
    p.at = "N0BBS.#NCA.CA.USA.NOAM".into();
    s.insert_message(&p, "N0CALL", 0).unwrap();

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

#[test]
fn users_and_passwords() {
    let (_d, mut s) = open();
    s.add_user("n0usr", Some("secret"), false, false).unwrap();
    assert!(matches!(
        s.add_user("N0USR", None, false, false),
        Err(StoreError::UserExists(_))
    ));
    assert!(s.check_password("N0USR", "secret").unwrap());
    assert!(!s.check_password("N0USR", "wrong").unwrap());
    assert!(!s.check_password("N0NONE", "secret").unwrap());
    s.set_password("N0USR", "other").unwrap();
    assert!(s.check_password("n0usr", "other").unwrap());
    let mut u = s.user("N0USR").unwrap().unwrap();
    u.name = "Ann".into();
    u.last_listed = 9;
    s.update_user(&u).unwrap();
    assert_eq!(s.user("n0usr").unwrap().unwrap(), u);
    assert_eq!(s.users().unwrap().len(), 1);
    s.delete_user("N0USR").unwrap();
    assert!(matches!(
        s.delete_user("N0USR"),
        Err(StoreError::NoSuchUser(_))
    ));
}

#[test]
fn reopen_keeps_data_and_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = Store::open(dir.path(), Durability::Full).unwrap();
        s.insert_message(&msg(MsgType::Personal, "N0USR", "N0ABC", None), "N0CALL", 0)
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
    s.insert_message(&msg(MsgType::Personal, "N0USR", "N0ABC", None), "N0CALL", 0)
        .unwrap();
    s.mark_read(1).unwrap();
    s.mark_read(1).unwrap();
    let m = s.message(1).unwrap().unwrap();
    assert_eq!(m.read_count, 2);
    assert_eq!(m.header.status, MsgStatus::Read);
}
