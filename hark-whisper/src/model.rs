//! Whisper's encoder and decoder on the CPU, from a CTranslate2 model file: pre-norm
//! transformer layers, GELU, layer norms and a key/value cache per layer, one thread per
//! decode, weights shared by every decoder thread.
//!
//! The layers' products are int8 matrix products (`qmatmul`: int8 weights and activations
//! summed in `i32`, as CTranslate2's int8 compute type does them): the encoder's over many
//! frames at once, the decoder's over one token (or a draft's few), where they are bounded by
//! reading the weights (the vocabulary projection, the largest, 26 MB for base), and the
//! cross-attention's scores over the encoder's 1500 frames. The encoder's convolutions and
//! attention, and the decoder's self-attention, are `f32` (`gemm`); `whisper.encoder =
//! "float32"` keeps the encoder's layers `f32` too.

use std::path::Path;
use std::sync::Arc;

use gemm::Parallelism;

use super::ct2::ModelFile;
use super::error::LoadError;
use super::qmatmul::{Kernel, NR, QActs, QMatrix, quantize_rows};
use super::wide::widest;

/// Frames of encoder output Whisper's decoder was trained to attend over (30 s).
pub const ENCODER_FRAMES: usize = 1500;

/// A linear layer: `y = x·Wᵀ + b`, `W` row-major `[out][in]`.
struct Linear {
    w: Vec<f32>,
    b: Option<Vec<f32>>,
    inp: usize,
    out: usize,
}

impl Linear {
    fn load(m: &ModelFile, prefix: &str) -> Result<Self, LoadError> {
        let (w, shape) = m.tensor(&format!("{prefix}/weight"))?;
        let (out, inp) = match shape[..] {
            [o, i] => (o, i),
            [o, i, k] => (o, i * k),
            _ => {
                return Err(LoadError::Shape(format!(
                    "{prefix}/weight has shape {shape:?}"
                )));
            }
        };
        let b = match m.has(&format!("{prefix}/bias")) {
            true => Some(m.tensor(&format!("{prefix}/bias"))?.0),
            false => None,
        };
        if b.as_ref().is_some_and(|b| b.len() != out) {
            return Err(LoadError::Shape(format!(
                "{prefix}/bias does not match its weight"
            )));
        }
        Ok(Self { w, b, inp, out })
    }

    /// The same, refusing any shape but `[out][inp]` (`out` any when `None`, but not 0): a
    /// model file of the wrong shape is an error at load, not a panic in a decode.
    fn load_shaped(
        m: &ModelFile,
        prefix: &str,
        out: Option<usize>,
        inp: usize,
    ) -> Result<Self, LoadError> {
        let l = Self::load(m, prefix)?;
        if l.inp != inp || l.out == 0 || out.is_some_and(|o| o != l.out) {
            return Err(LoadError::Shape(format!(
                "{prefix} is {}x{}, expected {}x{inp}",
                l.out,
                l.inp,
                out.map_or("N".into(), |o| o.to_string())
            )));
        }
        Ok(l)
    }

    /// `rows` rows of `x` (`[rows][inp]`) into `y` (`[rows][out]`).
    fn forward(&self, x: &[f32], rows: usize, y: &mut Vec<f32>) {
        y.clear();
        match &self.b {
            Some(b) => (0..rows).for_each(|_| y.extend_from_slice(b)),
            None => y.resize(rows * self.out, 0.0),
        }
        matmul(
            rows,
            self.out,
            self.inp,
            Mat::new(y, self.out, 1),
            self.b.is_some(),
            MatRef::new(x, self.inp, 1),
            MatRef::new(&self.w, 1, self.inp),
            1.0,
        );
    }
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

impl Norm {
    fn load(m: &ModelFile, prefix: &str, dim: usize) -> Result<Self, LoadError> {
        let norm = Self {
            gamma: m.tensor(&format!("{prefix}/gamma"))?.0,
            beta: m.tensor(&format!("{prefix}/beta"))?.0,
        };
        if norm.gamma.len() != dim || norm.beta.len() != dim {
            return Err(LoadError::Shape(format!("{prefix} is not {dim} wide")));
        }
        Ok(norm)
    }

    fn forward(&self, x: &[f32], y: &mut Vec<f32>) {
        y.clear();
        y.resize(x.len(), 0.0);
        layer_norm(x, &self.gamma, &self.beta, y);
    }
}

widest! {
    /// Each `gamma.len()`-wide row of `x` normalised into `y`'s.
    fn layer_norm(x: &[f32], gamma: &[f32], beta: &[f32], y: &mut [f32]) {
        let d = gamma.len();
        for (row, out) in x.chunks_exact(d).zip(y.chunks_exact_mut(d)) {
            let mean = row.iter().sum::<f32>() / d as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / d as f32;
            let inv = 1.0 / (var + 1e-5).sqrt();
            for (o, ((v, g), b)) in out.iter_mut().zip(row.iter().zip(gamma).zip(beta)) {
                *o = (v - mean) * inv * g + b;
            }
        }
    }
}

/// How the encoder's layers multiply (`whisper.encoder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub enum EncoderProducts {
    /// `f32` weights and activations: the reference the int8 encoder is tested against.
    #[serde(rename = "float32")]
    F32,
    /// Int8 weights and activations (the default: about half the encoder's time with
    /// AVX-512 VNNI; `F32` where the CPU has neither it nor AVX2).
    #[serde(rename = "int8")]
    Int8,
}

impl EncoderProducts {
    /// As the config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::F32 => "float32",
            Self::Int8 => "int8",
        }
    }
}

/// A layer's products (see the module): the encoder's take `f32` or int8 matrix products,
/// the decoder's int8 ones.
enum Lin {
    F32(Linear),
    Q8(QMatrix),
}

impl Lin {
    /// Loads `prefix`, `[out][inp]` (`out` any when `None`): returns the layer and its `out`.
    fn load(
        m: &ModelFile,
        prefix: &str,
        kind: LinKind,
        out: Option<usize>,
        inp: usize,
    ) -> Result<(Self, usize), LoadError> {
        let l = Linear::load_shaped(m, prefix, out, inp)?;
        let out = l.out;
        let int8 = match kind {
            LinKind::Decoder => true,
            // Without an int8 SIMD path (measured only on x86-64) `gemm`'s `f32` is kept.
            LinKind::Encoder(EncoderProducts::Int8) => Kernel::best() != Kernel::Any,
            LinKind::Encoder(EncoderProducts::F32) => false,
        };
        let lin = match int8 {
            true => Lin::Q8(QMatrix::new(&l.w, l.inp, l.b, Kernel::best())),
            false => Lin::F32(l),
        };
        Ok((lin, out))
    }

    fn forward(&self, x: &[f32], rows: usize, y: &mut Vec<f32>, acts: &mut QActs) {
        match self {
            Lin::F32(l) => l.forward(x, rows, y),
            Lin::Q8(l) => l.forward(x, rows, y, acts),
        }
    }
}

#[derive(Clone, Copy)]
enum LinKind {
    Encoder(EncoderProducts),
    Decoder,
}

struct Layer {
    attn_norm: Norm,
    /// Self-attention: fused query, key and value, then the output.
    qkv: Lin,
    attn_out: Lin,
    /// Cross-attention (decoder only): query, fused key and value (of the encoder's
    /// frames, once per decode), output.
    cross: Option<(Norm, Lin, Lin, Lin)>,
    ffn_norm: Norm,
    ffn_in: Lin,
    ffn_out: Lin,
}

impl Layer {
    fn load(m: &ModelFile, p: &str, kind: LinKind, d: usize) -> Result<Self, LoadError> {
        let cross = match kind {
            LinKind::Decoder => Some((
                Norm::load(m, &format!("{p}/attention/layer_norm"), d)?,
                Lin::load(m, &format!("{p}/attention/linear_0"), kind, Some(d), d)?.0,
                Lin::load(m, &format!("{p}/attention/linear_1"), kind, Some(2 * d), d)?.0,
                Lin::load(m, &format!("{p}/attention/linear_2"), kind, Some(d), d)?.0,
            )),
            LinKind::Encoder(_) => None,
        };
        let (ffn_in, ffn) = Lin::load(m, &format!("{p}/ffn/linear_0"), kind, None, d)?;
        Ok(Self {
            attn_norm: Norm::load(m, &format!("{p}/self_attention/layer_norm"), d)?,
            qkv: Lin::load(
                m,
                &format!("{p}/self_attention/linear_0"),
                kind,
                Some(3 * d),
                d,
            )?
            .0,
            attn_out: Lin::load(m, &format!("{p}/self_attention/linear_1"), kind, Some(d), d)?.0,
            cross,
            ffn_norm: Norm::load(m, &format!("{p}/ffn/layer_norm"), d)?,
            ffn_in,
            ffn_out: Lin::load(m, &format!("{p}/ffn/linear_1"), kind, Some(d), ffn)?.0,
        })
    }
}

