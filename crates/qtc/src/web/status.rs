//! The Status page: the health model `qtc ctl status` prints (crate::health), as HTML: radio
//! ports up or down, each partner's queue, last result, next call and a Forward now button,
//! the sessions in progress, the store's size, the NET/ROM node (nodes, neighbours, circuits),
//! the IP router (ARP table, routes, counters) and the last pages to the sysop (`T`).

use std::fmt::Write;
use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse};
use qtc_mail::text::visible_line;

use super::pages::{csrf, esc, page};
use super::{need_sysop, store_down, Page, Web};
use crate::health::{time, Health, SessionReport};
use crate::online::SysopPage;
use crate::radio::ip::IpView;
use crate::radio::netrom::NetromView;

/// `GET /status`.
pub async fn status(State(web): State<Arc<Web>>, headers: HeaderMap) -> Page {
    let s = need_sysop(&web, &headers).await?;
    let h = crate::health::gather(&web.health)
        .await
        .map_err(|_| store_down())?;
    let mut b = body(&h, &csrf(&s));
    if let Some(v) = &h.netrom {
        b.push_str(&netrom(v));
    }
    if let Some(v) = &h.ip {
        b.push_str(&ip(v));
    }
    b.push_str(&pages(&web.health.online.recent_pages()));
    Ok(Html(page(&s, "Status", &b)).into_response())
}

/// The last pages to the sysop, newest first; a user's words shown as text, never as markup
/// or control characters.
fn pages(pages: &[SysopPage]) -> String {
    let mut b = String::from("<h2>Pages to the sysop</h2>");
    if pages.is_empty() {
        b.push_str("<p>None since start.</p>");
        return b;
    }
    b.push_str("<table><tr><th>Time</th><th>From</th><th>Text</th></tr>");
    for p in pages {
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            time(p.at),
            esc(&visible_line(&p.from)),
            esc(&visible_line(&p.text))
        );
    }
    b.push_str("</table>");
    b
}

/// The NET/ROM node: nodes with their best route, neighbours, circuits.
fn netrom(v: &NetromView) -> String {
    let mut b = format!(
        "<h2>NET/ROM node {}</h2><h3>Nodes ({})</h3>",
        esc(&format!("{}:{}", v.alias, v.call)),
        v.nodes.len()
    );
    if !v.nodes.is_empty() {
        b.push_str("<table id=\"nodes\"><tr><th>Node</th><th>Quality</th><th>Via</th><th>Obsolescence</th></tr>");
        for n in &v.nodes {
            let Some(r) = n.routes.first() else { continue };
            let obs = r
                .obsolescence
                .map_or("locked".to_string(), |o| o.to_string());
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{} on {}</td><td>{obs}</td></tr>",
                esc(&n.name()),
                r.quality,
                esc(&r.neighbour),
                esc(&r.port)
            );
        }
        b.push_str("</table>");
    }
    let _ = write!(b, "<h3>Neighbours ({})</h3>", v.neighbours.len());
    if !v.neighbours.is_empty() {
        b.push_str("<table><tr><th>Port</th><th>Neighbour</th><th>Quality</th><th>Nodes</th></tr>");
        for n in &v.neighbours {
            let lock = if n.locked { " (locked)" } else { "" };
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}{lock}</td><td>{}</td></tr>",
                esc(&n.port),
                esc(&n.call),
                n.quality,
                n.nodes
            );
        }
        b.push_str("</table>");
    }
    let _ = write!(b, "<h3>Circuits ({})</h3>", v.circuits.len());
    if !v.circuits.is_empty() {
        b.push_str("<table><tr><th>Circuit</th><th>User</th><th>Node</th><th>State</th><th>Unsent</th></tr>");
        for c in &v.circuits {
            let _ = write!(
                b,
                "<tr><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.id),
                c.direction,
                esc(&c.user),
                esc(&c.node),
                c.state,
                c.unsent
            );
        }
        b.push_str("</table>");
    }
    b
}

