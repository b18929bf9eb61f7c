//! Row 8: the "1 M store". Every user command, a login, GET /metrics and housekeeping timed
//! on a daemon whose store holds a million generated messages (`--quick`: 20,000), then the
//! loaded scenario: 100 users log in at once while /metrics is scraped every second and
//! housekeeping expires a third of the store; meanwhile a logged-in user's `LL 1` is timed
//! and a partner forwards B1 bulletins into the daemon.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::client::Client;
use crate::daemon::{Daemon, Opts, Spec};
use crate::genstore::{self, MINE_EVERY, SENDER};
use crate::measure::{bulletins, rss_mb};
use crate::report::Row;
use crate::util::{clk_tck, cpu_ticks_with_children, median, now, sleep, thousands, Ctx, R};
use crate::Plan;

/// Users who log in at once in the loaded scenario.
const BURST: usize = 100;
/// Timed repetitions of each command (median and max reported).
const REPEAT: usize = 5;
/// Logins timed on the empty and on the big store.
const LOGINS: usize = 5;
/// Logins timed with argon2 aside: their CPU is summed in 10 ms clock ticks, so many of them
/// (about 5 ms each) make the mean exact to 0.2 ms.
const ASIDE: usize = 50;
/// A loaded `LL 1` answer slower than this is listed with the time it was asked.
const SLOW: f64 = 0.020;
/// Generous limit for one answer; a run past it is broken, not slow.
const LIMIT: Duration = Duration::from_secs(120);

/// Runs row 8 for the measured qtc and (`--baseline`) another, one after the other.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut notes = vec![format!(
        "Row 8 setup: a store of {} generated messages (bench/src/genstore.rs: 63 % bulletins \
         in ten areas, 36 % personal mail between thousands of calls, 1 % NTS, 4 % killed, \
         0.1 % held, spread over 21 days), made by the measured qtc's own schema and filled \
         with one SQL statement, cached under target/bench-cache. Commands are typed by N0USR \
         (paging off, `OP 0`) or, for `LK`/`LH`, the sysop N0SYS; each timed from the line \
         sent to the next prompt read, median and max of {REPEAT}. Load average at the \
         start: {}.",
        thousands(p.big_n as u64),
        crate::forward::load()
    )];
    let bins = crate::binaries(o, p);
    if let Some(b) = &p.baseline {
        notes.push(format!(
            "Row 8 baseline: `{}` ({}), run after the measured qtc on its own copy of the \
             same generated store.",
            b.display(),
            crate::revision(b)
        ));
    }
    for (tag, ob) in &bins {
        match one(ob, p, tag) {
            Ok((mut r, mut n)) => {
                rows.append(&mut r);
                notes.append(&mut n);
            }
            Err(e) => rows.push(Row::broken("8", &format!("1 M store{tag}"), &e, "")),
        }
        rows.push(crate::mailbox::row(ob, tag));
        rows.push(crate::pagesize::row(ob, p.big_n, tag));
    }
    (rows, notes)
}

