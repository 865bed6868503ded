//! The unit that travels through an assembly, [`Piece`], and how it is
//! rendered at another depth ([`DepthRenderer`]).

use agents_core::fragment::ContextTier;
use agents_core::tokens::TokenCounter;
use serde::{Deserialize, Serialize};

/// Depth fallback steps (the spec's `[9, 4, 2, 0]`).
pub const DEPTH_STEPS: [u8; 4] = [9, 4, 2, 0];
/// Smallest fragment worth including, in tokens.
pub const MIN_FRAGMENT_TOKENS: usize = 10;

/// Why a piece is in the context.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PieceRole {
    /// Retrieved for this request.
    #[default]
    Context,
    /// Inherited from the parent plan's context, compressed.
    Skeleton,
}

/// A fragment on its way through the pipeline: a UKO node rendered at one
/// depth, with what the scorer and packer need to know about it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Piece {
    pub uko_node: String,
    /// The UKO kind (`function`, `class`, `file`, ...) or `note` for inline content.
    pub kind: String,
    /// Path in the resource; empty for inline content (a decision record).
    pub path: String,
    /// `line:col-line:col`; empty for inline content.
    pub source_range: String,
    /// First line, for source order (0 for inline content).
    pub start_line: u32,
    /// The depth `content` is rendered at.
    pub depth: u8,
    /// The deepest depth asked for it.
    pub requested_depth: u8,
    pub content: String,
    /// Tokens of the rendered fragment: heading, content and separator.
    pub tokens: usize,
    /// The strategy's relevance, in [0, 1].
    pub relevance: f64,
    /// Quality of the best strategy that proposed it, in [0, 1].
    pub quality: f64,
    /// Hops from the request's focus, when a strategy walked to it.
    pub hops: Option<u32>,
    /// The strategies that proposed it, first the one whose relevance it carries.
    pub strategies: Vec<String>,
    pub note: Option<String>,
    pub tier: ContextTier,
    /// Content given as it is (inline notes, fragments handed to `assemble`): a
    /// shallower depth is derived from the text instead of re-rendered.
    pub inline: bool,
    /// For inline content taken from a stored UKO node (a file or symbol context
    /// entry): the node, rendered from the index when a shallower depth is needed.
    #[serde(default)]
    pub source_node: Option<String>,
    pub role: PieceRole,
    /// Seconds since the epoch of the last change, when known (recency).
    pub modified: Option<i64>,
    /// Standing of the piece's file among everything the strategies found (all
    /// their candidates, evidence-only ones too), in [0, 1]; 0 when unknown.
    #[serde(default)]
    pub file_standing: f64,
    /// What the scorer multiplies the piece's score by for its file's role and
    /// how the query names it, and for its size (the context pipeline's
    /// `chunk_boost` and `size_prior`); 1 when nothing is known.
    #[serde(default = "one")]
    pub boost: f64,
    /// How strongly the query names the piece's node, in [0, 1]
    /// (`agents_acms::retrieval::name_match`); 0 when unknown.
    #[serde(default)]
    pub name_match: f64,
    /// How many of the query's words the node's source text contains
    /// (`agents_search::QueryTerms`), of [`Piece::query_words`]; 0 when unknown.
    #[serde(default)]
    pub terms_met: u32,
    /// Which of the query's words those are: bit `i` for word `i` (the first
    /// 64); 0 when unknown.
    #[serde(default)]
    pub terms_mask: u64,
    /// The most of the query's words a short passage of the node's text holds
    /// (`agents_search::QueryTerms::nearest`); 0 when unknown.
    #[serde(default)]
    pub terms_near: u32,
    /// The same for the whole text of the piece's file; 0 when unknown.
    #[serde(default)]
    pub file_terms_near: u32,
    /// The most of the query's words one function calling this one (among
    /// the answer's pieces) holds that this one's text does not: the question
    /// split between a caller and the helper that does the work; 0 when
    /// unknown.
    #[serde(default)]
    pub caller_terms: u32,
    /// How many distinct names of the answer's functions and methods this
    /// one calls, for a question asking how something works or comes about
    /// (the function tying the others together is the spine of such an
    /// answer); 0 for any other query, and when unknown.
    #[serde(default)]
    pub callees: u32,
    /// A function or method that a function the look-up names outright
    /// calls (`Opts::search_paths` and the helpers it calls): the named
    /// piece's answer reads on into them. False for a question, and when
    /// unknown.
    #[serde(default)]
    pub called_by_named: bool,
    /// How many words the query has (`agents_search::QueryTerms::len`).
    #[serde(default)]
    pub query_words: u32,
    /// The query asks how something works or comes about
    /// (`agents_acms::retrieval::QueryNames::asks_how`): its answer is a path
    /// through several files, and the chunk ranker weighs the piece's file's
    /// standing less than for any other query.
    #[serde(default)]
    pub asks_how: bool,
    /// The query asks for files of this piece's file's role by name (its
    /// examples: `agents_acms::retrieval::RolesAsked`): the piece ranks as
    /// source would.
    #[serde(default)]
    pub role_asked: bool,
    /// Its strategy ranked it below the relevance floor
    /// (`context.query.min-relevance`): it fills what the budget has left
    /// once every piece above the floor is placed, and ranks after them all.
    #[serde(default)]
    pub below_floor: bool,
}

