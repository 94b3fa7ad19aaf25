//! How a request to the canary sink or the poisoned-content server names the call it
//! belongs to: its path starts with `/t/` and the call's trace id in 32 lowercase hex
//! digits (the token), then what the application added (`/collect`, `/p/<key>/<name>`).
//!
//! The trace id is derived from the target's and the call's identity (see
//! [`crate::trace`]), so the token of an attempt is the same on every rerun and differs
//! between attempts; the target hands out `http://<sink>/t/<token>` and
//! `http://<content>/t/<token>` only to the call whose trace it is. A request whose path
//! names no token, or a token of no call open now, is counted and dropped.

use crate::collector::TraceId;

/// Longest path (after the token) the servers accept; longer is refused (414).
pub const MAX_REST: usize = 1024;

/// Why a path names no call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    /// The path does not start with `/t/<32 lowercase hex digits>` followed by `/` or
    /// its end.
    NoToken,
    /// What follows the token is longer than [`MAX_REST`] bytes.
    TooLong,
}

/// The trace id a path's token names and what follows the token (`""` or starting
/// with `/`).
pub fn parse(path: &str) -> Result<(TraceId, &str), TokenError> {
    let rest = path.strip_prefix("/t/").ok_or(TokenError::NoToken)?;
    let hex = rest.get(..32).ok_or(TokenError::NoToken)?;
    let tail = &rest[32..];
    if !(tail.is_empty() || tail.starts_with('/')) {
        return Err(TokenError::NoToken);
    }
    let mut id = [0u8; 16];
    for (i, pair) in hex.as_bytes().chunks_exact(2).enumerate() {
        id[i] = (nibble(pair[0]).ok_or(TokenError::NoToken)? << 4)
            | nibble(pair[1]).ok_or(TokenError::NoToken)?;
    }
    if tail.len() > MAX_REST {
        return Err(TokenError::TooLong);
    }
    Ok((id, tail))
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// The base URL of the call `id` on the server at `addr`: `http://addr/t/<token>`.
pub fn base_url(addr: std::net::SocketAddr, id: &TraceId) -> String {
    format!("http://{addr}/t/{}", crate::trace::hex(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_the_token_and_the_rest() {
        let id: TraceId = [0xab; 16];
        let hex = crate::trace::hex(&id);
        assert_eq!(parse(&format!("/t/{hex}")), Ok((id, "")));
        assert_eq!(
            parse(&format!("/t/{hex}/collect/x")),
            Ok((id, "/collect/x"))
        );
        for bad in [
            "/".to_string(),
            "/t/".into(),
            format!("/t/{}", &hex[..31]),
            format!("/t/{hex}x"),
            format!("/t/{}", hex.to_ascii_uppercase()),
            format!("/x/{hex}/"),
            format!("/t/{}é/", &hex[..30]),
        ] {
            assert_eq!(parse(&bad), Err(TokenError::NoToken), "{bad}");
        }
        let long = format!("/t/{hex}/{}", "a".repeat(MAX_REST));
        assert_eq!(parse(&long), Err(TokenError::TooLong));
        assert_eq!(
            base_url("127.0.0.1:9".parse().unwrap(), &id),
            format!("http://127.0.0.1:9/t/{hex}")
        );
    }

    proptest! {
        /// Any path: an answer, never a panic; an accepted one round-trips.
        #[test]
        fn any_path_is_answered(p in "\\PC{0,80}", id in any::<[u8; 16]>(), tail in "(/[a-z0-9./%?]{0,20})?") {
            let _ = parse(&p);
            let built = format!("/t/{}{tail}", crate::trace::hex(&id));
            prop_assert_eq!(parse(&built), Ok((id, tail.as_str())));
        }
    }
}
