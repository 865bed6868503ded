//! Projects and resources: naming, linking and finding the resource of a path.
//!
//! A project is a name; a resource is a directory (stored by canonical
//! absolute path, with a ULID) linked to one or more projects. Indexes belong
//! to resources, so a directory shared by two projects is indexed once.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agents_store::{Project, Resource, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error("invalid project name `{0}`: use 1-100 letters, digits, `.`, `_` or `-`, starting with a letter or digit")]
    InvalidName(String),
    #[error("project `{0}` not found; create it with `agents project create {0}`")]
    UnknownProject(String),
    #[error("{path}: no such directory", path = .0.display())]
    NotFound(PathBuf),
    #[error("{path}: not a directory", path = .0.display())]
    NotADirectory(PathBuf),
    #[error(
        "{path}: the path is not valid UTF-8 (shown with U+FFFD for the bytes that are not); rename the directory to index it",
        path = .0.display()
    )]
    NotUtf8(PathBuf),
    #[error("{path}: {source}", path = .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("`{resource}` is not linked to project `{project}`")]
    NotLinked { project: String, resource: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub struct ProjectService {
    store: Arc<dyn Store>,
}

/// Checks a project name: 1-100 of `[A-Za-z0-9._-]`, starting alphanumeric.
pub fn validate_project_name(name: &str) -> Result<(), ProjectError> {
    let ok = (1..=100).contains(&name.len())
        && name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok { Ok(()) } else { Err(ProjectError::InvalidName(name.to_string())) }
}

/// A project name derived from a directory name: invalid characters become `-`.
pub fn project_name_for(dir: &Path) -> String {
    let raw = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut name: String =
        raw.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' }).collect();
    name = name.trim_start_matches(['.', '_', '-']).chars().take(100).collect();
    if name.is_empty() { "root".to_string() } else { name }
}

/// Canonical absolute path of an existing directory, with clear errors. The
/// path must be valid UTF-8: resources are stored by path as text, and a lossy
/// spelling would name another directory (or none).
pub fn canonical_dir(path: &Path) -> Result<PathBuf, ProjectError> {
    let canonical = match std::fs::canonicalize(path) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ProjectError::NotFound(path.to_path_buf())),
        Err(source) => return Err(ProjectError::Io { path: path.to_path_buf(), source }),
    };
    if !canonical.is_dir() {
        return Err(ProjectError::NotADirectory(path.to_path_buf()));
    }
    if canonical.to_str().is_none() {
        return Err(ProjectError::NotUtf8(canonical));
    }
    Ok(canonical)
}

impl ProjectService {
    pub fn new(store: Arc<dyn Store>) -> ProjectService {
        ProjectService { store }
    }

    pub fn create(&self, name: &str) -> Result<Project, ProjectError> {
        validate_project_name(name)?;
        Ok(self.store.create_project(name)?)
    }

    pub fn get(&self, name: &str) -> Result<Project, ProjectError> {
        self.store.project(name)?.ok_or_else(|| ProjectError::UnknownProject(name.to_string()))
    }

    /// The project of `name`, created if missing.
    pub fn get_or_create(&self, name: &str) -> Result<Project, ProjectError> {
        if let Some(p) = self.store.project(name)? {
            return Ok(p);
        }
        match self.create(name) {
            // Another process created it between the read and the insert.
            Err(ProjectError::Store(StoreError::AlreadyExists { .. })) => self.get(name),
            other => other,
        }
    }

    /// Every project with its resources, sorted by name then path.
    /// Every linked resource (of any project), sorted by path.
    pub fn resources(&self) -> Result<Vec<Resource>, ProjectError> {
        Ok(self.store.resources()?)
    }

    pub fn list(&self) -> Result<Vec<(Project, Vec<Resource>)>, ProjectError> {
        let mut out = Vec::new();
        for p in self.store.projects()? {
            let resources = self.store.project_resources(&p.project_id)?;
            out.push((p, resources));
        }
        Ok(out)
    }

