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
    // 3: the UKO graph: nodes with revision history, and references
    // (raw, as written, plus what they resolved to).
    r#"
CREATE TABLE uko_nodes (
    node_id      INTEGER PRIMARY KEY,
    index_id     VARCHAR(26) NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    uri          TEXT NOT NULL,
    path         TEXT NOT NULL,
    symbol_path  TEXT NOT NULL,
    kind         VARCHAR(20) NOT NULL,
    name         TEXT NOT NULL,
    parent_uri   TEXT,
    language     VARCHAR(50) NOT NULL,
    start_byte   INTEGER NOT NULL,
    end_byte     INTEGER NOT NULL,
    start_line   INTEGER NOT NULL,
    start_col    INTEGER NOT NULL,
    end_line     INTEGER NOT NULL,
    end_col      INTEGER NOT NULL,
    signature    TEXT,
    doc          TEXT,
    content_hash VARCHAR(64) NOT NULL,
    valid_from   VARCHAR(40) NOT NULL,
    valid_until  VARCHAR(40),
    is_current   INTEGER NOT NULL CHECK (is_current IN (0, 1)),
    revision_of  INTEGER REFERENCES uko_nodes(node_id)
);
-- Single-column indexes: URIs embed the resource id, and without
-- statistics SQLite would pick an (index_id, ...) index for any query on one
-- index and scan it. Few indexes also keep bulk indexing fast.
CREATE INDEX ix_uko_nodes_uri ON uko_nodes(uri);
CREATE INDEX ix_uko_nodes_path ON uko_nodes(path);
CREATE INDEX ix_uko_nodes_parent ON uko_nodes(parent_uri);
CREATE INDEX ix_uko_nodes_name ON uko_nodes(name);
CREATE TABLE uko_refs (
    ref_id        INTEGER PRIMARY KEY,
    index_id      VARCHAR(26) NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    path          TEXT NOT NULL,
    from_uri      TEXT NOT NULL,
    kind          VARCHAR(20) NOT NULL,
    target        TEXT NOT NULL,
    target_name   TEXT NOT NULL,
    names         TEXT NOT NULL,
    system        INTEGER NOT NULL,
    line          INTEGER NOT NULL,
    resolved_uri  TEXT,
    resolved_path TEXT
);
CREATE INDEX ix_uko_refs_path ON uko_refs(path);
CREATE INDEX ix_uko_refs_target_name ON uko_refs(target_name);
CREATE INDEX ix_uko_refs_resolved_uri ON uko_refs(resolved_uri);
-- Indexes written before the code graph existed have no nodes: forget their
-- file lists so the next refresh analyses every file.
DELETE FROM indexed_files;
DELETE FROM skipped_files;
"#,
    // 4: what each text-search index holds, per file, so it is brought up
    // to date incrementally.
    r#"
CREATE TABLE search_state (
    index_id     VARCHAR(26) NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    backend      VARCHAR(20) NOT NULL,
    path         TEXT NOT NULL,
    content_hash VARCHAR(64) NOT NULL,
    PRIMARY KEY (index_id, backend, path)
);
"#,
    // 5: plans and their decision records, the minimal model the
    // plan-decision-context strategy walks (tiers extend it).
    r#"
