//! What a phone line carries besides speech — keypad tones, line hum and hiss, bumps on
//! the handset, the network's call-progress tones, hold music — comes back as no words at
//! all, through the whole server at 16 kHz and in the phone band. The signals are made
//! here, deterministic; none of them is a word Whisper is known to invent, so a word list
//! cannot pass this.

use std::f32::consts::TAU;

use hark_testkit::{TestServer, config_with_default_backend, resample, whisper_registry};

const RATE: u32 = 16_000;

fn seconds(s: f32) -> usize {
    (s * RATE as f32) as usize
}

/// A sum of sines (frequency, amplitude) for `secs`, with 5 ms ramps at both ends.
fn tones(parts: &[(f32, f32)], secs: f32) -> Vec<f32> {
    let n = seconds(secs);
    let ramp = seconds(0.005) as f32;
    (0..n)
        .map(|i| {
            let t = i as f32 / RATE as f32;
            let edge = (i as f32 / ramp).min((n - i) as f32 / ramp).min(1.0);
            edge * parts
                .iter()
                .map(|(f, a)| a * (TAU * f * t).sin())
                .sum::<f32>()
        })
        .collect()
}

fn quiet(secs: f32) -> Vec<f32> {
    vec![0.0; seconds(secs)]
}

/// A keypad digit's DTMF pair (ITU-T Q.23).
fn dtmf(digit: char) -> [f32; 2] {
    let (row, col) = match digit {
        '1' => (0, 0),
        '2' => (0, 1),
        '3' => (0, 2),
        '4' => (1, 0),
        '5' => (1, 1),
        '6' => (1, 2),
        '7' => (2, 0),
        '8' => (2, 1),
        '9' => (2, 2),
        '*' => (3, 0),
        '0' => (3, 1),
        _ => (3, 2),
    };
    [
        [697.0, 770.0, 852.0, 941.0][row],
        [1209.0, 1336.0, 1477.0][col],
    ]
}

/// Digits keyed in: `on` seconds of each pair, `off` between, at `level` (peak of each tone).
fn keypad(digits: &str, on: f32, off: f32, level: f32) -> Vec<f32> {
    let mut out = Vec::new();
    for d in digits.chars() {
        let [lo, hi] = dtmf(d);
        out.extend(tones(&[(lo, level), (hi, level)], on));
        out.extend(quiet(off));
    }
    out
}

/// xorshift: deterministic noise in -1..1.
pub struct Noise(pub u64);

