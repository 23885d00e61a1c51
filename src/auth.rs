//! Upgrade-request authentication: the platform's legacy `x-vapi-secret` header or an
//! `Authorization: Bearer` token. Comparisons take the same time whatever the guess, and
//! no credential is ever logged.

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::AuthConfig;

pub const SECRET_HEADER: &str = "x-vapi-secret";

/// True when no credentials are configured, or the request carries a valid one.
pub fn check(auth: &AuthConfig, headers: &HeaderMap) -> bool {
    if !auth.is_enabled() {
        return true;
    }
    let secret_ok = match (&auth.secret, headers.get(SECRET_HEADER)) {
        // An empty credential never matches, whatever was configured.
        (Some(expected), Some(got)) if !got.is_empty() => {
            equal(expected.as_bytes(), got.as_bytes())
        }
        _ => false,
    };
    let bearer = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
    // Every configured token is compared, so timing does not reveal which one matched.
    let bearer_ok = bearer.filter(|t| !t.is_empty()).is_some_and(|token| {
        auth.bearer_tokens
            .iter()
            .fold(false, |ok, t| ok | equal(t.as_bytes(), token.as_bytes()))
    });
    secret_ok || bearer_ok
}

/// Constant-time equality; hashing first hides the lengths too.
fn equal(a: &[u8], b: &[u8]) -> bool {
    Sha256::digest(a).ct_eq(&Sha256::digest(b)).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn accepts_secret_or_bearer_and_refuses_the_rest() {
        let auth = AuthConfig {
            secret: Some("s3cret".into()),
            bearer_tokens: vec!["tok-a".into(), "tok-b".into()],
        };
        assert!(check(&auth, &headers(&[("x-vapi-secret", "s3cret")])));
        assert!(check(&auth, &headers(&[("authorization", "Bearer tok-b")])));
        assert!(check(&auth, &headers(&[("authorization", "bearer tok-a")])));
        assert!(!check(&auth, &headers(&[])));
        assert!(!check(&auth, &headers(&[("x-vapi-secret", "s3cre")])));
        assert!(!check(
            &auth,
            &headers(&[("authorization", "Bearer s3cret")])
        ));
        assert!(!check(&auth, &headers(&[("authorization", "Basic tok-a")])));
        assert!(check(&AuthConfig::default(), &headers(&[])));
        // An empty secret (refused at start-up) still lets nothing in.
        let empty = AuthConfig {
            secret: Some(String::new()),
            bearer_tokens: vec![String::new()],
        };
        assert!(!check(&empty, &headers(&[("x-vapi-secret", "")])));
        assert!(!check(&empty, &headers(&[("authorization", "Bearer ")])));
    }
}
