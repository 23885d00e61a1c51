//! `hark bench …` is the `hark-bench` tool (its own crate): the server binary runs the one
//! beside it with the arguments as they are, exit status included, and says how to get it
//! when it is missing.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::RwLock;

/// Executables these tests write, against the processes they start. A child forked by
/// another test thread while a file is still open for writing inherits that descriptor
/// until it execs, and executing a file someone holds open for writing fails with
/// `ETXTBSY` ("Text file busy"). So a file is written, and closed, under the write lock,
/// and every child is forked (and has exec'd, which `spawn` waits for) under the read lock.
static EXEC: RwLock<()> = RwLock::new(());

/// Writes an executable file at `path` with `write` (which must leave no descriptor open).
fn write_executable(path: &Path, write: impl FnOnce(&Path) -> std::io::Result<()>) {
    let _writing = EXEC.write().unwrap_or_else(|e| e.into_inner());
    write(path).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Runs `cmd` to completion, forking only while no executable is being written.
fn run(cmd: &mut Command) -> Output {
    let child = {
        let _forking = EXEC.read().unwrap_or_else(|e| e.into_inner());
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("hark runs")
    };
    child.wait_with_output().expect("hark runs")
}

/// A copy of the real `hark` binary in `dir`, so that what sits "beside" it is up to the test.
fn hark_in(dir: &Path) -> PathBuf {
    let hark = dir.join("hark");
    write_executable(&hark, |to| {
        std::fs::copy(env!("CARGO_BIN_EXE_hark"), to).map(drop)
    });
    hark
}

#[test]
fn runs_the_tool_beside_it_with_every_argument() {
    let dir = tempfile::tempdir().unwrap();
    let hark = hark_in(dir.path());
    // Stands in for hark-bench: prints its arguments, exits with a status of its own.
    let tool = dir.path().join("hark-bench");
    write_executable(&tool, |to| {
        std::fs::write(to, "#!/bin/sh\nprintf '%s|' \"$@\"\nexit 7\n")
    });
    let out =
        run(Command::new(&hark).args(["bench", "--help", "--url", "ws://x/y", "--calls", "2"]));
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
    let out = run(Command::new(&hark)
        .args(["bench", "--calls", "1"])
        .env("PATH", dir.path().join("empty")));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hark-bench") && err.contains("cargo build --release"),
        "{err}"
    );
}
