//! Row 10: the NET/ROM node. (a) Two nodes that know each other make no system calls between
//! broadcasts. (b) Forwarding over one lossy AX.25 link, plain (`connect = "ax25:..."`) and
//! through a NET/ROM circuit on the same link (`connect = "netrom:..."`): time, throughput,
//! and the frames sent again at each layer.
//!
//! The lossy link is a UDP relay in this driver between two daemons' AXUDP ports, dropping
//! datagrams at random (seeded) in both directions.

use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::daemon::{Daemon, Opts, Spec};
use crate::measure::{bulletins, window};
use crate::report::Row;
use crate::util::{free_udp_port, now, sleep, Ctx, R};
use crate::{or_broken, Plan};

/// Frames the relay drops, per cent.
const LOSS_PCT: u64 = 10;
/// Bytes of each forwarded bulletin's body.
const BODY: usize = 500;

/// Runs row 10.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let idle_how = format!(
        "two nodes on AXUDP (netrom_quality = 192, broadcast = \"5m\"), each past its first \
         broadcast, tables learned; strace -f -c + /proc ticks on one of them over {} s",
        p.idle_secs
    );
    let mut rows = or_broken("10a", "idle NET/ROM node", &idle_how, idle(o, p, &idle_how));
    let n = if p.quick { 20 } else { 50 };
    let lossy_how = format!(
        "{n} bulletins of {BODY} bytes forwarded in B1 by `qtc ctl forward` from A to B through a \
         relay dropping {LOSS_PCT} % of the AXUDP datagrams each way (frack 1 s); first over a \
         plain AX.25 link, then A restarted with connect = \"netrom:BBB\" over the same relay, \
         alternating (3 rounds; --quick: 1); AX.25 figures from /metrics, NET/ROM ones from \
         `qtc ctl nodes --json`"
    );
    rows.extend(or_broken(
        "10b",
        "forwarding over a lossy link",
        &lossy_how,
        lossy(o, p, n, &lossy_how),
    ));
    let notes = vec![format!(
        "Row 10b: NET/ROM carries the same FBB session in circuits (20 bytes of headers per \
         236-byte information frame, its own acknowledgements) over the same AX.25 link, which \
         recovers the lost frames hop by hop; the circuit's own timers (transport_timeout 30 s) \
         only act when the link itself gives up."
    )];
    (rows, notes)
}

/// The `[[port]]` and `[netrom]` of a node on AXUDP with one peer.
fn node_config(listen: u16, peer: &str, peer_port: u16, alias: &str, broadcast: &str) -> String {
    format!(
        "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:{listen}\"\n\
         peers = [{{ callsign = \"{peer}\", address = \"127.0.0.1:{peer_port}\" }}]\n\
         frack = \"1s\"\nnetrom_quality = 192\n\
         [netrom]\nalias = \"{alias}\"\nbroadcast = \"{broadcast}\"\n"
    )
}

fn idle(o: &Opts, p: &Plan, how: &str) -> R<Vec<Row>> {
    let (pa, pb) = (free_udp_port()?, free_udp_port()?);
    let a = Daemon::create(
        o,
        &Spec {
            call: "N0AAA",
            extra: node_config(pa, "N0BBB", pb, "AAA", "5m"),
            ..Spec::default()
        },
    )?;
    let b = Daemon::create(
        o,
        &Spec {
            call: "N0BBB",
            extra: node_config(pb, "N0AAA", pa, "BBB", "5m"),
            ..Spec::default()
        },
    )?;
    // Each node's first broadcast comes within a tenth of the interval (30 s), the next not
    // before 4.5 minutes: the window falls between.
    a.wait_log("NET/ROM NODES sent; next broadcast", 0)?;
    b.wait_log("NET/ROM NODES sent; next broadcast", 0)?;
    a.wait_log("NET/ROM route learned: BBB:N0BBB-1", 0)?;
    b.wait_log("NET/ROM route learned: AAA:N0AAA-1", 0)?;
    sleep(Duration::from_secs(1));
    let w = window(a.pid(), Duration::from_secs(p.idle_secs), a.dir.path())?;
    drop(b);
    Ok(vec![Row::check(
        "10a",
        &format!(
            "idle NET/ROM node with a neighbour, between broadcasts: syscalls in {} s",
            p.idle_secs
        ),
        format!(
            "{}{}, {} CPU ticks",
            w.calls.total,
            if w.calls.total > 0 {
                format!(" ({})", w.calls.top(4))
            } else {
                String::new()
            },
            w.ticks
        ),
        "0 (the broadcast timer is the only wake-up)",
        w.calls.total == 0,
        how,
    )])
}