    /// Links the directory at `path` to the project (idempotent).
    pub fn link(&self, project: &Project, path: &Path) -> Result<Resource, ProjectError> {
        let dir = canonical_dir(path)?;
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "/".to_string());
        Ok(self.store.link_resource(&project.project_id, &dir.to_string_lossy(), &name)?)
    }

    /// Unlinks a resource given by path or resource id. A resource linked to
    /// no other project is deleted with its index (its files under the home
    /// are the caller's to remove: see [`ProjectService::is_deleted`]).
    pub fn unlink(&self, project: &Project, path_or_id: &str) -> Result<Resource, ProjectError> {
        let linked = self.store.project_resources(&project.project_id)?;
        let canonical = std::fs::canonicalize(path_or_id).ok().map(|p| p.to_string_lossy().into_owned());
        let found = linked.into_iter().find(|r| {
            r.resource_id == path_or_id || r.path == path_or_id || canonical.as_deref() == Some(r.path.as_str())
        });
        let resource = found.ok_or_else(|| ProjectError::NotLinked {
            project: project.name.clone(),
            resource: path_or_id.to_string(),
        })?;
        self.store.unlink_resource(&project.project_id, &resource.resource_id)?;
        Ok(resource)
    }

    /// Whether the resource is gone from the store (unlinked from its last project).
    pub fn is_deleted(&self, resource: &Resource) -> Result<bool, ProjectError> {
        Ok(self.store.resource_by_path(&resource.path)?.is_none_or(|r| r.resource_id != resource.resource_id))
    }

    /// The resource whose directory is `dir` or, failing that, the nearest
    /// resource that contains it. `dir` must be canonical.
    pub fn resource_containing(&self, dir: &Path) -> Result<Option<Resource>, ProjectError> {
        for ancestor in dir.ancestors() {
            if let Some(r) = self.store.resource_by_path(&ancestor.to_string_lossy())? {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }

    /// Projects the resource is linked to, sorted by name.
    pub fn projects_of(&self, resource: &Resource) -> Result<Vec<Project>, ProjectError> {
        Ok(self.store.resource_projects(&resource.resource_id)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agents_store::SqliteStore;

    fn service() -> ProjectService {
        ProjectService::new(Arc::new(SqliteStore::open_in_memory().unwrap()))
    }

    #[test]
    fn names_are_validated() {
        for ok in ["a", "my-proj", "x.y_z", "Proj2"] {
            validate_project_name(ok).unwrap();
        }
        for bad in ["", "-x", "a b", "a/b", &"x".repeat(101)] {
            assert!(matches!(validate_project_name(bad), Err(ProjectError::InvalidName(_))), "{bad}");
        }
        assert_eq!(project_name_for(Path::new("/src/My Repo!")), "My-Repo-");
        assert_eq!(project_name_for(Path::new("/")), "root");
        assert_eq!(project_name_for(Path::new("/x/.hidden")), "hidden");
    }

    #[test]
    fn link_finds_containing_resource_and_unlinks_by_path_or_id() {
        let s = service();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let p = s.create("demo").unwrap();
        let r = s.link(&p, dir.path()).unwrap();
        assert_eq!(s.link(&p, dir.path()).unwrap(), r, "linking twice is idempotent");
        let sub = canonical_dir(&dir.path().join("sub")).unwrap();
        assert_eq!(s.resource_containing(&sub).unwrap(), Some(r.clone()));
        assert!(matches!(s.unlink(&p, "/nowhere"), Err(ProjectError::NotLinked { .. })));
        assert_eq!(s.unlink(&p, &r.resource_id).unwrap(), r);
        assert_eq!(s.resource_containing(&sub).unwrap(), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_whose_path_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        let s = service();
        let p = s.create("demo").unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(std::ffi::OsStr::from_bytes(b"repo-\xff\xfe"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::create_dir(tmp.path().join("repo-\u{fffd}\u{fffd}")).unwrap();
        for path in [dir.clone(), dir.join("."), dir.join("..").join(dir.file_name().unwrap())] {
            let error = s.link(&p, &path).unwrap_err();
            assert!(matches!(error, ProjectError::NotUtf8(_)), "{error}");
            let message = error.to_string();
            assert!(message.contains("repo-\u{fffd}\u{fffd}") && message.contains("not valid UTF-8"), "{message}");
        }
        assert!(s.list().unwrap()[0].1.is_empty(), "nothing was linked");
    }

    #[test]
    fn bad_paths_are_clear_errors() {
        let s = service();
        let p = s.create("demo").unwrap();
        assert!(matches!(s.link(&p, Path::new("/definitely/not/here")), Err(ProjectError::NotFound(_))));
        let file = tempfile::NamedTempFile::new().unwrap();
        assert!(matches!(s.link(&p, file.path()), Err(ProjectError::NotADirectory(_))));
        assert!(matches!(s.get("nope"), Err(ProjectError::UnknownProject(_))));
    }
}
