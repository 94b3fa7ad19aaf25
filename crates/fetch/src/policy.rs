//! What a download may reach: schemes, addresses, size and time.
//!
//! The production policy ([`FetchPolicy::strict`]) allows `https` only and refuses every
//! address that is not globally routable unicast: private, loopback, link-local,
//! unique-local, CGNAT, unspecified, multicast, broadcast, documentation, benchmarking and
//! other special-purpose ranges, in IPv4 and IPv6 (IPv4-mapped, IPv4-compatible, NAT64
//! and 6to4 forms included). Tests build a looser policy that names the exact loopback
//! addresses of their local server and may allow plain `http`; nothing else is loosened.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// Default size cap of one download: 64 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Default whole-request timeout (connect, redirects and body): 30 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default number of redirects followed.
pub const DEFAULT_MAX_REDIRECTS: usize = 10;

/// The rules a download must follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPolicy {
    /// Permit `http://` as well as `https://` (tests only; the strict policy is `false`).
    pub allow_http: bool,
    /// Exact addresses permitted even though they are not public (tests only: the local
    /// server's `127.0.0.1`). Empty in the strict policy.
    pub allowed_ips: Vec<IpAddr>,
    /// Bytes read at most; the download stops as soon as this is exceeded.
    pub max_bytes: u64,
    /// Whole-request timeout, body included.
    pub timeout: Duration,
    /// Redirects followed at most; every hop is checked.
    pub max_redirects: usize,
    /// No download at all (`GAUNTLET_OFFLINE`): only cached copies and local files load.
    pub offline: bool,
}

impl Default for FetchPolicy {
    fn default() -> Self {
        Self::strict()
    }
}

impl FetchPolicy {
    /// The production policy: https only, public unicast addresses only, 64 MiB, 30 s,
    /// 10 redirects.
    pub fn strict() -> Self {
        FetchPolicy {
            allow_http: false,
            allowed_ips: Vec::new(),
            max_bytes: DEFAULT_MAX_BYTES,
            timeout: DEFAULT_TIMEOUT,
            max_redirects: DEFAULT_MAX_REDIRECTS,
            offline: false,
        }
    }

    /// Why `ip` may not be contacted under this policy, or `None` if it may.
    pub fn refuse_ip(&self, ip: IpAddr) -> Option<&'static str> {
        if self.allowed_ips.contains(&ip) {
            return None;
        }
        non_public_reason(ip)
    }

    /// Why a URL scheme may not be used, or `None` if it may.
    pub fn refuse_scheme(&self, scheme: &str) -> Option<String> {
        match scheme {
            "https" => None,
            "http" if self.allow_http => None,
            "http" => Some("plain http is not allowed; use an https:// URL".into()),
            other => Some(format!(
                "scheme `{other}` is not allowed for downloads; use an https:// URL"
            )),
        }
    }
}

/// Why an address is not public unicast (and so refused by the strict policy), or `None`
/// when it is an ordinary global address.
pub fn non_public_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    (u32::from(ip) & mask) == (u32::from(Ipv4Addr::from(net)) & mask)
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    const TABLE: &[([u8; 4], u32, &str)] = &[
        (
            [0, 0, 0, 0],
            8,
            "unspecified / \"this network\" (0.0.0.0/8)",
        ),
        ([10, 0, 0, 0], 8, "private (10.0.0.0/8)"),
        (
            [100, 64, 0, 0],
            10,
            "CGNAT shared address space (100.64.0.0/10)",
        ),
        ([127, 0, 0, 0], 8, "loopback (127.0.0.0/8)"),
        ([169, 254, 0, 0], 16, "link-local (169.254.0.0/16)"),
        ([172, 16, 0, 0], 12, "private (172.16.0.0/12)"),
        (
            [192, 0, 0, 0],
            24,
            "IETF protocol assignments (192.0.0.0/24)",
        ),
        ([192, 0, 2, 0], 24, "documentation (192.0.2.0/24)"),
        ([192, 88, 99, 0], 24, "6to4 relay anycast (192.88.99.0/24)"),
        ([192, 168, 0, 0], 16, "private (192.168.0.0/16)"),
        ([198, 18, 0, 0], 15, "benchmarking (198.18.0.0/15)"),
        ([198, 51, 100, 0], 24, "documentation (198.51.100.0/24)"),
        ([203, 0, 113, 0], 24, "documentation (203.0.113.0/24)"),
        ([224, 0, 0, 0], 4, "multicast (224.0.0.0/4)"),
        ([240, 0, 0, 0], 4, "reserved / broadcast (240.0.0.0/4)"),
    ];
    TABLE
        .iter()
        .find(|(net, prefix, _)| in_v4(ip, *net, *prefix))
        .map(|(_, _, why)| *why)
}

