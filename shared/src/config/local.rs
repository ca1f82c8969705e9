//! The local stack's own settings: what AWS gives the functions by other means (the reaper's
//! schedule is an EventBridge rule in `template.yaml`). No Lambda reads them.

use std::time::Duration;

use super::error::ConfigError;
use super::vars::Vars;
use crate::bounds::Bounds;

/// How the local stack runs what AWS schedules.
#[derive(Debug, Clone)]
pub struct LocalSettings {
    /// `REAP_INTERVAL_SECONDS`: the pause between reaper runs.
    pub reap_interval: Duration,
}

impl LocalSettings {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(LocalSettings {
            reap_interval: vars.seconds("REAP_INTERVAL_SECONDS", 60, Bounds::new(1, 86_400))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Environment;

    #[test]
    fn the_reaper_runs_every_minute_unless_told_and_a_bad_period_names_its_variable() {
        let none = Environment::new(|_| None).local().unwrap();
        assert_eq!(none.reap_interval, Duration::from_secs(60));
        let set = |value: &'static str| {
            Environment::new(move |name| {
                (name == "REAP_INTERVAL_SECONDS").then(|| value.to_owned())
            })
            .local()
        };
        assert_eq!(set("1").unwrap().reap_interval, Duration::from_secs(1));
        assert_eq!(set("0").unwrap_err().variable, "REAP_INTERVAL_SECONDS");
    }
}
