//! The container image and the Kubernetes manifests, checked without Docker or a cluster:
//! the Dockerfile's steps are parsed and checked, its bake step and its healthcheck run for
//! real with the built binary (offline, from a complete cache), and the manifests' fields
//! that matter are checked against each other, the image and the server's routes.

#[allow(dead_code)]
use hark_testkit::dirs;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_norway::Value;

const HARK: &str = env!("CARGO_BIN_EXE_hark");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// An address nothing listens on: a wheel "fetched" from here can only come from the cache.
const UNREACHABLE_WHEEL: &str = "http://127.0.0.1:9/unreachable.whl";
/// What `Server::run` allows past the drain timeout for calls to flush and close.
const SERVER_FLUSH_SECS: u64 = 10;
/// Resident peaks with the default engine by `max_sessions` (calls, MB), as measured
/// (BENCHMARKS.md, "Memory, resident peak at capacity"); the limit is the peak plus a fifth.
const PEAK_MB: [(u64, f64); 2] = [(64, 461.0), (100, 536.0)];
const MEMORY_MARGIN: f64 = 1.2;
/// The fewest calls one 2-core pod held before refusing, on the slowest CPU measured
/// (machine F's ramp, BENCHMARKS.md "End of turn"): the sessions HPA must scale out below it.
const SLOWEST_POD_CALLS: f64 = 14.0;

/// One Dockerfile instruction, continuation lines joined and comments dropped.
#[derive(Debug, Clone)]
struct Step {
    /// 0 for the first `FROM`'s stage, 1 for the next, …
    stage: usize,
    keyword: String,
    args: String,
}

fn dockerfile() -> Vec<Step> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("Dockerfile")).expect("Dockerfile");
    let mut steps = Vec::new();
    let mut line = String::new();
    let mut stage = None::<usize>;
    for raw in text.lines() {
        let trimmed = raw.trim();
        // Comment lines are dropped, inside a continuation too (as Docker does).
        if trimmed.starts_with('#') || (trimmed.is_empty() && line.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                line.push_str(part.trim());
                line.push(' ');
                continue;
            }
            None => line.push_str(trimmed),
        }
        let full = std::mem::take(&mut line);
        let (keyword, args) = full.split_once(char::is_whitespace).unwrap_or((&full, ""));
        let keyword = keyword.to_ascii_uppercase();
        if keyword == "FROM" {
            stage = Some(stage.map_or(0, |s| s + 1));
        }
        steps.push(Step {
            stage: stage.expect("the Dockerfile starts with FROM"),
            keyword,
            args: args.trim().to_owned(),
        });
    }
    steps
}

fn steps<'a>(all: &'a [Step], stage: usize, keyword: &str) -> Vec<&'a Step> {
    all.iter()
        .filter(|s| s.stage == stage && s.keyword == keyword)
        .collect()
}

/// `ENV K=V K=V` of a stage, in order.
fn env_of(all: &[Step], stage: usize) -> BTreeMap<String, String> {
    steps(all, stage, "ENV")
        .iter()
        .flat_map(|s| s.args.split_whitespace())
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("ENV in K=V form");
            (k.to_owned(), v.trim_matches('"').to_owned())
        })
        .collect()
}

/// The JSON array of an exec-form instruction (`["hark", "serve"]`).
fn exec_form(args: &str) -> Vec<String> {
    serde_json::from_str(args).unwrap_or_else(|e| panic!("exec form expected: {args:?}: {e}"))
}

struct Image {
    env: BTreeMap<String, String>,
    listen: SocketAddr,
    user: u32,
    fetch: Vec<String>,
    healthcheck: Vec<String>,
    command: Vec<String>,
}

