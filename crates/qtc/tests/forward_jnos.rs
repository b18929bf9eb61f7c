//! The real JNOS 2.0o.2 (built from tests/peers/jnos, run in a network namespace of its own),
//! set up as docs/forwarding.md tells both sysops: qtc calling JNOS's telnet mailbox
//! (`telnet = true`), and JNOS calling qtc's forwarding port or its telnet port (a `tcp` line
//! in forward.bbs, no `cronly`). In B1, B0, FBB ASCII and MBL, 50 messages each way in one
//! session: personal mail and bulletins, one of 100 KB, CP437, UTF-8 and 0xFF bytes in every
//! body; each at the other side exactly once, byte for byte.
//!
//! Skipped when JNOS cannot run here (not root, no tun device), unless QTC_REQUIRE_PEERS=1.
#![allow(clippy::disallowed_methods)]

mod common;

use common::jnos::{self, Jnos, Setup, Stored, HOST_IP, JNOS_IP, JNOS_TELNET};
use common::jnos_mail::{
    self, check_at_jnos, check_at_qtc, for_jnos, from_jnos, jnos_lines, post_at_jnos, shrink,
    wait_filed_at_jnos, AX25_MAX_BODY, JNOS_AREAS,
};
use common::{forging, write_import, Daemon, GenMsg, Rng};

/// Ports inside the test's own namespace: nothing else listens there, so fixed numbers cannot
/// collide with other tests (JNOS's forward.bbs names the port before qtc starts).
const QTC_TELNET: u16 = 6300;
const QTC_FORWARD: u16 = 6301;
/// qtc's password on JNOS (user n0qtc), and JNOS's on qtc (user N0JNS).
const QTC_ON_JNOS: &str = "qtcpw";
const JNOS_ON_QTC: &str = "jnspw";

/// Who calls, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Caller {
    /// `qtc ctl forward N0JNS`: qtc calls JNOS's telnet mailbox, `telnet = true`.
    Qtc,
    /// `mbox kick n0qtc`: JNOS calls qtc's raw forwarding port.
    JnosToForwardPort,
    /// JNOS calls qtc's telnet port.
    JnosToTelnetPort,
}

/// JNOS's login script for qtc's `Callsign:` and `Password:` prompts (docs/forwarding.md).
const LOGIN_SCRIPT: &[&str] = &["+allsign", "*15", ".n0jns", "+assword", "*15", ".jnspw"];

/// qtc's SMTP port (its `[mail]` door), in the namespace.
const QTC_SMTP: u16 = 2525;

/// Where a relay that cuts a connection listens, in the namespace (for a cut test, the port
/// JNOS or qtc calls instead of the other's).
const RELAY: u16 = 6302;

/// The AXUDP port both ends use (JNOS sends from and accepts only the same port number).
const AXUDP_PORT: u16 = 10093;

/// The link the session runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    /// TCP: JNOS's telnet mailbox, qtc's forwarding or telnet port.
    Tcp,
    /// AX.25 over KISS: JNOS's `ax0` on a pty pair, qtc's `kiss-pty` port on the other end.
    Kiss,
    /// AX.25 over AXUDP between JNOS's `axu0` and qtc's `axudp` port.
    Axudp,
}

/// One rig: who calls over what, in which mode qtc's partner entry offers.
#[derive(Clone, Copy, Debug)]
struct Plan {
    caller: Caller,
    protocol: &'static str,
    via: Via,
    /// The caller calls [`RELAY`] (a relay the test starts) instead of the other.
    relayed: bool,
}

impl Plan {
    fn tcp(caller: Caller, protocol: &'static str) -> Plan {
        Plan {
            caller,
            protocol,
            via: Via::Tcp,
            relayed: false,
        }
    }
}

