//! The instruction set of the lexical engine's hot loops, chosen at run time.
//!
//! The extension is built for the x86-64 baseline (SSE2), so that one wheel runs on any
//! x86-64 CPU. The loops that run once per posting (decoding a block, scoring it, adding it
//! to the docs' cells) are written once, portably, and compiled twice: as they are, and
//! inside a `#[target_feature(enable = "avx2")]` function, where the compiler vectorizes
//! them eight lanes wide. Both copies do the same IEEE operations in the same order (no
//! fused multiply-add, no reassociation), so they give the same bits; `rust/tests/pruning.rs`
//! and the codec's tests hold the two copies to each other.
//!
//! [`avx2`] says which copy runs: the AVX2 one when the CPU has AVX2 (detected once by
//! `std`, then a cached bit test), unless [`portable`] is in force on this thread.

use std::cell::Cell;

thread_local! {
    static PORTABLE: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread runs the AVX2 copies: the CPU has AVX2 and [`portable`] is not in
/// force.
#[inline]
pub fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && !PORTABLE.with(Cell::get)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Runs `f` with the portable copies only, on this thread (restored after, also on a
/// panic): for tests that hold both copies to the same results.
#[doc(hidden)]
pub fn portable<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            PORTABLE.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(PORTABLE.with(|p| p.replace(true)));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_is_scoped_to_the_call_and_the_thread() {
        let outside = avx2();
        portable(|| {
            assert!(!avx2());
            let other = std::thread::spawn(avx2).join().unwrap();
            assert_eq!(other, outside);
        });
        assert_eq!(avx2(), outside);
        let caught = std::panic::catch_unwind(|| portable(|| panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(avx2(), outside);
    }
}
