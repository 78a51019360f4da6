//! Webhook signatures: `X-Hub-Signature-256: sha256=<hex>` is HMAC-SHA256 of the raw body
//! under the webhook secret. Several secrets are accepted so that a secret can be rotated
//! without losing deliveries; the comparison is constant-time (`Mac::verify_slice`). The
//! SHA-1 header (`X-Hub-Signature`) is never enough on its own.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Why a delivery's signature was refused (the log says which; the sender only sees 401).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("no X-Hub-Signature-256 header")]
    Missing,
    #[error(
        "only the SHA-1 X-Hub-Signature header was sent; itergate requires X-Hub-Signature-256"
    )]
    Sha1Only,
    #[error("X-Hub-Signature-256 is not `sha256=` followed by 64 hex digits")]
    Malformed,
    #[error("X-Hub-Signature-256 does not match the body under any configured secret")]
    Mismatch,
}

/// The webhook secrets in force (the first signs nothing; all verify).
#[derive(Clone)]
pub struct Secrets(Vec<Vec<u8>>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets([{} redacted])", self.0.len())
    }
}

impl Secrets {
    /// `secrets` split on commas (`ITERGATE_WEBHOOK_SECRET=new,old` during a rotation);
    /// empty entries are dropped. `None` if none is left.
    pub fn parse(secrets: &str) -> Option<Secrets> {
        let list: Vec<Vec<u8>> = secrets
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.as_bytes().to_vec())
            .collect();
        (!list.is_empty()).then_some(Secrets(list))
    }

    /// The digest `sha256` (the header's value, if sent) names, checked before the body is
    /// read; `sha1_sent` says whether the legacy header was present, for a precise refusal.
    pub fn well_formed(sha256: Option<&[u8]>, sha1_sent: bool) -> Result<[u8; 32], SignatureError> {
        let Some(header) = sha256 else {
            return Err(if sha1_sent {
                SignatureError::Sha1Only
            } else {
                SignatureError::Missing
            });
        };
        let hex = header
            .strip_prefix(b"sha256=")
            .ok_or(SignatureError::Malformed)?;
        decode_hex(hex).ok_or(SignatureError::Malformed)
    }

    /// Checks `sha256` against `body` under every secret.
    pub fn verify(
        &self,
        sha256: Option<&[u8]>,
        sha1_sent: bool,
        body: &[u8],
    ) -> Result<(), SignatureError> {
        let expected = Secrets::well_formed(sha256, sha1_sent)?;
        for secret in &self.0 {
            let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key");
            mac.update(body);
            if mac.verify_slice(&expected).is_ok() {
                return Ok(());
            }
        }
        Err(SignatureError::Mismatch)
    }
}

/// `sha256=<hex>` of `body` under `secret`, as GitHub sends it (tests and benchmarks sign
/// with it).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256=");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

fn decode_hex(hex: &[u8]) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        let digit = |c: u8| (c as char).to_digit(16);
        out[i] = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifies_githubs_documented_example() {
        // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
        let secrets = Secrets::parse("It's a Secret to Everybody").unwrap();
        let header = b"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(
            secrets.verify(Some(header), false, b"Hello, World!"),
            Ok(())
        );
        assert_eq!(
            sign(b"It's a Secret to Everybody", b"Hello, World!").as_bytes(),
            header
        );
    }

    #[test]
    fn refuses_everything_else_precisely() {
        let secrets = Secrets::parse("new, old").unwrap();
        let body = b"{\"action\":\"opened\"}";
        assert_eq!(
            secrets.verify(Some(sign(b"old", body).as_bytes()), false, body),
            Ok(())
        );
        assert_eq!(
            secrets.verify(Some(sign(b"new", body).as_bytes()), false, body),
            Ok(())
        );
        assert_eq!(
            secrets.verify(Some(sign(b"other", body).as_bytes()), false, body),
            Err(SignatureError::Mismatch)
        );
        let mut changed = body.to_vec();
        changed[3] ^= 1;
        assert_eq!(
            secrets.verify(Some(sign(b"new", body).as_bytes()), false, &changed),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            secrets.verify(None, true, body),
            Err(SignatureError::Sha1Only)
        );
        assert_eq!(
            secrets.verify(None, false, body),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            secrets.verify(Some(b"sha1=abc"), false, body),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            secrets.verify(Some(&[b's'; 71]), false, body),
            Err(SignatureError::Malformed)
        );
        assert!(Secrets::parse(" , ").is_none());
    }
}
