//! Repeated log lines, limited: the daemon's one log writer shows at most [`BURST`] lines alike
//! per [`WINDOW`] and counts the rest, and the first line alike after the window says how many
//! were left out. Lines are alike when they come from the same place in the code with the same
//! fields, whatever connection's span they are in: 430,000 connections that never log in said
//! "connected", "its place was needed" and "disconnected" each and wrote 94 MB (issue 35).
//! Protocol traces (`qtc::trace`, asked for per partner) are never limited. No timer: a count
//! waits for the next line alike.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Lines alike shown per window.
pub const BURST: u32 = 20;
/// The window lines alike are counted in, from the first of them.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Kinds of lines counted at once; beyond it lines are shown as they come.
const MAX_KINDS: usize = 4096;
/// The target whose lines are never limited.
const TRACE: &str = "qtc::trace";

/// What to do with a line.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Show,
    Hide,
    /// Show it, and say how many alike were not shown before it.
    ShowAfter(u64),
}

/// One kind of line: when its window began, lines shown in it and lines left out.
struct Run {
    since: Instant,
    shown: u32,
    hidden: u64,
}

/// The counts per kind of line.
#[derive(Default)]
struct Limiter {
    runs: HashMap<u64, Run>,
}

impl Limiter {
    fn admit(&mut self, kind: u64, now: Instant) -> Verdict {
        if self.runs.len() >= MAX_KINDS && !self.runs.contains_key(&kind) {
            self.runs
                .retain(|_, r| now.saturating_duration_since(r.since) < WINDOW);
            if self.runs.len() >= MAX_KINDS {
                return Verdict::Show;
            }
        }
        let run = self.runs.entry(kind).or_insert(Run {
            since: now,
            shown: 0,
            hidden: 0,
        });
        if now.saturating_duration_since(run.since) >= WINDOW {
            let hidden = std::mem::take(&mut run.hidden);
            *run = Run {
                since: now,
                shown: 1,
                hidden: 0,
            };
            return match hidden {
                0 => Verdict::Show,
                n => Verdict::ShowAfter(n),
            };
        }
        if run.shown < BURST {
            run.shown += 1;
            return Verdict::Show;
        }
        run.hidden += 1;
        Verdict::Hide
    }
}

/// Hashes an event's field names and values.
struct KindOf<'a>(&'a mut std::collections::hash_map::DefaultHasher);

impl fmt::Write for KindOf<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        s.hash(self.0);
        Ok(())
    }
}

impl Visit for KindOf<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        field.name().hash(self.0);
        let _ = write!(self, "{value:?}");
    }
}

/// The kind of line `event` makes: where it is logged and its fields.
fn kind(event: &Event<'_>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    event.metadata().callsite().hash(&mut h);
    event.record(&mut KindOf(&mut h));
    h.finish()
}

/// A log line format ([`FormatEvent`]) that limits lines alike (see the module's text).
pub struct Limited<F> {
    inner: F,
    limiter: Mutex<Limiter>,
}

impl<F> Limited<F> {
    /// Limits the lines `inner` formats.
    pub fn new(inner: F) -> Limited<F> {
        Limited {
            inner,
            limiter: Mutex::default(),
        }
    }
}

impl<S, N, F> FormatEvent<S, N> for Limited<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let verdict = match event.metadata().target() {
            TRACE => Verdict::Show,
            _ => {
                let kind = kind(event);
                let mut limiter = self.limiter.lock().unwrap_or_else(|e| e.into_inner());
                limiter.admit(kind, crate::clock::now())
            }
        };
        match verdict {
            // Nothing formatted: the writer is not even called with an empty line.
            Verdict::Hide => Ok(()),
            Verdict::Show => self.inner.format_event(ctx, writer, event),
            Verdict::ShowAfter(n) => {
                let mut line = String::new();
                self.inner
                    .format_event(ctx, Writer::new(&mut line), event)?;
                let line = line.trim_end_matches('\n');
                let secs = WINDOW.as_secs();
                match line.strip_prefix('{') {
                    // A JSON object: the count is one more field.
                    Some(rest) => writeln!(writer, "{{\"not_logged\":{n},{rest}"),
                    None => writeln!(
                        writer,
                        "{line} ({n} more like this in {secs} s were not logged)"
                    ),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_alike_are_shown_a_burst_a_window_then_counted() {
        let mut l = Limiter::default();
        let t0 = crate::clock::now();
        for i in 0..BURST {
            assert_eq!(
                l.admit(1, t0 + Duration::from_millis(u64::from(i))),
                Verdict::Show
            );
        }
        for _ in 0..1000 {
            assert_eq!(l.admit(1, t0 + Duration::from_secs(1)), Verdict::Hide);
        }
        // Another kind of line is not held up by the first.
        assert_eq!(l.admit(2, t0 + Duration::from_secs(1)), Verdict::Show);
        // The window over, the next line alike says how many were left out.
        assert_eq!(l.admit(1, t0 + WINDOW), Verdict::ShowAfter(1000));
        assert_eq!(l.admit(1, t0 + WINDOW), Verdict::Show);
    }

    #[test]
    fn too_many_kinds_are_shown_not_forgotten() {
        let mut l = Limiter::default();
        let t0 = crate::clock::now();
        for k in 0..MAX_KINDS as u64 {
            assert_eq!(l.admit(k, t0), Verdict::Show);
        }
        assert_eq!(l.admit(u64::MAX, t0), Verdict::Show);
        // Once the old windows are over there is room again.
        assert_eq!(l.admit(u64::MAX, t0 + WINDOW), Verdict::Show);
        assert!(l.runs.len() <= 1);
    }
}