fn jnos_setup(plan: Plan) -> Setup {
    let setup = Setup::default()
        .user("n0usr", "pw")
        .partner("n0qtc", QTC_ON_JNOS)
        .opt("--areas", &JNOS_AREAS.join(" ").to_ascii_lowercase())
        .opt("--smtp-timer", "1");
    // JNOS sends a partner what forward.bbs lists for it also when the partner calls: the
    // record is there whoever calls (JNOS's own calls go where it names).
    match plan.via {
        // Over the air JNOS calls qtc's BBS callsign; qtc prompts nothing for a BBS caller.
        Via::Kiss => return setup.kiss().connect("connect ax0 n0qtc", &[]),
        Via::Axudp => {
            let port = AXUDP_PORT.to_string();
            return setup
                .opt("--axudp", &port)
                .connect("connect axu0 n0qtc", &[]);
        }
        Via::Tcp => {}
    }
    let port = match plan.caller {
        _ if plan.relayed => RELAY,
        Caller::Qtc | Caller::JnosToForwardPort => QTC_FORWARD,
        Caller::JnosToTelnetPort => QTC_TELNET,
    };
    setup.connect(&format!("tcp {HOST_IP} {port}"), LOGIN_SCRIPT)
}

/// qtc's configuration for its JNOS neighbour, as docs/forwarding.md and docs/radio.md give
/// it (`jnos` is JNOS's data directory, where its KISS pty is).
fn qtc_config(plan: Plan, jnos: &std::path::Path) -> String {
    let (ip, port) = if plan.relayed {
        (HOST_IP, RELAY)
    } else {
        (JNOS_IP, JNOS_TELNET)
    };
    let radio = match plan.via {
        Via::Tcp => String::new(),
        Via::Kiss => format!(
            "[[port]]\nname = \"radio\"\nkind = \"kiss-pty\"\ndevice = \"{}\"\n",
            jnos.join("kiss.pty").display()
        ),
        Via::Axudp => format!(
            "[[port]]\nname = \"radio\"\nkind = \"axudp\"\nlisten = \"{HOST_IP}:{AXUDP_PORT}\"\n\
             peers = [{{ callsign = \"N0JNS\", address = \"{JNOS_IP}:{AXUDP_PORT}\" }}]\n"
        ),
    };
    let call = match (plan.caller, plan.via) {
        // JNOS's BBS callsign (`ax25 bbscall`), not its interface call, which waits for a line
        // from the caller before it says anything. When JNOS calls, the same line says where
        // it comes from: over the air a partner's call is its partner only by its own way.
        (_, Via::Kiss | Via::Axudp) => "connect = \"ax25:radio:N0JNS-1\"\n".to_string(),
        (Caller::Qtc, Via::Tcp) => {
            format!("connect = \"tcp:{ip}:{port}\"\npassword = \"{QTC_ON_JNOS}\"\ntelnet = true\n")
        }
        _ => String::new(),
    };
    format!(
        "{radio}[forward]\nlisten = [\"{HOST_IP}:{QTC_FORWARD}\"]\n[[partner]]\ncallsign = \"N0JNS\"\n\
         protocol = \"{}\"\nroutes = [\"N0JNS\", \"WW\"]\n{call}",
        plan.protocol
    )
}

/// A JNOS and a qtc N0QTC in its namespace, partners.
struct Rig {
    qtc: Daemon,
    jnos: Jnos,
}

impl Rig {
    fn start(plan: Plan) -> Option<Rig> {
        Rig::start_with(plan, |s| s, "")
    }

    /// [`Rig::start`] with more for JNOS's setup, and more keys for qtc's `[[partner]]`.
    fn start_with(
        plan: Plan,
        more: impl FnOnce(Setup) -> Setup,
        partner_keys: &str,
    ) -> Option<Rig> {
        let bin = jnos::binary()?;
        let jnos = Jnos::start(&bin, more(jnos_setup(plan)));
        let qtc = Daemon::start_bbs_at(
            &format!("{HOST_IP}:{QTC_TELNET}"),
            &jnos.wrapper(),
            "N0QTC",
            &[("N0JNS", JNOS_ON_QTC, "--bbs"), ("N0USR", "pw", "")],
            &(qtc_config(plan, &jnos.data()) + partner_keys),
        );
        Some(Rig { qtc, jnos })
    }

