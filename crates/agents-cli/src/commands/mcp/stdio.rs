//! The stdio transport of `agents mcp`: newline-delimited JSON-RPC, each
//! line checked before `rmcp` sees it, so that every malformed message gets
//! its JSON-RPC error instead of silence (`rmcp`'s own transport drops lines
//! that are not JSON):
//!
//! | the line | the answer |
//! |---|---|
//! | not UTF-8, not JSON (a NUL byte, garbage) | -32700 parse error, `id` null |
//! | JSON but no message: not an object, a batch, a bad `id`, `jsonrpc` not "2.0", no `method` | -32600 invalid request |
//! | a known method whose `params` do not fit (`tools/call` with `arguments` as an array) | -32602 invalid params, naming the field |
//!
//! The server goes on reading after each. Replies and `rmcp`'s responses go
//! through one writer task, a whole line at a time.

use std::borrow::Cow;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest line read; the rest of a longer one is skipped and answered
/// with -32600.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;

/// The requests a client sends a server (MCP 2025-06-18); their params are
/// checked against `rmcp`'s types.
const CLIENT_REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
    "tools/list",
];

/// The checked transport over a reader and a writer (stdin and stdout).
pub struct CheckedStdio<R> {
    read: BufReader<R>,
    /// The line read so far (kept across a cancelled read).
    line: Vec<u8>,
    /// Skipping the rest of an over-long line.
    discarding: bool,
    /// The longest line read ([`MAX_LINE`]).
    max_line: usize,
    /// Lines for the writer task; `None` once closed.
    out: Option<mpsc::UnboundedSender<Vec<u8>>>,
}

/// The transport, and the writer task that ends once every line it was
/// given is written (await it before exiting).
pub fn checked<R, W>(read: R, write: W) -> (CheckedStdio<R>, tokio::task::JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    checked_with_limit(read, write, MAX_LINE)
}

fn checked_with_limit<R, W>(read: R, mut write: W, max_line: usize) -> (CheckedStdio<R>, tokio::task::JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            if write.write_all(&line).await.is_err() {
                return;
            }
            if rx.is_empty() && write.flush().await.is_err() {
                return;
            }
        }
        let _ = write.flush().await;
    });
    let transport =
        CheckedStdio { read: BufReader::new(read), line: Vec::new(), discarding: false, max_line, out: Some(tx) };
    (transport, writer)
}

/// One read.
enum LineRead {
    Line,
    Oversized,
    Eof,
}

/// What a line is.
#[derive(Debug)]
pub enum Checked {
    /// A blank line, or a notification that cannot be answered.
    Skip,
    /// A message for `rmcp`.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// An error to answer with.
    Reply(Value),
}

