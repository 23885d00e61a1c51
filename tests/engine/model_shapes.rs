//! Every shape of Whisper model users bring, loaded and decoded by the real engine: model
//! files written here with random int8 weights (as CTranslate2's int8 conversions store
//! them: one scale per row) in the widths, heads, mel bands and vocabularies of tiny.en,
//! base, small, medium.en, large-v3 and distil-large-v3, beside the pinned models'
//! tokenizers (English-only or multilingual). Layers repeat one shape and the loader counts
//! them by name, so the larger models keep two encoder layers here rather than 12–32 (the
//! file of large-v3's full depth is 1.5 GB); distil-large-v3's two decoder layers are its
//! own. Random weights say nothing of accuracy: what is proven is that each shape loads,
//! decodes alone and in a batch with the same words, speaks the languages its vocabulary
//! has, and gets no-speech thresholds calibrated at load.

use std::io::Write;
use std::path::Path;

use hark::backend::whisper::{self, ModelPaths};
use hark_whisper::Spoken;
use hark_whisper::{Decoder, Model, Request};

/// One Whisper shape.
struct Shape {
    name: &'static str,
    width: usize,
    heads: usize,
    mels: usize,
    encoder_layers: usize,
    decoder_layers: usize,
    vocab: usize,
}

const SHAPES: &[Shape] = &[
    Shape {
        name: "tiny.en",
        width: 384,
        heads: 6,
        mels: 80,
        encoder_layers: 4,
        decoder_layers: 4,
        vocab: 51_864,
    },
    Shape {
        name: "base",
        width: 512,
        heads: 8,
        mels: 80,
        encoder_layers: 6,
        decoder_layers: 6,
        vocab: 51_865,
    },
    Shape {
        name: "small",
        width: 768,
        heads: 12,
        mels: 80,
        encoder_layers: 2,
        decoder_layers: 2,
        vocab: 51_865,
    },
    Shape {
        name: "medium.en",
        width: 1024,
        heads: 16,
        mels: 80,
        encoder_layers: 2,
        decoder_layers: 2,
        vocab: 51_864,
    },
    Shape {
        name: "large-v3",
        width: 1280,
        heads: 20,
        mels: 128,
        encoder_layers: 2,
        decoder_layers: 3,
        vocab: 51_866,
    },
    Shape {
        name: "distil-large-v3",
        width: 1280,
        heads: 20,
        mels: 128,
        encoder_layers: 2,
        decoder_layers: 2,
        vocab: 51_866,
    },
];

impl Shape {
    fn multilingual(&self) -> bool {
        self.vocab > 51_864
    }
}

/// A CTranslate2 model file (binary version 6) of `shape`, random weights.
struct Writer<W> {
    out: W,
    rng: fastrand::Rng,
}

impl<W: Write> Writer<W> {
    fn string(&mut self, s: &str) {
        self.out
            .write_all(&((s.len() + 1) as u16).to_le_bytes())
            .unwrap();
        self.out.write_all(s.as_bytes()).unwrap();
        self.out.write_all(&[0]).unwrap();
    }

    fn header(&mut self, name: &str, shape: &[usize], code: u8, bytes: usize) {
        self.string(name);
        self.out.write_all(&[shape.len() as u8]).unwrap();
        for d in shape {
            self.out.write_all(&(*d as u32).to_le_bytes()).unwrap();
        }
        self.out.write_all(&[code]).unwrap();
        self.out.write_all(&(bytes as u32).to_le_bytes()).unwrap();
    }

    fn f32s(&mut self, name: &str, shape: &[usize], value: impl Fn(&mut fastrand::Rng) -> f32) {
        let n: usize = shape.iter().product();
        self.header(name, shape, 0, 4 * n);
        let bytes: Vec<u8> = (0..n)
            .flat_map(|_| value(&mut self.rng).to_le_bytes())
            .collect();
        self.out.write_all(&bytes).unwrap();
    }

    /// An int8 weight `[out][inp]` (times `k` for a convolution) with its scales: values
    /// within ±1/√inp, so activations stay in range through the layers.
    fn int8(&mut self, name: &str, shape: &[usize]) {
        let (out, n) = (shape[0], shape.iter().product::<usize>());
        let inp = n / out;
        self.header(&format!("{name}/weight"), shape, 1, n);
        let bytes: Vec<u8> = (0..n).map(|_| self.rng.i8(-127..=127) as u8).collect();
        self.out.write_all(&bytes).unwrap();
        let scale = 127.0 * (inp as f32).sqrt();
        self.f32s(&format!("{name}/weight_scale"), &[out], |_| scale);
    }

    fn linear(&mut self, name: &str, out: usize, inp: usize) {
        self.int8(name, &[out, inp]);
        self.f32s(&format!("{name}/bias"), &[out], |r| (r.f32() - 0.5) * 0.02);
    }

    fn norm(&mut self, name: &str, width: usize) {
        self.f32s(&format!("{name}/gamma"), &[width], |_| 1.0);
        self.f32s(&format!("{name}/beta"), &[width], |_| 0.0);
    }

    fn layer(&mut self, p: &str, d: usize, decoder: bool) {
        self.norm(&format!("{p}/self_attention/layer_norm"), d);
        self.linear(&format!("{p}/self_attention/linear_0"), 3 * d, d);
        self.linear(&format!("{p}/self_attention/linear_1"), d, d);
        if decoder {
            self.norm(&format!("{p}/attention/layer_norm"), d);
            self.linear(&format!("{p}/attention/linear_0"), d, d);
            self.linear(&format!("{p}/attention/linear_1"), 2 * d, d);
            self.linear(&format!("{p}/attention/linear_2"), d, d);
        }
        self.norm(&format!("{p}/ffn/layer_norm"), d);
        self.linear(&format!("{p}/ffn/linear_0"), 4 * d, d);
        self.linear(&format!("{p}/ffn/linear_1"), d, 4 * d);
    }
}