fn one() -> f64 {
    1.0
}

impl Piece {
    /// A piece of `content` for node `uko_node` at `depth`, as delivered: context
    /// role, warm tier, no scores yet, not measured.
    pub fn new(
        uko_node: impl Into<String>,
        kind: impl Into<String>,
        path: impl Into<String>,
        content: impl Into<String>,
        depth: u8,
    ) -> Piece {
        Piece {
            uko_node: uko_node.into(),
            kind: kind.into(),
            path: path.into(),
            source_range: String::new(),
            start_line: 0,
            depth,
            requested_depth: depth,
            content: content.into(),
            tokens: 0,
            relevance: 0.0,
            quality: 0.0,
            hops: None,
            strategies: Vec::new(),
            note: None,
            tier: ContextTier::Warm,
            inline: false,
            source_node: None,
            role: PieceRole::Context,
            modified: None,
            file_standing: 0.0,
            boost: 1.0,
            name_match: 0.0,
            terms_met: 0,
            terms_mask: 0,
            terms_near: 0,
            file_terms_near: 0,
            caller_terms: 0,
            callees: 0,
            called_by_named: false,
            query_words: 0,
            asks_how: false,
            role_asked: false,
            below_floor: false,
        }
    }

    /// The share of the query's words its node's text contains, in [0, 1].
    pub fn term_coverage(&self) -> f64 {
        self.share_of_query(self.terms_met)
    }

    /// The share of the query's words a short passage of its node's text
    /// holds, in [0, 1].
    pub fn near_coverage(&self) -> f64 {
        self.share_of_query(self.terms_near)
    }

    /// The share of the query's words a short passage of its file holds, in
    /// [0, 1].
    pub fn file_near_coverage(&self) -> f64 {
        self.share_of_query(self.file_terms_near)
    }

    /// The share of the query's words a caller of its node adds to its own
    /// ([`Piece::caller_terms`]), in [0, 1].
    pub fn caller_coverage(&self) -> f64 {
        self.share_of_query(self.caller_terms)
    }

    /// `words` of the query's [`Piece::query_words`], as a share in [0, 1].
    fn share_of_query(&self, words: u32) -> f64 {
        if self.query_words == 0 { 0.0 } else { f64::from(words.min(self.query_words)) / f64::from(self.query_words) }
    }

    /// The strategy whose relevance the piece carries.
    pub fn strategy(&self) -> &str {
        self.strategies.first().map(String::as_str).unwrap_or("")
    }

