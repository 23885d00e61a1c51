//! `hark assistant-config` run as the real binary: what it prints, and what `--apply` sends
//! to a stand-in for the platform's REST API on loopback (requests recorded, answers shaped
//! like the platform's), including the failures a user meets: a wrong id, a bad key, nothing
//! listening. The API key must never show up in anything the command prints.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{Value, json};

const BASE: &str = "wss://hark.example.com/api/custom-transcriber";
const KEY: &str = "sk-test-7f3a9c0e2b";
const TOKEN: &str = "tok-new-51d2-7a8b";
/// Long enough for hark serve, which refuses secrets under 16 characters.
const SECRET: &str = "s3cret-0123456789abcdef";
const OLD_SECRET: &str = "old-secret-88e1";

/// Runs `hark assistant-config ARGS` with a clean environment for the variables it reads.
fn hark(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hark"));
    cmd.arg("assistant-config").args(args);
    for var in [
        "VAPI_API_KEY",
        "HARK_CONFIG",
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("hark runs")
}

/// `--url BASE --secret s --apply ID --api-url API`.
fn apply_args<'a>(id: &'a str, api_url: &'a str) -> Vec<&'a str> {
    vec![
        "--url",
        BASE,
        "--secret",
        SECRET,
        "--apply",
        id,
        "--api-url",
        api_url,
    ]
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn printed_json(args: &[&str]) -> Value {
    let out = hark(args, &[]);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    assert_eq!(stderr(&out), "", "{args:?}: no warnings expected");
    serde_json::from_str(&stdout(&out)).expect("stdout is JSON")
}

fn assert_fails_with(out: &Output, wants: &[&str]) {
    assert!(!out.status.success(), "should fail: {}", stdout(out));
    let err = stderr(out);
    for want in wants {
        assert!(err.contains(want), "stderr lacks {want:?}:\n{err}");
    }
}

/// Neither the API key nor any credential may reach the terminal.
fn assert_no_leak(out: &Output, secrets: &[&str]) {
    for s in secrets {
        assert!(
            !stdout(out).contains(s),
            "stdout shows {s:?}:\n{}",
            stdout(out)
        );
        assert!(
            !stderr(out).contains(s),
            "stderr shows {s:?}:\n{}",
            stderr(out)
        );
    }
}

#[test]
fn prints_secret_transcriber() {
    assert_eq!(
        printed_json(&["--url", BASE, "--secret", SECRET]),
        json!({"provider": "custom-transcriber", "server": {"url": BASE, "secret": SECRET},
               "fallbackPlan": {"transcribers": [{"provider": "deepgram", "model": "nova-3"}],
                                "autoFallback": {"enabled": false}}})
    );
}

#[test]
fn prints_bearer_transcriber() {
    assert_eq!(
        printed_json(&["--url", BASE, "--bearer", TOKEN, "--no-fallback"]),
        json!({"provider": "custom-transcriber",
               "server": {"url": BASE, "headers": {"Authorization": format!("Bearer {TOKEN}")}}})
    );
}

#[test]
fn prints_squad_members() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hark.toml");
    std::fs::write(
        &config,
        "[profiles.sales]\n[profiles.support-es]\noptions = { endpoint_ms = 300 }\n",
    )
    .unwrap();
    let config = config.to_string_lossy().into_owned();
    let got = printed_json(&[
        "--url",
        BASE,
        "--bearer",
        TOKEN,
        "--squad",
        "sales=sales,support=support-es",
        "--no-fallback",
        "--config",
        &config,
    ]);
    // A member on a profile the server does not have is refused, naming the ones it has.
    let out = hark(
        &[
            "--url",
            BASE,
            "--bearer",
            TOKEN,
            "--squad",
            "sales=nosuch",
            "--config",
            &config,
        ],
        &[],
    );
    assert_fails_with(
        &out,
        &["no profile \"nosuch\"", "default, sales, support-es"],
    );
    assert!(out.stdout.is_empty());
    // Without the config, the entries are written with a warning that nothing checked them.
    let out = hark(
        &["--url", BASE, "--bearer", TOKEN, "--squad", "sales=nosuch"],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("were not checked"),
        "{}",
        stderr(&out)
    );
    let member = |name: &str, profile: &str| {
        json!({"name": name, "assistantOverrides": {"transcriber": {
            "provider": "custom-transcriber",
            "server": {"url": format!("{BASE}/{profile}"),
                       "headers": {"Authorization": format!("Bearer {TOKEN}")}}}}})
    };
    assert_eq!(
        got,
        json!([member("sales", "sales"), member("support", "support-es")])
    );
}

#[test]
fn refuses_bad_arguments() {
    let out = hark(
        &["--url", "https://hark.example.com/api/custom-transcriber"],
        &[],
    );
    assert_fails_with(&out, &["must be a websocket URL", "wss://"]);
    assert!(out.stdout.is_empty());

    let out = hark(&["--url", BASE, "--secret", "a", "--bearer", "b"], &[]);
    assert_fails_with(&out, &["--secret", "cannot be used with", "--bearer"]);

    let out = hark(&["--url", BASE, "--squad", "sales:sales"], &[]);
    assert_fails_with(&out, &["is not NAME=PROFILE"]);
    let out = hark(&["--url", BASE, "--squad", "sales=a.b"], &[]);
    assert_fails_with(&out, &["profile \"a.b\"", "A-Z, a-z, 0-9, _ and -"]);
    let out = hark(&["--url", &format!("{BASE}/sales"), "--squad", "a=b"], &[]);
    assert_fails_with(&out, &["with --squad, --url must be the base URL"]);

    let out = hark(
        &["--url", BASE, "--squad", "a=b", "--apply", "asst-1"],
        &[("VAPI_API_KEY", KEY)],
    );
    assert_fails_with(&out, &["a squad is not an assistant"]);
}

#[test]
fn warns_on_unencrypted_websocket() {
    let out = hark(
        &[
            "--url",
            "ws://hark.example.com/api/custom-transcriber",
            "--secret",
            SECRET,
        ],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning") && err.contains("unencrypted"),
        "{err}"
    );
    let v: Value = serde_json::from_str(&stdout(&out)).expect("still prints the JSON");
    assert_eq!(
        v["server"]["url"],
        "ws://hark.example.com/api/custom-transcriber"
    );
}

/// A URL with a trailing slash is written without it, and says so; a credential hark serve
/// would refuse is refused here, without echoing it; what leaves the call unprotected or
/// the fallback other than asked is warned about, and still printed.
#[test]
fn writes_only_what_hark_serve_accepts_and_warns_about_what_it_leaves_out() {
    let out = hark(&["--url", &format!("{BASE}/"), "--secret", SECRET], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: the trailing '/' was removed"),
        "{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_str(&stdout(&out)).expect("prints the JSON");
    assert_eq!(v["server"]["url"], BASE);

    for (flag, value) in [("--secret", "s3cret"), ("--bearer", "tok-new-51d2")] {
        let out = hark(&["--url", BASE, flag, value], &[]);
        assert_fails_with(
            &out,
            &[
                flag,
                "hark serve refuses",
                "16 characters",
                "openssl rand -hex 32",
            ],
        );
        assert!(out.stdout.is_empty(), "nothing printed");
        assert_no_leak(&out, &[value]);
    }

    let out = hark(&["--url", BASE], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning: no --secret or --bearer") && err.contains("401"),
        "{err}"
    );

    let out = hark(&["--url", BASE, "--secret", SECRET, "--auto-fallback"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("empty list of transcribers"),
        "{}",
        stderr(&out)
    );

    let other = "wss://hark-b.example.com/api/custom-transcriber";
    let out = hark(
        &["--url", BASE, "--secret", SECRET, "--fallback-url", other],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("replaces the default fallback deepgram:nova-3")
            && err.contains("add --fallback-provider deepgram:nova-3"),
        "{err}"
    );
    assert!(
        !err.contains(SECRET),
        "a warning never shows the secret: {err}"
    );
}

/// One request as the stand-in API saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    authorization: Option<String>,
    content_type: Option<String>,
    body: String,
}

/// A loopback HTTP/1.1 server answering each request with `answer(request)`.
struct MockApi {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl MockApi {
    fn start(answer: impl Fn(&Seen) -> (u16, String) + Send + Sync + 'static) -> MockApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(answer);
        let log = seen.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, answer) = (log.clone(), answer.clone());
                thread::spawn(move || serve(stream, &log, &*answer));
            }
        });
        MockApi { url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Seen>>, answer: &dyn Fn(&Seen) -> (u16, String)) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_owned();
        let path = parts.next().unwrap_or("").to_owned();
        let (mut authorization, mut content_type, mut length) = (None, None, 0usize);
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((name, value)) = h.split_once(':') {
                let value = value.trim().to_owned();
                match name.trim().to_ascii_lowercase().as_str() {
                    "authorization" => authorization = Some(value),
                    "content-type" => content_type = Some(value),
                    "content-length" => length = value.parse().expect("content-length"),
                    "transfer-encoding" => panic!("unexpected transfer-encoding {value}"),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).expect("body");
        let request = Seen {
            method,
            path,
            authorization,
            content_type,
            body: String::from_utf8(body).expect("utf-8 body"),
        };
        let (status, reply) = answer(&request);
        log.lock().unwrap().push(request);
        let head = format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: application/json; charset=utf-8\r\n\
             Content-Length: {}\r\n\r\n",
            reason(status),
            reply.len()
        );
        if writer.write_all(head.as_bytes()).is_err() || writer.write_all(reply.as_bytes()).is_err()
        {
            return;
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        401 => "Unauthorized",
        404 => "Not Found",
        _ => "Whatever",
    }
}

