//! C and C++ (`"c"`, `"cpp"`), on `tree-sitter-c` and `tree-sitter-cpp`.
//!
//! Node 0 is the file as a [`NodeKind::Module`]. One parse, one walk over
//! the declaration levels (file, `namespace`, `extern "C"`, class bodies and
//! every preprocessor conditional branch, so declarations under
//! `#ifdef`/`#else` count), and a flat scan of each function body for calls.
//!
//! What becomes a node:
//!
//! - `#include` -> an [`NodeKind::Import`] named by the path (`stdio.h`,
//!   `util/bar.h`) plus an import reference from it, `system` for `<...>`.
//!   Computed includes (`#include FOO`) are skipped.
//! - `#define` -> [`NodeKind::Macro`], object-like and function-like; the
//!   include guard (a valueless `#define X` inside `#ifndef X`) is skipped.
//!   The signature is `#define NAME(params)`, plus the value when it is one
//!   short line.
//! - function definitions -> [`NodeKind::Function`] (or `Method` in a class
//!   body). Prototypes become `Function` nodes only in header files
//!   (`.h`, `.hpp`, `.hh`, `.hxx`, `.inl`, ...): in a source file they are
//!   forward declarations of something defined elsewhere, and would only
//!   duplicate the definition. Method prototypes in class bodies are always
//!   `Method` nodes, so a method declared in a class and defined out of line
//!   in the same file appears twice (`Foo.bar`, `Foo.bar~2`).
//! - out-of-line definitions `void Foo::bar() {}` -> `Method` under the node
//!   of `Foo` when `Foo` is a class/struct defined earlier in the file (C++
//!   requires that anyway), a `Function` under the namespace node when `Foo`
//!   is a namespace of the file, else a `Method` under the enclosing
//!   container with name `bar` and symbol path `Foo.bar`. Such a member's
//!   span lies outside its parent's span.
//! - `struct`/`union` -> [`NodeKind::Struct`], `class` -> `Class`, `enum` ->
//!   `Enum`, each with its members: data members and enumerators are
//!   [`NodeKind::Field`]s; anonymous nested structs/unions without a
//!   declarator are flattened into their parent, and the enumerators of an
//!   anonymous `enum { A, B };` become `Variable`s (`Field`s in a class) of
//!   the container. A class whose name follows an attribute macro
//!   (`class API_EXPORT Foo {`), which the grammar misreads as a function, is
//!   recovered as the class `Foo`. `typedef struct {..} X;`
//!   is a `Struct` named `X` (its signature `typedef struct {...} X`); a
//!   tagged `typedef struct tag {..} X;` is a `Struct` `tag` plus a
//!   `TypeAlias` `X` (one node if the names agree).
//! - `typedef`s and C++ `using X = Y;` -> [`NodeKind::TypeAlias`].
//! - global variables (file or namespace level) -> [`NodeKind::Variable`];
//!   `extern` declarations count only in headers. The signature stops before
//!   the initializer.
//! - `namespace` -> [`NodeKind::Namespace`] (`namespace a::b` gives two
//!   nested nodes; anonymous namespaces are transparent).
//! - templates: the templated declaration, spanning `template <...>`, whose
//!   signature starts with it.
//! - tests: GoogleTest `TEST(Suite, Name)`, `TEST_F`, `TEST_P`, `TYPED_TEST`
//!   -> [`NodeKind::Test`] named `Suite.Name`; Catch2/doctest
//!   `TEST_CASE("name") { .. }` -> `Test` named by the string; free
//!   functions named `test_*`, or `test*` in a file under a `test`/`tests`
//!   directory -> `Test`.
//!
//! References: `Calls` from the innermost function for each call expression,
//! once per (function, target): `foo`, `obj.method`, `ptr->method` as
//! `ptr.method`, `this->f` as `this.f`, `ns::f`; template arguments are
//! dropped (`std::make_shared<T>` -> `std::make_shared`). `Inherits` for base
//! classes (template arguments dropped). `Mentions` of the type names in
//! function signatures, fields, variables and aliases, once per node,
//! skipping primitive types, the usual standard typedefs (`size_t`,
//! `uint8_t`, `FILE`, ...), template parameters and `std::` names.
//!
//! Docs: the comment block directly above a declaration (`/** */`, `///`,
//! `//` lines), not a comment trailing the previous line; fields and
//! enumerators also take a trailing same-line comment (`int x; /**< x */`).
//!
//! Preprocessor directives are not expanded, so a file's tree can be
//! partial (a warning says where). A file whose tree has errors is parsed
//! again with its conditional directives blanked, every branch's code in
//! place, and with the upper-case macros a grammar cannot expand blanked
//! (`FMT_BEGIN_NAMESPACE`, `SPDLOG_INLINE`), and the reading whose errors
//! cover the fewest bytes is kept: the usual `#ifdef __cplusplus` /
//! `extern "C" {` / `#endif` then balances, and an `#if` inside a
//! constructor's initializer list no longer turns the rest of the file into
//! one broken class.
//!
//! `.h` is detected as C. A header that does not parse cleanly as C but
//! contains C++ markers (`class `, `namespace `, `template<`) is parsed again
//! as C++, and the tree whose errors cover fewer bytes is kept (C on a
//! tie): one ERROR over a whole C++ header in C (spdlog's
//! `pattern_formatter-inl.h`) loses to a few small ones in C++.

use std::collections::HashMap;

use tree_sitter::{InputEdit, Node, Parser, Tree};

use crate::lang::{Analyzer, FileBuilder, collapse, node_text, parse, preceding_comments, signature_until};
use crate::model::{FileAnalysis, NodeKind, Point, RefKind, Reference, Span};
use crate::resolve::{ResolveContext, dir_of, join_normalized};

pub struct CAnalyzer;

impl Analyzer for CAnalyzer {
    fn languages(&self) -> &'static [&'static str] {
        &["c", "cpp"]
    }

    fn analyze(&self, language: &str, path: &str, text: &str) -> FileAnalysis {
        let file = text;
        let blanked = blank_annotation_macros(text);
        let text = blanked.as_deref().unwrap_or(text);
        let mut trees = parses_c_family(language, path, text).into_iter();
        let Some(first) = trees.next() else {
            let mut analysis = FileAnalysis::file_only(NodeKind::Module, path, text);
            analysis.warnings.push(format!("{language}: the grammar could not parse this file"));
            return analysis;
        };
        // A conditional the grammar cannot place (an `#if` inside a
        // constructor's initializer list), a macro that opens a namespace
        // (`FMT_BEGIN_NAMESPACE`) or one among a definition's words
        // (`SPDLOG_INLINE void logger::flush()`) can turn the rest of the
        // file into one broken declaration. So, in each grammar the file may
        // be written in (the second only while the first keeps errors), it
        // is read with the conditionals as blanks, every branch's code in
        // place, and, while that keeps errors, with only the first spelling
        // of a header written once per branch ([`alternative_headers`]);
        // then with the macros blanked on top of the better of those
        // readings (and both at once when the conditionals alone lost),
        // each try reparsing from the reading it changes; the reading whose
        // errors cover the fewest bytes is kept.
        let others: Vec<Tree> = trees.collect();
        let mut extent = error_extent(&first);
        let mut best: Option<(Tree, String)> = None;
        for tree in std::iter::once(&first).chain(&others) {
            if extent.0 == 0 && (best.is_some() || extent.1 == 0) {
                break;
            }
            let mut keep = |read: Option<(Tree, String)>| {
                let read = read?;
                let read_extent = error_extent(&read.0);
                if read_extent < extent {
                    extent = read_extent;
                    best = Some(read.clone());
                }
                Some((read, read_extent))
            };
            let all = keep(try_blanked(tree, text, Conditionals::AllBranches, false));
            let alternatives = match &all {
                Some((_, e)) if *e == (0, 0) => None,
                _ => keep(try_blanked(tree, text, Conditionals::AlternativeHeaders, false)),
            };
            let own = error_extent(tree);
            let conditionals =
                [all, alternatives].into_iter().flatten().filter(|(_, e)| *e < own).min_by_key(|(_, e)| *e);
            match conditionals {
                Some(((read, read_text), _)) => {
                    keep(try_blanked(&read, &read_text, Conditionals::Keep, true));
                }
                None => {
                    keep(try_blanked(tree, text, Conditionals::Keep, true));
                    keep(try_blanked(tree, text, Conditionals::AllBranches, true));
                }
            }
        }
        let (tree, text, guard) = match &best {
            Some((flat_tree, flat)) => (flat_tree.clone(), flat.as_str(), include_guard(text)),
            None => (first, text, None),
        };
        let mut walker = Walker::new(path, text);
        walker.guards.extend(guard);
        walker.builder.syntax_warnings(&tree);
        walker.items(tree.root_node(), 0, Ctx::File);
        let mut analysis = walker.finish();
        if text != file {
            reach_back_over_blanks(&mut analysis, text, file);
        }
        analysis
    }

    /// `<x.h>`: the one file ending with `include/x.h`, else unresolved (a
    /// system or third-party header). `"x.h"`: the file next to the includer,
    /// else the one file whose path ends with `x.h`; ambiguous stays `None`.
    fn resolve_import(&self, ctx: &ResolveContext<'_>, from_path: &str, reference: &Reference) -> Option<String> {
        let target = reference.target.as_str();
        if reference.system {
            let under_include: Vec<&str> = ctx
                .ending_with(target)
                .into_iter()
                .filter(|p| {
                    p.strip_suffix(target).is_some_and(|prefix| prefix == "include/" || prefix.ends_with("/include/"))
                })
                .collect();
            return match under_include.as_slice() {
                [one] => Some(one.to_string()),
                _ => None,
            };
        }
        if let Some(joined) = join_normalized(dir_of(from_path), target)
            && ctx.exists(&joined)
        {
            return Some(joined);
        }
        ctx.unique_ending_with(target)
    }
}

/// Clang's thread-safety annotations, as leveldb, Abseil and Chromium spell
/// them (`Version* current GUARDED_BY(mutex_);`, `void Lock()
/// EXCLUSIVE_LOCK_FUNCTION() { ... }`, `class LOCKABLE Mutex`): macros the
/// grammar reads as a declarator or a method's name, so `Mutex::Lock`
/// became a method `EXCLUSIVE_LOCK_FUNCTION` and the declarations after
/// one in a class were cut apart. Each takes its arguments, if any.
const ANNOTATION_MACROS: [&str; 20] = [
    "GUARDED_BY",
    "PT_GUARDED_BY",
    "ACQUIRED_AFTER",
    "ACQUIRED_BEFORE",
    "EXCLUSIVE_LOCKS_REQUIRED",
    "SHARED_LOCKS_REQUIRED",
    "LOCKS_EXCLUDED",
    "LOCK_RETURNED",
    "LOCKABLE",
    "SCOPED_LOCKABLE",
    "EXCLUSIVE_LOCK_FUNCTION",
    "SHARED_LOCK_FUNCTION",
    "UNLOCK_FUNCTION",
    "EXCLUSIVE_TRYLOCK_FUNCTION",
    "SHARED_TRYLOCK_FUNCTION",
    "ASSERT_EXCLUSIVE_LOCK",
    "ASSERT_SHARED_LOCK",
    "NO_THREAD_SAFETY_ANALYSIS",
    "THREAD_ANNOTATION_ATTRIBUTE__",
    "GUARDED_VAR",
];

