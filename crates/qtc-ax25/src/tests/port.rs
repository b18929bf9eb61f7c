use std::time::{Duration, Instant};

use super::util::{call, Pair};
use crate::link::{Config, DisconnectReason, Event, State};
use crate::port::{Port, PortEvent};
use crate::wire::{
    Address, CommandResponse, Control, Digipeater, Frame, Modulo, Path, Pid, Unnumbered,
};

fn base() -> Instant {
    Pair::new(Config::default(), Config::default(), 0).now
}

fn bbs_port() -> Port {
    let mut p = Port::new(Config {
        prefer_v22: false,
        ..Config::default()
    });
    p.add_local(call("QTC"));
    p
}

fn to_bbs(kind: Unnumbered, pf: bool) -> Vec<u8> {
    Frame::unnumbered(
        Address::new(call("QTC"), call("N0CALL-1"), CommandResponse::Command),
        kind,
        pf,
    )
    .to_bytes()
}

fn drain_tx(port: &mut Port, now: Instant) -> Vec<Frame> {
    std::iter::from_fn(|| port.poll_transmit(now)).collect()
}

#[test]
fn dm_for_frames_with_no_link() {
    let now = base();
    let mut port = bbs_port();
    // I frame with P=1 for a link that does not exist: DM, F=1.
    let i = Frame::information(
        Address::new(call("QTC"), call("N0CALL-1"), CommandResponse::Command),
        2,
        3,
        true,
        Pid::NO_LAYER3,
        b"x".to_vec(),
        Modulo::Mod8,
    );
    port.handle(now, &i.to_bytes());
    let out = drain_tx(&mut port, now);
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].control,
        Control::U {
            kind: Unnumbered::Dm,
            pf: true
        }
    );
    assert_eq!(out[0].address.dest, call("N0CALL-1"));
    assert_eq!(out[0].address.src, call("QTC"));
    assert_eq!(out[0].address.cr, CommandResponse::Response);

    // DISC: DM with F = P.
    port.handle(now, &to_bbs(Unnumbered::Disc, false));
    let out = drain_tx(&mut port, now);
    assert_eq!(
        out[0].control,
        Control::U {
            kind: Unnumbered::Dm,
            pf: false
        }
    );

    // Responses (UA, DM) for no link: silence.
    let mut ua = Frame::unnumbered(
        Address::new(call("QTC"), call("N0CALL-1"), CommandResponse::Response),
        Unnumbered::Ua,
        true,
    );
    port.handle(now, &ua.to_bytes());
    ua.control = Control::U {
        kind: Unnumbered::Dm,
        pf: true,
    };
    port.handle(now, &ua.to_bytes());
    assert!(drain_tx(&mut port, now).is_empty());

    // Strangers talking to someone else: never a DM.
    let other = Frame::unnumbered(
        Address::new(call("K1ABC"), call("N0CALL-1"), CommandResponse::Command),
        Unnumbered::Disc,
        true,
    );
    port.handle(now, &other.to_bytes());
    assert!(drain_tx(&mut port, now).is_empty());
    assert_eq!(port.link_count(), 0);
    assert_eq!(port.poll_timeout(), None);
}

#[test]
fn ui_frames_become_events() {
    let now = base();
    let mut port = bbs_port();
    let ui = Frame::ui(
        Address::new(call("QTC"), call("N0CALL-1"), CommandResponse::Command),
        Pid::NO_LAYER3,
        b"beacon".to_vec(),
    );
    port.handle(now, &ui.to_bytes());
    assert_eq!(port.poll_event(), Some(PortEvent::Ui(ui)));
    assert!(drain_tx(&mut port, now).is_empty());
}

#[test]
fn ui_frames_from_a_station_with_a_link_still_become_events() {
    // JNOS in virtual-circuit mode sends some IP datagrams in UI frames beside its link.
    let now = base();
    let mut port = bbs_port();
    port.handle(now, &to_bbs(Unnumbered::Sabm, true));
    drain_tx(&mut port, now);
    while port.poll_event().is_some() {}
    let ui = Frame::ui(
        Address::new(call("QTC"), call("N0CALL-1"), CommandResponse::Command),
        Pid::IP,
        b"a datagram".to_vec(),
    );
    port.handle(now, &ui.to_bytes());
    assert_eq!(port.poll_event(), Some(PortEvent::Ui(ui)));
    assert!(drain_tx(&mut port, now).is_empty());
    assert_eq!(port.link_count(), 1);
}

