"""End-to-end check of `agents serve` with the official Python MCP client
over streamable HTTP.

    python3 mcp_http_client.py BASE_URL TOKEN_FILE

BASE_URL is the server's http://ADDR:PORT (from its --json start-up line),
TOKEN_FILE the bearer token's file. Checks: the health check needs no token;
a request without a token or with a wrong one is refused (401 and a JSON
error, and the client's initialize fails); with the token, the handshake,
the tool list and request_context; two sessions at once; clients that go away
mid-request (half a body, a whole request without reading the answer,
or while a tool call runs) leave the server serving the others. Exits non-zero on the first failure.
"""

import asyncio
import json
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

EXPECTED_TOOLS = {"request_context", "query_history", "get_context_budget", "index_status", "refresh_index"}
TIMEOUT = 120


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)


def http(method, url, headers=None, body=None):
    request = urllib.request.Request(url, method=method, headers=headers or {}, data=body)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def check_http(base, token):
    status, _, body = http("GET", f"{base}/health")
    health = json.loads(body)
    check(status == 200 and health["status"] == "ok" and health["version"], f"health: {status} {body}")
    check(token not in body, "the health check shows the token")
    print(f"ok: health without a token: {body}")

    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "0"}}}).encode()
    base_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    for label, extra, error in [
        ("no token", {}, "unauthorized"),
        ("a wrong token", {"Authorization": "Bearer " + "f" * len(token)}, "invalid_token"),
    ]:
        status, headers, body = http("POST", f"{base}/mcp", {**base_headers, **extra}, initialize)
        check(status == 401, f"{label}: status {status}: {body}")
        check(json.loads(body)["error"] == error, f"{label}: body {body}")
        check(token not in body and token not in json.dumps(headers), f"{label}: the answer shows the token")
        print(f"ok: {label}: 401 {body}")


async def refused_with_a_wrong_token(url, token):
    client = create_mcp_http_client(headers={"Authorization": "Bearer " + "0" * len(token)})
    try:
        async with client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await asyncio.wait_for(session.initialize(), TIMEOUT)
    except BaseException as error:  # the client raises (an exception group) on the 401
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        print(f"ok: the client with a wrong token is refused: {type(error).__name__}")
        return
    check(False, "a client with a wrong token was served")


async def use_session(url, token, query, budget):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                init = await asyncio.wait_for(session.initialize(), TIMEOUT)
                check(init.server_info.name == "agents", f"server: {init.server_info}")
                tools = {t.name for t in (await session.list_tools()).tools}
                check(EXPECTED_TOOLS <= tools, f"tools: {sorted(tools)}")
                result = await asyncio.wait_for(
                    session.call_tool("request_context", {"query": query, "max_tokens": budget}), TIMEOUT
                )
                check(not result.is_error, f"request_context: {result}")
                summary = result.structured_content
                check(summary["available_tokens"] == budget, f"budget: {summary}")
                check(0 < summary["rendered_tokens"] <= budget, f"over budget: {summary}")
                check("net/retry.py" in summary["ranked_files"], f"files: {summary['ranked_files']}")
                spent = await session.call_tool("get_context_budget", {})
                return init.protocol_version, summary["rendered_tokens"], spent.structured_content["used_tokens"]


async def leave_mid_call(url, token):
    """A client that goes away while its tool call runs: its connections
    close under the server."""
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    try:
        async with client:
            async with streamable_http_client(url, http_client=client, terminate_on_close=False) as (read, write):
                async with ClientSession(read, write) as session:
                    await asyncio.wait_for(session.initialize(), TIMEOUT)
                    call = asyncio.create_task(session.call_tool("refresh_index", {}))
                    # Let the request leave, then drop everything.
                    for _ in range(20):
                        await asyncio.sleep(0)
                    call.cancel()
    except BaseException as error:  # leaving mid-call may raise in the client; the server is what is checked
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
    print("ok: a client went away while its tool call ran")


def abandon_requests(base, token):
    """Two clients that go away mid-request: one after half a body, one
    after a whole request, without reading the answer."""
    parsed = urllib.parse.urlparse(base)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "gone", "version": "0"}}}).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {parsed.netloc}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    for label, payload in [("half a body", head + body[: len(body) // 2]), ("an unread answer", head + body)]:
        with socket.create_connection((parsed.hostname, parsed.port), timeout=TIMEOUT) as sock:
            sock.sendall(payload)
        print(f"ok: a client went away after {label}")


async def main(base, token_file):
    with open(token_file) as f:
        token = f.read().strip()
    url = f"{base}/mcp"
    check_http(base, token)
    await refused_with_a_wrong_token(url, token)

    version, tokens, used = await use_session(url, token, "pause between retry attempts", 1500)
    check(used >= tokens, f"the session spent {used} tokens, the answer had {tokens}")
    print(f"ok: a session with the token: protocol {version}, request_context {tokens} of 1500 tokens")

    first, second = await asyncio.gather(
        use_session(url, token, "retry with backoff", 900),
        use_session(url, token, "call fn until it succeeds", 700),
    )
    check(first[1] <= 900 and second[1] <= 700, f"budgets: {first} {second}")
    # Each session spends its own budget: neither saw the other's answer.
    check(first[2] == first[1] and second[2] == second[1], f"budgets shared between sessions: {first} {second}")
    print("ok: two sessions at once, each within its own budget")

    await leave_mid_call(url, token)
    abandon_requests(base, token)
    _, tokens, _ = await use_session(url, token, "retry", 600)
    print(f"ok: after clients went away mid-request the server still serves ({tokens} tokens)")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
