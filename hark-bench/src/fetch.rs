//! The speech corpus `hark bench` and the tests play, fetched on first use.
//!
//! Real speech with reference transcripts ships inside three registry packages, each pinned
//! here by URL and sha256: Debian's `pocketsphinx-testdata` (five LibriVox clips and "go
//! forward ten meters"), PyPI's `moonshine-voice` wheel (beckett.wav) and npm's
//! `nodejs-whisper` (whisper.cpp's jfk.wav). The clips taken out of them are pinned too, so a
//! package changed under the same name is caught. They are unpacked into a staging folder
//! with `transcripts.tsv`, plus the assistant prompts when espeak-ng is installed, and a
//! marker written last; the folder is then renamed into place and reused without network.
//!
//! A folder without the marker (such as one made by the shell script this replaces) is not
//! trusted: it is fetched again and replaced.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use hark_fetch::{Pinned, TempPath, hash_file, sha256_hex};

/// The folder in the cache dir.
pub const CLIPS_DIR: &str = "clips";
/// Holds the fingerprint of the pins a complete folder was made from; written last.
const MARKER: &str = "hark-clips.verified";
const INDEX: &str = "transcripts.tsv";
const ASSISTANT_INDEX: &str = "assistant.tsv";

pub const DEBIAN_URL: &str = "https://deb.debian.org/debian/pool/main/p/pocketsphinx/pocketsphinx-testdata_0.8%2b5prealpha%2b1-15_all.deb";
pub const DEBIAN_SHA256: &str = "eaeb7a01d54f20b799d1a81ef110ec544b2cb47ea006614078220737a33019f0";
/// The wheel the server's engine is pinned to (hark's `wheel`): the same
/// download, for the one clip it ships.
pub const PYPI_URL: &str = "https://files.pythonhosted.org/packages/fd/a3/e3c0156664e9505af7b23072c3e947cec3a7ee938764c70424051366c368/moonshine_voice-0.1.0-py3-none-manylinux_2_34_x86_64.whl";
pub const PYPI_SHA256: &str = "0f833deb43bad5dcfb4cfd3257b6df83ef9abd3f27be3199622fe41932e8d916";
pub const NPM_URL: &str = "https://registry.npmjs.org/nodejs-whisper/-/nodejs-whisper-0.3.1.tgz";
pub const NPM_SHA256: &str = "92041caf2b26c74b7f489fedf37bd093f216eebd61df512045ec2d19d0531d37";

/// Where the clips are inside the Debian package's data.
const DEBIAN_DATA: &str = "usr/share/pocketsphinx/test/data";
const BECKETT_PATH: &str = "moonshine_voice/assets/beckett.wav";
const BECKETT_TEXT: &str =
    "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.";
const JFK_PATH: &str = "package/cpp/whisper.cpp/bindings/go/samples/jfk.wav";
const JFK_TEXT: &str = "And so my fellow Americans, ask not what your country can do for you, \
                        ask what you can do for your country.";
const GOFORWARD_TEXT: &str = "go forward ten meters";

/// The sha256 of every clip the pinned packages give, as written into the folder.
const PINNED_CLIPS: [(&str, &str); 8] = [
    (
        "sense_and_sensibility_01_austen_64kb-0870.wav",
        "b0557cf95c974d930577e58e46b7f068c432a6e3afcc286563d88922b2a5315c",
    ),
    (
        "sense_and_sensibility_01_austen_64kb-0880.wav",
        "fbec491ef00ee734a67f0ee318e98c51c157b479e1629ff4f4426861ecac0414",
    ),
    (
        "sense_and_sensibility_01_austen_64kb-0890.wav",
        "5793ffbdee55fb8bfd284943a6866864c832d9d4accf2661cabd39915c84ee10",
    ),
    (
        "sense_and_sensibility_01_austen_64kb-0920.wav",
        "40882414ef4cc51f3ff7a63bad0c8c87e7f595ffeb8209fbf756c8ebc5c28a59",
    ),
    (
        "sense_and_sensibility_01_austen_64kb-0930.wav",
        "954adbf0b56ac8a148cbe77b39ca18d76b5f2a1e1f405565bd786ce3e68a68b7",
    ),
    (
        "goforward.wav",
        "97ec638609b9c7eeb616764b4e5713d7ed2d0a8e1a2f8246631d9074d47aaf11",
    ),
    (
        "beckett.wav",
        "e5a26b3d29e5b0bc8dbd72c11d16a3808a4ec0ac45b21f12a27d2a2fe5c5ae61",
    ),
    (
        "jfk.wav",
        "59dfb9a4acb36fe2a2affc14bacbee2920ff435cb13cc314a08c13f66ba7860e",
    ),
];

