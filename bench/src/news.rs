//! Rows 8h and 8i: news on the 1 M store (`--quick`: 20,000). An NNTP reader's `GROUP` and `LIST`
//! timed on the generated store (bulletins in ten areas of 60,000 or more each), then under
//! load: four logged-in readers loop `GROUP`, `LISTGROUP` and `LIST` as fast as they are
//! answered while a fifth reader's `GROUP` and a telnet user's `LL 1` are timed. Issue 35's
//! bars: `GROUP` within 10 ms unloaded on 1 M, within 200 ms under the readers' load, and
//! `LL 1` never waiting over a second (before: 10-42 s per `GROUP`, and `LL 1` waited
//! 36.6 s behind four readers). Row 8j (bulletins.rs), the same bulletins as IMAP folders, runs
//! on the same daemon.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::bigstore::timed;
use crate::daemon::{Daemon, Opts};
use crate::genstore;
use crate::report::Row;
use crate::util::{line_conn, median, now, thousands, Ctx, R};
use crate::Plan;

/// Timed repetitions unloaded.
const REPEAT: usize = 9;
/// Readers looping under load.
const READERS: usize = 4;
/// Timed repetitions under load (`GROUP` and `LL 1` each).
const LOADED: usize = 20;

/// An NNTP reader, logged in as N0USR.
struct Reader {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Reader {
    fn connect(port: u16) -> R<Reader> {
        let (r, w) = line_conn(port, "NNTP")?;
        let mut r = Reader { r, w };
        r.reply()?;
        r.cmd("AUTHINFO USER N0USR")?;
        let ok = r.cmd("AUTHINFO PASS pw")?;
        if !ok.starts_with("281") {
            return Err(format!("NNTP login: {ok}"));
        }
        Ok(r)
    }

    fn reply(&mut self) -> R<String> {
        let mut line = String::new();
        match self.r.read_line(&mut line).ctx("read NNTP")? {
            0 => Err("NNTP closed".into()),
            _ => Ok(line.trim_end().to_string()),
        }
    }

    /// Sends `line`; its first reply line.
    fn cmd(&mut self, line: &str) -> R<String> {
        self.w
            .write_all(format!("{line}\r\n").as_bytes())
            .ctx("write NNTP")?;
        self.reply()
    }

    /// Sends `line` and reads its multi-line answer to the `.`; the lines.
    fn list(&mut self, line: &str) -> R<Vec<String>> {
        let first = self.cmd(line)?;
        if !first.starts_with('2') {
            return Err(format!("{line}: {first}"));
        }
        let mut lines = Vec::new();
        loop {
            let l = self.reply()?;
            if l == "." {
                return Ok(lines);
            }
            lines.push(l);
        }
    }

    /// `cmd`'s time in seconds, its first reply line checked.
    fn timed(&mut self, cmd: &str, want: &str) -> R<f64> {
        let t0 = now();
        let got = self.cmd(cmd)?;
        if !got.starts_with(want) {
            return Err(format!("{cmd}: {got}"));
        }
        Ok(t0.elapsed().as_secs_f64())
    }
}

/// Runs rows 8h and 8i.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let what = format!("NNTP on the {}-message store", thousands(p.big_n as u64));
    match rows(o, p) {
        Ok(r) => r,
        Err(e) => (vec![Row::broken("8h", &what, &e, "")], Vec::new()),
    }
}

