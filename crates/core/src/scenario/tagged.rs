//! Kind-tagged tables (`{ kind = "aws_quota", capacity = 500 }`) read into the model's kind enums
//! through serde, with each failure kept apart so that the caller words it as precisely as a
//! hand-written parser would.
//!
//! A kind family is one enum deriving `Deserialize` (serde's default, externally tagged form,
//! `rename_all = "snake_case"`, `deny_unknown_fields`): its variants are the kinds, their fields
//! the parameters each takes, `#[serde(default = …)]` their defaults. [`read`] turns the table's
//! tag into the variant and the other keys into its fields. serde itself reports the unknown
//! kind (with every kind's name), a field the kind does not take (with the fields it takes) and a
//! missing field; this reader catches those in [`TagError`] instead of a string, and names the
//! field whose value serde refused. [`names`] and [`fields`] ask the same definition which kinds
//! and fields exist, for messages and `compare --jitter`; `checks::read_kind` words the failures.

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use std::cell::Cell;
use std::fmt;
use toml::{Table, Value};

/// Why a kind-tagged table was refused.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TagError {
    /// The table has no tag key.
    NoTag,
    /// The tag names no kind (or is not a string); `names` are the kinds in definition order.
    Unknown {
        /// The value written, as text.
        given: String,
        /// Every kind's name.
        names: &'static [&'static str],
    },
    /// `field` is not a parameter of the kind; `takes` are the ones it has.
    NotUsed {
        /// The key written.
        field: String,
        /// The kind's fields in definition order (empty for a kind without parameters).
        takes: &'static [&'static str],
    },
    /// A parameter without a default is absent.
    Missing {
        /// Its name.
        field: &'static str,
    },
    /// serde refused the value of `field` (wrong type, bad duration); `message` says why.
    Value {
        /// The key.
        field: String,
        /// serde's message.
        message: String,
    },
}

/// Reads `table` into `T`, its kind named by the key `tag`; every other key is a field of the kind.
pub(crate) fn read<T: DeserializeOwned>(table: &Table, tag: &str) -> Result<T, TagError> {
    let kind = table.get(tag).ok_or(TagError::NoTag)?;
    let fields = Cell::new(&[][..]);
    T::deserialize(Kind { kind, tag, table, fields: &fields }).map_err(|e| match e {
        Error::Tag(t) => t,
        Error::Custom(message) => TagError::Value { field: tag.to_string(), message },
    })
}

/// Reads `name` as a kind of `T` that takes no parameters (`balancer = "random"`), or gives
/// every kind's name, in definition order, for the message.
pub(crate) fn read_name<T: DeserializeOwned>(name: &str) -> Result<T, &'static [&'static str]> {
    read::<T>(&Table::from_iter([("kind".to_string(), Value::String(name.to_string()))]), "kind")
        .map_err(|_| names::<T>())
}

/// Every kind of `T`, in definition order.
pub(crate) fn names<T: DeserializeOwned>() -> &'static [&'static str] {
    match read::<T>(&Table::from_iter([("kind".to_string(), Value::String(String::new()))]), "kind") {
        Err(TagError::Unknown { names, .. }) => names,
        Err(other) => panic!("{}: the empty kind name gave {other:?}", std::any::type_name::<T>()),
        Ok(_) => panic!("{} has a kind named \"\"", std::any::type_name::<T>()),
    }
}

/// The fields kind `name` of `T` takes, in definition order (empty for an unknown kind).
pub(crate) fn fields<T: DeserializeOwned>(name: &str) -> &'static [&'static str] {
    let table = Table::from_iter([("kind".to_string(), Value::String(name.to_string()))]);
    let kind = &table["kind"];
    let fields = Cell::new(&[][..]);
    // A kind with required fields fails here (they are absent); its field list is known by then.
    let _ = T::deserialize(Kind { kind, tag: "kind", table: &table, fields: &fields });
    fields.get()
}

