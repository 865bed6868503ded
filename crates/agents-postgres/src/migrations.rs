//! Versioned schema migrations, recorded in `agents_schema_version`.
//!
//! Migration `n` (1-based) takes the schema from version `n - 1` to `n`; they
//! are append-only, like the SQLite store's. The first is the whole schema of
//! the SQLite store's current version, in PostgreSQL's types: every text
//! column sorts bytewise (`COLLATE "C"`), as SQLite's do.

use agents_store::StoreError;

use crate::Conn;

/// The advisory lock two processes migrating at once take turns on.
const MIGRATION_LOCK: i64 = 0x6167_656e_7473_0001;

pub const MIGRATIONS: &[&str] = &[
    // 1: the store's tables, as SQLite's version 10 holds them.
    r#"
CREATE TABLE projects (
    project_id  TEXT COLLATE "C" PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at  TEXT COLLATE "C" NOT NULL
);
CREATE TABLE resources (
    resource_id TEXT COLLATE "C" PRIMARY KEY,
    path        TEXT COLLATE "C" NOT NULL UNIQUE,
    name        TEXT COLLATE "C" NOT NULL,
    created_at  TEXT COLLATE "C" NOT NULL
);
CREATE TABLE project_resources (
    project_id  TEXT COLLATE "C" NOT NULL REFERENCES projects(project_id) ON DELETE CASCADE,
    resource_id TEXT COLLATE "C" NOT NULL REFERENCES resources(resource_id) ON DELETE CASCADE,
    linked_at   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (project_id, resource_id)
);
CREATE INDEX ix_project_resources_resource ON project_resources(resource_id);
CREATE TABLE repo_indexes (
    index_id         TEXT COLLATE "C" PRIMARY KEY,
    resource_id      TEXT COLLATE "C" NOT NULL UNIQUE,
    indexed_at       TEXT COLLATE "C" NOT NULL,
    file_count       BIGINT NOT NULL DEFAULT 0,
    token_estimate   BIGINT NOT NULL DEFAULT 0,
    primary_language TEXT COLLATE "C" NOT NULL DEFAULT 'unknown',
    status           TEXT COLLATE "C" NOT NULL CHECK (status IN ('pending', 'indexing', 'ready', 'stale', 'error')),
    error_message    TEXT,
    created_at       TEXT COLLATE "C" NOT NULL
);
CREATE TABLE indexed_files (
    index_id      TEXT COLLATE "C" NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    path          TEXT COLLATE "C" NOT NULL,
    content_hash  TEXT COLLATE "C" NOT NULL,
    token_count   BIGINT NOT NULL DEFAULT 0,
    size_bytes    BIGINT NOT NULL DEFAULT 0,
    language      TEXT COLLATE "C" NOT NULL DEFAULT 'unknown',
    last_modified TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (index_id, path)
);
CREATE TABLE index_runs (
    index_id    TEXT COLLATE "C" NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    finished_at TEXT COLLATE "C" NOT NULL,
    report      TEXT NOT NULL
);
CREATE INDEX ix_index_runs_index_id ON index_runs(index_id, finished_at);
CREATE TABLE skipped_files (
    index_id      TEXT COLLATE "C" NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    path          TEXT COLLATE "C" NOT NULL,
    size_bytes    BIGINT NOT NULL,
    last_modified TEXT COLLATE "C" NOT NULL,
    reason        TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (index_id, path)
);
CREATE TABLE uko_nodes (
    node_id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    index_id     TEXT COLLATE "C" NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    uri          TEXT COLLATE "C" NOT NULL,
    path         TEXT COLLATE "C" NOT NULL,
    symbol_path  TEXT COLLATE "C" NOT NULL,
    kind         TEXT COLLATE "C" NOT NULL,
    name         TEXT COLLATE "C" NOT NULL,
    parent_uri   TEXT COLLATE "C",
    language     TEXT COLLATE "C" NOT NULL,
    start_byte   BIGINT NOT NULL,
    end_byte     BIGINT NOT NULL,
    start_line   BIGINT NOT NULL,
    start_col    BIGINT NOT NULL,
    end_line     BIGINT NOT NULL,
    end_col      BIGINT NOT NULL,
    signature    TEXT,
    doc          TEXT,
    content_hash TEXT COLLATE "C" NOT NULL,
    valid_from   TEXT COLLATE "C" NOT NULL,
    valid_until  TEXT COLLATE "C",
    is_current   BOOLEAN NOT NULL,
    revision_of  BIGINT REFERENCES uko_nodes(node_id) ON DELETE CASCADE
);
CREATE INDEX ix_uko_nodes_uri ON uko_nodes(index_id, uri);
CREATE INDEX ix_uko_nodes_path ON uko_nodes(index_id, path);
CREATE INDEX ix_uko_nodes_parent ON uko_nodes(index_id, parent_uri);
CREATE INDEX ix_uko_nodes_name ON uko_nodes(index_id, name);
CREATE INDEX ix_uko_nodes_revision ON uko_nodes(revision_of);
CREATE TABLE uko_refs (
    ref_id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    index_id      TEXT COLLATE "C" NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    path          TEXT COLLATE "C" NOT NULL,
    from_uri      TEXT COLLATE "C" NOT NULL,
    kind          TEXT COLLATE "C" NOT NULL,
    target        TEXT COLLATE "C" NOT NULL,
    target_name   TEXT COLLATE "C" NOT NULL,
    names         TEXT NOT NULL,
    system        BOOLEAN NOT NULL,
    line          BIGINT NOT NULL,
    resolved_uri  TEXT COLLATE "C",
    resolved_path TEXT COLLATE "C"
);
CREATE INDEX ix_uko_refs_path ON uko_refs(index_id, path, from_uri);
CREATE INDEX ix_uko_refs_target_name ON uko_refs(index_id, target_name);
CREATE INDEX ix_uko_refs_resolved_uri ON uko_refs(index_id, resolved_uri);
CREATE TABLE search_state (
    index_id     TEXT COLLATE "C" NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    backend      TEXT COLLATE "C" NOT NULL,
    path         TEXT COLLATE "C" NOT NULL,
    content_hash TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (index_id, backend, path)
);
CREATE TABLE search_digest (
    index_id TEXT COLLATE "C" NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    backend  TEXT COLLATE "C" NOT NULL,
    digest   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (index_id, backend)
);
CREATE TABLE plans (
    plan_id    TEXT COLLATE "C" PRIMARY KEY,
    parent_id  TEXT COLLATE "C" REFERENCES plans(plan_id) ON DELETE SET NULL,
    title      TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    phase      TEXT COLLATE "C" NOT NULL DEFAULT 'default'
        CHECK (phase IN ('default', 'strategize', 'execute', 'apply')),
    project_id TEXT COLLATE "C" REFERENCES projects(project_id) ON DELETE SET NULL
);
CREATE INDEX ix_plans_parent ON plans(parent_id);
CREATE INDEX ix_plans_project ON plans(project_id);
CREATE TABLE plan_decisions (
    decision_id TEXT COLLATE "C" PRIMARY KEY,
    plan_id     TEXT COLLATE "C" NOT NULL REFERENCES plans(plan_id) ON DELETE CASCADE,
    title       TEXT NOT NULL,
    body        TEXT NOT NULL,
    tier        TEXT COLLATE "C" NOT NULL CHECK (tier IN ('hot', 'warm', 'cold')),
    created_at  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX ix_plan_decisions_plan ON plan_decisions(plan_id);
CREATE TABLE project_context (
    project_id    TEXT COLLATE "C" PRIMARY KEY REFERENCES projects(project_id) ON DELETE CASCADE,
    policy_json   TEXT NOT NULL,
    settings_json TEXT NOT NULL,
    updated_at    TEXT COLLATE "C" NOT NULL
);
CREATE TABLE plan_payloads (
    plan_id      TEXT COLLATE "C" PRIMARY KEY REFERENCES plans(plan_id) ON DELETE CASCADE,
    payload_json TEXT NOT NULL,
    assembled_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE warm_fragments (
    fragment_id   TEXT COLLATE "C" PRIMARY KEY,
    project_name  TEXT COLLATE "C" NOT NULL,
    token_count   BIGINT NOT NULL,
    access_count  BIGINT NOT NULL DEFAULT 0,
    last_accessed TEXT COLLATE "C" NOT NULL,
    fragment_json TEXT NOT NULL
);
CREATE INDEX ix_warm_fragments_lru ON warm_fragments(last_accessed, fragment_id);
"#,
    // 2: the server's text search (`text::PgTextBackend`): each text index
    // (by key) gets a small number; per document its field lengths, per
    // (term, field, document) the term's frequency, and per text index the
    // totals BM25 reads. Numbers instead of keys and URIs keep the postings small.
    r#"
CREATE TABLE text_keys (
    key_id    INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    index_key TEXT COLLATE "C" NOT NULL UNIQUE
);
CREATE TABLE text_docs (
    doc_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_id INTEGER NOT NULL,
    id     TEXT COLLATE "C" NOT NULL,
    path   TEXT COLLATE "C" NOT NULL,
    kind   TEXT COLLATE "C" NOT NULL,
    len_0 INTEGER NOT NULL, len_1 INTEGER NOT NULL, len_2 INTEGER NOT NULL,
    len_3 INTEGER NOT NULL, len_4 INTEGER NOT NULL, len_5 INTEGER NOT NULL,
    UNIQUE (key_id, id)
);
CREATE INDEX ix_text_docs_path ON text_docs(key_id, path);
CREATE TABLE text_terms (
    key_id INTEGER NOT NULL,
    term   TEXT COLLATE "C" NOT NULL,
    field  SMALLINT NOT NULL,
    doc_id BIGINT NOT NULL,
    tf     INTEGER NOT NULL,
    PRIMARY KEY (key_id, term, field, doc_id)
);
CREATE INDEX ix_text_terms_doc ON text_terms(doc_id);
CREATE TABLE text_stats (
    key_id    INTEGER PRIMARY KEY,
    doc_count BIGINT NOT NULL,
    len_0 BIGINT NOT NULL, len_1 BIGINT NOT NULL, len_2 BIGINT NOT NULL,
    len_3 BIGINT NOT NULL, len_4 BIGINT NOT NULL, len_5 BIGINT NOT NULL
);
"#,
    // 3: the text index's postings, compact: instead of a row per (term,
    // field, document), a row per (term, field) and load holds the documents'
    // numbers and the term's frequencies in them as two arrays, sorted by
    // document. A document replaced or deleted leaves its numbers behind
    // until the key is compacted (`churn` counts them); searches join the
    // live documents, so scores never see them. The old postings are
    // dropped: every text index is rebuilt by its next sync (it is empty).
    r#"
DROP TABLE text_terms;
DELETE FROM text_docs;
DELETE FROM text_stats;
DELETE FROM search_state WHERE backend = 'postgres';
DELETE FROM search_digest WHERE backend = 'postgres';
ALTER TABLE text_stats ADD COLUMN churn BIGINT NOT NULL DEFAULT 0;
CREATE TABLE text_postings (
    key_id  INTEGER NOT NULL,
    term    TEXT COLLATE "C" NOT NULL,
    field   SMALLINT NOT NULL,
    doc_ids BIGINT[] NOT NULL,
    tfs     INTEGER[] NOT NULL
);
CREATE INDEX ix_text_postings ON text_postings(key_id, term, field);
"#,
];

/// The schema version recorded in the database (0 before the first migration).
pub fn version(conn: &mut Conn) -> Result<i64, StoreError> {
    // In the store's own schema (the first of the search path) only: a
    // table of that name further down the path belongs to another store.
    let schema: Option<String> = conn.query_one("SELECT current_schema()", &[])?.get(0);
    let Some(schema) = schema else { return Ok(0) };
    let table = format!("{}.agents_schema_version", quote_ident(&schema));
    let exists: bool = conn.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table]).map(|r| r.get(0))?;
    if !exists {
        return Ok(0);
    }
    let row = conn.query_opt(&format!("SELECT version FROM {table}"), &[])?;
    Ok(row.map_or(0, |r| r.get(0)))
}