fn in_v6(ip: Ipv6Addr, net: u128, prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix)
    };
    (u128::from(ip) & mask) == (net & mask)
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    if bits == 0 {
        return Some("unspecified (::)");
    }
    if bits == 1 {
        return Some("loopback (::1)");
    }
    // ::ffff:a.b.c.d — the embedded IPv4 address is what gets contacted.
    if in_v6(ip, 0xffff_0000_0000, 96) {
        let v4 = Ipv4Addr::from(bits as u32);
        return v4_reason(v4).map(|_| "IPv4-mapped IPv6 of a non-public IPv4 address");
    }
    // 64:ff9b::/96 (NAT64 well-known prefix) reaches the embedded IPv4 address.
    if in_v6(ip, 0x0064_ff9b_u128 << 96, 96) {
        let v4 = Ipv4Addr::from(bits as u32);
        return v4_reason(v4).map(|_| "NAT64 IPv6 of a non-public IPv4 address");
    }
    const TABLE: &[(u128, u32, &str)] = &[
        (0, 96, "IPv4-compatible IPv6 (deprecated, ::/96)"),
        (
            0x0064_ff9b_0001 << 80,
            48,
            "local-use NAT64 (64:ff9b:1::/48)",
        ),
        (0x0100 << 112, 64, "discard-only (100::/64)"),
        (0x2001_0db8 << 96, 32, "documentation (2001:db8::/32)"),
        (
            0x2001 << 112,
            23,
            "IETF special-purpose, incl. Teredo (2001::/23)",
        ),
        (
            0x2002 << 112,
            16,
            "6to4 (2002::/16, embeds an IPv4 address)",
        ),
        (0x3fff << 112, 20, "documentation (3fff::/20)"),
        (0x5f00 << 112, 16, "SRv6 SIDs (5f00::/16)"),
        (0xfc00 << 112, 7, "unique-local (fc00::/7)"),
        (0xfe80 << 112, 10, "link-local (fe80::/10)"),
        (0xfec0 << 112, 10, "site-local (deprecated, fec0::/10)"),
        (0xff00 << 112, 8, "multicast (ff00::/8)"),
    ];
    if let Some((_, _, why)) = TABLE.iter().find(|(net, p, _)| in_v6(ip, *net, *p)) {
        return Some(why);
    }
    // Only 2000::/3 is allocated global unicast; anything else is reserved.
    if !in_v6(ip, 0x2000 << 112, 3) {
        return Some("reserved IPv6 (outside global unicast 2000::/3)");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(s: &str) -> bool {
        non_public_reason(s.parse().unwrap()).is_some()
    }

    #[test]
    fn non_public_v4_ranges_are_refused() {
        for a in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.8.9.10",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(refused(a), "{a} should be refused");
        }
    }

    #[test]
    fn public_v4_neighbours_pass() {
        for a in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "126.255.255.255",
            "128.0.0.1",
            "169.253.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "185.199.108.133",
            "192.0.3.1",
            "192.167.0.1",
            "192.169.0.1",
            "198.17.255.255",
            "198.20.0.1",
            "223.255.255.255",
        ] {
            assert!(
                !refused(a),
                "{a} should pass: {:?}",
                non_public_reason(a.parse().unwrap())
            );
        }
    }

    #[test]
    fn non_public_v6_ranges_are_refused() {
        for a in [
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b:1::1",
            "100::1",
            "2001:db8::1",
            "2001::1",
            "2002:7f00:1::1",
            "3fff::1",
            "5f00::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "4000::1",
            "::2",
        ] {
            assert!(refused(a), "{a} should be refused");
        }
    }

    #[test]
    fn public_v6_passes() {
        for a in [
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "2a00:1450:4001::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(!refused(a), "{a} should pass");
        }
    }

    #[test]
    fn allowed_ips_are_exact_exceptions() {
        let p = FetchPolicy {
            allowed_ips: vec!["127.0.0.1".parse().unwrap()],
            ..FetchPolicy::strict()
        };
        assert!(p.refuse_ip("127.0.0.1".parse().unwrap()).is_none());
        assert!(p.refuse_ip("127.0.0.2".parse().unwrap()).is_some());
        assert!(p.refuse_ip("::1".parse().unwrap()).is_some());
        assert!(p.refuse_ip("::ffff:127.0.0.1".parse().unwrap()).is_some());
    }

    #[test]
    fn strict_policy_is_https_only() {
        let p = FetchPolicy::strict();
        assert!(p.refuse_scheme("https").is_none());
        assert!(p.refuse_scheme("http").is_some());
        assert!(p.refuse_scheme("ftp").is_some());
        assert!(p.allowed_ips.is_empty());
        assert_eq!(p.max_bytes, 64 * 1024 * 1024);
        assert_eq!(p.timeout, Duration::from_secs(30));
    }

    proptest::proptest! {
        /// A v4-mapped address is refused exactly when its IPv4 address is.
        #[test]
        fn mapped_v6_agrees_with_v4(bits in proptest::num::u32::ANY) {
            let v4 = Ipv4Addr::from(bits);
            let mapped = IpAddr::V6(v4.to_ipv6_mapped());
            proptest::prop_assert_eq!(non_public_reason(IpAddr::V4(v4)).is_some(), non_public_reason(mapped).is_some());
        }
    }
}