    /// The whole log of both, for a failure message.
    fn logs(&self) -> String {
        jnos_mail::logs(&self.qtc, &self.jnos)
    }
}

/// One session, `per_side` messages each way, in the mode qtc logs as `mode` (`protocol`
/// being what qtc's partner entry offers).
fn both_ways(plan: Plan, mode: &str, per_side: usize) {
    let Plan {
        caller, protocol, ..
    } = plan;
    let t0 = std::time::Instant::now();
    let Some(rig) = Rig::start(plan) else {
        return;
    };
    let phase = |what: &str| {
        eprintln!(
            "{caller:?} {protocol} {:?}: {what} at {:.1} s",
            plan.via,
            t0.elapsed().as_secs_f64()
        )
    };
    let mut rng = Rng(0x4a4e_4f53 ^ per_side as u64);
    let mut to_jnos = for_jnos(&mut rng, per_side);
    let mut to_qtc = from_jnos(&mut rng, per_side);
    if plan.via != Via::Tcp {
        // JNOS's AX.25 sends about one I frame a second as set up by default (stop and wait,
        // `ax25 maxframe 1`, and 1 s acknowledgement delay, `ax25 t2`): a few KB each here.
        for m in to_jnos.iter_mut().chain(&mut to_qtc) {
            shrink(m, AX25_MAX_BODY);
        }
    }
    let file = write_import(rig.qtc.dir.path(), "to-jnos.txt", &to_jnos, &mut rng);
    rig.qtc.import(&file, per_side);
    phase("started");
    post_at_jnos(&rig.jnos, &to_qtc);
    phase("posted at JNOS");

    match caller {
        Caller::Qtc => {
            let out = rig.qtc.forward_ok("N0JNS", &rig.qtc);
            let counts = format!("{per_side} received, {per_side} sent");
            if !out.contains(&counts) {
                check_at_qtc(&rig.qtc, &rig.jnos, &to_qtc);
            }
            assert!(out.contains(&counts), "{out}\n{}", rig.logs());
        }
        _ => {
            rig.jnos.console(&["mbox kick n0qtc"]);
            wait_qtc_log(&rig, "forwarding session ended partner=N0JNS");
        }
    }
    phase("forwarded");
    if plan.via != Via::Tcp {
        // JNOS heard on the port, never qtc's own call (JNOS digipeats: `ax25 digipeat on`).
        let heard = rig.qtc.ctl(&["heard"]);
        assert!(
            heard.contains("N0JNS") && !heard.contains("N0QTC"),
            "{heard}"
        );
    }
    rig.qtc.wait_for_log(&format!("mode={mode}"));
    let log = rig.qtc.log();
    assert!(!log.contains("forwarding session failed"), "{}", rig.logs());
    check_at_qtc(&rig.qtc, &rig.jnos, &to_qtc);
    wait_filed_at_jnos(&rig.jnos, &to_jnos);
    check_at_jnos(&rig.qtc, &rig.jnos, &to_jnos);
    phase(&format!(
        "checked: {mode}, {} JNOS -> qtc and {} qtc -> JNOS, each once, byte for byte",
        to_qtc.len(),
        to_jnos.len()
    ));
}

/// The four modes: qtc's partner `protocol`, and the mode qtc logs.
const MODES: [(&str, &str); 4] = [
    ("b1", "B1"),
    ("b0", "B0"),
    ("fbb", "FbbAscii"),
    ("mbl", "Mbl"),
];

/// Runs the sessions of `plans` at once (`per_side` messages each way, in the mode qtc logs
/// as the second of each pair), each with its own JNOS in its own namespace: most of a
/// scenario's time is JNOS's SMTP queue filing mail (up to 30 s when two deliveries meet at
/// one area's lock), not CPU.
fn at_once(plans: &[(Plan, &str)], per_side: usize) {
    at_once_run(plans, |plan, mode| both_ways(plan, mode, per_side));
}

