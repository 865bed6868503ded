//! Language detection for every file the repository indexer walks.
//!
//! The indexer calls [`detect_language`] once per file (tens of thousands per run), so
//! detection is a handful of `match`es on the file name and its lowercased extension,
//! with no allocation, no regex and no lazily built tables. The first line of a file is
//! consulted only when neither the name nor the extension says anything; callers ask
//! [`needs_first_line`] first so that they open a file only when it can matter.
//!
//! Detection runs in this order, and the first rule that answers wins:
//!
//! 1. the file name: exact names (`Makefile`, `CMakeLists.txt`, `.bashrc`, `go.mod`),
//!    name prefixes (`Dockerfile.dev`, `.env.local`), and, for names without an
//!    extension, case-insensitive document names (`README`, `LICENSE`, `CHANGELOG`);
//! 2. the extension (text after the last `.`, not counting a leading dot), compared
//!    case-insensitively: `x.PY` is python and `foo.d.ts` is typescript;
//! 3. the first line: a shebang (`#!/usr/bin/env -S node --flag`, `#!/usr/bin/python3.11`),
//!    an XML, PHP or HTML prologue, or an Emacs (`-*- mode: ruby -*-`) or Vim
//!    (`vim: set ft=python:`) modeline.
//!
//! Anything else is `"unknown"`; whether a file is binary is decided elsewhere, so
//! `x.tar.gz` is simply unknown here.
//!
//! Names are lowercase and stable, since they reach the index and its users; every one
//! is listed by [`known_languages`]. Where an extension is ambiguous we pick the reading
//! most common in the repositories we index, and say so:
//!
//! - `.h` is `"c"`: C++ projects usually use `.hpp`/`.hh`/`.hxx`, which are `"cpp"`, and
//!   the C reading of a header is the safe common subset. Uppercase `.C` and `.H` are
//!   `"cpp"`, as GCC treats them.
//! - `.jsx` is `"javascript"`: one JavaScript grammar parses JSX, whereas TypeScript
//!   needs a separate grammar for JSX, hence the distinct `"tsx"`.
//! - `.pyx`/`.pxd`/`.pxi` are `"cython"`, not python: they do not parse as python.
//! - `.ipynb` is `"jupyter"`, not json, so that notebooks can be treated as cells.
//! - `go.mod`/`go.work` are `"go-module"`, not go: they are not Go source.
//! - `.m` is `"objective-c"` (not MATLAB), `.pl` is `"perl"` (not Prolog), `.v` is
//!   `"verilog"` (not Coq), `.fs` is `"fsharp"` (not a GLSL shader).
//! - `deno`, `bun`, `ts-node` and `tsx` shebangs are `"typescript"`.

/// The name returned when nothing identifies the file.
const UNKNOWN: &str = "unknown";

/// Longest extension or file name we lowercase on the stack; longer ones match nothing
/// in the case-insensitive tables, which hold only short names.
const LOWERCASE_CAPACITY: usize = 32;

/// Every name [`detect_language`] can return, sorted by bytes and deduplicated.
const KNOWN_LANGUAGES: &[&str] = &[
    "ada",
    "asciidoc",
    "assembly",
    "astro",
    "awk",
    "batch",
    "c",
    "clojure",
    "cmake",
    "cobol",
    "coffeescript",
    "cpp",
    "crystal",
    "csharp",
    "css",
    "csv",
    "cuda",
    "cython",
    "dart",
    "diff",
    "dockerfile",
    "dotenv",
    "elixir",
    "elm",
    "emacs-lisp",
    "erlang",
    "fish",
    "fortran",
    "fsharp",
    "gleam",
    "glsl",
    "go",
    "go-module",
    "graphql",
    "groovy",
    "handlebars",
    "haskell",
    "hcl",
    "hlsl",
    "html",
    "ignore",
    "ini",
    "java",
    "javascript",
    "jinja",
    "json",
    "jsonnet",
    "julia",
    "jupyter",
    "just",
    "kotlin",
    "latex",
    "less",
    "lisp",
    "lua",
    "makefile",
    "markdown",
    "meson",
    "nim",
    "nix",
    "objective-c",
    "ocaml",
    "org",
    "pascal",
    "perl",
    "php",
    "powershell",
    "properties",
    "protobuf",
    "purescript",
    "python",
    "r",
    "racket",
    "restructuredtext",
    "ruby",
    "rust",
    "sass",
    "scala",
    "scheme",
    "scss",
    "shell",
    "solidity",
    "sql",
    "starlark",
    "svelte",
    "swift",
    "tcl",
    "terraform",
    "text",
    "thrift",
    "toml",
    "tsv",
    "tsx",
    "typescript",
    "unknown",
    "vbscript",
    "verilog",
    "vhdl",
    "vim",
    "visual-basic",
    "vue",
    "wgsl",
    "xml",
    "yaml",
    "zig",
];

