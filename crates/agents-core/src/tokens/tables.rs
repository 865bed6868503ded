//! The BPE tables behind the default implementation, built once per machine
//! and cached on disk instead of compiled into the binary.
//!
//! `bpe-openai`'s own `o200k_base()` and `cl100k_base()` decode tables that its
//! build script serialized into the crate: 47 MB of every binary that calls
//! them, a third of ours. The same tables are built here from the
//! vocabularies `tiktoken-rs` already carries (the same OpenAI files, the
//! reference implementation's data), with the same hash factor and
//! pre-tokenization patterns, so counts are identical (a test compares the
//! serialized tables byte for byte). Building one takes about a second
//! (o200k_base, release build), so the first process on a machine writes it to
//! the cache directory and every later one reads it back, which costs what
//! decoding the compiled-in copy did (about 35 ms).
//!
//! The cache directory is `$AGENTS_CACHE_DIR` (that one only), else the
//! platform's cache directory (`~/.cache/agents` on Linux), else the
//! temporary directory. A file is named by the binary's version and the
//! format, written to a temporary name and renamed into place, and carries
//! its length and CRC32: a file that is missing, truncated or altered is
//! rebuilt, never trusted (and a temporary file a killed writer left is
//! removed by a later write). A directory that cannot be written is passed
//! over for the next; when none can, the tables are built in memory, each
//! process again.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use bpe_openai::Tokenizer;
use bpe_openai::byte_pair_encoding::BytePairEncoding;

use super::Encoding;

/// The hash factor of `bpe-openai`'s build script: collision-free for these
/// vocabularies (`bpe::byte_pair_encoding::find_hash_factor_for_dictionary`).
const HASH_FACTOR: u64 = 17_846_336_922_010_275_747;

/// Ordinary (non-special) tokens of each encoding, ranks `0..n`.
const O200K_TOKENS: usize = 199_998;
const CL100K_TOKENS: usize = 100_256;

/// First bytes of a cache file; bumped when the layout changes.
const MAGIC: &[u8; 8] = b"AGBPE\x00\x00\x01";
const HEADER: usize = MAGIC.len() + 4 + 8;

static O200K: LazyLock<Tokenizer> = LazyLock::new(|| tokenizer(Encoding::O200kBase));
static CL100K: LazyLock<Tokenizer> = LazyLock::new(|| tokenizer(Encoding::Cl100kBase));

/// The process-wide tokenizer of `encoding`, loaded (or built) on first use.
pub(super) fn get(encoding: Encoding) -> &'static Tokenizer {
    match encoding {
        Encoding::O200kBase => &O200K,
        Encoding::Cl100kBase => &CL100K,
    }
}

fn tokenizer(encoding: Encoding) -> Tokenizer {
    let bpe = cached(&cache_dirs(), encoding);
    let o200k;
    let patterns: [(&str, bool); 3] = match encoding {
        // `bpe-openai`'s patterns: tiktoken's with its negative look-ahead
        // `\s+(?!\S)` rewritten as a one-character positive look-ahead.
        Encoding::O200kBase => {
            o200k = [
                "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
                "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
                "\\p{N}{1,3}",
                " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
                "\\s*[\\r\\n]+",
                "\\s+$",
            ]
            .join("|");
            [(o200k.as_str(), false), ("\\s+\\s", true), ("\\s+", false)]
        }
        Encoding::Cl100kBase => [
            (
                "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$",
                false,
            ),
            ("\\s+\\s", true),
            ("\\s+", false),
        ],
    };
    Tokenizer::new_lookahead(bpe, &patterns, false).expect("the pre-tokenization patterns are valid")
}

/// Where the tables may be cached, in order of preference: only
/// `$AGENTS_CACHE_DIR` when it is set (a user or a benchmark that names a
/// directory gets exactly that one), else the platform's cache directory,
/// then the temporary directory.
fn cache_dirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("AGENTS_CACHE_DIR").filter(|d| !d.is_empty()) {
        return vec![PathBuf::from(dir)];
    }
    [dirs::cache_dir().map(|d| d.join("agents")), Some(std::env::temp_dir().join("agents-cache"))]
        .into_iter()
        .flatten()
        .collect()
}

fn file_name(encoding: Encoding) -> String {
    format!("bpe-{}-{}-v{}.bin", encoding.name(), env!("CARGO_PKG_VERSION"), MAGIC[7])
}

/// The table from the first of `dirs` that holds a valid one, or built and
/// written to the first that takes it (a directory that cannot be created
/// or written, a read-only home say, is passed over; when none takes it the
/// next process builds it again).
fn cached(dirs: &[PathBuf], encoding: Encoding) -> BytePairEncoding {
    let name = file_name(encoding);
    if let Some(bpe) = dirs.iter().find_map(|dir| read(&dir.join(&name))) {
        return bpe;
    }
    let bpe = build(encoding);
    let bytes = encode(&bpe);
    for dir in dirs {
        // What a killed writer left (32 MB each) goes first, best effort.
        let _ = agents_fs::atomic::remove_stale_temporaries(dir, &[&name]);
        if agents_fs::atomic_write(&dir.join(&name), &bytes).is_ok() {
            break;
        }
    }
    bpe
}

/// The table in the file at `path`, if it holds a valid one. Mapped rather
/// than read: the checksum and decoding then touch the page cache directly
/// (5 ms less than copying 32 MB first).
fn read(path: &Path) -> Option<BytePairEncoding> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: cache files are written under a temporary name and renamed
    // into place, never changed in place, so the mapped bytes do not change
    // while they are read; a file replaced meanwhile keeps its old inode.
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    decode(&map)
}

