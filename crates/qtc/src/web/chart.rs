//! The traffic chart: messages stored and forwarded per day, drawn on the server as inline SVG
//! (no script, no images to fetch); it scales to the page's width through its viewBox.

use std::fmt::Write as _;

use qtc_store::DayTraffic;

/// Days shown.
pub const DAYS: u32 = 30;

const W: u32 = 600;
const H: u32 = 170;
/// Room for the axis labels below and the scale on the left.
const BOTTOM: u32 = 22;
const LEFT: u32 = 34;
const IN_COLOUR: &str = "#457b9d";
const OUT_COLOUR: &str = "#e76f51";

/// The chart for `days` (oldest first), with its legend.
pub fn svg(days: &[DayTraffic]) -> String {
    let max = days
        .iter()
        .map(|d| d.stored.max(d.forwarded))
        .max()
        .unwrap_or(0)
        .max(1);
    let plot_h = H - BOTTOM - 8;
    let slot = (W - LEFT) as f64 / days.len().max(1) as f64;
    let bar = (slot / 2.0 - 1.0).max(1.0);
    let (total_in, total_out) = days
        .iter()
        .fold((0, 0), |(i, o), d| (i + d.stored, o + d.forwarded));
    let mut b = format!(
        "<svg class=\"chart\" id=\"traffic\" viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" \
         role=\"img\" xmlns=\"http://www.w3.org/2000/svg\">\
         <title>Messages per day: {total_in} stored, {total_out} forwarded in {} days</title>\
         <line x1=\"{LEFT}\" y1=\"{y0}\" x2=\"{W}\" y2=\"{y0}\" stroke=\"#999\"/>\
         <text x=\"{lx}\" y=\"14\" font-size=\"11\" text-anchor=\"end\">{max}</text>\
         <text x=\"{lx}\" y=\"{y0}\" font-size=\"11\" text-anchor=\"end\">0</text>",
        days.len(),
        y0 = H - BOTTOM,
        lx = LEFT - 4,
    );
    for (i, d) in days.iter().enumerate() {
        let x = LEFT as f64 + i as f64 * slot;
        for (n, dx, colour, what) in [
            (d.stored, 0.0, IN_COLOUR, "stored"),
            (d.forwarded, bar + 1.0, OUT_COLOUR, "forwarded"),
        ] {
            let h = (n as f64 * plot_h as f64 / max as f64).round();
            let _ = write!(
                b,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{h:.1}\" fill=\"{colour}\">\
                 <title>{} {n} {what}</title></rect>",
                x + dx,
                (H - BOTTOM) as f64 - h,
                date(d.day)
            );
        }
    }
    if let (Some(first), Some(last)) = (days.first(), days.last()) {
        let _ = write!(
            b,
            "<text x=\"{LEFT}\" y=\"{H}\" dy=\"-6\" font-size=\"11\">{}</text>\
             <text x=\"{W}\" y=\"{H}\" dy=\"-6\" font-size=\"11\" text-anchor=\"end\">{}</text>",
            date(first.day),
            date(last.day)
        );
    }
    let _ = write!(
        b,
        "</svg><p><span style=\"color:{IN_COLOUR}\">■</span> stored ({total_in}) \
         <span style=\"color:{OUT_COLOUR}\">■</span> forwarded ({total_out})</p>"
    );
    b
}

/// `2026-12-03` for a day's midnight.
fn date(t: i64) -> String {
    let s = qtc_mail::Utc::from_unix(t).rfc3339();
    s.get(..10).unwrap_or(&s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_busiest_day() {
        let days: Vec<DayTraffic> = (0..30)
            .map(|i| DayTraffic {
                day: (20_000 + i) * 86_400,
                stored: i as u64,
                forwarded: 0,
            })
            .collect();
        let svg = svg(&days);
        assert!(svg.contains(">29</text>"), "the scale's top is the maximum");
        assert!(svg.contains("435 stored"), "{svg}");
        assert_eq!(svg.matches("<rect").count(), 60);
        // The busiest day's bar is the whole plot's height.
        assert!(svg.contains(&format!("height=\"{:.1}\"", (H - BOTTOM - 8) as f64)));
        assert!(svg.contains("2024-10-04"), "{svg}");
    }
}