/// `run` for each of `plans` at once, each on a thread (each rig has its JNOS); fails with
/// every failed plan's reason.
fn at_once_run(plans: &[(Plan, &str)], run: impl Fn(Plan, &str) + Sync) {
    if jnos::binary().is_none() {
        return;
    }
    let failed: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = plans
            .iter()
            .map(|&(plan, mode)| {
                let run = &run;
                let thread = std::thread::Builder::new()
                    .name(format!("{plan:?}"))
                    .spawn_scoped(s, move || run(plan, mode))
                    .unwrap();
                (plan, thread)
            })
            .collect();
        runs.into_iter()
            .filter_map(|(plan, run)| {
                run.join().err().map(|e| {
                    let why = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    format!("{plan:?}: {why}")
                })
            })
            .collect()
    });
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// `caller`'s session over TCP in every mode, 50 messages each way.
fn every_mode(caller: Caller) {
    let plans: Vec<(Plan, &str)> = MODES
        .iter()
        .map(|&(protocol, mode)| (Plan::tcp(caller, protocol), mode))
        .collect();
    at_once(&plans, 50);
}

#[test]
fn qtc_calls_jnos_in_every_mode() {
    every_mode(Caller::Qtc);
}

#[test]
fn jnos_calls_the_forward_port_in_every_mode() {
    every_mode(Caller::JnosToForwardPort);
}

#[test]
fn jnos_calls_the_telnet_port_in_every_mode() {
    every_mode(Caller::JnosToTelnetPort);
}

/// One 100 KB message (CP437, UTF-8, 0xFF in it) with its `bid` and `subject`.
fn big(rng: &mut Rng, kind: char, bid: &str, subject: &str) -> GenMsg {
    GenMsg {
        kind,
        to: "N0XYZ".into(),
        at: "N0JNS".into(),
        from: "N0ABC".into(),
        bid: bid.into(),
        subject: subject.into(),
        lines: jnos_lines(rng, 100 * 1024),
    }
}

/// Bytes after which the relay cuts: inside the 100 KB message's compressed data (about 50
/// KB), well after the login and the proposals.
const CUT_AFTER: usize = 20_000;

#[test]
fn a_cut_toward_jnos_and_the_next_call_deliver_it_once() {
    let plan = Plan {
        relayed: true,
        ..Plan::tcp(Caller::Qtc, "b1")
    };
    let Some(rig) = Rig::start(plan) else {
        return;
    };
    rig.jnos.relay(RELAY, (JNOS_IP, JNOS_TELNET), 2, CUT_AFTER);
    let mut rng = Rng(0xc07);
    let msg = big(&mut rng, 'P', "CUT1_N0QTC", "cut toward jnos");
    let file = write_import(
        rig.qtc.dir.path(),
        "big.txt",
        std::slice::from_ref(&msg),
        &mut rng,
    );
    rig.qtc.import(&file, 1);
    let (ok, out) = rig.qtc.try_ctl(&["forward", "N0JNS"]);
    assert!(
        !ok && out.contains("error"),
        "the cut call: {out}\n{}",
        rig.logs()
    );
    let out = rig.qtc.forward_ok("N0JNS", &rig.qtc);
    assert!(out.contains("1 sent"), "{out}\n{}", rig.logs());
    rig.jnos.console(&["smtp kick"]);
    rig.jnos
        .wait_area("n0xyz", "the message filed", |s| !s.is_empty());
    check_at_jnos(&rig.qtc, &rig.jnos, std::slice::from_ref(&msg));
    eprintln!("cut toward JNOS: 1 qtc -> JNOS (100 KB, B1), once, byte for byte");
}

