//! One pinned file: downloaded (or read in place) and checked against its sha256.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::progress::Progress;
use crate::{Error, TempPath, cache_err, hash_file, hex};

/// A file to fetch and the checksum it must have.
#[derive(Debug, Clone, Copy)]
pub struct Pinned<'a> {
    /// For log lines and the progress bar: "the Moonshine engine".
    pub what: &'a str,
    /// An `http(s)://` URL, a `file://` URL or a plain path.
    pub url: &'a str,
    /// Expected sha256, hex (either case).
    pub sha256: &'a str,
}

/// A checked file. A download lives in the cache dir until this is dropped; a local file is
/// used in place and left alone.
#[derive(Debug)]
pub struct Fetched {
    pub path: PathBuf,
    _temp: Option<TempPath>,
}

/// Fetches `file` into `cache_dir` (temporary names starting with `.<prefix>-`), hashing as
/// it goes, and checks its sha256. Blocking. A mismatched download is deleted.
pub fn fetch_file(
    file: &Pinned<'_>,
    cache_dir: &Path,
    prefix: &str,
    progress: bool,
) -> Result<Fetched, Error> {
    if let Some(path) = local_path(file.url) {
        let actual = hash_file(&path).map_err(|source| Error::Read {
            path: path.clone(),
            source,
        })?;
        check(file, &actual)?;
        return Ok(Fetched { path, _temp: None });
    }
    fs::create_dir_all(cache_dir).map_err(cache_err("create", cache_dir))?;
    let temp = download(file, cache_dir, prefix, progress)?;
    Ok(Fetched {
        path: temp.path.clone(),
        _temp: Some(temp),
    })
}

/// `file://` URLs and plain paths are local; `http(s)://` URLs are not.
pub fn local_path(url: &str) -> Option<PathBuf> {
    if let Some(path) = url.strip_prefix("file://") {
        return Some(PathBuf::from(path));
    }
    if url.starts_with("http://") || url.starts_with("https://") {
        return None;
    }
    Some(PathBuf::from(url))
}

fn check(file: &Pinned<'_>, actual: &str) -> Result<(), Error> {
    if actual.eq_ignore_ascii_case(file.sha256.trim()) {
        return Ok(());
    }
    Err(Error::Checksum {
        url: file.url.to_owned(),
        expected: file.sha256.trim().to_ascii_lowercase(),
        actual: actual.to_owned(),
    })
}

/// Streams the file into a temporary file in the cache dir, hashing as it goes.
fn download(
    file: &Pinned<'_>,
    cache_dir: &Path,
    prefix: &str,
    progress: bool,
) -> Result<TempPath, Error> {
    let url = file.url;
    let fail = |cause: String| Error::Download {
        url: url.to_owned(),
        cause,
    };

    tracing::info!(%url, "downloading {} (once)", file.what);
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(root_certs())
        .build();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .build()
        .into();
    let response = agent.get(url).call().map_err(|e| fail(e.to_string()))?;
    let total = response.body().content_length();
    let mut body = response.into_body().into_reader();

    let temp = TempPath::new(cache_dir, prefix, "download");
    let mut out = File::create(&temp.path).map_err(cache_err("create", &temp.path))?;
    let mut hasher = Sha256::new();
    let mut progress = Progress::new(file.what, progress, total);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(fail(e.to_string())),
        };
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(cache_err("write", &temp.path))?;
        progress.advance(n as u64);
    }
    out.sync_all().map_err(cache_err("write", &temp.path))?;
    progress.finish();

    // On a mismatch `temp` is dropped here, deleting the bad download.
    check(file, &hex(&hasher.finalize()))?;
    Ok(temp)
}

/// Trusts the system's CA bundle, like curl and pip do, so that downloads work behind the
/// TLS-inspecting proxies common on company networks (their CA is installed system-wide but
/// absent from the built-in Mozilla list). Falls back to that list without a system bundle.
pub fn root_certs() -> ureq::tls::RootCerts {
    let from_env = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from);
    let system = [
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/ca-bundle.pem",
        "/etc/ssl/cert.pem",
    ]
    .into_iter()
    .map(PathBuf::from);
    for path in from_env.into_iter().chain(system) {
        let Ok(pem) = fs::read(&path) else {
            continue;
        };
        let certs: Vec<_> = ureq::tls::parse_pem(&pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(cert)) => Some(cert),
                _ => None,
            })
            .collect();
        if !certs.is_empty() {
            tracing::debug!(bundle = %path.display(), count = certs.len(), "using system CAs");
            return ureq::tls::RootCerts::from(certs);
        }
    }
    ureq::tls::RootCerts::WebPki
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pinned<'a>(url: &'a str, sha256: &'a str) -> Pinned<'a> {
        Pinned {
            what: "the test file",
            url,
            sha256,
        }
    }

    #[test]
    fn local_file_is_checked_and_left_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        fs::write(&path, b"not really").unwrap();
        let sha = crate::sha256_hex(b"not really").to_ascii_uppercase();
        let url = format!("file://{}", path.display());
        let got = fetch_file(&pinned(&url, &sha), dir.path(), "t", false).unwrap();
        assert_eq!(got.path, path);
        drop(got);
        assert!(path.exists());
    }

    #[test]
    fn mismatch_names_expected_and_actual() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        fs::write(&path, b"something else").unwrap();
        let expected = crate::sha256_hex(b"not really");
        let url = path.display().to_string();
        let err = fetch_file(&pinned(&url, &expected), dir.path(), "t", false).unwrap_err();
        let Error::Checksum {
            expected: e,
            actual,
            ..
        } = &err
        else {
            panic!("{err}");
        };
        assert_eq!(e, &expected);
        assert_eq!(actual, &crate::sha256_hex(b"something else"));
    }

    #[test]
    fn unreachable_url_is_a_download_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let url = "http://127.0.0.1:9/x.bin";
        let err = fetch_file(&pinned(url, "00"), dir.path(), "t", false).unwrap_err();
        assert!(matches!(err, Error::Download { .. }), "{err}");
        assert!(err.to_string().contains(url), "{err}");
        // Nothing is left behind.
        assert!(fs::read_dir(dir.path()).unwrap().next().is_none());
    }

    #[test]
    fn missing_local_file_is_a_read_error() {
        let dir = tempfile::tempdir().unwrap();
        let url = dir.path().join("nope").display().to_string();
        let err = fetch_file(&pinned(&url, "00"), dir.path(), "t", false).unwrap_err();
        assert!(matches!(err, Error::Read { .. }), "{err}");
    }
}
