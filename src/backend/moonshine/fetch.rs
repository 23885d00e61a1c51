//! Obtains the Moonshine engine (library, its onnxruntime, the tiny English model) on first
//! use, and the pieces of other pinned wheels hark runs (the turn model).
//!
//! Each ships only inside a Python wheel, pinned here by URL and checksum. It is unpacked
//! once into the cache directory and reused; a marker file holding the verified checksum,
//! written last, tells a complete unpack from an interrupted one without touching the
//! network.

use std::fs::{self, File};
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

pub const PINNED_VERSION: &str = "0.1.0";
pub const PINNED_URL: &str = "https://files.pythonhosted.org/packages/fd/a3/e3c0156664e9505af7b23072c3e947cec3a7ee938764c70424051366c368/moonshine_voice-0.1.0-py3-none-manylinux_2_34_x86_64.whl";
pub const PINNED_SHA256: &str = "0f833deb43bad5dcfb4cfd3257b6df83ef9abd3f27be3199622fe41932e8d916";

/// Records the checksum of the wheel a complete unpack came from.
const MARKER: &str = "hark-verified.sha256";
const LIB_PATH: &str = "moonshine_voice/libmoonshine.so";
const LIBS_DIR: &str = "moonshine_voice.libs";
const MODEL_DIR: &str = "moonshine_voice/assets/tiny-en";
/// The onnxruntime (1.23.2) `libmoonshine.so` links to; its hashed name is part of the
/// pinned wheel.
const ORT_PATH: &str = "moonshine_voice.libs/libonnxruntime-13ab8084.so.1";

/// The engine's wheel: the library, the onnxruntime it links to and the tiny English model.
pub static ENGINE_WHEEL: Wheel = Wheel {
    what: "the Moonshine engine",
    pip: "moonshine-voice==0.1.0",
    offline: "--moonshine-wheel PATH / HARK_MOONSHINE_WHEEL",
    dir: "moonshine-voice-0.1.0",
    take: &[
        (LIB_PATH, LIB_PATH),
        (LIBS_DIR, LIBS_DIR),
        (MODEL_DIR, MODEL_DIR),
    ],
    required: &[
        LIB_PATH,
        ORT_PATH,
        MODEL_DIR,
        "moonshine_voice/assets/tiny-en/encoder_model.ort",
    ],
    pinned: &[],
};

/// A pinned wheel and the part of it hark runs.
pub struct Wheel {
    /// For messages: "the Moonshine engine".
    pub what: &'static str,
    /// What `pip download --no-deps` takes to fetch it by hand: "moonshine-voice==0.1.0".
    pub pip: &'static str,
    /// How to hand hark a wheel fetched by hand, for messages.
    pub offline: &'static str,
    /// Its folder in the cache dir.
    pub dir: &'static str,
    /// `(in the wheel, in the folder)`: the entries (files or folders) unpacked, and where.
    pub take: &'static [(&'static str, &'static str)],
    /// Paths in the folder an unpack must have produced. The first one also tells a complete
    /// unpack on later runs, together with the marker.
    pub required: &'static [&'static str],
    /// `(path in the folder, sha256)`: unpacked files whose own checksum is pinned too.
    pub pinned: &'static [(&'static str, &'static str)],
}

impl std::fmt::Debug for Wheel {
    /// Its name alone: errors carry the wheel, and their debug output should stay readable.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Wheel({:?})", self.pip)
    }
}

impl Wheel {
    fn offline_hint(&self) -> String {
        format!(
            "hark needs it once; on an offline machine, fetch the wheel elsewhere (`pip download \
             --no-deps {}`) and pass it with {}, or point --cache-dir at a folder that already \
             holds it.",
            self.pip, self.offline
        )
    }

    /// Where the wanted entry `rel` of the wheel goes in the folder, if it is wanted.
    fn target(&self, rel: &Path) -> Option<PathBuf> {
        self.take.iter().find_map(|(from, to)| {
            let rest = rel.strip_prefix(from).ok()?;
            Some(if rest.as_os_str().is_empty() {
                PathBuf::from(to)
            } else {
                Path::new(to).join(rest)
            })
        })
    }
}

/// Where an unpacked engine lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnginePaths {
    /// `libmoonshine.so`, for `ffi::Library::load`.
    pub lib: PathBuf,
    /// The tiny English model, for `ffi::Transcriber::load`.
    pub model_dir: PathBuf,
    /// The onnxruntime library `libmoonshine.so` loads, for other models to share it.
    pub onnxruntime: PathBuf,
    /// The unpacked engine as a whole.
    pub root: PathBuf,
}

