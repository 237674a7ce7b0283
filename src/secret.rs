//! Comparing a secret the client gave with the configured one (the daemon's
//! bearer token, a shell password) in constant time.

use subtle::ConstantTimeEq;

/// Constant-time comparison whose duration depends only on the length of
/// `given` (which the caller knows), never on the secret's length or
/// content: `given` is compared with the secret repeated to its length, and
/// the lengths are compared with `subtle` too. An empty secret matches
/// nothing.
pub fn matches(given: &[u8], secret: &[u8]) -> bool {
    if secret.is_empty() {
        return false;
    }
    let expected: Vec<u8> = secret.iter().copied().cycle().take(given.len()).collect();
    let same_len = (given.len() as u64).ct_eq(&(secret.len() as u64));
    (given.ct_eq(&expected) & same_len).into()
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn matches_only_exactly() {
        assert!(matches(b"s3cret", b"s3cret"));
        for wrong in [&b""[..], b"s3cre", b"s3crets", b"s3crets3cret", b"S3cret"] {
            assert!(!matches(wrong, b"s3cret"), "{wrong:?}");
        }
        assert!(!matches(b"", b""));
    }
}
