//! Row 7: the radio side. An idle connected AX.25 link costs only its T3 keep-alive; a KISS pty
//! peer that stops reading or hangs up must not make qtc spin (JNOS: 97-100 % CPU); a 9600-baud
//! stream of UI frames costs a few system calls per frame.
//!
//! The pty cases run `scripts/radio-faults.sh` (a Python KISS/AX.25 peer, strace and /proc
//! ticks) and read its report lines; the idle link is two processes here: `qtc run` with an
//! AXUDP port and `qtc call` connected to it.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::daemon::{Daemon, Opts, Spec};
use crate::measure::window;
use crate::report::Row;
use crate::util::{free_udp_port, sleep, Ctx, R};
use crate::Plan;

/// T3 of the idle-link case: short, so that a window sees several keep-alive polls.
const T3_SECS: u64 = 5;

const FAULT_TARGET: &str = "< 0.5 % CPU, < 10 syscalls/s (JNOS 97-100 % CPU)";

/// Runs row 7.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let how = format!(
        "`qtc call` over AXUDP to the daemon (t3 = {T3_SECS} s), connected and silent; strace -f \
         -c + /proc ticks on the daemon over {} s",
        p.idle_secs
    );
    match idle_link(o, p, &how) {
        Ok(r) => rows.push(r),
        Err(e) => rows.push(Row::broken("7a", "idle AX.25 link", &e, &how)),
    }
    match pty_cases(o, p) {
        Ok((r, n)) => {
            rows.extend(r);
            notes.extend(n);
        }
        Err(e) => rows.push(Row::broken(
            "7b",
            "KISS pty cases",
            &e,
            "scripts/radio-faults.sh",
        )),
    }
    (rows, notes)
}

/// Kills the `qtc call` client when dropped.
struct Caller(Child);