/// `text` with each [`ANNOTATION_MACROS`] use (also `ABSL_`-prefixed) and
/// its parenthesised arguments turned to spaces, line breaks kept, so the
/// grammar reads the declarations around them and every span stays where
/// it is in the file; `None` when there is none. A macro's own definition
/// (`#define GUARDED_BY(x) ...`) is left as it is.
fn blank_annotation_macros(text: &str) -> Option<String> {
    // Every name holds one of these: four scans of the file, not twenty.
    if !["LOCK", "GUARDED", "ACQUIRED", "THREAD_"].iter().any(|part| text.contains(part)) {
        return None;
    }
    let bytes = text.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut blank: Vec<std::ops::Range<usize>> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !(bytes[at].is_ascii_uppercase() && (at == 0 || !ident(bytes[at - 1]))) {
            at += 1;
            continue;
        }
        let end = at + bytes[at..].iter().take_while(|&&b| ident(b)).count();
        let word = &text[at..end];
        let name = word.strip_prefix("ABSL_").unwrap_or(word);
        // Is it one, and not on a preprocessor line (its `#define`, or a
        // line that continues one)?
        let is_use = ANNOTATION_MACROS.contains(&name) && !in_directive(text, at);
        if !is_use {
            at = end;
            continue;
        }
        // Its arguments: balanced parentheses right after it.
        let mut stop = end;
        let open = end + bytes[end..].iter().take_while(|b| **b == b' ' || **b == b'\t').count();
        if bytes.get(open) == Some(&b'(') {
            let mut depth = 0usize;
            for (i, &b) in bytes[open..].iter().enumerate() {
                match b {
                    b'(' => depth += 1,
                    b')' => {
                        depth -= 1;
                        if depth == 0 {
                            stop = open + i + 1;
                            break;
                        }
                    }
                    b';' | b'{' | b'}' => break,
                    _ => {}
                }
            }
            if stop == end {
                at = end;
                continue; // unbalanced: leave it
            }
        }
        blank.push(at..stop);
        at = stop;
    }
    if blank.is_empty() {
        return None;
    }
    let mut out = text.as_bytes().to_vec();
    for range in blank {
        for b in &mut out[range] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    // Every byte of a range became an ASCII space (a line break stayed): the
    // text is as long as the file, line for line, and still UTF-8.
    String::from_utf8(out).ok()
}

/// Parses with the grammar of `language`, re-parsing a C++-looking `.h` as C++.
pub(crate) fn parse_c_family(language: &str, path: &str, text: &str) -> Option<Tree> {
    parses_c_family(language, path, text).into_iter().next()
}

/// The trees of `text` in each grammar it may be written in, the one whose
/// errors cover the fewest bytes first: C++ for `"cpp"`; C for `"c"`, and
/// C++ too for a `.h` that does not parse cleanly as C and
/// [`looks_like_cpp`], or that opens a C++ construct on a line of its own
/// ([`opens_cpp_construct`]). The C grammar reads `namespace leveldb {`
/// without an error, as a function of that name (leveldb's
/// `util/crc32c.h`), so such a header is C++ on a tie; any other is C.
fn parses_c_family(language: &str, path: &str, text: &str) -> Vec<Tree> {
    let cpp_language: tree_sitter::Language = tree_sitter_cpp::LANGUAGE.into();
    if language == "cpp" {
        return parse(&cpp_language, text).into_iter().collect();
    }
    let Some(tree) = parse(&tree_sitter_c::LANGUAGE.into(), text) else { return Vec::new() };
    let is_h = path.rsplit_once('.').is_some_and(|(_, ext)| ext.eq_ignore_ascii_case("h"));
    if !is_h {
        return vec![tree];
    }
    let cpp_first = opens_cpp_construct(text);
    if (cpp_first || (tree.root_node().has_error() && looks_like_cpp(text)))
        && let Some(cpp_tree) = parse(&cpp_language, text)
    {
        let (cpp, c) = (error_extent(&cpp_tree), error_extent(&tree));
        return if cpp < c || (cpp_first && cpp == c) { vec![cpp_tree, tree] } else { vec![tree, cpp_tree] };
    }
    vec![tree]
}

/// Whether a line of `text` opens a namespace, a class or a template: the
/// first word of the line, followed by a name (or `<`).
fn opens_cpp_construct(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start();
        ["namespace ", "class ", "template<", "template <"].iter().any(|word| {
            line.strip_prefix(word).is_some_and(|rest| {
                word.ends_with('<') || rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            })
        })
    })
}

/// Whether byte `at` of `text` lies on a preprocessor directive's line or on
/// a line that a `\` at the end of the one before continues.
fn in_directive(text: &str, at: usize) -> bool {
    let mut line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    loop {
        if text[line_start..].trim_start().starts_with('#') {
            return true;
        }
        if line_start == 0 || !text[..line_start - 1].trim_end_matches('\r').ends_with('\\') {
            return false;
        }
        line_start = text[..line_start - 1].rfind('\n').map_or(0, |i| i + 1);
    }
}

/// A node that starts where a blanked macro ended (`SPDLOG_INLINE void
/// f()` read as `              void f()`) starts at the macro instead: what
/// lies before it on its line was blank only in `read`, the text the
/// grammar read, not in `file`.
fn reach_back_over_blanks(analysis: &mut FileAnalysis, read: &str, file: &str) {
    for node in analysis.nodes.iter_mut().skip(1) {
        let start = node.span.start_byte;
        let line_start = file.get(..start).and_then(|before| before.rfind('\n')).map_or(0, |i| i + 1);
        let (Some(was), Some(is)) = (read.get(line_start..start), file.get(line_start..start)) else { continue };
        if was.trim().is_empty() && !is.trim().is_empty() {
            let indent = is.len() - is.trim_start().len();
            node.span.start_byte = line_start + indent;
            node.span.start.column = indent as u32;
        }
    }
}

/// How a reading of a C or C++ file treats its conditional directives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conditionals {
    /// Left as written.
    Keep,
    /// Blanked, the code of every branch left in place.
    AllBranches,
    /// Blanked, and where each branch of a conditional opens (or closes)
    /// the same number of braces, one spelling per branch of a definition's
    /// header (hiredis's libuv adapter's `redisLibuvTimeout`: two headers,
    /// one body), the code of every branch but the first blanked too, so
    /// the definition opens once ([`alternative_headers`]).
    AlternativeHeaders,
}

/// `text` with, turned to spaces (line breaks kept, so every span stays
/// where it is in the file): every conditional directive (`#if`, `#ifdef`,
/// `#ifndef`, `#elif`, `#elifdef`, `#elifndef`, `#else`, `#endif`, with its
/// continued lines) unless `conditionals` keeps them, and for
/// [`Conditionals::AlternativeHeaders`] the code of the later spellings of
/// a header ([`alternative_headers`]); with `macros`, every
/// line that is one upper-case macro name alone and every macro word among
/// a declaration's words ([`macro_words`]). `None` when nothing changed,
/// or, for [`Conditionals::AlternativeHeaders`], when no header is spelled
/// twice (the text would be [`Conditionals::AllBranches`]' reading).
fn blank_lines(text: &str, conditionals: Conditionals, macros: bool) -> Option<Blanked> {
    let mut out = text.as_bytes().to_vec();
    let mut ranges = Vec::new();
    // Whether the line before ended a conditional, or any directive, with `\`.
    let (mut continued, mut continued_directive) = (false, false);
    let dead_lines =
        if conditionals == Conditionals::AlternativeHeaders { alternative_headers(text) } else { Vec::new() };
    if conditionals == Conditionals::AlternativeHeaders && !dead_lines.contains(&true) {
        // No header is spelled twice: the reading of every branch is this one.
        return None;
    }
    let mut start = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let end = start + line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        let rest = body.trim_start();
        let in_directive = continued_directive || rest.starts_with('#');
        let directive = if continued { None } else { conditional_directive(rest) };
        let conditional = conditionals != Conditionals::Keep && (continued || directive.is_some());
        let dead = !conditional && dead_lines.get(index).copied().unwrap_or(false);
        continued = conditional && body.ends_with('\\');
        continued_directive = in_directive && body.ends_with('\\');
        let blank = if conditional || dead {
            std::iter::once(0..body.len()).collect()
        } else if macros && !in_directive {
            macro_words(body)
        } else {
            Vec::new()
        };
        for range in blank.into_iter().filter(|r| !r.is_empty()) {
            for b in &mut out[start + range.start..start + range.end] {
                *b = b' ';
            }
            ranges.push(start + range.start..start + range.end);
        }
        start = end;
    }
    if ranges.is_empty() {
        return None;
    }
    // Only bytes of lines, never their breaks, became ASCII spaces.
    String::from_utf8(out).ok().map(|text| Blanked { text, ranges })
}

/// The conditional directive a line opens, continues or closes
/// (`"if"`, `"elif"`, `"else"`, `"endif"`, ...), if any.
fn conditional_directive(line: &str) -> Option<&'static str> {
    const DIRECTIVES: [&str; 8] = ["if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif"];
    let after = line.trim_start().strip_prefix('#')?.trim_start_matches([' ', '\t']);
    let word = after.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').next().unwrap_or("");
    DIRECTIVES.iter().find(|d| **d == word).copied()
}

/// For each line of `text`, whether it is code of a later branch of a
/// conditional whose branches all open (or all close) the same number of
/// braces, more than none: alternative spellings of one header (`#if` old
/// API: `void f(a, int status) {` `#else` `void f(a) {` `#endif`, one
/// body). Read with every branch, such a definition opens twice and never
/// closes; a conditional whose branches balance (`#ifdef _WIN32` one set of
/// functions `#else` another) is left whole. Braces are counted outside
/// strings, character literals and `//` comments, on lines that are not
/// directives.
fn alternative_headers(text: &str) -> Vec<bool> {
    struct Branch {
        first_line: usize,
        braces: i64,
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut dead = vec![false; lines.len()];
    // Each open conditional's branches so far.
    let mut open: Vec<Vec<Branch>> = Vec::new();
    let mut continued = false;
    for (index, line) in lines.iter().enumerate() {
        let body = line.trim_end_matches('\r');
        let directive_line = continued || body.trim_start().starts_with('#');
        continued = directive_line && body.ends_with('\\');
        if !directive_line {
            if let Some(branch) = open.last_mut().and_then(|branches| branches.last_mut()) {
                branch.braces += brace_balance(body);
            }
            continue;
        }
        match conditional_directive(body) {
            Some("if" | "ifdef" | "ifndef") => open.push(vec![Branch { first_line: index + 1, braces: 0 }]),
            Some("endif") => {
                let Some(branches) = open.pop() else { continue };
                let first = branches[0].braces;
                if branches.len() > 1 && first != 0 && branches.iter().all(|b| b.braces == first) {
                    for (k, branch) in branches.iter().enumerate().skip(1) {
                        let end = branches.get(k + 1).map_or(index, |next| next.first_line - 1);
                        dead[branch.first_line..end].fill(true);
                    }
                }
                // The enclosing branch reads this conditional as its first branch.
                if let Some(branch) = open.last_mut().and_then(|branches| branches.last_mut()) {
                    branch.braces += first;
                }
            }
            Some(_) => {
                if let Some(branches) = open.last_mut() {
                    branches.push(Branch { first_line: index + 1, braces: 0 });
                }
            }
            None => {}
        }
    }
    dead
}

/// Braces a code line opens less those it closes, outside string and
/// character literals and a `//` comment.
fn brace_balance(line: &str) -> i64 {
    let (mut balance, mut quote, mut escaped) = (0, None, false);
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == q {
                    quote = None;
                }
            }
            None => match b {
                b'"' | b'\'' => quote = Some(b),
                b'/' if bytes.get(i + 1) == Some(&b'/') => break,
                b'{' => balance += 1,
                b'}' => balance -= 1,
                _ => {}
            },
        }
    }
    balance
}

/// `text` (parsed as `tree`) with [`blank_lines`] applied, reparsed;
/// `None` when nothing was blanked.
fn try_blanked(tree: &Tree, text: &str, conditionals: Conditionals, macros: bool) -> Option<(Tree, String)> {
    let flat = blank_lines(text, conditionals, macros)?;
    let tree = reparse_blanked(tree, text, &flat)?;
    Some((tree, flat.text))
}

