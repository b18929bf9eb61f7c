//! Unit tests: commands, negotiation, subnegotiation, splitting, output encoder.

use crate::q::Q;
use crate::*;

const ALL_VERBS: [u8; 4] = [WILL, WONT, DO, DONT];

fn rx(t: &mut Telnet, input: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let (mut app, mut net) = (Vec::new(), Vec::new());
    t.receive(input, &mut app, &mut net);
    (app, net)
}

fn server() -> Telnet {
    Telnet::new(Role::Server)
}

fn started_server() -> Telnet {
    let mut t = server();
    let mut net = Vec::new();
    t.start(&mut net);
    assert!(net.is_empty(), "line mode: the server offers nothing");
    t
}

fn tx(t: &mut Telnet, data: &[u8]) -> Vec<u8> {
    let mut net = Vec::new();
    t.send(data, &mut net);
    net
}

// ---- start ---------------------------------------------------------------------------------

#[test]
fn start_server_twice_offers_nothing() {
    let mut t = started_server();
    let mut net = Vec::new();
    t.start(&mut net);
    assert!(net.is_empty());
}

#[test]
fn start_client_is_silent() {
    let mut t = Telnet::new(Role::Client);
    let mut net = Vec::new();
    t.start(&mut net);
    assert!(net.is_empty());
    assert_eq!(t.role(), Role::Client);
}

// ---- plain data ------------------------------------------------------------------------------

#[test]
fn plain_data_passes() {
    let mut t = server();
    let (app, net) = rx(&mut t, b"hello\r\nworld\n\rx\x00y\x01\x7f\xfe");
    assert_eq!(app, b"hello\r\nworld\n\rx\x00y\x01\x7f\xfe");
    assert!(net.is_empty());
}

#[test]
fn iac_iac_is_ff() {
    let mut t = server();
    let (app, net) = rx(&mut t, &[b'a', IAC, IAC, b'b', IAC, IAC, IAC, IAC]);
    assert_eq!(app, [b'a', 0xFF, b'b', 0xFF, 0xFF]);
    assert!(net.is_empty());
}

#[test]
fn cr_nul_becomes_cr() {
    let mut t = server();
    assert_eq!(rx(&mut t, b"a\r\0b").0, b"a\rb");
    // Only the one NUL after CR goes; a second one is data.
    assert_eq!(rx(&mut t, b"\r\0\0").0, b"\r\0");
    // NUL not after CR is data.
    assert_eq!(rx(&mut t, b"\0x\0").0, b"\0x\0");
    // CR LF and CR CR pass unchanged.
    assert_eq!(rx(&mut t, b"\r\n\r\r\0").0, b"\r\n\r\r");
    // IAC IAC between CR and NUL ends the CR.
    assert_eq!(rx(&mut t, &[CR, IAC, IAC, 0]).0, [CR, 0xFF, 0]);
}

#[test]
fn cr_nul_split_and_across_commands() {
    let mut t = server();
    assert_eq!(rx(&mut t, b"a\r").0, b"a\r");
    assert_eq!(rx(&mut t, b"\0b").0, b"b");
    // A negotiation between CR and NUL does not change the data stream.
    let (app, _) = rx(&mut t, &[CR, IAC, NOP, 0, b'z']);
    assert_eq!(app, b"\rz");
}

// ---- simple commands -------------------------------------------------------------------------

#[test]
fn simple_commands_are_consumed() {
    for c in [NOP, DM, BRK, IP, AO, ABORT, EC, EL, GA] {
        let mut t = server();
        let (app, net) = rx(&mut t, &[b'a', IAC, c, b'b']);
        assert_eq!(app, b"ab", "command {c}");
        assert!(net.is_empty(), "command {c}");
        assert_eq!(t.poll_error(), None);
    }
}