/// The keys a table holding a kind of `T` may have: `fixed` (its own, and the tag), then every
/// field some kind of `T` takes, once each in definition order. For the raw structs that read
/// such a table (`RawFault`, `RawBudget`): a key outside the list is refused where it is written.
pub(crate) fn keys_with<T: DeserializeOwned>(fixed: &[&'static str]) -> Vec<&'static str> {
    let mut keys = fixed.to_vec();
    for kind in names::<T>() {
        for field in fields::<T>(kind) {
            if !keys.contains(field) {
                keys.push(field);
            }
        }
    }
    keys
}

/// Reads a key of a table, refusing one outside `allowed` with serde's unknown-field error (so
/// the TOML parser places it at the key and suggests the closest).
pub(crate) struct Key(pub &'static [&'static str]);

impl<'de> de::DeserializeSeed<'de> for Key {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for Key {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<String, E> {
        match self.0.contains(&key) {
            true => Ok(key.to_string()),
            false => Err(E::unknown_field(key, self.0)),
        }
    }
}

/// The reader's error: a [`TagError`] from serde's structured calls, or serde's own message.
#[derive(Debug)]
enum Error {
    Tag(TagError),
    Custom(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Tag(t) => write!(f, "{t:?}"),
            Error::Custom(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<M: fmt::Display>(msg: M) -> Self {
        Error::Custom(msg.to_string())
    }
    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Error::Tag(TagError::Unknown { given: variant.to_string(), names: expected })
    }
    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Error::Tag(TagError::NotUsed { field: field.to_string(), takes: expected })
    }
    fn missing_field(field: &'static str) -> Self {
        Error::Tag(TagError::Missing { field })
    }
}

/// The table as serde's externally tagged enum: the tag's value is the variant, the other keys
/// its fields.
struct Kind<'a> {
    kind: &'a Value,
    tag: &'a str,
    table: &'a Table,
    /// Set to the chosen variant's field list when serde asks for its fields.
    fields: &'a Cell<&'static [&'static str]>,
}

impl<'de> de::Deserializer<'de> for Kind<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        Err(Error::Custom("a kind family is an enum".into()))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if !self.kind.is_str() {
            return Err(Error::Tag(TagError::Unknown { given: self.kind.to_string(), names: variants }));
        }
        visitor.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

impl<'de, 'a> de::EnumAccess<'de> for Kind<'a> {
    type Error = Error;
    type Variant = Kind<'a>;

    fn variant_seed<S: de::DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Kind<'a>), Error> {
        let name = self.kind.as_str().unwrap_or_default();
        let variant = seed.deserialize(de::value::StrDeserializer::<Error>::new(name))?;
        Ok((variant, self))
    }
}

impl<'a> Kind<'a> {
    /// The keys other than the tag.
    fn params(&self) -> impl Iterator<Item = (&'a String, &'a Value)> + use<'a> {
        let tag = self.tag;
        self.table.iter().filter(move |(k, _)| *k != tag)
    }
}

/// The fields of a kind, read one by one; an error serde raises while reading a value (in the
/// value's own deserializer or after it, as a duration parser does) names that field.
struct Params<'a, I> {
    rest: I,
    current: Option<(&'a String, &'a Value)>,
}

impl<'de, 'a, I: Iterator<Item = (&'a String, &'a Value)>> de::MapAccess<'de> for Params<'a, I> {
    type Error = Error;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        self.current = self.rest.next();
        let Some((key, _)) = self.current else { return Ok(None) };
        seed.deserialize(de::value::StrDeserializer::<Error>::new(key)).map(Some)
    }

    fn next_value_seed<S: de::DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        let (key, value) = self.current.expect("serde reads a key before its value");
        seed.deserialize(Field { value }).map_err(|e| match e {
            Error::Custom(message) => Error::Tag(TagError::Value { field: key.clone(), message }),
            e => e,
        })
    }
}

impl<'de> de::VariantAccess<'de> for Kind<'_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.params().next() {
            Some((field, _)) => Err(Error::Tag(TagError::NotUsed { field: field.clone(), takes: &[] })),
            None => Ok(()),
        }
    }

    fn struct_variant<V: Visitor<'de>>(self, fields: &'static [&'static str], visitor: V) -> Result<V::Value, Error> {
        self.fields.set(fields);
        visitor.visit_map(Params { rest: self.params(), current: None })
    }

    fn newtype_variant_seed<S: de::DeserializeSeed<'de>>(self, _: S) -> Result<S::Value, Error> {
        Err(Error::Custom("kinds are unit or struct variants".into()))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, Error> {
        Err(Error::Custom("kinds are unit or struct variants".into()))
    }
}

/// One value of the table.
#[derive(Clone, Copy)]
struct Field<'a> {
    value: &'a Value,
}