/// The assistant's side, spoken by espeak-ng as a text-to-speech engine would.
pub const ASSISTANT_PROMPTS: [&str; 6] = [
    "Thanks for calling. How can I help you today?",
    "Sure, I can help with that. Could you tell me your account number?",
    "I have found your booking for Tuesday at three in the afternoon.",
    "Is there anything else I can do for you?",
    "Let me check that for you. It will only take a moment.",
    "Your order has shipped and should arrive on Friday.",
];

/// What to tell someone whose machine cannot reach the registries.
const OFFLINE_HINT: &str = "hark needs the speech clips once. On an offline machine, fetch them \
     where the registries are reachable (`hark bench` there fetches the three packages: Debian \
     pocketsphinx-testdata, PyPI moonshine-voice==0.1.0, npm nodejs-whisper@0.3.1) and copy \
     the clips folder it fills (by default ~/.cache/hark/clips) over, then pass it with \
     --clips DIR (or HARK_CLIPS_DIR).";

/// One pinned package.
#[derive(Debug, Clone)]
pub struct Package {
    /// For messages: "Debian's pocketsphinx-testdata".
    pub what: &'static str,
    /// An `http(s)://` URL, a `file://` URL or a plain path.
    pub url: String,
    /// Its sha256, hex.
    pub sha256: String,
}

/// Where the clips come from. Only tests change it.
#[derive(Debug, Clone)]
pub struct Sources {
    /// A `.deb` with `data.tar.{xz,gz}`: `librivox/*.wav`, `librivox/transcription` and
    /// `goforward.raw` under `usr/share/pocketsphinx/test/data`.
    pub debian: Package,
    /// A wheel (zip) with `moonshine_voice/assets/beckett.wav`.
    pub pypi: Package,
    /// An npm tarball (tar.gz) with whisper.cpp's `jfk.wav`.
    pub npm: Package,
    /// `(file, sha256)` for every clip the packages must give, and nothing else.
    pub clips: Vec<(String, String)>,
}

impl Default for Sources {
    /// The pinned packages and clips.
    fn default() -> Self {
        Sources {
            debian: Package {
                what: "Debian's pocketsphinx-testdata",
                url: DEBIAN_URL.to_owned(),
                sha256: DEBIAN_SHA256.to_owned(),
            },
            pypi: Package {
                what: "PyPI's moonshine-voice wheel",
                url: PYPI_URL.to_owned(),
                sha256: PYPI_SHA256.to_owned(),
            },
            npm: Package {
                what: "npm's nodejs-whisper",
                url: NPM_URL.to_owned(),
                sha256: NPM_SHA256.to_owned(),
            },
            clips: PINNED_CLIPS
                .iter()
                .map(|(f, s)| ((*f).to_owned(), (*s).to_owned()))
                .collect(),
        }
    }
}

impl Sources {
    /// Changes whenever a pin does, so a folder made from other pins is fetched again.
    fn fingerprint(&self) -> String {
        let mut text = String::new();
        for p in [&self.debian, &self.pypi, &self.npm] {
            text.push_str(&p.sha256.trim().to_ascii_lowercase());
            text.push('\n');
        }
        for (file, sha) in &self.clips {
            text.push_str(&format!("{file} {}\n", sha.trim().to_ascii_lowercase()));
        }
        sha256_hex(text.as_bytes())
    }
}

