"""open_clip with a small random model built from a config file (no CLIP weights exist offline)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from rayweave.cluster.errors import ConfigError, ModelError
from rayweave.models.clip import OpenClipEncoder, load_open_clip, parse_clip_ref
from rayweave.models.precision import plan_execution
from rayweave.models.protocols import ImageEncoder


def images() -> list[Image.Image]:
    rng = np.random.default_rng(0)
    return [
        Image.fromarray(rng.integers(0, 255, (40 + 8 * i, 48, 3), dtype=np.uint8)) for i in range(5)
    ]


@pytest.fixture(scope="module")
def clip(tiny_clip_config: Path) -> OpenClipEncoder:
    return load_open_clip(
        str(tiny_clip_config), plan_execution(device="cpu", precision="fp32"), batch_size=2
    )


class TestOpenClip:
    def test_one_space_normalised(self, clip: OpenClipEncoder) -> None:
        assert isinstance(clip, ImageEncoder)
        img = clip.encode_images(images())
        txt = clip.encode_texts(["a photo of a cat", "a diagram of a cluster", "ray"])
        assert img.shape == (5, 16)
        assert txt.shape == (3, 16)
        assert clip.dim == 16
        assert np.allclose(np.linalg.norm(img, axis=1), 1, atol=1e-5)
        assert np.allclose(np.linalg.norm(txt, axis=1), 1, atol=1e-5)
        sims = txt @ img.T  # comparable: same space, cosine in [-1, 1]
        assert sims.shape == (3, 5)
        assert np.all(np.abs(sims) <= 1 + 1e-5)

    def test_batching_does_not_change_results(
        self, clip: OpenClipEncoder, tiny_clip_config: Path
    ) -> None:
        one_by_one = np.concatenate([clip.encode_images([im]) for im in images()])
        np.testing.assert_allclose(clip.encode_images(images()), one_by_one, atol=1e-5)
        texts = ["a", "b c", "d e f"]
        np.testing.assert_allclose(
            clip.encode_texts(texts),
            np.concatenate([clip.encode_texts([t]) for t in texts]),
            atol=1e-5,
        )

    def test_image_inputs(self, clip: OpenClipEncoder, tmp_path: Path) -> None:
        img = images()[0]
        path = tmp_path / "x.png"
        img.save(path)
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        ref = clip.encode_images([img])
        for other in (str(path), path, buf.getvalue(), np.asarray(img), img.convert("L")):
            got = clip.encode_images([other])
            assert got.shape == (1, 16)
        np.testing.assert_allclose(clip.encode_images([path]), ref, atol=1e-5)
        with pytest.raises(TypeError, match="cannot read an image"):
            clip.encode_images([42])
        assert clip.encode_images([]).shape == (0, 16)

    def test_int8_on_cpu(self, tiny_clip_config: Path) -> None:
        enc = load_open_clip(
            str(tiny_clip_config),
            plan_execution(device="cpu", precision="int8", cpu_backend="torch"),
        )
        vecs = enc.encode_images(images()[:2])
        assert vecs.shape == (2, 16)
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)

    def test_reduced_precision_feeds_its_dtype(self, tiny_clip_config: Path) -> None:
        # open_clip keeps logit_scale in fp32 under bf16/fp16: the pixels must still arrive in
        # the convolution's dtype (the same path runs fp16 on CUDA).
        enc = load_open_clip(str(tiny_clip_config), plan_execution(device="cpu", precision="bf16"))
        vecs = enc.encode_images(images()[:2])
        assert vecs.dtype == np.float32
        assert vecs.shape == (2, 16)
        assert np.isfinite(vecs).all()
        assert np.isfinite(enc.encode_texts(["a diagram"])).all()


class TestClipRefs:
    def test_parse(self, tmp_path: Path) -> None:
        spec = parse_clip_ref("ViT-B-32:laion2b_s34b_b79k")
        assert (spec.model_name, spec.pretrained) == ("ViT-B-32", "laion2b_s34b_b79k")
        assert parse_clip_ref("hf-hub:laion/CLIP-ViT-B-32").pretrained is None
        ckpt = tmp_path / "w.bin"
        ckpt.write_bytes(b"x")
        assert parse_clip_ref(f"ViT-B-32:{ckpt}").pretrained == str(ckpt)
        with pytest.raises(ConfigError, match="does not exist"):
            parse_clip_ref("ViT-B-32:/missing/w.bin")
        with pytest.raises(ConfigError, match="does not exist"):
            parse_clip_ref("/missing/config.json")
        with pytest.raises(ConfigError, match="empty"):
            parse_clip_ref(" ")

    def test_unknown_model_or_offline_weights(self) -> None:
        with pytest.raises(ModelError, match="cannot load open_clip model"):
            load_open_clip("No-Such-Model", plan_execution(device="cpu", precision="fp32"))
        with pytest.raises(ModelError):
            load_open_clip(
                "ViT-B-32:laion2b_s34b_b79k", plan_execution(device="cpu", precision="fp32")
            )


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_cuda_fp16(tiny_clip_config: Path) -> None:
    enc = load_open_clip(str(tiny_clip_config), plan_execution(device="cuda", precision="fp16"))
    vecs = enc.encode_images(images()[:2])
    assert vecs.dtype == np.float32
    assert np.isfinite(vecs).all()
