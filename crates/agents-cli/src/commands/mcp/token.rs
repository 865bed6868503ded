//! The bearer token of `agents serve`: made once from the operating
//! system's CSPRNG, kept in a file only its owner can read, compared in
//! constant time, and never written anywhere else (not in a log, an error or
//! the start-up line).
//!
//! The file (`$AGENTS_HOME/serve/token` unless `--token-file` says
//! otherwise) is created atomically: the token is written to a private
//! temporary file in the same folder and hard-linked into place, so a reader
//! sees no file or the whole token, and of two servers starting at once the
//! second reads the first one's token. A file another user may read is
//! refused, as `ssh` refuses such a key.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Random bytes in a generated token (256 bits), written as 64 hex digits.
const TOKEN_BYTES: usize = 32;

/// The shortest token read from a file: a user's own token must not be
/// guessable either.
pub const MIN_TOKEN_LEN: usize = 32;

/// Why the token cannot be had. Never holds the token itself.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("token file {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("token file {path}: cannot get random bytes from the operating system: {reason}")]
    Random { path: PathBuf, reason: String },
    #[error(
        "token file {path} may be read by other users (mode {mode:o}): run `chmod 600 {path}`, or delete it and a \
         new token is made"
    )]
    Exposed { path: PathBuf, mode: u32 },
    #[error(
        "token file {path} holds no usable token: it must be one line of at least {MIN_TOKEN_LEN} visible ASCII \
         characters; delete it and a new token is made"
    )]
    Malformed { path: PathBuf },
}

/// A bearer token. Its `Debug` hides it, so it cannot reach a log by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// The token's text, for the one place that shows it
    /// (`agents serve --print-token`).
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// Whether `given` is this token, in time that depends on the token's
    /// length only, never on where the two first differ.
    pub fn matches(&self, given: &[u8]) -> bool {
        constant_time_eq(self.0.as_bytes(), given)
    }
}

/// Whether `expected` and `given` are equal, comparing every byte of
/// `expected` whatever `given` holds (the length of `given` is the caller's
/// to know, so it may show).
pub fn constant_time_eq(expected: &[u8], given: &[u8]) -> bool {
    let mut diff = u8::from(expected.len() != given.len());
    for (i, e) in expected.iter().enumerate() {
        let g = given.get(i).copied().unwrap_or(0);
        diff |= std::hint::black_box(e ^ g);
    }
    std::hint::black_box(diff) == 0
}

/// The token file `--token-file` names, else `$AGENTS_HOME/serve/token`.
pub fn default_path(home: &Path) -> PathBuf {
    home.join("serve").join("token")
}

/// The token in `path`, made (with its folder) when there is none yet.
/// Returns whether it was made now.
pub fn load_or_create(path: &Path) -> Result<(Token, bool), TokenError> {
    match read(path) {
        Ok(token) => return Ok((token, false)),
        Err(TokenError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let io = |source| TokenError::Io { path: path.to_path_buf(), source };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    create_private_dir(&dir).map_err(io)?;
    let token = generate(path)?;
    // Written whole to a private temporary file, then linked into place:
    // `hard_link` fails when the token file exists, so a token made by a
    // server starting at the same moment is kept and read instead.
    let temp = dir.join(format!(".token.{}.{}", std::process::id(), unique_suffix()));
    let written = write_private(&temp, token.reveal());
    let linked = written.and_then(|()| std::fs::hard_link(&temp, path));
    let _ = std::fs::remove_file(&temp);
    match linked {
        Ok(()) => Ok((token, true)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(path).map(|token| (token, false)),
        Err(e) => Err(io(e)),
    }
}

/// The token in an existing file: one line of visible ASCII (surrounding
/// whitespace and a final newline are ignored), in a file only its owner may
/// read.
pub fn read(path: &Path) -> Result<Token, TokenError> {
    let io = |source| TokenError::Io { path: path.to_path_buf(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata().map_err(io)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(TokenError::Exposed { path: path.to_path_buf(), mode });
        }
    }
    let mut text = String::new();
    // A token file is a line; a larger one is not a token file.
    std::io::Read::read_to_string(&mut std::io::Read::take(file, 4096), &mut text)
        .map_err(|_| TokenError::Malformed { path: path.to_path_buf() })?;
    let token = text.trim();
    if token.len() < MIN_TOKEN_LEN || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(TokenError::Malformed { path: path.to_path_buf() });
    }
    Ok(Token(token.to_owned()))
}

/// A new token: [`TOKEN_BYTES`] from the operating system's CSPRNG, in hex.
fn generate(path: &Path) -> Result<Token, TokenError> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| TokenError::Random { path: path.to_path_buf(), reason: e.to_string() })?;
    Ok(Token(agents_core::digest::hex(&bytes)))
}