/// Detects the language of a file from its path (relative, `/`-separated), and, when the
/// name and extension say nothing, from the first line (shebang / modeline) if given.
///
/// Returns one of [`known_languages`]; `"unknown"` when nothing matches.
pub fn detect_language(path: &str, first_line: Option<&str>) -> &'static str {
    let name = file_name(path);
    if let Some(language) = from_name_or_extension(name) {
        return language;
    }
    first_line.and_then(from_first_line).unwrap_or(UNKNOWN)
}

/// Whether detect_language might need the first line for this path (no extension match,
/// no file-name match), so the caller reads it only when needed.
pub fn needs_first_line(path: &str) -> bool {
    from_name_or_extension(file_name(path)).is_none()
}

/// Every language name this module can return, sorted, deduplicated.
pub fn known_languages() -> &'static [&'static str] {
    KNOWN_LANGUAGES
}

/// The last component of a `/`-separated path.
fn file_name(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

/// The extension of a file name: the text after its last `.`, where a leading dot (as in
/// `.bashrc`) starts the name rather than an extension.
fn extension(name: &str) -> Option<&str> {
    match name.rsplit_once('.') {
        Some((stem, extension)) if !stem.is_empty() && !extension.is_empty() => Some(extension),
        _ => None,
    }
}

fn from_name_or_extension(name: &str) -> Option<&'static str> {
    from_file_name(name).or_else(|| extension(name).and_then(from_extension))
}

/// Copies `text` into `buffer` lowercased (ASCII only); `None` when it does not fit.
fn lowercase_into<'b>(text: &str, buffer: &'b mut [u8; LOWERCASE_CAPACITY]) -> Option<&'b str> {
    let target = buffer.get_mut(..text.len())?;
    target.copy_from_slice(text.as_bytes());
    target.make_ascii_lowercase();
    // ASCII lowercasing keeps UTF-8 valid, so this never fails.
    std::str::from_utf8(target).ok()
}

fn starts_with_ignore_ascii_case(text: &str, prefix: &str) -> bool {
    text.as_bytes().get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// Names that identify a file whatever its extension says.
fn from_file_name(name: &str) -> Option<&'static str> {
    if let Some(language) = from_exact_file_name(name) {
        return Some(language);
    }
    if starts_with_ignore_ascii_case(name, "dockerfile.") || starts_with_ignore_ascii_case(name, "containerfile.") {
        return Some("dockerfile");
    }
    if name.starts_with(".env.") {
        return Some("dotenv");
    }
    if name.len() > 1 && name.starts_with('.') && name.ends_with("ignore") {
        return Some("ignore");
    }
    if extension(name).is_none() {
        return from_extensionless_name_ignoring_case(name);
    }
    None
}

fn from_exact_file_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "Makefile" | "makefile" | "GNUmakefile" | "BSDmakefile" | "Makefile.am" | "Makefile.in" => "makefile",
        "CMakeLists.txt" => "cmake",
        "Rakefile" | "rakefile" | "Gemfile" | "Guardfile" | "Podfile" | "Vagrantfile" | "Brewfile" | "Capfile"
        | "Berksfile" | "Fastfile" | "Dangerfile" => "ruby",
        "BUILD" | "BUILD.bazel" | "WORKSPACE" | "WORKSPACE.bazel" | "MODULE.bazel" | "Tiltfile" => "starlark",
        "Jenkinsfile" => "groovy",
        "go.mod" | "go.work" => "go-module",
        "go.sum" | "go.work.sum" | "Gemfile.lock" | "yarn.lock" => "text",
        "Cargo.lock" | "Pipfile" | "poetry.lock" | "uv.lock" | "pdm.lock" => "toml",
        "Pipfile.lock" | "composer.lock" | "flake.lock" | ".babelrc" | ".eslintrc" | ".prettierrc" | ".jshintrc"
        | ".swcrc" => "json",
        ".clang-format" | ".clang-tidy" | ".yamllint" => "yaml",
        ".gitconfig" | ".gitmodules" | ".editorconfig" | ".npmrc" | ".pypirc" | ".pylintrc" | ".flake8"
        | ".coveragerc" | ".hgrc" => "ini",
        ".bashrc" | ".bash_profile" | ".bash_login" | ".bash_logout" | ".bash_aliases" | ".zshrc" | ".zshenv"
        | ".zprofile" | ".zlogin" | ".zlogout" | ".profile" | ".kshrc" | ".mkshrc" | ".cshrc" | ".tcshrc"
        | ".login" | ".logout" | ".envrc" | "bashrc" | "zshrc" | "PKGBUILD" | "APKBUILD" => "shell",
        ".env" => "dotenv",
        ".vimrc" | ".gvimrc" | "_vimrc" => "vim",
        ".emacs" => "emacs-lisp",
        ".Rprofile" => "r",
        "Snakefile" | "SConstruct" | "SConscript" => "python",
        "meson.build" | "meson_options.txt" | "meson.options" => "meson",
        "Justfile" | "justfile" | ".justfile" => "just",
        "rebar.config" => "erlang",
        _ => return None,
    })
}