#[test]
fn ctrl_z_from_a_line_mode_client_ends_a_message_and_its_timing_mark_is_answered() {
    // inetutils telnet, Ctrl-Z: `IAC SUSP IAC DO TIMING-MARK`, then the Enter key. Until the
    // mark is answered the client throws our output away.
    let mut t = started_server();
    let (app, net) = rx(&mut t, &[IAC, SUSP, IAC, DO, opt::TM]);
    assert_eq!(app, [END_KEY]);
    assert_eq!(net, [IAC, WILL, opt::TM]);
    let (app, net) = rx(&mut t, b"\r\n");
    assert_eq!(app, b"\r\n");
    assert!(net.is_empty());
    // Every mark is answered (the option is never left on), Ctrl-D alike.
    let (app, net) = rx(&mut t, &[IAC, EOF, IAC, DO, opt::TM, IAC, DONT, opt::TM]);
    assert_eq!(app, [END_KEY]);
    assert_eq!(net, [IAC, WILL, opt::TM]);
    assert!(!t.local_enabled(opt::TM));
    assert_eq!(t.poll_error(), None);
    // Binary data (a compressed forwarding session) gains no byte.
    t.set_transparent(true);
    let (app, _) = rx(&mut t, &[b'a', IAC, SUSP, b'b']);
    assert_eq!(app, b"ab");
}

#[test]
fn ayt_is_answered_on_net() {
    let mut t = server();
    let (app, net) = rx(&mut t, &[b'a', IAC, AYT, b'b']);
    assert_eq!(app, b"ab");
    assert_eq!(net, AYT_REPLY);
}

#[test]
fn stray_se_and_unknown_command() {
    let mut t = server();
    let (app, net) = rx(&mut t, &[b'a', IAC, SE, b'b']);
    assert_eq!((app.as_slice(), net.len()), (&b"ab"[..], 0));
    assert_eq!(t.poll_error(), Some(Error::StraySe));
    assert_eq!(t.poll_error(), None);
    let (app, _) = rx(&mut t, &[IAC, b'A', b'c']);
    assert_eq!(app, b"c", "the byte after IAC is never data");
    assert_eq!(t.poll_error(), Some(Error::UnknownCommand(b'A')));
}

#[test]
fn only_first_error_kept() {
    let mut t = server();
    rx(&mut t, &[IAC, SE, IAC, 1]);
    assert_eq!(t.poll_error(), Some(Error::StraySe));
    assert_eq!(t.poll_error(), None);
}

// ---- subnegotiation --------------------------------------------------------------------------

#[test]
fn subnegotiation_dropped() {
    let mut t = server();
    // NAWS 80x24 with an escaped 0xFF in the payload.
    let input = [b'a', IAC, SB, 31, 0, 80, IAC, IAC, 24, IAC, SE, b'b'];
    let (app, net) = rx(&mut t, &input);
    assert_eq!(app, b"ab");
    assert!(net.is_empty());
    assert_eq!(t.poll_error(), None);
}

#[test]
fn subnegotiation_payload_never_leaks() {
    let mut t = server();
    // Payload bytes that look like data, CR NUL, IAC-less verbs.
    let input = [IAC, SB, 24, 0, b'x', CR, 0, WILL, 1, IAC, SE];
    let (app, net) = rx(&mut t, &input);
    assert!(app.is_empty());
    assert!(net.is_empty());
}

#[test]
fn subnegotiation_with_iac_as_option() {
    let mut t = server();
    let (app, _) = rx(&mut t, &[IAC, SB, IAC, SE, b'k']);
    assert_eq!(app, b"k");
}

#[test]
fn overlong_subnegotiation_reported_and_bounded() {
    let mut t = server();
    let mut input = vec![IAC, SB, 24];
    input.extend(vec![b'x'; MAX_SUBNEGOTIATION * 40]);
    let (app, _) = rx(&mut t, &input);
    assert!(app.is_empty());
    assert_eq!(
        t.poll_error(),
        Some(Error::SubnegotiationTooLong {
            option: 24,
            limit: MAX_SUBNEGOTIATION
        })
    );
    assert_eq!(t.poll_error(), None, "reported once");
    let (app, _) = rx(&mut t, &[IAC, SE, b'z']);
    assert_eq!(app, b"z");
}

