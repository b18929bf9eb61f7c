//! Row 13: a network, not a pair. N qtc nodes on AXUDP over loopback, each hearing only its
//! neighbours (a ring with two chords), NET/ROM on (`broadcast = "20s"`), each node forwarding
//! B1 to its neighbours over AX.25 (routes `WW` and the calls its neighbour is the shortest way
//! to), as docs/forwarding.md and docs/netrom.md set nodes up. 20 bulletins are posted on the
//! telnet ports of three nodes and a personal message crosses the network; a node that has
//! begun to take the flood is killed with SIGKILL and started again 30 s later.
//!
//! Figures: how long NET/ROM takes to converge, how long the flood takes, the messages moved
//! against the minimum ((N - 1) x 20 bulletins and the personal message's hops), duplicates,
//! WARN lines and crossed calls, sessions that moved nothing, CPU and memory per node, and the
//! system calls of a settled node.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use crate::daemon::{Daemon, Opts, Spec};
use crate::measure::window;
use crate::report::Row;
use crate::util::{clk_tck, cpu_ticks, free_udp_port, now, sleep, status_kb, Ctx, R};
use crate::{binaries, or_broken, Plan};

/// Bulletins posted, in all.
const BULLETINS: usize = 20;
/// How long the killed node stays down.
const DOWN: Duration = Duration::from_secs(30);
/// `[netrom] broadcast`.
const BROADCAST: &str = "20s";
/// `[[partner]] interval`, as the issue measured it.
const INTERVAL: &str = "15s";
/// `[[partner]] poll` where the binary knows it (reverse forwarding: the partners all call
/// when they have mail, so a poll only collects what a call missed).
const POLL: &str = "10m";
/// How long a settled node is watched for system calls.
const IDLE: Duration = Duration::from_secs(20);
/// How long the flood may take before the run is broken (mail lost).
const FLOOD_LIMIT: Duration = Duration::from_secs(600);

/// Runs row 13 for each network size and binary.
pub fn run(o: &Opts, p: &Plan) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    for &n in &p.network {
        for (tag, ob) in binaries(o, p) {
            let how = format!(
                "{n} nodes on AXUDP over loopback, a ring with two chords (each hears only its \
                 neighbours), NET/ROM broadcast = \"{BROADCAST}\", B1 to each neighbour over \
                 AX.25 (interval = \"{INTERVAL}\"{}); {BULLETINS} bulletins posted by telnet at \
                 three nodes and one personal message across the network; one node killed -9 \
                 once it holds a bulletin, started again after {} s; logs, `qtc msg list` and \
                 /proc of every node, strace -f -c on a settled node for {} s",
                if knows_poll(&ob) {
                    format!(", poll = \"{POLL}\"")
                } else {
                    ", no poll key".to_string()
                },
                DOWN.as_secs(),
                IDLE.as_secs()
            );
            let what = format!("network of {n} nodes{tag}");
            rows.extend(or_broken(
                &format!("13{tag}"),
                &what,
                &how,
                measure(&ob, n, tag, &how),
            ));
        }
    }
    let notes = vec![
        "Row 13: messages moved are the messages the nodes stored from a partner (each \
         session's `N received`), against the minimum; WARN lines about the killed node's \
         calls are counted apart."
            .to_string(),
    ];
    (rows, notes)
}

/// Whether this qtc knows `[[partner]] poll` (the previous main does not).
fn knows_poll(o: &Opts) -> bool {
    let Ok(dir) = crate::util::TempDir::new("pollcheck") else {
        return false;
    };
    let cfg = dir.path().join("qtc.toml");
    let text = "[station]\ncallsign = \"N0CHK\"\n[store]\ndir = \"data\"\n\
                [[partner]]\ncallsign = \"N0AAA\"\nconnect = \"tcp:127.0.0.1:9\"\n\
                interval = \"1m\"\npoll = \"1h\"\n";
    std::fs::write(&cfg, text).is_ok() && crate::daemon::cli(&o.bin, &cfg, &["check"], b"").is_ok()
}