/// The weights: immutable, shared by every decoder thread.
pub struct Weights {
    pub dim: usize,
    /// Mel bands the encoder reads (80, or 128 for large-v3's line).
    pub n_mels: usize,
    heads: usize,
    conv1: Linear,
    conv2: Linear,
    enc_pos: Vec<f32>,
    enc_layers: Vec<Layer>,
    enc_norm: Norm,
    /// Token embeddings, int8 by row: looked up, and the output projection (tied).
    embed: QMatrix,
    dec_pos: Vec<f32>,
    dec_layers: Vec<Layer>,
    dec_norm: Norm,
    pub vocab: usize,
    /// Decoder positions available (448).
    pub max_positions: usize,
    /// How the encoder's layers multiply on this CPU, for the start-up log.
    pub encoder: &'static str,
}

impl Weights {
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        Self::load_with(path, EncoderProducts::Int8)
    }

    /// With the encoder's layers multiplying as `encoder` says.
    pub fn load_with(path: &Path, encoder: EncoderProducts) -> Result<Self, LoadError> {
        let m = ModelFile::open(path)?;
        if m.spec != "WhisperSpec" {
            return Err(LoadError::NotWhisper {
                path: path.to_owned(),
                spec: m.spec,
            });
        }
        let heads = m.scalar("encoder/num_heads")? as usize;
        let conv1 = Linear::load(&m, "encoder/conv1")?;
        let dim = conv1.out;
        let n_mels = conv1.inp / 3;
        if dim == 0
            || heads == 0
            || dim % heads != 0
            || conv1.inp % 3 != 0
            || !super::mel::BANDS.contains(&n_mels)
        {
            return Err(LoadError::Shape(format!(
                "{dim} wide, {heads} heads, {} mel inputs",
                conv1.inp / 3
            )));
        }
        let layers = |side: &str, kind: LinKind| -> Result<Vec<Layer>, LoadError> {
            let mut out = Vec::new();
            while m.has(&format!("{side}/layer_{}/ffn/linear_0/weight", out.len())) {
                out.push(Layer::load(
                    &m,
                    &format!("{side}/layer_{}", out.len()),
                    kind,
                    dim,
                )?);
            }
            Ok(out)
        };
        let (embed, embed_shape) = m.tensor("decoder/embeddings/weight")?;
        let (dec_pos, pos_shape) = m.tensor("decoder/position_encodings/encodings")?;
        if embed_shape.get(1) != Some(&dim) || pos_shape.get(1) != Some(&dim) {
            return Err(LoadError::Shape(format!(
                "embeddings {embed_shape:?} and positions {pos_shape:?}, {dim} wide"
            )));
        }
        // The `f32` copies (106 MB for base) and the file's variables go as soon as they are
        // packed: loading base peaked at over twice what it keeps.
        let embed = {
            let rows = embed;
            QMatrix::new(&rows, dim, None, Kernel::best())
        };
        let weights = Self {
            dim,
            n_mels,
            heads,
            conv2: Linear::load_shaped(&m, "encoder/conv2", Some(dim), dim * 3)?,
            conv1,
            enc_pos: m.tensor("encoder/position_encodings/encodings")?.0,
            enc_layers: layers("encoder", LinKind::Encoder(encoder))?,
            enc_norm: Norm::load(&m, "encoder/layer_norm", dim)?,
            vocab: embed_shape.first().copied().unwrap_or(0),
            embed,
            max_positions: pos_shape.first().copied().unwrap_or(0),
            dec_pos,
            dec_layers: layers("decoder", LinKind::Decoder)?,
            dec_norm: Norm::load(&m, "decoder/layer_norm", dim)?,
            encoder: match (encoder, Kernel::best()) {
                (EncoderProducts::Int8, Kernel::Vnni) => "int8 (AVX-512 VNNI)",
                (EncoderProducts::Int8, Kernel::Avx2) => "int8 (AVX2)",
                (EncoderProducts::Int8, Kernel::Any) => "float32 (no int8 SIMD here)",
                (EncoderProducts::F32, _) => "float32",
            },
        };
        drop(m);
        if weights.enc_pos.len() < ENCODER_FRAMES * dim
            || weights.dec_layers.is_empty()
            || weights.vocab == 0
            || weights.max_positions < 16
        {
            return Err(LoadError::Shape("positions or layers missing".into()));
        }
        Ok(weights)
    }

    /// The encoder over `frames` mel frames (`[n_mels][frames]`, `frames` even):
    /// `[frames / 2][dim]`.
    pub fn encode(&self, mel: &[f32], frames: usize, s: &mut Scratch) -> Vec<f32> {
        let d = self.dim;
        let n_mels = self.n_mels;
        // The convolutions' unfolded input columns, and conv1's output.
        let (columns, hidden) = (&mut s.normed, &mut s.product);
        // conv1 (kernel 3, padding 1) as a matrix product over unfolded columns.
        columns.clear();
        columns.resize(frames * n_mels * 3, 0.0);
        for t in 0..frames {
            for c in 0..n_mels {
                for k in 0..3 {
                    let src = t as isize + k as isize - 1;
                    if (0..frames as isize).contains(&src) {
                        columns[t * n_mels * 3 + c * 3 + k] = mel[c * frames + src as usize];
                    }
                }
            }
        }
        self.conv1.forward(columns, frames, hidden);
        gelu(hidden);
        // conv2: stride 2.
        let t_out = frames / 2;
        columns.clear();
        columns.resize(t_out * d * 3, 0.0);
        for t in 0..t_out {
            for k in 0..3 {
                let src = (2 * t) as isize + k as isize - 1;
                if (0..frames as isize).contains(&src) {
                    let row = &hidden[src as usize * d..(src as usize + 1) * d];
                    for (c, v) in row.iter().enumerate() {
                        columns[t * d * 3 + c * 3 + k] = *v;
                    }
                }
            }
        }
        let mut x = Vec::new();
        self.conv2.forward(columns, t_out, &mut x);
        gelu(&mut x);
        for (v, p) in x.iter_mut().zip(&self.enc_pos) {
            *v += p;
        }
        for layer in &self.enc_layers {
            self.block(layer, &mut x, t_out, None, s);
        }
        let mut out = Vec::new();
        self.enc_norm.forward(&x, &mut out);
        out
    }

    /// Cross-attention keys and values of every decoder layer for an encoding of `rows`
    /// frames (`[rows][2·dim]` each).
    fn cross_kv(&self, encoded: &[f32], rows: usize) -> Vec<Vec<f32>> {
        self.dec_layers
            .iter()
            .filter_map(|l| l.cross.as_ref())
            .map(|(_, _, kv, _)| {
                let mut out = Vec::new();
                kv.forward(
                    &encoded[..rows * self.dim],
                    rows,
                    &mut out,
                    &mut QActs::default(),
                );
                out
            })
            .collect()
    }

    /// Starts a decode over a short encoding (`rows` frames): the cross-attention keys and
    /// values are the encoding's own, then `silence`'s tail up to `ENCODER_FRAMES`.
    pub fn start(&self, encoded: &[f32], rows: usize, silence: &Silence) -> DecoderState {
        let rows = rows.min(ENCODER_FRAMES);
        let own = self.cross_kv(encoded, rows);
        let cross = own
            .into_iter()
            .zip(&silence.0)
            .map(|(kv, silence)| Joined::new(&kv, silence))
            .collect();
        DecoderState {
            cross: Arc::new(cross),
            keys: vec![Vec::new(); self.dec_layers.len()],
            values: vec![Vec::new(); self.dec_layers.len()],
            len: 0,
        }
    }

    /// Runs `tokens` through the decoder after those already in `state`; returns the final
    /// hidden states (`[tokens.len()][dim]`, normalised) for [`Weights::logits`].
    pub fn decode(&self, tokens: &[u32], state: &mut DecoderState, s: &mut Scratch) -> Vec<f32> {
        self.decode_batch(&[tokens], &mut [state], s)
    }

    /// [`Weights::decode`] for several decodes at once, `tokens[i]` after `states[i]`'s:
    /// their rows go through each layer's products together, so the weights are read once
    /// for the whole batch rather than once per decode (a decoder step of one token is
    /// bound by reading them); attention stays each decode's own. Every row's numbers are
    /// the ones it would get alone (activations are quantised per row). Returns the hidden
    /// states of every row, the decodes' in order.
    pub fn decode_batch(
        &self,
        tokens: &[&[u32]],
        states: &mut [&mut DecoderState],
        s: &mut Scratch,
    ) -> Vec<f32> {
        assert_eq!(tokens.len(), states.len(), "one token list per decode");
        let d = self.dim;
        let n: usize = tokens.iter().map(|t| t.len()).sum();
        let mut x = Vec::with_capacity(n * d);
        for (tokens, state) in tokens.iter().zip(states.iter()) {
            // Callers keep within both: the tokenizer's ids are checked against the
            // embeddings at load, picks are rows of the logits, and a decode's budget ends
            // before the last position (`prompt::Layout`).
            assert!(
                state.len + tokens.len() <= self.max_positions,
                "a decode past the decoder's {} positions",
                self.max_positions
            );
            for (i, &t) in tokens.iter().enumerate() {
                let t = t as usize;
                assert!(t < self.vocab, "token {t} outside the vocabulary");
                let pos = state.len + i;
                let at = x.len();
                self.embed.extend_with_row(t, &mut x);
                let p = &self.dec_pos[pos * d..(pos + 1) * d];
                add(&mut x[at..], p);
            }
        }
        let rows: Vec<usize> = tokens.iter().map(|t| t.len()).collect();
        for (i, layer) in self.dec_layers.iter().enumerate() {
            let ctx = DecoderCtx {
                layer: i,
                states: &mut *states,
                rows: &rows,
            };
            self.block(layer, &mut x, n, Some(ctx), s);
        }
        for (state, rows) in states.iter_mut().zip(&rows) {
            state.len += rows;
        }
        let mut out = Vec::new();
        self.dec_norm.forward(&x, &mut out);
        out
    }

    /// Scores of every token after each of the hidden states in `hidden`
    /// (`[rows][vocab]`).
    pub fn logits(&self, hidden: &[f32], out: &mut Vec<f32>, s: &mut Scratch) {
        self.embed
            .forward(hidden, hidden.len() / self.dim, out, &mut s.q);
    }

    /// One pre-norm transformer layer over `x` (`[n][dim]`), in place.
    fn block(
        &self,
        layer: &Layer,
        x: &mut [f32],
        n: usize,
        mut dec: Option<DecoderCtx<'_, '_>>,
        s: &mut Scratch,
    ) {
        let d = self.dim;
        // Self-attention.
        layer.attn_norm.forward(x, &mut s.normed);
        layer.qkv.forward(&s.normed, n, &mut s.product, &mut s.q);
        s.sublayer.clear();
        s.sublayer.resize(n * d, 0.0);
        match dec.as_mut() {
            None => attention(
                self.heads,
                d,
                n,
                MatRef::new(&s.product, 3 * d, 1),
                n,
                MatRef::new(&s.product[d..], 3 * d, 1),
                MatRef::new(&s.product[2 * d..], 3 * d, 1),
                None,
                &mut s.sublayer,
                &mut s.scores,
            ),
            Some(ctx) => {
                // Each decode's rows attend over its own keys and values.
                let mut row0 = 0;
                for (state, &n) in ctx.states.iter_mut().zip(ctx.rows) {
                    let qkv = &s.product[row0 * 3 * d..(row0 + n) * 3 * d];
                    let (keys, values) = (&mut state.keys[ctx.layer], &mut state.values[ctx.layer]);
                    for row in qkv.chunks_exact(3 * d) {
                        keys.extend_from_slice(&row[d..2 * d]);
                        values.extend_from_slice(&row[2 * d..]);
                    }
                    let total = keys.len() / d;
                    attention(
                        self.heads,
                        d,
                        n,
                        MatRef::new(qkv, 3 * d, 1),
                        total,
                        MatRef::new(keys, d, 1),
                        MatRef::new(values, d, 1),
                        Some(total - n),
                        &mut s.sublayer[row0 * d..(row0 + n) * d],
                        &mut s.scores,
                    );
                    row0 += n;
                }
            }
        }
        layer
            .attn_out
            .forward(&s.sublayer, n, &mut s.product, &mut s.q);
        add(x, &s.product);
        // Cross-attention.
        if let (Some((norm, q, _, out)), Some(ctx)) = (&layer.cross, dec.as_ref()) {
            norm.forward(x, &mut s.normed);
            q.forward(&s.normed, n, &mut s.product, &mut s.q);
            s.sublayer.clear();
            s.sublayer.resize(n * d, 0.0);
            let decodes: Vec<&Joined> = ctx
                .states
                .iter()
                .map(|state| &state.cross[ctx.layer])
                .collect();
            cross_attention(
                &decodes,
                ctx.rows,
                &s.product,
                &mut s.sublayer,
                &mut s.cross,
            );
            out.forward(&s.sublayer, n, &mut s.product, &mut s.q);
            add(x, &s.product);
        }
        // Feed-forward.
        layer.ffn_norm.forward(x, &mut s.normed);
        layer.ffn_in.forward(&s.normed, n, &mut s.product, &mut s.q);
        gelu(&mut s.product);
        layer
            .ffn_out
            .forward(&s.product, n, &mut s.sublayer, &mut s.q);
        add(x, &s.sublayer);
    }
}

