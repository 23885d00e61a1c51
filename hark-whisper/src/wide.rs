//! Element-wise loops compiled for the widest vectors the CPU has.
//!
//! The crate is built for baseline x86-64 (SSE2), so a loop the compiler vectorises runs
//! four lanes at a time: the encoder's GELU, layer norms, residual adds and softmax were
//! about a fifth of an encode (BENCHMARKS.md, "The encoder's element-wise loops"). [`widest!`]
//! compiles a function's body again for AVX-512 and for AVX2 and picks one at run time.
//! The arithmetic is the same in every lane and no sum is reordered, so each path gives
//! the baseline's bits.

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
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has the feature the function is compiled for.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: as above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            any($($arg),*)
        }
    };
}

pub(crate) use widest;
