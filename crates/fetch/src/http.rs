//! The download itself: a reqwest client whose DNS resolver refuses non-public
//! addresses, whose redirect policy re-checks every hop, with no proxies, no
//! decompression, a byte cap and a timeout.

use crate::policy::FetchPolicy;
use crate::{FetchError, to_hex};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect::{Action, Attempt};
use reqwest::{Url, redirect};
use sha2::{Digest, Sha256};
use std::error::Error as StdError;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Once};

/// rustls needs a process-wide crypto provider; we ship `ring`. Installing twice (or
/// after another crate installed one) is harmless.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Resolves with the system resolver, then refuses the host if ANY of its addresses is
/// not allowed (a name that also points inside the network is not used at all).
struct FilteringResolver {
    policy: Arc<FetchPolicy>,
}

impl Resolve for FilteringResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            check_resolved(&host, &addrs, &policy)?;
            let it: Addrs = Box::new(addrs.into_iter());
            Ok(it)
        })
    }
}

/// The resolver's refusal of a host that points at a non-public address: a wrong
/// request, not a network failure (see [`FetchError::unreachable`](crate::FetchError)).
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for Refused {}

/// The resolver's rule, separately testable: every address must be allowed.
pub(crate) fn check_resolved(
    host: &str,
    addrs: &[SocketAddr],
    policy: &FetchPolicy,
) -> Result<(), Box<dyn StdError + Send + Sync>> {
    if addrs.is_empty() {
        return Err(format!("host `{host}` resolved to no addresses").into());
    }
    for a in addrs {
        if let Some(why) = policy.refuse_ip(a.ip()) {
            return Err(Box::new(Refused(format!(
                "refused: host `{host}` resolves to {} ({why}); downloads may only reach public addresses",
                a.ip()
            ))));
        }
    }
    Ok(())
}

/// Why a download failed, and whether it is worth trying again later.
struct Failure {
    message: String,
    /// See [`FetchError::unreachable`](crate::FetchError).
    unreachable: bool,
}

impl Failure {
    fn wrong(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            unreachable: false,
        }
    }

    /// A reqwest error: sending failed (DNS, connection, timeout, a reset body) unless the
    /// policy refused the address or a redirect.
    fn request(e: &reqwest::Error) -> Self {
        let mut refused = e.is_redirect() || e.is_builder();
        let mut cur: Option<&(dyn StdError + 'static)> = Some(e);
        while let Some(x) = cur {
            refused |= x.is::<Refused>();
            cur = x.source();
        }
        Failure {
            message: chain(e),
            unreachable: !refused,
        }
    }
}

/// A URL the download policy refuses before any connection is made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UrlRefused {
    /// `why` is [`FetchPolicy::refuse_scheme`]'s reason.
    #[error("refused `{url}`: {why}")]
    Scheme { url: String, why: String },
    #[error("refused `{url}`: the URL has no host")]
    NoHost { url: String },
    /// An IP-literal host; `why` is [`FetchPolicy::refuse_ip`]'s reason.
    #[error("refused `{url}`: {ip} is {why}; downloads may only reach public addresses")]
    Address {
        url: String,
        ip: IpAddr,
        why: &'static str,
    },
}

/// Checks a URL's scheme and, when its host is an IP literal (which bypasses DNS), the
/// address. Domain names are checked by the resolver at connect time.
pub(crate) fn check_url(url: &Url, policy: &FetchPolicy) -> Result<(), UrlRefused> {
    if let Some(why) = policy.refuse_scheme(url.scheme()) {
        return Err(UrlRefused::Scheme {
            url: url.to_string(),
            why,
        });
    }
    let ip: IpAddr = match url.host() {
        Some(url::Host::Ipv4(v4)) => v4.into(),
        Some(url::Host::Ipv6(v6)) => v6.into(),
        Some(url::Host::Domain(_)) => return Ok(()),
        None => {
            return Err(UrlRefused::NoHost {
                url: url.to_string(),
            });
        }
    };
    match policy.refuse_ip(ip) {
        Some(why) => Err(UrlRefused::Address {
            url: url.to_string(),
            ip,
            why,
        }),
        None => Ok(()),
    }
}

