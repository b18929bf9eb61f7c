//! The real JNOS 2.0o.2 as an IP neighbour over AX.25 (built from tests/peers/jnos, run in a
//! network namespace of its own), each side set up as docs/radio.md says: qtc's `[ip]` with its
//! TUN interface qtc0 at 44.128.0.1/24 and an `ip = true` AXUDP port, JNOS's `axu0` at
//! 44.128.0.2. The host (the namespace's own TCP/IP stack, through qtc0) pings JNOS and JNOS
//! pings it; the host reaches JNOS's telnet mailbox at 44.128.0.2, and a JNOS sysop reaches
//! qtc's telnet prompt at 44.128.0.1; both sides learn the other's callsign by ARP. The same
//! over a KISS pty (JNOS's `ax0`), and over AXUDP with both sides sending to each other on a
//! connected link (virtual-circuit mode: qtc's per-destination route `mode = "vc"`, JNOS's
//! `ax25 route perm` and `ax25 route mode N0QTC-1 axu0 vc`).
//!
//! Skipped when JNOS cannot run here (not root, no tun device), unless QTC_REQUIRE_PEERS=1.
#![allow(clippy::disallowed_methods)]

mod common;

use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use common::jnos::{self, Jnos, Setup, HOST_IP, JNOS_IP};
use common::{Client, Daemon, PATIENCE};

/// qtc's telnet port, on its address on the air.
const QTC_TELNET: u16 = 6300;
const JNOS_TELNET: u16 = 2323;
/// JNOS sends from and accepts only this UDP port, at both ends.
const AXUDP: u16 = 10093;

const QTC_IP: &str = "44.128.0.1";
const JNOS_IP_AIR: &str = "44.128.0.2";

/// How qtc and JNOS are linked.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    /// AXUDP, JNOS's `axu0`.
    Axudp,
    /// A KISS pty pair, JNOS's `ax0`.
    Kiss,
}

/// JNOS's IP lines (autoexec.nos, before the `start` lines), as docs/radio.md gives them: its
/// interface on the network, the netmask in hex (JNOS reads it so), the route.
fn jnos_ip_lines(iface: &str) -> Vec<String> {
    vec![
        format!("ifconfig {iface} ipaddress {JNOS_IP_AIR}"),
        format!("ifconfig {iface} netmask 0xffffff00"),
        format!("route add 44.128.0.0/24 {iface}"),
    ]
}

/// JNOS on `via` with an address on the network; `vc`: it sends to qtc's IP callsign on a
/// connected link.
fn jnos_setup(via: Via, vc: bool) -> Setup {
    let (mut s, iface) = match via {
        Via::Axudp => (Setup::default().opt("--axudp", &AXUDP.to_string()), "axu0"),
        Via::Kiss => (Setup::default().kiss(), "ax0"),
    };
    let mut lines = jnos_ip_lines(iface);
    if vc {
        // `perm`: JNOS drops an `add`ed route when the station connects to it (K5JB's rule),
        // and with it the route's mode, falling back to UI frames.
        lines.push(format!("ax25 route perm N0QTC-1 {iface}"));
        lines.push(format!("ax25 route mode N0QTC-1 {iface} vc"));
    }
    for line in lines {
        s = s.extra(&line);
    }
    s
}

/// qtc N0QTC on `via` to JNOS, carrying IP as docs/radio.md's example; `vc`: to JNOS on a
/// connected link (a route for that one destination).
fn qtc_config(via: Via, vc: bool, jnos: &std::path::Path) -> String {
    let port = match via {
        Via::Axudp => format!(
            "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"{HOST_IP}:{AXUDP}\"\n\
             peers = [{{ callsign = \"N0JNS\", address = \"{JNOS_IP}:{AXUDP}\" }}]\n"
        ),
        Via::Kiss => format!(
            "[[port]]\nname = \"radio\"\nkind = \"kiss-pty\"\ndevice = \"{}\"\n",
            jnos.join("kiss.pty").display()
        ),
    };
    let route = if vc {
        format!("[[ip.route]]\nto = \"{JNOS_IP_AIR}\"\nmode = \"vc\"\n")
    } else {
        String::new()
    };
    format!("{port}ip = true\n[ip]\naddress = \"{QTC_IP}/24\"\ntun = \"qtc0\"\n{route}")
}

/// JNOS and qtc (users N0USR/pw) linked by `via`, qtc's telnet port on its address on the air.
fn start(bin: &std::path::Path, via: Via, vc: bool) -> (Jnos, Daemon) {
    let j = Jnos::start(bin, jnos_setup(via, vc));
    let q = Daemon::start_bbs_at(
        &format!("{QTC_IP}:{QTC_TELNET}"),
        &j.wrapper(),
        "N0QTC",
        &[("N0USR", "pw", "")],
        &qtc_config(via, vc, &j.data()),
    );
    (j, q)
}