/// A text with byte ranges turned to spaces, each inside one line.
struct Blanked {
    text: String,
    ranges: Vec<std::ops::Range<usize>>,
}

/// `tree` (of `text`) parsed again for `blanked`, told which ranges
/// changed, so tree-sitter reuses what the blanks left alone: a file with
/// hundreds of directives costs a fraction of a fresh parse per try.
fn reparse_blanked(tree: &Tree, text: &str, blanked: &Blanked) -> Option<Tree> {
    let mut old = tree.clone();
    let (mut row, mut line_start, mut scanned) = (0, 0, 0);
    for range in &blanked.ranges {
        for (i, b) in text.as_bytes()[scanned..range.start].iter().enumerate() {
            if *b == b'\n' {
                row += 1;
                line_start = scanned + i + 1;
            }
        }
        scanned = range.start;
        let start = tree_sitter::Point { row, column: range.start - line_start };
        let end = tree_sitter::Point { row, column: range.end - line_start };
        old.edit(&InputEdit {
            start_byte: range.start,
            old_end_byte: range.end,
            new_end_byte: range.end,
            start_position: start,
            old_end_position: end,
            new_end_position: end,
        });
    }
    let mut parser = Parser::new();
    parser.set_language(&tree.language()).ok()?;
    parser.parse(&blanked.text, Some(&old))
}

/// Words before which an upper-case word is a name, not a macro the
/// grammar cannot expand (`struct FOO_BAR {`, `case FOO_BAR:`).
const BEFORE_NAMES: [&str; 10] =
    ["struct", "class", "enum", "union", "typedef", "return", "case", "goto", "sizeof", "namespace"];

/// The byte ranges of a code line's macro words the grammar would misread:
/// an upper-case name with an underscore that stands among a declaration's
/// words, after the line's start, a word (not [`BEFORE_NAMES`]), `*`, `&`
/// or `>`, and before a word, `~` or `::` (`SPDLOG_INLINE void
/// logger::flush()`, `void SPDLOG_INLINE thread_pool::post_log(`), or alone
/// on its line, perhaps before `{`, `;` or a comment (`FMT_BEGIN_NAMESPACE`,
/// `SPDLOG_TRY {`), or between `if` and its condition (`if FMT_CONSTEXPR20
/// (...)`).
fn macro_words(line: &str) -> Vec<std::ops::Range<usize>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(offset) = line[at..].find(ident) {
        let begin = at + offset;
        let end = begin + line[begin..].find(|c: char| !ident(c)).unwrap_or(line.len() - begin);
        at = end;
        let word = &line[begin..end];
        let is_macro = word.starts_with(|c: char| c.is_ascii_uppercase())
            && word.contains('_')
            && word.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        if !is_macro {
            continue;
        }
        let before = line[..begin].trim_end();
        let after = line[end..].trim_start();
        let alone = before.is_empty();
        let previous = before.rsplit(|c: char| !ident(c)).next().unwrap_or("");
        let after_words =
            alone || before.ends_with(['*', '&', '>']) || (!previous.is_empty() && !BEFORE_NAMES.contains(&previous));
        let before_words = after.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '~')
            || after.starts_with("::")
            || (alone && (after.is_empty() || after == ";" || after.starts_with('{') || after.starts_with("//")));
        // `if FMT_CONSTEXPR20 (x)`: a macro standing for `constexpr`.
        let in_if = previous == "if" && after.starts_with('(');
        // `std::tm localtime() SPDLOG_NOEXCEPT {`: a specifier after a
        // parameter list, which the grammar reads as the declarator's name
        // when the list is empty.
        // What may follow a definition's head: its body, an initializer or
        // base list, or the line's end (the brace on the next one).
        let opens =
            |rest: &str| rest.is_empty() || rest.starts_with('{') || (rest.starts_with(':') && !rest.starts_with("::"));
        let specifier = (before.ends_with(')') || previous == "const")
            && (opens(after) || after.starts_with([';', '=']) || after.starts_with("//") || after.starts_with("->"));
        // `class LEVELDB_EXPORT DB {`, `class SPDLOG_API async_logger final
        // : public logger {`: an export macro between the keyword and the
        // class's name, which the grammar reads as the name.
        let export = matches!(previous, "class" | "struct" | "union")
            && after.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && {
                let rest = after[after.find(|c: char| !ident(c)).unwrap_or(after.len())..].trim_start();
                opens(rest) || rest.starts_with("final")
            };
        if (after_words && before_words) || in_if || specifier || export {
            out.push(begin..end);
        }
    }
    out
}

/// The include guard's name: the file's first directive is `#ifndef X` and
/// its next `#define X`.
fn include_guard(text: &str) -> Option<String> {
    let mut directives = text.lines().map(str::trim).filter(|l| l.starts_with('#'));
    let first = directives.next()?.strip_prefix('#')?.trim_start().strip_prefix("ifndef")?.trim();
    let second = directives.next()?.strip_prefix('#')?.trim_start().strip_prefix("define")?.trim();
    (!first.is_empty() && first == second).then(|| first.to_string())
}

/// How much of a tree its errors take: the bytes under its outermost ERROR
/// nodes, then the count of ERROR and MISSING nodes.
fn error_extent(tree: &Tree) -> (usize, usize) {
    let (mut bytes, mut count) = (0, 0);
    preorder(tree.root_node(), |n| {
        if n.is_error() {
            bytes += n.end_byte() - n.start_byte();
            count += 1;
            return false;
        }
        if n.is_missing() {
            count += 1;
        }
        n.has_error()
    });
    (bytes, count)
}

fn looks_like_cpp(text: &str) -> bool {
    text.contains("class ") || text.contains("namespace ") || text.contains("template<") || text.contains("template <")
}

/// Visits `root` and its descendants in order; `visit` returns whether to
/// descend into the node. Iterative, so deep expression trees cannot
/// overflow the stack.
fn preorder<'t>(root: Node<'t>, mut visit: impl FnMut(Node<'t>) -> bool) {
    let mut cursor = root.walk();
    'outer: loop {
        if visit(cursor.node()) && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'outer;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// Where a declaration sits: decides `Function` vs `Method`, `Variable` vs
/// `Field`, and whether prototypes count.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ctx {
    File,
    Namespace,
    Class,
}

const HEADER_EXTENSIONS: &[&str] = &["h", "hh", "hpp", "hxx", "h++", "hp", "inl", "ipp", "tpp", "txx", "cuh"];

/// Type names that are in effect primitive: not worth a `Mentions` edge.
const BUILTIN_TYPES: &[&str] = &[
    "size_t",
    "ssize_t",
    "ptrdiff_t",
    "intptr_t",
    "uintptr_t",
    "intmax_t",
    "uintmax_t",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "off_t",
    "time_t",
    "pid_t",
    "wchar_t",
    "char16_t",
    "char32_t",
    "char8_t",
    "bool",
    "FILE",
    "va_list",
    "nullptr_t",
    "max_align_t",
    "string",
    "auto",
];

const GTEST_MACROS: &[&str] = &["TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TYPED_TEST_P", "GTEST_TEST"];
const CATCH_MACROS: &[&str] = &["TEST_CASE", "SCENARIO", "TEST_CASE_METHOD", "TEMPLATE_TEST_CASE"];

struct Walker<'t> {
    builder: FileBuilder,
    text: &'t str,
    header: bool,
    test_file: bool,
    /// Logical names of the enclosing namespaces and classes.
    scope: Vec<String>,
    /// `ns::Class` -> node, for out-of-line member definitions.
    types: HashMap<String, usize>,
    /// `ns::inner` -> node (the first one, when a namespace is reopened).
    namespaces: HashMap<String, usize>,
    /// Names of the template parameters in scope (not mentioned).
    template_params: Vec<String>,
    /// The `#ifndef` guard names in scope.
    guards: Vec<String>,
    /// Nodes whose symbol path was built from a qualified name; their simple name.
    renames: Vec<(usize, String)>,
}

