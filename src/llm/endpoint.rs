//! Where a server is and how long to wait for it: what a chat backend and an embedding
//! backend have in common (both hold an [`Endpoint`]).

use std::fmt;
use std::time::Duration;

/// The waits of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Opening the connection (TCP and TLS).
    pub connect: Duration,
    /// From sending the request to the response headers and first body byte (covers the
    /// server's prompt processing, or embedding a whole batch, which can be long on a local
    /// CPU).
    pub first_byte: Duration,
    /// The longest gap between two body chunks after the first.
    pub idle: Duration,
    /// The whole request, start to end.
    pub total: Duration,
}

impl Default for Timeouts {
    /// Connect 10 s, first byte 120 s, idle 60 s, total 10 min.
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(60),
            total: Duration::from_secs(600),
        }
    }
}

/// One server, one model on it, and the credentials and waits for talking to it.
#[derive(Clone)]
pub struct Endpoint {
    /// A name for messages and telemetry (`"local"`, `"anthropic"`); names key cool-downs,
    /// prices and tiers.
    pub name: String,
    /// The API root, including the version: `https://api.openai.com/v1`,
    /// `http://127.0.0.1:8080/v1`, `https://api.anthropic.com/v1`, `http://localhost:11434`
    /// (Ollama). The format's path is appended.
    pub base_url: String,
    pub model: String,
    /// Sent in the format's key header. Never shown by `Debug` or in errors.
    pub api_key: Option<String>,
    /// Extra request headers (`HTTP-Referer`, `OpenAI-Organization`, …). Their values are
    /// not shown by `Debug` either (some carry secrets).
    pub headers: Vec<(String, String)>,
    pub timeouts: Timeouts,
}

impl Endpoint {
    /// An endpoint with no key, no extra headers and default [`Timeouts`].
    pub fn new(
        name: impl Into<String>,
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> Endpoint {
        Endpoint {
            name: name.into(),
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            headers: Vec::new(),
            timeouts: Timeouts::default(),
        }
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Endpoint")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("headers", &header_names)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_neither_the_key_nor_header_values() {
        let mut endpoint = Endpoint::new("remote", "https://example.invalid/v1", "m");
        endpoint.api_key = Some("sk-secret-123".into());
        endpoint
            .headers
            .push(("X-Token".into(), "header-secret-456".into()));
        let text = format!("{endpoint:?}");
        assert!(text.contains("[redacted]") && text.contains("X-Token"));
        assert!(!text.contains("sk-secret-123") && !text.contains("header-secret-456"));
    }
}
