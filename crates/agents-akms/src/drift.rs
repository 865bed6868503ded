//! The structural docstring-drift check of the code mirror (spec 5.6,
//! FR-C03): the parameter names and the return a docstring documents,
//! against the callable's actual signature. Deterministic, no model.
//!
//! Conventions read, by language:
//! - Python: Google (`Args:` with `name (type): ...` entries, `Returns:`),
//!   NumPy (`Parameters` / `Returns` over a dashed line, `name : type`
//!   entries) and Sphinx (`:param [type] name:`, `:returns:`, `:rtype:`);
//! - JavaScript, TypeScript, Java, C and C++: tags (`@param [{Type}] name`,
//!   `@arg`, Doxygen `\param[in] name`, `@return(s)`, `\return`);
//! - Rust: a `# Arguments` (or `# Parameters`) section with `` * `name` - ``
//!   items, and a `# Returns` section; headings inside code fences are not
//!   headings;
//! - Go: its doc convention names no parameters, so Go never drifts.
//!
//! What is drift: the dangerous case, a docstring that contradicts the code,
//! not one that is incomplete (5.6). So a documented parameter the
//! signature does not have is drift, and so is a documented return value of
//! a callable that declares it returns nothing; an undocumented parameter
//! alone is not, though it is listed as missing beside real drift. A
//! signature with an unnamed parameter (a destructuring pattern) cannot be
//! checked by name and is skipped for parameters. A symbol without a
//! docstring passes.

use serde::Serialize;

use agents_uko::lang::signature::{Returns, Signature};

/// What a docstring documents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Documented {
    /// Parameter names, in the docstring's order, without duplicates.
    pub params: Vec<String>,
    /// Whether it documents a returned value.
    pub returns: bool,
}

/// The drift of one symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Drift {
    /// The symbol path (`Class.method`).
    pub symbol: String,
    /// First line of its declaration.
    pub line: u32,
    /// Documented parameters the signature does not have.
    pub extra_params: Vec<String>,
    /// Parameters of the signature the docstring does not document.
    pub missing_params: Vec<String>,
    /// The return contradiction, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub returns: Option<String>,
}

impl Drift {
    /// One line for people: what contradicts what.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let quoted = |names: &[String]| names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        if !self.extra_params.is_empty() {
            parts.push(format!("documents {}, not in the signature", quoted(&self.extra_params)));
        }
        if !self.missing_params.is_empty() {
            parts.push(format!("does not document {}", quoted(&self.missing_params)));
        }
        if let Some(returns) = &self.returns {
            parts.push(returns.clone());
        }
        format!("`{}` (line {}): {}", self.symbol, self.line, parts.join("; "))
    }
}

/// What the docstring `doc` of a `language` symbol documents.
pub fn documented(language: &str, doc: &str) -> Documented {
    let mut found = match language {
        "python" => python(doc),
        "javascript" | "typescript" | "tsx" | "java" | "c" | "cpp" => tags(doc),
        "rust" => rust(doc),
        _ => Documented::default(),
    };
    let mut seen = std::collections::BTreeSet::new();
    found.params.retain(|p| seen.insert(p.clone()));
    found
}

/// Checks the docstring of a callable against its signature; `None` when
/// they agree (or the docstring documents nothing checkable).
pub fn check(language: &str, symbol: &str, line: u32, doc: &str, signature: &Signature) -> Option<Drift> {
    let documented = documented(language, doc);
    let named: Vec<&str> = signature.params.iter().flatten().map(String::as_str).collect();
    let has_unnamed = signature.params.iter().any(Option::is_none);
    let (mut extra, mut missing) = (Vec::new(), Vec::new());
    if !documented.params.is_empty() && !has_unnamed {
        extra = documented.params.iter().filter(|p| !named.contains(&p.as_str())).cloned().collect();
        missing =
            named.iter().filter(|n| !documented.params.iter().any(|p| p == *n)).map(|n| (*n).to_owned()).collect();
    }
    let returns = (documented.returns && signature.returns == Returns::Nothing)
        .then(|| "documents a return value, but the signature returns nothing".to_owned());
    if extra.is_empty() && returns.is_none() {
        return None;
    }
    Some(Drift { symbol: symbol.to_owned(), line, extra_params: extra, missing_params: missing, returns })
}

