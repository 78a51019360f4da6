//! Payloads at rest. SQLite stores them LZ4-compressed (`payload_encoding = 'lz4'`): a
//! 14.6 KB webhook becomes about 3 KB, so a commit writes a fifth of the pages to the WAL
//! and again at the checkpoint. PostgreSQL compresses large values itself (TOAST) and
//! stores them as they came (`NULL`), as every version before this one did.

/// The largest payload read back: GitHub's own limit, so a damaged size prefix cannot
/// ask for more.
const MAX_PAYLOAD_BYTES: usize = crate::serve::limits::MAX_BODY_BYTES;

pub(super) const LZ4: &str = "lz4";

/// The payload as SQLite stores it (`payload_encoding = 'lz4'`).
pub(super) fn pack(payload: &[u8]) -> Vec<u8> {
    lz4_flex::compress_prepend_size(payload)
}

/// The payload as it arrived, from what is stored with `encoding`.
pub(super) fn unpack(encoding: Option<&str>, stored: Vec<u8>) -> Result<Vec<u8>, String> {
    match encoding {
        None => Ok(stored),
        Some(LZ4) => {
            let declared = stored
                .get(..4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
            match declared {
                Some(size) if size <= MAX_PAYLOAD_BYTES => {
                    lz4_flex::decompress_size_prepended(&stored)
                        .map_err(|e| format!("the stored payload does not decompress: {e}"))
                }
                Some(size) => Err(format!(
                    "the stored payload claims {size} bytes, more than any webhook"
                )),
                None => Err("the stored payload is cut short".into()),
            }
        }
        Some(other) => Err(format!(
            "the stored payload's encoding `{other}` is unknown to this version"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_comes_back_as_it_went_and_damage_is_named() {
        let body = br#"{"action":"created","comment":{"body":"/iterate"}}"#.repeat(50);
        let packed = pack(&body);
        assert!(packed.len() * 5 < body.len(), "{} bytes", packed.len());
        assert_eq!(unpack(Some(LZ4), packed.clone()).unwrap(), body);
        assert_eq!(unpack(None, body.clone()).unwrap(), body);
        let mut cut = packed.clone();
        cut.truncate(packed.len() / 2);
        assert!(unpack(Some(LZ4), cut)
            .unwrap_err()
            .contains("does not decompress"));
        let mut huge = packed;
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(unpack(Some(LZ4), huge)
            .unwrap_err()
            .contains("more than any webhook"));
        assert!(unpack(Some(LZ4), vec![1])
            .unwrap_err()
            .contains("cut short"));
        assert!(unpack(Some("zstd"), vec![])
            .unwrap_err()
            .contains("unknown"));
    }
}