#[test]
fn subnegotiation_ended_by_other_command() {
    let mut t = server();
    // Peer forgot SE; the IAC DO ECHO ends it and is obeyed (refused: not hiding).
    let (app, net) = rx(&mut t, &[IAC, SB, 24, 1, IAC, DO, opt::ECHO, b'q']);
    assert_eq!(app, b"q");
    assert_eq!(net, [IAC, WONT, opt::ECHO]);
    assert_eq!(
        t.poll_error(),
        Some(Error::UnterminatedSubnegotiation {
            option: 24,
            command: DO
        })
    );
    // IAC IAC ending is just data inside SB; IAC <simple command> ends it.
    let (app, _) = rx(&mut t, &[IAC, SB, 24, IAC, NOP, b'r']);
    assert_eq!(app, b"r");
}

// ---- negotiation: unsupported options --------------------------------------------------------

#[test]
fn unsupported_options_refused_and_never_looped() {
    for role in [Role::Server, Role::Client] {
        for option in [opt::BINARY, 24, 31, 34, 39, 200, 255] {
            let mut t = Telnet::new(role);
            assert_eq!(rx(&mut t, &[IAC, DO, option]).1, [IAC, WONT, option]);
            assert_eq!(rx(&mut t, &[IAC, WILL, option]).1, [IAC, DONT, option]);
            // Answers to our refusals (or spontaneous negatives) are not answered.
            assert!(rx(&mut t, &[IAC, WONT, option]).1.is_empty());
            assert!(rx(&mut t, &[IAC, DONT, option]).1.is_empty());
            assert!(!t.local_enabled(option) && !t.remote_enabled(option));
        }
    }
}

// ---- negotiation: SGA ------------------------------------------------------------------------

#[test]
fn sga_asked_by_the_client_means_character_mode_with_our_echo() {
    let mut t = started_server();
    // DO SGA: we agree and offer to echo.
    assert_eq!(
        rx(&mut t, &[IAC, DO, opt::SGA]).1,
        [IAC, WILL, opt::SGA, IAC, WILL, opt::ECHO]
    );
    // Until the client agrees to our echo, nothing is echoed.
    assert!(rx(&mut t, b"x").1.is_empty());
    let (app, net) = rx(
        &mut t,
        &[IAC, DO, opt::ECHO, b'L', b'X', 0x7f, b'B', b'\r', 0],
    );
    assert_eq!(app, b"LX\x7fB\r", "the keys reach the application as typed");
    assert_eq!(net, b"LX\x08 \x08B\r\n");
    // A password is not echoed, and echo stays on for the client afterwards.
    let mut net = Vec::new();
    t.set_hide_input(true, &mut net);
    assert!(net.is_empty(), "our ECHO is on already");
    assert!(rx(&mut t, b"secret\r\0").1.is_empty());
    t.set_hide_input(false, &mut net);
    assert!(net.is_empty(), "the client must not start echoing itself");
    assert_eq!(rx(&mut t, b"ok\x15").1, b"ok\x08 \x08\x08 \x08");
    // The client leaves character mode: it echoes itself again.
    assert_eq!(
        rx(&mut t, &[IAC, DONT, opt::SGA]).1,
        [IAC, WONT, opt::SGA, IAC, WONT, opt::ECHO]
    );
    assert!(rx(&mut t, b"typed").1.is_empty());
}

#[test]
fn echo_doubles_iac() {
    let mut t = started_server();
    rx(&mut t, &[IAC, DO, opt::SGA, IAC, DO, opt::ECHO]);
    assert_eq!(rx(&mut t, &[IAC, IAC]).1, [IAC, IAC]);
}

