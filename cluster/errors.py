"""Every exception rayweave raises on purpose, in one tree.

    RayweaveError                 base; `str(exc)` names the input or component at fault
    ├── ConfigError               invalid settings, missing config file, unknown mode
    ├── InputError                bad user input (HTTP 400/413/422)
    │   ├── QueryError            empty, too long, bad top_k or filter
    │   └── SourceError           an ingest source: missing path, unreadable, binary, empty corpus
    ├── AuthError                 missing or wrong API key (HTTP 401)
    ├── RateLimitError            too many requests for one key (HTTP 429)
    ├── NotFoundError             unknown document, conversation or collection (HTTP 404)
    ├── ModelError                a model cannot be located, loaded or run
    │   └── MissingExtraError     an optional dependency is not installed (names the pip command)
    ├── StoreError                a vector or graph store failed (HTTP 503)
    │   ├── VectorStoreError
    │   └── GraphStoreError
    └── ServiceError              an embedded service (Ray head, graph server) failed to start/stop

Not errors: a document that fails during ingest is reported in the run's summary while the rest
go on, and a retriever that misses the request deadline is left out of the answer, which says
`degraded`.

HTTP status codes for these live in one place: `rayweave.serve.errors`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class RayweaveError(Exception):
    """Base of all rayweave errors."""


class ConfigError(RayweaveError):
    """Settings are invalid or a configured mode is unknown."""


class InputError(RayweaveError):
    """The caller's input is invalid; nothing was changed."""


class QueryError(InputError):
    """A search request is invalid (empty, too long, bad top_k or filter)."""


class SourceError(InputError):
    """An ingest source cannot be used.

    `path` names the offending input so reports and messages can point at it.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class AuthError(RayweaveError):
    """The request carries no valid credentials."""


class RateLimitError(RayweaveError):
    """The caller exceeded its request rate."""

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class NotFoundError(RayweaveError):
    """A named document, conversation or collection does not exist."""


class ModelError(RayweaveError):
    """A model cannot be located, loaded or run."""


class MissingExtraError(ModelError):
    """An optional dependency is missing; the message gives the install command."""

    def __init__(self, package: str, *, extra: str | None = None, purpose: str = "") -> None:
        hint = f"pip install 'rayweave[{extra}]'" if extra else f"pip install {package}"
        what = f" for {purpose}" if purpose else ""
        super().__init__(f"{package} is required{what}; install it with: {hint}")
        self.package = package


class StoreError(RayweaveError):
    """A storage backend failed."""


class VectorStoreError(StoreError):
    """The vector store failed or rejected an operation."""


class GraphStoreError(StoreError):
    """The graph store failed or rejected an operation."""


class ServiceError(RayweaveError):
    """An embedded service could not be started, reached or stopped."""


@contextmanager
def reraised_as(
    error: type[RayweaveError], what: str, *, keep: tuple[type[BaseException], ...] = ()
) -> Iterator[None]:
    """Rayweave's own errors (and `keep`) pass through; anything else, typically a library's
    untyped error, is re-raised as `error(f"{what}: {exc}")`, chained to it."""
    passing: tuple[type[BaseException], ...] = (RayweaveError, *keep)
    try:
        yield
    except passing:
        raise
    except Exception as exc:
        raise error(f"{what}: {exc}") from exc
