//! Versioned schema migrations, tracked in `PRAGMA user_version`.
//!
//! Migration `n` (1-based) takes the schema from version `n - 1` to `n`. They
//! are append-only: an existing entry never changes once released, so a
//! database written by any earlier build upgrades in place.

pub const MIGRATIONS: &[&str] = &[
    // 1: projects, resources, and the spec's two index tables.
    r#"
CREATE TABLE projects (
    project_id  VARCHAR(26) PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    created_at  VARCHAR(40) NOT NULL
);
CREATE TABLE resources (
    resource_id VARCHAR(26) PRIMARY KEY,
    path        TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    created_at  VARCHAR(40) NOT NULL
);
CREATE TABLE project_resources (
    project_id  VARCHAR(26) NOT NULL REFERENCES projects(project_id) ON DELETE CASCADE,
    resource_id VARCHAR(26) NOT NULL REFERENCES resources(resource_id) ON DELETE CASCADE,
    linked_at   VARCHAR(40) NOT NULL,
    PRIMARY KEY (project_id, resource_id)
);
CREATE TABLE repo_indexes (
    index_id         VARCHAR(26) PRIMARY KEY,
    resource_id      VARCHAR(26) NOT NULL UNIQUE,
    indexed_at       VARCHAR(40) NOT NULL,
    file_count       INTEGER NOT NULL DEFAULT 0,
    token_estimate   INTEGER NOT NULL DEFAULT 0,
    primary_language VARCHAR(50) NOT NULL DEFAULT 'unknown',
    status           VARCHAR(20) NOT NULL CHECK (status IN ('pending', 'indexing', 'ready', 'stale', 'error')),
    error_message    TEXT,
    created_at       VARCHAR(40) NOT NULL
);
CREATE INDEX ix_repo_indexes_resource_id ON repo_indexes(resource_id);
CREATE TABLE indexed_files (
    index_id      VARCHAR(26) NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    path          VARCHAR(1024) NOT NULL,
    content_hash  VARCHAR(64) NOT NULL,
    token_count   INTEGER NOT NULL DEFAULT 0,
    size_bytes    INTEGER NOT NULL DEFAULT 0,
    language      VARCHAR(50) NOT NULL DEFAULT 'unknown',
    last_modified VARCHAR(40) NOT NULL,
    PRIMARY KEY (index_id, path)
);
CREATE TABLE index_runs (
    index_id    VARCHAR(26) NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    finished_at VARCHAR(40) NOT NULL,
    report      TEXT NOT NULL
);
CREATE INDEX ix_index_runs_index_id ON index_runs(index_id, finished_at);
"#,
    // 2: files skipped for their content (binary), so a refresh can skip
    // them again by size and mtime without reading them.
    r#"
CREATE TABLE skipped_files (
    index_id      VARCHAR(26) NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    path          VARCHAR(1024) NOT NULL,
    size_bytes    INTEGER NOT NULL,
    last_modified VARCHAR(40) NOT NULL,
    reason        VARCHAR(20) NOT NULL,
    PRIMARY KEY (index_id, path)
);
"#,
];