/// Per decoder layer, the cross-attention keys and values of the encoding of 30 s of
/// silence: a short encoding is padded to the 1500 frames the decoder was trained on with
/// their tail (the short window). Computed once per model, after loading: one 30 s encode.
pub struct Silence(Vec<Arc<CrossKv>>);

impl Silence {
    pub fn encode(w: &Weights) -> Self {
        let mut scratch = Scratch::default();
        let silence = vec![0.0; super::WINDOW_SAMPLES];
        let mut mel = super::mel::Mel::new(w.n_mels);
        let mut features = Vec::new();
        let frames = mel.compute(&silence, &mut features);
        let encoded = w.encode(&features, frames, &mut scratch);
        Self(
            w.cross_kv(&encoded, ENCODER_FRAMES)
                .into_iter()
                .map(|kv| Arc::new(CrossKv::silence(&kv, w.dim, w.heads)))
                .collect(),
        )
    }
}

/// The decodes a decoder layer's rows belong to: `rows[i]` rows of `states[i]`, in order.
struct DecoderCtx<'a, 'b> {
    layer: usize,
    states: &'a mut [&'b mut DecoderState],
    rows: &'a [usize],
}

/// Cross-attention keys and values over the encoder's frames, int8 with a scale per frame and
/// head: every decoded token reads all 1500 frames of every layer, so this is most of what a
/// token costs after the weights. A head's keys are packed as a matrix for int8 products with
/// the (quantised) query, as the layers' weights are.
struct CrossKv {
    heads: usize,
    dim: usize,
    /// Per head, `[frames][dim / heads]` packed.
    k: Vec<QMatrix>,
    /// Per head, the same unpacked and their scales (the silence's only: a decode's own
    /// frames are completed to a whole panel with them).
    k_rows: Vec<(Vec<i8>, Vec<f32>)>,
    /// `[frames][dim]`.
    v: Vec<i8>,
    /// `[frames][heads]`.
    v_scale: Vec<f32>,
}

impl CrossKv {
    /// Of the encoding of silence, from `[frames][2·dim]` (keys, then values, per frame).
    fn silence(kv: &[f32], dim: usize, heads: usize) -> Self {
        let frames = kv.len() / (2 * dim);
        let k_rows: Vec<_> = (0..heads)
            .map(|h| Self::head_keys(kv, dim, heads, h))
            .collect();
        let k = k_rows
            .iter()
            .map(|(q, s)| QMatrix::pack(q, s.clone(), dim / heads, None, Kernel::best()))
            .collect();
        let (v, v_scale) = Self::values(kv, dim, heads, frames);
        Self {
            heads,
            dim,
            k,
            k_rows,
            v,
            v_scale,
        }
    }

    /// Frames it holds.
    fn frames(&self) -> usize {
        self.v_scale.len() / self.heads
    }

    /// Head `h`'s keys of every frame, int8 per frame.
    fn head_keys(kv: &[f32], dim: usize, heads: usize, h: usize) -> (Vec<i8>, Vec<f32>) {
        let dh = dim / heads;
        let keys: Vec<f32> = kv
            .chunks_exact(2 * dim)
            .flat_map(|row| &row[h * dh..(h + 1) * dh])
            .copied()
            .collect();
        quantize_rows(&keys, dh)
    }

