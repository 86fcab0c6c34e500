//! The one palette of every chart and report: a colour means one thing wherever it appears.
//!
//! A built-in jitter strategy (`none`, `exponential`, …, matched through `model::policy::Jitter`)
//! and a bundled policy preset (`grpc`, `envoy`, …, through `scenario::presets::PRESETS`) named
//! as a variant always get the same colour, whatever the run order, the command (`compare`,
//! `plan`, `sweep`) or the other variants, and no other variant is ever drawn in it. Any other
//! variant takes one of [`OTHERS`], colours no strategy or preset has, in run order (the first
//! such variant, usually the baseline, always the first of them); past the 8 of them, the next
//! round repeats the colours with another line style ([`Dash`]), so no two variants of a run look
//! alike up to 32 of them.
//!
//! Every colour has at least 3:1 contrast on white (WCAG 2 relative luminance; the non-text
//! contrast of graphical objects), and every two colours are at least ΔE*76 = 25 apart in
//! CIELAB (both checked by tests). Past [`LEADERS_MAX`] variants, the charts that overlay every
//! variant's line draw the leaders (the baseline and the best ranked by the verdict) wider and on
//! top (see [`Lines`]).

pub use super::key::Dash;
use super::key::{KeyItem, Swatch};
use crate::model::policy::Jitter;
use crate::report::data::ReportData;
use crate::runner::verdict::{verdict, Candidate};
use crate::scenario::presets::PRESETS;
use plotters::style::Color;
use plotters::style::RGBColor;

/// The colour of a built-in jitter strategy: an exhaustive match, so a new strategy cannot
/// be added without its colour.
pub fn strategy_colour(jitter: &Jitter) -> RGBColor {
    match jitter {
        Jitter::None => RGBColor(0, 114, 178),                 // blue
        Jitter::Exponential => RGBColor(213, 94, 0),           // vermillion
        Jitter::Full => RGBColor(0, 150, 110),                 // bluish green
        Jitter::Equal => RGBColor(178, 80, 140),               // reddish purple
        Jitter::Decorrelated => RGBColor(150, 110, 0),         // dark gold
        Jitter::DecorrelatedV2 => RGBColor(117, 58, 168),      // purple
        Jitter::DecorrelatedFinagle => RGBColor(15, 150, 165), // teal
        Jitter::Proportional { .. } => RGBColor(60, 135, 255), // azure
        Jitter::Schedule { .. } => RGBColor(195, 105, 90),     // terracotta
    }
}

/// Every built-in strategy, one value of each kind.
pub fn strategies() -> [Jitter; 9] {
    [
        Jitter::None,
        Jitter::Exponential,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::DecorrelatedV2,
        Jitter::DecorrelatedFinagle,
        Jitter::Proportional { ratio: 0.2 },
        Jitter::Schedule { delays: Vec::new() },
    ]
}

/// The colour of each bundled preset, in the order of [`PRESETS`] (its length is checked by the
/// compiler).
const PRESET_COLOURS: [RGBColor; PRESETS.len()] = [
    RGBColor(255, 0, 0),     // aws-standard: red
    RGBColor(150, 0, 60),    // aws-standard-2026: wine
    RGBColor(45, 45, 105),   // grpc: dark slate blue
    RGBColor(120, 150, 60),  // envoy: moss green
    RGBColor(135, 0, 210),   // finagle: violet
    RGBColor(210, 75, 210),  // polly-v8: orchid
    RGBColor(0, 105, 0),     // resilience4j: dark green
    RGBColor(165, 0, 15),    // svix: dark red
    RGBColor(150, 120, 195), // standard-webhooks: lavender
    RGBColor(90, 15, 60),    // envoy-retry-budget: plum
];

/// The colours of the variants that are neither a strategy nor a preset, in the order they are
/// handed out: none of them is a strategy's or a preset's.
pub const OTHERS: [RGBColor; 8] = [
    RGBColor(0, 0, 255),    // blue
    RGBColor(255, 0, 90),   // rose
    RGBColor(0, 165, 0),    // green
    RGBColor(90, 15, 0),    // dark brown
    RGBColor(255, 0, 240),  // magenta
    RGBColor(0, 90, 255),   // cobalt
    RGBColor(30, 60, 0),    // dark olive
    RGBColor(255, 15, 165), // pink
];