impl<R: AsyncRead + Unpin + Send> CheckedStdio<R> {
    /// Reads up to and including the next newline into `self.line`, never
    /// holding more than `max_line` bytes. Cancel-safe: bytes read stay in
    /// `self.line` for the next call.
    async fn read_line(&mut self) -> std::io::Result<LineRead> {
        loop {
            let (consumed, done) = {
                let available = self.read.fill_buf().await?;
                if available.is_empty() {
                    // A last line without its newline is still a line.
                    return Ok(if self.line.is_empty() || self.discarding { LineRead::Eof } else { LineRead::Line });
                }
                let newline = available.iter().position(|b| *b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                if self.discarding {
                    if newline.is_some() {
                        self.discarding = false;
                    }
                    (take, None)
                } else if self.line.len() + take > self.max_line {
                    self.line.clear();
                    self.discarding = newline.is_none();
                    (take, Some(LineRead::Oversized))
                } else {
                    self.line.extend_from_slice(&available[..take]);
                    (take, newline.map(|_| LineRead::Line))
                }
            };
            self.read.consume(consumed);
            if let Some(done) = done {
                return Ok(done);
            }
        }
    }

    fn reply(&self, message: &Value) {
        if let Some(out) = &self.out {
            let mut line = message.to_string().into_bytes();
            line.push(b'\n');
            let _ = out.send(line);
        }
    }
}

impl<R: AsyncRead + Unpin + Send> Transport<RoleServer> for CheckedStdio<R> {
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "checked-stdio".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        async move {
            let line = line.map_err(std::io::Error::other)?;
            let out = out.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotConnected, "transport closed"))?;
            out.send(line).map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout closed"))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(LineRead::Line) => {}
                Ok(LineRead::Oversized) => {
                    tracing::warn!(max = self.max_line, "a message longer than the limit was skipped");
                    self.reply(&error(
                        Value::Null,
                        INVALID_REQUEST,
                        format!("Invalid Request: the message is longer than {} bytes", self.max_line),
                    ));
                    continue;
                }
                Ok(LineRead::Eof) => return None,
                Err(e) => {
                    tracing::error!("cannot read stdin: {e}");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            match check(&line) {
                Checked::Skip => {}
                Checked::Message(message) => return Some(*message),
                Checked::Reply(reply) => {
                    tracing::debug!(%reply, "malformed message answered");
                    self.reply(&reply);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.out = None;
        Ok(())
    }
}

/// A JSON-RPC error response.
fn error(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// What one line (with or without its newline) is, and the answer when it is
/// not a message.
pub fn check(line: &[u8]) -> Checked {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Checked::Skip;
    }
    let parse_error =
        |detail: String| Checked::Reply(error(Value::Null, PARSE_ERROR, format!("Parse error: {detail}")));
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => return parse_error(format!("the message is not valid UTF-8 (at byte {})", e.valid_up_to())),
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => return parse_error(format!("the message is not JSON ({e})")),
    };
    let invalid = |id: &Value, detail: &str| {
        Checked::Reply(error(id.clone(), INVALID_REQUEST, format!("Invalid Request: {detail}")))
    };
    let object = match &value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return invalid(&Value::Null, "batches are not supported; send one JSON-RPC message per line");
        }
        other => return invalid(&Value::Null, &format!("a message is a JSON object, not {}", kind(other))),
    };
    let id = match object.get("id") {
        None => None,
        Some(id @ Value::String(_)) => Some(id.clone()),
        Some(id @ Value::Number(n)) if n.is_i64() => Some(id.clone()),
        Some(other) => {
            return invalid(&Value::Null, &format!("`id` must be a string or an integer, not {}", kind(other)));
        }
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid(&reply_id, "`jsonrpc` must be \"2.0\"");
    }
    let method = match object.get("method") {
        Some(Value::String(method)) => Some(method.clone()),
        Some(other) => return invalid(&reply_id, &format!("`method` must be a string, not {}", kind(other))),
        None => None,
    };
    let Some(method) = method else {
        // A response to a request of the server's.
        if id.is_some() && (object.contains_key("result") || object.contains_key("error")) {
            return match serde_json::from_value(value) {
                Ok(message) => Checked::Message(Box::new(message)),
                Err(e) => invalid(&reply_id, &format!("malformed response ({e})")),
            };
        }
        return invalid(&reply_id, "a request needs a `method`");
    };
    let Some(id) = id else {
        // A notification: never answered, so one that does not parse is dropped.
        return match serde_json::from_value(value) {
            Ok(message) => Checked::Message(Box::new(message)),
            Err(e) => {
                tracing::debug!(%method, "malformed notification dropped: {e}");
                Checked::Skip
            }
        };
    };
    let method = method.as_str();
    let invalid_params =
        |detail: String| Checked::Reply(error(id.clone(), INVALID_PARAMS, format!("Invalid params: {detail}")));
    match object.get("params") {
        None | Some(Value::Object(_)) => {}
        Some(other) => return invalid_params(format!("`params` of {method} must be an object, not {}", kind(other))),
    }
    if method == "tools/call" {
        let params = object.get("params");
        match params.and_then(|p| p.get("name")) {
            Some(Value::String(_)) => {}
            None => return invalid_params("tools/call needs `params.name`, the tool to call".to_owned()),
            Some(other) => {
                return invalid_params(format!("`params.name` of tools/call must be a string, not {}", kind(other)));
            }
        }
        match params.and_then(|p| p.get("arguments")) {
            None | Some(Value::Null | Value::Object(_)) => {}
            Some(other) => {
                return invalid_params(format!(
                    "`params.arguments` of tools/call must be an object of named arguments, not {}",
                    kind(other)
                ));
            }
        }
    }
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
        Ok(rmcp::model::JsonRpcMessage::Request(request))
            if matches!(request.request, rmcp::model::ClientRequest::CustomRequest(_))
                && CLIENT_REQUESTS.contains(&method) =>
        {
            // rmcp reads a known method whose params do not fit its type as
            // an unknown one; say what is wrong instead.
            invalid_params(format!("the params of {method} do not match its schema"))
        }
        Ok(message) => Checked::Message(Box::new(message)),
        Err(e) => invalid_params(format!("{method}: {e}")),
    }
}

