//! `hark healthcheck`: one GET of the local `/healthz` (or a URL), for a container
//! HEALTHCHECK in images without curl. What went wrong is read from ureq's and rustls's
//! error types, never from their messages.

mod pinned;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use hark::flags::ServeArgs;

/// `hark healthcheck`: one GET, for a container HEALTHCHECK.
#[derive(Args)]
#[command(after_help = "\
Without a URL, the URL is the one `hark serve` would answer on, read from the same \
config file and variables (--config or HARK_CONFIG, HARK_LISTEN, HARK_TLS_CERT; the key \
is not needed): http://127.0.0.1:PORT/healthz, or https:// when TLS is configured. If \
that plain http:// check meets a TLS server, it is asked again over https://. An https:// check of a \
loopback address this way (the image's HEALTHCHECK) does not verify the server's own \
certificate: no certificate names 127.0.0.1, and the probe only asks whether the process \
answers. Give --ca-file to verify it anyway.

With a URL, https:// is verified against the public roots, or only against the CA \
certificates in --ca-file (the private CA that issued the server's certificate, or the \
server's own self-signed certificate, then taken as pinned). \
--insecure skips verification (a self-signed certificate), and is refused unless the URL \
names a loopback address (127.0.0.0/8, ::1, localhost).
")]
pub struct HealthcheckArgs {
    /// The URL to GET [default: the local server's /healthz, see below].
    url: Option<String>,
    /// The config file `hark serve` reads, for the URL it answers on (as HARK_CONFIG).
    #[arg(long, env = "HARK_CONFIG", value_name = "PATH")]
    config: Option<PathBuf>,
    /// Verify an https:// server against the CA certificates in this PEM file only.
    #[arg(long, value_name = "PATH", conflicts_with = "insecure")]
    ca_file: Option<PathBuf>,
    /// Do not verify the https:// server's certificate (loopback addresses only).
    #[arg(long)]
    insecure: bool,
    /// Give up after this long.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
}

/// One GET; any answer but 200 (or none in time) is a failure.
pub fn run(args: HealthcheckArgs) -> anyhow::Result<()> {
    use ureq::tls::{Certificate, RootCerts, TlsConfig};
    let (url, derived) = match &args.url {
        Some(url) => (url.clone(), false),
        None => (local_healthz_url(args.config.as_deref())?, true),
    };
    let host = url_host(&url);
    let loopback = host.as_deref().is_some_and(is_loopback);
    if args.insecure && !loopback {
        anyhow::bail!(
            "--insecure is only for a loopback address (127.0.0.1, ::1, localhost), not {}: \
             pass --ca-file with the CA that issued the server's certificate",
            host.as_deref().unwrap_or(&url)
        );
    }
    let mut tls = TlsConfig::builder();
    if let Some(path) = &args.ca_file {
        let pem = std::fs::read(path)
            .map_err(|e| anyhow::anyhow!("--ca-file {}: {e}", path.display()))?;
        let certs: Vec<Certificate<'static>> = ureq::tls::parse_pem(&pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        if certs.is_empty() {
            anyhow::bail!("--ca-file {}: no PEM certificate in it", path.display());
        }
        tls = tls.root_certs(RootCerts::Specific(std::sync::Arc::new(certs)));
    } else if args.insecure || (derived && loopback) {
        tls = tls.disable_verification(true);
    }
    let agent = |tls: TlsConfig| -> ureq::Agent {
        ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_millis(args.timeout_ms)))
            .http_status_as_error(false)
            .tls_config(tls)
            .build()
            .into()
    };
    let mut answer = agent(tls.build()).get(&url).call();
    // The environment did not say TLS, but the server speaks it: ask it that way.
    if derived
        && let (Err(e), Some(rest)) = (&answer, url.strip_prefix("http://"))
        && not_http(e)
    {
        let https = format!("https://{rest}");
        let unverified = TlsConfig::builder().disable_verification(true).build();
        if let Ok(response) = agent(unverified).get(&https).call() {
            eprintln!(
                "note: {url} answers over TLS (set HARK_TLS_CERT or --config as `hark serve` \
                 has them, so the check asks https:// first)"
            );
            answer = Ok(response);
        }
    }
    // A self-signed certificate given as --ca-file is the server's own certificate, which
    // WebPKI refuses as an end entity when it says it is a CA (`openssl req -x509` does):
    // taken as pinned, the check passes when the server presents exactly it. When it does
    // not, the verifier's own refusal is the one to report.
    if let (Err(e), Some(path)) = (&answer, &args.ca_file)
        && certificate_refused(e)
    {
        let pem = std::fs::read(path)
            .map_err(|e| anyhow::anyhow!("--ca-file {}: {e}", path.display()))?;
        match pinned::get(&url, &pem, Duration::from_millis(args.timeout_ms)) {
            Ok(200) => {
                println!("{url}: ok (certificate pinned by --ca-file)");
                return Ok(());
            }
            Ok(status) => anyhow::bail!("{url}: HTTP {status}"),
            Err(_) => {}
        }
    }
    let response = answer.map_err(|e| {
        let hint = if url.starts_with("https://") && certificate_refused(&e) {
            if loopback {
                " (pass --ca-file with the CA that issued it, or --insecure on loopback)"
            } else {
                " (pass --ca-file with the CA that issued it)"
            }
        } else {
            ""
        };
        let hint = match (hint, derived, refused(&e)) {
            ("", true, true) => {
                " (no server there: the address comes from HARK_LISTEN / --config as `hark \
                 serve` reads them, else 127.0.0.1:8080; give the URL if it listens elsewhere)"
            }
            (hint, _, _) => hint,
        };
        anyhow::anyhow!("{url}: {e}{hint}")
    })?;
    let status = response.status();
    if status != ureq::http::StatusCode::OK {
        anyhow::bail!("{url}: HTTP {status}");
    }
    // Said for a person at a terminal; a probe reads the exit status.
    println!("{url}: ok");
    Ok(())
}

