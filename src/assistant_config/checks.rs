//! The command's checks on what it is given: the transcriber URLs (`ServerUrl`, with the
//! warnings for mistakes that still give a valid config), `--squad`'s members and profile
//! names (against the server's config file when one is given), the credential, the
//! assistant id and the API URL.
//!
//! It must not know the platform's JSON (`transcriber`), HTTP requests (`client`) or how
//! the checks are put together into a plan (`mod.rs`).

use std::net::IpAddr;
use std::path::Path;

use anyhow::{Context, bail};
use hark::config::MIN_SECRET_CHARS;
use ureq::http::Uri;

/// Where hark serves the websocket; profiles hang below it.
pub(super) const BASE_PATH: &str = "/api/custom-transcriber";

/// One `--squad` entry: a member label and the hark profile its calls go to.
// pub(crate): a field of `Args`, which `main.rs` parses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SquadMember {
    pub(super) name: String,
    pub(super) profile: String,
}

/// How the platform proves itself to hark on the upgrade request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Credential {
    None,
    Secret(String),
    Bearer(String),
}

/// A checked transcriber URL, kept as typed (the platform gets exactly that string) with
/// the parts needed to derive profile URLs and warnings.
#[derive(Debug, Clone)]
pub(super) struct ServerUrl {
    raw: String,
    /// The URL as typed ended its hark path in '/', which `raw` no longer has.
    trimmed_slash: bool,
    scheme: String,
    authority: String,
    host: String,
    path: String,
    query: Option<String>,
}

impl ServerUrl {
    /// Accepts ws:// and wss:// URLs with a host; anything else is a URL the platform
    /// cannot open as a websocket.
    pub(super) fn parse(url: &str) -> anyhow::Result<Self> {
        if !url.contains("://") {
            bail!("--url {url:?} must start with ws:// or wss://");
        }
        let uri: Uri = url
            .parse()
            .with_context(|| format!("--url {url:?} is not a URL"))?;
        let scheme = uri.scheme_str().unwrap_or("").to_ascii_lowercase();
        match scheme.as_str() {
            "ws" | "wss" => {}
            "http" | "https" => bail!(
                "--url {url:?} must be a websocket URL: the platform opens a websocket to it; \
                 use {}://… instead",
                if scheme == "https" { "wss" } else { "ws" }
            ),
            _ => bail!("--url {url:?} must start with ws:// or wss://"),
        }
        let (Some(authority), Some(host)) = (uri.authority(), uri.host()) else {
            bail!("--url {url:?} has no host");
        };
        if host.is_empty() {
            bail!("--url {url:?} has no host");
        }
        // `…/api/custom-transcriber/` (or `…/PROFILE/`) is the same URL to a user, but older
        // hark servers answer it 404, and a proxy in front may still: written without the
        // slash. A path of some other shape is left as typed (a proxy may need it so).
        let path = uri.path();
        let trimmed = path.trim_end_matches('/');
        let trimmed_slash = trimmed.len() < path.len() && looks_like_hark_path(trimmed);
        let (raw, path) = if trimmed_slash {
            let (before, query) = match url.split_once('?') {
                Some((before, query)) => (before, Some(query)),
                None => (url, None),
            };
            let mut raw = before.trim_end_matches('/').to_owned();
            if let Some(query) = query {
                raw.push('?');
                raw.push_str(query);
            }
            (raw, trimmed.to_owned())
        } else {
            (url.to_owned(), path.to_owned())
        };
        Ok(ServerUrl {
            raw,
            trimmed_slash,
            scheme,
            authority: authority.as_str().to_owned(),
            host: host.to_owned(),
            path,
            query: uri.query().map(str::to_owned),
        })
    }

    pub(super) fn as_str(&self) -> &str {
        &self.raw
    }

    /// The URL for one profile: `base/PROFILE`, the query (if any) kept after it.
    pub(super) fn with_profile(&self, profile: &str) -> anyhow::Result<String> {
        check_profile(profile).map_err(anyhow::Error::msg)?;
        let base = self.path.trim_end_matches('/');
        if !base.ends_with(BASE_PATH) {
            bail!(
                "with --squad, --url must be the base URL ending in {BASE_PATH} (each member \
                 gets /PROFILE appended), but its path is {:?}",
                self.path
            );
        }
        let query = self
            .query
            .as_ref()
            .map(|q| format!("?{q}"))
            .unwrap_or_default();
        Ok(format!(
            "{}://{}{base}/{profile}{query}",
            self.scheme, self.authority
        ))
    }

    fn is_loopback(&self) -> bool {
        is_loopback_host(&self.host)
    }

