//! Where a process starts walking the broker addresses.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// A random index below `count` (at least 1), different from process to
/// process: the standard library's per-process random hash keys, so no
/// extra dependency.
pub(super) fn random_start(count: usize) -> usize {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    (hasher.finish() % count.max(1) as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_is_an_index_of_the_list() {
        for count in 1..5 {
            assert!(random_start(count) < count);
        }
        assert_eq!(random_start(0), 0);
    }
}
