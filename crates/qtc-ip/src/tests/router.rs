//! The router driven with datagrams from the host, frames from stations and time.

use std::time::Duration;

use super::util::{call, datagram, drain, ip, ping, router, t0, udp};
use crate::arp_table::DEFAULT_MAX_ENTRIES;
use crate::route::{Hop, Mode, Route};
use crate::wire::icmp::{TYPE_TIME_EXCEEDED, TYPE_UNREACHABLE};
use crate::wire::ipv4::{Header, PROTO_ICMP, PROTO_UDP};
use crate::wire::{Arp, Op, PID_ARP, PID_IP};
use crate::{Event, Router, StaticArp, Transmit, MAX_PENDING, MAX_QUEUED, NETROM_MTU, QST};

/// JNOS N0JNS at 44.128.0.2 answers our request on `port`.
fn jnos_answers(r: &mut Router, now: std::time::Instant, port: usize) {
    let reply =
        Arp::request(call("N0QTC-1"), ip("44.128.0.1"), ip("44.128.0.2")).reply(call("N0JNS"));
    r.handle_frame(now, port, call("N0JNS"), PID_ARP, &reply.to_bytes());
}

/// The ICMP message inside a datagram for the host: (type, code).
fn icmp_of(t: &Transmit) -> (u8, u8) {
    let Transmit::Host(d) = t else {
        panic!("not for the host: {t:?}");
    };
    let (h, _) = Header::parse(d).unwrap();
    assert_eq!(h.protocol, PROTO_ICMP);
    assert_eq!(h.src, ip("44.128.0.1"));
    (d[20], d[21])
}

#[test]
fn a_datagram_from_the_host_waits_for_arp_then_goes_in_a_ui_frame() {
    let now = t0();
    let mut r = router();
    assert_eq!(r.poll_timeout(), None, "an idle router has no deadline");
    let p = ping("44.128.0.1", "44.128.0.2");
    r.handle_host(now, &p);
    let out = drain(&mut r);
    // A request on each IP port, to QST, from our IP call; nothing else yet.
    assert_eq!(out.len(), 2);
    for (i, t) in out.iter().enumerate() {
        let Transmit::Radio {
            port,
            dest,
            pid,
            mode,
            data,
        } = t
        else {
            panic!("{t:?}");
        };
        assert_eq!(
            (*port, *dest, *pid, *mode),
            (i, QST, PID_ARP, Mode::Datagram)
        );
        let a = Arp::parse(data).unwrap();
        assert_eq!(a.op, Op::Request);
        assert_eq!(
            (a.sender_call, a.sender_ip),
            (call("N0QTC-1"), ip("44.128.0.1"))
        );
        assert_eq!(a.target_ip, ip("44.128.0.2"));
    }
    assert_eq!(r.poll_timeout(), Some(now + Duration::from_secs(5)));
    jnos_answers(&mut r, now, 0);
    assert_eq!(
        r.poll_event(),
        Some(Event::ArpLearned {
            ip: ip("44.128.0.2"),
            call: call("N0JNS"),
            port: 0
        })
    );
    let out = drain(&mut r);
    assert_eq!(
        out,
        vec![Transmit::Radio {
            port: 0,
            dest: call("N0JNS"),
            pid: PID_IP,
            mode: Mode::Datagram,
            data: p.clone(),
        }]
    );
    assert_eq!(r.poll_timeout(), None);
    // Known now: the next goes at once.
    r.handle_host(now, &p);
    assert_eq!(drain(&mut r).len(), 1);
}

#[test]
fn a_request_for_our_address_is_answered_and_its_sender_learned() {
    let now = t0();
    let mut r = router();
    let req = Arp::request(call("N0JNS"), ip("44.128.0.2"), ip("44.128.0.1"));
    r.handle_frame(now, 1, call("N0JNS"), PID_ARP, &req.to_bytes());
    let out = drain(&mut r);
    let [Transmit::Radio {
        port: 1,
        dest,
        pid: PID_ARP,
        mode: Mode::Datagram,
        data,
    }] = &out[..]
    else {
        panic!("{out:?}");
    };
    assert_eq!(*dest, call("N0JNS"));
    let a = Arp::parse(data).unwrap();
    assert_eq!(a.op, Op::Reply);
    assert_eq!(
        (a.sender_call, a.sender_ip),
        (call("N0QTC-1"), ip("44.128.0.1"))
    );
    assert_eq!(a.target_ip, ip("44.128.0.2"));
    assert!(matches!(
        r.poll_event(),
        Some(Event::ArpLearned { port: 1, .. })
    ));
    // A request for another address teaches us nothing and is not answered.
    let other = Arp::request(call("N0XYZ"), ip("44.128.0.7"), ip("44.128.0.9"));
    r.handle_frame(now, 0, call("N0XYZ"), PID_ARP, &other.to_bytes());
    assert!(drain(&mut r).is_empty());
    let known: Vec<_> = r.arp_entries(now).map(|(ip, _)| ip).collect();
    assert_eq!(known, vec![ip("44.128.0.2")]);
}

