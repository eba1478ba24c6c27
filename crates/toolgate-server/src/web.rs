//! The person's page (`GET /`) and how a browser logs in to it.
//!
//! The page is three static files compiled into the binary (`web/`): no CDN, no build
//! step. A browser cannot keep the bearer token safely, so it trades a credential for a
//! session cookie once: the token typed into the page's form (`POST /login`), the
//! one-time code of the link `toolgate serve` prints (`GET /login?code=…`), or a signed
//! link to one ask (`GET /login?ask=…&exp=…&sig=…`, sent by a webhook, which logs in for
//! that ask only). A link's page only shows a **Log in** button, which posts its fields
//! to `/login/link`: a link preview that fetches the link uses nothing up. The cookie is random, kept on the server (hashed), `HttpOnly`,
//! `SameSite=Strict`; requests it authenticates that change state must also carry the
//! session's CSRF token in `X-Toolgate-CSRF` and an `Origin` naming this server.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderValue, Method, header};
use sha2::Digest;
use subtle::ConstantTimeEq;

use crate::http::{TokenError, random_token};

/// The page.
pub(crate) const INDEX_HTML: &str = include_str!("web/index.html");
/// Its script (no inline script: the policy forbids it).
pub(crate) const APP_JS: &str = include_str!("web/app.js");
/// Its style sheet.
pub(crate) const STYLE_CSS: &str = include_str!("web/style.css");

/// The header a cookie-authenticated request that changes state carries.
pub(crate) const CSRF_HEADER: &str = "x-toolgate-csrf";

/// The page's content security policy: its own files only, nothing inline, no frames.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// How long the code `serve` prints stays usable.
const CODE_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// How long a signed link to one ask stays usable.
pub(crate) const ASK_LINK_LIFETIME: Duration = Duration::from_secs(60 * 60);
/// How long a browser session lasts after its login.
const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// Browser sessions held at once; the oldest goes first.
const MAX_SESSIONS: usize = 64;

/// The SHA-256 of `bytes`.
fn digest(bytes: &[u8]) -> [u8; 32] {
    sha2::Sha256::digest(bytes).into()
}

/// HMAC-SHA-256 (RFC 2104) of `message` under `key` (32 bytes: one block's worth of
/// padding, no key hashing needed).
fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut inner_pad = [0x36u8; 64];
    let mut outer_pad = [0x5cu8; 64];
    for (index, byte) in key.iter().enumerate() {
        inner_pad[index] ^= byte;
        outer_pad[index] ^= byte;
    }
    let inner = sha2::Sha256::new()
        .chain_update(inner_pad)
        .chain_update(message)
        .finalize();
    sha2::Sha256::new()
        .chain_update(outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, byte| {
            let _ = write!(out, "{byte:02x}");
            out
        })
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// Signs links to one pending ask with a secret drawn when the server starts: whoever
/// holds a link may log in to the page for that ask only, once, within an hour. The
/// binary signs the links its webhooks send; the server checks them.
#[derive(Clone)]
pub struct AskLinks {
    secret: std::sync::Arc<[u8; 32]>,
}

impl std::fmt::Debug for AskLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AskLinks(..)")
    }
}

impl AskLinks {
    /// Links signed with a fresh random secret.
    pub fn new() -> Result<AskLinks, TokenError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| TokenError::Random(e.to_string()))?;
        Ok(AskLinks {
            secret: std::sync::Arc::new(secret),
        })
    }

    fn signature(&self, ask: &str, expires: u64) -> [u8; 32] {
        hmac_sha256(&self.secret, format!("toolgate ask link\0{ask}\0{expires}").as_bytes())
    }

    /// The link to the page for `ask` on the server at `base` (`http://127.0.0.1:7777`),
    /// usable once for an hour.
    ///
    /// ```
    /// let links = toolgate_server::AskLinks::new().unwrap();
    /// let link = links.link("http://127.0.0.1:7777", "per_1");
    /// assert!(link.starts_with("http://127.0.0.1:7777/login?ask=per_1&exp="));
    /// ```
    pub fn link(&self, base: &str, ask: &str) -> String {
        let expires = unix_now() + ASK_LINK_LIFETIME.as_secs();
        let signature = hex(&self.signature(ask, expires));
        let ask: String = ask
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        format!(
            "{}/login?ask={ask}&exp={expires}&sig={signature}",
            base.trim_end_matches('/')
        )
    }

    /// Whether `signature` signs `ask` until `expires`, which has not passed.
    fn verify(&self, ask: &str, expires: u64, signature: &str) -> bool {
        let wanted = hex(&self.signature(ask, expires));
        expires >= unix_now() && bool::from(wanted.as_bytes().ct_eq(signature.as_bytes()))
    }
}