CREATE TABLE plans (
    plan_id    VARCHAR(26) PRIMARY KEY,
    parent_id  VARCHAR(26) REFERENCES plans(plan_id) ON DELETE SET NULL,
    title      TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX ix_plans_parent ON plans(parent_id);
CREATE TABLE plan_decisions (
    decision_id VARCHAR(26) PRIMARY KEY,
    plan_id     VARCHAR(26) NOT NULL REFERENCES plans(plan_id) ON DELETE CASCADE,
    title       TEXT NOT NULL,
    body        TEXT NOT NULL,
    tier        VARCHAR(8) NOT NULL CHECK (tier IN ('hot', 'warm', 'cold')),
    created_at  TEXT NOT NULL
);
CREATE INDEX ix_plan_decisions_plan ON plan_decisions(plan_id);
"#,
    // 6: a project's context policy (a view per plan phase) and ACMS pipeline
    // settings, as validated JSON; plans gain the phase they are in and the
    // project whose policy scopes them.
    r#"
CREATE TABLE project_context (
    project_id    VARCHAR(26) PRIMARY KEY REFERENCES projects(project_id) ON DELETE CASCADE,
    policy_json   TEXT NOT NULL,
    settings_json TEXT NOT NULL,
    updated_at    VARCHAR(40) NOT NULL
);
ALTER TABLE plans ADD COLUMN phase TEXT NOT NULL DEFAULT 'default'
    CHECK (phase IN ('default', 'strategize', 'execute', 'apply'));
ALTER TABLE plans ADD COLUMN project_id VARCHAR(26) REFERENCES projects(project_id) ON DELETE SET NULL;
CREATE INDEX ix_plans_project ON plans(project_id);
"#,
    // 7: the context last assembled for each plan, so a child plan can
    // inherit its skeleton across calls.
    r#"
CREATE TABLE plan_payloads (
    plan_id      VARCHAR(26) PRIMARY KEY REFERENCES plans(plan_id) ON DELETE CASCADE,
    payload_json TEXT NOT NULL,
    assembled_at TEXT NOT NULL
);
"#,
    // 8: a digest of the file list (paths and content hashes) each search
    // index was last brought up to date with, written in the same transaction
    // as its search_state rows: a query whose file list has the same digest
    // skips comparing the whole list.
    r#"
CREATE TABLE search_digest (
    index_id VARCHAR(26) NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    backend  VARCHAR(20) NOT NULL,
    digest   VARCHAR(64) NOT NULL,
    PRIMARY KEY (index_id, backend)
);
"#,
    // 9: the warm context tier: fragments stored between assemblies, with
    // the access statistics LRU eviction and retention sweeps read.
    r#"
CREATE TABLE warm_fragments (
    fragment_id   VARCHAR(26) PRIMARY KEY,
    project_name  TEXT NOT NULL,
    token_count   INTEGER NOT NULL,
    access_count  INTEGER NOT NULL DEFAULT 0,
    last_accessed VARCHAR(40) NOT NULL,
    fragment_json TEXT NOT NULL
);
CREATE INDEX ix_warm_fragments_lru ON warm_fragments(last_accessed, fragment_id);
CREATE INDEX ix_warm_fragments_project ON warm_fragments(project_name, fragment_id);
"#,
    // 10: project settings written before `default_depth` and `skeleton_ratio`
    // could be unset held the old defaults (3 and 0.2) whether or not anyone
    // chose them, and neither acted then. They are removed, so such a project
    // follows the query's own depth and `context.budget.skeleton-ratio`.
    r#"
UPDATE project_context SET settings_json = json_remove(settings_json, '$.default_depth')
 WHERE json_type(settings_json, '$.default_depth') = 'integer'
   AND json_extract(settings_json, '$.default_depth') = 3;
UPDATE project_context SET settings_json = json_remove(settings_json, '$.skeleton_ratio')
 WHERE json_type(settings_json, '$.skeleton_ratio') = 'real'
   AND json_extract(settings_json, '$.skeleton_ratio') = 0.2;
"#,
    // 11: a compact code graph. Paths and strings (symbol paths, names,
    // kinds, languages) are interned per index and rows refer to them by
    // integer; URIs are derived (`uko://<resource>/<path>#<symbol_path>`),
    // never stored; a parent is its symbol path in the same file, a resolved
    // reference its target's path and symbol path; content hashes are 32-byte
    // BLOBs; a revision's validity refers to the indexing run that wrote it.
    // The graph is derived data: the old tables are dropped, and the file
    // lists forgotten so the next refresh analyses every file again.
    r#"
DROP TABLE uko_refs;
DROP TABLE uko_nodes;
-- The integer key of an index's graph.
CREATE TABLE uko_graphs (
    graph_id INTEGER PRIMARY KEY,
    index_id VARCHAR(26) NOT NULL UNIQUE REFERENCES repo_indexes(index_id) ON DELETE CASCADE
);
CREATE TABLE uko_paths (
    path_id  INTEGER PRIMARY KEY,
    graph_id INTEGER NOT NULL REFERENCES uko_graphs(graph_id) ON DELETE CASCADE,
    path     TEXT NOT NULL,
    UNIQUE (graph_id, path)
);
CREATE TABLE uko_strings (
    string_id INTEGER PRIMARY KEY,
    graph_id  INTEGER NOT NULL REFERENCES uko_graphs(graph_id) ON DELETE CASCADE,
    text      TEXT NOT NULL,
    UNIQUE (graph_id, text)
);
-- When each indexing run that changed a graph wrote it.
CREATE TABLE uko_runs (
    run_id INTEGER PRIMARY KEY,
    at     VARCHAR(40) NOT NULL
);
-- symbol_id, name_id, kind_id, language_id and parent_id name uko_strings
-- rows of the node's graph (parent_id: the parent's symbol path, in the same
-- file); valid_from and valid_until name uko_runs rows.
CREATE TABLE uko_nodes (
    node_id      INTEGER PRIMARY KEY,
    path_id      INTEGER NOT NULL REFERENCES uko_paths(path_id) ON DELETE CASCADE,
    symbol_id    INTEGER NOT NULL,
    name_id      INTEGER NOT NULL,
    kind_id      INTEGER NOT NULL,
    language_id  INTEGER NOT NULL,
    parent_id    INTEGER,
    start_byte   INTEGER NOT NULL,
    end_byte     INTEGER NOT NULL,
    start_line   INTEGER NOT NULL,
    start_col    INTEGER NOT NULL,
    end_line     INTEGER NOT NULL,
    end_col      INTEGER NOT NULL,
    signature    TEXT,
    doc          TEXT,
    content_hash BLOB NOT NULL,
    valid_from   INTEGER NOT NULL,
    valid_until  INTEGER,
    is_current   INTEGER NOT NULL CHECK (is_current IN (0, 1)),
    revision_of  INTEGER
);
-- A file's nodes, and a node by URI (path and symbol path), every revision.
CREATE INDEX ix_uko_nodes_path ON uko_nodes(path_id, symbol_id);
-- Current nodes by name (resolution, find) and by symbol path (find).
CREATE INDEX ix_uko_nodes_name ON uko_nodes(name_id) WHERE is_current = 1;
CREATE INDEX ix_uko_nodes_symbol ON uko_nodes(symbol_id) WHERE is_current = 1;
-- from_id is the symbol path of the node the reference is written in (in
-- path_id); to_path_id the resolved path, to_symbol_id the resolved node's
-- symbol path (NULL: no resolved node); names a JSON array, NULL when empty.
CREATE TABLE uko_refs (
    ref_id         INTEGER PRIMARY KEY,
    path_id        INTEGER NOT NULL REFERENCES uko_paths(path_id) ON DELETE CASCADE,
    from_id        INTEGER NOT NULL,
    kind_id        INTEGER NOT NULL,
    line           INTEGER NOT NULL,
    target         TEXT NOT NULL,
    target_name_id INTEGER NOT NULL,
    names          TEXT,
    system         INTEGER NOT NULL,
    to_path_id     INTEGER,
    to_symbol_id   INTEGER
);
CREATE INDEX ix_uko_refs_path ON uko_refs(path_id, from_id);
CREATE INDEX ix_uko_refs_to ON uko_refs(to_path_id, to_symbol_id) WHERE to_symbol_id IS NOT NULL;
CREATE INDEX ix_uko_refs_unresolved ON uko_refs(target_name_id) WHERE to_symbol_id IS NULL;
DELETE FROM indexed_files;
"#,
    // 12: search state keyed by an integer per (index, backend) instead of
    // the ULID and backend name on every row, without a rowid (the primary
    // key is the table), content hashes of 64 hex digits as 32-byte BLOBs.
    // The rows are converted, so no search index is rebuilt.
    r#"
CREATE TABLE search_sets (
    set_id   INTEGER PRIMARY KEY,
    index_id VARCHAR(26) NOT NULL REFERENCES repo_indexes(index_id) ON DELETE CASCADE,
    backend  VARCHAR(20) NOT NULL,
    UNIQUE (index_id, backend)
);
INSERT INTO search_sets (index_id, backend)
    SELECT DISTINCT index_id, backend FROM search_state ORDER BY index_id, backend;
CREATE TABLE search_files (
    set_id       INTEGER NOT NULL REFERENCES search_sets(set_id) ON DELETE CASCADE,
    path         TEXT NOT NULL,
    content_hash BLOB NOT NULL,
    PRIMARY KEY (set_id, path)
) WITHOUT ROWID;
INSERT INTO search_files (set_id, path, content_hash)
    SELECT s.set_id, o.path,
           CASE WHEN length(o.content_hash) = 64 AND o.content_hash NOT GLOB '*[^0-9a-f]*'
                THEN unhex(o.content_hash) ELSE o.content_hash END
      FROM search_state o JOIN search_sets s ON s.index_id = o.index_id AND s.backend = o.backend;
DROP TABLE search_state;
ALTER TABLE search_files RENAME TO search_state;
"#,
];
