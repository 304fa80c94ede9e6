"""`reraised_as`: untyped library errors become rayweave errors; rayweave's own pass through."""

from __future__ import annotations

import pytest

from rayweave.cluster.errors import InputError, VectorStoreError, reraised_as


def test_other_errors_are_wrapped_and_chained() -> None:
    with (
        pytest.raises(VectorStoreError, match=r"^upsert failed: 'k'$") as info,
        reraised_as(VectorStoreError, "upsert failed"),
    ):
        raise KeyError("k")
    assert isinstance(info.value.__cause__, KeyError)


def test_rayweave_errors_and_kept_types_pass_through() -> None:
    with pytest.raises(InputError, match="bad"), reraised_as(VectorStoreError, "x failed"):
        raise InputError("bad")
    with pytest.raises(KeyError), reraised_as(VectorStoreError, "x failed", keep=(KeyError,)):
        raise KeyError("k")