#[test]
fn a_cut_from_jnos_is_resumed_and_delivered_once() {
    // JNOS's own forwarding cycle every 5 s (`mbox timer`): it calls again after the cut by
    // itself, as a JNOS in service does (a `mbox kick` right after a cut finds its old
    // session still counted as connected, and does nothing).
    let more = |s: Setup| s.opt("--fwd-timer", "5");
    let plan = Plan {
        relayed: true,
        ..Plan::tcp(Caller::JnosToForwardPort, "b1")
    };
    let Some(rig) = Rig::start_with(plan, more, "") else {
        return;
    };
    rig.jnos.relay(RELAY, (HOST_IP, QTC_FORWARD), 2, CUT_AFTER);
    let mut rng = Rng(0xc08);
    let mut msg = big(&mut rng, 'P', "", "cut from jnos");
    (msg.to, msg.at, msg.from) = ("N0ABC".into(), "N0QTC".into(), "N0USR".into());
    post_at_jnos(&rig.jnos, std::slice::from_ref(&msg));
    wait_qtc_log(&rig, "forwarding session failed partner=N0JNS");
    wait_qtc_log(&rig, "forwarding session ended partner=N0JNS");
    // qtc kept the start and asked for the rest (`FS A<offset>`); JNOS 2.0o.2 takes the
    // answer but sends the whole file again (fbbfwd.c logs the offset and ignores it).
    rig.qtc.wait_for_log("answer=AcceptFrom");
    check_at_qtc(&rig.qtc, &rig.jnos, std::slice::from_ref(&msg));
    eprintln!("cut from JNOS: 1 JNOS -> qtc (100 KB, B1), once, byte for byte");
}

/// Waits for `what` in qtc's log, as long as JNOS's forwarding cycle may take.
fn wait_qtc_log(rig: &Rig, what: &str) {
    rig.qtc.wait_for_log_within(what, common::PATIENCE * 3);
}

#[test]
fn a_login_script_that_answers_before_the_prompts_is_not_refused() {
    // LinBPQ's FBBPORT wants the login blind (docs/forwarding.md); a sysop who reuses that
    // script for JNOS sends both answers at once: JNOS prompts for them afterwards, as a
    // user typing ahead sees it, and takes them.
    let script = "script = [ { send = \"{login}\" }, { send = \"{password}\" } ]\n";
    let Some(rig) = Rig::start_with(Plan::tcp(Caller::Qtc, "b1"), |s| s, script) else {
        return;
    };
    let mut rng = Rng(0xea1);
    let to_jnos = for_jnos(&mut rng, 2);
    let file = write_import(rig.qtc.dir.path(), "early.txt", &to_jnos, &mut rng);
    rig.qtc.import(&file, 2);
    let out = rig.qtc.forward_ok("N0JNS", &rig.qtc);
    assert!(out.contains("2 sent"), "{out}\n{}", rig.logs());
}

#[test]
fn ax25_with_jnos_over_kiss_and_axudp_both_ways() {
    // Fewer and smaller messages than on TCP: JNOS's AX.25, as set up by default, sends
    // about one frame a second.
    let plans: Vec<(Plan, &str)> = [Via::Kiss, Via::Axudp]
        .into_iter()
        .flat_map(|via| {
            [Caller::Qtc, Caller::JnosToForwardPort].map(|caller| {
                let plan = Plan {
                    via,
                    ..Plan::tcp(caller, "b1")
                };
                (plan, "B1")
            })
        })
        .collect();
    at_once(&plans, 3);
}