#[test]
fn line_mode_client_is_never_echoed() {
    let mut t = started_server();
    assert!(rx(&mut t, b"LX\x7fB\r\n").1.is_empty());
    assert_eq!(rx(&mut t, &[IAC, DO, opt::ECHO]).1, [IAC, WONT, opt::ECHO]);
}

#[test]
fn sga_requested_by_peer_both_ways() {
    for role in [Role::Server, Role::Client] {
        let mut t = Telnet::new(role);
        // The server also offers to echo (character mode); that is tested above.
        let echo: &[u8] = match role {
            Role::Server => &[IAC, WILL, opt::ECHO],
            Role::Client => &[],
        };
        assert_eq!(
            rx(&mut t, &[IAC, DO, opt::SGA]).1,
            [&[IAC, WILL, opt::SGA][..], echo].concat()
        );
        assert_eq!(rx(&mut t, &[IAC, WILL, opt::SGA]).1, [IAC, DO, opt::SGA]);
        assert!(t.local_enabled(opt::SGA) && t.remote_enabled(opt::SGA));
        // Peer turns both off: we acknowledge once each, then stay quiet.
        assert_eq!(rx(&mut t, &[IAC, DONT, opt::SGA]).1, [IAC, WONT, opt::SGA]);
        assert_eq!(rx(&mut t, &[IAC, WONT, opt::SGA]).1, [IAC, DONT, opt::SGA]);
        assert!(rx(&mut t, &[IAC, DONT, opt::SGA, IAC, WONT, opt::SGA])
            .1
            .is_empty());
    }
}

// ---- negotiation: ECHO -----------------------------------------------------------------------

#[test]
fn echo_unsolicited_do_refused_when_not_hiding() {
    let mut t = server();
    assert_eq!(rx(&mut t, &[IAC, DO, opt::ECHO]).1, [IAC, WONT, opt::ECHO]);
    assert!(!t.is_input_hidden());
}

#[test]
fn neither_role_lets_the_peer_echo() {
    let mut s = server();
    assert_eq!(
        rx(&mut s, &[IAC, WILL, opt::ECHO]).1,
        [IAC, DONT, opt::ECHO]
    );
    // LinBPQ offers WILL ECHO to a forwarding client: agreeing would bring our lines back.
    let mut c = Telnet::new(Role::Client);
    assert_eq!(
        rx(&mut c, &[IAC, WILL, opt::ECHO]).1,
        [IAC, DONT, opt::ECHO]
    );
    assert!(!c.remote_enabled(opt::ECHO));
    assert!(rx(&mut c, &[IAC, WONT, opt::ECHO]).1.is_empty());
}

#[test]
fn transparent_data_only_escapes_iac() {
    let mut t = Telnet::new(Role::Client);
    t.set_transparent(true);
    // An FBB length header `30 bc 0d 00` and an 0xFF, as xfbbd sends them.
    let (app, net) = rx(&mut t, &[0x30, 0xbc, CR, NUL, IAC, IAC, CR, NUL, NUL]);
    assert_eq!(app, [0x30, 0xbc, CR, NUL, IAC, CR, NUL, NUL]);
    assert!(net.is_empty());
    let mut out = Vec::new();
    t.send_raw(&[0x30, 0xbc, CR, NUL, IAC], &mut out);
    assert_eq!(out, [0x30, 0xbc, CR, NUL, IAC, IAC]);
    t.set_transparent(false);
    assert_eq!(rx(&mut t, &[CR, NUL]).0, [CR]);
}

#[test]
fn hide_input_cycle() {
    let mut t = started_server();
    let mut net = Vec::new();
    t.set_hide_input(true, &mut net);
    assert_eq!(net, [IAC, WILL, opt::ECHO]);
    assert!(!t.is_input_hidden(), "not until the client agrees");
    assert!(rx(&mut t, &[IAC, DO, opt::ECHO]).1.is_empty());
    assert!(t.is_input_hidden());
    net.clear();
    t.set_hide_input(true, &mut net);
    assert!(net.is_empty(), "already hidden");
    t.set_hide_input(false, &mut net);
    assert_eq!(net, [IAC, WONT, opt::ECHO]);
    assert!(rx(&mut t, &[IAC, DONT, opt::ECHO]).1.is_empty());
    assert!(!t.is_input_hidden());
    net.clear();
    t.set_hide_input(false, &mut net);
    assert!(net.is_empty(), "already shown");
}

