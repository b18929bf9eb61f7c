//! Who is on this node right now, and the sysop's pager: the little shared state the BBS
//! sessions have in common. Sessions register while logged in ([`Online::join`]) and answer
//! their interpreter's questions ([`qtc_bbs::Ask`]) from here; pages to the sysop go out on a
//! broadcast channel every session listens to (woken only when one is sent), and the last few
//! are kept for the web dashboard's Status page.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use qtc_bbs::{
    Answer, Ask, HeardStation, NeighbourInfo, NodeInfo, OnlineUser, PortInfo, RouteInfo,
};
use tokio::sync::broadcast;

use crate::radio::{Heard, Radios};

/// Pages waiting for a slow session; older ones are skipped (a page is a nudge, not mail).
const PAGE_BACKLOG: usize = 16;

/// Pages kept for the Status page; older ones drop off.
const RECENT_PAGES: usize = 20;

/// Conference lines waiting for a slow reader (a 1200-baud user); past this the oldest are
/// skipped and the reader is told.
const CONV_BACKLOG: usize = 64;

/// A radio port as `PORTS` and `J` show it.
pub struct Port {
    /// Its name in the config.
    pub name: String,
    /// What it is attached to.
    pub what: String,
    /// Its heard list.
    pub heard: Heard,
}

/// A page to the sysop, as the user typed it (neutralise it to show it).
#[derive(Clone, Debug, PartialEq)]
pub struct SysopPage {
    /// When, Unix seconds.
    pub at: i64,
    /// Who paged.
    pub from: String,
    /// What they said.
    pub text: String,
}

/// The sessions online and the sysop's pager.
pub struct Online {
    /// Users logged in, with since when (Unix seconds), by presence id.
    users: Mutex<BTreeMap<u64, (OnlineUser, i64)>>,
    next_id: AtomicU64,
    pages: broadcast::Sender<String>,
    /// The last [`RECENT_PAGES`] pages, newest first.
    recent_pages: Mutex<VecDeque<SysopPage>>,
    ports: OnceLock<Vec<Port>>,
    radios: OnceLock<Radios>,
    /// Who is in the conference, on which channel, by membership id.
    conv: Mutex<BTreeMap<u64, (String, u16)>>,
    said: broadcast::Sender<ConvLine>,
}

/// A line for one conference channel, already formatted; not shown to its sender.
#[derive(Clone, Debug)]
pub struct ConvLine {
    /// The channel.
    pub channel: u16,
    /// The membership it came from.
    pub from: u64,
    /// The text, CR-ended.
    pub text: String,
}

/// A user's place in the conference; leaving it (drop) tells the channel.
pub struct Member {
    online: Arc<Online>,
    id: u64,
}

impl Member {
    /// This membership's id (to skip one's own lines).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Says `text` (formatted) on the member's channel.
    pub fn say(&self, text: String) {
        let channel = self.entry().1;
        self.online.send_conv(channel, self.id, text);
    }

    /// Moves to `channel`, with the notices on both.
    pub fn join(&self, channel: u16) {
        let (call, old) = self.entry();
        self.online
            .send_conv(old, self.id, format!("*** {call} left\r"));
        if let Some(e) = self.online.conv().get_mut(&self.id) {
            e.1 = channel;
        }
        self.online
            .send_conv(channel, self.id, format!("*** {call} joined\r"));
    }

    /// Who is on the member's channel.
    pub fn who(&self) -> Vec<String> {
        let channel = self.entry().1;
        self.online
            .conv()
            .values()
            .filter(|(_, c)| *c == channel)
            .map(|(call, _)| call.clone())
            .collect()
    }

    fn entry(&self) -> (String, u16) {
        self.online
            .conv()
            .get(&self.id)
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let (call, channel) = self.entry();
        self.online.conv().remove(&self.id);
        self.online
            .send_conv(channel, self.id, format!("*** {call} left\r"));
    }
}

