//! Fuzz the IP router: arbitrary datagrams from the host, IP and ARP frames from stations on
//! two ports, datagrams from NET/ROM, and time passing. It must never panic, must only emit
//! datagrams and ARP packets that parse, and must keep its tables and queues within bounds.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use qtc_callsign::Callsign;
use qtc_ip::wire::ipv4::Header;
use qtc_ip::wire::{Arp, PID_ARP, PID_IP};
use qtc_ip::{Config, Hop, Mode, PortConfig, Route, Router, StaticArp, Transmit};

fn take<'a>(rest: &mut &'a [u8], n: usize) -> &'a [u8] {
    let n = n.min(rest.len());
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    head
}

fn byte(rest: &mut &[u8]) -> u8 {
    take(rest, 1).first().copied().unwrap_or(0)
}

const STATIONS: [&str; 4] = ["N0AAA", "N0BBB-1", "N0CCC", "N0DDD-15"];

fn router() -> Router {
    let call: Callsign = "N0QTC-1".parse().unwrap();
    let mut cfg = Config::new([44, 128, 0, 1].into(), 24);
    cfg.ports = vec![
        Some(PortConfig { call, mtu: 256, mode: Mode::Datagram }),
        Some(PortConfig { call, mtu: 68, mode: Mode::VirtualCircuit }),
    ];
    cfg.max_arp = 16;
    cfg.routes = vec![
        Route {
            to: "44.130.0.0/16".parse().unwrap(),
            hop: Hop::Radio { gateway: Some([44, 128, 0, 3].into()), port: Some(1) },
            mode: None,
        },
        Route { to: "44.131.0.0/16".parse().unwrap(), hop: Hop::NetRom { node: call }, mode: None },
    ];
    cfg.arp = vec![StaticArp { ip: [44, 128, 0, 9].into(), call, port: 0 }];
    Router::new(cfg)
}

fuzz_target!(|data: &[u8]| {
    #[allow(clippy::disallowed_methods)]
    let base = Instant::now();
    let mut r = router();
    let mut now = base;
    let mut rest = data;
    while !rest.is_empty() {
        let op = byte(&mut rest);
        let from: Callsign = STATIONS[usize::from(op >> 6)].parse().unwrap();
        let port = usize::from((op >> 5) & 1);
        let n = usize::from(byte(&mut rest)) * 2;
        let bytes = take(&mut rest, n);
        match op & 7 {
            0 => {
                now += Duration::from_millis(u64::from(byte(&mut rest)) * 100);
                r.handle_timeout(now);
            }
            1 | 2 => r.handle_host(now, bytes),
            3 => r.handle_frame(now, port, from, PID_IP, bytes),
            4 | 5 => r.handle_frame(now, port, from, PID_ARP, bytes),
            6 => r.handle_netrom(now, from, bytes),
            _ => now += Duration::from_secs(60 * u64::from(byte(&mut rest))),
        }
        let mut sent = 0;
        while let Some(t) = r.poll_transmit() {
            sent += 1;
            assert!(sent <= qtc_ip::MAX_TX_QUEUE, "poll_transmit does not run dry");
            match t {
                Transmit::Host(d) => {
                    Header::parse(&d).expect("datagrams for the host parse");
                }
                Transmit::Radio { port, pid, data, .. } => {
                    assert!(port < 2);
                    match pid {
                        PID_IP => {
                            assert!(data.len() <= [256, 68][port], "a frame beyond the MTU");
                            Header::parse(&data).expect("datagrams on the air parse");
                        }
                        PID_ARP => {
                            Arp::parse(&data).expect("our ARP parses");
                        }
                        other => panic!("PID {other:#x}"),
                    }
                }
                Transmit::NetRom { data, .. } => {
                    assert!(data.len() <= qtc_ip::NETROM_MTU);
                    Header::parse(&data).expect("datagrams into NET/ROM parse");
                }
            }
        }
        while r.poll_event().is_some() {}
        assert!(r.arp_entries(now).count() <= 16 + 1);
        assert!(r.arp_pending().count() <= qtc_ip::MAX_PENDING);
        if let Some(t) = r.poll_timeout() {
            assert!(t <= now + Duration::from_secs(5));
        }
    }
});
