//! Row 2: N bulletins of about 2 KB forwarded from A to B over loopback TCP, per mode.
//!
//! Two passes on fresh pairs: a timing pass (wall time, CPU of both daemons, peak RSS) and a
//! separate strace pass (system calls of the receiver), because strace slows a busy process.

use crate::daemon::{Daemon, Opts, Spec};
use crate::measure::{bulletins, hwm_mb};
use crate::report::Row;
use crate::strace::{Counts, Strace};
use crate::util::{clk_tck, cpu_ticks, now, thousands, Ctx, R};
use crate::Plan;

/// Body bytes per bulletin before import turns LF into CR LF (stored size is about 2,050).
pub const BODY: usize = 2000;

/// A sender A (partner N0BBB) and a receiver B (raw forwarding port, partner N0AAA).
pub fn pair(o: &Opts, mode: &str) -> R<(Daemon, Daemon)> {
    let b = Daemon::create(
        o,
        &Spec {
            call: "N0BBB",
            users: &[("N0AAA", "fwdpw", "--bbs")],
            forward_listen: true,
            extra: format!(
                "[[partner]]\ncallsign = \"N0AAA\"\nprotocol = \"{mode}\"\nroutes = [\"N0AAA\"]\n"
            ),
            ..Spec::default()
        },
    )?;
    let port = b.fwd.ctx("B has no forwarding port")?;
    let a = Daemon::create(
        o,
        &Spec {
            call: "N0AAA",
            users: &[],
            extra: format!(
                "[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"tcp:127.0.0.1:{port}\"\n\
                 password = \"fwdpw\"\nprotocol = \"{mode}\"\nroutes = [\"N0BBB\", \"WW\"]\n"
            ),
            ..Spec::default()
        },
    )?;
    Ok((a, b))
}

/// Imports `n` bulletins into A and checks they are queued for N0BBB.
pub fn seed(a: &Daemon, n: usize) -> R<()> {
    a.import(&bulletins(n, BODY, n as u64, |i| format!("F{i}_N0ABC")))?;
    let status = a.ctl(&["status"])?;
    let want = format!("N0BBB    {n} queued");
    if !status.contains(&want) {
        return Err(format!(
            "after import A reports {status:?}, wanted {want:?}"
        ));
    }
    Ok(())
}

impl Daemon {
    /// `qtc ctl ARGS`.
    pub fn ctl(&self, args: &[&str]) -> R<String> {
        let mut all = vec!["ctl"];
        all.extend_from_slice(args);
        self.cli(&all, b"")
    }
}

/// Runs `qtc ctl forward N0BBB` on A and checks that `n` were sent.
fn forward_all(a: &Daemon, b: &Daemon, n: usize) -> R<()> {
    let out = a
        .ctl(&["forward", "N0BBB"])
        .map_err(|e| format!("{e}\nA log: {}\nB log: {}", a.log_tail(), b.log_tail()))?;
    if !out.contains(&format!("0 received, {n} sent")) {
        return Err(format!("forward: {}", out.trim()));
    }
    let got = b.count()?;
    if got != n {
        return Err(format!("B holds {got} messages after forwarding {n}"));
    }
    Ok(())
}

struct Timing {
    wall: f64,
    a_cpu: f64,
    b_cpu: f64,
    a_hwm: f64,
    b_hwm: f64,
}

fn timing_pass(o: &Opts, mode: &str, n: usize) -> R<Timing> {
    let (a, b) = pair(o, mode)?;
    seed(&a, n)?;
    let tck = clk_tck();
    let (a0, b0) = (cpu_ticks(a.pid())?, cpu_ticks(b.pid())?);
    let t0 = now();
    forward_all(&a, &b, n)?;
    let wall = t0.elapsed().as_secs_f64();
    let (a1, b1) = (cpu_ticks(a.pid())?, cpu_ticks(b.pid())?);
    Ok(Timing {
        wall,
        a_cpu: (a1 - a0) as f64 / tck,
        b_cpu: (b1 - b0) as f64 / tck,
        a_hwm: hwm_mb(a.pid())?,
        b_hwm: hwm_mb(b.pid())?,
    })
}

/// Receiver and sender counts.
fn strace_pass(o: &Opts, mode: &str, n: usize) -> R<(Counts, Counts)> {
    let (a, b) = pair(o, mode)?;
    seed(&a, n)?;
    let sb = Strace::attach(b.pid(), &b.dir.path().join("strace.fwd"))?;
    let sa = Strace::attach(a.pid(), &a.dir.path().join("strace.fwd"))?;
    forward_all(&a, &b, n)?;
    Ok((sb.stop()?, sa.stop()?))
}

fn per_msg(c: &Counts, n: usize, k: usize) -> String {
    let syncs: u64 = c
        .by_name
        .iter()
        .filter(|(s, _)| s.contains("sync"))
        .map(|(_, k)| k)
        .sum();
    format!(
        "{}; disk syncs {:.2}/msg",
        c.by_name
            .iter()
            .take(k)
            .map(|(s, x)| format!("{s} {:.2}", *x as f64 / n as f64))
            .collect::<Vec<_>>()
            .join(", "),
        syncs as f64 / n as f64
    )
}

