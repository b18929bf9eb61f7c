//! Who is on this node right now, and the sysop's pager: the little shared state the BBS
//! sessions have in common. Sessions register while logged in ([`Online::join`]) and answer
//! their interpreter's questions ([`qtc_bbs::Ask`]) from here; pages to the sysop go out on a
//! broadcast channel every session listens to (woken only when one is sent).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use qtc_bbs::{Answer, Ask, HeardStation, OnlineUser, PortInfo};
use tokio::sync::broadcast;

use crate::radio::{Heard, Radios};

/// Pages waiting for a slow session; older ones are skipped (a page is a nudge, not mail).
const PAGE_BACKLOG: usize = 16;

/// A radio port as `PORTS` and `J` show it.
pub struct Port {
    /// Its name in the config.
    pub name: String,
    /// What it is attached to.
    pub what: String,
    /// Its heard list.
    pub heard: Heard,
}

/// The sessions online and the sysop's pager.
pub struct Online {
    users: Mutex<BTreeMap<u64, OnlineUser>>,
    next_id: AtomicU64,
    pages: broadcast::Sender<String>,
    ports: OnceLock<Vec<Port>>,
    radios: OnceLock<Radios>,
}

impl Default for Online {
    fn default() -> Self {
        Online {
            users: Mutex::default(),
            next_id: AtomicU64::new(0),
            pages: broadcast::channel(PAGE_BACKLOG).0,
            ports: OnceLock::new(),
            radios: OnceLock::new(),
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

    fn users(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, OnlineUser>> {
        self.users.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `call` is on, having come in `via` (`telnet` or a radio port's name).
    pub fn join(self: &Arc<Self>, call: &str, via: &str) -> Presence {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let user = OnlineUser {
            call: call.to_string(),
            via: via.to_string(),
        };
        self.users().insert(id, user);
        Presence {
            online: self.clone(),
            id,
        }
    }

    /// The answer to an interpreter's question, if it has one now (`C` is answered when its
    /// link is over, by the session's task).
    pub fn answer(&self, ask: &Ask) -> Option<Answer> {
        Some(match ask {
            Ask::Connect { .. } => return None,
            Ask::Users => Answer::Users(self.users().values().cloned().collect()),
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
        })
    }

    /// `T`: `from` pages the sysop. Logged, and a line for every sysop session.
    pub fn page_sysop(&self, from: &str, text: &str) {
        tracing::warn!(%from, %text, "the sysop is paged");
        // No receiver (no session at all) is not an error.
        let _ = self.pages.send(format!("{from} pages the sysop: {text}"));
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

    #[test]
    fn users_come_and_go() {
        let online = Arc::new(Online::default());
        let a = online.join("N0USR", "telnet");
        let _b = online.join("N0OTH", "vhf");
        let Some(Answer::Users(u)) = online.answer(&Ask::Users) else {
            panic!()
        };
        assert_eq!(u.len(), 2);
        drop(a);
        let Some(Answer::Users(u)) = online.answer(&Ask::Users) else {
            panic!()
        };
        assert_eq!((u.len(), u[0].call.as_str()), (1, "N0OTH"));
        assert_eq!(online.answer(&Ask::Ports), Some(Answer::Ports(Vec::new())));
    }

    #[test]
    fn pages_reach_every_listener() {
        let online = Online::default();
        let mut rx = online.pages();
        online.page_sysop("N0USR", "hi");
        assert_eq!(rx.try_recv().unwrap(), "N0USR pages the sysop: hi");
    }
}
