//! The budget packer: scored pieces in, the pieces that fit the budget out,
//! each at the deepest depth that fits ([`GreedyPacker`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use agents_core::tokens::TokenCounter;
use serde::Serialize;

use crate::piece::{
    DEPTH_STEPS, DepthRenderer, MIN_FRAGMENT_TOKENS, Piece, PieceRole, file_uri, names_member_of, source_inside,
};

/// Files of the best standing that always get a piece in the candidates (and
/// room kept for it by the [`GreedyPacker`]).
pub const REPRESENTED_FILES: usize = 10;

/// More bytes of source per token than any real code averages over a whole
/// node (code runs 3-5; long whitespace runs and repeated words stay far below 16).
pub const MAX_BYTES_PER_TOKEN: usize = 16;

/// The best-scored pieces the [`GreedyPacker`] first tries at the depth they
/// were asked for (full source, normally) rather than the one they were
/// rendered at: a piece the ranker put near the top comes whole when it fits,
/// whatever depth its strategy's own relevance gave it. Measured on the 320
/// questions of the ten dev repositories (relevant lines delivered at 2k / 8k
/// / 32k tokens): 0.454 / 0.719 / 0.870 with the first 10 at a twelfth of the
/// budget, 0.486 / 0.767 / 0.892 with the first 40 at a sixth
/// ([`PACK_PIECE_SHARE`]); chunk NDCG@10 0.691 in both.
pub const PACK_LEADERS: usize = 40;
/// How many of the leaders may take the larger share ([`PACK_LEADER_SHARE`]);
/// the others may take a sixth ([`PACK_PIECE_SHARE`]). The depth resolver's
/// leaders are as many.
pub const FIRST_LEADERS: usize = 3;
/// Budget divisor for one of the depth resolver's leaders (by relevance,
/// before the ranker): a quarter.
pub const LEADER_SHARE: usize = 4;
/// Budget divisor for one of the packer's [`FIRST_LEADERS`] (by the ranker's
/// final score): half. Measured on the 430 questions, the share of the
/// relevant lines delivered at 2k / 8k / 32k tokens: 0.328 / 0.654 / 0.847
/// with a quarter, 0.389 / 0.671 / 0.850 with a third, 0.463 / 0.685 / 0.850
/// with half; chunk NDCG@10 0.667-0.668 in all three.
pub const PACK_LEADER_SHARE: usize = 2;
/// Budget divisor for one of the other [`PACK_LEADERS`] when the packer
/// renders it deeper than it came: a sixth (a twelfth delivered a fifth of
/// the relevant lines of the leaders past the first three as signatures only).
pub const PACK_PIECE_SHARE: usize = 6;
/// Budget divisor for any other piece the depth resolver renders: a twelfth.
pub const PIECE_SHARE: usize = 12;

/// Pieces from this rank on (from 0, by score) are the long tail: each comes
/// with its source when that fits, else by name only (depth 0), never as an
/// outline or a signature; what those would have taken goes to the deepen
/// pass, which renders the better pieces deeper first. A larger budget starts
/// the tail later: at one piece per [`TAIL_TOKENS`] of it when that is more.
/// Measured at 8,000 tokens (the share of the relevant lines delivered, the
/// 320 questions of the ten dev repositories): 0.874 -> 0.878 with the tail
/// from the tenth piece, from the sixth 0.876, the eighth 0.878; chunk
/// NDCG@10 0.7480 -> 0.7476.
pub const TAIL_FROM: usize = 10;
/// Budget tokens per piece before the tail ([`TAIL_FROM`] at least). At
/// 32,000 tokens (all 466 questions, with the shorter headings): the tail
/// from the tenth piece 0.9586, from the 20th / 40th / 80th 0.9590 / 0.9593
/// / 0.9590.
pub const TAIL_TOKENS: usize = 800;

/// Whether a piece ranked `rank` may be packed at `depth` within `budget`:
/// any depth before the tail ([`TAIL_FROM`], [`TAIL_TOKENS`]), then only its
/// source or its name.
fn tail_allows(rank: usize, depth: u8, budget: usize) -> bool {
    rank < TAIL_FROM.max(budget / TAIL_TOKENS) || depth >= 5 || depth == 0
}

/// The most tokens the piece ranked `rank` (from 0) may take when the packer
/// renders it deeper than it came: `None` past the [`PACK_LEADERS`].
fn leader_room(rank: usize, budget: usize) -> Option<usize> {
    let share = match rank {
        r if r < FIRST_LEADERS => PACK_LEADER_SHARE,
        r if r < PACK_LEADERS => PACK_PIECE_SHARE,
        _ => return None,
    };
    Some((budget / share).max(MIN_FRAGMENT_TOKENS))
}

/// A strategy's share of the budget.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Allocation {
    /// The strategy's name.
    pub strategy: String,
    /// Tokens it may fill in the packer's first pass.
    pub tokens: usize,
}

/// Depths to try for a piece wanted at `top`: `top`, then the fallback steps below it.
pub fn depth_ladder(top: u8) -> impl Iterator<Item = u8> {
    std::iter::once(top).chain(DEPTH_STEPS.into_iter().filter(move |d| *d < top))
}

/// `piece` re-rendered at `depth` and re-measured, or `None` when it cannot be.
pub fn at_depth(piece: &Piece, depth: u8, renderer: &dyn DepthRenderer, tokenizer: &dyn TokenCounter) -> Option<Piece> {
    if depth == piece.depth {
        return Some(piece.clone());
    }
    let content = renderer.render(piece, depth)?;
    let mut out = Piece { depth, content, ..piece.clone() };
    out.measure(tokenizer);
    Some(out)
}

/// How a score was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ScoreParts {
    pub relevance: f64,
    pub hierarchy: f64,
    pub quality: f64,
    pub recency: f64,
}

/// A piece with its composite score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScoredFragment {
    pub piece: Piece,
    pub score: f64,
    pub parts: ScoreParts,
}

/// Best score first, ties by URI.
pub fn sort_scored(scored: &mut [ScoredFragment]) {
    scored.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.piece.uko_node.cmp(&b.piece.uko_node)));
}

