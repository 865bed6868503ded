//! What both halves of the engine assemble context from: the [`Piece`] a
//! fragment travels as, the [`DepthRenderer`] that renders it at another
//! detail depth, the extractive [`summary`] a shallow rendering of plain text
//! is, and the [`GreedyPacker`] that fits scored pieces into a token budget.
//!
//! The context pipeline (agents-acms) and the knowledge loadout (agents-akms)
//! both pack with it; neither depends on the other. This crate knows nothing
//! of stores, indexes or strategies: a renderer that reads an index is the
//! caller's (agents-acms' `StoreRenderer`).

pub mod packer;
pub mod piece;
pub mod summary;

pub use packer::{
    Allocation, BudgetPacker, FIRST_LEADERS, GreedyPacker, LEADER_SHARE, MAX_BYTES_PER_TOKEN, PACK_LEADER_SHARE,
    PACK_LEADERS, PIECE_SHARE, PackOutcome, REPRESENTED_FILES, ScoreParts, ScoredFragment, at_depth, depth_ladder,
    sort_scored,
};
pub use piece::{
    DEPTH_STEPS, DepthRenderer, InlineRenderer, MIN_FRAGMENT_TOKENS, Piece, PieceRole, cost, file_uri, heading,
    is_inside, line_span, names_member_of, own_name, source_inside, uri_path, without_ordinal,
};
pub use summary::{extractive_summary, summary_lines};
