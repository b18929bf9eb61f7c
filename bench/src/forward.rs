//! Row 2: N bulletins of about 2 KB forwarded from A to B over loopback TCP, per mode.
//!
//! Two passes on fresh pairs: a timing pass (wall time, CPU of both daemons, peak RSS) and a
//! separate strace pass (system calls of the receiver), because strace slows a busy process.

use crate::daemon::{Daemon, Opts, Spec};
use crate::floor::{cpu_ns, Floor};
use crate::measure::{bulletins, hwm_mb};
use crate::report::Row;
use crate::strace::{Counts, Strace};
use crate::util::{clk_tck, cpu_ticks_with_children, now, thousands, Ctx, R};
use crate::Plan;

/// Body bytes per bulletin before import turns LF into CR LF (stored size is about 2,050).
pub const BODY: usize = 2000;

/// A sender A (partner N0BBB) and a receiver B (raw forwarding port, partner N0AAA).
pub fn pair(o: &Opts, mode: &str) -> R<(Daemon, Daemon)> {
    pair_with(o, mode, "")
}

/// [`pair`], with `more` partner tables for B.
pub fn pair_with(o: &Opts, mode: &str, more: &str) -> R<(Daemon, Daemon)> {
    pair_in(o, mode, more, None)
}

/// [`pair_with`], with B's directory (config, store, log) under `parent`.
pub fn pair_in(
    o: &Opts,
    mode: &str,
    more: &str,
    parent: Option<&std::path::Path>,
) -> R<(Daemon, Daemon)> {
    let b = Daemon::create(
        o,
        &Spec {
            call: "N0BBB",
            users: &[("N0AAA", "fwdpw", "--bbs")],
            forward_listen: true,
            extra: format!(
                "[[partner]]\ncallsign = \"N0AAA\"\nprotocol = \"{mode}\"\nroutes = [\"N0AAA\"]\n{more}"
            ),
            parent,
            ..Spec::default()
        },
    )?;
    let a = sender(o, &b, mode)?;
    Ok((a, b))
}

/// A sender N0AAA whose partner is `to` (reached on its raw forwarding port, password fwdpw),
/// taking its own call and WW in `mode`.
pub fn sender(o: &Opts, to: &Daemon, mode: &str) -> R<Daemon> {
    let port = to.fwd.ctx("the receiver has no forwarding port")?;
    sender_via(o, to, port, mode)
}

