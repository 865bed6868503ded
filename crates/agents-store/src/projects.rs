//! The projects-and-resources role: named projects, the directories linked
//! to them, and each project's context policy.

use agents_core::policy::ProjectContextPolicy;
use agents_core::project_context::ProjectContextSettings;
use serde::{Deserialize, Serialize};

use crate::StoreError;

/// A named project; resources are linked to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    pub project_id: String,
    pub name: String,
    pub created_at: String,
}

/// A directory known to the engine, linked to one or more projects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    pub resource_id: String,
    /// Canonical absolute path of the directory.
    pub path: String,
    /// Short display name (the directory's name).
    pub name: String,
    pub created_at: String,
}

/// Projects, resources and the links between them (many to many), plus each
/// project's context policy. Every method is one transaction.
///
/// Guarantees (checked by `conformance::projects`):
/// - project names are unique: creating a second `name` is
///   [`StoreError::AlreadyExists`]; listings are sorted as each method says;
/// - a resource's id is derived from its path alone
///   (`stable_ulid(&["resource", path])`), so the same directory has the
///   same id in every store; linking it again, to the same or another
///   project, returns the same resource;
/// - unlinking the last project of a resource deletes the resource and its
///   index (with everything under the index);
/// - unknown names and ids read as `None` or an empty list, never an error;
/// - the context policy and settings are replaced together and read back
///   equal; setting them for an unknown project is [`StoreError::NotFound`].
pub trait ProjectStore: Send + Sync {
    /// Creates a project; a name already taken is [`StoreError::AlreadyExists`].
    fn create_project(&self, name: &str) -> Result<Project, StoreError>;
    /// The project named `name`.
    fn project(&self, name: &str) -> Result<Option<Project>, StoreError>;
    /// All projects, sorted by name.
    fn projects(&self) -> Result<Vec<Project>, StoreError>;
    /// Resources of a project, sorted by path.
    fn project_resources(&self, project_id: &str) -> Result<Vec<Resource>, StoreError>;
    /// Projects a resource is linked to, sorted by name.
    fn resource_projects(&self, resource_id: &str) -> Result<Vec<Project>, StoreError>;
    /// The resource at a canonical path.
    fn resource_by_path(&self, path: &str) -> Result<Option<Resource>, StoreError>;
    /// The resource with an id.
    fn resource(&self, resource_id: &str) -> Result<Option<Resource>, StoreError>;
    /// All resources, sorted by path.
    fn resources(&self) -> Result<Vec<Resource>, StoreError>;
    /// Links `path` to the project, creating the resource if new. Idempotent.
    fn link_resource(&self, project_id: &str, path: &str, name: &str) -> Result<Resource, StoreError>;
    /// Removes the link; a resource linked to no project any more is deleted
    /// with its index. Returns whether a link existed.
    fn unlink_resource(&self, project_id: &str, resource_id: &str) -> Result<bool, StoreError>;
    /// The project's context policy and ACMS settings; `None` when never set.
    /// A stored value that no longer parses or validates is
    /// [`StoreError::CorruptRow`].
    fn project_context(
        &self,
        project_id: &str,
    ) -> Result<Option<(ProjectContextPolicy, ProjectContextSettings)>, StoreError>;
    /// Replaces the project's context policy and ACMS settings together.
    fn set_project_context(
        &self,
        project_id: &str,
        policy: &ProjectContextPolicy,
        settings: &ProjectContextSettings,
    ) -> Result<(), StoreError>;
}
