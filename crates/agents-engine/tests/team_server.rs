//! A team server: two homes (two machines) on one PostgreSQL store. What one
//! indexes, the other answers from without indexing again. Runs against the
//! test server at `AGENTS_TEST_POSTGRES_URL` (`scripts/pg-test-server.sh
//! start DIR` prints one); without it the test says why it is skipped and
//! passes, unless `AGENTS_REQUIRE_POSTGRES=1`.

use std::path::Path;

use agents_core::config::{Origin, ResolvedConfig};
use agents_engine::{Engine, EngineError, Home, QueryOptions};

#[path = "common/shop_repo.rs"]
mod shop_repo;

fn test_url() -> Option<String> {
    match std::env::var("AGENTS_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert_ne!(
                std::env::var("AGENTS_REQUIRE_POSTGRES").as_deref(),
                Ok("1"),
                "AGENTS_REQUIRE_POSTGRES=1 but AGENTS_TEST_POSTGRES_URL is unset"
            );
            eprintln!("skipped: AGENTS_TEST_POSTGRES_URL is unset (scripts/pg-test-server.sh start DIR prints one)");
            None
        }
    }
}

/// The test URL with every table in a fresh schema of its own.
fn url_in_fresh_schema(url: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let schema = format!("engine_{}_{nanos}", std::process::id());
    agents_postgres::PostgresStore::open_in_schema(url, &schema).expect("the test server answers");
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20search_path%3D{schema}%2Cpublic")
}

fn engine(home: &Path, url: &str) -> Result<Engine, EngineError> {
    let mut config = ResolvedConfig::default();
    config.set_override("store.url", url, Origin::Env("AGENTS_STORE_URL".into())).unwrap();
    Engine::open(Home::new(home), config)
}

fn options(repo: &Path, text: &str) -> QueryOptions {
    let mut options = QueryOptions::new(repo);
    options.overrides.text = Some(text.to_owned());
    options.overrides.max_tokens = Some(2000);
    options
}

#[test]
fn a_second_home_on_the_same_server_answers_without_indexing() {
    let Some(url) = test_url() else { return };
    let url = url_in_fresh_schema(&url);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = root.join("repo");
    shop_repo::write(&repo);

    // Machine A indexes and answers.
    let a = engine(&root.join("home-a"), &url).unwrap();
    let first = a.query(&options(&repo, "late payment reminder")).unwrap();
    assert!(first.outcome.new_resource, "A made the resource");
    let report = first.outcome.index.report.clone().expect("A ran an index");
    assert!(report.files_read > 0 && report.added > 0, "{report:?}");
    assert!(first.sync.files_indexed > 0 && first.sync.vectors_indexed > 0, "{:?}", first.sync);
    assert!(first.backends["text"].starts_with("postgres ("), "{:?}", first.backends);
    assert!(first.backends["vector"].starts_with("pgvector ("), "{:?}", first.backends);
    let password =
        url.split("://").nth(1).and_then(|rest| rest.split('@').next()).and_then(|user| user.split(':').nth(1));
    if let Some(password) = password {
        assert!(!first.backends["text"].contains(password), "the password is not shown: {:?}", first.backends);
    }

    // Machine B, a fresh home on the same server: its first query reads no
    // file, indexes nothing into text or vectors, and answers the same.
    let home_b = root.join("home-b");
    let b = engine(&home_b, &url).unwrap();
    let second = b.query(&options(&repo, "late payment reminder")).unwrap();
    assert!(!second.outcome.new_resource, "the resource was known");
    let report = second.outcome.index.report.clone().unwrap_or_default();
    assert_eq!((report.added, report.changed, report.files_read), (0, 0, 0), "{report:?}");
    assert_eq!(
        (second.sync.files_indexed, second.sync.docs_indexed, second.sync.vectors_indexed),
        (0, 0, 0),
        "{:?}",
        second.sync
    );
    assert_eq!(second.text, first.text, "the same answer from the shared index");
    assert!(!home_b.join("agents.db").exists(), "nothing of the store is local");
    assert!(!home_b.join("search").exists(), "nor the search indexes");

    // A change made through B is seen by A.
    std::fs::write(
        repo.join("billing_notice.py"),
        "def overdue_notice():\n    \"\"\"Warn about an overdue invoice.\"\"\"\n",
    )
    .unwrap();
    let third = b.query(&options(&repo, "overdue notice")).unwrap();
    assert_eq!(third.outcome.index.report.as_ref().map(|r| r.added), Some(1));
    let fourth = a.query(&options(&repo, "overdue notice")).unwrap();
    assert_eq!(fourth.sync.files_indexed, 0, "A finds B's run already in the shared text index");
    assert!(fourth.text.contains("overdue_notice"), "{}", fourth.text);
}

#[test]
fn a_refused_server_is_a_clear_error_naming_it_without_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let error = match engine(dir.path(), "postgres://team:s3cret@127.0.0.1:1/agents") {
        Ok(_) => panic!("opened a store on a closed port"),
        Err(error) => error,
    };
    let text = error.to_string();
    assert!(text.contains("postgres://team:***@127.0.0.1:1/agents") && text.contains("cannot connect"), "{text}");
    assert!(!text.contains("s3cret"), "{text}");
}
