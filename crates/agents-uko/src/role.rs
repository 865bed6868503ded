//! What a file is there for, judged from its path alone: the code a
//! project runs, its tests, documents, examples, generated or vendored code,
//! type stubs. The resolver binds no name across from source to a test file
//! by a guess ([`crate::resolve`]); retrieval weighs each role's pieces
//! (`agents_acms::retrieval::prior_of`).

/// What a file is there for, judged from its path alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileRole {
    /// Code the project runs.
    Source,
    /// Tests, fixtures and test data.
    Test,
    /// Documentation: docs folders and prose files.
    Doc,
    /// Examples and benchmarks: code that uses the project rather than being it.
    Example,
    /// Vendored, generated or built code (`vendor/`, `dist/`, `*.min.js`, `*_pb2.py`).
    Generated,
    /// Type stubs and declaration files (`*.pyi`, `*.d.ts`).
    Stub,
}

/// Whether a file's name (as written) is a test class's by the naming of
/// JVM, .NET, Swift, PHP and Haskell test suites: `RouterTest.java`,
/// `SessionTests.swift`, `MapSpec.hs`, `ParserIT.java`; `Spec` only where it
/// names specifications (Scala, Groovy, Haskell), not Java's `KeySpec`.
fn is_test_class_file(name: &str) -> bool {
    let Some((stem, ext)) = name.rsplit_once('.') else { return false };
    let jvm_like = matches!(ext, "java" | "kt" | "scala" | "groovy" | "swift" | "cs" | "php" | "hs");
    jvm_like
        && (stem.ends_with("Test")
            || stem.ends_with("Tests")
            || (ext == "java" && stem.len() > 2 && stem.ends_with("IT"))
            || (matches!(ext, "scala" | "groovy" | "hs") && stem.ends_with("Spec")))
}

/// Whether a file lies in a documentation folder (`docs/`, `doc/`,
/// `documentation/`, `docs_src/`). A folder so named below a source root
/// (`src/`, `lib/`) is code named for what it does (astro's
/// `src/cli/docs/`, the `astro docs` command), and a Go file's folder is
/// its package (cobra's `doc/` generates man pages and Markdown): neither
/// is documentation.
fn in_docs_dir(lower: &str, name: &str) -> bool {
    if name.ends_with(".go") {
        return false;
    }
    let Some((folders, _)) = lower.rsplit_once('/') else { return false };
    for folder in folders.split('/') {
        match folder {
            "src" | "lib" => return false,
            "docs" | "doc" | "documentation" | "docs_src" => return true,
            _ => {}
        }
    }
    false
}