impl Default for Online {
    fn default() -> Self {
        Online {
            users: Mutex::default(),
            next_id: AtomicU64::new(0),
            pages: broadcast::channel(PAGE_BACKLOG).0,
            recent_pages: Mutex::default(),
            ports: OnceLock::new(),
            radios: OnceLock::new(),
            conv: Mutex::default(),
            said: broadcast::channel(CONV_BACKLOG).0,
        }
    }
}

/// A session's place in the list; leaving it (drop) takes the user off.
pub struct Presence {
    online: Arc<Online>,
    id: u64,
}

impl Drop for Presence {
    fn drop(&mut self) {
        self.online.users().remove(&self.id);
    }
}

impl Online {
    /// The radio ports, once they are set up (the daemon starts them after the listeners).
    pub fn set_ports(&self, ports: Vec<Port>, radios: Radios) {
        let _ = self.ports.set(ports);
        let _ = self.radios.set(radios);
    }

    /// The running radio ports, for `C` (none before they are set up).
    pub fn radios(&self) -> Radios {
        self.radios.get().cloned().unwrap_or_default()
    }

    fn users(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, (OnlineUser, i64)>> {
        self.users.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `call` is on, having come in `via` (`telnet` or a radio port's name).
    pub fn join(self: &Arc<Self>, call: &str, via: &str) -> Presence {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let user = OnlineUser {
            call: call.to_string(),
            via: via.to_string(),
        };
        self.users().insert(id, (user, crate::clock::unix_now()));
        Presence {
            online: self.clone(),
            id,
        }
    }

    /// The answer to an interpreter's question, if it has one now (`C` and `CONV` are
    /// answered when the link or the conference is over, by the session's task).
    pub async fn answer(&self, ask: &Ask) -> Option<Answer> {
        Some(match ask {
            Ask::Connect { .. } | Ask::Conv { .. } => return None,
            Ask::Users => Answer::Users(self.users().values().map(|(u, _)| u.clone()).collect()),
            Ask::Heard | Ask::Ports => {
                let with_heard = *ask == Ask::Heard;
                let ports = self.ports.get().map(Vec::as_slice).unwrap_or_default();
                Answer::Ports(
                    ports
                        .iter()
                        .map(|p| PortInfo {
                            name: p.name.clone(),
                            what: p.what.clone(),
                            heard: if with_heard {
                                heard(&p.heard)
                            } else {
                                Vec::new()
                            },
                        })
                        .collect(),
                )
            }
            Ask::Nodes { node } => Answer::Nodes(self.netrom_nodes(node.as_deref()).await),
            Ask::Routes => Answer::Routes(self.netrom_routes().await),
        })
    }

    /// `NODES [name]` from the NET/ROM node's tables as they are now; `None` when it is off.
    async fn netrom_nodes(&self, name: Option<&str>) -> Option<Vec<NodeInfo>> {
        let view = self.radios.get()?.netrom()?.view().await;
        let info = |n: &crate::radio::netrom::NodeRow| NodeInfo {
            alias: n.alias.clone(),
            call: n.call.clone(),
            routes: n
                .routes
                .iter()
                .map(|r| RouteInfo {
                    quality: r.quality,
                    obsolescence: r.obsolescence,
                    port: r.port.clone(),
                    neighbour: r.neighbour.clone(),
                })
                .collect(),
        };
        Some(match name {
            Some(name) => view.find(name).map(info).into_iter().collect(),
            None => view.nodes.iter().map(info).collect(),
        })
    }

    /// `ROUTES` from the NET/ROM node's tables as they are now; `None` when it is off.
    async fn netrom_routes(&self) -> Option<Vec<NeighbourInfo>> {
        let view = self.radios.get()?.netrom()?.view().await;
        Some(
            view.neighbours
                .iter()
                .map(|n| NeighbourInfo {
                    port: n.port.clone(),
                    call: n.call.clone(),
                    quality: n.quality,
                    locked: n.locked,
                    nodes: n.nodes,
                })
                .collect(),
        )
    }

    /// Who is logged in now, how, and since when (Unix seconds), in order of arrival.
    pub fn who(&self) -> Vec<(OnlineUser, i64)> {
        self.users().values().cloned().collect()
    }

    fn conv(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, (String, u16)>> {
        self.conv.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn send_conv(&self, channel: u16, from: u64, text: String) {
        // Nobody listening is fine.
        let _ = self.said.send(ConvLine {
            channel,
            from,
            text,
        });
    }

    /// `call` enters the conference on `channel`; the channel is told.
    pub fn enter_conv(self: &Arc<Self>, call: &str, channel: u16) -> Member {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.conv().insert(id, (call.to_string(), channel));
        self.send_conv(channel, id, format!("*** {call} joined\r"));
        Member {
            online: self.clone(),
            id,
        }
    }

    /// Conference lines from now on (subscribe before entering, to miss nothing).
    pub fn conv_lines(&self) -> broadcast::Receiver<ConvLine> {
        self.said.subscribe()
    }

    /// `T`: `from` pages the sysop at `at` (Unix seconds). Logged, a line for every sysop
    /// session, and kept for the Status page.
    pub fn page_sysop(&self, from: &str, text: &str, at: i64) {
        tracing::warn!(%from, text = %qtc_mail::text::visible_line(text), "the sysop is paged");
        {
            let mut recent = self.recent_pages.lock().unwrap_or_else(|e| e.into_inner());
            recent.truncate(RECENT_PAGES - 1);
            recent.push_front(SysopPage {
                at,
                from: from.to_string(),
                text: text.to_string(),
            });
        }
        // No receiver (no session at all) is not an error.
        let _ = self.pages.send(format!("{from} pages the sysop: {text}"));
    }

    /// The last pages to the sysop, newest first.
    pub fn recent_pages(&self) -> Vec<SysopPage> {
        let recent = self.recent_pages.lock().unwrap_or_else(|e| e.into_inner());
        recent.iter().cloned().collect()
    }

    /// Pages to the sysop from now on.
    pub fn pages(&self) -> broadcast::Receiver<String> {
        self.pages.subscribe()
    }
}

/// A heard list, most recent first.
fn heard(list: &Heard) -> Vec<HeardStation> {
    let map = list.lock().unwrap_or_else(|e| e.into_inner());
    let mut v: Vec<HeardStation> = map
        .iter()
        .map(|(call, e)| HeardStation {
            call: call.to_string(),
            last: e.last,
        })
        .collect();
    v.sort_by_key(|h| std::cmp::Reverse(h.last));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn users_come_and_go() {
        let online = Arc::new(Online::default());
        let a = online.join("N0USR", "telnet");
        let _b = online.join("N0OTH", "vhf");
        let Some(Answer::Users(u)) = online.answer(&Ask::Users).await else {
            panic!()
        };
        assert_eq!(u.len(), 2);
        drop(a);
        let Some(Answer::Users(u)) = online.answer(&Ask::Users).await else {
            panic!()
        };
        assert_eq!((u.len(), u[0].call.as_str()), (1, "N0OTH"));
        assert_eq!(
            online.answer(&Ask::Ports).await,
            Some(Answer::Ports(Vec::new()))
        );
    }

    #[test]
    fn pages_reach_every_listener() {
        let online = Online::default();
        let mut rx = online.pages();
        online.page_sysop("N0USR", "hi", 7);
        assert_eq!(rx.try_recv().unwrap(), "N0USR pages the sysop: hi");
    }

    #[test]
    fn recent_pages_are_bounded_newest_first() {
        let online = Online::default();
        for i in 0..RECENT_PAGES as i64 + 5 {
            online.page_sysop("N0USR", &format!("page {i}"), i);
        }
        let recent = online.recent_pages();
        assert_eq!(recent.len(), RECENT_PAGES);
        assert_eq!(recent[0].text, format!("page {}", RECENT_PAGES + 4));
        assert_eq!(recent[RECENT_PAGES - 1].at, 5);
    }
}
