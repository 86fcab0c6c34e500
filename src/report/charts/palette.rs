//! The one palette of every chart and report: a variant keeps its colour wherever it appears.
//!
//! A built-in jitter strategy (`none`, `exponential`, …) and a bundled policy preset (`grpc`,
//! `envoy`, …) named as a variant always get the same colour, whatever the run order, the command
//! (`compare`, `plan`, `sweep`) or the other variants. Any other name gets a colour derived from
//! the name (a hash into the palette); when two variants of one run would share a colour, the
//! later name (in name order) takes the next free one, so a run never draws two variants alike
//! while it has at most [`PALETTE`]'s length of them.
//!
//! Every colour has at least 3:1 contrast on white (WCAG 2 relative luminance; the non-text
//! contrast of graphical objects), so no line or bar is too pale to see. Past [`LEADERS_MAX`]
//! variants, the charts that overlay every variant's line draw the leaders in colour and the
//! rest in [`REST_GREY`] (see [`Lines`]).

use super::key::{KeyItem, Swatch};
use crate::report::data::ReportData;
use crate::runner::verdict::{verdict, Candidate};
use plotters::style::Color;
use plotters::style::RGBColor;

/// The palette: first the strategies' colours, then the presets', then further colours for
/// other names. All ≥ 3:1 on white (checked by a test).
pub const PALETTE: [RGBColor; 24] = [
    RGBColor(0, 114, 178),  // none: blue
    RGBColor(213, 94, 0),   // exponential: vermillion
    RGBColor(0, 150, 110),  // full: bluish green
    RGBColor(178, 80, 140), // equal: reddish purple
    RGBColor(150, 110, 0),  // decorrelated: dark gold
    RGBColor(117, 58, 168), // decorrelated_v2: purple
    RGBColor(45, 135, 255), // proportional: azure
    RGBColor(140, 86, 75),  // schedule: brown
    RGBColor(193, 0, 32),   // aws-standard: red
    RGBColor(136, 34, 85),  // aws-standard-2026: wine
    RGBColor(51, 102, 170), // grpc: steel blue
    RGBColor(60, 130, 0),   // envoy: green
    RGBColor(0, 0, 128),    // finagle: navy
    RGBColor(200, 0, 140),  // polly-v8: magenta
    RGBColor(0, 100, 0),    // resilience4j: dark green
    RGBColor(110, 110, 0),  // svix: olive
    RGBColor(90, 105, 125), // standard-webhooks: slate
    // Further colours, each chosen as far as possible from all before it (and from the grey).
    RGBColor(30, 0, 255),    // ultramarine (also envoy-retry-budget's)
    RGBColor(240, 45, 255),  // fuchsia
    RGBColor(150, 120, 255), // lavender
    RGBColor(255, 60, 90),   // coral
    RGBColor(135, 0, 255),   // violet
    RGBColor(255, 60, 180),  // hot pink
    RGBColor(75, 60, 240),   // indigo
];

/// Names with a fixed colour: `(name, index in PALETTE)`. The strategies are those of the
/// scenario's `jitter = "…"`; the presets those of `preset = "…"` (`scenario::presets::PRESETS`).
const FIXED: [(&str, usize); 18] = [
    ("none", 0),
    ("exponential", 1),
    ("full", 2),
    ("equal", 3),
    ("decorrelated", 4),
    ("decorrelated_v2", 5),
    ("proportional", 6),
    ("schedule", 7),
    ("aws-standard", 8),
    ("aws-standard-2026", 9),
    ("grpc", 10),
    ("envoy", 11),
    ("finagle", 12),
    ("polly-v8", 13),
    ("resilience4j", 14),
    ("svix", 15),
    ("standard-webhooks", 16),
    // A preset added after the palette was laid out takes the first further colour.
    ("envoy-retry-budget", 17),
];

/// Grey of the variants an overlay chart does not single out (≥ 3:1 on white too).
pub const REST_GREY: RGBColor = RGBColor(135, 135, 135);

/// Most variants an overlay chart draws in colour; past it, the leaders are coloured and the
/// rest grey.
pub const LEADERS_MAX: usize = 8;

