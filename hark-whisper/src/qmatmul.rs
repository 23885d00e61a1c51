//! Int8 matrix products (Whisper's layers, the decoder's cross-attention scores), as CTranslate2's int8
//! compute type does them: weights int8 with a scale per output row, quantised once at
//! load; activations int8 with a scale per input row, quantised at every call; products
//! summed exactly in `i32`, then scaled back to `f32`. Each path (AVX-512 VNNI, AVX2, the
//! portable one) gives the same integers, so which one the CPU takes never changes a
//! transcript.
//!
//! VNNI's `vpdpbusd` multiplies unsigned bytes by signed ones, so that path reads the
//! activations shifted by 128 and takes `128·Σw` back per column (summed at load).
//! AVX2's `vpmaddubsw` saturates its pair sums at `i16`: it multiplies `|x|` by `w` with
//! `x`'s sign, whose pairs stay within `2·127·127`.

use super::wide::widest;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Output columns per packed panel: two AVX-512 registers of `i32` lanes.
pub(super) const NR: usize = 32;
/// Rows per tile; the quantised activations are padded to a multiple of it.
const MR: usize = 8;
/// Bytes of one step of a panel: 4 inputs of each of its columns.
const STEP: usize = NR * 4;

/// One tile's sums: `MR` rows of `NR` columns.
type Tile = [[i32; NR]; MR];

/// Which kernel runs the products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    Vnni,
    Avx2,
    Any,
}

impl Kernel {
    /// The fastest the CPU has.
    pub(super) fn best() -> Self {
        Self::available()[0]
    }

    /// Every path the CPU can run, fastest first.
    pub(super) fn available() -> Vec<Self> {
        [Self::Vnni, Self::Avx2, Self::Any]
            .into_iter()
            .filter(|k| k.runs_here())
            .collect()
    }

    /// Whether the CPU can run this path: asked on every product, so it allocates nothing
    /// (the feature checks are cached by std).
    fn runs_here(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Self::Vnni => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(target_arch = "x86_64")]
            Self::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(not(target_arch = "x86_64"))]
            Self::Vnni | Self::Avx2 => false,
            Self::Any => true,
        }
    }

    /// Whether this path reads activations shifted into `u8`.
    fn shifted(self) -> bool {
        self == Self::Vnni
    }
}

/// Symmetric int8 per row: `w ≈ q · scale`.
pub(super) fn quantize_rows(w: &[f32], inp: usize) -> (Vec<i8>, Vec<f32>) {
    let mut q = vec![0; w.len() - w.len() % inp.max(1)];
    let mut scales = Vec::with_capacity(w.len() / inp.max(1));
    for (row, q) in w.chunks_exact(inp).zip(q.chunks_exact_mut(inp)) {
        let max = max_abs(row);
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        round_row(row, scale, q);
        scales.push(scale);
    }
    (q, scales)
}

widest! {
    /// A tile row's integer sums back to `f32` (`s · x's scale · w's scale`, then the bias):
    /// every output of every product passes here, the vocabulary's at every step.
    fn scale_sums(ys: &mut [f32], sums: &[i32], xs: f32, ws: &[f32], bias: Option<&[f32]>) {
        for ((y, &s), &w) in ys.iter_mut().zip(sums).zip(ws) {
            *y = s as f32 * xs * w;
        }
        if let Some(b) = bias {
            ys.iter_mut().zip(b).for_each(|(y, b)| *y += b);
        }
    }
}

widest! {
    /// `q = round(x / scale)`, half away from zero, within ±127: the division and the
    /// rounding vectorise where the CPU rounds in vectors (baseline x86-64 calls `roundf`
    /// per value).
    fn round_row(x: &[f32], scale: f32, q: &mut [i8]) {
        for (q, v) in q.iter_mut().zip(x) {
            *q = to_i8((v / scale).round());
        }
    }
}

widest! {
    /// `q = x · inv` rounded half away from zero (the sum's fraction truncated), within
    /// ±127, as `u8` xor `zero` (128: shifted for the VNNI path's unsigned activations).
    fn quantize_row(x: &[f32], inv: f32, zero: u8, q: &mut [u8]) {
        for (q, v) in q.iter_mut().zip(x) {
            *q = to_i8(v * inv + 0.5f32.copysign(*v)) as u8 ^ zero;
        }
    }
}

