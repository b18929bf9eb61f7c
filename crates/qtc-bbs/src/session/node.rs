//! Commands about the node rather than the mail: who is on (`U`), what the radio ports heard
//! (`J`), the ports (`PORTS`) and paging the sysop (`T`). The session asks; the daemon answers.

use qtc_mail::Utc;

use super::{Event, Session, State};
use crate::ask::{Answer, Ask, NeighbourInfo, NodeInfo};

/// The longest page to the sysop kept (a line on the sysop's screen).
const MAX_PAGE_TEXT: usize = 60;

/// Nodes per line of `NODES`.
const NODES_PER_LINE: usize = 3;

/// Pages to the sysop (`T`) a session may send within [`PAGE_WINDOW`]: each one is a line on
/// every sysop session, in the log and on the web.
const MAX_PAGES: usize = 3;

/// The window [`MAX_PAGES`] counts over, in seconds.
const PAGE_WINDOW: i64 = 10 * 60;

/// Heard stations shown per port: enough for 1200 baud.
const HEARD_SHOWN: usize = 10;

impl Session {
    /// Stops at the command until the daemon answers `ask`.
    pub(super) fn ask(&mut self, ask: Ask) {
        self.asking = Some(ask);
        self.state = State::Asking;
    }

    /// The question waiting for the daemon, if any; the daemon must call [`Session::answer`]
    /// (for [`Ask::Connect`], once the link is over) before feeding more input.
    pub fn pending_ask(&self) -> Option<&Ask> {
        self.asking.as_ref()
    }

    /// The daemon's answer to the last [`Session::pending_ask`]: shown, then the session goes
    /// on with any lines typed meanwhile.
    pub fn answer(&mut self, answer: Answer, now: i64) {
        let Some(ask) = self.asking.take() else {
            return;
        };
        self.state = State::Command;
        match answer {
            Answer::Users(users) => {
                self.say(&format!("{} online:\r", users.len()));
                for u in users {
                    self.say(&format!("{:<9} {}\r", u.call, u.via));
                }
            }
            Answer::Ports(ports) if ports.is_empty() => self.say("No radio ports.\r"),
            Answer::Ports(ports) => {
                for p in ports {
                    self.say(&format!("{:<8} {}\r", p.name, p.what));
                    for h in p.heard.iter().take(HEARD_SHOWN) {
                        let t = Utc::from_unix(h.last);
                        self.say(&format!(
                            "  {:<9} {:02}/{:02} {:02}:{:02}\r",
                            h.call, t.month, t.day, t.hour, t.minute
                        ));
                    }
                }
            }
            Answer::ConvEnded => self.say("*** Left the conference.\r"),
            Answer::Nodes(None) | Answer::Routes(None) => {
                self.say("This BBS is no NET/ROM node.\r")
            }
            Answer::Nodes(Some(nodes)) => match ask {
                Ask::Nodes { node: Some(name) } => self.node_routes(&name, &nodes),
                _ => self.node_list(&nodes),
            },
            Answer::Routes(Some(neighbours)) => self.neighbour_list(&neighbours),
            Answer::Refused(why) => self.say(&format!("*** {why}\r")),
            Answer::Disconnected(result) => {
                let call = match ask {
                    Ask::Connect { call, .. } => call,
                    _ => String::new(),
                };
                match result {
                    Ok(()) => self.say(&format!(
                        "*** Disconnected from {call}. Back at {}.\r",
                        self.cfg.callsign
                    )),
                    Err(why) => self.say(&format!("*** Failure with {call}: {why}\r")),
                }
            }
        }
        self.prompt();
        self.take_waiting(now);
    }

    /// `NODES`: `ALIAS:CALL`, three to a line, as NET/ROM nodes list them.
    fn node_list(&mut self, nodes: &[NodeInfo]) {
        if nodes.is_empty() {
            self.say("Nodes: none known yet.\r");
            return;
        }
        self.say(&format!("Nodes ({}):\r", nodes.len()));
        for row in nodes.chunks(NODES_PER_LINE) {
            let line: Vec<String> = row
                .iter()
                .map(|n| {
                    let name = if n.alias.is_empty() {
                        n.call.clone()
                    } else {
                        format!("{}:{}", n.alias, n.call)
                    };
                    format!("{name:<17}")
                })
                .collect();
            self.say(&format!("{}\r", line.concat().trim_end()));
        }
    }

    /// `NODES name`: the routes to one node, best first.
    fn node_routes(&mut self, name: &str, nodes: &[NodeInfo]) {
        let Some(n) = nodes.first() else {
            self.say(&format!("No such node: {name}.\r"));
            return;
        };
        self.say(&format!("Routes to {}:{}\r", n.alias, n.call));
        for r in &n.routes {
            let obs = r
                .obsolescence
                .map_or("locked".to_string(), |o| o.to_string());
            self.say(&format!(
                "  quality {:>3}  obs {:<6} {:<8} via {}\r",
                r.quality, obs, r.port, r.neighbour
            ));
        }
    }

    /// `ROUTES`: the neighbours.
    fn neighbour_list(&mut self, neighbours: &[NeighbourInfo]) {
        if neighbours.is_empty() {
            self.say("Routes: no neighbours heard yet.\r");
            return;
        }
        self.say("Routes (port, neighbour, quality, nodes):\r");
        for n in neighbours {
            let lock = if n.locked { " (locked)" } else { "" };
            self.say(&format!(
                "  {:<8} {:<9} {:>3} {:>4}{lock}\r",
                n.port, n.call, n.quality, n.nodes
            ));
        }
    }

    /// `C [port] call [via digi...]`: the daemon checks the port, says what it calls and
    /// links the user through.
    pub(super) fn connect(&mut self, port: Option<String>, call: String, via: Vec<String>) {
        self.ask(Ask::Connect { port, call, via });
    }

    /// `T text`: a line for every sysop session and the log.
    pub(super) fn page_sysop(&mut self, text: String) {
        let now = self.now;
        while self.pages.front().is_some_and(|&t| now - t >= PAGE_WINDOW) {
            self.pages.pop_front();
        }
        if self.pages.len() >= MAX_PAGES {
            self.say(&format!(
                "*** You have paged the sysop {MAX_PAGES} times in {} minutes: try again later.\r",
                PAGE_WINDOW / 60
            ));
            return;
        }
        self.pages.push_back(now);
        let (call, _, _) = self.me();
        let text: String = text.chars().take(MAX_PAGE_TEXT).collect();
        self.events.push_back(Event::PageSysop { from: call, text });
        self.say("The sysop has been paged.\r");
    }

    /// A line from the daemon for this user (a page, for a sysop), shown at once; another
    /// user's words in it are shown with their control characters made visible.
    pub fn notice(&mut self, text: &str) {
        self.say(&format!("\r*** {}\r", qtc_mail::text::visible_line(text)));
    }
}