impl<'t> Walker<'t> {
    fn new(path: &str, text: &'t str) -> Walker<'t> {
        let header =
            path.rsplit_once('.').is_some_and(|(_, ext)| HEADER_EXTENSIONS.iter().any(|h| h.eq_ignore_ascii_case(ext)));
        let dirs = path.rsplit_once('/').map_or("", |(d, _)| d);
        let test_file = dirs.split('/').any(|d| d.eq_ignore_ascii_case("test") || d.eq_ignore_ascii_case("tests"));
        Walker {
            builder: FileBuilder::new(NodeKind::Module, path, text),
            text,
            header,
            test_file,
            scope: Vec::new(),
            types: HashMap::new(),
            namespaces: HashMap::new(),
            template_params: Vec::new(),
            guards: Vec::new(),
            renames: Vec::new(),
        }
    }

    fn finish(self) -> FileAnalysis {
        let mut analysis = self.builder.finish();
        for (index, name) in self.renames {
            analysis.nodes[index].name = name;
        }
        analysis
    }

    fn text_of(&self, node: &Node<'_>) -> &'t str {
        node_text(node, self.text)
    }

    fn add(
        &mut self,
        parent: usize,
        kind: NodeKind,
        name: &str,
        span_node: &Node<'_>,
        signature: Option<String>,
        doc: Option<String>,
    ) -> usize {
        let span = trimmed_span(span_node, self.text);
        self.builder.add(parent, kind, name, span, signature, doc)
    }

    fn reference(&mut self, from: usize, kind: RefKind, target: String, node: &Node<'_>) {
        self.builder.reference_once(from, kind, target, Span::of_node(node));
    }

    fn doc(&self, node: &Node<'_>) -> Option<String> {
        preceding_comments(node, self.text, is_leading_comment)
    }

    // ---- declaration levels -------------------------------------------------

    /// Every declaration directly inside `container` (a translation unit,
    /// declaration list, class body or preprocessor block).
    fn items(&mut self, container: Node<'t>, parent: usize, ctx: Ctx) {
        let mut cursor = container.walk();
        let children: Vec<Node<'t>> = container.named_children(&mut cursor).collect();
        for (i, child) in children.iter().enumerate() {
            if child.kind() == "expression_statement"
                && let Some(next) = children.get(i + 1)
                && next.kind() == "compound_statement"
            {
                self.catch_test(*child, *next, parent);
                continue;
            }
            self.item(*child, parent, ctx, None);
        }
    }

    /// One declaration; `outer` is the `template_declaration` around it.
    fn item(&mut self, node: Node<'t>, parent: usize, ctx: Ctx, outer: Option<Node<'t>>) {
        match node.kind() {
            "preproc_include" => self.include(node, parent),
            "preproc_def" | "preproc_function_def" => self.define(node, parent),
            "preproc_ifdef" => {
                let guard = node.child(0).is_some_and(|d| d.kind() == "#ifndef");
                let name = node.child_by_field_name("name").map(|n| self.text_of(&n).to_string());
                let pushed = guard && name.is_some();
                if let (true, Some(name)) = (pushed, name) {
                    self.guards.push(name);
                }
                self.items(node, parent, ctx);
                if pushed {
                    self.guards.pop();
                }
            }
            "preproc_if" | "preproc_else" | "preproc_elif" | "preproc_elifdef" | "ERROR" => {
                self.items(node, parent, ctx)
            }
            "function_definition" => self.function(node, parent, ctx, outer),
            "declaration" | "field_declaration" => self.declaration(node, parent, ctx, outer),
            "type_definition" => self.typedef(node, parent, outer),
            "alias_declaration" => self.alias(node, parent, outer),
            "struct_specifier" | "union_specifier" | "class_specifier" | "enum_specifier" => {
                self.type_spec(node, parent, outer.unwrap_or(node), None);
            }
            "namespace_definition" => self.namespace(node, parent),
            "linkage_specification" => {
                if let Some(body) = node.child_by_field_name("body") {
                    if body.kind() == "declaration_list" {
                        self.items(body, parent, ctx);
                    } else {
                        self.item(body, parent, ctx, None);
                    }
                }
            }
            "template_declaration" => self.template(node, parent, ctx, outer),
            // `public: int x;` in a class the grammar read as a block (see `macro_class`).
            "labeled_statement" => {
                let mut cursor = node.walk();
                let inner: Vec<Node<'t>> =
                    node.named_children(&mut cursor).filter(|c| c.kind() != "statement_identifier").collect();
                for child in inner {
                    self.item(child, parent, ctx, None);
                }
            }
            _ => {}
        }
    }

    fn template(&mut self, node: Node<'t>, parent: usize, ctx: Ctx, outer: Option<Node<'t>>) {
        let before = self.template_params.len();
        if let Some(params) = node.child_by_field_name("parameters") {
            let mut cursor = params.walk();
            for param in params.named_children(&mut cursor) {
                let name = param.child_by_field_name("name").or_else(|| {
                    let mut c = param.walk();
                    param.named_children(&mut c).find(|n| n.kind() == "type_identifier")
                });
                if let Some(name) = name {
                    self.template_params.push(self.text_of(&name).to_string());
                }
            }
        }
        let mut cursor = node.walk();
        let inner = node
            .named_children(&mut cursor)
            .filter(|n| !matches!(n.kind(), "template_parameter_list" | "requires_clause" | "comment"))
            .last();
        if let Some(inner) = inner {
            self.item(inner, parent, ctx, Some(outer.unwrap_or(node)));
        }
        self.template_params.truncate(before);
    }

    fn include(&mut self, node: Node<'t>, parent: usize) {
        let Some(path) = node.child_by_field_name("path") else { return };
        let raw = self.text_of(&path).trim();
        let (target, system) = match path.kind() {
            "system_lib_string" => (raw.trim_start_matches('<').trim_end_matches('>').trim(), true),
            "string_literal" => (raw.trim_matches('"').trim(), false),
            _ => return,
        };
        if target.is_empty() {
            return;
        }
        let signature = collapse(self.text_of(&node));
        let index = self.add(parent, NodeKind::Import, target, &node, Some(signature), None);
        self.builder.import(index, target, Vec::new(), system, trimmed_span(&node, self.text));
    }

    fn define(&mut self, node: Node<'t>, parent: usize) {
        let Some(name) = node.child_by_field_name("name").map(|n| self.text_of(&n)).filter(|n| !n.is_empty()) else {
            return;
        };
        let value = node.child_by_field_name("value").map(|v| collapse(self.text_of(&v)));
        let params = node.child_by_field_name("parameters");
        if params.is_none() && value.is_none() && self.guards.iter().any(|g| g == name) {
            return;
        }
        let mut signature = format!("#define {name}");
        if let Some(params) = params {
            signature.push_str(&collapse(self.text_of(&params)));
        } else if let Some(value) = value.filter(|v| v.len() <= 60 && !v.contains('\\')) {
            signature.push(' ');
            signature.push_str(&value);
        }
        let doc = self.doc(&node);
        self.add(parent, NodeKind::Macro, name, &node, Some(signature), doc);
    }

    fn namespace(&mut self, node: Node<'t>, parent: usize) {
        let body = node.child_by_field_name("body");
        let names: Vec<String> = match node.child_by_field_name("name") {
            Some(name) => {
                self.text_of(&name).split("::").map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
            }
            None => Vec::new(),
        };
        let signature = signature_until(&node, body, self.text);
        let doc = self.doc(&node);
        let mut current = parent;
        for (i, name) in names.iter().enumerate() {
            let sig =
                if i + 1 == names.len() { signature.clone() } else { format!("namespace {}", names[..=i].join("::")) };
            let d = if i == 0 { doc.clone() } else { None };
            current = self.add(current, NodeKind::Namespace, name, &node, Some(sig), d);
            self.scope.push(name.clone());
            self.namespaces.entry(self.scope.join("::")).or_insert(current);
        }
        if let Some(body) = body {
            self.items(body, current, Ctx::Namespace);
        }
        self.scope.truncate(self.scope.len() - names.len());
    }

    /// A `struct`/`union`/`class`/`enum` with a body: its node and members.
    /// `span_node` is the whole declaration (with `template <..>` or `typedef`);
    /// `alias` names an anonymous one (`typedef struct {..} X`).
    fn type_spec(&mut self, spec: Node<'t>, parent: usize, span_node: Node<'t>, alias: Option<&str>) -> Option<usize> {
        let body = spec.child_by_field_name("body")?;
        let name = match (spec.child_by_field_name("name"), alias) {
            (Some(n), _) => simple_type_name(n, self.text).to_string(),
            (None, Some(alias)) => alias.to_string(),
            (None, None) => {
                if spec.kind() == "enum_specifier" {
                    // `enum { A, B };`: the enumerators are constants of the container.
                    let kind =
                        if self.builder.kind(parent).is_type_scope() { NodeKind::Field } else { NodeKind::Variable };
                    self.enumerators(body, parent, kind);
                }
                return None;
            }
        };
        if name.is_empty() {
            return None;
        }
        let kind = match spec.kind() {
            "class_specifier" => NodeKind::Class,
            "enum_specifier" => NodeKind::Enum,
            _ => NodeKind::Struct,
        };
        let signature = if span_node.kind() == "type_definition" {
            let head = collapse(self.text.get(span_node.start_byte()..body.start_byte()).unwrap_or(""));
            let tail = collapse(self.text.get(body.end_byte()..span_node.end_byte()).unwrap_or(""));
            format!("{head} {{...}} {}", tail.trim_end_matches(';').trim())
        } else {
            signature_until(&span_node, Some(body), self.text)
        };
        let doc = self.doc(&span_node);
        let index = self.add(parent, kind, &name, &span_node, Some(signature), doc);
        self.scope.push(name);
        self.types.entry(self.scope.join("::")).or_insert(index);
        let mut cursor = spec.walk();
        for child in spec.named_children(&mut cursor) {
            if child.kind() == "base_class_clause" {
                let mut c = child.walk();
                for base in child.named_children(&mut c) {
                    if matches!(base.kind(), "type_identifier" | "qualified_identifier" | "template_type") {
                        let target = strip_template_args(self.text_of(&base));
                        self.reference(index, RefKind::Inherits, target, &base);
                    }
                }
            }
        }
        if kind == NodeKind::Enum {
            self.enumerators(body, index, NodeKind::Field);
        } else {
            self.items(body, index, Ctx::Class);
        }
        self.scope.pop();
        Some(index)
    }

    fn enumerators(&mut self, list: Node<'t>, parent: usize, kind: NodeKind) {
        let mut cursor = list.walk();
        let children: Vec<Node<'t>> = list.named_children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "enumerator" => {
                    let Some(name) =
                        child.child_by_field_name("name").map(|n| self.text_of(&n)).filter(|n| !n.is_empty())
                    else {
                        continue;
                    };
                    let doc = self.doc(&child).or_else(|| trailing_comment(&child, self.text));
                    let signature = collapse(self.text_of(&child));
                    self.add(parent, kind, name, &child, Some(signature), doc);
                }
                k if k.starts_with("preproc_") => self.enumerators(child, parent, kind),
                _ => {}
            }
        }
    }

    fn typedef(&mut self, node: Node<'t>, parent: usize, outer: Option<Node<'t>>) {
        let span_node = outer.unwrap_or(node);
        let mut cursor = node.walk();
        let declarators: Vec<Node<'t>> = node.children_by_field_name("declarator", &mut cursor).collect();
        let names: Vec<&'t str> =
            declarators.iter().map(|d| innermost_name(*d, self.text)).filter(|n| !n.is_empty()).collect();
        let ty = node.child_by_field_name("type");
        let mut type_index = None;
        let mut type_name = None;
        if let Some(ty) = ty
            && ty.child_by_field_name("body").is_some()
            && matches!(ty.kind(), "struct_specifier" | "union_specifier" | "class_specifier" | "enum_specifier")
        {
            // Name an anonymous aggregate by its first plain declarator (`X`, not `*PX`).
            let plain = declarators
                .iter()
                .find(|d| matches!(d.kind(), "type_identifier" | "primitive_type"))
                .map(|d| self.text_of(d));
            type_name = ty.child_by_field_name("name").map(|n| simple_type_name(n, self.text).to_string());
            let alias = plain.or(names.first().copied());
            type_index = self.type_spec(ty, parent, span_node, alias);
            if type_name.is_none() {
                type_name = alias.map(str::to_string);
            }
        }
        let doc = self.doc(&span_node);
        let prefix_end = declarators.first().map_or(node.end_byte(), |d| d.start_byte());
        for (declarator, name) in declarators.iter().zip(names) {
            if type_index.is_some() && type_name.as_deref() == Some(name) {
                continue;
            }
            let signature = if type_index.is_some() {
                let keyword = ty.map_or("", |t| t.child(0).map_or("", |k| self.text_of(&k)));
                format!(
                    "typedef {keyword} {} {}",
                    type_name.as_deref().unwrap_or(""),
                    collapse(self.text_of(declarator))
                )
            } else {
                let head = collapse(self.text.get(span_node.start_byte()..prefix_end).unwrap_or(""));
                format!("{head} {}", collapse(self.text_of(declarator)))
            };
            let index = self.add(parent, NodeKind::TypeAlias, name, &span_node, Some(signature), doc.clone());
            if type_index.is_none()
                && let Some(ty) = ty
            {
                self.mention_types(index, ty, None);
            }
            self.mention_types(index, *declarator, Some(name));
        }
    }

    fn alias(&mut self, node: Node<'t>, parent: usize, outer: Option<Node<'t>>) {
        let Some(name) = node.child_by_field_name("name").map(|n| self.text_of(&n)).filter(|n| !n.is_empty()) else {
            return;
        };
        let span_node = outer.unwrap_or(node);
        let signature = signature_until(&span_node, None, self.text);
        let doc = self.doc(&span_node);
        let index = self.add(parent, NodeKind::TypeAlias, name, &span_node, Some(signature), doc);
        if let Some(ty) = node.child_by_field_name("type") {
            self.mention_types(index, ty, None);
        }
    }

    /// `declaration` (file/namespace level, or constructors in a class) and
    /// `field_declaration` (class members).
    fn declaration(&mut self, node: Node<'t>, parent: usize, ctx: Ctx, outer: Option<Node<'t>>) {
        let span_node = outer.unwrap_or(node);
        let ty = node.child_by_field_name("type");
        let mut cursor = node.walk();
        let declarators: Vec<Node<'t>> = node.children_by_field_name("declarator", &mut cursor).collect();
        if let Some(ty) = ty
            && ty.child_by_field_name("body").is_some()
            && matches!(ty.kind(), "struct_specifier" | "union_specifier" | "class_specifier" | "enum_specifier")
        {
            let named = ty.child_by_field_name("name").is_some();
            if named || (declarators.is_empty() && ty.kind() == "enum_specifier") {
                // (An anonymous enum's enumerators go to the container.)
                self.type_spec(ty, parent, span_node, None);
            } else if declarators.is_empty() && ctx == Ctx::Class {
                // An anonymous struct/union member: its fields belong to the parent.
                if let Some(body) = ty.child_by_field_name("body") {
                    self.items(body, parent, Ctx::Class);
                }
            }
        }
        let is_extern = has_specifier(&node, "extern", self.text);
        let doc = self.doc(&span_node);
        let prefix = collapse(
            self.text
                .get(span_node.start_byte()..declarators.first().map_or(node.end_byte(), |d| d.start_byte()))
                .unwrap_or(""),
        );
        for declarator in &declarators {
            if let Some(function) = function_declarator(*declarator) {
                let Some((scope, name)) = function_name(function, self.text) else { continue };
                // Prototypes in source files are forward declarations, and a
                // qualified one redeclares something declared elsewhere.
                if (ctx != Ctx::Class && !self.header) || !scope.is_empty() {
                    continue;
                }
                let signature = if declarators.len() == 1 {
                    signature_until(&span_node, None, self.text)
                } else {
                    format!("{prefix} {}", collapse(self.text_of(declarator)))
                };
                let kind = if ctx == Ctx::Class { NodeKind::Method } else { NodeKind::Function };
                let index = self.add(parent, kind, &name, &span_node, Some(signature), doc.clone());
                self.mention_signature(index, node, None);
                continue;
            }
            if ctx != Ctx::Class && is_extern && !self.header {
                continue;
            }
            let target = value_declarator(*declarator);
            let (scope, name) = match qualified_parts(target, self.text) {
                Some(parts) => parts,
                None => continue,
            };
            let kind = if ctx == Ctx::Class { NodeKind::Field } else { NodeKind::Variable };
            // The declarator without its initializer: `*names[]`, not `*names[] = {..}`.
            let declared = match declarator.kind() {
                "init_declarator" => declarator.child_by_field_name("declarator").unwrap_or(*declarator),
                _ => *declarator,
            };
            let signature = format!("{prefix} {}", collapse(self.text_of(&declared)));
            let doc = if ctx == Ctx::Class {
                doc.clone().or_else(|| trailing_comment(&node, self.text))
            } else {
                doc.clone()
            };
            let index = if scope.is_empty() {
                self.add(parent, kind, &name, &span_node, Some(signature), doc)
            } else {
                // `int Foo::count = 0;`: the definition of a static member.
                if self.lookup(&scope).is_some() {
                    continue;
                }
                let qualified = format!("{}.{name}", scope.join("."));
                let index = self.add(parent, kind, &qualified, &span_node, Some(signature), doc);
                self.renames.push((index, name));
                index
            };
            if let Some(ty) = ty {
                self.mention_types(index, ty, None);
            }
            self.mention_types(index, declared, None);
        }
    }

    fn function(&mut self, node: Node<'t>, parent: usize, ctx: Ctx, outer: Option<Node<'t>>) {
        let span_node = outer.unwrap_or(node);
        let body = node.child_by_field_name("body");
        let Some(declarator) = node.child_by_field_name("declarator") else { return };
        if let Some(ty) = node.child_by_field_name("type")
            && matches!(ty.kind(), "class_specifier" | "struct_specifier" | "union_specifier")
            && ty.child_by_field_name("body").is_none()
            && declarator.kind() == "identifier"
            && let Some(body) = body.filter(|b| b.kind() == "compound_statement")
        {
            self.macro_class(ty, declarator, body, parent, span_node);
            return;
        }
        let doc = self.doc(&span_node);
        let mut cursor = node.walk();
        let sig_end = node
            .children(&mut cursor)
            .find(|c| c.kind() == "field_initializer_list")
            .or(body)
            .filter(|n| n.kind() != "try_statement");
        let signature = signature_until(&span_node, sig_end.or(body), self.text);

        if let Some(function) = function_declarator(declarator)
            && let Some(test_name) = gtest_name(function, self.text)
        {
            let index = self.add(parent, NodeKind::Test, &test_name, &span_node, Some(signature), doc);
            if let Some(body) = body {
                self.calls(index, body);
            }
            return;
        }
        let Some((mut scope, name)) =
            function_declarator(declarator).and_then(|f| function_name(f, self.text)).or_else(|| {
                (declarator.kind() == "operator_cast").then(|| (Vec::new(), operator_cast_name(declarator, self.text)))
            })
        else {
            return;
        };
        if ctx == Ctx::Class {
            // No qualified definitions inside a class: a misparse (`MACRO std::string f()`).
            scope.clear();
        }
        let index = if scope.is_empty() {
            let kind = if ctx == Ctx::Class {
                NodeKind::Method
            } else if self.is_test_name(&name) {
                NodeKind::Test
            } else {
                NodeKind::Function
            };
            self.add(parent, kind, &name, &span_node, Some(signature), doc)
        } else {
            match self.lookup(&scope) {
                Some((owner, NodeKind::Namespace)) => {
                    let kind = if self.is_test_name(&name) { NodeKind::Test } else { NodeKind::Function };
                    self.add(owner, kind, &name, &span_node, Some(signature), doc)
                }
                Some((owner, _)) => self.add(owner, NodeKind::Method, &name, &span_node, Some(signature), doc),
                None => {
                    let qualified = format!("{}.{name}", scope.join("."));
                    let index = self.add(parent, NodeKind::Method, &qualified, &span_node, Some(signature), doc);
                    self.renames.push((index, name));
                    index
                }
            }
        };
        self.mention_signature(index, node, body);
        if let Some(body) = body {
            self.calls(index, body);
        }
    }

    /// `class EXPORT_MACRO Name { ... };`: the grammar reads a class whose
    /// name follows an (unexpanded) attribute macro as a function `Name` of
    /// return type `class EXPORT_MACRO` with a block body. Recovered as the
    /// class `Name`, its block walked as a class body.
    fn macro_class(&mut self, ty: Node<'t>, declarator: Node<'t>, body: Node<'t>, parent: usize, span_node: Node<'t>) {
        let kind = if ty.kind() == "class_specifier" { NodeKind::Class } else { NodeKind::Struct };
        let name = self.text_of(&declarator);
        let signature = signature_until(&span_node, Some(body), self.text);
        let doc = self.doc(&span_node);
        let index = self.add(parent, kind, name, &span_node, Some(signature), doc);
        self.scope.push(name.to_string());
        self.types.entry(self.scope.join("::")).or_insert(index);
        self.items(body, index, Ctx::Class);
        self.scope.pop();
    }

    /// Catch2/doctest `TEST_CASE("name", "[tag]") { ... }`, which parses as a
    /// call statement followed by a block.
    fn catch_test(&mut self, call_stmt: Node<'t>, block: Node<'t>, parent: usize) {
        let Some(call) = call_stmt.named_child(0).filter(|c| c.kind() == "call_expression") else { return };
        let Some(function) = call.child_by_field_name("function") else { return };
        let macro_name = self.text_of(&function);
        if !CATCH_MACROS.contains(&macro_name) {
            return;
        }
        let Some(args) = call.child_by_field_name("arguments") else { return };
        let mut cursor = args.walk();
        let Some(title) = args.named_children(&mut cursor).find(|a| a.kind() == "string_literal") else { return };
        let name = self.text_of(&title).trim_matches('"').to_string();
        if name.is_empty() {
            return;
        }
        let span = Span::of_node(&call_stmt).through(Span::of_node(&block));
        let signature = collapse(self.text_of(&call));
        let doc = self.doc(&call_stmt);
        let index = self.builder.add(parent, NodeKind::Test, &name, span, Some(signature), doc);
        self.calls(index, block);
    }

    fn is_test_name(&self, name: &str) -> bool {
        name.starts_with("test_") || (self.test_file && name.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("test")))
    }

    /// The class or namespace a qualified name's scope denotes, looked up
    /// from the innermost enclosing scope outwards.
    fn lookup(&self, scope: &[String]) -> Option<(usize, NodeKind)> {
        let written = scope.join("::");
        for depth in (0..=self.scope.len()).rev() {
            let key =
                if depth == 0 { written.clone() } else { format!("{}::{written}", self.scope[..depth].join("::")) };
            if let Some(&index) = self.types.get(&key) {
                return Some((index, self.builder.kind(index)));
            }
            if let Some(&index) = self.namespaces.get(&key) {
                return Some((index, NodeKind::Namespace));
            }
        }
        None
    }

    // ---- references ---------------------------------------------------------

    /// `Calls` for every call expression under `body`.
    fn calls(&mut self, from: usize, body: Node<'t>) {
        let mut found: Vec<(String, Node<'t>)> = Vec::new();
        let text = self.text;
        preorder(body, |n| {
            if n.kind() == "call_expression"
                && let Some(function) = n.child_by_field_name("function")
                && let Some(target) = call_target(function, text)
            {
                found.push((target, function));
            }
            true
        });
        for (target, node) in found {
            self.reference(from, RefKind::Calls, target, &node);
        }
    }

    /// `Mentions` for the types in a function's return type and parameters.
    fn mention_signature(&mut self, from: usize, function: Node<'t>, body: Option<Node<'t>>) {
        let mut cursor = function.walk();
        let parts: Vec<Node<'t>> = function
            .children(&mut cursor)
            .filter(|c| Some(*c) != body && c.kind() != "field_initializer_list" && c.kind() != "comment")
            .collect();
        for part in parts {
            self.mention_types(from, part, None);
        }
    }

    /// `Mentions` for the type names under `node`, except `skip` (a
    /// typedef's own name).
    fn mention_types(&mut self, from: usize, node: Node<'t>, skip: Option<&str>) {
        let mut found: Vec<(String, Node<'t>)> = Vec::new();
        let text = self.text;
        let params = &self.template_params;
        let wanted =
            |name: &str| !BUILTIN_TYPES.contains(&name) && !params.iter().any(|p| p == name) && skip != Some(name);
        let mut pending = vec![node];
        while let Some(root) = pending.pop() {
            let mut args = Vec::new();
            preorder(root, |n| match n.kind() {
                "type_identifier" => {
                    let name = node_text(&n, text);
                    if wanted(name) {
                        found.push((name.to_string(), n));
                    }
                    false
                }
                "qualified_identifier" => {
                    let target = strip_template_args(node_text(&n, text));
                    if names_a_type(n) && !target.starts_with("std::") && !target.starts_with("::std::") {
                        found.push((target, n));
                    }
                    // Only the template arguments inside hold further types.
                    preorder(n, |m| {
                        if m.kind() == "template_argument_list" {
                            args.push(m);
                            return false;
                        }
                        true
                    });
                    false
                }
                // Values (default arguments, array sizes) hold no types worth naming.
                "compound_statement" | "initializer_list" | "argument_list" | "number_literal" | "string_literal" => {
                    false
                }
                _ => true,
            });
            pending.extend(args.into_iter().rev());
        }
        for (target, n) in found {
            self.reference(from, RefKind::Mentions, target, &n);
        }
    }
}

/// Whether a qualified identifier names a type (`a::B`, `a::B<int>`), not a
/// function or variable (`a::f`).
fn names_a_type(node: Node<'_>) -> bool {
    let mut current = node;
    while current.kind() == "qualified_identifier" {
        let Some(name) = current.child_by_field_name("name") else { return false };
        current = name;
    }
    matches!(current.kind(), "type_identifier" | "template_type")
}

// ---- helpers over declarators ------------------------------------------------

/// A comment that starts on its own line (not trailing the previous code).
fn is_leading_comment(node: &Node<'_>) -> bool {
    if node.kind() != "comment" {
        return false;
    }
    match node.prev_sibling() {
        Some(prev) => last_row(&prev) < node.start_position().row,
        None => true,
    }
}

/// The row of a node's last character (a node ending with a newline ends on
/// the next row at column 0).
fn last_row(node: &Node<'_>) -> usize {
    let end = node.end_position();
    if end.column == 0 && end.row > node.start_position().row { end.row - 1 } else { end.row }
}

/// A comment on the same line right after `node` (`int x; /**< doc */`).
fn trailing_comment(node: &Node<'_>, text: &str) -> Option<String> {
    let next = node.next_named_sibling()?;
    if next.kind() != "comment" || next.start_position().row != last_row(node) {
        return None;
    }
    let cleaned = crate::lang::clean_doc(node_text(&next, text))?;
    let cleaned = cleaned.strip_prefix('<').map_or(cleaned.as_str(), str::trim_start).to_string();
    if cleaned.is_empty() { None } else { Some(cleaned) }
}

/// The span of a node without trailing whitespace (preprocessor nodes end
/// after their newline).
fn trimmed_span(node: &Node<'_>, text: &str) -> Span {
    let mut span = Span::of_node(node);
    let slice = span.slice(text);
    let trimmed = slice.trim_end();
    if trimmed.len() == slice.len() {
        return span;
    }
    let removed = &slice[trimmed.len()..];
    let newlines = removed.bytes().filter(|&b| b == b'\n').count() as u32;
    span.end_byte = span.start_byte + trimmed.len();
    if newlines > 0 {
        let line_start = text[..span.end_byte].rfind('\n').map_or(0, |i| i + 1);
        span.end = Point { line: span.end.line - newlines, column: (span.end_byte - line_start) as u32 };
    } else {
        span.end.column -= removed.len() as u32;
    }
    span
}

/// `detail::Mixin<int>` -> `detail::Mixin`, whitespace removed.
fn strip_template_args(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    for ch in s.chars() {
        match ch {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            c if depth == 0 && !c.is_whitespace() => out.push(c),
            _ => {}
        }
    }
    out
}

fn has_specifier(node: &Node<'_>, word: &str, text: &str) -> bool {
    let mut cursor = node.walk();
    node.children(&mut cursor).any(|c| c.kind() == "storage_class_specifier" && node_text(&c, text) == word)
}

/// The declared name of a class/struct name node (`Foo`, `Foo<int>` -> `Foo`, `a::Foo` -> `Foo`).
fn simple_type_name<'t>(node: Node<'_>, text: &'t str) -> &'t str {
    match node.kind() {
        "template_type" => node.child_by_field_name("name").map_or("", |n| node_text(&n, text)),
        "qualified_identifier" => node.child_by_field_name("name").map_or("", |n| simple_type_name(n, text)),
        _ => node_text(&node, text),
    }
}

/// The next declarator inward (`*p` -> `p`, `f(int)` -> `f`, `x = 1` -> `x`).
fn inner_declarator<'t>(node: Node<'t>) -> Option<Node<'t>> {
    if let Some(inner) = node.child_by_field_name("declarator") {
        return Some(inner);
    }
    if matches!(node.kind(), "parenthesized_declarator" | "reference_declarator" | "attributed_declarator") {
        let mut cursor = node.walk();
        return node.named_children(&mut cursor).find(|c| {
            c.kind().ends_with("declarator")
                || matches!(c.kind(), "identifier" | "field_identifier" | "type_identifier" | "qualified_identifier")
        });
    }
    None
}