    /// Mistakes that still give a valid config, so they warn rather than fail.
    pub(super) fn warnings(&self, squad: bool) -> Vec<String> {
        let mut out = Vec::new();
        if self.trimmed_slash {
            out.push(format!(
                "the trailing '/' was removed: the URL written is {:?} (hark serves \
                 {BASE_PATH}[/PROFILE] without one)",
                self.raw
            ));
        }
        if self.scheme == "ws" && !self.is_loopback() {
            out.push(format!(
                "ws:// to {} is unencrypted: call audio, transcripts and the credential cross \
                 the network in clear; use wss:// (hark behind a TLS terminator)",
                self.host
            ));
        }
        if self.is_loopback() {
            out.push(format!(
                "{} is a loopback address: the platform connects from its own servers and \
                 cannot reach it",
                self.host
            ));
        }
        if !squad && !looks_like_hark_path(&self.path) {
            out.push(format!(
                "hark serves {BASE_PATH}[/PROFILE], not {:?}: this works only behind a proxy \
                 that rewrites the path",
                self.path
            ));
        }
        out
    }
}

fn looks_like_hark_path(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    if path.ends_with(BASE_PATH) {
        return true;
    }
    match path.rsplit_once('/') {
        Some((base, profile)) => base.ends_with(BASE_PATH) && check_profile(profile).is_ok(),
        None => false,
    }
}

fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let lower = host.to_ascii_lowercase();
    if lower == "localhost" || lower.ends_with(".localhost") {
        return true;
    }
    host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Profile names end up as one URL path segment, so only characters that need no escaping.
/// (The error is part of a message a person reads.)
fn check_profile(profile: &str) -> Result<(), String> {
    if profile.is_empty() {
        return Err("the profile name is empty".into());
    }
    if let Some(c) = profile
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "profile {profile:?} contains {c:?}: profile names may use only A-Z, a-z, 0-9, _ and -"
        ));
    }
    Ok(())
}

/// Parses one `--squad` entry, `NAME=PROFILE` (clap's value parser: its error is the
/// message clap prints).
pub(super) fn parse_member(entry: &str) -> Result<SquadMember, String> {
    let Some((name, profile)) = entry.split_once('=') else {
        return Err(format!(
            "{entry:?} is not NAME=PROFILE (e.g. sales=sales,support=support-es)"
        ));
    };
    let (name, profile) = (name.trim(), profile.trim());
    if name.is_empty() {
        return Err(format!("{entry:?} has no member name before '='"));
    }
    if name.chars().any(char::is_control) {
        return Err(format!("member name {name:?} contains a control character"));
    }
    check_profile(profile)?;
    Ok(SquadMember {
        name: name.to_owned(),
        profile: profile.to_owned(),
    })
}

/// --squad's profiles against the server's config, when one is given: a member pointed
/// at a profile the server does not have would have every call refused (404).
pub(super) fn check_profiles(
    config: Option<&Path>,
    members: &[SquadMember],
    warnings: &mut Vec<String>,
) -> anyhow::Result<()> {
    let Some(path) = config else {
        warnings.push(
            "--squad's profiles were not checked: pass --config (the file hark serve \
             reads) to check them"
                .into(),
        );
        return Ok(());
    };
    let config = hark::config::Config::load(Some(path))?;
    let unknown: Vec<&str> = members
        .iter()
        .map(|m| m.profile.as_str())
        .filter(|p| config.profile(p).is_none())
        .collect();
    if !unknown.is_empty() {
        let mut known: Vec<&str> = config.profiles.keys().map(String::as_str).collect();
        known.insert(0, hark::config::DEFAULT_PROFILE);
        bail!(
            "{} has no profile {} (it has: {})",
            path.display(),
            unknown
                .iter()
                .map(|p| format!("{p:?}"))
                .collect::<Vec<_>>()
                .join(", "),
            known.join(", ")
        );
    }
    Ok(())
}

/// The credential flags, checked as HTTP header values: the platform sends them as headers,
/// and a value it cannot send or that loses its edges on the way never matches hark's.
pub(super) fn credential(secret: Option<&str>, bearer: Option<&str>) -> anyhow::Result<Credential> {
    match (secret, bearer) {
        (Some(_), Some(_)) => bail!("--secret and --bearer cannot be used together"),
        (Some(s), None) => {
            if s.is_empty() {
                bail!("--secret is empty");
            }
            if s.trim() != s {
                bail!("--secret has leading or trailing whitespace, which HTTP header values lose");
            }
            if !s.chars().all(|c| (' '..='~').contains(&c)) {
                bail!("--secret must be printable ASCII: it travels as the x-vapi-secret header");
            }
            check_length("--secret", "auth.secret (HARK_SECRET)", s)?;
            Ok(Credential::Secret(s.to_owned()))
        }
        (None, Some(t)) => {
            let has_scheme = t
                .get(..7)
                .is_some_and(|p| p.eq_ignore_ascii_case("bearer "));
            if has_scheme {
                bail!("give --bearer the token alone, without the \"Bearer \" prefix");
            }
            if t.is_empty() {
                bail!("--bearer is empty");
            }
            if !t.chars().all(|c| ('!'..='~').contains(&c)) {
                bail!("--bearer must be printable ASCII without spaces (a bearer token)");
            }
            check_length("--bearer", "auth.bearer_tokens (HARK_BEARER_TOKENS)", t)?;
            Ok(Credential::Bearer(t.to_owned()))
        }
        (None, None) => Ok(Credential::None),
    }
}

