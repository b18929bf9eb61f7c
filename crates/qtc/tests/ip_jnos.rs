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
use common::{web, Client, Daemon, PATIENCE};

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
    format!(
        "{port}ip = true\n[ip]\naddress = \"{QTC_IP}/24\"\ntun = \"qtc0\"\n{route}\
         [web]\nlisten = \"127.0.0.1:0\"\n"
    )
}

/// JNOS and qtc (users N0USR/pw, sysop N0SYS/root) linked by `via`, qtc's telnet port on its
/// address on the air, its web inside the namespace at 127.0.0.1.
fn start(bin: &std::path::Path, via: Via, vc: bool) -> (Jnos, Daemon) {
    start_with(bin, via, vc, |c| c)
}

/// [`start`] with qtc's configuration changed by `edit`.
fn start_with(
    bin: &std::path::Path,
    via: Via,
    vc: bool,
    edit: impl FnOnce(String) -> String,
) -> (Jnos, Daemon) {
    let j = Jnos::start(bin, jnos_setup(via, vc));
    let q = Daemon::start_bbs_at(
        &format!("{QTC_IP}:{QTC_TELNET}"),
        &j.wrapper(),
        "N0QTC",
        &[("N0USR", "pw", ""), ("N0SYS", "root", "--sysop")],
        &edit(qtc_config(via, vc, &j.data())),
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
    host_pings_with(j, to, &[])
}

/// The same with more of ping's options (`-s 1000`).
fn host_pings_with(j: &Jnos, to: &str, options: &[&str]) -> bool {
    let secs = PATIENCE.as_secs().to_string();
    let out = Command::new("ip")
        .args(["netns", "exec", &j.ns, "ping", "-n", "-c", "1", "-W", &secs])
        .args(options)
        .arg(to)
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
    sysop_sees_arp_and_routes(&j, &q, "udp");
    host_reaches_jnos_mailbox(&j);
    jnos_reaches_qtc_prompt(console);
}

/// What the sysop sees of the router: `qtc ctl ip` and the web's Status page list JNOS's ARP
/// entry (learned on `port`) and the route to the network on the air.
fn sysop_sees_arp_and_routes(j: &Jnos, q: &Daemon, port: &str) {
    let text = q.ctl(&["ip"]);
    assert!(
        text.starts_with("ip 44.128.0.1/24 on tun qtc0\n")
            && text.contains(&format!("44.128.0.2      N0JNS     on {port} until "))
            && text.contains("44.128.0.0/24      on the air"),
        "{text}"
    );
    assert!(
        q.ctl(&["status"])
            .contains("ip: 44.128.0.1/24 on tun qtc0, 1 station in the ARP table, 1 route"),
        "{}",
        q.ctl(&["status"])
    );
    let web = q.web_port();
    let page = j.in_ns(|| {
        let cookie = web::login(web, "N0SYS", "root").expect("the sysop's web login");
        web::http(web, "GET", "/status", &cookie, "")
    });
    assert_eq!(page.status, 200, "{}", page.body);
    for row in [
        format!("<td>44.128.0.2</td><td>N0JNS</td><td>{port}</td>"),
        "<td>44.128.0.0/24</td><td>on the air</td>".to_string(),
    ] {
        assert!(page.body.contains(&row), "no {row} in {}", page.body);
    }
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

/// A UI frame from `from` to `to` with `pid` and `info`, with its FCS (one AXUDP datagram).
fn ui(from: &str, to: &str, pid: qtc_ax25::wire::Pid, info: &[u8]) -> Vec<u8> {
    use qtc_ax25::wire::{Address, CommandResponse, Frame};
    let address = Address::new(
        to.parse().unwrap(),
        from.parse().unwrap(),
        CommandResponse::Command,
    );
    let mut bytes = Frame::ui(address, pid, info.to_vec()).to_bytes();
    qtc_ax25::wire::append_fcs(&mut bytes);
    bytes
}

/// An ARP request from `call` at `sender` for `target`.
fn arp_request(call: &str, sender: &str, target: &str) -> Vec<u8> {
    let req = qtc_ip::wire::Arp::request(
        call.parse().unwrap(),
        sender.parse().unwrap(),
        target.parse().unwrap(),
    );
    ui(call, "QST", qtc_ax25::wire::Pid::ARP, &req.to_bytes())
}

/// A UDP datagram from `src` to `dst` with `len` bytes of data, `ttl`, don't-fragment `df`.
fn udp(src: &str, dst: &str, len: usize, ttl: u8, df: bool) -> Vec<u8> {
    let h = qtc_ip::wire::Header {
        header_len: 20,
        tos: 0,
        total_len: 28 + len,
        id: 0x4242,
        dont_fragment: df,
        more_fragments: false,
        frag_offset: 0,
        ttl,
        protocol: 17,
        src: src.parse().unwrap(),
        dst: dst.parse().unwrap(),
    };
    let mut d = Vec::new();
    h.emit(&mut d);
    // Ports 9 to 9 (discard), the length, no checksum (0: none, for UDP over IPv4).
    d.extend_from_slice(&[0, 9, 0, 9]);
    d.extend_from_slice(&((8 + len) as u16).to_be_bytes());
    d.extend_from_slice(&[0, 0]);
    d.resize(28 + len, 0x5a);
    d
}

/// One of the router's counters (`qtc ctl ip --json`).
fn counter(q: &Daemon, name: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(&q.ctl(&["ip", "--json"])).unwrap();
    v["stats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p[0] == name)
        .and_then(|p| p[1].as_u64())
        .unwrap_or_else(|| panic!("no counter {name} in {v}"))
}

/// A station on the air that is not JNOS sends qtc's IP port what no station should: frames
/// that are not IP or ARP, an ARP flood from invented stations (inside the network and out),
/// datagrams whose time to live runs out here, one too big for the next link that may not be
/// cut. qtc counts and drops them, keeps its ARP table within `max_arp`, answers the errors,
/// and the host still reaches JNOS (a datagram of 1000 bytes too, in fragments both ways).
#[test]
fn hostile_frames_on_the_ip_port_are_dropped_and_bounded() {
    let Some(bin) = peers() else {
        return;
    };
    // The forger is a second peer of the AXUDP port (it hears only its peers' addresses):
    // another station on the same air as JNOS, sending as whom it likes.
    const FORGER: u16 = AXUDP + 1;
    let (j, q) = start_with(&bin, Via::Axudp, false, |c| {
        c.replace("tun = \"qtc0\"\n", "tun = \"qtc0\"\nmax_arp = 8\n")
            .replace(
                "peers = [{ callsign = \"N0JNS\"",
                &format!(
                    "peers = [{{ callsign = \"N0BAD\", address = \"{HOST_IP}:{FORGER}\" }}, \
                     {{ callsign = \"N0JNS\""
                ),
            )
    });
    assert!(host_pings(&j, JNOS_IP_AIR), "no echo reply\n{}", q.log());
    let air = j.in_ns(|| std::net::UdpSocket::bind((HOST_IP, FORGER)).unwrap());
    let send = |frame: &[u8]| {
        air.send_to(frame, (HOST_IP, AXUDP)).unwrap();
    };
    // Frames are handled in order: once this one's station is learned, so were those before.
    let mut sentinels = 0;
    let mut settle = || {
        sentinels += 1;
        let ip = format!("44.128.0.{}", 240 + sentinels);
        send(&arp_request(&format!("N0EN-{sentinels}"), &ip, QTC_IP));
        q.wait_for_log(&format!("ARP: {ip} is N0EN-{sentinels} on udp"));
    };
    let (pid_ip, pid_arp) = (qtc_ax25::wire::Pid::IP, qtc_ax25::wire::Pid::ARP);
    let malformed_before = counter(&q, "malformed");
    let mut bad_checksum = udp("44.128.0.9", QTC_IP, 8, 64, false);
    bad_checksum[10] ^= 0xff;
    let mut ipv6 = udp("44.128.0.9", QTC_IP, 8, 64, false);
    ipv6[0] = 0x65;
    let mut too_long = udp("44.128.0.9", QTC_IP, 8, 64, false);
    too_long.truncate(30);
    let mut short_header = udp("44.128.0.9", QTC_IP, 8, 64, false);
    short_header[0] = 0x44;
    let mut ethernet_arp = qtc_ip::wire::Arp::request(
        "N0BAD".parse().unwrap(),
        "44.128.0.9".parse().unwrap(),
        QTC_IP.parse().unwrap(),
    )
    .to_bytes();
    ethernet_arp[1] = 1;
    let malformed: [(_, &[u8]); 8] = [
        (pid_ip, b""),
        (pid_ip, &[0x45, 0]),
        (pid_ip, &bad_checksum),
        (pid_ip, &ipv6),
        (pid_ip, &too_long),
        (pid_ip, &short_header),
        (pid_arp, &[0xde, 0xad, 0xbe, 0xef]),
        (pid_arp, &ethernet_arp),
    ];
    for (pid, info) in malformed {
        send(&ui("N0BAD", "N0QTC-1", pid, info));
    }
    settle();
    assert_eq!(counter(&q, "malformed") - malformed_before, 8);
    // The flood: stations inside the network asking for our address (each answered, the
    // table kept at 8), and outside it (never learned), in bursts the port's socket and queue
    // hold.
    for burst in 0..4u8 {
        for i in 0..40u8 {
            let call = format!("N0F{}{}", (b'A' + burst) as char, (b'A' + i % 26) as char);
            let call = format!("{call}-{}", i / 26);
            send(&arp_request(&call, &format!("44.128.0.{}", 10 + i), QTC_IP));
            send(&arp_request(&call, &format!("10.0.{burst}.{i}"), QTC_IP));
        }
        settle();
    }
    let table: serde_json::Value = serde_json::from_str(&q.ctl(&["ip", "--json"])).unwrap();
    let arp = table["arp"].as_array().unwrap();
    assert_eq!(arp.len(), 8, "{table}");
    assert!(
        arp.iter()
            .all(|a| a["address"].as_str().unwrap().starts_with("44.128.0.")),
        "{table}"
    );
    // Time to live: a datagram passing through to JNOS with 1 left dies here, answered.
    let expired_before = counter(&q, "TTL expired");
    send(&ui(
        "N0BAD",
        "N0QTC-1",
        pid_ip,
        &udp("44.128.0.9", JNOS_IP_AIR, 8, 1, false),
    ));
    q.wait_for_log("ICMP error sent to=44.128.0.9 problem=TtlExceeded");
    assert_eq!(counter(&q, "TTL expired") - expired_before, 1);
    // Don't fragment, 600 bytes, for JNOS's 256-byte link: answered, not sent.
    send(&ui(
        "N0BAD",
        "N0QTC-1",
        pid_ip,
        &udp("44.128.0.9", JNOS_IP_AIR, 572, 64, true),
    ));
    q.wait_for_log("ICMP error sent to=44.128.0.9 problem=NeedsFragmenting { mtu: 256 }");
    // JNOS's entry made room for the flood: the host's ping asks for it again and gets through,
    // and a 1000-byte ping travels in fragments both ways (JNOS puts them together and answers
    // in its own).
    assert!(host_pings(&j, JNOS_IP_AIR), "no echo reply\n{}", q.log());
    assert!(
        host_pings_with(&j, JNOS_IP_AIR, &["-s", "1000", "-M", "dont"]),
        "no echo reply to 1000 bytes\n{}",
        q.log()
    );
    assert!(!q.log().contains("panicked"), "{}", q.log());
}
