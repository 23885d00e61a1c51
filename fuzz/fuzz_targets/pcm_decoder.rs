//! Any PCM bytes split at any points across websocket frames: the concatenated output of
//! `PcmDecoder` equals de-interleaving the concatenated input, the carry holds exactly the
//! bytes of the incomplete last sample frame, and nothing panics.
#![no_main]

use hark::audio::PcmDecoder;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // First byte: channel count; next: how many cut points; then the cuts (one byte each,
    // as gaps between frames); the rest is the audio.
    let [first, ncuts, rest @ ..] = data else {
        return;
    };
    let channels = usize::from(first % 2) + 1;
    let ncuts = usize::from(*ncuts).min(rest.len());
    let (gaps, audio) = rest.split_at(ncuts);
    let stride = channels * 2;

    let mut decoder = PcmDecoder::new(channels);
    let mut got = vec![Vec::new(); channels];
    let mut at = 0;
    // The last frame takes whatever the cuts left.
    for gap in gaps.iter().map(|&g| usize::from(g)).chain([audio.len()]) {
        let end = (at + gap).min(audio.len());
        let out = decoder.decode(&audio[at..end]);
        assert_eq!(out.len(), channels);
        for (ch, samples) in out.iter().enumerate() {
            got[ch].extend_from_slice(samples);
        }
        at = end;
    }
    assert_eq!(at, audio.len());

    let mut want = vec![Vec::new(); channels];
    for frame in audio.chunks_exact(stride) {
        for (ch, s) in frame.chunks_exact(2).enumerate() {
            want[ch].push(i16::from_le_bytes([s[0], s[1]]));
        }
    }
    assert_eq!(got, want);
    assert_eq!(decoder.pending_bytes(), audio.len() % stride);
});
