"""A real OpenAI chat-completions endpoint on 127.0.0.1 that answers the LLM extractor's two steps
from a scripted table, for any test that needs a language-model extractor without a model.

Use it as a pytest fixture from any test folder:

    from tests.graph.openai_double import OpenAIDouble, Reply, openai_double_fixture  # noqa: F401

    def test_x(openai_double: OpenAIDouble) -> None:
        openai_double.on("Ray Serve", entities=["Ray Serve", "Ray"],
                         triples=[["Ray Serve", "runs on", "Ray"]])
        settings = Settings(graph={"extractor": openai_double.spec})

(`openai_double_fixture` registers the `openai_double` fixture; a conftest may import it instead,
with `__all__ = ["openai_double_fixture"]`.) Or `with OpenAIDouble() as double:` directly.

How it answers: the step is read off the system prompt (a triples prompt or not), the passage off
the last user message (`passage_of`). The first key given to `on` that occurs in the passage picks
the script; a script is one `Reply` or a sequence played in order, its last reply repeating (so
`[Reply(status=429), ok]` is "429, then success"). A passage no key matches gets `default_reply`:
its capitalised words as entities, and triples chaining them with "relates to".
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from rayweave.graph.extraction_prompts import (
    TOPIC_TRIPLES_SYSTEM,
    TRIPLES_SYSTEM,
    Step,
    entities_json,
    passage_of,
    triples_json,
)

_CAPITALISED = re.compile(r"\b[A-Z][\w.+-]*[\w+](?:\s+[A-Z][\w.+-]*[\w+])*")


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One scripted HTTP answer. `content` is the assistant message (a str as is, anything else
    JSON-encoded); `body` replaces the whole response body (e.g. no `choices`); `status` other
    than 200 sends `{"error": ...}`; `delay_s` waits before answering (past a client timeout);
    `usage` adds OpenAI's token usage (whitespace-separated words of prompt and answer)."""

    content: Any = ""
    status: int = 200
    body: str | None = None
    delay_s: float = 0.0
    usage: bool = True


Script = Reply | Sequence[Reply]


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """What the double received: the step, the matched key (None: default reply), the body."""

    step: Step
    key: str | None
    passage: str
    body: dict[str, Any]


def entities_reply(names: Sequence[str]) -> Reply:
    return Reply(content=entities_json(names))


def triples_reply(triples: Sequence[Sequence[str]]) -> Reply:
    return Reply(content=triples_json(triples))


def default_entities(passage: str) -> list[str]:
    """The capitalised words and runs of them, first-seen order, at most eight."""
    return list(dict.fromkeys(_CAPITALISED.findall(passage)))[:8]


def default_reply(step: Step, passage: str) -> Reply:
    names = default_entities(passage)
    if step == "entities":
        return entities_reply(names)
    return triples_reply([[a, "relates to", b] for a, b in itertools.pairwise(names)])


def _words(text: str) -> int:
    return len(text.split())


class OpenAIDouble:
    """The endpoint (see the module docstring). `requests` lists what arrived, in order;
    `max_in_flight` is the most requests it was answering at once; `usage_sent` sums the token
    usage it reported."""

    def __init__(self, *, model: str = "double-model") -> None:
        self.model = model
        self.requests: list[Request] = []
        self.max_in_flight = 0
        self.usage_sent = {"prompt_tokens": 0, "completion_tokens": 0}
        self._scripts: dict[str, dict[Step, list[Reply]]] = {}
        self._lock = threading.Lock()
        self._in_flight = 0
        self._closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def spec(self) -> str:
        """The `graph.extractor` setting that points at this double."""
        return f"openai:{self.base_url}#{self.model}"

    def on(
        self,
        key: str,
        *,
        entities: Script | Sequence[str] | None = None,
        triples: Script | Sequence[Sequence[str]] | None = None,
    ) -> None:
        """Script the answers for passages containing `key`: a `Reply`, a sequence of them, or
        plain data (entity names, `[s, p, o]` lists) for a well-formed answer. A step left None
        gets the default reply."""
        steps: dict[Step, list[Reply]] = {}
        if entities is not None:
            steps["entities"] = _script(entities, entities_reply)
        if triples is not None:
            steps["triples"] = _script(triples, triples_reply)
        with self._lock:
            self._scripts[key] = steps

    def count(self, *, key: str | None = None, step: Step | None = None) -> int:
        """Requests received for `key` (a passage key given to `on`) and/or `step`."""
        with self._lock:
            return sum(
                1
                for r in self.requests
                if (key is None or r.key == key) and (step is None or r.step == step)
            )

    def _reply_for(self, body: dict[str, Any]) -> tuple[Reply, Request]:
        messages = body.get("messages") or [{}]
        system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
        step: Step = "triples" if system in (TRIPLES_SYSTEM, TOPIC_TRIPLES_SYSTEM) else "entities"
        passage = passage_of(str(messages[-1].get("content", "")))
        with self._lock:
            key = next((k for k in self._scripts if k in passage), None)
            queue = self._scripts[key].get(step) if key is not None else None
            reply = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else None
            request = Request(step=step, key=key, passage=passage, body=body)
            self.requests.append(request)
        return reply or default_reply(step, passage), request

    def _answer(self, body: dict[str, Any]) -> tuple[int, bytes, float]:
        if not isinstance(body.get("messages"), list) or body.get("model") != self.model:
            return 400, json.dumps({"error": "need 'messages' and the served model"}).encode(), 0
        reply, request = self._reply_for(body)
        if reply.body is not None:
            return reply.status, reply.body.encode(), reply.delay_s
        if reply.status != 200:
            error = {"error": {"message": f"scripted {reply.status}", "code": reply.status}}
            return reply.status, json.dumps(error).encode(), reply.delay_s
        content = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        data: dict[str, Any] = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
        if reply.usage:
            prompt = sum(_words(str(m.get("content", ""))) for m in request.body["messages"])
            usage = {"prompt_tokens": prompt, "completion_tokens": _words(content)}
            data["usage"] = {**usage, "total_tokens": sum(usage.values())}
            with self._lock:
                for k, v in usage.items():
                    self.usage_sent[k] += v
        return 200, json.dumps(data).encode(), reply.delay_s

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": "not found"}')
                    return
                length = int(self.headers.get("content-length", 0))
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError:
                    self._send(400, b'{"error": "body is not JSON"}')
                    return
                with double._lock:
                    double._in_flight += 1
                    double.max_in_flight = max(double.max_in_flight, double._in_flight)
                try:
                    status, data, delay_s = double._answer(body)
                    if delay_s and double._closing.wait(delay_s):
                        return
                finally:
                    # Out of flight before the answer goes: once it is written, the client may
                    # send its next request, which must not find this one still counted.
                    with double._lock:
                        double._in_flight -= 1
                self._send(status, data)

            def _send(self, status: int, data: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    if status == 429:
                        self.send_header("retry-after", "0")
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (its timeout) and closed the socket
                    pass

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def close(self) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> OpenAIDouble:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _script(value: Any, make: Callable[[Any], Reply]) -> list[Reply]:
    if isinstance(value, Reply):
        return [value]
    if value and all(isinstance(v, Reply) for v in value):
        return list(value)
    return [make(value)]


@pytest.fixture(name="openai_double")
def openai_double_fixture() -> Iterator[OpenAIDouble]:
    """A fresh endpoint double per test, closed afterwards."""
    with OpenAIDouble() as double:
        yield double