/// The runtime stage's settings, each checked on the way.
fn image() -> Image {
    let all = dockerfile();
    let froms = steps(&all, 0, "FROM");
    let runtime = all.iter().map(|s| s.stage).max().expect("steps");
    assert_eq!(runtime, 1, "two stages: builder and runtime");
    let builder: Vec<&str> = froms[0].args.split_whitespace().collect();
    assert!(
        builder[0].starts_with("rust:") && builder[0].contains("bookworm"),
        "builder on Rust over Debian bookworm: {builder:?}"
    );
    assert_eq!(builder[1..], ["AS", "builder"], "{builder:?}");
    let from = &steps(&all, runtime, "FROM")[0].args;
    assert_eq!(
        from.split_whitespace().next(),
        Some("debian:bookworm-slim"),
        "runtime on the same Debian as the builder"
    );

    // The builder compiles the locked release binary from what the build context holds.
    let build = steps(&all, 0, "RUN")
        .into_iter()
        .find(|s| s.args.contains("cargo build"))
        .expect("a cargo build step");
    for flag in ["--release", "--locked", "--bin hark"] {
        assert!(build.args.contains(flag), "{flag} in {:?}", build.args);
    }
    let ignored: Vec<String> = std::fs::read_to_string(Path::new(ROOT).join(".dockerignore"))
        .expect(".dockerignore")
        .lines()
        .map(|l| l.trim().trim_end_matches('/').to_owned())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(ignored.iter().any(|l| l == "target"), "target/ stays out");
    for copy in steps(&all, 0, "COPY") {
        let words: Vec<&str> = copy.args.split_whitespace().collect();
        for src in &words[..words.len() - 1] {
            assert!(
                Path::new(ROOT).join(src).exists(),
                "COPY {src}: no such file"
            );
            assert!(!ignored.iter().any(|i| i == src), "COPY {src}: ignored");
        }
    }
    // Cargo resolves the whole workspace even for one binary: every member must be there.
    let manifest = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).expect("Cargo.toml");
    let members = manifest
        .lines()
        .find_map(|l| l.strip_prefix("members = "))
        .expect("a workspace members line");
    let copied: Vec<String> = steps(&all, 0, "COPY")
        .iter()
        .map(|c| c.args.clone())
        .collect();
    for member in members.trim_matches(['[', ']']).split(',') {
        let member = member.trim().trim_matches('"');
        if member != "." {
            assert!(
                copied.iter().any(|c| c.starts_with(&format!("{member} "))),
                "workspace member {member} is copied into the build: {copied:?}"
            );
        }
    }
    // The server's build script and what it compiles (the riva backend's protos).
    for needed in ["build.rs", "proto"] {
        assert!(
            copied.iter().any(|c| c.starts_with(&format!("{needed} "))),
            "{needed} is copied into the build: {copied:?}"
        );
    }
    let copy = steps(&all, runtime, "COPY");
    assert!(
        copy.iter().any(
            |c| c.args.starts_with("--from=builder") && c.args.ends_with("/usr/local/bin/hark")
        ),
        "the binary comes from the builder: {copy:?}"
    );

    let env = env_of(&all, runtime);
    let listen: SocketAddr = env["HARK_LISTEN"].parse().expect("HARK_LISTEN");
    assert!(listen.ip().is_unspecified(), "listens on every interface");
    assert!(Path::new(&env["HARK_CACHE_DIR"]).is_absolute(), "{env:?}");
    let expose = &steps(&all, runtime, "EXPOSE")[0].args;
    assert_eq!(
        expose.trim_end_matches("/tcp").parse::<u16>().ok(),
        Some(listen.port()),
        "EXPOSE matches HARK_LISTEN"
    );
    assert_eq!(steps(&all, runtime, "STOPSIGNAL")[0].args, "SIGTERM");

    // Baked as root after HARK_CACHE_DIR is set (so into it), before the switch to the
    // unprivileged user (so it cannot write there later).
    let position = |pred: &dyn Fn(&Step) -> bool| {
        all.iter()
            .position(|s| s.stage == runtime && pred(s))
            .expect("step present")
    };
    let fetch_at = position(&|s| s.keyword == "RUN" && s.args.starts_with("hark fetch"));
    let env_at = position(&|s| s.keyword == "ENV" && s.args.contains("HARK_CACHE_DIR="));
    let user_at = position(&|s| s.keyword == "USER");
    assert!(
        env_at < fetch_at && fetch_at < user_at,
        "ENV, then fetch, then USER"
    );
    let fetch: Vec<String> = all[fetch_at]
        .args
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let user = &all[user_at].args;
    let uid: u32 = user
        .split(':')
        .next()
        .and_then(|u| u.parse().ok())
        .unwrap_or_else(|| panic!("USER numeric, for runAsNonRoot: {user:?}"));
    assert_ne!(uid, 0, "USER is not root");

    let check = &steps(&all, runtime, "HEALTHCHECK")[0].args;
    let (_, cmd) = check.split_once("CMD ").expect("HEALTHCHECK … CMD");
    let healthcheck = exec_form(cmd);
    // No URL: it probes what the server listens on, read from the same environment
    // (HARK_LISTEN, HARK_TLS_CERT), so TLS or another port need no change here.
    assert_eq!(healthcheck, ["hark", "healthcheck"], "needs no curl");

    let mut command = exec_form(&steps(&all, runtime, "ENTRYPOINT")[0].args);
    command.extend(exec_form(&steps(&all, runtime, "CMD")[0].args));
    assert_eq!(command, ["hark", "serve"]);
    Image {
        env,
        listen,
        user: uid,
        fetch,
        healthcheck,
        command,
    }
}

