//! The sysop's operations end to end: `qtc check`, `qtc store check`, `qtc ctl housekeep`,
//! SIGHUP reload and the systemd notify protocol, on a real daemon.
#![allow(clippy::disallowed_methods)]

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};

use common::{cli, config_path, qtc, Daemon, BASE_CONFIG, PATIENCE};

#[test]
fn check_validates_the_config_without_binding() {
    let dir = tempfile::tempdir().unwrap();
    // A port in use does not matter: check binds nothing.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    std::fs::write(
        config_path(dir.path()),
        format!(
            "[telnet]\nlisten = [\"127.0.0.1:{port}\"]\n[web]\nlisten = \"127.0.0.1:8089\"\n\
             [housekeeping]\nhour = 4\n[forward]\ntls_listen = [\"127.0.0.1:6993\"]\n\
             [tls]\ncert = \"qtc.crt\"\nkey = \"qtc.key\"\n\
             [[partner]]\ncallsign = \"N0AAA\"\nconnect = \"tcp:127.0.0.1:6302\"\nprotocol = \"b1\"\n\
             interval = \"0\"\n"
        ),
    )
    .unwrap();
    // `check` reads [tls]'s files (it prints the fingerprint): the sysop makes them first.
    assert!(cli(dir.path(), &["cert"], "").status.success());
    let out = cli(dir.path(), &["check"], "");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains("qtc.crt, SHA-256 fingerprint "), "{text}");
    assert!(
        text.contains(&format!("telnet: would listen on 127.0.0.1:{port}")),
        "{text}"
    );
    assert!(
        text.contains("web: would listen on 127.0.0.1:8089"),
        "{text}"
    );
    assert!(
        text.contains("forward-tls: would listen on 127.0.0.1:6993"),
        "{text}"
    );
    assert!(
        text.contains("partner: N0AAA (tcp:127.0.0.1:6302, up to B1, on demand)"),
        "{text}"
    );
    assert!(text.contains("housekeeping: daily at 04:00 UTC"), "{text}");
    assert!(
        !dir.path().join("qtc-data").exists(),
        "check must not create the store"
    );

    std::fs::write(config_path(dir.path()), "[housekeeping]\nhour = 24\n").unwrap();
    let out = cli(dir.path(), &["check"], "");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[housekeeping] hour"), "{err}");
    std::fs::write(config_path(dir.path()), "[web]\nlisten = \"localhost\"\n").unwrap();
    let out = cli(dir.path(), &["check"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("[web] listen"));
}