/// The IP router: its ARP table, the addresses ARP asks for, the routes, the counters.
fn ip(v: &IpView) -> String {
    let mut b = format!(
        "<h2>IP {} on {}</h2><h3>ARP ({})</h3>",
        esc(&v.address),
        esc(&v.tun),
        v.arp.len()
    );
    if !v.arp.is_empty() {
        b.push_str("<table id=\"arp\"><tr><th>Address</th><th>Callsign</th><th>Port</th><th>Expires</th></tr>");
        for a in &v.arp {
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&a.address),
                esc(&a.callsign),
                esc(&a.port),
                a.expires.map_or("static".to_string(), time)
            );
        }
        b.push_str("</table>");
    }
    if !v.asking.is_empty() {
        let _ = write!(b, "<p>Asking: {}</p>", esc(&v.asking.join(", ")));
    }
    let _ = write!(
        b,
        "<h3>Routes ({})</h3><table id=\"ip-routes\"><tr><th>To</th><th>Via</th></tr>",
        v.routes.len()
    );
    for r in &v.routes {
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td></tr>",
            esc(&r.to),
            esc(&r.hop())
        );
    }
    b.push_str("</table><p>Since start: ");
    let counters: Vec<String> = v.stats.iter().map(|(n, c)| format!("{c} {n}")).collect();
    b.push_str(&esc(&counters.join(", ")));
    b.push_str("</p>");
    b
}

/// The forwarding sessions in progress, as a table.
pub(super) fn sessions(list: &[SessionReport]) -> String {
    let mut b =
        String::from("<table><tr><th>Partner</th><th>Role</th><th>Since</th><th>Mode</th></tr>");
    for s in list {
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.partner),
            s.role,
            time(s.since),
            esc(s.mode.as_deref().unwrap_or("-"))
        );
    }
    b.push_str("</table>");
    b
}