#[test]
fn datagrams_for_us_and_broadcasts_go_to_the_host() {
    let now = t0();
    let mut r = router();
    for d in [
        ping("44.128.0.2", "44.128.0.1"),
        udp("44.128.0.2", "44.128.0.255", 10),
        udp("44.128.0.2", "255.255.255.255", 10),
        // Nothing routes it to the air: the host decides.
        udp("44.128.0.2", "10.1.2.3", 10),
    ] {
        r.handle_frame(now, 0, call("N0JNS"), PID_IP, &d);
        assert_eq!(drain(&mut r), vec![Transmit::Host(d)]);
    }
    // A port without IP, and PIDs that are not IP's, are not ours.
    r.handle_frame(
        now,
        2,
        call("N0JNS"),
        PID_IP,
        &ping("44.128.0.2", "44.128.0.1"),
    );
    r.handle_frame(
        now,
        0,
        call("N0JNS"),
        0xf0,
        &ping("44.128.0.2", "44.128.0.1"),
    );
    assert!(drain(&mut r).is_empty());
}

#[test]
fn malformed_frames_are_counted_and_dropped() {
    let now = t0();
    let mut r = router();
    let mut bad = ping("44.128.0.2", "44.128.0.1");
    bad[10] ^= 0xff;
    for junk in [&[][..], &[0x45][..], &bad[..], &[0x60; 40][..]] {
        r.handle_frame(now, 0, call("N0JNS"), PID_IP, junk);
        r.handle_frame(now, 0, call("N0JNS"), PID_ARP, junk);
        r.handle_host(now, junk);
    }
    assert!(drain(&mut r).is_empty());
    assert_eq!(r.stats().malformed, 12);
    assert_eq!(r.poll_event(), None);
}

#[test]
fn an_arp_flood_stays_within_the_table_and_the_network() {
    let now = t0();
    let mut r = router();
    // Requests for our address from every address of the network and beyond it.
    for i in 0..2000u32 {
        let sender = std::net::Ipv4Addr::from(u32::from(ip("44.128.0.0")) + i);
        let req = Arp::request(call("N0BAD"), sender, ip("44.128.0.1"));
        r.handle_frame(now, 0, call("N0BAD"), PID_ARP, &req.to_bytes());
        while r.poll_transmit().is_some() {}
        while r.poll_event().is_some() {}
    }
    // Only the network's 253 other hosts were learned: not 44.128.0.1 (ours), .0, .255,
    // nor anything beyond the /24.
    let n = r.arp_entries(now).count();
    assert!(n <= DEFAULT_MAX_ENTRIES && n == 253, "{n} entries");
    assert!(r
        .arp_entries(now)
        .all(|(a, _)| a.octets()[..3] == [44, 128, 0]));
    // A tighter table keeps its bound: the oldest entries make room.
    let mut c = super::util::config();
    c.max_arp = 8;
    let mut r = Router::new(c);
    for i in 2..100u8 {
        let req = Arp::request(call("N0BAD"), [44, 128, 0, i].into(), ip("44.128.0.1"));
        r.handle_frame(
            now + Duration::from_millis(u64::from(i)),
            0,
            call("N0BAD"),
            PID_ARP,
            &req.to_bytes(),
        );
    }
    assert_eq!(r.arp_entries(now).count(), 8);
    assert!(r.arp_entries(now).all(|(a, _)| a.octets()[3] >= 92));
}

#[test]
fn learned_entries_age_out_when_read_and_static_ones_stay() {
    let now = t0();
    let mut c = super::util::config();
    c.arp = vec![StaticArp {
        ip: ip("44.128.0.9"),
        call: call("N0STA"),
        port: 1,
    }];
    let mut r = Router::new(c);
    let req = Arp::request(call("N0JNS"), ip("44.128.0.2"), ip("44.128.0.1"));
    r.handle_frame(now, 0, call("N0JNS"), PID_ARP, &req.to_bytes());
    // A station claiming the static address changes nothing.
    let liar = Arp::request(call("N0BAD"), ip("44.128.0.9"), ip("44.128.0.1"));
    r.handle_frame(now, 0, call("N0BAD"), PID_ARP, &liar.to_bytes());
    drain(&mut r);
    let later = now + Duration::from_secs(15 * 60 + 1);
    let left: Vec<_> = r.arp_entries(later).map(|(a, e)| (a, e.call)).collect();
    assert_eq!(left, vec![(ip("44.128.0.9"), call("N0STA"))]);
    assert_eq!(r.poll_timeout(), None, "ageing needs no timer");
    // The static one is used at once, in its port's mode; the aged one is asked for again.
    r.handle_host(later, &ping("44.128.0.1", "44.128.0.9"));
    let out = drain(&mut r);
    assert!(matches!(
        out[..],
        [Transmit::Radio {
            port: 1,
            pid: PID_IP,
            mode: Mode::VirtualCircuit,
            ..
        }]
    ));
    r.handle_host(later, &ping("44.128.0.1", "44.128.0.2"));
    assert!(drain(&mut r)
        .iter()
        .all(|t| matches!(t, Transmit::Radio { pid: PID_ARP, .. })));
}