fn is_name_node(kind: &str) -> bool {
    matches!(
        kind,
        "identifier"
            | "field_identifier"
            | "qualified_identifier"
            | "destructor_name"
            | "operator_name"
            | "template_function"
            | "type_identifier"
    )
}

/// The function declarator that declares a function (not a function pointer)
/// in a declarator chain: the innermost one whose own declarator is a name.
fn function_declarator<'t>(declarator: Node<'t>) -> Option<Node<'t>> {
    let mut found = None;
    let mut current = Some(declarator);
    while let Some(node) = current {
        if node.kind() == "function_declarator"
            && node.child_by_field_name("declarator").is_some_and(|d| is_name_node(d.kind()))
        {
            found = Some(node);
        }
        current = inner_declarator(node);
    }
    found
}

/// The declarator naming a variable/field: the chain's terminal name node.
fn value_declarator<'t>(declarator: Node<'t>) -> Node<'t> {
    let mut current = declarator;
    while let Some(inner) = inner_declarator(current) {
        current = inner;
    }
    current
}

/// The innermost name of a declarator chain, as text.
fn innermost_name<'t>(declarator: Node<'_>, text: &'t str) -> &'t str {
    let terminal = value_declarator(declarator);
    if is_name_node(terminal.kind()) || terminal.kind() == "primitive_type" { node_text(&terminal, text) } else { "" }
}

