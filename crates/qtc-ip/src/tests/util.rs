//! Builders for the tests: datagrams with correct headers, and a router on two IP ports.

use std::net::Ipv4Addr;
use std::time::Instant;

use qtc_callsign::Callsign;

use crate::route::Mode;
use crate::wire::ipv4::{Header, PROTO_ICMP, PROTO_UDP};
use crate::{Config, PortConfig, Router, Transmit};

pub(super) fn call(s: &str) -> Callsign {
    s.parse().unwrap()
}

pub(super) fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

/// The station: 44.128.0.1/24, IP as N0QTC-1 on ports 0 (MTU 256) and 1 (MTU 128, VC).
pub(super) fn config() -> Config {
    let mut c = Config::new(ip("44.128.0.1"), 24);
    c.ports = vec![
        Some(PortConfig {
            call: call("N0QTC-1"),
            mtu: 256,
            mode: Mode::Datagram,
        }),
        Some(PortConfig {
            call: call("N0QTC-1"),
            mtu: 128,
            mode: Mode::VirtualCircuit,
        }),
        None,
    ];
    c
}

pub(super) fn router() -> Router {
    Router::new(config())
}

/// A UDP datagram from `src` to `dst` with `len` bytes of data.
pub(super) fn udp(src: &str, dst: &str, len: usize) -> Vec<u8> {
    datagram(src, dst, PROTO_UDP, &vec![0x5a; len], 64, false)
}

/// An ICMP echo request.
pub(super) fn ping(src: &str, dst: &str) -> Vec<u8> {
    let mut icmp = vec![8, 0, 0, 0, 0, 1, 0, 1];
    icmp.extend_from_slice(b"abcdefgh");
    let sum = crate::wire::ipv4::checksum(&icmp);
    icmp[2..4].copy_from_slice(&sum.to_be_bytes());
    datagram(src, dst, PROTO_ICMP, &icmp, 64, false)
}

pub(super) fn datagram(src: &str, dst: &str, proto: u8, data: &[u8], ttl: u8, df: bool) -> Vec<u8> {
    let h = Header {
        header_len: 20,
        tos: 0,
        total_len: 20 + data.len(),
        id: 0x1234,
        dont_fragment: df,
        more_fragments: false,
        frag_offset: 0,
        ttl,
        protocol: proto,
        src: ip(src),
        dst: ip(dst),
    };
    let mut out = Vec::new();
    h.emit(&mut out);
    out.extend_from_slice(data);
    out
}

/// Everything the router has to send now.
pub(super) fn drain(r: &mut Router) -> Vec<Transmit> {
    std::iter::from_fn(|| r.poll_transmit()).collect()
}

/// Time zero of a test.
pub(super) fn t0() -> Instant {
    #[allow(clippy::disallowed_methods)]
    Instant::now()
}