/// `v` truncated to an integer within ±127 (a NaN to -127). Unchecked through `i32`, so
/// the loops around it vectorise: a float's saturating conversion (`as`) does not.
#[inline(always)]
fn to_i8(v: f32) -> i8 {
    // `f32::max` passes over a NaN, so `v` is a number in [-127, 127] (`clamp` keeps a NaN).
    #[allow(clippy::manual_clamp)]
    let v = v.max(-127.0).min(127.0);
    // SAFETY: `v` is finite and within `i32`'s range.
    let v: i32 = unsafe { v.to_int_unchecked() };
    v as i8
}

/// How far `got` is from `want`, relative to `want` (L2): what int8 products cost in
/// accuracy, for the tests and `examples/whisper_probe`.
pub fn relative_difference(want: &[f32], got: &[f32]) -> f32 {
    let norm = want.iter().map(|v| v * v).sum::<f32>().sqrt();
    let err = want
        .iter()
        .zip(got)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f32>()
        .sqrt();
    err / norm
}

/// A linear layer `y = x·Wᵀ + b` with `W` int8, packed for [`QMatrix::forward`].
pub(super) struct QMatrix {
    /// Panels of `NR` output columns, each `[inp / 4][NR][4]`: one step of the kernels
    /// reads 4 inputs of 32 columns in one 128-byte run. Columns past `out` and inputs
    /// past `inp` are zero.
    w: Vec<i8>,
    /// Per output column (padded with zeros to whole panels).
    scale: Vec<f32>,
    /// `128·Σw` per output column: what the VNNI path's shifted activations add.
    shift: Vec<i32>,
    bias: Option<Vec<f32>>,
    inp: usize,
    out: usize,
    path: Kernel,
}

impl QMatrix {
    /// From `f32` weights `[out][inp]`: symmetric int8 per output row.
    pub(super) fn new(w: &[f32], inp: usize, bias: Option<Vec<f32>>, path: Kernel) -> Self {
        let (q, scale) = quantize_rows(w, inp);
        Self::pack(&q, scale, inp, bias, path)
    }

    /// From int8 weights `[out][inp]` (within ±127) and their scales.
    pub(super) fn pack(
        q: &[i8],
        mut scale: Vec<f32>,
        inp: usize,
        bias: Option<Vec<f32>>,
        path: Kernel,
    ) -> Self {
        let out = scale.len();
        let steps = inp.div_ceil(4);
        let panels = out.div_ceil(NR);
        let mut w = vec![0i8; panels * steps * STEP];
        let mut shift = vec![0i32; panels * NR];
        for (o, row) in q.chunks_exact(inp.max(1)).take(out).enumerate() {
            let (p, c) = (o / NR, o % NR);
            for (i, &v) in row.iter().enumerate() {
                w[(p * steps + i / 4) * STEP + c * 4 + i % 4] = v;
            }
            shift[o] = 128 * row.iter().map(|&v| i32::from(v)).sum::<i32>();
        }
        scale.resize(panels * NR, 0.0);
        Self {
            w,
            scale,
            shift,
            bias,
            inp,
            out,
            path,
        }
    }

    /// Row `o` of the weights, scaled back to `f32`, appended to `out`: the decoder looks its
    /// token embeddings up in the matrix it projects onto the vocabulary with.
    pub(super) fn extend_with_row(&self, o: usize, out: &mut Vec<f32>) {
        let (w, c, scale) = (self.panel(o / NR), o % NR, self.scale[o]);
        out.extend((0..self.inp).map(|i| f32::from(w[(i / 4) * STEP + c * 4 + i % 4]) * scale));
    }

    /// `rows` rows of `x` (`[rows][inp]`) into `y` (`[rows][out]`); `acts` is scratch.
    pub(super) fn forward(&self, x: &[f32], rows: usize, y: &mut Vec<f32>, acts: &mut QActs) {
        self.forward_from(x, rows, 0, y, acts);
    }