/// Extension-less names whose case varies between projects (`README`, `Readme`).
fn from_extensionless_name_ignoring_case(name: &str) -> Option<&'static str> {
    let mut buffer = [0; LOWERCASE_CAPACITY];
    let lowercase = lowercase_into(name, &mut buffer)?;
    if lowercase.starts_with("license-") || lowercase.starts_with("licence-") {
        return Some("text");
    }
    Some(match lowercase {
        "readme" | "license" | "licence" | "copying" | "copyright" | "notice" | "authors" | "contributors"
        | "changelog" | "changes" | "history" | "news" | "todo" | "install" | "codeowners" | "maintainers"
        | "patents" => "text",
        "dockerfile" | "containerfile" => "dockerfile",
        _ => return None,
    })
}

fn from_extension(extension: &str) -> Option<&'static str> {
    // Case carries meaning here only: GCC reads `.C` and `.H` as C++.
    if extension == "C" || extension == "H" {
        return Some("cpp");
    }
    let mut buffer = [0; LOWERCASE_CAPACITY];
    let lowercase = lowercase_into(extension, &mut buffer)?;
    Some(match lowercase {
        "py" | "pyi" | "pyw" => "python",
        "pyx" | "pxd" | "pxi" => "cython",
        "ipynb" => "jupyter",
        "rs" => "rust",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "tsx",
        "js" | "mjs" | "cjs" | "jsx" => "javascript",
        "go" => "go",
        "java" => "java",
        "c" | "h" => "c",
        "cpp" | "cc" | "cxx" | "c++" | "cp" | "hpp" | "hh" | "hxx" | "h++" | "ipp" | "tpp" | "tcc" | "inl" | "ixx"
        | "cppm" => "cpp",
        "cs" | "csx" => "csharp",
        "rb" | "rbw" | "rake" | "gemspec" | "ru" | "podspec" => "ruby",
        "php" | "phtml" | "phpt" | "php3" | "php4" | "php5" | "php7" | "php8" => "php",
        "swift" => "swift",
        "kt" | "kts" => "kotlin",
        "scala" | "sc" | "sbt" => "scala",
        "sh" | "bash" | "zsh" | "ksh" | "ash" | "dash" | "csh" | "tcsh" | "command" => "shell",
        "fish" => "fish",
        "ps1" | "psm1" | "psd1" => "powershell",
        "bat" | "cmd" => "batch",
        "pl" | "pm" | "pod" | "psgi" | "perl" => "perl",
        "lua" => "lua",
        "r" => "r",
        "dart" => "dart",
        "ex" | "exs" => "elixir",
        "erl" | "hrl" | "escript" => "erlang",
        "hs" | "lhs" => "haskell",
        "ml" | "mli" => "ocaml",
        "fs" | "fsi" | "fsx" => "fsharp",
        "clj" | "cljs" | "cljc" | "edn" | "bb" => "clojure",
        "jl" => "julia",
        "zig" | "zon" => "zig",
        "nim" | "nims" | "nimble" => "nim",
        "m" | "mm" => "objective-c",
        "sql" => "sql",
        "html" | "htm" | "xhtml" | "shtml" => "html",
        "css" => "css",
        "scss" => "scss",
        "sass" => "sass",
        "less" => "less",
        "vue" => "vue",
        "svelte" => "svelte",
        "astro" => "astro",
        "md" | "markdown" | "mdown" | "mkd" | "mkdn" | "mdx" | "rmd" | "qmd" => "markdown",
        "rst" | "rest" => "restructuredtext",
        "adoc" | "asciidoc" => "asciidoc",
        "org" => "org",
        "json" | "jsonc" | "json5" | "jsonl" | "ndjson" | "geojson" | "webmanifest" => "json",
        "yaml" | "yml" => "yaml",
        "toml" => "toml",
        "xml" | "xsd" | "xsl" | "xslt" | "svg" | "plist" | "xaml" | "csproj" | "vbproj" | "fsproj" | "vcxproj"
        | "props" | "targets" | "nuspec" | "resx" | "wsdl" => "xml",
        "ini" | "cfg" => "ini",
        "properties" => "properties",
        "proto" => "protobuf",
        "graphql" | "graphqls" | "gql" => "graphql",
        "tf" | "tfvars" => "terraform",
        "hcl" => "hcl",
        "dockerfile" | "containerfile" => "dockerfile",
        "mk" | "mak" | "make" => "makefile",
        "cmake" => "cmake",
        "nix" => "nix",
        "groovy" | "gvy" | "gradle" | "jenkinsfile" => "groovy",
        "bzl" | "star" | "bazel" => "starlark",
        "tex" | "ltx" | "sty" | "cls" | "bib" => "latex",
        "csv" => "csv",
        "tsv" => "tsv",
        "txt" | "text" | "log" => "text",
        "s" | "asm" => "assembly",
        "cu" | "cuh" => "cuda",
        "glsl" | "vert" | "frag" | "geom" | "tesc" | "tese" => "glsl",
        "hlsl" => "hlsl",
        "wgsl" => "wgsl",
        "v" | "sv" | "svh" => "verilog",
        "vhd" | "vhdl" => "vhdl",
        "f" | "for" | "f77" | "f90" | "f95" | "f03" | "f08" => "fortran",
        "pas" | "dpr" => "pascal",
        "adb" | "ads" => "ada",
        "cob" | "cbl" | "cpy" => "cobol",
        "lisp" | "lsp" => "lisp",
        "el" => "emacs-lisp",
        "scm" | "ss" => "scheme",
        "rkt" => "racket",
        "cr" => "crystal",
        "coffee" => "coffeescript",
        "elm" => "elm",
        "purs" => "purescript",
        "gleam" => "gleam",
        "sol" => "solidity",
        "vb" => "visual-basic",
        "vbs" => "vbscript",
        "hbs" | "handlebars" | "mustache" => "handlebars",
        "j2" | "jinja" | "jinja2" => "jinja",
        "jsonnet" | "libsonnet" => "jsonnet",
        "diff" | "patch" => "diff",
        "thrift" => "thrift",
        "awk" => "awk",
        "tcl" => "tcl",
        "vim" => "vim",
        _ => return None,
    })
}

