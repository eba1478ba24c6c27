//! The network tools: `webfetch` and `websearch`.
//!
//! `webfetch` asks `webfetch` on the URL before any request, reads at most 5 MiB of the
//! body (the rest is never downloaded, decompressed or not), converts HTML to Markdown or
//! text, and — on by default — refuses every address on the local or private network:
//! names are resolved, every address is checked, the connection goes to the checked
//! address, and every redirect hop is checked again.
//!
//! `websearch` (Exa or Parallel) is behind the `websearch` feature, on by default.
//! Neither tool touches process-wide state: each instance builds one HTTP client with its
//! own TLS provider on its first call.
//!
//! ```
//! use toolgate_builtins_net::forbidden;
//! for spelling in ["127.0.0.1", "10.1.2.3", "169.254.169.254", "100.64.0.1", "::1", "fd00::1", "::ffff:192.168.0.1"] {
//!     assert!(forbidden(spelling.parse().unwrap()).is_some(), "{spelling}");
//! }
//! ```

mod fetch;
mod guard;
mod html;
#[cfg(feature = "websearch")]
mod search;

pub use fetch::{FetchConfig, webfetch_tool};
pub use guard::forbidden;
#[cfg(feature = "websearch")]
pub use search::{Provider, SearchConfig, websearch_tool};

// The items of other toolgate crates that this crate's signatures name, and those crates
// whole, so that this crate alone is a sufficient dependency (ARCHITECTURE.md, "Re-exports").
#[doc(no_inline)]
pub use toolgate_core;
pub use toolgate_core::{Permissions, Tool};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
