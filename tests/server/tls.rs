//! TLS: a real call over wss:// with a test CA, certificate reload (file watch, the reload
//! handle SIGHUP calls, SIGHUP on the real binary) while a call goes on, a broken pair kept
//! out, and handshakes that never finish cut off.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hark_bench::protocol::{ServerMessage, TranscriptType};
use hark_testkit::{Call, TestServer, backends};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, Issuer, KeyPair,
    SerialNumber,
};
use rustls::pki_types::CertificateDer;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_tungstenite::{Connector, MaybeTlsStream, connect_async_tls_with_config};

const GENEROUS: Duration = Duration::from_secs(30);

struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "hark test CA");
        let key = KeyPair::generate().expect("CA key");
        Self {
            issuer: CertifiedIssuer::self_signed(params, key).expect("CA cert"),
        }
    }

    /// A server certificate for 127.0.0.1: (certificate DER, certificate PEM, key PEM).
    fn server_cert(&self, cn: &str, serial: u64) -> (CertificateDer<'static>, String, String) {
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.serial_number = Some(SerialNumber::from(serial));
        let key = KeyPair::generate().expect("key");
        let issuer: &Issuer<'_, KeyPair> = &self.issuer;
        let cert = params.signed_by(&key, issuer).expect("signed");
        (cert.der().clone(), cert.pem(), key.serialize_pem())
    }

    fn client(&self) -> Connector {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.issuer.der().clone()).expect("CA root");
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        Connector::Rustls(Arc::new(config))
    }
}

/// Writes a file whole (rename over the old one), as a certificate manager does.
fn write_atomic(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

struct Files {
    _dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
}

impl Files {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        Self {
            cert: dir.path().join("cert.pem"),
            key: dir.path().join("key.pem"),
            _dir: dir,
        }
    }

    fn install(&self, pair: &(CertificateDer<'static>, String, String)) {
        // Key first: until the certificate changes too, the two do not match and a reload
        // in between keeps the old pair.
        write_atomic(&self.key, &pair.2);
        write_atomic(&self.cert, &pair.1);
    }
}

/// Opens a wss:// websocket and returns it with the certificate the server presented.
async fn connect(ca: &Ca, addr: SocketAddr) -> (Call, CertificateDer<'static>) {
    let url = format!("wss://{addr}/api/custom-transcriber");
    let (ws, _) = connect_async_tls_with_config(url, None, false, Some(ca.client()))
        .await
        .expect("wss:// opens with the test CA");
    let presented = match ws.get_ref() {
        MaybeTlsStream::Rustls(tls) => tls
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first().cloned())
            .expect("server certificate"),
        _ => panic!("not a TLS stream"),
    };
    (Call::from_ws(ws), presented)
}

async fn presented(ca: &Ca, addr: SocketAddr) -> CertificateDer<'static> {
    let (call, cert) = connect(ca, addr).await;
    drop(call);
    cert
}

fn is_final(m: &ServerMessage) -> bool {
    matches!(
        m,
        ServerMessage::TranscriberResponse {
            transcript_type: TranscriptType::Final,
            ..
        }
    )
}

async fn tls_server(files: &Files, watch_interval_ms: u64) -> TestServer {
    let mut config = hark_testkit::config_with_default_backend("recorder");
    config.tls.cert = Some(files.cert.clone());
    config.tls.key = Some(files.key.clone());
    config.tls.watch_interval_ms = watch_interval_ms;
    config.header_timeout_ms = 1_000;
    TestServer::start(config, backends::registry()).await
}

#[tokio::test]
async fn a_call_over_wss_goes_on_while_a_changed_certificate_is_picked_up() {
    let ca = Ca::new();
    let files = Files::new();
    let first = ca.server_cert("hark one", 1);
    files.install(&first);
    let server = tls_server(&files, 200).await;

    let (mut call, cert) = connect(&ca, server.addr).await;
    assert_eq!(cert, first.0);
    call.text(&hark_testkit::start_frame(16_000, 2)).await;
    assert!(call.silence(2, 16_000, 0.2).await);
    assert!(
        call.wait_for(GENEROUS, is_final).await,
        "transcripts over wss://"
    );

    let second = ca.server_cert("hark two", 2);
    files.install(&second);
    let mut swapped = false;
    let deadline = tokio::time::Instant::now() + GENEROUS;
    while tokio::time::Instant::now() < deadline {
        // The first call streams on meanwhile.
        assert!(call.silence(2, 16_000, 0.1).await);
        if presented(&ca, server.addr).await == second.0 {
            swapped = true;
            break;
        }
    }
    assert!(swapped, "new connections never saw the changed certificate");

    // A pair that does not load (a certificate without its key) keeps the one served.
    let third = ca.server_cert("hark three", 3);
    write_atomic(&files.cert, &third.1);
    assert!(call.silence(2, 16_000, 0.6).await);
    assert_eq!(presented(&ca, server.addr).await, second.0);

    let got = call.hang_up().await;
    assert!(got.error().is_none(), "no error: {:?}", got.error());
    let last = got.finals("customer").last().cloned().unwrap_or_default();
    let streamed = got.finals("customer").len();
    assert!(
        streamed > 1,
        "the call went on: {:?}",
        got.finals("customer")
    );
    assert!(last.starts_with("n="), "recorder finals: {last}");
}

