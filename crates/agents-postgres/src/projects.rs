//! [`ProjectStore`] for [`PostgresStore`].

use agents_core::ids::{new_ulid, now_utc, stable_ulid, to_iso};
use agents_core::policy::ProjectContextPolicy;
use agents_core::project_context::ProjectContextSettings;
use agents_store::{Project, ProjectStore, Resource, StoreError};
use postgres::Row;

use crate::{Conn, PostgresStore};

fn project_from_row(row: &Row) -> Project {
    Project { project_id: row.get(0), name: row.get(1), created_at: row.get(2) }
}

fn resource_from_row(row: &Row) -> Resource {
    Resource { resource_id: row.get(0), path: row.get(1), name: row.get(2), created_at: row.get(3) }
}

/// [`StoreError::NotFound`] naming `what` when `table` has no row whose
/// `column` is `key`.
pub(crate) fn require_row(
    conn: &mut Conn,
    (table, column): (&str, &str),
    what: &'static str,
    key: &str,
) -> Result<(), StoreError> {
    let sql = format!("SELECT EXISTS(SELECT 1 FROM {table} WHERE {column} = $1)");
    let exists: bool = conn.query_one(&sql, &[&key])?.get(0);
    if exists { Ok(()) } else { Err(StoreError::NotFound { what, name: key.to_owned() }) }
}

impl ProjectStore for PostgresStore {
    fn create_project(&self, name: &str) -> Result<Project, StoreError> {
        let project = Project { project_id: new_ulid(), name: name.to_string(), created_at: to_iso(now_utc()) };
        self.write(|c| {
            let inserted = c.execute(
                "INSERT INTO projects (project_id, name, created_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO NOTHING",
                &[&project.project_id, &project.name, &project.created_at],
            )?;
            if inserted == 0 {
                return Err(StoreError::AlreadyExists { what: "project", name: name.to_string() });
            }
            Ok(())
        })?;
        Ok(project)
    }

    fn project(&self, name: &str) -> Result<Option<Project>, StoreError> {
        self.read(|c| {
            Ok(c.query_opt("SELECT project_id, name, created_at FROM projects WHERE name = $1", &[&name])?
                .map(|r| project_from_row(&r)))
        })
    }

    fn projects(&self) -> Result<Vec<Project>, StoreError> {
        self.read(|c| {
            Ok(c.query("SELECT project_id, name, created_at FROM projects ORDER BY name", &[])?
                .iter()
                .map(project_from_row)
                .collect())
        })
    }

    fn project_resources(&self, project_id: &str) -> Result<Vec<Resource>, StoreError> {
        self.read(|c| {
            Ok(c.query(
                "SELECT r.resource_id, r.path, r.name, r.created_at FROM resources r \
                 JOIN project_resources pr ON pr.resource_id = r.resource_id \
                 WHERE pr.project_id = $1 ORDER BY r.path",
                &[&project_id],
            )?
            .iter()
            .map(resource_from_row)
            .collect())
        })
    }

    fn resource_projects(&self, resource_id: &str) -> Result<Vec<Project>, StoreError> {
        self.read(|c| {
            Ok(c.query(
                "SELECT p.project_id, p.name, p.created_at FROM projects p \
                 JOIN project_resources pr ON pr.project_id = p.project_id \
                 WHERE pr.resource_id = $1 ORDER BY p.name",
                &[&resource_id],
            )?
            .iter()
            .map(project_from_row)
            .collect())
        })
    }

    fn resource_by_path(&self, path: &str) -> Result<Option<Resource>, StoreError> {
        self.read(|c| {
            Ok(c.query_opt("SELECT resource_id, path, name, created_at FROM resources WHERE path = $1", &[&path])?
                .map(|r| resource_from_row(&r)))
        })
    }

    fn resource(&self, resource_id: &str) -> Result<Option<Resource>, StoreError> {
        self.read(|c| {
            Ok(c.query_opt(
                "SELECT resource_id, path, name, created_at FROM resources WHERE resource_id = $1",
                &[&resource_id],
            )?
            .map(|r| resource_from_row(&r)))
        })
    }

    fn resources(&self) -> Result<Vec<Resource>, StoreError> {
        self.read(|c| {
            Ok(c.query("SELECT resource_id, path, name, created_at FROM resources ORDER BY path", &[])?
                .iter()
                .map(resource_from_row)
                .collect())
        })
    }

    fn link_resource(&self, project_id: &str, path: &str, name: &str) -> Result<Resource, StoreError> {
        let now = to_iso(now_utc());
        // Derived from the path: the same repository has the same id in every store.
        let resource_id = stable_ulid(&["resource", path]);
        self.write(|c| {
            c.execute(
                "INSERT INTO resources (resource_id, path, name, created_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (path) DO NOTHING",
                &[&resource_id, &path, &name, &now],
            )?;
            let resource = c
                .query_one("SELECT resource_id, path, name, created_at FROM resources WHERE path = $1", &[&path])
                .map(|r| resource_from_row(&r))?;
            c.execute(
                "INSERT INTO project_resources (project_id, resource_id, linked_at) VALUES ($1, $2, $3) \
                 ON CONFLICT DO NOTHING",
                &[&project_id, &resource.resource_id, &now],
            )?;
            Ok(resource)
        })
    }

    fn unlink_resource(&self, project_id: &str, resource_id: &str) -> Result<bool, StoreError> {
        self.write(|c| {
            let n = c.execute(
                "DELETE FROM project_resources WHERE project_id = $1 AND resource_id = $2",
                &[&project_id, &resource_id],
            )?;
            let still_linked: bool = c
                .query_one("SELECT EXISTS(SELECT 1 FROM project_resources WHERE resource_id = $1)", &[&resource_id])?
                .get(0);
            if !still_linked {
                c.execute("DELETE FROM repo_indexes WHERE resource_id = $1", &[&resource_id])?;
                c.execute("DELETE FROM resources WHERE resource_id = $1", &[&resource_id])?;
            }
            Ok(n > 0)
        })
    }

    fn project_context(
        &self,
        project_id: &str,
    ) -> Result<Option<(ProjectContextPolicy, ProjectContextSettings)>, StoreError> {
        let row: Option<(String, String)> = self.read(|c| {
            Ok(c.query_opt(
                "SELECT policy_json, settings_json FROM project_context WHERE project_id = $1",
                &[&project_id],
            )?
            .map(|r| (r.get(0), r.get(1))))
        })?;
        let Some((policy, settings)) = row else { return Ok(None) };
        let corrupt = |column: &'static str, e: serde_json::Error| StoreError::CorruptRow {
            path: self.path(),
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
        let invalid = |what: &str, e: serde_json::Error| {
            StoreError::Invalid(agents_core::ValidationError::new("ProjectContext", "json", format!("{what}: {e}")))
        };
        let policy = serde_json::to_string(policy).map_err(|e| invalid("policy", e))?;
        let settings = serde_json::to_string(settings).map_err(|e| invalid("settings", e))?;
        let now = to_iso(now_utc());
        self.write(|c| {
            require_row(c, ("projects", "project_id"), "project", project_id)?;
            c.execute(
                "INSERT INTO project_context (project_id, policy_json, settings_json, updated_at) \
                 VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (project_id) DO UPDATE SET policy_json = excluded.policy_json, \
                 settings_json = excluded.settings_json, updated_at = excluded.updated_at",
                &[&project_id, &policy, &settings, &now],
            )?;
            Ok(())
        })
    }
}
