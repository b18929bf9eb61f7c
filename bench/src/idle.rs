//! Row 1: an idle daemon with its telnet and forwarding listeners, three radio ports (KISS over
//! TCP, AXUDP, a KISS pty) and one logged-in, idle telnet session makes no system calls and
//! uses no CPU.

use std::net::TcpListener;
use std::time::Duration;

use crate::daemon::{Daemon, Opts, Spec};
use crate::measure::window;
use crate::report::Row;
use crate::util::{free_udp_port, sleep, wait_for, Ctx, R};
use crate::{or_broken, Plan};

const HOW: &str = "telnet + forward listeners, a partner, radio ports (kiss-tcp to a TNC the \
driver plays, axudp, kiss-pty made by qtc), one user logged in after `L`; `strace -f -c -p` (all \
threads) and /proc/PID/stat utime+stime over the window";

/// Runs row 1.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let rows = or_broken("1", "idle daemon", HOW, measure(o, p));
    let notes = vec![
        "Row 1: the radio ports are open and idle: the kiss-tcp port is connected to a TCP \
         listener the driver holds (a TNC that says nothing), the axudp port has a peer, and \
         nobody has opened the kiss-pty port's other side."
            .to_string(),
    ];
    (rows, notes)
}

fn measure(o: &Opts, p: &Plan) -> R<Vec<Row>> {
    // A KISS TNC on TCP that never says anything: qtc connects to it.
    let tnc = TcpListener::bind("127.0.0.1:0").ctx("TNC listener")?;
    let tnc_port = tnc.local_addr().ctx("TNC port")?.port();
    let (udp, peer) = (free_udp_port()?, free_udp_port()?);
    let pty_link = std::env::temp_dir().join(format!("qtc-bench-kiss-{}", std::process::id()));
    let pty_link = pty_link.display();
    let radio = format!(
        "[[port]]\nname = \"tnc\"\nkind = \"kiss-tcp\"\naddress = \"127.0.0.1:{tnc_port}\"\n\
         [[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:{udp}\"\n\
         peers = [{{ callsign = \"N0PEE\", address = \"127.0.0.1:{peer}\" }}]\n\
         [[port]]\nname = \"pty\"\nkind = \"kiss-pty\"\ncreate = \"{pty_link}\"\n"
    );
    let mut d = Daemon::create(
        o,
        &Spec {
            call: "N0IDL",
            users: &[("N0USR", "pw", ""), ("N0AAA", "fwdpw", "--bbs")],
            forward_listen: true,
            extra: format!(
                "[[partner]]\ncallsign = \"N0AAA\"\nprotocol = \"b1\"\nroutes = [\"N0AAA\"]\n{radio}"
            ),
            ..Spec::default()
        },
    )?;
    tnc.set_nonblocking(true).ctx("TNC listener")?;
    let _tnc_conn = wait_for(Duration::from_secs(10), Duration::from_millis(20), || {
        tnc.accept().ok()
    })
    .ctx("qtc did not connect to the KISS TCP TNC")?;
    let log = d.log_path();
    wait_for(Duration::from_secs(10), Duration::from_millis(20), || {
        let t = std::fs::read_to_string(&log).unwrap_or_default();
        (t.matches("device open").count() >= 3).then_some(())
    })
    .ctx("the three radio ports did not all report \"device open\"")?;
    let mut c = d.login("N0USR", "pw")?;
    c.line("L")?;
    c.expect(&d.prompt())?;
    sleep(Duration::from_secs(1));
    let w = window(d.pid(), Duration::from_secs(p.idle_secs), d.dir.path())?;
    let secs = p.idle_secs;
    let mut rows = vec![
        Row::check(
            "1a",
            &format!("idle, radio ports open, one logged-in telnet session: syscalls in {secs} s"),
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
