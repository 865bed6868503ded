//! [`ProjectStore`] for [`SqliteStore`]: `projects`, `resources`,
//! `project_resources` and `project_context`.

use agents_core::ids::{new_ulid, now_utc, stable_ulid, to_iso};
use agents_core::policy::ProjectContextPolicy;
use agents_core::project_context::ProjectContextSettings;
use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use crate::{Project, ProjectStore, Resource, StoreError};

fn project_from_row(row: &Row<'_>) -> rusqlite::Result<Project> {
    Ok(Project { project_id: row.get(0)?, name: row.get(1)?, created_at: row.get(2)? })
}

fn resource_from_row(row: &Row<'_>) -> rusqlite::Result<Resource> {
    Ok(Resource { resource_id: row.get(0)?, path: row.get(1)?, name: row.get(2)?, created_at: row.get(3)? })
}

impl ProjectStore for SqliteStore {
    fn create_project(&self, name: &str) -> Result<Project, StoreError> {
        let project = Project { project_id: new_ulid(), name: name.to_string(), created_at: to_iso(now_utc()) };
        self.write(|tx| {
            let exists: bool = tx
                .query_row("SELECT EXISTS(SELECT 1 FROM projects WHERE name = ?1)", [name], |r| r.get(0))
                .map_err(self.sql())?;
            if exists {
                return Err(StoreError::AlreadyExists { what: "project", name: name.to_string() });
            }
            tx.execute(
                "INSERT INTO projects (project_id, name, created_at) VALUES (?1, ?2, ?3)",
                params![project.project_id, project.name, project.created_at],
            )
            .map_err(self.sql())?;
            Ok(())
        })?;
        Ok(project)
    }

    fn project(&self, name: &str) -> Result<Option<Project>, StoreError> {
        self.read(|c| {
            c.query_row("SELECT project_id, name, created_at FROM projects WHERE name = ?1", [name], project_from_row)
                .optional()
        })
    }