#[derive(Debug, Clone)]
pub struct ClipsOptions {
    /// The folder `clips/` is made in.
    pub cache_dir: PathBuf,
    pub sources: Sources,
    /// Draw progress bars when stderr is a terminal (otherwise log every ~10 %).
    pub progress: bool,
}

impl Default for ClipsOptions {
    fn default() -> Self {
        ClipsOptions {
            cache_dir: hark_fetch::default_cache_dir(),
            sources: Sources::default(),
            progress: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClipsError {
    #[error("could not download {what} from {url}: {cause}. {OFFLINE_HINT}")]
    Download {
        what: &'static str,
        url: String,
        cause: String,
    },

    #[error(
        "{what} from {url} has sha256 {actual}, expected {expected}: the download is damaged \
         or is not the pinned package. {OFFLINE_HINT}"
    )]
    Checksum {
        what: &'static str,
        url: String,
        expected: String,
        actual: String,
    },

    #[error(
        "{file} taken from {url} has sha256 {actual}, expected {expected}: the package is not \
         the pinned one"
    )]
    ClipChecksum {
        file: String,
        url: String,
        expected: String,
        actual: String,
    },

    #[error("could not read {what} at {}: {source}. {OFFLINE_HINT}", path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },

    #[error("{what} from {url} is not usable: {reason}")]
    BadPackage {
        what: &'static str,
        url: String,
        reason: String,
    },

    #[error(
        "could not {action} {}: {source}. Check that the cache directory is writable \
         (XDG_CACHE_HOME), or pass a clips folder with --clips DIR.",
        path.display()
    )]
    Cache {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },

    #[error(
        "{} holds no speech clips (no {INDEX}): pass a folder hark has fetched (by default \
         ~/.cache/hark/clips), or leave --clips and HARK_CLIPS_DIR unset to fetch one",
        path.display()
    )]
    NotAClipsDir { path: PathBuf },
}

