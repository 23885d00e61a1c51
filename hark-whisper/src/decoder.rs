//! One decoder thread's engine: encodes each utterance of a batch, then runs the batch's
//! searches through the decoder together, one step at a time, so a step reads the
//! decoder's weights once for all of them.

use std::sync::Arc;

use super::beam::Beam;
use super::error::{DecodeError, LoadError};
use super::language::Spoken;
use super::model::{self, EncoderProducts, Scratch, Silence, Weights};
use super::options::{self, DecodeOptions};
use super::prompt::Layout;
pub use super::search::Decoded;
use super::search::{Search, pick_rows, probability};
use super::sound_probe::{self, SoundProbe};
use super::vocabulary::Vocabulary;
use super::{ModelPaths, Role, WINDOW_SAMPLES, mel};

/// A loaded model, shared by every decoder thread.
pub struct Model {
    pub weights: Weights,
    silence: Silence,
    pub vocab: Vocabulary,
    pub options: DecodeOptions,
    /// Whether an utterance is a sound, from its encoding, for a model hark trained one for.
    pub probe: Option<SoundProbe>,
    /// For logs: "tiny.en", "base", or the directory.
    pub name: String,
}

impl Model {
    pub fn load(paths: &ModelPaths) -> Result<Arc<Self>, LoadError> {
        Self::load_with(paths, EncoderProducts::Int8)
    }

    /// With the encoder's layers multiplying as `encoder` says.
    pub fn load_with(paths: &ModelPaths, encoder: EncoderProducts) -> Result<Arc<Self>, LoadError> {
        let weights = Weights::load_with(&paths.dir.join("model.bin"), encoder)?;
        let silence = Silence::encode(&weights);
        let vocab = Vocabulary::load(&paths.dir, weights.vocab)?;
        let measured = DecodeOptions::measured(&paths.name);
        let calibrate = measured.is_none();
        let probe = SoundProbe::for_model(&paths.name, weights.dim);
        let mut model = Arc::new(Self {
            probe,
            weights,
            silence,
            vocab,
            options: measured.unwrap_or(options::DEFAULT),
            name: paths.name.clone(),
        });
        if calibrate {
            let heard = model.no_speech_of(&options::calibration::signals());
            let options = DecodeOptions::calibrated(&heard);
            tracing::info!(
                model = %model.name,
                heard = ?heard,
                no_speech = options.speech.no_speech,
                invention = options.speech.invention,
                "no measured no-speech thresholds for this Whisper model: calibrated on its \
                 own hearing of silence and quiet noise"
            );
            Arc::get_mut(&mut model)
                .expect("the calibration's decoder is dropped: the model has one owner")
                .options = options;
        }
        Ok(model)
    }

    /// The no-speech probability the model gives each of `signals`, decoded alone.
    fn no_speech_of(self: &Arc<Self>, signals: &[Vec<f32>]) -> Vec<f32> {
        let mut decoder = Decoder::new(self.clone());
        signals
            .iter()
            .map(|audio| decoder.decode_batch(self, &[Request::english(audio)], None)[0].no_speech)
            .collect()
    }

    /// Whether it transcribes `spoken`: an English-only model speaks English alone.
    pub fn speaks(&self, spoken: Spoken) -> bool {
        self.vocab.speaks(spoken)
    }
}

/// One decoder thread's engine: the shared model(s) and its own buffers.
pub struct Decoder {
    model: Arc<Model>,
    /// The finals' model, when it is not `model`.
    finals: Option<Arc<Model>>,
    /// The hypotheses of a final's beam search, when the caller asks for it.
    beam_width: usize,
    /// The spectrogram of each mel band count its models read (80, 128).
    mels: Vec<mel::Mel>,
    scratch: Scratch,
    padded: Vec<f32>,
    features: Vec<f32>,
    /// Scores of the first pass (start and draft), one row per token.
    logits: Vec<f32>,
    /// Scores of one token decoded after the draft.
    step: Vec<f32>,
    /// Their rows' normalisers.
    sums: Vec<f32>,
    beam: Beam,
}

