//! Rank formulas (`query_roles.<role>.rank_formula`): a small arithmetic
//! language over a node's numeric attributes, parsed once and evaluated per
//! node. Never code: numbers, attribute names, `+ - * /` (`×` is `*`),
//! parentheses and unary minus. A missing or non-numeric attribute is 0, a
//! boolean 1 or 0; division by zero gives 0, so every rank is a finite number.
//!
//! Bounded for any input: a formula is at most [`MAX_FORMULA_CHARS`]
//! characters and nests parentheses and unary minus at most
//! [`MAX_FORMULA_DEPTH`] deep, so parsing, evaluating and dropping one never
//! recurse without limit (a config with 100,000 nested parentheses is an
//! error, not a stack overflow).

use std::collections::BTreeSet;

use serde_json::Value;

/// Longest formula, in characters.
pub const MAX_FORMULA_CHARS: usize = 4096;
/// Deepest nesting of parentheses and unary minus signs.
pub const MAX_FORMULA_DEPTH: usize = 64;

/// A parsed formula.
#[derive(Clone, Debug, PartialEq)]
pub enum Formula {
    Number(f64),
    Attribute(String),
    Negate(Box<Formula>),
    Binary(Box<Formula>, char, Box<Formula>),
}

/// Why a formula does not parse: the text and the position of the problem.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("rank formula `{}`: {message} at character {at}", shortened(formula))]
pub struct FormulaError {
    pub formula: String,
    pub message: String,
    pub at: usize,
}

/// The formula as messages show it: its first 60 characters.
fn shortened(formula: &str) -> String {
    const SHOWN: usize = 60;
    match formula.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &formula[..end]),
        None => formula.to_owned(),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Number(f64),
    Name(String),
    Op(char),
    Open,
    Close,
}

