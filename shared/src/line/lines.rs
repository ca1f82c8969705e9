//! One container's lines: a [`Line`] per queue, built the first time a queue is served and
//! kept, so that each keeps its stripes' keys and published states between requests, and a
//! promoter's lease holder name. A queue's line is built again when its opening changes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rand::RngCore;

use super::handle::Line;
use super::shape::{LineShape, Opening};
use crate::ids::QueueId;
use crate::store::Conn;

/// The most queues a container keeps lines for; past it, it starts again from none.
const KEPT: usize = 1_000;

/// A line's opening, with a name for its draw (the seed's commitment): a line is the same
/// while both are.
pub struct NamedOpening {
    pub name: String,
    pub opening: Opening,
}

/// What a held line was built with: its opening's instant and name.
type BuiltWith = Option<(i64, String)>;

/// The lines of every queue this container serves, each of `shape`.
pub struct Lines {
    conn: Conn,
    prefix: String,
    shape: LineShape,
    /// This container's name as a lease holder: random, so two containers never share it.
    holder: String,
    lines: Mutex<HashMap<QueueId, (BuiltWith, Arc<Line>)>>,
}

impl Lines {
    pub fn new(conn: Conn, prefix: &str, shape: LineShape) -> Lines {
        let mut name = [0u8; 8];
        rand::rng().fill_bytes(&mut name);
        Lines {
            conn,
            prefix: prefix.to_owned(),
            shape,
            holder: name.iter().map(|b| format!("{b:02x}")).collect(),
            lines: Mutex::new(HashMap::new()),
        }
    }

    /// `queue`'s line, with `opening` where it has one.
    pub fn line(&self, queue: &QueueId, opening: Option<NamedOpening>) -> Arc<Line> {
        let built_with: BuiltWith = opening
            .as_ref()
            .map(|named| (named.opening.at, named.name.clone()));
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((with, line)) = lines.get(queue) {
            if *with == built_with {
                return line.clone();
            }
        }
        if lines.len() >= KEPT {
            lines.clear();
        }
        let mut line = Line::new(self.conn.clone(), &self.prefix, queue.clone(), self.shape);
        if let Some(named) = opening {
            line = line.with_opening(named.opening);
        }
        let line = Arc::new(line);
        lines.insert(queue.clone(), (built_with, line.clone()));
        line
    }

    /// `queue`'s line as held, whatever its opening, for what lies on every stripe or under
    /// the queue's own tag (a halt, the counts): else one without an opening, not kept.
    pub fn any(&self, queue: &QueueId) -> Arc<Line> {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        match lines.get(queue) {
            Some((_, line)) => line.clone(),
            None => Arc::new(Line::new(
                self.conn.clone(),
                &self.prefix,
                queue.clone(),
                self.shape,
            )),
        }
    }

    /// Forgets `queue`'s line and what it held (its published states, its pace, whether its
    /// draw opened): the queue closed, or another container is to serve it as if new.
    pub fn forget(&self, queue: &QueueId) {
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.remove(queue);
    }

    pub fn shape(&self) -> &LineShape {
        &self.shape
    }

    /// This container's name when it asks for a line's lease.
    pub fn holder(&self) -> &str {
        &self.holder
    }
}