/// What a browser session may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Everything the bearer token may.
    All,
    /// See and answer this one ask (a signed link's login).
    Ask(String),
}

/// Who made a request, for the handlers: the bearer token, or a browser session.
#[derive(Clone, Debug)]
pub(crate) enum Caller {
    /// `Authorization: Bearer` (an API client).
    Bearer,
    /// The server's own user over its local socket (`toolgate approve`, `reject`).
    Local,
    /// The page, logged in with this session.
    Page {
        /// What it may do.
        scope: Scope,
        /// Its CSRF token, for `GET /whoami`.
        csrf: String,
    },
}

impl Caller {
    /// Who answered, in words for the page's list of answers.
    pub(crate) fn by(&self) -> &'static str {
        match self {
            Caller::Bearer => "an API client (bearer token)",
            Caller::Local => "the terminal (toolgate approve or reject)",
            Caller::Page { scope: Scope::All, .. } => "the page",
            Caller::Page {
                scope: Scope::Ask(_), ..
            } => "the page (a link sent for this ask)",
        }
    }

    /// The front end an audit record names for this caller's replies: `http` (an API
    /// client), `terminal` (`toolgate approve`/`reject` over the local socket), `page`.
    pub(crate) fn front_end(&self) -> &'static str {
        match self {
            Caller::Bearer => "http",
            Caller::Local => "terminal",
            Caller::Page { .. } => "page",
        }
    }

    /// The one ask this caller may see, when it is limited to one.
    pub(crate) fn only_ask(&self) -> Option<&str> {
        match self {
            Caller::Page {
                scope: Scope::Ask(id), ..
            } => Some(id),
            _ => None,
        }
    }
}

struct Session {
    csrf: String,
    scope: Scope,
    expires: Instant,
}

/// The server's logins: the printed code, the used ask links, the browser sessions.
pub(crate) struct Logins {
    /// `None`: no secret could be drawn, no link is taken.
    links: Option<AskLinks>,
    /// Hashes of codes not used yet, with when they expire.
    codes: Mutex<Vec<([u8; 32], Instant)>>,
    /// Signatures of ask links used already, with when they expire (then they are
    /// refused by their date anyway).
    used_links: Mutex<HashMap<String, u64>>,
    /// Sessions by the hash of their cookie.
    sessions: Mutex<HashMap<[u8; 32], Session>>,
}

/// Why a login was refused (never the credential itself).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LoginError {
    /// A code that was never issued, was used, or expired.
    #[error("this login code was used already, has expired or was never issued; enter the token on the page instead")]
    Code,
    /// An ask link with a bad signature, expired, or used.
    #[error("this link to an ask was used already, has expired or is not signed by this server")]
    Link,
    /// Neither a code nor a complete link.
    #[error("a login needs ?code=… or ?ask=…&exp=…&sig=…")]
    Malformed,
    /// The system's random source failed.
    #[error("could not draw a session: {0}")]
    Random(String),
}

/// A fresh session: the cookie's value and the CSRF token.
pub(crate) struct NewSession {
    pub(crate) cookie: String,
    pub(crate) csrf: String,
}

