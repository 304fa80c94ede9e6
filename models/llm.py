"""Chat models: any OpenAI-compatible endpoint, or a local transformers causal LM.

`models.llm` is either `openai:<base_url>#<model>` (vLLM on Ray Serve, OpenAI, Ollama's `/v1`,
anything speaking `POST <base_url>/chat/completions`) or a model reference for a local causal LM:
a folder, a hub id, or a `.gguf` file (loaded by transformers with `gguf_file=`, which
de-quantises it; the `gguf` package reads the file). Both answer `complete(messages)` with text,
and `complete_with_usage(messages)` with the text and its token counts (for throughput figures).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import torch

from rayweave.cluster.errors import ConfigError, ModelError
from rayweave.models.precision import ExecutionPlan
from rayweave.models.resolve import resolve_model

log = logging.getLogger(__name__)

OPENAI_PREFIX = "openai:"
_ROLES = ("system", "user", "assistant")
Messages = Sequence[Mapping[str, str]]
_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})

ResponseFormat = Literal["text", "json"]
"""`json` asks an endpoint for one JSON object (OpenAI's `response_format` JSON mode, which vLLM
and Ollama also honour); local models cannot be constrained and ignore it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """One answer and, when the model reports them, its token counts (None: not reported)."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@runtime_checkable
class UsageChatModel(Protocol):
    """A chat model that also reports token usage and takes a response format."""

    def complete_with_usage(
        self,
        messages: Messages,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        response_format: ResponseFormat = "text",
    ) -> Completion: ...


@runtime_checkable
class BatchChatModel(Protocol):
    """A chat model that answers many conversations in one pass (a local model on a GPU decodes a
    batch in about the time of one answer)."""

    def complete_many(
        self,
        conversations: Sequence[Messages],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
    ) -> list[Completion]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenAIEndpoint:
    base_url: str
    model: str


def parse_openai_ref(ref: str) -> OpenAIEndpoint:
    """`openai:http://host:8000/v1#model-name` -> endpoint; the model part is required."""
    if not ref.startswith(OPENAI_PREFIX):
        raise ConfigError(f"not an OpenAI-compatible reference: {ref!r}")
    url, sep, model = ref[len(OPENAI_PREFIX) :].partition("#")
    if not sep or not model.strip() or not url.startswith(("http://", "https://")):
        raise ConfigError(
            f"LLM reference {ref!r} must look like 'openai:http(s)://host[:port]/v1#<model>'"
        )
    return OpenAIEndpoint(base_url=url.rstrip("/"), model=model.strip())


def check_messages(messages: Messages) -> list[dict[str, str]]:
    """Validated copies of chat messages: each a `{"role", "content"}` with a known role."""
    if isinstance(messages, str | bytes) or not messages:
        raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts")
    checked = []
    for i, msg in enumerate(messages):
        role, content = msg.get("role"), msg.get("content")
        if role not in _ROLES or not isinstance(content, str):
            raise ValueError(
                f"message {i} needs role in {_ROLES} and string content, got {dict(msg)!r}"
            )
        checked.append({"role": role, "content": content})
    return checked


class OpenAIChatModel:
    """A chat-completions client with bounded retries (connection errors, 429 and 5xx)."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        retries: int = 2,
    ) -> None:
        import httpx

        self.url = f"{base_url.rstrip('/')}/chat/completions"
        self.model = model
        self.retries = retries
        self.timeout_s = timeout_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers)

    def complete(
        self,
        messages: Messages,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        response_format: ResponseFormat = "text",
    ) -> str:
        return self.complete_with_usage(
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            response_format=response_format,
        ).text

    def complete_with_usage(
        self,
        messages: Messages,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        response_format: ResponseFormat = "text",
    ) -> Completion:
        import httpx

        body: dict[str, Any] = {
            "model": self.model,
            "messages": check_messages(messages),
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if response_format == "json":
            body["response_format"] = {"type": "json_object"}
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._client.post(self.url, json=body)
            except httpx.HTTPError as exc:
                if last:
                    raise ModelError(self._failure(exc)) from exc
                self._pause(attempt, None)
                continue
            if response.status_code in _RETRY_STATUS and not last:
                self._pause(attempt, response.headers.get("retry-after"))
                continue
            if response.status_code >= 400:
                raise ModelError(
                    f"LLM endpoint {self.url} answered {response.status_code}: "
                    f"{response.text[:300]}"
                )
            return self._completion(response)
        raise AssertionError("unreachable")  # pragma: no cover

    def ping(self, timeout_s: float = 2.0) -> None:
        """One `GET <base_url>/models`, no retry (a health check): any answer below 500, even a
        401 or 404, means the endpoint is up; no answer or a 5xx raises ModelError."""
        import httpx

        url = f"{self.url.removesuffix('/chat/completions')}/models"
        try:
            response = self._client.get(url, timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise ModelError(f"LLM endpoint {url} unreachable: {exc}") from exc
        if response.status_code >= 500:
            raise ModelError(f"LLM endpoint {url} answered {response.status_code}")

    def _failure(self, exc: Exception) -> str:
        """A timeout says so (with the limit), so a slow endpoint is not reported as down."""
        import httpx

        tries = f"{self.retries + 1} attempt{'s' if self.retries else ''}"
        if isinstance(exc, httpx.TimeoutException):
            return f"LLM endpoint {self.url} timed out after {self.timeout_s:g}s ({tries})"
        return f"LLM endpoint {self.url} unreachable: {exc} ({tries})"

    def _completion(self, response: Any) -> Completion:
        try:
            data = response.json()
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ModelError(
                f"LLM endpoint {self.url} sent no chat completion: {response.text[:300]}"
            ) from exc
        usage = data.get("usage") if isinstance(data, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        return Completion(
            text=content if isinstance(content, str) else "",
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
        )

    @staticmethod
    def _pause(attempt: int, retry_after: str | None) -> None:
        delay = 0.5 * 2**attempt
        if retry_after:
            with contextlib.suppress(ValueError):
                delay = min(float(retry_after), 10.0)
        time.sleep(delay)

    def close(self) -> None:
        self._client.close()


def _count(value: object) -> int | None:
    """A reported token count, or None when absent or not a non-negative integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class LocalCausalLM:
    """A transformers causal LM answering with its chat template; greedy at temperature 0.

    Tokenising and generating are serialised with a lock: neither the Rust tokenizer nor one model
    object is safe to drive from several threads at once, and on CPU parallel calls would only
    split the same cores. `complete_many` decodes up to `batch_size` conversations per `generate`
    call instead: a step of a small model costs about the same for one sequence as for dozens,
    so on a GPU the batch is nearly free.
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, name: str, device: str = "cpu", batch_size: int = 1
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"local LLM batch size must be at least 1, got {batch_size}")
        if tokenizer.pad_token_id is None and tokenizer.eos_token is not None:
            # Batches are padded; a tokenizer read from a GGUF file may name no pad token.
            tokenizer.pad_token = tokenizer.eos_token
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.device = torch.device(device)
        self.batch_size = batch_size
        self.lock = threading.Lock()

    def _prompt(self, messages: list[dict[str, str]]) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return str(
                self.tokenizer.apply_chat_template(
                    messages, add_generation_prompt=True, tokenize=False
                )
            )
        return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"

    def _pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad if pad is not None else self.tokenizer.eos_token_id)

    def complete(
        self,
        messages: Messages,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        response_format: ResponseFormat = "text",
    ) -> str:
        return self.complete_with_usage(
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            response_format=response_format,
        ).text

    def complete_with_usage(
        self,
        messages: Messages,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        response_format: ResponseFormat = "text",
    ) -> Completion:
        """`response_format` is accepted for a common signature and ignored: plain generation
        cannot be held to JSON, so callers parse tolerantly."""
        return self._generate([self._prompt(check_messages(messages))], max_tokens, temperature)[0]

    def complete_many(
        self,
        conversations: Sequence[Messages],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
    ) -> list[Completion]:
        """One completion per conversation, in order, `batch_size` per `generate` call. Batches
        are cut from the conversations sorted by prompt length, so little of a batch is padding."""
        prompts = [self._prompt(check_messages(m)) for m in conversations]
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        answers: dict[int, Completion] = {}
        for start in range(0, len(order), self.batch_size):
            part = order[start : start + self.batch_size]
            completions = self._generate([prompts[i] for i in part], max_tokens, temperature)
            answers.update(zip(part, completions, strict=True))
        return [answers[i] for i in range(len(prompts))]

    def _generate(
        self, prompts: list[str], max_tokens: int, temperature: float
    ) -> list[Completion]:
        """Left-padded so every prompt ends where generation starts; each answer ends at its
        first end-of-sequence (a finished row is padded while the others go on)."""
        pad = self._pad_id()
        sampling: dict[str, Any] = (
            {"do_sample": True, "temperature": temperature}
            if temperature > 0
            else {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
        )
        stops = {pad, *_eos_ids(self.model, self.tokenizer)}
        with self.lock, torch.inference_mode():
            side = self.tokenizer.padding_side
            self.tokenizer.padding_side = "left"
            try:
                enc = self.tokenizer(
                    prompts,
                    return_tensors="pt",
                    padding=True,
                    # A chat template writes its own special tokens; a bare prompt gets the usual.
                    add_special_tokens=not getattr(self.tokenizer, "chat_template", None),
                )
            finally:
                self.tokenizer.padding_side = side
            inputs = {k: enc[k].to(self.device) for k in ("input_ids", "attention_mask")}
            output = self.model.generate(
                **inputs, max_new_tokens=max_tokens, pad_token_id=pad, **sampling
            )
            width = int(inputs["input_ids"].shape[1])
            prompt_lengths = inputs["attention_mask"].sum(dim=1).tolist()
            completions = []
            for row, prompt_tokens in zip(output[:, width:].tolist(), prompt_lengths, strict=True):
                used = next((i + 1 for i, t in enumerate(row) if t in stops), len(row))
                text = self.tokenizer.decode(row[:used], skip_special_tokens=True)
                completions.append(
                    Completion(
                        text=str(text).strip(),
                        prompt_tokens=int(prompt_tokens),
                        completion_tokens=used,
                    )
                )
        return completions


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    """Every id that ends an answer: the generation config may list several."""
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = configured if isinstance(configured, list) else [configured]
    ids.append(tokenizer.eos_token_id)
    return {int(i) for i in ids if i is not None}


def _gguf_location(path: Path) -> tuple[Path, str | None]:
    """(folder, gguf file name or None) for a file or folder reference."""
    if path.is_file():
        if path.suffix != ".gguf":
            raise ModelError(f"{path} is a file but not a .gguf model")
        return path.parent, path.name
    ggufs = sorted(path.glob("*.gguf"))
    if not (path / "config.json").is_file() and len(ggufs) == 1:
        return path, ggufs[0].name
    return path, None


def load_local_causal_lm(ref: str, plan: ExecutionPlan, *, batch_size: int = 1) -> LocalCausalLM:
    """Load a causal LM: GGUF files de-quantised by transformers (needs `gguf` and `accelerate`),
    or a regular checkpoint. fp16/bf16 on GPU; on CPU fp32 (or bf16 when asked): dynamic int8
    would change what a generative model says, so it is not applied here. `batch_size`:
    conversations per `generate` call in `complete_many`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    resolved = resolve_model(ref)
    location: str = resolved.location
    gguf: dict[str, str] = {}
    if resolved.path is not None:
        folder, gguf_file = _gguf_location(resolved.path)
        location = str(folder)
        if gguf_file:
            gguf = {"gguf_file": gguf_file}
    dtype = plan.dtype if (plan.is_cuda or plan.dtype == torch.bfloat16) else torch.float32
    try:
        tokenizer = AutoTokenizer.from_pretrained(location, **gguf)
        model = AutoModelForCausalLM.from_pretrained(location, dtype=dtype, **gguf)
    except ImportError as exc:
        raise ModelError(f"loading {ref!r} needs a missing package: {exc}") from exc
    except Exception as exc:
        raise ModelError(f"cannot load causal LM {ref!r}: {exc}") from exc
    log.info("local LLM %s (%s, %s)", ref, plan.device, dtype)
    device_model = model.to(plan.device)  # type: ignore[arg-type]  # transformers' decorated `to`
    return LocalCausalLM(
        device_model, tokenizer, name=ref, device=plan.device, batch_size=batch_size
    )