/// A bare parameter name: letters, digits, `_`, `$`.
fn identifier(text: &str) -> Option<String> {
    let ok = !text.is_empty()
        && !text.starts_with(|c: char| c.is_ascii_digit())
        && text.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    ok.then(|| text.to_owned())
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// Whether the first words of a Returns section say nothing is returned.
fn says_none(text: &str) -> bool {
    let first = text.trim().split(|c: char| c.is_whitespace() || c == ':' || c == '.').next().unwrap_or("");
    first == "None"
}

/// Google sections listing parameters. `Keyword Args:` lists the keys a
/// `**kwargs` takes, not parameters, so it is not one of them.
const GOOGLE_PARAMS: &[&str] = &["Args:", "Arguments:", "Parameters:", "Params:", "Other Parameters:"];
const NUMPY_PARAMS: &[&str] = &["Parameters", "Other Parameters", "Arguments"];

fn python(doc: &str) -> Documented {
    #[derive(PartialEq)]
    enum Section {
        None,
        /// Google parameters: header indent, entry indent once seen.
        Google(usize, Option<usize>),
        /// NumPy parameters at this indent.
        NumPy(usize),
        /// A Returns section whose first words are still to be read.
        Returns,
    }
    let lines: Vec<&str> = doc.lines().collect();
    let mut out = Documented::default();
    let mut section = Section::None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim();
        let dashed = lines.get(i + 1).is_some_and(|n| {
            let n = n.trim();
            n.len() >= 3 && n.chars().all(|c| c == '-')
        });
        i += 1;
        if dashed {
            i += 1;
            section = if NUMPY_PARAMS.contains(&t) {
                Section::NumPy(indent(line))
            } else if t == "Returns" {
                Section::Returns
            } else {
                Section::None
            };
            continue;
        }
        if GOOGLE_PARAMS.contains(&t) {
            section = Section::Google(indent(line), None);
            continue;
        }
        if let Some(rest) = t.strip_prefix("Returns:").or_else(|| t.strip_prefix("Return:")) {
            if rest.trim().is_empty() {
                section = Section::Returns;
            } else {
                out.returns |= !says_none(rest);
                section = Section::None;
            }
            continue;
        }
        if let Some(field) = t.strip_prefix(':') {
            // Sphinx fields: `:param int x: ...`, `:returns: ...`.
            let Some((head, rest)) = field.split_once(':') else { continue };
            let words: Vec<&str> = head.split_whitespace().collect();
            match words.first().copied() {
                // `:key name:` / `:keyword name:` name keys of `**kwargs`, not parameters.
                Some("param" | "parameter" | "arg" | "argument") if words.len() >= 2 => {
                    if let Some(name) = identifier(words[words.len() - 1].trim_start_matches('*')) {
                        out.params.push(name);
                    }
                }
                Some("returns" | "return") => out.returns |= !says_none(rest),
                Some("rtype") => out.returns |= !says_none(rest),
                _ => {}
            }
            section = Section::None;
            continue;
        }
        if t.is_empty() {
            continue;
        }
        match &mut section {
            Section::None => {}
            Section::Returns => {
                out.returns |= !says_none(t);
                section = Section::None;
            }
            Section::Google(header, entry) => {
                let at = indent(line);
                if at <= *header {
                    section = Section::None;
                    continue;
                }
                if entry.is_none() {
                    *entry = Some(at);
                }
                // An entry is `name: ...` or `name (type): ...`; a line at the
                // entries' indent without that shape is sloppy continuation.
                let (head, rest) = t.split_at(t.find([' ', '(', ':']).unwrap_or(t.len()));
                let rest = rest.trim_start();
                if Some(at) == *entry
                    && (rest.starts_with(':') || rest.starts_with('('))
                    && let Some(name) = identifier(head.trim_start_matches('*'))
                {
                    out.params.push(name);
                }
            }
            Section::NumPy(at) => {
                let here = indent(line);
                if here < *at {
                    section = Section::None;
                } else if here == *at {
                    let names = t.split(" :").next().unwrap_or(t).split(':').next().unwrap_or(t);
                    for name in names.split(',') {
                        if let Some(name) = identifier(name.trim().trim_start_matches('*')) {
                            out.params.push(name);
                        }
                    }
                }
            }
        }
    }
    out
}

/// `@param`-style tags (JSDoc, Javadoc, Doxygen).
fn tags(doc: &str) -> Documented {
    let mut out = Documented::default();
    for line in doc.lines() {
        let t = line.trim();
        let Some(tagged) = t.strip_prefix('@').or_else(|| t.strip_prefix('\\')) else { continue };
        let (tag, rest) = tagged.split_once(char::is_whitespace).unwrap_or((tagged, ""));
        // Doxygen directions: `@param[in]`, `\param[in,out]`.
        let tag = tag.split('[').next().unwrap_or(tag);
        match tag {
            "param" | "arg" | "argument" => {
                if let Some(name) = tag_param_name(rest) {
                    out.params.push(name);
                }
            }
            "return" | "returns" | "retval" => {
                let rest = rest.trim();
                let void = ["{void}", "{undefined}", "void", "nothing"].iter().any(|v| rest.starts_with(v));
                out.returns |= !void;
            }
            _ => {}
        }
    }
    out
}

