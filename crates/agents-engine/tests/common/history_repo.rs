//! The small Python repository with a git history that the retrieval tests
//! of the engine and of the binary share, and the git runner that makes its
//! history reproducible. Included with `#[path]` by both test crates.

#![allow(dead_code)]

use std::path::Path;

/// Words the fixture model gives one vector: the code says "backoff" and "sleeps",
/// a query may say "pause".
pub const SYNONYMS: &[&[&str]] = &[&["backoff", "pause", "wait", "sleep", "sleeps", "delay"]];

pub const STRINGS_V1: &str = r#""""Text helpers."""


def shout(text):
    """Upper case text with an exclamation mark."""
    return text.upper() + "!"
"#;

pub const STRINGS_V2: &str = r#""""Text helpers."""


def shout(text):
    """Upper case text with an exclamation mark."""
    return text.upper() + "!"


def title_words(text):
    """Capitalize every word of the text."""
    return " ".join(word.capitalize() for word in text.split())
"#;

pub const RETRY_V1: &str = r#""""Retrying calls that fail for a moment."""


def retry_with_backoff(fn, attempts=3):
    """Call fn until it succeeds, at most attempts times."""
    for attempt in range(attempts):
        try:
            return fn()
        except OSError:
            if attempt == attempts - 1:
                raise
"#;

pub const RETRY_V2: &str = r#""""Retrying calls that fail for a moment."""

import time


def retry_with_backoff(fn, attempts=3):
    """Call fn until it succeeds, with exponential backoff between attempts.

    Sleeps a little longer after each failure before the next attempt.
    """
    delay = 0.1
    for attempt in range(attempts):
        try:
            return fn()
        except OSError:
            if attempt == attempts - 1:
                raise
            time.sleep(delay)
            delay = delay * 2
"#;

pub const HTTP: &str = r#""""A small HTTP client."""

from net.retry import retry_with_backoff


class HttpClient:
    """Sends requests to a server."""

    def send_request(self, url):
        """Send a request to the url and return the response."""
        return retry_with_backoff(lambda: self.open_url(url))

    def open_url(self, url):
        return url
"#;

pub const MAIN: &str = r#""""The application entry point."""

from net.http import HttpClient


def run():
    """Fetch the home page."""
    return HttpClient().send_request("http://example.com")
"#;

/// The history, oldest first: (path, content, subject). Only one subject says "backoff".
pub const HISTORY: [(&str, &str, &str); 6] = [
    ("util/strings.py", STRINGS_V1, "Add string helpers"),
    ("net/retry.py", RETRY_V1, "Add a retry helper for flaky calls"),
    ("net/http.py", HTTP, "Add an HTTP client"),
    ("app/main.py", MAIN, "Add the application entry point"),
    ("net/retry.py", RETRY_V2, "Add exponential backoff between retries"),
    ("util/strings.py", STRINGS_V2, "Capitalize every word in titles"),
];

/// Runs git in `repo` with a fixed identity and the `n`th day of 2024 as the
/// date, away from the user's configuration; returns stdout.
pub fn git(repo: &Path, args: &[&str], n: usize) -> String {
    let date = format!("2024-01-{:02}T12:00:00+00:00", n + 1);
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Ada Lovelace")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_NAME", "Ada Lovelace")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_DATE", &date)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}