fn body(h: &Health, csrf: &str) -> String {
    let mut b = String::from("<h2>Radio ports</h2>");
    if h.ports.is_empty() {
        b.push_str("<p>None configured.</p>");
    } else {
        b.push_str(
            "<table><tr><th>Port</th><th>State</th><th>Frames in/out</th><th>Heard</th></tr>",
        );
        for p in &h.ports {
            let state = if p.device.up {
                format!("up since {}", time(p.device.since))
            } else {
                format!(
                    "<b class=\"err\">down</b> since {} ({}){}",
                    time(p.device.since),
                    esc(p.device.reason.as_deref().unwrap_or("?")),
                    p.device
                        .next_retry
                        .map(|t| format!(", retry at {}", time(t)))
                        .unwrap_or_default()
                )
            };
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{state}</td><td>{} / {}</td><td>{}</td></tr>",
                esc(&p.name),
                p.frames_in,
                p.frames_out,
                p.heard
            );
        }
        b.push_str("</table>");
    }
    b.push_str("<h2>Partners</h2>");
    if h.partners.is_empty() {
        b.push_str("<p>None configured.</p>");
    } else {
        // The button and the next call come first: on a phone (one card per partner) they
        // are on the screen, not off to the right.
        b.push_str(
            "<table id=\"status-partners\" class=\"cards\"><tr><th>Partner</th><th>Next call</th>\
             <th>Queued</th><th>Last session</th></tr>",
        );
        for p in &h.partners {
            let last = p.last.as_ref().map_or("none since start".to_string(), |l| {
                let class = if l.ok { "" } else { " class=\"err\"" };
                format!("{}<br><span{class}>{}</span>", time(l.at), esc(&l.result))
            });
            let next = match (p.next_call, p.interval, p.poll) {
                (Some(t), Some(i), Some(p)) if i == p => {
                    format!("{} (every {})", time(t), crate::health::every(i))
                }
                (Some(t), _, Some(p)) => {
                    format!("{} (poll every {})", time(t), crate::health::every(p))
                }
                (Some(t), _, None) => time(t),
                (None, Some(_), _) => "when mail waits".to_string(),
                (None, None, _) => "on demand".to_string(),
            };
            let _ = write!(
                b,
                "<tr><td><b>{c}</b> <form class=\"inline\" method=\"post\" action=\"/forward\">\
                 {csrf}<input type=\"hidden\" name=\"partner\" value=\"{c}\">\
                 <button>Forward now</button></form></td><td data-label=\"Next call\">{next}</td>\
                 <td data-label=\"Queued\">{}</td><td data-label=\"Last\">{last}</td></tr>",
                p.queued,
                c = esc(&p.call),
            );
        }
        b.push_str("</table>");
    }
    let _ = write!(
        b,
        "<h2>Sessions</h2><p>{} telnet, {} logged in, {} forwarding</p>",
        h.telnet_sessions,
        h.users.len(),
        h.sessions.len()
    );
    if !h.users.is_empty() {
        b.push_str("<table id=\"online\"><tr><th>User</th><th>Via</th><th>Since</th></tr>");
        for u in &h.users {
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&visible_line(&u.call)),
                esc(&visible_line(&u.via)),
                time(u.since)
            );
        }
        b.push_str("</table>");
    }
    if !h.sessions.is_empty() {
        b.push_str(&sessions(&h.sessions));
    }
    let _ = write!(b, "<h2>Store</h2><p>{}</p>", h.store.size_line());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_shows_as_text() {
        let p = SysopPage {
            at: 0,
            from: "N0USR".into(),
            text: "<b>hi</b>\x1b[2J".into(),
        };
        let html = pages(&[p]);
        assert!(
            html.contains("<td>N0USR</td><td>&lt;b&gt;hi&lt;/b&gt;\\x1B[2J</td>"),
            "{html}"
        );
        assert!(pages(&[]).contains("None since start."));
    }

    #[test]
    fn the_netrom_node_shows_nodes_neighbours_and_circuits_as_text() {
        use crate::radio::netrom::{CircuitRow, NeighbourRow, NetromView, NodeRow, RouteRow};
        let v = NetromView {
            call: "N0QTC-1".into(),
            alias: "QTC".into(),
            nodes: vec![NodeRow {
                alias: "<b>".into(),
                call: "N0CCC-1".into(),
                routes: vec![RouteRow {
                    neighbour: "N0BBB-1".into(),
                    port: "vhf".into(),
                    quality: 144,
                    obsolescence: Some(5),
                    kind: "learned",
                }],
            }],
            neighbours: vec![NeighbourRow {
                port: "vhf".into(),
                call: "N0BBB-1".into(),
                quality: 192,
                locked: false,
                nodes: 1,
            }],
            circuits: vec![CircuitRow {
                id: "1/0".into(),
                direction: "in",
                user: "N0USR".into(),
                node: "N0AAA-1".into(),
                state: "connected",
                window: 4,
                unsent: 0,
                resent: 0,
            }],
            totals: Default::default(),
        };
        let html = netrom(&v);
        assert!(html.contains("NET/ROM node QTC:N0QTC-1"), "{html}");
        assert!(
            html.contains(
                "<td>&lt;b&gt;:N0CCC-1</td><td>144</td><td>N0BBB-1 on vhf</td><td>5</td>"
            ),
            "{html}"
        );
        assert!(
            html.contains("Neighbours (1)") && html.contains("Circuits (1)"),
            "{html}"
        );
        assert!(html.contains("<td>1/0 in</td><td>N0USR</td>"), "{html}");
    }

    #[test]
    fn the_ip_router_shows_its_arp_table_and_routes() {
        use crate::radio::ip::{ArpRow, RouteRow};
        let v = IpView {
            address: "44.128.0.1/24".into(),
            tun: "qtc0".into(),
            arp: vec![
                ArpRow {
                    address: "44.128.0.2".into(),
                    callsign: "N0JNS".into(),
                    port: "udp".into(),
                    expires: Some(0),
                },
                ArpRow {
                    address: "44.128.0.9".into(),
                    callsign: "N0<b>".into(),
                    port: "vhf".into(),
                    expires: None,
                },
            ],
            asking: vec!["44.128.0.7".into()],
            routes: vec![
                RouteRow {
                    to: "44.131.0.0/24".into(),
                    via: "NET/ROM N0JNS".into(),
                    port: None,
                    mode: None,
                },
                RouteRow {
                    to: "44.130.0.0/16".into(),
                    via: "via 44.128.0.3".into(),
                    port: Some("vhf".into()),
                    mode: Some("vc".into()),
                },
            ],
            stats: vec![("ARP in", 3), ("malformed", 1)],
        };
        let html = ip(&v);
        assert!(html.contains("<h2>IP 44.128.0.1/24 on qtc0</h2>"), "{html}");
        assert!(
            html.contains(
                "<td>44.128.0.2</td><td>N0JNS</td><td>udp</td><td>1970-01-01T00:00:00Z</td>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<td>N0&lt;b&gt;</td><td>vhf</td><td>static</td>"),
            "{html}"
        );
        assert!(html.contains("Asking: 44.128.0.7"), "{html}");
        assert!(
            html.contains("<td>44.131.0.0/24</td><td>NET/ROM N0JNS</td>")
                && html.contains("<td>44.130.0.0/16</td><td>via 44.128.0.3 on vhf (vc)</td>"),
            "{html}"
        );
        assert!(html.contains("3 ARP in, 1 malformed"), "{html}");
    }
}