    /// The Markdown heading the piece is delivered under.
    pub fn heading(&self) -> String {
        if self.path.is_empty() {
            // Inline content (a decision record): named by its id and why it is here.
            return format!("## {} ({})\n", self.uko_node, self.note.as_deref().unwrap_or(&self.kind));
        }
        let from = (self.role == PieceRole::Skeleton).then_some("from the parent plan");
        heading(&self.path, &self.source_range, self.depth, from)
    }

    /// The piece as delivered: heading, content, blank line.
    pub fn rendered(&self) -> String {
        let mut out = self.heading();
        out.push_str(&self.content);
        out.push('\n');
        out
    }

    /// Recomputes `tokens` for the current content and depth.
    pub fn measure(&mut self, tokenizer: &dyn TokenCounter) {
        self.tokens = cost(tokenizer, &self.heading(), &self.content);
    }
}

/// Heading of a fragment of a file: its path and line range, then, in
/// parentheses, where it comes from when that is not the answer itself
/// (`from`) and its depth when it is not the complete source. The kind and
/// name open the content below it (`method Session.send`), so the heading
/// does not repeat them: each heading of an 8,000-token answer is then about
/// five tokens shorter, which the answer spends on source.
pub fn heading(path: &str, range: &str, depth: u8, from: Option<&str>) -> String {
    let lines = match range.split_once('-') {
        Some((start, end)) => {
            let line = |s: &str| s.split(':').next().unwrap_or(s).to_owned();
            format!("L{}-{}", line(start), line(end))
        }
        None => range.to_owned(),
    };
    let lines = if lines.is_empty() { lines } else { format!(" {lines}") };
    match (from, depth < DEPTH_STEPS[0]) {
        (Some(from), true) => format!("## {path}{lines} ({from}, depth {depth})\n"),
        (Some(from), false) => format!("## {path}{lines} ({from})\n"),
        (None, true) => format!("## {path}{lines} (depth {depth})\n"),
        (None, false) => format!("## {path}{lines}\n"),
    }
}

/// Tokens a fragment costs in the rendered output.
pub fn cost(tokenizer: &dyn TokenCounter, heading: &str, content: &str) -> usize {
    tokenizer.count(heading) + tokenizer.count(content) + 1
}

/// Renders a piece's node at another depth.
pub trait DepthRenderer: Sync {
    /// The node of `piece` at `depth`, or `None` when it cannot be rendered.
    fn render(&self, piece: &Piece, depth: u8) -> Option<String>;

    /// The node of `piece` at full source save the lines of `shown` (pieces
    /// inside it that the answer delivers whole), each run of them left as
    /// one line naming it; `None` when it cannot be rendered so (inline
    /// content, no store). What a container adds to members already packed.
    fn render_around(&self, _piece: &Piece, _shown: &[&Piece]) -> Option<String> {
        None
    }

    /// A new piece for the stored node `uri` at `depth`; `None` when this renderer
    /// has no store, the node is gone, or it lies outside what the request
    /// restricts the answer to (its paths and kinds).
    fn piece(&self, _uri: &str, _depth: u8) -> Option<Piece> {
        None
    }

    /// The length in bytes of the stored node `uri`'s source text, when known:
    /// lets a caller see that a node's full text cannot fit before rendering it.
    fn source_bytes(&self, _uri: &str) -> Option<usize> {
        None
    }

    /// Lends the stored node `uri`'s text as a reader meets it to `read`, when
    /// it is known (and says whether it was): the first paragraph of its doc
    /// comment (empty when it has none), then its source, whole. What the
    /// ranker reads for the query's words whatever depth the piece is shown
    /// at, without copying the file; the doc comment counts because in most
    /// languages (Go, Rust, JavaScript, Java) it lies outside the node's
    /// source, above it, and only its summary because a long one (a type's
    /// guide with examples) mentions everything.
    fn with_node_text(&self, _uri: &str, _read: &mut dyn FnMut(&str, &str)) -> bool {
        false
    }

