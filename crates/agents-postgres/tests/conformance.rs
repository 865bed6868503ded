//! The store conformance suite against `PostgresStore`: every store in a
//! fresh schema of the database at `AGENTS_TEST_POSTGRES_URL` (start one with
//! `scripts/pg-test-server.sh start DIR`). Without that variable the cases
//! say why they are skipped and pass, unless `AGENTS_REQUIRE_POSTGRES=1`.

mod common;

mod postgres {

    agents_store::store_conformance!({
        let Some(url) = crate::common::test_url() else { return };
        move || crate::common::fresh_store(&url)
    });
}