/// An SMTP body that ends a message wherever it is read raw, each end followed by send lines,
/// one a partner relays in B1 with ^Z lines too (issue 35; `common::forging`), and a plain
/// message after them, qtc calling JNOS in `plan`'s mode: JNOS files each as one message,
/// whole (each such line with one space more before it, the long line in JNOS's pieces), the
/// plain one after them, and nothing else.
fn forging_to_jnos(plan: Plan, mode: &str) {
    let extra = format!(
        "{}[mail]\nsmtp_listen = \"{HOST_IP}:{QTC_SMTP}\"\n",
        forging::RELAY_PARTNER
    );
    let Some(rig) = Rig::start_with(plan, |s| s, &extra) else {
        return;
    };
    let out = rig
        .qtc
        .cli(&["user", "add", "N0PTR", "--bbs", "--password", "ptrpw"]);
    assert!(out.status.success(), "{out:?}");
    let connect = |port| {
        rig.jnos
            .in_ns(|| std::net::TcpStream::connect((HOST_IP, port)).expect("qtc's port"))
    };
    let body = forging::text(&forging::smtp_lines());
    forging::submit(
        connect(QTC_SMTP),
        "N0USR",
        "pw",
        "N0XYZ@N0JNS",
        "forging",
        &body,
    );
    let relayed = forging::text(&forging::relayed_lines());
    let to = ("N0XYZ", "N0JNS");
    forging::deliver_b1(
        connect(QTC_FORWARD),
        "N0PTR",
        "ptrpw",
        to,
        "RELAY1_N0PTR",
        &relayed,
    );
    let mut rng = Rng(0xf0);
    let mut marker = for_jnos(&mut rng, 1).remove(0);
    (marker.kind, marker.to, marker.at) = ('P', "N0XYZ".into(), "N0JNS".into());
    (marker.bid, marker.subject) = ("MARK_N0QTC".into(), "marker".into());
    let file = write_import(
        rig.qtc.dir.path(),
        "marker.txt",
        std::slice::from_ref(&marker),
        &mut rng,
    );
    rig.qtc.import(&file, 1);
    let out = rig.qtc.forward_ok("N0JNS", &rig.qtc);
    assert!(out.contains("0 received, 3 sent"), "{out}\n{}", rig.logs());
    rig.qtc.wait_for_log(&format!("mode={mode}"));
    rig.jnos.console(&["smtp kick"]);
    rig.jnos
        .wait_area("n0xyz", "the three messages filed", |s| {
            s.iter().any(|m| m.subject == "marker")
                && s.iter()
                    .filter(|m| m.subject.starts_with("forging"))
                    .count()
                    == 2
        });
    let area = rig.jnos.area("n0xyz");
    for lines in forging::both_escaped(mode == "B1") {
        // In the pieces JNOS reads a line in, under qtc's R: line.
        let mut want = Vec::new();
        for l in lines {
            for piece in l.chunks(127).chain(l.is_empty().then_some(&[][..])) {
                want.extend_from_slice(piece);
                want.push(b'\n');
            }
        }
        let found = area.iter().find(|m| {
            let nl = m.body.iter().position(|&b| b == b'\n').unwrap_or(0);
            m.body.starts_with(b"R:") && m.body[nl + 1..] == want
        });
        assert!(
            found.is_some(),
            "not filed whole: {:?} in {:?}\n{}",
            String::from_utf8_lossy(&want),
            area.iter()
                .map(|m| String::from_utf8_lossy(&m.body))
                .collect::<Vec<_>>(),
            rig.logs()
        );
    }
    // Nothing forged, in any area.
    for e in std::fs::read_dir(rig.jnos.data().join("spool/mail")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "txt") {
            for m in Stored::parse_mbox(&std::fs::read(&p).unwrap()) {
                assert!(
                    !m.bid.to_ascii_uppercase().starts_with("FORGED")
                        && !m.subject.starts_with("Forged"),
                    "forged at JNOS in {}: {m:?}",
                    p.display()
                );
            }
        }
    }
    eprintln!("forging bodies, {mode}: each one message at JNOS, whole; nothing forged");
}

#[test]
fn a_body_written_to_forge_mail_arrives_whole_at_jnos_and_forges_nothing() {
    let plans: Vec<(Plan, &str)> = [("mbl", "Mbl"), ("fbb", "FbbAscii"), ("b1", "B1")]
        .iter()
        .map(|&(protocol, mode)| (Plan::tcp(Caller::Qtc, protocol), mode))
        .collect();
    at_once_run(&plans, forging_to_jnos);
}
