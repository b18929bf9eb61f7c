//! Admission under hostile load (issue 29): connections that never log in, churned from 250
//! addresses (about 200 a second), must not keep out a person who types at human speed;
//! IPv6 addresses count by /64 (a network namespace gives the test a /64 of its own); where an
//! account logged in from survives a restart, so guessing from elsewhere cannot lock its user
//! out; many logins to one account at once are told so, not "Login incorrect".
//!
//! The load runs on its own thread; the test waits on what the daemon says, with generous
//! bounds (a person's typing pauses are the scenario, not synchronisation).
#![allow(clippy::disallowed_methods)]

mod common;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use common::netns::Netns;
use common::{Client, Daemon};

/// A person's pause before each answer: 5 s to log in.
const TYPING: Duration = Duration::from_millis(2500);

/// A connection from `from` to `to`, as a blocking client.
fn connect(from: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let sock = match from {
        IpAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        IpAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    }?;
    sock.bind(SocketAddr::new(from, 0))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let s = rt.block_on(sock.connect(to))?.into_std()?;
    s.set_nonblocking(false)?;
    Ok(s)
}

fn client(from: IpAddr, to: SocketAddr) -> Client {
    let stream = connect(from, to).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    Client {
        stream,
        seen: Vec::new(),
    }
}

/// A count that wakes whoever waits for it to reach a number.
#[derive(Default)]
struct Count {
    n: Mutex<usize>,
    grew: Condvar,
}

impl Count {
    fn add(&self) {
        *self.n.lock().unwrap() += 1;
        self.grew.notify_all();
    }

    fn get(&self) -> usize {
        *self.n.lock().unwrap()
    }

    /// Waits until it is `n` or more, or `within` has passed (a hang guard); says whether.
    fn wait_for(&self, n: usize, within: Duration) -> bool {
        let n_now = self.n.lock().unwrap();
        let (n_now, waited) = self
            .grew
            .wait_timeout_while(n_now, within, |c| *c < n)
            .unwrap();
        drop(n_now);
        !waited.timed_out()
    }
}

/// Connections that never log in, opened about every 5 ms from `addresses` in turn and held
/// until the daemon closes them. Counts how many were told to make room.
struct Churn {
    stop: Arc<AtomicBool>,
    displaced: Arc<Count>,
    opened: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Churn {
    /// `enter` runs first on the load's thread (joining a network namespace, say).
    fn start(
        addresses: Vec<IpAddr>,
        to: SocketAddr,
        enter: impl FnOnce() + Send + 'static,
    ) -> Churn {
        let stop = Arc::new(AtomicBool::new(false));
        let displaced = Arc::new(Count::default());
        let opened = Arc::new(AtomicUsize::new(0));
        let (s, d, o) = (stop.clone(), displaced.clone(), opened.clone());
        let thread = std::thread::spawn(move || {
            enter();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(5));
                let mut i = 0;
                while !s.load(Ordering::Relaxed) {
                    tick.tick().await;
                    let from = addresses[i % addresses.len()];
                    i += 1;
                    tokio::spawn(hold(from, to, d.clone(), o.clone()));
                }
            });
        });
        Churn {
            stop,
            displaced,
            opened,
            thread: Some(thread),
        }
    }

    /// Waits until the load has displaced some of its own: the places are full.
    fn wait_until_full(&self) {
        assert!(
            self.displaced.wait_for(50, common::PATIENCE * 3),
            "the churn never filled the places ({} opened)",
            self.opened.load(Ordering::Relaxed)
        );
    }
}

/// One connection of the load: open, say nothing, read until the daemon closes it.
async fn hold(from: IpAddr, to: SocketAddr, displaced: Arc<Count>, opened: Arc<AtomicUsize>) {
    let sock = match from {
        IpAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        IpAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    };
    let Ok(sock) = sock else { return };
    if sock.bind(SocketAddr::new(from, 0)).is_err() {
        return;
    }
    let Ok(mut s) = sock.connect(to).await else {
        return;
    };
    opened.fetch_add(1, Ordering::Relaxed);
    let mut said = Vec::new();
    let _ = tokio::io::AsyncReadExt::read_to_end(&mut s, &mut said).await;
    if common::find(&said, b"Too many connections logging in").is_some() {
        displaced.add();
    }
}

