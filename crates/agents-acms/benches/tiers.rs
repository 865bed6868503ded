//! Tier read latency: `ContextTierService::get` of a fragment held hot, warm
//! or cold, through the real backends (hot in memory, warm in a SQLite file in
//! WAL mode, cold as zstd files), each read recording its access.
//!
//! `cargo bench -p agents-acms --bench tiers` prints mean, median and p99 per
//! tier against the targets (hot < 1 µs, warm < 200 µs, cold < 5 ms). A warm
//! read first misses hot; a cold read misses hot and warm first, as in use.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agents_acms::tiers::{ContextTierService, TierSettings};
use agents_core::fragment::{ContextFragment, ContextTier, FragmentProvenance};
use agents_core::tier::TieredFragment;
use agents_core::tokens::{TokenCounter, Tokenizer};
use agents_store::SqliteStore;

/// Fragments per tier: a realistic population to look up in.
const POPULATION: usize = 200;

fn fragment(tier: ContextTier, i: usize, tokenizer: &Tokenizer) -> TieredFragment {
    let content = format!(
        "def handler_{i}(request):\n    \"\"\"Handle request {i}: validate, charge, and send the receipt.\"\"\"\n{}",
        "    step = validate(request)\n    charge(step)\n".repeat(8)
    );
    let provenance = FragmentProvenance::new("01HZY3N6A8Q4W0R2T5V7X9B1CD", format!("src/handler_{i}.py")).unwrap();
    let tokens = tokenizer.count(&content) as u64;
    let f = ContextFragment::builder(format!("uko://bench/{i}"), content, tokens, provenance)
        .tier(tier)
        .detail_depth(9)
        .build()
        .unwrap();
    TieredFragment::new(f, "bench").unwrap()
}

fn measure(service: &ContextTierService, ids: &[String], rounds: usize) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let id = &ids[round % ids.len()];
        let start = Instant::now();
        let found = service.get(id).unwrap();
        samples.push(start.elapsed());
        assert!(found.is_some());
    }
    samples.sort();
    samples
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = Tokenizer::default();
    let store = Arc::new(SqliteStore::open(&dir.path().join("agents.db")).unwrap());
    let settings = TierSettings {
        hot_max_tokens: 1_000_000,
        warm_max_entries: 10_000,
        warm_retention_hours: 24,
        cold_max_entries: 10_000,
        cold_retention_days: 90,
    };
    let service = ContextTierService::open(&dir.path().join("tiers"), store, settings, Arc::new(tokenizer)).unwrap();
    let mut ids = std::collections::BTreeMap::new();
    for tier in ContextTier::ALL {
        let mut tier_ids = Vec::new();
        for i in 0..POPULATION {
            let f = fragment(tier, i, &tokenizer);
            tier_ids.push(f.fragment_id().to_owned());
            service.store(f).unwrap();
        }
        ids.insert(tier, tier_ids);
    }
    let tokens =
        service.get_scoped_view(&["bench".to_owned()]).unwrap().tier(ContextTier::Hot)[0].fragment().token_count();
    println!("{POPULATION} fragments of {tokens} tokens per tier; get() records the access");
    println!("{:<6}{:>8}{:>12}{:>12}{:>12}{:>10}", "tier", "reads", "mean µs", "median µs", "p99 µs", "target");
    for (tier, rounds, target) in
        [(ContextTier::Hot, 200_000, 1.0), (ContextTier::Warm, 5_000, 200.0), (ContextTier::Cold, 500, 5_000.0)]
    {
        let samples = measure(&service, &ids[&tier], rounds);
        let mean = samples.iter().map(|d| micros(*d)).sum::<f64>() / samples.len() as f64;
        let median = micros(samples[samples.len() / 2]);
        let p99 = micros(samples[samples.len() * 99 / 100]);
        let verdict = if median < target { "ok" } else { "OVER" };
        println!(
            "{:<6}{rounds:>8}{mean:>12.2}{median:>12.2}{p99:>12.2}{:>10}",
            tier.as_str(),
            format!("<{target} {verdict}")
        );
    }
}