impl Logins {
    pub(crate) fn new(links: Option<AskLinks>, code: Option<&str>) -> Logins {
        let codes = code
            .map(|code| vec![(digest(code.as_bytes()), Instant::now() + CODE_LIFETIME)])
            .unwrap_or_default();
        Logins {
            links,
            codes: Mutex::new(codes),
            used_links: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Uses up `code`: true once, for a code issued less than ten minutes ago.
    fn take_code(&self, code: &str) -> bool {
        let hash = digest(code.as_bytes());
        let mut codes = self.codes.lock().unwrap_or_else(|poison| poison.into_inner());
        let now = Instant::now();
        codes.retain(|(_, expires)| *expires > now);
        match codes.iter().position(|(held, _)| bool::from(held.ct_eq(&hash))) {
            Some(at) => {
                codes.remove(at);
                true
            }
            None => false,
        }
    }

    /// Uses up a signed link to `ask`: true once, before it expires.
    fn take_link(&self, ask: &str, expires: &str, signature: &str) -> bool {
        let Ok(expires) = expires.parse::<u64>() else {
            return false;
        };
        if !self
            .links
            .as_ref()
            .is_some_and(|links| links.verify(ask, expires, signature))
        {
            return false;
        }
        let mut used = self.used_links.lock().unwrap_or_else(|poison| poison.into_inner());
        let now = unix_now();
        used.retain(|_, until| *until >= now);
        used.insert(signature.to_string(), expires).is_none()
    }

    /// Logs in with the fields of a login link (`POST /login/link`): a code, or a
    /// signed ask link.
    pub(crate) fn login_with_query(&self, query: &HashMap<String, String>) -> Result<(NewSession, Scope), LoginError> {
        let scope = if let Some(code) = query.get("code") {
            if !self.take_code(code) {
                return Err(LoginError::Code);
            }
            Scope::All
        } else if let (Some(ask), Some(expires), Some(signature)) =
            (query.get("ask"), query.get("exp"), query.get("sig"))
        {
            if !self.take_link(ask, expires, signature) {
                return Err(LoginError::Link);
            }
            Scope::Ask(ask.clone())
        } else {
            return Err(LoginError::Malformed);
        };
        Ok((self.open(scope.clone())?, scope))
    }

    /// A new session with `scope`.
    pub(crate) fn open(&self, scope: Scope) -> Result<NewSession, LoginError> {
        let cookie = random_token().map_err(|e| LoginError::Random(e.to_string()))?;
        let csrf = random_token().map_err(|e| LoginError::Random(e.to_string()))?;
        let mut sessions = self.sessions.lock().unwrap_or_else(|poison| poison.into_inner());
        let now = Instant::now();
        sessions.retain(|_, session| session.expires > now);
        while sessions.len() >= MAX_SESSIONS {
            let oldest = sessions
                .iter()
                .min_by_key(|(_, session)| session.expires)
                .map(|(key, _)| *key);
            match oldest {
                Some(key) => sessions.remove(&key),
                None => break,
            };
        }
        sessions.insert(
            digest(cookie.as_bytes()),
            Session {
                csrf: csrf.clone(),
                scope,
                expires: now + SESSION_LIFETIME,
            },
        );
        Ok(NewSession { cookie, csrf })
    }

    /// The session a request's cookies name, if any is live: its scope and CSRF token.
    pub(crate) fn session(&self, headers: &HeaderMap) -> Option<(Scope, String)> {
        let sessions = self.sessions.lock().unwrap_or_else(|poison| poison.into_inner());
        let now = Instant::now();
        session_cookies(headers).find_map(|value| {
            sessions
                .get(&digest(value.as_bytes()))
                .filter(|session| session.expires > now)
                .map(|session| (session.scope.clone(), session.csrf.clone()))
        })
    }

    /// Ends the session a request's cookies name.
    pub(crate) fn close(&self, headers: &HeaderMap) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|poison| poison.into_inner());
        for value in session_cookies(headers) {
            sessions.remove(&digest(value.as_bytes()));
        }
    }
}

/// The cookie's name: per port, since browsers share cookies between the ports of one
/// host, and two servers on one machine must not overwrite each other's sessions.
pub(crate) fn cookie_name(port: u16) -> String {
    format!("toolgate_session_{port}")
}

