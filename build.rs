//! Compiles the vendored Riva protocol (`proto/`, see its README) into the `riva`
//! backend's gRPC client. protox parses the .proto files in Rust, so a build needs no
//! `protoc` on the machine.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let files = protox::compile(["riva/proto/riva_asr.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_server(false)
        .compile_fds(files)?;
    Ok(())
}