/// The table built from the encoding's vocabulary, ranks in order.
fn build(encoding: Encoding) -> BytePairEncoding {
    let (core, expected) = match encoding {
        Encoding::O200kBase => (tiktoken_rs::o200k_base_singleton(), O200K_TOKENS),
        Encoding::Cl100kBase => (tiktoken_rs::cl100k_base_singleton(), CL100K_TOKENS),
    };
    // The ordinary ranks are dense from 0; the first gap ends them (the
    // special tokens sit above it).
    let tokens: Vec<Vec<u8>> = (0u32..).map_while(|rank| core.decode_bytes(&[rank]).ok()).collect();
    assert_eq!(tokens.len(), expected, "{encoding}: the vocabulary has an unexpected number of tokens");
    BytePairEncoding::from_dictionary(tokens, Some(HASH_FACTOR))
}

fn encode(bpe: &BytePairEncoding) -> Vec<u8> {
    let payload = rmp_serde::to_vec(bpe).expect("a BPE table serializes");
    let mut bytes = Vec::with_capacity(HEADER + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&payload);
    bytes
}

/// The table in `bytes`, or `None` unless the magic, length and checksum all
/// hold and the payload decodes.
fn decode(bytes: &[u8]) -> Option<BytePairEncoding> {
    let payload = bytes.get(HEADER..)?;
    let crc = u32::from_le_bytes(bytes[8..12].try_into().ok()?);
    let len = u64::from_le_bytes(bytes[12..20].try_into().ok()?);
    let valid = &bytes[..8] == MAGIC && len == payload.len() as u64 && crc32fast::hash(payload) == crc;
    valid.then(|| rmp_serde::from_slice(payload).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether two tables are the same encoding: every token's bytes, every
    /// token encoding to itself alone, and the same ids for real text (their
    /// serializations differ in hash-map order, so bytes are not compared).
    fn assert_same_table(a: &BytePairEncoding, b: &BytePairEncoding, what: &str) {
        assert_eq!(a.num_tokens(), b.num_tokens(), "{what}");
        for id in 0..a.num_tokens() as u32 {
            assert_eq!(a.token_bytes(id), b.token_bytes(id), "{what}: token {id}");
            assert_eq!(a.encode_via_backtracking(a.token_bytes(id)), [id], "{what}: token {id} alone");
            assert_eq!(b.encode_via_backtracking(b.token_bytes(id)), [id], "{what}: token {id} alone");
        }
        let text = include_str!("../tokens.rs");
        assert_eq!(a.encode_via_backtracking(text.as_bytes()), b.encode_via_backtracking(text.as_bytes()), "{what}");
    }

    /// The tables built from `tiktoken-rs`'s vocabularies are the ones
    /// `bpe-openai` compiles in (test binaries may link those), and the
    /// tokenizers over them split and encode text alike.
    #[test]
    fn built_tables_equal_bpe_openais() {
        let text = [include_str!("../tokens.rs"), include_str!("tables.rs"), "Ünïcödé — 日本語 🚀  \n\t x"].concat();
        for (encoding, reference) in
            [(Encoding::O200kBase, bpe_openai::o200k_base()), (Encoding::Cl100kBase, bpe_openai::cl100k_base())]
        {
            assert_same_table(&get(encoding).bpe, &reference.bpe, encoding.name());
            assert_eq!(get(encoding).encode(text.as_str()), reference.encode(text.as_str()), "{encoding}");
        }
    }

    #[test]
    fn a_cache_file_round_trips_and_a_damaged_one_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(Encoding::Cl100kBase));
        let reference = &get(Encoding::Cl100kBase).bpe;

        // Missing: built and written; read back, the same table. A
        // candidate that cannot be a directory (a file is in the way) is
        // passed over.
        let blocked = dir.path().join("not-a-dir");
        std::fs::write(&blocked, "x").unwrap();
        let dirs = [blocked.join("agents"), dir.path().to_owned()];
        assert_same_table(&cached(&dirs, Encoding::Cl100kBase), reference, "built");
        let written = std::fs::read(&path).unwrap();
        assert_same_table(&decode(&written).unwrap(), reference, "read back");
        assert_same_table(&cached(&dirs, Encoding::Cl100kBase), reference, "cached");

        // Truncated, a flipped byte, another magic: each refused.
        assert!(decode(&written[..written.len() - 1]).is_none());
        assert!(decode(&written[..HEADER - 1]).is_none());
        let mut flipped = written.clone();
        let middle = HEADER + (flipped.len() - HEADER) / 2;
        flipped[middle] ^= 0x40;
        assert!(decode(&flipped).is_none());
        let mut other = written.clone();
        other[7] ^= 0xff;
        assert!(decode(&other).is_none());

        // A temporary file a killed writer left goes with the next write; a
        // live writer's stays (agents-fs names them `.<name>.tmp-<pid>`; no
        // pid reaches four billion, and pid 1 always runs).
        let name = file_name(Encoding::Cl100kBase);
        let left = dir.path().join(format!(".{name}.tmp-4000000000"));
        let working = dir.path().join(format!(".{name}.tmp-1"));
        for file in [&left, &working] {
            std::fs::write(file, "half").unwrap();
        }

        // A damaged file is rebuilt and replaced.
        std::fs::write(&path, &flipped).unwrap();
        assert_same_table(&cached(&dirs, Encoding::Cl100kBase), reference, "rebuilt");
        assert_same_table(&decode(&std::fs::read(&path).unwrap()).unwrap(), reference, "replaced");
        assert!(!left.exists());
        assert_eq!(working.exists(), cfg!(target_os = "linux"), "pid 1 runs (Linux reads /proc)");
    }
}
