//! Row 12: what a receiving qtc writes to its disk per message (an SD card on a Raspberry Pi
//! wears with every byte). A pair of daemons as in row 2; A forwards 1,000 × 2 KB bulletins in
//! B1, then `qtc ctl housekeep` on B copies its WAL into the database (until a checkpoint has
//! done that, the messages are only in the WAL). B's `write_bytes` from /proc/PID/io (bytes the
//! process sent towards the disk: its WAL, its database, its log) before and after, per message
//! and as a multiple of the messages' own stored size. Twice: B as an end BBS (the bar), and B
//! queueing every bulletin onward for a partner of its own, as a hub (row 2's setup).

use crate::daemon::{Daemon, Opts};
use crate::forward::{pair_with, seed};
use crate::report::Row;
use crate::util::{thousands, Ctx, R};
use crate::Plan;

/// Messages per pass.
const MESSAGES: usize = 1_000;
/// Passes per binary (the median is reported).
const PASSES: usize = 3;

/// `write_bytes` and `cancelled_write_bytes` of a process.
fn io(pid: u32) -> R<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/io")).ctx("/proc/PID/io")?;
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse().ok())
            .ctx(format!("no {k} in /proc/{pid}/io"))
    };
    Ok((field("write_bytes:")?, field("cancelled_write_bytes:")?))
}

/// Bytes of the messages B holds, as `qtc msg list --json` gives their sizes.
pub fn stored_bytes(b: &Daemon) -> R<u64> {
    let list = b.cli(&["msg", "list", "--json"], b"")?;
    Ok(list
        .lines()
        .filter_map(|l| l.split("\"size\":").nth(1))
        .filter_map(|v| v.split([',', '}']).next())
        .filter_map(|v| v.trim().parse::<u64>().ok())
        .sum())
}

/// One pass: (written per message, cancelled per message, stored bytes per message).
fn pass(o: &Opts, hub: bool) -> R<(f64, f64, f64)> {
    let onward = "[[partner]]\ncallsign = \"N0CCC\"\nprotocol = \"b1\"\nroutes = [\"WW\"]\n";
    let (a, b) = pair_with(o, "b1", if hub { onward } else { "" })?;
    seed(&a, MESSAGES)?;
    let (w0, c0) = io(b.pid())?;
    let out = a.ctl(&["forward", "N0BBB"])?;
    if !out.contains(&format!("0 received, {MESSAGES} sent")) {
        return Err(format!("forward: {}", out.trim()));
    }
    b.ctl(&["housekeep"])?;
    let (w1, c1) = io(b.pid())?;
    let n = MESSAGES as f64;
    let stored = stored_bytes(&b)? as f64 / n;
    Ok(((w1 - w0) as f64 / n, (c1 - c0) as f64 / n, stored))
}

/// Runs row 12 for the measured qtc and, with `--baseline`, the other one.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let how = format!(
        "row 2's pair, {} × 2 KB B1 bulletins, durability \"{}\"; B's /proc/PID/io write_bytes \
         before `qtc ctl forward` and after `qtc ctl housekeep` (its checkpoint); median of \
         {PASSES} fresh pairs",
        thousands(MESSAGES as u64),
        o.durability
    );
    for (tag, ob) in crate::binaries(o, p) {
        for hub in [false, true] {
            let (row, note) = variant(&ob, hub, tag, &how);
            rows.push(row);
            notes.extend(note);
        }
    }
    (rows, notes)
}

/// One binary, one setup: the row and its note (a broken row has none).
fn variant(ob: &Opts, hub: bool, tag: &str, how: &str) -> (Row, Option<String>) {
    let what = if hub {
        format!("receiver's disk writes per message, queueing each onward (a hub){tag}")
    } else {
        format!("receiver's disk writes per received message (an end BBS){tag}")
    };
    let mut runs = Vec::new();
    for _ in 0..PASSES {
        match pass(ob, hub) {
            Ok(r) => runs.push(r),
            Err(e) => return (Row::broken("12", &what, &e, how), None),
        }
    }
    runs.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (written, cancelled, stored) = runs[PASSES / 2];
    let ratio = written / stored;
    let figure = format!(
        "{} bytes = {ratio:.2} × the message's {} stored bytes (min {:.0}, max {:.0})",
        thousands(written.round() as u64),
        thousands(stored.round() as u64),
        runs[0].0,
        runs[PASSES - 1].0
    );
    let target = "<= 4 × the message's size, goal 2 × (xfbbd 5 × without a sync)";
    let row = if hub {
        Row::info("12", &what, figure, "", how)
    } else {
        Row::check("12", &what, figure, target, ratio <= 4.0, how)
    };
    let note = format!(
        "Row 12 {}{tag}: cancelled_write_bytes {cancelled:.0} per message (writes to files \
         truncated before they reached the disk: a WAL restarted).",
        if hub { "hub" } else { "end BBS" }
    );
    (row, Some(note))
}
