//! The results table.

use std::fmt::Write;

/// Whether a figure meets its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It does.
    Met,
    /// It does not (not an error: the run still succeeds).
    Missed,
    /// No target: a figure for the record.
    Info,
    /// The measurement could not be made: the run fails.
    Broken,
}

/// One line of the table.
#[derive(Clone, Debug)]
pub struct Row {
    /// The brief's row number and a letter, e.g. `2b`.
    pub id: String,
    /// What is measured.
    pub what: String,
    /// The measured figure.
    pub figure: String,
    /// The target (and old daemons' figures for comparison).
    pub target: String,
    /// Met, missed, informational or broken.
    pub verdict: Verdict,
    /// How it was measured.
    pub how: String,
}

impl Row {
    /// A figure with a target.
    pub fn check(id: &str, what: &str, figure: String, target: &str, met: bool, how: &str) -> Row {
        Row {
            id: id.into(),
            what: what.into(),
            figure,
            target: target.into(),
            verdict: if met { Verdict::Met } else { Verdict::Missed },
            how: how.into(),
        }
    }

    /// A figure without a target.
    pub fn info(id: &str, what: &str, figure: String, target: &str, how: &str) -> Row {
        Row {
            id: id.into(),
            what: what.into(),
            figure,
            target: target.into(),
            verdict: Verdict::Info,
            how: how.into(),
        }
    }

    /// A measurement that failed.
    pub fn broken(id: &str, what: &str, error: &str, how: &str) -> Row {
        Row {
            id: id.into(),
            what: what.into(),
            figure: format!("error: {error}"),
            target: String::new(),
            verdict: Verdict::Broken,
            how: how.into(),
        }
    }
}

/// Everything a run found.
#[derive(Default)]
pub struct Report {
    /// The table.
    pub rows: Vec<Row>,
    /// Lines under the table: context, details, what is not measured yet.
    pub notes: Vec<String>,
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

impl Report {
    /// True when a measurement broke.
    pub fn broken(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Verdict::Broken)
    }

    /// The Markdown text.
    pub fn markdown(&self, title: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{title}\n");
        s.push_str("| # | measurement | figure | target | | how measured |\n");
        s.push_str("|---|---|---|---|---|---|\n");
        for r in &self.rows {
            let v = match r.verdict {
                Verdict::Met => "met",
                Verdict::Missed => "**missed**",
                Verdict::Info => "",
                Verdict::Broken => "**BROKEN**",
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                cell(&r.id),
                cell(&r.what),
                cell(&r.figure),
                cell(&r.target),
                v,
                cell(&r.how)
            );
        }
        if !self.notes.is_empty() {
            s.push('\n');
            for n in &self.notes {
                let _ = writeln!(s, "- {n}");
            }
        }
        s
    }
}