/// A JSON value's kind, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &[u8]) -> Value {
        match check(line) {
            Checked::Reply(reply) => reply,
            other => panic!("{}: expected an error reply, got {other:?}", String::from_utf8_lossy(line)),
        }
    }

    #[test]
    fn malformed_lines_get_their_json_rpc_error() {
        for (line, code, id, says) in [
            (&b"this is not JSON-RPC"[..], PARSE_ERROR, Value::Null, "not JSON"),
            (b"\0\0\0", PARSE_ERROR, Value::Null, "not JSON"),
            (b"{\"jsonrpc\": \"2.0\", \xff\xfe}", PARSE_ERROR, Value::Null, "UTF-8"),
            (b"[1, 2]", INVALID_REQUEST, Value::Null, "batches"),
            (b"42", INVALID_REQUEST, Value::Null, "not a number"),
            (br#"{"jsonrpc": "2.0", "id": 1}"#, INVALID_REQUEST, json!(1), "`method`"),
            (br#"{"jsonrpc": "1.0", "id": 2, "method": "ping"}"#, INVALID_REQUEST, json!(2), "jsonrpc"),
            (br#"{"id": 3, "method": "ping"}"#, INVALID_REQUEST, json!(3), "jsonrpc"),
            (br#"{"jsonrpc": "2.0", "id": [4], "method": "ping"}"#, INVALID_REQUEST, Value::Null, "`id`"),
            (br#"{"jsonrpc": "2.0", "id": 5, "method": 7}"#, INVALID_REQUEST, json!(5), "`method`"),
            (br#"{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}"#, INVALID_REQUEST, Value::Null, "`id`"),
            (br#"{"jsonrpc": "2.0", "id": 18446744073709551615, "method": "ping"}"#, INVALID_REQUEST, Value::Null, "`id`"),
            (br#"{"jsonrpc": "2.0", "id": null, "method": "ping"}"#, INVALID_REQUEST, Value::Null, "`id`"),
            (br#"{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "x", "arguments": {}, "_meta": 5}}"#, INVALID_PARAMS, json!(10), "tools/call"),
            (br#"{"jsonrpc": "2.0", "id": 11, "method": "initialize", "params": {"protocolVersion": 5}}"#, INVALID_PARAMS, json!(11), "initialize"),
            (
                br#"{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "index_status", "arguments": []}}"#,
                INVALID_PARAMS,
                json!(6),
                "params.arguments",
            ),
            (br#"{"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": {}}"#, INVALID_PARAMS, json!("s"), "params.name"),
            (br#"{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": [1]}"#, INVALID_PARAMS, json!(8), "`params`"),
        ] {
            let reply = reply(line);
            assert_eq!(reply["error"]["code"], code, "{reply}");
            assert_eq!(reply["id"], id, "{reply}");
            assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
            assert!(reply["error"]["message"].as_str().unwrap().contains(says), "{says}: {reply}");
        }
    }

    #[test]
    fn an_over_long_line_and_a_last_line_without_newline_are_answered() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let input = format!(
                "{}\n{}\n{{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"ping\"}}\nno newline",
                "x".repeat(30),
                "y".repeat(300)
            );
            let (write, mut output) = tokio::io::duplex(4096);
            let (mut transport, writer) = checked_with_limit(input.as_bytes(), write, 64);
            let message = transport.receive().await.expect("the ping after the long lines");
            assert!(matches!(message, rmcp::model::JsonRpcMessage::Request(_)), "{message:?}");
            assert!(transport.receive().await.is_none(), "then the end of input");
            transport.close().await.unwrap();
            drop(transport);
            writer.await.unwrap();
            let mut written = String::new();
            tokio::io::AsyncReadExt::read_to_string(&mut output, &mut written).await.unwrap();
            let codes: Vec<i64> = written
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()["error"]["code"].as_i64().unwrap())
                .collect();
            // "xxx" is garbage, the 300 bytes are over the limit, the last line is garbage too.
            assert_eq!(codes, [PARSE_ERROR, INVALID_REQUEST, PARSE_ERROR], "{written}");
        });
    }

    #[test]
    fn well_formed_lines_pass_through() {
        assert!(matches!(check(b"  \r\n"), Checked::Skip));
        assert!(matches!(check(br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}"#), Checked::Message(_)));
        assert!(matches!(
            check(b"\xEF\xBB\xBF{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}\r\n"),
            Checked::Message(_)
        ));
        assert!(matches!(
            check(br#"{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "x", "arguments": {}}}"#),
            Checked::Message(_)
        ));
        assert!(matches!(check(br#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#), Checked::Message(_)));
        // An unknown method is rmcp's to answer (-32601).
        assert!(matches!(check(br#"{"jsonrpc": "2.0", "id": 1, "method": "context/please"}"#), Checked::Message(_)));
    }
}
