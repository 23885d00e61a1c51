//! The README's test command (`scripts/test`) brings every program the tests run beyond
//! Rust. Its check names what is missing, with the Debian package that brings it, and
//! fails; on this machine (where the suite runs) nothing may be missing.

use std::path::Path;
use std::process::{Command, Output};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/test");

/// `scripts/test --check` searching only `path` (no sbin directories added).
fn check(path: &Path) -> Output {
    Command::new("/bin/bash")
        .arg(SCRIPT)
        .arg("--check")
        .env("PATH", path)
        .env("HARK_SBIN_DIRS", "")
        .output()
        .expect("bash runs scripts/test")
}

#[test]
fn a_machine_without_the_programs_is_told_what_to_install() {
    let empty = tempfile::tempdir().unwrap();
    let out = check(empty.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for (program, package) in [
        ("nginx", "nginx-light"),
        ("espeak-ng", "espeak-ng"),
        ("promtool", "prometheus"),
        ("ffmpeg", "ffmpeg"),
    ] {
        assert!(
            err.contains(&format!("missing: {program} (Debian package {package})")),
            "{err}"
        );
    }
    assert!(
        err.contains("apt-get install nginx-light espeak-ng prometheus ffmpeg"),
        "{err}"
    );
}

#[test]
fn a_machine_with_the_programs_passes_the_check() {
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().unwrap();
    for program in ["nginx", "espeak-ng", "promtool", "ffmpeg"] {
        // Never executed: the check only looks for an executable file of that name.
        let path = bin.path().join(program);
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = check(bin.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run through `cargo test` alone, on a machine that lacks a program, this fails first
/// and says to run `scripts/test`, rather than leaving the reader to guess from the tests
/// that need it.
#[test]
fn every_prerequisite_is_installed_here() {
    let out = Command::new("/bin/bash")
        .arg(SCRIPT)
        .arg("--check")
        .output()
        .expect("bash runs scripts/test");
    assert!(
        out.status.success(),
        "run the README's test command, scripts/test, which installs these:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