/// Least CIELAB distance (ΔE*76) between any two colours of the palette.
#[cfg(test)]
const MIN_DELTA_E: f64 = 25.0;

/// Every colour of the palette: strategies, presets, then [`OTHERS`].
pub fn palette() -> Vec<RGBColor> {
    let mut all: Vec<RGBColor> = strategies().iter().map(strategy_colour).collect();
    all.extend(PRESET_COLOURS);
    all.extend(OTHERS);
    all
}

/// The `i`-th colour of a chart of things that are not variants (replicas): [`OTHERS`] first,
/// then the rest of the palette, round again past its end.
pub fn nth_colour(i: usize) -> RGBColor {
    let all = palette();
    let first = all.len() - OTHERS.len();
    all[(first + i) % all.len()]
}

/// Grey of text that stands for several variants at once.
pub const REST_GREY: RGBColor = RGBColor(110, 110, 110);

/// The styles in the order rounds of [`OTHERS`] take them.
const DASHES: [Dash; 4] = [Dash::Solid, Dash::Dashed, Dash::Dotted, Dash::Long];

/// How a variant looks: its colour and line style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Look {
    /// Its colour.
    pub colour: RGBColor,
    /// Its line style.
    pub dash: Dash,
}

/// The fixed colour of a strategy's or a preset's name.
fn fixed(name: &str) -> Option<RGBColor> {
    if let Some(j) = strategies().iter().find(|j| j.name() == name) {
        return Some(strategy_colour(j));
    }
    PRESETS.iter().position(|p| p.0 == name).map(|i| PRESET_COLOURS[i])
}

/// How each of `names` (one run's variants, in run order) looks: a strategy or a preset in its
/// fixed colour, solid; every other variant, in run order, the next of [`OTHERS`], a round of
/// them per line style.
pub fn looks_of(names: &[&str]) -> Vec<Look> {
    let mut k = 0;
    names
        .iter()
        .map(|name| match fixed(name) {
            Some(colour) => Look { colour, dash: Dash::Solid },
            None => {
                let look = Look { colour: OTHERS[k % OTHERS.len()], dash: DASHES[(k / OTHERS.len()) % DASHES.len()] };
                k += 1;
                look
            }
        })
        .collect()
}

/// The colour of each of `names` (one run's variants, in run order).
pub fn colours_of(names: &[&str]) -> Vec<RGBColor> {
    looks_of(names).into_iter().map(|l| l.colour).collect()
}

/// How every variant of a run looks, in run order.
pub fn variant_looks(data: &ReportData) -> Vec<Look> {
    let names: Vec<&str> = data.variants.iter().map(|v| v.name.as_str()).collect();
    looks_of(&names)
}

/// The colour of every variant of a run, in run order.
pub fn variant_colours(data: &ReportData) -> Vec<RGBColor> {
    variant_looks(data).into_iter().map(|l| l.colour).collect()
}

/// The colour of variant `i` of a run.
pub fn variant_colour(data: &ReportData, i: usize) -> RGBColor {
    variant_colours(data)[i]
}

/// Most variants an overlay chart draws alike; past it, the leaders are drawn wider and on top.
pub const LEADERS_MAX: usize = 8;

/// How an overlay chart (every variant's line on one axis) draws each variant: each in its
/// colour and line style; past [`LEADERS_MAX`] variants, the baseline and the best ranked by the
/// verdict (8 in all) one pixel wider and drawn last (on top), listed first in the legend.
pub struct Lines {
    looks: Vec<Look>,
    led: Vec<bool>,
}

impl Lines {
    /// The styles of `data`'s variants.
    pub fn of(data: &ReportData) -> Lines {
        let looks = variant_looks(data);
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
        Lines { looks, led }
    }

    /// True when variant `i` is a leader (every variant is, up to [`LEADERS_MAX`] of them).
    pub fn led(&self, i: usize) -> bool {
        self.led[i]
    }

    /// True when some variants are leaders and others not.
    pub fn singles_out(&self) -> bool {
        self.led.iter().any(|&l| !l)
    }

    /// Colour of variant `i`'s line.
    pub fn colour(&self, i: usize) -> RGBColor {
        self.looks[i].colour
    }

    /// Line style of variant `i`.
    pub fn dash(&self, i: usize) -> Dash {
        self.looks[i].dash
    }