    /// [`QMatrix::forward`] onto the columns from panel `from` on only: `y` is
    /// `[rows][out − from·NR]`, each number the one `forward` gives for its column.
    pub(super) fn forward_from(
        &self,
        x: &[f32],
        rows: usize,
        from: usize,
        y: &mut Vec<f32>,
        acts: &mut QActs,
    ) {
        acts.quantize(x, rows, self.inp, self.path.shifted());
        let first = (from * NR).min(self.out);
        let width = self.out - first;
        y.clear();
        y.resize(rows * width, 0.0);
        let out = self.out;
        self.products(acts, self.path, from, |row0, panel, tile| {
            for (r, sums) in tile.iter().enumerate() {
                let row = row0 + r;
                if row >= rows {
                    break;
                }
                let xs = acts.scale[row];
                let cols = (panel * NR)..((panel + 1) * NR).min(out);
                let ys =
                    &mut y[row * width..(row + 1) * width][cols.start - first..cols.end - first];
                let bias = self.bias.as_ref().map(|b| &b[cols.clone()]);
                scale_sums(ys, sums, xs, &self.scale[cols], bias);
            }
        });
    }

    /// `Σ x·w` in `i32` for every row of `acts` (quantised for `path`) and every column
    /// from panel `from` on, a tile at a time: `sink(first row, panel, tile)`. Tiles run a
    /// block of rows across every panel, so the rows stay in L1 and the weights in L2.
    pub(super) fn products(
        &self,
        acts: &QActs,
        path: Kernel,
        from: usize,
        mut sink: impl FnMut(usize, usize, &Tile),
    ) {
        let steps = self.inp.div_ceil(4);
        assert!(
            acts.stride == steps * 4
                && acts.q.len() >= acts.rows.next_multiple_of(MR) * acts.stride
                && acts.shifted == path.shifted(),
            "activations quantised for another matrix or path"
        );
        match path {
            #[cfg(target_arch = "x86_64")]
            Kernel::Vnni => {
                assert!(path.runs_here(), "the CPU has no AVX-512 VNNI");
                // SAFETY: the CPU has the features the function is compiled for (checked
                // just above).
                unsafe { self.products_vnni(acts, from, &mut sink) }
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => {
                assert!(path.runs_here(), "the CPU has no AVX2");
                // SAFETY: as above, for AVX2.
                unsafe { self.products_avx2(acts, from, &mut sink) }
            }
            _ => self.products_any(acts, from, &mut sink),
        }
    }

    fn panel(&self, p: usize) -> &[i8] {
        let len = self.inp.div_ceil(4) * STEP;
        &self.w[p * len..(p + 1) * len]
    }

    /// Whole tiles of `MR` rows; the last, partial one a row at a time, so a decoder's
    /// single row does not pay for seven rows of zeros.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn products_vnni(&self, acts: &QActs, from: usize, sink: &mut impl FnMut(usize, usize, &Tile)) {
        let mut tile = [[0i32; NR]; MR];
        for row0 in (0..acts.rows).step_by(MR) {
            let a = &acts.q[row0 * acts.stride..(row0 + MR) * acts.stride];
            let rows = MR.min(acts.rows - row0);
            for p in from..self.out.div_ceil(NR) {
                match rows {
                    MR => self.tile_vnni::<MR>(a, acts.stride, p, &mut tile),
                    _ => {
                        for (x, out) in a.chunks_exact(acts.stride).zip(&mut tile).take(rows) {
                            self.tile_vnni::<1>(x, acts.stride, p, std::slice::from_mut(out));
                        }
                    }
                }
                sink(row0, p, &tile);
            }
        }
    }

