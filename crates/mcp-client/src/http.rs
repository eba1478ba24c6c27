//! The HTTP client of a remote MCP server: its own TLS configuration, and redirects kept
//! on the server's origin.

use std::time::Duration;

/// TLS for one client: the ring provider and the platform's certificate verifier, set on
/// the client itself. A library must not install a process-wide default provider: that is
/// the embedding program's choice, and a second install fails.
/// (builtins-net builds the same; library crates share only the core, which has no TLS.)
pub(crate) fn tls() -> Result<rustls::ClientConfig, String> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS: {error}"))?
        .with_platform_verifier()
        .map_err(|error| format!("TLS: {error}"))?
        .with_no_client_auth())
}

/// The HTTP client of one remote server, with its own TLS configuration and
/// [`redirects`]' policy.
pub(crate) fn http_client(startup: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls()?)
        .connect_timeout(startup)
        .redirect(redirects())
        .build()
        .map_err(|e| format!("HTTP client: {e}"))
}

/// At most this many redirects, all on the server's own origin.
const MAX_REDIRECTS: usize = 5;

/// Redirects of a remote server are followed only within the origin (scheme, host and
/// port) the request was sent to: every request carries the configured headers
/// (`Authorization`, API keys), which reqwest strips on another host only for the
/// standard credential headers, so a redirect elsewhere, `https` to `http` included,
/// is refused and never sent.
pub(crate) fn redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(|url| url.origin());
        if first.is_some_and(|origin| origin != attempt.url().origin()) {
            let to = attempt.url().origin().ascii_serialization();
            attempt.error(format!(
                "a redirect to another origin ({to}) refused: the server's credential headers are never sent there"
            ))
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// True when `initialize` failed because the server answered `401` (after the one
/// refresh and retry, for a server with tokens).
pub(crate) fn needs_login(error: &rmcp::service::ClientInitializeError) -> bool {
    error.is_authorization_required() || error.auth_challenge().is_some()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_remote_servers_client_brings_its_own_tls_and_installs_nothing_process_wide() {
        // The embedding program owns the process-wide rustls provider; the gateway must
        // work without one and must not install one behind the program's back.
        assert!(rustls::crypto::CryptoProvider::get_default().is_none());
        let client = http_client(Duration::from_secs(1));
        assert!(client.is_ok(), "{:?}", client.err());
        assert!(
            rustls::crypto::CryptoProvider::get_default().is_none(),
            "the gateway installed a process-wide TLS provider"
        );
    }
}