    /// Stroke width of variant `i`'s line: `wide`, one more for a leader among non-leaders.
    pub fn width(&self, i: usize, wide: u32) -> u32 {
        if self.led[i] && self.singles_out() {
            wide + 1
        } else {
            wide
        }
    }

    /// The legend swatch of variant `i`.
    pub fn swatch(&self, i: usize) -> Swatch {
        Swatch::Styled(self.colour(i).mix(1.0), self.dash(i), self.width(i, 2))
    }

    /// The legend of an overlay chart: the leaders each with `label(i)`, then the others.
    pub fn key(&self, label: impl Fn(usize) -> String) -> Vec<KeyItem> {
        self.key_of(&(0..self.led.len()).collect::<Vec<_>>(), label)
    }

    /// The legend entries of the variants `only` (leaders first).
    pub fn key_of(&self, only: &[usize], label: impl Fn(usize) -> String) -> Vec<KeyItem> {
        let order = only.iter().filter(|&&i| self.led[i]).chain(only.iter().filter(|&&i| !self.led[i]));
        order.map(|&i| (self.swatch(i), label(i))).collect()
    }

    /// Variant indices in drawing order: the others first, so the leaders lie on top.
    pub fn order(&self) -> Vec<usize> {
        let n = self.led.len();
        (0..n).filter(|&i| !self.led[i]).chain((0..n).filter(|&i| self.led[i])).collect()
    }
}

/// Draws `points` on `chart` as variant `i`'s line of `lines` (colour, style, `wide` px).
macro_rules! draw_variant_line {
    ($chart:expr, $lines:expr, $i:expr, $points:expr, $wide:expr) => {{
        let lines = &$lines;
        let style = plotters::style::Color::stroke_width(&lines.colour($i), lines.width($i, $wide));
        match lines.dash($i).pattern() {
            None => $chart.draw_series(plotters::series::LineSeries::new($points, style)).map(|_| ()),
            Some((dash, gap)) => {
                $chart.draw_series(plotters::series::DashedLineSeries::new($points, dash, gap, style)).map(|_| ())
            }
        }
    }};
}
pub(crate) use draw_variant_line;

#[cfg(test)]
mod tests {
    use super::*;

    /// WCAG 2 contrast ratio of `c` against white.
    fn contrast_on_white(c: RGBColor) -> f64 {
        let [r, g, b] = linear(c);
        let l = 0.2126 * r + 0.7152 * g + 0.0722 * b;
        1.05 / (l + 0.05)
    }

    /// sRGB → linear RGB.
    fn linear(c: RGBColor) -> [f64; 3] {
        [c.0, c.1, c.2].map(|v| {
            let s = f64::from(v) / 255.0;
            if s <= 0.04045 {
                s / 12.92
            } else {
                ((s + 0.055) / 1.055).powf(2.4)
            }
        })
    }