/// What the packer did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PackOutcome {
    #[serde(skip)]
    pub packed: Vec<ScoredFragment>,
    pub tokens: usize,
    /// Pieces left out: no depth fitted, or an ancestor already carried their source.
    pub omitted: usize,
    /// Pieces packed shallower than they were resolved to.
    pub downgraded: usize,
    /// Pieces the packer brought in beside those it was given: the rest of a
    /// file, around its pieces ([`BEST_FILE_SHARE`], the deepen pass).
    pub added: usize,
}

/// 7. Fits scored pieces into the budget.
pub trait BudgetPacker: Send + Sync {
    fn pack(
        &self,
        scored: Vec<ScoredFragment>,
        budget: usize,
        allocations: &[Allocation],
        renderer: &dyn DepthRenderer,
        tokenizer: &dyn TokenCounter,
    ) -> PackOutcome;
}

/// Greedy knapsack, best score first, with depth fallback through `[9, 4, 2, 0]`
/// and a 10-token minimum. The [`PACK_LEADERS`] first try the depth they were
/// asked for ([`Piece::requested_depth`]) when it is deeper, within their
/// share of the budget ([`leader_room`]: half for the first three, a sixth
/// for the rest). Pieces past the first [`TAIL_FROM`] (more in a larger
/// budget: [`TAIL_TOKENS`]) come with their source or by name, never as an
/// outline or a signature, so what is left goes to the deepen pass, best
/// first. A strategy past its allocation waits for a second pass that spends
/// what the others left. A node inside one already packed with its
/// source (depth >= 5) is skipped; one with parts already packed, or with a
/// member among the [`PACK_LEADERS`] that the query names outright
/// ([`names_member_of`]), gets at most depth 4, so that member comes whole on
/// its own. The files of the best standing (the first ten, see
/// [`Piece::file_standing`]) are each kept room for one piece: until one of a
/// file's pieces is packed, the others leave free what its best piece costs at
/// its shallowest depth; what is still held after the first pass is released to
/// the second. The sum of packed tokens never exceeds the budget.
#[derive(Clone, Copy, Debug, Default)]
pub struct GreedyPacker;

impl BudgetPacker for GreedyPacker {
    fn pack(
        &self,
        scored: Vec<ScoredFragment>,
        budget: usize,
        allocations: &[Allocation],
        renderer: &dyn DepthRenderer,
        tokenizer: &dyn TokenCounter,
    ) -> PackOutcome {
        let mut out = PackOutcome::default();
        let mut share: HashMap<&str, usize> = allocations.iter().map(|a| (a.strategy.as_str(), a.tokens)).collect();
        // (URI, source range) of what is packed, and of what is packed with its source.
        let mut packed_nodes: Vec<(String, String)> = Vec::new();
        let mut with_source: Vec<(String, String)> = Vec::new();
        let mut deferred = Vec::new();
        let total = scored.len();
        let mut reserved = leading_file_reserve(&scored, renderer, tokenizer);
        let outlined = with_named_members(&scored);
        let mut place = |item: ScoredFragment,
                         out: &mut PackOutcome,
                         enforce_share: bool,
                         reserved: &mut HashMap<String, usize>,
                         rank: usize|
         -> Option<ScoredFragment> {
            let lead = leader_room(rank, budget);
            let own = reserved.get(&item.piece.path).copied().unwrap_or(0);
            let held = reserved.values().sum::<usize>() - own;
            let remaining = budget.saturating_sub(out.tokens).saturating_sub(held);
            let piece = &item.piece;
            if packed_nodes.iter().any(|(uri, _)| *uri == piece.uko_node)
                || with_source
                    .iter()
                    .any(|(uri, range)| source_inside(&piece.uko_node, &piece.source_range, uri, range))
            {
                return None;
            }
            if remaining < MIN_FRAGMENT_TOKENS {
                // With room held for other files, it may still fit once that is released.
                return (held > 0).then_some(item);
            }
            // A leader asks for its requested depth, when its source could fit
            // its share even at the densest code.
            let asked = match lead {
                Some(cap)
                    if piece.requested_depth > piece.depth
                        && !piece.inline
                        && piece.role == PieceRole::Context
                        && renderer.source_bytes(&piece.uko_node).is_none_or(|b| b <= cap * MAX_BYTES_PER_TOKEN) =>
                {
                    piece.requested_depth
                }
                _ => piece.depth,
            };
            let top = if outlined.contains(&piece.uko_node)
                || packed_nodes
                    .iter()
                    .any(|(uri, range)| source_inside(uri, range, &piece.uko_node, &piece.source_range))
            {
                asked.min(4)
            } else {
                asked
            };
            let strategy = piece.strategy().to_owned();
            let room = if enforce_share {
                match share.get(strategy.as_str()) {
                    Some(left) => remaining.min(*left),
                    None => remaining,
                }
            } else {
                remaining
            };
            for depth in depth_ladder(top).filter(|d| tail_allows(rank, *d, budget)) {
                let Some(candidate) = at_depth(piece, depth, renderer, tokenizer) else { continue };
                // Deeper than it came: only within the leader's share.
                let room = if depth > piece.depth { room.min(lead.unwrap_or(0)) } else { room };
                if candidate.tokens >= MIN_FRAGMENT_TOKENS && candidate.tokens <= room {
                    if depth < piece.depth {
                        out.downgraded += 1;
                    }
                    if let Some(left) = share.get_mut(strategy.as_str()) {
                        *left = left.saturating_sub(candidate.tokens);
                    }
                    if depth >= 5 {
                        with_source.push((candidate.uko_node.clone(), candidate.source_range.clone()));
                    }
                    packed_nodes.push((candidate.uko_node.clone(), candidate.source_range.clone()));
                    reserved.remove(&candidate.path);
                    out.tokens += candidate.tokens;
                    out.packed.push(ScoredFragment { piece: candidate, ..item });
                    return None;
                }
            }
            Some(item)
        };
        for (rank, item) in scored.into_iter().enumerate() {
            if let Some(left) = place(item, &mut out, !allocations.is_empty(), &mut reserved, rank) {
                deferred.push((rank, left));
            }
        }
        if !allocations.is_empty() || !reserved.is_empty() {
            reserved.clear();
            for (rank, item) in deferred {
                let _ = place(item, &mut out, false, &mut reserved, rank);
            }
        }
        let mut added = usize::from(best_file_whole(&mut out, budget, renderer, tokenizer));
        deepen(&mut out, budget, renderer, tokenizer);
        added += rest_of_files(&mut out, budget, renderer, tokenizer);
        out.added = added;
        out.omitted = (total + added).saturating_sub(out.packed.len());
        out
    }
}

