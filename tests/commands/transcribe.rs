//! `hark transcribe` run as the real binary: a profile's engine, options and channels.

use std::process::{Command, Output};

use hark_testkit::{clips, dirs};

fn hark(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hark"))
        .args(args)
        .env_clear()
        .env("HARK_CACHE_DIR", dirs::cache_dir())
        .env("HARK_TEST_DG_KEY", "unused")
        .output()
        .expect("hark runs")
}

const CONFIG: &str = r#"
[backends.dg]
type = "deepgram"
api_key_env = "HARK_TEST_DG_KEY"
[profiles.customers]
backend = "dg"
fallback = ["whisper"]
channels = ["customer"]
[profiles.relayed]
backend = "dg"
"#;

/// A stereo file: the customer says one clip, the assistant another.
fn stereo_call(dir: &std::path::Path) -> (String, String, String) {
    let clips = clips();
    let customer = clips.iter().find(|c| c.name.starts_with("jfk")).unwrap();
    let assistant = clips
        .iter()
        .find(|c| c.name.starts_with("goforward"))
        .unwrap();
    assert_eq!(customer.rate, assistant.rate);
    let path = dir.join("call.wav");
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: customer.rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(&path, spec).unwrap();
    let frames = customer.samples.len().max(assistant.samples.len());
    for i in 0..frames {
        w.write_sample(customer.samples.get(i).copied().unwrap_or(0))
            .unwrap();
        w.write_sample(assistant.samples.get(i).copied().unwrap_or(0))
            .unwrap();
    }
    w.finalize().unwrap();
    (
        path.to_string_lossy().into_owned(),
        customer.reference.clone(),
        assistant.reference.clone(),
    )
}

#[test]
fn transcribe_decodes_as_the_profile_does() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hark.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let config = config.to_string_lossy().into_owned();
    let (call, _, _) = stereo_call(dir.path());
    let lines = |out: &Output| -> Vec<String> {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout.lines().map(str::to_lowercase).collect()
    };

    // The default profile: both channels, labelled.
    let both = lines(&hark(&["transcribe", "--config", &config, &call]));
    assert_eq!(both.len(), 2, "{both:?}");
    assert!(
        both[0].contains("\tcustomer\t") && both[0].contains("your country"),
        "{both:?}"
    );
    assert!(
        both[1].contains("\tassistant\t") && both[1].contains("forward"),
        "{both:?}"
    );

    // A profile relaying to a network backend with Whisper behind it, customer only: the
    // embedded fallback decodes, and the assistant's channel is not transcribed.
    let customers = lines(&hark(&[
        "transcribe",
        "--config",
        &config,
        "--profile",
        "customers",
        &call,
    ]));
    assert_eq!(customers.len(), 1, "{customers:?}");
    assert!(customers[0].contains("\tcustomer\t") && customers[0].contains("your country"));

    // No embedded engine in the chain, or no such profile: refused before any model loads,
    // saying what to do.
    for (profile, said) in [
        ("relayed", "runs dg only"),
        ("nosuch", "its profiles: default, customers, relayed"),
    ] {
        let out = hark(&[
            "transcribe",
            "--config",
            &config,
            "--profile",
            profile,
            &call,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{profile}: {stderr}");
        assert!(stderr.contains(said), "{profile}: {stderr}");
    }
}

/// `--language` and `--keyterms` are a call's query overrides: checked the same way, and
/// refused before any model loads; good ones decode as usual, without the calibration only
/// admission needs.
#[test]
fn transcribe_takes_a_calls_language_and_keyterms() {
    let dir = tempfile::tempdir().unwrap();
    let (call, _, _) = stereo_call(dir.path());
    for (flags, said) in [
        (["--language", "es ES"], "is not a language tag"),
        (["--keyterms", "a\u{7}b"], "control characters"),
    ] {
        let mut args = vec!["transcribe"];
        args.extend(flags);
        args.push(&call);
        let out = hark(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?}: {stderr}");
        assert!(stderr.contains(said), "{flags:?}: {stderr}");
        assert!(
            !stderr.contains("ready"),
            "refused before loading: {stderr}"
        );
    }
    let out = hark(&[
        "transcribe",
        "--language",
        "en",
        "--keyterms",
        "Acme,refund",
        &call,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_lowercase();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("your country"), "{stdout}");
    // Nothing is admitted here: the decoders are not timed for admission's cost model.
    assert!(stderr.contains("loading the recognizer"), "{stderr}");
    assert!(!stderr.contains("decode cost calibrated"), "{stderr}");
}