fn old_assistant() -> Value {
    json!({
        "id": "asst-1",
        "orgId": "org-1",
        "name": "Support",
        "transcriber": {
            "provider": "custom-transcriber",
            "server": {"url": "wss://old.example.com/api/custom-transcriber",
                       "secret": OLD_SECRET}
        },
        "model": {"provider": "openai", "model": "gpt-4o"},
        "createdAt": "2025-01-01T00:00:00.000Z",
        "updatedAt": "2025-01-01T00:00:00.000Z"
    })
}

/// Answers like the platform: GET gives the assistant, PATCH merges the body into it and
/// gives back the updated assistant, with `extra` merged into the stored transcriber.
fn platform(extra: Value) -> impl Fn(&Seen) -> (u16, String) + Send + Sync + 'static {
    let state = Mutex::new(old_assistant());
    move |req: &Seen| {
        if req.path != "/assistant/asst-1" {
            return (
                404,
                json!({"message": "Not Found", "statusCode": 404}).to_string(),
            );
        }
        let mut assistant = state.lock().unwrap();
        match req.method.as_str() {
            "GET" => (200, assistant.to_string()),
            "PATCH" => {
                let patch: Value = serde_json::from_str(&req.body).expect("PATCH body is JSON");
                for (k, v) in patch.as_object().expect("PATCH body is an object") {
                    assistant[k] = v.clone();
                }
                if let (Some(t), Some(extra)) =
                    (assistant["transcriber"].as_object_mut(), extra.as_object())
                {
                    t.extend(extra.clone());
                }
                assistant["updatedAt"] = json!("2025-06-01T00:00:00.000Z");
                (200, assistant.to_string())
            }
            _ => (405, "{}".into()),
        }
    }
}