    /// The node that defines what the stored node `uri` only declares, as its
    /// URI and its file's path: for a function or method prototype in a C or
    /// C++ header (no body, ending in `;`), the node of the same symbol path
    /// that has its body; for a method an interface declares without a body
    /// (Java, C#, Kotlin, TypeScript, Swift, Scala, PHP), the one method of
    /// that name, with a body, of the classes that inherit the interface.
    /// `None` when `uri` is no such declaration, there is no such definition
    /// (or, for an interface, more than one), or this renderer has no store.
    fn definition_of(&self, _uri: &str) -> Option<(String, String)> {
        None
    }

    /// The stored nodes of the file `path`, in source order; empty when this
    /// renderer has no store.
    fn file_members(&self, _path: &str) -> Vec<FileMember> {
        Vec::new()
    }

    /// Lends the whole text of the file `path` to `read` when it is known (and
    /// says whether it was).
    fn with_file_text(&self, _path: &str, _read: &mut dyn FnMut(&str)) -> bool {
        false
    }

    /// The names the stored node `uri` calls (the last segment of each call's
    /// target, resolved or not: `group.engine.addRoute(...)` calls
    /// `addRoute`), sorted and once each; empty when this renderer has no
    /// store.
    fn called_names(&self, _uri: &str) -> Vec<String> {
        Vec::new()
    }

    /// The functions and methods the stored function or method `uri` calls,
    /// as (URI, file path), in the order of their first call: each call's
    /// resolved target, else the one function or method bearing the called
    /// name in the caller's file, else the one in the repository; a name
    /// several bear elsewhere (`get`, `new`) names none. Empty for other
    /// nodes and when this renderer has no store.
    fn callees(&self, _uri: &str) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// A stored node of a file, as [`DepthRenderer::file_members`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMember {
    pub uri: String,
    /// The UKO node kind (`function`, `method`, `class`, ...).
    pub kind: String,
    /// Where its source lies in the file's text.
    pub bytes: std::ops::Range<usize>,
    /// The first paragraph of its doc comment, empty when it has none
    /// (outside `bytes` in most languages).
    pub doc: String,
}

/// Renders inline content at a shallower depth by summarising it
/// ([`crate::summary::summary_lines`]): the lines that carry structure first,
/// then the first line of each paragraph, then the rest, in source order, at
/// most 1 line at depth 0 or 1, 5 at depth 2 or 3, 20 at depth 4; deeper, the
/// whole text. Never just the opening lines of a long text.
#[derive(Clone, Copy, Debug, Default)]
pub struct InlineRenderer;

impl InlineRenderer {
    /// `content` at `depth`: whole from depth 5, summarised below.
    pub fn cut(content: &str, depth: u8) -> String {
        let keep = match depth {
            0 | 1 => 1,
            2 | 3 => 5,
            4 => 20,
            _ => return content.to_owned(),
        };
        crate::summary::summary_lines(content, keep)
    }
}

impl DepthRenderer for InlineRenderer {
    fn render(&self, piece: &Piece, depth: u8) -> Option<String> {
        if depth >= piece.depth {
            return (depth == piece.depth).then(|| piece.content.clone());
        }
        Some(InlineRenderer::cut(&piece.content, depth))
    }
}

/// A piece's first and last line, from its `source_range`, when it has one.
pub fn line_span(range: &str) -> Option<(u32, u32)> {
    let (start, end) = range.split_once('-')?;
    let line = |s: &str| s.split(':').next()?.parse::<u32>().ok();
    Some((line(start)?, line(end)?))
}

/// Whether `inner`'s source text is part of `outer`'s: `inner` is a member of
/// `outer` (by URI) whose lines lie within `outer`'s. A Rust method is a member
/// of its struct but its source sits in an `impl` block elsewhere, so the
/// struct's source does not carry it.
pub fn source_inside(inner_uri: &str, inner_range: &str, outer_uri: &str, outer_range: &str) -> bool {
    is_inside(inner_uri, outer_uri)
        && match (line_span(inner_range), line_span(outer_range)) {
            (Some((a, b)), Some((c, d))) => c <= a && b <= d,
            _ => true,
        }
}