#[test]
fn incoming_connect_data_disconnect() {
    let now = base();
    let mut port = bbs_port();
    port.handle(now, &to_bbs(Unnumbered::Sabm, true));
    let out = drain_tx(&mut port, now);
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].control,
        Control::U {
            kind: Unnumbered::Ua,
            pf: true
        }
    );
    let Some(PortEvent::Incoming { id, local, remote }) = port.poll_event() else {
        panic!("no Incoming event");
    };
    assert_eq!((local, remote), (call("QTC"), call("N0CALL-1")));
    assert_eq!(
        port.poll_event(),
        Some(PortEvent::Link {
            id,
            event: Event::Connected {
                modulo: Modulo::Mod8
            }
        })
    );
    // A second SABM (our UA was lost) goes to the same link.
    port.handle(now, &to_bbs(Unnumbered::Sabm, true));
    assert_eq!(drain_tx(&mut port, now).len(), 1);
    assert_eq!(port.link_count(), 1);
    assert_eq!(port.poll_event(), None);

    // Data in.
    let i = Frame::information(
        Address::new(call("QTC"), call("N0CALL-1"), CommandResponse::Command),
        0,
        0,
        false,
        Pid::NO_LAYER3,
        b"hello".to_vec(),
        Modulo::Mod8,
    );
    port.handle(now, &i.to_bytes());
    assert_eq!(
        port.poll_event(),
        Some(PortEvent::Link {
            id,
            event: Event::Data(b"hello".to_vec())
        })
    );
    let out = drain_tx(&mut port, now);
    assert!(
        matches!(out[0].control, Control::S { nr: 1, .. }),
        "{out:?}"
    );

    // Reply via the link.
    port.link_mut(id).unwrap().send(now, b"welcome").unwrap();
    let out = drain_tx(&mut port, now);
    assert_eq!(out[0].info, b"welcome");

    // Peer disconnects: UA, event, link dropped once drained.
    port.handle(now, &to_bbs(Unnumbered::Disc, true));
    let out = drain_tx(&mut port, now);
    assert_eq!(
        out[0].control,
        Control::U {
            kind: Unnumbered::Ua,
            pf: true
        }
    );
    assert_eq!(
        port.poll_event(),
        Some(PortEvent::Link {
            id,
            event: Event::Disconnected {
                reason: DisconnectReason::Remote
            }
        })
    );
    assert_eq!(port.poll_event(), None);
    assert_eq!(port.link_count(), 0);
    assert_eq!(port.poll_timeout(), None);

    // The same station can call again.
    port.handle(now, &to_bbs(Unnumbered::Sabm, true));
    assert!(matches!(
        port.poll_event(),
        Some(PortEvent::Incoming { .. })
    ));
}

#[test]
fn connect_refused_when_full_or_not_accepting() {
    let now = base();
    let mut port = bbs_port();
    port.set_max_links(0);
    port.handle(now, &to_bbs(Unnumbered::Sabm, true));
    let out = drain_tx(&mut port, now);
    assert_eq!(
        out[0].control,
        Control::U {
            kind: Unnumbered::Dm,
            pf: true
        }
    );
    port.set_max_links(4);
    port.set_accept(false);
    port.handle(now, &to_bbs(Unnumbered::Sabme, false));
    let out = drain_tx(&mut port, now);
    assert_eq!(
        out[0].control,
        Control::U {
            kind: Unnumbered::Dm,
            pf: false
        }
    );
    assert_eq!(port.link_count(), 0);
}

#[test]
fn incoming_via_digipeaters_replies_on_reversed_path() {
    let now = base();
    let mut port = bbs_port();
    let mut addr = Address::new(call("QTC"), call("N0CALL-1"), CommandResponse::Command);
    addr.path
        .push(Digipeater {
            call: call("RELAY"),
            repeated: true,
        })
        .unwrap();
    addr.path
        .push(Digipeater {
            call: call("WIDE1-1"),
            repeated: false,
        })
        .unwrap();
    let mut sabm = Frame::unnumbered(addr, Unnumbered::Sabme, true);
    // Heard before the last digipeater repeated it: not ours yet.
    port.handle(now, &sabm.to_bytes());
    assert_eq!(port.link_count(), 0);
    assert!(drain_tx(&mut port, now).is_empty());

    sabm.address.path.as_mut_slice()[1].repeated = true;
    port.handle(now, &sabm.to_bytes());
    let out = drain_tx(&mut port, now);
    assert_eq!(
        out[0].control,
        Control::U {
            kind: Unnumbered::Ua,
            pf: true
        }
    );
    let hops: Vec<_> = out[0].address.path.as_slice().to_vec();
    assert_eq!(
        hops,
        vec![
            Digipeater::new(call("WIDE1-1")),
            Digipeater::new(call("RELAY"))
        ]
    );
    let Some(PortEvent::Incoming { id, .. }) = port.poll_event() else {
        panic!()
    };
    assert_eq!(port.link(id).unwrap().modulo(), Modulo::Mod128);
}

