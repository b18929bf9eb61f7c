//! Crossed calls (issue 42): two qtc BBSes on AXUDP, each forwarding to the other over AX.25,
//! call each other. The UDP path between them is a relay run by the test that makes the calls
//! meet the same way every run:
//! - at once: it holds the first SABM it sees until the other end's SABM comes, then lets both
//!   go, so the SABMs cross on the wire, as they do by chance on the air;
//! - late: it loses one end's SABMs (as if the other end were down) until the other end's
//!   SABM has passed, as when a station comes back and calls the one still trying to reach it.
//!   The end that came back has its link up before it hears the other's SABM.
//!
//! Both ends take the link as their own call; the rule both apply (the lower callsign's call is
//! kept) leaves exactly one session, N0AAA calling, and it carries the mail both ways, with no
//! WARN and no call left waiting for a SID.
#![allow(clippy::disallowed_methods)]

mod common;
mod radio_util;

use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};

use common::Daemon;
use radio_util::free_udp_port;

/// The two BBSes: the lower callsign first.
const CALLS: [&str; 2] = ["N0AAA", "N0BBB"];

/// Whether an AXUDP datagram is a SABM or SABME (either bit of P/F).
fn is_sabm(datagram: &[u8]) -> bool {
    let Ok(frame) = qtc_ax25::wire::check_fcs(datagram) else {
        return false;
    };
    let Ok((_, len)) = qtc_ax25::Address::parse(frame) else {
        return false;
    };
    frame
        .get(len)
        .is_some_and(|c| matches!(c & !0x10, 0x2F | 0x6F))
}

/// The first SABM held, from which side, until the other side's comes; `None` once they crossed.
type Held = Option<(usize, Vec<u8>)>;

/// How the relay makes the calls meet.
#[derive(Clone, Copy)]
enum Meet {
    /// The SABMs cross on the wire.
    AtOnce,
    /// The SABMs of this node are lost until the other node's SABM has passed.
    Late(usize),
}

/// The relay between the two ports: `socks[i]` is node `i`'s peer, the address it sends to and
/// hears from; what comes in on it goes out of the other socket to the other node's port.
struct Relay {
    socks: [UdpSocket; 2],
    nodes: [SocketAddr; 2],
    meet: Meet,
    /// What is held, and whether the SABMs have met yet.
    held: Mutex<(Held, bool)>,
}

impl Relay {
    /// Carries what node `from` sends to the other node; the SABMs meet as `meet` says (held
    /// until the other node's comes, then both go; or lost until the other node's has passed).
    fn carry(self: Arc<Self>, from: usize) {
        let to = 1 - from;
        let mut buf = [0u8; 2048];
        while let Ok((n, _)) = self.socks[from].recv_from(&mut buf) {
            let datagram = &buf[..n];
            let mut held = self.held.lock().unwrap();
            let (first, crossed) = &mut *held;
            if !*crossed && is_sabm(datagram) {
                match self.meet {
                    Meet::Late(lost) if lost == from => continue,
                    Meet::Late(_) => *crossed = true,
                    Meet::AtOnce => {}
                }
            }
            if !*crossed && is_sabm(datagram) {
                match first.take() {
                    Some((side, theirs)) if side == to => {
                        // The other side's SABM goes to this node, this one's to the other.
                        *crossed = true;
                        let _ = self.socks[from].send_to(&theirs, self.nodes[from]);
                    }
                    _ => {
                        *first = Some((from, datagram.to_vec()));
                        continue;
                    }
                }
            }
            drop(held);
            let _ = self.socks[to].send_to(datagram, self.nodes[to]);
        }
    }
}

/// Node `i`'s config: an AXUDP port whose one peer (the other BBS) is the relay's socket `i`,
/// and a B1 partner over AX.25 taking WW.
fn config(listen: u16, relay: SocketAddr, other: &str) -> String {
    format!(
        "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:{listen}\"\n\
         peers = [{{ callsign = \"{other}\", address = \"{relay}\" }}]\n\
         [[partner]]\ncallsign = \"{other}\"\nconnect = \"ax25:udp:{other}\"\nprotocol = \"b1\"\n\
         routes = [\"WW\"]\ninterval = \"15s\"\n"
    )
}