#[derive(Debug, Clone)]
pub struct FetchOptions {
    pub cache_dir: PathBuf,
    /// An `http(s)://` URL, a `file://` URL or a plain path to the wheel.
    pub url: String,
    /// Expected sha256 of the wheel, lowercase hex. Only tests change it.
    pub sha256: String,
    /// Draw a progress bar when stderr is a terminal (otherwise log every ~10 %).
    pub progress: bool,
}

impl Default for FetchOptions {
    /// The Moonshine engine's pinned wheel.
    fn default() -> Self {
        FetchOptions {
            cache_dir: default_cache_dir(),
            url: PINNED_URL.to_owned(),
            sha256: PINNED_SHA256.to_owned(),
            progress: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("could not download {} from {url}: {cause}. {}", wheel.what, wheel.offline_hint())]
    Download {
        wheel: &'static Wheel,
        url: String,
        cause: String,
    },

    #[error(
        "{} from {url} has sha256 {actual}, expected {expected}: the file is damaged or is not \
         {}. Fetch it again (`pip download --no-deps {}`) and pass it with {}.",
        wheel.what, wheel.pip, wheel.pip, wheel.offline
    )]
    Checksum {
        wheel: &'static Wheel,
        url: String,
        expected: String,
        actual: String,
    },

    #[error(
        "{file} unpacked from {url} has sha256 {actual}, expected {expected}: the wheel is not \
         the pinned {}. Fetch it again (`pip download --no-deps {}`) and pass it with {}.",
        wheel.pip, wheel.pip, wheel.offline
    )]
    FileChecksum {
        wheel: &'static Wheel,
        url: String,
        file: String,
        expected: String,
        actual: String,
    },

    #[error("could not read the wheel {}: {source}. {}", path.display(), wheel.offline_hint())]
    ReadWheel {
        wheel: &'static Wheel,
        path: PathBuf,
        source: io::Error,
    },

    #[error("the wheel of {} from {url} is not usable: {reason}", wheel.what)]
    BadWheel {
        wheel: &'static Wheel,
        url: String,
        reason: String,
    },

    #[error(
        "could not {action} {}: {source}. Check that the cache directory is writable, or \
         choose another with --cache-dir / HARK_CACHE_DIR.",
        path.display()
    )]
    Cache {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

/// `$XDG_CACHE_HOME/hark`, else `$HOME/.cache/hark`, else `./.cache/hark`.
pub fn default_cache_dir() -> PathBuf {
    let non_empty = |key| std::env::var_os(key).filter(|v| !v.is_empty());
    if let Some(xdg) = non_empty("XDG_CACHE_HOME") {
        return PathBuf::from(xdg).join("hark");
    }
    let home = non_empty("HOME").map(PathBuf::from).unwrap_or_default();
    home.join(".cache").join("hark")
}

/// Returns the unpacked engine, downloading and unpacking it first if needed.
///
/// Blocking; safe to run from several processes at once (the last step is a rename).
pub fn ensure_engine(opts: &FetchOptions) -> Result<EnginePaths, FetchError> {
    let root = ensure_wheel(&ENGINE_WHEEL, opts)?;
    Ok(EnginePaths {
        lib: root.join(LIB_PATH),
        model_dir: root.join(MODEL_DIR),
        onnxruntime: root.join(ORT_PATH),
        root,
    })
}

/// Returns the folder `wheel` is unpacked in, downloading and unpacking it first if needed.
///
/// Blocking; safe to run from several processes at once (the last step is a rename).
pub fn ensure_wheel(wheel: &'static Wheel, opts: &FetchOptions) -> Result<PathBuf, FetchError> {
    let root = opts.cache_dir.join(wheel.dir);
    if is_complete(wheel, &root, &opts.sha256) {
        return Ok(root);
    }

    fs::create_dir_all(&opts.cache_dir).map_err(cache_err("create", &opts.cache_dir))?;

    // A plain path or file:// URL is used in place; anything else is downloaded into a
    // temporary file that `download_guard` deletes once unpacked.
    let (file, download_guard) = match local_path(&opts.url) {
        Some(path) => {
            let actual = hash_file(&path).map_err(|source| FetchError::ReadWheel {
                wheel,
                path: path.clone(),
                source,
            })?;
            check_sha(wheel, opts, &actual)?;
            (path, None)
        }
        None => {
            let temp = download(wheel, opts)?;
            (temp.path.clone(), Some(temp))
        }
    };

    tracing::info!(root = %root.display(), "unpacking {}", wheel.what);
    let staging = TempPath::new(&opts.cache_dir, wheel.dir, "unpack");
    fs::create_dir(&staging.path).map_err(cache_err("create", &staging.path))?;
    extract(wheel, &file, &staging.path, &opts.url)?;
    write_marker(&staging.path, &opts.sha256)?;
    drop(download_guard);

    install(wheel, &staging, &root, &opts.sha256)?;
    tracing::info!(root = %root.display(), "{} ready", wheel.what);
    Ok(root)
}

fn is_complete(wheel: &Wheel, root: &Path, sha256: &str) -> bool {
    let Ok(marker) = fs::read_to_string(root.join(MARKER)) else {
        return false;
    };
    marker.trim().eq_ignore_ascii_case(sha256.trim())
        && wheel.required.first().is_none_or(|p| root.join(p).exists())
}

fn local_path(url: &str) -> Option<PathBuf> {
    if let Some(path) = url.strip_prefix("file://") {
        return Some(PathBuf::from(path));
    }
    if url.starts_with("http://") || url.starts_with("https://") {
        return None;
    }
    Some(PathBuf::from(url))
}

fn check_sha(wheel: &'static Wheel, opts: &FetchOptions, actual: &str) -> Result<(), FetchError> {
    if actual.eq_ignore_ascii_case(opts.sha256.trim()) {
        return Ok(());
    }
    Err(FetchError::Checksum {
        wheel,
        url: opts.url.clone(),
        expected: opts.sha256.trim().to_ascii_lowercase(),
        actual: actual.to_owned(),
    })
}

/// Streams the wheel into a temporary file in the cache dir, hashing as it goes.
fn download(wheel: &'static Wheel, opts: &FetchOptions) -> Result<TempPath, FetchError> {
    let url = &opts.url;
    let fail = |cause: String| FetchError::Download {
        wheel,
        url: url.clone(),
        cause,
    };

    tracing::info!(%url, "downloading {} (once)", wheel.what);
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

    let temp = TempPath::new(&opts.cache_dir, wheel.dir, "download");
    let mut file = File::create(&temp.path).map_err(cache_err("create", &temp.path))?;
    let mut hasher = Sha256::new();
    let mut progress = Progress::new(wheel.what, opts.progress, total);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(fail(e.to_string())),
        };
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n])
            .map_err(cache_err("write", &temp.path))?;
        progress.advance(n as u64);
    }
    file.sync_all().map_err(cache_err("write", &temp.path))?;
    progress.finish();

    // On a mismatch `temp` is dropped here, deleting the bad download.
    check_sha(wheel, opts, &hex(&hasher.finalize()))?;
    Ok(temp)
}

