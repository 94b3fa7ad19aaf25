//! sha256 helpers. Cache keys and dataset versions are sha256 over canonical bytes:
//! `serde_json::Value` objects serialise with sorted keys, so hashing a `Value` is canonical.

use sha2::{Digest, Sha256};
use std::io;

/// Lowercase hex of a byte slice.
pub fn to_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

/// sha256 of bytes as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    to_hex(&Sha256::digest(bytes))
}

/// A sha256 hasher that serde_json can serialise into without building a string.
#[derive(Default, Clone)]
pub struct HashWriter(Sha256);

impl HashWriter {
    pub fn new() -> Self {
        Self::default()
    }
    /// Feeds a length-prefixed field, so that ("ab","c") and ("a","bc") differ.
    pub fn field(&mut self, bytes: &[u8]) {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }
    /// Feeds a value's canonical JSON, length-delimited by a trailing separator byte
    /// that JSON text can never contain unescaped.
    pub fn json<T: serde::Serialize + ?Sized>(&mut self, value: &T) {
        // serde_json writes token by token; hashing each tiny write is slow, so serialise
        // into a reused per-thread buffer and hash it in one update.
        thread_local! {
            static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        BUF.with(|b| {
            let mut b = b.borrow_mut();
            b.clear();
            serde_json::to_writer(&mut *b, value).expect("serialising into memory cannot fail");
            b.push(0);
            self.0.update(&b[..]);
        });
    }
    pub fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
    pub fn finish_hex(self) -> String {
        to_hex(&self.finish())
    }
}

impl io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_known_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn fields_are_delimited() {
        let mut a = HashWriter::new();
        a.field(b"ab");
        a.field(b"c");
        let mut b = HashWriter::new();
        b.field(b"a");
        b.field(b"bc");
        assert_ne!(a.finish(), b.finish());
    }
}