    /// Panel `p`'s sums for the first `R` rows of `a` (rows of `stride` bytes) into `out`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn tile_vnni<const R: usize>(&self, a: &[u8], stride: usize, p: usize, out: &mut [[i32; NR]]) {
        let steps = self.inp.div_ceil(4);
        let w = self.panel(p);
        let shift = &self.shift[p * NR..(p + 1) * NR];
        assert!(a.len() >= R * stride && stride >= steps * 4 && out.len() >= R);
        // SAFETY: `a` holds R rows of `stride` >= 4·steps bytes and `w` `steps` runs of
        // STEP bytes (asserted above and by `panel`'s slicing); every load below lies
        // inside them, and `out` and `shift` hold NR lanes per row.
        unsafe {
            let mut acc = [[_mm512_setzero_si512(); 2]; R];
            let (ap, wp) = (a.as_ptr(), w.as_ptr());
            for k in 0..steps {
                let w0 = _mm512_loadu_si512(wp.add(k * STEP).cast());
                let w1 = _mm512_loadu_si512(wp.add(k * STEP + 64).cast());
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = ap.add(r * stride + k * 4).cast::<i32>();
                    let x = _mm512_set1_epi32(x.read_unaligned());
                    acc[0] = _mm512_dpbusd_epi32(acc[0], x, w0);
                    acc[1] = _mm512_dpbusd_epi32(acc[1], x, w1);
                }
            }
            let s0 = _mm512_loadu_si512(shift.as_ptr().cast());
            let s1 = _mm512_loadu_si512(shift.as_ptr().add(16).cast());
            for (acc, row) in acc.iter().zip(out.iter_mut()) {
                let out = row.as_mut_ptr();
                _mm512_storeu_si512(out.cast(), _mm512_sub_epi32(acc[0], s0));
                _mm512_storeu_si512(out.add(16).cast(), _mm512_sub_epi32(acc[1], s1));
            }
        }
    }

    /// Four rows and 16 columns at a time: AVX2 has 16 registers.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn products_avx2(&self, acts: &QActs, from: usize, sink: &mut impl FnMut(usize, usize, &Tile)) {
        let steps = self.inp.div_ceil(4);
        let mut tile = [[0i32; NR]; MR];
        for row0 in (0..acts.rows).step_by(MR) {
            let a = &acts.q[row0 * acts.stride..(row0 + MR) * acts.stride];
            let groups = MR.min(acts.rows - row0).div_ceil(4);
            for p in from..self.out.div_ceil(NR) {
                let w = self.panel(p);
                for (g, rows) in tile.chunks_exact_mut(4).enumerate().take(groups) {
                    for h in 0..2 {
                        // SAFETY: `a` holds MR rows of `stride` = 4·steps bytes and `w`
                        // `steps` runs of STEP bytes (checked by the slicing above); rows
                        // 4g..4g+4 and bytes 64h..64h+64 of each run lie inside them, and
                        // each row of `tile` holds NR lanes.
                        unsafe {
                            let ones = _mm256_set1_epi16(1);
                            let mut acc = [[_mm256_setzero_si256(); 2]; 4];
                            let ap = a.as_ptr().add(4 * g * acts.stride);
                            let wp = w.as_ptr().add(64 * h);
                            for k in 0..steps {
                                let w0 = _mm256_loadu_si256(wp.add(k * STEP).cast());
                                let w1 = _mm256_loadu_si256(wp.add(k * STEP + 32).cast());
                                for (r, acc) in acc.iter_mut().enumerate() {
                                    let x = ap.add(r * acts.stride + k * 4).cast::<i32>();
                                    let x = _mm256_set1_epi32(x.read_unaligned());
                                    let ax = _mm256_abs_epi8(x);
                                    let p0 = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(w0, x));
                                    let p1 = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(w1, x));
                                    acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(p0, ones));
                                    acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(p1, ones));
                                }
                            }
                            for (acc, row) in acc.iter().zip(rows.iter_mut()) {
                                let out = row.as_mut_ptr().add(16 * h);
                                _mm256_storeu_si256(out.cast(), acc[0]);
                                _mm256_storeu_si256(out.add(8).cast(), acc[1]);
                            }
                        }
                    }
                }
                sink(row0, p, &tile);
            }
        }
    }

    /// The reference the others must match; plain enough for the compiler to vectorise.
    fn products_any(&self, acts: &QActs, from: usize, sink: &mut impl FnMut(usize, usize, &Tile)) {
        let mut tile = [[0i32; NR]; MR];
        for row0 in (0..acts.rows).step_by(MR) {
            let a = &acts.q[row0 * acts.stride..(row0 + MR) * acts.stride];
            let rows = MR.min(acts.rows - row0);
            for p in from..self.out.div_ceil(NR) {
                let w = self.panel(p);
                for (x, sums) in a.chunks_exact(acts.stride).zip(tile.iter_mut()).take(rows) {
                    *sums = [0; NR];
                    for (x, w) in x.chunks_exact(4).zip(w.chunks_exact(STEP)) {
                        for (s, w) in sums.iter_mut().zip(w.chunks_exact(4)) {
                            *s += (0..4)
                                .map(|j| i32::from(x[j] as i8) * i32::from(w[j]))
                                .sum::<i32>();
                        }
                    }
                }
                sink(row0, p, &tile);
            }
        }
    }
}