/// `hark serve` refuses to start with a secret or token this short, so a config carrying
/// one could only ever be refused: refused here too, with the same rule and advice.
fn check_length(flag: &str, serve_key: &str, value: &str) -> anyhow::Result<()> {
    let n = value.chars().count();
    if n < MIN_SECRET_CHARS {
        bail!(
            "{flag} is {n} characters: hark serve refuses {serve_key} values under \
             {MIN_SECRET_CHARS} characters; make one with `openssl rand -hex 32` and give \
             the same one to both"
        );
    }
    Ok(())
}

/// Warnings about what the credential flags leave out.
pub(super) fn credential_warnings(credential: &Credential) -> Vec<String> {
    match credential {
        Credential::None => vec![
            "no --secret or --bearer: the platform will call without credentials. A hark \
             serve with auth.secret (HARK_SECRET) or auth.bearer_tokens set refuses every such \
             call (401); one without them takes calls from anyone who finds the URL"
                .into(),
        ],
        Credential::Secret(_) | Credential::Bearer(_) => Vec::new(),
    }
}

/// The id becomes a path segment of the API URL; anything beyond an id's characters would
/// address some other resource.
pub(super) fn check_assistant_id(id: &str) -> anyhow::Result<()> {
    let ok = !id.is_empty()
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        bail!(
            "--apply {id:?} is not an assistant id (expected something like \
             5f1c2b3a-…, letters, digits, '-', '_' or '.')"
        );
    }
    Ok(())
}