/// A relay between two UDP ports dropping `LOSS_PCT` % of the datagrams; stops when dropped.
struct Relay {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Relay {
    /// Listens on `near_a` (A's peer address) and `near_b` (B's); forwards A's datagrams to
    /// `b` from `near_b` and B's to `a` from `near_a`.
    fn start(near_a: u16, near_b: u16, a: u16, b: u16) -> R<Relay> {
        let sa = Arc::new(UdpSocket::bind(("127.0.0.1", near_a)).ctx("relay socket")?);
        let sb = Arc::new(UdpSocket::bind(("127.0.0.1", near_b)).ctx("relay socket")?);
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for (from, to, dest, seed) in [(sa.clone(), sb.clone(), b, 1u64), (sb, sa, a, 2)] {
            from.set_read_timeout(Some(Duration::from_millis(100)))
                .ctx("relay timeout")?;
            let stop = stop.clone();
            threads.push(std::thread::spawn(move || {
                let mut rng = crate::util::Text::new(seed);
                let mut buf = [0u8; 4096];
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(n) = from.recv(&mut buf) {
                        if rng.next() % 100 >= LOSS_PCT {
                            let _ = to.send_to(&buf[..n], ("127.0.0.1", dest));
                        }
                    }
                }
            }));
        }
        Ok(Relay { stop, threads })
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// One series of `GET /metrics` on `port` (0 when absent).
fn metric(port: u16, series: &str) -> R<u64> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ctx("connect to the web port")?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .ctx("send GET")?;
    let mut body = String::new();
    s.read_to_string(&mut body).ctx("read /metrics")?;
    Ok(body
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0))
}

/// A value of `qtc ctl nodes --json`'s totals.
fn total(d: &Daemon, key: &str) -> R<u64> {
    let j = d.cli(&["ctl", "nodes", "--json"], b"")?;
    let at = j
        .find(&format!("\"{key}\":"))
        .ctx(format!("no {key} in ctl nodes: {j}"))?;
    let rest = &j[at + key.len() + 3..];
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ctx("a number")
}

/// One pass: `n` bulletins tagged `tag` forwarded A -> B; (seconds, AX.25 I frames sent
/// again on both ends).
fn pass(a: &Daemon, b: &Daemon, n: usize, tag: &str) -> R<(f64, u64)> {
    let series = "qtc_ax25_iframes_resent_total{port=\"udp\"}";
    let (wa, wb) = (a.web.ctx("A's web port")?, b.web.ctx("B's web port")?);
    let before = metric(wa, series)? + metric(wb, series)?;
    a.import(&bulletins(n, BODY, n as u64, |i| format!("{tag}{i}_N0AAA")))?;
    let t0 = now();
    let out = a.cli(&["ctl", "forward", "N0BBB"], b"")?;
    let secs = t0.elapsed().as_secs_f64();
    if !out.contains(&format!("{n} sent")) {
        return Err(format!("forward {tag}: {out}; log: {}", a.log_tail()));
    }
    let after = metric(wa, series)? + metric(wb, series)?;
    Ok((secs, after - before))
}

/// Restarts `a` with `from` replaced by `to` in its config; for a NET/ROM partner, waits until
/// it has learned its neighbour again (from the answer to its poll, or the next broadcast when
/// the relay lost one of them).
fn switch(a: &mut Daemon, from: &str, to: &str) -> R<()> {
    let learned = "NET/ROM route learned: BBB:N0BBB-1";
    let seen = a.log_count(learned);
    a.terminate()?;
    let cfg = a.dir.path().join("qtc.toml");
    let text = std::fs::read_to_string(&cfg).ctx("read qtc.toml")?;
    std::fs::write(&cfg, text.replace(from, to)).ctx("write qtc.toml")?;
    a.start()?;
    if to.starts_with("netrom:") {
        a.wait_log(learned, seen)?;
    }
    Ok(())
}

