//! The test server: its URL from the environment, and a fresh schema per store.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};

use agents_postgres::PostgresStore;

/// The test database's URL, or `None` (after saying why) when the tests are
/// to be skipped; a panic when `AGENTS_REQUIRE_POSTGRES=1` asks for the server.
pub fn test_url() -> Option<String> {
    match std::env::var("AGENTS_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            if std::env::var("AGENTS_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!(
                    "AGENTS_REQUIRE_POSTGRES=1 but AGENTS_TEST_POSTGRES_URL is unset: \
                     start a server with scripts/pg-test-server.sh start DIR"
                );
            }
            eprintln!("skipped: AGENTS_TEST_POSTGRES_URL is unset (scripts/pg-test-server.sh start DIR prints one)");
            None
        }
    }
}

/// A schema name no other test (or earlier run) uses.
pub fn fresh_schema() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("t_{}_{}_{}", std::process::id(), nanos, COUNT.fetch_add(1, Ordering::Relaxed))
}

/// A store in a schema of its own.
pub fn fresh_store(url: &str) -> PostgresStore {
    PostgresStore::open_in_schema(url, &fresh_schema()).expect("the test server answers")
}
