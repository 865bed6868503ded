//! The formats an assembled context is delivered in (Markdown, JSON, XML) and
//! the hard budget over the text actually delivered.
//!
//! The pipeline packs to the Markdown rendering; XML and JSON wrap the same
//! fragments in more markup. [`Pipeline::fit`] measures the text in the format
//! that goes out and, while it is over the available tokens, drops the
//! worst-scored fragment and renders again (the preamble is regenerated for
//! what is left). `rendered_tokens` is then the count of that text.

use std::fmt;
use std::str::FromStr;

use agents_core::fragment::{AssembledContext, ContextFragment};
use agents_core::tokens::TokenCounter;
use agents_pack::{DepthRenderer, Piece, PieceRole, ScoredFragment, at_depth, depth_ladder};
use serde::Serialize;

use super::components::PreambleInput;
use super::{
    Assembly, PREAMBLE_MAX_TOKENS, Pipeline, PipelineError, TraceStep, drop_worst, scored_tokens, to_fragment,
};
use agents_core::ids::stable_ulid;

/// How a context is delivered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// The preamble, then each fragment under a `## path Lx-y (type, depth d)` heading.
    #[default]
    Md,
    /// The AssembledContext as one line of JSON, with `rendered_tokens`,
    /// `is_within_budget` and `remaining_tokens`.
    Json,
    /// `<context>` with a `<preamble>` and one `<fragment>` per fragment.
    Xml,
}

impl OutputFormat {
    pub const ALL: [OutputFormat; 3] = [OutputFormat::Md, OutputFormat::Json, OutputFormat::Xml];

    pub fn as_str(self) -> &'static str {
        match self {
            OutputFormat::Md => "md",
            OutputFormat::Json => "json",
            OutputFormat::Xml => "xml",
        }
    }
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A format name no [`OutputFormat`] has.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown format `{0}`; known: md, json, xml")]
pub struct UnknownFormat(pub String);

impl FromStr for OutputFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<OutputFormat, UnknownFormat> {
        match s.to_ascii_lowercase().as_str() {
            "md" | "markdown" => Ok(OutputFormat::Md),
            "json" => Ok(OutputFormat::Json),
            "xml" => Ok(OutputFormat::Xml),
            _ => Err(UnknownFormat(s.to_owned())),
        }
    }
}

/// A ULID every character of which is its own token (digits and capitals
/// alternate), so no ULID takes more; it starts with a digit, as every ULID
/// does, so the text around it splits as around a real one.
const WIDEST_ULID: &str = "0A0A0A0A0A0A0A0A0A0A0A0A0A";

/// A stated count as wide in tokens as any count below a million.
const WIDEST_COUNT: usize = 999_999;

/// Most spaces [`Pipeline::fit`] puts before JSON's closing brace to find a
/// count the text can state: a text stating `N` can count `N + 1` tokens
/// and the same text stating `N + 1` count `N` (a longer `rendered_tokens`,
/// a shorter `remaining_tokens`: `1129` and `1000` against `1130` and
/// `999`); the spaces, insignificant in JSON, shift where the text splits.
const MAX_JSON_PADDING: usize = 4;

/// [`Assembly::measure`]: the bound on the delivered text's tokens, and the
/// text with its count when the bound is that count.
pub(super) struct Measured {
    pub bound: usize,
    pub text: Option<(String, usize)>,
}

/// What `--format json` delivers: the spec's AssembledContext and the count of
/// the delivered text itself.
#[derive(Serialize)]
struct JsonPayload<'a> {
    #[serde(flatten)]
    context: &'a AssembledContext,
    rendered_tokens: usize,
    is_within_budget: bool,
    remaining_tokens: u64,
}

impl Assembly {
    /// The context as `format` delivers it.
    pub fn render(&self, format: OutputFormat) -> String {
        match format {
            OutputFormat::Md => self.to_markdown(),
            OutputFormat::Json => self.to_json(),
            OutputFormat::Xml => self.to_xml(),
        }
    }