impl Decoder {
    pub fn new(model: Arc<Model>) -> Self {
        Self {
            model,
            finals: None,
            beam_width: 1,
            mels: Vec::new(),
            scratch: Scratch::default(),
            padded: Vec::new(),
            features: Vec::new(),
            logits: Vec::new(),
            step: Vec::new(),
            sums: Vec::new(),
            beam: Beam::default(),
        }
    }

    /// Searches finals with `width` hypotheses when the caller asks for the beam.
    pub fn with_beam(mut self, width: usize) -> Self {
        self.beam_width = width.max(1);
        self
    }

    /// The hypotheses a final's beam search keeps (1: greedy).
    pub fn beam_width(&self) -> usize {
        self.beam_width
    }

    /// Decodes finals with `finals` rather than the partials' model.
    pub fn with_finals(mut self, finals: Arc<Model>) -> Self {
        self.finals = Some(finals);
        self
    }

    /// Transcribes `audio` (16 kHz mono, at most 29 s are read), with `prompt` (earlier
    /// words, names) as Whisper's previous text and `draft` (an earlier decode's text of
    /// this audio, or empty) checked in one pass rather than decoded token by token.
    pub fn decode(&mut self, audio: &[f32], prompt: &str, draft: &str) -> Decoded {
        self.decode_one(Role::Partials, audio, prompt, draft)
    }

    /// The same with the finals' model.
    pub fn decode_final(&mut self, audio: &[f32], prompt: &str, draft: &str) -> Decoded {
        self.decode_one(Role::Finals, audio, prompt, draft)
    }

    fn decode_one(&mut self, role: Role, audio: &[f32], prompt: &str, draft: &str) -> Decoded {
        let model = self.model_for(role);
        let request = Request {
            prompt,
            draft,
            ..Request::english(audio)
        };
        self.decode_batch(&model, &[request], None).remove(0)
    }

    /// The model `role` decodes with.
    pub fn model_for(&self, role: Role) -> Arc<Model> {
        match role {
            Role::Finals => self.finals.as_ref().unwrap_or(&self.model).clone(),
            Role::Partials => self.model.clone(),
        }
    }

    /// The model `role` decodes `spoken` with, if it speaks it. The caller picks the role
    /// whose model does (hark's scheduler gives a Spanish call's partials to base when
    /// tiny.en is the partials' model): a decode is never moved to the other model here,
    /// so what it cost is booked to the model that ran it.
    pub fn model_speaking(&self, role: Role, spoken: Spoken) -> Result<Arc<Model>, DecodeError> {
        let own = self.model_for(role);
        match own.speaks(spoken) {
            true => Ok(own),
            false => Err(DecodeError::EnglishOnly(own.name.clone())),
        }
    }