#[test]
fn hide_input_refused_by_client() {
    let mut t = server();
    let mut net = Vec::new();
    t.set_hide_input(true, &mut net);
    assert!(rx(&mut t, &[IAC, DONT, opt::ECHO]).1.is_empty());
    assert!(!t.is_input_hidden());
}

#[test]
fn hide_input_client_turns_it_off() {
    let mut t = server();
    let mut net = Vec::new();
    t.set_hide_input(true, &mut net);
    rx(&mut t, &[IAC, DO, opt::ECHO]);
    // The client may revoke at any time; we must agree.
    assert_eq!(
        rx(&mut t, &[IAC, DONT, opt::ECHO]).1,
        [IAC, WONT, opt::ECHO]
    );
    assert!(!t.is_input_hidden());
}

#[test]
fn hide_show_before_answer_is_queued() {
    // RFC 1143: hide, then show before the DO arrives -> queue; the DO triggers WONT; the DONT
    // settles it; nothing further.
    let mut t = server();
    let mut net = Vec::new();
    t.set_hide_input(true, &mut net);
    t.set_hide_input(false, &mut net);
    assert_eq!(net, [IAC, WILL, opt::ECHO], "the WONT waits for the answer");
    assert_eq!(
        t.options[usize::from(opt::ECHO)].us.state(),
        (Q::WantYes, true)
    );
    assert_eq!(rx(&mut t, &[IAC, DO, opt::ECHO]).1, [IAC, WONT, opt::ECHO]);
    assert!(rx(&mut t, &[IAC, DONT, opt::ECHO]).1.is_empty());
    assert!(!t.is_input_hidden());
    // hide / show / hide again cancels the queue.
    net.clear();
    t.set_hide_input(true, &mut net);
    t.set_hide_input(false, &mut net);
    t.set_hide_input(true, &mut net);
    assert_eq!(net, [IAC, WILL, opt::ECHO]);
    assert!(rx(&mut t, &[IAC, DO, opt::ECHO]).1.is_empty());
    assert!(t.is_input_hidden());
}

#[test]
fn show_hide_while_disabling_is_queued() {
    let mut t = server();
    let mut net = Vec::new();
    t.set_hide_input(true, &mut net);
    rx(&mut t, &[IAC, DO, opt::ECHO]);
    net.clear();
    t.set_hide_input(false, &mut net);
    t.set_hide_input(true, &mut net);
    assert_eq!(net, [IAC, WONT, opt::ECHO]);
    // The DONT answering our WONT triggers the queued WILL.
    assert_eq!(
        rx(&mut t, &[IAC, DONT, opt::ECHO]).1,
        [IAC, WILL, opt::ECHO]
    );
    assert!(rx(&mut t, &[IAC, DO, opt::ECHO]).1.is_empty());
    assert!(t.is_input_hidden());
}

#[test]
fn mismatched_answer_is_reported_not_answered() {
    let mut t = server();
    let mut net = Vec::new();
    t.set_hide_input(true, &mut net);
    rx(&mut t, &[IAC, DO, opt::ECHO]);
    net.clear();
    t.set_hide_input(false, &mut net);
    // Peer answers our WONT with DO: RFC 1143 error; no reply, option off.
    assert!(rx(&mut t, &[IAC, DO, opt::ECHO]).1.is_empty());
    assert_eq!(
        t.poll_error(),
        Some(Error::NegotiationMismatch { option: opt::ECHO })
    );
    assert!(!t.is_input_hidden());
}

// ---- no loops between two instances ----------------------------------------------------------

