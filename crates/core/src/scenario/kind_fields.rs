//! Which fields each kind reads, for the kind-tagged tables that are read flat (`arrival = {…}`,
//! a `dist` table, and `[[hop]]` by its `kind` in `hop_kind.rs`): a field written that its kind does not read is refused by name, with the
//! kinds that do read it. Both sides come from types, not from lists kept in step by hand:
//! - the fields each kind reads: a schema enum ([`ArrivalFields`], [`DistFields`]) whose variants
//!   are the kinds and whose fields are the ones each reads; serde gives their names
//!   (`tagged::fields`), as it does for the budget and fault kinds;
//! - the fields written: the raw struct's `written()` (`RawArrival`, `RawDist`), whose
//!   destructuring names every field, so a field added to the struct fails to compile until it
//!   is listed there; the tests below check that both sides name the same fields as the struct.

use super::checks::V;
use super::error::Invalid;
use super::tagged;
use serde::de::{DeserializeOwned, IgnoredAny};

/// A field of a schema: only its name is read.
type F = Option<IgnoredAny>;

/// The fields each arrival kind reads besides `kind` (its kinds are `ArrivalKindName`'s, in its
/// order: a test checks).
#[derive(serde::Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[allow(dead_code, reason = "a schema: only the names of its variants' fields are read")]
pub(super) enum ArrivalFields {
    Herd {
        start: F,
        spread: F,
        requests_per_client: F,
    },
    Poisson {
        rate_per_s: F,
    },
    Closed {
        start: F,
        spread: F,
        think: F,
    },
    Profile {
        steps: F,
    },
    Trace {
        file: F,
        format: F,
        column: F,
        time_column: F,
        unit: F,
        interval: F,
        per: F,
        time_scale: F,
        volume_scale: F,
        #[serde(rename = "loop")]
        looped: F,
    },
    Ramp {
        rate_per_s: F,
        from_rate_per_s: F,
        over: F,
    },
}

/// The fields each service or network `dist` reads besides `dist` (its kinds are `DistName`'s, in
/// its order: a test checks).
/// A lognormal is given by mean and sd or through two percentiles.
#[derive(serde::Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[allow(dead_code, reason = "a schema: only the names of its variants' fields are read")]
pub(super) enum DistFields {
    Constant { mean: F },
    Exponential { mean: F },
    Lognormal { mean: F, sd: F, p50: F, p75: F, p90: F, p95: F, p99: F, p999: F },
    NormalAbs { mean: F, sd: F },
    Load { base: F, per_inflight: F },
    Empirical { file: F, unit: F, cumulative: F, min: F, p50: F, p75: F, p90: F, p95: F, p99: F, p999: F },
}

/// Refuses the first field of `written` (each field's name and whether it is written) that kind
/// `given` of the schema `S` does not read: "`at.field` is only used by `family` `a` and `b`,
/// not `given`; remove it". `given` must name a kind of `S` (an unknown kind is refused first).
pub(super) fn refuse_unread<S: DeserializeOwned>(
    family: &str,
    given: &str,
    written: &[(&'static str, bool)],
    at: &str,
) -> V<()> {
    let Some(field) = first_unread::<S>(given, written) else { return Ok(()) };
    let readers: Vec<String> = readers::<S>(field).into_iter().map(|k| format!("`{k}`")).collect();
    let readers = match readers.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, init)) => format!("{} and {last}", init.join(", ")),
        None => panic!("`{field}` is written in `{at}` but no kind of {} reads it", std::any::type_name::<S>()),
    };
    Err(Invalid::at(&format!("{at}.{field}"), format!("is only used by {family} {readers}, not `{given}`; remove it")))
}

