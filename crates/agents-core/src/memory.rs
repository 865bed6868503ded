//! Handing freed memory back to the system between the phases of long work.
//!
//! The binary owns the allocator ([`set_release_hook`]); the libraries know
//! when a phase that allocated on many threads has ended
//! ([`release_freed_memory`]). A block freed by another thread than the one
//! that allocated it waits in its page until the owning thread next
//! allocates: after a first index, the pool's parsing threads sit idle while
//! the search sync allocates on others, and what they parsed would count in
//! the peak twice. Without a hook (a library test, another allocator)
//! nothing happens.

use std::sync::OnceLock;

static RELEASE: OnceLock<fn()> = OnceLock::new();

/// Sets what [`release_freed_memory`] calls on each thread it visits (the
/// allocator's collect, for instance). Only the first call sets it; returns
/// whether this one did.
pub fn set_release_hook(hook: fn()) -> bool {
    RELEASE.set(hook).is_ok()
}

/// Runs the hook set by [`set_release_hook`] on the calling thread, if any.
pub fn release_freed_memory() {
    if let Some(hook) = RELEASE.get() {
        hook();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static CALLS: AtomicUsize = AtomicUsize::new(0);

    fn count() {
        CALLS.fetch_add(1, Ordering::SeqCst);
    }

    #[test]
    fn the_first_hook_set_is_the_one_called() {
        release_freed_memory();
        assert_eq!(CALLS.load(Ordering::SeqCst), 0, "no hook: nothing runs");
        assert!(set_release_hook(count));
        assert!(!set_release_hook(|| panic!("a second hook is ignored")));
        release_freed_memory();
        release_freed_memory();
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
    }
}
