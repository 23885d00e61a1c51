//! `hark check-config` and `hark serve` on good and bad configs, run as the real binary.

use std::path::Path;
use std::process::{Command, Output};

/// Runs the hark binary with `args` and only the environment given (no stray `HARK_…`).
fn hark(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hark"))
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .expect("hark runs")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path.to_string_lossy().into_owned()
}

const BAD: &str = r#"
max_lag_ms = 10
max_sessions = 0
[whisper]
beam = 0
[moonshine]
pool_size = 0
shed = "finals_model"
[backends.dg]
type = "deepgram"
api_key_env = "HARK_TEST_DG_KEY"
[backends.aai]
type = "assemblyai"
api_key_env = "HARK_TEST_AAI_KEY"
[profiles.p]
backend = "nope"
fallback = ["dg", "aai"]
channels = []
options = { language = "en US" }
"#;

#[test]
fn check_config_lists_every_problem_and_fails_without_printing_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "bad.toml", BAD);
    let out = hark(
        &["check-config", "--config", &config],
        &[
            ("HARK_SECRET", "env-secret-value-1"),
            ("HARK_TEST_DG_KEY", "dg-key-value-2"),
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    for problem in [
        "max_lag_ms must be at least 500",
        "max_sessions must be at least 1",
        "moonshine.pool_size must be at least 1",
        "whisper.beam must be within 1–16 (got 0)",
        "no finals' model",
        "uses backend \"nope\"",
        "transcribes no channel",
        "language \"en US\"",
        "backend \"aai\": environment variable HARK_TEST_AAI_KEY",
    ] {
        assert!(stderr.contains(problem), "{problem}: {stderr}");
    }
    assert!(stderr.contains("9 problem(s)"), "{stderr}");
    // The key that is set is not a problem, and neither it nor the secret is printed.
    assert!(!stderr.contains("HARK_TEST_DG_KEY"), "{stderr}");
    for secret in ["env-secret-value-1", "dg-key-value-2"] {
        assert!(!stdout.contains(secret) && !stderr.contains(secret));
    }
    assert!(stdout.contains("secret = \"***\""), "{stdout}");
    assert!(stdout.contains("HARK_TEST_DG_KEY is set"), "{stdout}");
    assert!(stdout.contains("HARK_TEST_AAI_KEY is NOT SET"), "{stdout}");
    // The effective values, from the file and defaults alike.
    assert!(stdout.contains("max_lag_ms = 10\n"), "{stdout}");
    assert!(stdout.contains("drain_timeout_ms = 30000\n"), "{stdout}");
}

#[test]
fn check_config_passes_a_good_config_with_flags_and_env_applied() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "good.toml",
        "max_lag_ms = 3000\n[auth]\nbearer_tokens = [\"file-token-value\"]\n",
    );
    let out = hark(
        &[
            "check-config",
            "--config",
            &config,
            "--max-sessions",
            "7",
            "--decoders",
            "3",
        ],
        &[
            ("HARK_SECRET", "env-secret-value-3"),
            ("HARK_LISTEN", "0.0.0.0:9999"),
            ("HARK_POOL_SIZE", "2"),
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("problem"), "{stderr}");
    for line in [
        "max_lag_ms = 3000\n",
        "max_sessions = 7\n",
        "listen = \"0.0.0.0:9999\"\n",
        "secret = \"***\"\n",
        "max_load = 0.8\n",
        // Whisper's decoders and Moonshine's handles, each from its own flag.
        "decoders = 3\n",
        "pool_size = 2\n",
    ] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    for secret in ["env-secret-value-3", "file-token-value"] {
        assert!(!stdout.contains(secret) && !stderr.contains(secret));
    }
}

#[test]
fn serve_refuses_a_bad_config_listing_all_its_problems() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "bad.toml", BAD);
    // Refused before anything is loaded or bound.
    let out = hark(
        &["serve", "--config", &config, "--listen", "127.0.0.1:0"],
        &[],
    );
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("10 problem(s)"), "{stderr}");
    for problem in [
        "max_lag_ms",
        "pool_size",
        "\"nope\"",
        "HARK_TEST_DG_KEY",
        "moonshine.shed = \"finals_model\"",
    ] {
        assert!(stderr.contains(problem), "{problem}: {stderr}");
    }
}