/// Applies the pending migrations in one transaction, under an advisory
/// lock (another process migrating at the same time waits, then finds
/// nothing left to do). A newer schema is [`StoreError::TooNew`].
pub fn migrate(conn: &mut Conn) -> Result<(), StoreError> {
    let known = MIGRATIONS.len() as i64;
    let found = version(conn)?;
    if found == known {
        return Ok(());
    }
    if found > known {
        return Err(too_new(conn, found, known));
    }
    conn.batch("BEGIN")?;
    let result = (|| {
        conn.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        conn.batch("CREATE TABLE IF NOT EXISTS agents_schema_version (version BIGINT NOT NULL)")?;
        let found = version(conn)?;
        if found > known {
            return Err(too_new(conn, found, known));
        }
        for sql in MIGRATIONS.iter().skip(found as usize) {
            conn.batch(sql)?;
        }
        conn.execute("DELETE FROM agents_schema_version", &[])?;
        conn.execute("INSERT INTO agents_schema_version (version) VALUES ($1)", &[&known])?;
        Ok(())
    })();
    match result {
        Ok(()) => conn.batch("COMMIT"),
        Err(e) => {
            conn.rollback();
            Err(e)
        }
    }
}

/// `name` as a quoted SQL identifier.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn too_new(conn: &Conn, found: i64, known: i64) -> StoreError {
    StoreError::TooNew { path: conn.location().into(), found, known }
}