/// Trusts the system's CA bundle, like curl and pip do, so that downloads work behind the
/// TLS-inspecting proxies common on company networks (their CA is installed system-wide but
/// absent from the built-in Mozilla list). Falls back to that list without a system bundle.
fn root_certs() -> ureq::tls::RootCerts {
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

/// Progress for a long download: a bar on a terminal, log lines elsewhere.
enum Progress {
    Bar(indicatif::ProgressBar),
    Log {
        what: &'static str,
        done: u64,
        total: Option<u64>,
        next: u64,
    },
}

impl Progress {
    const LOG_STEP_UNKNOWN: u64 = 10 << 20;

    fn new(what: &'static str, bar: bool, total: Option<u64>) -> Progress {
        if bar && io::stderr().is_terminal() {
            let pb = match total {
                Some(len) => indicatif::ProgressBar::new(len),
                None => indicatif::ProgressBar::new_spinner(),
            };
            let name = what.strip_prefix("the ").unwrap_or(what);
            if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
                "{name} {{bar:30}} {{bytes}}/{{total_bytes}} {{bytes_per_sec}} eta {{eta}}"
            )) {
                pb.set_style(style);
            }
            return Progress::Bar(pb);
        }
        let next = total.map_or(Self::LOG_STEP_UNKNOWN, |t| t / 10);
        Progress::Log {
            what,
            done: 0,
            total,
            next,
        }
    }

    fn advance(&mut self, n: u64) {
        match self {
            Progress::Bar(pb) => pb.inc(n),
            Progress::Log {
                what,
                done,
                total,
                next,
            } => {
                *done += n;
                if *done < *next {
                    return;
                }
                match *total {
                    Some(t) if t > 0 => {
                        let percent = (*done * 100 / t).min(100);
                        tracing::info!("downloading {what}: {percent}% of {} MB", t >> 20);
                        *next = (percent / 10 + 1) * t / 10;
                    }
                    _ => {
                        tracing::info!("downloading {what}: {} MB", *done >> 20);
                        *next = *done + Self::LOG_STEP_UNKNOWN;
                    }
                }
            }
        }
    }

    fn finish(self) {
        if let Progress::Bar(pb) = self {
            pb.finish_and_clear();
        }
    }
}