impl Drop for Churn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A person logging in from `from`: a pause before the callsign and before the password.
/// True when they reached the prompt.
fn human_login(from: IpAddr, to: SocketAddr, prompt: &str) -> bool {
    let mut c = client(from, to);
    c.expect("Callsign:");
    // The sleeps are the person's typing under test (the churn must not evict a slow typist),
    // not waits for something.
    std::thread::sleep(TYPING);
    c.send("N0USR");
    let out = c.expect_either("Password:", "73!");
    if !out.contains("Password:") {
        return false;
    }
    std::thread::sleep(TYPING);
    c.send("pw");
    let out = c.expect_either(prompt, "73!");
    out.contains(prompt)
}

/// Three people at once, each at human speed; how many got in.
fn three_humans(from: IpAddr, to: SocketAddr, prompt: &'static str) -> usize {
    let people: Vec<_> = (0..3)
        .map(|_| std::thread::spawn(move || human_login(from, to, prompt)))
        .collect();
    people
        .into_iter()
        .map(|p| p.join().unwrap())
        .filter(|&ok| ok)
        .count()
}

/// A daemon where N0USR has logged in from home (127.0.0.1) before, a regular of this BBS,
/// and 250 addresses of 127.`net`.0.x.
fn regular_at_home(net: u8) -> (Daemon, SocketAddr, Vec<IpAddr>) {
    let d = Daemon::start("");
    let to = SocketAddr::from(([127, 0, 0, 1], d.port));
    d.login("N0USR", "pw").send("B");
    d.wait_for_log("logged in call=N0USR");
    let flood = (1..=250u8)
        .map(|a| IpAddr::V4(Ipv4Addr::new(127, net, 0, a)))
        .collect();
    (d, to, flood)
}

#[test]
fn people_log_in_while_250_addresses_churn_connections_that_never_log_in() {
    let (d, to, flood) = regular_at_home(2);
    let home = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let churn = Churn::start(flood, to, || {});
    churn.wait_until_full();
    assert_eq!(three_humans(home, to, "de N0CALL>"), 3, "{}", d.log());
    assert!(churn.displaced.get() > 100);
    // Lines alike are limited (20 a minute each): the churn does not fill the log.
    let log = d.log();
    let told = log.matches("its place was needed").count();
    assert!(
        told <= 3 * 20,
        "{told} lines for {} displaced",
        churn.displaced.get()
    );
}

/// A login of `call` from `from` that waits for the prompt, then says goodbye.
fn log_in_once(from: IpAddr, to: SocketAddr, call: &str, pw: &str) {
    let mut c = client(from, to);
    c.expect("Callsign:");
    c.send(call);
    c.expect("Password:");
    c.send(pw);
    c.expect("de N0CALL>");
    c.send("B");
}

#[test]
fn people_log_in_while_an_account_churns_from_250_addresses_it_logged_in_from() {
    let (d, to, flood) = regular_at_home(3);
    let home = IpAddr::V4(Ipv4Addr::LOCALHOST);
    // Another account holder logs in once from each of 250 addresses (a few at a time, as
    // fast as the password checks go), making them places an account logged in from...
    for batch in flood.chunks(5) {
        let logins: Vec<_> = batch
            .iter()
            .map(|&from| std::thread::spawn(move || log_in_once(from, to, "N0OTH", "x")))
            .collect();
        for l in logins {
            l.join().unwrap();
        }
    }
    // ... then churns connections that never log in from all of them.
    let churn = Churn::start(flood, to, || {});
    churn.wait_until_full();
    assert_eq!(three_humans(home, to, "de N0CALL>"), 3, "{}", d.log());
}

#[test]
fn one_account_holding_its_sessions_does_not_keep_another_user_out() {
    let d = Daemon::start("max_sessions = 20\nmax_per_address = 40\nmax_sessions_per_user = 5\n");
    let mut held = Vec::new();
    let mut told = 0;
    for _ in 0..20 {
        let mut c = d.connect();
        c.expect("Callsign:");
        c.send("N0USR");
        c.expect("Password:");
        c.send("pw");
        let out = c.expect_either("de N0CALL>", "Close one and try again");
        if out.contains("de N0CALL>") {
            held.push(c);
        } else {
            assert!(
                out.contains("N0USR has 5 sessions open here already"),
                "{out}"
            );
            told += 1;
        }
    }
    assert_eq!((held.len(), told), (5, 15));
    // Everyone else still gets in; so does the sysop, however often.
    let mut other = d.login("N0OTH", "x");
    other.send("B");
    let sysop: Vec<Client> = (0..6).map(|_| d.login("N0SYS", "root")).collect();
    drop(sysop);
}

