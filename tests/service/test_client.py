import asyncio

import pytest

from kernelgym.judge.result import Status
from kernelgym.service.admission import EvalRequest
from kernelgym.service.app import create_app
from kernelgym.service.client import AsyncKernelGymClient, KernelGymClient, KernelGymError
from tests.service.conftest import FakeBackend, answer_tag, request, running_server

TOKEN = "t0ken"


@pytest.fixture
def url(make_service):
    app = create_app(make_service(FakeBackend(capacity=2, delay=0.05)), token=TOKEN, manage_service=False)
    with running_server(app) as base_url:
        yield base_url


def test_sync_client_round_trip(url):
    with KernelGymClient(url, token=TOKEN) as kg:
        assert kg.health()["status"] == "ok"
        sub = kg.submit([EvalRequest("relu", "k0"), request("WRONG k1"), request("k2")])
        first = kg.get(sub.ids[0], wait=10)
        assert first.final and first.result.message == answer_tag("k0")
        streamed = list(kg.stream(sub.batch_id))
        assert sorted(r.id for r in streamed) == sorted(sub.ids)
        records = kg.wait(sub.ids, timeout=10)
        assert [r.result.status for r in records] == [Status.OK, Status.WRONG_OUTPUT, Status.OK]
        result = kg.evaluate("relu", "k3", config={"num_trials": 1})
        assert result.status is Status.OK and result.message == answer_tag("k3")


def test_sync_client_cancel_and_errors(url):
    with KernelGymClient(url, token=TOKEN) as kg:
        ids = kg.submit([request(f"k{i}") for i in range(4)]).ids
        assert kg.cancel(ids[-1]) is True and kg.cancel(ids[-1]) is False
        assert kg.wait(ids, timeout=10)[-1].state == "cancelled"
        with pytest.raises(KernelGymError) as e:
            kg.submit([request("x", task_id="no_such_task")])
        assert e.value.status_code == 422 and "no_such_task" in e.value.detail
        with pytest.raises(KernelGymError) as e:
            kg.get("missing")
        assert e.value.status_code == 404
    with KernelGymClient(url, token="wrong") as kg, pytest.raises(KernelGymError) as e:
        kg.submit([request("x")])
    assert e.value.status_code == 401


def test_wait_returns_unfinished_records_at_its_timeout(url):
    with KernelGymClient(url, token=TOKEN) as kg:
        ids = kg.submit([request(f"SLOW {i}") for i in range(3)]).ids
        records = kg.wait(ids, timeout=0.05)
        assert len(records) == 3 and not any(r.final for r in records)


def test_async_client_round_trip_with_sse(url):
    async def main() -> None:
        async with AsyncKernelGymClient(url, token=TOKEN) as kg:
            assert (await kg.health())["status"] == "ok"
            sub = await kg.submit([request(f"a{i}") for i in range(4)])
            sse = [r async for r in kg.stream(sub.batch_id, sse=True)]
            assert sorted(r.id for r in sse) == sorted(sub.ids) and all(r.final for r in sse)
            ndjson = [r async for r in kg.stream(sub.batch_id)]
            assert [r.id for r in ndjson] == sub.ids
            assert (await kg.get(sub.ids[0])).result.message == answer_tag("a0")
            assert all(r.final for r in await kg.wait(sub.ids, timeout=10))
            assert (await kg.evaluate("relu", "WRONG")).status is Status.WRONG_OUTPUT
            more = await kg.submit([request(f"b{i}") for i in range(4)])
            assert await kg.cancel(more.ids[-1])

    asyncio.run(main())


def test_environment_judges_through_the_service(make_service):
    """KernelEnv with `service_judge_fn`: the episode's answers are judged by the service (here a
    FakeBackend), rewards and feedback come from the service's EvalResult, and the task travels
    as its source with the env's judge config overrides."""
    from kernelgym.env import EnvConfig, KernelEnv
    from kernelgym.judge.config import JudgeConfig
    from kernelgym.service.client import service_judge_fn

    backend = FakeBackend(capacity=2)
    app = create_app(make_service(backend), token=TOKEN, manage_service=False)
    with running_server(app) as base_url:
        env = KernelEnv(judge_config=JudgeConfig(device="cpu", num_trials=2), env_config=EnvConfig(max_turns=2),
                        judge_fn=service_judge_fn(base_url, token=TOKEN))
        env.reset("relu")
        first = env.step("WRONG answer")
        second = env.step("a fine answer")
    assert first.metadata["result"]["status"] == "wrong_output" and not first.done
    assert second.metadata["result"]["status"] == "ok" and second.done
    assert "wrong_output" in first.metadata["feedback"]
    job = backend.submitted[0]
    assert job.task_source is not None and "class Model" in job.task_source
    assert job.config["num_trials"] == 2 and "device" not in job.config


def test_a_wrong_service_token_fails_when_the_judge_is_made(make_service):
    # `kernelgym env serve --service-url` builds its judge at start-up: a bad token must stop it there,
    # not surface as an internal error at the first step of an episode.
    from kernelgym.service.client import KernelGymError, service_judge_fn

    app = create_app(make_service(FakeBackend(capacity=1)), token=TOKEN, manage_service=False)
    with running_server(app) as base_url:
        for wrong in ("", "guess"):
            with pytest.raises(KernelGymError, match="HTTP 401.*refused this client's token"):
                service_judge_fn(base_url, token=wrong)
        assert callable(service_judge_fn(base_url, token=TOKEN))