/// A suffix no other temporary token file of this process has.
fn unique_suffix() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Creates `dir` (and its parents); a folder made here is its owner's only.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Writes `text` and a newline to a new file only its owner may read or write.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(format!("{text}\n").as_bytes())?;
    file.sync_all()
}

/// The token an `Authorization` header carries, if it is `Bearer TOKEN`
/// (the scheme in any case).
pub fn bearer(header: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = header.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_token_is_made_once_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = default_path(dir.path());
        let (token, made) = load_or_create(&path).unwrap();
        assert!(made);
        assert_eq!(token.reveal().len(), 2 * TOKEN_BYTES);
        assert!(token.reveal().bytes().all(|b| b.is_ascii_hexdigit()), "{}", token.reveal());
        #[cfg(unix)]
        {
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(path.parent().unwrap()), 0o700);
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{}\n", token.reveal()));
        // No temporary file is left beside it.
        let names: Vec<_> =
            std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, [std::ffi::OsString::from("token")]);

        let (again, made) = load_or_create(&path).unwrap();
        assert!(!made);
        assert_eq!(again, token);
        // Another file gets another token.
        let (other, _) = load_or_create(&dir.path().join("other")).unwrap();
        assert_ne!(other, token);
    }

    #[test]
    fn servers_starting_at_once_share_one_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve/token");
        let tokens: Vec<Token> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8).map(|_| scope.spawn(|| load_or_create(&path).unwrap().0)).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(tokens.iter().all(|t| *t == tokens[0]));
        assert_eq!(read(&path).unwrap(), tokens[0]);
    }

    #[test]
    fn a_user_token_file_is_read_when_private_and_long_enough() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mine");
        let secret = "correct-horse-battery-staple-0123456789";
        write_private(&path, secret).unwrap();
        assert_eq!(read(&path).unwrap().reveal(), secret);

        let short = dir.path().join("short");
        write_private(&short, "hunter2").unwrap();
        let err = load_or_create(&short).unwrap_err();
        assert!(matches!(err, TokenError::Malformed { .. }), "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");

        let spaced = dir.path().join("spaced");
        write_private(&spaced, "a token with spaces in it that is long").unwrap();
        assert!(matches!(read(&spaced).unwrap_err(), TokenError::Malformed { .. }));
    }

    #[cfg(unix)]
    #[test]
    fn a_token_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let (token, _) = load_or_create(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = load_or_create(&path).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, TokenError::Exposed { mode: 0o644, .. }), "{message}");
        assert!(message.contains("chmod 600") && message.contains(&path.display().to_string()), "{message}");
        assert!(!message.contains(token.reveal()), "{message}");
    }

    #[test]
    fn the_token_never_shows_in_debug_output() {
        let dir = tempfile::tempdir().unwrap();
        let (token, _) = load_or_create(&dir.path().join("token")).unwrap();
        let shown = format!("{token:?}");
        assert_eq!(shown, "Token(<redacted>)");
        assert!(!shown.contains(token.reveal()));
    }

    #[test]
    fn the_comparison_is_exact() {
        let token = Token("0123456789abcdef0123456789abcdef".to_owned());
        assert!(token.matches(b"0123456789abcdef0123456789abcdef"));
        for wrong in [
            &b""[..],
            b"0123456789abcdef0123456789abcde",
            b"0123456789abcdef0123456789abcdef0",
            b"1123456789abcdef0123456789abcdef",
            b"0123456789abcdef0123456789abcdee",
            b"0123456789ABCDEF0123456789ABCDEF",
        ] {
            assert!(!token.matches(wrong), "{}", String::from_utf8_lossy(wrong));
        }
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"a", b""));
        assert!(!constant_time_eq(b"", b"a"));
    }

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        assert_eq!(bearer(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"bearer  abc "), Some(&b"abc"[..]));
        assert_eq!(bearer(b"BEARER abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"Basic abc"), None);
        assert_eq!(bearer(b"Bearer "), None);
        assert_eq!(bearer(b"Bearer"), None);
        assert_eq!(bearer(b"Bearerabc"), None);
        assert_eq!(bearer(b""), None);
    }
}