/// The network's shape: node names, links, and for each node the next hop to every other.
pub struct Shape {
    /// Three letters each: node `i` is the BBS `N0xxx`, the node `N0xxx-1`, alias `xxx`.
    pub names: Vec<String>,
    /// Links, each once.
    pub links: Vec<(usize, usize)>,
    /// `hops[i][k]`: the neighbour of `i` on a shortest way to `k`, and its length.
    pub hops: Vec<Vec<(usize, usize)>>,
}

impl Shape {
    /// A ring of `n` with two chords (across, and across the other way a quarter on).
    pub fn ring(n: usize) -> Shape {
        let names = (0..n)
            .map(|i| {
                let l = |d: usize| char::from(b'A' + (d % 26) as u8);
                format!("{}{}{}", l(i / 676), l(i / 26), l(i))
            })
            .collect();
        let mut links: Vec<(usize, usize)> = (0..n).map(|i| (i, (i + 1) % n)).collect();
        for (a, b) in [(0, n / 2), (n / 4, 3 * n / 4)] {
            let known = links.iter().any(|&l| l == (a, b) || l == (b, a));
            if a != b && !known {
                links.push((a, b));
            }
        }
        let hops = (0..n).map(|i| next_hops(n, &links, i)).collect();
        Shape { names, links, hops }
    }

    /// The neighbours of `i`.
    pub fn neighbours(&self, i: usize) -> Vec<usize> {
        self.links
            .iter()
            .filter_map(|&(a, b)| match (a == i, b == i) {
                (true, _) => Some(b),
                (_, true) => Some(a),
                _ => None,
            })
            .collect()
    }

    /// The node farthest from `i` (the first of them).
    pub fn farthest(&self, i: usize) -> usize {
        (0..self.names.len())
            .max_by_key(|&k| (self.hops[i][k].1, usize::MAX - k))
            .unwrap_or(i)
    }
}

/// Breadth first from `from`: for each node, the first hop and the length of a shortest way.
fn next_hops(n: usize, links: &[(usize, usize)], from: usize) -> Vec<(usize, usize)> {
    let mut out = vec![(usize::MAX, usize::MAX); n];
    out[from] = (from, 0);
    let mut queue = VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        let mut next: Vec<usize> = links
            .iter()
            .filter_map(|&(a, b)| (a == at).then_some(b).or((b == at).then_some(a)))
            .collect();
        next.sort_unstable();
        for k in next {
            if out[k].1 == usize::MAX {
                let first = if at == from { k } else { out[at].0 };
                out[k] = (first, out[at].1 + 1);
                queue.push_back(k);
            }
        }
    }
    out
}

/// Node `i`'s config after `[forward]`: its AXUDP port with NET/ROM and a partner per
/// neighbour.
fn node_config(s: &Shape, ports: &[u16], i: usize, poll: bool) -> String {
    let n = s.names.len();
    let peers: Vec<String> = s
        .neighbours(i)
        .iter()
        .map(|&j| {
            format!(
                "{{ callsign = \"N0{}-1\", address = \"127.0.0.1:{}\" }}",
                s.names[j], ports[j]
            )
        })
        .collect();
    let mut cfg = format!(
        "[[port]]\nname = \"udp\"\nkind = \"axudp\"\nlisten = \"127.0.0.1:{}\"\n\
         peers = [{}]\nfrack = \"1s\"\nnetrom_quality = 192\n\
         [netrom]\nalias = \"{}\"\nbroadcast = \"{BROADCAST}\"\n",
        ports[i],
        peers.join(", "),
        s.names[i]
    );
    for j in s.neighbours(i) {
        let mut routes = vec!["\"WW\"".to_string()];
        routes.extend(
            (0..n)
                .filter(|&k| k != i && s.hops[i][k].0 == j)
                .map(|k| format!("\"N0{}\"", s.names[k])),
        );
        cfg.push_str(&format!(
            "[[partner]]\ncallsign = \"N0{name}\"\nconnect = \"ax25:udp:N0{name}\"\n\
             protocol = \"b1\"\nroutes = [{}]\ninterval = \"{INTERVAL}\"\n{}",
            routes.join(", "),
            if poll {
                format!("poll = \"{POLL}\"\n")
            } else {
                String::new()
            },
            name = s.names[j],
        ));
    }
    cfg
}

