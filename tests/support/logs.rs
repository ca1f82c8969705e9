//! Reading back what the functions log, while other tests run beside it.
//!
//! `tracing` caches, once per process, whether each log call site is wanted. While at most one
//! dispatcher exists, it asks only the thread that reaches the call site first. A test thread
//! with no subscriber answers "never", and that answer then silences the call site on every
//! thread, the capturing one too. So the first thing any test app does is install [`Anchor`]
//! as the global default: it wants every call site "sometimes", which makes each log call ask
//! its own thread's subscriber, and it keeps nothing itself.

use std::io::Write;
use std::sync::{Arc, Mutex, Once};

use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::{DefaultGuard, Interest};
use tracing::{Event, Metadata, Subscriber};

/// The global default of the test binary: every call site is asked per call, and nothing is
/// kept.
struct Anchor;

impl Subscriber for Anchor {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }
    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::TRACE)
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Installs [`Anchor`] once per process. Every test app calls it before it runs anything.
pub fn anchor() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Only fails if a global default exists already, which then answers for call sites.
        let _ = tracing::subscriber::set_global_default(Anchor);
    });
}

/// Every line logged on this thread at TRACE and above, from [`capture`] until its guard drops.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// The lines so far.
    pub fn text(&self) -> String {
        let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut lines) = self.0.lock() {
            lines.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Captures this thread's log lines, at TRACE and above, while the guard lives.
pub fn capture() -> (Captured, DefaultGuard) {
    anchor();
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}