/// [`sender`], calling `to` at `port` on loopback (a recording relay in front of it).
pub fn sender_via(o: &Opts, to: &Daemon, port: u16, mode: &str) -> R<Daemon> {
    Daemon::create(
        o,
        &Spec {
            call: "N0AAA",
            users: &[],
            extra: format!(
                "[[partner]]\ncallsign = \"{call}\"\nconnect = \"tcp:127.0.0.1:{port}\"\n\
                 password = \"fwdpw\"\nprotocol = \"{mode}\"\nroutes = [\"{call}\", \"WW\"]\n",
                call = to.call
            ),
            ..Spec::default()
        },
    )
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
pub fn forward_all(a: &Daemon, b: &Daemon, n: usize) -> R<()> {
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

/// B's second partner: every bulletin B receives is queued for it (in the same mode), as on a
/// hub, but it never calls during the measurement.
pub fn onward(mode: &str) -> String {
    format!("[[partner]]\ncallsign = \"N0CCC\"\nprotocol = \"{mode}\"\nroutes = [\"WW\"]\n")
}

/// One pass's figures.
struct Pass {
    rate: f64,
    b_ms: f64,
    a_ms: f64,
    b_busy: f64,
    a_busy: f64,
    b_hwm: f64,
    a_hwm: f64,
    /// B's anonymous memory (its heap, SQLite's page cache) at the end, MB.
    b_anon: f64,
}

fn timing_pass(o: &Opts, mode: &str, n: usize) -> R<Pass> {
    let (a, b) = pair_with(o, mode, &onward(mode))?;
    seed(&a, n)?;
    let tck = clk_tck();
    let (a0, b0) = (cpu_ticks_with_children(a.pid())?, cpu_ns(b.pid())?);
    let t0 = now();
    forward_all(&a, &b, n)?;
    let wall = t0.elapsed().as_secs_f64();
    let (a1, b1) = (cpu_ticks_with_children(a.pid())?, cpu_ns(b.pid())?);
    let (a_cpu, b_cpu) = ((a1 - a0) as f64 / tck, (b1 - b0) / 1e9);
    Ok(Pass {
        rate: n as f64 / wall,
        b_ms: b_cpu * 1e3 / n as f64,
        a_ms: a_cpu * 1e3 / n as f64,
        b_busy: b_cpu / wall * 100.0,
        a_busy: a_cpu / wall * 100.0,
        b_hwm: hwm_mb(b.pid())?,
        b_anon: crate::util::status_kb(b.pid(), "RssAnon")? as f64 / 1024.0,
        a_hwm: hwm_mb(a.pid())?,
    })
}

/// Receiver and sender counts.
fn strace_pass(o: &Opts, mode: &str, n: usize) -> R<(Counts, Counts)> {
    let (a, b) = pair_with(o, mode, &onward(mode))?;
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

/// `median (min-max)` of some runs' figures, with `d` decimals; the median first, as the
/// verdict is taken on it.
pub struct Spread(Vec<f64>);

impl Spread {
    /// The figures, sorted.
    pub fn of(mut v: Vec<f64>) -> Spread {
        v.sort_by(f64::total_cmp);
        Spread(v)
    }

    /// The middle figure (the upper one of an even count).
    pub fn median(&self) -> f64 {
        self.0[self.0.len() / 2]
    }

    /// `median (min, max; runs)`.
    pub fn show(&self, d: usize) -> String {
        let (lo, hi) = (self.0[0], self.0[self.0.len() - 1]);
        format!(
            "{:.d$} (min {lo:.d$}, max {hi:.d$}; {} runs)",
            self.median(),
            self.0.len()
        )
    }
}

/// The load averages (1, 5, 15 min), as /proc/loadavg gives them.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// What one binary's runs of one mode gave.
#[derive(Default)]
struct Runs {
    passes: Vec<Pass>,
    straces: Vec<(Counts, Counts)>,
    errors: Vec<String>,
}

/// Runs row 2 for every planned mode: `p.fwd_runs` timing and strace passes each, for the
/// measured qtc and (`--baseline`) another, interleaved so both see the same load.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let (n, ns, runs) = (p.fwd_n, p.fwd_strace_n, p.fwd_runs);
    let how_t = format!(
        "timing passes ({runs} fresh pairs): `qtc ctl forward N0BBB` wall time; B's CPU: each \
         thread's /proc/PID/task/TID/schedstat (ns) + cutime+cstime; A's: /proc/PID/stat \
         utime+stime+cutime+cstime deltas (a daemon's helper processes count)"
    );
    let how_s = format!(
        "strace passes ({runs} fresh pairs, {} msgs): `strace -f -c -p` over the whole session",
        thousands(ns as u64)
    );
    notes.push(format!(
        "Row 2 setup: a fresh pair of daemons per pass on loopback TCP; {} bulletins of ~2 KB \
         (2,000 bytes of 60-character lines, CR LF when stored) imported into A with `qtc msg \
         import` and queued for N0BBB; `qtc ctl forward N0BBB` makes A call B's raw forwarding \
         port and returns when the session ends; B must then hold all of them. B has a second \
         partner (N0CCC, same mode, routes WW) that every bulletin is queued for, as on a hub; \
         it does not call during the pass. The strace passes are separate because strace slows \
         a busy process. Figures are the median of {runs} passes (min, max).",
        thousands(n as u64)
    ));
    notes.push(format!(
        "Row 2 machine: load average {} at the start.",
        load()
    ));
    let bins = crate::binaries(o, p);
    if let Some(b) = &p.baseline {
        notes.push(format!(
            "Row 2 baseline: `{}` ({}), its passes interleaved with the measured qtc's.",
            b.display(),
            crate::revision(b)
        ));
    }
    for mode in &p.modes {
        let m = label(mode);
        let mut all: Vec<Runs> = bins.iter().map(|_| Runs::default()).collect();
        // Row 2f: the B1 receiver against the C floor, the floor's passes between qtc's.
        let mut floor = (mode == "b1").then(|| Floor::start(o, n));
        for i in 0..runs {
            if let Some(Ok(f)) = &mut floor {
                if let Err(e) = f.pass() {
                    floor = Some(Err(e));
                }
            }
            for ((tag, ob), r) in bins.iter().zip(&mut all) {
                eprintln!(
                    "  forward {m}{tag}: timing pass {}/{runs}, {n} messages",
                    i + 1
                );
                match timing_pass(ob, mode, n) {
                    Ok(t) => r.passes.push(t),
                    Err(e) => r.errors.push(format!("timing: {e}")),
                }
                eprintln!(
                    "  forward {m}{tag}: strace pass {}/{runs}, {ns} messages",
                    i + 1
                );
                match strace_pass(ob, mode, ns) {
                    Ok(c) => r.straces.push(c),
                    Err(e) => r.errors.push(format!("strace: {e}")),
                }
            }
        }
        let b_cpu: Vec<(&str, Vec<f64>)> = bins
            .iter()
            .zip(&all)
            .map(|((tag, _), r)| (*tag, r.passes.iter().map(|t| t.b_ms).collect()))
            .collect();
        for ((tag, _), r) in bins.iter().zip(all) {
            mode_rows(
                &format!("{m}{tag}"),
                n,
                ns,
                r,
                (&how_t, &how_s),
                &mut rows,
                &mut notes,
            );
        }
        match floor {
            Some(Ok(f)) => rows.extend(f.rows(&b_cpu)),
            Some(Err(e)) => rows.push(Row::broken("2f", "B1: the C floor", &e, crate::floor::HOW)),
            None => {}
        }
    }
    notes.push(format!(
        "Row 2 machine: load average {} at the end.",
        load()
    ));
    (rows, notes)
}

/// The rows and notes of one mode for one binary.
fn mode_rows(
    m: &str,
    n: usize,
    ns: usize,
    r: Runs,
    (how_t, how_s): (&str, &str),
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) {
    let id = format!("2 {m}");
    if let Some(e) = r.errors.first() {
        rows.push(Row::broken(&id, &format!("{m}: forwarding"), e, how_t));
        return;
    }
    let col = |f: fn(&Pass) -> f64| Spread::of(r.passes.iter().map(f).collect());
    let rate = col(|t| t.rate);
    let b_ms = col(|t| t.b_ms);
    let a_ms = col(|t| t.a_ms);
    let b_hwm = col(|t| t.b_hwm);
    let a_hwm = col(|t| t.a_hwm);
    rows.push(Row::check(
        &id,
        &format!("{m}: {} × 2 KB A→B, msg/s", thousands(n as u64)),
        format!("{} msg/s", rate.show(0)),
        ">= 5,000 msg/s (LinFBB B1 1,000 in 52 s; LinBPQ 203 s)",
        rate.median() >= 5000.0,
        how_t,
    ));
    rows.push(Row::check(
        &id,
        &format!("{m}: receiver B CPU per message (one partner to queue for)"),
        format!("{} ms/msg", b_ms.show(3)),
        "<= 0.05 ms/msg, goal 0.03 (LinFBB 0.3-0.8, LinBPQ 1.6-2.2 / 5.6 with a partner, JNOS ~19.5)",
        b_ms.median() <= 0.05,
        how_t,
    ));
    rows.push(Row::check(
        &id,
        &format!("{m}: sender A CPU per message"),
        format!("{} ms/msg", a_ms.show(3)),
        "<= 0.03 ms/msg",
        a_ms.median() <= 0.03,
        how_t,
    ));
    rows.push(Row::check(
        &id,
        &format!("{m}: receiver B peak RSS"),
        format!("{} MB (A: {} MB)", b_hwm.show(1), a_hwm.median().round()),
        "<= 8 MB (xfbbd 4-5 MB, LinBPQ 9.9-10.4 MB)",
        b_hwm.median() <= 8.0,
        "VmHWM (/proc/PID/status) after each timing pass",
    ));
    let busy = |f: fn(&Pass) -> f64| Spread::of(r.passes.iter().map(f).collect()).median();
    notes.push(format!(
        "Row 2 {m}: B was busy {:.0} % and A {:.0} % of the wall time (CPU / wall, medians): \
         the rest is waiting (disk sync, the partner, round trips). B's anonymous memory at the \
         end (RssAnon: its heap and SQLite's page cache; the rest of the peak is the binary's \
         code, shared with the page cache): {:.1} MB.",
        busy(|t| t.b_busy),
        busy(|t| t.a_busy),
        busy(|t| t.b_anon)
    ));
    let per = Spread::of(
        r.straces
            .iter()
            .map(|(c, _)| c.total as f64 / ns as f64)
            .collect(),
    );
    let sender = Spread::of(
        r.straces
            .iter()
            .map(|(_, c)| c.total as f64 / ns as f64)
            .collect(),
    );
    rows.push(Row::check(
        &id,
        &format!("{m}: receiver syscalls per message"),
        per.show(1),
        "<= 10 (LinFBB 231, LinBPQ 306, JNOS 342)",
        per.median() <= 10.0,
        how_s,
    ));
    rows.push(Row::info(
        &id,
        &format!("{m}: sender syscalls per message"),
        sender.show(1),
        "",
        how_s,
    ));
    // The breakdown of the pass whose receiver total is the median.
    let mut by_total: Vec<&(Counts, Counts)> = r.straces.iter().collect();
    by_total.sort_by_key(|(c, _)| c.total);
    if let Some((c, ca)) = by_total.get(by_total.len() / 2) {
        notes.push(format!(
            "Row 2 {m}, receiver syscalls per message (median pass): {}.",
            per_msg(c, ns, 10)
        ));
        notes.push(format!(
            "Row 2 {m}, sender syscalls per message (same pass): {}.",
            per_msg(ca, ns, 10)
        ));
    }
}
