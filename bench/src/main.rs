//! qtc-bench: measures the release `qtc` binary from outside (its command line, its sockets,
//! /proc and strace) and prints a Markdown table of figures against the project's targets.
//!
//! Run it through `bench/run.sh [--quick]`, which builds both binaries and writes the table to
//! `bench/results/latest.md`. The driver exits non-zero only when a measurement could not be
//! made (a daemon died, an expected answer never came, messages went missing); a slow figure is
//! reported as missed, never as a failure. How every figure is taken: docs/performance.md.
#![forbid(unsafe_code)]
// The driver measures wall time and waits for daemons: it is not a sans-IO core.
#![allow(clippy::disallowed_methods)]

mod air;
mod bigstore;
mod bulletins;
mod client;
mod daemon;
mod device;
mod disk;
mod faults;
mod floor;
mod forward;
mod genstore;
mod idle;
mod jnos;
mod lzhuf;
mod mailbox;
mod measure;
mod monitor;
mod netrom;
mod network;
mod news;
mod pagesize;
mod paste;
mod radio;
mod report;
mod scale;
mod stalled;
mod strace;
mod util;

use std::path::PathBuf;
use std::process::ExitCode;

use daemon::Opts;
use report::{Report, Row};
use util::now;

/// Sizes and durations of one run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// `--quick`.
    pub quick: bool,
    /// Idle measurement window, seconds.
    pub idle_secs: u64,
    /// Bulletins per forwarding timing pass.
    pub fwd_n: usize,
    /// Bulletins per forwarding strace pass.
    pub fwd_strace_n: usize,
    /// Timing and strace passes per forwarding mode (min/median/max are reported).
    pub fwd_runs: usize,
    /// `--baseline PATH`: the forwarding rows measure this qtc too, its runs interleaved with
    /// the measured one's, so a before/after comparison shares the machine's load.
    pub baseline: Option<PathBuf>,
    /// Forwarding modes to run.
    pub modes: Vec<String>,
    /// Fault case window, seconds.
    pub fault_secs: u64,
    /// Bulletins queued for the SIGTERM-during-forwarding case.
    pub sigterm_n: usize,
    /// Concurrent idle telnet sessions.
    pub sessions: usize,
    /// Of those, how many send a message at once.
    pub senders: usize,
    /// Messages in the large store.
    pub store_n: usize,
    /// Scale measurement window, seconds.
    pub scale_secs: u64,
    /// 64 KB pastes (the median is reported).
    pub paste_small_runs: usize,
    /// 1 MB pastes.
    pub paste_large_runs: usize,
    /// Messages in the generated store of row 8 (`bigstore`).
    pub big_n: usize,
    /// Bulletins a partner forwards into it, unloaded and loaded.
    pub big_fwd_n: usize,
    /// Loads left out of row 8e's loaded scenario (`--without`), to see what each costs.
    pub big_without: Vec<String>,
    /// Row 11's passes (`--air`): `b1`, `mbl`, `b1-lossy`, `mbl-lossy`, and on request
    /// `jnos-qtc`, `jnos-jnos`, `qtc-jnos`, `b1-300`, `b1-300-modem`.
    pub air: Vec<String>,
    /// Row 13's network sizes (`--nodes`).
    pub network: Vec<usize>,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                quick,
                idle_secs: 5,
                fwd_n: 1_000,
                fwd_strace_n: 1_000,
                fwd_runs: 3,
                baseline: None,
                modes: vec!["fbb".into(), "b1".into(), "b2".into()],
                fault_secs: 3,
                sigterm_n: 1_000,
                sessions: 500,
                senders: 200,
                store_n: 100_000,
                scale_secs: 3,
                paste_small_runs: 5,
                paste_large_runs: 1,
                big_n: 20_000,
                big_fwd_n: 300,
                big_without: Vec::new(),
                air: air::PASSES.iter().map(|s| s.to_string()).collect(),
                network: vec![8],
            }
        } else {
            Plan {
                quick,
                idle_secs: 30,
                fwd_n: 10_000,
                fwd_strace_n: 2_000,
                fwd_runs: 3,
                baseline: None,
                modes: vec!["fbb".into(), "b1".into(), "b2".into()],
                fault_secs: 10,
                sigterm_n: 5_000,
                sessions: 1_000,
                senders: 200,
                store_n: 1_000_000,
                scale_secs: 10,
                paste_small_runs: 9,
                paste_large_runs: 3,
                big_n: 1_000_000,
                big_fwd_n: 1_000,
                big_without: Vec::new(),
                air: air::PASSES.iter().map(|s| s.to_string()).collect(),
                network: vec![8, 16],
            }
        }
    }
}

