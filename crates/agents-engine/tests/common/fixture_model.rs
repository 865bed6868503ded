//! A synthetic embedding model for end-to-end tests, written by hand in the
//! model2vec layout that `StaticEmbedder::load` reads: `config.json`,
//! `tokenizer.json` (BertNormalizer + BertPreTokenizer + WordPiece) and
//! `model.safetensors` (one F32 tensor `embeddings`, `[vocab, dim]`).
//!
//! Every word of the given texts is in the vocabulary. Words map to
//! *concepts*: each synonym group is one concept, every other word a concept
//! of its own, and each concept is its own axis (a one-hot unit vector). A
//! text's embedding is then the normalised count of its concepts, so the
//! cosine of two texts is the overlap of their concept counts and a ranking
//! can be worked out by hand: a query of one word of a synonym group scores
//! only the texts holding some word of that group, whichever word it is.
//! Words outside the vocabulary (punctuation included) become `[UNK]`, which
//! the model skips.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::json;

const SPECIAL: [&str; 4] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"];

/// What was written: the vocabulary (specials first) and the vector length.
pub struct FixtureModel {
    pub vocab: Vec<String>,
    pub dim: usize,
}

/// The words the model knows in `text`, as BERT's pre-tokenizer sees them
/// after lowercasing: runs of ASCII letters and digits.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_ascii_lowercase).collect()
}

/// Writes the model into `dir` (created if missing). The vocabulary holds every
/// word of `texts` and of `synonyms`; the words of each `synonyms` group share
/// one vector.
pub fn write(dir: &Path, texts: &[&str], synonyms: &[&[&str]]) -> FixtureModel {
    std::fs::create_dir_all(dir).unwrap();
    let mut known: BTreeSet<String> = texts.iter().flat_map(|t| words(t)).collect();
    for group in synonyms {
        known.extend(group.iter().map(|w| w.to_ascii_lowercase()));
    }
    let vocab: Vec<String> = SPECIAL.iter().map(|s| (*s).to_owned()).chain(known).collect();

    // Concepts: one per synonym group, then one per remaining word, in vocabulary order.
    let mut concept_of: BTreeMap<String, usize> = BTreeMap::new();
    for (i, group) in synonyms.iter().enumerate() {
        for word in *group {
            let previous = concept_of.insert(word.to_ascii_lowercase(), i);
            assert!(previous.is_none(), "{word} is in two synonym groups");
        }
    }
    let mut concepts = synonyms.len();
    for word in &vocab[SPECIAL.len()..] {
        concept_of.entry(word.clone()).or_insert_with(|| {
            concepts += 1;
            concepts - 1
        });
    }
    let dim = concepts;

    // The special tokens' rows stay zero: they never count towards a text.
    let mut table = vec![0.0_f32; vocab.len() * dim];
    for (row, word) in vocab.iter().enumerate().skip(SPECIAL.len()) {
        table[row * dim + concept_of[word]] = 1.0;
    }
    std::fs::write(dir.join("model.safetensors"), safetensors(&table, vocab.len(), dim)).unwrap();

    let ids: serde_json::Map<String, serde_json::Value> =
        vocab.iter().enumerate().map(|(id, word)| (word.clone(), json!(id))).collect();
    let added: Vec<serde_json::Value> = SPECIAL
        .iter()
        .enumerate()
        .map(|(id, content)| {
            json!({
                "id": id, "content": content, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": true
            })
        })
        .collect();
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {
            "type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
            "strip_accents": null, "lowercase": true
        },
        "pre_tokenizer": { "type": "BertPreTokenizer" },
        "post_processor": null,
        "decoder": null,
        "model": {
            "type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": ids
        }
    });
    std::fs::write(dir.join("tokenizer.json"), serde_json::to_vec_pretty(&tokenizer).unwrap()).unwrap();
    std::fs::write(dir.join("config.json"), br#"{"normalize": true}"#).unwrap();
    FixtureModel { vocab, dim }
}

/// A safetensors file holding one tensor, `embeddings`: an 8-byte little-endian
/// header length, the JSON header (space-padded to a multiple of 8), the data.
fn safetensors(table: &[f32], rows: usize, cols: usize) -> Vec<u8> {
    assert_eq!(table.len(), rows * cols);
    let bytes = table.len() * 4;
    let mut header = json!({
        "embeddings": { "dtype": "F32", "shape": [rows, cols], "data_offsets": [0, bytes] }
    })
    .to_string();
    while !header.len().is_multiple_of(8) {
        header.push(' ');
    }
    let mut out = Vec::with_capacity(8 + header.len() + bytes);
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for value in table {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out
}