#[test]
fn apply_reads_patches_and_prints_the_change() {
    let api = MockApi::start(platform(json!({})));
    let out = hark(
        &[
            "--url",
            BASE,
            "--bearer",
            TOKEN,
            "--apply",
            "asst-1",
            "--api-url",
            &api.url,
            "--no-fallback",
        ],
        &[("VAPI_API_KEY", KEY)],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    let seen = api.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", "/assistant/asst-1")
    );
    assert_eq!(
        (seen[1].method.as_str(), seen[1].path.as_str()),
        ("PATCH", "/assistant/asst-1")
    );
    for req in &seen {
        assert_eq!(
            req.authorization.as_deref(),
            Some(&*format!("Bearer {KEY}"))
        );
    }
    assert_eq!(seen[1].content_type.as_deref(), Some("application/json"));
    let body: Value = serde_json::from_str(&seen[1].body).unwrap();
    assert_eq!(
        body,
        json!({"transcriber": {"provider": "custom-transcriber",
               "server": {"url": BASE, "headers": {"Authorization": format!("Bearer {TOKEN}")}}}})
    );

    assert_eq!(
        stdout(&out),
        "assistant asst-1: transcriber updated\n\
         \x20 + server.headers.Authorization: ***\n\
         \x20 - server.secret: ***\n\
         \x20 ~ server.url: \"wss://old.example.com/api/custom-transcriber\" -> \
         \"wss://hark.example.com/api/custom-transcriber\"\n"
    );
    assert_eq!(stderr(&out), "");
    assert_no_leak(&out, &[KEY, TOKEN, OLD_SECRET]);
}

