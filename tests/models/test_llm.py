"""Chat models: the OpenAI-compatible client against a real local HTTP server, a tiny random causal
LM, and (slow) the packaged SmolLM2 GGUF loaded through transformers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rayweave.cluster.errors import ConfigError, ModelError
from rayweave.models.llm import (
    BatchChatModel,
    LocalCausalLM,
    OpenAIChatModel,
    check_messages,
    load_local_causal_lm,
    parse_openai_ref,
)
from rayweave.models.precision import plan_execution
from rayweave.models.protocols import ChatModel

from .conftest import SMOLLM

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi."}]


class ChatServer:
    """An OpenAI-style endpoint on 127.0.0.1 that plays back scripted (status, body) replies."""

    def __init__(self) -> None:
        self.script: list[tuple[int, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                server.requests.append(json.loads(self.rfile.read(length)))
                server.headers.append(dict(self.headers))
                status, body = server.script.pop(0) if server.script else (200, _reply("ok"))
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                if status == 429:
                    self.send_header("retry-after", "0")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _reply(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


@pytest.fixture
def server() -> Iterator[ChatServer]:
    srv = ChatServer()
    yield srv
    srv.close()


class TestOpenAIChatModel:
    def test_round_trip(self, server: ChatServer) -> None:
        server.script = [(200, _reply("hello there"))]
        chat = OpenAIChatModel(base_url=server.base_url, model="m1", api_key="sk-test", timeout_s=5)
        assert isinstance(chat, ChatModel)
        assert chat.complete(MESSAGES, max_tokens=12) == "hello there"
        sent = server.requests[0]
        assert sent == {"model": "m1", "messages": MESSAGES, "max_tokens": 12, "temperature": 0.0}
        assert server.headers[0]["Authorization"] == "Bearer sk-test"
        chat.close()

    def test_retries_overload_then_succeeds(self, server: ChatServer) -> None:
        server.script = [
            (503, {"error": "busy"}),
            (429, {"error": "slow down"}),
            (200, _reply("done")),
        ]
        chat = OpenAIChatModel(base_url=server.base_url, model="m", retries=2, timeout_s=5)
        assert chat.complete(MESSAGES) == "done"
        assert len(server.requests) == 3

    def test_client_errors_are_not_retried_and_name_the_endpoint(self, server: ChatServer) -> None:
        server.script = [(400, {"error": "bad model"})]
        chat = OpenAIChatModel(base_url=server.base_url, model="m", timeout_s=5)
        with pytest.raises(ModelError, match=r"chat/completions answered 400: .*bad model"):
            chat.complete(MESSAGES)
        assert len(server.requests) == 1

    def test_malformed_reply(self, server: ChatServer) -> None:
        server.script = [(200, {"nothing": True})]
        with pytest.raises(ModelError, match="no chat completion"):
            OpenAIChatModel(base_url=server.base_url, model="m", timeout_s=5).complete(MESSAGES)

    def test_unreachable(self) -> None:
        chat = OpenAIChatModel(base_url="http://127.0.0.1:9/v1", model="m", retries=0, timeout_s=2)
        with pytest.raises(ModelError, match="unreachable"):
            chat.complete(MESSAGES)

    def test_refs_and_messages(self) -> None:
        ep = parse_openai_ref("openai:http://127.0.0.1:8000/v1/#Qwen/Qwen2.5-7B")
        assert (ep.base_url, ep.model) == ("http://127.0.0.1:8000/v1", "Qwen/Qwen2.5-7B")
        for bad in ("openai:http://x/v1", "openai:ftp://x#m", "openai:http://x#  "):
            with pytest.raises(ConfigError):
                parse_openai_ref(bad)
        with pytest.raises(ValueError, match="message 0"):
            check_messages([{"role": "robot", "content": "x"}])
        with pytest.raises(ValueError, match="non-empty"):
            check_messages([])


class TestLocalCausalLM:
    def test_tiny_model_generates_bounded_text(self, tiny_causal_lm_dir: Path) -> None:
        chat = load_local_causal_lm(
            str(tiny_causal_lm_dir), plan_execution(device="cpu", precision="int8")
        )
        assert isinstance(chat, ChatModel)
        out = chat.complete(MESSAGES, max_tokens=5)
        assert isinstance(out, str)
        n = len(chat.tokenizer(out, add_special_tokens=False)["input_ids"])
        assert n <= 5 * 2  # decoding may split merged word pieces, never more than double
        # Greedy decoding is deterministic.
        assert chat.complete(MESSAGES, max_tokens=5) == out
        assert isinstance(chat.complete(MESSAGES, max_tokens=3, temperature=0.7), str)

    def test_batches_answer_as_one_at_a_time(self, tiny_causal_lm_dir: Path) -> None:
        """Left padding and the attention mask keep a batched answer the same as a lone one;
        batches are cut by length and put back in order; each answer stops at its own end."""
        plan = plan_execution(device="cpu", precision="fp32")
        chat = load_local_causal_lm(str(tiny_causal_lm_dir), plan, batch_size=2)
        assert isinstance(chat, BatchChatModel)
        conversations = [
            [{"role": "user", "content": text}]
            for text in (
                "a much longer question about ray serve deployments and their replicas",
                "short",
                "a question of middling length",
            )
        ]
        lone = [chat.complete_with_usage(m, max_tokens=6) for m in conversations]
        assert chat.complete_many(conversations, max_tokens=6) == lone
        assert len({c.prompt_tokens for c in lone}) == 3
        assert all(c.completion_tokens is not None and 1 <= c.completion_tokens <= 6 for c in lone)
        with pytest.raises(ConfigError, match="batch size"):
            load_local_causal_lm(str(tiny_causal_lm_dir), plan, batch_size=0)

    def test_a_tokenizer_without_pad_token_pads_with_its_end(
        self, tiny_causal_lm_dir: Path
    ) -> None:
        """GGUF tokenizers may name no pad token (transformers 5.17 reads SmolLM2's so): a batch
        then pads with the end-of-sequence token instead of failing every text."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(tiny_causal_lm_dir)
        tokenizer.eos_token = tokenizer.sep_token
        tokenizer.pad_token = None
        assert tokenizer.pad_token_id is None
        model = AutoModelForCausalLM.from_pretrained(tiny_causal_lm_dir)
        chat = LocalCausalLM(model, tokenizer, name="tiny", batch_size=2)
        assert tokenizer.pad_token_id == tokenizer.sep_token_id
        answers = chat.complete_many([MESSAGES, [{"role": "user", "content": "hi"}]], max_tokens=3)
        assert len(answers) == 2
        assert all(a.completion_tokens is not None for a in answers)

    def test_missing_model(self, tmp_path: Path) -> None:
        with pytest.raises(ModelError):
            load_local_causal_lm(str(tmp_path), plan_execution(device="cpu", precision="fp32"))


@pytest.mark.slow
def test_smollm2_gguf_answers() -> None:
    chat = load_local_causal_lm(SMOLLM, plan_execution(device="cpu", precision="int8"))
    assert isinstance(chat, LocalCausalLM)
    reply = chat.complete(
        [{"role": "user", "content": "What is the capital of France? Answer in one word."}],
        max_tokens=16,
    )
    assert "paris" in reply.lower()
