//! The private-network guard: which addresses a fetch may never reach, and a resolver
//! that checks every address it returns — so the connection goes to the address that
//! was checked (no second lookup, no DNS rebinding).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// Why `ip` may not be fetched, or `None` for a public address.
///
/// ```
/// use toolgate_builtins_net::forbidden;
/// assert_eq!(forbidden("127.0.0.1".parse().unwrap()), Some("loopback"));
/// assert_eq!(forbidden("::ffff:10.0.0.1".parse().unwrap()), Some("private"));
/// assert_eq!(forbidden("93.184.216.34".parse().unwrap()), None);
/// ```
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b) {
        (0, _) => "unspecified",
        (127, _) => "loopback",
        (10, _) | (172, 16..=31) | (192, 168) => "private",
        (169, 254) => "link-local",
        (100, 64..=127) => "carrier-grade NAT (100.64.0.0/10)",
        (224..=239, _) => "multicast",
        (255, 255) if ip == Ipv4Addr::BROADCAST => "broadcast",
        (240..=255, _) => "reserved",
        (192, 0) if c == 0 || c == 2 => "reserved",
        (198, 18..=19) => "reserved (benchmarking)",
        _ => return None,
    })
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    // IPv4 written in IPv6: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), NAT64.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    let segments = ip.segments();
    if segments[..6] == [0, 0, 0, 0, 0, 0] || segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let v4 = Ipv4Addr::new(
            (segments[6] >> 8) as u8,
            segments[6] as u8,
            (segments[7] >> 8) as u8,
            segments[7] as u8,
        );
        return forbidden_v4(v4).or(Some("reserved"));
    }
    match segments[0] {
        0xfc00..=0xfdff => Some("unique-local (fc00::/7)"),
        0xfe80..=0xfebf => Some("link-local"),
        0xff00..=0xffff => Some("multicast"),
        _ => None,
    }
}

/// A refusal, carried through the HTTP client's error chain to the tool's message.
#[derive(Debug, thiserror::Error)]
#[error(
    "refused to connect to {host}: it resolves to {ip}, a {reason} address (set webfetch.allow_private_network to allow it)"
)]
pub(crate) struct Refused {
    /// The host name (or address) asked for.
    pub(crate) host: String,
    /// The address that was refused.
    pub(crate) ip: IpAddr,
    /// What kind of address it is.
    pub(crate) reason: &'static str,
}

/// Checks an address unless private addresses are allowed.
pub(crate) fn check(host: &str, ip: IpAddr, allow_private: bool) -> Result<(), Refused> {
    match forbidden(ip) {
        Some(reason) if !allow_private => Err(Refused {
            host: host.to_string(),
            ip,
            reason,
        }),
        _ => Ok(()),
    }
}

/// Resolves names (or takes them from an override map, for tests) and refuses every
/// answer that contains a forbidden address.
#[derive(Clone, Debug, Default)]
pub(crate) struct GuardedResolver {
    /// Allow private addresses (config `webfetch.allow_private_network`).
    pub(crate) allow_private: bool,
    /// Host name → addresses, used instead of DNS.
    pub(crate) overrides: Arc<HashMap<String, Vec<IpAddr>>>,
    /// Host names exempt from the check.
    pub(crate) allowed_hosts: Arc<Vec<String>>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let this = self.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addresses: Vec<IpAddr> = match this.overrides.get(&host) {
                Some(list) => list.clone(),
                None => tokio::net::lookup_host((host.as_str(), 0))
                    .await?
                    .map(|a| a.ip())
                    .collect(),
            };
            if addresses.is_empty() {
                return Err(format!("{host} has no address").into());
            }
            // Every record is checked: one private answer refuses the host, so a mixed
            // answer cannot be used to reach the private one.
            let exempt = this.allowed_hosts.iter().any(|h| h == &host);
            for ip in &addresses {
                check(&host, *ip, this.allow_private || exempt)?;
            }
            let sockets: reqwest::dns::Addrs = Box::new(addresses.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(sockets)
        })
    }
}