fn rows(o: &Opts, p: &Plan) -> R<(Vec<Row>, Vec<String>)> {
    let nn = thousands(p.big_n as u64);
    let (d, _) = genstore::daemon(o, p.big_n, 20)?;
    let port = d.nntp.ctx("no NNTP port")?;
    let mut reader = Reader::connect(port)?;
    // The biggest area: the widest span of numbers.
    let groups = reader.list("LIST")?;
    let group = groups
        .iter()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let (hi, lo) = (
                f.get(1)?.parse::<u64>().ok()?,
                f.get(2)?.parse::<u64>().ok()?,
            );
            Some((hi.saturating_sub(lo), f[0].to_string()))
        })
        .max()
        .map(|(_, g)| g)
        .ctx("no newsgroup")?;
    let mut group_t = Vec::new();
    let mut list_t = Vec::new();
    for _ in 0..REPEAT {
        group_t.push(reader.timed(&format!("GROUP {group}"), "211")?);
        let t0 = now();
        reader.list("LIST")?;
        list_t.push(t0.elapsed().as_secs_f64());
    }
    let count = reader.cmd(&format!("GROUP {group}"))?;
    let (g_med, g_max) = (
        median(group_t.clone()),
        group_t.iter().copied().fold(0.0, f64::max),
    );
    let mut rows = vec![Row::check(
        "8h",
        &format!("NNTP `GROUP` on the {nn}-message store"),
        format!(
            "`GROUP` median {:.2} ms, max {:.2} ms; `LIST` ({} groups) median {:.2} ms",
            g_med * 1e3,
            g_max * 1e3,
            groups.len(),
            median(list_t) * 1e3
        ),
        "`GROUP` median ≤ 10 ms",
        g_med <= 0.010,
        &format!(
            "a logged-in reader's `GROUP` of the biggest area ({count}) and `LIST`, sent and \
             answered in turn, {REPEAT} times each"
        ),
    )];
    rows.push(loaded(&d, port, &group, &nn)?);
    rows.push(crate::bulletins::row(&d, &nn));
    Ok((rows, Vec::new()))
}

/// Four readers loop; a fifth's `GROUP` and a telnet user's `LL 1` are timed meanwhile.
fn loaded(d: &Daemon, port: u16, group: &str, nn: &str) -> R<Row> {
    let stop = Arc::new(AtomicBool::new(false));
    // Logged in first: their logins (argon2) are not part of the load.
    let readers = (0..READERS)
        .map(|_| Reader::connect(port))
        .collect::<R<Vec<_>>>()?;
    let loops: Vec<_> = readers
        .into_iter()
        .map(|mut r| {
            let (stop, group) = (stop.clone(), group.to_string());
            std::thread::spawn(move || -> R<usize> {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    r.timed(&format!("GROUP {group}"), "211")?;
                    r.list(&format!("LISTGROUP {group}"))?;
                    r.list("LIST")?;
                    n += 3;
                }
                Ok(n)
            })
        })
        .collect();
    let prompt = d.prompt();
    let mut user = d.login("N0USR", "pw")?;
    timed(&mut user, &prompt, "OP 0")?;
    let mut me = Reader::connect(port)?;
    let (mut group_t, mut ll_t) = (Vec::new(), Vec::new());
    let t0 = now();
    for _ in 0..LOADED {
        group_t.push(me.timed(&format!("GROUP {group}"), "211")?);
        ll_t.push(timed(&mut user, &prompt, "LL 1")?.0);
    }
    let secs = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let mut done = 0;
    for l in loops {
        done += l.join().map_err(|_| "a reader panicked")??;
    }
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let (g_max, ll_max) = (max(&group_t), max(&ll_t));
    Ok(Row::check(
        "8i",
        &format!("NNTP `GROUP` and a user's `LL 1` while {READERS} readers loop, {nn} messages"),
        format!(
            "`GROUP` median {:.2} ms, max {:.2} ms; `LL 1` median {:.2} ms, max {:.2} ms; the \
             readers' commands: {:.0}/s",
            median(group_t.clone()) * 1e3,
            g_max * 1e3,
            median(ll_t.clone()) * 1e3,
            ll_max * 1e3,
            done as f64 / secs
        ),
        "`GROUP` ≤ 200 ms, `LL 1` ≤ 1 s",
        g_max <= 0.200 && ll_max <= 1.0,
        &format!(
            "{READERS} readers logged in as N0USR loop `GROUP`, `LISTGROUP` (up to 5,000 \
             numbers) and `LIST` on the biggest area as fast as answered; meanwhile a fifth \
             reader's `GROUP` and N0USR's `LL 1` at the telnet prompt, in turn, {LOADED} times \
             each"
        ),
    ))
}