/// The clips folder: an explicit `--clips DIR`, else `HARK_CLIPS_DIR`, used as they are;
/// else the default cache folder, fetched on first use (blocking).
pub fn clips_dir(explicit: Option<&Path>) -> Result<PathBuf, ClipsError> {
    let given = explicit.map(Path::to_owned).or_else(|| {
        std::env::var_os("HARK_CLIPS_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    match given {
        Some(dir) if dir.join(INDEX).is_file() => Ok(dir),
        Some(dir) => Err(ClipsError::NotAClipsDir { path: dir }),
        None => ensure_clips(&ClipsOptions::default()),
    }
}

/// Returns `<cache_dir>/clips`, fetching and building it first if needed.
///
/// Blocking; safe to run from several processes at once (the last step is a rename).
pub fn ensure_clips(opts: &ClipsOptions) -> Result<PathBuf, ClipsError> {
    let root = opts.cache_dir.join(CLIPS_DIR);
    let fingerprint = opts.sources.fingerprint();
    if is_complete(&root, &fingerprint) {
        add_missing_prompts(&root);
        return Ok(root);
    }

    // The first run downloads before it plays anything: say so, or it looks hung.
    tracing::info!(
        "fetching the speech corpus once into {}: {}, {} and {} (pinned, checksum-verified); \
         later runs reuse it (offline: copy such a folder and pass --clips DIR)",
        root.display(),
        opts.sources.debian.what,
        opts.sources.pypi.what,
        opts.sources.npm.what,
    );
    fs::create_dir_all(&opts.cache_dir).map_err(cache_err("create", &opts.cache_dir))?;
    let staging = TempPath::new(&opts.cache_dir, CLIPS_DIR, "unpack");
    fs::create_dir(&staging.path).map_err(cache_err("create", &staging.path))?;
    let dest = staging.path.as_path();
    let src = &opts.sources;

    let mut rows = {
        let deb = fetch(&src.debian, opts)?;
        tracing::info!("unpacking {}", src.debian.what);
        unpack_debian(&src.debian, &deb.path, dest)?
    };
    {
        let wheel = fetch(&src.pypi, opts)?;
        take_from_zip(
            &src.pypi,
            &wheel.path,
            BECKETT_PATH,
            &dest.join("beckett.wav"),
        )?;
        rows.push(("beckett.wav".to_owned(), BECKETT_TEXT.to_owned()));
    }
    {
        let tgz = fetch(&src.npm, opts)?;
        take_from_tgz(&src.npm, &tgz.path, JFK_PATH, &dest.join("jfk.wav"))?;
        rows.push(("jfk.wav".to_owned(), JFK_TEXT.to_owned()));
    }
    check_clips(src, dest, &rows)?;
    write_index(&dest.join(INDEX), &rows)?;

    if espeak_available() {
        if let Err(e) = synthesise_prompts(dest) {
            tracing::warn!("assistant prompts left out: {e}");
        }
    } else {
        tracing::warn!(
            "espeak-ng is not installed, so the clips have no synthesised assistant prompts \
             (the assistant side then speaks only jfk.wav and beckett.wav). To add them, install \
             it (`apt-get install espeak-ng`); the next run adds them to {}",
            root.display()
        );
    }

    hark_fetch::write_marker(dest, MARKER, &fingerprint).map_err(from_fetch("the clips"))?;
    hark_fetch::install(&staging, &root, CLIPS_DIR, |root| {
        is_complete(root, &fingerprint)
    })
    .map_err(from_fetch("the clips"))?;
    tracing::info!(dir = %root.display(), "speech clips ready");
    Ok(root)
}

fn is_complete(root: &Path, fingerprint: &str) -> bool {
    hark_fetch::marker_matches(root, MARKER, fingerprint) && root.join(INDEX).is_file()
}

fn fetch(pkg: &Package, opts: &ClipsOptions) -> Result<hark_fetch::Fetched, ClipsError> {
    let pinned = Pinned {
        what: pkg.what,
        url: &pkg.url,
        sha256: &pkg.sha256,
    };
    hark_fetch::fetch_file(&pinned, &opts.cache_dir, CLIPS_DIR, opts.progress)
        .map_err(from_fetch(pkg.what))
}

/// The shared fetch's errors, with the corpus's advice attached.
fn from_fetch(what: &'static str) -> impl FnOnce(hark_fetch::Error) -> ClipsError {
    move |e| match e {
        hark_fetch::Error::Download { url, cause } => ClipsError::Download { what, url, cause },
        hark_fetch::Error::Checksum {
            url,
            expected,
            actual,
        } => ClipsError::Checksum {
            what,
            url,
            expected,
            actual,
        },
        hark_fetch::Error::Read { path, source } => ClipsError::Read { what, path, source },
        hark_fetch::Error::Cache {
            action,
            path,
            source,
        } => ClipsError::Cache {
            action,
            path,
            source,
        },
    }
}

fn bad(pkg: &Package) -> impl Fn(String) -> ClipsError + '_ {
    move |reason| ClipsError::BadPackage {
        what: pkg.what,
        url: pkg.url.clone(),
        reason,
    }
}

fn open(pkg: &Package, path: &Path) -> Result<File, ClipsError> {
    File::open(path).map_err(|source| ClipsError::Read {
        what: pkg.what,
        path: path.to_owned(),
        source,
    })
}

/// Takes the LibriVox clips, their transcripts and "go forward" out of the `.deb`; returns
/// the index rows in the package's order, "go forward" last.
fn unpack_debian(
    pkg: &Package,
    deb: &Path,
    dest: &Path,
) -> Result<Vec<(String, String)>, ClipsError> {
    let bad = bad(pkg);
    let mut archive = ar::Archive::new(open(pkg, deb)?);
    while let Some(entry) = archive.next_entry() {
        let entry = entry.map_err(|e| bad(format!("not a Debian package ({e})")))?;
        let name = String::from_utf8_lossy(entry.header().identifier()).into_owned();
        let data: Box<dyn Read + '_> = match name.as_str() {
            "data.tar.xz" => Box::new(lzma_rust2::XzReader::new(entry, true)),
            "data.tar.gz" => Box::new(flate2::read::GzDecoder::new(entry)),
            "data.tar" => Box::new(entry),
            other if other.starts_with("data.tar") => {
                return Err(bad(format!(
                    "{other} is compressed in a way hark does not read"
                )));
            }
            _ => continue,
        };
        return unpack_debian_data(pkg, data, dest);
    }
    Err(bad("it has no data.tar member".to_owned()))
}

