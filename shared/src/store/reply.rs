//! A script's reply as a tag followed by named fields: `{tag, name, value, name, value, …}`,
//! the form every coupon script, every writing ranking script and the striped line's join,
//! release, lease and apply answer in. Each call decodes
//! its reply into its own enum, one variant per tag, through [`Tagged::decode`]: the errors
//! name the reply, the tag and the field when a field is missing, is not what it should be, or
//! is one the variant does not read.

use std::cell::Cell;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use redis::{FromRedisValue, ParsingError, Value};

/// One tagged reply, named `reply` in errors, while its fields are read by name.
pub struct Tagged<'a> {
    reply: &'static str,
    tag: String,
    fields: Vec<(String, &'a Value)>,
    /// Whether each field was read.
    read: Vec<Cell<bool>>,
}

impl<'a> Tagged<'a> {
    /// Decodes `value`, the reply named `reply`, with `read`, which reads the tag and the
    /// fields by name. Fails when `value` is not a tag and name/value pairs, when `read`
    /// fails, or when a field is left unread.
    pub fn decode<T>(
        reply: &'static str,
        value: &'a Value,
        read: impl FnOnce(&Tagged<'a>) -> Result<T, ParsingError>,
    ) -> Result<T, ParsingError> {
        let tagged = Tagged::new(reply, value)?;
        let decoded = read(&tagged)?;
        match tagged.read.iter().position(|read| !read.get()) {
            Some(unread) => Err(tagged.error(format!(
                "has a field {:?} it does not take",
                tagged.fields[unread].0
            ))),
            None => Ok(decoded),
        }
    }

    fn new(reply: &'static str, value: &'a Value) -> Result<Self, ParsingError> {
        let Value::Array(items) = value else {
            return Err(format!("{reply} reply is not a tag and named fields: {value:?}").into());
        };
        let Some((tag, pairs)) = items.split_first() else {
            return Err(format!("{reply} reply is empty").into());
        };
        let tag = match tag {
            Value::BulkString(_) | Value::SimpleString(_) => String::from_redis_value_ref(tag)?,
            other => return Err(format!("{reply} reply's tag is not text: {other:?}").into()),
        };
        let mut tagged = Tagged {
            reply,
            tag,
            fields: Vec::with_capacity(pairs.len() / 2),
            read: Vec::new(),
        };
        for pair in pairs.chunks(2) {
            let [name, value] = pair else {
                return Err(tagged.error("ends in a name without a value"));
            };
            let name = String::from_redis_value_ref(name)
                .map_err(|_| tagged.error(format!("has a name that is not text: {name:?}")))?;
            if tagged.fields.iter().any(|(seen, _)| *seen == name) {
                return Err(tagged.error(format!("names {name:?} twice")));
            }
            tagged.fields.push((name, value));
        }
        tagged.read = tagged.fields.iter().map(|_| Cell::new(false)).collect();
        Ok(tagged)
    }

    /// The reply's tag: which outcome it is.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The error for a tag the call does not know.
    pub fn unknown(&self) -> ParsingError {
        format!("unexpected {} reply {:?}", self.reply, self.tag).into()
    }

    /// An error about this reply.
    pub fn error(&self, what: impl std::fmt::Display) -> ParsingError {
        format!("{} reply {:?} {what}", self.reply, self.tag).into()
    }

    /// Field `name`'s value, noted as read.
    fn field(&self, name: &str) -> Result<&'a Value, ParsingError> {
        let at = self
            .fields
            .iter()
            .position(|(field, _)| field == name)
            .ok_or_else(|| self.error(format!("lacks field {name:?}")))?;
        self.read[at].set(true);
        Ok(self.fields[at].1)
    }

    /// `value` of field `name` as text: a string or a whole number.
    fn as_text(&self, name: &str, value: &Value) -> Result<String, ParsingError> {
        match value {
            Value::BulkString(_) | Value::SimpleString(_) | Value::Int(_) => {
                String::from_redis_value_ref(value)
            }
            other => Err(self.error(format!("field {name:?} is not text: {other:?}"))),
        }
    }

    /// `raw`, field `name`, as a number.
    fn parse<T: FromStr>(&self, name: &str, raw: &str) -> Result<T, ParsingError> {
        raw.parse()
            .map_err(|_| self.error(format!("field {name:?} is not a number: {raw:?}")))
    }

    /// Field `name` as text.
    pub fn text(&self, name: &str) -> Result<String, ParsingError> {
        self.as_text(name, self.field(name)?)
    }

    /// Field `name` as text; `None` when it is empty.
    pub fn optional_text(&self, name: &str) -> Result<Option<String>, ParsingError> {
        let text = self.text(name)?;
        Ok((!text.is_empty()).then_some(text))
    }

    /// Field `name` as a number.
    pub fn number<T: FromStr>(&self, name: &str) -> Result<T, ParsingError> {
        self.parse(name, &self.text(name)?)
    }

    /// Field `name`, `1` or `0`, as a flag.
    pub fn flag(&self, name: &str) -> Result<bool, ParsingError> {
        match self.text(name)?.as_str() {
            "1" => Ok(true),
            "0" => Ok(false),
            other => Err(self.error(format!("field {name:?} is not 1 or 0: {other:?}"))),
        }
    }