/// The nodes of `scored` with a member among the first [`PACK_LEADERS`] that
/// the query names outright ([`names_member_of`]). Measured on the 466
/// questions of the natural-language sets, with the container ranked just
/// after that member (agents-acms' `named_members_first`): chunk NDCG@10 0.692
/// -> 0.701 (symbol look-ups 0.857 -> 0.882; 26 questions up, 7 down), the
/// relevant lines at 8k 0.802 -> 0.799. Any member among the leaders instead
/// of a named one: 0.688, the shown lines down six points.
fn with_named_members(scored: &[ScoredFragment]) -> HashSet<String> {
    let named: Vec<&Piece> =
        scored.iter().take(PACK_LEADERS).map(|s| &s.piece).filter(|p| p.name_match >= 1.0).collect();
    if named.is_empty() {
        return HashSet::new();
    }
    scored
        .iter()
        .filter(|s| named.iter().any(|m| names_member_of(m, &s.piece)))
        .map(|s| s.piece.uko_node.clone())
        .collect()
}

/// The depth of the complete source.
const FULL_SOURCE: u8 = DEPTH_STEPS[0];

/// Whether `s` is a retrieved piece of a stored file (not inline content, not
/// a parent plan's skeleton): what may make room for a whole file, or be one.
fn of_a_file(s: &ScoredFragment) -> bool {
    !s.piece.inline && s.piece.role == PieceRole::Context && !s.piece.path.is_empty()
}

/// The share of the budget the best file may take whole ([`best_file_whole`]).
/// Measured on the 466 questions at 8,000 tokens (relevant lines delivered,
/// the ten dev repositories): a half 0.8668, 0.58 and 0.65 0.8684, 0.72
/// 0.8619, 0.8 0.8575 (the rest of the answer then lacks room).
pub const BEST_FILE_SHARE: f64 = 0.6;

/// The file of the best-scored piece, delivered whole when its complete
/// source fits a [`BEST_FILE_SHARE`] of the budget: its module node comes
/// around the file's pieces packed with their source
/// ([`DepthRenderer::render_around`], at [`AROUND_DEPTH`]; at 9 when none
/// is), so no line comes twice and the pieces keep their places. Room is
/// made by the worst-scored pieces of other files: shown by name only (depth
/// 0), so their files stay in the answer, and left out only when that is not
/// enough (leaving them out instead cost the commit-message set 0.9 points of
/// R@10). A module node that was not among the pieces is added, scored below
/// every other piece: the rest of the best file closes the answer. Whether
/// one was added.
fn best_file_whole(
    out: &mut PackOutcome,
    budget: usize,
    renderer: &dyn DepthRenderer,
    tokenizer: &dyn TokenCounter,
) -> bool {
    let Some(best) = out
        .packed
        .iter()
        .filter(|s| of_a_file(s))
        .max_by(|a, b| a.score.total_cmp(&b.score).then_with(|| b.piece.uko_node.cmp(&a.piece.uko_node)))
    else {
        return false;
    };
    let cap = (budget as f64 * BEST_FILE_SHARE) as usize;
    let file = file_uri(&best.piece.uko_node).to_owned();
    let strategies = best.piece.strategies.clone();
    let best_asked = best.piece.requested_depth;
    // Only where the request asks for the source: of the best piece, and of
    // the file's node when it is among the pieces (the depth gradient may ask
    // less of it).
    if best_asked < FULL_SOURCE
        || out
            .packed
            .iter()
            .any(|s| s.piece.uko_node == file && (s.piece.depth >= 5 || s.piece.requested_depth < FULL_SOURCE))
        || renderer.source_bytes(&file).is_some_and(|b| b > cap * MAX_BYTES_PER_TOKEN)
    {
        return false;
    }
    let existing = out.packed.iter().position(|s| s.piece.uko_node == file);
    let whole = match existing {
        Some(i) => at_depth(&out.packed[i].piece, 9, renderer, tokenizer),
        None => renderer.piece(&file, 9).map(|mut p| {
            p.measure(tokenizer);
            p
        }),
    };
    let Some(whole) = whole.filter(|w| w.tokens <= cap) else { return false };
    let shown: Vec<&Piece> = out
        .packed
        .iter()
        .map(|s| &s.piece)
        .filter(|p| p.depth >= 5 && source_inside(&p.uko_node, &p.source_range, &file, &whole.source_range))
        .collect();
    let piece = if shown.is_empty() {
        whole
    } else {
        let Some(content) = renderer.render_around(&whole, &shown) else { return false };
        let mut around = Piece { depth: AROUND_DEPTH, content, ..whole };
        around.measure(tokenizer);
        around
    };
    let held = existing.map_or(0, |i| out.packed[i].piece.tokens);
    let cost = piece.tokens.saturating_sub(held);
    let mut others: Vec<usize> = (0..out.packed.len())
        .filter(|i| of_a_file(&out.packed[*i]) && file_uri(&out.packed[*i].piece.uko_node) != file)
        .collect();
    others.sort_by(|a, b| {
        let (a, b) = (&out.packed[*a], &out.packed[*b]);
        a.score.total_cmp(&b.score).then_with(|| b.piece.uko_node.cmp(&a.piece.uko_node))
    });
    let mut free = budget.saturating_sub(out.tokens);
    // The worst-scored pieces of other files make the room: first shown by
    // name only, then, when that is not enough, left out.
    let mut shallower: Vec<(usize, Piece)> = Vec::new();
    for &i in &others {
        if free >= cost {
            break;
        }
        let p = &out.packed[i].piece;
        if let Some(name) =
            at_depth(p, 0, renderer, tokenizer).filter(|n| n.tokens >= MIN_FRAGMENT_TOKENS && n.tokens < p.tokens)
        {
            free += p.tokens - name.tokens;
            shallower.push((i, name));
        }
    }
    let mut leave = Vec::new();
    for i in others {
        if free >= cost {
            break;
        }
        free += shallower.iter().find(|(j, _)| *j == i).map_or(out.packed[i].piece.tokens, |(_, p)| p.tokens);
        leave.push(i);
    }
    if free < cost {
        return false;
    }
    out.downgraded += shallower.len();
    for (i, p) in shallower {
        out.packed[i].piece = p;
    }
    let floor = out.packed.iter().map(|s| s.score).fold(f64::INFINITY, f64::min);
    match existing {
        Some(i) => out.packed[i].piece = piece,
        None => out.packed.push(ScoredFragment {
            score: if floor.is_finite() { floor / 2.0 } else { 0.0 },
            parts: ScoreParts::default(),
            piece: Piece { strategies, ..piece },
        }),
    }
    let mut at = 0;
    out.packed.retain(|_| {
        at += 1;
        !leave.contains(&(at - 1))
    });
    out.tokens = out.packed.iter().map(|s| s.piece.tokens).sum();
    existing.is_none()
}