#[test]
fn an_ipv6_network_is_one_party_however_many_addresses_it_uses() {
    let ns = Netns::new("adm6");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        common::config_path(dir.path()),
        "[station]\ncallsign = \"N0CALL\"\n[store]\ndurability = \"normal\"\n\
         [telnet]\nlisten = [\"[::1]:0\"]\n",
    )
    .unwrap();
    let out = common::cli(
        dir.path(),
        &["user", "add", "N0USR", "--password", "pw"],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    let d = Daemon::start_wrapped(dir, &["ip", "netns", "exec", &ns.0]);
    let to = SocketAddr::from((Ipv6Addr::LOCALHOST, d.port));
    let flood: Vec<IpAddr> = (1..=250u16)
        .map(|a| IpAddr::V6(Ipv6Addr::new(0xfd00, 0x29, 0, 1, 0, 0, a, 1)))
        .collect();
    let name = ns.0.clone();
    let churn = Churn::start(flood, to, move || Netns::enter(&name));
    // One party: it gets its 10 places (the per-address cap) and no more, so it only ever
    // displaces itself; the user, never seen before, logs in from another address.
    d.wait_for_log("refused: too many connections from this address");
    let name = ns.0.clone();
    let got = std::thread::spawn(move || {
        Netns::enter(&name);
        three_humans(IpAddr::V6(Ipv6Addr::LOCALHOST), to, "de N0CALL>")
    })
    .join()
    .unwrap();
    assert_eq!(got, 3, "{}", d.log());
    drop(churn);
}

/// A fresh connection from `from` that sends `call` and `pw`; returns what the daemon said
/// about it.
fn guess(d: &Daemon, from: [u8; 4], call: &str, pw: &str) -> String {
    let mut c = client(
        IpAddr::from(from),
        SocketAddr::from(([127, 0, 0, 1], d.port)),
    );
    c.expect("Callsign:");
    c.send(call);
    c.expect("Password:");
    c.send(pw);
    c.expect_either("Login incorrect", "locked")
}

#[test]
fn after_a_restart_guessing_from_elsewhere_does_not_lock_a_user_out_of_home() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(common::config_path(dir.path()), common::BASE_CONFIG).unwrap();
    for (call, flag) in [("N0USR", ""), ("N0BBB", "--bbs")] {
        let mut args = vec!["user", "add", call, "--password", "pw"];
        if !flag.is_empty() {
            args.push(flag);
        }
        assert!(common::cli(dir.path(), &args, "").status.success());
    }
    let mut d = Daemon::start_in(dir);
    d.login("N0USR", "pw").send("B");
    d.wait_for_log("logged in call=N0USR");
    assert!(d.stop().success());
    let dir = std::mem::replace(&mut d.dir, tempfile::tempdir().unwrap());
    drop(d);
    let d = Daemon::start_in(dir);
    // Eleven wrong guesses, each from another address.
    for a in 1..=11u8 {
        guess(&d, [127, 4, 0, a], "N0USR", "wrong");
        guess(&d, [127, 5, 0, a], "N0BBB", "wrong");
    }
    // The user still gets in at home.
    let mut u = d.login("N0USR", "pw");
    u.send("B");
    // A partner calling from somewhere new is told it is locked, not that its password is
    // wrong.
    let out = guess(&d, [127, 6, 0, 1], "N0BBB", "pw");
    assert!(
        out.contains("Logins to N0BBB from here are locked"),
        "{out}"
    );
    assert!(!out.contains("Login incorrect"), "{out}");
}

#[test]
fn many_logins_to_one_account_at_once_are_told_so() {
    let d = Daemon::start("max_per_address = 20\nmax_sessions_per_user = 20\n");
    let to = SocketAddr::from(([127, 0, 0, 1], d.port));
    let mut all: Vec<Client> = (0..14)
        .map(|_| {
            let mut c = client(IpAddr::V4(Ipv4Addr::LOCALHOST), to);
            c.expect("Callsign:");
            c.send("N0USR");
            c.expect("Password:");
            c
        })
        .collect();
    for c in &mut all {
        c.send("pw");
    }
    let mut told = 0;
    for c in &mut all {
        let out = c.expect_either("de N0CALL>", "at once");
        assert!(!out.contains("incorrect"), "{out}");
        told += usize::from(out.contains("Too many logins to N0USR at once"));
    }
    d.wait_for_log_count("too many logins to this account at once", told);
    let log = d.log();
    assert!(!log.contains("locked out after repeated failures"), "{log}");
    assert_eq!(
        log.matches("too many logins to this account at once")
            .count(),
        told
    );
}
