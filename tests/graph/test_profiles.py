"""Query types and their traversal profiles."""

from __future__ import annotations

import pytest

from rayweave.cluster.errors import ConfigError
from rayweave.cluster.types import QueryType
from rayweave.graph.profiles import PROFILES, parse_query_type


class TestProfiles:
    def test_parse_query_type(self) -> None:
        assert parse_query_type(None) is QueryType.GENERAL
        assert parse_query_type("How-To") is QueryType.HOW_TO
        with pytest.raises(ConfigError, match="how-to"):
            parse_query_type("poetry")

    def test_every_query_type_has_a_profile(self) -> None:
        assert set(PROFILES) == set(QueryType)
