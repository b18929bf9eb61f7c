//! Daily housekeeping: message lifetimes, BID expiry, old partial transfers. One timer, armed
//! for the next run only (one wake-up a day); `qtc ctl housekeep` runs it at once.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

use crate::clock;
use crate::config::housekeeping::Housekeeping;
use crate::store_thread::StoreHandle;

/// After a step during which others used the store thread, housekeeping waits for a pause this
/// long in their work before its next step: a step lands in the gaps of a forwarding session
/// or a burst of logins instead of in front of their writes.
const QUIET: Duration = Duration::from_millis(50);

/// About how long one step may hold the store thread. A step of [`qtc_store::housekeep::CHUNK`]
/// rows took 80-220 ms removing messages from a 1 M store while its two cores were busy (bench
/// row 8e), and every write waited behind it; so each step's rows are scaled from the last
/// step's time to this.
const STEP_TIME: Duration = Duration::from_millis(10);

/// The first step's rows, before any step's time is known.
const FIRST_ROWS: usize = 100;

/// The fewest rows in a step: each step also costs a commit.
const MIN_ROWS: usize = 10;

/// Under unbroken load, a step still goes after this long: housekeeping slows, never stops.
const MOST_WAIT: Duration = Duration::from_secs(1);

/// Seconds from `now` (Unix seconds) to the next `hour`:00:00 UTC, strictly in the future.
pub fn secs_until(now: i64, hour: u32) -> i64 {
    let day = 86_400;
    let target = i64::from(hour) * 3600;
    let into_day = now.rem_euclid(day);
    let d = target - into_day;
    if d > 0 {
        d
    } else {
        d + day
    }
}

/// Rows for the step after one of `rows` that took `took`: scaled toward [`STEP_TIME`], at
/// most doubled, between [`MIN_ROWS`] and [`qtc_store::housekeep::CHUNK`].
fn next_rows(rows: usize, took: Duration) -> usize {
    let scaled = rows as f64 * STEP_TIME.as_secs_f64() / took.as_secs_f64().max(1e-6);
    (scaled as usize)
        .min(rows.saturating_mul(2))
        .clamp(MIN_ROWS, qtc_store::housekeep::CHUNK)
}

/// Runs housekeeping on the store thread, now or at the daily hour.
pub struct Housekeeper {
    store: StoreHandle,
    settings: Mutex<Housekeeping>,
    /// Wakes the schedule to re-arm its timer after [`Housekeeper::set`].
    changed: tokio::sync::Notify,
    /// Where a failed run is counted.
    metrics: std::sync::Arc<crate::metrics::Metrics>,
    /// Held for a whole run: a run asked for while one is going waits for it, rather than
    /// walking the same rows in steps between its steps.
    running: tokio::sync::Mutex<()>,
    /// The last runs since start, newest first.
    runs: Mutex<std::collections::VecDeque<Run>>,
}

/// Runs kept for the web's `/housekeeping` page.
const RUNS_KEPT: usize = 10;

/// One housekeeping run, as the web shows it.
#[derive(Clone, Debug)]
pub struct Run {
    /// When it ended (Unix seconds).
    pub at: i64,
    /// Who started it: `schedule`, `qtc ctl`, or `web N0SYS`.
    pub by: String,
    /// How long it took.
    pub took: Duration,
    /// Its summary line, or why it failed.
    pub line: String,
    /// Whether it finished.
    pub ok: bool,
}

impl Housekeeper {
    /// A housekeeper for `store` with these settings; failures are counted in `metrics`.
    pub fn new(
        store: StoreHandle,
        settings: Housekeeping,
        metrics: std::sync::Arc<crate::metrics::Metrics>,
    ) -> Housekeeper {
        Housekeeper {
            store,
            settings: Mutex::new(settings),
            changed: tokio::sync::Notify::new(),
            metrics,
            running: tokio::sync::Mutex::new(()),
            runs: Mutex::new(std::collections::VecDeque::new()),
        }
    }

    /// The settings in force (hour and lifetimes).
    pub fn settings(&self) -> Housekeeping {
        self.get()
    }

    /// The last runs since start, newest first.
    pub fn runs(&self) -> Vec<Run> {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        runs.iter().cloned().collect()
    }

    /// Whether a run is going now.
    pub fn running(&self) -> bool {
        self.running.try_lock().is_err()
    }

    /// Replaces the lifetimes and hour (on reload); the next run uses them.
    pub fn set(&self, settings: Housekeeping) {
        *self.settings.lock().unwrap_or_else(|e| e.into_inner()) = settings;
        self.changed.notify_one();
    }

