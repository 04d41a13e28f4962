//! API tokens: how they are hashed for the configuration file, and how a presented token is
//! matched.
//!
//! The file holds `sha256(token)` in lower-case hex, never the token: a leaked configuration
//! does not let anyone call the API. `tasklatch worker hash-token` prints the hash of a token
//! read from standard input, or makes a new random token and prints both.

use sha2::{Digest, Sha256};

/// Bytes of randomness in a generated token (256 bits).
const TOKEN_BYTES: usize = 32;

/// `sha256(token)` as 64 lower-case hex digits.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A new random token: `tl_` and 64 hex digits.
pub fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(format!("tl_{}", hex::encode(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_lower_case_sha256_hex() {
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn new_tokens_differ() {
        let a = new_token().unwrap_or_else(|e| panic!("{e}"));
        let b = new_token().unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(a, b);
        assert_eq!(a.len(), 3 + 2 * TOKEN_BYTES);
    }
}
