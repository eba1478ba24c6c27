//! `notify`: a webhook per new permission ask of `toolgate serve` (README "The page"),
//! with a signed link that logs in to the page for that ask only.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_permission::{Event, Request};

/// One target, ready to send.
struct Target {
    url: String,
    template: Value,
    headers: Vec<(reqwest::header::HeaderName, reqwest::header::HeaderValue)>,
}

/// The body sent when an entry has no `template`.
fn default_template() -> Value {
    json!({"id": "{id}", "session": "{session}", "action": "{action}", "resources": "{resources}", "link": "{link}", "text": "{text}"})
}

/// `template` with `{name}` replaced in every string by `values`.
fn fill(template: &Value, values: &[(&str, String)]) -> Value {
    match template {
        Value::String(text) => {
            let mut out = text.clone();
            for (name, value) in values {
                out = out.replace(&format!("{{{name}}}"), value);
            }
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|item| fill(item, values)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), fill(value, values)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The placeholders of one ask.
fn values(request: &Request, link: &str) -> Vec<(&'static str, String)> {
    let resources = request.resources.join(", ");
    let command = request
        .metadata
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let text = format!(
        "toolgate asks: {} {} (session {}). Answer: {link}",
        request.action, resources, request.session_id
    );
    vec![
        ("id", request.id.clone()),
        ("session", request.session_id.clone()),
        ("action", request.action.clone()),
        ("resources", resources),
        ("command", command),
        ("link", link.to_string()),
        ("text", text),
    ]
}

fn client() -> Result<reqwest::Client, String> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let tls =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|error| error.to_string())?
            .with_platform_verifier()
            .map_err(|error| error.to_string())?
            .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        // A webhook answers, it does not send us elsewhere.
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|error| error.to_string())
}

/// Checks the `notify` entries and starts sending: one POST per target for each new ask
/// of `service`, with a link to `base` signed by `links`. Returns the warnings about
/// entries that cannot be used (bad header names); they are left out.
pub(crate) fn start(
    entries: &[toolgate_config::NotifyTarget],
    service: &toolgate_permission::PermissionService,
    links: toolgate_server::AskLinks,
    base: String,
) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut targets = Vec::new();
    for entry in entries {
        let mut headers = Vec::new();
        for (name, value) in entry.headers.iter().flatten() {
            match (
                reqwest::header::HeaderName::from_bytes(name.as_bytes()),
                reqwest::header::HeaderValue::from_str(value),
            ) {
                (Ok(name), Ok(value)) => headers.push((name, value)),
                _ => warnings.push(format!(
                    "notify {}: header {name:?} is not a valid header; left out",
                    entry.url.0
                )),
            }
        }
        targets.push(Target {
            url: entry.url.0.clone(),
            template: entry.template.clone().unwrap_or_else(default_template),
            headers,
        });
    }
    if targets.is_empty() {
        return warnings;
    }
    let client = match client() {
        Ok(client) => client,
        Err(error) => {
            warnings.push(format!("notify: no HTTP client ({error}); no webhook is sent"));
            return warnings;
        }
    };
    let mut events = service.subscribe();
    let targets = std::sync::Arc::new(targets);
    tokio::spawn(async move {
        loop {
            let request = match events.recv().await {
                Ok(Event::Asked(request)) => request,
                Ok(_) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!("notify: {missed} permission events missed; their webhooks are not sent");
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            };
            let link = links.link(&base, &request.id);
            let values = values(&request, &link);
            for target in targets.iter() {
                let body = fill(&target.template, &values).to_string();
                let mut post = client
                    .post(&target.url)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body);
                for (name, value) in &target.headers {
                    post = post.header(name.clone(), value.clone());
                }
                let url = target.url.clone();
                let id = request.id.clone();
                // Each on its own: a slow receiver never delays another, or the next ask.
                tokio::spawn(async move {
                    match post.send().await {
                        Ok(response) if response.status().is_success() => {}
                        Ok(response) => {
                            tracing::warn!("notify {url}: ask {id}: the receiver answered {}", response.status())
                        }
                        Err(error) => tracing::warn!("notify {url}: ask {id}: {error}"),
                    }
                });
            }
        }
    });
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_in_every_string_and_nothing_else() {
        let template = json!({"text": "{action} on {resources}: {link}", "n": 1, "list": ["{id}", true]});
        let values = [
            ("action", "bash".to_string()),
            ("resources", "ls, pwd".to_string()),
            ("link", "http://x/login".to_string()),
            ("id", "per_1".to_string()),
        ];
        assert_eq!(
            fill(&template, &values),
            json!({"text": "bash on ls, pwd: http://x/login", "n": 1, "list": ["per_1", true]})
        );
    }
}
