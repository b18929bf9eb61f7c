//! Row 8j: a bulletin folder over IMAP on the 1 M store (`--quick`: 20,000). A logged-in IMAP
//! client's `SELECT` of the biggest `Bulletins/<CAT>` folder (the newest 1,000 of a category
//! with tens of thousands), the `UID FETCH 1:* (UID FLAGS RFC822.SIZE)` a client syncs its list
//! with, and the newest bulletin fetched whole, timed in turn. Issue 37 asks that a bulletin
//! folder cost the same on any store (the store's index of addressees, bounded listings): the
//! figure to compare with the `--quick` store's.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use crate::daemon::Daemon;
use crate::report::Row;
use crate::util::{line_conn, median, now, Ctx, R};

/// Timed repetitions of each command.
const REPEAT: usize = 9;

/// An IMAP client logged in as N0USR (on loopback, where the password is taken in clear).
struct Imap {
    r: BufReader<TcpStream>,
    w: TcpStream,
    tag: usize,
}

impl Imap {
    fn connect(port: u16) -> R<Imap> {
        let (r, w) = line_conn(port, "IMAP")?;
        let mut c = Imap { r, w, tag: 0 };
        let mut greeting = String::new();
        c.r.read_line(&mut greeting).ctx("read IMAP")?;
        c.cmd("LOGIN N0USR pw")?;
        Ok(c)
    }

    /// Sends a tagged command and reads to its tagged answer, which must be OK; the untagged
    /// lines before it (literals read through).
    fn cmd(&mut self, command: &str) -> R<Vec<String>> {
        self.tag += 1;
        let tag = format!("t{}", self.tag);
        self.w
            .write_all(format!("{tag} {command}\r\n").as_bytes())
            .ctx("write IMAP")?;
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            if self.r.read_line(&mut line).ctx("read IMAP")? == 0 {
                return Err("IMAP closed".into());
            }
            if let Some(n) = literal(&line) {
                let mut skip = vec![0u8; n];
                std::io::Read::read_exact(&mut self.r, &mut skip).ctx("read a literal")?;
            }
            if let Some(rest) = line.strip_prefix(&format!("{tag} ")) {
                return match rest.starts_with("OK") {
                    true => Ok(lines),
                    false => Err(format!("{command}: {rest}")),
                };
            }
            lines.push(line.trim_end().to_string());
        }
    }

    /// `command`'s time in seconds, and what it answered.
    fn timed(&mut self, command: &str) -> R<(f64, Vec<String>)> {
        let t0 = now();
        let lines = self.cmd(command)?;
        Ok((t0.elapsed().as_secs_f64(), lines))
    }
}

/// The length of the literal a line ends with (`{123}`).
fn literal(line: &str) -> Option<usize> {
    let l = line.trim_end().strip_suffix('}')?;
    l[l.rfind('{')? + 1..].parse().ok()
}

/// Runs row 8j on the big store's daemon.
pub fn row(d: &Daemon, nn: &str) -> Row {
    let what = format!("IMAP bulletin folder on the {nn}-message store");
    measure(d, &what).unwrap_or_else(|e| Row::broken("8j", &what, &e, ""))
}

fn measure(d: &Daemon, what: &str) -> R<Row> {
    let mut c = Imap::connect(d.imap.ctx("no IMAP port")?)?;
    // The biggest category: the most messages.
    let mut biggest = (0u64, String::new());
    for l in c.cmd("LIST \"Bulletins/\" \"%\"")? {
        let name = l.rsplit(' ').next().unwrap_or_default().trim_matches('"');
        let status = c.cmd(&format!("STATUS \"{name}\" (MESSAGES)"))?;
        let count = status
            .first()
            .and_then(|s| s.split("MESSAGES ").nth(1))
            .and_then(|s| s.trim_end_matches(')').parse().ok())
            .unwrap_or(0);
        biggest = biggest.max((count, name.to_string()));
    }
    let (count, folder) = biggest;
    if count == 0 {
        return Err("no bulletin folder".into());
    }
    let (mut select, mut list, mut whole) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..REPEAT {
        select.push(c.timed(&format!("SELECT \"{folder}\""))?.0);
        let (t, lines) = c.timed("UID FETCH 1:* (UID FLAGS RFC822.SIZE)")?;
        if lines.is_empty() {
            return Err(format!("{folder}: no messages listed"));
        }
        list.push(t);
        whole.push(c.timed("FETCH * BODY.PEEK[]")?.0);
    }
    let ms = |v: &[f64]| median(v.to_vec()) * 1e3;
    Ok(Row::info(
        "8j",
        what,
        format!(
            "`SELECT` median {:.2} ms; `UID FETCH 1:* (UID FLAGS RFC822.SIZE)` median {:.2} ms; \
             the newest whole median {:.2} ms",
            ms(&select),
            ms(&list),
            ms(&whole)
        ),
        "the same on any store: the newest 1,000 of a category by the addressee index \
         (`SELECT` renders each to give its size)",
        &format!(
            "N0USR's IMAP client on loopback: `SELECT` of the biggest bulletin folder \
             ({folder}, {count} shown), its list of UIDs, flags and sizes, and `FETCH * \
             BODY.PEEK[]`, in turn, {REPEAT} times each"
        ),
    ))
}