/// The name of a `@param` tag's text: `{Type} name`, `[name=default]`,
/// `name.property` (documents `name`), `...rest`; Java's `<T>` type
/// parameters are not parameters.
fn tag_param_name(rest: &str) -> Option<String> {
    let mut rest = rest.trim_start();
    if rest.starts_with('{') {
        let mut depth = 0usize;
        let mut end = None;
        for (i, c) in rest.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = Some(i + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = rest[end?..].trim_start();
    }
    let word = rest.split_whitespace().next()?;
    if word.starts_with('<') {
        return None;
    }
    let word = word.trim_start_matches('[').trim_end_matches(']');
    let word = word.split('=').next().unwrap_or(word).trim_start_matches("...");
    let word = word.split('.').next().unwrap_or(word);
    identifier(word)
}

/// Rust's `# Arguments` / `# Returns` sections.
fn rust(doc: &str) -> Documented {
    let mut out = Documented::default();
    let mut in_args = false;
    let mut fence = false;
    for line in doc.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        if let Some(heading) = t.strip_prefix('#') {
            let heading = heading.trim_start_matches('#').trim().to_ascii_lowercase();
            in_args = matches!(heading.as_str(), "arguments" | "parameters" | "args");
            out.returns |= heading == "returns";
            continue;
        }
        if !in_args {
            continue;
        }
        let Some(item) = t.strip_prefix("* ").or_else(|| t.strip_prefix("- ")) else { continue };
        let item = item.trim_start();
        let name = match item.strip_prefix('`') {
            Some(quoted) => quoted.split('`').next().unwrap_or(""),
            None => item.split([' ', ':']).next().unwrap_or(""),
        };
        let name = name.split(':').next().unwrap_or(name).trim();
        if let Some(name) = identifier(name) {
            out.params.push(name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(params: &[&str], returns: Returns) -> Signature {
        Signature {
            params: params.iter().map(|p| if p.is_empty() { None } else { Some((*p).to_owned()) }).collect(),
            returns,
        }
    }

    fn params(language: &str, doc: &str) -> Vec<String> {
        documented(language, doc).params
    }

    #[test]
    fn fr_c03_python_google_numpy_and_sphinx_styles() {
        let google = "Greets.\n\nArgs:\n    name (str): who.\n        More about it.\n    *args: extra.\n    **kwargs (dict): options.\n\nReturns:\n    str: the greeting.\n";
        assert_eq!(params("python", google), ["name", "args", "kwargs"]);
        assert!(documented("python", google).returns);
        let numpy = "Greets.\n\nParameters\n----------\nname : str\n    Who.\nx, y : int\n    Where.\n\nReturns\n-------\nstr\n    The greeting.\n";
        assert_eq!(params("python", numpy), ["name", "x", "y"]);
        assert!(documented("python", numpy).returns);
        let sphinx =
            "Greets.\n\n:param name: who.\n:param int times: how often.\n:type name: str\n:returns: the greeting.\n";
        assert_eq!(params("python", sphinx), ["name", "times"]);
        assert!(documented("python", sphinx).returns);
        assert!(!documented("python", "Does it.\n\nReturns:\n    None\n").returns);
        let sloppy = "Greets.\n\nArgs:\n    name: who\n    to greet, on one more line.\n\nKeyword Args:\n    color (str): of the text.\n";
        assert_eq!(params("python", sloppy), ["name"], "continuations and kwargs keys are not parameters");
        assert_eq!(params("python", ":param a: x\n:key color: y\n"), ["a"]);
        assert!(documented("python", "Just prose mentioning name: and Args.").params.is_empty());
    }

    #[test]
    fn fr_c03_python_in_sync_and_drifted() {
        let doc = "Greets.\n\nArgs:\n    name: who.\n    times: how often.\n\nReturns:\n    The greeting.\n";
        let in_sync = sig(&["name", "times"], Returns::Value("str".into()));
        assert_eq!(check("python", "greet", 3, doc, &in_sync), None);
        assert_eq!(check("python", "greet", 3, doc, &sig(&["name", "times"], Returns::Unknown)), None);
        let renamed = sig(&["name", "count"], Returns::Value("str".into()));
        let drift = check("python", "greet", 3, doc, &renamed).unwrap();
        assert_eq!(drift.extra_params, ["times"]);
        assert_eq!(drift.missing_params, ["count"]);
        assert_eq!(drift.returns, None);
        assert_eq!(
            drift.describe(),
            "`greet` (line 3): documents `times`, not in the signature; does not document `count`"
        );
        let returns_none = check("python", "greet", 3, doc, &sig(&["name", "times"], Returns::Nothing)).unwrap();
        assert_eq!(
            returns_none.returns.as_deref(),
            Some("documents a return value, but the signature returns nothing")
        );
        // Incomplete is not drift (5.6): an undocumented parameter alone passes.
        assert_eq!(check("python", "greet", 3, doc, &sig(&["name", "times", "loud"], Returns::Unknown)), None);
        assert_eq!(check("python", "greet", 3, "No sections.", &renamed), None);
    }

    #[test]
    fn fr_c03_jsdoc_in_sync_and_drifted() {
        let doc = "Adds.\n@param {number} a first\n@param {{x: number}} [b=1] second\n@param opts.deep nested\n@returns {number} the sum\n";
        assert_eq!(params("typescript", doc), ["a", "b", "opts"]);
        let in_sync = sig(&["a", "b", "opts"], Returns::Value("number".into()));
        assert_eq!(check("typescript", "add", 1, doc, &in_sync), None);
        let drift = check("javascript", "add", 1, doc, &sig(&["a", "c", "opts"], Returns::Unknown)).unwrap();
        assert_eq!((drift.extra_params, drift.missing_params), (vec!["b".to_owned()], vec!["c".to_owned()]));
        let void = check("typescript", "add", 1, doc, &sig(&["a", "b", "opts"], Returns::Nothing)).unwrap();
        assert!(void.returns.is_some() && void.extra_params.is_empty());
        // A destructured parameter cannot be checked by name.
        assert_eq!(check("javascript", "add", 1, doc, &sig(&["a", ""], Returns::Unknown)), None);
        assert!(!documented("typescript", "@returns {void}").returns);
    }

    #[test]
    fn fr_c03_java_and_c_tags_in_sync_and_drifted() {
        let doc = "Runs.\n@param <T> the type\n@param task what to run\n@param times how often\n@return the result\n";
        assert_eq!(params("java", doc), ["task", "times"]);
        assert_eq!(check("java", "A.run", 4, doc, &sig(&["task", "times"], Returns::Value("int".into()))), None);
        let drift = check("java", "A.run", 4, doc, &sig(&["task"], Returns::Nothing)).unwrap();
        assert_eq!(drift.extra_params, ["times"]);
        assert!(drift.returns.is_some());
        let c = "Copies.\n\\param[out] dst target\n\\param[in] src source\n\\return bytes copied\n";
        assert_eq!(params("c", c), ["dst", "src"]);
        assert_eq!(check("c", "copy", 1, c, &sig(&["dst", "src"], Returns::Value("int".into()))), None);
        assert!(check("c", "copy", 1, c, &sig(&["dst", "source"], Returns::Value("int".into()))).is_some());
    }

    #[test]
    fn fr_c03_rust_arguments_section_in_sync_and_drifted() {
        let doc = "Greets.\n\n# Arguments\n\n* `name` - who\n* `times`: how often\n\n# Examples\n\n```\n# let x = 1;\n* `ignored` - in a fence\n```\n\n# Returns\n\nThe greeting.\n";
        assert_eq!(params("rust", doc), ["name", "times"]);
        assert!(documented("rust", doc).returns);
        assert_eq!(check("rust", "greet", 9, doc, &sig(&["name", "times"], Returns::Value("String".into()))), None);
        let drift = check("rust", "greet", 9, doc, &sig(&["name", "times"], Returns::Nothing)).unwrap();
        assert!(drift.returns.is_some());
        let drift = check("rust", "greet", 9, doc, &sig(&["who", "times"], Returns::Value("String".into()))).unwrap();
        assert_eq!(drift.extra_params, ["name"]);
        assert_eq!(drift.missing_params, ["who"]);
    }

    #[test]
    fn fr_c03_go_has_no_parameter_convention_and_never_drifts() {
        let doc = "Greet greets name.\n\n@param other is not Go's convention\n# Arguments\n* `x` - no\n";
        assert_eq!(documented("go", doc), Documented::default());
        assert_eq!(check("go", "Greet", 1, doc, &sig(&["name"], Returns::Nothing)), None);
    }
}
