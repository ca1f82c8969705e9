//! The rankings over one Redis: the connection, the key prefix and the settings every part
//! of `ranking/` reads (each part adds its own `impl Rankings`); and the Lua preludes the
//! writing scripts begin with.

use crate::config::RankingSettings;
use crate::store::Conn;

/// The board write helpers, which the apply script and the tick both begin with.
pub(super) const BOARDS_LUA: &str = include_str!("boards.lua");

/// The preludes of the scripts that fold: the board helpers, the window and trending
/// writes, the payment records, then the fold.
pub(super) const FOLD_PRELUDES: [&str; 4] = [
    BOARDS_LUA,
    include_str!("windows.lua"),
    include_str!("record.lua"),
    include_str!("fold.lua"),
];

/// The rankings over one Redis. Cheap to clone.
#[derive(Clone)]
pub struct Rankings {
    pub(super) conn: Conn,
    pub(super) prefix: String,
    pub(super) settings: RankingSettings,
}

impl Rankings {
    pub fn new(conn: Conn, prefix: impl Into<String>, settings: RankingSettings) -> Self {
        Rankings {
            conn,
            prefix: prefix.into(),
            settings,
        }
    }

    pub fn settings(&self) -> &RankingSettings {
        &self.settings
    }
}
