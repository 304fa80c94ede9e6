"""The language model of `rayweave bench extract`: a deterministic OpenAI-compatible endpoint.

A stdlib `http.server` on 127.0.0.1, in a thread of the bench's process, that answers the graph
extractor's two steps (`graph.extraction_prompts`) after a fixed delay: named entities are the
passage's capitalised words and runs of them, triples chain consecutive entities. Usage tokens
are reported at about four characters a token, so the bench's token rates have something to
count. What it costs the ingest is then known exactly (requests x delay), which is what the
bench compares the ingest's extra time with.

It counts what it answered: requests per step, tokens, and its busy time (the wall time during
which at least one request was being answered), as `ServerTally` snapshots that subtract, so
each part of a bench run gets its own figures.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import threading
import time
from dataclasses import dataclass, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rayweave.graph.extraction_prompts import (
    TRIPLES_SYSTEM,
    Step,
    entities_json,
    passage_of,
    triples_json,
)

__all__ = [
    "DEFAULT_ANSWER_MS",
    "ExtractionServer",
    "ServerTally",
    "answer_for",
    "passage_entities",
    "token_count",
]

DEFAULT_ANSWER_MS = 50.0
MAX_ENTITIES = 8
PREDICATE = "relates to"
_CAPITALISED = re.compile(r"\b[A-Z][\w.+-]*[\w+](?:[ \t]+[A-Z][\w.+-]*[\w+])*")


def passage_entities(passage: str) -> list[str]:
    """The capitalised words and runs of them on one line, first-seen order, at most
    `MAX_ENTITIES`."""
    return list(dict.fromkeys(_CAPITALISED.findall(passage)))[:MAX_ENTITIES]


def token_count(text: str) -> int:
    """About four characters a token (OpenAI's rule of thumb); at least one for any text."""
    return math.ceil(len(text) / 4) if text else 0


def _step_of(messages: list[Any]) -> Step:
    system = next(
        (
            m.get("content", "")
            for m in messages
            if isinstance(m, dict) and m.get("role") == "system"
        ),
        "",
    )
    return "triples" if system == TRIPLES_SYSTEM else "entities"


def answer_for(messages: list[Any]) -> tuple[Step, str, int]:
    """(step, assistant content, prompt tokens) of one chat request: deterministic in the
    passage of its last user message."""
    step = _step_of(messages)
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    names = passage_entities(passage_of(str(last.get("content", ""))))
    if step == "entities":
        content = entities_json(names)
    else:
        content = triples_json([[a, PREDICATE, b] for a, b in itertools.pairwise(names)])
    prompt = sum(token_count(str(m.get("content", ""))) for m in messages if isinstance(m, dict))
    return step, content, prompt


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerTally:
    """What the server answered up to a moment; `later - earlier` is what it answered between.
    `max_in_flight` is the most at once over the server's whole life (it does not subtract)."""

    requests: int = 0
    entity_requests: int = 0
    triple_requests: int = 0
    bad_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    busy_s: float = 0.0
    """Wall time with at least one request being answered (delay and all)."""
    max_in_flight: int = 0

    def __sub__(self, other: ServerTally) -> ServerTally:
        values = {f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)}
        values["max_in_flight"] = self.max_in_flight
        return ServerTally(**values)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class ExtractionServer:
    """The endpoint (see the module docstring); a context manager that closes it."""

    def __init__(
        self, *, answer_ms: float = DEFAULT_ANSWER_MS, model: str = "rayweave-bench"
    ) -> None:
        if answer_ms < 0:
            raise ValueError(f"answer_ms must be >= 0, got {answer_ms}")
        self.answer_ms = answer_ms
        self.model = model
        self._lock = threading.Lock()
        self._counts: dict[str, int] = dict.fromkeys(
            ("requests", "entity_requests", "triple_requests", "bad_requests"), 0
        )
        self._tokens = {"prompt_tokens": 0, "completion_tokens": 0}
        self._busy_s = 0.0
        self._busy_since: float | None = None
        self._in_flight = 0
        self._max_in_flight = 0
        self._closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="bench-llm", daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def spec(self) -> str:
        """The `graph.extractor` setting that points at this server."""
        return self.spec_for(self.model)

    def spec_for(self, model: str) -> str:
        """The setting for this server under another model name: it answers any model the same
        way, but the extraction cache keys on the name, so a new name asks anew."""
        return f"openai:{self.base_url}#{model}"

    def tally(self) -> ServerTally:
        """What it answered so far (an answer in progress counts its busy time up to now)."""
        with self._lock:
            busy = self._busy_s
            if self._busy_since is not None:
                busy += time.perf_counter() - self._busy_since
            return ServerTally(
                **self._counts, **self._tokens, busy_s=busy, max_in_flight=self._max_in_flight
            )

    def _enter(self) -> None:
        with self._lock:
            if self._in_flight == 0:
                self._busy_since = time.perf_counter()
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1
            if self._in_flight == 0 and self._busy_since is not None:
                self._busy_s += time.perf_counter() - self._busy_since
                self._busy_since = None

    def _answer(self, body: object) -> tuple[int, bytes]:
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not messages:
            with self._lock:
                self._counts["bad_requests"] += 1
            return 400, json.dumps({"error": {"message": "need a 'messages' list"}}).encode()
        step, content, prompt = answer_for(messages)
        completion = token_count(content)
        with self._lock:
            self._counts["requests"] += 1
            self._counts["entity_requests" if step == "entities" else "triple_requests"] += 1
            self._tokens["prompt_tokens"] += prompt
            self._tokens["completion_tokens"] += completion
            n = self._counts["requests"]
        data = {
            "id": f"chatcmpl-bench-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        return 200, json.dumps(data).encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a serving engine does
            # Headers and body go out in two writes: with Nagle on, the body waits for the
            # client's delayed ACK of the headers, 40 ms a request on Linux.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                server._enter()
                try:
                    try:
                        body = json.loads(raw)
                    except ValueError:
                        body = None
                    status, data = server._answer(body)
                    delay = server.answer_ms / 1000 if status == 200 else 0.0
                    if delay and server._closing.wait(delay):
                        return
                    self._send(status, data)
                finally:
                    server._leave()

            def _send(self, status: int, data: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up and closed the socket
                    self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def close(self) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ExtractionServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
