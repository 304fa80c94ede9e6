"""Every model rayweave runs, behind the protocols in `models.protocols`.

`factory` builds them from `ModelSettings` (once per Ray actor or Serve replica); `dense`,
`bge_m3` and `sparse` are the text encoders, sharing `engine` (length-bucketed batching),
`features` (what a core's forward takes) and `runtime` (torch or ONNX Runtime, per
`precision`); `clip`, `entities` and `llm` cover images, entities and chat; `quantize` models
Qdrant's stored-vector quantization (`rayweave.bench` measures them all).
"""
