"""Tracing: Serve's request spans (`serve.tracing`), and one span per search stage under them.

Serve traces when its `tracing_config` is enabled (`serve/app.py` sets it from settings): each
proxy and replica then installs an OpenTelemetry tracer provider whose exporter is Serve's file
exporter ('file': JSON spans under the session's `logs/serve/spans/`) or `otlp_span_processors`
('otlp': OTLP/HTTP to `serve.tracing_endpoint`), sampled at `serve.tracing_sampling_ratio`.
`stage` opens the pipeline's spans (classify, each retriever, fuse, the page read, refine) under
the request's span, so one slow request can be explained stage by stage. Under a request span
that is not recording (no provider, or a request the sampler left out) `stage` opens nothing:
its spans could not record either, and each would cost about 6 us, ten per request.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace

TRACER = "rayweave.serve"
OTLP_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
"""OpenTelemetry's own variable: the OTLP exporter reads it in every proxy and replica (the
embedded head passes it to its workers, `cluster/services/runtime.py`; a KubeRay pod sets it)."""


@contextmanager
def stage(name: str, **attributes: str | int | float) -> Iterator[None]:
    """A span named `name` around one pipeline stage, child of the current (request) span."""
    if not trace.get_current_span().is_recording():
        yield  # nothing would record it (see the module docstring)
        return
    tracer = trace.get_tracer(TRACER)
    with tracer.start_as_current_span(name, attributes=attributes or None):
        yield


def otlp_span_processors(tracing_file_name: str) -> list[Any]:
    """Serve's exporter hook (`tracing_config.exporter_import_path`) for OTLP/HTTP: batched, so
    a request never waits on the collector. The endpoint comes from OTLP_ENDPOINT_ENV."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    del tracing_file_name  # the file exporter's; OTLP has no file
    return [BatchSpanProcessor(OTLPSpanExporter())]