    /// CIELAB (D65) of an sRGB colour.
    fn lab(c: RGBColor) -> [f64; 3] {
        let [r, g, b] = linear(c);
        let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.950_47;
        let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
        let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.088_83;
        let f = |t: f64| if t > 0.008_856 { t.cbrt() } else { 7.787 * t + 16.0 / 116.0 };
        let (fx, fy, fz) = (f(x), f(y), f(z));
        [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
    }

    /// ΔE*76 between two colours.
    fn delta_e(a: RGBColor, b: RGBColor) -> f64 {
        let (p, q) = (lab(a), lab(b));
        ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2)).sqrt()
    }

    #[test]
    fn every_colour_has_3_to_1_contrast_on_white() {
        for (i, c) in palette().into_iter().enumerate() {
            let r = contrast_on_white(c);
            assert!(r >= 3.0, "colour {i} {c:?}: contrast {r:.2} < 3");
        }
        // The formula against known values: black 21:1, white 1:1, #777 ≈ 4.48:1.
        assert!((contrast_on_white(RGBColor(0, 0, 0)) - 21.0).abs() < 1e-9);
        assert!((contrast_on_white(RGBColor(255, 255, 255)) - 1.0).abs() < 1e-9);
        assert!((contrast_on_white(RGBColor(0x77, 0x77, 0x77)) - 4.48).abs() < 0.01);
    }

    #[test]
    fn the_palette_colours_are_perceptibly_apart() {
        // The Lab conversion against known values: white L* 100, black 0, sRGB red (53.2, 80.1, 67.2).
        assert!((lab(RGBColor(255, 255, 255))[0] - 100.0).abs() < 0.1);
        assert!(lab(RGBColor(0, 0, 0))[0].abs() < 1e-9);
        let red = lab(RGBColor(255, 0, 0));
        assert!((red[0] - 53.24).abs() < 0.2 && (red[1] - 80.09).abs() < 0.5 && (red[2] - 67.20).abs() < 0.5);
        let all = palette();
        for (i, &a) in all.iter().enumerate() {
            for (j, &b) in all.iter().enumerate().skip(i + 1) {
                let d = delta_e(a, b);
                assert!(d >= MIN_DELTA_E, "colours {i} {a:?} and {j} {b:?} are ΔE {d:.1} apart");
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
        assert_eq!(c[1], PRESET_COLOURS[PRESETS.iter().position(|p| p.0 == "grpc").unwrap()]);
        // Every strategy and preset has a fixed colour of its own, which no other name gets.
        let mut names: Vec<&str> = strategies().iter().map(|j| j.name()).collect();
        names.extend(PRESETS.iter().map(|p| p.0));
        let fixed_colours: Vec<RGBColor> = names.iter().map(|n| fixed(n).expect("a fixed colour")).collect();
        for (i, c) in fixed_colours.iter().enumerate() {
            assert!(!fixed_colours[i + 1..].contains(c), "{} shares its colour", names[i]);
        }
        let others: Vec<String> = (0..40).map(|k| format!("variant-{k}")).collect();
        let refs: Vec<&str> = others.iter().map(String::as_str).collect();
        for c in colours_of(&refs) {
            assert!(!fixed_colours.contains(&c), "{c:?} is a strategy's or preset's colour");
        }
    }

    #[test]
    fn the_first_other_variant_always_looks_the_same() {
        let a = looks_of(&["global-budget", "tenant-budget"]);
        let b = looks_of(&["all-retry", "top-only"]);
        let c = looks_of(&["none", "fifo", "full"]);
        assert_eq!(a[0], b[0]);
        assert_eq!(a[0], c[1]);
        assert_eq!(a[0], Look { colour: OTHERS[0], dash: Dash::Solid });
    }

    /// No two variants of a run alike: every (colour, style) pair distinct, and the variants
    /// drawn in one style perceptibly apart.
    fn assert_distinct(names: &[&str]) {
        let looks = looks_of(names);
        for (i, a) in looks.iter().enumerate() {
            for (j, b) in looks.iter().enumerate().skip(i + 1) {
                assert_ne!(a, b, "{} and {} look alike", names[i], names[j]);
                if a.dash == b.dash {
                    let d = delta_e(a.colour, b.colour);
                    assert!(d >= MIN_DELTA_E, "{} and {}: ΔE {d:.1}", names[i], names[j]);
                }
            }
        }
    }

    #[test]
    fn many_variants_are_told_apart_by_colour_and_style() {
        for n in [9, 16, 17, 24, 32] {
            let names: Vec<String> = (0..n).map(|k| format!("v{k}")).collect();
            let mut refs: Vec<&str> = names.iter().map(String::as_str).collect();
            assert_distinct(&refs);
            // With strategies and presets among them too.
            refs.extend(["none", "exponential", "full", "grpc", "envoy", "aws-standard", "schedule"]);
            assert_distinct(&refs);
        }
        let mut all: Vec<&str> = strategies().iter().map(|j| j.name()).collect();
        all.extend(PRESETS.iter().map(|p| p.0));
        assert_distinct(&all);
        // overload-shedding's 16 variants: 8 solid, 8 dashed.
        let shedding = [
            "fifo",
            "fifo-jitter",
            "lifo",
            "lifo-jitter",
            "adaptive-lifo",
            "adaptive-lifo-jitter",
            "codel",
            "codel-jitter",
            "deadline-drop",
            "deadline-drop-jitter",
            "adaptive-concurrency",
            "adaptive-concurrency-jitter",
            "gradient-concurrency",
            "gradient-concurrency-jitter",
            "fifo-retry-budget",
            "fifo-long-backoff",
        ];
        assert_distinct(&shedding);
        let looks = looks_of(&shedding);
        assert_eq!(looks.iter().filter(|l| l.dash == Dash::Solid).count(), 8);
        assert_eq!(looks.iter().filter(|l| l.dash == Dash::Dashed).count(), 8);
    }
}