impl<'de> IntoDeserializer<'de, Error> for Field<'_> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> de::Deserializer<'de> for Field<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::String(s) => visitor.visit_str(s),
            Value::Integer(i) => visitor.visit_i64(*i),
            Value::Float(x) => visitor.visit_f64(*x),
            Value::Boolean(b) => visitor.visit_bool(*b),
            Value::Datetime(d) => visitor.visit_string(d.to_string()),
            Value::Array(items) => {
                let mut seq = de::value::SeqDeserializer::new(items.iter().map(|value| Field { value }));
                let value = visitor.visit_seq(&mut seq)?;
                seq.end().map(|()| value)
            }
            Value::Table(t) => {
                let mut map = de::value::MapDeserializer::new(t.iter().map(|(k, value)| (k.as_str(), Field { value })));
                let value = visitor.visit_map(&mut map)?;
                map.end().map(|()| value)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A family read by its name and written by `name()` says the same words both ways, and an
    /// unknown name is answered with every name in definition order.
    #[test]
    fn names_read_and_written_agree() {
        use crate::model::autoscale::{ScaleMetric, ScaleUnit};
        use crate::model::Balancer;
        for name in names::<Balancer>() {
            assert_eq!(read_name::<Balancer>(name).map(Balancer::name), Ok(*name));
        }
        for name in names::<ScaleUnit>() {
            assert_eq!(read_name::<ScaleUnit>(name).map(ScaleUnit::name), Ok(*name));
        }
        for name in names::<ScaleMetric>() {
            assert_eq!(read_name::<ScaleMetric>(name).map(ScaleMetric::name), Ok(*name));
        }
        assert_eq!(names::<Balancer>().len(), 6);
        assert_eq!(read_name::<ScaleUnit>("nodes"), Err(&["replicas", "workers"][..]));
        assert_eq!(
            read_name::<crate::model::cache::Eviction>("lfu"),
            Err(&["lru", "fifo"][..]),
            "the names in the message are the type's"
        );
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(rename_all = "snake_case", deny_unknown_fields)]
    enum Shape {
        Dot,
        Circle {
            #[serde(default = "one")]
            r: f64,
        },
        Line {
            #[serde(deserialize_with = "crate::engine::time::de_nanos")]
            length: u64,
            width: u32,
        },
    }

    fn one() -> f64 {
        1.0
    }

    fn table(text: &str) -> Table {
        toml::from_str(text).expect("TOML")
    }

    #[test]
    fn reads_kinds_their_fields_and_defaults() {
        assert_eq!(read::<Shape>(&table("kind = \"dot\""), "kind"), Ok(Shape::Dot));
        assert_eq!(read::<Shape>(&table("kind = \"circle\""), "kind"), Ok(Shape::Circle { r: 1.0 }));
        assert_eq!(read::<Shape>(&table("shape = \"circle\"\nr = 2"), "shape"), Ok(Shape::Circle { r: 2.0 }));
        let line = read::<Shape>(&table("kind = \"line\"\nlength = \"2ms\"\nwidth = 3"), "kind");
        assert_eq!(line, Ok(Shape::Line { length: 2_000_000, width: 3 }));
    }

    #[test]
    fn keeps_each_failure_apart() {
        let names: &[&str] = &["dot", "circle", "line"];
        assert_eq!(read::<Shape>(&table("r = 1"), "kind"), Err(TagError::NoTag));
        assert_eq!(
            read::<Shape>(&table("kind = \"square\""), "kind"),
            Err(TagError::Unknown { given: "square".into(), names })
        );
        assert_eq!(read::<Shape>(&table("kind = 5"), "kind"), Err(TagError::Unknown { given: "5".into(), names }));
        assert_eq!(
            read::<Shape>(&table("kind = \"dot\"\nr = 1"), "kind"),
            Err(TagError::NotUsed { field: "r".into(), takes: &[] })
        );
        assert_eq!(
            read::<Shape>(&table("kind = \"circle\"\nlength = \"1s\""), "kind"),
            Err(TagError::NotUsed { field: "length".into(), takes: &["r"] })
        );
        assert_eq!(
            read::<Shape>(&table("kind = \"line\"\nwidth = 1"), "kind"),
            Err(TagError::Missing { field: "length" })
        );
        let Err(TagError::Value { field, message }) =
            read::<Shape>(&table("kind = \"line\"\nlength = \"5 parsecs\"\nwidth = 1"), "kind")
        else {
            panic!("a bad duration is a value error")
        };
        assert_eq!(field, "length");
        assert!(message.starts_with("invalid duration `5 parsecs`"), "{message}");
        let Err(TagError::Value { field, message }) =
            read::<Shape>(&table("kind = \"line\"\nlength = \"1s\"\nwidth = -1"), "kind")
        else {
            panic!("a negative count is a value error")
        };
        assert_eq!((field.as_str(), message.as_str()), ("width", "invalid value: integer `-1`, expected u32"));
    }

    #[test]
    fn introspects_the_definition() {
        assert_eq!(names::<Shape>(), &["dot", "circle", "line"]);
        assert_eq!(fields::<Shape>("dot"), &[] as &[&str]);
        assert_eq!(fields::<Shape>("circle"), &["r"]);
        assert_eq!(fields::<Shape>("line"), &["length", "width"]);
        assert_eq!(fields::<Shape>("square"), &[] as &[&str]);
    }
}
