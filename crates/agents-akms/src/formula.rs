//! Rank formulas (`query_roles.<role>.rank_formula`): a small arithmetic
//! language over a node's numeric attributes, parsed once and evaluated per
//! node. Never code: numbers, attribute names, `+ - * /` (`×` is `*`),
//! parentheses and unary minus. A missing or non-numeric attribute is 0, a
//! boolean 1 or 0; division by zero gives 0, so every rank is a finite number.

use std::collections::BTreeSet;

use serde_json::Value;

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
#[error("rank formula `{formula}`: {message} at character {at}")]
pub struct FormulaError {
    pub formula: String,
    pub message: String,
    pub at: usize,
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

    fn factor(&mut self) -> Result<Formula, FormulaError> {
        let token = self.peek().cloned().ok_or_else(|| self.error("the formula ends early"))?;
        self.next += 1;
        match token {
            Token::Number(n) => Ok(Formula::Number(n)),
            Token::Name(name) => Ok(Formula::Attribute(name)),
            Token::Op('-') => Ok(Formula::Negate(Box::new(self.factor()?))),
            Token::Open => {
                let inner = self.sum()?;
                if self.peek() != Some(&Token::Close) {
                    return Err(self.error("expected `)`"));
                }
                self.next += 1;
                Ok(inner)
            }
            _ => {
                self.next -= 1;
                Err(self.error("expected a number, an attribute or `(`"))
            }
        }
    }
}

impl Formula {
    pub fn parse(text: &str) -> Result<Formula, FormulaError> {
        let mut parser = Parser { text, tokens: tokens(text)?, next: 0 };
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
}