/// The running network.
struct Net {
    shape: Shape,
    nodes: Vec<Daemon>,
}

impl Net {
    fn start(o: &Opts, n: usize) -> R<Net> {
        let shape = Shape::ring(n);
        let ports = (0..n).map(|_| free_udp_port()).collect::<R<Vec<u16>>>()?;
        let poll = knows_poll(o);
        let mut nodes = Vec::new();
        for i in 0..n {
            let call = format!("N0{}", shape.names[i]);
            let bbs: Vec<String> = shape
                .neighbours(i)
                .iter()
                .map(|&j| format!("N0{}", shape.names[j]))
                .collect();
            let mut users: Vec<(&str, &str, &str)> = vec![("N0USR", "pw", "")];
            users.extend(bbs.iter().map(|c| (c.as_str(), "fwdpw", "--bbs")));
            nodes.push(Daemon::prepare(
                o,
                &Spec {
                    call: &call,
                    users: &users,
                    extra: node_config(&shape, &ports, i, poll),
                    ..Spec::default()
                },
            )?);
        }
        // Started together, as after a power cut: their timers run in step unless jittered.
        std::thread::scope(|s| {
            let started: Vec<_> = nodes.iter_mut().map(|d| s.spawn(|| d.start())).collect();
            started
                .into_iter()
                .try_for_each(|t| t.join().unwrap_or_else(|_| Err("a start panicked".into())))
        })?;
        Ok(Net { shape, nodes })
    }

    /// The aliases node `i` has learned a route to so far.
    fn learned(&self, i: usize) -> BTreeSet<String> {
        let log = std::fs::read_to_string(self.nodes[i].log_path()).unwrap_or_default();
        log.lines()
            .filter_map(|l| {
                let rest = &l[l.find("NET/ROM route learned: ")? + 23..];
                Some(rest.split(':').next()?.to_string())
            })
            .collect()
    }

    /// Waits until every node has a route to every other.
    fn converge(&self, limit: Duration) -> R<()> {
        let n = self.nodes.len();
        crate::util::wait_for(limit, Duration::from_millis(500), || {
            (0..n).all(|i| self.learned(i).len() >= n - 1).then_some(())
        })
        .ctx(format!(
            "NET/ROM did not converge in {} s: learned {:?}",
            limit.as_secs(),
            (0..n).map(|i| self.learned(i).len()).collect::<Vec<_>>()
        ))
    }

    /// The BIDs node `i` holds, and how many of them it holds twice or more.
    fn bids(&self, i: usize) -> R<(BTreeSet<String>, usize)> {
        let list = self.nodes[i].cli(&["msg", "list", "--json"], b"")?;
        let mut seen = BTreeSet::new();
        let mut twice = 0;
        for l in list.lines() {
            let Some(at) = l.find("\"bid\":\"") else {
                continue;
            };
            let bid = l[at + 7..].split('"').next().unwrap_or_default();
            if !seen.insert(bid.to_string()) {
                twice += 1;
            }
        }
        Ok((seen, twice))
    }
}