#[test]
fn check_config_names_an_unreadable_or_misspelt_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "typo.toml", "max_lagg_ms = 3\n");
    let out = hark(&["check-config", "--config", &config], &[]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("max_lagg_ms"), "{stderr}");
}

/// An empty Kubernetes Secret mounted as HARK_SECRET, or a short one, is refused at start-up
/// by the key it came from; neither command prints it.
#[test]
fn an_empty_or_short_secret_is_refused_at_start_up() {
    for secret in ["", "short-secret"] {
        for command in ["check-config", "serve"] {
            let out = hark(
                &[command, "--listen", "127.0.0.1:0"],
                &[("HARK_SECRET", secret)],
            );
            let (stdout, stderr) = text(&out);
            assert!(
                !out.status.success(),
                "{command} {secret:?}: {stdout}\n{stderr}"
            );
            let said = format!("{stdout}{stderr}");
            assert!(said.contains("auth.secret"), "{said}");
            assert!(said.contains("openssl rand"), "{said}");
            if !secret.is_empty() {
                assert!(!said.contains(secret), "{said}");
            }
        }
    }
}

/// A typo next to a secret, or a secret of the wrong type: the error names the file, the
/// line and the key, never the secret.
#[test]
fn a_config_typo_beside_a_secret_does_not_print_it() {
    let dir = tempfile::tempdir().unwrap();
    for body in [
        "[auth]\nsecrt = \"hunter2-0123456789abcdef\"\n",
        "[auth]\nbearer_tokens = \"hunter2-0123456789abcdef\"\n",
    ] {
        let config = write(dir.path(), "typo.toml", body);
        for command in ["check-config", "serve"] {
            let out = hark(&[command, "--config", &config], &[]);
            let (stdout, stderr) = text(&out);
            assert!(!out.status.success());
            let said = format!("{stdout}{stderr}");
            assert!(!said.contains("hunter2"), "{said}");
            assert!(
                said.contains("typo.toml") && said.contains("line 2"),
                "{said}"
            );
        }
    }
}

/// Backend URLs are parsed before anything starts: an unparseable one, a scheme that is not
/// a websocket, and `ws://` to another machine (the key in clear) are refused, and the
/// problem never shows a credential the URL carries.
#[test]
fn backend_urls_are_checked_and_shown_without_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "urls.toml",
        r#"
[backends.a]
type = "deepgram"
url = "not a url tok-s3cr3t"
[backends.b]
type = "deepgram"
url = "ws://asr.example.com/v1/listen?token=tok-s3cr3t"
[backends.c]
type = "assemblyai"
url = "https://user:tok-s3cr3t@streaming.example.com/v3/ws"
[backends.d]
type = "deepgram"
url = "ws://asr.internal:8080/v1/listen"
allow_insecure = true
[backends.e]
type = "deepgram"
url = "ws://127.0.0.1:9/v1/listen"
"#,
    );
    for command in ["check-config", "serve"] {
        let out = hark(
            &[command, "--config", &config, "--listen", "127.0.0.1:0"],
            &[],
        );
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success());
        let said = format!("{stdout}{stderr}");
        assert!(said.contains("[backends.a] url is not a URL"), "{said}");
        assert!(
            said.contains("[backends.b]") && said.contains("in clear"),
            "{said}"
        );
        assert!(
            said.contains("[backends.c]") && said.contains("wss://"),
            "{said}"
        );
        assert!(
            !said.contains("problem: [backends.d]") && !said.contains("problem: [backends.e]"),
            "{said}"
        );
        assert!(!said.contains("tok-s3cr3t"), "{said}");
    }
}