fn one(o: &Opts, p: &Plan, tag: &str) -> R<(Vec<Row>, Vec<String>)> {
    let n = p.big_n;
    let nn = thousands(n as u64);
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    eprintln!("  bigstore{tag}: store of {nn} messages");
    let (d, made) = genstore::daemon(o, n, BURST + 20)?;
    if made > 0.0 {
        notes.push(format!(
            "Row 8{tag}: generating the {nn}-message store took {made:.1} s."
        ));
    }
    // Login cost, empty store against this one.
    let empty = Daemon::create(
        o,
        &Spec {
            call: "N0BIG",
            users: genstore::USERS,
            ..Spec::default()
        },
    )?;
    let (e_full, e_wall, e_cpu) = login_cost(&empty)?;
    drop(empty);
    let (b_full, b_wall, b_cpu) = login_cost(&d)?;
    let within = |a: f64, b: f64| (b - a).abs() <= 0.2 * a.max(1e-9);
    rows.push(Row::check(
        "8a",
        &format!("login on empty vs {nn}-message store{tag}"),
        format!(
            "argon2 aside: wall {:.2} vs {:.2} ms, daemon CPU {:.2} vs {:.2} ms; with argon2: \
             wall {:.1} vs {:.1} ms",
            e_wall * 1e3,
            b_wall * 1e3,
            e_cpu * 1e3,
            b_cpu * 1e3,
            e_full * 1e3,
            b_full * 1e3,
        ),
        "same ± 20 % (argon2 aside)",
        within(e_wall, b_wall) && within(e_cpu, b_cpu),
        &format!(
            "connect → Callsign → Password → greeting and prompt, N0USR (about {} messages on \
             the big store); with argon2: median of {LOGINS}; argon2 aside (N0USR's hash \
             swapped for one of argon2's smallest parameters, helper process still run): \
             median wall and mean daemon CPU (/proc ticks, helpers included) of {}",
            n / MINE_EVERY,
            ASIDE
        ),
    ));
    // Every command.
    let prompt = d.prompt();
    let mut u = d.login("N0USR", "pw")?;
    timed(&mut u, &prompt, "OP 0")?;
    // The first `L` lists everything new (up to the listing cap); later ones nothing.
    let first_l = timed(&mut u, &prompt, "L")?;
    let mut sys = d.login("N0SYS", "pw")?;
    timed(&mut sys, &prompt, "OP 0")?;
    let rare = genstore::rare(n);
    let commands: Vec<(&str, String)> = vec![
        ("user", "LL 1".into()),
        ("user", "LL 20".into()),
        ("user", "L".into()),
        ("user", "LM".into()),
        ("user", "LN".into()),
        ("user", "LB".into()),
        ("user", "LP".into()),
        ("user", format!("L< {SENDER}")),
        ("user", "L> WX".into()),
        ("user", "L@ USA".into()),
        ("user", "L@ RARE".into()),
        ("user", "LT".into()),
        ("user", "LC".into()),
        ("user", "I".into()),
        ("user", format!("R {}", genstore::some_bulletin(n))),
        ("user", format!("R {rare}")),
        ("sysop", "LK".into()),
        ("sysop", "LH".into()),
    ];
    let mut cmd_rows = Vec::new();
    for (who, cmd) in &commands {
        let c = if *who == "sysop" { &mut sys } else { &mut u };
        let mut t = Vec::new();
        let mut bytes = 0;
        for _ in 0..REPEAT {
            let (s, b) = timed(c, &prompt, cmd)?;
            t.push(s);
            bytes = b;
        }
        cmd_rows.push(format!(
            "`{cmd}` {} ({:.1} KB)",
            med_max(&mut t),
            bytes as f64 / 1e3
        ));
    }
    // Sending a message: the command, subject, text, /EX, to "stored".
    let mut t = Vec::new();
    for i in 0..REPEAT {
        let t0 = now();
        u.raw(format!("SP N0SYS\r\nbench {i}\r\nhello\r\n/EX\r\n").as_bytes())?;
        u.skip_to("stored", LIMIT)?;
        t.push(t0.elapsed().as_secs_f64());
        u.skip_to(&prompt, LIMIT)?;
    }
    cmd_rows.push(format!("`SP` + text + `/EX` {}", med_max(&mut t)));
    rows.push(Row::info(
        "8b",
        &format!("{nn}-message store: every user command{tag}"),
        cmd_rows.join("; "),
        "",
        &format!(
            "first `L` of the user (lists up to the cap): {:.0} ms; N0USR has about {} \
             messages (every {MINE_EVERY}th), `L< {SENDER}` about {}, `L@ RARE` one",
            first_l.0 * 1e3,
            n / MINE_EVERY,
            n / 7000
        ),
    ));
    // GET /metrics.
    let web = d.web.ctx("no web port")?;
    let rss0 = rss_mb(d.pid())?;
    let mut t = Vec::new();
    for _ in 0..REPEAT {
        t.push(metrics(web)?.0);
    }
    let rss1 = rss_mb(d.pid())?;
    // The median: one scrape on a loaded machine may wait for the scheduler.
    t.sort_by(|a, b| a.total_cmp(b));
    let median = t[t.len() / 2];
    rows.push(Row::check(
        "8c",
        &format!("{nn}-message store: GET /metrics{tag}"),
        format!("{}; RSS {:.1} -> {:.1} MB", med_max(&mut t), rss0, rss1),
        "≤ 5 ms (median) and ≤ 1 MB more RSS",
        median <= 0.005 && rss1 - rss0 <= 1.0,
        "request sent → response read to the end (Connection: close); VmRSS before and after",
    ));
    // Housekeeping: the first run expires about a third (and removes what was killed
    // before), the second removes what the first expired, the third finds nothing to do.
    let mut runs = Vec::new();
    for what in ["expiring many", "removing them", "nothing to do"] {
        let t0 = now();
        let out = d.ctl(&["housekeep"])?;
        runs.push(format!(
            "{what}: {:.2} s ({})",
            t0.elapsed().as_secs_f64(),
            out.trim().trim_start_matches("ok: housekeeping: ")
        ));
    }
    rows.push(Row::info(
        "8d",
        &format!("{nn}-message store: housekeeping{tag}"),
        runs.join("; "),
        "",
        "`qtc ctl housekeep` wall time, three runs in a row",
    ));
    drop((u, sys, d));
    let (mut r, n) = loaded(o, p, tag)?;
    rows.append(&mut r);
    notes.push(n);
    Ok((rows, notes))
}

