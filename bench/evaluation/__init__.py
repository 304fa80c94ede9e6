"""Offline retrieval evaluation: the BEIR loader (`beir`), ranking metrics (`metrics`) and the
`rayweave eval` harness over the real pipeline (`harness`)."""