    /// Decodes `batch` with `m` as one batch: each utterance is encoded on its own (an
    /// encoder's product over hundreds of frames already reads each weight once for all of
    /// them), then the decodes' tokens go through the decoder together, step by step, so a
    /// step reads the decoder's weights and the vocabulary once for the whole batch.
    /// Each decode's words are the ones it would get alone. `forced`: every decode runs
    /// exactly that many steps whatever it says (timing the engine, not transcribing).
    pub fn decode_batch(
        &mut self,
        m: &Model,
        batch: &[Request<'_>],
        forced: Option<usize>,
    ) -> Vec<Decoded> {
        let w = &m.weights;
        let d = w.dim;
        let mut searches: Vec<Search> = batch.iter().map(|r| self.prepare(m, r, forced)).collect();
        // The prompts, starts and drafts in one pass; then, per decode, the scores after
        // the start's first token (for no-speech) up to after the draft's last, read down
        // to the token greedy search picks at each of them.
        let mut owned: Vec<model::DecoderState> = searches
            .iter_mut()
            .map(|s| s.state.take().expect("prepared"))
            .collect();
        let inputs: Vec<&[u32]> = searches.iter().map(|s| &s.tokens[..]).collect();
        let mut states: Vec<&mut model::DecoderState> = owned.iter_mut().collect();
        let hidden = w.decode_batch(&inputs, &mut states, &mut self.scratch);
        drop(states);
        drop(inputs);
        let mut row0 = 0;
        // The scores after the start, for each decode a beam search finds.
        let mut firsts: Vec<(usize, Vec<f32>)> = Vec::new();
        for (at, (search, state)) in searches.iter_mut().zip(owned).enumerate() {
            search.state = Some(state);
            let rows = &hidden[(row0 + search.sot_at) * d..(row0 + search.tokens.len()) * d];
            row0 += search.tokens.len();
            w.logits(rows, &mut self.logits, &mut self.scratch);
            let vocab = w.vocab;
            search.no_speech = match m.vocab.no_speech {
                Some(t) => probability(&self.logits[..vocab], &[t]),
                None => 0.0,
            };
            let drafted_row = search.first - 1 - search.sot_at;
            // Before the token rules take the sounds' captions out of the first pick.
            search.sound = probability(
                &self.logits[drafted_row * vocab..(drafted_row + 1) * vocab],
                &m.vocab.sounds,
            );
            if search.beamed()
                && !m
                    .options
                    .speech
                    .doubts(search.no_speech, search.sound, search.probe)
            {
                let row = &self.logits[drafted_row * vocab..(drafted_row + 1) * vocab];
                firsts.push((at, row.to_vec()));
                continue;
            }
            let rows = &mut self.logits[drafted_row * vocab..];
            let steps: Vec<usize> = (0..rows.len() / vocab).collect();
            search.picks = pick_rows(&m.vocab, rows, vocab, &steps, &mut self.sums);
        }
        // Beam searches, each its hypotheses' rows in one pass per step.
        for (at, first) in firsts {
            let search = &mut searches[at];
            let state = search.state.take().expect("prepared");
            let found = self.beam.search(
                w,
                &m.vocab,
                state,
                &first,
                search.beam,
                search.budget(),
                &mut self.scratch,
            );
            search.settle(found.tokens, found.logprob, found.cut, found.ending);
        }
        // Greedy search, every decode one step at a time: those past their draft get their
        // next scores in one product, those that picked a token get it decoded in one pass.
        let mut lasts: Vec<f32> = Vec::new();
        loop {
            let fresh: Vec<usize> = (0..searches.len())
                .filter(|&i| searches[i].wants_scores())
                .collect();
            if !fresh.is_empty() {
                lasts.clear();
                for &i in &fresh {
                    lasts.extend_from_slice(&searches[i].last);
                }
                w.logits(&lasts, &mut self.step, &mut self.scratch);
                let steps: Vec<usize> = fresh.iter().map(|&i| searches[i].step).collect();
                let picks = pick_rows(&m.vocab, &mut self.step, w.vocab, &steps, &mut self.sums);
                for (&i, picked) in fresh.iter().zip(picks) {
                    searches[i].fresh = Some(picked);
                }
            }
            let mut next: Vec<(usize, [u32; 1])> = Vec::new();
            for (i, search) in searches.iter_mut().enumerate() {
                if let Some(token) = search.advance(&m.vocab, d) {
                    next.push((i, [token]));
                }
            }
            if next.is_empty() {
                // Every decode still searching is reading its draft's picks.
                if searches.iter().all(|s| s.done) {
                    break;
                }
                continue;
            }
            let inputs: Vec<&[u32]> = next.iter().map(|(_, t)| &t[..]).collect();
            let mut owned: Vec<(usize, model::DecoderState)> = next
                .iter()
                .map(|&(i, _)| (i, searches[i].state.take().expect("decoding")))
                .collect();
            let mut states: Vec<&mut model::DecoderState> =
                owned.iter_mut().map(|(_, s)| s).collect();
            let hidden = w.decode_batch(&inputs, &mut states, &mut self.scratch);
            drop(states);
            for ((i, state), h) in owned.into_iter().zip(hidden.chunks_exact(d)) {
                let search = &mut searches[i];
                search.state = Some(state);
                search.last.clear();
                search.last.extend_from_slice(h);
            }
        }
        searches
            .into_iter()
            .map(|s| s.finish(&m.vocab, &m.options.speech))
            .collect()
    }

    /// The language a multilingual model hears in an utterance (Whisper's own detection):
    /// the likeliest language token after `<|startoftranscript|>` alone. Leaves `state` as
    /// it found it.
    fn detect(&mut self, m: &Model, state: &mut model::DecoderState) -> &'static str {
        let w = &m.weights;
        let hidden = w.decode_batch(&[&[m.vocab.sot]], &mut [&mut *state], &mut self.scratch);
        w.logits(&hidden[..w.dim], &mut self.step, &mut self.scratch);
        state.truncate(0, w.dim);
        let score = |t: u32| {
            self.step
                .get(t as usize)
                .copied()
                .unwrap_or(f32::NEG_INFINITY)
        };
        m.vocab
            .languages
            .iter()
            .max_by(|a, b| score(a.1).total_cmp(&score(b.1)))
            .map_or("en", |(code, _)| *code)
    }

