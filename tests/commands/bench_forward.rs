//! `hark bench …` is the `hark-bench` tool (its own crate): the server binary runs the one
//! beside it with the arguments as they are, exit status included, and says how to get it
//! when it is missing.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Puts an executable copy of `from` at `to` without this process ever holding it open for
/// writing. Executing a file that some process holds open for writing fails with `ETXTBSY`
/// ("Text file busy"), and any child another test thread forks inherits this process's
/// descriptors until it execs: a file written here and run at once races every test that
/// starts a process. `cp` writes it in a process of its own, which forks nothing.
fn install(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(status.success(), "cp {} {}", from.display(), to.display());
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A copy of the real `hark` binary in `dir`, so that what sits "beside" it is up to the test.
fn hark_in(dir: &Path) -> PathBuf {
    let hark = dir.join("hark");
    install(Path::new(env!("CARGO_BIN_EXE_hark")), &hark);
    hark
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("hark runs")
}

#[test]
fn runs_the_tool_beside_it_with_every_argument() {
    let dir = tempfile::tempdir().unwrap();
    let hark = hark_in(dir.path());
    // Stands in for hark-bench: prints its arguments, exits with a status of its own.
    let tool = dir.path().join("hark-bench");
    // Written as text (never executed), then installed as the tool.
    let script = dir.path().join("hark-bench.sh");
    std::fs::write(&script, "#!/bin/sh\nprintf '%s|' \"$@\"\nexit 7\n").unwrap();
    install(&script, &tool);
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
