//! `hark bench …` is the `hark-bench` tool (its own crate): the server binary runs the one
//! beside it with the arguments as they are, exit status included, and says how to get it
//! when it is missing.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// A copy of the real `hark` binary in `dir`, so that what sits "beside" it is up to the test.
fn hark_in(dir: &Path) -> std::path::PathBuf {
    let hark = dir.join("hark");
    std::fs::copy(env!("CARGO_BIN_EXE_hark"), &hark).expect("copy hark");
    hark
}

#[test]
fn runs_the_tool_beside_it_with_every_argument() {
    let dir = tempfile::tempdir().unwrap();
    let hark = hark_in(dir.path());
    // Stands in for hark-bench: prints its arguments, exits with a status of its own.
    let tool = dir.path().join("hark-bench");
    std::fs::write(&tool, "#!/bin/sh\nprintf '%s|' \"$@\"\nexit 7\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(&hark)
        .args(["bench", "--help", "--url", "ws://x/y", "--calls", "2"])
        .output()
        .expect("hark runs");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "--help|--url|ws://x/y|--calls|2|"
    );
    assert_eq!(out.status.code(), Some(7));
}

#[test]
fn says_how_to_build_the_tool_when_it_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let hark = hark_in(dir.path());
    let out = Command::new(&hark)
        .args(["bench", "--calls", "1"])
        .env("PATH", dir.path().join("empty"))
        .output()
        .expect("hark runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hark-bench") && err.contains("cargo build --release"),
        "{err}"
    );
}
