//! Element-wise loops compiled for the widest vectors the CPU has.
//!
//! The crate is built for baseline x86-64 (SSE2), so a loop the compiler vectorises runs
//! four lanes at a time: the encoder's GELU, layer norms, residual adds, softmax and
//! conversions to int8 were about a quarter of an encode (BENCHMARKS.md, "The encoder's
//! element-wise loops"). [`widest!`] compiles a function's body again for AVX-512 and for
//! AVX2 and picks one at run time. The arithmetic is the same in every lane and no sum is
//! reordered, so each path gives the baseline's bits; the tests take every path this CPU
//! has (`on_every_path`).

/// The paths a [`widest!`] function may take, narrowest first (off x86-64 only the
/// baseline, and nothing asks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) enum Path {
    /// What runs when neither wider path is taken; only the tests name it.
    #[cfg_attr(not(test), allow(dead_code))]
    Baseline,
    Avx2,
    Avx512,
}

/// Whether a [`widest!`] function may take `path` when the CPU has it: always, but in tests
/// kept to a narrower one (`on_every_path`).
#[cfg(not(test))]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
pub(crate) fn allows(_: Path) -> bool {
    true
}

#[cfg(test)]
thread_local! {
    static CAP: std::cell::Cell<Path> = const { std::cell::Cell::new(Path::Avx512) };
}

#[cfg(test)]
pub(crate) fn allows(path: Path) -> bool {
    CAP.with(|cap| path <= cap.get())
}

/// Runs `f(path)` for every path this CPU can take, narrowest first, with this thread's
/// [`widest!`] functions kept to that path.
#[cfg(test)]
pub(crate) fn on_every_path(f: impl Fn(Path)) {
    for path in available() {
        let before = CAP.with(|cap| cap.replace(path));
        f(path);
        CAP.with(|cap| cap.set(before));
    }
}

#[cfg(test)]
fn available() -> Vec<Path> {
    let mut paths = vec![Path::Baseline];
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            paths.push(Path::Avx2);
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            paths.push(Path::Avx512);
        }
    }
    paths
}

/// Defines `fn $name(args)` whose body is compiled for AVX-512F, for AVX2 and for the
/// baseline, and run with the widest the CPU has (asked per call: a cached load).
macro_rules! widest {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        widest! { $(#[$meta])* $vis fn $name($($arg: $ty),*) -> () $body }
    };
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty
        $body:block
    ) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) -> $ret {
            #[inline(always)]
            fn any($($arg: $ty),*) -> $ret $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512($($arg: $ty),*) -> $ret {
                    any($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                fn avx2($($arg: $ty),*) -> $ret {
                    any($($arg),*)
                }
                use $crate::wide::{Path, allows};
                if std::arch::is_x86_feature_detected!("avx512f") && allows(Path::Avx512) {
                    // SAFETY: the CPU has the feature the function is compiled for.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") && allows(Path::Avx2) {
                    // SAFETY: as above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            any($($arg),*)
        }
    };
}

pub(crate) use widest;
