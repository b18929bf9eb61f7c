//! Row 1: an idle daemon with its telnet and forwarding listeners and one logged-in, idle
//! telnet session makes no system calls and uses no CPU.

use std::time::Duration;

use crate::daemon::{Daemon, Opts, Spec};
use crate::measure::window;
use crate::report::Row;
use crate::util::{sleep, R};
use crate::{or_broken, Plan};

const HOW: &str = "telnet + forward listeners, a partner, one user logged in after `L`; \
`strace -f -c -p` (all threads) and /proc/PID/stat utime+stime over the window";

/// Runs row 1.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let rows = or_broken("1", "idle daemon", HOW, measure(o, p));
    let notes = vec![
        "Row 1: KISS and AXUDP ports are not in qtc yet; once they are, the idle case gets a \
         KISS-over-TCP TNC and an AXUDP port open as well."
            .to_string(),
    ];
    (rows, notes)
}

fn measure(o: &Opts, p: &Plan) -> R<Vec<Row>> {
    let mut d = Daemon::create(
        o,
        &Spec {
            call: "N0IDL",
            users: &[("N0USR", "pw", ""), ("N0AAA", "fwdpw", "--bbs")],
            forward_listen: true,
            extra: "[[partner]]\ncallsign = \"N0AAA\"\nprotocol = \"b1\"\nroutes = [\"N0AAA\"]\n"
                .into(),
            ..Spec::default()
        },
    )?;
    let mut c = d.login("N0USR", "pw")?;
    c.line("L")?;
    c.expect(&d.prompt())?;
    sleep(Duration::from_secs(1));
    let w = window(d.pid(), Duration::from_secs(p.idle_secs), d.dir.path())?;
    let secs = p.idle_secs;
    let mut rows = vec![
        Row::check(
            "1a",
            &format!("idle, one logged-in telnet session: syscalls in {secs} s"),
            format!(
                "{}{}",
                w.calls.total,
                if w.calls.total > 0 {
                    format!(" ({})", w.calls.top(4))
                } else {
                    String::new()
                }
            ),
            "0 (LinFBB ~390/s, LinBPQ ~537/s, JNOS 0 headless)",
            w.calls.total == 0,
            HOW,
        ),
        Row::check(
            "1b",
            &format!("idle: CPU ticks in {secs} s"),
            format!("{} ticks", w.ticks),
            "0",
            w.ticks == 0,
            HOW,
        ),
    ];
    // While everything is idle anyway: how fast SIGTERM ends it with a session open.
    let took = d.terminate()?;
    rows.push(Row::check(
        "1c",
        "SIGTERM with one idle telnet session: time to exit",
        format!("{:.0} ms", took.as_secs_f64() * 1e3),
        "< 2 s",
        took < Duration::from_secs(2),
        "kill -TERM, then waitpid polled every 2 ms",
    ));
    drop(c);
    Ok(rows)
}