/// `qtc check` on the config the test runs, which names the IP port.
fn check_accepts(q: &Daemon, port: &str) {
    let out = q.cli(&["check"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "qtc check: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!(
            "ip: 44.128.0.1/24 on tun qtc0 (mtu 256), as N0QTC-1 on {port} (datagram, mtu 256)"
        )),
        "{text}"
    );
}

/// The host's `ping -c 1` to `to`, from inside the namespace: whether a reply came (a hang
/// guard of `PATIENCE`, not a timing).
fn host_pings(j: &Jnos, to: &str) -> bool {
    let secs = PATIENCE.as_secs().to_string();
    let out = Command::new("ip")
        .args([
            "netns", "exec", &j.ns, "ping", "-n", "-c", "1", "-W", &secs, to,
        ])
        .output()
        .expect("run ping");
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.status.success()
}

/// JNOS's sysop pings the host (44.128.0.1) and sees its echo reply come back. JNOS writes the
/// "rtt" line to the session without flushing it; what flushes it is the next command. The
/// reply's way back is ordered by events: qtc logs the host's reply going out to JNOS; the
/// host's own ping to JNOS after it travels the same way and is answered only after JNOS took
/// the reply; an empty command then shows the line.
fn jnos_pings(j: &Jnos, q: &Daemon, console: &mut Client) {
    console.send(&format!("ping {QTC_IP}"));
    console.expect(&format!("Resolving {QTC_IP}..."));
    // The first was the host's own ping's request.
    q.wait_for_log_count("IP from the host src=44.128.0.1 dst=44.128.0.2 proto=1", 2);
    assert!(
        host_pings(j, JNOS_IP_AIR),
        "no echo reply from JNOS\n{}",
        q.log()
    );
    console.send("");
    console.expect(&format!("{QTC_IP}: rtt"));
    console.expect("Jnos>");
}

/// A sysop's session on JNOS's console (remote sysop mode, `Jnos>`), over its own telnet.
fn jnos_console(j: &Jnos) -> Client {
    let mut c = j.connect(JNOS_TELNET);
    c.expect("login:");
    c.send("n0sys");
    c.expect("assword");
    c.send("syspw");
    c.expect(">\r\n");
    c.send("@");
    c.expect("Jnos>");
    c
}

/// JNOS, and `ping` for the host's side; `None` (skip) when either is missing, unless
/// QTC_REQUIRE_PEERS=1, where that fails.
fn peers() -> Option<std::path::PathBuf> {
    let bin = jnos::binary()?;
    let ping = Command::new("sh").args(["-c", "command -v ping"]).output();
    if !ping.is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var("QTC_REQUIRE_PEERS").as_deref() != Ok("1"),
            "no `ping` (iputils-ping) and QTC_REQUIRE_PEERS=1"
        );
        eprintln!("skipped: no `ping`");
        return None;
    }
    Some(bin)
}

#[test]
fn qtc_and_jnos_route_ip_to_each_other_over_axudp() {
    let Some(bin) = peers() else {
        return;
    };
    let (j, q) = start(&bin, Via::Axudp, false);
    check_accepts(&q, "udp");
    assert!(
        q.stdout
            .iter()
            .any(|l| l.starts_with("ip: 44.128.0.1/24 on tun qtc0")),
        "{:?}",
        q.stdout
    );
    // The host pings JNOS: qtc asks JNOS's callsign by ARP first.
    assert!(
        host_pings(&j, JNOS_IP_AIR),
        "no echo reply from JNOS\n{}",
        q.log()
    );
    q.wait_for_log("ARP: 44.128.0.2 is N0JNS on udp");
    // JNOS pings the host.
    let mut console = jnos_console(&j);
    jnos_pings(&j, &q, &mut console);
    // JNOS learned us by ARP (from our request for it).
    console.send("arp");
    let arp = console.expect("Jnos>");
    assert!(
        arp.contains("44.128.0.1") && arp.contains("N0QTC-1"),
        "JNOS's ARP table: {arp}"
    );
    host_reaches_jnos_mailbox(&j);
    jnos_reaches_qtc_prompt(console);
}

#[test]
fn qtc_and_jnos_route_ip_over_a_kiss_pty() {
    let Some(bin) = peers() else {
        return;
    };
    let (j, q) = start(&bin, Via::Kiss, false);
    assert!(
        host_pings(&j, JNOS_IP_AIR),
        "no echo reply from JNOS\n{}",
        q.log()
    );
    q.wait_for_log("ARP: 44.128.0.2 is N0JNS on radio");
    let mut console = jnos_console(&j);
    jnos_pings(&j, &q, &mut console);
    host_reaches_jnos_mailbox(&j);
}

