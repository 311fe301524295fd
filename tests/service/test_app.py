import json

import pytest
from fastapi.testclient import TestClient

from kernelgym.service.app import create_app
from kernelgym.service.service import Service
from kernelgym.service.store import Store
from tests.service.conftest import FakeBackend, answer_tag, request

TOKEN = "s3cret"


@pytest.fixture
def backend():
    return FakeBackend(capacity=2, delay=0.01)


@pytest.fixture
def client(make_service, backend):
    app = create_app(make_service(backend), token=TOKEN, manage_service=False)
    with TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        yield c


def _submit(client, *answers, **kw):
    r = client.post("/v1/batches", json={"requests": [request(a, **kw) for a in answers]})
    assert r.status_code == 202, r.text
    return r.json()


def test_submit_then_get_wait_and_batch_status(client):
    batch = _submit(client, "k0", "WRONG k1")
    first = client.get(f"/v1/results/{batch['ids'][0]}", params={"wait": 10}).json()
    assert first["state"] == "done" and first["result"]["message"] == answer_tag("k0")
    waited = client.post("/v1/results:wait", json={"ids": batch["ids"], "timeout": 10}).json()
    assert waited["done"] and [r["result"]["status"] for r in waited["results"]] == ["ok", "wrong_output"]
    status = client.get(f"/v1/batches/{batch['batch_id']}").json()
    assert status == {"batch_id": batch["batch_id"], "ids": batch["ids"], "states": {"done": 2}, "done": True}
    assert _submit(client, "k0")["cache_hits"] == 1


def test_stream_ndjson_and_sse(client):
    batch = _submit(client, *[f"k{i}" for i in range(5)])
    with client.stream("GET", f"/v1/batches/{batch['batch_id']}/stream") as r:
        assert r.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in r.iter_lines() if line]
    assert sorted(x["id"] for x in lines) == sorted(batch["ids"]) and {x["state"] for x in lines} == {"done"}
    with client.stream("GET", f"/v1/batches/{batch['batch_id']}/stream",
                       headers={"Accept": "text/event-stream"}) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    assert text.count("event: result\n") == 5 and text.endswith("event: end\ndata: {}\n\n")


def test_cancel(make_service):
    app = create_app(make_service(FakeBackend(capacity=1, delay=0.5)), manage_service=False)
    with TestClient(app) as client:
        ids = _submit(client, "k0", "k1")["ids"]
        r = client.delete(f"/v1/results/{ids[1]}")
        assert r.json() == {"id": ids[1], "cancelled": True, "state": "cancelled"}
        assert client.delete(f"/v1/results/{ids[1]}").json()["cancelled"] is False
        assert client.get(f"/v1/results/{ids[1]}").json()["result"] is None
        assert client.delete("/v1/results/nope").status_code == 404


def test_evaluate_returns_the_eval_result(client):
    r = client.post("/v1/evaluate", json={"task_id": "relu", "answer": "kernel", "config": {"num_trials": 1}})
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["message"] == answer_tag("kernel")


def test_evaluate_times_out_with_504_naming_the_request(make_service):
    app = create_app(make_service(FakeBackend(capacity=1, delay=2.0)), manage_service=False)
    with TestClient(app) as client:
        r = client.post("/v1/evaluate", json={"task_id": "relu", "answer": "slow", "timeout": 0.1})
        assert r.status_code == 504 and "poll GET /v1/results/" in r.json()["detail"]


def test_health_metrics_and_openapi(client):
    _submit(client, "k0")
    health = TestClient(client.app).get("/health")  # no token: probes must get through
    assert health.status_code == 200 and health.json()["status"] == "ok"
    metrics = client.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain") and "kernelgym_queue_depth" in metrics.text
    schema = client.get("/openapi.json").json()
    assert {"/v1/batches", "/v1/results/{request_id}", "/v1/results:wait", "/v1/batches/{batch_id}/stream",
            "/v1/evaluate", "/health", "/metrics"} <= set(schema["paths"])
    assert {"409", "504"} <= set(schema["paths"]["/v1/evaluate"]["post"]["responses"])  # cancelled, not in time