    /// Whether the delivered text and the fragments fit the available tokens.
    pub fn is_within_budget(&self) -> bool {
        self.context.is_within_budget() && self.rendered_tokens as u64 <= self.context.budget().available_tokens()
    }

    /// Tokens of the budget the delivered text leaves.
    pub fn remaining_tokens(&self) -> u64 {
        self.context.budget().available_tokens().saturating_sub(self.rendered_tokens as u64)
    }

    /// The context as one line of JSON (see [`OutputFormat::Json`]).
    pub fn to_json(&self) -> String {
        self.json_stating(self.rendered_tokens, self.is_within_budget(), self.remaining_tokens())
    }

    fn json_stating(&self, rendered_tokens: usize, is_within_budget: bool, remaining_tokens: u64) -> String {
        self.json_padded(rendered_tokens, is_within_budget, remaining_tokens, self.json_padding)
    }

    /// The JSON with `padding` spaces before its closing brace.
    fn json_padded(
        &self,
        rendered_tokens: usize,
        is_within_budget: bool,
        remaining_tokens: u64,
        padding: usize,
    ) -> String {
        let delivered = delivered_context(&self.context);
        let context = delivered.as_ref().unwrap_or(&self.context);
        let payload = JsonPayload { context, rendered_tokens, is_within_budget, remaining_tokens };
        let mut text = serde_json::to_string(&payload).unwrap_or_default();
        if padding > 0 && text.ends_with('}') {
            text.insert_str(text.len() - 1, &" ".repeat(padding));
        }
        text.push('\n');
        text
    }

    /// At least the tokens of the text `format` delivers, and the same on every
    /// run: JSON's stated counts are counted as the widest, and the ids of a
    /// plan made for the run (a new ULID each time) and of its payload as the
    /// ULID that takes the most tokens. Which fragments fit therefore never
    /// depends on how a random id happens to split into tokens. When the text
    /// holds neither (Markdown or XML of a named plan, `adhoc` for a one-off
    /// query, whose payload id derives from it and the content alone), the
    /// bound is the text's own count and the text comes with it.
    pub(super) fn measure(&self, format: OutputFormat, tokenizer: &dyn TokenCounter) -> Measured {
        let plan = self.context.plan_id();
        let random_plan = agents_core::ids::check_ulid("plan", "plan_id", plan).is_ok();
        if format != OutputFormat::Json && !random_plan {
            let text = self.render(format);
            let tokens = tokenizer.count(&text);
            return Measured { bound: tokens, text: Some((text, tokens)) };
        }
        let mut text = match format {
            OutputFormat::Json => self.json_padded(WIDEST_COUNT, false, WIDEST_COUNT as u64, MAX_JSON_PADDING),
            _ => self.render(format),
        };
        if random_plan {
            text = text.replace(plan, WIDEST_ULID);
            if !self.context.payload_id().is_empty() {
                text = text.replace(self.context.payload_id(), WIDEST_ULID);
            }
        }
        Measured { bound: tokenizer.count(&text), text: None }
    }

    /// The context as XML: a `<preamble>`, then one `<fragment>` per fragment
    /// with its content as text.
    pub fn to_xml(&self) -> String {
        let context = &self.context;
        let mut out = format!(
            "<context plan_id=\"{}\" total_tokens=\"{}\" available_tokens=\"{}\" context_hash=\"{}\" strategies=\"{}\">\n",
            escape(context.plan_id()),
            context.total_tokens(),
            context.budget().available_tokens(),
            context.context_hash(),
            escape(&context.strategies_used().join(","))
        );
        if let Some(preamble) = context.preamble() {
            out.push_str(&format!("<preamble>{}</preamble>\n", escape(preamble.trim_end())));
        }
        for (s, f) in self.pieces.iter().zip(context.fragments()) {
            out.push_str(&xml_fragment(&s.piece, f));
        }
        out.push_str("</context>\n");
        out
    }
}

