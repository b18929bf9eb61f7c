//! Row 4: fault cases. A peer that stops reading or goes silent, a closed or null standard
//! input, and SIGTERM in the middle of a forwarding session must not make qtc spin or lose
//! messages.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::client::Client;
use crate::daemon::{Daemon, Opts, Spec, Stdin};
use crate::forward::{pair, seed};
use crate::measure::{bulletins, window, Window};
use crate::report::Row;
use crate::util::{now, sleep, thousands, wait_for, Ctx, R};
use crate::Plan;

const TARGET: &str = "< 0.5 % CPU, < 10 syscalls/s (JNOS 97-100 % CPU on a stalled pty peer)";

fn ok(w: &Window) -> bool {
    w.cpu_pct() < 0.5 && w.calls_per_s() < 10.0
}

fn figure(w: &Window) -> String {
    let mut s = w.summary();
    if w.calls.total > 0 {
        s.push_str(&format!("; {}", w.calls.top(3)));
    }
    s
}

/// Runs row 4.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let secs = p.fault_secs;

    let how = format!(
        "`LL 1000` ×100 in one write, never read (1,000 msgs); strace -f -c + /proc ticks, \
         {secs} s"
    );
    match stalled_reader(o, p) {
        Ok((w, extra, note)) => {
            rows.push(Row::check(
                "4a",
                "telnet client stops reading during a long listing",
                format!("{}{extra}", figure(&w)),
                TARGET,
                ok(&w),
                &how,
            ));
            notes.push(note);
        }
        Err(e) => rows.push(Row::broken("4a", "stalled telnet reader", &e, &how)),
    }

    let how = format!(
        "login on the forwarding port, SID, half a proposal line, silence; strace -f -c + \
         /proc ticks, {secs} s"
    );
    match silent_partner(o, p) {
        Ok(w) => rows.push(Row::check(
            "4b",
            "TCP partner silent mid-proposal",
            figure(&w),
            TARGET,
            ok(&w),
            &how,
        )),
        Err(e) => rows.push(Row::broken("4b", "silent partner", &e, &how)),
    }

    for (stdin, label) in [
        (Stdin::Null, "/dev/null"),
        (Stdin::Closed, "closed (no fd 0)"),
    ] {
        let how = format!(
            "`qtc run` with stdin {label}, a user logged in; strace -f -c + /proc ticks, {secs} s"
        );
        match idle_with_stdin(o, p, stdin) {
            Ok(w) => rows.push(Row::check(
                "4c",
                &format!("standard input {label}"),
                figure(&w),
                TARGET,
                ok(&w),
                &how,
            )),
            Err(e) => rows.push(Row::broken("4c", &format!("stdin {label}"), &e, &how)),
        }
    }

    let how = format!(
        "B1, {} queued; SIGTERM to B at ≥10 % stored; waitpid polled every 2 ms; counts via \
         `qtc msg list`; B restarted and forwarded to again",
        thousands(p.sigterm_n as u64)
    );
    match sigterm_forwarding(o, p) {
        Ok((took, before, after, total)) => rows.push(Row::check(
            "4d",
            "SIGTERM to the receiver during a forwarding session",
            format!(
                "exit in {:.0} ms; B held {before} before the signal, {after} after exit, \
                 {total} of {} after the second session (no loss, no duplicate)",
                took.as_secs_f64() * 1e3,
                p.sigterm_n
            ),
            "exit < 2 s, messages intact",
            took < Duration::from_secs(2),
            &how,
        )),
        Err(e) => rows.push(Row::broken("4d", "SIGTERM during forwarding", &e, &how)),
    }
    notes.push(
        "Row 4a: the listing is sent 100 times so that it is larger than the loopback socket \
         buffers and qtc really is blocked writing; \"backed up\" is what the client read after \
         the window. Row 4d: B's count is taken before SIGTERM and after exit (nothing \
         committed may vanish); then B restarts, A calls again and B must hold exactly all \
         messages (nothing lost, nothing twice)."
            .into(),
    );
    notes.push(
        "Row 4: pty peers (a stalled or hung-up KISS pty) come with the radio side; the JNOS \
         figure above is for that case."
            .into(),
    );
    (rows, notes)
}

