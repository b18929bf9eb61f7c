//! The node commands across sessions: a user on AX.25 (AXUDP on loopback, with `qtc call`) and
//! users on telnet share one daemon. `U` shows both and how they came in, `J` the port's heard
//! list, `PORTS` the port, and `T` from the radio user reaches the sysop's telnet session.

mod common;
mod radio_util;

use common::{Client, Daemon};
use radio_util::{free_udp_port, Call};

/// The BBS N0BBB with an AXUDP port "udp", and a radio user N0ZZZ calling it from N0ZZZ-7.
fn bbs_with_radio_user() -> (Daemon, Call) {
    let (d, c, _) = bbs_with_radio_user_and_digipeater();
    (d, c)
}

/// [`bbs_with_radio_user`], the port also having a peer N0DIG (a digipeater) at the returned
/// UDP port: the port hears only its peers' addresses.
fn bbs_with_radio_user_and_digipeater() -> (Daemon, Call, u16) {
    let (port, user, digi) = (free_udp_port(), free_udp_port(), free_udp_port());
    let d = Daemon::start_bbs(
        "N0BBB",
        &[
            ("N0ZZZ", "pw", ""),
            ("N0USR", "pw", ""),
            ("N0SYS", "root", "--sysop"),
        ],
        &format!(
            "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:{port}\"\n\
             peers = [{{ callsign = \"N0ZZZ\", address = \"127.0.0.1:{user}\" }}, \
             {{ callsign = \"N0DIG\", address = \"127.0.0.1:{digi}\" }}]\n"
        ),
    );
    // The start-up report comes before the port's socket is bound: a SABM sent before it
    // would wait for the caller's T1 (3 s) to be sent again.
    d.wait_for_log("device open port=udp");
    let mut c = Call::start(
        &format!("axudp:127.0.0.1:{user}:127.0.0.1:{port}"),
        "N0ZZZ-7",
        "N0BBB",
    );
    c.expect("de N0BBB>");
    (d, c, digi)
}

fn login(d: &Daemon, call: &str, pw: &str) -> Client {
    let mut c = d.connect();
    c.expect("Callsign:");
    c.send(call);
    c.expect("Password:");
    c.send(pw);
    c.expect("de N0BBB>");
    c
}

fn ask(c: &mut Client, line: &str) -> String {
    c.send(line);
    c.expect("de N0BBB>")
}

#[test]
fn u_lists_users_and_how_they_came_in() {
    let (d, _radio) = bbs_with_radio_user();
    let mut u = login(&d, "N0USR", "pw");
    let who = ask(&mut u, "U");
    assert!(who.contains("2 online:"), "{who}");
    // The station as it called, SSID included.
    assert!(who.contains("N0ZZZ-7   udp"), "{who}");
    assert!(who.contains("N0USR     telnet"), "{who}");
}

#[test]
fn j_shows_the_heard_list_and_ports_the_port() {
    let (d, _radio) = bbs_with_radio_user();
    let mut u = login(&d, "N0USR", "pw");
    let heard = ask(&mut u, "J");
    assert!(heard.contains("udp      AX.25 over UDP (AXUDP)"), "{heard}");
    assert!(heard.contains("  N0ZZZ-7"), "{heard}");
    let ports = ask(&mut u, "PORTS");
    assert!(ports.contains("udp      AX.25 over UDP (AXUDP)"), "{ports}");
    assert!(!ports.contains("  N0ZZZ"), "no heard list: {ports}");
    // Users see the port's kind, not its addresses (the sysop's business).
    assert!(
        !heard.contains("127.0.0.1") && !ports.contains("127.0.0.1"),
        "{ports}"
    );
}

#[test]
fn t_pages_the_sysop_on_every_sysop_session() {
    let (d, mut radio) = bbs_with_radio_user();
    let mut sysop = login(&d, "N0SYS", "root");
    let mut user = login(&d, "N0USR", "pw");
    radio.send("T QSY to 145.50?");
    radio.expect("The sysop has been paged.");
    sysop.expect("*** N0ZZZ pages the sysop: QSY to 145.50?");
    // Not shown to other users: their next answer is clean.
    assert!(!ask(&mut user, "V").contains("pages the sysop"));
    d.wait_for_log("the sysop is paged");
}