fn label(mode: &str) -> &str {
    match mode {
        "fbb" => "FBB ASCII",
        "b1" => "B1",
        "b2" => "B2",
        "b0" => "B0",
        m => m,
    }
}

/// Runs row 2 for every planned mode.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let n = p.fwd_n;
    let ns = p.fwd_strace_n;
    let how_t = "timing pass: `qtc ctl forward N0BBB` wall time; /proc/PID/stat \
                 utime+stime deltas"
        .to_string();
    let how_s = format!(
        "strace pass (fresh pair, {} msgs): `strace -f -c -p` over the whole session",
        thousands(ns as u64)
    );
    notes.push(format!(
        "Row 2 setup: a fresh pair of daemons per pass on loopback TCP; {} bulletins of ~2 KB \
         (2,000 bytes of 60-character lines, CR LF when stored) imported into A with `qtc msg \
         import` and queued for N0BBB; `qtc ctl forward N0BBB` makes A call B's raw forwarding \
         port and returns when the session ends; B must then hold all of them. The strace pass \
         is separate because strace slows a busy process.",
        thousands(n as u64)
    ));
    for mode in &p.modes {
        let m = label(mode);
        eprintln!("  forward {m}: timing pass, {n} messages");
        match timing_pass(o, mode, n) {
            Ok(t) => {
                let rate = n as f64 / t.wall;
                let b_ms = t.b_cpu * 1e3 / n as f64;
                let a_ms = t.a_cpu * 1e3 / n as f64;
                rows.push(Row::check(
                    &format!("2 {m}"),
                    &format!("{m}: {} × 2 KB A→B, wall time", thousands(n as u64)),
                    format!("{:.2} s = {:.0} msg/s", t.wall, rate),
                    ">= 5,000 msg/s (LinFBB B1 1,000 in 52 s; LinBPQ 203 s)",
                    rate >= 5000.0,
                    &how_t,
                ));
                rows.push(Row::check(
                    &format!("2 {m}"),
                    &format!("{m}: receiver B CPU"),
                    format!("{:.3} s per 1,000 msgs = {:.3} ms/msg", b_ms, b_ms),
                    "<= 0.03 ms/msg (LinFBB 0.3-0.8, LinBPQ 1.6-2.2, JNOS ~19.5)",
                    b_ms <= 0.03,
                    &how_t,
                ));
                rows.push(Row::check(
                    &format!("2 {m}"),
                    &format!("{m}: sender A CPU"),
                    format!("{:.3} s per 1,000 msgs = {:.3} ms/msg", a_ms, a_ms),
                    "<= 0.03 ms/msg",
                    a_ms <= 0.03,
                    &how_t,
                ));
                rows.push(Row::info(
                    &format!("2 {m}"),
                    &format!("{m}: peak RSS"),
                    format!("B {:.1} MB, A {:.1} MB", t.b_hwm, t.a_hwm),
                    "",
                    "VmHWM (/proc/PID/status) after the timing pass",
                ));
                notes.push(format!(
                    "Row 2 {m}: B was busy {:.0} % and A {:.0} % of the wall time (CPU / wall): \
                     the rest is waiting (disk sync, the partner, round trips).",
                    t.b_cpu / t.wall * 100.0,
                    t.a_cpu / t.wall * 100.0
                ));
            }
            Err(e) => rows.push(Row::broken(
                &format!("2 {m}"),
                &format!("{m}: timing pass"),
                &e,
                &how_t,
            )),
        }
        eprintln!("  forward {m}: strace pass, {ns} messages");
        match strace_pass(o, mode, ns) {
            Ok((c, ca)) => {
                let per = c.total as f64 / ns as f64;
                rows.push(Row::check(
                    &format!("2 {m}"),
                    &format!("{m}: receiver syscalls per message"),
                    format!(
                        "{per:.1} ({} for {})",
                        thousands(c.total),
                        thousands(ns as u64)
                    ),
                    "<= 10 (LinFBB 231, LinBPQ 306, JNOS 342)",
                    per <= 10.0,
                    &how_s,
                ));
                rows.push(Row::info(
                    &format!("2 {m}"),
                    &format!("{m}: sender syscalls per message"),
                    format!(
                        "{:.1} ({} for {})",
                        ca.total as f64 / ns as f64,
                        thousands(ca.total),
                        thousands(ns as u64)
                    ),
                    "",
                    &how_s,
                ));
                notes.push(format!(
                    "Row 2 {m}, receiver syscalls per message: {}.",
                    per_msg(&c, ns, 10)
                ));
                notes.push(format!(
                    "Row 2 {m}, sender syscalls per message: {}.",
                    per_msg(&ca, ns, 10)
                ));
            }
            Err(e) => rows.push(Row::broken(
                &format!("2 {m}"),
                &format!("{m}: strace pass"),
                &e,
                &how_s,
            )),
        }
    }
    (rows, notes)
}