#[test]
fn two_ports_talk() {
    // The BBS port and a user's port, joined directly (no loss): outgoing connect, both
    // directions of data, local disconnect.
    let mut now = base();
    let mut user = Port::new(Config::default());
    user.add_local(call("N0CALL-1"));
    let mut bbs = bbs_port();
    let id = user
        .connect(now, call("N0CALL-1"), call("QTC"), Path::new())
        .unwrap();
    assert_eq!(
        user.connect(now, call("N0CALL-1"), call("QTC"), Path::new()),
        Err(crate::Error::LinkExists)
    );
    let mut bbs_rx = Vec::new();
    let mut user_rx = Vec::new();
    let mut bbs_id = None;
    let mut sent = false;
    for _ in 0..10_000 {
        let mut moved = false;
        while let Some(f) = user.poll_transmit(now) {
            bbs.handle(now, &f.to_bytes());
            moved = true;
        }
        while let Some(f) = bbs.poll_transmit(now) {
            user.handle(now, &f.to_bytes());
            moved = true;
        }
        while let Some(e) = bbs.poll_event() {
            match e {
                PortEvent::Incoming { id, .. } => bbs_id = Some(id),
                PortEvent::Link {
                    event: Event::Data(d),
                    ..
                } => bbs_rx.extend(d),
                _ => {}
            }
        }
        while let Some(e) = user.poll_event() {
            if let PortEvent::Link { event, .. } = e {
                match event {
                    Event::Connected { .. } if !sent => {
                        user.link_mut(id).unwrap().send(now, &[1u8; 3000]).unwrap();
                        sent = true;
                    }
                    Event::Data(d) => user_rx.extend(d),
                    _ => {}
                }
            }
        }
        if bbs_rx.len() == 3000 && user_rx.is_empty() {
            let bid = bbs_id.unwrap();
            bbs.link_mut(bid).unwrap().send(now, &[2u8; 3000]).unwrap();
        }
        if user_rx.len() == 3000 && user.link(id).is_some_and(|l| l.state() == State::Connected) {
            user.link_mut(id).unwrap().disconnect(now);
        }
        if !moved {
            match [user.poll_timeout(), bbs.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
            {
                Some(t) if user.link_count() + bbs.link_count() > 0 => {
                    now = now.max(t);
                    user.handle_timeout(now);
                    bbs.handle_timeout(now);
                }
                _ => break,
            }
        }
    }
    assert_eq!(bbs_rx, vec![1u8; 3000]);
    assert_eq!(user_rx, vec![2u8; 3000]);
    assert_eq!(user.link_count(), 0);
    assert_eq!(bbs.link_count(), 0);
    assert_eq!(user.poll_timeout(), None);
    let _ = Duration::ZERO;
}

#[test]
fn ui_frames_to_a_broadcast_address_are_taken_and_never_answered() {
    let now = base();
    let mut port = bbs_port();
    port.add_ui_destination(call("NODES"));
    let nodes = Frame::ui(
        Address::new(call("NODES"), call("N0BBB"), CommandResponse::Command),
        Pid::NETROM,
        b"\xFFBBB   ".to_vec(),
    );
    port.handle(now, &nodes.to_bytes());
    assert_eq!(port.poll_event(), Some(PortEvent::Ui(nodes)));
    // A connect to it is no connect to us: no UA, no DM, no link.
    let sabm = Frame::unnumbered(
        Address::new(call("NODES"), call("N0BBB"), CommandResponse::Command),
        Unnumbered::Sabm,
        true,
    );
    port.handle(now, &sabm.to_bytes());
    assert!(drain_tx(&mut port, now).is_empty());
    assert_eq!(port.poll_event(), None);
    assert_eq!(port.link_count(), 0);
}

#[test]
fn a_link_from_a_call_that_is_not_ours_gets_its_frames_and_nothing_else_does() {
    // The node (QTC) connects out for its user N0USR-15 to W1AW; the far end answers N0USR-15.
    let now = base();
    let mut node = bbs_port();
    let mut far = Port::new(Config::default());
    far.add_local(call("W1AW"));
    let id = node
        .connect(now, call("N0USR-15"), call("W1AW"), Path::new())
        .unwrap();
    for _ in 0..4 {
        while let Some(f) = node.poll_transmit(now) {
            far.handle(now, &f.to_bytes());
        }
        while let Some(f) = far.poll_transmit(now) {
            node.handle(now, &f.to_bytes());
        }
    }
    let mut up = false;
    while let Some(e) = node.poll_event() {
        up |= matches!(e, PortEvent::Link { id: i, event: Event::Connected { .. } } if i == id);
    }
    assert!(up, "the far end's UA reached the link");
    // Another station calling N0USR-15 is not answered (it is not the node's call).
    let sabm = Frame::unnumbered(
        Address::new(call("N0USR-15"), call("K1ABC"), CommandResponse::Command),
        Unnumbered::Sabm,
        true,
    );
    node.handle(now, &sabm.to_bytes());
    assert!(drain_tx(&mut node, now).is_empty());
    assert!(node.poll_event().is_none());
}
