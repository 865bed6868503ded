//! The store conformance suite against `SqliteStore`, run as any other
//! crate runs it against its store (`agents-store` with the `conformance`
//! feature): in memory, and file-backed (each case's stores in a temporary
//! directory, one database file per store).

use agents_store::SqliteStore;

mod in_memory {
    use super::*;
    agents_store::store_conformance!(|| SqliteStore::open_in_memory().unwrap());
}

mod file_backed {
    use super::*;
    agents_store::store_conformance!({
        let dir = tempfile::tempdir().unwrap();
        let count = std::cell::Cell::new(0);
        move || {
            count.set(count.get() + 1);
            SqliteStore::open(&dir.path().join(format!("{}.db", count.get()))).unwrap()
        }
    });
}
