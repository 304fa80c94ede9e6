"""The base of every settings group in `rayweave.cluster.settings` and its companion modules."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SettingsGroup(BaseModel):
    """A group of settings: closed (an unknown key is an error naming it) and frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)
