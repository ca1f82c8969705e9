//! A script's reply read by position: each field as text, a number or an instant, with an
//! error that names the reply and the field when it is missing or not what it should be.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use redis::{FromRedisValue, ParsingError, Value};

/// The fields of one reply, named `reply` in errors.
pub struct Fields<'a> {
    reply: &'static str,
    fields: &'a [Value],
}

impl<'a> Fields<'a> {
    pub fn new(reply: &'static str, fields: &'a [Value]) -> Self {
        Fields { reply, fields }
    }

    /// Field `i` as text.
    pub fn text(&self, i: usize) -> Result<String, ParsingError> {
        self.fields
            .get(i)
            .map(String::from_redis_value_ref)
            .unwrap_or_else(|| Err(format!("{} reply lacks field {i}", self.reply).into()))
    }

    /// Field `i` as a number.
    pub fn number<T: FromStr>(&self, i: usize) -> Result<T, ParsingError> {
        self.text(i)?.parse().map_err(|_| {
            ParsingError::from(format!("{} reply field {i} is not a number", self.reply))
        })
    }

    /// Field `i` as an instant from its milliseconds; `None` when it is empty.
    pub fn instant(&self, i: usize) -> Result<Option<DateTime<Utc>>, ParsingError> {
        let raw = self.text(i)?;
        if raw.is_empty() {
            return Ok(None);
        }
        let ms: i64 = self.number(i)?;
        DateTime::from_timestamp_millis(ms)
            .map(Some)
            .ok_or_else(|| {
                ParsingError::from(format!("{} reply field {i} is out of range", self.reply))
            })
    }
}