#[test]
fn dockerfile_steps() {
    let image = image();
    assert_eq!(image.fetch[..2], ["hark", "fetch"]);
    assert_eq!(image.env["HARK_LISTEN"], "0.0.0.0:8080");
}

/// The dev cache, completed first if this machine has not fetched the engine yet.
fn complete_cache() -> PathBuf {
    let cache = dirs::cache_dir();
    let opts = hark::wheel::FetchOptions {
        cache_dir: cache.clone(),
        ..Default::default()
    };
    hark::wheel::ensure_engine(&opts).expect("engine in the dev cache");
    hark::turn::ensure(cache.clone()).expect("turn model and its onnxruntime in the dev cache");
    let whisper = hark::backend::whisper::WhisperConfig {
        cache_dir: Some(cache.clone()),
        ..Default::default()
    };
    hark::backend::whisper::ensure_model(&whisper).expect("Whisper model in the dev cache");
    hark::backend::whisper::ensure_final_model(&whisper)
        .expect("Whisper finals' model in the dev cache");
    cache
}

/// `hark ARGS…` (the image's argv without its leading `hark`) with the image's ENV, the
/// cache dir and listen address overridden, and every wheel URL unreachable.
fn hark(image: &Image, argv: &[String], cache: &Path, listen: Option<SocketAddr>) -> Command {
    assert_eq!(argv[0], "hark");
    let mut cmd = Command::new(HARK);
    cmd.args(&argv[1..])
        .env_remove("HARK_CONFIG")
        .envs(&image.env)
        .env("HARK_CACHE_DIR", cache)
        .env("HARK_MOONSHINE_WHEEL", UNREACHABLE_WHEEL)
        .env("HARK_WHISPER_WHEELS", UNREACHABLE_WHEEL)
        .env(
            "HARK_WHISPER_FINAL_WHEELS",
            format!("{UNREACHABLE_WHEEL},{UNREACHABLE_WHEEL}"),
        )
        .env("HARK_TURN_WHEEL", UNREACHABLE_WHEEL)
        .env("HARK_ONNXRUNTIME_WHEEL", UNREACHABLE_WHEEL);
    if let Some(listen) = listen {
        cmd.env("HARK_LISTEN", listen.to_string());
    }
    cmd
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn bake_step_verifies_a_complete_cache_offline_and_fetches_into_an_empty_one() {
    let image = image();
    let cache = complete_cache();

    let out = hark(&image, &image.fetch, &cache, None)
        .output()
        .expect("run hark fetch");
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let engine = stdout
        .lines()
        .find_map(|l| l.strip_prefix("moonshine\t"))
        .unwrap_or_else(|| panic!("engine line: {}", text(&out)));
    assert!(
        engine.starts_with(&*cache.to_string_lossy()) && engine.contains("libmoonshine "),
        "the engine was found in the cache and its library loaded: {engine}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("whisper\t")),
        "the default engine, Whisper, is baked too: {}",
        text(&out)
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("turn-model\t")),
        "--turn-model bakes the turn model too: {}",
        text(&out)
    );

    // An empty cache needs the wheel: the step really fetches, and says so when it cannot.
    let empty = tempfile::tempdir().expect("temp dir");
    let out = hark(&image, &image.fetch, empty.path(), None)
        .output()
        .expect("run hark fetch");
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("could not download") && stderr.contains("--moonshine-wheel"),
        "{}",
        text(&out)
    );
}