fn tokens(text: &str) -> Result<Vec<(usize, Token)>, FormulaError> {
    let error = |at: usize, message: &str| FormulaError { formula: text.to_owned(), message: message.to_owned(), at };
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    if chars.len() > MAX_FORMULA_CHARS {
        return Err(error(
            chars[MAX_FORMULA_CHARS].0,
            &format!("the formula is longer than {MAX_FORMULA_CHARS} characters"),
        ));
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '+' | '-' | '*' | '/' => {
                out.push((at, Token::Op(c)));
                i += 1;
            }
            '×' => {
                out.push((at, Token::Op('*')));
                i += 1;
            }
            '(' => {
                out.push((at, Token::Open));
                i += 1;
            }
            ')' => {
                out.push((at, Token::Close));
                i += 1;
            }
            c if c.is_ascii_digit() || c == '.' => {
                let start = i;
                while i < chars.len() && (chars[i].1.is_ascii_digit() || chars[i].1 == '.') {
                    i += 1;
                }
                let literal: String = chars[start..i].iter().map(|(_, c)| c).collect();
                let value = literal.parse::<f64>().map_err(|_| error(at, "not a number"))?;
                out.push((at, Token::Number(value)));
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].1.is_ascii_alphanumeric() || chars[i].1 == '_') {
                    i += 1;
                }
                out.push((at, Token::Name(chars[start..i].iter().map(|(_, c)| c).collect())));
            }
            _ => return Err(error(at, &format!("unexpected `{c}`"))),
        }
    }
    Ok(out)
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<(usize, Token)>,
    next: usize,
    /// Parentheses and unary minus signs open at the current token.
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> FormulaError {
        let at = self.tokens.get(self.next).map_or(self.text.chars().count(), |(at, _)| *at);
        FormulaError { formula: self.text.to_owned(), message: message.to_owned(), at }
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next).map(|(_, t)| t)
    }

    fn sum(&mut self) -> Result<Formula, FormulaError> {
        let mut left = self.product()?;
        while let Some(Token::Op(op @ ('+' | '-'))) = self.peek().cloned() {
            self.next += 1;
            left = Formula::Binary(Box::new(left), op, Box::new(self.product()?));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Formula, FormulaError> {
        let mut left = self.factor()?;
        while let Some(Token::Op(op @ ('*' | '/'))) = self.peek().cloned() {
            self.next += 1;
            left = Formula::Binary(Box::new(left), op, Box::new(self.factor()?));
        }
        Ok(left)
    }

    /// Parses what `nested` parses one level deeper, refusing to go past
    /// [`MAX_FORMULA_DEPTH`].
    fn deeper(
        &mut self,
        nested: impl FnOnce(&mut Self) -> Result<Formula, FormulaError>,
    ) -> Result<Formula, FormulaError> {
        if self.depth >= MAX_FORMULA_DEPTH {
            self.next -= 1;
            return Err(
                self.error(&format!("parentheses and minus signs are nested more than {MAX_FORMULA_DEPTH} deep"))
            );
        }
        self.depth += 1;
        let inner = nested(self);
        self.depth -= 1;
        inner
    }

    fn factor(&mut self) -> Result<Formula, FormulaError> {
        let token = self.peek().cloned().ok_or_else(|| self.error("the formula ends early"))?;
        self.next += 1;
        match token {
            Token::Number(n) => Ok(Formula::Number(n)),
            Token::Name(name) => Ok(Formula::Attribute(name)),
            Token::Op('-') => Ok(Formula::Negate(Box::new(self.deeper(Self::factor)?))),
            Token::Open => self.deeper(|parser| {
                let inner = parser.sum()?;
                if parser.peek() != Some(&Token::Close) {
                    return Err(parser.error("expected `)`"));
                }
                parser.next += 1;
                Ok(inner)
            }),
            _ => {
                self.next -= 1;
                Err(self.error("expected a number, an attribute or `(`"))
            }
        }
    }
}

impl Formula {
    pub fn parse(text: &str) -> Result<Formula, FormulaError> {
        let mut parser = Parser { text, tokens: tokens(text)?, next: 0, depth: 0 };
        let formula = parser.sum()?;
        if parser.next != parser.tokens.len() {
            return Err(parser.error("unexpected text after the formula"));
        }
        Ok(formula)
    }

    /// The formula's value for a node whose attributes are `attributes`.
    pub fn eval(&self, attributes: &serde_json::Map<String, Value>) -> f64 {
        let value = match self {
            Formula::Number(n) => *n,
            Formula::Attribute(name) => match attributes.get(name) {
                Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
                Some(Value::Bool(b)) => f64::from(u8::from(*b)),
                _ => 0.0,
            },
            Formula::Negate(inner) => -inner.eval(attributes),
            Formula::Binary(left, op, right) => {
                let (l, r) = (left.eval(attributes), right.eval(attributes));
                match op {
                    '+' => l + r,
                    '-' => l - r,
                    '*' => l * r,
                    _ if r == 0.0 => 0.0,
                    _ => l / r,
                }
            }
        };
        if value.is_finite() { value } else { 0.0 }
    }

    /// The attribute names the formula reads, sorted.
    pub fn attributes(&self) -> BTreeSet<&str> {
        match self {
            Formula::Number(_) => BTreeSet::new(),
            Formula::Attribute(name) => BTreeSet::from([name.as_str()]),
            Formula::Negate(inner) => inner.attributes(),
            Formula::Binary(l, _, r) => l.attributes().union(&r.attributes()).copied().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(formula: &str, node: Value) -> f64 {
        Formula::parse(formula).unwrap().eval(node.as_object().unwrap())
    }

    #[test]
    fn arithmetic_over_node_attributes() {
        let node = json!({"confidence": 0.8, "activations": 5, "pinned": true, "title": "x"});
        assert_eq!(eval("confidence * activations", node.clone()), 4.0);
        assert_eq!(eval("confidence × activations", node.clone()), 4.0);
        assert!((eval("(confidence + 0.2) * 2 - -1", node.clone()) - 3.0).abs() < 1e-12);
        assert_eq!(eval("activations / 0", node.clone()), 0.0);
        assert_eq!(eval("missing * 3 + pinned + title", node), 1.0);
        assert_eq!(
            Formula::parse("confidence * activations").unwrap().attributes(),
            BTreeSet::from(["activations", "confidence"])
        );
    }

    #[test]
    fn anything_else_is_an_error_with_a_position() {
        for (text, at) in [("confidence *", 12), ("2 ** 3", 3), ("(confidence", 11), ("import os", 7), ("a; b", 1)] {
            let error = Formula::parse(text).unwrap_err();
            assert_eq!(error.at, at, "{text}: {error}");
        }
    }

    #[test]
    fn deep_nesting_and_long_formulas_are_errors_not_stack_overflows() {
        // Parsed on a thread with a small stack: the limit, not the stack size, stops it.
        let parse = |text: String| {
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || Formula::parse(&text).map_err(|e| (e.at, e.to_string())))
                .unwrap()
                .join()
                .expect("no stack overflow")
        };
        let n = 100_000;
        let parens = format!("{}confidence{}", "(".repeat(n), ")".repeat(n));
        let minus = format!("{}confidence", "-".repeat(n));
        let chain = vec!["confidence"; n].join("+");
        for text in [parens, minus, chain] {
            let (at, message) = parse(text).unwrap_err();
            assert_eq!(at, MAX_FORMULA_CHARS, "{message}");
            assert!(message.contains("longer than 4096 characters"), "{message}");
            assert!(message.len() < 300, "the message shortens the formula: {message}");
        }
        let n = 1000;
        for text in [
            format!("{}confidence{}", "(".repeat(n), ")".repeat(n)),
            format!("{}confidence", "-".repeat(n)),
            format!("{}confidence", "- ".repeat(n)),
        ] {
            let (_, message) = parse(text).unwrap_err();
            assert!(message.contains("nested more than 64 deep"), "{message}");
        }
        // The longest chain allowed evaluates on a small stack too.
        let longest = vec!["1"; MAX_FORMULA_CHARS / 2].join("+");
        let sum = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(move || Formula::parse(&longest).unwrap().eval(&serde_json::Map::new()))
            .unwrap()
            .join()
            .expect("no stack overflow");
        assert_eq!(sum, (MAX_FORMULA_CHARS / 2) as f64);
        // Within the limits, nesting still works.
        let depth = MAX_FORMULA_DEPTH / 2;
        let nested = format!("{}-confidence{}", "(".repeat(depth), ")".repeat(depth));
        assert_eq!(parse(nested.clone()).unwrap().eval(json!({"confidence": 2}).as_object().unwrap()), -2.0);
        let (at, message) =
            parse(format!("{}1{}", "(".repeat(MAX_FORMULA_DEPTH + 1), ")".repeat(MAX_FORMULA_DEPTH + 1))).unwrap_err();
        assert_eq!(at, MAX_FORMULA_DEPTH, "{message}");
    }
}