/// Reads a shebang, a markup prologue, or an Emacs or Vim modeline.
fn from_first_line(line: &str) -> Option<&'static str> {
    let line = line.trim_start_matches('\u{feff}').trim();
    if let Some(command) = line.strip_prefix("#!") {
        return from_shebang(command);
    }
    if line.starts_with("<?php") {
        return Some("php");
    }
    if line.starts_with("<?xml") {
        return Some("xml");
    }
    if starts_with_ignore_ascii_case(line, "<!doctype html") || starts_with_ignore_ascii_case(line, "<html") {
        return Some("html");
    }
    from_emacs_modeline(line).or_else(|| from_vim_modeline(line))
}

/// The interpreter of `#!/path/interpreter args` or `#!/usr/bin/env [-S] [VAR=x] interpreter`.
fn from_shebang(command: &str) -> Option<&'static str> {
    let mut words = command.split_ascii_whitespace();
    let mut program = basename(words.next()?);
    if program == "env" {
        program = loop {
            let word = words.next()?;
            if matches!(word, "-u" | "--unset" | "-C" | "--chdir" | "-P") {
                // These options take the next word as their value.
                words.next()?;
            } else if !word.starts_with('-') && !word.contains('=') {
                break basename(word);
            }
        };
    }
    // `python3.11`, `perl5`, `lua5.4`, `node18` name the same language as their stem.
    let stem = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    from_alias(if stem.is_empty() { program } else { stem })
}

fn basename(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

/// `-*- mode: ruby; coding: utf-8 -*-` or `-*- ruby -*-`.
fn from_emacs_modeline(line: &str) -> Option<&'static str> {
    let (_, rest) = line.split_once("-*-")?;
    let (variables, _) = rest.split_once("-*-")?;
    let mode = if variables.contains(':') {
        variables.split(';').find_map(|variable| {
            let (key, value) = variable.split_once(':')?;
            key.trim().eq_ignore_ascii_case("mode").then_some(value.trim())
        })?
    } else {
        variables.trim()
    };
    from_alias(mode)
}

/// `vim: set ft=python:`, `vi: filetype=sh`, `ex: syntax=make`.
fn from_vim_modeline(line: &str) -> Option<&'static str> {
    let settings = ["vim:", "vi:", "ex:"].iter().find_map(|marker| {
        line.match_indices(marker).find_map(|(start, _)| {
            let at_word_start = line[..start].chars().next_back().is_none_or(|before| before.is_whitespace());
            at_word_start.then(|| &line[start + marker.len()..])
        })
    })?;
    settings.split(|c: char| c == ':' || c.is_ascii_whitespace()).find_map(|setting| {
        let (key, value) = setting.split_once('=')?;
        if !matches!(key, "ft" | "filetype" | "syn" | "syntax") {
            return None;
        }
        // A compound filetype such as `python.django` starts with the language.
        from_alias(value.split('.').next()?)
    })
}