/// A `riva` section: plain gRPC on the operator's network needs no key; a key goes only
/// over TLS (or to this machine); metadata values are masked in the dump; the key
/// variable, when named, must be set.
#[test]
fn check_config_knows_riva_backends() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(
        dir.path(),
        "riva.toml",
        r#"
[backends.gpu]
type = "riva"
url = ["grpc://asr-0.internal:50051", "grpc://asr-1.internal:50051"]
model = "parakeet-1.1b-en-US-asr-streaming"
[backends.nim]
type = "riva"
url = "https://grpc.nvcf.nvidia.com:443"
api_key_env = "HARK_TEST_NIM_KEY"
metadata = { "function-id" = "fn-tok-s3cr3t" }
[profiles.default]
backend = "gpu"
fallback = ["nim", "moonshine"]
"#,
    );
    let out = hark(
        &["check-config", "--config", &good],
        &[("HARK_TEST_NIM_KEY", "nvapi-0123456789abcdef")],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("type = \"riva\""), "{stdout}");
    assert!(stdout.contains("backends.gpu: no API key"), "{stdout}");
    assert!(stdout.contains("HARK_TEST_NIM_KEY is set"), "{stdout}");
    assert!(
        !stdout.contains("tok-s3cr3t") && !stdout.contains("nvapi-"),
        "{stdout}"
    );

    let bad = write(
        dir.path(),
        "riva-bad.toml",
        r#"
[backends.gpu]
type = "riva"
url = "grpc://asr.internal:50051"
api_key_env = "HARK_TEST_NIM_KEY"
[backends.x]
type = "riva"
url = "wss://asr.internal"
language = ""
[profiles.default]
backend = "gpu"
"#,
    );
    let out = hark(&["check-config", "--config", &bad], &[]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success());
    let said = format!("{stdout}{stderr}");
    assert!(
        said.contains("[backends.gpu]") && said.contains("in clear"),
        "{said}"
    );
    assert!(said.contains("HARK_TEST_NIM_KEY"), "{said}");
    assert!(
        said.contains("grpc://") && said.contains("language is empty"),
        "{said}"
    );
}

/// `--endpoint-ms` and `HARK_NARROWBAND_ENDPOINT_MS` out of the range a call's
/// `?endpoint_ms=` has are refused by both commands, naming where they came from.
#[test]
fn endpoint_ms_out_of_range_is_refused_from_flags_and_environment() {
    for (args, env, named) in [
        (&["--endpoint-ms", "10"][..], &[][..], "--endpoint-ms"),
        (
            &[][..],
            &[("HARK_NARROWBAND_ENDPOINT_MS", "99999")][..],
            "HARK_NARROWBAND_ENDPOINT_MS",
        ),
    ] {
        for command in ["check-config", "serve"] {
            let mut argv = vec![command, "--listen", "127.0.0.1:0"];
            argv.extend_from_slice(args);
            let out = hark(&argv, env);
            let (stdout, stderr) = text(&out);
            assert!(!out.status.success(), "{argv:?}: {stdout}\n{stderr}");
            assert!(
                stderr.contains(named) && stderr.contains("must be from 50 to 5000 ms"),
                "{argv:?}: {stderr}"
            );
        }
    }
    let out = hark(&["check-config", "--endpoint-ms", "5000"], &[]);
    assert!(out.status.success(), "{:?}", text(&out));
}

/// `--listen localhost:8095` is refused with what is expected instead, and names
/// `HARK_LISTEN` when the value came from there.
#[test]
fn a_listen_address_that_is_not_ip_port_gets_a_hint_naming_its_source() {
    let out = hark(&["check-config", "--listen", "localhost:8095"], &[]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("IP:PORT") && stderr.contains("127.0.0.1:8080"),
        "{stderr}"
    );
    assert!(!stderr.contains("HARK_LISTEN"), "{stderr}");
    for var in ["HARK_LISTEN", "HARK_ADMIN_LISTEN"] {
        let out = hark(&["check-config"], &[(var, "localhost:8095")]);
        let (_, stderr) = text(&out);
        assert!(!out.status.success());
        assert!(
            stderr.contains("IP:PORT") && stderr.contains(&format!("variable {var}")),
            "{var}: {stderr}"
        );
    }
}

