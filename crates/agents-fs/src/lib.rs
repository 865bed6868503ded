//! File utilities of the agents engine, one implementation each, used by
//! the tokenizer's table cache, the store, search, the context and
//! knowledge halves and the CLI:
//!
//! - [`atomic_write`]: temp file, fsync, rename, fsync of the directory
//!   ([`atomic_write_with`] streams what a closure writes);
//! - [`confine`]: whether a path, with every symbolic link followed, lies
//!   inside a root;
//! - [`read`]: reading a file of an untrusted tree with bounded work (only
//!   regular files, opened without blocking, stopped one byte past a cap);
//! - [`lock`]: per-resource advisory locks the kernel drops when the holder
//!   dies.
//!
//! It depends on no other crate of the workspace.

pub mod atomic;
pub mod confine;
pub mod lock;
pub mod read;

pub use atomic::{atomic_write, atomic_write_with};
pub use confine::{is_within, within};
pub use lock::{LockAttempt, ResourceLock};
pub use read::{ReadError, RegularFile, read_capped, read_prefix};
