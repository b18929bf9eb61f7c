//! Hold and reject rules for incoming mail (spam and junk control, like FBB's reject.sys and
//! BPQ's badwords): a rule matches one field against a glob pattern (`*` any run, `?` one
//! character, case-insensitive).

/// What a matching rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleAction {
    /// Store it, held for the sysop (`qtc msg release N`).
    Hold,
    /// Refuse it (users are told; partners get the "rejected" answer).
    Reject,
}

/// Which field a rule looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleField {
    /// The sender.
    From,
    /// The addressee.
    To,
    /// The `@` address.
    At,
    /// The BID.
    Bid,
    /// The subject.
    Subject,
}

/// One rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Hold or reject.
    pub action: RuleAction,
    /// The field matched.
    pub field: RuleField,
    /// Glob pattern.
    pub pattern: String,
}

/// The fields of a message the rules look at.
#[derive(Clone, Copy, Debug)]
pub struct RuleInput<'a> {
    /// Sender.
    pub from: &'a str,
    /// Addressee.
    pub to: &'a str,
    /// `@`.
    pub at: &'a str,
    /// BID (may be empty).
    pub bid: &'a str,
    /// Subject bytes.
    pub subject: &'a [u8],
}

/// Case-insensitive glob match of `text` against `pattern`, without recursion blow-up.
pub fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p].eq_ignore_ascii_case(&text[t])) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// The strongest action of the rules matching `m` (reject beats hold), and the rule.
pub fn check<'r>(rules: &'r [Rule], m: &RuleInput<'_>) -> Option<&'r Rule> {
    let mut found: Option<&Rule> = None;
    for r in rules {
        let value: &[u8] = match r.field {
            RuleField::From => m.from.as_bytes(),
            RuleField::To => m.to.as_bytes(),
            RuleField::At => m.at.as_bytes(),
            RuleField::Bid => m.bid.as_bytes(),
            RuleField::Subject => m.subject,
        };
        if glob(r.pattern.as_bytes(), value) {
            if r.action == RuleAction::Reject {
                return Some(r);
            }
            found = found.or(Some(r));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob(b"*", b""));
        assert!(glob(b"N0*", b"n0abc"));
        assert!(glob(b"*viagra*", b"Cheap VIAGRA now"));
        assert!(glob(b"N?ABC", b"N0ABC"));
        assert!(!glob(b"N?ABC", b"N0ABCD"));
        assert!(!glob(b"*x", b"abc"));
        assert!(glob(b"a*b*c", b"aXXbYYc"));
        // Long inputs stay linear-ish.
        assert!(!glob(b"*a*a*a*a*a*b", &[b'a'; 200]));
    }

    #[test]
    fn reject_beats_hold() {
        let rules = vec![
            Rule {
                action: RuleAction::Hold,
                field: RuleField::To,
                pattern: "SALE".into(),
            },
            Rule {
                action: RuleAction::Reject,
                field: RuleField::Subject,
                pattern: "*lottery*".into(),
            },
        ];
        let mut m = RuleInput {
            from: "N0ABC",
            to: "SALE",
            at: "WW",
            bid: "1_X",
            subject: b"Radio",
        };
        assert_eq!(check(&rules, &m).map(|r| r.action), Some(RuleAction::Hold));
        m.subject = b"You won the LOTTERY";
        assert_eq!(
            check(&rules, &m).map(|r| r.action),
            Some(RuleAction::Reject)
        );
        m.to = "ALL";
        m.subject = b"ok";
        assert!(check(&rules, &m).is_none());
    }
}
