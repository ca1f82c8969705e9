//! One container's lines: a [`Line`] per queue, built the first time a queue is served and
//! kept, so that each keeps its stripes' keys and published states between requests, and a
//! promoter's lease holder name.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rand::RngCore;

use super::{Line, LineShape};
use crate::ids::QueueId;
use crate::store::Conn;

/// The most queues a container keeps lines for; past it, it starts again from none.
const KEPT: usize = 1_000;

/// The lines of every queue this container serves, each of `shape`.
pub struct Lines {
    conn: Conn,
    prefix: String,
    shape: LineShape,
    /// This container's name as a lease holder: random, so two containers never share it.
    holder: String,
    lines: Mutex<HashMap<QueueId, Arc<Line>>>,
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

    /// `queue`'s line.
    pub fn line(&self, queue: &QueueId) -> Arc<Line> {
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(line) = lines.get(queue) {
            return line.clone();
        }
        if lines.len() >= KEPT {
            lines.clear();
        }
        let line = Arc::new(Line::new(
            self.conn.clone(),
            &self.prefix,
            queue.clone(),
            self.shape,
        ));
        lines.insert(queue.clone(), line.clone());
        line
    }

    pub fn shape(&self) -> &LineShape {
        &self.shape
    }

    /// This container's name when it asks for a line's lease.
    pub fn holder(&self) -> &str {
        &self.holder
    }
}