/// A function's scope segments and simple name (`Foo::bar` -> `(["Foo"], "bar")`).
fn function_name(function: Node<'_>, text: &str) -> Option<(Vec<String>, String)> {
    qualified_parts(function.child_by_field_name("declarator")?, text)
}

/// Scope segments and simple name of a name node.
fn qualified_parts(node: Node<'_>, text: &str) -> Option<(Vec<String>, String)> {
    match node.kind() {
        "identifier" | "field_identifier" | "type_identifier" | "destructor_name" | "operator_name" => {
            let name = collapse(node_text(&node, text));
            if name.is_empty() { None } else { Some((Vec::new(), name)) }
        }
        "template_function" | "template_type" => qualified_parts(node.child_by_field_name("name")?, text),
        "operator_cast" => Some((Vec::new(), operator_cast_name(node, text))),
        "qualified_identifier" => {
            let mut scope = Vec::new();
            if let Some(s) = node.child_by_field_name("scope") {
                let segment = match s.kind() {
                    "template_type" => s.child_by_field_name("name").map_or("", |n| node_text(&n, text)),
                    _ => node_text(&s, text),
                };
                if !segment.is_empty() {
                    scope.push(segment.to_string());
                }
            }
            let (inner_scope, name) = qualified_parts(node.child_by_field_name("name")?, text)?;
            scope.extend(inner_scope);
            Some((scope, name))
        }
        _ => None,
    }
}

/// `operator bool() const` -> `operator bool`.
fn operator_cast_name(node: Node<'_>, text: &str) -> String {
    let ty = node.child_by_field_name("type").map_or("", |t| node_text(&t, text));
    format!("operator {}", collapse(ty))
}

/// GoogleTest `TEST(Suite, Name)` -> `Suite.Name`.
fn gtest_name(function: Node<'_>, text: &str) -> Option<String> {
    let macro_name = function.child_by_field_name("declarator")?;
    if macro_name.kind() != "identifier" || !GTEST_MACROS.contains(&node_text(&macro_name, text)) {
        return None;
    }
    let params = function.child_by_field_name("parameters")?;
    let mut cursor = params.walk();
    let args: Vec<String> = params.named_children(&mut cursor).map(|p| collapse(node_text(&p, text))).collect();
    match args.as_slice() {
        [suite, name] if !suite.is_empty() && !name.is_empty() => Some(format!("{suite}.{name}")),
        _ => None,
    }
}

