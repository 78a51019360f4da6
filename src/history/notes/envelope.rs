//! What a note holds: the record and observation envelopes (a bare record read too), and
//! this clone's key that signs the notes it writes and tells them from anyone else's.

use std::io::ErrorKind;
use std::io::{Read, Write};
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use git2::Oid;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::model::IterationRecord;
use crate::signals::observation::Observation;

use super::{NotesStore, StoredRecord, ENVELOPE_VERSION};

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Envelope {
    pub(super) version: u32,
    #[serde(default)]
    pub(super) fingerprint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) base: Option<String>,
    pub(super) record: IterationRecord,
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ObservationEnvelope {
    pub(super) version: u32,
    pub(super) fingerprint: String,
    pub(super) observation: Observation,
}

/// A tree's note, read once: whether this clone wrote it, and the cached observation it
/// holds (`None`: not one this version reads).
#[derive(Debug)]
pub(super) struct TreeNote {
    pub(super) written_here: bool,
    pub(super) envelope: Option<ObservationEnvelope>,
}

/// Parses a note: an envelope, or a bare record. Envelopes, the common case, are parsed
/// in one pass; the slower path works out what an unreadable note is.
pub fn parse_note(bytes: &[u8]) -> Result<StoredRecord> {
    let envelope_error = match serde_json::from_slice::<Envelope>(bytes) {
        Ok(envelope) if envelope.version <= ENVELOPE_VERSION => {
            return Ok(StoredRecord {
                record: envelope.record,
                fingerprint: Some(envelope.fingerprint),
                base: envelope.base,
                trusted: false,
            })
        }
        Ok(envelope) => return Err(newer_envelope(envelope.version)),
        Err(e) => e,
    };
    let value: serde_json::Value = serde_json::from_slice(bytes).context("not JSON")?;
    let version = value
        .get("version")
        .filter(|_| value.get("record").is_some());
    if let Some(version) = version {
        return match version.as_u64() {
            Some(v) if v > u64::from(ENVELOPE_VERSION) => Err(newer_envelope(v)),
            _ => Err(envelope_error).context("not a record envelope"),
        };
    }
    let record = serde_json::from_value(value).context("not an iteration record")?;
    Ok(StoredRecord {
        record,
        fingerprint: None,
        base: None,
        trusted: false,
    })
}

/// The note's JSON object, unsigned and without a trailing newline.
pub(super) fn note_json(value: &impl Serialize) -> Result<String> {
    serde_json::to_string(value).context("serialising the note")
}

/// Where the clones' notes keys live, under the user's state directory
/// ([`crate::state_dir`]): outside the repository, where an agent working in the work tree
/// does not read or replace them.
pub(super) const KEY_DIR: &str = "notes-keys";
pub(super) const KEY_BYTES: usize = 32;
/// What precedes the MAC at the end of a signed note: `{...,"mac":"<64 hex digits>"}`.
pub(super) const MAC_FIELD: &[u8] = b",\"mac\":\"";
pub(super) const MAC_HEX_LEN: usize = 64;

/// The per-clone secret that marks the notes this clone wrote (see the module docs). No
/// `Debug`: it must not reach a log.
#[derive(Clone, Copy)]
pub(crate) struct CloneKey([u8; KEY_BYTES]);

impl CloneKey {
    pub(super) fn path(common_dir: &Path) -> Result<std::path::PathBuf> {
        Ok(crate::state_dir::path()?
            .join(KEY_DIR)
            .join(crate::state_dir::repository_name(common_dir)))
    }

    /// The key, if this clone has one.
    pub(super) fn load(common_dir: &Path) -> Result<Option<CloneKey>> {
        let path = Self::path(common_dir)?;
        let mut bytes = Vec::with_capacity(KEY_BYTES);
        match std::fs::File::open(&path) {
            Ok(file) => {
                file.take(KEY_BYTES as u64 + 1)
                    .read_to_end(&mut bytes)
                    .with_context(|| format!("reading {}", path.display()))?;
            }
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
        }
        let key: [u8; KEY_BYTES] = bytes
            .try_into()
            .map_err(|_| anyhow!("{} is not a {KEY_BYTES}-byte key", path.display()))?;
        Ok(Some(CloneKey(key)))
    }

