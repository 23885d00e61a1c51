//! `hark assistant-config`: the platform-side `transcriber` object that points an assistant
//! (or each member of a squad) at a hark server, printed for pasting or patched into an
//! assistant through the platform's REST API.
//!
//! Everything is checked before anything is printed or sent, so a typo never reaches a live
//! assistant: a transcriber URL the platform cannot open gives no transcripts on real calls,
//! and the calls end with `pipeline-error-custom-transcriber-failed`.
//!
//! Here: the flags (`Args`), checking them into a `Plan` with its warnings, and `run`. By
//! job, beside it: `checks` (URLs, squad members and profiles, the credential, the
//! assistant id and the API URL), `transcriber` (the platform's JSON), `client` (the
//! platform's REST API, `--apply`) and `diff` (what `--apply` changed). This file builds no
//! JSON and sends no request itself.

mod checks;
mod client;
mod diff;
mod transcriber;

use anyhow::bail;
use serde_json::Value;

use checks::{
    BASE_PATH, ServerUrl, SquadMember, check_api_url, check_assistant_id, check_profiles,
    credential, credential_warnings, parse_member,
};
use client::{api_key, apply};
use transcriber::{
    Fallback, NativeTranscriber, parse_fallback_provider, squad_members, transcriber,
};

/// The platform's REST API, used by `--apply` unless `--api-url` says otherwise.
const DEFAULT_API_URL: &str = "https://api.vapi.ai";

/// Where `--apply` looks for the platform API key unless `--api-key-env` says otherwise.
const DEFAULT_API_KEY_ENV: &str = "VAPI_API_KEY";

const AFTER_HELP: &str = "\
Without --squad or --apply, prints the object for `assistant.transcriber`.

Every transcriber printed or applied carries a `fallbackPlan`: without one, the platform
ends the call when the custom transcriber fails (a crashed pod, a bad deploy). It lists
the --fallback-url servers (e.g. a second hark deployment, same credential), then the
--fallback-provider entries; with no fallback flag, deepgram:nova-3 (the platform's own
Deepgram). `autoFallback` is written disabled unless --auto-fallback: enabled, the
platform may send the call's audio to a provider you did not choose. --no-fallback writes
no plan.

--squad prints entries for `call.squad.members[]`, one per member, each with its own
transcriber URL: --url is then the base (its path must end in /api/custom-transcriber) and
each member gets URL/PROFILE, i.e. /api/custom-transcriber/{profile}. The `name` of each
entry is a label for matching it to your members: the platform identifies members by
`assistantId` or `assistant`, so copy each `assistantOverrides` into the matching member.
Without --squad, --url is used exactly as given, so it may already name a profile.

