//! What a phone line does to speech (`--phone-band`): 8 kHz sampling, the 300–3400 Hz voice
//! band, and optionally G.711 μ-law's 8-bit companding, so wideband recordings can stand in
//! for phone calls.

use anyhow::Context;
use biquad::{Biquad, Coefficients, DirectForm2Transposed, ToHertz, Type};

use crate::resample::resample;

/// The phone line's sample rate.
pub const LINE_RATE: u32 = 8000;

/// Q of the two sections of a 4th-order Butterworth filter: 2nd order alone leaves a 100 Hz
/// hum only ~19 dB down.
const BUTTERWORTH_4: [f32; 2] = [0.541_196_1, 1.306_563];

/// Takes `samples` at `rate` through a phone line and back to `out_rate`.
pub fn phone_line(
    samples: &[i16],
    rate: u32,
    out_rate: u32,
    mu_law: bool,
) -> anyhow::Result<Vec<i16>> {
    let line = resample(samples, rate, LINE_RATE)?;
    let mut sections = Vec::new();
    for (kind, hz) in [(Type::HighPass, 300.0f32), (Type::LowPass, 3400.0)] {
        for q in BUTTERWORTH_4 {
            let c = Coefficients::<f32>::from_params(kind, (LINE_RATE as f32).hz(), hz.hz(), q)
                .map_err(|e| anyhow::anyhow!("{e:?}"))
                .context("cannot design the phone band filter")?;
            sections.push(DirectForm2Transposed::<f32>::new(c));
        }
    }
    let line: Vec<i16> = line
        .iter()
        .map(|&s| {
            let y = sections
                .iter_mut()
                .fold(f32::from(s), |x, section| section.run(x));
            let s = y.clamp(-32768.0, 32767.0) as i16;
            if mu_law {
                mu_law_decode(mu_law_encode(s))
            } else {
                s
            }
        })
        .collect();
    let mut out = resample(&line, LINE_RATE, out_rate)?;
    // Same duration as what came in, whatever the rounding of the two conversions.
    let want = (samples.len() as u64 * u64::from(out_rate) / u64::from(rate.max(1))) as usize;
    out.resize(want, 0);
    Ok(out)
}

const BIAS: i32 = 0x84;
const CLIP: i32 = 32635;

/// G.711 μ-law: a 16-bit sample as its 8-bit code.
pub fn mu_law_encode(sample: i16) -> u8 {
    let s = i32::from(sample);
    let sign = if s < 0 { 0x80 } else { 0 };
    let magnitude = s.abs().min(CLIP) + BIAS;
    // The segment is the position of the highest set bit above bit 7.
    let exponent = (31 - magnitude.leading_zeros() as i32 - 7).clamp(0, 7);
    let mantissa = (magnitude >> (exponent + 3)) & 0x0f;
    !(sign | (exponent << 4) | mantissa) as u8
}

/// G.711 μ-law: an 8-bit code as the 16-bit sample it stands for.
pub fn mu_law_decode(code: u8) -> i16 {
    let c = i32::from(!code);
    let exponent = (c >> 4) & 0x07;
    let mantissa = c & 0x0f;
    let magnitude = (((mantissa << 3) + BIAS) << exponent) - BIAS;
    (if c & 0x80 != 0 { -magnitude } else { magnitude }) as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(hz: f64, rate: u32, secs: f64) -> Vec<i16> {
        (0..(secs * f64::from(rate)) as usize)
            .map(|i| {
                ((i as f64 / f64::from(rate) * hz * std::f64::consts::TAU).sin() * 10000.0) as i16
            })
            .collect()
    }

    fn rms(s: &[i16]) -> f64 {
        // Skip the filters' and resampler's settling at both ends.
        let s = &s[s.len() / 5..s.len() * 4 / 5];
        (s.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>() / s.len() as f64).sqrt()
    }

    #[test]
    fn passes_the_voice_band_and_cuts_outside_it() {
        for rate in [16000, 44100] {
            let level = |hz: f64| {
                let out = phone_line(&tone(hz, rate, 1.0), rate, 16000, false).unwrap();
                20.0 * rms(&out).max(1e-3).log10()
            };
            let (low, mid, high) = (level(100.0), level(1000.0), level(3900.0));
            assert!(
                mid > 20.0 * (10000.0f64 / 2f64.sqrt()).log10() - 1.0,
                "{mid}"
            );
            assert!(mid - low >= 20.0, "100 Hz only {} dB down", mid - low);
            assert!(mid - high >= 20.0, "3.9 kHz only {} dB down", mid - high);
        }
    }

    #[test]
    fn keeps_the_length() {
        let s = tone(440.0, 16000, 1.2345);
        for (out_rate, mu) in [(16000, true), (16000, false), (8000, true)] {
            let out = phone_line(&s, 16000, out_rate, mu).unwrap();
            assert_eq!(out.len(), s.len() * out_rate as usize / 16000);
        }
        assert!(phone_line(&[], 16000, 16000, true).unwrap().is_empty());
    }

    #[test]
    fn mu_law_round_trip_error_is_bounded() {
        for s in i16::MIN..=i16::MAX {
            let back = mu_law_decode(mu_law_encode(s));
            let err = (i32::from(back) - i32::from(s)).abs();
            // 8 bits: one step of the sample's segment (1/16 of it), beyond the clip level
            // the clipping too.
            let a = i32::from(s).abs();
            let bound = a / 16 + 16 + (a - CLIP).max(0);
            assert!(err <= bound, "{s} -> {back}");
        }
        assert_eq!(mu_law_encode(0), 0xff);
        assert_eq!(mu_law_decode(0xff), 0);
    }
}
