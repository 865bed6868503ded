//! The knowledge-node parser and the evidence (AgentMemory, PCD) validator
//! on arbitrary text: they may reject, never panic.
//!
//!     RUSTC_BOOTSTRAP=1 cargo fuzz run frontmatter -- -max_total_time=60
#![no_main]

use std::path::Path;

use agents_akms::schema::{Layer, parse_node};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for layer in [Layer::Global, Layer::Local, Layer::CodeMirror] {
        let _ = parse_node(Path::new("fuzz.md"), text, layer);
    }
    let _ = agents_akms::evidence::parse_evidence(Path::new("fuzz.md"), text);
});
