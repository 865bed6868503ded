//! `AGENTS_STORE_URL` and `[store] url` select a team server's store: the
//! binary layers the variable over the file, never prints the password, and
//! a server it cannot reach or a URL it cannot use is one clear error line.
#![cfg(unix)]

mod common;
use common::{agents, assert_one_error_line, parse, stdout};

#[test]
fn an_unreachable_server_is_one_error_line_without_the_password() {
    let home = tempfile::tempdir().unwrap();
    let output = agents(home.path())
        .env("AGENTS_STORE_URL", "postgres://team:s3cret@127.0.0.1:1/agents")
        .args(["project", "list"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let line = assert_one_error_line(&output);
    assert!(line.contains("postgres://team:***@127.0.0.1:1/agents") && line.contains("cannot connect"), "{line}");
    assert!(!line.contains("s3cret"), "{line}");
}

#[test]
fn a_url_that_is_not_postgres_names_the_key_without_the_value() {
    let home = tempfile::tempdir().unwrap();
    let output = agents(home.path())
        .env("AGENTS_STORE_URL", "mysql://team:s3cret@db/agents")
        .args(["project", "list"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let line = assert_one_error_line(&output);
    assert!(line.contains("store.url") && line.contains("AGENTS_STORE_URL"), "{line}");
    assert!(!line.contains("s3cret"), "{line}");
}

#[test]
fn the_variable_wins_over_the_file_and_is_shown_redacted() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "[store]\nurl = \"postgres://file:one@db/agents\"\n").unwrap();
    let show = |env: Option<&str>| {
        let mut cmd = agents(home.path());
        if let Some(url) = env {
            cmd.env("AGENTS_STORE_URL", url);
        }
        let output = cmd.args(["config", "show", "--json"]).output().unwrap();
        assert!(output.status.success(), "{output:?}");
        let text = stdout(&output);
        assert!(!text.contains("one@") && !text.contains("s3cret"), "a password was printed: {text}");
        let entries = parse(text.as_bytes());
        let entry = entries
            .as_array()
            .or_else(|| entries["entries"].as_array())
            .and_then(|all| all.iter().find(|e| e["key"] == "store.url").cloned())
            .unwrap_or_else(|| panic!("no store.url in {text}"));
        (entry["value"].as_str().unwrap_or_default().to_owned(), entry["source"].to_string())
    };
    let (value, origin) = show(None);
    assert_eq!(value, "postgres://file:***@db/agents");
    assert!(origin.contains("config.toml"), "{origin}");
    let (value, origin) = show(Some("postgres://env:s3cret@db/agents"));
    assert_eq!(value, "postgres://env:***@db/agents");
    assert!(origin.contains("AGENTS_STORE_URL"), "{origin}");
}
