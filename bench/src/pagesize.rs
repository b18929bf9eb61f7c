//! Row 8g: what the store's page size costs housekeeping. The generated store of row 8, kept
//! busy by housekeeping until a run finds nothing to do, and a copy of it rebuilt with 4 KB
//! pages (`PRAGMA page_size = 4096; VACUUM`), each under a daemon of the measured qtc; then
//! `qtc ctl housekeep` on one and the other in turn, nine times each. Issue 38's bar: the
//! fastest pass on the store as qtc makes it at most 1.2 times the fastest on the copy.

use crate::daemon::{Daemon, Opts};
use crate::genstore;
use crate::report::Row;
use crate::util::{now, thousands, Ctx, R};

/// Timed passes on each store.
const PASSES: usize = 9;

/// Housekeeping until a run expires and removes nothing (at most five runs); the wall time
/// of each run that did something, in seconds.
fn settle(d: &Daemon) -> R<Vec<f64>> {
    let mut runs = Vec::new();
    for _ in 0..5 {
        let t0 = now();
        let out = d.ctl(&["housekeep"])?;
        if out.contains(" 0 expired, 0 removed") {
            break;
        }
        runs.push(t0.elapsed().as_secs_f64());
    }
    Ok(runs)
}

/// What one layout cost before the passes: housekeeping's first runs (expiring, then
/// removing what they expired), the file before and after them, and `qtc store check`.
struct Layout {
    settle: Vec<f64>,
    mb_made: f64,
    mb_kept: f64,
    check: f64,
}

impl Layout {
    fn of(d: &Daemon, made: f64) -> R<Layout> {
        let settle = settle(d)?;
        let mb_kept = file_mb(d)?;
        let t0 = now();
        d.cli(&["store", "check"], b"")?;
        Ok(Layout {
            settle,
            mb_made: made,
            mb_kept,
            check: t0.elapsed().as_secs_f64(),
        })
    }

    fn describe(&self) -> String {
        let runs: Vec<String> = self.settle.iter().map(|s| format!("{s:.1}")).collect();
        format!(
            "housekeeping until nothing is due {} s, file {:.0} MB then {:.0} MB, `qtc store \
             check` {:.1} s",
            runs.join(" + "),
            self.mb_made,
            self.mb_kept,
            self.check
        )
    }
}

/// The size of a daemon's store file in MB (10^6 bytes).
fn file_mb(d: &Daemon) -> R<f64> {
    let meta = std::fs::metadata(d.data_dir().join("qtc.sqlite")).ctx("the store's size")?;
    Ok(meta.len() as f64 / 1e6)
}

/// A second daemon on a copy of `d`'s store (stopped meanwhile) rebuilt with 4 KB pages.
fn four_kb_copy(o: &Opts, d: &mut Daemon) -> R<Daemon> {
    d.terminate()?;
    let mut copy = Daemon::create(o, &genstore::spec(10))?;
    copy.terminate()?;
    let db = copy.data_dir().join("qtc.sqlite");
    for side in ["qtc.sqlite-wal", "qtc.sqlite-shm"] {
        let _ = std::fs::remove_file(copy.data_dir().join(side));
    }
    std::fs::copy(d.data_dir().join("qtc.sqlite"), &db).ctx("copy the store")?;
    genstore::sql(
        &db,
        "PRAGMA journal_mode = DELETE; PRAGMA page_size = 4096; VACUUM; \
         PRAGMA journal_mode = WAL;",
    )?;
    d.start()?;
    copy.start()?;
    Ok(copy)
}

/// The page size of a daemon's store.
fn page_size(d: &Daemon) -> R<String> {
    Ok(
        genstore::sql(&d.data_dir().join("qtc.sqlite"), "PRAGMA page_size;")?
            .trim()
            .to_string(),
    )
}

/// Row 8g for the qtc in `o` on a store of `n` generated messages.
pub fn row(o: &Opts, n: usize, tag: &str) -> Row {
    let what = format!(
        "{}-message store: housekeeping with nothing due, against a 4 KB-page copy{tag}",
        thousands(n as u64)
    );
    let how = format!(
        "the generated store and a copy rebuilt with 4 KB pages (VACUUM), each under a \
         daemon; on each, housekeeping runs until one finds nothing (each run's wall time), \
         the store file before and after, `qtc store check`; then `qtc ctl housekeep` wall \
         time, {PASSES} passes on each, alternating; fastest of each"
    );
    match measure(o, n) {
        Ok((page, ours, four, (made, copy))) => Row::check(
            "8g",
            &what,
            format!(
                "{page}-byte pages {:.1} ms, 4 KB pages {:.1} ms: {:.2}x; before: {page}-byte \
                 pages {}; 4 KB pages {}",
                ours * 1e3,
                four * 1e3,
                ours / four.max(1e-9),
                made.describe(),
                copy.describe()
            ),
            "≤ 1.2x the 4 KB copy",
            ours <= 1.2 * four,
            &how,
        ),
        Err(e) => Row::broken("8g", &what, &e, &how),
    }
}

/// (page size, fastest pass on the store as made, fastest on the 4 KB copy in seconds, what
/// each layout cost before the passes).
fn measure(o: &Opts, n: usize) -> R<(String, f64, f64, (Layout, Layout))> {
    let (mut d, _) = genstore::daemon(o, n, 10)?;
    let copy = four_kb_copy(o, &mut d)?;
    let made = Layout::of(&d, file_mb(&d)?)?;
    let copied = Layout::of(&copy, file_mb(&copy)?)?;
    let (mut ours, mut four) = (f64::MAX, f64::MAX);
    for _ in 0..PASSES {
        for (daemon, best) in [(&d, &mut ours), (&copy, &mut four)] {
            let t0 = now();
            daemon.ctl(&["housekeep"])?;
            *best = best.min(t0.elapsed().as_secs_f64());
        }
    }
    Ok((page_size(&d)?, ours, four, (made, copied)))
}

/// Row 8g on its own (`--only pagesize`), for the measured qtc and a `--baseline`.
pub fn run(o: &Opts, p: &crate::Plan) -> (Vec<Row>, Vec<String>) {
    let rows = crate::binaries(o, p)
        .iter()
        .map(|(tag, ob)| row(ob, p.big_n, tag))
        .collect();
    let note = format!(
        "Row 8g: load average at the start {}.",
        crate::forward::load()
    );
    (rows, vec![note])
}