#[tokio::test]
async fn the_reload_handle_swaps_the_pair_and_keeps_it_when_the_new_one_is_broken() {
    let ca = Ca::new();
    let files = Files::new();
    let first = ca.server_cert("hark one", 1);
    files.install(&first);
    // No file watch: only the handle (what SIGHUP calls) reloads.
    let server = tls_server(&files, 0).await;
    let tls = server.tls.clone().expect("TLS is on");

    let second = ca.server_cert("hark two", 2);
    files.install(&second);
    assert_eq!(
        presented(&ca, server.addr).await,
        first.0,
        "no reload asked"
    );
    tls.reload().expect("the new pair loads");
    assert_eq!(presented(&ca, server.addr).await, second.0);

    write_atomic(&files.cert, "-----BEGIN CERTIFICATE-----\nnot base64\n");
    assert!(tls.reload().is_err(), "a broken certificate is refused");
    let third = ca.server_cert("hark three", 3);
    write_atomic(&files.cert, &third.1);
    let err = tls
        .reload()
        .expect_err("a key of another certificate is refused");
    assert!(!format!("{err:#}").contains("PRIVATE KEY"), "{err:#}");
    assert_eq!(presented(&ca, server.addr).await, second.0);
}

#[tokio::test]
async fn a_tls_handshake_that_never_finishes_is_cut_off() {
    let ca = Ca::new();
    let files = Files::new();
    files.install(&ca.server_cert("hark one", 1));
    let server = tls_server(&files, 0).await;

    let mut silent = TcpStream::connect(server.addr).await.expect("connect");
    // The start of a ClientHello record, and nothing more.
    let mut partial = TcpStream::connect(server.addr).await.expect("connect");
    tokio::io::AsyncWriteExt::write_all(&mut partial, &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .await
        .expect("write");
    for s in [&mut silent, &mut partial] {
        let mut buf = [0u8; 64];
        let closed = tokio::time::timeout(GENEROUS, async {
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(closed.is_ok(), "an unfinished handshake stayed open");
    }
    // The server still serves.
    let (mut call, _) = connect(&ca, server.addr).await;
    call.text(&hark_testkit::start_frame(16_000, 2)).await;
    assert!(call.silence(2, 16_000, 0.2).await);
    assert!(call.wait_for(GENEROUS, is_final).await);
}

#[tokio::test]
async fn sighup_reloads_the_certificate_of_the_real_binary() {
    let ca = Ca::new();
    let files = Files::new();
    let first = ca.server_cert("hark one", 1);
    files.install(&first);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let cache = tempfile::tempdir().expect("tempdir");
    // No file watch: only SIGHUP can reload.
    let config = cache.path().join("hark.toml");
    std::fs::write(&config, "[tls]\nwatch_interval_ms = 0\n").expect("config");
    // HARK_BIN: this build's binary when a target dir shared by several checkouts has
    // another checkout's build at the usual path.
    let bin = std::env::var_os("HARK_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_hark").into());
    let mut child = tokio::process::Command::new(bin)
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .arg("--listen")
        .arg(addr.to_string())
        .arg("--tls-cert")
        .arg(&files.cert)
        .arg("--tls-key")
        .arg(&files.key)
        // The recognizer is not needed to see certificates: let it fail to load at once.
        .env("HARK_CACHE_DIR", cache.path())
        .env("HARK_MOONSHINE_WHEEL", cache.path().join("absent.whl"))
        .kill_on_drop(true)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("hark starts");

    let up = tokio::time::timeout(GENEROUS, async {
        loop {
            if TcpStream::connect(addr).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(up.is_ok(), "hark did not listen");
    assert_eq!(handshake_cert(&ca, addr).await, first.0);

    let second = ca.server_cert("hark two", 2);
    files.install(&second);
    let pid = child.id().expect("running") as libc::pid_t;
    let mut swapped = false;
    let deadline = tokio::time::Instant::now() + GENEROUS;
    while tokio::time::Instant::now() < deadline {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(pid, libc::SIGHUP) };
        tokio::time::sleep(Duration::from_millis(200)).await;
        if handshake_cert(&ca, addr).await == second.0 {
            swapped = true;
            break;
        }
    }
    assert!(swapped, "SIGHUP did not reload the certificate");
    assert!(
        child.try_wait().expect("status").is_none(),
        "SIGHUP killed hark"
    );
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let status = tokio::time::timeout(GENEROUS, child.wait())
        .await
        .expect("hark stops on SIGTERM")
        .expect("status");
    assert!(status.success(), "{status}");
}

/// The certificate a bare TLS handshake gets (no HTTP).
async fn handshake_cert(ca: &Ca, addr: SocketAddr) -> CertificateDer<'static> {
    let Connector::Rustls(config) = ca.client() else {
        unreachable!()
    };
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .expect("handshake");
    tls.get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first().cloned())
        .expect("server certificate")
}
