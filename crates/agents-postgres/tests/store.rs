//! PostgreSQL-specific behaviour of the store beyond the conformance suite:
//! migrations, the run lock across machines, and clear errors.

mod common;

use agents_core::indexing::IndexStatus;
use agents_postgres::PostgresStore;
use agents_store::{FileIndexStore, ProjectStore, StoreError};

#[test]
fn migrations_set_the_version_and_reopening_is_idempotent() {
    let Some(url) = common::test_url() else { return };
    let schema = common::fresh_schema();
    let store = PostgresStore::open_in_schema(&url, &schema).unwrap();
    let version = store.schema_version().unwrap();
    assert!(version >= 1);
    store.create_project("kept").unwrap();
    drop(store);
    let again = PostgresStore::open_in_schema(&url, &schema).unwrap();
    assert_eq!(again.schema_version().unwrap(), version);
    assert!(again.project("kept").unwrap().is_some(), "reopening keeps the data");
}

#[test]
fn a_store_in_a_schema_keeps_its_own_tables_beside_one_in_public() {
    let Some(url) = common::test_url() else { return };
    // `public` is on every schema store's search path (for pgvector's type):
    // its tables must not stand in for the schema's own.
    let public = PostgresStore::open(&url).unwrap();
    let schema = common::fresh_schema();
    let own = PostgresStore::open_in_schema(&url, &schema).unwrap();
    let name = format!("only-in-{schema}");
    own.create_project(&name).unwrap();
    assert!(own.project(&name).unwrap().is_some());
    assert!(public.project(&name).unwrap().is_none(), "written to the schema's own table");
    let tables: i64 = own
        .conn()
        .unwrap()
        .query_one("SELECT count(*) FROM pg_tables WHERE schemaname = $1", &[&schema])
        .unwrap()
        .get(0);
    assert!(tables >= 10, "the schema has the store's tables: {tables}");
}

#[test]
fn a_newer_schema_is_refused_naming_the_server_without_its_password() {
    let Some(url) = common::test_url() else { return };
    let schema = common::fresh_schema();
    let store = PostgresStore::open_in_schema(&url, &schema).unwrap();
    store.conn().unwrap().batch("UPDATE agents_schema_version SET version = 99").unwrap();
    drop(store);
    let error = PostgresStore::open_in_schema(&url, &schema).unwrap_err();
    assert!(matches!(error, StoreError::TooNew { found: 99, .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("newer agents") && text.contains(&schema), "{text}");
    assert_no_password(&url, &text);
}

#[test]
fn one_indexing_run_per_index_across_machines() {
    let Some(url) = common::test_url() else { return };
    let schema = common::fresh_schema();
    // Two stores on one database: two machines sharing the server.
    let here = PostgresStore::open_in_schema(&url, &schema).unwrap();
    let there = PostgresStore::open_in_schema(&url, &schema).unwrap();
    let project = here.create_project("demo").unwrap();
    let resource = here.link_resource(&project.project_id, "/src/demo", "demo").unwrap();
    let index = here.ensure_index(&resource.resource_id).unwrap();
    assert!(!there.index_run_in_progress(&index.index_id).unwrap());
    let run = here.begin_index_write(&index.index_id).unwrap();
    assert!(there.index_run_in_progress(&index.index_id).unwrap(), "the other machine sees the run");
    // Other writes go on meanwhile.
    there.set_index_status(&index.index_id, IndexStatus::Indexing, None).unwrap();
    drop(run);
    assert!(!there.index_run_in_progress(&index.index_id).unwrap(), "a dropped run releases its lock");
}

#[test]
fn connections_the_server_dropped_are_replaced() {
    let Some(url) = common::test_url() else { return };
    let schema = common::fresh_schema();
    let store = PostgresStore::open_in_schema(&url, &schema).unwrap();
    store.create_project("before").unwrap();
    // Another session ends every connection of this store (its application
    // name is `agents/<schema>`), as a server restart would, leaving them
    // dead in the pool.
    let admin = PostgresStore::open(&url).unwrap();
    let ended: i64 = {
        let mut conn = admin.conn().unwrap();
        let sql = "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1";
        conn.query_one(sql, &[&format!("agents/{schema}")]).unwrap().get(0)
    };
    assert!(ended >= 1, "the store's idle connection was ended");
    assert!(store.project("before").unwrap().is_some(), "a read goes on on a new connection");
    store.create_project("after").unwrap();
    assert_eq!(store.projects().unwrap().len(), 2, "and so does a write");
}

#[test]
fn a_wrong_password_is_a_clear_error_without_the_password() {
    let Some(url) = common::test_url() else { return };
    let Some((head, tail)) = url.split_once('@') else { panic!("the test URL has a user: {url}") };
    let Some((user, _)) = head.rsplit_once(':') else { panic!("the test URL has a password") };
    let wrong = format!("{user}:not-the-password-123@{tail}");
    let error = PostgresStore::open(&wrong).unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, StoreError::Server { .. }), "{error:?}");
    assert!(text.contains("cannot connect") && text.contains("password authentication failed"), "{text}");
    assert!(!text.contains("not-the-password-123"), "{text}");
}

#[test]
fn an_unknown_database_is_a_clear_error() {
    let Some(url) = common::test_url() else { return };
    let Some((server, _)) = url.rsplit_once('/') else { panic!("the test URL names a database") };
    let error = PostgresStore::open(&format!("{server}/no_such_database")).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("no_such_database") && text.contains("does not exist"), "{text}");
    assert_no_password(&url, &text);
}

fn assert_no_password(url: &str, text: &str) {
    let password =
        url.split_once("://").and_then(|(_, rest)| rest.split_once('@')).and_then(|(u, _)| u.split_once(':'));
    if let Some((_, password)) = password {
        assert!(!text.contains(password), "the password leaked: {text}");
    }
}