/// The first field of `written` (each field's name and whether it is written) that kind `given`
/// of the schema `S` does not read.
pub(super) fn first_unread<S: DeserializeOwned>(given: &str, written: &[(&'static str, bool)]) -> Option<&'static str> {
    let reads = tagged::fields::<S>(given);
    written.iter().find(|&&(f, set)| set && !reads.contains(&f)).map(|&(f, _)| f)
}

/// The kinds of `S` that read `field`, in definition order.
pub(super) fn readers<S: DeserializeOwned>(field: &str) -> Vec<&'static str> {
    tagged::names::<S>().iter().copied().filter(|k| tagged::fields::<S>(k).contains(&field)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::hop_kind::{HopFields, HopKindName};
    use crate::scenario::raw::{RawArrival, RawDist, RawHop};
    use serde::de::{self, Visitor};
    use std::cell::Cell;

    /// A deserializer that only records the field names a struct's derived `Deserialize` asks for.
    struct FieldNames<'a>(&'a Cell<&'static [&'static str]>);

    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("stop")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<T: std::fmt::Display>(_: T) -> Self {
            Stop
        }
    }

    impl<'de> de::Deserializer<'de> for FieldNames<'_> {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0.set(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }

    /// The keys `T` reads, as serde's derive lists them (renames applied).
    fn struct_fields<T: DeserializeOwned>() -> Vec<&'static str> {
        let fields = Cell::new(&[][..]);
        assert!(T::deserialize(FieldNames(&fields)).is_err());
        fields.get().to_vec()
    }

    fn sorted(mut v: Vec<&'static str>) -> Vec<&'static str> {
        v.sort_unstable();
        v
    }

    /// Every field some kind of `S` reads, once each.
    fn schema_fields<S: DeserializeOwned>() -> Vec<&'static str> {
        let mut all: Vec<&'static str> =
            tagged::names::<S>().iter().flat_map(|k| tagged::fields::<S>(k)).copied().collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// `common`: the fields every kind has (the tag among them), in neither side.
    fn check_sides<S: DeserializeOwned>(common: &[&str], raw: Vec<&'static str>, written: Vec<&'static str>) {
        let raw = sorted(raw.into_iter().filter(|f| !common.contains(f)).collect());
        assert_eq!(sorted(written), raw, "written() names the raw struct's fields");
        assert_eq!(schema_fields::<S>(), raw, "the schema's kinds read exactly the raw struct's fields");
    }

    #[test]
    fn the_arrival_schema_and_written_name_the_raw_structs_fields() {
        let raw: RawArrival = toml::from_str("kind = \"herd\"").expect("a herd arrival");
        let written = raw.written().iter().map(|&(f, _)| f).collect();
        check_sides::<ArrivalFields>(&["kind"], struct_fields::<RawArrival>(), written);
    }

    #[test]
    fn the_dist_schema_and_written_name_the_raw_structs_fields() {
        let raw: RawDist = toml::from_str("dist = \"constant\"").expect("a dist");
        let written = raw.written().iter().map(|&(f, _)| f).collect();
        check_sides::<DistFields>(&["dist"], struct_fields::<RawDist>(), written);
    }

    #[test]
    fn the_hop_schema_and_written_name_the_raw_structs_fields() {
        let raw: RawHop = toml::from_str("name = \"api\"").expect("a hop");
        let written = raw.written().iter().map(|&(f, _)| f).collect();
        check_sides::<HopFields>(&["name", "kind"], struct_fields::<RawHop>(), written);
    }

    #[test]
    fn each_schema_lists_the_kinds_its_family_reads_in_their_order() {
        use crate::scenario::dists::DistName;
        use crate::scenario::tenants::ArrivalKindName;
        assert_eq!(tagged::names::<ArrivalFields>(), tagged::names::<ArrivalKindName>());
        assert_eq!(tagged::names::<DistFields>(), tagged::names::<DistName>());
        assert_eq!(tagged::names::<HopFields>(), tagged::names::<HopKindName>());
    }

    #[test]
    fn a_field_its_kind_does_not_read_is_refused_with_the_kinds_that_read_it() {
        let refuse = |given: &str, written: &[(&'static str, bool)]| {
            refuse_unread::<DistFields>("dist", given, written, "hop.api.service")
                .map_err(|e| format!("{} {}", e.path.join("."), e.message))
        };
        assert!(refuse("lognormal", &[("mean", true), ("p99", false), ("base", false)]).is_ok());
        let p99 = refuse("constant", &[("mean", true), ("p99", true)]).expect_err("constant reads no percentile");
        assert!(p99.contains("hop.api.service.p99"), "{p99}");
        assert!(p99.contains("is only used by dist `lognormal` and `empirical`, not `constant`; remove it"), "{p99}");
        let base = refuse("exponential", &[("sd", false), ("base", true)]).expect_err("exponential reads no base");
        assert!(base.contains("is only used by dist `load`, not `exponential`"), "{base}");
        let sd = refuse("load", &[("sd", true)]).expect_err("load reads no sd");
        assert!(sd.contains("is only used by dist `lognormal` and `normal_abs`, not `load`"), "{sd}");
        assert_eq!(readers::<ArrivalFields>("start"), ["herd", "closed"]);
        assert_eq!(readers::<ArrivalFields>("loop"), ["trace"]);
    }
}
