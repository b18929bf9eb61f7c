//! This station: who it is, what it tells its users, where its forwarding partners are and
//! which mail it holds or rejects.

use qtc_callsign::Callsign;

use crate::route::PartnerRoutes;
use crate::rules::Rule;

/// This station as its sysop configured it (`[station]`, the partners' `routes`, `[[rule]]`).
/// The config builds it; the store routes, stamps R: lines, makes BIDs and applies the rules
/// by it; the BBS greets with it. A reload (SIGHUP) hands the store a new one.
///
/// No `Default`: a station always has its call (the config's check parses it once); a store
/// that was given none has no `Station` at all rather than one with an empty call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Station {
    /// Our callsign, no SSID (`[station] callsign` refuses one).
    pub call: Callsign,
    /// Our hierarchical address, upper case (the callsign when there is none).
    pub haddr: String,
    /// Text for the `I` command.
    pub info: String,
    /// Message bodies go to terminals as stored, escape sequences included (ANSI art).
    pub raw_bodies: bool,
    /// The forwarding partners and the `@` elements each takes, in configuration order.
    pub partners: Vec<PartnerRoutes>,
    /// Hold and reject rules applied to every message stored.
    pub rules: Vec<Rule>,
}

impl Station {
    /// A station with no partners and no rules, its address being its callsign.
    pub fn new(call: Callsign) -> Station {
        Station {
            call,
            haddr: call.to_string(),
            info: String::new(),
            raw_bodies: false,
            partners: Vec::new(),
            rules: Vec::new(),
        }
    }

    /// Whether `other` differs in what only a restart applies: the callsign, the address and
    /// what users are shown (partners' routes and the rules are applied by a reload).
    pub fn same_identity(&self, other: &Station) -> bool {
        (&self.call, &self.haddr, &self.info, self.raw_bodies)
            == (&other.call, &other.haddr, &other.info, other.raw_bodies)
    }
}
