//! Prints what Whisper decodes of each 16 kHz WAV file given, with the figures its guards
//! read (no-speech probability, mean log-probability): `MODEL=tiny.en|base|DIR
//! cargo run --release --example whisper_probe -- FILE…`.
fn main() {
    let config = hark::backend::whisper::WhisperConfig {
        model: std::env::var("MODEL").unwrap_or_else(|_| "tiny.en".into()),
        ..Default::default()
    };
    let paths = hark::backend::whisper::ensure_model(&config).unwrap();
    let model = hark::backend::whisper::Model::load(&paths).unwrap();
    let mut d = hark::backend::whisper::Decoder::new(model);
    for f in std::env::args().skip(1) {
        let (s, _) = hark_bench::wav::read_mono_f32(std::path::Path::new(&f)).unwrap();
        println!("{f}: {:?}", d.decode(&s, "", ""));
    }
}