/// Posts a bulletin @ WW as N0USR on `d`'s telnet port.
fn post(d: &Daemon, call: &str) {
    let prompt = format!("de {call}>");
    let mut c = d.login_to(call, "N0USR", "pw");
    c.send("SB ALL @ WW");
    c.expect("Subject:");
    c.send(&format!("from {call}"));
    c.expect("Enter message");
    c.send("A bulletin whose call crosses the other's.");
    c.send("/EX");
    c.expect(&prompt);
    c.send("B");
}

#[test]
fn calls_that_cross_settle_on_one_session_that_carries_mail_both_ways() {
    calls_meet(Meet::AtOnce);
}

/// N0AAA calls N0BBB, which is away; N0BBB comes back and calls N0AAA, which hears it while
/// still waiting for its own UA (its link crossed). N0BBB's link is up before N0AAA's SABM
/// reaches it: N0BBB's call gives way to N0AAA's, kept, and N0BBB answers it.
#[test]
fn a_call_crossed_late_by_the_lower_callsign_is_answered() {
    calls_meet(Meet::Late(0));
}

/// The same with the ends swapped: N0BBB's call went unanswered and it hears N0AAA's while
/// waiting; N0AAA's call is kept, N0BBB answers it.
#[test]
fn a_call_crossed_late_by_the_higher_callsign_is_kept() {
    calls_meet(Meet::Late(1));
}

/// Two BBSes with a bulletin for each other call each other, their calls meeting as `meet`
/// says: exactly one session runs (N0AAA calling) and carries both bulletins, with no WARN.
fn calls_meet(meet: Meet) {
    let listen = [free_udp_port(), free_udp_port()];
    let socks = [0, 1].map(|_| UdpSocket::bind("127.0.0.1:0").unwrap());
    let relay_addr = [0, 1].map(|i| socks[i].local_addr().unwrap());
    let nodes = listen.map(|p| SocketAddr::from(([127, 0, 0, 1], p)));
    let relay = Arc::new(Relay {
        socks,
        nodes,
        meet,
        held: Mutex::new((None, false)),
    });
    for from in [0, 1] {
        let r = relay.clone();
        std::thread::spawn(move || r.carry(from));
    }
    let [a, b] = [0, 1].map(|i| {
        let other = CALLS[1 - i];
        Daemon::start_bbs(
            CALLS[i],
            &[("N0USR", "pw", ""), (other, "fwdpw", "--bbs")],
            &config(listen[i], relay_addr[i], other),
        )
    });
    let both = [&a, &b];
    match meet {
        // Both post at once: both queue a call to the other within seconds.
        Meet::AtOnce => std::thread::scope(|s| {
            s.spawn(|| post(&a, CALLS[0]));
            post(&b, CALLS[1]);
        }),
        // The node whose SABMs are lost calls first; the other posts once it does.
        Meet::Late(lost) => {
            post(both[lost], CALLS[lost]);
            both[lost].wait_for_log("calling over AX.25");
            post(both[1 - lost], CALLS[1 - lost]);
        }
    }
    for (d, other) in [(&a, CALLS[1]), (&b, CALLS[0])] {
        d.wait_for_log(&format!("forwarding session ended partner={other}"));
    }
    assert!(relay.held.lock().unwrap().1, "the SABMs did not meet");
    let (la, lb) = (a.log(), b.log());
    // N0BBB gave way: it answered N0AAA's call as the called BBS, on the one link.
    assert!(lb.contains("calls crossed on the AX.25 link"), "{lb}");
    for (log, role, other) in [(&la, "Caller", CALLS[1]), (&lb, "Called", CALLS[0])] {
        assert_eq!(log.matches("forwarding session ended").count(), 1, "{log}");
        assert!(
            log.contains(&format!(
                "forwarding session started partner={other} role={role}"
            )),
            "{log}"
        );
        assert!(
            log.contains(&format!(
                "forwarding session ended partner={other} summary=1 received, 1 sent"
            )),
            "{log}"
        );
        let bad: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(" WARN ") || l.contains(" ERROR ") || l.contains("SID"))
            .collect();
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
    for (d, other) in [(&a, CALLS[1]), (&b, CALLS[0])] {
        let subjects = radio_util::subjects(d);
        assert!(subjects.contains(&format!("from {other}")), "{subjects:?}");
    }
}
