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

/// A content-addressed ULID: the same parts always give the same id, so an id
/// derived from what it names (a fragment's content, a resource's path) is
/// equal from run to run and from store to store. Its first character is a
/// digit (0-3), like a generated ULID's.
pub fn stable_ulid(parts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    let digest = hasher.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    // Keep the timestamp part within ULID's 48 bits and well-formed.
    bytes[0] &= 0x7f;
    Ulid::from_bytes(bytes).to_string()
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

/// Serializes a timestamp as RFC 3339 with all nine digits of its fraction:
/// the default drops trailing zeros, so the same document's token count
/// (which the output formats keep inside the budget) would depend on the
/// clock. Parsing accepts any RFC 3339 form.
pub fn serialize_fixed_time<S: serde::Serializer>(time: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&time.to_rfc3339_opts(SecondsFormat::Nanos, true))
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
    #[test]
    fn a_serialized_timestamp_has_a_fixed_width_whatever_its_clock() {
        let ser = |nanos: u32| {
            let time = DateTime::from_timestamp(1_764_000_000, nanos).unwrap();
            let mut out = Vec::new();
            serialize_fixed_time(&time, &mut serde_json::Serializer::new(&mut out)).unwrap();
            let text = String::from_utf8(out).unwrap();
            let back: DateTime<Utc> = serde_json::from_str(&text).unwrap();
            assert_eq!(back, time);
            text
        };
        assert_eq!(ser(998_087_000), "\"2025-11-24T16:00:00.998087000Z\"");
        assert_eq!(ser(0).len(), ser(123_456_789).len());
    }

    use super::*;

    #[test]
    fn a_stable_ulid_is_a_ulid_that_depends_on_its_parts_only() {
        let a = stable_ulid(&["resource", "/repo"]);
        assert_eq!(a, stable_ulid(&["resource", "/repo"]));
        assert_ne!(a, stable_ulid(&["resource", "/repo2"]));
        // Parts are length-prefixed: moving a boundary changes the id.
        assert_ne!(stable_ulid(&["ab", "c"]), stable_ulid(&["a", "bc"]));
        assert!(check_ulid("m", "f", &a).is_ok());
        assert!(a.starts_with(['0', '1', '2', '3']));
    }

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