fn write_model(shape: &Shape, path: &Path) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = Writer {
        out: std::io::BufWriter::new(file),
        rng: fastrand::Rng::with_seed(shape.width as u64),
    };
    let d = shape.width;
    // Variables: conv1 and conv2 (weight, scale, bias: 3 each), 2 position tables, 2
    // norms (2 each), the embeddings (2), the layers; then the heads.
    let layer = |decoder: bool| 2 * 2 + 4 * 3 + if decoder { 2 + 3 * 3 } else { 0 };
    let count = 3
        + 3
        + 2
        + 2 * 2
        + 2
        + shape.encoder_layers * layer(false)
        + shape.decoder_layers * layer(true)
        + 1;
    w.out.write_all(&6u32.to_le_bytes()).unwrap();
    w.string("WhisperSpec");
    w.out.write_all(&1u32.to_le_bytes()).unwrap();
    w.out.write_all(&(count as u32).to_le_bytes()).unwrap();
    w.int8("encoder/conv1", &[d, shape.mels, 3]);
    w.f32s("encoder/conv1/bias", &[d], |_| 0.0);
    w.int8("encoder/conv2", &[d, d, 3]);
    w.f32s("encoder/conv2/bias", &[d], |_| 0.0);
    w.f32s("encoder/position_encodings/encodings", &[1500, d], |r| {
        (r.f32() - 0.5) * 0.1
    });
    for i in 0..shape.encoder_layers {
        w.layer(&format!("encoder/layer_{i}"), d, false);
    }
    w.norm("encoder/layer_norm", d);
    w.int8("decoder/embeddings", &[shape.vocab, d]);
    w.f32s("decoder/position_encodings/encodings", &[448, d], |r| {
        (r.f32() - 0.5) * 0.1
    });
    for i in 0..shape.decoder_layers {
        w.layer(&format!("decoder/layer_{i}"), d, true);
    }
    w.norm("decoder/layer_norm", d);
    w.header("encoder/num_heads", &[], 3, 4);
    w.out
        .write_all(&(shape.heads as i32).to_le_bytes())
        .unwrap();
    w.out.write_all(&0u32.to_le_bytes()).unwrap();
    w.out.flush().unwrap();
}

/// A model directory of `shape` in `dir`: its random weights, and the tokenizer and config
/// of the pinned model with its vocabulary (tiny.en's English-only, base's multilingual).
fn model_dir(shape: &Shape, dir: &Path) -> ModelPaths {
    let pinned = match shape.multilingual() {
        true => "base",
        false => "tiny.en",
    };
    let config = whisper::WhisperConfig {
        model: pinned.into(),
        ..hark_testkit::whisper_config()
    };
    let from = whisper::ensure_model(&config).expect("fetch").dir;
    let dir = dir.join(shape.name);
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["tokenizer.json", "config.json"] {
        std::fs::copy(from.join(file), dir.join(file)).unwrap();
    }
    write_model(shape, &dir.join("model.bin"));
    ModelPaths {
        name: dir.display().to_string(),
        dir,
    }
}

#[test]
fn every_whisper_shape_loads_and_decodes_alone_and_batched_alike() {
    let tmp = tempfile::tempdir().unwrap();
    // Quiet noise and a rising tone: what random weights hear hardly matters, only that
    // the two decodes differ and run their course.
    let noise: Vec<f32> = {
        let mut rng = fastrand::Rng::with_seed(5);
        (0..32_000).map(|_| (rng.f32() - 0.5) * 0.1).collect()
    };
    let tone: Vec<f32> = (0..24_000)
        .map(|i| (i as f32 * (0.05 + i as f32 * 1e-6)).sin() * 0.3)
        .collect();
    for shape in SHAPES {
        let paths = model_dir(shape, tmp.path());
        let model = Model::load(&paths).unwrap_or_else(|e| panic!("{}: {e}", shape.name));
        assert_eq!(
            (model.weights.dim, model.weights.n_mels, model.weights.vocab),
            (shape.width, shape.mels, shape.vocab),
            "{}",
            shape.name
        );
        // No figures for it: thresholds calibrated on its own hearing of silence, in range.
        let speech = model.options.speech;
        let (low, high) = hark_whisper::options::calibration::RANGE;
        assert!(
            (low..=high).contains(&speech.no_speech)
                && (low..=speech.no_speech).contains(&speech.invention),
            "{}: {speech:?}",
            shape.name
        );
        assert_eq!(
            model.speaks(Spoken::Known("es")),
            shape.multilingual(),
            "{}",
            shape.name
        );
        let language = match shape.multilingual() {
            true => Spoken::Known("es"),
            false => Spoken::Known("en"),
        };
        let request = |audio| Request {
            audio,
            prompt: "a prompt",
            draft: "",
            language,
            beam: 1,
        };
        let mut decoder = Decoder::new(model.clone());
        let alone: Vec<_> = [&noise[..], &tone[..]]
            .into_iter()
            .map(|audio| {
                decoder
                    .decode_batch(&model, &[request(audio)], None)
                    .remove(0)
            })
            .collect();
        let together = decoder.decode_batch(&model, &[request(&noise), request(&tone)], None);
        assert_eq!(alone, together, "{}", shape.name);
        // Made to run 12 steps whatever it writes: the decoder's positions, caches and
        // vocabulary product on this shape.
        decoder.decode_batch(&model, &[request(&tone)], Some(12));
        std::fs::remove_dir_all(&paths.dir).unwrap();
    }
}