--apply ASSISTANT_ID reads the assistant (GET {api-url}/assistant/{id}), replaces its
transcriber (PATCH with {\"transcriber\": …}) and prints what changed, with secrets, tokens
and header values shown as ***. A fallbackPlan the assistant already has is kept unless
--replace-fallback. The API key is read from the environment variable named by
--api-key-env, never from the command line, and is never printed.

Examples:
  hark assistant-config --url wss://hark.example.com/api/custom-transcriber --secret \"$HARK_SECRET\"
  hark assistant-config --url wss://hark-a.example.com/api/custom-transcriber --secret \"$HARK_SECRET\" \\
      --fallback-url wss://hark-b.example.com/api/custom-transcriber --fallback-provider deepgram:nova-3
  hark assistant-config --url wss://hark.example.com/api/custom-transcriber --bearer \"$TOKEN\" \\
      --squad sales=sales,support=support-es
  VAPI_API_KEY=… hark assistant-config --url wss://hark.example.com/api/custom-transcriber \\
      --secret \"$HARK_SECRET\" --apply 5f1c…";

/// Print (or apply) the platform's transcriber config that points an assistant at hark.
#[derive(clap::Args, Debug, Clone)]
#[command(after_long_help = AFTER_HELP)]
pub struct Args {
    /// The websocket URL the platform opens per call: ws:// or wss://.
    #[arg(long)]
    pub url: String,
    /// Shared secret, sent by the platform as `x-vapi-secret` (hark serve --secret); at
    /// least 16 characters, as hark serve requires.
    #[arg(long, conflicts_with = "bearer")]
    pub secret: Option<String>,
    /// Token, sent by the platform as `Authorization: Bearer` (hark serve --bearer-tokens);
    /// at least 16 characters.
    #[arg(long)]
    pub bearer: Option<String>,
    /// Squad members, each on its own profile: prints `call.squad.members[]` entries.
    #[arg(long, value_name = "NAME=PROFILE", value_delimiter = ',', value_parser = parse_member)]
    pub squad: Vec<SquadMember>,
    /// The config file the server reads (as `hark serve --config`): --squad's profiles are
    /// checked against it.
    #[arg(long, env = "HARK_CONFIG", value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
    /// Replace this assistant's transcriber through the platform's API.
    #[arg(long, value_name = "ASSISTANT_ID")]
    pub apply: Option<String>,
    /// The platform's REST API.
    #[arg(long, default_value = DEFAULT_API_URL, requires = "apply")]
    pub api_url: String,
    /// Environment variable holding the platform API key.
    #[arg(long, value_name = "VAR", default_value = DEFAULT_API_KEY_ENV, requires = "apply")]
    pub api_key_env: String,
    /// Another transcriber server the platform tries, in order, when this one fails (e.g. a
    /// second hark deployment), sent with the same credential; repeatable. With --squad it
    /// is a base URL too.
    #[arg(long = "fallback-url", value_name = "URL")]
    pub fallback_urls: Vec<String>,
    /// A provider of the platform's own the platform tries after the --fallback-url
    /// servers, as PROVIDER[:MODEL[:LANGUAGE]]; repeatable. Without any fallback flag the
    /// plan holds deepgram:nova-3.
    #[arg(long = "fallback-provider", value_name = "PROVIDER[:MODEL[:LANGUAGE]]", value_parser = parse_fallback_provider)]
    pub fallback_providers: Vec<NativeTranscriber>,
    /// Write no fallbackPlan: when hark fails, the platform ends the call.
    #[arg(long, conflicts_with_all = ["fallback_urls", "fallback_providers", "auto_fallback"])]
    pub no_fallback: bool,
    /// Let the platform choose another provider itself once the listed ones failed (audio
    /// may then go to a provider you did not choose).
    #[arg(long)]
    pub auto_fallback: bool,
    /// With --apply: replace the assistant's existing fallbackPlan (kept otherwise).
    #[arg(long, requires = "apply")]
    pub replace_fallback: bool,
}

/// The fallback provider written when no fallback flag is given: the platform's own
/// default transcriber.
const DEFAULT_FALLBACK: &str = "deepgram:nova-3";

/// What the command will do once every argument has been checked.
#[derive(Debug)]
enum Plan {
    Print(Value),
    Apply {
        assistant_id: String,
        api: ApiTarget,
        transcriber: Value,
        /// Keep the assistant's own `fallbackPlan` if it has one.
        keep_fallback: bool,
    },
}

/// Where `--apply` sends its requests and which variable holds the key.
#[derive(Debug, Clone)]
struct ApiTarget {
    /// Base URL without a trailing slash.
    base: String,
    key_env: String,
}

impl Args {
    /// Checks every argument, so nothing is printed or sent from a half-valid command line.
    /// Returns the plan and the warnings to show.
    fn plan(&self) -> anyhow::Result<(Plan, Vec<String>)> {
        if self.apply.is_some() && !self.squad.is_empty() {
            bail!(
                "--squad cannot be used with --apply: a squad is not an assistant. Paste the \
                 --squad output into the squad's members, or apply each member's assistant \
                 separately with --url …{BASE_PATH}/PROFILE --apply ASSISTANT_ID"
            );
        }
        let url = ServerUrl::parse(&self.url)?;
        let credential = credential(self.secret.as_deref(), self.bearer.as_deref())?;
        let squad = !self.squad.is_empty();
        let mut warnings = url.warnings(squad);
        warnings.extend(credential_warnings(&credential));
        let fallback = self.fallback(&url, squad, &mut warnings)?;
        if squad {
            check_profiles(self.config.as_deref(), &self.squad, &mut warnings)?;
            return Ok((
                Plan::Print(squad_members(&url, &self.squad, &credential, &fallback)?),
                warnings,
            ));
        }
        let object = fallback.attach(transcriber(url.as_str(), &credential), None, &credential)?;
        let Some(id) = &self.apply else {
            return Ok((Plan::Print(object), warnings));
        };
        check_assistant_id(id)?;
        let api = ApiTarget {
            base: check_api_url(&self.api_url)?,
            key_env: self.api_key_env.clone(),
        };
        if api.key_env.is_empty() {
            bail!("--api-key-env is empty");
        }
        Ok((
            Plan::Apply {
                assistant_id: id.clone(),
                api,
                transcriber: object,
                keep_fallback: !self.replace_fallback,
            },
            warnings,
        ))
    }

    /// The fallback the flags ask for: the default provider when none is named.
    fn fallback(
        &self,
        url: &ServerUrl,
        squad: bool,
        warnings: &mut Vec<String>,
    ) -> anyhow::Result<Fallback> {
        if self.no_fallback {
            return Ok(Fallback::default());
        }
        let mut urls = Vec::new();
        for raw in &self.fallback_urls {
            let parsed = ServerUrl::parse(raw).map_err(|e| {
                anyhow::anyhow!("{}", e.to_string().replacen("--url", "--fallback-url", 1))
            })?;
            if parsed.as_str() == url.as_str() {
                bail!(
                    "--fallback-url {raw:?} is the transcriber itself: a fallback must be \
                     another deployment"
                );
            }
            warnings.extend(
                parsed
                    .warnings(squad)
                    .into_iter()
                    .map(|w| format!("--fallback-url: {w}")),
            );
            urls.push(parsed);
        }
        let mut providers = self.fallback_providers.clone();
        if urls.is_empty() && providers.is_empty() {
            if self.auto_fallback {
                warnings.push(format!(
                    "--auto-fallback without --fallback-url or --fallback-provider writes an \
                     empty list of transcribers: when hark fails, the platform picks a provider \
                     itself, which may be one you did not choose. Name one first, e.g. \
                     --fallback-provider {DEFAULT_FALLBACK}"
                ));
            } else {
                providers
                    .push(parse_fallback_provider(DEFAULT_FALLBACK).map_err(anyhow::Error::msg)?);
            }
        } else if providers.is_empty() && !self.auto_fallback {
            warnings.push(format!(
                "--fallback-url replaces the default fallback {DEFAULT_FALLBACK} (the \
                 platform's own Deepgram): when the --fallback-url servers fail too, the call \
                 ends. To keep it after them, add --fallback-provider {DEFAULT_FALLBACK}"
            ));
        }
        Ok(Fallback {
            urls,
            providers,
            auto: self.auto_fallback,
        })
    }
}

/// Runs `hark assistant-config`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (plan, warnings) = args.plan()?;
    for w in &warnings {
        eprintln!("hark: warning: {w}");
    }
    match plan {
        Plan::Print(value) => {
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
        Plan::Apply {
            assistant_id,
            api,
            transcriber,
            keep_fallback,
        } => {
            let key = api_key(&api.key_env)?;
            let report = apply(&api.base, &key, &assistant_id, transcriber, keep_fallback)?;
            print!("{report}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // The flags parsed and planned as `run` does, shared with the other files' tests.

    pub(super) const BASE: &str = "wss://hark.example.com/api/custom-transcriber";
    /// Long enough for hark serve (16 characters or more).
    pub(super) const S3: &str = "s3-0123456789abcdef";
    pub(super) const TOK: &str = "tok-0123456789abcdef";

    pub(super) fn args(extra: &[&str]) -> Result<Args, clap::Error> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        let argv = ["hark"].iter().chain(extra).copied();
        <Cli as clap::Parser>::try_parse_from(argv).map(|c| c.args)
    }

    pub(super) fn plan(extra: &[&str]) -> anyhow::Result<(Plan, Vec<String>)> {
        args(extra).map_err(anyhow::Error::from)?.plan()
    }

    pub(super) fn printed(extra: &[&str]) -> Value {
        match plan(extra) {
            Ok((Plan::Print(v), _)) => v,
            other => panic!("expected something to print, got {other:?}"),
        }
    }

    pub(super) fn err(extra: &[&str]) -> String {
        match plan(extra) {
            Err(e) => format!("{e:#}"),
            Ok(p) => panic!("expected an error for {extra:?}, got {p:?}"),
        }
    }

    #[test]
    fn squad_flag_repeats_and_trims() {
        let v = printed(&[
            "--url",
            &format!("{BASE}/?k=v"),
            "--squad",
            "a=p1, b = p2",
            "--squad",
            "c=p_3",
        ]);
        let urls: Vec<_> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["assistantOverrides"]["transcriber"]["server"]["url"].clone())
            .collect();
        assert_eq!(
            urls,
            vec![
                json!(format!("{BASE}/p1?k=v")),
                json!(format!("{BASE}/p2?k=v")),
                json!(format!("{BASE}/p_3?k=v")),
            ]
        );
    }

    #[test]
    fn fallback_flags_are_checked() {
        for (flag, value, want) in [
            ("--fallback-provider", "vapi", "not one of the platform's"),
            (
                "--fallback-provider",
                "custom-transcriber",
                "--fallback-url",
            ),
            ("--fallback-provider", "deepgram:", "is empty"),
            ("--fallback-provider", "deepgram:nova 3", "has characters"),
        ] {
            let e = args(&["--url", BASE, flag, value])
                .expect_err(value)
                .to_string();
            assert!(e.contains(want), "{value}: {e}");
        }
        let e = err(&["--url", BASE, "--fallback-url", "https://x.example/"]);
        assert!(e.contains("--fallback-url"), "{e}");
        let e = err(&["--url", BASE, "--fallback-url", BASE]);
        assert!(e.contains("is the transcriber itself"), "{e}");
        let e = args(&[
            "--url",
            BASE,
            "--no-fallback",
            "--fallback-provider",
            "deepgram",
        ])
        .expect_err("conflict")
        .to_string();
        assert!(e.contains("cannot be used with"), "{e}");
        let e = args(&["--url", BASE, "--replace-fallback"])
            .expect_err("requires --apply")
            .to_string();
        assert!(e.contains("--apply"), "{e}");
        let (_, warnings) = plan(&[
            "--url",
            BASE,
            "--fallback-url",
            "ws://b.example.com/api/custom-transcriber",
        ])
        .unwrap();
        assert!(
            warnings.iter().any(|w| w.starts_with("--fallback-url")),
            "{warnings:?}"
        );
    }

    #[test]
    fn fallback_flags_that_drop_the_default_warn() {
        let (plan_auto, warnings) =
            plan(&["--url", BASE, "--secret", S3, "--auto-fallback"]).unwrap();
        let Plan::Print(v) = plan_auto else {
            panic!("expected something to print")
        };
        assert_eq!(v["fallbackPlan"]["transcribers"], json!([]));
        assert!(
            warnings.len() == 1 && warnings[0].contains("empty list of transcribers"),
            "{warnings:?}"
        );
        let other = "wss://hark-b.example.com/api/custom-transcriber";
        let (_, warnings) =
            plan(&["--url", BASE, "--secret", S3, "--fallback-url", other]).unwrap();
        assert!(
            warnings.len() == 1
                && warnings[0].contains("replaces the default fallback deepgram:nova-3")
                && warnings[0].contains("--fallback-provider deepgram:nova-3"),
            "{warnings:?}"
        );
        // Named explicitly, nothing to warn about.
        for extra in [
            &["--fallback-url", other, "--fallback-provider", "deepgram"][..],
            &["--fallback-url", other, "--auto-fallback"][..],
            &["--fallback-provider", "assembly-ai"][..],
            &["--auto-fallback", "--fallback-provider", "deepgram"][..],
        ] {
            let mut argv = vec!["--url", BASE, "--secret", S3];
            argv.extend(extra);
            let (_, warnings) = plan(&argv).unwrap();
            assert!(warnings.is_empty(), "{extra:?}: {warnings:?}");
        }
    }

    #[test]
    fn apply_arguments_are_checked() {
        let e = err(&["--url", BASE, "--squad", "a=b", "--apply", "x"]);
        assert!(e.contains("a squad is not an assistant"), "{e}");
        let e = err(&["--url", BASE, "--apply", "../phone-number/x"]);
        assert!(e.contains("is not an assistant id"), "{e}");
        let e = err(&[
            "--url",
            BASE,
            "--apply",
            "a",
            "--api-url",
            "http://api.example",
        ]);
        assert!(e.contains("unencrypted"), "{e}");
        let e = err(&["--url", BASE, "--apply", "a", "--api-url", "ftp://x"]);
        assert!(e.contains("https://"), "{e}");
        let e = args(&["--url", BASE, "--api-url", "https://x"])
            .expect_err("requires --apply")
            .to_string();
        assert!(e.contains("--apply"), "{e}");
        match plan(&[
            "--url",
            BASE,
            "--apply",
            "a-1",
            "--api-url",
            "http://127.0.0.1:9/v1/",
        ]) {
            Ok((
                Plan::Apply {
                    assistant_id, api, ..
                },
                _,
            )) => {
                assert_eq!(assistant_id, "a-1");
                assert_eq!(api.base, "http://127.0.0.1:9/v1");
                assert_eq!(api.key_env, DEFAULT_API_KEY_ENV);
            }
            other => panic!("{other:?}"),
        }
    }
}
