//! `[ip]`'s TUN device: a network interface qtc creates and owns, through which the host's own
//! TCP/IP stack reaches the radio network (its telnet, SMTP and web answer there, its programs
//! reach stations on the air). Each read is one IPv4 datagram the host routed to the interface;
//! each write hands the host one datagram from the air.
//!
//! The `tun` crate opens `/dev/net/tun` (TUNSETIFF, without the packet-information header) and
//! sets the interface's address, netmask, MTU and up flag with the interface ioctls
//! (SIOCSIFADDR and the rest), the way `ip addr add` and `ip link set up` would: one IPv4
//! address needs no netlink. It takes CAP_NET_ADMIN (root, or the capability given to the
//! service: docs/radio.md). The descriptor is non-blocking and waits in epoll (tokio's
//! `AsyncFd`): an idle interface costs no system call.
//!
//! The routes of `[[ip.route]]` are the host's too, through the interface ([`add_route`]): they
//! are added once at start by iproute2's `ip route replace`, since a route needs the routing
//! ioctl (which the `tun` crate does not wrap, and this crate has no unsafe code) or netlink (a
//! netlink crate and its futures for one call at start-up).

use std::io;
use std::net::Ipv4Addr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The interface, open and up.
pub struct Tun {
    dev: tun::AsyncDevice,
}

/// Creates (or takes over, when it exists and is free) the TUN interface `name`, gives it
/// `address` on a network of `prefix_len` bits and `mtu`, and brings it up. The host routes
/// the network through it from then on.
pub fn open(name: &str, address: Ipv4Addr, prefix_len: u8, mtu: usize) -> io::Result<Tun> {
    let mask = match prefix_len {
        0 => 0,
        n => u32::MAX << (32 - u32::from(n.min(32))),
    };
    let mtu = u16::try_from(mtu).map_err(|_| io::Error::other("MTU above 65535"))?;
    let mut cfg = tun::Configuration::default();
    cfg.tun_name(name)
        .address(address)
        .netmask(Ipv4Addr::from(mask))
        .mtu(mtu)
        .up();
    let dev = tun::create_as_async(&cfg).map_err(|e| match e {
        tun::Error::Io(e) => e,
        other => io::Error::other(other.to_string()),
    })?;
    Ok(Tun { dev })
}

/// Routes `prefix` ("44.130.0.0/16") through the interface `name` on the host.
pub fn add_route(name: &str, prefix: &str) -> io::Result<()> {
    let out = std::process::Command::new("ip")
        .args(["route", "replace", prefix, "dev", name])
        .output()?;
    if out.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "`ip route replace {prefix} dev {name}`: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

impl Tun {
    /// Reads one datagram into `buf` (one the host sent through the interface).
    pub fn poll_recv(&mut self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let mut rb = ReadBuf::new(buf);
        match Pin::new(&mut self.dev).poll_read(cx, &mut rb) {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(rb.filled().len())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Writes one datagram (to the host); `Pending` while the interface's queue is full.
    pub fn poll_send(&mut self, cx: &mut Context<'_>, datagram: &[u8]) -> Poll<io::Result<()>> {
        Pin::new(&mut self.dev)
            .poll_write(cx, datagram)
            .map(|r| r.map(|_| ()))
    }
}