#[test]
fn store_check_and_housekeep_now() {
    let mut d = Daemon::start("");
    let out = d.cli(&["store", "check"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ok: "));
    let answer = d.ctl(&["housekeep"]);
    assert!(
        answer.starts_with("ok: housekeeping: 0 expired, 0 removed"),
        "{answer}"
    );
    d.wait_for_log("housekeeping: 0 expired");
    // Packing, compacting and recounting rewrite the file: beside the running daemon they
    // refuse at once, change nothing and say what to do. Also with the control socket gone,
    // as it is while the daemon opens its store and after it stops serving: the daemon holds
    // the data directory's lock all the while.
    let refused = |d: &Daemon| {
        for cmd in ["pack", "compact", "recount"] {
            let out = d.cli(&["store", cmd]);
            assert_eq!(out.status.code(), Some(1), "{out:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("the qtc daemon, or another `qtc store` command, is using this store")
                    && err.contains("stop it first")
                    && err.contains(&format!("store {cmd}")),
                "{err}"
            );
        }
    };
    refused(&d);
    std::fs::remove_file(d.dir.path().join("qtc-data/qtc.ctl")).unwrap();
    refused(&d);
    assert!(d.stop().success());

    // Compacting (the daemon stopped) switches the file to incremental vacuum.
    let out = d.cli(&["store", "compact"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("compacted"));
    // Packing texts kept alone (the daemon stopped): nothing to pack in an empty store.
    let out = d.cli(&["store", "pack"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("ok: 0 texts packed into 0 blocks"),
        "{out:?}"
    );

    // A damaged file is reported, exit 1.
    let db = d.dir.path().join("qtc-data/qtc.sqlite");
    let mut bytes = std::fs::read(&db).unwrap();
    let _ = std::fs::remove_file(d.dir.path().join("qtc-data/qtc.sqlite-wal"));
    let page = 4096;
    assert!(bytes.len() > 3 * page, "{}", bytes.len());
    for b in &mut bytes[page..] {
        *b = 0x5a;
    }
    std::fs::write(&db, &bytes).unwrap();
    let out = d.cli(&["store", "check"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

/// Holds the lock a daemon or `qtc store pack` holds on the data directory of `dir`'s config.
fn lock_data_dir(dir: &std::path::Path) -> nix::fcntl::Flock<std::fs::File> {
    let data = dir.join("qtc-data");
    std::fs::create_dir_all(&data).unwrap();
    let file = std::fs::File::open(&data).unwrap();
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).unwrap()
}

#[test]
fn the_data_directory_is_locked_before_the_store_opens() {
    // Standing in for a daemon that is opening its store (its control socket not bound yet),
    // or for `qtc store pack`: another daemon does not start, and touches nothing.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(config_path(dir.path()), BASE_CONFIG).unwrap();
    let lock = lock_data_dir(dir.path());
    let mut child = qtc()
        .arg("-c")
        .arg(config_path(dir.path()))
        .arg("run")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        common::watch::exited(&child, PATIENCE),
        "qtc run started beside the lock"
    );
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!child.wait().unwrap().success());
    assert!(
        err.contains("another qtc is using this data directory") && err.contains("is locked"),
        "{err}"
    );
    assert!(!dir.path().join("qtc-data/qtc.sqlite").exists());
    // Nor does a command that rewrites the store.
    let out = cli(dir.path(), &["store", "recount"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    drop(lock);
    let out = cli(dir.path(), &["store", "recount"], "");
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn store_check_names_a_tally_changed_by_hand_and_recount_corrects_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(config_path(dir.path()), BASE_CONFIG).unwrap();
    let out = cli(
        dir.path(),
        &["msg", "import", "-"],
        "SB ALL @ WW < N0ABC\nOne\nx\n/EX\nSB ALL @ WW < N0ABC\nTwo\ny\n/EX\n",
    );
    assert!(out.status.success(), "{out:?}");
    let out = cli(dir.path(), &["store", "check"], "");
    assert!(out.status.success(), "{out:?}");
    // What a sysop's `sqlite3 qtc.sqlite "UPDATE tallies ..."` does.
    let db = rusqlite::Connection::open(dir.path().join("qtc-data/qtc.sqlite")).unwrap();
    db.execute("UPDATE tallies SET n = 5 WHERE kind = 'B'", [])
        .unwrap();
    drop(db);
    let out = cli(dir.path(), &["store", "check"], "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let named = "tally of type B status N area \"ALL\" @ \"WW\": 5 counted, 2 messages";
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(named),
        "{out:?}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("1 tally count(s) differ") && err.contains("store recount"),
        "{err}"
    );
    let out = cli(dir.path(), &["store", "recount"], "");
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("recounted: {named}")) && said.contains("1 corrected"),
        "{said}"
    );
    let out = cli(dir.path(), &["store", "check"], "");
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn sighup_reloads_partners_and_says_what_needs_a_restart() {
    let extra = "[[partner]]\ncallsign = \"N0BBB\"\nroutes = [\"N0BBB\"]\n";
    let mut d = Daemon::start(extra);
    // A bulletin to WW is not routed to N0BBB yet.
    let text = format!(
        "{BASE_CONFIG}max_sessions = 7\n[[partner]]\ncallsign = \"N0BBB\"\nroutes = [\"N0BBB\", \"WW\"]\n\
         interval = \"5m\"\nconnect = \"tcp:127.0.0.1:9\"\n"
    );
    std::fs::write(config_path(d.dir.path()), text).unwrap();
    let pid = d.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap()
        .success());
    d.wait_for_log("configuration reloaded");
    d.wait_for_log("[telnet] changed");
    // Every partner setting applies: its routes, and its interval (the schedule follows it).
    d.wait_for_log("applied=partners");
    d.wait_for_log("call schedule changed");
    let status = d.ctl(&["status"]);
    assert!(status.contains("calls every 5m; next call"), "{status}");
    // The new route is in use: a bulletin @WW is queued for N0BBB.
    let mut c = d.login("N0USR", "pw");
    c.send("SB ALL @ WW");
    c.expect("Subject:");
    c.send("reload test");
    c.expect("/EX");
    c.send("body");
    c.send("/EX");
    c.expect("de N0CALL>");
    let q = d.fwd_queue(Some("N0BBB"));
    assert!(q.contains("1 queued"), "{q}");
    // A broken file is refused and the daemon goes on.
    std::fs::write(config_path(d.dir.path()), "[station]\ncallsign = \"XX\"\n").unwrap();
    assert!(Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap()
        .success());
    d.wait_for_log("reload failed");
    assert!(d.child.try_wait().unwrap().is_none(), "qtc exited");
    assert!(d.stop().success());
}

#[test]
fn notifies_systemd_ready_watchdog_and_stopping() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(config_path(dir.path()), BASE_CONFIG).unwrap();
    let sock_path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut child = qtc()
        .arg("-c")
        .arg(config_path(dir.path()))
        .arg("run")
        .env("NOTIFY_SOCKET", &sock_path)
        .env("WATCHDOG_USEC", "200000")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("qtc.log")).unwrap())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        let mut line = String::new();
        while out.read_line(&mut line).unwrap_or(0) > 0 {
            line.clear();
        }
        let _ = out.read_to_end(&mut Vec::new());
    });
    let mut buf = [0u8; 256];
    let mut recv = || {
        let n = sock.recv(&mut buf).expect("a notification");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let mut got = Vec::new();
    while !got.iter().any(|m: &String| m == "READY=1") || !got.iter().any(|m| m == "WATCHDOG=1") {
        got.push(recv());
        assert!(got.len() < 50, "{got:?}");
    }
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    loop {
        let m = recv();
        if m == "STOPPING=1" {
            break;
        }
        assert_eq!(m, "WATCHDOG=1");
    }
    assert!(child.wait().unwrap().success());
}