const ROWS: &[&str] = &[
    "idle", "forward", "telnet", "faults", "scale", "lzhuf", "radio", "bigstore", "news",
    "stalled", "netrom", "air", "disk", "device", "pagesize", "mailbox", "loaded", "network",
];

const USAGE: &str = "usage: qtc-bench [--quick] [--qtc PATH] [--out FILE] [--only ROW,...] \
[--modes fbb,b1,b2] [--durability full|normal] [--log-level LEVEL] [--sessions N] [--store N] [--fwd N]
       [--fwd-runs N] [--big N] [--without ll1,logins,housekeeping,metrics (loads left out of row 8e)]
       [--baseline PATH (another qtc binary: forwarding, 1 M store and stalled rows for both)]
       [--air b1,mbl,b1-lossy,mbl-lossy (row 11's passes; also jnos-qtc,jnos-jnos,qtc-jnos,b1-300,b1-300-modem)] [--nodes 8,16,32 (row 13's networks)]
rows: idle, forward, telnet, faults, scale, lzhuf, radio, bigstore, news, stalled, netrom, air, disk,
      device (12c: bytes to an ext4 loop device; root), pagesize (8g alone), mailbox (8f alone), loaded (8e alone),
      network";

struct Args {
    plan: Plan,
    opts: Opts,
    out: Option<PathBuf>,
    only: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let quick = argv.iter().any(|a| a == "--quick");
    let mut plan = Plan::new(quick);
    let mut opts = Opts {
        bin: PathBuf::from("target/release/qtc"),
        durability: "full".into(),
        log_level: "info".into(),
    };
    let mut out = None;
    // `pagesize`, `mailbox` and `loaded` are part of `bigstore`; on their own only when asked for.
    let mut only: Vec<String> = ROWS
        .iter()
        .filter(|r| !matches!(**r, "pagesize" | "mailbox" | "loaded"))
        .map(|s| s.to_string())
        .collect();
    let mut it = argv.into_iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value\n{USAGE}"));
        let num = |v: String| {
            v.replace('_', "")
                .parse::<usize>()
                .map_err(|e| format!("{v}: {e}"))
        };
        match a.as_str() {
            "--quick" => {}
            "--qtc" => opts.bin = PathBuf::from(val()?),
            "--out" => out = Some(PathBuf::from(val()?)),
            "--only" => {
                only = val()?.split(',').map(str::to_string).collect();
                if let Some(bad) = only.iter().find(|r| !ROWS.contains(&r.as_str())) {
                    return Err(format!("unknown row {bad}\n{USAGE}"));
                }
            }
            "--modes" => plan.modes = val()?.split(',').map(str::to_ascii_lowercase).collect(),
            "--durability" => opts.durability = val()?,
            "--log-level" => opts.log_level = val()?,
            "--sessions" => plan.sessions = num(val()?)?,
            "--store" => plan.store_n = num(val()?)?,
            "--big" => plan.big_n = num(val()?)?.max(1000),
            "--fwd" => {
                plan.fwd_n = num(val()?)?;
                plan.fwd_strace_n = plan.fwd_strace_n.min(plan.fwd_n);
            }
            "--fwd-runs" => plan.fwd_runs = num(val()?)?.max(1),
            "--air" => {
                plan.air = val()?.split(',').map(str::to_string).collect();
                if let Some(bad) = plan.air.iter().find(|a| !air::known(a)) {
                    return Err(format!("unknown air pass {bad}\n{USAGE}"));
                }
            }
            "--nodes" => {
                plan.network = val()?
                    .split(',')
                    .map(|v| num(v.to_string()))
                    .collect::<Result<_, _>>()?;
                if let Some(bad) = plan.network.iter().find(|&&n| !(4..=676).contains(&n)) {
                    return Err(format!("a network of {bad} nodes: 4 to 676\n{USAGE}"));
                }
            }
            "--without" => {
                plan.big_without = val()?.split(',').map(str::to_string).collect();
                if let Some(bad) = plan
                    .big_without
                    .iter()
                    .find(|l| !bigstore::LOADS.contains(&l.as_str()))
                {
                    return Err(format!("unknown load {bad}\n{USAGE}"));
                }
            }
            "--baseline" => {
                let b = PathBuf::from(val()?);
                plan.baseline = Some(
                    b.canonicalize()
                        .map_err(|e| format!("{}: {e}", b.display()))?,
                );
            }
            "-h" | "--help" => return Err(USAGE.into()),
            _ => return Err(format!("unknown argument {a}\n{USAGE}")),
        }
    }
    plan.senders = plan.senders.min(plan.sessions);
    if !opts.bin.exists() {
        return Err(format!(
            "no qtc binary at {} (build it: cargo build --release -p qtc)",
            opts.bin.display()
        ));
    }
    opts.bin = opts.bin.canonicalize().map_err(|e| e.to_string())?;
    Ok(Args {
        plan,
        opts,
        out,
        only,
    })
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{cores} cores ({cpu}), Linux {}", kernel.trim())
}

