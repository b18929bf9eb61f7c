//! Addresses grouped into the networks one party holds. An IPv6 host gets a whole /64 (often
//! more), so an attacker rotating addresses inside it is one party, as one IPv4 address is:
//! the per-address caps, the lockout and the fair share of login places count by these groups
//! (`[telnet] ipv4_prefix`, `ipv6_prefix`).

use std::net::IpAddr;

/// How many leading bits of an address name its party.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grouping {
    /// IPv4 prefix length (32: each address on its own).
    pub v4: u8,
    /// IPv6 prefix length (64: a subnet, what a host is usually given).
    pub v6: u8,
}

impl Default for Grouping {
    fn default() -> Self {
        Grouping { v4: 32, v6: 64 }
    }
}

impl Grouping {
    /// The network `ip` belongs to: its address with the bits past the prefix cleared. An
    /// IPv4 address seen on an IPv6 socket (`::ffff:a.b.c.d`) counts as IPv4.
    pub fn group(&self, ip: IpAddr) -> IpAddr {
        match ip.to_canonical() {
            IpAddr::V4(a) => {
                let bits = u32::from(a) & mask32(self.v4);
                IpAddr::V4(bits.into())
            }
            IpAddr::V6(a) => {
                let bits = u128::from(a) & mask128(self.v6);
                IpAddr::V6(bits.into())
            }
        }
    }

    /// The group of `ip` as text, `addr/len`, as the store keeps it.
    pub fn label(&self, ip: IpAddr) -> String {
        let g = self.group(ip);
        let len = if g.is_ipv4() { self.v4 } else { self.v6 };
        format!("{g}/{len}")
    }

    /// A stored label read back, grouped as this configuration groups (the prefix lengths may
    /// have changed since it was written).
    pub fn parse(&self, label: &str) -> Option<IpAddr> {
        let addr = label.split('/').next()?.parse().ok()?;
        Some(self.group(addr))
    }
}

fn mask32(len: u8) -> u32 {
    match len {
        0 => 0,
        n => u32::MAX << (32 - u32::from(n.min(32))),
    }
}

fn mask128(len: u8) -> u128 {
    match len {
        0 => 0,
        n => u128::MAX << (128 - u32::from(n.min(128))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_groups_by_64_and_ipv4_stays_whole() {
        let g = Grouping::default();
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff:ffff:ffff:ffff".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(g.group(a), g.group(b));
        assert_ne!(g.group(a), g.group(other));
        assert_eq!(g.label(a), "2001:db8:1:2::/64");
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(g.group(v4), v4);
        assert_eq!(g.group("::ffff:192.0.2.7".parse().unwrap()), v4);
        assert_eq!(g.label(v4), "192.0.2.7/32");
        assert_eq!(g.parse("2001:db8:1:2::/64"), Some(g.group(a)));
        let wide = Grouping { v4: 24, v6: 48 };
        assert_eq!(wide.label(v4), "192.0.2.0/24");
        assert_eq!(wide.group(other), wide.group(a));
        assert_eq!(wide.parse("2001:db8:1:2::/64"), Some(wide.group(a)));
        assert_eq!(Grouping { v4: 0, v6: 0 }.label(v4), "0.0.0.0/0");
    }
}