/// What the deepen pass left goes to the rest of the answer's files, best
/// first: each file whose module node is not packed comes around its pieces
/// ([`DepthRenderer::render_around`]) when that fits what is left, scored
/// below every piece before it. How many were added.
fn rest_of_files(
    out: &mut PackOutcome,
    budget: usize,
    renderer: &dyn DepthRenderer,
    tokenizer: &dyn TokenCounter,
) -> usize {
    let mut order: Vec<&ScoredFragment> = out.packed.iter().filter(|s| of_a_file(s)).collect();
    order.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.piece.uko_node.cmp(&b.piece.uko_node)));
    let mut files: Vec<(String, &ScoredFragment)> = Vec::new();
    for s in order {
        let file = file_uri(&s.piece.uko_node);
        if !files.iter().any(|(f, _)| f == file) {
            files.push((file.to_owned(), s));
        }
    }
    // The strategies of the file's best piece, when the request asked it at full source.
    let files: Vec<(String, Vec<String>)> = files
        .into_iter()
        .filter(|(_, best)| best.piece.requested_depth >= FULL_SOURCE)
        .map(|(file, best)| (file, best.piece.strategies.clone()))
        .collect();
    let mut added = 0;
    for (file, strategies) in files {
        let left = budget.saturating_sub(out.tokens);
        if left < MIN_FRAGMENT_TOKENS {
            break;
        }
        if out.packed.iter().any(|s| s.piece.uko_node == file) {
            continue;
        }
        let shown: Vec<&Piece> = out
            .packed
            .iter()
            .map(|s| &s.piece)
            .filter(|p| p.depth >= 5 && file_uri(&p.uko_node) == file && p.uko_node != file)
            .collect();
        let freed: usize = shown.iter().map(|p| p.tokens).sum();
        if renderer.source_bytes(&file).is_some_and(|b| b > (left + freed) * MAX_BYTES_PER_TOKEN) {
            continue;
        }
        // Only its place is read: the cheapest rendering will do.
        let Some(template) = renderer.piece(&file, 0) else { continue };
        let shown: Vec<&Piece> = shown
            .into_iter()
            .filter(|p| source_inside(&p.uko_node, &p.source_range, &file, &template.source_range))
            .collect();
        let Some(content) = renderer.render_around(&template, &shown) else { continue };
        let mut piece =
            Piece { depth: if shown.is_empty() { 9 } else { AROUND_DEPTH }, content, strategies, ..template };
        piece.measure(tokenizer);
        if piece.tokens > left {
            continue;
        }
        let floor = out.packed.iter().map(|s| s.score).fold(f64::INFINITY, f64::min);
        out.tokens += piece.tokens;
        out.packed.push(ScoredFragment {
            score: if floor.is_finite() { floor / 2.0 } else { 0.0 },
            parts: ScoreParts::default(),
            piece,
        });
        added += 1;
    }
    added
}

/// The depth of a container delivered around its members
/// ([`DepthRenderer::render_around`]): its source, save what other fragments
/// show; the deepest of the spec's partial-source depths (5-8).
pub const AROUND_DEPTH: u8 = 8;

/// The deepen pass: what the packing left of the budget goes to the packed
/// pieces, best first, each re-rendered at the deepest depth that fits what is
/// left, up to the depth it was asked for (the request's depth, less the depth
/// gradient's cut for pieces further out). A piece with packed members inside
/// it, asked for with its source, comes around them
/// ([`DepthRenderer::render_around`], at [`AROUND_DEPTH`]) when that fits:
/// its source with the members shown whole left out, so no line is delivered
/// twice; otherwise it goes no deeper than 4. A piece inside one that carries
/// its source is not deepened.
fn deepen(out: &mut PackOutcome, budget: usize, renderer: &dyn DepthRenderer, tokenizer: &dyn TokenCounter) {
    for i in 0..out.packed.len() {
        let left = budget.saturating_sub(out.tokens);
        if left < MIN_FRAGMENT_TOKENS {
            break;
        }
        let piece = &out.packed[i].piece;
        if piece.inline || piece.role != PieceRole::Context {
            continue;
        }
        let inside = |inner: &Piece, outer: &Piece| {
            source_inside(&inner.uko_node, &inner.source_range, &outer.uko_node, &outer.source_range)
        };
        if out.packed.iter().any(|s| s.piece.depth >= 5 && inside(piece, &s.piece)) {
            continue;
        }
        let members: Vec<&Piece> = out.packed.iter().map(|s| &s.piece).filter(|m| inside(m, piece)).collect();
        let cap = piece.requested_depth;
        if !members.is_empty() && cap >= AROUND_DEPTH && piece.depth < 5 {
            let shown: Vec<&Piece> = members.iter().copied().filter(|m| m.depth >= 5).collect();
            // The members' tokens bound the source they take out of the text.
            let room = piece.tokens + left;
            let freed: usize = shown.iter().map(|m| m.tokens).sum();
            let could_fit =
                renderer.source_bytes(&piece.uko_node).is_none_or(|b| b <= (room + freed) * MAX_BYTES_PER_TOKEN);
            let around = could_fit.then(|| renderer.render_around(piece, &shown)).flatten().map(|content| {
                let mut around = Piece { depth: AROUND_DEPTH, content, ..piece.clone() };
                around.measure(tokenizer);
                around
            });
            if let Some(around) = around.filter(|a| a.tokens <= room) {
                out.tokens = out.tokens - piece.tokens + around.tokens;
                out.packed[i].piece = around;
                continue;
            }
        }
        let top = if members.is_empty() { cap } else { cap.min(4) };
        if top <= piece.depth {
            continue;
        }
        let room = piece.tokens + left;
        // A source text that needs more tokens than the room even at the densest
        // code cannot fit: skip rendering the source depths.
        let source_fits = renderer.source_bytes(&piece.uko_node).is_none_or(|b| b <= room * MAX_BYTES_PER_TOKEN);
        let deeper = depth_ladder(top)
            .take_while(|d| *d > piece.depth)
            .filter(|d| *d <= DEPTH_STEPS[1] || source_fits)
            .find_map(|depth| at_depth(piece, depth, renderer, tokenizer).filter(|p| p.tokens <= room));
        if let Some(deeper) = deeper {
            out.tokens = out.tokens - piece.tokens + deeper.tokens;
            out.packed[i].piece = deeper;
        }
    }
}