    /// The values of the first `frames` frames, int8 per frame and head.
    fn values(kv: &[f32], dim: usize, heads: usize, frames: usize) -> (Vec<i8>, Vec<f32>) {
        let values: Vec<f32> = kv
            .chunks_exact(2 * dim)
            .take(frames)
            .flat_map(|row| &row[dim..])
            .copied()
            .collect();
        quantize_rows(&values, dim / heads)
    }

    /// One query row (`dim`) attending over every frame, per head, into `out` (`dim`): the
    /// definition [`cross_attention`] keeps to.
    #[cfg(test)]
    fn attend(&self, q: &[f32], out: &mut [f32], scores: &mut Vec<f32>, acts: &mut QActs) {
        let dh = self.dim / self.heads;
        let scale = 1.0 / (dh as f32).sqrt();
        for (h, keys) in self.k.iter().enumerate() {
            keys.forward(&q[h * dh..(h + 1) * dh], 1, scores, acts);
            scores.iter_mut().for_each(|s| *s *= scale);
            softmax(scores);
            out[h * dh..(h + 1) * dh].fill(0.0);
            self.weigh_values(h, 0, scores, &mut out[h * dh..(h + 1) * dh]);
        }
    }

    /// `out += Σ p_j · v_j` over head `h`'s values of frames `from..from + p.len()`, in
    /// their order; with AVX2 and FMA where the CPU has them.
    fn weigh_values(&self, h: usize, from: usize, p: &[f32], out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has the features the function is compiled for.
            unsafe { self.weigh_values_avx2(h, from, p, out) };
            return;
        }
        self.weigh_values_any(h, from, p, out);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn weigh_values_avx2(&self, h: usize, from: usize, p: &[f32], out: &mut [f32]) {
        self.weigh_values_any(h, from, p, out);
    }

    #[inline(always)]
    fn weigh_values_any(&self, h: usize, from: usize, p: &[f32], out: &mut [f32]) {
        let dh = self.dim / self.heads;
        for (j, p) in (from..).zip(p) {
            let vj = &self.v[j * self.dim + h * dh..j * self.dim + (h + 1) * dh];
            let a = p * self.v_scale[j * self.heads + h];
            for (y, x) in out.iter_mut().zip(vj) {
                *y += a * f32::from(*x);
            }
        }
    }

    /// The silence's values from frame `starts[r]` on, weighed by row `r`'s probabilities
    /// (`probs`: `[rows][frames]`) and added to its head `h` in `out` (`[rows][dim]`):
    /// every row at once, each value converted to `f32` once for all of them. Each row's
    /// sums run in its frames' order, as [`CrossKv::weigh_values`]'s do.
    fn weigh_values_from(
        &self,
        h: usize,
        probs: &[f32],
        starts: &[usize],
        out: &mut [f32],
        value: &mut Vec<f32>,
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has the features the function is compiled for.
            unsafe { self.weigh_values_from_avx2(h, probs, starts, out, value) };
            return;
        }
        self.weigh_values_from_any(h, probs, starts, out, value);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn weigh_values_from_avx2(
        &self,
        h: usize,
        probs: &[f32],
        starts: &[usize],
        out: &mut [f32],
        value: &mut Vec<f32>,
    ) {
        self.weigh_values_from_any(h, probs, starts, out, value);
    }

    #[inline(always)]
    fn weigh_values_from_any(
        &self,
        h: usize,
        probs: &[f32],
        starts: &[usize],
        out: &mut [f32],
        value: &mut Vec<f32>,
    ) {
        let (dim, heads, frames) = (self.dim, self.heads, self.frames());
        let dh = dim / heads;
        let Some(&first) = starts.iter().min() else {
            return;
        };
        if let [start] = starts {
            // One row converts each value once anyway.
            let p = &probs[*start..frames];
            self.weigh_values(h, *start, p, &mut out[h * dh..(h + 1) * dh]);
            return;
        }
        value.clear();
        value.resize(dh, 0.0);
        for j in first..frames {
            let vj = &self.v[j * dim + h * dh..j * dim + (h + 1) * dh];
            for (f, &x) in value.iter_mut().zip(vj) {
                *f = f32::from(x);
            }
            let scale = self.v_scale[j * heads + h];
            for (r, &start) in starts.iter().enumerate() {
                if j < start {
                    continue;
                }
                let a = probs[r * frames + j] * scale;
                let o = &mut out[r * dim + h * dh..r * dim + (h + 1) * dh];
                for (y, &f) in o.iter_mut().zip(value.iter()) {
                    *y += a * f;
                }
            }
        }
    }
}

/// A decode's cross-attention keys and values in one layer: its encoding's own frames,
/// then the model's silence up to 1500 (the short window), which every decode shares
/// rather than copies.
struct Joined {
    /// The decode's frames: keys packed to a whole panel (`whole` frames) with the
    /// silence's next ones, values of its `own` frames alone.
    kv: CrossKv,
    own: usize,
    whole: usize,
    /// Keys from frame `whole` on, values from `own` on.
    silence: Arc<CrossKv>,
}

impl Joined {
    /// A short encoding's (`[own][2·dim]`), then `silence`'s frames after it.
    fn new(kv: &[f32], silence: &Arc<CrossKv>) -> Self {
        let (dim, heads) = (silence.dim, silence.heads);
        let (own, frames) = (kv.len() / (2 * dim), silence.frames());
        let whole = own.next_multiple_of(NR).min(frames);
        let k = (0..heads)
            .map(|h| {
                let (mut q, mut s) = CrossKv::head_keys(kv, dim, heads, h);
                let (sq, ss) = &silence.k_rows[h];
                q.extend_from_slice(&sq[own * dim / heads..whole * dim / heads]);
                s.extend_from_slice(&ss[own..whole]);
                QMatrix::pack(&q, s, dim / heads, None, Kernel::best())
            })
            .collect();
        let (v, v_scale) = CrossKv::values(kv, dim, heads, own);
        Self {
            kv: CrossKv {
                heads,
                dim,
                k,
                k_rows: Vec::new(),
                v,
                v_scale,
            },
            own,
            whole,
            silence: Arc::clone(silence),
        }
    }
}

/// Buffers of [`cross_attention`].
#[derive(Default)]
struct CrossScratch {
    /// One head's queries, `[rows][dim / heads]`.
    queries: Vec<f32>,
    /// A decode's scores over its own keys; every row's over the silence's.
    own: Vec<f32>,
    tail: Vec<f32>,
    /// Every row's probabilities over all frames, `[rows][frames]`.
    probs: Vec<f32>,
    /// Per row, the frame its silence's values start at.
    starts: Vec<usize>,
    value: Vec<f32>,
    acts: QActs,
}

/// Cross-attention of `rows[i]` query rows of each of `decodes[i]` (`q`: `[n][dim]`) into
/// `out` (`[n][dim]`). Most of a short utterance's 1500 frames are the silence every decode
/// shares, so its keys are multiplied with every row's query in one product and its values
/// weighed for every row at once, rather than a row at a time over copies of them. Each
/// row's numbers are the ones it gets attending alone over its frames joined whole
/// ([`CrossKv::attend`]).
fn cross_attention(
    decodes: &[&Joined],
    rows: &[usize],
    q: &[f32],
    out: &mut [f32],
    s: &mut CrossScratch,
) {
    let Some(first) = decodes.first() else {
        return;
    };
    let silence = &first.silence;
    assert!(
        decodes.iter().all(|j| Arc::ptr_eq(&j.silence, silence)),
        "a batch's decodes are one model's"
    );
    let (dim, heads, frames) = (silence.dim, silence.heads, silence.frames());
    let dh = dim / heads;
    let n: usize = rows.iter().sum();
    let scale = 1.0 / (dh as f32).sqrt();
    // The silence's keys from the earliest panel any decode reads them from.
    let tail = decodes
        .iter()
        .filter(|j| j.whole < frames)
        .map(|j| j.whole / NR)
        .min();
    let from = tail.map_or(frames, |p| p * NR);
    let width = frames - from;
    s.starts.clear();
    for (j, &nr) in decodes.iter().zip(rows) {
        s.starts.extend(std::iter::repeat_n(j.own, nr));
    }
    // Each row and its decode's own keys and values.
    let owns: Vec<(usize, &CrossKv)> = decodes
        .iter()
        .zip(rows)
        .flat_map(|(j, &nr)| std::iter::repeat_n(&j.kv, nr))
        .enumerate()
        .collect();
    // Every head writes each row's probabilities whole: its own scores, then the silence's.
    s.probs.clear();
    s.probs.resize(n * frames, 0.0);
    for h in 0..heads {
        s.queries.clear();
        for row in q.chunks_exact(dim).take(n) {
            s.queries.extend_from_slice(&row[h * dh..(h + 1) * dh]);
        }
        if let Some(panel) = tail {
            silence.k[h].forward_from(&s.queries, n, panel, &mut s.tail, &mut s.acts);
        }
        let mut r0 = 0;
        for (j, &nr) in decodes.iter().zip(rows) {
            let queries = &s.queries[r0 * dh..(r0 + nr) * dh];
            j.kv.k[h].forward(queries, nr, &mut s.own, &mut s.acts);
            for r in 0..nr {
                let row = r0 + r;
                let p = &mut s.probs[row * frames..(row + 1) * frames];
                p[..j.whole].copy_from_slice(&s.own[r * j.whole..(r + 1) * j.whole]);
                if j.whole < frames {
                    p[j.whole..]
                        .copy_from_slice(&s.tail[row * width + j.whole - from..(row + 1) * width]);
                }
                p.iter_mut().for_each(|v| *v *= scale);
            }
            r0 += nr;
        }
        softmax_rows(&mut s.probs, frames);
        weigh_head_values(h, &owns, silence, &s.probs, &s.starts, out, &mut s.value);
    }
}