impl Noise {
    pub fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

/// Mains hum (60 Hz and its third harmonic) under hiss, with clicks.
fn line_noise(secs: f32, noise: &mut Noise) -> Vec<f32> {
    let hum = tones(&[(60.0, 0.05), (180.0, 0.02)], secs);
    hum.iter()
        .enumerate()
        .map(|(i, h)| {
            let click = if i % 4_000 == 1_234 { 0.6 } else { 0.0 };
            h + 0.01 * noise.next() + click
        })
        .collect()
}

/// Bumps on the handset: low thumps and knocks (decaying sines, 60–450 Hz, some with a
/// burst of noise) 0.6–1 s apart over faint hiss.
fn bumps(noise: &mut Noise) -> Vec<f32> {
    let mut out = Vec::new();
    for (i, (f, decay)) in [
        (70.0, 0.03),
        (300.0, 0.02),
        (90.0, 0.05),
        (450.0, 0.015),
        (60.0, 0.04),
        (220.0, 0.03),
    ]
    .into_iter()
    .enumerate()
    {
        for n in 0..seconds(0.25) {
            let t = n as f32 / RATE as f32;
            let burst = if i % 2 == 0 { 0.3 * noise.next() } else { 0.0 };
            out.push(0.6 * (-t / decay).exp() * ((TAU * f * t).sin() + burst));
        }
        let gap = 0.6 + 0.08 * i as f32;
        out.extend((0..seconds(gap)).map(|_| 0.004 * noise.next()));
    }
    out
}

/// Ringback (440 + 480 Hz, 2 s on, 4 s off) and busy (480 + 620 Hz, 0.5 s on, 0.5 s off),
/// as North American networks play them.
fn call_progress() -> Vec<f32> {
    let mut out = tones(&[(440.0, 0.1), (480.0, 0.1)], 2.0);
    out.extend(quiet(4.0));
    for _ in 0..4 {
        out.extend(tones(&[(480.0, 0.1), (620.0, 0.1)], 0.5));
        out.extend(quiet(0.5));
    }
    out
}

/// A melody of plucked notes with five harmonics over slower chords: hold music.
fn hold_music(noise: &mut Noise) -> Vec<f32> {
    let note = |midi: f32, secs: f32, level: f32| -> Vec<f32> {
        let f = 440.0 * 2f32.powf((midi - 69.0) / 12.0);
        let harmonics: Vec<(f32, f32)> =
            (1..=5).map(|k| (f * k as f32, level / k as f32)).collect();
        tones(&harmonics, secs)
            .into_iter()
            .enumerate()
            .map(|(i, x)| {
                let t = i as f32 / RATE as f32;
                x * (t * 40.0).min(1.0) * (-2.5 * t).exp()
            })
            .collect()
    };
    let melody = [
        60, 64, 67, 72, 71, 67, 64, 62, 60, 65, 69, 72, 74, 72, 69, 65, 67, 71, 74, 79,
    ];
    let mut tune: Vec<f32> = melody
        .iter()
        .flat_map(|&m| note(m as f32, 0.4, 0.15))
        .collect();
    let chords: Vec<f32> = melody
        .iter()
        .step_by(4)
        .flat_map(|&m| {
            let root = note(m as f32 - 12.0, 1.6, 0.08);
            let fifth = note(m as f32 - 5.0, 1.6, 0.06);
            root.iter()
                .zip(&fifth)
                .map(|(a, b)| a + b)
                .collect::<Vec<_>>()
        })
        .collect();
    for (x, c) in tune.iter_mut().zip(&chords) {
        *x += c + 0.005 * noise.next();
    }
    tune
}

/// Each signal with a second of quiet after it.
fn line_sounds() -> Vec<(&'static str, Vec<f32>)> {
    let mut noise = Noise(0x2545_f491_4f6c_dd1d);
    vec![
        (
            "an account number keyed in",
            keypad("4815162342", 0.12, 0.08, 0.15),
        ),
        ("slow, loud keys", keypad("1#0*9", 0.3, 0.4, 0.4)),
        ("line hum, hiss and clicks", line_noise(5.0, &mut noise)),
        ("bumps on the handset", bumps(&mut noise)),
        ("ringback and busy tones", call_progress()),
        ("hold music", hold_music(&mut noise)),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keypad_tones_line_noise_and_hold_music_give_no_words() {
    let sounds = line_sounds();
    let mut customer: Vec<i16> = Vec::new();
    for (_, s) in &sounds {
        customer.extend(s.iter().map(|x| (x.clamp(-1.0, 1.0) * 32_767.0) as i16));
        customer.extend(std::iter::repeat_n(0, seconds(1.0)));
    }
    let server =
        TestServer::start(config_with_default_backend("whisper"), whisper_registry()).await;
    let url = server.ws_url("/api/custom-transcriber");
    let call = |rate: u32| {
        let url = url.clone();
        let samples = resample(&customer, RATE, rate);
        async move {
            let mut call =
                hark_testkit::connect_admitted(&url, std::time::Duration::from_secs(180)).await;
            call.start(rate, 2).await.expect("start frame");
            let silence = vec![0i16; samples.len()];
            assert!(call.play(&[&samples, &silence], rate, 20, true).await);
            assert!(call.silence(2, rate, 2.5).await);
            call.hang_up().await
        }
    };
    let (wide, narrow) = tokio::join!(call(16_000), call(8_000));
    for (rate, got) in [(16_000, wide), (8_000, narrow)] {
        assert!(got.error().is_none(), "{rate} Hz: {:?}", got.error());
        let (finals, partials) = (got.finals("customer"), got.partials("customer"));
        assert!(
            finals.is_empty() && partials.is_empty(),
            "{rate} Hz: words on {}: finals {finals:?}, partials {partials:?}",
            sounds
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    server.shutdown().await.unwrap();
}

/// The finals' model calls the line's sounds what they are: no words, and a sound rather
/// than silence for the keys and the music, so the segmenter puts no other decode's words
/// there (over a bang, tiny.en's partials invent whole sentences base calls a sound).
#[test]
fn the_finals_model_hears_keys_and_music_as_sounds() {
    use hark::backend::embedded::{Engine, Tier, Utterance};
    let mut decoder = hark_whisper::Decoder::new(super::whisper_engine::model())
        .with_finals(super::whisper_engine::base());
    let mut sounds = 0;
    for (name, audio) in line_sounds() {
        let one = Utterance {
            audio: &audio,
            prompt: "",
            draft: "",
            language: "",
            beam: false,
        };
        let heard = decoder.transcribe(&[one], Tier::Finals).remove(0).unwrap();
        assert_eq!(heard.text, "", "{name}");
        eprintln!("{name}: {heard:?}");
        sounds += usize::from(heard.sound);
    }
    assert!(sounds >= 3, "{sounds} of the line's sounds heard as sounds");
}

/// base's sound probe, read off the encoding its decode made, hears the line's sounds as
/// sounds and recorded speech as speech: it is what takes unsure words over a sound out
/// where the decoder's own figures look like a real word's.
#[test]
fn the_sound_probe_tells_the_lines_sounds_from_speech() {
    let base = super::whisper_engine::base();
    let threshold = base.options.speech.probed_sound;
    let mut decoder = hark_whisper::Decoder::new(base);
    let mut probe = |audio: &[f32]| {
        let decoded = decoder.decode(audio, "", "");
        decoded.probe.expect("base has a sound probe")
    };
    for clip in ["jfk.wav", "beckett.wav", "goforward.wav", "assistant-3.wav"] {
        let p = probe(&super::whisper_engine::at_16k(clip));
        eprintln!("{clip}: {p:.3}");
        assert!(p < 0.5, "{clip}: speech heard as a sound ({p:.3})");
    }
    let mut heard = 0;
    let sounds = line_sounds();
    for (name, audio) in &sounds {
        let p = probe(audio);
        eprintln!("{name}: {p:.3}");
        heard += usize::from(p > threshold);
    }
    assert_eq!(heard, sounds.len(), "line sounds heard as sounds");
}