#[test]
fn qtc_and_jnos_carry_ip_on_a_connected_link_in_virtual_circuit_mode() {
    let Some(bin) = peers() else {
        return;
    };
    let (j, q) = start(&bin, Via::Axudp, true);
    assert!(
        host_pings(&j, JNOS_IP_AIR),
        "no echo reply from JNOS\n{}",
        q.log()
    );
    q.wait_for_log("IP link to a station port=udp dest=N0JNS");
    host_reaches_jnos_mailbox(&j);
    let mut console = jnos_console(&j);
    jnos_pings(&j, &q, &mut console);
    jnos_reaches_qtc_prompt(console);
    // JNOS's datagrams came as I frames on the link too: of its UI frames only ARP's are left
    // (its answer to our request), against the dozens of datagrams of the pings and sessions.
    let log = q.log();
    let ui = log.matches("UI frame port=udp from=N0JNS").count();
    assert!(
        ui <= 2,
        "{ui} UI frames from JNOS in virtual-circuit mode\n{log}"
    );
}

/// The host reaches JNOS's mailbox at its address on the air.
fn host_reaches_jnos_mailbox(j: &Jnos) {
    let mut mailbox = host_at(j, JNOS_IP_AIR, JNOS_TELNET);
    mailbox.expect("login:");
}

/// A JNOS sysop reaches qtc's telnet prompt at its address on the air, logs in and out.
fn jnos_reaches_qtc_prompt(mut console: Client) {
    console.send("exit");
    console.expect(">\r\n");
    console.send(&format!("telnet {QTC_IP} {QTC_TELNET}"));
    console.expect("Callsign:");
    console.send("N0USR");
    console.expect("Password:");
    console.send("pw");
    console.expect("de N0QTC>");
    console.send("B");
    let bye = console.expect("Z >");
    assert!(
        bye.contains("de N0QTC. Goodbye") && bye.contains("reconnected to N0JNS"),
        "{bye}"
    );
}

/// A TCP connection from the host (the namespace) to `ip`:`port`, as a line client.
fn host_at(j: &Jnos, ip: &str, port: u16) -> Client {
    let stream = j.in_ns(|| TcpStream::connect((ip, port)).expect("connect over the air"));
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    Client {
        stream,
        seen: Vec::new(),
    }
}

/// JNOS's address behind NET/ROM only: on its `netrom` interface.
const JNOS_IP_NETROM: &str = "44.131.0.2";

#[test]
fn qtc_and_jnos_route_ip_over_netrom() {
    let Some(bin) = peers() else {
        return;
    };
    // JNOS: a NET/ROM node on AXUDP (as docs/netrom.md), its netrom interface at 44.131.0.2,
    // and 44.128.0.1 reached through NET/ROM at qtc's node (as docs/radio.md).
    let mut setup = Setup::default().opt("--axudp", &AXUDP.to_string());
    for line in [
        "attach netrom",
        "netrom alias JNOS",
        "netrom interface axu0 192",
        "netrom nodetimer 10",
        "start netrom",
        &format!("ifconfig netrom ipaddress {JNOS_IP_NETROM}"),
        &format!("route add {QTC_IP}/32 netrom"),
        &format!("arp add {QTC_IP} netrom N0QTC-1"),
    ] {
        setup = setup.extra(line);
    }
    let j = Jnos::start(&bin, setup);
    // qtc: NET/ROM on the AXUDP port, no IP on it: 44.131.0.0/24 only through NET/ROM.
    let config = format!(
        "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"{HOST_IP}:{AXUDP}\"\n\
         peers = [{{ callsign = \"N0JNS\", address = \"{JNOS_IP}:{AXUDP}\" }}]\n\
         netrom_quality = 192\n[netrom]\nalias = \"QTC\"\nbroadcast = \"10s\"\n\
         [ip]\naddress = \"{QTC_IP}/24\"\ntun = \"qtc0\"\n\
         [[ip.route]]\nto = \"44.131.0.0/24\"\nnetrom = \"N0JNS\"\n"
    );
    let q = Daemon::start_bbs_at(
        &format!("{QTC_IP}:{QTC_TELNET}"),
        &j.wrapper(),
        "N0QTC",
        &[("N0USR", "pw", "")],
        &config,
    );
    assert!(
        q.stdout
            .iter()
            .any(|l| l.ends_with("routes 44.131.0.0/24 over NET/ROM to N0JNS")),
        "{:?}",
        q.stdout
    );
    q.wait_for_log_within(
        "NET/ROM route learned: JNOS:N0JNS via N0JNS",
        Duration::from_secs(60),
    );
    // JNOS learns our node from a broadcast (every 10 s) and says nothing when it does: its
    // table is asked every second (an external program with no event to wait on, as in
    // netrom_jnos.rs).
    let mut nodes = String::new();
    for _ in 0..60 {
        nodes = j.console(&["netrom route nodes"]);
        if nodes.contains("QTC:N0QTC-1") {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    assert!(nodes.contains("QTC:N0QTC-1"), "JNOS's nodes: {nodes}");
    // The host pings JNOS's NET/ROM address: out in a NET/ROM datagram to N0JNS, back in one
    // to our node.
    assert!(
        host_pings(&j, JNOS_IP_NETROM),
        "no echo reply over NET/ROM\n{}",
        q.log()
    );
    // And a TCP connection the same way: JNOS's mailbox.
    host_at(&j, JNOS_IP_NETROM, JNOS_TELNET).expect("login:");
}