/// Whether `member` lies inside `container` (by URI and source range) and the
/// query names it outright (a [`Piece::name_match`] of 1), by a name of its
/// own (not a constructor's, which is its class's), at least as strongly as
/// the container: "Choice type convert method" names `Choice.convert`, and
/// "Plug.BasicAuth basic_auth" names `basic_auth`, which the whole class or
/// module would otherwise deliver, and credit, as one piece.
/// Such a member is the answer and comes on its own, its container after it
/// (the packer's [`crate::GreedyPacker`] and the context pipeline's ranking).
pub fn names_member_of(member: &Piece, container: &Piece) -> bool {
    member.name_match >= 1.0
        && member.name_match >= container.name_match
        && member.uko_node != container.uko_node
        && !own_name(&member.uko_node).eq_ignore_ascii_case(own_name(&container.uko_node))
        && source_inside(&member.uko_node, &member.source_range, &container.uko_node, &container.source_range)
}

/// The last segment of a node's symbol path, without the ordinal of a name
/// defined again (`Writer` of `uko://r/log.h#log.Writer.Writer~2`).
pub fn own_name(uri: &str) -> &str {
    without_ordinal(uri.rsplit(['#', '.', ':']).next().unwrap_or(uri))
}

/// A symbol path's segment without the ordinal that tells apart a name
/// defined again in one scope (`field_validator~4` -> `field_validator`); a
/// C++ destructor's `~` (`~Cache`) is part of its name.
pub fn without_ordinal(segment: &str) -> &str {
    match segment.rsplit_once('~') {
        Some((name, n)) if !name.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => segment,
    }
}

/// The URI of the file node `uri` lies in (`uri` itself for a file).
pub fn file_uri(uri: &str) -> &str {
    uri.split_once('#').map_or(uri, |(file, _)| file)
}

/// The path in its resource of the file `uri` lies in (`src/a.py` for
/// `uko://R/src/a.py#A.b`); empty for what is not a node URI.
pub fn uri_path(uri: &str) -> &str {
    file_uri(uri).splitn(4, '/').nth(3).unwrap_or("")
}

