//! TLS as the commands see it: `hark healthcheck` against the real `hark serve` serving
//! wss:// with a certificate from a private CA (the container's HEALTHCHECK with TLS on),
//! and `hark check-config` refusing a pair `serve` would refuse.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

const HARK: &str = env!("CARGO_BIN_EXE_hark");

/// A private CA.
struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("CA key");
        Self {
            issuer: CertifiedIssuer::self_signed(params, key).expect("CA cert"),
        }
    }

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A leaf for `names`: (certificate PEM, key PEM).
    fn leaf(&self, names: &[&str]) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let params = CertificateParams::new(names).expect("params");
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("signed");
        (cert.pem(), key.serialize_pem())
    }
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write");
    path
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `hark ARGS…` with only the environment given.
fn hark(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(HARK)
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .expect("hark runs")
}

struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
}

/// The real `hark serve` with TLS on a free loopback port.
fn serve_tls(cert: &Path, key: &Path) -> (Served, SocketAddr) {
    let addr = free_port();
    let child = Command::new(HARK)
        .args(["serve", "--listen", &addr.to_string()])
        .arg("--tls-cert")
        .arg(cert)
        .arg("--tls-key")
        .arg(key)
        .env_clear()
        .env("HOME", std::env::var_os("HOME").unwrap_or_default())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("hark serve starts");
    (Served(child), addr)
}

