//! Times Whisper decodes of the first 1-12 s of a 16 kHz WAV file: alone, with the previous
//! length's text as the draft (a partial after a partial), and with its own text (a final
//! after the partial of nearly the same audio). Best of 3, one thread:
//! `MODEL=tiny.en|base cargo run --release --example whisper_time -- FILE`.
fn main() {
    let config = hark::backend::whisper::WhisperConfig {
        model: std::env::var("MODEL").unwrap_or_else(|_| "tiny.en".into()),
        ..Default::default()
    };
    let paths = hark::backend::whisper::ensure_model(&config).unwrap();
    let model = hark::backend::whisper::Model::load(&paths).unwrap();
    let mut d = hark::backend::whisper::Decoder::new(model);
    let f = std::env::args().nth(1).unwrap();
    let (s, _) = hark_bench::wav::read_mono_f32(std::path::Path::new(&f)).unwrap();
    let mut prev = String::new();
    for secs in [1.0f32, 2.0, 3.0, 5.0, 8.0, 12.0] {
        let n = ((secs * 16000.0) as usize).min(s.len());
        let time = |d: &mut hark::backend::whisper::Decoder, draft: &str| {
            let mut best = f64::MAX;
            let mut text = String::new();
            for _ in 0..3 {
                let t = std::time::Instant::now();
                let r = d.decode(&s[..n], "", draft);
                best = best.min(t.elapsed().as_secs_f64() * 1000.0);
                text = r.text;
            }
            (best, text)
        };
        let (plain, text) = time(&mut d, "");
        let (from_prev, t2) = time(&mut d, &prev);
        let (from_own, t3) = time(&mut d, &text);
        assert_eq!(text, t2, "a draft changed the text");
        assert_eq!(text, t3, "a draft changed the text");
        println!(
            "{secs:5.1} s: plain {plain:6.1} ms, prev draft {from_prev:6.1}, own draft {from_own:6.1}  {}",
            &text[..text.len().min(60)]
        );
        prev = text;
    }
}
