//! TLS termination (`tls.cert` / `tls.key`): the certificate pair, reloaded on SIGHUP or
//! when its files change without touching live connections.
//!
//! The server's rustls config is built once; its certificate resolver hands each new
//! handshake the pair loaded last, so a reload only swaps one `Arc` and connections already
//! established keep the keys they negotiated.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tracing::{error, info};

/// The certificate pair being served, and where it is read from.
pub struct CertStore {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
}

impl fmt::Debug for CertStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key itself.
        f.debug_struct("CertStore")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

impl CertStore {
    /// Loads the pair; a pair that cannot be loaded is an error (the server does not start).
    pub fn load(cert_path: &Path, key_path: &Path) -> anyhow::Result<Arc<Self>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let pair = load_pair(&provider, cert_path, key_path)?;
        Ok(Arc::new(Self {
            cert_path: cert_path.to_path_buf(),
            key_path: key_path.to_path_buf(),
            provider,
            current: RwLock::new(Arc::new(pair)),
        }))
    }

    /// Reads the files again and serves the new pair to new connections. On error the pair
    /// served so far stays.
    pub fn reload(&self) -> anyhow::Result<()> {
        let pair = load_pair(&self.provider, &self.cert_path, &self.key_path)?;
        let mut current = self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *current = Arc::new(pair);
        Ok(())
    }

    /// `reload`, with the outcome logged; `why` says what asked for it.
    pub fn reload_logged(&self, why: &str) {
        match self.reload() {
            Ok(()) => {
                info!(cause = why, cert = %self.cert_path.display(), "TLS certificate reloaded")
            }
            Err(e) => error!(
                cause = why,
                "TLS certificate not reloaded, the previous one stays: {e:#}"
            ),
        }
    }

    /// The acceptor for new connections: HTTP/1.1 only (websockets upgrade from it).
    pub fn acceptor(self: &Arc<Self>) -> anyhow::Result<TlsAcceptor> {
        let mut config = rustls::ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }

    /// Polls the files' modification times every `interval` and reloads when they change.
    /// A pair that fails to load is tried again only once the files change again.
    pub async fn watch(self: Arc<Self>, interval: Duration) {
        let mut seen = self.stamps();
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let now = self.stamps();
            if now != seen {
                seen = now;
                self.reload_logged("files changed");
            }
        }
    }

    fn stamps(&self) -> [Option<(SystemTime, u64)>; 2] {
        let stamp = |p: &Path| {
            std::fs::metadata(p)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())))
        };
        [stamp(&self.cert_path), stamp(&self.key_path)]
    }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let current = self
            .current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Some(current.clone())
    }
}

/// What `serve` would refuse about the configured pair, found by loading it the same way
/// (`hark check-config` and `hark serve` list it with the config's other problems): a file
/// that is not PEM, no certificate, a key that does not match. A missing file or a lone
/// `cert` or `key` is the config's own problem, not repeated here.
pub fn problems(tls: &crate::config::TlsConfig) -> Vec<String> {
    match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) if cert.is_file() && key.is_file() => {
            let provider = rustls::crypto::ring::default_provider();
            match load_pair(&provider, cert, key) {
                Ok(_) => Vec::new(),
                Err(e) => vec![format!("tls.cert and tls.key: {e:#}")],
            }
        }
        _ => Vec::new(),
    }
}

fn load_pair(
    provider: &CryptoProvider,
    cert_path: &Path,
    key_path: &Path,
) -> anyhow::Result<CertifiedKey> {
    let certs = CertificateDer::pem_file_iter(cert_path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("cannot read certificates from {}", cert_path.display()))?;
    if certs.is_empty() {
        anyhow::bail!("no certificate in {}", cert_path.display());
    }
    // The key's own error text could quote key material: name only the file.
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|_| {
        anyhow::anyhow!(
            "cannot read a PEM private key (PKCS#8, PKCS#1 or SEC1) from {}",
            key_path.display()
        )
    })?;
    let pair = CertifiedKey::from_der(certs, key, provider).map_err(|e| {
        anyhow::anyhow!(
            "{} and {} do not make a usable pair: {e}",
            cert_path.display(),
            key_path.display()
        )
    })?;
    Ok(pair)
}