#[test]
fn apply_reports_what_the_platform_stored_and_reads_the_named_variable() {
    let api = MockApi::start(platform(json!({"timeoutSeconds": 20})));
    let out = hark(
        &[
            "--url",
            BASE,
            "--secret",
            "new-secret-3c4d-9e1f",
            "--apply",
            "asst-1",
            "--api-url",
            &format!("{}/", api.url),
            "--api-key-env",
            "MY_PLATFORM_KEY",
            "--no-fallback",
        ],
        &[("MY_PLATFORM_KEY", KEY)],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = api.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1].path, "/assistant/asst-1");
    assert_eq!(
        seen[1].authorization.as_deref(),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(
        stdout(&out),
        "assistant asst-1: transcriber updated\n\
         \x20 ~ server.secret: *** -> ***\n\
         \x20 ~ server.url: \"wss://old.example.com/api/custom-transcriber\" -> \
         \"wss://hark.example.com/api/custom-transcriber\"\n\
         \x20 + timeoutSeconds: 20\n\
         note: the platform's answer differs from the transcriber sent (sent -> stored):\n\
         \x20 + timeoutSeconds: 20\n"
    );
    assert_no_leak(&out, &[KEY, "new-secret-3c4d-9e1f", OLD_SECRET]);
}

/// An assistant without a plan gets the one asked for; an assistant with a plan of its own
/// keeps it unless --replace-fallback says otherwise, and the printed change shows which.
#[test]
fn apply_writes_a_fallback_plan_and_keeps_the_assistants_own() {
    let other = "wss://hark-b.example.com/api/custom-transcriber";
    let api = MockApi::start(platform(json!({})));
    let first = [
        "--url",
        BASE,
        "--secret",
        "new-secret-3c4d-9e1f",
        "--fallback-url",
        other,
        "--apply",
        "asst-1",
        "--api-url",
        &api.url,
    ];
    let out = hark(&first, &[("VAPI_API_KEY", KEY)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sent: Value = serde_json::from_str(&api.seen()[1].body).unwrap();
    assert_eq!(
        sent["transcriber"]["fallbackPlan"],
        json!({"transcribers": [{"provider": "custom-transcriber",
                                 "server": {"url": other, "secret": "new-secret-3c4d-9e1f"}}],
               "autoFallback": {"enabled": false}})
    );
    let text = stdout(&out);
    assert!(
        text.contains("+ fallbackPlan.transcribers[0].server.url: \"wss://hark-b.example.com"),
        "{text}"
    );
    assert!(
        text.contains("+ fallbackPlan.transcribers[0].server.secret: ***"),
        "{text}"
    );

    // The assistant now has a plan: a second apply with another fallback keeps it.
    let mut again = vec!["--url", BASE, "--secret", "new-secret-3c4d-9e1f"];
    again.extend([
        "--fallback-provider",
        "assembly-ai",
        "--apply",
        "asst-1",
        "--api-url",
    ]);
    again.push(&api.url);
    let out = hark(&again, &[("VAPI_API_KEY", KEY)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sent: Value = serde_json::from_str(&api.seen()[3].body).unwrap();
    assert_eq!(
        sent["transcriber"]["fallbackPlan"]["transcribers"][0]["server"]["url"],
        other
    );
    let text = stdout(&out);
    assert!(text.contains("transcriber unchanged"), "{text}");
    assert!(text.contains("fallbackPlan was kept"), "{text}");

    // --replace-fallback writes the new one, and the change says so.
    again.push("--replace-fallback");
    let out = hark(&again, &[("VAPI_API_KEY", KEY)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sent: Value = serde_json::from_str(&api.seen()[5].body).unwrap();
    assert_eq!(
        sent["transcriber"]["fallbackPlan"]["transcribers"],
        json!([{"provider": "assembly-ai"}])
    );
    let text = stdout(&out);
    assert!(
        text.contains(
            "~ fallbackPlan.transcribers[0].provider: \"custom-transcriber\" -> \"assembly-ai\""
        ),
        "{text}"
    );
    assert_no_leak(&out, &[KEY, "new-secret-3c4d-9e1f"]);
}

#[test]
fn apply_without_the_key_sends_nothing() {
    let api = MockApi::start(platform(json!({})));
    let out = hark(&apply_args("asst-1", &api.url), &[]);
    assert_fails_with(&out, &["VAPI_API_KEY", "is not set"]);
    let out = hark(
        &[
            &apply_args("asst-1", &api.url)[..],
            &["--api-key-env", "OTHER_KEY"],
        ]
        .concat(),
        &[("OTHER_KEY", "")],
    );
    assert_fails_with(&out, &["OTHER_KEY", "is empty"]);
    assert!(api.seen().is_empty(), "{:?}", api.seen());
}

#[test]
fn apply_to_an_unknown_assistant_fails_before_patching() {
    let api = MockApi::start(platform(json!({})));
    let out = hark(&apply_args("missing", &api.url), &[("VAPI_API_KEY", KEY)]);
    let url = format!("{}/assistant/missing", api.url);
    assert_fails_with(
        &out,
        &[
            &format!("GET {url} failed: HTTP 404 Not Found"),
            "\"message\":\"Not Found\"",
        ],
    );
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    let seen = api.seen();
    assert_eq!(seen.len(), 1, "no PATCH after a failed GET: {seen:?}");
    assert_no_leak(&out, &[KEY]);
}

#[test]
fn apply_refused_patch_shows_status_and_truncated_body_without_the_key() {
    let api = MockApi::start(|req: &Seen| match req.method.as_str() {
        "GET" => (200, old_assistant().to_string()),
        // An answer that echoes the request, key included, and goes on for a while.
        _ => (
            401,
            json!({"message": format!("Invalid Key {KEY}. {}", "x".repeat(2000)),
                   "statusCode": 401})
            .to_string(),
        ),
    });
    let out = hark(&apply_args("asst-1", &api.url), &[("VAPI_API_KEY", KEY)]);
    let url = format!("{}/assistant/asst-1", api.url);
    assert_fails_with(
        &out,
        &[
            &format!("PATCH {url} failed: HTTP 401 Unauthorized"),
            "Invalid Key ***",
            "bytes in all)",
        ],
    );
    assert!(
        stderr(&out).len() < 1000,
        "body not truncated: {}",
        stderr(&out)
    );
    assert_eq!(api.seen().len(), 2);
    assert_no_leak(&out, &[KEY]);
}

#[test]
fn apply_with_nothing_listening_names_the_request() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let api_url = format!("http://127.0.0.1:{port}");
    let out = hark(&apply_args("asst-1", &api_url), &[("VAPI_API_KEY", KEY)]);
    assert_fails_with(&out, &[&format!("GET {api_url}/assistant/asst-1 failed:")]);
    assert!(
        stderr(&out).to_lowercase().contains("refused"),
        "{}",
        stderr(&out)
    );
    assert_no_leak(&out, &[KEY]);
}