/// Shuttle bytes between two codecs until both are quiet; returns the number of rounds.
fn settle(a: &mut Telnet, b: &mut Telnet, mut a_out: Vec<u8>, mut b_out: Vec<u8>) -> usize {
    let mut app = Vec::new();
    for round in 0..20 {
        if a_out.is_empty() && b_out.is_empty() {
            assert!(app.is_empty(), "negotiation leaked into app data");
            return round;
        }
        let (mut na, mut nb) = (Vec::new(), Vec::new());
        b.receive(&a_out, &mut app, &mut nb);
        a.receive(&b_out, &mut app, &mut na);
        a_out = na;
        b_out = nb;
    }
    panic!("negotiation did not settle");
}

#[test]
fn server_and_client_settle() {
    let (mut s, mut c) = (server(), Telnet::new(Role::Client));
    let (mut so, mut co) = (Vec::new(), Vec::new());
    s.start(&mut so);
    c.start(&mut co);
    assert!(settle(&mut s, &mut c, so, co) <= 2);
    assert!(!s.local_enabled(opt::SGA) && !c.remote_enabled(opt::SGA));
    let mut so = Vec::new();
    s.set_hide_input(true, &mut so);
    settle(&mut s, &mut c, so, Vec::new());
    assert!(!s.is_input_hidden() && !c.remote_enabled(opt::ECHO));
    let mut so = Vec::new();
    s.set_hide_input(false, &mut so);
    settle(&mut s, &mut c, so, Vec::new());
    assert!(!s.is_input_hidden() && !c.remote_enabled(opt::ECHO));
}

#[test]
fn every_verb_option_pair_settles() {
    for role in [Role::Server, Role::Client] {
        for option in 0..=255u8 {
            for verb in ALL_VERBS {
                let (mut a, mut b) = (Telnet::new(role), Telnet::new(Role::Client));
                // b "sends" the verb without tracking it: worst case for a.
                settle(&mut a, &mut b, Vec::new(), vec![IAC, verb, option]);
            }
        }
    }
}

// ---- split at every byte boundary ------------------------------------------------------------

#[test]
fn split_at_every_boundary() {
    let mut input = Vec::new();
    input.extend_from_slice(b"ab\r\0c\r\nd");
    input.extend_from_slice(&[IAC, IAC, b'e', IAC, DO, opt::SGA, IAC, WILL, opt::ECHO]);
    input.extend_from_slice(&[IAC, SB, 31, 0, 80, IAC, IAC, 24, IAC, SE, b'f']);
    input.extend_from_slice(&[IAC, AYT, IAC, NOP, IAC, DO, 24, CR, IAC, IAC, CR, 0, b'g']);
    let whole = {
        let mut t = server();
        rx(&mut t, &input)
    };
    assert_eq!(whole.0, b"ab\rc\r\nd\xffef\r\xff\rg");
    for cut in 0..=input.len() {
        let mut t = server();
        let (mut app, mut net) = rx(&mut t, &input[..cut]);
        let (app2, net2) = rx(&mut t, &input[cut..]);
        app.extend(app2);
        net.extend(net2);
        assert_eq!((&app, &net), (&whole.0, &whole.1), "cut at {cut}");
    }
    // And byte by byte.
    let mut t = server();
    let (mut app, mut net) = (Vec::new(), Vec::new());
    for &b in &input {
        t.receive(&[b], &mut app, &mut net);
    }
    assert_eq!((app, net), whole);
}

// ---- output encoder --------------------------------------------------------------------------

#[test]
fn send_line_endings() {
    let mut t = server();
    assert_eq!(tx(&mut t, b"a\rb\nc\r\nd"), b"a\r\nb\r\nc\r\nd");
    assert_eq!(tx(&mut t, b"\r\r-"), b"\r\n\r\n-");
    assert_eq!(tx(&mut t, b"\n\n"), b"\r\n\r\n");
    assert_eq!(tx(&mut t, b"x\n\r"), b"x\r\n\r\n");
    // The previous call ended in CR: this LF belongs to it.
    assert_eq!(tx(&mut t, b"\ny"), b"y");
    assert_eq!(tx(&mut t, b"\r\n\n"), b"\r\n\r\n");
    assert_eq!(tx(&mut t, b""), b"");
}

