"""`authorizer`: API keys from either header, stable key ids, per-key rate limits.

No `from __future__ import annotations` here: FastAPI resolves the route's `Annotated` parameter at
runtime, and the dependency it names is local to `_client`.
"""

import hashlib
from typing import Annotated

from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr

from rayweave.cluster.settings import ServeSettings
from rayweave.serve.api_auth import authorizer
from rayweave.serve.errors import install_error_handlers
from rayweave.serve.rate_limit import RateLimiter

KEY_A, KEY_B = "key-a-3f9c1d2e7b", "key-b-8a6e0c4f1d"


def _key_id(ident: str) -> str:
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def _client(settings: ServeSettings, limiter: RateLimiter | None = None) -> TestClient:
    app = FastAPI()
    install_error_handlers(app)
    admit = authorizer(settings, limiter)

    @app.get("/who")
    async def who(key_id: Annotated[str, Depends(admit)]) -> dict[str, str]:
        return {"key_id": key_id}

    return TestClient(app)


class RecordingLimiter:
    def __init__(self) -> None:
        self.keys: list[str] = []

    async def check(self, key: str) -> None:
        self.keys.append(key)


class TestWithKeys:
    settings = ServeSettings(api_keys=(SecretStr(KEY_A), SecretStr(KEY_B)))

    def test_missing_or_wrong_key_is_401(self) -> None:
        client = _client(self.settings)
        for headers in (
            {},
            {"X-API-Key": "nope"},
            {"Authorization": "Bearer nope"},
            {"Authorization": f"Basic {KEY_A}"},  # not a bearer token
            {"X-API-Key": ""},
        ):
            resp = client.get("/who", headers=headers)
            assert resp.status_code == 401, headers
            assert resp.json()["error"] == "AuthError"
            assert "X-API-Key" in resp.json()["detail"]

    def test_either_header_admits_with_the_same_key_id(self) -> None:
        client = _client(self.settings)
        by_header = client.get("/who", headers={"X-API-Key": KEY_B})
        by_bearer = client.get("/who", headers={"Authorization": f"Bearer {KEY_B}"})
        assert by_header.status_code == by_bearer.status_code == 200
        assert by_header.json()["key_id"] == by_bearer.json()["key_id"] == _key_id(KEY_B)
        assert KEY_B not in by_header.text  # the id is not the secret

    def test_x_api_key_wins_over_bearer(self) -> None:
        client = _client(self.settings)
        resp = client.get("/who", headers={"X-API-Key": "nope", "Authorization": f"Bearer {KEY_A}"})
        assert resp.status_code == 401
        resp = client.get("/who", headers={"X-API-Key": KEY_A, "Authorization": "Bearer nope"})
        assert resp.json()["key_id"] == _key_id(KEY_A)

    def test_keys_have_separate_rate_buckets(self) -> None:
        settings = ServeSettings(
            api_keys=(SecretStr(KEY_A), SecretStr(KEY_B)), rate_limit_per_minute=2
        )
        client = _client(settings)
        a = {"X-API-Key": KEY_A}
        assert [client.get("/who", headers=a).status_code for _ in range(2)] == [200, 200]
        limited = client.get("/who", headers=a)
        assert limited.status_code == 429
        assert int(limited.headers["Retry-After"]) >= 1
        assert client.get("/who", headers={"X-API-Key": KEY_B}).status_code == 200

    def test_rejected_requests_do_not_reach_the_limiter(self) -> None:
        limiter = RecordingLimiter()
        client = _client(self.settings, limiter)
        client.get("/who", headers={"X-API-Key": "nope"})
        client.get("/who", headers={"X-API-Key": KEY_A})
        assert limiter.keys == [_key_id(KEY_A)]


class TestWithoutKeys:
    def test_open_and_keyed_by_client_host(self) -> None:
        client = _client(ServeSettings())
        resp = client.get("/who")
        assert resp.status_code == 200
        assert resp.json()["key_id"] == _key_id("testclient")

    def test_a_sent_key_still_names_the_bucket(self) -> None:
        client = _client(ServeSettings())
        assert client.get("/who", headers={"X-API-Key": "mine"}).json()["key_id"] == _key_id("mine")
        bearer = client.get("/who", headers={"Authorization": "Bearer mine"})
        assert bearer.json()["key_id"] == _key_id("mine")

    def test_no_limiter_without_a_rate(self) -> None:
        client = _client(ServeSettings(rate_limit_per_minute=0))
        assert all(client.get("/who").status_code == 200 for _ in range(20))

    def test_given_limiter_is_used_even_without_a_rate(self) -> None:
        limiter = RecordingLimiter()
        client = _client(ServeSettings(), limiter)
        client.get("/who")
        client.get("/who", headers={"X-API-Key": "k"})
        assert limiter.keys == [_key_id("testclient"), _key_id("k")]

    def test_open_routes_declare_no_security(self) -> None:
        doc = _client(ServeSettings()).get("/openapi.json").json()
        assert "security" not in doc["paths"]["/who"]["get"]
        keyed_settings = ServeSettings(api_keys=(SecretStr(KEY_A),))
        keyed = _client(keyed_settings).get("/openapi.json").json()
        assert keyed["paths"]["/who"]["get"]["security"] == [{"ApiKey": []}, {"Bearer": []}]
