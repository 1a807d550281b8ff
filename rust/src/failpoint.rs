//! Named fail points for the crash harness (tests/reliability): the process aborts at a
//! chosen step, the way `kill -9` would stop it there, so that recovery can be tested at
//! exactly the moments that matter (mid-write, after the data is durable but before it is
//! published, after publishing but before the directory is synced).
//!
//! `KBDB_FAILPOINT=<name>[:<n>]` aborts at the `n`-th hit (default 1) of the point `name`.
//! The variable is read once per process; without it a hit is one relaxed atomic load.
//! The points are `write.mid`, `write.before_rename` and `write.after_rename` (every atomic
//! file write of both indexes); the Python side adds its own (`kbdb.failpoints`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

struct Armed {
    name: String,
    remaining: AtomicU64,
}

fn armed() -> Option<&'static Armed> {
    static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            let spec = std::env::var("KBDB_FAILPOINT").ok()?;
            let (name, count) = match spec.split_once(':') {
                Some((name, n)) => (name.to_owned(), n.parse().ok()?),
                None => (spec, 1),
            };
            Some(Armed {
                name,
                remaining: AtomicU64::new(count),
            })
        })
        .as_ref()
}

/// Aborts the process if `name` is the armed fail point and its count has run out.
#[inline]
pub fn hit(name: &str) {
    if let Some(a) = armed() {
        if a.name == name && a.remaining.fetch_sub(1, Ordering::SeqCst) == 1 {
            eprintln!("kbdb: fail point {name} reached: aborting");
            std::process::abort();
        }
    }
}
