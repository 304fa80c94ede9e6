"""Entity name normalisation, n-grams and query forms: ingest and query time must agree."""

from __future__ import annotations

import pytest

from rayweave.graph.names import name_ngrams, normalize_name, query_forms, singular, variants


class TestNames:
    @pytest.mark.parametrize(
        ("a", "b"),
        [
            ("Ray Serve", "ray-serve"),
            ("RAY SERVE", "ray serve"),
            ("Arthur's Magazine", "Arthurs Magazine"),
            ("The Beatles", "Beatles"),
            ("ray.serve.run()", "Ray.Serve.Run"),
            ("Café Society", "Cafe Society"),
        ],
    )
    def test_equivalent_forms_normalise_alike(self, a: str, b: str) -> None:
        assert normalize_name(a) == normalize_name(b) != ""

    def test_plurals_are_variants_not_folded(self) -> None:
        assert normalize_name("The Beatles") == "beatles"
        assert variants("deployments") == ("deployments", "deployment")
        assert singular("libraries") == "library"
        assert singular("ray.serve.handles") == "ray.serve.handles"  # code names stay as they are

    def test_ngrams_skip_stopword_edges_and_report_lengths(self) -> None:
        grams = {
            (i, n, g)
            for i, n, g in name_ngrams("Started first, Arthur's Magazine or First for Women?", 3)
        }
        assert (2, 2, "arthurs magazine") in grams
        assert (5, 3, "first for women") in grams
        assert not any(g.startswith("or ") or g.endswith(" or") for _, _, g in grams)

    def test_query_forms_cover_ngrams_singulars_and_names(self) -> None:
        forms = {
            f.form: f
            for f in query_forms("How many replicas does Ray Serve start?", 4, ["The Autoscaler"])
        }
        assert forms["ray serve"].length == 2
        assert forms["replica"].exact is False
        assert forms["autoscaler"].start == -1