/// A `HARK_…` variable hark does not read is named, with the known one it resembles, and
/// such a typo fails the check (the deploy gate); one like no known name is warned of; the
/// bench's variables and a config's API-key variable pass.
#[test]
fn unknown_hark_variables_are_named_and_a_typo_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "dg.toml",
        "[backends.dg]\ntype = \"deepgram\"\napi_key_env = \"HARK_DG_KEY\"\n",
    );
    let out = hark(
        &["check-config", "--config", &config],
        &[
            ("HARK_LISTN", "0.0.0.0:8080"),
            ("HARK_FROBNICATE", "1"),
            ("HARK_BENCH_SECRET", "bench-secret-value-0123"),
            ("HARK_DG_KEY", "dg-key-value-0123456"),
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "problem: unknown environment variable HARK_LISTN, ignored (did you mean HARK_LISTEN?)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("warning: unknown environment variable HARK_FROBNICATE, ignored\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("config OK"), "{stderr}");
    assert!(
        !stderr.contains("HARK_BENCH_SECRET") && !stderr.contains("HARK_DG_KEY"),
        "{stderr}"
    );
    // The setting it meant was not applied.
    assert!(stdout.contains("listen = \"127.0.0.1:8080\""), "{stdout}");
    // Without the typo, the unknown variable alone is a warning: the check passes.
    let out = hark(
        &["check-config", "--config", &config],
        &[
            ("HARK_FROBNICATE", "1"),
            ("HARK_DG_KEY", "dg-key-value-0123456"),
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("config OK"), "{stderr}");
}

/// An error after the log is set up is said once (a log line), not twice.
#[test]
fn a_serve_error_is_printed_once() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = hark(
        &["serve", "--listen", &addr],
        &[("HARK_CACHE_DIR", "/nonexistent/hark-test-cache")],
    );
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stderr.matches("cannot listen on").count(), 1, "{stderr}");
}

/// A model directory that can never load — a junk `model.bin`, a model of another kind, no
/// tokenizer — is refused by `check-config` and by `serve` before anything starts (a local
/// file that is not a model is no download to retry), naming what is wrong with it.
#[test]
fn a_model_directory_that_can_never_load_is_refused_before_serving() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], bool, &str); 3] = [
        (
            "junk",
            b"not a model at all",
            true,
            "not a CTranslate2 model file",
        ),
        (
            "other",
            // Binary version 6, then the spec's name ("TransformerSpec", NUL-ended).
            &[
                6, 0, 0, 0, 16, 0, b'T', b'r', b'a', b'n', b's', b'f', b'o', b'r', b'm', b'e',
                b'r', b'S', b'p', b'e', b'c', 0,
            ],
            true,
            "not a Whisper one",
        ),
        (
            "untokenized",
            &[
                6, 0, 0, 0, 12, 0, b'W', b'h', b'i', b's', b'p', b'e', b'r', b'S', b'p', b'e',
                b'c', 0,
            ],
            false,
            "tokenizer.json",
        ),
    ];
    for (name, model, tokenizer, says) in cases {
        let model_dir = dir.path().join(name);
        std::fs::create_dir(&model_dir).unwrap();
        std::fs::write(model_dir.join("model.bin"), model).unwrap();
        if tokenizer {
            std::fs::write(model_dir.join("tokenizer.json"), "{}").unwrap();
        }
        let config = write(
            dir.path(),
            &format!("{name}.toml"),
            &format!("[whisper]\nmodel = {:?}\n", model_dir.display().to_string()),
        );
        for command in ["check-config", "serve"] {
            let out = hark(
                &[command, "--config", &config, "--listen", "127.0.0.1:0"],
                &[],
            );
            let (stdout, stderr) = text(&out);
            let said = format!("{stdout}{stderr}");
            assert!(!out.status.success(), "{command} {name}: {said}");
            assert!(
                said.contains("whisper.model") && said.contains(says),
                "{command} {name}: {said}"
            );
        }
    }
}

/// Serving every interface with no credential passes (a private network may want it) but
/// is said, as `assistant-config` says it; on loopback, or with a secret, it is not.
#[test]
fn serving_other_machines_without_a_credential_is_warned_of() {
    let warned = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["check-config"];
        all.extend_from_slice(args);
        let out = hark(&all, env);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        stderr.contains("without a credential")
    };
    assert!(warned(&["--listen", "0.0.0.0:8080"], &[]));
    assert!(!warned(&["--listen", "127.0.0.1:8080"], &[]));
    assert!(!warned(
        &["--listen", "0.0.0.0:8080"],
        &[("HARK_SECRET", "a-secret-of-enough-chars")]
    ));
}
