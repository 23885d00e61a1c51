//! A GET that trusts exactly one certificate: a self-signed certificate given as
//! `--ca-file` is the server's own, which WebPKI refuses as an end entity when it says it
//! is a CA (`openssl req -x509` makes such), and which no client library takes as pinned.

use std::sync::Arc;
use std::time::Duration;

use super::url_host;

/// One GET of an https:// `url` whose server must present, as its own certificate, one of
/// the certificates in `pem` (pinned; the handshake's signatures are checked as usual):
/// the HTTP status.
pub(super) fn get(url: &str, pem: &[u8], timeout: Duration) -> anyhow::Result<u16> {
    use std::io::{BufRead, Write};
    use std::net::ToSocketAddrs;

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

    #[derive(Debug)]
    struct Pinned {
        certs: Vec<CertificateDer<'static>>,
        provider: Arc<rustls::crypto::CryptoProvider>,
    }
    impl rustls::client::danger::ServerCertVerifier for Pinned {
        fn verify_server_cert(
            &self,
            end_entity: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: UnixTime,
        ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
            match self.certs.iter().any(|c| c == end_entity) {
                true => Ok(rustls::client::danger::ServerCertVerified::assertion()),
                false => Err(rustls::Error::General(
                    "the server's certificate is not the one in --ca-file".into(),
                )),
            }
        }
        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            let algorithms = &self.provider.signature_verification_algorithms;
            rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
        }
        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            let algorithms = &self.provider.signature_verification_algorithms;
            rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
        }
        fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
            self.provider
                .signature_verification_algorithms
                .supported_schemes()
        }
    }

    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .filter_map(Result::ok)
        .collect();
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| anyhow::anyhow!("not an https:// URL"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let host = url_host(url).ok_or_else(|| anyhow::anyhow!("no host"))?;
    let addr = match authority.rsplit_once(':') {
        Some((_, port)) if port.parse::<u16>().is_ok() && !authority.ends_with(']') => {
            authority.to_owned()
        }
        _ => format!("{authority}:443"),
    };
    let addr = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| anyhow::anyhow!("{authority} has no address"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Pinned { certs, provider }))
        .with_no_client_auth();
    let name = ServerName::try_from(host.clone())?;
    let connection = rustls::ClientConnection::new(Arc::new(config), name)?;
    let tcp = std::net::TcpStream::connect_timeout(&addr, timeout)?;
    tcp.set_read_timeout(Some(timeout))?;
    tcp.set_write_timeout(Some(timeout))?;
    let mut tls = rustls::StreamOwned::new(connection, tcp);
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )?;
    tls.flush()?;
    let mut status = String::new();
    std::io::BufReader::new(tls).read_line(&mut status)?;
    status
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("not an HTTP answer: {}", status.trim()))
}