/// The loads of the scenario `--without` can leave out.
pub const LOADS: &[&str] = &["ll1", "logins", "housekeeping", "metrics"];

/// Row 8e alone (`--only loaded`): the loaded scenario for the measured qtc and a
/// `--baseline`, each on a fresh copy of the generated store.
pub fn run_loaded(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let (mut rows, mut notes) = (Vec::new(), Vec::new());
    for (tag, ob) in &crate::binaries(o, p) {
        notes.push(format!(
            "Row 8e{tag}: load average at the start {}.",
            crate::forward::load()
        ));
        match loaded(ob, p, tag) {
            Ok((mut r, n)) => {
                rows.append(&mut r);
                notes.push(n);
            }
            Err(e) => rows.push(Row::broken(
                "8e",
                &format!("1 M store, loaded{tag}"),
                &e,
                "",
            )),
        }
    }
    notes.push(format!(
        "Row 8e: load average at the end {}.",
        crate::forward::load()
    ));
    (rows, notes)
}

/// The loaded scenario on a fresh copy of the store: its rows, and a note that places the
/// slow `LL 1` answers among the loads.
fn loaded(o: &Opts, p: &Plan, tag: &str) -> R<(Vec<Row>, String)> {
    let n = p.big_n;
    let nn = thousands(n as u64);
    let (d, _) = genstore::daemon(o, n, BURST + 20)?;
    let size = crate::measure::dir_mb(&d.data_dir());
    let prompt = d.prompt();
    let web = d.web.ctx("no web port")?;
    let k = p.big_fwd_n;
    // Forwarding rates, unloaded and loaded: the median of three sessions each. One session
    // is over in half a second, and single ones ranged from 1,550 to 2,908 msg/s on a quiet
    // machine. Each partner is started and given its bulletins beforehand, so only the
    // sessions themselves run while the load does.
    let quiet = median(sessions(&partners(o, &d, k, "Q")?, k)?);
    let loaded_partners = partners(o, &d, k, "L")?;
    let with = |load: &str| !p.big_without.iter().any(|l| l == load);
    let mut user = d.login("N0USR", "pw")?;
    let stop = Arc::new(AtomicBool::new(false));
    // The logged-in user types `LL 1` again as soon as each answer is in; each answer's
    // time, and when it was asked (seconds after `begun`), to place the slow ones.
    let begun = now();
    let ll = {
        let stop = stop.clone();
        let prompt = prompt.clone();
        let on = with("ll1");
        std::thread::spawn(move || -> R<Vec<(f64, f64)>> {
            let mut t = Vec::new();
            while on && !stop.load(Ordering::Relaxed) {
                let at = begun.elapsed().as_secs_f64();
                t.push((at, timed(&mut user, &prompt, "LL 1")?.0));
            }
            Ok(t)
        })
    };
    // Prometheus: every second.
    let scraper = {
        let stop = stop.clone();
        let on = with("metrics");
        std::thread::spawn(move || -> R<Vec<f64>> {
            let mut t = Vec::new();
            while on && !stop.load(Ordering::Relaxed) {
                let t0 = now();
                t.push(metrics(web)?.0);
                sleep(Duration::from_secs(1).saturating_sub(t0.elapsed()));
            }
            Ok(t)
        })
    };
    let t0 = now();
    let hk = {
        let bin = o.bin.clone();
        let cfg = d.dir.path().join("qtc.toml");
        let on = with("housekeeping");
        std::thread::spawn(move || -> R<(f64, String)> {
            if !on {
                return Ok((0.0, "left out".into()));
            }
            let t0 = now();
            let out = crate::daemon::cli(&bin, &cfg, &["ctl", "housekeep"], b"")?;
            Ok((t0.elapsed().as_secs_f64(), out))
        })
    };
    let telnet = d.telnet;
    let burst: Vec<_> = (0..if with("logins") { BURST } else { 0 })
        .map(|_| {
            let prompt = prompt.clone();
            std::thread::spawn(move || -> R<(f64, Client)> {
                let t0 = now();
                let mut c = Client::connect(telnet)?;
                c.expect_within("Callsign:", LIMIT)?;
                c.line("N0USR")?;
                c.expect_within("Password:", LIMIT)?;
                c.line("pw")?;
                c.expect_within(&prompt, LIMIT)?;
                Ok((t0.elapsed().as_secs_f64(), c))
            })
        })
        .collect();
    let busy = median(sessions(&loaded_partners, k)?);
    let forwarded_at = begun.elapsed().as_secs_f64();
    let mut logins = Vec::new();
    let mut held = Vec::new();
    for b in burst {
        let (t, c) = b.join().map_err(|_| "a login thread panicked")??;
        logins.push(t);
        held.push(c);
    }
    let burst_s = t0.elapsed().as_secs_f64();
    let logged_in_at = begun.elapsed().as_secs_f64();
    let (hk_s, hk_out) = hk
        .join()
        .map_err(|_| "the housekeeping thread panicked")??;
    let housekept_at = begun.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let asked = ll.join().map_err(|_| "the LL 1 thread panicked")??;
    let slow = |from: f64, to: f64| {
        let during = || asked.iter().filter(|(at, _)| (from..to).contains(at));
        let over = during().filter(|(_, t)| *t > SLOW).count();
        format!(
            "{over} of {} ({:.2} %)",
            during().count(),
            100.0 * over as f64 / during().count().max(1) as f64
        )
    };
    let mut slowest: Vec<(f64, f64)> = asked.clone();
    slowest.sort_by(|a, b| b.1.total_cmp(&a.1));
    let slowest: Vec<String> = slowest
        .iter()
        .take(10)
        .map(|(at, t)| format!("{:.0} ms at {at:.2} s", t * 1e3))
        .collect();
    let before = t0.duration_since(begun).as_secs_f64();
    let phases = [
        ("while forwarding", before, forwarded_at),
        ("then while logging in", forwarded_at, logged_in_at),
        (
            "then while only housekeeping ran",
            logged_in_at,
            housekept_at,
        ),
    ]
    .map(|(what, from, to)| format!("{what} ({from:.1}-{to:.1} s) {}", slow(from, to)));
    let over = asked.iter().filter(|(_, t)| *t > SLOW).count();
    let mut ll: Vec<f64> = asked.iter().map(|(_, t)| *t).collect();
    let mut scrapes = scraper.join().map_err(|_| "the scraper panicked")??;
    drop(held);
    // 0 for a load left out (no timings).
    let pct = |v: &mut Vec<f64>, q: f64| {
        v.sort_by(|a, b| a.total_cmp(b));
        v.get(((v.len().max(1) - 1) as f64 * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let (p50, p99) = (pct(&mut ll, 0.5), pct(&mut ll, 0.99));
    let ratio = busy / quiet;
    let how = format!(
        "{BURST} telnet logins started at once (argon2 each), GET /metrics every second, \
         `qtc ctl housekeep` expiring about a third of the store, and three partners \
         forwarding {k} B1 bulletins of ~2 KB each into the daemon, one after the other \
         (their median; unloaded: the median of three such sessions before), all together; N0USR, logged in before, \
         types `LL 1` again as soon as each answer is in ({} answers)",
        ll.len()
    ) + &if p.big_without.is_empty() {
        String::new()
    } else {
        format!("; left out: {}", p.big_without.join(", "))
    };
    let ll_what = format!("{nn}-message store, loaded: a user's `LL 1`{tag}");
    let ll_row = if with("ll1") {
        Row::check(
            "8e",
            &ll_what,
            format!(
                "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; {} of {} over {:.0} ms",
                p50 * 1e3,
                p99 * 1e3,
                ll.last().copied().unwrap_or(0.0) * 1e3,
                over,
                ll.len(),
                SLOW * 1e3
            ),
            "p99 ≤ 20 ms",
            p99 <= 0.020,
            &how,
        )
    } else {
        Row::info("8e", &ll_what, "left out".into(), "p99 ≤ 20 ms", &how)
    };
    let rows = vec![
        ll_row,
        Row::check(
            "8e",
            &format!("{nn}-message store, loaded: forwarding rate{tag}"),
            format!(
                "{:.0} msg/s loaded vs {:.0} unloaded = {:.0} %",
                busy,
                quiet,
                ratio * 100.0
            ),
            "≥ 80 % of unloaded",
            ratio >= 0.8,
            &how,
        ),
        Row::info(
            "8e",
            &format!("{nn}-message store, loaded: the rest{tag}"),
            format!(
                "{BURST} logins done in {:.2} s (each p50 {:.0} ms, max {:.0} ms); /metrics max \
                 {:.1} ms over {} scrapes; housekeeping {:.2} s ({}); store {size:.0} MB",
                burst_s,
                pct(&mut logins, 0.5) * 1e3,
                pct(&mut logins, 1.0) * 1e3,
                pct(&mut scrapes, 1.0) * 1e3,
                scrapes.len(),
                hk_s,
                hk_out.trim()
            ),
            "",
            &how,
        ),
    ];
    let note = format!(
        "Row 8e{tag}: `LL 1` answers over {:.0} ms, by what ran when they were asked \
         (seconds after the loop began): {}; the ten slowest: {}.",
        SLOW * 1e3,
        phases.join(", "),
        slowest.join(", ")
    );
    Ok((rows, note))
}

/// Median and max of timings in seconds, as "median X ms, max Y ms".
fn med_max(t: &mut [f64]) -> String {
    t.sort_by(|a, b| a.total_cmp(b));
    format!(
        "{:.2} ms (max {:.2})",
        t[t.len() / 2] * 1e3,
        t[t.len() - 1] * 1e3
    )
}

/// Sends `cmd`, reads to the prompt; returns (seconds, bytes).
pub(crate) fn timed(c: &mut Client, prompt: &str, cmd: &str) -> R<(f64, usize)> {
    let t0 = now();
    c.line(cmd)?;
    let n = c.skip_to(prompt, LIMIT)?;
    Ok((t0.elapsed().as_secs_f64(), n))
}

/// N0USR's password "pw" hashed with argon2's smallest parameters (8 KiB, one pass): checked
/// in microseconds, so a login with it costs what a login costs with argon2 aside.
const CHEAP_PW: &str =
    "$argon2id$v=19$m=8,t=1,p=1$cXRjLWJlbmNoLXNhbHQ$ge1/3M/UGVChI9JfTtCNfSZ6bzgCFEiOai9ua827j48";

/// A login's cost: median wall time (argon2 included), then with argon2 aside the median wall
/// time and the daemon's mean CPU time (its helper processes included), in seconds.
fn login_cost(d: &Daemon) -> R<(f64, f64, f64)> {
    // The first login allocates argon2's memory: not counted.
    drop(d.login("N0USR", "pw")?);
    let (with_argon2, _) = logins(d, LOGINS)?;
    // The same user, mailbox and greeting with a hash checked in microseconds. Written beside
    // the running daemon (WAL), which reads the hash at each login; put back afterwards.
    let db = d.data_dir().join("qtc.sqlite");
    let real = genstore::sql(&db, "SELECT password FROM users WHERE call = 'N0USR';")?;
    let set = |phc: &str| {
        genstore::sql(
            &db,
            &format!("UPDATE users SET password = '{phc}' WHERE call = 'N0USR';"),
        )
    };
    set(CHEAP_PW)?;
    let aside = logins(d, ASIDE);
    set(real.trim())?;
    let (wall, cpu) = aside?;
    Ok((with_argon2, wall, cpu))
}

/// `n` logins of N0USR one after the other: the median wall time and the daemon's mean CPU
/// time (clock ticks summed over all of them, helpers included), in seconds.
fn logins(d: &Daemon, n: usize) -> R<(f64, f64)> {
    let mut wall = Vec::new();
    let c0 = cpu_ticks_with_children(d.pid())?;
    for _ in 0..n {
        let t0 = now();
        let c = d.login("N0USR", "pw")?;
        wall.push(t0.elapsed().as_secs_f64());
        drop(c);
        // Let the session's end be processed before the next login.
        sleep(Duration::from_millis(20));
    }
    let cpu = (cpu_ticks_with_children(d.pid())? - c0) as f64 / clk_tck() / n as f64;
    wall.sort_by(|a, b| a.total_cmp(b));
    Ok((wall[n / 2], cpu))
}

/// GET /metrics; returns (seconds, bytes).
fn metrics(port: u16) -> R<(f64, usize)> {
    let t0 = now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).ctx("connect to the web port")?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .ctx("send GET")?;
    let mut body = Vec::new();
    s.read_to_end(&mut body).ctx("read /metrics")?;
    let t = t0.elapsed().as_secs_f64();
    if !body.starts_with(b"HTTP/1.1 200") || !body.windows(12).any(|w| w == b"qtc_messages") {
        return Err(format!(
            "/metrics answered {:?}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ));
    }
    Ok((t, body.len()))
}

/// Three partners (fresh daemons N0AAA), each given `k` B1 bulletins for `d` (BIDs tagged
/// `tag` and the partner's number), ready to forward them.
fn partners(o: &Opts, d: &Daemon, k: usize, tag: &str) -> R<Vec<Daemon>> {
    (0..3)
        .map(|i| {
            let a = crate::forward::sender(o, d, "b1")?;
            a.import(&bulletins(k, crate::forward::BODY, k as u64, |j| {
                format!("{tag}{i}_{j}_N0FWD")
            }))?;
            Ok(a)
        })
        .collect()
}

/// Each partner in turn forwards its `k` bulletins into the big store: msg/s of each session.
fn sessions(partners: &[Daemon], k: usize) -> R<Vec<f64>> {
    partners
        .iter()
        .map(|a| {
            let t0 = now();
            let out = a.ctl(&["forward", "N0BIG"])?;
            let wall = t0.elapsed().as_secs_f64();
            if !out.contains(&format!("{k} sent")) {
                return Err(format!("forward into the big store: {}", out.trim()));
            }
            Ok(k as f64 / wall)
        })
        .collect()
}
