//! Row 5: scale. Many idle sessions, many messages arriving at once, a large store.

use std::time::Duration;

use crate::client::Client;
use crate::daemon::{Daemon, Opts, Spec};
use crate::measure::{bulletins, dir_mb, fds, hwm_mb, rss_mb, window};
use crate::report::Row;
use crate::util::{median, now, sleep, thousands, Text, R};
use crate::Plan;

/// Longest the sequential logins may take altogether.
const LOGIN_BUDGET: Duration = Duration::from_secs(240);
/// Messages per `qtc msg import` (one transaction each).
const CHUNK: usize = 10_000;

/// Runs row 5.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let how = "sequential logins, then idle";
    match sessions(o, p) {
        Ok((mut r, n)) => {
            rows.append(&mut r);
            notes.extend(n);
        }
        Err(e) => rows.push(Row::broken("5a", "concurrent sessions", &e, how)),
    }
    let how = format!(
        "`qtc msg import` of {} bulletins (200 B bodies), {} per transaction; command line \
         sent → next prompt read, fresh user",
        thousands(p.store_n as u64),
        thousands(CHUNK as u64)
    );
    match big_store(o, p, &how) {
        Ok((mut r, n)) => {
            rows.append(&mut r);
            notes.extend(n);
        }
        Err(e) => rows.push(Row::broken("5c", "large store", &e, &how)),
    }
    (rows, notes)
}

fn sessions(o: &Opts, p: &Plan) -> R<(Vec<Row>, Vec<String>)> {
    let how = format!(
        "logins one after another, 1 s idle; VmRSS, fds from /proc; strace -f -c + /proc \
         ticks, {} s",
        p.scale_secs
    );
    let d = Daemon::create(
        o,
        &Spec {
            call: "N0MNY",
            max_sessions: p.sessions + 10,
            ..Spec::default()
        },
    )?;
    let pid = d.pid();
    let rss0 = rss_mb(pid)?;
    let t0 = now();
    let mut clients: Vec<Client> = Vec::with_capacity(p.sessions);
    let mut notes = Vec::new();
    // The first login allocates argon2's working memory, which the store keeps for reuse:
    // take the per-session cost from the 10th session on.
    const BASE: usize = 10;
    let mut rss10 = rss0;
    while clients.len() < p.sessions {
        if clients.len() == BASE {
            sleep(Duration::from_millis(200));
            rss10 = rss_mb(pid)?;
        }
        if t0.elapsed() > LOGIN_BUDGET {
            notes.push(format!(
                "Row 5a: the logins were stopped after {:?} with {} sessions.",
                LOGIN_BUDGET,
                clients.len()
            ));
            break;
        }
        clients.push(d.login("N0USR", "pw")?);
    }
    let n = clients.len();
    notes.push(
        "Row 5a: the jump at the first login is argon2id's working memory (19 MiB), which the \
         store keeps and reuses for every check; see docs/performance.md."
            .into(),
    );
    let login_ms = t0.elapsed().as_secs_f64() * 1e3 / n as f64;
    sleep(Duration::from_secs(1));
    let rss1 = rss_mb(pid)?;
    let nfd = fds(pid)?;
    let w = window(pid, Duration::from_secs(p.scale_secs), d.dir.path())?;
    let mut rows = vec![
        Row::info(
            "5a",
            &format!(
                "{} idle logged-in telnet sessions: memory",
                thousands(n as u64)
            ),
            format!(
                "VmRSS {:.1} MB: {:.1} MB at start, {:.1} MB after {BASE} logins, then {:.1} kB \
                 per session; {} fds",
                rss1,
                rss0,
                rss10,
                (rss1 - rss10) * 1024.0 / n.saturating_sub(BASE).max(1) as f64,
                nfd
            ),
            "",
            &how,
        ),
        Row::check(
            "5a",
            &format!("{} idle sessions: syscalls and CPU", thousands(n as u64)),
            w.summary(),
            "0 syscalls/s (idle)",
            w.calls.total == 0,
            &how,
        ),
        Row::info(
            "5a",
            "login time per session (sequential)",
            format!("{login_ms:.1} ms"),
            "",
            "all logins' wall time / sessions (argon2id runs on the store thread)",
        ),
    ];
    // Senders: the first `senders` sessions all post at once.
    let k = p.senders.min(n);
    let how_send = "each writes `SP`, subject, 2 KB, `/EX` in one write (type-ahead); first \
                    write → last \"stored\" read";
    let mut text = Text::new(55);
    let mut msgs = Vec::with_capacity(k);
    for i in 0..k {
        let mut m = format!("SP N0XYZ\r\nload {i}\r\n").into_bytes();
        text.body(2000, b"\r\n", &mut m);
        m.extend_from_slice(b"/EX\r\n");
        msgs.push(m);
    }
    let t0 = now();
    for (c, m) in clients.iter_mut().zip(&msgs) {
        c.raw(m)?;
    }
    let wrote = t0.elapsed().as_secs_f64();
    for (i, c) in clients.iter_mut().take(k).enumerate() {
        c.skip_to("stored", Duration::from_secs(120))
            .map_err(|e| format!("sender {i}: {e}"))?;
    }
    let all = t0.elapsed().as_secs_f64();
    rows.push(Row::info(
        "5b",
        &format!("{k} sessions send a 2 KB message at once"),
        format!(
            "all stored in {:.0} ms = {:.0} msg/s (writes took {:.0} ms)",
            all * 1e3,
            k as f64 / all,
            wrote * 1e3
        ),
        "",
        how_send,
    ));
    drop(clients);
    Ok((rows, notes))
}

