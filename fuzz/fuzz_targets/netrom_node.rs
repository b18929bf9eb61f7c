//! Fuzz a NET/ROM node: arbitrary NODES broadcasts and datagrams from its neighbours, mixed
//! with timer expiries, failed links to neighbours and users' connects, sends and closes. It must never panic, must only
//! emit frames that parse, and must keep its tables, queues and circuits within their limits.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use qtc_callsign::Callsign;
use qtc_netrom::wire::{NetHeader, Nodes, Transport};
use qtc_netrom::{Config, Event, Node, Transmit, Via};

fn take<'a>(rest: &mut &'a [u8], n: usize) -> &'a [u8] {
    let n = n.min(rest.len());
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    head
}

fn byte(rest: &mut &[u8]) -> u8 {
    take(rest, 1).first().copied().unwrap_or(0)
}

const NEIGHBOURS: [&str; 4] = ["N0AAA", "N0BBB-1", "N0CCC", "N0DDD-15"];

fuzz_target!(|data: &[u8]| {
    #[allow(clippy::disallowed_methods)]
    let base = Instant::now();
    let me: Callsign = "QTC".parse().unwrap();
    let mut cfg = Config::new(me, "QTC".parse().unwrap());
    cfg.broadcast = Duration::from_secs(60);
    cfg.ports = vec![192, 100];
    cfg.max_nodes = 20;
    cfg.max_neighbours = 3;
    cfg.max_circuits = 4;
    cfg.max_circuits_per_node = 3;
    cfg.max_circuits_per_neighbour = 2;
    cfg.own_calls = vec!["QTC-1".parse().unwrap()];
    cfg.circuit.send_buffer = 1024;
    cfg.circuit.receive_buffer = 512;
    let mut node = Node::new(cfg, base);
    let mut now = base;
    let mut circuits = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let op = byte(&mut rest);
        let from: Callsign = NEIGHBOURS[usize::from(op >> 6)].parse().unwrap();
        let port = usize::from((op >> 5) & 1);
        match op & 7 {
            0 => {
                now += Duration::from_millis(u64::from(byte(&mut rest)) * 500);
                node.handle_timeout(now);
            }
            1 | 2 => {
                let n = usize::from(byte(&mut rest));
                node.handle_nodes(now, port, from, take(&mut rest, n));
            }
            3 | 4 => {
                // A datagram: a header to us (or another node) and fuzzed transport bytes.
                let dest = if op & 8 != 0 { me } else { from };
                let h = NetHeader { origin: from, dest, ttl: byte(&mut rest) };
                let n = usize::from(byte(&mut rest));
                node.handle_datagram(now, port, from, &h.datagram(take(&mut rest, n)));
            }
            5 => {
                if let Ok(id) = node.connect(now, "N0USR".parse().unwrap(), from) {
                    circuits.push(id);
                }
            }
            6 => {
                if let Some(&id) = circuits.get(usize::from(byte(&mut rest)) % circuits.len().max(1)) {
                    let _ = node.send(id, &vec![op; usize::from(byte(&mut rest)) * 4]);
                    node.set_busy(id, op & 16 != 0);
                }
            }
            _ if op & 8 != 0 => node.link_failed(now, Via { port, call: from }),
            _ => {
                if let Some(&id) = circuits.get(usize::from(byte(&mut rest)) % circuits.len().max(1)) {
                    node.close(now, id);
                }
            }
        }
        let mut frames = 0;
        while let Some(t) = node.poll_transmit(now) {
            frames += 1;
            assert!(frames < 10_000, "poll_transmit does not run dry");
            match t {
                Transmit::Nodes { port, info } => {
                    assert!(port < 2);
                    assert!(info.len() <= 238);
                    Nodes::parse(&info).unwrap();
                }
                Transmit::Datagram { data, .. } => {
                    let (_, transport) = NetHeader::parse(&data).unwrap();
                    // Our own frames parse; frames passed on are the peers' bytes.
                    let _ = Transport::parse(transport);
                }
            }
        }
        let mut events = 0;
        while let Some(e) = node.poll_event() {
            events += 1;
            assert!(events < 100_000, "poll_event does not run dry");
            if let Event::Closed { circuit, .. } = e {
                circuits.retain(|&c| c != circuit);
            }
        }
        assert!(node.nodes().count() <= 20);
        assert!(node.neighbours().count() <= 3);
        assert!(node.circuits().len() <= 4);
        if let Some(t) = node.poll_timeout() {
            assert!(t <= now + Duration::from_secs(60 * 16 + 180));
        }
    }
});