/// The API key travels in every request, so plain http is allowed only where it cannot
/// leave the machine (a local mock or tunnel).
pub(super) fn check_api_url(url: &str) -> anyhow::Result<String> {
    let uri: Uri = url
        .parse()
        .with_context(|| format!("--api-url {url:?} is not a URL"))?;
    let host = uri.host().unwrap_or("");
    if host.is_empty() {
        bail!("--api-url {url:?} has no host");
    }
    match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
        Some("https") => {}
        Some("http") if is_loopback_host(host) => {}
        Some("http") => bail!(
            "--api-url {url:?} would send the API key unencrypted; use https:// (http:// is \
             accepted only for loopback hosts)"
        ),
        _ => bail!("--api-url {url:?} must start with https://"),
    }
    if uri.query().is_some() {
        bail!("--api-url {url:?} must not have a query string");
    }
    Ok(url.trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistant_config::Plan;
    use crate::assistant_config::tests::{BASE, S3, args, err, plan, printed};

    #[test]
    fn url_given_as_is_without_squad() {
        let url = "wss://h.example:8443/api/custom-transcriber/sales?x=1";
        let v = printed(&["--url", url, "--secret", S3]);
        assert_eq!(v["server"]["url"], url);
        let (_, warnings) = plan(&["--url", url, "--secret", S3]).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn urls_are_checked() {
        let e = err(&["--url", "https://h.example/api/custom-transcriber"]);
        assert!(e.contains("use wss://"), "{e}");
        let e = err(&["--url", "http://h.example/api/custom-transcriber"]);
        assert!(e.contains("use ws://"), "{e}");
        let e = err(&["--url", "ftp://h.example/x"]);
        assert!(e.contains("must start with ws:// or wss://"), "{e}");
        let e = err(&["--url", "wss://not a url"]);
        assert!(e.contains("is not a URL"), "{e}");
        let e = err(&["--url", "h.example/api/custom-transcriber"]);
        assert!(e.contains("ws:// or wss://"), "{e}");
    }

    #[test]
    fn warnings() {
        let w = ServerUrl::parse("ws://h.example/api/custom-transcriber")
            .unwrap()
            .warnings(false);
        assert!(w.len() == 1 && w[0].contains("unencrypted"), "{w:?}");
        for url in [
            "ws://127.0.0.1:8080/api/custom-transcriber",
            "ws://localhost/api/custom-transcriber",
            "ws://[::1]:8080/api/custom-transcriber",
        ] {
            let w = ServerUrl::parse(url).unwrap().warnings(false);
            assert!(w.len() == 1 && w[0].contains("loopback"), "{url}: {w:?}");
        }
        let w = ServerUrl::parse(BASE).unwrap().warnings(false);
        assert!(w.is_empty(), "{w:?}");
        let w = ServerUrl::parse("wss://h.example/")
            .unwrap()
            .warnings(false);
        assert!(w.len() == 1 && w[0].contains("rewrites the path"), "{w:?}");
    }

    #[test]
    fn a_trailing_slash_is_written_without_it_and_said() {
        for (typed, written) in [
            (format!("{BASE}/"), BASE.to_string()),
            (format!("{BASE}//"), BASE.to_string()),
            (format!("{BASE}/sales/"), format!("{BASE}/sales")),
            (format!("{BASE}/?x=1"), format!("{BASE}?x=1")),
        ] {
            let (plan, warnings) = plan(&["--url", &typed, "--secret", S3]).unwrap();
            let Plan::Print(v) = plan else {
                panic!("{typed}: expected something to print")
            };
            assert_eq!(v["server"]["url"], written.as_str(), "{typed}");
            assert_eq!(warnings.len(), 1, "{typed}: {warnings:?}");
            assert!(
                warnings[0].contains("trailing '/' was removed"),
                "{warnings:?}"
            );
        }
        // Other paths are the user's (or their proxy's) business.
        let v = printed(&["--url", "wss://h.example/stt/", "--secret", S3]);
        assert_eq!(v["server"]["url"], "wss://h.example/stt/");
        // The fallback URLs alike, so a fallback that differs only by a slash is itself.
        let e = err(&["--url", BASE, "--fallback-url", &format!("{BASE}/")]);
        assert!(e.contains("is the transcriber itself"), "{e}");
    }

    #[test]
    fn squad_needs_the_base_url() {
        let e = err(&["--url", &format!("{BASE}/sales"), "--squad", "a=b"]);
        assert!(
            e.contains("must be the base URL ending in /api/custom-transcriber"),
            "{e}"
        );
        let e = err(&["--url", "wss://h.example/", "--squad", "a=b"]);
        assert!(e.contains("must be the base URL"), "{e}");
        // A prefix before the base (a reverse proxy) is fine.
        let v = printed(&[
            "--url",
            "wss://h.example/hark/api/custom-transcriber",
            "--squad",
            "a=b",
        ]);
        assert_eq!(
            v[0]["assistantOverrides"]["transcriber"]["server"]["url"],
            "wss://h.example/hark/api/custom-transcriber/b"
        );
    }

    #[test]
    fn squad_entries_are_checked() {
        for (entry, want) in [
            ("sales", "is not NAME=PROFILE"),
            ("=sales", "no member name"),
            ("sales=", "profile name is empty"),
            ("sales=a/b", "may use only A-Z"),
            ("sales=es español", "may use only A-Z"),
            ("sales=x?y", "may use only A-Z"),
        ] {
            let e = args(&["--url", BASE, "--squad", entry])
                .expect_err(entry)
                .to_string();
            assert!(e.contains(want), "{entry}: {e}");
        }
        let e = err(&["--url", BASE, "--squad", "a=x,a=y"]);
        assert!(e.contains("\"a\" is given twice"), "{e}");
    }

    #[test]
    fn credentials_are_checked() {
        let e = args(&["--url", BASE, "--secret", "a", "--bearer", "b"])
            .expect_err("conflict")
            .to_string();
        assert!(e.contains("cannot be used with"), "{e}");
        for (flags, want) in [
            (["--secret", ""], "--secret is empty"),
            (["--secret", " s"], "whitespace"),
            (["--secret", "a\nb"], "printable ASCII"),
            (["--bearer", ""], "--bearer is empty"),
            (["--bearer", "Bearer tok"], "without the \"Bearer \" prefix"),
            (["--bearer", "a b"], "without spaces"),
        ] {
            let mut argv = vec!["--url", BASE];
            argv.extend(flags);
            let e = err(&argv);
            assert!(e.contains(want), "{flags:?}: {e}");
        }
    }

    #[test]
    fn credentials_hark_serve_would_refuse_are_refused_or_warned() {
        for flags in [["--secret", "fifteen-chars-x"], ["--bearer", "short-token"]] {
            let mut argv = vec!["--url", BASE];
            argv.extend(flags);
            let e = err(&argv);
            assert!(
                e.contains("hark serve refuses") && e.contains("16 characters"),
                "{flags:?}: {e}"
            );
            assert!(!e.contains(flags[1]), "the value is not echoed: {e}");
        }
        // No credential at all is allowed (hark serve without auth), with a warning.
        let (_, warnings) = plan(&["--url", BASE]).unwrap();
        assert!(
            warnings.iter().any(|w| w.contains("without credentials")),
            "{warnings:?}"
        );
        let (_, warnings) = plan(&["--url", BASE, "--secret", "sixteen-chars-xx"]).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
