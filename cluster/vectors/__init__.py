"""Vector stores: the `VectorStore` protocol, one Qdrant core with a thin adapter per SDK
(qdrant-edge in process, qdrant-client local or server), the factory that picks one, the Ray actor
that owns an embedded collection, and the replica-local copies that Serve searches."""
