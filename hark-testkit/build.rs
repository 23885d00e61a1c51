//! Compiles the Riva protocol hark vendors (`../proto/`) into the Riva mock's gRPC server,
//! apart from hark's client: the mock shares the wire with hark, not its code.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=../proto");
    let files = protox::compile(["riva/proto/riva_asr.proto"], ["../proto"])?;
    tonic_prost_build::configure()
        .build_client(false)
        .compile_fds(files)?;
    Ok(())
}