    fn get(&self) -> Housekeeping {
        *self.settings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs it now; returns the summary line (also logged). Each step (one transaction of at
    /// most [`qtc_store::housekeep::CHUNK`] rows, as many as take about `STEP_TIME`, 10 ms) is its
    /// own background job on the store thread: it starts only when no session's,
    /// forwarding's or /metrics' job waits.
    pub async fn run_now(&self, by: &str) -> Result<String, String> {
        let _one_at_a_time = self.running.lock().await;
        let t0 = clock::now();
        let r = self.run().await;
        let line = match &r {
            Ok(l) | Err(l) => l.clone(),
        };
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        runs.truncate(RUNS_KEPT - 1);
        runs.push_front(Run {
            at: clock::unix_now(),
            by: by.to_string(),
            took: t0.elapsed(),
            line,
            ok: r.is_ok(),
        });
        r
    }

    /// One run, step by step.
    async fn run(&self) -> Result<String, String> {
        let lifetimes = self.get().lifetimes;
        let mut run = qtc_store::Housekeeping::new(clock::unix_now(), &lifetimes);
        let mut rows = FIRST_ROWS;
        while !run.finished() {
            let before = self.store.others_sent();
            run.set_step_rows(rows);
            let (r, took) = self
                .store
                .call_background(move |s| {
                    let t0 = clock::now();
                    let r = run.step(s).map(|_| run);
                    (r, t0.elapsed())
                })
                .await
                .map_err(|e| format!("housekeeping failed: {e}"))?;
            tracing::debug!(rows, ?took, "housekeeping step");
            rows = next_rows(rows, took);
            if self.store.others_sent() != before {
                self.wait_for_quiet().await;
            }
            run = r.map_err(|e| {
                self.metrics.error("store");
                tracing::error!(error = %e, "housekeeping failed");
                format!("housekeeping failed: {e}")
            })?;
        }
        // Space given back counts for the quota at once (one that follows the disk).
        let _ = self.store.submit(crate::room::refresh);
        let done = run.done();
        let line = format!("housekeeping: {done}");
        tracing::info!(
            expired = done.expired,
            removed = done.removed,
            bids = done.bids,
            partials = done.partials,
            returned_pages = done.returned_pages,
            steps = done.steps,
            "{line}"
        );
        Ok(line)
    }

    /// Waits until nobody else has used the store thread for [`QUIET`], or [`MOST_WAIT`]
    /// has passed. Timers only while others are busy and housekeeping is running.
    async fn wait_for_quiet(&self) {
        let give_up = clock::now() + MOST_WAIT;
        loop {
            let seen = self.store.others_sent();
            let left = give_up.saturating_duration_since(clock::now());
            tokio::time::sleep(QUIET.min(left)).await;
            if self.store.others_sent() == seen || left <= QUIET {
                return;
            }
        }
    }

    /// Runs every day at the configured UTC hour until shutdown. The only timer is the one
    /// for the next run.
    pub async fn schedule(self: std::sync::Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        loop {
            let wait = secs_until(clock::unix_now(), self.get().hour);
            let sleep = tokio::time::sleep(Duration::from_secs(wait as u64));
            tokio::select! {
                _ = sleep => {
                    let _ = self.run_now("schedule").await;
                }
                // A reload may have moved the hour: compute the next run again.
                _ = self.changed.notified() => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// `qtc store ...`.
#[derive(clap::Subcommand)]
pub enum StoreCmd {
    /// Run SQLite's integrity check on the message store, then check its tallies (the counts
    /// behind the greeting, `I`, `LC` and /metrics) against the messages; prints each problem,
    /// exits 1 if any. Works beside the running daemon.
    ///
    /// Example: qtc -c /etc/qtc/qtc.toml store check
    Check,
    /// Count the tallies again from the messages and correct those `store check` names
    /// (after rows were added or changed by hand); prints each key corrected. One
    /// transaction (a few seconds for 1,000,000 messages): stop the daemon first.
    ///
    /// Example: systemctl stop qtc; qtc -c /etc/qtc/qtc.toml store recount; systemctl start qtc
    Recount,
    /// Compact the message store and switch it, once, to incremental vacuum, so housekeeping
    /// gives free space back in small steps from then on. Needed only for a store made before
    /// qtc did this; rewrites the whole file (about as long as copying it): stop the daemon
    /// first.
    ///
    /// Example: systemctl stop qtc; qtc -c /etc/qtc/qtc.toml store compact; systemctl start qtc
    Compact,
    /// Pack the texts kept alone into blocks of up to five consecutive messages, deflated
    /// together, as a received block's are, and deflate a plain text left alone; then give
    /// the space freed back. For a store upgraded from before qtc deflated text (its texts
    /// stayed plain) or filled by many single posts. Rewrites those texts (31 s for 1,000,000
    /// on the benchmark machine): stop the daemon first.
    ///
    /// Example: systemctl stop qtc; qtc -c /etc/qtc/qtc.toml store pack; systemctl start qtc
    Pack,
}

impl StoreCmd {
    /// The command's name when it rewrites much of the file in long transactions: beside a
    /// running daemon's writes it would fail on SQLite's lock (or hold them up as long).
    pub fn rewrites(&self) -> Option<&'static str> {
        match self {
            StoreCmd::Check => None,
            StoreCmd::Recount => Some("recount"),
            StoreCmd::Compact => Some("compact"),
            StoreCmd::Pack => Some("pack"),
        }
    }
}

/// Runs a `qtc store` command.
pub fn store_cmd(c: &crate::config::Loaded, cmd: StoreCmd) -> anyhow::Result<()> {
    let from = |e: qtc_mail::StoreError| {
        anyhow::anyhow!("{e} (data directory from [store] dir in {})", c.source)
    };
    match cmd {
        StoreCmd::Check => {
            // Read only: it works on a full disk and changes nothing, not even the schema.
            let path = c.store.dir.join(qtc_store::DB_FILE);
            report_check(
                c,
                &path,
                &qtc_store::Store::check_dir(&c.store.dir).map_err(from)?,
            )
        }
        StoreCmd::Recount => {
            let mut store =
                qtc_store::Store::open(&c.store.dir, c.store.durability).map_err(from)?;
            let wrong = store.recount_tallies().map_err(from)?;
            for m in &wrong {
                outln!("recounted: {m}");
            }
            outln!(
                "ok: {} tallies recounted, {} corrected",
                store.path().display(),
                wrong.len()
            );
            Ok(())
        }
        StoreCmd::Compact => {
            let mut store =
                qtc_store::Store::open(&c.store.dir, c.store.durability).map_err(from)?;
            let was = std::fs::metadata(store.path()).map_or(0, |m| m.len());
            store.compact()?;
            let now = std::fs::metadata(store.path()).map_or(0, |m| m.len());
            outln!(
                "ok: {} compacted ({} MB -> {} MB), housekeeping now gives free space back in steps",
                store.path().display(),
                was / 1_000_000,
                now / 1_000_000
            );
            // A file made before incremental vacuum keeps the pages packing freed.
            if !store.incremental_vacuum().map_err(from)? {
                outln!(
                    "{} free pages stay in the file: `qtc store compact` gives them back",
                    store.free_pages().map_err(from)?
                );
            }
            Ok(())
        }
        StoreCmd::Pack => {
            let mut store =
                qtc_store::Store::open(&c.store.dir, c.store.durability).map_err(from)?;
            let was = std::fs::metadata(store.path()).map_or(0, |m| m.len());
            let p = store.pack_texts().map_err(from)?;
            store.shrink_wal().map_err(from)?;
            let now = std::fs::metadata(store.path()).map_or(0, |m| m.len());
            outln!(
                "ok: {} texts packed into {} blocks, {} deflated alone ({} MB -> {} MB)",
                p.texts,
                p.blocks,
                p.deflated,
                was / 1_000_000,
                now / 1_000_000
            );
            Ok(())
        }
    }
}

/// What `qtc store check` says: ok, or each problem and an error saying what to do.
fn report_check(
    c: &crate::config::Loaded,
    path: &std::path::Path,
    found: &qtc_store::Checked,
) -> anyhow::Result<()> {
    if found.is_empty() {
        outln!("ok: {} is consistent", path.display());
        return Ok(());
    }
    for p in &found.damage {
        outln!("{p}");
    }
    if !found.damage.is_empty() {
        anyhow::bail!(
            "{}: {} problem(s) found by the integrity check: restore the store from a backup \
             (docs/operating.md, \"Checks\")",
            path.display(),
            found.damage.len()
        );
    }
    for m in &found.miscounts {
        outln!("{m}");
    }
    anyhow::bail!(
        "{}: {} tally count(s) differ from the messages: count them again with the daemon \
         stopped (systemctl stop qtc; qtc -c {} store recount; systemctl start qtc)",
        path.display(),
        found.miscounts.len(),
        c.source
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_sized_to_the_step_time() {
        let ms = Duration::from_millis;
        // 100 rows in 40 ms: a quarter of them next.
        assert_eq!(next_rows(100, ms(40)), 25);
        // Fast steps grow, at most twice at a time, up to CHUNK.
        assert_eq!(next_rows(100, ms(1)), 200);
        assert_eq!(next_rows(800, Duration::ZERO), qtc_store::housekeep::CHUNK);
        // Under heavy load still a few rows a step.
        assert_eq!(next_rows(10, ms(500)), MIN_ROWS);
    }

    #[test]
    fn next_run_is_within_a_day_and_on_the_hour() {
        // 2026-01-01T00:00:00Z = 1767225600
        let midnight = 1_767_225_600;
        assert_eq!(secs_until(midnight, 3), 3 * 3600);
        assert_eq!(secs_until(midnight + 3 * 3600, 3), 86_400);
        assert_eq!(secs_until(midnight + 3 * 3600 + 1, 3), 86_399);
        assert_eq!(secs_until(midnight + 23 * 3600, 3), 4 * 3600);
        assert_eq!(secs_until(midnight + 60, 0), 86_400 - 60);
    }
}