/// `hark healthcheck URL --ca-file CA` passes once `served` listens (within a minute).
fn passes_once_served(served: &mut Served, url: &str, ca: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = hark(&["healthcheck", url, "--ca-file", ca], &[]);
        if out.status.success() {
            return;
        }
        assert!(
            served.0.try_wait().expect("status").is_none(),
            "hark serve exited: {}",
            text(&out)
        );
        assert!(Instant::now() < deadline, "never healthy: {}", text(&out));
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn healthcheck_passes_against_a_private_ca_certificate_and_fails_against_another_ca() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = Ca::new("hark private CA");
    let (cert_pem, key_pem) = ca.leaf(&["hark.internal", "127.0.0.1"]);
    let cert = write(dir.path(), "cert.pem", &cert_pem);
    let key = write(dir.path(), "key.pem", &key_pem);
    let ca_file = write(dir.path(), "ca.pem", &ca.pem());
    let other_ca = write(dir.path(), "other-ca.pem", &Ca::new("someone else").pem());
    let (mut served, addr) = serve_tls(&cert, &key);
    let url = format!("https://{addr}/healthz");
    let ca_arg = ca_file.to_string_lossy().into_owned();

    // Verified against the private CA: passes once the server listens.
    passes_once_served(&mut served, &url, &ca_arg);

    // Another CA, or the public roots: the certificate is not trusted, and the error says
    // what to pass.
    let out = hark(
        &[
            "healthcheck",
            &url,
            "--ca-file",
            &other_ca.to_string_lossy(),
        ],
        &[],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let out = hark(&["healthcheck", &url], &[]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("--ca-file"), "{}", text(&out));

    // --insecure: on loopback only.
    let out = hark(&["healthcheck", &url, "--insecure"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let out = hark(
        &[
            "healthcheck",
            "https://hark.example.com/healthz",
            "--insecure",
        ],
        &[],
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("only for a loopback"), "{}", text(&out));

    // The image's HEALTHCHECK: no URL, the server's own environment. https:// on the
    // listen port, its own certificate on loopback.
    let image_env = [
        ("HARK_LISTEN", format!("0.0.0.0:{}", addr.port())),
        ("HARK_TLS_CERT", cert.to_string_lossy().into_owned()),
        ("HARK_TLS_KEY", key.to_string_lossy().into_owned()),
    ];
    let env: Vec<(&str, &str)> = image_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = hark(&["healthcheck"], &env);
    assert!(out.status.success(), "{}", text(&out));
    // …and verified, when asked, against the CA.
    let out = hark(
        &["healthcheck", "--ca-file", &other_ca.to_string_lossy()],
        &env,
    );
    assert!(!out.status.success(), "{}", text(&out));
    // Without HARK_TLS_CERT it asks http:// first, meets TLS, and asks again over https://.
    let out = hark(&["healthcheck"], &env[..1]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("answers over TLS"), "{}", text(&out));
    // The certificate without its key (the server's, not the probe's) is enough to know.
    let out = hark(&["healthcheck"], &env[..2]);
    assert!(out.status.success(), "{}", text(&out));
    // And the config file as `serve` reads it, by flag as by HARK_CONFIG.
    let config = write(
        dir.path(),
        "hark.toml",
        &format!(
            "listen = \"127.0.0.1:{}\"\n[tls]\ncert = {:?}\nkey = {:?}\n",
            addr.port(),
            cert.to_string_lossy(),
            key.to_string_lossy()
        ),
    );
    let config = config.to_string_lossy().into_owned();
    let out = hark(&["healthcheck", "--config", &config], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("answers over TLS"), "{}", text(&out));

    let _ = served.0.kill();
    let _ = served.0.wait();
    let out = hark(&["healthcheck"], &env);
    assert!(!out.status.success(), "nothing listens: {}", text(&out));
    assert!(text(&out).contains("no server there"), "{}", text(&out));
}

/// A key that belongs to another certificate, or a file that is not PEM: `serve` refuses
/// them, so `check-config` does too (`check-config && restart` stays safe).
#[test]
fn check_config_refuses_a_tls_pair_that_serve_refuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = Ca::new("hark private CA");
    let (cert_a, key_a) = ca.leaf(&["127.0.0.1"]);
    let (_, key_b) = ca.leaf(&["127.0.0.1"]);
    let cert = write(dir.path(), "cert.pem", &cert_a);
    let key = write(dir.path(), "key.pem", &key_a);
    let other_key = write(dir.path(), "other-key.pem", &key_b);
    let not_pem = write(dir.path(), "not.pem", "this is not a certificate\n");
    let s = |p: &PathBuf| p.to_string_lossy().into_owned();

    let out = hark(
        &[
            "check-config",
            "--tls-cert",
            &s(&cert),
            "--tls-key",
            &s(&key),
        ],
        &[],
    );
    assert!(out.status.success(), "a good pair: {}", text(&out));

    for (c, k, said) in [
        (&cert, &other_key, "do not make a usable pair"),
        (&not_pem, &key, "no certificate in"),
        (&cert, &not_pem, "cannot read a PEM private key"),
    ] {
        for command in ["check-config", "serve"] {
            let out = hark(
                &[
                    command,
                    "--listen",
                    "127.0.0.1:0",
                    "--tls-cert",
                    &s(c),
                    "--tls-key",
                    &s(k),
                ],
                &[],
            );
            let shown = text(&out);
            assert!(!out.status.success(), "{command}: {shown}");
            assert!(
                shown.contains("tls.cert and tls.key") && shown.contains(said),
                "{command}: {said}: {shown}"
            );
            assert!(shown.contains("1 problem(s)"), "{command}: {shown}");
        }
    }
}

/// A self-signed certificate that says it is a CA (what `openssl req -x509` makes) given as
/// `--ca-file` is the server's own certificate: WebPKI refuses it as an end entity, so the
/// check takes it as pinned and passes when the server presents exactly it, and not when it
/// presents another.
#[test]
fn healthcheck_takes_a_self_signed_certificate_as_ca_file_as_pinned() {
    let dir = tempfile::tempdir().expect("tempdir");
    let self_signed = |name: &str| {
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("self-signed");
        (cert.pem(), key.serialize_pem())
    };
    let (cert_pem, key_pem) = self_signed("hark");
    let cert = write(dir.path(), "cert.pem", &cert_pem);
    let key = write(dir.path(), "key.pem", &key_pem);
    let other = write(dir.path(), "other.pem", &self_signed("someone else").0);
    let (mut served, addr) = serve_tls(&cert, &key);
    let url = format!("https://{addr}/healthz");
    passes_once_served(&mut served, &url, &cert.to_string_lossy());
    let out = hark(
        &["healthcheck", &url, "--ca-file", &other.to_string_lossy()],
        &[],
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("certificate"), "{}", text(&out));
}