/// A free loopback port (bound, then released for the child to take).
fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
}

/// A plain HTTP GET: the status, or None when nothing answers.
fn get_status(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    buf.split_whitespace().nth(1)?.parse().ok()
}

/// Kills the child if a test fails before it stops it.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The image's HEALTHCHECK command with the image's environment, the server on `addr`.
fn healthcheck(image: &Image, addr: SocketAddr) -> Output {
    Command::new(HARK)
        .args(&image.healthcheck[1..])
        .env_clear()
        .envs(&image.env)
        .env("HARK_LISTEN", addr.to_string())
        .output()
        .expect("run hark healthcheck")
}

/// `hark healthcheck URL`.
fn healthcheck_url(url: &str) -> Output {
    Command::new(HARK)
        .args(["healthcheck", url])
        .output()
        .expect("run hark healthcheck")
}

#[test]
fn image_command_serves_from_the_baked_cache_and_passes_its_healthcheck() {
    let image = image();
    let cache = complete_cache();
    let deployment = &manifest("deployment.yaml");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let probe_path = |probe: &str| {
        container[probe]["httpGet"]["path"]
            .as_str()
            .unwrap_or_else(|| panic!("{probe} path"))
            .to_owned()
    };
    let addr = free_port();

    let before = healthcheck(&image, addr);
    assert!(
        !before.status.success(),
        "nothing listens yet: {}",
        text(&before)
    );

    let child = hark(&image, &image.command, &cache, Some(addr))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start hark serve");
    let mut server = Running(child);

    // Generous: the engine loads while other tests may be using every core.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if get_status(addr, &probe_path("readinessProbe")) == Some(200) {
            break;
        }
        assert!(
            server.0.try_wait().expect("child status").is_none(),
            "hark serve exited; it must need no download with a baked cache"
        );
        assert!(Instant::now() < deadline, "not ready within 300 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(get_status(addr, &probe_path("livenessProbe")), Some(200));
    assert_eq!(get_status(addr, &probe_path("startupProbe")), Some(200));
    let ok = healthcheck(&image, addr);
    assert!(ok.status.success(), "{}", text(&ok));
    let ok = healthcheck_url(&format!("http://{addr}/healthz"));
    assert!(ok.status.success(), "{}", text(&ok));
    let missing = healthcheck_url(&format!("http://{addr}/no-such-route"));
    assert!(
        !missing.status.success(),
        "a 404 is unhealthy: {}",
        text(&missing)
    );

    // docker stop: SIGTERM, and hark exits cleanly with no call to drain.
    // SAFETY: a plain kill(2) on our own child.
    let killed = unsafe { libc::kill(server.0.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(killed, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = server.0.try_wait().expect("child status") {
            break status;
        }
        assert!(Instant::now() < deadline, "hark did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status}");
    let after = healthcheck(&image, addr);
    assert!(!after.status.success(), "{}", text(&after));
    assert_ne!(image.user, 0);
    assert!(image.listen.ip().is_unspecified());
}

fn manifest(name: &str) -> Value {
    let path = Path::new(ROOT).join("deploy/kubernetes").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn str_of<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("{what}: string expected, got {v:?}"))
}

fn labels(v: &Value) -> BTreeMap<String, String> {
    serde_norway::from_value(v.clone()).unwrap_or_else(|e| panic!("labels {v:?}: {e}"))
}

/// Every `key: value` of `selector` is among `labels`.
fn selects(selector: &Value, pod: &BTreeMap<String, String>) -> bool {
    let selector = labels(selector);
    !selector.is_empty() && selector.iter().all(|(k, v)| pod.get(k) == Some(v))
}

/// A CPU quantity in millicores ("2", 2, "1500m").
fn millicores(v: &Value) -> u64 {
    match v {
        Value::Number(n) => n.as_u64().expect("whole CPUs") * 1000,
        Value::String(s) => match s.strip_suffix('m') {
            Some(m) => m.parse().expect("millicores"),
            None => s.parse::<u64>().expect("CPUs") * 1000,
        },
        _ => panic!("cpu quantity {v:?}"),
    }
}

/// A memory quantity in bytes ("640Mi", "1Gi", "700M", "700000000").
fn bytes(v: &Value) -> u64 {
    let s = match v {
        Value::Number(n) => return n.as_u64().expect("bytes"),
        Value::String(s) => s.as_str(),
        _ => panic!("memory quantity {v:?}"),
    };
    let units = [
        ("Ki", 1u64 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
    ];
    for (suffix, unit) in units {
        if let Some(n) = s.strip_suffix(suffix) {
            return n.parse::<u64>().expect("memory quantity") * unit;
        }
    }
    s.parse().expect("memory quantity")
}

fn env_value<'a>(container: &'a Value, name: &str) -> &'a Value {
    container["env"]
        .as_sequence()
        .expect("env list")
        .iter()
        .find(|e| e["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("env {name} set"))
}

#[test]
fn kubernetes_manifests_agree_with_the_image_and_each_other() {
    let image = image();
    let deployment = manifest("deployment.yaml");
    assert_eq!(deployment["kind"].as_str(), Some("Deployment"));
    let name = str_of(&deployment["metadata"]["name"], "deployment name");
    let pod = &deployment["spec"]["template"];
    let pod_labels = labels(&pod["metadata"]["labels"]);
    assert!(selects(
        &deployment["spec"]["selector"]["matchLabels"],
        &pod_labels
    ));
    let spec = &pod["spec"];
    let container = &spec["containers"][0];

    // Ports and probes: the server's listen port, its routes (served for real in
    // image_command_serves_from_the_baked_cache_and_passes_its_healthcheck).
    let listen: SocketAddr = str_of(&env_value(container, "HARK_LISTEN")["value"], "HARK_LISTEN")
        .parse()
        .expect("HARK_LISTEN");
    assert_eq!(listen.port(), image.listen.port());
    let port = &container["ports"][0];
    assert_eq!(
        port["containerPort"].as_u64(),
        Some(u64::from(listen.port()))
    );
    let port_name = str_of(&port["name"], "port name");
    // Metrics and readiness on an address of their own (admin_listen), which the Service
    // does not expose: the call port then serves only calls and /healthz.
    let admin: SocketAddr = str_of(
        &env_value(container, "HARK_ADMIN_LISTEN")["value"],
        "HARK_ADMIN_LISTEN",
    )
    .parse()
    .expect("HARK_ADMIN_LISTEN");
    assert_ne!(admin.port(), listen.port());
    let admin_port = container["ports"]
        .as_sequence()
        .expect("ports")
        .iter()
        .find(|p| p["containerPort"].as_u64() == Some(u64::from(admin.port())))
        .expect("a container port for HARK_ADMIN_LISTEN");
    let admin_name = str_of(&admin_port["name"], "admin port name");
    for (probe, path, name, number) in [
        ("startupProbe", "/healthz", port_name, listen.port()),
        ("livenessProbe", "/healthz", port_name, listen.port()),
        ("readinessProbe", "/readyz", admin_name, admin.port()),
    ] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["path"].as_str(), Some(path), "{probe}");
        let probe_port = &get["port"];
        assert!(
            probe_port.as_str() == Some(name) || probe_port.as_u64() == Some(u64::from(number)),
            "{probe} port {probe_port:?}"
        );
    }
    let annotations = &pod["metadata"]["annotations"];
    assert_eq!(
        annotations["prometheus.io/port"].as_str(),
        Some(admin.port().to_string().as_str()),
        "Prometheus scrapes the admin port"
    );
    // Readiness drops a pod from the endpoints at its first 503 (capacity, draining).
    assert_eq!(
        container["readinessProbe"]["failureThreshold"].as_u64(),
        Some(1)
    );

    // Shutdown: endpoints go first (preStop), then the drain, all within the grace period.
    let pre_stop = &container["lifecycle"]["preStop"];
    let pre_stop_secs: u64 = match pre_stop["sleep"]["seconds"].as_u64() {
        Some(s) => s,
        None => {
            let cmd: Vec<&str> = pre_stop["exec"]["command"]
                .as_sequence()
                .expect("preStop sleep")
                .iter()
                .map(|c| str_of(c, "preStop command"))
                .collect();
            assert_eq!(cmd.len(), 2, "{cmd:?}");
            assert!(cmd[0] == "sleep" || cmd[0] == "/bin/sleep", "{cmd:?}");
            cmd[1].parse().expect("preStop sleep seconds")
        }
    };
    assert!(pre_stop_secs >= 5, "long enough for endpoints to update");
    let drain_ms: u64 = str_of(
        &env_value(container, "HARK_DRAIN_TIMEOUT_MS")["value"],
        "HARK_DRAIN_TIMEOUT_MS",
    )
    .parse()
    .expect("HARK_DRAIN_TIMEOUT_MS");
    let grace = spec["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("terminationGracePeriodSeconds");
    assert!(
        grace >= pre_stop_secs + drain_ms.div_ceil(1000) + SERVER_FLUSH_SECS,
        "grace {grace} s < preStop {pre_stop_secs} s + drain {drain_ms} ms + {SERVER_FLUSH_SECS} s"
    );

    // Guaranteed QoS with whole CPUs, for the static CPU manager.
    let resources = &container["resources"];
    assert_eq!(
        resources["requests"], resources["limits"],
        "requests == limits"
    );
    for what in ["cpu", "memory"] {
        assert!(!resources["limits"][what].is_null(), "{what} limit");
    }
    let cpu = millicores(&resources["limits"]["cpu"]);
    assert!(
        cpu >= 1000 && cpu.is_multiple_of(1000),
        "whole CPUs: {cpu}m"
    );
    // Memory: the measured peak at the pod's max_sessions (the default unless the manifest
    // sets one), plus the margin; an OOM kill ends every call on the pod.
    let max_sessions: u64 = container["env"]
        .as_sequence()
        .expect("env")
        .iter()
        .find(|e| e["name"].as_str() == Some("HARK_MAX_SESSIONS"))
        .map(|e| {
            str_of(&e["value"], "HARK_MAX_SESSIONS")
                .parse()
                .expect("calls")
        })
        .unwrap_or(hark::config::Config::default().max_sessions as u64);
    let (_, peak) = PEAK_MB
        .iter()
        .find(|(calls, _)| *calls >= max_sessions)
        .unwrap_or_else(|| panic!("no measured peak for max_sessions {max_sessions}"));
    let limit_mb = bytes(&resources["limits"]["memory"]) as f64 / 1e6;
    assert!(
        limit_mb >= peak * MEMORY_MARGIN,
        "memory limit {limit_mb:.0} MB < {peak} MB (the peak at {max_sessions} calls) × {MEMORY_MARGIN}"
    );

    // Non-root (the image's numeric user), read-only root, no way up.
    let pod_security = &spec["securityContext"];
    assert_eq!(pod_security["runAsNonRoot"].as_bool(), Some(true));
    assert_eq!(
        pod_security["runAsUser"].as_u64(),
        Some(u64::from(image.user))
    );
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(security["allowPrivilegeEscalation"].as_bool(), Some(false));
    // The baked cache is used as it is; the secret comes from a Secret, never a literal.
    assert!(
        container["env"]
            .as_sequence()
            .expect("env")
            .iter()
            .all(|e| e["name"].as_str() != Some("HARK_CACHE_DIR")),
        "HARK_CACHE_DIR stays the image's"
    );
    let secret = env_value(container, "HARK_SECRET");
    assert!(secret["value"].is_null(), "no literal secret");
    assert!(!secret["valueFrom"]["secretKeyRef"]["name"].is_null());

    let service = manifest("service.yaml");
    assert!(
        selects(&service["spec"]["selector"], &pod_labels),
        "Service selects the pods"
    );
    for p in service["spec"]["ports"]
        .as_sequence()
        .expect("service ports")
    {
        let target = &p["targetPort"];
        assert!(
            target.as_str() != Some(admin_name) && target.as_u64() != Some(u64::from(admin.port())),
            "the Service does not expose the admin port"
        );
    }
    let target = &service["spec"]["ports"][0]["targetPort"];
    assert!(
        target.as_str() == Some(port_name) || target.as_u64() == Some(u64::from(listen.port()))
    );
    let service_name = str_of(&service["metadata"]["name"], "service name");
    let service_port = str_of(&service["spec"]["ports"][0]["name"], "service port name");

    for file in ["hpa.yaml", "hpa-sessions.yaml"] {
        let hpa = manifest(file);
        assert_eq!(
            hpa["kind"].as_str(),
            Some("HorizontalPodAutoscaler"),
            "{file}"
        );
        let target = &hpa["spec"]["scaleTargetRef"];
        assert_eq!(target["kind"].as_str(), Some("Deployment"), "{file}");
        assert_eq!(target["name"].as_str(), Some(name), "{file}");
        assert!(hpa["spec"]["minReplicas"].as_u64() >= Some(2), "{file}");
        assert!(hpa["spec"]["maxReplicas"].as_u64() > hpa["spec"]["minReplicas"].as_u64());
    }
    let sessions = manifest("hpa-sessions.yaml");
    assert_eq!(
        sessions["spec"]["metrics"][0]["pods"]["metric"]["name"].as_str(),
        Some(hark::metrics::SESSIONS_ACTIVE),
        "the custom metric is the one hark exports"
    );
    // Half of what the slowest pod measured holds: a target above a pod's capacity never
    // scales out, and the calls it refuses go to the platform's fallback.
    let target: f64 = str_of(
        &sessions["spec"]["metrics"][0]["pods"]["target"]["averageValue"],
        "averageValue",
    )
    .parse()
    .expect("calls per pod");
    assert!(
        target <= SLOWEST_POD_CALLS / 2.0,
        "hpa-sessions targets {target} calls a pod; the slowest pod measured held {SLOWEST_POD_CALLS}"
    );

    let pdb = manifest("pdb.yaml");
    assert_eq!(pdb["kind"].as_str(), Some("PodDisruptionBudget"));
    assert!(selects(
        &pdb["spec"]["selector"]["matchLabels"],
        &pod_labels
    ));

    let ingress = manifest("ingress.yaml");
    let annotations = &ingress["metadata"]["annotations"];
    for key in ["proxy-read-timeout", "proxy-send-timeout"] {
        let secs: u64 = str_of(
            &annotations[format!("nginx.ingress.kubernetes.io/{key}").as_str()],
            key,
        )
        .parse()
        .expect("seconds");
        assert!(secs >= 43_200, "{key} {secs} s: calls last up to 12 hours");
    }
    let backend = &ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"];
    assert_eq!(backend["name"].as_str(), Some(service_name));
    assert_eq!(backend["port"]["name"].as_str(), Some(service_port));

    let kustomization = manifest("kustomization.yaml");
    let resources: Vec<&str> = kustomization["resources"]
        .as_sequence()
        .expect("resources")
        .iter()
        .map(|r| str_of(r, "resource"))
        .collect();
    for file in &resources {
        manifest(file);
    }
    for file in ["deployment.yaml", "service.yaml", "hpa.yaml", "pdb.yaml"] {
        assert!(resources.contains(&file), "{file} in kustomization.yaml");
    }
}

/// The Riva overlay: its patch names the base's container and points HARK_CONFIG at where
/// it mounts the ConfigMap, and the config it ships passes `hark check-config`.
#[test]
fn the_riva_overlay_mounts_a_config_hark_accepts() {
    let patch = manifest("riva/config-patch.yaml");
    let base = manifest("deployment.yaml");
    let name = |d: &Value| {
        str_of(
            &d["spec"]["template"]["spec"]["containers"][0]["name"],
            "container name",
        )
        .to_string()
    };
    assert_eq!(
        name(&patch),
        name(&base),
        "the patch merges into the base's container"
    );
    let container = &patch["spec"]["template"]["spec"]["containers"][0];
    let config = str_of(&env_value(container, "HARK_CONFIG")["value"], "HARK_CONFIG");
    let mount = str_of(&container["volumeMounts"][0]["mountPath"], "mountPath");
    assert_eq!(Path::new(config).parent(), Some(Path::new(mount)));
    let kustomization = manifest("riva/kustomization.yaml");
    let file = str_of(&kustomization["configMapGenerator"][0]["files"][0], "files");
    assert_eq!(Path::new(config).file_name(), Path::new(file).file_name());

    let path = Path::new(ROOT).join("deploy/kubernetes/riva").join(file);
    let out = Command::new(env!("CARGO_BIN_EXE_hark"))
        .args(["check-config", "--config"])
        .arg(&path)
        .env_clear()
        .output()
        .expect("hark runs");
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("type = \"riva\""), "{}", text(&out));
}
