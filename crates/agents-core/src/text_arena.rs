//! Many short strings in one buffer, each named by 8 bytes of offsets.
//!
//! Indexing a large tree keeps hundreds of thousands of short strings at
//! once (symbol paths, names, target names); as `String`s each costs its
//! own allocation besides its 24 bytes. A [`TextArena`] appends them to one
//! buffer and hands back a [`TextSpan`]; the graph writer's string interner
//! and the resolver's symbol table keep theirs this way.

/// Where a string lies in a [`TextArena`]: 32-bit offsets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TextSpan {
    pub start: u32,
    pub len: u32,
}

/// Strings back to back; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct TextArena {
    text: String,
}

impl TextArena {
    /// Appends `s`; `None` (and nothing appended) when it would end past the
    /// 4 GiB its offsets reach.
    pub fn push(&mut self, s: &str) -> Option<TextSpan> {
        let start = u32::try_from(self.text.len()).ok()?;
        let len = u32::try_from(s.len()).ok()?;
        start.checked_add(len)?;
        self.text.push_str(s);
        Some(TextSpan { start, len })
    }

    /// The string at `span` (a span this arena handed out).
    pub fn get(&self, span: TextSpan) -> &str {
        &self.text[span.start as usize..span.start as usize + span.len as usize]
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushed_strings_come_back_by_their_spans() {
        let mut arena = TextArena::default();
        let a = arena.push("App.save").unwrap();
        let empty = arena.push("").unwrap();
        let b = arena.push("save").unwrap();
        assert_eq!((arena.get(a), arena.get(empty), arena.get(b)), ("App.save", "", "save"));
        assert_eq!(b, TextSpan { start: 8, len: 4 });
        assert_eq!(arena.len(), 12);
    }
}