/// The server answered, but not in HTTP/1: a TLS server's alert or handshake bytes read as
/// a response.
fn not_http(e: &ureq::Error) -> bool {
    matches!(e, ureq::Error::Protocol(_))
}

/// The TLS handshake failed on the server's certificate (unknown issuer, a CA used as the
/// end entity, a name or date that does not fit).
fn certificate_refused(e: &ureq::Error) -> bool {
    // rustls fails the handshake inside the connection's reads, so its error mostly
    // arrives wrapped in an I/O error.
    let tls = match e {
        ureq::Error::Rustls(tls) => Some(tls),
        ureq::Error::Io(io) => io.get_ref().and_then(|inner| inner.downcast_ref()),
        _ => None,
    };
    matches!(tls, Some(rustls::Error::InvalidCertificate(_)))
}

/// Nothing listens at the address.
fn refused(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::ConnectionRefused,
        ureq::Error::ConnectionFailed => true,
        _ => false,
    }
}

/// The `/healthz` of the server this environment configures: `listen` (127.0.0.1 for an
/// unspecified address) from the same file, variables and defaults `serve` reads, and
/// https:// when `tls.cert` is set.
fn local_healthz_url(config: Option<&Path>) -> anyhow::Result<String> {
    use clap::{Args as _, FromArgMatches as _};
    let mut argv = vec![std::ffi::OsString::from("hark healthcheck")];
    if let Some(path) = config {
        argv.push("--config".into());
        argv.push(path.into());
    }
    // Only the address and whether TLS is on matter here: a certificate set without its key
    // (the key is the server's, not the probe's) is not this command's error.
    let matches = ServeArgs::augment_args(clap::Command::new("hark healthcheck"))
        .ignore_errors(true)
        .try_get_matches_from(argv)?;
    let config = ServeArgs::from_arg_matches(&matches)?.load()?;
    let mut addr = config.listen;
    if addr.ip().is_unspecified() {
        addr.set_ip(if addr.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    let scheme = if config.tls.is_enabled() {
        "https"
    } else {
        "http"
    };
    Ok(format!("{scheme}://{addr}/healthz"))
}

/// The host of an `http(s)://` URL, brackets removed from an IPv6 address.
fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']')?.0,
        None => authority.split(':').next()?,
    };
    Some(host.to_ascii_lowercase())
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