/// The values of every session cookie a request carries (of any port: only a live
/// session's value is known to the server).
fn session_cookies(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| name.starts_with("toolgate_session_"))
        .map(|(_, value)| value.trim())
}

/// Whether any session cookie is present (a request with one and no `Authorization`
/// header is judged by it).
pub(crate) fn has_session_cookie(headers: &HeaderMap) -> bool {
    session_cookies(headers).next().is_some()
}

/// `Set-Cookie` for a new session.
pub(crate) fn set_cookie(port: u16, value: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!(
        "{}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        cookie_name(port),
        SESSION_LIFETIME.as_secs()
    ))
    .ok()
}

/// `Set-Cookie` that removes the session cookie.
pub(crate) fn clear_cookie(port: u16) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!(
        "{}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0",
        cookie_name(port)
    ))
    .ok()
}

/// Routes anyone may fetch (Host and Origin still checked): the page's files and the
/// logins themselves.
pub(crate) fn is_public(method: &Method, path: &str) -> bool {
    match path {
        "/" | "/app.js" | "/style.css" => method == Method::GET || method == Method::HEAD,
        "/login" => method == Method::GET || method == Method::HEAD || method == Method::POST,
        "/login/link" => method == Method::POST,
        _ => false,
    }
}

/// Whether `value` is made of what codes, ask ids, dates and signatures are made of
/// (letters, digits, `_`, `-`): nothing to escape in HTML, nothing to decode in a form.
fn plain(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 256
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The fields of a login link's query that a login takes, when they are plain.
fn login_fields(query: &HashMap<String, String>) -> Option<Vec<(&'static str, String)>> {
    let names: &[&'static str] = if query.contains_key("code") {
        &["code"]
    } else {
        &["ask", "exp", "sig"]
    };
    names
        .iter()
        .map(|name| {
            query
                .get(*name)
                .filter(|value| plain(value))
                .map(|value| (*name, value.clone()))
        })
        .collect()
}

/// The page a login link opens: one button that posts the link's fields. Opening the
/// link logs nobody in, so a chat's link preview (which fetches it) cannot use up the
/// code or take the session; the person's click does. `None`: not a login link.
pub(crate) fn login_form(query: &HashMap<String, String>) -> Option<String> {
    let fields = login_fields(query)?;
    let what = match query.get("ask") {
        Some(ask) if !query.contains_key("code") => format!("the permission request {ask}"),
        _ => "the toolgate page".to_string(),
    };
    let hidden: String = fields
        .iter()
        .map(|(name, value)| format!("<input type=\"hidden\" name=\"{name}\" value=\"{value}\">"))
        .collect();
    Some(format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>toolgate: log in</title>\n<link rel=\"icon\" href=\"data:,\">\n<link rel=\"stylesheet\" href=\"/style.css\">\n</head>\n<body>\n<main>\n<h1>toolgate</h1>\n<p>This link logs this browser in to {what}. It works once.</p>\n<form method=\"post\" action=\"/login/link\">{hidden}<button type=\"submit\" class=\"primary\">Log in</button></form>\n</main>\n</body>\n</html>\n"
    ))
}

/// The fields of a posted login form (`application/x-www-form-urlencoded`), the plain
/// ones only (they need no decoding).
pub(crate) fn form_fields(body: &[u8]) -> HashMap<String, String> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(name, value)| plain(name) && plain(value))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

/// Whether `method` changes state (and so needs the CSRF header with a cookie).
pub(crate) fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Whether a session limited to `ask` may make this request: see it, answer it, and
/// follow the event stream (filtered to it).
pub(crate) fn ask_scope_allows(ask: &str, method: &Method, path: &str) -> bool {
    match (method, path) {
        (&Method::GET, "/whoami" | "/permission" | "/event" | "/answers") => true,
        (&Method::POST, "/logout") => true,
        (&Method::POST, path) => path
            .strip_prefix("/permission/")
            .and_then(|rest| rest.strip_suffix("/reply"))
            .is_some_and(|id| id == ask),
        _ => false,
    }
}