/// Posts `count` bulletins (and, when `personal` names a BBS, a personal message to it) as
/// N0USR on `d`'s telnet port.
fn post(d: &Daemon, tag: &str, count: usize, personal: Option<&str>) -> R<()> {
    let mut c = d.login("N0USR", "pw")?;
    let mut send = |cmd: &str, subject: &str| -> R<()> {
        c.line(cmd)?;
        c.expect("Subject:")?;
        c.line(subject)?;
        c.expect("Enter message")?;
        c.line(&format!("{subject}: a line of text for the network row."))?;
        c.line("/EX")?;
        c.expect("stored")?;
        Ok(())
    };
    for k in 0..count {
        send("SB ALL @ WW", &format!("{tag} bulletin {k}"))?;
    }
    if let Some(to) = personal {
        send(&format!("SP N0USR @ {to}"), &format!("{tag} personal"))?;
    }
    c.line("B")
}

/// What the logs of all nodes say about forwarding.
#[derive(Debug, Default)]
struct Logs {
    /// Messages stored from a partner.
    moved: usize,
    /// Sessions that ended or failed.
    sessions: usize,
    /// Of those, sessions that moved nothing either way.
    empty: usize,
    /// WARN lines, and those of them about the killed node.
    warns: usize,
    warns_killed: usize,
    /// `a link to this station already exists`.
    link_exists: usize,
    /// Calls that waited for a SID that never came, or whose partner hung up before it.
    no_sid: usize,
}

impl Logs {
    fn read(net: &Net, killed: &str) -> Logs {
        let mut l = Logs::default();
        for d in &net.nodes {
            let text = std::fs::read_to_string(d.log_path()).unwrap_or_default();
            for line in text.lines() {
                l.line(line, killed);
            }
        }
        l
    }

    fn line(&mut self, line: &str, killed: &str) {
        if line.contains(" WARN ") {
            self.warns += 1;
            if line.contains(killed) {
                self.warns_killed += 1;
            }
        }
        if line.contains("a link to this station already exists") {
            self.link_exists += 1;
        }
        if line.contains("no SID from") || line.contains("closed the connection before its SID") {
            self.no_sid += 1;
        }
        let ended =
            line.contains("forwarding session ended") || line.contains("forwarding session failed");
        if let (true, Some(at)) = (ended, line.find("summary=")) {
            let mut it = line[at + 8..].split_whitespace();
            let rx: usize = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            let tx: usize = it
                .nth(1)
                .and_then(|v| v.trim_end_matches(',').parse().ok())
                .unwrap_or(0);
            self.sessions += 1;
            self.moved += rx;
            if rx + tx == 0 {
                self.empty += 1;
            }
        }
    }
}

/// One network: started, converged, flooded with a node killed and restarted, settled.
fn measure(o: &Opts, n: usize, tag: &str, how: &str) -> R<Vec<Row>> {
    let t0 = now();
    let mut net = Net::start(o, n)?;
    net.converge(Duration::from_secs(40 * n as u64))?;
    let converged = t0.elapsed().as_secs_f64();
    let posters = [0, n / 3, 2 * n / 3];
    let far = net.shape.farthest(0);
    // A neighbour of the first poster, away from the others and from the personal message's
    // end: it is killed once it holds a bulletin.
    let victim = (1..n)
        .find(|k| !posters.contains(k) && *k != far)
        .ctx("no node to kill")?;
    let killed = format!("N0{}", net.shape.names[victim]);
    let flood0 = now();
    let per = [7, 7, 6];
    for (k, &at) in posters.iter().enumerate() {
        let to = (k == 0).then(|| format!("N0{}", net.shape.names[far]));
        post(&net.nodes[at], &format!("N{k}"), per[k], to.as_deref())?;
    }
    crate::util::wait_for(FLOOD_LIMIT, Duration::from_millis(200), || {
        net.bids(victim).ok().filter(|(b, _)| !b.is_empty())
    })
    .ctx(format!("{killed} never took a bulletin"))?;
    net.nodes[victim].kill()?;
    let down = now();
    let want = |i: usize| BULLETINS + usize::from(i == far || i == 0);
    let done = |net: &Net, skip: Option<usize>| -> bool {
        (0..n)
            .filter(|&i| Some(i) != skip)
            .all(|i| net.bids(i).is_ok_and(|(b, _)| b.len() >= want(i)))
    };
    crate::util::wait_for(DOWN, Duration::from_millis(500), || {
        done(&net, Some(victim)).then_some(())
    });
    let live_secs = flood0.elapsed().as_secs_f64();
    sleep(DOWN.saturating_sub(down.elapsed()));
    net.nodes[victim].start()?;
    crate::util::wait_for(FLOOD_LIMIT, Duration::from_millis(500), || {
        done(&net, None).then_some(())
    })
    .ctx(format!(
        "the flood never reached every node: {}",
        missing(&net, &want)
    ))?;
    let all_secs = flood0.elapsed().as_secs_f64();
    settle_and_report(&net, n, tag, how, (converged, live_secs, all_secs), &killed)
}