    fn projects(&self) -> Result<Vec<Project>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare("SELECT project_id, name, created_at FROM projects ORDER BY name")?;
            st.query_map([], project_from_row)?.collect()
        })
    }

    fn project_resources(&self, project_id: &str) -> Result<Vec<Resource>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(
                "SELECT r.resource_id, r.path, r.name, r.created_at FROM resources r \
                 JOIN project_resources pr ON pr.resource_id = r.resource_id \
                 WHERE pr.project_id = ?1 ORDER BY r.path",
            )?;
            st.query_map([project_id], resource_from_row)?.collect()
        })
    }

    fn resource_projects(&self, resource_id: &str) -> Result<Vec<Project>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(
                "SELECT p.project_id, p.name, p.created_at FROM projects p \
                 JOIN project_resources pr ON pr.project_id = p.project_id \
                 WHERE pr.resource_id = ?1 ORDER BY p.name",
            )?;
            st.query_map([resource_id], project_from_row)?.collect()
        })
    }

    fn resource_by_path(&self, path: &str) -> Result<Option<Resource>, StoreError> {
        self.read(|c| {
            c.query_row(
                "SELECT resource_id, path, name, created_at FROM resources WHERE path = ?1",
                [path],
                resource_from_row,
            )
            .optional()
        })
    }

    fn resource(&self, resource_id: &str) -> Result<Option<Resource>, StoreError> {
        self.read(|c| {
            c.query_row(
                "SELECT resource_id, path, name, created_at FROM resources WHERE resource_id = ?1",
                [resource_id],
                resource_from_row,
            )
            .optional()
        })
    }

    fn resources(&self) -> Result<Vec<Resource>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare("SELECT resource_id, path, name, created_at FROM resources ORDER BY path")?;
            st.query_map([], resource_from_row)?.collect()
        })
    }

    fn link_resource(&self, project_id: &str, path: &str, name: &str) -> Result<Resource, StoreError> {
        self.write(|tx| {
            let existing = tx
                .query_row(
                    "SELECT resource_id, path, name, created_at FROM resources WHERE path = ?1",
                    [path],
                    resource_from_row,
                )
                .optional()
                .map_err(self.sql())?;
            let now = to_iso(now_utc());
            let resource = match existing {
                Some(r) => r,
                None => {
                    // Derived from the path (unique among resources): the same
                    // repository has the same id in every store, so what is
                    // delivered for it does not depend on which store answered.
                    let r = Resource {
                        resource_id: stable_ulid(&["resource", path]),
                        path: path.to_string(),
                        name: name.to_string(),
                        created_at: now.clone(),
                    };
                    tx.execute(
                        "INSERT INTO resources (resource_id, path, name, created_at) VALUES (?1, ?2, ?3, ?4)",
                        params![r.resource_id, r.path, r.name, r.created_at],
                    )
                    .map_err(self.sql())?;
                    r
                }
            };
            tx.execute(
                "INSERT OR IGNORE INTO project_resources (project_id, resource_id, linked_at) VALUES (?1, ?2, ?3)",
                params![project_id, resource.resource_id, now],
            )
            .map_err(self.sql())?;
            Ok(resource)
        })
    }

    fn unlink_resource(&self, project_id: &str, resource_id: &str) -> Result<bool, StoreError> {
        self.write(|tx| {
            let n = tx
                .execute(
                    "DELETE FROM project_resources WHERE project_id = ?1 AND resource_id = ?2",
                    params![project_id, resource_id],
                )
                .map_err(self.sql())?;
            let still_linked: bool = tx
                .query_row(
                    "SELECT EXISTS(SELECT 1 FROM project_resources WHERE resource_id = ?1)",
                    [resource_id],
                    |r| r.get(0),
                )
                .map_err(self.sql())?;
            if !still_linked {
                tx.execute("DELETE FROM repo_indexes WHERE resource_id = ?1", [resource_id]).map_err(self.sql())?;
                tx.execute("DELETE FROM resources WHERE resource_id = ?1", [resource_id]).map_err(self.sql())?;
            }
            Ok(n > 0)
        })
    }

    fn project_context(
        &self,
        project_id: &str,
    ) -> Result<Option<(ProjectContextPolicy, ProjectContextSettings)>, StoreError> {
        let row: Option<(String, String)> = self.read(|c| {
            c.query_row(
                "SELECT policy_json, settings_json FROM project_context WHERE project_id = ?1",
                [project_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })?;
        let Some((policy, settings)) = row else { return Ok(None) };
        let corrupt = |column: &'static str, e: serde_json::Error| StoreError::CorruptRow {
            path: self.path.clone(),
            table: "project_context",
            key: project_id.to_owned(),
            column,
            message: e.to_string(),
        };
        let policy = serde_json::from_str(&policy).map_err(|e| corrupt("policy_json", e))?;
        let settings = serde_json::from_str(&settings).map_err(|e| corrupt("settings_json", e))?;
        Ok(Some((policy, settings)))
    }

    fn set_project_context(
        &self,
        project_id: &str,
        policy: &ProjectContextPolicy,
        settings: &ProjectContextSettings,
    ) -> Result<(), StoreError> {
        let policy = serde_json::to_string(policy).expect("a policy serialises");
        let settings = serde_json::to_string(settings).expect("settings serialise");
        self.write(|tx| {
            self.require_row(tx, ("projects", "project_id"), "project", project_id)?;
            tx.execute(
                "INSERT INTO project_context (project_id, policy_json, settings_json, updated_at) \
                 VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (project_id) DO UPDATE SET policy_json = excluded.policy_json, \
                 settings_json = excluded.settings_json, updated_at = excluded.updated_at",
                params![project_id, policy, settings, to_iso(now_utc())],
            )
            .map_err(self.sql())?;
            Ok(())
        })
    }
}