    /// Field `name` as an instant from its milliseconds.
    pub fn instant(&self, name: &str) -> Result<DateTime<Utc>, ParsingError> {
        let ms: i64 = self.number(name)?;
        DateTime::from_timestamp_millis(ms)
            .ok_or_else(|| self.error(format!("field {name:?} is out of range: {ms}")))
    }

    /// Field `name` as an instant from its milliseconds; `None` when it is empty.
    pub fn optional_instant(&self, name: &str) -> Result<Option<DateTime<Utc>>, ParsingError> {
        match self.optional_text(name)? {
            None => Ok(None),
            Some(_) => self.instant(name).map(Some),
        }
    }

    /// Field `name`, a list, as its items.
    pub fn list(&self, name: &str) -> Result<&'a [Value], ParsingError> {
        match self.field(name)? {
            Value::Array(items) => Ok(items),
            other => Err(self.error(format!("field {name:?} is not a list: {other:?}"))),
        }
    }

    /// Field `name`, a list, as text.
    pub fn texts(&self, name: &str) -> Result<Vec<String>, ParsingError> {
        self.list(name)?
            .iter()
            .map(|item| self.as_text(name, item))
            .collect()
    }

    /// Field `name`, a list, as numbers.
    pub fn numbers<T: FromStr>(&self, name: &str) -> Result<Vec<T>, ParsingError> {
        self.list(name)?
            .iter()
            .map(|item| self.parse(name, &self.as_text(name, item)?))
            .collect()
    }
}

/// A reply for a unit test, from its items: a whole number as a Redis integer, any other
/// item as text.
#[cfg(test)]
pub(crate) fn test_reply(items: &[&str]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|item| match item.parse::<i64>() {
                Ok(n) => Value::Int(n),
                Err(_) => Value::BulkString(item.as_bytes().to_vec()),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::Tagged;
    use redis::{ParsingError, Value};

    fn text(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn reply(items: Vec<Value>) -> Value {
        Value::Array(items)
    }

    /// A claim-like reply: a number and an instant.
    fn read(value: &Value) -> Result<(String, u64, i64), ParsingError> {
        Tagged::decode("test", value, |r| match r.tag() {
            "claimed" => Ok((
                r.tag().to_owned(),
                r.number("number")?,
                r.instant("at")?.timestamp_millis(),
            )),
            _ => Err(r.unknown()),
        })
    }

    #[test]
    fn a_tag_and_named_fields_decode_in_any_order() {
        let good = reply(vec![
            text("claimed"),
            text("at"),
            Value::Int(1_700_000_000_000),
            text("number"),
            Value::Int(3),
        ]);
        assert_eq!(
            read(&good).unwrap(),
            ("claimed".into(), 3, 1_700_000_000_000)
        );
    }

    #[test]
    fn a_reply_of_another_shape_fails_with_what_is_wrong() {
        let cases = [
            (
                reply(vec![text("other")]),
                "unexpected test reply \"other\"",
            ),
            (
                reply(vec![text("claimed"), text("number"), Value::Int(3)]),
                "lacks field \"at\"",
            ),
            (
                reply(vec![
                    text("claimed"),
                    text("number"),
                    text("three"),
                    text("at"),
                    Value::Int(1),
                ]),
                "field \"number\" is not a number",
            ),
            (
                reply(vec![
                    text("claimed"),
                    text("number"),
                    reply(vec![]),
                    text("at"),
                    Value::Int(1),
                ]),
                "field \"number\" is not text",
            ),
            (
                reply(vec![
                    text("claimed"),
                    text("number"),
                    Value::Int(3),
                    text("at"),
                    Value::Int(1),
                    text("more"),
                    Value::Int(1),
                ]),
                "has a field \"more\"",
            ),
            (
                reply(vec![text("claimed"), text("number")]),
                "a name without a value",
            ),
            (
                reply(vec![
                    text("claimed"),
                    text("number"),
                    Value::Int(3),
                    text("number"),
                    Value::Int(4),
                ]),
                "names \"number\" twice",
            ),
            (reply(vec![]), "test reply is empty"),
            (reply(vec![Value::Int(1)]), "tag is not text"),
            (text("claimed"), "not a tag and named fields"),
            (Value::Nil, "not a tag and named fields"),
        ];
        for (value, error) in cases {
            let err = read(&value).unwrap_err().to_string();
            assert!(err.contains(error), "{value:?}: {err}");
        }
    }

    #[test]
    fn optional_fields_flags_and_lists_read_as_their_kind() {
        let value = reply(vec![
            text("campaign"),
            text("queue"),
            text(""),
            text("opens-at"),
            text(""),
            text("created"),
            Value::Int(1),
            text("users"),
            reply(vec![text("a"), text("b")]),
            text("numbers"),
            reply(vec![Value::Int(1), text("2")]),
        ]);
        let read = Tagged::decode("test", &value, |r| {
            Ok((
                r.optional_text("queue")?,
                r.optional_instant("opens-at")?,
                r.flag("created")?,
                r.texts("users")?,
                r.numbers::<u64>("numbers")?,
            ))
        })
        .unwrap();
        assert_eq!(
            read,
            (None, None, true, vec!["a".into(), "b".into()], vec![1, 2])
        );
        let bad_flag = reply(vec![text("x"), text("created"), Value::Int(2)]);
        assert!(Tagged::decode("test", &bad_flag, |r| r.flag("created")).is_err());
        let not_a_list = reply(vec![text("x"), text("users"), text("a")]);
        assert!(Tagged::decode("test", &not_a_list, |r| r.texts("users")).is_err());
    }
}