/// Which nodes lack messages, for a broken run.
fn missing(net: &Net, want: &dyn Fn(usize) -> usize) -> String {
    (0..net.nodes.len())
        .filter_map(|i| {
            let have = net.bids(i).map(|(b, _)| b.len()).unwrap_or(0);
            (have < want(i)).then(|| format!("{} has {have} of {}", net.shape.names[i], want(i)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Lets queues empty and retries pass, then watches one node idle; the row's figures.
fn settle_and_report(
    net: &Net,
    n: usize,
    tag: &str,
    how: &str,
    (converged, live_secs, all_secs): (f64, f64, f64),
    killed: &str,
) -> R<Vec<Row>> {
    // Two intervals: a call that found a partner's queue in flight ("later") comes again.
    sleep(Duration::from_secs(35));
    let far = net.shape.farthest(0);
    let hops = net.shape.hops[0][far].1;
    let minimum = (n - 1) * BULLETINS + hops;
    let dups: usize = (0..n)
        .map(|i| net.bids(i).map(|(_, d)| d))
        .sum::<R<usize>>()?;
    // A node with three partners (a chord's end).
    let watched = &net.nodes[0];
    let w = window(watched.pid(), IDLE, watched.dir.path())?;
    let logs = Logs::read(net, killed);
    let tck = clk_tck();
    let mut cpu = Vec::new();
    let mut mem = Vec::new();
    for d in &net.nodes {
        cpu.push(cpu_ticks(d.pid())? as f64 / tck);
        mem.push(status_kb(d.pid(), "VmHWM")? as f64 / 1024.0);
    }
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let figure = format!(
        "converged {converged:.0} s; flood {live_secs:.0} s to the live nodes, {all_secs:.0} s \
         to all (the killed node down {} s); moved {} (minimum {minimum}), {dups} duplicates; \
         {} sessions, {} moved nothing; {} WARN ({} about the killed node), {} `link already \
         exists`, {} calls with no SID; CPU per node {:.2} s mean, {:.2} s max; VmHWM {:.1} MB \
         mean, {:.1} MB max; settled node with 3 partners: {} syscalls in {} s{}",
        DOWN.as_secs(),
        logs.moved,
        logs.sessions,
        logs.empty,
        logs.warns,
        logs.warns_killed,
        logs.link_exists,
        logs.no_sid,
        mean(&cpu),
        max(&cpu),
        mean(&mem),
        max(&mem),
        w.calls.total,
        IDLE.as_secs(),
        if w.calls.total > 0 {
            format!(" ({})", w.calls.top(3))
        } else {
            String::new()
        },
    );
    let met =
        logs.moved == minimum && dups == 0 && logs.warns == logs.warns_killed && logs.no_sid == 0;
    Ok(vec![Row::check(
        &format!("13{tag}"),
        &format!("network of {n} nodes{tag}"),
        figure,
        "moved = minimum, 0 duplicates, no WARN but about the killed node, no call without \
         a SID; settled: no syscalls but NET/ROM's broadcasts (one a node every 20 s, not \
         judged here; scripts/idle-syscalls.sh --partners: 0)",
        met,
        how,
    )])
}
