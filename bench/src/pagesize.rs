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

/// Housekeeping until a run expires and removes nothing (at most five runs).
fn settle(d: &Daemon) -> R<()> {
    for _ in 0..5 {
        let out = d.ctl(&["housekeep"])?;
        if out.contains(" 0 expired, 0 removed") {
            return Ok(());
        }
    }
    Ok(())
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
        "the generated store after housekeeping runs until one finds nothing, and a copy \
         rebuilt with 4 KB pages (VACUUM), each under a daemon; `qtc ctl housekeep` wall time, \
         {PASSES} passes on each, alternating; fastest of each"
    );
    match measure(o, n) {
        Ok((page, ours, four)) => Row::check(
            "8g",
            &what,
            format!(
                "{page}-byte pages {:.1} ms, 4 KB pages {:.1} ms: {:.2}x",
                ours * 1e3,
                four * 1e3,
                ours / four.max(1e-9)
            ),
            "≤ 1.2x the 4 KB copy",
            ours <= 1.2 * four,
            &how,
        ),
        Err(e) => Row::broken("8g", &what, &e, &how),
    }
}

/// (page size, fastest pass on the store as made, fastest on the 4 KB copy), in seconds.
fn measure(o: &Opts, n: usize) -> R<(String, f64, f64)> {
    let (mut d, _) = genstore::daemon(o, n, 10)?;
    settle(&d)?;
    let copy = four_kb_copy(o, &mut d)?;
    settle(&copy)?;
    let (mut ours, mut four) = (f64::MAX, f64::MAX);
    for _ in 0..PASSES {
        for (daemon, best) in [(&d, &mut ours), (&copy, &mut four)] {
            let t0 = now();
            daemon.ctl(&["housekeep"])?;
            *best = best.min(t0.elapsed().as_secs_f64());
        }
    }
    Ok((page_size(&d)?, ours, four))
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