/// The daemons a row measures: the qtc under test (tag "") and, with `--baseline`, the other
/// binary (tag " (baseline)"), otherwise with the same options.
pub fn binaries(o: &Opts, p: &Plan) -> Vec<(&'static str, Opts)> {
    let mut bins = vec![("", o.clone())];
    if let Some(b) = &p.baseline {
        let mut ob = o.clone();
        ob.bin = b.clone();
        bins.push((" (baseline)", ob));
    }
    bins
}

/// `git describe` of the checkout a qtc binary was built in (its target/release/qtc path).
/// A binary copied elsewhere (a `--baseline` in /tmp) has no checkout to ask: without this
/// check, git asked the current directory's and labelled the copy with this checkout's commit.
pub fn revision(bin: &std::path::Path) -> String {
    let root = bin.ancestors().nth(3).map(PathBuf::from);
    let Some(root) = root.filter(|r| r.join(".git").exists()) else {
        return "not in a checkout's target/: revision unknown".into();
    };
    let rev = std::process::Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["describe", "--always", "--dirty"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if rev.is_empty() {
        "unknown revision".into()
    } else {
        rev
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if !strace::available() {
        eprintln!(
            "qtc-bench: strace is needed and must be allowed to attach (apt-get install strace)"
        );
        return ExitCode::from(2);
    }
    let plan = &args.plan;
    let o = &args.opts;
    let mut report = Report::default();
    let t0 = now();
    for row in &args.only {
        eprintln!("qtc-bench: {row} ...");
        let started = now();
        let (rows, notes) = match row.as_str() {
            "idle" => idle::run(o, plan),
            "forward" => forward::run(o, plan),
            "telnet" => paste::run(o, plan),
            "faults" => faults::run(o, plan),
            "scale" => scale::run(o, plan),
            "lzhuf" => lzhuf::run(o, plan),
            "radio" => radio::run(o, plan),
            "bigstore" => bigstore::run(o, plan),
            "news" => news::run(o, plan),
            "stalled" => stalled::run(o, plan),
            "netrom" => netrom::run(o, plan),
            "air" => air::run(o, plan),
            "disk" => disk::run(o, plan),
            "device" => device::run_rows(o, plan),
            "pagesize" => pagesize::run(o, plan),
            "mailbox" => mailbox::run(o, plan),
            "loaded" => bigstore::run_loaded(o, plan),
            "network" => network::run(o, plan),
            _ => unreachable!("rows are checked when parsed"),
        };
        for r in &rows {
            eprintln!("  {} {}: {} ({:?})", r.id, r.what, r.figure, r.verdict);
        }
        report.rows.extend(rows);
        report.notes.extend(notes);
        report.notes.push(format!(
            "Row group `{row}` took {:.0} s.",
            started.elapsed().as_secs_f64()
        ));
    }
    let title = format!(
        "## qtc benchmarks ({}{})\n\nqtc {} (`{}`), {}; durability = \"{}\", log level \"{}\"; whole run {:.0} s.",
        if plan.quick { "--quick" } else { "full run" },
        if args.only.len() < ROWS.len() - 3 {
            format!(", rows: {}", args.only.join(", "))
        } else {
            String::new()
        },
        revision(&o.bin),
        o.bin.display(),
        machine(),
        o.durability,
        o.log_level,
        t0.elapsed().as_secs_f64(),
    );
    let md = report.markdown(&title);
    print!("{md}");
    if let Some(out) = &args.out {
        if let Some(dir) = out.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Err(e) = std::fs::write(out, &md) {
            eprintln!("cannot write {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
    }
    if report.broken() {
        eprintln!("qtc-bench: some measurements are BROKEN (see the table)");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Turns a row group's failure into one broken row.
pub fn or_broken(id: &str, what: &str, how: &str, r: util::R<Vec<Row>>) -> Vec<Row> {
    match r {
        Ok(rows) => rows,
        Err(e) => vec![Row::broken(id, what, &e, how)],
    }
}