    /// Encodes a request's audio and lays out its tokens: the prompt, the start, the draft.
    fn prepare(&mut self, m: &Model, r: &Request<'_>, forced: Option<usize>) -> Search {
        let w = &m.weights;
        let (encoded, frames, read) = self.encode(m, r.audio);
        let probe = m
            .probe
            .as_ref()
            .map(|p| p.probability(&encoded, sound_probe::rows_of(read)));
        let mut state = w.start(&encoded, frames / 2, &m.silence);
        let code = match r.language {
            Spoken::Known(code) => code,
            Spoken::Auto => self.detect(m, &mut state),
        };
        let budget = forced.unwrap_or(m.options.budget(read));
        // A beam search reads no draft: the draft is greedy's text, checked against greedy's picks.
        let beam = if forced.is_some() { 1 } else { r.beam.max(1) };
        let draft = if beam > 1 { "" } else { r.draft };
        let layout = Layout::new(
            &m.vocab,
            &m.options,
            w.max_positions,
            r.prompt,
            draft,
            code,
            budget,
        );
        let mut search = Search::new(state, layout, forced.is_some(), beam);
        search.probe = probe;
        search
    }

    /// What the window holds of `audio`, then the model's silence, encoded: the encoding
    /// (`[frames / 2][dim]`), its mel frames, and the samples of `audio` read.
    fn encode(&mut self, m: &Model, audio: &[f32]) -> (Vec<f32>, usize, usize) {
        let w = &m.weights;
        let tail = m.options.tail_samples;
        let audio = &audio[..audio.len().min(WINDOW_SAMPLES - tail)];
        // The utterance, then silence, rounded up to whole encoder frames (2 hops).
        let len = (audio.len() + tail).div_ceil(2 * mel::HOP) * 2 * mel::HOP;
        self.padded.clear();
        self.padded.extend_from_slice(audio);
        self.padded.resize(len, 0.0);
        let at = match self.mels.iter().position(|m| m.bands() == w.n_mels) {
            Some(at) => at,
            None => {
                self.mels.push(mel::Mel::new(w.n_mels));
                self.mels.len() - 1
            }
        };
        let frames = self.mels[at].compute(&self.padded, &mut self.features);
        let encoded = w.encode(&self.features, frames, &mut self.scratch);
        (encoded, frames, audio.len())
    }

    /// The mean of `m`'s encoding of `audio` over the audio's frames: what the sound probe
    /// reads of an utterance, for training one (`segment_study POOLED=FILE`).
    pub fn pooled_encoding(&mut self, m: &Model, audio: &[f32]) -> Vec<f32> {
        let (encoded, _, read) = self.encode(m, audio);
        sound_probe::pooled(&encoded, sound_probe::rows_of(read), m.weights.dim)
    }
}

/// One utterance of a batch for [`Decoder::decode_batch`].
pub struct Request<'a> {
    pub audio: &'a [f32],
    pub prompt: &'a str,
    pub draft: &'a str,
    /// A language the model speaks ([`Model::speaks`]); English for an English-only one.
    pub language: Spoken,
    /// Hypotheses a beam search keeps; 1: greedy.
    pub beam: usize,
}

impl<'a> Request<'a> {
    /// English audio decoded greedily, with no prompt and no draft.
    pub fn english(audio: &'a [f32]) -> Self {
        Self {
            audio,
            prompt: "",
            draft: "",
            language: Spoken::Known("en"),
            beam: 1,
        }
    }
}