fn stalled_reader(o: &Opts, p: &Plan) -> R<(Window, String, String)> {
    let d = Daemon::create(
        o,
        &Spec {
            call: "N0STL",
            users: &[("N0USR", "pw", ""), ("N0OTH", "pw", "")],
            ..Spec::default()
        },
    )?;
    d.import(&bulletins(1000, 100, 7, |i| format!("L{i}_N0ABC")))?;
    let mut c = d.login("N0USR", "pw")?;
    let cmds = "LL 1000\r\n".repeat(100);
    c.raw(cmds.as_bytes())?;
    sleep(Duration::from_secs(1));
    let w = window(d.pid(), Duration::from_secs(p.fault_secs), d.dir.path())?;
    // Does everyone else still get served while one writer is stuck?
    let t0 = now();
    let mut other = d.login("N0OTH", "pw")?;
    other.line("LL 5")?;
    other.expect(&d.prompt())?;
    let other_ms = t0.elapsed().as_secs_f64() * 1e3;
    let pending = c.drain(Duration::from_secs(60));
    let extra = format!("; {:.1} MB were backed up", pending as f64 / 1e6);
    let note = format!(
        "Row 4a: while the first user's output was stalled, a second user logged in and ran \
         `LL 5` in {other_ms:.0} ms (login includes one argon2 check)."
    );
    Ok((w, extra, note))
}

fn silent_partner(o: &Opts, p: &Plan) -> R<Window> {
    let d = Daemon::create(
        o,
        &Spec {
            call: "N0SIL",
            users: &[("N0AAA", "fwdpw", "--bbs")],
            forward_listen: true,
            extra: "[[partner]]\ncallsign = \"N0AAA\"\nprotocol = \"b1\"\nroutes = [\"N0AAA\"]\n"
                .into(),
            ..Spec::default()
        },
    )?;
    let mut c = Client::connect(d.fwd.ctx("no forwarding port")?)?;
    c.expect("Callsign:")?;
    c.line("N0AAA")?;
    c.expect("Password:")?;
    c.line("fwdpw")?;
    c.expect("$]")?;
    c.expect(">")?;
    c.raw(b"[FBB-7.0.10-B1FHM$]\rFA B N0ABC WW ALL 123_N0")?;
    sleep(Duration::from_secs(1));
    let w = window(d.pid(), Duration::from_secs(p.fault_secs), d.dir.path())?;
    let status = d.ctl(&["status"])?;
    if !status.contains("N0AAA") || status.contains("  none") {
        return Err(format!("the session is gone: {status:?}"));
    }
    drop(c);
    Ok(w)
}

fn idle_with_stdin(o: &Opts, p: &Plan, stdin: Stdin) -> R<Window> {
    let d = Daemon::create(
        o,
        &Spec {
            call: "N0STD",
            stdin,
            ..Spec::default()
        },
    )?;
    let mut c = d.login("N0USR", "pw")?;
    c.line("L")?;
    c.expect(&d.prompt())?;
    sleep(Duration::from_secs(1));
    let w = window(d.pid(), Duration::from_secs(p.fault_secs), d.dir.path())?;
    // Still serving afterwards.
    c.line("V")?;
    c.expect(&d.prompt())?;
    Ok(w)
}

fn sigterm_forwarding(o: &Opts, p: &Plan) -> R<(Duration, usize, usize, usize)> {
    let n = p.sigterm_n;
    let (mut a, mut b) = pair(o, "b1")?;
    seed(&a, n)?;
    let mut fwd = Command::new(&o.bin)
        .arg("-c")
        .arg(a.dir.path().join("qtc.toml"))
        .args(["ctl", "forward", "N0BBB"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ctx("qtc ctl forward")?;
    let tenth = (n / 10).max(1);
    let before = wait_for(Duration::from_secs(120), Duration::from_millis(20), || {
        b.count().ok().filter(|&k| k >= tenth)
    })
    .ctx(format!("B never reached {tenth} messages"));
    let before = match before {
        Ok(v) => v,
        Err(e) => {
            let _ = fwd.kill();
            let _ = fwd.wait();
            return Err(e);
        }
    };
    let took = b.terminate()?;
    let _ = fwd.wait();
    let after = b.count()?;
    if after < before {
        return Err(format!("B held {before} before SIGTERM but {after} after"));
    }
    b.start()?;
    // The new B listens on a new port: point A at it by restarting A with the new address.
    let out = retarget_and_forward(&mut a, &b)?;
    let total = b.count()?;
    if total != n {
        return Err(format!(
            "B holds {total} of {n} after the second session ({})",
            out.trim()
        ));
    }
    Ok((took, before, after, total))
}

/// Rewrites A's partner address to B's current forwarding port, restarts A, forwards again.
fn retarget_and_forward(a: &mut Daemon, b: &Daemon) -> R<String> {
    let port = b.fwd.ctx("B has no forwarding port")?;
    let cfg_path = a.dir.path().join("qtc.toml");
    let cfg = std::fs::read_to_string(&cfg_path).ctx("A config")?;
    let start = cfg.find("tcp:127.0.0.1:").ctx("A config has no connect")?;
    let end = start + cfg[start..].find('"').ctx("bad connect")?;
    let new = format!("{}tcp:127.0.0.1:{port}{}", &cfg[..start], &cfg[end..]);
    std::fs::write(&cfg_path, new).ctx("write A config")?;
    a.terminate()?;
    a.start()?;
    a.ctl(&["forward", "N0BBB"])
}
