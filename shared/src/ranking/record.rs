//! A payment's dedupe record: where it lives and what Rust hands `record.lua` to write it.
//!
//! Records are kept in groups, not one key per payment. A group is a hash of the records
//! written in one span of time, split into [`RECORD_SLOTS`] slots by the payment id's
//! fingerprint: `{rk}:records:<end>:<slot>`, where `<end>` is the hour the group ends. A record
//! written at `now` goes to the group ending at the first multiple of the span at or after
//! `now + RANKING_DEDUPE_DAYS` + 1 hour, so it lives between the dedupe window and the window
//! plus one span ([`Rankings::record_span_hours`], a quarter of the window) and an hour. The
//! whole group ends at its end; in its last hour the tick unlinks it, which frees it off
//! Redis's main thread. The index `{rk}:records` lists the groups by their end, so a lookup
//! reads each live group whatever the window was when it was written.
//!
//! A record is the field `fingerprint(paymentId)` (12 bytes) holding 32 bytes of numbers and
//! the payment's genres (`record.lua` gives the layout). It keeps what a redelivery must
//! repeat (the concert's fingerprint, the seats, the genres) and what a refund needs to find
//! the boards the payment counted on (its calendar day and ISO week, its rolling bucket, its
//! first trending generation and its weight there, and which of those boards counted).
//!
//! Records written before this layout (one hash per payment, `{rk}:payment:<id>`) are still
//! read until they expire: `legacy_record_key`.

use chrono::{Datelike, NaiveDate};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::rankings::Rankings;
use crate::ids::{ConcertId, PaymentId};

/// Slots per group. A site taking 1 000 000 payments a day puts about 34 000 records in each
/// slot of a group (about 4 MB, freed off the main thread when the tick unlinks it); a site
/// taking a few thousand a day still fills each slot with enough records to spread a hash's
/// own cost.
pub const RECORD_SLOTS: u16 = 256;

/// Where one payment's record lives: its slot in a group, and its field there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RecordRef {
    pub slot: u16,
    /// The field, 12 bytes of the id's SHA-256, in hex (`record.lua` turns it into bytes).
    pub field: String,
}

impl RecordRef {
    /// The record of `payment`: 96 bits of its SHA-256 name the field, 16 more the slot. Two
    /// ids share a field with odds of about 10⁻¹⁴ among 35 million records.
    pub fn of(payment: &PaymentId) -> Self {
        let digest = Sha256::digest(payment.as_str().as_bytes());
        RecordRef {
            slot: u16::from_be_bytes([digest[0], digest[1]]) % RECORD_SLOTS,
            field: hex::encode(&digest[2..14]),
        }
    }
}

/// The concert's fingerprint a record keeps: a redelivery or a refund naming another concert
/// is told apart from it (32 bits: one in four billion would pass).
pub(super) fn concert_fingerprint(concert: &ConcertId) -> u32 {
    let digest = Sha256::digest(concert.as_str().as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// The calendar facts a record keeps of the payment's local `day`: the day as `yyyymmdd`,
/// and its ISO week as `week + 64 × (week-based year − year + 1)`. `record.lua` names the
/// daily, weekly and monthly buckets from them as [`Period::bucket`](super::Period::bucket)
/// does.
pub(super) fn calendar_day(day: NaiveDate) -> (u32, u32) {
    let iso = day.iso_week();
    let yyyymmdd = day.year() as u32 * 10_000 + day.month() * 100 + day.day();
    let week = iso.week() + 64 * (iso.year() - day.year() + 1) as u32;
    (yyyymmdd, week)
}

impl Rankings {
    /// The index of record groups: each group's end hour, scored by its end in seconds.
    pub(super) fn records_index_key(&self) -> String {
        self.key("records")
    }

    /// A group's span in hours: a quarter of the dedupe window, at least an hour. A record
    /// lives at most this much (and an hour) past the window, an eighth of it on average,
    /// and a lookup reads five or six groups.
    pub fn record_span_hours(&self) -> u64 {
        (self.settings.dedupe.as_secs() / 3600).div_ceil(4).max(1)
    }

    /// What `record.lua` needs to find, write and sweep records: the index, the groups' key
    /// prefix, the span in hours, the slots per group.
    pub(super) fn records_config(&self) -> Value {
        json!({
            "index": self.records_index_key(),
            "group": self.key("records:"),
            "span": self.record_span_hours(),
            "slots": RECORD_SLOTS,
        })
    }

    /// The one-hash-per-payment record written before records were grouped.
    pub(super) fn legacy_record_key(&self, payment: &PaymentId) -> String {
        self.key(&format!("payment:{payment}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranking::Period;

    #[test]
    fn the_calendar_facts_name_the_same_buckets_as_the_boards() {
        // What record.lua does with the two numbers, in Rust, against Period::bucket,
        // across years whose first and last days fall in another week-based year.
        let mut day = NaiveDate::from_ymd_opt(2019, 12, 1).unwrap();
        while day < NaiveDate::from_ymd_opt(2028, 2, 1).unwrap() {
            let (yyyymmdd, week) = calendar_day(day);
            let (y, m, d) = (yyyymmdd / 10_000, yyyymmdd / 100 % 100, yyyymmdd % 100);
            let week_year = y as i64 + (week / 64) as i64 - 1;
            assert_eq!(format!("{y:04}-{m:02}-{d:02}"), Period::Daily.bucket(day));
            assert_eq!(format!("{y:04}-{m:02}"), Period::Monthly.bucket(day));
            assert_eq!(
                format!("{week_year}-W{:02}", week % 64),
                Period::Weekly.bucket(day),
                "{day}"
            );
            day = day.succ_opt().unwrap();
        }
    }

    #[test]
    fn a_payment_id_names_one_slot_and_a_twelve_byte_field() {
        let one = RecordRef::of(&PaymentId::parse("pay-1001").unwrap());
        let again = RecordRef::of(&PaymentId::parse("pay-1001").unwrap());
        let other = RecordRef::of(&PaymentId::parse("pay-1002").unwrap());
        assert_eq!(one, again);
        assert_ne!(one.field, other.field);
        assert!(one.slot < RECORD_SLOTS && other.slot < RECORD_SLOTS);
        assert_eq!(one.field.len(), 24);
    }
}
