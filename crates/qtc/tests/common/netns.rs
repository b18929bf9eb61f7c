//! A network namespace of the test's own, for addresses that are neither loopback nor shared
//! with the machine: an IPv6 /64 whose every address is local (AnyIP) and bindable.

/// A network namespace named after this process, removed when dropped.
pub struct Netns(pub String);

impl Netns {
    pub fn new(tag: &str) -> Netns {
        let name = format!("qtc-{tag}-{}", std::process::id());
        let ip = |args: &[&str]| {
            let out = std::process::Command::new("ip")
                .args(args)
                .output()
                .expect("ip (iproute2)");
            assert!(out.status.success(), "ip {args:?}: {out:?}");
        };
        ip(&["netns", "add", &name]);
        let ns = Netns(name);
        ip(&["-n", &ns.0, "link", "set", "lo", "up"]);
        // A /64 of the test's own: every address in it is local (AnyIP)...
        ip(&[
            "-n",
            &ns.0,
            "-6",
            "route",
            "add",
            "local",
            "fd00:29:0:1::/64",
            "dev",
            "lo",
        ]);
        // ... and bindable: IPv6 checks a bound address against the interfaces' own.
        ip(&[
            "netns",
            "exec",
            &ns.0,
            "sysctl",
            "-qw",
            "net.ipv6.ip_nonlocal_bind=1",
        ]);
        ns
    }

    /// Moves the calling thread into the namespace.
    pub fn enter(name: &str) {
        let f = std::fs::File::open(format!("/var/run/netns/{name}")).unwrap();
        nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.0])
            .status();
    }
}
