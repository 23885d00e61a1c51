//! Not a test: the Deepgram mock of `tests/common/provider_mock.rs`, served for as long as
//! `samples/soak.sh` relays calls to it. Ignored, so `cargo test` never runs it; it lives here
//! because the mock is a test double and stays among the tests.

mod common;

use std::time::Duration;

use common::provider_mock::{MockOptions, MockProvider, Provider};

/// `HARK_SOAK_MOCK_URL_FILE` receives the mock's URL; it serves for `HARK_SOAK_MOCK_SECS`.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
#[ignore = "serves a provider mock for samples/soak.sh"]
async fn serve_deepgram_mock() {
    let key = std::env::var("DEEPGRAM_API_KEY").unwrap_or_else(|_| "soak-key".into());
    let mock = MockProvider::start(MockOptions {
        provider: Provider::Deepgram,
        api_key: key,
        two_message_formatting: false,
    })
    .await;
    if let Ok(path) = std::env::var("HARK_SOAK_MOCK_URL_FILE") {
        std::fs::write(path, mock.url()).expect("writes the mock's URL");
    }
    let secs = std::env::var("HARK_SOAK_MOCK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3600 * 2);
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let violations: usize = mock.connections().iter().map(|c| c.violations.len()).sum();
    println!(
        "mock served {} connections, {violations} protocol violations",
        mock.connections().len()
    );
}