/// Circuit frames both nodes sent again so far.
fn l4_resent(a: &Daemon, b: &Daemon) -> R<u64> {
    Ok(total(a, "info_resent")? + total(b, "info_resent")?)
}

/// A and B on AXUDP through the relay; A's partner B reached over `ax25:udp:N0BBB` first.
fn lossy_pair(o: &Opts) -> R<(Daemon, Daemon, Relay)> {
    let (pa, pb, ra, rb) = (
        free_udp_port()?,
        free_udp_port()?,
        free_udp_port()?,
        free_udp_port()?,
    );
    let relay = Relay::start(ra, rb, pa, pb)?;
    let web = "[web]\nlisten = \"127.0.0.1:0\"\n";
    let a = Daemon::create(
        o,
        &Spec {
            call: "N0AAA",
            extra: format!(
                "{}[[partner]]\ncallsign = \"N0BBB\"\nconnect = \"ax25:udp:N0BBB\"\n\
                 protocol = \"b1\"\nroutes = [\"WW\"]\n{web}",
                node_config(pa, "N0BBB", ra, "AAA", "20s"),
            ),
            ..Spec::default()
        },
    )?;
    let b = Daemon::create(
        o,
        &Spec {
            call: "N0BBB",
            users: &[("N0AAA", "fwdpw", "--bbs")],
            extra: format!(
                // A's way, over AX.25 (A's node is B's neighbour on the port) and NET/ROM.
                "{}[[partner]]\ncallsign = \"N0AAA\"\nconnect = \"netrom:AAA\"\n\
                 routes = [\"N0AAA\"]\n{web}",
                node_config(pb, "N0AAA", rb, "BBB", "20s")
            ),
            ..Spec::default()
        },
    )?;
    Ok((a, b, relay))
}

fn lossy(o: &Opts, p: &Plan, n: usize, how: &str) -> R<Vec<Row>> {
    let (mut a, b, _relay) = lossy_pair(o)?;
    // B takes A's call for its partner's only from A's node, which it learns from A's NODES.
    b.wait_log("NET/ROM route learned: AAA:N0AAA-1", 0)?;
    let rounds = if p.quick { 1 } else { 3 };
    let (mut ax, mut nr) = (Vec::new(), Vec::new());
    let (mut ax_resent, mut nr_resent, mut l4) = (0, 0, 0);
    for r in 0..rounds {
        if r > 0 {
            switch(&mut a, "netrom:BBB", "ax25:udp:N0BBB")?;
        }
        let (secs, resent) = pass(&a, &b, n, &format!("AX{r}_"))?;
        ax.push(secs);
        ax_resent += resent;
        // The same station, its partner reached through a NET/ROM circuit on the same link.
        switch(&mut a, "ax25:udp:N0BBB", "netrom:BBB")?;
        let before = l4_resent(&a, &b)?;
        let (secs, resent) = pass(&a, &b, n, &format!("NR{r}_"))?;
        nr.push(secs);
        nr_resent += resent;
        l4 += l4_resent(&a, &b)? - before;
    }
    let timeouts = total(&a, "timeouts")?;
    let (ax_secs, nr_secs) = (crate::util::median(ax), crate::util::median(nr));
    let rate = |s: f64| n as f64 / s;
    Ok(vec![Row::info(
        "10b",
        &format!("{n} bulletins forwarded over one link losing {LOSS_PCT} % of its frames"),
        format!(
            "median of {rounds}: AX.25 {ax_secs:.1} s ({:.2} msg/s), NET/ROM {nr_secs:.1} s \
             ({:.2} msg/s, {:.0} % of AX.25's); frames sent again in all: AX.25 links \
             {ax_resent} (plain) and {nr_resent} (under NET/ROM), circuits {l4}, {timeouts} \
             transport timeouts in the last",
            rate(ax_secs),
            rate(nr_secs),
            100.0 * ax_secs / nr_secs
        ),
        "for the record (LinBPQ and JNOS add the same 20 bytes per frame)",
        how,
    )])
}