/// Every row's values of head `h` weighed by its probabilities (`probs`: `[rows][frames]`)
/// into `out` (`[rows][dim]`): row `r`'s own frames (`owns[r]`: the row and its decode's
/// keys and values), then the silence's from `starts[r]` on, each row's sum in its frames'
/// order. With AVX-512 and Whisper's 64 a head, rows are taken four at a time with their
/// sums held in registers ([`weigh_block`]); otherwise a row's own frames alone, then the
/// silence's for every row at once ([`CrossKv::weigh_values_from`]). The two give the same
/// bits.
fn weigh_head_values(
    h: usize,
    owns: &[(usize, &CrossKv)],
    silence: &CrossKv,
    probs: &[f32],
    starts: &[usize],
    out: &mut [f32],
    value: &mut Vec<f32>,
) {
    let (dim, heads, frames) = (silence.dim, silence.heads, silence.frames());
    let dh = dim / heads;
    #[cfg(target_arch = "x86_64")]
    if dh == HEAD
        && std::arch::is_x86_feature_detected!("avx512f")
        && crate::wide::allows(crate::wide::Path::Avx512)
    {
        for block in owns.chunks(4) {
            // SAFETY: the CPU has AVX-512F.
            unsafe {
                match *block {
                    [a, b, c, d] => weigh_block(h, [a, b, c, d], probs, silence, out),
                    [a, b, c] => weigh_block(h, [a, b, c], probs, silence, out),
                    [a, b] => weigh_block(h, [a, b], probs, silence, out),
                    _ => block
                        .iter()
                        .for_each(|&a| weigh_block(h, [a], probs, silence, out)),
                }
            }
        }
        return;
    }
    for &(row, own) in owns {
        let p = &probs[row * frames..(row + 1) * frames];
        let o = &mut out[row * dim + h * dh..row * dim + (h + 1) * dh];
        o.fill(0.0);
        own.weigh_values(h, 0, &p[..own.frames()], o);
    }
    silence.weigh_values_from(h, probs, starts, out, value);
}

/// Whisper's width of a head (every size: 384 / 6 … 1280 / 20).
const HEAD: usize = 64;

/// Rows `rows[r].0` (their own frames' values `rows[r].1`) of head `h` weighed into `out`:
/// each row's 64 sums kept in four registers over its own frames, then over the silence's
/// for the `R` rows at once, every silence value converted once for them. Each product and
/// sum is [`CrossKv::weigh_values`]'s, in its order (a multiply, then an add: no fused
/// multiply-add, which rounds once).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(
    clippy::needless_range_loop,
    reason = "frames index the probabilities and values"
)]
fn weigh_block<const R: usize>(
    h: usize,
    rows: [(usize, &CrossKv); R],
    probs: &[f32],
    silence: &CrossKv,
    out: &mut [f32],
) {
    use std::arch::x86_64::*;
    let (dim, heads, frames) = (silence.dim, silence.heads, silence.frames());
    let lo = h * HEAD;
    let ps: [&[f32]; R] = std::array::from_fn(|r| &probs[rows[r].0 * frames..][..frames]);
    let mut acc = [[_mm512_setzero_ps(); 4]; R];
    for (r, &(_, own)) in rows.iter().enumerate() {
        let p = ps[r];
        for j in 0..own.frames() {
            let a = _mm512_set1_ps(p[j] * own.v_scale[j * heads + h]);
            let x = head_values(&own.v[j * dim + lo..j * dim + lo + HEAD]);
            for (acc, x) in acc[r].iter_mut().zip(x) {
                *acc = _mm512_add_ps(*acc, _mm512_mul_ps(a, x));
            }
        }
    }
    let starts: [usize; R] = std::array::from_fn(|r| rows[r].1.frames());
    let first = starts.iter().copied().min().unwrap_or(frames);
    for j in first..frames {
        let x = head_values(&silence.v[j * dim + lo..j * dim + lo + HEAD]);
        let scale = silence.v_scale[j * heads + h];
        for r in 0..R {
            if j >= starts[r] {
                let a = _mm512_set1_ps(ps[r][j] * scale);
                for (acc, &x) in acc[r].iter_mut().zip(&x) {
                    *acc = _mm512_add_ps(*acc, _mm512_mul_ps(a, x));
                }
            }
        }
    }
    for (r, &(row, _)) in rows.iter().enumerate() {
        let o = &mut out[row * dim + lo..row * dim + lo + HEAD];
        for (o, acc) in o.chunks_exact_mut(16).zip(acc[r]) {
            // SAFETY: `o` is 16 floats.
            unsafe { _mm512_storeu_ps(o.as_mut_ptr(), acc) };
        }
    }
}

/// A head's 64 int8 values as four vectors of `f32` (exact).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn head_values(v: &[i8]) -> [std::arch::x86_64::__m512; 4] {
    use std::arch::x86_64::*;
    assert_eq!(v.len(), HEAD);
    std::array::from_fn(|q| {
        // SAFETY: 16 bytes from `16·q` of 64.
        let bytes = unsafe { _mm_loadu_si128(v.as_ptr().add(16 * q).cast()) };
        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes))
    })
}

/// One decode's keys and values: cross-attention (fixed) and self-attention (growing).
#[derive(Clone)]
pub struct DecoderState {
    /// Shared by a beam's hypotheses, which differ only in the tokens they decoded.
    cross: Arc<Vec<Joined>>,
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<f32>>,
    len: usize,
}

impl DecoderState {
    /// Forgets every token after the first `len`: a draft's tokens the model did not choose.
    pub fn truncate(&mut self, len: usize, dim: usize) {
        if len >= self.len {
            return;
        }
        for kv in self.keys.iter_mut().chain(self.values.iter_mut()) {
            kv.truncate(len * dim);
        }
        self.len = len;
    }
}

/// Buffers reused across layers and decodes.
#[derive(Default)]
pub struct Scratch {
    /// A layer norm's output, the input of its sublayer's products (in the encoder's
    /// convolutions, their unfolded input columns).
    normed: Vec<f32>,
    /// The latest product's output: fused query, key and value; a query; the feed-forward
    /// layer's hidden units; an output projection before the residual add.
    product: Vec<f32>,
    /// A sublayer's output before its projection or residual add: the heads' attention,
    /// the feed-forward layer's output.
    sublayer: Vec<f32>,
    /// Attention scores of one head.
    scores: Vec<f32>,
    /// Activations quantised for the int8 products.
    q: QActs,
    cross: CrossScratch,
}

/// Multi-head attention of `n` queries over `keys` rows; `causal_from`: query `i` sees
/// keys up to `causal_from + i`. Writes `[n][dim]` into `out`.
#[allow(clippy::too_many_arguments)]
fn attention(
    heads: usize,
    dim: usize,
    n: usize,
    q: MatRef<'_>,
    keys: usize,
    k: MatRef<'_>,
    v: MatRef<'_>,
    causal_from: Option<usize>,
    out: &mut [f32],
    scores: &mut Vec<f32>,
) {
    let dh = dim / heads;
    let scale = 1.0 / (dh as f32).sqrt();
    scores.clear();
    scores.resize(n * keys, 0.0);
    for h in 0..heads {
        matmul(
            n,
            keys,
            dh,
            Mat::new(scores, keys, 1),
            false,
            q.offset(h * dh),
            // Keys transposed: element (depth, key) at key·rs + depth.
            MatRef {
                data: &k.data[h * dh..],
                rs: k.cs,
                cs: k.rs,
            },
            scale,
        );
        match causal_from {
            // Every row sees every key (the encoder's frames): their sums side by side.
            None => softmax_rows(scores, keys),
            Some(c) => {
                for (i, row) in scores.chunks_exact_mut(keys).enumerate() {
                    let visible = (c + i + 1).min(keys);
                    softmax(&mut row[..visible]);
                    row[visible..].fill(0.0);
                }
            }
        }
        matmul(
            n,
            dh,
            keys,
            Mat::new(&mut out[h * dh..], dim, 1),
            false,
            MatRef::new(scores, keys, 1),
            v.offset(h * dh),
            1.0,
        );
    }
}

