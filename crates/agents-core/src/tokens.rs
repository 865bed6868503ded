//! Token counting: the one tokenizer every part of the engine measures text with.
//!
//! Budgets are hard ceilings, so counts must be exact for the model's real
//! encoding, not estimates. Both OpenAI encodings that current models use
//! come with the binary (no download, works offline): their vocabularies are
//! compiled in, and the default implementation's tables are built from them
//! once per machine and cached ([`tables`]). Two well-kept BPE
//! implementations are wired behind [`Tokenizer`]; `bpe-openai` is the default
//! because it measured several times faster than `tiktoken-rs` on real code
//! (see the tokenizer table in docs/benchmarks.md and `cargo bench -p agents-core`), while
//! giving identical counts. `tiktoken-rs` stays selectable as the reference.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

mod tables;

/// Something that can count tokens. Every budget computation goes through this.
pub trait TokenCounter: Send + Sync {
    /// Exact number of tokens `text` encodes to.
    fn count(&self, text: &str) -> usize;
}

/// The BPE encodings the engine knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, o-series and later: the default.
    O200kBase,
    /// GPT-4, GPT-3.5-turbo and text-embedding-3.
    Cl100kBase,
}

impl Encoding {
    pub const ALL: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Encoding {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Encoding::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| format!("unknown encoding `{s}`, expected one of: o200k_base, cl100k_base"))
    }
}

/// Which BPE implementation backs a [`Tokenizer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum TokenizerImpl {
    /// The `bpe-openai` crate: linear-time BPE, the fastest measured.
    #[default]
    BpeOpenai,
    /// The `tiktoken-rs` crate: a port of OpenAI's tiktoken, the reference.
    #[serde(rename = "tiktoken-rs")]
    Tiktoken,
}

impl TokenizerImpl {
    pub fn name(self) -> &'static str {
        match self {
            TokenizerImpl::BpeOpenai => "bpe-openai",
            TokenizerImpl::Tiktoken => "tiktoken-rs",
        }
    }
}

/// The shared tokenizer service. Cheap to copy: the encoding tables are
/// process-wide statics built on first use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tokenizer {
    encoding: Encoding,
    implementation: TokenizerImpl,
}

impl Tokenizer {
    pub fn new(encoding: Encoding) -> Tokenizer {
        Tokenizer::with_impl(encoding, TokenizerImpl::default())
    }

    pub fn with_impl(encoding: Encoding, implementation: TokenizerImpl) -> Tokenizer {
        Tokenizer { encoding, implementation }
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    pub fn implementation(&self) -> TokenizerImpl {
        self.implementation
    }

    /// Loads the encoding's tables now instead of on the first count (reading
    /// them takes tens of milliseconds; building them, the first time on a
    /// machine, a second): a caller that will count soon runs this on another
    /// thread while it does other work.
    pub fn preload(&self) {
        self.count("preload");
    }
}

impl Default for Tokenizer {
    fn default() -> Self {
        Tokenizer::new(Encoding::O200kBase)
    }
}

impl TokenCounter for Tokenizer {
    fn count(&self, text: &str) -> usize {
        match (self.implementation, self.encoding) {
            (TokenizerImpl::BpeOpenai, Encoding::O200kBase) => cached_count(tables::get(Encoding::O200kBase), 0, text),
            (TokenizerImpl::BpeOpenai, Encoding::Cl100kBase) => {
                cached_count(tables::get(Encoding::Cl100kBase), 1, text)
            }
            (TokenizerImpl::Tiktoken, Encoding::O200kBase) => {
                tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len()
            }
            (TokenizerImpl::Tiktoken, Encoding::Cl100kBase) => {
                tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len()
            }
        }
    }
}

/// Pieces longer than this are counted without the cache (they rarely repeat).
const CACHED_PIECE_MAX: usize = 48;
/// The per-thread cache is cleared when it grows past this many pieces.
const CACHE_CAPACITY: usize = 1 << 18;

thread_local! {
    /// Token counts of pre-tokenized pieces, per encoding. BPE never merges
    /// across pieces, so a text's count is the sum of its pieces' counts, and
    /// source code repeats the same identifiers, keywords and indentation
    /// endlessly: most pieces are counted once per thread.
    static PIECE_COUNTS: std::cell::RefCell<[rustc_hash::FxHashMap<Box<str>, u32>; 2]> =
        std::cell::RefCell::new([rustc_hash::FxHashMap::default(), rustc_hash::FxHashMap::default()]);
}

fn cached_count(tokenizer: &bpe_openai::Tokenizer, slot: usize, text: &str) -> usize {
    PIECE_COUNTS.with(|cell| {
        let mut caches = cell.borrow_mut();
        let cache = &mut caches[slot];
        if cache.len() > CACHE_CAPACITY {
            cache.clear();
        }
        let mut total = 0usize;
        for piece in tokenizer.split(text) {
            if piece.len() > CACHED_PIECE_MAX {
                total += tokenizer.bpe.count(piece.as_bytes());
                continue;
            }
            total += match cache.get(piece) {
                Some(&n) => n as usize,
                None => {
                    let n = tokenizer.bpe.count(piece.as_bytes());
                    cache.insert(piece.into(), n as u32);
                    n
                }
            };
        }
        total
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLES: &[&str] = &[
        "",
        "hello world",
        "fn main() {\n    println!(\"Hello, world!\");\n}\n",
        "def parse_config(path: str) -> dict:\n    \"\"\"Read the TOML file.\"\"\"\n    return tomllib.loads(open(path).read())\n",
        "    \n\n\t  trailing   spaces   \n",
        "Ünïcödé — 日本語のテキスト, emoji 🚀 and CamelCaseIdentifiers_with_snake",
        "x = 1234567890 + 0.5e-10; // numbers",
    ];

    #[test]
    fn implementations_agree_on_every_encoding() {
        for encoding in Encoding::ALL {
            let fast = Tokenizer::with_impl(encoding, TokenizerImpl::BpeOpenai);
            let reference = Tokenizer::with_impl(encoding, TokenizerImpl::Tiktoken);
            for sample in SAMPLES {
                assert_eq!(fast.count(sample), reference.count(sample), "{encoding} on {sample:?}");
            }
        }
    }

    #[test]
    fn cached_counts_equal_uncached_ones() {
        let text = "def f(x):\n    return x + 1\n".repeat(50) + &"long_identifier_".repeat(10);
        for (encoding, reference) in
            [(Encoding::O200kBase, bpe_openai::o200k_base()), (Encoding::Cl100kBase, bpe_openai::cl100k_base())]
        {
            let tok = Tokenizer::new(encoding);
            assert_eq!(tok.count(&text), reference.count(text.as_str()));
            assert_eq!(tok.count(&text), reference.count(text.as_str()), "second, cached pass");
        }
    }

    #[test]
    fn known_counts() {
        let t = Tokenizer::new(Encoding::Cl100kBase);
        assert_eq!(t.count("hello world"), 2);
        assert_eq!(t.count(""), 0);
        let t = Tokenizer::new(Encoding::O200kBase);
        assert_eq!(t.count("hello world"), 2);
    }

    #[test]
    fn encoding_names_round_trip() {
        for e in Encoding::ALL {
            assert_eq!(e.name().parse::<Encoding>().unwrap(), e);
        }
        assert!("p50k".parse::<Encoding>().unwrap_err().contains("unknown encoding"));
    }
}