/// For each of the [`REPRESENTED_FILES`] files of the best standing (above
/// 0; ties by path), the tokens of its best-scored piece at its shallowest depth.
fn leading_file_reserve(
    scored: &[ScoredFragment],
    renderer: &dyn DepthRenderer,
    tokenizer: &dyn TokenCounter,
) -> HashMap<String, usize> {
    let mut best: BTreeMap<&str, &ScoredFragment> = BTreeMap::new();
    for s in scored.iter().filter(|s| s.piece.file_standing > 0.0 && !s.piece.path.is_empty() && !s.piece.inline) {
        // `scored` is best first, so the first piece seen of a file is its best.
        best.entry(s.piece.path.as_str()).or_insert(s);
    }
    let mut files: Vec<(&str, &ScoredFragment)> = best.into_iter().collect();
    files.sort_by(|a, b| b.1.piece.file_standing.total_cmp(&a.1.piece.file_standing).then_with(|| a.0.cmp(b.0)));
    files
        .into_iter()
        .take(REPRESENTED_FILES)
        .filter_map(|(path, s)| {
            let shallowest = depth_ladder(s.piece.depth).collect::<Vec<_>>().into_iter().rev().find_map(|depth| {
                at_depth(&s.piece, depth, renderer, tokenizer).filter(|p| p.tokens >= MIN_FRAGMENT_TOKENS)
            })?;
            Some((path.to_owned(), shallowest.tokens))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::piece::{InlineRenderer, line_span};
    use agents_core::tokens::{Encoding, Tokenizer};

    fn tok() -> Tokenizer {
        Tokenizer::new(Encoding::O200kBase)
    }

    /// An inline piece of `path` with `relevance`, measured.
    fn piece(uri: &str, path: &str, relevance: f64, content: &str) -> Piece {
        let mut p = Piece {
            source_range: "1:0-2:0".to_owned(),
            start_line: 1,
            relevance,
            quality: 0.5,
            strategies: vec!["s".to_owned()],
            inline: true,
            ..Piece::new(uri, "function", path, content, 9)
        };
        p.measure(&tok());
        p
    }

    /// The pieces as a scorer hands them over: scored by relevance, best first.
    fn scored(pieces: Vec<Piece>) -> Vec<ScoredFragment> {
        let mut out: Vec<ScoredFragment> = pieces
            .into_iter()
            .map(|piece| ScoredFragment { score: piece.relevance, parts: ScoreParts::default(), piece })
            .collect();
        sort_scored(&mut out);
        out
    }

    fn long_text(seed: &str, lines: usize) -> String {
        (0..lines).map(|i| format!("{seed} line {i} with some words to count\n")).collect()
    }

    #[test]
    fn packer_never_exceeds_and_falls_back_instead_of_dropping() {
        let none = GreedyPacker.pack(Vec::new(), 100, &[], &InlineRenderer, &tok());
        assert_eq!((none.packed.len(), none.tokens), (0, 0));
        let items = scored(vec![
            piece("u:a", "a.py", 1.0, &long_text("a", 40)),
            piece("u:b", "b.py", 0.9, &long_text("b", 40)),
        ]);
        let full = items[0].piece.tokens;
        let out = GreedyPacker.pack(items, full + 60, &[], &InlineRenderer, &tok());
        assert!(out.tokens <= full + 60);
        assert_eq!(out.packed.len(), 2, "the second is downgraded, not dropped");
        assert!(out.packed[1].piece.depth < 9);
        assert_eq!(out.downgraded, 1);
        // Exhausted: below the minimum fragment nothing more is packed.
        let tiny = GreedyPacker.pack(scored(vec![piece("u:a", "a.py", 1.0, "x")]), 5, &[], &InlineRenderer, &tok());
        assert!(tiny.packed.is_empty() && tiny.omitted == 1);
    }

    #[test]
    fn a_member_the_query_names_comes_whole_and_its_container_as_an_outline() {
        let pack = |member_match: f64| {
            let class = Piece {
                source_range: "1:0-41:0".to_owned(),
                name_match: 0.3,
                ..piece("uko://r/a.py#Choice", "a.py", 1.0, &long_text("class", 40))
            };
            let member = Piece {
                source_range: "10:4-20:0".to_owned(),
                start_line: 10,
                name_match: member_match,
                ..piece("uko://r/a.py#Choice.convert", "a.py", 0.5, &long_text("convert", 10))
            };
            let out = GreedyPacker.pack(scored(vec![class, member]), 10_000, &[], &InlineRenderer, &tok());
            out.packed.iter().map(|s| (s.piece.uko_node.clone(), s.piece.depth)).collect::<Vec<_>>()
        };
        // Named outright: the member at full source, the class no deeper than an outline.
        let named = pack(1.0);
        assert_eq!(named.len(), 2, "{named:?}");
        assert!(named.iter().any(|(uri, depth)| uri.ends_with("#Choice") && *depth <= 4), "{named:?}");
        assert!(named.iter().any(|(uri, depth)| uri.ends_with("#Choice.convert") && *depth == 9), "{named:?}");
        // Named only in part: the class comes whole and holds the member.
        let partly = pack(0.5);
        assert_eq!(partly, vec![("uko://r/a.py#Choice".to_owned(), 9)]);
    }

    #[test]
    fn packer_keeps_room_for_each_leading_file() {
        let file_piece = |uri: &str, path: &str, relevance: f64, text: &str, standing: f64| {
            let mut p = piece(uri, path, relevance, text);
            p.inline = false;
            p.file_standing = standing;
            // Each piece on lines of its own (pieces that overlap weigh half).
            let n: u32 = uri.rsplit('#').next().unwrap().parse().unwrap();
            p.source_range = format!("{}:0-{}:0", n * 100, n * 100 + 50);
            p
        };
        let a1 = file_piece("u:a#1", "a.py", 1.0, &long_text("a", 40), 1.0);
        let a2 = file_piece("u:a#2", "a.py", 0.9, &long_text("b", 40), 1.0);
        let b = file_piece("u:b#1", "b.py", 0.1, "def short(): pass", 0.5);
        let budget = a1.tokens + a2.tokens;
        let items = scored(vec![a1, a2, b]);
        let out = GreedyPacker.pack(items, budget, &[], &InlineRenderer, &tok());
        assert!(out.tokens <= budget);
        let uris: Vec<&str> = out.packed.iter().map(|s| s.piece.uko_node.as_str()).collect();
        assert_eq!(uris, ["u:a#1", "u:a#2", "u:b#1"], "a.py's second piece leaves b.py its room");
        assert_eq!(out.downgraded, 1);
        // Files of no standing keep no room: the same pieces fill the budget in score order.
        let plain = scored(vec![
            piece("u:a#1", "a.py", 1.0, &long_text("a", 40)),
            piece("u:a#2", "a.py", 0.9, &long_text("b", 40)),
            piece("u:b#1", "b.py", 0.1, "def short(): pass"),
        ]);
        let out = GreedyPacker.pack(plain, budget, &[], &InlineRenderer, &tok());
        assert_eq!(out.packed.len(), 2);
        assert_eq!(out.tokens, budget);
    }

    /// Renders a stored node: its ten-line body from depth 5, its first line below.
    struct Bodies;

    impl Bodies {
        fn full(uri: &str) -> String {
            (0..10).map(|i| format!("{uri} statement {i} of the body\n")).collect()
        }
    }

    impl DepthRenderer for Bodies {
        fn render(&self, piece: &Piece, depth: u8) -> Option<String> {
            let full = Bodies::full(&piece.uko_node);
            Some(if depth >= 5 { full } else { full.lines().next().unwrap_or_default().to_owned() })
        }
    }

    #[test]
    fn the_best_pieces_come_whole_though_they_were_rendered_shallower() {
        // Stored nodes rendered at depth 4 (their strategy's relevance was
        // low), asked for at 9, more than the leaders, and a budget their
        // shallow renderings fill.
        let n = PACK_LEADERS + 20;
        let pieces: Vec<Piece> = (0..n)
            .map(|i| {
                let uri = format!("u:f{i:02}");
                let mut p = Piece {
                    source_range: format!("{}:0-{}:0", i * 20 + 1, i * 20 + 10),
                    relevance: 1.0 - i as f64 / 100.0,
                    strategies: vec!["s".to_owned()],
                    requested_depth: 9,
                    ..Piece::new(&uri, "function", format!("f{i:02}.py"), "", 4)
                };
                p.content = Bodies.render(&p, 4).unwrap();
                p.measure(&tok());
                p
            })
            .collect();
        let budget: usize = pieces.iter().map(|p| p.tokens).sum();
        let out = GreedyPacker.pack(scored(pieces), budget, &[], &Bodies, &tok());
        assert!(out.tokens <= budget);
        // The first leader comes with its body; past the leaders, none does.
        assert_eq!(out.packed[0].piece.depth, 9, "{:?}", out.packed[0].piece.uko_node);
        assert_eq!(out.packed[0].piece.content, Bodies::full("u:f00"));
        assert!(out.packed.iter().skip(PACK_LEADERS).all(|s| s.piece.depth == 4));
        assert!(out.packed.len() < n, "the leaders' bodies take the room of the last pieces");
    }

    /// Stored nodes over numbered lines: `(uri, path, first line, last line)`.
    /// A node renders each of its lines as `path:N` from depth 5, its first
    /// line alone below; around its members, each run of theirs as one
    /// `... path:A-B` line.
    struct Lines(Vec<(&'static str, &'static str, u32, u32)>);

    impl Lines {
        fn node(&self, uri: &str) -> Option<(&'static str, &'static str, u32, u32)> {
            self.0.iter().copied().find(|n| n.0 == uri)
        }

        fn text(&self, uri: &str, depth: u8, shown: &[&Piece]) -> Option<String> {
            let (_, path, first, last) = self.node(uri)?;
            let last = if depth >= 5 { last } else { first };
            let mut out = String::new();
            let mut line = first;
            while line <= last {
                match shown.iter().filter_map(|p| line_span(&p.source_range)).find(|(a, b)| *a <= line && line <= *b) {
                    Some((a, b)) => {
                        out.push_str(&format!("... {path}:{a}-{b}\n"));
                        line = b + 1;
                    }
                    None => {
                        out.push_str(&format!("{path}:{line}\n"));
                        line += 1;
                    }
                }
            }
            Some(out)
        }

        fn stored(&self, uri: &str, depth: u8, relevance: f64) -> Piece {
            let mut p = self.piece(uri, depth).expect("a stored node");
            p.relevance = relevance;
            p.requested_depth = 9;
            p.strategies = vec!["s".to_owned()];
            p
        }
    }

    impl DepthRenderer for Lines {
        fn render(&self, piece: &Piece, depth: u8) -> Option<String> {
            self.text(&piece.uko_node, depth, &[])
        }

        fn render_around(&self, piece: &Piece, shown: &[&Piece]) -> Option<String> {
            self.text(&piece.uko_node, AROUND_DEPTH, shown)
        }

        fn piece(&self, uri: &str, depth: u8) -> Option<Piece> {
            let (uri, path, first, last) = self.node(uri)?;
            let mut p = Piece {
                source_range: format!("{first}:0-{last}:9"),
                start_line: first,
                ..Piece::new(uri, if uri.contains('#') { "function" } else { "module" }, path, "", depth)
            };
            p.content = self.text(uri, depth, &[])?;
            p.measure(&tok());
            Some(p)
        }

        fn source_bytes(&self, uri: &str) -> Option<usize> {
            self.node(uri).map(|(_, path, first, last)| (last - first + 1) as usize * (path.len() + 4))
        }
    }

    /// Every `path:N` line the packed pieces deliver, with how many times.
    fn delivered(out: &PackOutcome) -> BTreeMap<String, usize> {
        let mut lines = BTreeMap::new();
        for s in &out.packed {
            for line in s.piece.content.lines().filter(|l| !l.starts_with("...")) {
                *lines.entry(line.to_owned()).or_insert(0) += 1;
            }
        }
        lines
    }

    #[test]
    fn a_container_comes_around_its_members_with_what_is_left() {
        let files = Lines(vec![
            ("uko://r/big.py", "big.py", 1, 400),
            ("uko://r/a.py", "a.py", 1, 30),
            ("uko://r/a.py#f", "a.py", 5, 12),
            ("uko://r/a.py#g", "a.py", 20, 24),
        ]);
        // The best piece's file is too big to come whole: the module of a.py,
        // packed as its first line, comes around f and g once they are packed.
        let big = files.stored("uko://r/big.py", 4, 1.0);
        let f = files.stored("uko://r/a.py#f", 9, 0.9);
        let g = files.stored("uko://r/a.py#g", 9, 0.8);
        let module = files.stored("uko://r/a.py", 0, 0.7);
        let budget = 2_000;
        let out = GreedyPacker.pack(scored(vec![big, f, g, module]), budget, &[], &files, &tok());
        assert!(out.tokens <= budget);
        let module = out.packed.iter().find(|s| s.piece.uko_node == "uko://r/a.py").expect("packed");
        assert_eq!(module.piece.depth, AROUND_DEPTH);
        assert!(module.piece.content.contains("... a.py:5-12\n") && module.piece.content.contains("... a.py:20-24\n"));
        let lines = delivered(&out);
        assert!((1..=30).all(|n| lines.get(&format!("a.py:{n}")) == Some(&1)), "every line of a.py once: {lines:?}");
        // Without the room, the module stays an outline.
        let (f, g) = (files.stored("uko://r/a.py#f", 9, 0.9), files.stored("uko://r/a.py#g", 9, 0.8));
        let module = files.stored("uko://r/a.py", 0, 0.7);
        let tight = f.tokens + g.tokens + module.tokens + 5;
        let out = GreedyPacker.pack(scored(vec![f, g, module]), tight, &[], &files, &tok());
        assert!(out.packed.iter().all(|s| s.piece.depth != AROUND_DEPTH), "{:?}", out.packed);
    }

    #[test]
    fn the_best_file_comes_whole_when_it_fits_its_share_of_the_budget() {
        let files = Lines(vec![
            ("uko://r/a.py", "a.py", 1, 40),
            ("uko://r/a.py#f", "a.py", 5, 12),
            ("uko://r/b.py#g", "b.py", 1, 25),
            ("uko://r/c.py#h", "c.py", 1, 25),
        ]);
        let pieces = || {
            vec![
                files.stored("uko://r/a.py#f", 9, 1.0),
                files.stored("uko://r/b.py#g", 9, 0.6),
                files.stored("uko://r/c.py#h", 9, 0.3),
            ]
        };
        let whole = files.piece("uko://r/a.py", 9).unwrap().tokens;
        let all: usize = pieces().iter().map(|p| p.tokens).sum();
        // Every piece fits, and a.py fits its share of the budget but not
        // what the pieces leave: the pieces of c.py and b.py, the worst, are
        // shown by their names to make room for a.py, which comes around f,
        // scored last; the deepen pass then gives them what is left.
        let budget = (whole as f64 / BEST_FILE_SHARE).ceil() as usize + 1;
        assert!(all <= budget && budget - all < whole - 30, "{all} {budget} {whole}");
        let out = GreedyPacker.pack(scored(pieces()), budget, &[], &files, &tok());
        assert!(out.tokens <= budget);
        let uris: Vec<(&str, u8)> = out.packed.iter().map(|s| (s.piece.uko_node.as_str(), s.piece.depth)).collect();
        assert_eq!(
            uris,
            [("uko://r/a.py#f", 9), ("uko://r/b.py#g", 4), ("uko://r/c.py#h", 4), ("uko://r/a.py", AROUND_DEPTH)],
            "{budget}"
        );
        assert!(out.packed[3].score < out.packed[2].score);
        let lines = delivered(&out);
        assert!((1..=40).all(|n| lines.get(&format!("a.py:{n}")) == Some(&1)), "{lines:?}");
        assert_eq!((out.omitted, out.added), (0, 1));
        // More than its share: the pieces stay as they are.
        let budget = (whole as f64 / BEST_FILE_SHARE).floor() as usize - 1;
        let out = GreedyPacker.pack(scored(pieces()), budget, &[], &files, &tok());
        let uris: Vec<(&str, u8)> = out.packed.iter().map(|s| (s.piece.uko_node.as_str(), s.piece.depth)).collect();
        assert_eq!(uris, [("uko://r/a.py#f", 9), ("uko://r/b.py#g", 9), ("uko://r/c.py#h", 9)], "{budget}");
        // A request for signatures gets no whole file.
        let mut shallow = pieces();
        for p in &mut shallow {
            p.requested_depth = 4;
        }
        let out = GreedyPacker.pack(scored(shallow), all + whole, &[], &files, &tok());
        assert!(out.packed.iter().all(|s| s.piece.uko_node != "uko://r/a.py"));
    }

    /// Renders a stored node `u:NAME:SOURCE:OUTLINE` as that many lines at
    /// full source (depth 5 and deeper) and as an outline (depths 3 and 4),
    /// one line below.
    struct Sized;

    impl DepthRenderer for Sized {
        fn render(&self, piece: &Piece, depth: u8) -> Option<String> {
            let mut parts = piece.uko_node.split(':').skip(2).map(|n| n.parse::<usize>().unwrap());
            let (source, outline) = (parts.next()?, parts.next()?);
            let lines = match depth {
                5.. => source,
                3 | 4 => outline,
                _ => 1,
            };
            Some((0..lines).map(|i| format!("{} line {i} with some words to count\n", piece.uko_node)).collect())
        }
    }

    #[test]
    fn the_long_tail_comes_whole_or_by_name_and_leaves_the_rest_to_better_pieces() {
        let node = |uri: &str, relevance: f64| {
            let mut p = Piece {
                source_range: "1:0-9:0".to_owned(),
                relevance,
                strategies: vec!["s".to_owned()],
                requested_depth: 9,
                ..Piece::new(uri, "function", uri.split(':').nth(1).unwrap(), "", 4)
            };
            p.content = Sized.render(&p, 4).unwrap();
            p.measure(&tok());
            p
        };
        let at = |p: &Piece, depth: u8| at_depth(p, depth, &Sized, &tok()).unwrap().tokens;
        // The best piece, too long for its first share of the budget; nine
        // small ones; then, past the first ten, one whose source never fits.
        let best = node("u:best:60:5", 1.0);
        let small: Vec<Piece> = (0..9).map(|i| node(&format!("u:small{i}:3:1"), 0.9 - i as f64 / 100.0)).collect();
        let tail = node("u:tail:40:20", 0.5);
        let smalls: usize = small.iter().map(|p| at(p, 9)).sum();
        let budget = at(&best, 9) + smalls + at(&tail, 0) + 5;
        assert!(at(&best, 9) > budget / PACK_LEADER_SHARE && at(&tail, 4) > at(&tail, 0) + 5);
        let mut pieces = vec![best, tail];
        pieces.extend(small);
        let out = GreedyPacker.pack(scored(pieces), budget, &[], &Sized, &tok());
        assert!(out.tokens <= budget);
        let depth = |uri: &str| out.packed.iter().find(|s| s.piece.uko_node.starts_with(uri)).map(|s| s.piece.depth);
        // The tail's outline would have kept the best piece from its source.
        assert_eq!(depth("u:tail:"), Some(0));
        assert_eq!(depth("u:best:"), Some(9));
        assert!((0..9).all(|i| depth(&format!("u:small{i}:")) == Some(9)));
    }

    #[test]
    fn what_is_left_brings_the_rest_of_the_other_files() {
        let files = Lines(vec![
            ("uko://r/big.py", "big.py", 1, 400),
            ("uko://r/big.py#x", "big.py", 10, 20),
            ("uko://r/b.py", "b.py", 1, 30),
            ("uko://r/b.py#g", "b.py", 5, 9),
        ]);
        let pieces = vec![files.stored("uko://r/big.py#x", 9, 1.0), files.stored("uko://r/b.py#g", 9, 0.5)];
        // big.py is too big for its share and for what is left; b.py's rest fits.
        let budget = 1_000;
        assert!(files.piece("uko://r/big.py", 9).unwrap().tokens > budget);
        let out = GreedyPacker.pack(scored(pieces), budget, &[], &files, &tok());
        assert!(out.tokens <= budget);
        let uris: Vec<(&str, u8)> = out.packed.iter().map(|s| (s.piece.uko_node.as_str(), s.piece.depth)).collect();
        assert_eq!(uris, [("uko://r/big.py#x", 9), ("uko://r/b.py#g", 9), ("uko://r/b.py", AROUND_DEPTH)]);
        assert!(out.packed[2].score < out.packed[1].score);
        assert!(out.packed[2].piece.content.contains("... b.py:5-9\n"));
        let lines = delivered(&out);
        assert!((1..=30).all(|n| lines.get(&format!("b.py:{n}")) == Some(&1)), "{lines:?}");
        assert_eq!(out.added, 1);
        // A request for signatures brings no file.
        let mut shallow = vec![files.stored("uko://r/big.py#x", 9, 1.0), files.stored("uko://r/b.py#g", 9, 0.5)];
        for p in &mut shallow {
            p.requested_depth = 4;
        }
        let out = GreedyPacker.pack(scored(shallow), budget, &[], &files, &tok());
        assert_eq!(out.added, 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Whatever the pieces and the budget, the packed tokens add up, stay
        /// within the budget, and no source line is delivered twice.
        #[test]
        fn packing_stays_in_budget_and_delivers_each_line_once(
            picks in proptest::collection::vec((0usize..7, 0.0f64..1.0, proptest::prop_oneof![proptest::strategy::Just(0u8), proptest::strategy::Just(4u8), proptest::strategy::Just(9u8)]), 1..7),
            budget in 20usize..1_500,
        ) {
            let files = Lines(vec![
                ("uko://r/a.py", "a.py", 1, 60),
                ("uko://r/a.py#A", "a.py", 10, 50),
                ("uko://r/a.py#A.m", "a.py", 12, 20),
                ("uko://r/a.py#A.n", "a.py", 30, 49),
                ("uko://r/a.py#f", "a.py", 52, 60),
                ("uko://r/b.py", "b.py", 1, 25),
                ("uko://r/b.py#g", "b.py", 3, 9),
            ]);
            let mut pieces: Vec<Piece> = Vec::new();
            for (node, relevance, depth) in picks {
                let uri = files.0[node].0;
                if !pieces.iter().any(|p| p.uko_node == uri) {
                    pieces.push(files.stored(uri, depth, relevance));
                }
            }
            let out = GreedyPacker.pack(scored(pieces), budget, &[], &files, &tok());
            proptest::prop_assert!(out.tokens <= budget);
            proptest::prop_assert_eq!(out.tokens, out.packed.iter().map(|s| s.piece.tokens).sum::<usize>());
            // Shallow renderings repeat a node's first line; source never repeats.
            let deep = PackOutcome {
                packed: out.packed.iter().filter(|s| s.piece.depth >= 5).cloned().collect(),
                ..PackOutcome::default()
            };
            let twice: Vec<(String, usize)> = delivered(&deep).into_iter().filter(|(_, n)| *n > 1).collect();
            proptest::prop_assert!(twice.is_empty(), "{:?}", twice);
        }
    }

    #[test]
    fn packer_holds_a_strategy_to_its_share_until_the_second_pass() {
        let mut a = piece("u:a", "a.py", 1.0, &long_text("a", 10));
        a.strategies = vec!["big".into()];
        let mut b = piece("u:b", "b.py", 0.1, &long_text("b", 10));
        b.strategies = vec!["small".into()];
        let shares =
            [Allocation { strategy: "big".into(), tokens: 1 }, Allocation { strategy: "small".into(), tokens: 1000 }];
        let out = GreedyPacker.pack(scored(vec![a, b]), 1000, &shares, &InlineRenderer, &tok());
        let uris: Vec<&str> = out.packed.iter().map(|s| s.piece.uko_node.as_str()).collect();
        assert_eq!(uris, ["u:b", "u:a"], "over its share, `big` waits for what is left");
    }
}
