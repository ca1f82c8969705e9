//! Metrics as CloudWatch Embedded Metric Format: one JSON line per record on stdout, which
//! CloudWatch turns into metrics without an API call. Namespace `lineup`.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Map, Value};

pub const NAMESPACE: &str = "lineup";

/// The most values one metric may carry in one record (the EMF specification's limit).
pub const MAX_VALUES: usize = 100;

/// Where metric lines go. Tests use [`MetricsSink::memory`] to read them back.
#[derive(Clone, Default)]
pub enum MetricsSink {
    #[default]
    Stdout,
    Memory(Arc<Mutex<Vec<String>>>),
}

impl MetricsSink {
    pub fn memory() -> Self {
        MetricsSink::Memory(Arc::default())
    }

    /// The lines written so far (empty for stdout).
    pub fn lines(&self) -> Vec<String> {
        match self {
            MetricsSink::Stdout => Vec::new(),
            MetricsSink::Memory(lines) => {
                lines.lock().unwrap_or_else(PoisonError::into_inner).clone()
            }
        }
    }

    /// Writes one record.
    pub fn emit(&self, record: &Record) {
        let line = record.to_line();
        match self {
            MetricsSink::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
            }
            MetricsSink::Memory(lines) => lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(line),
        }
    }
}

/// The unit of a metric value.
#[derive(Debug, Clone, Copy)]
pub enum Unit {
    Count,
    CountPerMinute,
    Seconds,
    /// A number without a unit (a level from 0 to 1).
    None,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            // CloudWatch has Count/Second only; the name says per minute.
            Unit::CountPerMinute => "None",
            Unit::Seconds => "Seconds",
            Unit::None => "None",
        }
    }
}

/// One EMF record: dimension values and metric values at one instant.
#[derive(Debug, Clone, Default)]
pub struct Record {
    dimensions: Vec<(&'static str, String)>,
    metrics: Vec<(&'static str, Value, Unit)>,
}

impl Record {
    pub fn new() -> Self {
        Record::default()
    }

    pub fn dimension(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.dimensions.push((name, value.into()));
        self
    }

    pub fn count(mut self, name: &'static str, value: u64) -> Self {
        self.metrics.push((name, json!(value), Unit::Count));
        self
    }

    pub fn metric(mut self, name: &'static str, value: f64, unit: Unit) -> Self {
        self.metrics.push((name, json!(value), unit));
        self
    }

    /// Several values of one metric at this instant (at most [`MAX_VALUES`]), each counted
    /// in its statistics, percentiles among them.
    pub fn values(mut self, name: &'static str, values: &[f64], unit: Unit) -> Self {
        self.metrics.push((name, json!(values), unit));
        self
    }

    /// The record as one EMF JSON line.
    pub fn to_line(&self) -> String {
        let timestamp = chrono::Utc::now().timestamp_millis();
        let dimension_names: Vec<&str> = self.dimensions.iter().map(|(name, _)| *name).collect();
        let definitions: Vec<Value> = self
            .metrics
            .iter()
            .map(|(name, _, unit)| json!({"Name": name, "Unit": unit.name()}))
            .collect();
        let mut root = Map::new();
        root.insert(
            "_aws".into(),
            json!({
                "Timestamp": timestamp,
                "CloudWatchMetrics": [{
                    "Namespace": NAMESPACE,
                    "Dimensions": [dimension_names],
                    "Metrics": definitions,
                }],
            }),
        );
        for (name, value) in &self.dimensions {
            root.insert((*name).into(), json!(value));
        }
        for (name, value, _) in &self.metrics {
            root.insert((*name).into(), value.clone());
        }
        Value::Object(root).to_string()
    }
}