    /// The key, made now if this clone has none: random bytes written to a private file
    /// and linked into place, so concurrent first writers agree on one key.
    pub(super) fn load_or_create(common_dir: &Path) -> Result<CloneKey> {
        if let Some(key) = Self::load(common_dir)? {
            return Ok(key);
        }
        let path = Self::path(common_dir)?;
        let dir = crate::state_dir::create(KEY_DIR)?;
        let key_file = crate::state_dir::repository_name(common_dir);
        let mut key = [0u8; KEY_BYTES];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .context("reading random bytes for this clone's notes key")?;
        // Unique per process and call: threads of one process create keys concurrently too.
        static SCRATCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let serial = SCRATCH.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let scratch = dir.join(format!("{key_file}.{}-{serial}.tmp", std::process::id()));
        let written = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&scratch)
                .and_then(|mut f| f.write_all(&key).and_then(|()| f.sync_all()))
        };
        written.with_context(|| format!("writing {}", scratch.display()))?;
        let linked = std::fs::hard_link(&scratch, &path);
        let _ = std::fs::remove_file(&scratch);
        match linked {
            Ok(()) => Ok(CloneKey(key)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Self::load(common_dir)?
                .ok_or_else(|| anyhow!("{} vanished while being created", path.display())),
            Err(e) => Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }

    pub(super) fn mac(&self, object: Oid, body: &[&[u8]]) -> Hmac<Sha256> {
        // `new_from_slice` accepts keys of any length for HMAC; 32 bytes always do.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(object.as_bytes());
        for part in body {
            mac.update(part);
        }
        mac
    }

    /// `json` (one JSON object) with a `mac` member appended, plus a newline.
    pub(super) fn sign(&self, object: Oid, json: &str) -> String {
        let tag = self.mac(object, &[json.as_bytes()]).finalize().into_bytes();
        let open = json.strip_suffix('}').unwrap_or(json);
        let mut text = String::with_capacity(json.len() + MAC_FIELD.len() + MAC_HEX_LEN + 3);
        text.push_str(open);
        text.push_str(",\"mac\":\"");
        for byte in tag {
            text.push_str(&format!("{byte:02x}"));
        }
        text.push_str("\"}\n");
        text
    }

    /// Whether `text` is a note [`Self::sign`] made for `object` with this key.
    pub(super) fn verify(&self, object: Oid, text: &[u8]) -> bool {
        let text = text.trim_ascii_end();
        let Some(rest) = text.strip_suffix(b"\"}") else {
            return false;
        };
        let Some(hex_start) = rest.len().checked_sub(MAC_HEX_LEN) else {
            return false;
        };
        let (rest, hex) = rest.split_at(hex_start);
        let Some(body) = rest.strip_suffix(MAC_FIELD) else {
            return false;
        };
        let Some(tag) = decode_hex(hex) else {
            return false;
        };
        self.mac(object, &[body, b"}"]).verify_slice(&tag).is_ok()
    }
}

pub(super) fn decode_hex(hex: &[u8]) -> Option<Vec<u8>> {
    let digit = |b: u8| (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok());
    hex.chunks(2)
        .map(|pair| match pair {
            [high, low] => Some(digit(*high)? << 4 | digit(*low)?),
            _ => None,
        })
        .collect()
}

pub(super) fn newer_envelope(version: impl std::fmt::Display) -> anyhow::Error {
    anyhow!(
        "written by a newer itergate (envelope version {version}, this one reads up to {ENVELOPE_VERSION})"
    )
}

impl NotesStore<'_> {
    /// This clone's key for reading: `None` when it has none yet (then it wrote no note).
    pub(super) fn reading_key(&self) -> Option<CloneKey> {
        *self.key.borrow_mut().get_or_insert_with(|| {
            CloneKey::load(self.repo.commondir()).unwrap_or_else(|error| {
                tracing::warn!(%error, "cannot read this clone's notes key; trusting no note");
                None
            })
        })
    }

    /// This clone's key for writing, created on the first write.
    pub(super) fn writing_key(&self) -> Result<CloneKey> {
        if let Some(key) = self.reading_key() {
            return Ok(key);
        }
        let key = CloneKey::load_or_create(self.repo.commondir())?;
        *self.key.borrow_mut() = Some(Some(key));
        Ok(key)
    }

    /// Whether `text`, the note of `object`, carries this clone's MAC.
    pub(super) fn written_here(&self, object: Oid, text: &[u8]) -> bool {
        self.reading_key()
            .is_some_and(|key| key.verify(object, text))
    }
}