/// An AXUDP `[[port]]` table entry.
fn udp_port(name: &str, listen: u16, peer: &str, at: u16) -> String {
    format!(
        "[[port]]\nname = \"{name}\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:{listen}\"\n\
         peers = [{{ callsign = \"{peer}\", address = \"127.0.0.1:{at}\" }}]\nfrack = \"1s\"\n"
    )
}

/// `C` over AX.25 between two instances (AXUDP on loopback): a telnet user on N0AAA connects
/// to the BBS N0BBB through A's radio port "air" and arrives there as themselves (B's `U`
/// shows N0USR, not the station N0AAA), uses it, and is back at A's prompt when B says bye.
#[test]
fn c_connects_out_as_the_user_and_comes_back() {
    let (pa, pb, unused) = (free_udp_port(), free_udp_port(), free_udp_port());
    // B shows text as stored (ANSI art): what A's user sees from B must still be escaped.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        common::config_path(dir.path()),
        format!(
            "[station]\ncallsign = \"N0BBB\"\nraw_bodies = true\n[store]\ndurability = \"normal\"\n\
             [telnet]\nlisten = [\"127.0.0.1:0\"]\n{}",
            udp_port("air", pb, "N0AAA", pa)
        ),
    )
    .unwrap();
    let out = common::cli(dir.path(), &["user", "add", "N0OTH", "--password", "x"], "");
    assert!(out.status.success(), "{out:?}");
    let b = Daemon::start_in(dir);
    let art = b.dir.path().join("art.txt");
    // ESC, and the raw 8-bit CSI a Latin-1 terminal acts on.
    std::fs::write(
        &art,
        b"SB ALL < N0OTH\nart\n\x1b[2Jcleared \x9b31mred\n/EX\n",
    )
    .unwrap();
    let out = b.cli(&["msg", "import", art.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    // "air" first in A's config; "aaa" sorts before it and goes nowhere.
    let a = Daemon::start_bbs(
        "N0AAA",
        &[("N0USR", "pw", "")],
        &format!(
            "{}{}",
            udp_port("air", pa, "N0BBB", pb),
            udp_port("aaa", free_udp_port(), "N0ZZZ", unused)
        ),
    );
    let mut u = a.connect();
    u.expect("Callsign:");
    u.send("N0USR");
    u.expect("Password:");
    u.send("pw");
    u.expect("de N0AAA>");
    // No port named: the first one configured.
    u.send("C N0BBB");
    u.expect("Connecting to N0BBB on air...");
    u.expect("*** Connected to N0BBB");
    let hello = u.expect("de N0BBB>");
    assert!(hello.contains("Hello N0USR"), "{hello}");
    u.send("U");
    let who = u.expect("de N0BBB>");
    assert!(who.contains("N0USR     air"), "{who}");
    assert!(
        !who.contains("N0AAA"),
        "B sees the station, not the user: {who}"
    );
    u.send("R 1");
    let art = u.expect("de N0BBB>");
    assert!(art.contains("\\x1B[2Jcleared \\x9B31mred"), "{art:?}");
    assert!(!art.contains('\x1b'), "{art:?}");
    u.send("B");
    u.expect("*** Disconnected from N0BBB. Back at N0AAA.");
    u.expect("de N0AAA>");
    // A port that does not exist: refused before anything is called.
    u.send("C uhf N0BBB");
    let out = u.expect("de N0AAA>");
    assert!(out.contains("*** There is no radio port uhf"), "{out}");
    assert!(!out.contains("Connecting"), "{out}");
    // A port and no call.
    u.send("c AIR");
    let out = u.expect("de N0AAA>");
    assert!(out.contains("*** AIR is a radio port: C AIR CALL"), "{out}");
    // A station that does not answer: Enter gives the call up at once.
    u.send("C air N0NONE");
    u.expect("Connecting to N0NONE on air... (Enter gives up)");
    u.send("");
    u.expect("*** Call to N0NONE given up.");
    u.expect("de N0AAA>");
    u.send("V");
    u.expect("de N0AAA>");
}

/// `CONV` across telnet and AX.25: join notices, lines both ways, `/W`, `/Q` back to the BBS,
/// and the leave notice.
#[test]
fn conv_joins_telnet_and_ax25_users() {
    let (d, mut radio) = bbs_with_radio_user();
    let mut u = login(&d, "N0USR", "pw");
    u.send("CONV");
    u.expect("*** Conference channel 0.");
    radio.send("CHAT");
    radio.expect("*** Conference channel 0.");
    u.expect("*** N0ZZZ joined");
    u.send("hello from telnet");
    radio.expect("<N0USR>: hello from telnet");
    radio.send("hello from the air");
    u.expect("<N0ZZZ>: hello from the air");
    u.send("/W");
    u.expect("*** Channel 0: ");
    let who = u.expect("\r\n");
    assert!(who.contains("N0USR") && who.contains("N0ZZZ"), "{who}");
    radio.send("/Q");
    radio.expect("*** Left the conference.");
    radio.expect("de N0BBB>");
    u.expect("*** N0ZZZ left");
    u.send("/q");
    u.expect("*** Left the conference.");
    u.expect("de N0BBB>");
}

#[test]
fn the_own_call_is_never_heard() {
    // A digipeater (JNOS with `ax25 digipeat on`) repeats our own frames back to us: their
    // source is this BBS, any SSID; the heard list is for other stations.
    use qtc_ax25::wire::{Address, CommandResponse, Digipeater, Frame, Pid};
    use qtc_callsign::Callsign;
    let (d, _radio, digi) = bbs_with_radio_user_and_digipeater();
    let port: u16 = d
        .stdout
        .iter()
        .find_map(|l| l.strip_prefix("radio: udp axudp 127.0.0.1:"))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .expect("the AXUDP port in the start-up report");
    let call = |c: &str, ssid| Callsign::new(c, ssid).unwrap();
    // A UI frame from `src`, repeated by the digipeater N0DIG, with its FCS (AXUDP).
    let repeated = |src: Callsign| {
        let mut address = Address::new(call("ID", 0), src, CommandResponse::Command);
        let digi = Digipeater {
            call: call("N0DIG", 0),
            repeated: true,
        };
        address.path.push(digi).unwrap();
        let mut bytes = Frame::ui(address, Pid::NO_LAYER3, b"hello".to_vec()).to_bytes();
        qtc_ax25::wire::append_fcs(&mut bytes);
        bytes
    };
    // From the digipeater's address: the port hears only its peers.
    let udp = std::net::UdpSocket::bind(("127.0.0.1", digi)).unwrap();
    udp.send_to(&repeated(call("N0BBB", 3)), ("127.0.0.1", port))
        .unwrap();
    udp.send_to(&repeated(call("N0OTH", 0)), ("127.0.0.1", port))
        .unwrap();
    // Then one to this BBS, which it logs: once that is handled, so were the others (frames
    // are handled in order, each noted in the heard list first).
    let address = Address::new(call("N0BBB", 0), call("N0OTH", 0), CommandResponse::Command);
    let mut to_us = Frame::ui(address, Pid::NO_LAYER3, b"hello".to_vec()).to_bytes();
    qtc_ax25::wire::append_fcs(&mut to_us);
    udp.send_to(&to_us, ("127.0.0.1", port)).unwrap();
    d.wait_for_log("UI frame port=udp from=N0OTH");
    let heard = d.ctl(&["heard"]);
    assert!(
        heard.contains("N0OTH") && heard.contains("N0ZZZ-7"),
        "{heard}"
    );
    assert!(!heard.contains("N0BBB"), "{heard}");
}
