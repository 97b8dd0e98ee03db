"""Claude Code itself, for the plugin tests: its CLI installed from npm's cache (never the network at
run time) and a stand-in for the Anthropic API on loopback, so that `claude -p` runs a whole
session, hooks included, without an account.

The version is the Makefile's CLAUDE_CODE, whose `claude-code` target fills npm's cache.
"""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import threading
from pathlib import Path

MAKEFILE = Path(__file__).parents[2] / "Makefile"


def package() -> str:
    """The npm package pinned in the Makefile (CLAUDE_CODE ?= @anthropic-ai/claude-code@X.Y.Z)."""
    found = re.search(r"^CLAUDE_CODE \?= (\S+)$", MAKEFILE.read_text(), re.MULTILINE)
    assert found, "the Makefile pins no CLAUDE_CODE"
    return found.group(1)


def install(folder: Path) -> tuple[Path | None, str]:
    """(the `claude` executable, "") installed offline into `folder`, else (None, why not)."""
    npm = shutil.which("npm")
    if npm is None:
        return None, "npm is not installed"
    done = subprocess.run(
        [npm, "install", "--offline", "--no-save", "--no-audit", "--no-fund", "--prefix", str(folder), package()],
        capture_output=True,
        text=True,
        timeout=300,
    )
    claude = folder / "node_modules" / ".bin" / "claude"
    if done.returncode != 0 or not claude.exists():
        why = (done.stderr.strip().splitlines() or ["no claude executable"])[-1]
        return None, f"{package()} is not in npm's cache (make claude-code fills it): {why}"
    return claude, ""


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


class FakeAnthropic:
    """An HTTP server on 127.0.0.1 that answers every Messages API request with one text
    message, `answer`, streamed as the API streams it; `requests` holds the request bodies."""

    def __init__(self, answer: str):
        self.answer = answer
        self.requests: list[dict] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                fake.requests.append(body)
                out = fake.response(body)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream" if body.get("stream") else "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def response(self, body: dict) -> bytes:
        model = body.get("model", "claude")
        usage = {"input_tokens": 10, "output_tokens": 5}
        if not body.get("stream"):
            message = {"id": "msg_1", "type": "message", "role": "assistant", "model": model}
            message |= {"content": [{"type": "text", "text": self.answer}], "stop_reason": "end_turn"}
            return json.dumps(message | {"stop_sequence": None, "usage": usage}).encode()
        start = {"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": []}
        start |= {"stop_reason": None, "stop_sequence": None, "usage": usage}
        return b"".join(
            [
                _event("message_start", {"type": "message_start", "message": start}),
                _event(
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                ),
                _event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": self.answer}},
                ),
                _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
                _event(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                        "usage": {"output_tokens": 5},
                    },
                ),
                _event("message_stop", {"type": "message_stop"}),
            ]
        )

    def __enter__(self) -> FakeAnthropic:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
