//! Content hashes as stored: 64 lowercase hex digits (a SHA-256, what the
//! indexer writes) as their 32 bytes in a BLOB, anything else as text.

use rusqlite::types::{Value, ValueRef};

/// A stored content hash as the store's callers know it: lowercase hex.
pub fn hash_from(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Blob(bytes) => to_hex(bytes),
        ValueRef::Text(text) => String::from_utf8_lossy(text).into_owned(),
        _ => String::new(),
    }
}

/// A content hash as stored: 64 lowercase hex digits as their 32 bytes,
/// anything else as given.
pub fn hash_value(hash: &str) -> Value {
    match (hash.len() == 64).then(|| from_hex(hash)).flatten() {
        Some(bytes) => Value::Blob(bytes),
        None => Value::Text(hash.to_owned()),
    }
}

fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// The bytes of lowercase hex text (so that they encode back to it).
fn from_hex(text: &str) -> Option<Vec<u8>> {
    #[inline]
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    let text = text.as_bytes();
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 2);
    for pair in text.chunks_exact(2) {
        out.push(digit(pair[0])? << 4 | digit(pair[1])?);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_hashes_round_trip_through_bytes_and_others_stay_text() {
        let hex = "00ff7a".repeat(10) + "0f1e";
        let Value::Blob(bytes) = hash_value(&hex) else { panic!("64 hex digits are stored as bytes") };
        assert_eq!(bytes.len(), 32);
        assert_eq!(hash_from(ValueRef::Blob(&bytes)), hex);
        for other in ["h1", &hex.to_uppercase(), &hex[2..], "g".repeat(64).as_str()] {
            assert_eq!(hash_value(other), Value::Text(other.to_owned()), "{other}");
            assert_eq!(hash_from(ValueRef::Text(other.as_bytes())), other);
        }
    }
}