fn extract(wheel: &'static Wheel, file: &Path, dest: &Path, url: &str) -> Result<(), FetchError> {
    let bad = |reason: String| FetchError::BadWheel {
        wheel,
        url: url.to_owned(),
        reason,
    };
    let opened = File::open(file).map_err(|source| FetchError::ReadWheel {
        wheel,
        path: file.to_owned(),
        source,
    })?;
    let mut archive = zip::ZipArchive::new(io::BufReader::new(opened))
        .map_err(|e| bad(format!("not a zip archive ({e})")))?;

    for i in 0..archive.len() {
        let mut entry = archive
            .by_index(i)
            .map_err(|e| bad(format!("entry {i}: {e}")))?;
        // Refuse the whole archive rather than skip: a wheel with such names is not ours.
        let Some(rel) = entry.enclosed_name() else {
            return Err(bad(format!("unsafe entry path {:?}", entry.name())));
        };
        if entry.is_dir() {
            continue;
        }
        let Some(target) = wheel.target(&rel) else {
            continue;
        };
        let target = dest.join(target);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(cache_err("create", parent))?;
        }
        let mut out = File::create(&target).map_err(cache_err("create", &target))?;
        io::copy(&mut entry, &mut out).map_err(|e| match e.kind() {
            // Reading a damaged entry fails with InvalidData (bad deflate stream or CRC).
            io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => {
                bad(format!("entry {}: {e}", rel.display()))
            }
            _ => cache_err("write", &target)(e),
        })?;
        if let Some(mode) = entry.unix_mode() {
            use std::os::unix::fs::PermissionsExt;
            let perms = fs::Permissions::from_mode(mode & 0o755);
            fs::set_permissions(&target, perms).map_err(cache_err("write", &target))?;
        }
    }

    for required in wheel.required {
        if !dest.join(required).exists() {
            return Err(bad(format!("it lacks {required}")));
        }
    }
    for (path, expected) in wheel.pinned {
        let target = dest.join(path);
        let actual = hash_file(&target).map_err(cache_err("read", &target))?;
        if !actual.eq_ignore_ascii_case(expected) {
            return Err(FetchError::FileChecksum {
                wheel,
                url: url.to_owned(),
                file: (*path).to_owned(),
                expected: (*expected).to_owned(),
                actual,
            });
        }
    }
    Ok(())
}

fn write_marker(dir: &Path, sha256: &str) -> Result<(), FetchError> {
    let path = dir.join(MARKER);
    let mut file = File::create(&path).map_err(cache_err("create", &path))?;
    writeln!(file, "{}", sha256.trim().to_ascii_lowercase())
        .and_then(|()| file.sync_all())
        .map_err(cache_err("write", &path))
}

/// Moves a complete unpack to `root`, replacing a stale one. If another process got there
/// first with a complete unpack, theirs wins and ours is discarded.
fn install(wheel: &Wheel, staging: &TempPath, root: &Path, sha256: &str) -> Result<(), FetchError> {
    for _ in 0..3 {
        match fs::rename(&staging.path, root) {
            Ok(()) => return Ok(()),
            Err(_) if is_complete(wheel, root, sha256) => return Ok(()),
            Err(e) if !root.exists() => return Err(cache_err("create", root)(e)),
            Err(_) => {
                // Incomplete or from another wheel: move it aside first, since a non-empty
                // directory cannot be renamed over.
                let stale = TempPath::new(root.parent().unwrap_or(root), wheel.dir, "stale");
                match fs::rename(root, &stale.path) {
                    Ok(()) => {}
                    Err(_) if !root.exists() => {}
                    Err(e) => return Err(cache_err("replace", root)(e)),
                }
            }
        }
    }
    Err(cache_err("replace", root)(io::Error::other(
        "another process keeps replacing it",
    )))
}