widest! {
    /// Each row of `rows` (`[n][width]`) made probabilities: the exponentials in a pass of
    /// their own, each row's sum in its order, the rows' sums side by side
    /// ([`exps_side_by_side`]): over 1,500 frames per head, per layer and token (and over an
    /// encoding's frames for each of its frames), one sum's wait for its last add was most
    /// of a softmax.
    fn softmax_rows(rows: &mut [f32], width: usize) {
        if width == 0 {
            return;
        }
        for block in rows.chunks_mut(SIDE * width) {
            let mut maxes = [0.0; SIDE];
            for (max, row) in maxes.iter_mut().zip(block.chunks_exact(width)) {
                *max = lanes_max(row);
            }
            let sums = exps_side_by_side(block, width, &maxes);
            for (row, sum) in block.chunks_exact_mut(width).zip(sums) {
                let inv = 1.0 / sum;
                row.iter_mut().for_each(|v| *v *= inv);
            }
        }
    }
}

widest! {
    /// Each row of `rows` (`[n][width]`) left holding `exp(x − maxes[r])`, and their sums
    /// into `sums` ([`exps_side_by_side`]): the vocabulary's normaliser for every row of a
    /// greedy step and every hypothesis of a beam.
    pub(super) fn exp_sums_in_place(rows: &mut [f32], width: usize, maxes: &[f32], sums: &mut Vec<f32>) {
        sums.clear();
        if width == 0 {
            return;
        }
        debug_assert_eq!(maxes.len(), rows.len() / width, "a maximum for every row");
        for (block, maxes) in rows.chunks_mut(SIDE * width).zip(maxes.chunks(SIDE)) {
            let n = block.len() / width;
            sums.extend_from_slice(&exps_side_by_side(block, width, maxes)[..n]);
        }
    }
}

/// The (up to [`SIDE`]) rows of `block` (`[n][width]`) each left holding `exp(x − max)`
/// with its `maxes[r]`, and their sums ([`sums_side_by_side`]).
#[inline(always)]
fn exps_side_by_side(block: &mut [f32], width: usize, maxes: &[f32]) -> [f32; SIDE] {
    for (row, &max) in block.chunks_exact_mut(width).zip(maxes) {
        row.iter_mut().for_each(|x| *x = exp(*x - max));
    }
    sums_side_by_side(block, width)
}

/// Rows summed side by side in [`sums_side_by_side`].
const SIDE: usize = 8;

/// The sums of the (up to [`SIDE`]) rows of `block` (`[n][width]`), each in its row's
/// order as `iter().sum()` takes it (from −0), but the rows' adds interleaved: a sum's next
/// add waits for its last, and up to eight rows keep as many in flight (a block short of a
/// power of two is padded with its first row, whose extra sums are dropped).
#[inline(always)]
fn sums_side_by_side(block: &[f32], width: usize) -> [f32; SIDE] {
    let mut sums = [-0.0f32; SIDE];
    let mut rows: [&[f32]; SIDE] = [&[]; SIDE];
    let mut n = 0;
    if width > 0 {
        for (slot, row) in rows.iter_mut().zip(block.chunks_exact(width)) {
            *slot = row;
            n += 1;
        }
    }
    let row = |k: usize| if k < n { rows[k] } else { rows[0] };
    match n {
        0 => {}
        1 => sums[0] = rows[0].iter().sum(),
        2 => sums[..2].copy_from_slice(&side([row(0), row(1)], width)),
        3 | 4 => sums[..4].copy_from_slice(&side(std::array::from_fn::<_, 4, _>(row), width)),
        _ => sums = side(std::array::from_fn(row), width),
    }
    sums
}

/// [`sums_side_by_side`] of `K` rows of `width`.
#[inline(always)]
#[allow(
    clippy::needless_range_loop,
    reason = "the rows are read at one index together"
)]
fn side<const K: usize>(rows: [&[f32]; K], width: usize) -> [f32; K] {
    let rows = rows.map(|r| &r[..width]);
    let mut sums = [-0.0f32; K];
    for i in 0..width {
        for k in 0..K {
            sums[k] += rows[k][i];
        }
    }
    sums
}

/// `row` made probabilities ([`softmax_rows`] of one row: its sum in its order).
fn softmax(row: &mut [f32]) {
    softmax_rows(row, row.len());
}

/// `eˣ` within (2 + |x|)·1e-7 relative, branch-free so a loop of it vectorises (libm's `expf` does
/// not, and softmax over 1,500 frames per head per token made it a tenth of a decode);
/// `x` is taken as -87 below it (e⁻⁸⁷ ≈ 1.6e-38) and 88 above (its callers pass x ≤ 0).
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    // 2^(x·log2 e) = 2^n · 2^f, n an integer, |f| ≤ 0.5.
    const ROUND: f32 = 12_582_912.0; // 1.5·2^23: adding it rounds to an integer.
    let t = x.clamp(-87.0, 88.0) * std::f32::consts::LOG2_E;
    let k = t + ROUND;
    let n = k - ROUND;
    let f = t - n;
    let p = 1.0
        + f * (std::f32::consts::LN_2
            + f * (0.240_226_5
                + f * (0.055_504_11
                    + f * (0.009_618_129 + f * (0.001_333_355 + f * 0.000_154_035)))));
    let two_n = ((k.to_bits() as i32 - ROUND.to_bits() as i32 + 127) << 23) as u32;
    p * f32::from_bits(two_n)
}

widest! {
    /// The largest of `xs` (NaNs passed over, as `f32::max` does), taken in lanes so the loop
    /// vectorises: a maximum is the same whatever order it is taken in (but for a zero's sign,
    /// which neither `x - max` nor `max + y` can show).
    pub(super) fn max_of(xs: &[f32]) -> f32 {
        lanes_max(xs)
    }
}

#[inline(always)]
fn lanes_max(xs: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (m, &x) in lanes.iter_mut().zip(chunk) {
            *m = m.max(x);
        }
    }
    lanes
        .into_iter()
        .chain(rest.iter().copied())
        .fold(f32::NEG_INFINITY, f32::max)
}

widest! {
    /// `Σ exp(xᵢ − max)` in `xs`'s order, each `xs[i]` left holding its exponential. The
    /// exponentials are taken in a pass of their own, which vectorises, and only the sum runs
    /// in order, so it is the fused loop's sum to the bit (a float sum cannot be reordered, and
    /// a loop that sums as it goes takes every `exp` one at a time). One row's: the decoders
    /// take their rows together ([`exp_sums_in_place`]), and the tests hold them to this.
    #[cfg(test)]
    fn exp_sum_in_place(xs: &mut [f32], max: f32) -> f32 {
        for x in xs.iter_mut() {
            *x = exp(*x - max);
        }
        xs.iter().sum()
    }
}

widest! {
    fn add(x: &mut [f32], y: &[f32]) {
        x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
    }
}

widest! {
    /// GELU with the exact error function (PyTorch's default, which Whisper uses).
    fn gelu(x: &mut [f32]) {
        for v in x.iter_mut() {
            *v = 0.5 * *v * (1.0 + erf(*v / std::f32::consts::SQRT_2));
        }
    }
}

/// Abramowitz and Stegun 7.1.26 (error under 1.5e-7).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let sign = x.signum();
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = 1.0
        - (((((1.061_405_4 * t - 1.453_152_1) * t) + 1.421_413_7) * t - 0.284_496_74) * t
            + 0.254_829_6)
            * t
            * exp(-x * x);
    sign * y
}

/// A read-only matrix view: element `(r, c)` at `data[r·rs + c·cs]`.
#[derive(Clone, Copy)]
struct MatRef<'a> {
    data: &'a [f32],
    rs: usize,
    cs: usize,
}

impl<'a> MatRef<'a> {
    fn new(data: &'a [f32], rs: usize, cs: usize) -> Self {
        Self { data, rs, cs }
    }