/// Sends `cmd`, reads to the prompt; returns (seconds, bytes).
fn timed(c: &mut Client, prompt: &str, cmd: &str, limit: Duration) -> R<(f64, usize)> {
    let t0 = now();
    c.line(cmd)?;
    let n = c.skip_to(prompt, limit)?;
    Ok((t0.elapsed().as_secs_f64(), n))
}

fn big_store(o: &Opts, p: &Plan, how: &str) -> R<(Vec<Row>, Vec<String>)> {
    let d = Daemon::create(
        o,
        &Spec {
            call: "N0SCL",
            ..Spec::default()
        },
    )?;
    let n = p.store_n;
    let t0 = now();
    let mut done = 0;
    while done < n {
        let k = CHUNK.min(n - done);
        let base = done;
        d.import(&bulletins(k, 200, done as u64 + 1, |i| {
            format!("{:07}_SD", base + i)
        }))?;
        done += k;
    }
    let seed_s = t0.elapsed().as_secs_f64();
    let size = dir_mb(&d.data_dir());
    let prompt = d.prompt();
    let mut c = d.login("N0USR", "pw")?;
    let quick = Duration::from_secs(60);
    let mut ll = Vec::new();
    for _ in 0..3 {
        ll.push(timed(&mut c, &prompt, "LL 20", quick)?.0);
    }
    let mut rd = Vec::new();
    for i in 0..3 {
        let num = n / 2 + i * 997;
        let (t, bytes) = timed(&mut c, &prompt, &format!("R {num}"), quick)?;
        if bytes < 200 {
            return Err(format!("R {num} answered only {bytes} bytes"));
        }
        rd.push(t);
    }
    let mut bid = Vec::new();
    for i in 0..3 {
        let b = format!("{:07}_SD", n / 3 + i * 991);
        let t1 = now();
        c.line(&format!("SB ALL @ WW ${b}"))?;
        c.skip_to("exists already", quick)?;
        c.skip_to(&prompt, quick)?;
        bid.push(t1.elapsed().as_secs_f64());
    }
    // While the new user's first `L` runs, another user asks for one line.
    let mut c2 = d.login("N0USR", "pw")?;
    let p2 = prompt.clone();
    let other = std::thread::spawn(move || {
        sleep(Duration::from_millis(100));
        timed(&mut c2, &p2, "LL 1", Duration::from_secs(300)).map(|r| r.0)
    });
    let (l_first, l_bytes) = timed(&mut c, &prompt, "L", Duration::from_secs(300))?;
    let other = other
        .join()
        .map_err(|_| "the second user's thread panicked")??;
    let mut again = Vec::new();
    for _ in 0..3 {
        again.push(timed(&mut c, &prompt, "L", quick)?.0);
    }
    let l_again = median(again);
    let hwm = hwm_mb(d.pid())?;
    let nn = thousands(n as u64);
    let ms = |s: f64| format!("{:.2} ms", s * 1e3);
    let rows = vec![
        Row::info(
            "5c",
            &format!("{nn}-message store: `LL 20`"),
            format!("{} (median of 3)", ms(median(ll))),
            "",
            how,
        ),
        Row::info(
            "5c",
            &format!("{nn}-message store: `R n`"),
            format!("{} (median of 3)", ms(median(rd))),
            "",
            how,
        ),
        Row::info(
            "5c",
            &format!("{nn}-message store: BID lookup (`SB ALL @ WW $KNOWN` refused)"),
            format!("{} (median of 3)", ms(median(bid))),
            "",
            how,
        ),
        Row::info(
            "5c",
            &format!("{nn}-message store: first `L` of a new user (lists all)"),
            format!(
                "{:.2} s for {:.1} MB of listing; daemon peak RSS {:.0} MB; another user's \
                 `LL 1` sent 0.1 s in took {:.2} s",
                l_first,
                l_bytes as f64 / 1e6,
                hwm,
                other
            ),
            "",
            how,
        ),
        Row::info(
            "5c",
            &format!("{nn}-message store: `L` with nothing new"),
            format!("{} (median of 3)", ms(l_again)),
            "",
            how,
        ),
        Row::info(
            "5c",
            &format!("{nn}-message store: database size"),
            format!(
                "{size:.0} MB ({:.0} bytes per message); seeding took {seed_s:.1} s",
                size * 1e6 / n as f64
            ),
            "",
            "qtc.sqlite + -wal + -shm sizes",
        ),
    ];
    Ok((rows, Vec::new()))
}