/// Whether `uri` names a node inside the node `ancestor` (`file#A` is inside
/// `file`, `file#A.b` inside `file#A`).
pub fn is_inside(uri: &str, ancestor: &str) -> bool {
    let sep = if ancestor.contains('#') { '.' } else { '#' };
    uri.len() > ancestor.len() && uri.starts_with(ancestor) && uri[ancestor.len()..].starts_with(sep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containment_by_uri() {
        assert_eq!(file_uri("uko://r/a.py#A.b"), "uko://r/a.py");
        assert_eq!(file_uri("uko://r/a.py"), "uko://r/a.py");
        assert_eq!(uri_path("uko://r/src/a.py#A.b"), "src/a.py");
        assert_eq!(uri_path("uko://r/src/a.py"), "src/a.py");
        assert_eq!(uri_path("src/a.py"), "");
        assert!(is_inside("uko://r/a.py#A", "uko://r/a.py"));
        assert!(is_inside("uko://r/a.py#A.b", "uko://r/a.py#A"));
        assert!(!is_inside("uko://r/a.py#AB", "uko://r/a.py#A"));
        assert!(!is_inside("uko://r/a.pyc", "uko://r/a.py"));
        assert!(!is_inside("uko://r/a.py", "uko://r/a.py"));
        // A Rust method lies in an impl block outside its struct's lines.
        assert!(source_inside("uko://r/a.rs#S.f", "12:4-14:5", "uko://r/a.rs#S", "10:0-20:1"));
        assert!(!source_inside("uko://r/a.rs#S.f", "40:4-44:5", "uko://r/a.rs#S", "10:0-12:1"));
    }

    #[test]
    fn a_named_member_is_one_the_query_names_outright_inside_its_container() {
        let node = |uri: &str, range: &str, name_match: f64| Piece {
            source_range: range.to_owned(),
            name_match,
            ..Piece::new(uri, "method", "a.py", "", 9)
        };
        let class = node("uko://r/a.py#Choice", "10:0-50:0", 0.3);
        assert!(names_member_of(&node("uko://r/a.py#Choice.convert", "20:4-30:0", 1.0), &class));
        // "Plug.BasicAuth basic_auth": the module is named too, the function still comes first.
        assert!(names_member_of(
            &node("uko://r/a.py#Choice.convert", "20:4-30:0", 1.0),
            &node("uko://r/a.py#Choice", "10:0-50:0", 1.0)
        ));
        // Named in part, outside the class's lines, the class itself, or a
        // constructor, named only by its class's name.
        assert!(!names_member_of(&node("uko://r/a.py#Choice.convert", "20:4-30:0", 0.5), &class));
        assert!(!names_member_of(&node("uko://r/a.py#Choice.convert", "60:4-70:0", 1.0), &class));
        assert!(!names_member_of(
            &node("uko://r/a.py#Choice", "10:0-50:0", 1.0),
            &node("uko://r/a.py#Choice", "10:0-50:0", 0.3)
        ));
        let writer = node("uko://r/log.h#log.Writer", "20:0-49:0", 1.0);
        assert!(!names_member_of(&node("uko://r/log.h#log.Writer.Writer~2", "30:2-30:40", 1.0), &writer));
        assert!(names_member_of(&node("uko://r/log.h#log.Writer.AddRecord", "32:2-32:40", 1.0), &writer));
        assert!(!names_member_of(&node("uko://r/b.py#Other.convert", "20:4-30:0", 1.0), &class));
        assert_eq!(line_span("40:4-44:5"), Some((40, 44)));
    }

    #[test]
    fn headings_name_path_lines_and_a_depth_short_of_the_source() {
        assert_eq!(heading("src/a.py", "3:0-9:4", 9, None), "## src/a.py L3-9\n");
        assert_eq!(heading("src/a.py", "3:0-9:4", 4, None), "## src/a.py L3-9 (depth 4)\n");
        assert_eq!(heading("src/a.py", "", 0, None), "## src/a.py (depth 0)\n");
        assert_eq!(
            heading("src/a.py", "3:0-9:4", 2, Some("from the parent plan")),
            "## src/a.py L3-9 (from the parent plan, depth 2)\n"
        );
        let note = Piece { note: Some("decision".to_owned()), ..Piece::new("plan://1/d", "note", "", "text", 9) };
        assert_eq!(note.heading(), "## plan://1/d (decision)\n");
    }

    #[test]
    fn inline_content_that_does_not_fit_is_summarised_not_cut_to_its_opening() {
        // A file entry as it came back: imports first, the definitions far below.
        let mut text: String = (1..=30).map(|i| format!("import module_{i}\n")).collect();
        text.push_str(
            "\nclass Ledger:\n    rows = []\n\n    def post(self, entry):\n        self.rows.append(entry)\n",
        );
        let four = InlineRenderer::cut(&text, 4);
        assert!(four.contains("class Ledger:\n    def post(self, entry):\n"), "{four}");
        assert!(!four.contains("more lines"), "{four}");
        assert!(four.ends_with("[summary: 20 of 36 lines]\n"), "{four}");
        assert_eq!(InlineRenderer::cut(&text, 0), "class Ledger:\n[summary: 1 of 36 lines]\n");
        // Plain text without structure keeps its opening lines.
        let plain = (1..=30).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        assert_eq!(InlineRenderer::cut(&plain, 0), "line 1\n[summary: 1 of 30 lines]\n");
        assert!(InlineRenderer::cut(&plain, 4).starts_with("line 1\nline 2"));
        assert_eq!(InlineRenderer::cut(&plain, 9), plain);
        assert_eq!(InlineRenderer::cut("one\n\ntwo\n", 0), "one\n[summary: 1 of 3 lines]\n");
        assert_eq!(InlineRenderer::cut("one\n", 0), "one\n");
    }
}