/// What a call expression calls, as written: `f`, `obj.m`, `p->m` -> `p.m`,
/// `ns::f`, `f<T>` -> `f`. `None` for calls through expressions.
fn call_target(function: Node<'_>, text: &str) -> Option<String> {
    match function.kind() {
        "identifier" => Some(node_text(&function, text).to_string()),
        "qualified_identifier" => Some(strip_template_args(node_text(&function, text))),
        "template_function" => function.child_by_field_name("name").map(|n| node_text(&n, text).to_string()),
        "field_expression" => {
            let object = function.child_by_field_name("argument")?;
            let field = function.child_by_field_name("field")?;
            let field = strip_template_args(node_text(&field, text));
            match object.kind() {
                "identifier" | "this" | "field_expression" | "qualified_identifier" => {
                    let object = node_text(&object, text).replace("->", ".");
                    let object: String = object.chars().filter(|c| !c.is_whitespace()).collect();
                    if object.contains(['(', '[', '<', '*', '&']) {
                        Some(field)
                    } else {
                        Some(format!("{object}.{field}"))
                    }
                }
                _ => Some(field),
            }
        }
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn analyze(language: &str, path: &str, text: &str) -> FileAnalysis {
        CAnalyzer.analyze(language, path, text)
    }

    pub(crate) const HEADER: &str = r#"/* geometry.h - shapes for the demo.
 * Copyright nobody. */

#ifndef GEOMETRY_H
#define GEOMETRY_H

#include <stdio.h>
#include <stdint.h>
#include "util/vec.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest coordinate we accept. */
#define GEO_MAX 4096
/* Clamp a value between lo and hi. */
#define GEO_CLAMP(x, lo, hi) \
    ((x) < (lo) ? (lo) : (x) > (hi) ? (hi) : (x))

/**
 * A point in the plane.
 */
typedef struct {
    int x; /**< horizontal */
    int y; /**< vertical */
} Point;

/// A singly linked list of points.
struct point_list {
    Point value;
    struct point_list *next;
    union {
        int tag;
        float weight;
    };
};

/* Colours of a shape. */
enum color {
    RED,   /* the default */
    GREEN = 2,
#ifdef WITH_BLUE
    BLUE,
#endif
};

typedef enum { SHAPE_CIRCLE, SHAPE_SQUARE } shape_kind;
enum { GEO_MAX_SIDES = 12 };
typedef struct shape shape_t;
typedef int (*visit_fn)(const Point *p, void *ctx);
typedef uint32_t geo_id;

/** The number of shapes created so far. */
extern int geo_shape_count;

/**
 * Computes the distance between two points.
 * @param a the first point
 */
double geo_distance(const Point *a, const Point *b);

/// Walks a list.
int geo_walk(struct point_list *list, visit_fn visit, void *ctx);

#ifdef GEO_DEBUG
void geo_dump(FILE *out, const struct point_list *list);
#else
static inline void geo_dump(FILE *out, const struct point_list *list) { (void)out; (void)list; }
#endif

#ifdef __cplusplus
}
#endif

#endif /* GEOMETRY_H */
"#;

    pub(crate) const SOURCE: &str = r#"#include <math.h>
#include "geometry.h"

static int helper(int x);

/* Number of shapes made. */
int geo_shape_count = 0;
static const char *names[] = {"circle", "square"};

/* Squares a number. */
static int helper(int x) {
    return x * x;
}

double geo_distance(const Point *a, const Point *b) {
    int dx = helper(a->x - b->x);
    int dy = helper(a->y - b->y);
    return sqrt((double)(dx + dy));
}

int geo_walk(struct point_list *list, visit_fn visit, void *ctx) {
    int n = 0;
    for (struct point_list *p = list; p; p = p->next) {
        n += visit(&p->value, ctx);
        geo_log(list->next, "visit");
    }
    return n;
}

void broken(void) {
    int y = ;
    helper(2);
}

int test_distance(void) {
    Point a = {0, 0}, b = {3, 4};
    return geo_distance(&a, &b) == 5.0;
}
"#;

    pub(crate) const CPP: &str = r#"#include <memory>
#include <vector>
#include "shapes/base.hpp"

namespace geo {
namespace detail {
/// Internal helper.
int scale(int x);
}  // namespace detail

/**
 * The base of every shape.
 */
class Shape {
public:
    virtual ~Shape() = default;
    /// The area.
    virtual double area() const = 0;
protected:
    int sides_;
};

// A circle.
class Circle : public Shape, private detail::Counted<Circle> {
public:
    explicit Circle(double r) : r_(r) {}
    double area() const override { return 3.14159 * r_ * r_; }
    static std::unique_ptr<Circle> make(double r);
    double radius() const;
private:
    double r_;
    std::vector<Point> trail_;
};

template <typename T>
T largest(const std::vector<T>& items) {
    T best = items.front();
    for (const auto& item : items) best = std::max(best, item);
    return best;
}

/// A typed box.
template <typename T>
class Box {
public:
    T get() const { return value_; }
private:
    T value_;
};

using Real = double;
template <typename T> using Shapes = std::vector<std::shared_ptr<T>>;

double Circle::radius() const {
    return r_;
}

std::unique_ptr<Circle> Circle::make(double r) {
    auto c = std::make_unique<Circle>(r);
    c->area();
    detail::scale(2);
    this->radius();
    return c;
}
}  // namespace geo

namespace geo::io {
void save(const geo::Shape& shape);
}

void geo::io::save(const geo::Shape& shape) {
    write(shape.area());
}

void Renderer::draw(const geo::Circle& c) {
    c.area();
}

TEST(CircleTest, AreaIsPositive) {
    geo::Circle c(1.0);
    EXPECT_GT(c.area(), 0.0);
}

TEST_F(ShapeFixture, MakesCircle) {
    auto c = geo::Circle::make(2.0);
    ASSERT_TRUE(c);
}

TEST_CASE("boxes hold values", "[box]") {
    REQUIRE(check_box());
}
"#;

    const CPP_IN_H: &str = r#"#pragma once
#include <string>

namespace app {

/// A named thing.
class Named {
public:
    explicit Named(std::string name);
    const std::string& name() const { return name_; }
private:
    std::string name_;
};

template<typename T>
struct Pair : Named {
    T first;
    T second;
};

}  // namespace app
"#;

    #[test]
    fn c_header_outline() {
        let a = analyze("c", "include/geometry.h", HEADER);
        insta::assert_snapshot!(a.outline());
    }

    #[test]
    fn c_source_outline() {
        let a = analyze("c", "src/geometry.c", SOURCE);
        insta::assert_snapshot!(a.outline());
    }

    #[test]
    fn cpp_outline() {
        let a = analyze("cpp", "src/shapes.cpp", CPP);
        insta::assert_snapshot!(a.outline());
    }

    #[test]
    fn cpp_in_dot_h_is_reparsed() {
        let a = analyze("c", "include/app/named.h", CPP_IN_H);
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        insta::assert_snapshot!(a.outline());
        // A C header with a syntax error but no C++ markers stays C.
        let c = analyze("c", "x.h", "int f(void) { return 1 }\n");
        assert_eq!(c.nodes[1].kind, NodeKind::Function);
        assert!(!c.warnings.is_empty());
    }

    #[test]
    fn a_macro_line_that_opens_a_namespace_is_read_as_blank() {
        let words = |line: &str| macro_words(line).into_iter().map(|r| (r.start, r.end)).collect::<Vec<_>>();
        // fmt's `FMT_BEGIN_NAMESPACE`: the grammar read what follows as one
        // ERROR, its enumerators each spanning the enum and a function.
        let text = "#include \"base.h\"\n\nLIB_BEGIN_NAMESPACE\nLIB_EXPORT_BEGIN\n\nenum class shade : uint32_t {\n  light = 0xF0F8FF,  // a comment\n  dark = 0x000000,\n};\n\ninline style fg(shade s) noexcept {\n  return style(true, s);\n}\n\nLIB_EXPORT_END\nLIB_END_NAMESPACE\n";
        let analysis = analyze("cpp", "include/lib/color.h", text);
        let span = |path: &str| {
            let node = analysis.nodes.iter().find(|n| n.symbol_path == path).unwrap_or_else(|| panic!("{path}"));
            (node.kind, node.span.start.line, node.span.end.line)
        };
        assert_eq!(span("shade"), (NodeKind::Enum, 6, 9));
        assert_eq!(span("shade.light"), (NodeKind::Field, 7, 7));
        assert_eq!(span("fg"), (NodeKind::Function, 11, 13));
        assert!(analysis.nodes.iter().all(|n| !n.name.starts_with("LIB_")), "{:?}", analysis.nodes);
        assert_eq!(words("FMT_END_NAMESPACE  // fmt"), [(0, 17)]);
        assert_eq!(words("  Q_OBJECT;"), [(2, 10)]);
        assert_eq!(words("    SPDLOG_TRY {"), [(4, 14)]);
    }

    #[test]
    fn a_macro_before_a_definition_is_read_as_blank() {
        let words = |line: &str| macro_words(line).into_iter().map(|r| (r.start, r.end)).collect::<Vec<_>>();
        // spdlog's `SPDLOG_INLINE`: the constructor read as a declaration of
        // variables `name_` and `level_`, and the methods lost their macro.
        let text = "#pragma once\n\nnamespace logs {\n\nLOGS_INLINE recorder::recorder(const recorder &other)\n    : name_(other.name_),\n      level_(other.level_.load()) {}\n\nLOGS_INLINE void recorder::flush() { flush_(); }\n\nLOGS_INLINE bool recorder::should_log(level lvl) const {\n    return lvl >= level_.load(std::memory_order_relaxed);\n}\n\nLOGS_INLINE recorder::~recorder() {\n    LOGS_TRY {\n        flush_();\n    }\n    LOGS_CATCH_STD\n}\n\nvoid LOGS_INLINE recorder::post(int n) { queue_.push(n); }\n\n}  // namespace logs\n";
        let analysis = analyze("cpp", "include/logs/recorder-inl.h", text);
        let found = |path: &str| analysis.nodes.iter().find(|n| n.symbol_path == path).map(|n| n.span.start.line);
        assert_eq!(found("logs.recorder.recorder"), Some(5));
        assert_eq!(found("logs.recorder.flush"), Some(9));
        assert_eq!(found("logs.recorder.should_log"), Some(11));
        assert_eq!(found("logs.recorder.~recorder"), Some(15));
        assert_eq!(found("logs.recorder.post"), Some(22));
        assert!(found("logs.name_").is_none(), "{:?}", analysis.nodes);
        let flush = analysis.nodes.iter().find(|n| n.symbol_path == "logs.recorder.flush").unwrap();
        assert!(flush.span.slice(text).starts_with("LOGS_INLINE void recorder::flush()"), "spans read the file");
        assert_eq!(words("  API_EXPORT Status Open();"), [(2, 12)]);
        assert_eq!(words("void LOGS_INLINE pool::post(int n) {"), [(5, 16)]);
        assert_eq!(words("int *FOO_BAR x"), [(5, 12)]);
        assert_eq!(words("const FOO_API Bar& NO_DISCARD get()"), [(6, 13), (19, 29)]);
        assert_eq!(words("    if LIB_CONSTEXPR20 (need_copy<T>::value) {"), [(7, 22)]);
        // A specifier after the parameters: with none, the grammar read the
        // macro as the function's name (spdlog's `os::localtime()`).
        assert_eq!(words("std::tm localtime() LOGS_NOEXCEPT {"), [(20, 33)]);
        assert_eq!(words("size_t size() const LOGS_NOEXCEPT;"), [(20, 33)]);
        // An export macro before a class's name (leveldb's `class
        // LEVELDB_EXPORT DB`): the grammar took the macro for the name.
        assert_eq!(words("class DB_EXPORT DB {"), [(6, 15)]);
        assert_eq!(words("class LOGS_API async_logger final : public logger {"), [(6, 14)]);
        assert_eq!(words("struct LOGS_API options"), [(7, 15)]);
        let exported = analyze(
            "cpp",
            "db.h",
            "namespace db {\nclass DB_EXPORT DB {\n public:\n  DB() = default;\n  virtual ~DB();\n  // Opens the database.\n  static Status Open(const Options& options, DB** dbptr);\n};\n}  // namespace db\n",
        );
        let found =
            |path: &str| exported.nodes.iter().find(|n| n.symbol_path == path).map(|n| (n.kind, n.span.start.line));
        assert_eq!(found("db.DB"), Some((NodeKind::Class, 2)), "{:?}", exported.nodes);
        assert_eq!(found("db.DB.Open").map(|(_, line)| line), Some(7), "{:?}", exported.nodes);
        let specified = analyze(
            "cpp",
            "os-inl.h",
            "namespace os {\nstd::tm localtime() LOGS_NOEXCEPT {\n    return now();\n}\n}\n",
        );
        let localtime = specified.nodes.iter().find(|n| n.symbol_path == "os.localtime");
        assert_eq!(
            localtime.map(|n| (n.kind, n.span.start.line)),
            Some((NodeKind::Function, 2)),
            "{:?}",
            specified.nodes
        );
        for not_one in [
            "FOO_BAR(x) y;",
            "FOO_BAR = 1,",
            "CONST x;",
            "Foo_Bar x;",
            "struct FOO_BAR {",
            "struct FOO_BAR x;",
            "class FOO_BAR::Inner {",
            "case FOO_BAR: return;",
            "return FOO_BAR;",
            "x = FOO_BAR + y;",
            "f(FOO_BAR, y);",
            "f(x) + FOO_BAR;",
        ] {
            assert!(macro_words(not_one).is_empty(), "{not_one}");
        }
    }

    #[test]
    fn a_cpp_header_the_c_grammar_loses_whole_is_read_as_cpp() {
        // A header like spdlog's backtracer.h: C reads it as one ERROR (one
        // error node), C++ with two small ones (an export macro, a
        // `noexcept` macro); the bytes they cover decide.
        let text = "#pragma once\n\n#include <logs/details/ring.h>\n#include <logs/details/message_buffer.h>\n\n#include <atomic>\n#include <functional>\n#include <mutex>\n\n\nnamespace logs {\nnamespace details {\nclass LOGS_API recorder {\n    mutable std::mutex mutex_;\n    std::atomic<bool> enabled_{false};\n    ring<message_buffer> messages_;\n\npublic:\n    recorder() = default;\n    recorder(const recorder &other);\n\n    recorder(recorder &&other) LOGS_NOEXCEPT;\n    recorder &operator=(recorder other);\n\n    void enable(size_t size);\n    void disable();\n    bool enabled() const;\n    void push_back(const message &msg);\n    bool empty() const;\n\n    // Pops every message and applies fun to it.\n    void foreach_pop(std::function<void(const details::message &)> fun);\n};\n\n}  // namespace details\n}  // namespace logs\n\n#ifdef LOGS_HEADER_ONLY\n    #include \"recorder-inl.h\"\n#endif\n";
        let tree = parse_c_family("c", "include/logs/details/recorder.h", text).unwrap();
        assert!(error_extent(&tree).0 < 100, "{:?}", error_extent(&tree));
        let analysis = analyze("c", "include/logs/details/recorder.h", text);
        let paths: Vec<&str> = analysis.nodes.iter().map(|n| n.symbol_path.as_str()).collect();
        for wanted in ["logs.details.recorder", "logs.details.recorder.enable", "logs.details.recorder.foreach_pop"] {
            assert!(paths.contains(&wanted), "{wanted} in {paths:?}");
        }
    }

    #[test]
    fn spans_start_with_the_declaration() {
        for (language, path, text) in
            [("c", "include/geometry.h", HEADER), ("c", "src/geometry.c", SOURCE), ("cpp", "src/shapes.cpp", CPP)]
        {
            let a = analyze(language, path, text);
            for node in &a.nodes[1..] {
                let slice = node.span.slice(text);
                assert!(!slice.is_empty(), "{}: empty span", node.symbol_path);
                assert_eq!(slice, slice.trim_end(), "{}: trailing whitespace", node.symbol_path);
                let expected = match node.kind {
                    NodeKind::Import => "#include",
                    NodeKind::Macro => "#define",
                    NodeKind::Namespace => "namespace",
                    _ => "",
                };
                assert!(slice.starts_with(expected), "{}: {slice:?}", node.symbol_path);
                if matches!(node.kind, NodeKind::Function | NodeKind::Method | NodeKind::Struct | NodeKind::Class) {
                    let sig = node.signature.as_deref().unwrap();
                    let head = sig.split_whitespace().next().unwrap();
                    assert!(slice.starts_with(head), "{}: {slice:?} vs {sig:?}", node.symbol_path);
                    assert!(slice.contains(node.name.as_str()), "{}: {slice:?}", node.symbol_path);
                }
                let lines = text.split('\n').collect::<Vec<_>>();
                let start_line = lines[node.span.start.line as usize - 1];
                assert_eq!(
                    &start_line[node.span.start.column as usize..].chars().next(),
                    &slice.chars().next(),
                    "{}",
                    node.symbol_path
                );
                let end_line = lines[node.span.end.line as usize - 1];
                let last = slice.rsplit('\n').next().unwrap();
                assert!(end_line[..node.span.end.column as usize].ends_with(last), "{}", node.symbol_path);
            }
        }
    }

    #[test]
    fn every_annotation_macro_passes_the_quick_check() {
        for name in ANNOTATION_MACROS {
            assert!(blank_annotation_macros(&format!("int x {name};\n")).is_some(), "{name}");
        }
    }

    #[test]
    fn thread_safety_annotations_do_not_hide_declarations() {
        let text = "#define GUARDED_BY(x) THREAD_ANNOTATION_ATTRIBUTE__(guarded_by(x))\nnamespace port {\nclass LOCKABLE Mutex {\n public:\n  void Lock() EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }\n  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }\n  // Replays the log.\n  Status Recover(VersionEdit* edit)\n      EXCLUSIVE_LOCKS_REQUIRED(mutex_);\n  int count_ GUARDED_BY(mu_);\n};\n}  // namespace port\n";
        let analysis = analyze("cpp", "port/port.h", text);
        let paths: Vec<&str> = analysis.nodes.iter().map(|n| n.symbol_path.as_str()).collect();
        for wanted in ["port.Mutex", "port.Mutex.Lock", "port.Mutex.Unlock", "port.Mutex.Recover", "port.Mutex.count_"]
        {
            assert!(paths.contains(&wanted), "{wanted} in {paths:?}");
        }
        // The macro's own definition is a node; no use of one is.
        let uses = |p: &&str| p.starts_with("port.") && (p.contains("FUNCTION") || p.contains("REQUIRED"));
        assert!(!paths.iter().any(uses) && paths.contains(&"GUARDED_BY"), "{paths:?}");
        let lock = analysis.nodes.iter().find(|n| n.symbol_path == "port.Mutex.Lock").unwrap();
        assert!(lock.span.slice(text).starts_with("void Lock() EXCLUSIVE_LOCK_FUNCTION()"), "spans read the file");
        let recover = analysis.nodes.iter().find(|n| n.symbol_path == "port.Mutex.Recover").unwrap();
        assert_eq!((recover.span.start.line, recover.doc.as_deref()), (8, Some("Replays the log.")));
        // Nothing to blank, or only a definition of the macro: the file as it is.
        assert_eq!(blank_annotation_macros("int f(void) { return 0; }\n"), None);
        assert_eq!(blank_annotation_macros("#define GUARDED_BY(x) __attribute__((guarded_by(x)))\n"), None);
        // Nor one a definition continues onto its next line.
        let continued =
            "#define ACQUIRED_AFTER(...) \\\n  THREAD_ANNOTATION_ATTRIBUTE__(acquired_after(__VA_ARGS__))\n";
        assert_eq!(blank_annotation_macros(continued), None);
        assert!(in_directive("#define A \\\r\n  B\nC", 14) && !in_directive("#define A \\\n  B\nC", 16));
    }

    #[test]
    fn a_conditional_inside_an_initializer_list_does_not_swallow_the_file() {
        // leveldb's env_posix.cc: the grammar cannot place an `#if` between
        // a constructor's initializers, and read every class after it as
        // part of `Limiter`.
        let text = "class Limiter {\n Limiter(int max)\n  :\n#if !defined(NDEBUG)\n  max_(max),\n#endif\n  allowed_(max) {}\n};\nclass PosixWritableFile final : public WritableFile {\n public:\n  // Appends data.\n  int Append(const char* data) {\n#ifdef _WIN32\n    return 0;\n#else\n    return write(data);\n#endif\n  }\n};\n";
        let analysis = analyze("cpp", "util/env.h", text);
        let paths: Vec<&str> = analysis.nodes.iter().map(|n| n.symbol_path.as_str()).collect();
        for wanted in ["Limiter", "PosixWritableFile", "PosixWritableFile.Append"] {
            assert!(paths.contains(&wanted), "{wanted} in {paths:?}");
        }
        assert!(!paths.iter().any(|p| p.contains("Limiter.PosixWritableFile")), "{paths:?}");
        // Spans and docs read the file.
        let append = analysis.nodes.iter().find(|n| n.symbol_path == "PosixWritableFile.Append").unwrap();
        assert_eq!((append.span.start.line, append.doc.as_deref()), (12, Some("Appends data.")));
        assert!(append.span.slice(text).contains("#ifdef _WIN32"), "spans read the file");
        // A file that parses keeps its tree; the blanking keeps every line.
        assert!(blank_lines("int f(void) { return 0; }\n", Conditionals::AllBranches, true).is_none());
        let blanked = blank_lines("#if A \\\n  && B\nint x;\n#endif\n", Conditionals::AllBranches, false).unwrap();
        assert_eq!(blanked.ranges, [0..7, 8..14, 22..28]);
        // The reparse told what changed reads as a fresh parse of the blanks.
        let cpp: tree_sitter::Language = tree_sitter_cpp::LANGUAGE.into();
        for (conditionals, macros) in [
            (Conditionals::AllBranches, false),
            (Conditionals::AlternativeHeaders, false),
            (Conditionals::AllBranches, true),
            (Conditionals::Keep, true),
        ] {
            let Some(flat) = blank_lines(text, conditionals, macros) else { continue };
            let tree = parse(&cpp, text).unwrap();
            let again = reparse_blanked(&tree, text, &flat).unwrap();
            assert_eq!(again.root_node().to_sexp(), parse(&cpp, &flat.text).unwrap().root_node().to_sexp());
        }
        assert_eq!(blanked.text.lines().map(str::trim).collect::<Vec<_>>(), ["", "", "int x;", ""]);
        // Read without its directives, a header still has no macro for its guard.
        let guarded = format!("#ifndef APP_ENV_H_\n#define APP_ENV_H_\n{text}#endif  // APP_ENV_H_\n");
        assert_eq!(include_guard(&guarded).as_deref(), Some("APP_ENV_H_"));
        let guarded = analyze("cpp", "util/env.h", &guarded);
        assert!(guarded.nodes.iter().all(|n| n.name != "APP_ENV_H_"), "{:?}", guarded.nodes);
        assert_eq!(include_guard("#if X\n#define X\n"), None);
    }

    #[test]
    fn a_header_that_parses_as_c_but_opens_a_namespace_is_cpp() {
        // leveldb's util/crc32c.h: the C grammar reads the namespaces as
        // functions without an error.
        let text = "#ifndef CRC_H_\n#define CRC_H_\nnamespace leveldb {\nnamespace crc32c {\n// Returns the crc.\ninline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }\n}  // namespace crc32c\n}  // namespace leveldb\n#endif\n";
        let analysis = analyze("c", "util/crc32c.h", text);
        let paths: Vec<&str> = analysis.nodes.iter().map(|n| n.symbol_path.as_str()).collect();
        assert!(paths.contains(&"leveldb.crc32c.Value"), "{paths:?}");
        // A C header stays C; a comment's words open nothing.
        assert!(!opens_cpp_construct("/* the class of errors\n * namespace of keys */\nint f(void);\n"));
        assert!(opens_cpp_construct("template <typename T>\nT max(T a, T b);\n"));
    }

    #[test]
    fn a_header_spelled_once_per_branch_opens_one_definition() {
        // hiredis's adapters/libuv.h: one header per libuv version, one body.
        let text = "#if (UV_VERSION_MAJOR == 0) || \\\n    (UV_VERSION_MINOR < 11)\nstatic void on_timeout(uv_timer_t *timer, int status) {\n    (void)status;\n#else\nstatic void on_timeout(uv_timer_t *timer) {\n#endif\n    handle(timer);\n}\n\nstatic void set_timeout(void *privdata) {\n    start(privdata);\n}\n";
        let analysis = analyze("c", "adapters/libuv.h", text);
        let names: Vec<(&str, u32)> =
            analysis.nodes.iter().skip(1).map(|n| (n.name.as_str(), n.span.start.line)).collect();
        assert!(names.contains(&("on_timeout", 3)) && names.contains(&("set_timeout", 11)), "{names:?}");
        // Only the later spellings of a header go: branches that balance
        // their braces stay whole, a nested header counts as its first
        // spelling, braces in strings and comments do not count; the lines
        // stay where they were.
        let nested = "#ifdef _WIN32\nint a(void) { return 0; }\n#else\nint b(void) { return 1; }\n#endif\n#if A\n#ifdef B\nint c(int x) { // {\n#else\nint d(int x) {\n#endif\n#elif C\nint e(void) { char *s = \"}\";\n#else\nint f(void) {\n#endif\n  return 0;\n}\n";
        let flat = blank_lines(nested, Conditionals::AlternativeHeaders, false).unwrap();
        let kept: Vec<&str> = flat.text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        assert_eq!(
            kept,
            ["int a(void) { return 0; }", "int b(void) { return 1; }", "int c(int x) { // {", "return 0;", "}"]
        );
        assert_eq!(flat.text.lines().count(), nested.lines().count());
        // With no header spelled twice, there is no reading of its own.
        assert!(
            blank_lines("#ifdef A\nint a;\n#else\nint b;\n#endif\n", Conditionals::AlternativeHeaders, false).is_none()
        );
    }

    #[test]
    fn docs_and_signatures() {
        let a = analyze("c", "include/geometry.h", HEADER);
        let find = |path: &str| a.nodes.iter().find(|n| n.symbol_path == path).unwrap();
        assert_eq!(
            find("geo_distance").doc.as_deref(),
            Some("Computes the distance between two points.\n@param a the first point")
        );
        assert_eq!(
            find("geo_distance").signature.as_deref(),
            Some("double geo_distance(const Point *a, const Point *b)")
        );
        assert_eq!(find("Point.x").doc.as_deref(), Some("horizontal"));
        assert_eq!(find("Point.y").doc.as_deref(), Some("vertical"));
        assert_eq!(find("color.RED").doc.as_deref(), Some("the default"));
        assert_eq!(find("GEO_MAX").doc.as_deref(), Some("Largest coordinate we accept."));
        assert_eq!(find("GEO_CLAMP").signature.as_deref(), Some("#define GEO_CLAMP(x, lo, hi)"));
        assert!(a.nodes.iter().all(|n| n.name != "GEOMETRY_H"), "include guard is not a macro");
    }

    fn files(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(|p| p.to_string()).collect()
    }

    fn include(target: &str, system: bool) -> Reference {
        Reference {
            from: 1,
            kind: RefKind::Import,
            target: target.to_string(),
            names: Vec::new(),
            system,
            span: Span::default(),
        }
    }

    #[test]
    fn resolves_includes() {
        let all = files(&[
            "src/geometry.c",
            "src/geometry.h",
            "src/util/vec.h",
            "include/geo/api.h",
            "lib/a/config.h",
            "lib/b/config.h",
            "third_party/zlib/zlib.h",
        ]);
        let ctx = ResolveContext::new(&all);
        let r = |from: &str, target: &str, system: bool| CAnalyzer.resolve_import(&ctx, from, &include(target, system));
        // Relative to the including file.
        assert_eq!(r("src/geometry.c", "geometry.h", false).as_deref(), Some("src/geometry.h"));
        assert_eq!(r("src/geometry.c", "util/vec.h", false).as_deref(), Some("src/util/vec.h"));
        assert_eq!(r("src/util/vec.h", "../geometry.h", false).as_deref(), Some("src/geometry.h"));
        // A unique suffix anywhere.
        assert_eq!(r("tests/t.c", "geo/api.h", false).as_deref(), Some("include/geo/api.h"));
        assert_eq!(r("tests/t.c", "zlib.h", false).as_deref(), Some("third_party/zlib/zlib.h"));
        // Ambiguous stays unresolved.
        assert_eq!(r("src/geometry.c", "config.h", false), None);
        // System headers: only under an include/ directory.
        assert_eq!(r("src/geometry.c", "stdio.h", true), None);
        assert_eq!(r("src/geometry.c", "zlib.h", true), None);
        assert_eq!(r("src/geometry.c", "geo/api.h", true).as_deref(), Some("include/geo/api.h"));
        assert_eq!(r("src/geometry.c", "api.h", true), None);
        assert_eq!(r("src/geometry.c", "missing.h", false), None);
    }

    #[test]
    fn never_panics_on_odd_input() {
        for text in
            ["", "#", "#include", "#define", "struct", "class A : {", "}}}", "int (*)(", "template<", "\u{feff}x"]
        {
            analyze("c", "a.h", text);
            analyze("cpp", "a.cpp", text);
        }
    }
}
