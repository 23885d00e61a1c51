//! The Deepgram mock of `hark_testkit::provider_mock`, served on loopback for as long as
//! `samples/soak.sh` relays calls to it: a test double, so it lives in the test kit.
//!
//! `HARK_SOAK_MOCK_URL_FILE` receives the mock's URL; it serves for `HARK_SOAK_MOCK_SECS`
//! (default two hours) and then prints how many connections it served and how many
//! documented rules they broke. The key it expects is `DEEPGRAM_API_KEY` (default
//! `soak-key`).

use std::time::Duration;

use hark_testkit::provider_mock::{MockOptions, MockProvider, Provider};

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() {
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