    fn offset(self, by: usize) -> Self {
        Self {
            data: &self.data[by..],
            ..self
        }
    }

    /// Whether every element of a `rows × cols` view lies inside the slice.
    fn covers(&self, rows: usize, cols: usize) -> bool {
        rows == 0 || cols == 0 || (rows - 1) * self.rs + (cols - 1) * self.cs < self.data.len()
    }
}

struct Mat<'a> {
    data: &'a mut [f32],
    rs: usize,
    cs: usize,
}

impl<'a> Mat<'a> {
    fn new(data: &'a mut [f32], rs: usize, cs: usize) -> Self {
        Self { data, rs, cs }
    }
}

/// `dst (m×n) = [dst +] scale · lhs (m×k) · rhs (k×n)`, on the calling thread.
#[allow(clippy::too_many_arguments)]
fn matmul(
    m: usize,
    n: usize,
    k: usize,
    dst: Mat<'_>,
    accumulate: bool,
    lhs: MatRef<'_>,
    rhs: MatRef<'_>,
    scale: f32,
) {
    let dst_ok = MatRef::new(dst.data, dst.rs, dst.cs).covers(m, n);
    assert!(
        dst_ok && lhs.covers(m, k) && rhs.covers(k, n),
        "matrix views out of bounds"
    );
    // SAFETY: every element each view is read or written at lies inside its slice
    // (checked just above); `dst` is borrowed mutably, so it aliases neither input.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.data.as_mut_ptr(),
            dst.cs as isize,
            dst.rs as isize,
            accumulate,
            lhs.data.as_ptr(),
            lhs.cs as isize,
            lhs.rs as isize,
            rhs.data.as_ptr(),
            rhs.cs as isize,
            rhs.rs as isize,
            1.0,
            scale,
            false,
            false,
            false,
            Parallelism::None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Short encodings' keys and values joined onto the silence's (their own frames packed
    /// to a whole panel with the silence's next ones, the silence's later frames shared),
    /// attended in one batch, one to three rows each, give each row exactly what it gets
    /// attending alone over the joined frames packed whole, whether an encoding ends inside
    /// a panel or on its edge, or fills every frame.
    /// (Heads of 8 and of Whisper's 64, on every path this CPU has: AVX-512 weighs a head of
    /// 64 four rows at a time.)
    #[test]
    fn short_encodings_joined_to_the_shared_silence_attend_as_if_packed_whole() {
        crate::wide::on_every_path(|path| {
            for dim in [16, 2 * HEAD] {
                joined_encodings_attend_as_if_packed_whole(dim, path);
            }
        });
    }

    fn joined_encodings_attend_as_if_packed_whole(dim: usize, path: crate::wide::Path) {
        // Not whole panels, as 1500 frames are not.
        let (heads, frames) = (2, 5 * NR - 5);
        let mut rng = fastrand::Rng::with_seed(11);
        let mut random = |n: usize| -> Vec<f32> { (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect() };
        let silence_kv = random(frames * 2 * dim);
        let silence = Arc::new(CrossKv::silence(&silence_kv, dim, heads));
        let lengths = [1, NR - 1, NR, 2 * NR + 3, frames];
        let owns: Vec<Vec<f32>> = lengths.iter().map(|&l| random(l * 2 * dim)).collect();
        let rows = [1, 3, 1, 2, 1];
        let queries = random(rows.iter().sum::<usize>() * dim);
        let joined: Vec<Joined> = owns.iter().map(|own| Joined::new(own, &silence)).collect();
        for batch in [
            &[0, 1, 2, 3, 4][..],
            &[3],
            &[4],
            &[2, 0],
            &[0],
            &[2],
            &[1],
            &[1, 3, 0],
        ] {
            let decodes: Vec<&Joined> = batch.iter().map(|&i| &joined[i]).collect();
            let batch_rows: Vec<usize> = batch.iter().map(|&i| rows[i]).collect();
            let first_row = |i: usize| rows[..i].iter().sum::<usize>();
            let q: Vec<f32> = batch
                .iter()
                .flat_map(|&i| &queries[first_row(i) * dim..(first_row(i) + rows[i]) * dim])
                .copied()
                .collect();
            let mut got = vec![0.0; q.len()];
            let mut scratch = CrossScratch::default();
            cross_attention(&decodes, &batch_rows, &q, &mut got, &mut scratch);
            let (mut scores, mut acts) = (Vec::new(), QActs::default());
            let mut row = 0;
            for &i in batch {
                let own = lengths[i];
                let whole = [&owns[i][..], &silence_kv[own * 2 * dim..]].concat();
                let want = CrossKv::silence(&whole, dim, heads);
                for _ in 0..rows[i] {
                    let mut want_out = vec![0.0; dim];
                    want.attend(
                        &q[row * dim..(row + 1) * dim],
                        &mut want_out,
                        &mut scores,
                        &mut acts,
                    );
                    assert_eq!(
                        got[row * dim..(row + 1) * dim],
                        want_out[..],
                        "{own} frames of its own, in a batch of {batch:?}, {dim} wide ({path:?})"
                    );
                    row += 1;
                }
            }
        }
    }

    /// A CTranslate2 file (binary version 6) of `f32` tensors and `i32` scalars.
    fn model_file(tensors: &[(String, Vec<usize>)], scalars: &[(&str, i32)]) -> Vec<u8> {
        fn string(out: &mut Vec<u8>, s: &str) {
            out.extend(((s.len() + 1) as u16).to_le_bytes());
            out.extend(s.as_bytes());
            out.push(0);
        }
        let mut b = Vec::new();
        b.extend(6u32.to_le_bytes());
        string(&mut b, "WhisperSpec");
        b.extend(1u32.to_le_bytes());
        b.extend(((tensors.len() + scalars.len()) as u32).to_le_bytes());
        for (name, shape) in tensors {
            string(&mut b, name);
            b.push(shape.len() as u8);
            shape
                .iter()
                .for_each(|d| b.extend((*d as u32).to_le_bytes()));
            let n: usize = shape.iter().product();
            b.push(0);
            b.extend(((n * 4) as u32).to_le_bytes());
            (0..n).for_each(|i| b.extend(((i % 7) as f32 * 0.01).to_le_bytes()));
        }
        for (name, v) in scalars {
            string(&mut b, name);
            b.push(0);
            b.push(3);
            b.extend(4u32.to_le_bytes());
            b.extend(v.to_le_bytes());
        }
        b.extend(0u32.to_le_bytes());
        b
    }

    /// The tensors of a Whisper 4 wide, one layer each side, 8 tokens.
    fn tiny_whisper(d: usize) -> Vec<(String, Vec<usize>)> {
        let mut t: Vec<(String, Vec<usize>)> = vec![
            ("encoder/conv1/weight".into(), vec![d, 80, 3]),
            ("encoder/conv1/bias".into(), vec![d]),
            ("encoder/conv2/weight".into(), vec![d, d, 3]),
            ("encoder/conv2/bias".into(), vec![d]),
            ("encoder/position_encodings/encodings".into(), vec![1500, d]),
            ("decoder/embeddings/weight".into(), vec![8, d]),
            ("decoder/position_encodings/encodings".into(), vec![16, d]),
        ];
        let norm = |t: &mut Vec<(String, Vec<usize>)>, p: &str| {
            t.push((format!("{p}/gamma"), vec![d]));
            t.push((format!("{p}/beta"), vec![d]));
        };
        norm(&mut t, "encoder/layer_norm");
        norm(&mut t, "decoder/layer_norm");
        for side in ["encoder", "decoder"] {
            let p = format!("{side}/layer_0");
            norm(&mut t, &format!("{p}/self_attention/layer_norm"));
            norm(&mut t, &format!("{p}/ffn/layer_norm"));
            let mut linear = |name: String, out: usize, inp: usize| {
                t.push((format!("{name}/weight"), vec![out, inp]));
                t.push((format!("{name}/bias"), vec![out]));
            };
            linear(format!("{p}/self_attention/linear_0"), 3 * d, d);
            linear(format!("{p}/self_attention/linear_1"), d, d);
            linear(format!("{p}/ffn/linear_0"), 2 * d, d);
            linear(format!("{p}/ffn/linear_1"), d, 2 * d);
            if side == "decoder" {
                linear(format!("{p}/attention/linear_0"), d, d);
                linear(format!("{p}/attention/linear_1"), 2 * d, d);
                linear(format!("{p}/attention/linear_2"), d, d);
                norm(&mut t, &format!("{p}/attention/layer_norm"));
            }
        }
        t
    }

    /// A model file of the wrong shape is refused at load, naming the tensor, not a panic
    /// in the loader or a decode.
    #[test]
    fn a_model_of_the_wrong_shape_is_an_error_at_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.bin");
        let load = |tensors: &[(String, Vec<usize>)]| {
            std::fs::write(&path, model_file(tensors, &[("encoder/num_heads", 2)])).unwrap();
            Weights::load(&path)
                .map(|w| w.dim)
                .map_err(|e| e.to_string())
        };
        assert_eq!(load(&tiny_whisper(4)), Ok(4));
        for (name, shape) in [
            ("decoder/layer_0/ffn/linear_1/weight", vec![4, 9]),
            (
                "encoder/layer_0/self_attention/linear_0/weight",
                vec![12, 5],
            ),
            ("decoder/layer_0/attention/linear_1/weight", vec![8, 5]),
            ("encoder/conv2/weight", vec![4, 5, 3]),
            ("decoder/embeddings/weight", vec![8, 5]),
            ("encoder/layer_norm/gamma", vec![3]),
        ] {
            let mut tensors = tiny_whisper(4);
            tensors.iter_mut().find(|(n, _)| n == name).unwrap().1 = shape;
            let err = load(&tensors).unwrap_err();
            assert!(err.starts_with("unexpected Whisper shape"), "{name}: {err}");
        }
        let zero_wide = tiny_whisper(0);
        assert!(load(&zero_wide).is_err());
    }

    #[test]
    fn exp_is_libms_within_its_bound() {
        for i in -8700..=8700 {
            let x = i as f32 / 100.0 + 0.003;
            let (want, got) = (x.exp(), exp(x));
            assert!(
                (got - want).abs() <= (2.0 + x.abs()) * 1e-7 * want,
                "exp({x}) = {got}, not {want}"
            );
        }
        assert!(exp(f32::NEG_INFINITY) < 1e-37 && exp(f32::NEG_INFINITY) >= 0.0);
        assert!(exp(f32::INFINITY).is_finite() && exp(100.0) > 1e38);
    }

    #[test]
    fn the_lanes_maximum_and_the_split_sum_are_the_sequential_ones_to_the_bit() {
        let mut seed = 11u32;
        for len in [0, 1, 15, 16, 17, 1000, 51_864] {
            let mut xs: Vec<f32> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    (seed >> 8) as f32 / (1u32 << 24) as f32 * 40.0 - 30.0
                })
                .collect();
            if len > 100 {
                xs[7] = f32::NEG_INFINITY;
            }
            let max = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            assert_eq!(max_of(&xs).to_bits(), max.to_bits(), "{len} values");
            let fused: f32 = xs.iter().map(|x| exp(x - max)).sum();
            let mut split = xs.clone();
            let sum = exp_sum_in_place(&mut split, max);
            assert_eq!(sum.to_bits(), fused.to_bits(), "{len} values");
            for (x, e) in xs.iter().zip(&split) {
                assert_eq!(e.to_bits(), exp(x - max).to_bits());
            }
        }
    }

    /// The element-wise loops, on every path this CPU has (baseline, AVX2, AVX-512), against
    /// their definitions taken one value at a time (`black_box` keeps them scalar).
    #[test]
    fn the_widest_loops_give_the_definitions_bits_on_every_path() {
        crate::wide::on_every_path(the_loops_give_the_definitions_bits);
    }

    fn the_loops_give_the_definitions_bits(path: crate::wide::Path) {
        use std::hint::black_box;
        let mut rng = fastrand::Rng::with_seed(5);
        let shapes = [
            (1, 1),
            (3, 7),
            (2, 16),
            (5, 67),
            (4, 384),
            (1, 1500),
            (8, 33),
            (19, 150),
        ];
        for (rows, d) in shapes {
            let x: Vec<f32> = (0..rows * d).map(|_| rng.f32() * 12.0 - 6.0).collect();
            let y: Vec<f32> = (0..rows * d).map(|_| rng.f32() * 2.0 - 1.0).collect();
            let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();

            let mut got = x.clone();
            gelu(&mut got);
            let want: Vec<f32> = x
                .iter()
                .map(|&v| black_box(0.5 * v * (1.0 + erf(black_box(v / std::f32::consts::SQRT_2)))))
                .collect();
            assert_eq!(bits(&got), bits(&want), "gelu, {rows}×{d} ({path:?})");

            let mut got = x.clone();
            add(&mut got, &y);
            let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| black_box(a + b)).collect();
            assert_eq!(bits(&got), bits(&want), "add, {rows}×{d} ({path:?})");

            let (gamma, beta) = (&y[..d], &x[..d]);
            let mut got = vec![0.0; rows * d];
            layer_norm(&x, gamma, beta, &mut got);
            let mut want = Vec::new();
            for row in x.chunks_exact(d) {
                let mean = row.iter().fold(0.0, |s, &v| black_box(s + v)) / d as f32;
                let var = row
                    .iter()
                    .fold(0.0, |s, &v| black_box(s + (v - mean) * (v - mean)))
                    / d as f32;
                let inv = 1.0 / (var + 1e-5).sqrt();
                for i in 0..d {
                    want.push(black_box((row[i] - mean) * inv * gamma[i] + beta[i]));
                }
            }
            assert_eq!(bits(&got), bits(&want), "layer norm, {rows}×{d} ({path:?})");

            let mut got = x.clone();
            got.chunks_exact_mut(d).for_each(softmax);
            let mut want = Vec::new();
            for row in x.chunks_exact(d) {
                let max = row
                    .iter()
                    .fold(f32::NEG_INFINITY, |m, &v| black_box(m.max(v)));
                let e: Vec<f32> = row.iter().map(|&v| black_box(exp(v - max))).collect();
                let inv = 1.0 / e.iter().fold(0.0, |s, &v| black_box(s + v));
                want.extend(e.iter().map(|&v| black_box(v * inv)));
            }
            assert_eq!(bits(&got), bits(&want), "softmax, {rows}×{d} ({path:?})");
            let mut side = x.clone();
            softmax_rows(&mut side, d);
            assert_eq!(
                bits(&side),
                bits(&want),
                "softmax_rows, {rows}×{d} ({path:?})"
            );

            let maxes: Vec<f32> = x.chunks_exact(d).map(max_of).collect();
            let (mut side, mut sums) = (x.clone(), Vec::new());
            exp_sums_in_place(&mut side, d, &maxes, &mut sums);
            let mut each = x.clone();
            let want: Vec<f32> = each
                .chunks_exact_mut(d)
                .zip(&maxes)
                .map(|(row, &max)| exp_sum_in_place(row, max))
                .collect();
            assert_eq!(
                bits(&sums),
                bits(&want),
                "exp_sums_in_place, {rows}×{d} ({path:?})"
            );
            assert_eq!(
                bits(&side),
                bits(&each),
                "exp_sums_in_place, {rows}×{d} ({path:?})"
            );
        }
    }

    #[test]
    fn matmul_and_attention_agree_with_the_definitions() {
        // 2×3 · 3×2, rhs given as a transposed 2×3.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let wt = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0];
        let mut y = vec![0.0; 4];
        matmul(
            2,
            2,
            3,
            Mat::new(&mut y, 2, 1),
            false,
            MatRef::new(&a, 3, 1),
            MatRef::new(&wt, 1, 3),
            1.0,
        );
        assert_eq!(y, vec![4.0, 2.0, 10.0, 5.0]);
        // One head, one query equally close to two keys: the mean of their values.
        let q = [0.0, 0.0];
        let k = [1.0, 0.0, 0.0, 1.0];
        let v = [2.0, 4.0, 6.0, 8.0];
        let mut out = vec![0.0; 2];
        let mut scores = Vec::new();
        attention(
            1,
            2,
            1,
            MatRef::new(&q, 2, 1),
            2,
            MatRef::new(&k, 2, 1),
            MatRef::new(&v, 2, 1),
            None,
            &mut out,
            &mut scores,
        );
        assert_eq!(out, vec![4.0, 6.0]);
        // Causal: the first query sees only the first key.
        let mut out = vec![0.0; 2];
        attention(
            1,
            2,
            1,
            MatRef::new(&q, 2, 1),
            2,
            MatRef::new(&k, 2, 1),
            MatRef::new(&v, 2, 1),
            Some(0),
            &mut out,
            &mut scores,
        );
        assert_eq!(out, vec![2.0, 4.0]);
        assert!((erf(0.5) - 0.520_499_9).abs() < 1e-6);
    }
}