impl Drop for Caller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn idle_link(o: &Opts, p: &Plan, how: &str) -> R<Row> {
    let (port, caller_port) = (free_udp_port()?, free_udp_port()?);
    let d = Daemon::create(
        o,
        &Spec {
            call: "N0RAD",
            users: &[("N0ZZZ", "pw", "")],
            extra: format!(
                "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:{port}\"\n\
                 peers = [{{ callsign = \"N0ZZZ\", address = \"127.0.0.1:{caller_port}\" }}]\n\
                 t3 = \"{T3_SECS}s\"\n"
            ),
            ..Spec::default()
        },
    )?;
    let mut child = Command::new(&o.bin)
        .args([
            "call",
            "--port",
            &format!("axudp:127.0.0.1:{caller_port}:127.0.0.1:{port}"),
            "--mycall",
            "N0ZZZ",
            "N0RAD",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ctx("qtc call")?;
    let out = child.stdout.take().ctx("qtc call stdout")?;
    let caller = Caller(child);
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let prompt = d.prompt();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .map_err(|_| format!("no {prompt} over the AX.25 link; log: {}", d.log_tail()))?;
        if line.contains(&prompt) {
            break;
        }
    }
    // Settle: the BBS's greeting is acknowledged, then nothing moves but T3.
    sleep(Duration::from_secs(1));
    let w = window(d.pid(), Duration::from_secs(p.idle_secs), d.dir.path())?;
    drop(caller);
    let polls = (w.secs / T3_SECS as f64).floor().max(1.0);
    let per_poll = w.calls.total as f64 / polls;
    Ok(Row::check(
        "7a",
        "idle connected AX.25 link (T3 running): daemon syscalls",
        format!(
            "{:.2} syscalls/s ({} in {:.0} s: {:.1} per T3 poll of {T3_SECS} s; {}), {} ticks",
            w.calls_per_s(),
            w.calls.total,
            w.secs,
            per_poll,
            if w.calls.total > 0 {
                w.calls.top(4)
            } else {
                "none".into()
            },
            w.ticks
        ),
        "only T3's keep-alive: a poll and its answer, <= 10 syscalls per T3 (LinBPQ ~537/s idle)",
        per_poll <= 10.0,
        how,
    ))
}

/// One line of radio-faults.sh: `radio-faults: CASE: N syscalls in S s (strace -f -c), T CPU
/// ticks of H/s`.
fn fault_figures(line: &str) -> Option<(u64, f64, u64, f64)> {
    let (_, rest) = line.split_once(": ")?.1.split_once(": ")?;
    let mut words = rest.split_whitespace();
    let calls = words.next()?.parse().ok()?;
    let secs = words.nth(2)?.parse().ok()?;
    let ticks = rest
        .split("), ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let hz = rest
        .rsplit(" of ")
        .next()?
        .trim_end_matches("/s")
        .parse()
        .ok()?;
    Some((calls, secs, ticks, hz))
}

fn pty_cases(o: &Opts, p: &Plan) -> R<(Vec<Row>, Vec<String>)> {
    let script = o
        .bin
        .ancestors()
        .nth(3)
        .map(|root| root.join("scripts/radio-faults.sh"))
        .filter(|s| s.exists())
        .ctx("scripts/radio-faults.sh not found beside the qtc binary's tree")?;
    let out = run_script(&script, &o.bin, p.fault_secs)?;
    let lines: Vec<&str> = out.lines().collect();
    let find = |key: &str| {
        lines
            .iter()
            .find(|l| l.contains(key))
            .copied()
            .ctx(format!("radio-faults.sh printed no {key:?} line:\n{out}"))
    };
    let how = |what: &str| {
        format!(
            "scripts/radio-faults.sh ({what}); strace -f -c + /proc ticks on qtc, {} s",
            p.fault_secs
        )
    };
    let mut rows = Vec::new();
    for (id, key, what, how_what) in [
        (
            "7b",
            "(a) pty peer stops reading",
            "KISS pty peer stops reading while qtc has data to send",
            "a Python peer connects 16 stations, asks each for text, keeps acknowledging blindly, never reads",
        ),
        (
            "7c",
            "(b) pty peer hangs up",
            "KISS pty peer hangs up",
            "qtc has the pty open, the peer closes its side; qtc logs it and retries with backoff",
        ),
    ] {
        let line = find(key)?;
        let (calls, secs, ticks, hz) =
            fault_figures(line).ctx(format!("cannot read {line:?}"))?;
        let cpu = ticks as f64 / hz / secs * 100.0;
        let per_s = calls as f64 / secs;
        rows.push(Row::check(
            id,
            what,
            format!("{cpu:.2} % CPU ({ticks} ticks), {per_s:.1} syscalls/s ({calls} in {secs:.0} s)"),
            FAULT_TARGET,
            cpu < 0.5 && per_s < 10.0,
            &how(how_what),
        ));
    }
    let per_frame = find("9600 baud stream, ")?;
    let cpu = find("9600 baud stream: qtc CPU")?;
    rows.push(Row::info(
        "7d",
        "KISS pty, a continuous 9600-baud stream of 256-byte UI frames",
        format!(
            "{}; {}",
            per_frame.trim_start_matches("radio-faults: "),
            cpu.trim_start_matches("radio-faults: 9600 baud stream: ")
        ),
        "a few syscalls per frame, no spinning",
        &how("the peer writes KISS frames paced at the line rate"),
    ));
    let notes = lines
        .iter()
        .filter(|l| {
            l.contains("(a) flooded")
                || l.contains("(b) qtc logged")
                || l.contains("links accepted")
        })
        .map(|l| format!("Row 7: {}", l.trim_start_matches("radio-faults: ")))
        .collect();
    Ok((rows, notes))
}

fn run_script(script: &Path, bin: &Path, secs: u64) -> R<String> {
    let out = Command::new("bash")
        .arg(script)
        .arg("--binary")
        .arg(bin)
        .args([
            "--seconds",
            &secs.to_string(),
            "stalled",
            "hangup",
            "load9600",
        ])
        .stdin(Stdio::null())
        .output()
        .ctx("scripts/radio-faults.sh")?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() && !text.contains("radio-faults:") {
        return Err(format!(
            "radio-faults.sh failed: {}{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::fault_figures;

    #[test]
    fn reads_the_script_line() {
        let l = "radio-faults: (a) pty peer stops reading: 12 syscalls in 10 s (strace -f -c), 0 CPU ticks of 100/s";
        assert_eq!(fault_figures(l), Some((12, 10.0, 0, 100.0)));
    }
}