fn unpack_debian_data(
    pkg: &Package,
    data: impl Read,
    dest: &Path,
) -> Result<Vec<(String, String)>, ClipsError> {
    let bad = bad(pkg);
    let librivox = format!("{DEBIAN_DATA}/librivox/");
    let mut transcription = None;
    let mut goforward = None;
    let mut wavs = Vec::new();
    let mut archive = tar::Archive::new(data);
    let entries = archive
        .entries()
        .map_err(|e| bad(format!("data archive: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(format!("data archive: {e}")))?;
        let path = entry
            .path()
            .map_err(|e| bad(format!("data archive: {e}")))?
            .to_string_lossy()
            .trim_start_matches("./")
            .to_owned();
        let read_err = |e: io::Error| bad(format!("{path}: {e}"));
        if path == format!("{librivox}transcription") {
            let mut text = String::new();
            entry.read_to_string(&mut text).map_err(read_err)?;
            transcription = Some(text);
        } else if path == format!("{DEBIAN_DATA}/goforward.raw") {
            let mut raw = Vec::new();
            entry.read_to_end(&mut raw).map_err(read_err)?;
            goforward = Some(raw);
        } else if let Some(file) = path.strip_prefix(&librivox)
            && is_plain_wav_name(file)
        {
            let target = dest.join(file);
            let mut out = File::create(&target).map_err(cache_err("create", &target))?;
            io::copy(&mut entry, &mut out).map_err(|e| bad(format!("{path}: {e}")))?;
            wavs.push(file.to_owned());
        }
    }

    let text = transcription.ok_or_else(|| bad(format!("it lacks {librivox}transcription")))?;
    let mut rows = parse_transcription(&text).map_err(&bad)?;
    for (file, _) in &rows {
        if !wavs.contains(file) {
            return Err(bad(format!("it lacks {librivox}{file}")));
        }
    }
    let raw = goforward.ok_or_else(|| bad(format!("it lacks {DEBIAN_DATA}/goforward.raw")))?;
    let target = dest.join("goforward.wav");
    write_wav_16k_mono(&target, &raw).map_err(cache_err("write", &target))?;
    rows.push(("goforward.wav".to_owned(), GOFORWARD_TEXT.to_owned()));
    Ok(rows)
}

/// A file name with no folder part, ending in `.wav`.
fn is_plain_wav_name(name: &str) -> bool {
    name.ends_with(".wav") && !name.contains('/') && !name.starts_with('.')
}

/// `<s> words </s> (name)` per line, as `(name.wav, words)`.
fn parse_transcription(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut rows = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let parsed = line.rsplit_once('(').and_then(|(body, name)| {
            let name = name.strip_suffix(')')?.trim();
            let words = body
                .trim()
                .strip_prefix("<s>")?
                .strip_suffix("</s>")?
                .trim();
            Some((format!("{name}.wav"), words.to_owned()))
        });
        match parsed {
            Some((file, words)) if is_plain_wav_name(&file) && !words.contains('\t') => {
                rows.push((file, words));
            }
            _ => return Err(format!("unexpected transcription line {line:?}")),
        }
    }
    if rows.is_empty() {
        return Err("its transcription is empty".to_owned());
    }
    Ok(rows)
}

/// Wraps raw s16le 16 kHz mono samples in the canonical 44-byte WAV header.
fn write_wav_16k_mono(path: &Path, raw: &[u8]) -> io::Result<()> {
    let data_len = u32::try_from(raw.len()).map_err(io::Error::other)?;
    let mut out = io::BufWriter::new(File::create(path)?);
    out.write_all(b"RIFF")?;
    out.write_all(&(36 + data_len).to_le_bytes())?;
    out.write_all(b"WAVEfmt ")?;
    out.write_all(&16u32.to_le_bytes())?;
    out.write_all(&1u16.to_le_bytes())?; // PCM
    out.write_all(&1u16.to_le_bytes())?; // mono
    out.write_all(&16_000u32.to_le_bytes())?;
    out.write_all(&32_000u32.to_le_bytes())?; // bytes per second
    out.write_all(&2u16.to_le_bytes())?; // block align
    out.write_all(&16u16.to_le_bytes())?; // bits
    out.write_all(b"data")?;
    out.write_all(&data_len.to_le_bytes())?;
    out.write_all(raw)?;
    out.into_inner().map_err(|e| e.into_error())?.sync_all()
}

fn take_from_zip(
    pkg: &Package,
    file: &Path,
    inside: &str,
    target: &Path,
) -> Result<(), ClipsError> {
    let bad = bad(pkg);
    let mut archive = zip::ZipArchive::new(io::BufReader::new(open(pkg, file)?))
        .map_err(|e| bad(format!("not a zip archive ({e})")))?;
    let mut entry = archive
        .by_name(inside)
        .map_err(|e| bad(format!("{inside}: {e}")))?;
    let mut out = File::create(target).map_err(cache_err("create", target))?;
    io::copy(&mut entry, &mut out).map_err(|e| bad(format!("{inside}: {e}")))?;
    Ok(())
}

fn take_from_tgz(
    pkg: &Package,
    file: &Path,
    inside: &str,
    target: &Path,
) -> Result<(), ClipsError> {
    let bad = bad(pkg);
    let gz = flate2::read::GzDecoder::new(io::BufReader::new(open(pkg, file)?));
    let mut archive = tar::Archive::new(gz);
    let entries = archive.entries().map_err(|e| bad(format!("{e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(format!("{e}")))?;
        let path = entry.path().map_err(|e| bad(format!("{e}")))?;
        if path.to_string_lossy().trim_start_matches("./") != inside {
            continue;
        }
        let mut out = File::create(target).map_err(cache_err("create", target))?;
        io::copy(&mut entry, &mut out).map_err(|e| bad(format!("{inside}: {e}")))?;
        return Ok(());
    }
    Err(bad(format!("it lacks {inside}")))
}

/// Every clip must be pinned and match its pin, and every pinned clip must be there.
fn check_clips(src: &Sources, dest: &Path, rows: &[(String, String)]) -> Result<(), ClipsError> {
    let origin = |file: &str| match file {
        "beckett.wav" => &src.pypi,
        "jfk.wav" => &src.npm,
        _ => &src.debian,
    };
    for (file, _) in rows {
        if !src.clips.iter().any(|(f, _)| f == file) {
            let pkg = origin(file);
            return Err(bad(pkg)(format!("it has the unpinned clip {file}")));
        }
    }
    for (file, expected) in &src.clips {
        let pkg = origin(file);
        if !rows.iter().any(|(f, _)| f == file) {
            return Err(bad(pkg)(format!("it lacks the clip {file}")));
        }
        let path = dest.join(file);
        let actual = hash_file(&path).map_err(cache_err("read", &path))?;
        if !actual.eq_ignore_ascii_case(expected.trim()) {
            return Err(ClipsError::ClipChecksum {
                file: file.clone(),
                url: pkg.url.clone(),
                expected: expected.trim().to_ascii_lowercase(),
                actual,
            });
        }
    }
    Ok(())
}

fn write_index(path: &Path, rows: &[(String, String)]) -> Result<(), ClipsError> {
    let text: String = rows.iter().map(|(f, t)| format!("{f}\t{t}\n")).collect();
    fs::write(path, text).map_err(cache_err("write", path))
}

fn espeak_available() -> bool {
    Command::new("espeak-ng")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Speaks `text` with espeak-ng in `voice` at `words_per_minute` into the WAV file `path`.
pub fn espeak(text: &str, voice: &str, words_per_minute: u32, path: &Path) -> Result<(), String> {
    let out = Command::new("espeak-ng")
        .args(["-v", voice, "-s", &words_per_minute.to_string(), "-w"])
        .arg(path)
        .arg(text)
        .output()
        .map_err(|e| format!("espeak-ng: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "espeak-ng failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// Speaks the prompts into `dir` with espeak-ng (`-v en-us -s 165`), each file written under
/// a temporary name and renamed, `assistant.tsv` last: readers see all of them or none.
fn synthesise_prompts(dir: &Path) -> Result<(), String> {
    let mut rows = Vec::new();
    for (i, text) in ASSISTANT_PROMPTS.iter().enumerate() {
        let file = format!("assistant-{}.wav", i + 1);
        let temp = TempPath::new(dir, &file, "espeak");
        espeak(text, "en-us", 165, &temp.path)?;
        fs::rename(&temp.path, dir.join(&file)).map_err(|e| format!("{file}: {e}"))?;
        rows.push((file, (*text).to_owned()));
    }
    let temp = TempPath::new(dir, ASSISTANT_INDEX, "index");
    write_index(&temp.path, &rows).map_err(|e| e.to_string())?;
    fs::rename(&temp.path, dir.join(ASSISTANT_INDEX)).map_err(|e| format!("{ASSISTANT_INDEX}: {e}"))
}

/// A folder made while espeak-ng was missing gets the prompts once it is installed.
fn add_missing_prompts(root: &Path) {
    if root.join(ASSISTANT_INDEX).exists() || !espeak_available() {
        return;
    }
    match synthesise_prompts(root) {
        Ok(()) => tracing::info!(dir = %root.display(), "assistant prompts added"),
        Err(e) => tracing::warn!("assistant prompts left out: {e}"),
    }
}

fn cache_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> ClipsError {
    let path = path.to_owned();
    move |source| ClipsError::Cache {
        action,
        path,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcription_lines_parse() {
        let rows = parse_transcription(
            "<s> he was not an ill disposed young man </s> (sense-0880)\n\n<s> a b </s> (x)\n",
        )
        .unwrap();
        assert_eq!(
            rows,
            [
                (
                    "sense-0880.wav".to_owned(),
                    "he was not an ill disposed young man".to_owned()
                ),
                ("x.wav".to_owned(), "a b".to_owned()),
            ]
        );
        assert!(parse_transcription("<s> a </s> (../evil)").is_err());
        assert!(parse_transcription("no markup").is_err());
        assert!(parse_transcription("").is_err());
    }

    #[test]
    fn goforward_header_is_canonical() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.wav");
        write_wav_16k_mono(&path, &[1, 0, 2, 0]).unwrap();
        let reader = hound::WavReader::open(&path).unwrap();
        let spec = reader.spec();
        assert_eq!(
            (spec.channels, spec.sample_rate, spec.bits_per_sample),
            (1, 16000, 16)
        );
        let samples: Vec<i16> = reader.into_samples().map(Result::unwrap).collect();
        assert_eq!(samples, [1, 2]);
        assert_eq!(fs::metadata(&path).unwrap().len(), 44 + 4);
    }

    #[test]
    fn fingerprint_follows_every_pin() {
        let a = Sources::default();
        let mut b = a.clone();
        assert_eq!(a.fingerprint(), b.fingerprint());
        b.debian.url = "elsewhere".into();
        assert_eq!(
            a.fingerprint(),
            b.fingerprint(),
            "a mirror is the same package"
        );
        b.clips[0].1 = "00".into();
        assert_ne!(a.fingerprint(), b.fingerprint());
    }
}