/// The palette slot a name asks for: its fixed one, or a hash of the name (FNV-1a, stable across
/// versions and platforms).
fn wanted(name: &str) -> (usize, bool) {
    if let Some(&(_, i)) = FIXED.iter().find(|(n, _)| *n == name) {
        return (i, true);
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    ((h % PALETTE.len() as u64) as usize, false)
}

/// The colour of each of `names` (one run's variants, in any order): fixed names first, then
/// the others in name order, each taking its wanted slot or the next free one.
pub fn colours_of(names: &[&str]) -> Vec<RGBColor> {
    let n = PALETTE.len();
    let mut taken = [false; 24];
    let mut slot = vec![usize::MAX; names.len()];
    let wants: Vec<(usize, bool)> = names.iter().map(|n| wanted(n)).collect();
    for (i, &(w, fixed)) in wants.iter().enumerate() {
        if fixed {
            slot[i] = w;
            taken[w] = true;
        }
    }
    let mut others: Vec<usize> = (0..names.len()).filter(|&i| !wants[i].1).collect();
    others.sort_by(|&a, &b| names[a].cmp(names[b]).then(a.cmp(&b)));
    for i in others {
        let w = wants[i].0;
        let free = (0..n).map(|k| (w + k) % n).find(|&s| !taken[s]);
        let s = free.unwrap_or(w);
        taken[s] = true;
        slot[i] = s;
    }
    slot.into_iter().map(|s| PALETTE[s]).collect()
}

/// The colour of every variant of a run, in run order.
pub fn variant_colours(data: &ReportData) -> Vec<RGBColor> {
    let names: Vec<&str> = data.variants.iter().map(|v| v.name.as_str()).collect();
    colours_of(&names)
}

/// The colour of variant `i` of a run.
pub fn variant_colour(data: &ReportData, i: usize) -> RGBColor {
    variant_colours(data)[i]
}

/// How an overlay chart (every variant's line on one axis) draws each variant: up to
/// [`LEADERS_MAX`] variants all in colour; past it, the baseline and the best ranked by the
/// verdict in colour, 2 px wide and drawn last (on top), the others thin and grey.
pub struct Lines {
    colours: Vec<RGBColor>,
    led: Vec<bool>,
}

impl Lines {
    /// The styles of `data`'s variants.
    pub fn of(data: &ReportData) -> Lines {
        let colours = variant_colours(data);
        let n = data.variants.len();
        let mut led = vec![n <= LEADERS_MAX; n];
        if n > LEADERS_MAX {
            let candidates: Vec<Candidate> = data.variants.iter().map(|v| v.candidate()).collect();
            led[0] = true;
            let mut count = 1;
            for r in verdict(&data.objective, &candidates).ranking {
                if count == LEADERS_MAX {
                    break;
                }
                if let Some(i) = data.variants.iter().position(|v| v.name == r.variant) {
                    if !led[i] {
                        led[i] = true;
                        count += 1;
                    }
                }
            }
        }
        Lines { colours, led }
    }

    /// True when variant `i` is drawn in its colour.
    pub fn led(&self, i: usize) -> bool {
        self.led[i]
    }

    /// Colour of variant `i`'s line.
    pub fn colour(&self, i: usize) -> RGBColor {
        if self.led[i] {
            self.colours[i]
        } else {
            REST_GREY
        }
    }

    /// Stroke width of variant `i`'s line (`wide` for a leader).
    pub fn width(&self, i: usize, wide: u32) -> u32 {
        if self.led[i] {
            wide
        } else {
            1
        }
    }

    /// The legend of an overlay chart: the coloured variants each with `label(i)`, then the grey
    /// ones, each named too (the legend wraps into rows; every variant stays findable).
    pub fn key(&self, label: impl Fn(usize) -> String) -> Vec<KeyItem> {
        let order = (0..self.led.len()).filter(|&i| self.led[i]).chain((0..self.led.len()).filter(|&i| !self.led[i]));
        order.map(|i| (Swatch::Line(self.colour(i).mix(1.0)), label(i))).collect()
    }

    /// Variant indices in drawing order: the grey ones first, so the coloured lines lie on top.
    pub fn order(&self) -> Vec<usize> {
        let n = self.led.len();
        (0..n).filter(|&i| !self.led[i]).chain((0..n).filter(|&i| self.led[i])).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::Jitter;

    /// WCAG 2 contrast ratio of `c` against white.
    fn contrast_on_white(c: RGBColor) -> f64 {
        let lin = |v: u8| {
            let s = f64::from(v) / 255.0;
            if s <= 0.04045 {
                s / 12.92
            } else {
                ((s + 0.055) / 1.055).powf(2.4)
            }
        };
        let l = 0.2126 * lin(c.0) + 0.7152 * lin(c.1) + 0.0722 * lin(c.2);
        1.05 / (l + 0.05)
    }

    #[test]
    fn every_colour_has_3_to_1_contrast_on_white() {
        for (i, &c) in PALETTE.iter().chain(std::iter::once(&REST_GREY)).enumerate() {
            let r = contrast_on_white(c);
            assert!(r >= 3.0, "colour {i} {c:?}: contrast {r:.2} < 3");
        }
        // The formula against known values: black 21:1, white 1:1, #777 ≈ 4.48:1.
        assert!((contrast_on_white(RGBColor(0, 0, 0)) - 21.0).abs() < 1e-9);
        assert!((contrast_on_white(RGBColor(255, 255, 255)) - 1.0).abs() < 1e-9);
        assert!((contrast_on_white(RGBColor(0x77, 0x77, 0x77)) - 4.48).abs() < 0.01);
    }

    #[test]
    fn the_palette_colours_are_far_apart() {
        for (i, a) in PALETTE.iter().enumerate() {
            for (j, b) in PALETTE.iter().enumerate().skip(i + 1) {
                let d = [(a.0, b.0), (a.1, b.1), (a.2, b.2)]
                    .iter()
                    .map(|&(x, y)| (f64::from(x) - f64::from(y)).powi(2))
                    .sum::<f64>()
                    .sqrt();
                assert!(d >= 40.0, "colours {i} {a:?} and {j} {b:?} are {d:.0} apart");
            }
        }
    }

    #[test]
    fn strategies_and_presets_keep_their_colour_whatever_the_order() {
        let a = colours_of(&["none", "exponential", "full", "equal", "decorrelated"]);
        let b = colours_of(&["exponential", "equal"]);
        assert_eq!(a[1], b[0]);
        assert_eq!(a[3], b[1]);
        let c = colours_of(&["my-policy", "grpc", "exponential"]);
        assert_eq!(c[2], a[1]);
        // Every strategy and preset is in the fixed list, each with its own slot.
        let jitters = [
            Jitter::None,
            Jitter::Exponential,
            Jitter::Full,
            Jitter::Equal,
            Jitter::Decorrelated,
            Jitter::DecorrelatedV2,
            Jitter::Proportional { ratio: 0.1 },
            Jitter::Schedule { delays: vec![] },
        ];
        let mut names: Vec<&str> = jitters.iter().map(|j| j.name()).collect();
        names.extend(crate::scenario::presets::PRESETS.iter().map(|p| p.0));
        for n in &names {
            assert!(wanted(n).1, "{n} has no fixed colour");
        }
        let mut slots: Vec<usize> = names.iter().map(|n| wanted(n).0).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), names.len(), "two fixed names share a colour");
    }

    #[test]
    fn other_names_are_stable_and_distinct_within_a_run() {
        let names = ["fifo", "fifo-jitter", "lifo", "lifo-jitter", "codel", "codel-jitter", "x", "y", "z"];
        let all = colours_of(&names);
        for (i, a) in all.iter().enumerate() {
            assert!(!all[i + 1..].contains(a), "{} shares its colour", names[i]);
        }
        // Alone, a name asks for the same slot as in the run unless another took it first.
        let alone = colours_of(&["lifo"]);
        assert_eq!(alone[0], PALETTE[wanted("lifo").0]);
        let reversed: Vec<&str> = names.iter().rev().copied().collect();
        let mut back = colours_of(&reversed);
        back.reverse();
        assert_eq!(back, all, "colours depend on the run order");
    }
}