impl FileRole {
    pub fn of(path: &str) -> FileRole {
        let lower = path.to_ascii_lowercase();
        let name = lower.rsplit('/').next().unwrap_or(&lower);
        let in_dir = |dirs: &[&str]| lower.split('/').rev().skip(1).any(|part| dirs.contains(&part));
        let ends = |suffixes: &[&str]| suffixes.iter().any(|suffix| name.ends_with(suffix));
        if in_dir(&[
            "vendor",
            "vendored",
            "third_party",
            "third-party",
            "thirdparty",
            "3rdparty",
            // A C or C++ library's copy of another (spdlog's `fmt/bundled/`,
            // redis's `deps/`).
            "bundled",
            "deps",
            "node_modules",
            "dist",
            "generated",
            "__generated__",
        ]) || ends(&[
            ".min.js",
            ".min.css",
            "_pb2.py",
            "_pb2_grpc.py",
            ".pb.go",
            ".generated.ts",
            ".generated.js",
            ".g.dart",
        ]) {
            return FileRole::Generated;
        }
        // A `testing` folder is a test suite at the top of the tree (pytest's
        // `testing/`) and a library's test utilities, code its users import,
        // inside a package (`channels/testing/`, `numpy/testing/`).
        // Fuzzing harnesses (cJSON's `fuzzing/`) drive the code as tests do.
        let is_test = in_dir(&["test", "tests", "__tests__", "spec", "specs", "fixtures", "testdata", "e2e", "fuzz", "fuzzing"])
                || lower.starts_with("testing/")
                || name.starts_with("test_")
                // A test program or test helpers named for it alone (cJSON's
                // and hiredis's `test.c`, leveldb's `util/testutil.h`).
                || matches!(name.split_once('.').map(|(stem, _)| stem), Some("test" | "tests" | "testutil" | "testutils"))
                || name == "conftest.py"
                || ends(&[
                    "_test.go",
                    "_test.py",
                    "_test.rs",
                    ".test.ts",
                    ".test.js",
                    ".test.tsx",
                    ".test.jsx",
                    ".test.mjs",
                    ".test.cjs",
                    ".spec.ts",
                    ".spec.js",
                    ".spec.tsx",
                    ".spec.jsx",
                    ".spec.mjs",
                    "_tests.rs",
                    "tests.py",
                    "_spec.rb",
                    "_test.rb",
                    "_test.exs",
                    "_spec.lua",
                    // C and C++ beside the code they test (leveldb's `db/db_test.cc`).
                    "_test.c",
                    "_test.cc",
                    "_test.cpp",
                    "_test.cxx",
                    "_tests.cc",
                    "_tests.cpp",
                    "_unittest.cc",
                    "_unittest.cpp",
                ])
                || is_test_class_file(path.rsplit('/').next().unwrap_or(path));
        if is_test {
            return FileRole::Test;
        }
        // The words [`RolesAsked`] reads as asking for them: MediatR's
        // `samples/` put 20 pieces in the top tens of 8 of its 10 questions,
        // none relevant, while it ranked as source. Benchmark and profiling
        // harnesses (astro's `benchmark/`, pydantic-core's `profiling/`) are
        // the same kind of code: they drive the product, they are not it.
        if in_dir(&[
            "examples",
            "example",
            "samples",
            "sample",
            "benches",
            "benchmarks",
            "bench",
            "benchmark",
            "profiling",
        ]) {
            return FileRole::Example;
        }
        if in_docs_dir(&lower, name)
            || ends(&[".md", ".mdx", ".rst", ".txt", ".adoc"])
            || name.starts_with("changelog")
            || name.starts_with("history")
        {
            return FileRole::Doc;
        }
        if ends(&[".pyi", ".d.ts", ".d.mts", ".d.cts"]) {
            return FileRole::Stub;
        }
        FileRole::Source
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_roles_come_from_the_path() {
        assert_eq!(FileRole::of("src/requests/sessions.py"), FileRole::Source);
        assert_eq!(FileRole::of("tests/test_sessions.py"), FileRole::Test);
        assert_eq!(FileRole::of("tree_test.go"), FileRole::Test);
        assert_eq!(FileRole::of("testing/test_main.py"), FileRole::Test);
        assert_eq!(FileRole::of("testing/conftest_helpers.py"), FileRole::Test);
        assert_eq!(FileRole::of("channels/testing/websocket.py"), FileRole::Source);
        assert_eq!(FileRole::of("docs/api.md"), FileRole::Doc);
        assert_eq!(FileRole::of("docs/conf.py"), FileRole::Doc);
        assert_eq!(FileRole::of("packages/docs/components/tabs.tsx"), FileRole::Doc);
        // Code named for documentation it produces or opens.
        assert_eq!(FileRole::of("doc/md_docs.go"), FileRole::Source);
        assert_eq!(FileRole::of("packages/astro/src/cli/docs/core/open-docs.ts"), FileRole::Source);
        assert_eq!(FileRole::of("packages/astro/src/cli/docs/README.md"), FileRole::Doc);
        assert_eq!(FileRole::of("examples/hello/main.rs"), FileRole::Example);
        assert_eq!(FileRole::of("samples/App.Examples/Runner.cs"), FileRole::Example);
        assert_eq!(FileRole::of("benchmark/packages/timer/index.js"), FileRole::Example);
        assert_eq!(FileRole::of("profiling/dict_model.py"), FileRole::Example);
        assert_eq!(FileRole::of("vendor/lib/x.go"), FileRole::Generated);
        assert_eq!(FileRole::of("include/spdlog/fmt/bundled/format.h"), FileRole::Generated);
        assert_eq!(FileRole::of("deps/jemalloc/src/arena.c"), FileRole::Generated);
        assert_eq!(FileRole::of("static/app.min.js"), FileRole::Generated);
        assert_eq!(FileRole::of("pydantic/main.pyi"), FileRole::Stub);
        // Tests beside the code by their names, in each language's way.
        for test in [
            "db/db_test.cc",
            "util/cache_unittest.cpp",
            "fuzzing/afl.c",
            "lib/plug/conn_test.exs",
            "test.c",
            "util/testutil.h",
        ] {
            assert_eq!(FileRole::of(test), FileRole::Test, "{test}");
        }
        for test in ["src/RouterTest.java", "Sources/SessionTests.swift", "src/ParserIT.java", "src/MapSpec.hs"] {
            assert_eq!(FileRole::of(test), FileRole::Test, "{test}");
        }
        for source in
            ["src/KeySpec.java", "src/Contest.java", "src/IT.java", "db/db_impl.cc", "src/latest.c", "src/testing.c"]
        {
            assert_eq!(FileRole::of(source), FileRole::Source, "{source}");
        }
    }
}