#[test]
fn send_cr_then_lf_split_across_calls() {
    let mut t = server();
    assert_eq!(tx(&mut t, b"line\r"), b"line\r\n");
    assert_eq!(tx(&mut t, b""), b"", "an empty call keeps the pending CR");
    assert_eq!(tx(&mut t, b"\n"), b"");
    assert_eq!(tx(&mut t, b"\n"), b"\r\n", "a second LF is a new line end");
    // A byte in between ends the pairing.
    assert_eq!(tx(&mut t, b"\r"), b"\r\n");
    assert_eq!(tx(&mut t, b"z"), b"z");
    assert_eq!(tx(&mut t, b"\n"), b"\r\n");
    // send_raw in between ends it too.
    let mut net = Vec::new();
    t.send(b"\r", &mut net);
    t.send_raw(b"-", &mut net);
    t.send(b"\n", &mut net);
    assert_eq!(net, b"\r\n-\r\n");
}

#[test]
fn send_doubles_iac() {
    let mut t = server();
    assert_eq!(
        tx(&mut t, &[0xFF, b'a', 0xFF, 0xFF]),
        [IAC, IAC, b'a', IAC, IAC, IAC, IAC]
    );
}

#[test]
fn send_raw_only_escapes() {
    let mut t = server();
    let mut net = Vec::new();
    t.send_raw(b"a\rb\nc\r\n\xff", &mut net);
    assert_eq!(net, b"a\rb\nc\r\n\xff\xff");
    net.clear();
    // CR NUL is stuffed so the peer's CR NUL rule restores it, also across calls.
    t.send_raw(b"\r\0\0", &mut net);
    t.send_raw(b"\r", &mut net);
    t.send_raw(b"\0", &mut net);
    assert_eq!(net, b"\r\0\0\0\r\0\0");
}

#[test]
fn send_and_receive_round_trip_examples() {
    let mut a = server();
    let mut b = Telnet::new(Role::Client);
    let data = b"a\r\0\xff\r\xff\0\r\r\0\n";
    let mut net = Vec::new();
    a.send_raw(data, &mut net);
    assert_eq!(rx(&mut b, &net).0, data);
}

#[test]
fn errors_display() {
    let e = Error::SubnegotiationTooLong {
        option: 24,
        limit: MAX_SUBNEGOTIATION,
    };
    assert!(e.to_string().contains("256"));
}

#[test]
fn what_was_typed_before_echo_was_agreed_is_not_echoed_however_the_reads_fall() {
    // A client asks for character mode, types "hel" before it agrees to our ECHO, then "lo".
    // Found by the telnet_codec fuzz target: echo followed the option state at the end of a
    // read, so one read echoed "hel" and two reads did not.
    let input: &[u8] = b"\xff\xfd\x03hel\xff\xfd\x01lo";
    let mut whole = server();
    let (_, net_whole) = rx(&mut whole, input);
    let mut split = server();
    let (_, mut net_split) = rx(&mut split, &input[..6]);
    net_split.extend(rx(&mut split, &input[6..]).1);
    assert_eq!(net_whole, net_split);
    assert!(net_whole.ends_with(b"lo"));
    assert!(!net_whole.windows(3).any(|w| w == b"hel"));
}

#[test]
fn a_peer_that_sends_no_command_has_not_spoken_telnet() {
    let (mut app, mut net) = (Vec::new(), Vec::new());
    let mut t = Telnet::new(Role::Server);
    t.receive(b"N0PAT\r\xff\xff\r", &mut app, &mut net);
    assert!(!t.peer_sent_command(), "IAC IAC is data");
    t.receive(b"\xff\xfd\x01", &mut app, &mut net);
    assert!(t.peer_sent_command());
}
