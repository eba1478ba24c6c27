//! The end-to-end tests, one binary: the `toolgate` binary driven as a user, a client or
//! an attacker would, one module per subject.
//!
//! - The command line: `cli` (every command, flag and exit code), `fs` (the file tools
//!   as separate processes), `file_limits` (size limits, whole pages, spill cleanup by
//!   `call`), `upkeep` (spill cleanup of the long-running processes), `hooks`
//!   (`toolgate hook` as Claude Code, Codex and Gemini CLI run it; `check --exit-code`).
//! - Configuration and rules: `opencode_config` (OpenCode's config as OpenCode reads it),
//!   `opencode_plugin` (the OpenCode plugin in Node, against the published plugin API),
//!   `permission_config` (a deny never disappears, nothing fails open), `front_ends`
//!   (every front end applies the same checks), `rules_hold` (read rules in every
//!   tool, every spelling of a path, protected files, refusals that name their rule),
//!   `trust` (a project file's MCP servers, weaker sandbox and `shell_env` only once trusted),
//!   `import` (other agents' rules imported and round-tripped), `import_codex_differential`
//!   (the imported Codex rules against Codex's own engine, command by command).
//! - The servers: `server` and `server_hardening` (`toolgate serve` over HTTP, and
//!   attacked), `web` (the person's page in a real browser, its logins, webhooks), `mcp`
//!   (`toolgate mcp` with real clients), `mcp_http` (`/mcp` with clients that wait for a
//!   person), `conformance` and
//!   `conformance_client` (the official MCP conformance suite, server and client).
//! - The MCP gateway: `gateway`, `gateway_registry`, `gateway_serve`, `gateway_oauth`
//!   (OAuth against a real authorization server).
//! - The output boundary: `redaction` (secrets never reach the model, through every front end).
//! - Distribution: `packages` (the release archive, `npx` and `uvx` of the built
//!   packages; run by `cargo xtask packages`).
//! - The bash tool's confinement: `sandbox` (the kernel sandbox and the shell's
//!   environment), `exec_rules` and `exec_guard` (exec-time enforcement), `shell_oracle`
//!   and `exec_oracle` (the oracles, `e2e::shell_oracle`).
//!
//! The helpers they share are the `e2e` library (`tests/src`).

mod audit;
mod background;
mod cli;
mod conformance;
mod conformance_client;
mod exec_guard;
mod exec_oracle;
mod exec_rules;
mod exec_wrap;
mod file_limits;
mod front_ends;
mod fs;
mod gateway;
mod gateway_oauth;
mod gateway_registry;
mod gateway_serve;
mod gateway_trust;
mod hooks;
mod import;
mod import_codex_differential;
mod mcp;
mod mcp_http;
mod opencode_config;
mod opencode_plugin;
mod packages;
mod permission_config;
mod redaction;
mod rules_hold;
mod sandbox;
mod server;
mod server_hardening;
mod shell_oracle;
mod trust;
mod upkeep;
mod web;
