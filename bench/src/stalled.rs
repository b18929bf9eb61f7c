//! Row 9: users who stop reading. Each asks for thirty reads of a large bulletin and a long
//! listing, then reads nothing; what that costs the daemon in memory and CPU once their output
//! has stalled (with `--baseline`, the other qtc too, one after the other).

use std::time::Duration;

use crate::client::Client;
use crate::daemon::{Daemon, Opts, Spec};
use crate::measure::{bulletins, rss_mb, window};
use crate::report::Row;
use crate::util::{cpu_ticks, now, sleep, R};
use crate::{or_broken, Plan};

const HOW: &str = "a 1.5 MB bulletin and 1,000 small ones imported; 6 telnet users each type \
`OP 0`, `R 1` with the number 30 times (45 MB of output each) and `L`, then read nothing; VmRSS \
once the daemon's CPU ticks stop moving, minus VmRSS before the 6 logged in; then CPU ticks and \
system calls over the window";

/// Users who stop reading.
const STALLED: usize = 6;

/// The bulletin read thirty times, in bytes.
const BIG: usize = 1_500_000;

/// Waits until the daemon has done what it will for the stalled readers: its CPU ticks do not
/// move for a second (at most `limit`).
fn settle(pid: u32, limit: Duration) -> R<()> {
    let end = now() + limit;
    let mut last = cpu_ticks(pid)?;
    while now() < end {
        sleep(Duration::from_secs(1));
        let t = cpu_ticks(pid)?;
        if t == last {
            return Ok(());
        }
        last = t;
    }
    Err(format!("the daemon was still busy after {limit:?}"))
}

/// (MB of RSS per stalled user, the window's summary, its CPU ticks and system calls).
fn measure_one(o: &Opts, p: &Plan) -> R<(f64, String, u64, u64)> {
    let d = Daemon::create(
        o,
        &Spec {
            call: "N0STL",
            ..Spec::default()
        },
    )?;
    d.import(&bulletins(1, BIG, 7, |_| "BIG_N0STL".into()))?;
    d.import(&bulletins(1000, 200, 8, |i| format!("S{i}_N0STL")))?;
    let pid = d.pid();
    // One user in first, so the figure is what the stalled ones add.
    let mut first = d.login("N0USR", "pw")?;
    first.line("LL 1")?;
    first.expect(&d.prompt())?;
    settle(pid, Duration::from_secs(10))?;
    let before = rss_mb(pid)?;
    let reads = format!("R{}", " 1".repeat(30));
    let mut users: Vec<Client> = Vec::new();
    for _ in 0..STALLED {
        let mut c = d.login("N0USR", "pw")?;
        c.line("OP 0")?;
        c.expect(&d.prompt())?;
        c.line(&reads)?;
        c.line("L")?;
        users.push(c);
    }
    settle(pid, Duration::from_secs(60))?;
    let after = rss_mb(pid)?;
    let secs = if p.quick { 3 } else { 10 };
    let w = window(pid, Duration::from_secs(secs), d.dir.path())?;
    drop(users);
    let per = (after - before).max(0.0) / STALLED as f64;
    Ok((per, w.summary(), w.ticks, w.calls.total))
}

fn measure(o: &Opts, p: &Plan) -> R<Vec<Row>> {
    let mut rows = Vec::new();
    for (tag, ob) in crate::binaries(o, p) {
        // Only the qtc under test is held to the bars; the baseline's figures are context.
        let checked = tag.is_empty();
        let (per, summary, ticks, calls) = measure_one(&ob, p)?;
        let rss = format!("{per:.2} MB per user");
        let rss_target = "<= 1 MB per user";
        let cpu_target = "0 ticks, 0 system calls";
        if checked {
            rows.push(Row::check(
                "9a",
                "stalled readers: daemon RSS growth",
                rss,
                rss_target,
                per <= 1.0,
                HOW,
            ));
            rows.push(Row::check(
                "9b",
                "stalled readers: daemon work while they are stalled",
                summary,
                cpu_target,
                ticks == 0 && calls == 0,
                HOW,
            ));
        } else {
            rows.push(Row::info(
                "9a",
                &format!("stalled readers: daemon RSS growth{tag}"),
                rss,
                rss_target,
                HOW,
            ));
            rows.push(Row::info(
                "9b",
                &format!("stalled readers: daemon work while they are stalled{tag}"),
                summary,
                cpu_target,
                HOW,
            ));
        }
    }
    Ok(rows)
}

/// Runs row 9.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    (
        or_broken("9", "stalled readers", HOW, measure(o, p)),
        Vec::new(),
    )
}