/// Whether `given` is the session's CSRF token.
pub(crate) fn csrf_matches(headers: &HeaderMap, csrf: &str) -> bool {
    let mut values = headers.get_all(CSRF_HEADER).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => bool::from(value.as_bytes().ct_eq(csrf.as_bytes())),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_with_a_32_byte_key() {
        // RFC 4231 test case 2 uses the 4-byte key "Jefe", zero-padded to a block: the
        // same as a 32-byte key of "Jefe" and zeros.
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        assert_eq!(
            hex(&hmac_sha256(&key, b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    fn query(link: &str) -> HashMap<String, String> {
        link.split_once('?')
            .unwrap()
            .1
            .split('&')
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap();
                (key.to_string(), value.to_string())
            })
            .collect()
    }

    #[test]
    fn a_code_and_an_ask_link_log_in_once() {
        let links = AskLinks::new().unwrap();
        let logins = Logins::new(Some(links.clone()), Some("the-code"));
        let code: HashMap<String, String> = [("code".to_string(), "the-code".to_string())].into();
        let (session, scope) = logins.login_with_query(&code).unwrap();
        assert_eq!(scope, Scope::All);
        assert_eq!(logins.login_with_query(&code).err(), Some(LoginError::Code));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("other=1; toolgate_session_1={}", session.cookie)).unwrap(),
        );
        assert_eq!(logins.session(&headers), Some((Scope::All, session.csrf.clone())));
        logins.close(&headers);
        assert_eq!(logins.session(&headers), None);

        let link = query(&links.link("http://127.0.0.1:1", "per_1"));
        let (_, scope) = logins.login_with_query(&link).unwrap();
        assert_eq!(scope, Scope::Ask("per_1".into()));
        assert_eq!(logins.login_with_query(&link).err(), Some(LoginError::Link));
        // Another ask's id under the same signature, or a later expiry: refused.
        let mut forged = query(&links.link("http://127.0.0.1:1", "per_1"));
        forged.insert("ask".into(), "per_2".into());
        assert_eq!(logins.login_with_query(&forged).err(), Some(LoginError::Link));
        let mut later = query(&links.link("http://127.0.0.1:1", "per_1"));
        let expires: u64 = later["exp"].parse().unwrap();
        later.insert("exp".into(), (expires + 1).to_string());
        assert_eq!(logins.login_with_query(&later).err(), Some(LoginError::Link));
        // Another server's link.
        let foreign = query(&AskLinks::new().unwrap().link("http://127.0.0.1:1", "per_1"));
        assert_eq!(logins.login_with_query(&foreign).err(), Some(LoginError::Link));
    }

    #[test]
    fn a_login_link_opens_a_form_that_carries_only_plain_fields() {
        let link: HashMap<String, String> = [("code".to_string(), "Ab09_-".to_string())].into();
        let form = login_form(&link).unwrap();
        assert!(
            form.contains(r#"<input type="hidden" name="code" value="Ab09_-">"#),
            "{form}"
        );
        assert!(form.contains(r#"action="/login/link""#));
        let hostile: HashMap<String, String> = [("code".to_string(), "\"><script>".to_string())].into();
        assert_eq!(login_form(&hostile), None);
        let partial: HashMap<String, String> = [("ask".to_string(), "per_1".to_string())].into();
        assert_eq!(login_form(&partial), None);
        assert_eq!(
            form_fields(b"ask=per_1&exp=12&sig=ab&x=%3C"),
            [("ask", "per_1"), ("exp", "12"), ("sig", "ab")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        );
    }

    #[test]
    fn an_ask_session_reaches_its_ask_only() {
        assert!(ask_scope_allows("per_1", &Method::POST, "/permission/per_1/reply"));
        assert!(!ask_scope_allows("per_1", &Method::POST, "/permission/per_2/reply"));
        assert!(!ask_scope_allows("per_1", &Method::GET, "/approvals"));
        assert!(!ask_scope_allows("per_1", &Method::DELETE, "/approvals/x"));
        assert!(!ask_scope_allows("per_1", &Method::POST, "/session/s/call"));
    }
}