def test_with_a_token_only_health_is_open_and_it_tells_nothing_of_the_host(client):
    bare = TestClient(client.app)
    for path in ("/openapi.json", "/docs", "/redoc"):
        assert bare.get(path).status_code in (401, 404), path
    assert set(bare.get("/health").json()) == {"status", "queue_depth", "in_flight", "capacity", "version"}
    assert "store" in client.get("/health").json()  # with the token: the whole picture


@pytest.mark.parametrize("config, words", [
    ({"timeout_s": 100000}, "timeout_s is 100000; a client may ask for at most 900"),
    ({"num_trials": 1000}, "num_trials is 1000; a client may ask for at most 20"),
    ({"device": "cuda:7"}, "device is chosen by the service's workers"),
])
def test_client_config_overrides_are_bounded(client, config, words):
    r = client.post("/v1/batches", json={"requests": [request("x", config=config)]})
    assert r.status_code == 422 and words in r.json()["detail"]


@pytest.mark.parametrize("body, status, words", [
    (b'{"requests": [{"task_id": "relu", "answer": ', 400, "malformed JSON"),
    ({"requests": []}, 422, "empty"),
    ({"requests": [{"task_id": "relu"}]}, 422, "requests.0.answer: Field required"),
    ({"requests": [{"task_id": "relu", "answer": "x", "anwser": "y"}]}, 422, "requests.0.anwser"),
    ({"requests": [request("x", task_id="nope")]}, 422, "requests[0]: task_id: unknown built-in task 'nope'"),
    ({"requests": [request("x" * 1_000_001)]}, 413, "answer is 1000001 bytes"),
    ({"requests": [request("x", config={"tolerance": 1})]}, 422, "unknown JudgeConfig fields: ['tolerance']"),
    ({"requests": [request("x", config={"size": "huge"})]}, 422, "size must be auto, full or small"),
    ({"requests": [request("x", config="fast")]}, 422, "requests.0.config"),
    # JSON parsers read NaN and Infinity; NaN slips past every comparison (it was accepted, then a system_error)
    (b'{"requests": [{"task_id": "relu", "answer": "x", "config": {"timeout_s": NaN}}]}', 422,
     "timeout_s must hold finite numbers, not nan"),
    (b'{"requests": [{"task_id": "relu", "answer": "x", "config": {"cpu_memory_gb": -Infinity}}]}', 422,
     "cpu_memory_gb must hold finite numbers, not -inf"),
    (b'{"requests": [{"task_id": "relu", "answer": "x", "config": {"tolerances": {"float32": [NaN, 0.1]}}}]}', 422,
     "tolerances must hold finite numbers"),
])
def test_bad_requests_get_a_4xx_that_says_what_is_wrong(client, body, status, words):
    r = client.post("/v1/batches", content=body if isinstance(body, bytes) else json.dumps(body),
                    headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    assert words in r.json()["detail"]


def test_bad_token_unknown_ids_and_oversized_bodies(client):
    bare = TestClient(client.app)
    assert bare.post("/v1/batches", json={"requests": [request("x")]}).status_code == 401
    wrong = bare.get("/v1/results/x", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert bare.get("/metrics").status_code == 401
    assert client.get("/v1/results/unknown").status_code == 404
    assert client.get("/v1/batches/unknown/stream").status_code == 404
    r = client.post("/v1/results:wait", json={"ids": ["unknown"], "timeout": 0})
    assert r.status_code == 404 and "unknown" in r.json()["detail"]
    assert client.post("/v1/results:wait", json={"ids": ["x"], "timeout": 10_000}).status_code == 422
    big = client.post("/v1/batches", content=b"x" * (65 << 20), headers={"Content-Type": "application/json"})
    assert big.status_code == 413


def test_app_owns_the_service_lifecycle_and_reads_the_token_from_env(db_path, monkeypatch):
    monkeypatch.setenv("KERNELGYM_TOKEN", "from-env")
    store = Store(db_path)
    service = Service(FakeBackend(), store)
    with TestClient(create_app(service)) as client:
        assert client.get("/health").json()["status"] == "ok"
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers={"Authorization": "Bearer from-env"}).status_code == 200
    assert service.health()["status"] == "down", "closing the app closes the service it started"
    store.close()