/// A path in the cache dir that is deleted (file or tree) when dropped, so that failures and
/// panics leave no half-written downloads or unpacks behind.
struct TempPath {
    path: PathBuf,
}

impl TempPath {
    fn new(dir: &Path, prefix: &str, what: &str) -> TempPath {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!(".{prefix}-{what}-{}-{nanos}-{n}.tmp", std::process::id());
        TempPath {
            path: dir.join(name),
        }
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = match fs::symlink_metadata(&self.path) {
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(&self.path),
            Ok(_) => fs::remove_file(&self.path),
            Err(_) => Ok(()),
        };
    }
}

fn cache_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> FetchError {
    let path = path.to_owned();
    move |source| FetchError::Cache {
        action,
        path,
        source,
    }
}

fn hash_file(path: &Path) -> io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(hex(&hasher.finalize())),
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny stand-in for the wheel, with the entries `extract` looks for.
    fn fake_wheel(dir: &Path) -> PathBuf {
        let path = dir.join("fake.whl");
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        for name in [
            LIB_PATH.to_owned(),
            ORT_PATH.to_owned(),
            format!("{MODEL_DIR}/encoder_model.ort"),
            "moonshine_voice/assets/beckett.wav".to_owned(),
        ] {
            zip.start_file(name, opts).unwrap();
            zip.write_all(b"not really").unwrap();
        }
        zip.finish().unwrap();
        path
    }

    fn options(cache: &Path, url: String, sha256: String) -> FetchOptions {
        FetchOptions {
            cache_dir: cache.to_owned(),
            url,
            sha256,
            progress: false,
        }
    }

    #[test]
    fn checksum_mismatch_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = fake_wheel(dir.path());
        let cache = dir.path().join("cache");
        let opts = options(&cache, wheel.display().to_string(), PINNED_SHA256.into());

        let err = ensure_engine(&opts).unwrap_err();
        let FetchError::Checksum {
            expected, actual, ..
        } = &err
        else {
            panic!("expected a checksum error, got {err}");
        };
        assert_eq!(expected, PINNED_SHA256);
        assert_eq!(actual, &hash_file(&wheel).unwrap());
        let msg = err.to_string();
        assert!(
            msg.contains(PINNED_SHA256) && msg.contains(actual.as_str()),
            "{msg}"
        );
        // Nothing half-done is left in the cache.
        assert!(fs::read_dir(&cache).unwrap().next().is_none());
    }

    #[test]
    fn local_wheel_is_unpacked_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = fake_wheel(dir.path());
        let sha = hash_file(&wheel).unwrap();
        let cache = dir.path().join("cache");
        let opts = options(&cache, format!("file://{}", wheel.display()), sha);

        let paths = ensure_engine(&opts).unwrap();
        assert!(paths.lib.is_file());
        assert!(paths.model_dir.join("encoder_model.ort").is_file());
        assert!(paths.onnxruntime.is_file());
        assert!(paths.onnxruntime.starts_with(paths.root.join(LIBS_DIR)));
        assert!(
            !paths
                .root
                .join("moonshine_voice/assets/beckett.wav")
                .exists()
        );
        let leftovers: Vec<_> = fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");

        // Second run: the wheel is gone, so only the marker can satisfy it.
        fs::remove_file(&wheel).unwrap();
        assert_eq!(ensure_engine(&opts).unwrap(), paths);
    }

    #[test]
    fn marker_present_means_no_fetch() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(format!("moonshine-voice-{PINNED_VERSION}"));
        fs::create_dir_all(root.join("moonshine_voice")).unwrap();
        fs::write(root.join(LIB_PATH), b"").unwrap();
        fs::write(root.join(MARKER), format!("{PINNED_SHA256}\n")).unwrap();
        // An unreachable URL: any attempt to fetch would fail.
        let opts = options(
            dir.path(),
            "http://127.0.0.1:9/nothing.whl".into(),
            PINNED_SHA256.into(),
        );

        let paths = ensure_engine(&opts).unwrap();
        assert_eq!(paths.root, root);
        assert_eq!(paths.lib, root.join(LIB_PATH));
        assert_eq!(paths.model_dir, root.join(MODEL_DIR));
    }

    #[test]
    fn stale_unpack_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = fake_wheel(dir.path());
        let sha = hash_file(&wheel).unwrap();
        let root = dir.path().join(format!("moonshine-voice-{PINNED_VERSION}"));
        fs::create_dir_all(root.join("junk")).unwrap();
        let opts = options(dir.path(), wheel.display().to_string(), sha);

        let paths = ensure_engine(&opts).unwrap();
        assert!(paths.lib.is_file());
        assert!(!root.join("junk").exists());
    }

    #[test]
    fn unsafe_entry_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evil.whl");
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        zip.start_file(
            "../moonshine_voice/libmoonshine.so",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        zip.write_all(b"x").unwrap();
        zip.finish().unwrap();
        let sha = hash_file(&path).unwrap();
        let opts = options(&dir.path().join("cache"), path.display().to_string(), sha);

        let err = ensure_engine(&opts).unwrap_err();
        assert!(matches!(err, FetchError::BadWheel { .. }), "{err}");
        assert!(!dir.path().join("moonshine_voice").exists());
    }

    #[test]
    fn unreachable_url_names_the_offline_route() {
        let dir = tempfile::tempdir().unwrap();
        let opts = options(
            dir.path(),
            "http://127.0.0.1:9/moonshine.whl".into(),
            PINNED_SHA256.into(),
        );
        let msg = ensure_engine(&opts).unwrap_err().to_string();
        assert!(msg.contains("http://127.0.0.1:9/moonshine.whl"), "{msg}");
        assert!(msg.contains("--moonshine-wheel"), "{msg}");
    }

    #[test]
    fn missing_local_wheel_is_actionable() {
        let dir = tempfile::tempdir().unwrap();
        let opts = options(
            dir.path(),
            dir.path().join("nope.whl").display().to_string(),
            PINNED_SHA256.into(),
        );
        let err = ensure_engine(&opts).unwrap_err();
        assert!(matches!(err, FetchError::ReadWheel { .. }), "{err}");
        assert!(err.to_string().contains("pip download"), "{err}");
    }

    /// A wheel of which one file is taken, moved to the folder's top and checked on its own.
    static ONE_FILE: Wheel = Wheel {
        what: "the test model",
        pip: "test-model==1.0",
        offline: "TEST_WHEEL",
        dir: "test-model-1.0",
        take: &[("pkg/data/model.onnx", "model.onnx")],
        required: &["model.onnx"],
        // sha256 of "not really".
        pinned: &[(
            "model.onnx",
            "c22d26d33c5783cf2bd157ba48eefa471ac49ab7bc71d5e8d5977eedd2c91726",
        )],
    };

    fn one_file_wheel(dir: &Path, content: &[u8]) -> PathBuf {
        let path = dir.join("one.whl");
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        for name in ["pkg/data/model.onnx", "pkg/other.py"] {
            zip.start_file(name, opts).unwrap();
            zip.write_all(content).unwrap();
        }
        zip.finish().unwrap();
        path
    }

    #[test]
    fn one_file_is_taken_to_the_top_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let content = b"not really";
        assert_eq!(hex(&Sha256::digest(content)), ONE_FILE.pinned[0].1);
        let wheel = one_file_wheel(dir.path(), content);
        let sha = hash_file(&wheel).unwrap();
        let cache = dir.path().join("cache");
        let root = ensure_wheel(
            &ONE_FILE,
            &options(&cache, wheel.display().to_string(), sha),
        )
        .unwrap();
        assert_eq!(root, cache.join("test-model-1.0"));
        assert_eq!(fs::read(root.join("model.onnx")).unwrap(), content);
        assert!(!root.join("pkg").exists());
    }

    #[test]
    fn pinned_file_mismatch_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = one_file_wheel(dir.path(), b"something else");
        let sha = hash_file(&wheel).unwrap();
        let cache = dir.path().join("cache");
        let err = ensure_wheel(
            &ONE_FILE,
            &options(&cache, wheel.display().to_string(), sha),
        )
        .unwrap_err();
        let FetchError::FileChecksum { file, expected, .. } = &err else {
            panic!("expected a file checksum error, got {err}");
        };
        assert_eq!(file, "model.onnx");
        assert_eq!(expected, ONE_FILE.pinned[0].1);
        let msg = err.to_string();
        assert!(
            msg.contains("test-model==1.0") && msg.contains("TEST_WHEEL"),
            "{msg}"
        );
        assert!(!cache.join("test-model-1.0").exists());
        assert!(fs::read_dir(&cache).unwrap().next().is_none());
    }
}