#[test]
fn an_unanswered_address_is_asked_thrice_then_its_datagrams_come_back_unreachable() {
    let mut now = t0();
    let mut r = router();
    for _ in 0..MAX_QUEUED + 2 {
        r.handle_host(now, &ping("44.128.0.1", "44.128.0.77"));
    }
    assert_eq!(drain(&mut r).len(), 2);
    for _ in 0..2 {
        now = r.poll_timeout().unwrap();
        r.handle_timeout(now);
        assert_eq!(drain(&mut r).len(), 2, "asked again on both ports");
    }
    now = r.poll_timeout().unwrap();
    r.handle_timeout(now);
    assert_eq!(
        r.poll_event(),
        Some(Event::ArpFailed {
            ip: ip("44.128.0.77")
        })
    );
    let out = drain(&mut r);
    // The queued ones, each answered; the two beyond the queue were dropped.
    assert_eq!(out.len(), MAX_QUEUED);
    for t in &out {
        assert_eq!(icmp_of(t), (TYPE_UNREACHABLE, 1));
    }
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn addresses_waiting_for_arp_are_bounded() {
    let now = t0();
    let mut r = router();
    for i in 0..MAX_PENDING as u8 {
        r.handle_host(now, &ping("44.128.0.1", &format!("44.128.0.{}", 100 + i)));
    }
    drain(&mut r);
    r.handle_host(now, &ping("44.128.0.1", "44.128.0.250"));
    let out = drain(&mut r);
    assert_eq!(out.len(), 1);
    assert_eq!(icmp_of(&out[0]), (TYPE_UNREACHABLE, 1));
    assert_eq!(r.arp_pending().count(), MAX_PENDING);
}

#[test]
fn big_datagrams_are_cut_to_the_ports_mtu_or_answered_when_they_may_not_be() {
    let now = t0();
    let mut r = router();
    jnos_answers(&mut r, now, 0);
    drain(&mut r);
    let big = udp("44.128.0.1", "44.128.0.2", 600);
    r.handle_host(now, &big);
    let out = drain(&mut r);
    assert_eq!(out.len(), 3);
    for t in &out {
        let Transmit::Radio { data, .. } = t else {
            panic!()
        };
        assert!(data.len() <= 256);
    }
    let df = datagram("44.128.0.1", "44.128.0.2", PROTO_UDP, &[0; 600], 64, true);
    r.handle_host(now, &df);
    let out = drain(&mut r);
    assert_eq!(icmp_of(&out[0]), (TYPE_UNREACHABLE, 4));
    let Transmit::Host(d) = &out[0] else { panic!() };
    assert_eq!(
        u16::from_be_bytes([d[26], d[27]]),
        256,
        "the next hop's MTU"
    );
    // Quoted: the original header and 8 bytes.
    assert_eq!(&d[28..56], &df[..28]);
}

#[test]
fn datagrams_between_stations_lose_a_hop_and_die_at_ttl_one() {
    let now = t0();
    let mut c = super::util::config();
    // 44.130.0.0/16 is behind N0GW at 44.128.0.3 on port 0.
    c.routes = vec![Route {
        to: "44.130.0.0/16".parse().unwrap(),
        hop: Hop::Radio {
            gateway: Some(ip("44.128.0.3")),
            port: Some(0),
        },
        mode: None,
    }];
    c.arp = vec![
        StaticArp {
            ip: ip("44.128.0.3"),
            call: call("N0GW"),
            port: 0,
        },
        StaticArp {
            ip: ip("44.128.0.2"),
            call: call("N0JNS"),
            port: 0,
        },
    ];
    let mut r = Router::new(c);
    r.handle_frame(
        now,
        0,
        call("N0JNS"),
        PID_IP,
        &udp("44.128.0.2", "44.130.5.5", 20),
    );
    let out = drain(&mut r);
    let [Transmit::Radio { dest, data, .. }] = &out[..] else {
        panic!("{out:?}")
    };
    assert_eq!(*dest, call("N0GW"));
    assert_eq!(Header::parse(data).unwrap().0.ttl, 63);
    assert_eq!(r.stats().forwarded, 1);
    let dying = datagram("44.128.0.2", "44.130.5.5", PROTO_UDP, &[1; 20], 1, false);
    r.handle_frame(now, 0, call("N0JNS"), PID_IP, &dying);
    let out = drain(&mut r);
    let [Transmit::Radio { dest, data, .. }] = &out[..] else {
        panic!("{out:?}")
    };
    // The error goes back over the air to the sender.
    assert_eq!(*dest, call("N0JNS"));
    assert_eq!((data[20], data[21]), (TYPE_TIME_EXCEEDED, 0));
    assert_eq!(r.stats().ttl_expired, 1);
}

#[test]
fn no_route_from_the_host_is_answered_and_errors_are_never_answered() {
    let now = t0();
    let mut r = router();
    r.handle_host(now, &ping("44.128.0.1", "10.9.9.9"));
    let out = drain(&mut r);
    assert_eq!(icmp_of(&out[0]), (TYPE_UNREACHABLE, 0));
    // That error, sent back in: no error about an error.
    let Transmit::Host(err) = &out[0] else {
        panic!()
    };
    let mut back = err.clone();
    back[16..20].copy_from_slice(&[10, 9, 9, 9]);
    back[10] = 0;
    back[11] = 0;
    let s = crate::wire::ipv4::checksum(&back[..20]);
    back[10..12].copy_from_slice(&s.to_be_bytes());
    r.handle_host(now, &back);
    assert!(drain(&mut r).is_empty());
}

#[test]
fn a_route_over_netrom_carries_datagrams_cut_to_its_mtu() {
    let now = t0();
    let mut c = super::util::config();
    c.routes = vec![Route {
        to: "44.131.0.0/16".parse().unwrap(),
        hop: Hop::NetRom {
            node: call("N0JNS"),
        },
        mode: None,
    }];
    let mut r = Router::new(c);
    r.handle_host(now, &udp("44.128.0.1", "44.131.0.1", 500));
    let out = drain(&mut r);
    assert_eq!(out.len(), 3);
    for t in &out {
        let Transmit::NetRom { node, data } = t else {
            panic!("{t:?}")
        };
        assert_eq!(*node, call("N0JNS"));
        assert!(data.len() <= NETROM_MTU);
    }
    // And back: for the host.
    let reply = udp("44.131.0.1", "44.128.0.1", 50);
    r.handle_netrom(now, call("N0JNS"), &reply);
    assert_eq!(drain(&mut r), vec![Transmit::Host(reply)]);
}

#[test]
fn a_route_may_ask_for_a_connected_link() {
    let now = t0();
    let mut c = super::util::config();
    c.routes = vec![Route {
        to: "44.128.0.2/32".parse().unwrap(),
        hop: Hop::Radio {
            gateway: None,
            port: None,
        },
        mode: Some(Mode::VirtualCircuit),
    }];
    let mut r = Router::new(c);
    jnos_answers(&mut r, now, 0);
    r.handle_host(now, &ping("44.128.0.1", "44.128.0.2"));
    r.handle_host(now, &ping("44.128.0.1", "44.128.0.3"));
    let out = drain(&mut r);
    assert!(matches!(
        out[0],
        Transmit::Radio {
            mode: Mode::VirtualCircuit,
            pid: PID_IP,
            ..
        }
    ));
    assert!(matches!(
        out[1],
        Transmit::Radio {
            mode: Mode::Datagram,
            pid: PID_ARP,
            ..
        }
    ));
}

#[test]
fn a_host_broadcast_goes_to_qst_on_every_ip_port() {
    let now = t0();
    let mut r = router();
    r.handle_host(now, &udp("44.128.0.1", "44.128.0.255", 10));
    let out = drain(&mut r);
    assert_eq!(out.len(), 2);
    assert!(out
        .iter()
        .all(|t| matches!(t, Transmit::Radio { dest, pid: PID_IP, mode: Mode::Datagram, .. } if *dest == QST)));
}

#[test]
fn a_station_claiming_our_address_is_reported_not_learned() {
    let now = t0();
    let mut r = router();
    let claim = Arp::request(call("N0BAD"), ip("44.128.0.1"), ip("44.128.0.2"));
    r.handle_frame(now, 0, call("N0BAD"), PID_ARP, &claim.to_bytes());
    assert_eq!(
        r.poll_event(),
        Some(Event::AddressClaimed {
            call: call("N0BAD"),
            port: 0
        })
    );
    assert_eq!(r.arp_entries(now).count(), 0);
}