/// Metadata the chunk ranker reads and writes (its final `score`, a copy of
/// `relevance_score`; the strategy's `evidence`; `name_match`; the file's
/// `standing`; the query's `terms` met, how many of them a short passage
/// of the node and of its file holds, `near` and `file_near`, and how many
/// a caller adds, `caller`; the names of the answer's functions it calls,
/// `callees`; whether the function a look-up names calls it,
/// `called_by_named`; the `requested_depth`): the run's
/// report (`--json`) shows them, the context delivered as JSON leaves them out.
/// They were 7% of the delivered JSON's characters; without them the JSON
/// carries 5% more code at 8,000 tokens (docs/benchmarks.md).
pub const RANKER_METADATA: [&str; 11] = [
    "called_by_named",
    "callees",
    "caller",
    "evidence",
    "file_near",
    "name_match",
    "near",
    "requested_depth",
    "score",
    "standing",
    "terms",
];

/// `fragment` as the JSON format delivers it: without [`RANKER_METADATA`].
fn delivered_fragment(fragment: &ContextFragment) -> Result<ContextFragment, PipelineError> {
    let metadata = fragment
        .metadata()
        .iter()
        .filter(|(key, _)| !RANKER_METADATA.contains(&key.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(fragment.clone().into_builder().metadata(metadata).build()?)
}

/// `context` as the JSON format delivers it ([`delivered_fragment`]); `None`
/// when a fragment could not be rebuilt (then the context goes as it is).
fn delivered_context(context: &AssembledContext) -> Option<AssembledContext> {
    let fragments = context.fragments().iter().map(delivered_fragment).collect::<Result<Vec<_>, _>>().ok()?;
    let mut builder = AssembledContext::builder(context.plan_id(), *context.budget())
        .payload_id(context.payload_id())
        .fragments(fragments)
        .strategies_used(context.strategies_used().iter().cloned())
        .assembled_at(context.assembled_at());
    if let Some(preamble) = context.preamble() {
        builder = builder.preamble(preamble);
    }
    builder.build().ok()
}

/// One `<fragment>` element.
fn xml_fragment(p: &Piece, f: &ContextFragment) -> String {
    format!(
        "<fragment uko_node=\"{}\" path=\"{}\" source_range=\"{}\" type=\"{}\" depth=\"{}\" tokens=\"{}\" relevance=\"{:.4}\" tier=\"{}\" strategy=\"{}\">{}</fragment>\n",
        escape(&p.uko_node),
        escape(&p.path),
        escape(&p.source_range),
        escape(&p.kind),
        p.depth,
        f.token_count(),
        f.relevance_score(),
        f.tier(),
        escape(p.strategy()),
        escape(&p.content)
    )
}

/// Tokens one fragment adds to the text in `format` (its element, and for
/// JSON its `provenance_map` entry too).
fn element_tokens(
    format: OutputFormat,
    s: &ScoredFragment,
    resource_id: &str,
    tokenizer: &dyn TokenCounter,
) -> Result<usize, PipelineError> {
    Ok(match format {
        OutputFormat::Md => tokenizer.count(&s.piece.rendered()),
        OutputFormat::Xml => {
            tokenizer.count(&xml_fragment(&s.piece, &to_fragment(&s.piece, s.score, resource_id, tokenizer)?))
        }
        OutputFormat::Json => {
            let f = delivered_fragment(&to_fragment(&s.piece, s.score, resource_id, tokenizer)?)?;
            let element = serde_json::to_string(&f).unwrap_or_default();
            let provenance = serde_json::to_string(f.provenance()).unwrap_or_default();
            // The element, its map entry `"id":{...}` and two commas.
            tokenizer.count(&element) + tokenizer.count(&format!("\"{}\":{provenance}", f.fragment_id())) + 2
        }
    })
}

/// XML text or attribute value: the five markup characters escaped, and the
/// characters XML 1.0 cannot hold at all (control characters other than tab
/// and line breaks) replaced by U+FFFD.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A `budget_used` as wide in tokens as any: seventeen significant digits,
/// the most the shortest form of an `f64` below 1 takes.
const WIDEST_SHARE: &str = "0.99999999999999989";

/// Tokens the frame [`Pipeline::repack`] measures (the text without a
/// fragment) lacks against the packed text's: the frame states
/// `total_tokens` 0 (JSON and XML) and `budget_used` 0.0 (JSON), where the
/// packed text states up to `available` and a share with all its digits.
fn frame_widening(format: OutputFormat, available: usize, tokenizer: &dyn TokenCounter) -> usize {
    let wider = |widest: &str, stated: &str| tokenizer.count(widest).saturating_sub(tokenizer.count(stated));
    let total = wider(&available.to_string(), "0");
    match format {
        OutputFormat::Md => 0,
        OutputFormat::Xml => total,
        OutputFormat::Json => total + wider(WIDEST_SHARE, "0.0"),
    }
}

/// Times [`Pipeline::fit`] packs again, each holding back more (the last
/// overshoot, or twice what it held back before), before it drops fragments.
const REPACK_ROUNDS: usize = 6;

impl Pipeline {
    /// Keeps the hard budget in `format`: renders the context as it will be
    /// delivered, counts that text, and while it is over the available tokens
    /// drops the worst-scored fragment (the preamble is regenerated for what is
    /// left). Sets `rendered_tokens` to the count of the returned text, which is
    /// that text.
    pub fn fit(
        &self,
        assembly: &mut Assembly,
        format: OutputFormat,
        query: &str,
        renderer: &dyn DepthRenderer,
        tokenizer: &dyn TokenCounter,
    ) -> Result<String, PipelineError> {
        let started = std::time::Instant::now();
        let available = assembly.context.budget().available_tokens() as usize;
        let before = assembly.pieces.len();
        let resource_id =
            assembly.context.fragments().first().map(|f| f.provenance().resource_id().to_owned()).unwrap_or_default();
        // Over the budget: pack again for this format, best first, each
        // fragment at the deepest depth whose markup still fits.
        let mut downgraded = 0;
        let mut measured = assembly.measure(format, tokenizer);
        if !assembly.pieces.is_empty() && measured.bound > available {
            // What a fragment costs beside its element (its provenance entry,
            // a preamble written for fewer fragments) shows only in the whole
            // text: when the repacked text is still over, pack again with that
            // much less room, rather than drop a fragment that a shallower
            // depth would have fitted.
            let pieces = assembly.pieces.clone();
            let mut reserve = 0;
            for _ in 0..REPACK_ROUNDS {
                assembly.pieces = pieces.clone();
                downgraded = self.repack(assembly, format, query, renderer, tokenizer, reserve)?;
                measured = assembly.measure(format, tokenizer);
                if measured.bound <= available {
                    break;
                }
                // Held back: the overshoot, doubling when that was not
                // enough (a fragment's cost moves in steps of its depths).
                reserve = (reserve + measured.bound - available).max(2 * reserve);
            }
        }
        // Then drop the worst fragment while the text can be over.
        while !assembly.pieces.is_empty() && measured.bound > available {
            drop_worst(&mut assembly.pieces);
            self.rebuild(assembly, query, &resource_id, tokenizer)?;
            measured = assembly.measure(format, tokenizer);
        }
        // JSON states its own count: render until the count it states is the
        // count of the text (a few rounds at most); when no count is, with a
        // space more before its closing brace ([`MAX_JSON_PADDING`]).
        let (mut text, mut tokens) = measured.text.unwrap_or_else(|| {
            let text = assembly.render(format);
            let tokens = tokenizer.count(&text);
            (text, tokens)
        });
        loop {
            for _ in 0..4 {
                if tokens == assembly.rendered_tokens {
                    break;
                }
                assembly.rendered_tokens = tokens;
                text = assembly.render(format);
                tokens = tokenizer.count(&text);
            }
            if tokens == assembly.rendered_tokens
                || format != OutputFormat::Json
                || assembly.json_padding == MAX_JSON_PADDING
            {
                break;
            }
            assembly.json_padding += 1;
            text = assembly.render(format);
            tokens = tokenizer.count(&text);
        }
        assembly.rendered_tokens = tokens;
        let dropped = before - assembly.pieces.len();
        if dropped > 0 || downgraded > 0 {
            assembly.omitted += dropped;
            assembly.trace.push(TraceStep {
                component: "format",
                implementation: format.as_str().to_owned(),
                input: before,
                output: assembly.pieces.len(),
                tokens: assembly.rendered_tokens,
                micros: started.elapsed().as_micros() as u64,
                detail: Some(format!("{dropped} dropped, {downgraded} downgraded to fit the budget as {format}")),
            });
        }
        Ok(text)
    }

    /// Packs the assembly's pieces again into what the format leaves of the
    /// budget: best score first, each at the deepest depth of its ladder (its
    /// depth, then 4, 2, 0) whose element fits, the rest left out; the order
    /// stays the orderer's; `reserve` tokens are held back. Returns how
    /// many pieces went shallower.
    fn repack(
        &self,
        assembly: &mut Assembly,
        format: OutputFormat,
        query: &str,
        renderer: &dyn DepthRenderer,
        tokenizer: &dyn TokenCounter,
        reserve: usize,
    ) -> Result<usize, PipelineError> {
        let available = assembly.context.budget().available_tokens() as usize;
        let resource_id =
            assembly.context.fragments().first().map(|f| f.provenance().resource_id().to_owned()).unwrap_or_default();
        let resource_id = resource_id.as_str();
        let pieces = std::mem::take(&mut assembly.pieces);
        // The frame: the format's text without a fragment, with the preamble
        // written for all of them (one written for fewer can be longer: it
        // names other files; `fit` holds back what it grew and packs again).
        let preamble = assembly.context.preamble().map(str::to_owned);
        let mut frame = AssembledContext::builder(assembly.context.plan_id().to_owned(), *assembly.context.budget())
            .payload_id(assembly.context.payload_id().to_owned())
            .strategies_used(assembly.context.strategies_used().to_vec());
        if let Some(p) = &preamble {
            frame = frame.preamble(p.clone());
        }
        let full = std::mem::replace(&mut assembly.context, frame.build()?);
        let frame_tokens = assembly.measure(format, tokenizer).bound + frame_widening(format, available, tokenizer);
        assembly.context = full;
        let mut left = available.saturating_sub(frame_tokens).saturating_sub(reserve);
        let mut best: Vec<usize> = (0..pieces.len()).collect();
        // A parent's skeleton first (it has its own share of the budget), then
        // the retrieved pieces, best first.
        let skeleton = |i: usize| pieces[i].piece.role == PieceRole::Skeleton;
        best.sort_by(|&a, &b| {
            skeleton(b).cmp(&skeleton(a)).then(pieces[b].score.total_cmp(&pieces[a].score)).then(a.cmp(&b))
        });
        let mut kept: Vec<Option<ScoredFragment>> = vec![None; pieces.len()];
        let mut downgraded = 0;
        for i in best {
            let s = &pieces[i];
            for depth in depth_ladder(s.piece.depth) {
                let Some(piece) = at_depth(&s.piece, depth, renderer, tokenizer) else { continue };
                let candidate = ScoredFragment { piece, ..s.clone() };
                let cost = element_tokens(format, &candidate, resource_id, tokenizer)?;
                if cost <= left {
                    left -= cost;
                    downgraded += usize::from(depth < s.piece.depth);
                    kept[i] = Some(candidate);
                    break;
                }
            }
        }
        assembly.pieces = kept.into_iter().flatten().collect();
        self.rebuild(assembly, query, resource_id, tokenizer)?;
        Ok(downgraded)
    }

    /// The context again for the pieces left: preamble, fragments, ids.
    fn rebuild(
        &self,
        assembly: &mut Assembly,
        query: &str,
        resource_id: &str,
        tokenizer: &dyn TokenCounter,
    ) -> Result<(), PipelineError> {
        let old = &assembly.context;
        let available = old.budget().available_tokens() as usize;
        let used = scored_tokens(&assembly.pieces);
        let max_tokens = PREAMBLE_MAX_TOKENS.min(available.saturating_sub(used));
        let preamble = if old.preamble().is_some() {
            self.preamble
                .1
                .generate(
                    &PreambleInput {
                        query,
                        fragments: &assembly.pieces,
                        strategies_used: old.strategies_used(),
                        budget_used: used,
                        budget: available,
                        max_tokens,
                    },
                    tokenizer,
                )
                .filter(|p| tokenizer.count(p) <= max_tokens)
        } else {
            None
        };
        let fragments = assembly
            .pieces
            .iter()
            .map(|s| to_fragment(&s.piece, s.score, resource_id, tokenizer))
            .collect::<Result<Vec<_>, _>>()?;
        let payload_id = stable_ulid(&[old.plan_id(), &agents_core::fragment::context_hash(&fragments)]);
        let mut builder = AssembledContext::builder(old.plan_id().to_owned(), *old.budget())
            .payload_id(payload_id)
            .fragments(fragments)
            .strategies_used(old.strategies_used().to_vec());
        if let Some(p) = preamble {
            builder = builder.preamble(p);
        }
        assembly.context = builder.build()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::PipelineBuilder;
    use agents_core::config::PipelineConfig;
    use agents_core::fragment::{ContextBudget, ContextFragment, FragmentProvenance};
    use agents_core::ids::new_ulid;
    use agents_core::tokens::{Encoding, Tokenizer};
    use agents_pack::InlineRenderer;
    use proptest::prelude::*;

    fn tok() -> Tokenizer {
        Tokenizer::new(Encoding::O200kBase)
    }

    fn pipeline() -> Pipeline {
        PipelineBuilder::new().build(&PipelineConfig::default(), super::super::PipelineSettings::default()).unwrap()
    }

    fn fragments(bodies: &[(String, usize, f64, u8)]) -> Vec<ContextFragment> {
        let resource = new_ulid();
        bodies
            .iter()
            .enumerate()
            .map(|(i, (line, lines, relevance, depth))| {
                let content = format!("{line}\n").repeat(*lines);
                let provenance = FragmentProvenance::new(&resource, format!("src/f{}.rs", i % 5)).unwrap();
                ContextFragment::builder(format!("uko://r/src/f{}.rs#s{i}", i % 5), content, 0, provenance)
                    .detail_depth(*depth)
                    .relevance_score(*relevance)
                    .build()
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn the_json_delivered_leaves_the_rankers_metadata_to_the_report() {
        let bodies: Vec<(String, usize, f64, u8)> =
            (0..6).map(|i| (format!("fn step_{i}() {{ work({i}); }}"), 3, 0.5 + i as f64 / 12.0, 9)).collect();
        let out =
            pipeline().assemble("p", &fragments(&bodies), ContextBudget::new(4000, 0).unwrap(), "relevance", &tok());
        let out = out.unwrap();
        // The assembly (what `--json` reports) keeps the ranker's keys (`terms`
        // only comes with a query's words).
        let kept = out.context.fragments();
        assert!(!kept.is_empty());
        let reported = ["evidence", "name_match", "requested_depth", "score", "standing"];
        assert!(kept.iter().all(|f| reported.iter().all(|k| f.metadata().contains_key(*k))), "{kept:?}");
        let delivered: serde_json::Value = serde_json::from_str(&out.render(OutputFormat::Json)).unwrap();
        let fragments = delivered["fragments"].as_array().unwrap();
        assert_eq!(fragments.len(), kept.len());
        for (f, k) in fragments.iter().zip(kept) {
            let metadata = f["metadata"].as_object().unwrap();
            assert!(RANKER_METADATA.iter().all(|key| !metadata.contains_key(*key)), "{f}");
            assert_eq!(metadata["kind"], k.metadata()["kind"].as_str());
            assert_eq!(f["relevance_score"].as_f64(), Some(k.relevance_score()));
            assert_eq!(f["content"].as_str(), Some(k.content()));
        }
        // The rest of the payload is the assembly's own.
        assert_eq!(delivered["context_hash"].as_str(), Some(out.context.context_hash()));
        assert_eq!(delivered["payload_id"].as_str(), Some(out.context.payload_id()));
        assert_eq!(delivered["assembled_at"], serde_json::to_value(&out.context).unwrap()["assembled_at"]);
    }

    #[test]
    fn xml_and_json_that_overflow_the_budget_lose_their_worst_fragments() {
        // Many short fragments: the Markdown fits, the XML and JSON markup
        // around each fragment does not.
        let bodies: Vec<(String, usize, f64, u8)> =
            (0..40).map(|i| (format!("let value_{i} = compute(<{i}> & \"x\");"), 1, i as f64 / 40.0, 9)).collect();
        let fragments = fragments(&bodies);
        let budget = ContextBudget::new(1000, 0).unwrap();
        let markdown = pipeline().assemble("p", &fragments, budget, "relevance", &tok()).unwrap();
        for format in [OutputFormat::Xml, OutputFormat::Json] {
            let mut out = pipeline().assemble("p", &fragments, budget, "relevance", &tok()).unwrap();
            let unfitted = tok().count(&out.render(format));
            assert!(unfitted > 1000, "{format}: the test needs markup that overflows ({unfitted})");
            let text = pipeline().fit(&mut out, format, "", &InlineRenderer, &tok()).unwrap();
            assert!(tok().count(&text) <= 1000, "{format}");
            assert_eq!(out.rendered_tokens, tok().count(&text), "{format}");
            assert!(out.pieces.len() < markdown.pieces.len() && !out.pieces.is_empty(), "{format}");
            // The best fragments stay: what is left is the top of the ranking.
            let worst_kept = out.pieces.iter().map(|s| s.score).fold(f64::MAX, f64::min);
            let dropped =
                markdown.pieces.iter().filter(|s| !out.pieces.iter().any(|k| k.piece.uko_node == s.piece.uko_node));
            assert!(dropped.into_iter().all(|s| s.score <= worst_kept), "{format}");
            assert_eq!(out.context.fragments().len(), out.pieces.len());
            assert!(out.is_within_budget());
            assert!(out.trace.iter().any(|s| s.component == "format"));
        }
    }

    #[test]
    fn a_fragments_token_count_is_the_count_of_its_content_and_headings_are_in_rendered_tokens() {
        let bodies: Vec<(String, usize, f64, u8)> =
            (0..12).map(|i| (format!("fn step_{i}() {{ work({i}); }}"), 3, i as f64 / 12.0, 9)).collect();
        let out = pipeline()
            .assemble("p", &fragments(&bodies), ContextBudget::new(4000, 0).unwrap(), "relevance", &tok())
            .unwrap();
        assert!(!out.context.fragments().is_empty());
        for f in out.context.fragments() {
            assert_eq!(f.token_count() as usize, tok().count(f.content()), "{}", f.uko_node());
        }
        // The Markdown is the preamble and, per fragment, heading, content
        // and a blank line: more than the contents alone.
        let contents: usize = out.context.fragments().iter().map(|f| f.token_count() as usize).sum();
        assert_eq!(out.context.total_tokens() as usize, contents);
        assert!(out.rendered_tokens > contents);
        assert_eq!(out.rendered_tokens, tok().count(&out.to_markdown()));
    }

    /// Where the budget left crosses a power of ten (`999` against `1000`
    /// tokens, a token fewer for one more rendered), JSON still states the
    /// exact count of its own text.
    #[test]
    fn json_states_its_own_count_where_the_remainder_changes_width() {
        let bodies: Vec<(String, usize, f64, u8)> =
            (0..6).map(|i| (format!("fn step_{i}(x: u32) -> u32 {{ x + {i} }}"), 2, i as f64 / 6.0, 9)).collect();
        let fragments = fragments(&bodies);
        let fit = |available: u64| {
            let budget = ContextBudget::new(available, 0).unwrap();
            let mut out = pipeline().assemble("p", &fragments, budget, "relevance", &tok()).unwrap();
            let text = pipeline().fit(&mut out, OutputFormat::Json, "q", &InlineRenderer, &tok()).unwrap();
            (out, text)
        };
        let rendered = fit(100_000).0.rendered_tokens as u64;
        for width in [10, 100, 1000, 10_000] {
            for available in rendered + width - 4..rendered + width + 4 {
                let (out, text) = fit(available);
                assert_eq!(out.rendered_tokens, tok().count(&text), "at {available}");
                assert_eq!(text, out.render(OutputFormat::Json), "at {available}");
                let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(v["rendered_tokens"].as_u64(), Some(out.rendered_tokens as u64));
                assert!(out.rendered_tokens as u64 <= available);
            }
        }
    }

    #[test]
    fn which_fragments_fit_does_not_depend_on_the_random_plan_id() {
        // A new plan id each run, and with it a new payload id: how they split
        // into tokens must not decide which fragment is the last to fit.
        let bodies: Vec<(String, usize, f64, u8)> =
            (0..30).map(|i| (format!("fn step_{i}(x: u32) -> u32 {{ x + {i} }}"), 2, i as f64 / 30.0, 9)).collect();
        let fragments = fragments(&bodies);
        for available in (700..1300).step_by(37) {
            let budget = ContextBudget::new(available, 0).unwrap();
            for format in [OutputFormat::Json, OutputFormat::Xml] {
                let hashes: std::collections::BTreeSet<String> = (0..12)
                    .map(|_| {
                        let mut out =
                            pipeline().assemble(&new_ulid(), &fragments, budget, "relevance", &tok()).unwrap();
                        let text = pipeline().fit(&mut out, format, "q", &InlineRenderer, &tok()).unwrap();
                        assert!(tok().count(&text) as u64 <= available);
                        out.context.context_hash().to_owned()
                    })
                    .collect();
                assert_eq!(hashes.len(), 1, "{format} at {available}: {hashes:?}");
            }
        }
    }

    #[test]
    fn xml_escapes_markup_and_replaces_what_xml_cannot_hold() {
        assert_eq!(escape("a<b>&\"c'\u{1}\td\n"), "a&lt;b&gt;&amp;&quot;c&apos;\u{FFFD}\td\n");
    }

    #[test]
    fn formats_parse_by_name() {
        assert_eq!("md".parse::<OutputFormat>(), Ok(OutputFormat::Md));
        assert_eq!("XML".parse::<OutputFormat>(), Ok(OutputFormat::Xml));
        assert_eq!("json".parse::<OutputFormat>(), Ok(OutputFormat::Json));
        assert!("yaml".parse::<OutputFormat>().unwrap_err().to_string().contains("md, json, xml"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// In every format the delivered text, counted with the real
        /// tokenizer, stays within the budget; `rendered_tokens` is its count
        /// (the JSON states it too), and every fragment's `token_count` is the
        /// count of its content.
        #[test]
        fn every_format_keeps_the_budget(
            bodies in prop::collection::vec(("[a-z<>&\" ]{0,40}", 0usize..40, 0.0f64..1.0, 0u8..=9), 0..30),
            available in 500u64..3000,
        ) {
            let fragments = fragments(&bodies);
            let budget = ContextBudget::new(available, 0).unwrap();
            for format in OutputFormat::ALL {
                let mut out = pipeline().assemble("p", &fragments, budget, "relevance", &tok()).unwrap();
                let text = pipeline().fit(&mut out, format, "query", &InlineRenderer, &tok()).unwrap();
                let tokens = tok().count(&text);
                prop_assert!(tokens as u64 <= available, "{}: {} > {}", format, tokens, available);
                prop_assert_eq!(out.rendered_tokens, tokens);
                prop_assert_eq!(&text, &out.render(format));
                prop_assert!(out.is_within_budget());
                for f in out.context.fragments() {
                    prop_assert_eq!(f.token_count() as usize, tok().count(f.content()));
                }
                if format == OutputFormat::Json {
                    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                    prop_assert_eq!(v["rendered_tokens"].as_u64(), Some(tokens as u64));
                    prop_assert_eq!(v["is_within_budget"].as_bool(), Some(true));
                }
            }
        }
    }
}