/// Interpreter, Vim filetype and Emacs mode names, matched case-insensitively.
fn from_alias(alias: &str) -> Option<&'static str> {
    let mut buffer = [0; LOWERCASE_CAPACITY];
    let lowercase = lowercase_into(alias, &mut buffer)?;
    Some(match lowercase {
        "python" | "pypy" => "python",
        "sh" | "bash" | "zsh" | "ksh" | "dash" | "ash" | "mksh" | "shell-script" => "shell",
        "fish" => "fish",
        "node" | "nodejs" | "javascript" | "js" | "javascriptreact" => "javascript",
        // `tsx` as an interpreter is the TypeScript runner, not a JSX dialect.
        "deno" | "bun" | "ts-node" | "tsx" | "typescript" => "typescript",
        "typescriptreact" => "tsx",
        "perl" | "cperl" => "perl",
        "ruby" | "jruby" | "truffleruby" => "ruby",
        "php" => "php",
        "lua" | "luajit" => "lua",
        "r" | "rscript" => "r",
        "pwsh" | "powershell" | "ps1" => "powershell",
        "tclsh" | "wish" | "tcl" => "tcl",
        "awk" | "gawk" | "mawk" | "nawk" => "awk",
        "julia" => "julia",
        "elixir" => "elixir",
        "escript" | "erlang" => "erlang",
        "runghc" | "runhaskell" | "haskell" => "haskell",
        "ocaml" => "ocaml",
        "swift" => "swift",
        "scala" | "amm" => "scala",
        "groovy" => "groovy",
        "kotlin" => "kotlin",
        "dart" => "dart",
        "crystal" => "crystal",
        "make" | "makefile" => "makefile",
        "guile" | "scheme" => "scheme",
        "racket" => "racket",
        "sbcl" | "clisp" | "lisp" => "lisp",
        "emacs-lisp" | "elisp" => "emacs-lisp",
        "bb" | "clojure" => "clojure",
        "cargo" | "rust-script" | "rust" => "rust",
        "c" => "c",
        "cpp" | "c++" => "cpp",
        "go" => "go",
        "java" => "java",
        "yaml" => "yaml",
        "json" => "json",
        "toml" => "toml",
        "xml" => "xml",
        "html" => "html",
        "markdown" => "markdown",
        "rst" => "restructuredtext",
        "dockerfile" => "dockerfile",
        "cmake" => "cmake",
        "nix" => "nix",
        "vim" => "vim",
        "sql" => "sql",
        "dosini" | "ini" => "ini",
        "tex" | "latex" => "latex",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(path, first line, expected language)`.
    const CASES: &[(&str, Option<&str>, &str)] = &[
        // Extensions, one or more per language.
        ("src/main.py", None, "python"),
        ("stubs/os.pyi", None, "python"),
        ("fast/_speedups.pyx", None, "cython"),
        ("fast/_speedups.pxd", None, "cython"),
        ("notebooks/analysis.ipynb", None, "jupyter"),
        ("crates/core/src/lib.rs", None, "rust"),
        ("web/src/app.ts", None, "typescript"),
        ("web/src/app.tsx", None, "tsx"),
        ("web/src/app.js", None, "javascript"),
        ("web/src/app.jsx", None, "javascript"),
        ("web/esm.mjs", None, "javascript"),
        ("web/cjs.cjs", None, "javascript"),
        ("cmd/main.go", None, "go"),
        ("src/Main.java", None, "java"),
        ("src/main.c", None, "c"),
        ("include/api.h", None, "c"),
        ("src/main.cpp", None, "cpp"),
        ("src/main.cc", None, "cpp"),
        ("include/api.hpp", None, "cpp"),
        ("include/api.hh", None, "cpp"),
        ("include/api.hxx", None, "cpp"),
        ("src/legacy.C", None, "cpp"),
        ("src/legacy.H", None, "cpp"),
        ("src/Program.cs", None, "csharp"),
        ("lib/app.rb", None, "ruby"),
        ("app.gemspec", None, "ruby"),
        ("public/index.php", None, "php"),
        ("Sources/App.swift", None, "swift"),
        ("src/Main.kt", None, "kotlin"),
        ("build.gradle.kts", None, "kotlin"),
        ("src/Main.scala", None, "scala"),
        ("build.sbt", None, "scala"),
        ("scripts/build.sh", None, "shell"),
        ("scripts/build.bash", None, "shell"),
        ("conf.d/abbr.fish", None, "fish"),
        ("tools/setup.ps1", None, "powershell"),
        ("tools/setup.bat", None, "batch"),
        ("tools/setup.cmd", None, "batch"),
        ("lib/Foo.pm", None, "perl"),
        ("script.pl", None, "perl"),
        ("init.lua", None, "lua"),
        ("analysis.R", None, "r"),
        ("analysis.r", None, "r"),
        ("lib/main.dart", None, "dart"),
        ("lib/app.ex", None, "elixir"),
        ("test/app_test.exs", None, "elixir"),
        ("src/app.erl", None, "erlang"),
        ("src/Main.hs", None, "haskell"),
        ("bin/main.ml", None, "ocaml"),
        ("src/Library.fs", None, "fsharp"),
        ("src/core.clj", None, "clojure"),
        ("src/Pkg.jl", None, "julia"),
        ("src/main.zig", None, "zig"),
        ("src/main.nim", None, "nim"),
        ("Classes/View.m", None, "objective-c"),
        ("Classes/View.mm", None, "objective-c"),
        ("db/schema.sql", None, "sql"),
        ("public/index.html", None, "html"),
        ("public/index.htm", None, "html"),
        ("styles/site.css", None, "css"),
        ("styles/site.scss", None, "scss"),
        ("styles/site.sass", None, "sass"),
        ("styles/site.less", None, "less"),
        ("src/App.vue", None, "vue"),
        ("src/App.svelte", None, "svelte"),
        ("src/pages/index.astro", None, "astro"),
        ("docs/guide.md", None, "markdown"),
        ("docs/guide.mdx", None, "markdown"),
        ("docs/index.rst", None, "restructuredtext"),
        ("docs/index.adoc", None, "asciidoc"),
        ("notes/todo.org", None, "org"),
        ("package.json", None, "json"),
        ("tsconfig.jsonc", None, "json"),
        (".github/workflows/ci.yml", None, "yaml"),
        ("config.yaml", None, "yaml"),
        ("Cargo.toml", None, "toml"),
        ("pom.xml", None, "xml"),
        ("assets/logo.svg", None, "xml"),
        ("src/App.csproj", None, "xml"),
        ("setup.cfg", None, "ini"),
        ("tox.ini", None, "ini"),
        ("src/main/resources/app.properties", None, "properties"),
        ("api/service.proto", None, "protobuf"),
        ("api/schema.graphql", None, "graphql"),
        ("infra/main.tf", None, "terraform"),
        ("infra/prod.tfvars", None, "terraform"),
        ("infra/job.hcl", None, "hcl"),
        ("default.nix", None, "nix"),
        ("build.gradle", None, "groovy"),
        ("src/Util.groovy", None, "groovy"),
        ("rules/defs.bzl", None, "starlark"),
        ("paper/main.tex", None, "latex"),
        ("paper/refs.bib", None, "latex"),
        ("data/rows.csv", None, "csv"),
        ("data/rows.tsv", None, "tsv"),
        ("requirements.txt", None, "text"),
        ("logs/build.log", None, "text"),
        ("boot/start.s", None, "assembly"),
        ("boot/start.S", None, "assembly"),
        ("boot/start.asm", None, "assembly"),
        ("kernels/add.cu", None, "cuda"),
        ("shaders/light.frag", None, "glsl"),
        ("shaders/light.hlsl", None, "hlsl"),
        ("shaders/light.wgsl", None, "wgsl"),
        ("rtl/top.v", None, "verilog"),
        ("rtl/top.sv", None, "verilog"),
        ("rtl/top.vhd", None, "vhdl"),
        ("src/solver.f90", None, "fortran"),
        ("src/unit1.pas", None, "pascal"),
        ("src/main.adb", None, "ada"),
        ("src/payroll.cbl", None, "cobol"),
        ("src/core.lisp", None, "lisp"),
        ("lisp/init.el", None, "emacs-lisp"),
        ("src/main.scm", None, "scheme"),
        ("src/main.rkt", None, "racket"),
        ("src/app.cr", None, "crystal"),
        ("src/app.coffee", None, "coffeescript"),
        ("src/Main.elm", None, "elm"),
        ("src/Main.purs", None, "purescript"),
        ("src/app.gleam", None, "gleam"),
        ("contracts/Token.sol", None, "solidity"),
        ("src/Module1.vb", None, "visual-basic"),
        ("scripts/install.vbs", None, "vbscript"),
        ("templates/page.hbs", None, "handlebars"),
        ("templates/page.html.j2", None, "jinja"),
        ("config/main.jsonnet", None, "jsonnet"),
        ("fixes/bug.patch", None, "diff"),
        ("api/service.thrift", None, "thrift"),
        ("tools/sum.awk", None, "awk"),
        ("tools/build.tcl", None, "tcl"),
        ("plugin/foo.vim", None, "vim"),
        ("build/rules.mk", None, "makefile"),
        ("cmake/FindFoo.cmake", None, "cmake"),
        ("docker/app.dockerfile", None, "dockerfile"),
        // Case-insensitive extensions.
        ("LEGACY/MAIN.PY", None, "python"),
        ("Docs/Guide.MD", None, "markdown"),
        ("web/App.TSX", None, "tsx"),
        ("data/Config.Json", None, "json"),
        // Double extensions: the last one decides.
        ("types/index.d.ts", None, "typescript"),
        ("types/index.d.mts", None, "typescript"),
        ("dist/x.tar.gz", None, "unknown"),
        ("web/app.min.js", None, "javascript"),
        ("LICENSE.txt", None, "text"),
        ("CHANGELOG.md", None, "markdown"),
        // File names, at the root and nested.
        ("Makefile", None, "makefile"),
        ("src/a/Makefile", None, "makefile"),
        ("makefile", None, "makefile"),
        ("GNUmakefile", None, "makefile"),
        ("Makefile.am", None, "makefile"),
        ("Dockerfile", None, "dockerfile"),
        ("deploy/Dockerfile.dev", None, "dockerfile"),
        ("dockerfile", None, "dockerfile"),
        ("Containerfile", None, "dockerfile"),
        ("CMakeLists.txt", None, "cmake"),
        ("src/CMakeLists.txt", None, "cmake"),
        ("Rakefile", None, "ruby"),
        ("Gemfile", None, "ruby"),
        ("Vagrantfile", None, "ruby"),
        ("BUILD", None, "starlark"),
        ("pkg/BUILD.bazel", None, "starlark"),
        ("WORKSPACE", None, "starlark"),
        ("MODULE.bazel", None, "starlark"),
        ("Jenkinsfile", None, "groovy"),
        ("go.mod", None, "go-module"),
        ("go.work", None, "go-module"),
        ("go.sum", None, "text"),
        ("Cargo.lock", None, "toml"),
        ("poetry.lock", None, "toml"),
        ("flake.lock", None, "json"),
        ("Snakefile", None, "python"),
        ("SConstruct", None, "python"),
        ("meson.build", None, "meson"),
        ("justfile", None, "just"),
        ("rebar.config", None, "erlang"),
        ("PKGBUILD", None, "shell"),
        ("LICENSE", None, "text"),
        ("License", None, "text"),
        ("LICENSE-MIT", None, "text"),
        ("README", None, "text"),
        ("docs/Readme", None, "text"),
        ("CHANGELOG", None, "text"),
        ("COPYING", None, "text"),
        // Dotfiles.
        (".bashrc", None, "shell"),
        ("home/.zshrc", None, "shell"),
        (".profile", None, "shell"),
        (".envrc", None, "shell"),
        (".gitignore", None, "ignore"),
        ("web/.dockerignore", None, "ignore"),
        (".env", None, "dotenv"),
        (".env.local", None, "dotenv"),
        (".editorconfig", None, "ini"),
        (".gitmodules", None, "ini"),
        (".clang-format", None, "yaml"),
        (".eslintrc", None, "json"),
        (".eslintrc.js", None, "javascript"),
        (".vimrc", None, "vim"),
        (".emacs", None, "emacs-lisp"),
        (".Rprofile", None, "r"),
        // Shebangs: direct, with env, with -S, versioned, with arguments.
        ("bin/tool", Some("#!/bin/sh"), "shell"),
        ("bin/tool", Some("#!/bin/bash -euo pipefail"), "shell"),
        ("bin/tool", Some("#!/usr/bin/env bash"), "shell"),
        ("bin/tool", Some("#! /bin/zsh"), "shell"),
        ("bin/tool", Some("#!/usr/bin/env python3"), "python"),
        ("bin/tool", Some("#!/usr/bin/python3.11"), "python"),
        ("bin/tool", Some("#!/usr/bin/env python3.11 -u"), "python"),
        ("bin/tool", Some("#!/usr/bin/env PYTHONPATH=. python"), "python"),
        ("bin/tool", Some("#!/usr/bin/env -S node --max-old-space-size=4096"), "javascript"),
        ("bin/tool", Some("#!/usr/bin/env -S deno run --allow-net"), "typescript"),
        ("bin/tool", Some("#!/usr/bin/env bun"), "typescript"),
        ("bin/tool", Some("#!/usr/bin/env -S cargo +nightly -Zscript"), "rust"),
        ("bin/tool", Some("#!/usr/bin/perl -w"), "perl"),
        ("bin/tool", Some("#!/usr/bin/env perl5.36"), "perl"),
        ("bin/tool", Some("#!/usr/bin/env ruby"), "ruby"),
        ("bin/tool", Some("#!/usr/bin/php8.2"), "php"),
        ("bin/tool", Some("#!/usr/bin/env lua5.4"), "lua"),
        ("bin/tool", Some("#!/usr/bin/env Rscript --vanilla"), "r"),
        ("bin/tool", Some("#!/usr/bin/env pwsh"), "powershell"),
        ("bin/tool", Some("#!/usr/bin/awk -f"), "awk"),
        ("bin/tool", Some("#!/usr/bin/make -f"), "makefile"),
        ("bin/tool", Some("#!/usr/bin/env fish"), "fish"),
        ("bin/tool", Some("#!/usr/bin/env escript"), "erlang"),
        ("bin/tool", Some("#!/usr/bin/env -u HOME tclsh"), "tcl"),
        ("bin/tool", Some("#!/usr/bin/env python3\r"), "python"),
        ("bin/tool", Some("#!/usr/bin/env"), "unknown"),
        ("bin/tool", Some("#!/opt/custom-interpreter"), "unknown"),
        // Shebangs and modelines also apply to unknown extensions.
        ("scripts/deploy.cgi", Some("#!/usr/bin/perl"), "perl"),
        // ...but never override a known extension.
        ("scripts/main.py", Some("#!/bin/sh"), "python"),
        // Prologues and modelines.
        ("views/page", Some("<?php echo 1;"), "php"),
        ("data/feed", Some("<?xml version=\"1.0\"?>"), "xml"),
        ("site/page", Some("<!DOCTYPE html>"), "html"),
        ("conf/x", Some("# -*- mode: ruby; coding: utf-8 -*-"), "ruby"),
        ("conf/x", Some(";; -*- Emacs-Lisp -*-"), "emacs-lisp"),
        ("conf/x", Some("# -*- coding: utf-8 -*-"), "unknown"),
        ("conf/x", Some("# vim: set ft=python:"), "python"),
        ("conf/x", Some("/* vim: set filetype=cpp : */"), "cpp"),
        ("conf/x", Some("# vi: ft=sh"), "shell"),
        ("conf/x", Some("# vim: ts=4 sw=4"), "unknown"),
        ("conf/x", Some("// regex: ft=python"), "unknown"),
        // Unknowns.
        ("bin/tool", None, "unknown"),
        ("assets/logo.png", None, "unknown"),
        ("a.", None, "unknown"),
        ("build/output.o", Some("\u{7f}ELF"), "unknown"),
        ("", None, "unknown"),
    ];

    /// What is wrong with detecting `path`'s language, when it is not `expected`.
    fn mismatch(path: &str, first_line: Option<&str>, expected: &str) -> Option<String> {
        let actual = detect_language(path, first_line);
        (actual != expected).then(|| format!("{path:?} {first_line:?}: expected {expected}, got {actual}"))
    }

    #[test]
    fn detects_every_case() {
        let failures: Vec<String> =
            CASES.iter().filter_map(|&(path, first_line, expected)| mismatch(path, first_line, expected)).collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn first_line_matters_only_when_needed() {
        for &(path, first_line, _) in CASES {
            if !needs_first_line(path) {
                assert_eq!(
                    detect_language(path, first_line),
                    detect_language(path, None),
                    "{path:?} does not need its first line but it changed the answer"
                );
            }
        }
        assert!(needs_first_line("bin/tool"));
        assert!(needs_first_line("scripts/deploy.cgi"));
        assert!(!needs_first_line("src/lib.rs"));
        assert!(!needs_first_line("src/a/Makefile"));
        assert!(!needs_first_line("LICENSE"));
    }

    #[test]
    fn known_languages_are_sorted_and_deduplicated() {
        let languages = known_languages();
        assert!(languages.windows(2).all(|pair| pair[0] < pair[1]), "known_languages must be strictly sorted");
    }

    #[test]
    fn cases_cover_exactly_the_known_languages() {
        for &(path, first_line, expected) in CASES {
            let actual = detect_language(path, first_line);
            assert!(known_languages().contains(&actual), "{actual} is not known");
            assert!(known_languages().contains(&expected), "{expected} is not known");
        }
        for language in known_languages() {
            assert!(CASES.iter().any(|&(_, _, expected)| expected == *language), "no case detects {language}");
        }
    }

    /// Every language literal in the mapping code is listed, and every listed name but
    /// `unknown` (a constant) is one of them, which table cases alone would not prove.
    #[test]
    fn source_literals_match_known_languages() {
        let source = include_str!("language.rs");
        let code = source.split_once("#[cfg(test)]").map_or(source, |(code, _)| code);
        let mut literals = Vec::new();
        for marker in ["=> \"", "Some(\""] {
            for (start, _) in code.match_indices(marker) {
                let rest = &code[start + marker.len()..];
                literals.push(&rest[..rest.find('"').expect("closed literal")]);
            }
        }
        for name in &literals {
            assert!(known_languages().contains(name), "{name} is not known");
        }
        for language in known_languages() {
            assert!(*language == UNKNOWN || literals.contains(language), "{language} is never returned");
        }
    }
}