/// Activations quantised per row: `x ≈ q · scale`, `q` within ±127, stored as bytes
/// (`q` as `i8`, or `q + 128` for the VNNI path), rows padded to whole tiles and to whole
/// steps of 4 inputs with zeros.
#[derive(Default)]
pub struct QActs {
    q: Vec<u8>,
    scale: Vec<f32>,
    rows: usize,
    stride: usize,
    shifted: bool,
}

impl QActs {
    pub(super) fn quantize(&mut self, x: &[f32], rows: usize, inp: usize, shifted: bool) {
        let stride = inp.div_ceil(4) * 4;
        let zero = if shifted { 128 } else { 0 };
        self.q.clear();
        self.q.resize(rows.next_multiple_of(MR) * stride, zero);
        self.scale.clear();
        for (x, q) in x
            .chunks_exact(inp.max(1))
            .take(rows)
            .zip(self.q.chunks_exact_mut(stride))
        {
            let max = max_abs(x);
            let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
            quantize_row(x, 1.0 / scale, zero, q);
            self.scale.push(scale);
        }
        self.rows = rows;
        self.stride = stride;
        self.shifted = shifted;
    }

    /// Quantised value `(row, i)`, unshifted.
    #[cfg(test)]
    fn get(&self, row: usize, i: usize) -> i32 {
        let v = self.q[row * self.stride + i];
        match self.shifted {
            true => i32::from(v) - 128,
            false => i32::from(v as i8),
        }
    }
}

