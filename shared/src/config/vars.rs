//! Reading one environment variable: a string, a bounded number, a duration or one of a few
//! words, with an error that names the variable.

use std::time::Duration;

use super::error::{bad, ConfigError};
use crate::bounds::Bounds;

/// Reads variables through `lookup`, so tests can supply their own environment.
pub(super) struct Vars<'a>(pub(super) &'a dyn Fn(&str) -> Option<String>);

impl Vars<'_> {
    pub(super) fn string(&self, name: &'static str) -> Option<String> {
        (self.0)(name).filter(|v| !v.trim().is_empty())
    }

    pub(super) fn number(
        &self,
        name: &'static str,
        default: u64,
        bounds: Bounds,
    ) -> Result<u64, ConfigError> {
        match self.string(name) {
            None => Ok(default),
            Some(raw) => bounds
                .parse(raw.trim())
                .map_err(|err| bad(name, format!("{err}, not {raw:?}"))),
        }
    }

    /// A number that fits `u32` by its bounds.
    pub(super) fn count(
        &self,
        name: &'static str,
        default: u32,
        bounds: Bounds,
    ) -> Result<u32, ConfigError> {
        let value = self.number(name, default.into(), bounds)?;
        u32::try_from(value).map_err(|_| bad(name, format!("{value} is too large")))
    }

    pub(super) fn seconds(
        &self,
        name: &'static str,
        default: u64,
        bounds: Bounds,
    ) -> Result<Duration, ConfigError> {
        self.number(name, default, bounds).map(Duration::from_secs)
    }

    pub(super) fn millis(&self, name: &'static str, default: u64) -> Result<Duration, ConfigError> {
        self.number(name, default, Bounds::new(10, 60_000))
            .map(Duration::from_millis)
    }

    /// One of `choices`, by its word; the first when the variable is unset.
    pub(super) fn one_of<T: Copy>(
        &self,
        name: &'static str,
        choices: &[(&str, T)],
    ) -> Result<T, ConfigError> {
        let raw = self.string(name);
        let word = raw.as_deref().map(str::trim);
        choices
            .iter()
            .find(|(choice, _)| word.is_none_or(|word| word == *choice))
            .map(|(_, value)| *value)
            .ok_or_else(|| {
                let words: Vec<&str> = choices.iter().map(|(choice, _)| *choice).collect();
                let listed = match words.split_last() {
                    Some((last, rest)) if !rest.is_empty() => {
                        format!("{} or {last}", rest.join(", "))
                    }
                    _ => words.concat(),
                };
                bad(
                    name,
                    format!("{:?} is not {listed}", word.unwrap_or_default()),
                )
            })
    }
}
