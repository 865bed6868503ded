//! Identifiers and clocks.
//!
//! Ids are ULIDs (26 Crockford base-32 characters, sortable by creation time);
//! timestamps are UTC. Both are produced here and nowhere else so tests can
//! reason about their format, and so the rest of the code never calls a clock
//! or a random source directly without going through a visible function.

use chrono::{DateTime, SecondsFormat, Utc};
use ulid::Ulid;

use crate::error::{Validated, ValidationError};

/// A fresh ULID as its canonical 26-character string.
pub fn new_ulid() -> String {
    Ulid::generate().to_string()
}

/// Checks that `value` is a well-formed ULID string.
pub fn check_ulid(model: &'static str, field: &'static str, value: &str) -> Validated<()> {
    Ulid::from_string(value)
        .map(|_| ())
        .map_err(|e| ValidationError::new(model, field, format!("`{value}` is not a ULID: {e}")))
}

/// The current UTC time.
pub fn now_utc() -> DateTime<Utc> {
    Utc::now()
}

/// The UTC time `secs` seconds after the Unix epoch (an injected clock, e.g.
/// `$SOURCE_DATE_EPOCH`); `None` when out of range.
pub fn from_epoch_secs(secs: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(secs, 0)
}

/// ISO-8601 UTC with nanoseconds, the form stored in the database (at most 30 chars).
pub fn to_iso(ts: DateTime<Utc>) -> String {
    ts.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

/// Parses an ISO-8601 timestamp written by [`to_iso`] (or any RFC 3339 form).
pub fn from_iso(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulids_are_valid_and_distinct() {
        let a = new_ulid();
        let b = new_ulid();
        assert_eq!(a.len(), 26);
        assert_ne!(a, b);
        check_ulid("T", "id", &a).unwrap();
        assert!(check_ulid("T", "id", "not-a-ulid").is_err());
    }

    #[test]
    fn iso_round_trip_keeps_nanoseconds() {
        let t = now_utc();
        let s = to_iso(t);
        assert!(s.len() <= 40 && s.ends_with('Z'));
        assert_eq!(from_iso(&s), Some(t));
    }
}
