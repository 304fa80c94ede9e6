"""Benchmarks and retrieval evaluation: everything `rayweave bench ...` and `rayweave eval` run.

Above the product packages (it imports cluster, ingest, serve, graph and models; none of them
imports it). One module per bench, each with its default inputs:

- `models` (with `model_measure`, `model_quality`, `model_encoders`, `model_gpu`): encoder
  throughput and nDCG@10 per precision and runtime against plain implementations.
- `chunking` and `ingest`: chunking against encoding; the Ray Data pipeline against a bare script.
- `serve` (with `serve_load`, `serve_cpu`, `anchor`, `anchor_server`): closed-loop HTTP load,
  CPU per stage, and the one-process anchor server.
- `graph` (with `graph_projection`): graph build, write, traversal and walk figures.
- `vectors`: the vector-store adapters on clustered synthetic data.
- `table` and `inputs`: the one plain-text table printer and figure row, and the inputs loader.
- `evaluation`: BEIR loading, ranking metrics and the `rayweave eval` harness.
- `capacity`: a script printing the per-chunk storage figures of an ingested collection.
"""