/// The HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
struct ClientError(#[source] reqwest::Error);

fn client(policy: &FetchPolicy) -> Result<reqwest::Client, ClientError> {
    install_crypto_provider();
    let shared = Arc::new(policy.clone());
    let hop_policy = shared.clone();
    let redirects = redirect::Policy::custom(move |attempt: Attempt| -> Action {
        if attempt.previous().len() > hop_policy.max_redirects {
            let n = hop_policy.max_redirects;
            return attempt.error(format!("more than {n} redirects"));
        }
        match check_url(attempt.url(), &hop_policy) {
            Ok(()) => attempt.follow(),
            Err(m) => attempt.error(format!("redirect {m}")),
        }
    });
    reqwest::Client::builder()
        .user_agent(concat!("gauntlet-fetch/", env!("CARGO_PKG_VERSION")))
        // Proxies would resolve names on our behalf and bypass the address filter.
        .no_proxy()
        .https_only(!policy.allow_http)
        .redirect(redirects)
        .dns_resolver(FilteringResolver { policy: shared })
        .timeout(policy.timeout)
        .connect_timeout(policy.timeout.min(std::time::Duration::from_secs(10)))
        .build()
        .map_err(ClientError)
}

/// The error and its causes on one line (reqwest wraps ours a few levels down).
fn chain(e: &(dyn StdError + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    parts.join(": ")
}

/// Downloads `url` into a temporary file (in `temp_dir` when given, so the final rename
/// stays on one filesystem), hashing as it goes. Returns the file, its sha256 and size.
pub(crate) fn download(
    url: &Url,
    policy: &FetchPolicy,
    temp_dir: Option<&Path>,
) -> Result<(tempfile::TempPath, String, u64), FetchError> {
    let shown = url.as_str().to_string();
    let err = |m: String| FetchError::new(&shown, m);
    check_url(url, policy).map_err(|e| err(e.to_string()))?;
    let mut tmp = match temp_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| {
                err(format!(
                    "cannot create the cache directory {}: {e}",
                    d.display()
                ))
            })?;
            tempfile::Builder::new().prefix(".partial-").tempfile_in(d)
        }
        None => tempfile::Builder::new()
            .prefix("gauntlet-fetch-")
            .tempfile(),
    }
    .map_err(|e| err(format!("cannot create a temporary file: {e}")))?;
    let client = client(policy).map_err(|e| err(e.to_string()))?;
    // Run on a thread of our own with its own runtime: callers may be sync code running
    // inside another tokio runtime, where blocking on a nested runtime would panic.
    let result = std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Failure::wrong(format!("cannot start the download runtime: {e}")))?;
            rt.block_on(stream_to(&client, url, policy, tmp.as_file_mut()))
        })
        .join()
        .unwrap_or_else(|_| Err(Failure::wrong("the download thread panicked")))
    });
    let (sha, len) = result.map_err(|f| FetchError {
        unreachable: f.unreachable,
        ..err(f.message)
    })?;
    tmp.as_file_mut()
        .sync_all()
        .map_err(|e| err(format!("cannot write the temporary file: {e}")))?;
    Ok((tmp.into_temp_path(), sha, len))
}

async fn stream_to(
    client: &reqwest::Client,
    url: &Url,
    policy: &FetchPolicy,
    out: &mut std::fs::File,
) -> Result<(String, u64), Failure> {
    let cap = policy.max_bytes;
    let mut resp = client
        .get(url.clone())
        .send()
        .await
        .map_err(|e| Failure::request(&e))?;
    let status = resp.status();
    if !status.is_success() {
        // Timeouts, rate limits and server errors pass; anything else is the request's.
        let passing = status.is_server_error()
            || status == reqwest::StatusCode::REQUEST_TIMEOUT
            || status == reqwest::StatusCode::TOO_MANY_REQUESTS;
        return Err(Failure {
            message: format!(
                "HTTP {status} from {}; {}",
                resp.url().as_str(),
                if passing {
                    "the server failed: try again later"
                } else {
                    "check the URL"
                }
            ),
            unreachable: passing,
        });
    }
    if let Some(n) = resp.content_length()
        && n > cap
    {
        return Err(Failure::wrong(format!(
            "the server announces {n} bytes, over the {cap}-byte download limit"
        )));
    }
    let mut hasher = Sha256::new();
    let mut len = 0u64;
    while let Some(chunk) = resp.chunk().await.map_err(|e| Failure::request(&e))? {
        len += chunk.len() as u64;
        if len > cap {
            // Stop reading now: the rest of the body is never pulled.
            return Err(Failure::wrong(format!(
                "the download exceeded the {cap}-byte limit (stopped after {len} bytes)"
            )));
        }
        hasher.update(&chunk);
        out.write_all(&chunk)
            .map_err(|e| Failure::wrong(format!("cannot write the temporary file: {e}")))?;
    }
    Ok((to_hex(&hasher.finalize()), len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_literal_urls_are_checked() {
        let strict = FetchPolicy::strict();
        for u in [
            "https://10.0.0.1/x",
            "https://169.254.169.254/latest/meta-data/",
            "https://[::1]/x",
            "https://[::ffff:127.0.0.1]/x",
            "https://[fd00::1]/x",
            "https://2130706433/x",
            "https://0x7f.1/x",
            "https://127.1/x",
            "https://0/x",
        ] {
            let url = Url::parse(u).unwrap();
            assert!(check_url(&url, &strict).is_err(), "{u} should be refused");
        }
        assert!(check_url(&Url::parse("https://8.8.8.8/x").unwrap(), &strict).is_ok());
        assert!(check_url(&Url::parse("https://example.invalid/x").unwrap(), &strict).is_ok());
        let e = check_url(&Url::parse("http://example.invalid/x").unwrap(), &strict).unwrap_err();
        assert!(e.to_string().contains("https"), "{e}");
    }

    #[test]
    fn resolver_refuses_any_non_public_answer() {
        let strict = FetchPolicy::strict();
        let a = |s: &str| -> SocketAddr { s.parse().unwrap() };
        assert!(check_resolved("h", &[a("8.8.8.8:0")], &strict).is_ok());
        let e = check_resolved("h", &[a("8.8.8.8:0"), a("10.1.2.3:0")], &strict).unwrap_err();
        assert!(e.to_string().contains("10.1.2.3"), "{e}");
        assert!(check_resolved("h", &[], &strict).is_err());
        assert!(check_resolved("h", &[a("[fe80::1]:0")], &strict).is_err());
    }
}