widest! {
    /// In 16 lanes, so the compiler vectorises it (the maximum is the same in any order).
    fn max_abs(x: &[f32]) -> f32 {
        let mut lanes = [0f32; 16];
        let mut chunks = x.chunks_exact(16);
        for c in &mut chunks {
            for (m, v) in lanes.iter_mut().zip(c) {
                *m = m.max(v.abs());
            }
        }
        let tail = chunks.remainder().iter().fold(0f32, |m, v| m.max(v.abs()));
        lanes.iter().fold(tail, |a, &b| a.max(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quantisers' rows, on every path this CPU has, against their definitions one
    /// value at a time: ties, values past ±127, zeros, a NaN.
    #[test]
    fn the_widest_quantisers_give_the_definitions_bytes_on_every_path() {
        crate::wide::on_every_path(the_quantisers_give_the_definitions_bytes);
    }

    fn the_quantisers_give_the_definitions_bytes(path: crate::wide::Path) {
        use std::hint::black_box;
        let mut rng = fastrand::Rng::with_seed(9);
        let edges = [
            0.5, -0.5, 1.5, -2.5, 126.5, -126.5, 127.49, 300.0, -1e9, 0.0, -0.0,
        ];
        for len in [1, 11, 16, 17, 64, 385, 1500] {
            let mut x: Vec<f32> = (0..len).map(|_| rng.f32() * 254.0 - 127.0).collect();
            for (v, e) in x.iter_mut().zip(edges) {
                *v = e;
            }
            for scale in [1.0, 0.37, 3.0] {
                let mut got = vec![0i8; len];
                round_row(&x, scale, &mut got);
                let want: Vec<i8> = x
                    .iter()
                    .map(|&v| black_box((v / scale).round()).clamp(-127.0, 127.0) as i8)
                    .collect();
                assert_eq!(
                    got, want,
                    "round_row, {len} values, scale {scale} ({path:?})"
                );
                for zero in [0u8, 128] {
                    let inv = 1.0 / scale;
                    let mut got = vec![0u8; len];
                    quantize_row(&x, inv, zero, &mut got);
                    let want: Vec<u8> = x
                        .iter()
                        .map(|&v| {
                            let v = black_box(v * inv + 0.5f32.copysign(v));
                            v.clamp(-127.0, 127.0) as i8 as u8 ^ zero
                        })
                        .collect();
                    assert_eq!(
                        got, want,
                        "quantize_row, {len} values, scale {scale} ({path:?})"
                    );
                }
            }
            let max = x.iter().fold(0f32, |m, &v| black_box(m.max(v.abs())));
            assert_eq!(
                max_abs(&x).to_bits(),
                max.to_bits(),
                "max_abs, {len} values ({path:?})"
            );
        }
        // A NaN (no activation should be one) is a number in range, never undefined.
        let mut q = [0u8; 1];
        quantize_row(&[f32::NAN], 1.0, 0, &mut q);
        assert_eq!(q[0] as i8, -127);
    }

    /// The products' sums scaled back, on every path, against the definition one value at
    /// a time.
    #[test]
    fn the_widest_scaling_gives_the_definitions_bits_on_every_path() {
        use std::hint::black_box;
        crate::wide::on_every_path(|path| {
            let mut rng = fastrand::Rng::with_seed(3);
            for len in [1, 7, 16, NR] {
                let sums: Vec<i32> = (0..len).map(|_| rng.i32(-900_000..900_000)).collect();
                let ws: Vec<f32> = (0..len).map(|_| rng.f32() * 1e-3).collect();
                let bias: Vec<f32> = (0..len).map(|_| rng.f32() - 0.5).collect();
                for b in [None, Some(&bias[..])] {
                    let mut got = vec![0.0; len];
                    scale_sums(&mut got, &sums, 0.013, &ws, b);
                    let want: Vec<u32> = (0..len)
                        .map(|i| {
                            let y = black_box(black_box(sums[i] as f32 * 0.013) * ws[i]);
                            b.map_or(y, |b| black_box(y + b[i])).to_bits()
                        })
                        .collect();
                    let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(got, want, "{len} sums, bias {} ({path:?})", b.is_some());
                }
            }
        });
    }

    /// Odd shapes on purpose: rows, columns and inputs that are not whole tiles, panels
    /// or steps.
    #[test]
    fn every_path_gives_the_reference_integers() {
        let mut rng = fastrand::Rng::with_seed(7);
        let shapes = [
            (1, 1, 1),
            (3, 5, 7),
            (8, 32, 4),
            (9, 33, 13),
            (17, 70, 130),
            (100, 64, 384),
        ];
        for (rows, out, inp) in shapes {
            let w: Vec<i8> = (0..out * inp).map(|_| rng.i8(-127..=127)).collect();
            let m = QMatrix::pack(&w, vec![1.0; out], inp, None, Kernel::Any);
            // Extremes included: a row's largest magnitude quantises to ±127.
            let x: Vec<f32> = (0..rows * inp).map(|_| rng.f32() * 8.0 - 4.0).collect();
            let mut acts = QActs::default();
            let mut want = vec![0i32; rows * out];
            acts.quantize(&x, rows, inp, false);
            for r in 0..rows {
                for o in 0..out {
                    want[r * out + o] = (0..inp)
                        .map(|i| acts.get(r, i) * i32::from(w[o * inp + i]))
                        .sum();
                }
            }
            for path in Kernel::available() {
                acts.quantize(&x, rows, inp, path.shifted());
                let mut got = vec![0i32; rows * out];
                m.products(&acts, path, 0, |row0, p, tile| {
                    for (r, sums) in tile.iter().enumerate().filter(|(r, _)| row0 + r < rows) {
                        for (c, s) in sums.iter().enumerate().filter(|(c, _)| p * NR + c < out) {
                            got[(row0 + r) * out + p * NR + c] = *s;
                        }
                    }
                });
                assert_eq!(got, want, "{path:?} on {rows}×{inp} · {inp}×{out}");
            }
        }
    }

    #[test]
    fn forward_is_close_to_the_f32_product() {
        let mut rng = fastrand::Rng::with_seed(3);
        let (rows, out, inp) = (19, 45, 67);
        let w: Vec<f32> = (0..out * inp).map(|_| rng.f32() - 0.5).collect();
        let b: Vec<f32> = (0..out).map(|_| rng.f32()).collect();
        let x: Vec<f32> = (0..rows * inp).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let mut want = vec![0f32; rows * out];
        for r in 0..rows {
            for o in 0..out {
                want[r * out + o] = b[o]
                    + (0..inp)
                        .map(|i| x[r * inp + i] * w[o * inp + i])
                        .sum::<f32>();
            }
        }
        for path in Kernel::available() {
            let m = QMatrix::new(&w, inp, Some(b.clone()), path);
            let (mut y, mut acts) = (Vec::new(), QActs::default());
            m.forward(&x, rows, &mut y, &mut acts);
            let err = relative_difference(&want, &y);
            assert!(err < 0.01, "{path:?}: relative error {err}");
        }
    }
}
