"""Multi-turn rollouts with a scripted generator and fake episodes: ids, spans, env mask, budgets,
concurrent judging; the in-process judge behind the episode factory; the vLLM generator's contract."""

import math
import threading
from types import SimpleNamespace

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from kernelgym.env.environment import EnvConfig, KernelObservation
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.result import EvalResult, Status
from rewards.config import RewardConfig
from train.chat_ids import ChatContinuation, prompt_ids
from train.episodes import episode_factory
from train.generation import Generation, VLLMGenerator
from train.rollout import MultiTurnRollout, RolloutLimits, episode_return
from train.tiny_model import build_tiny_tokenizer

FIRST = [{"role": "system", "content": "sys"}, {"role": "user", "content": "write relu"}]


@pytest.fixture(scope="module")
def tokenizer():
    return build_tiny_tokenizer()


class ScriptedGenerator:
    """Returns the next scripted answer ids for each context, in call order."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = []

    def generate(self, contexts, max_new_tokens):
        self.calls.append((len(contexts), max_new_tokens))
        batch, self.answers = self.answers[:len(contexts)], self.answers[len(contexts):]
        return [Generation(ids=list(ids), logprobs=[-0.5] * len(ids)) for ids in batch]


class FakeEpisode:
    """Reward 1.0 when the answer contains 'good'; feedback turns until max_turns; optional judge delay."""

    def __init__(self, max_turns=2, together=None, active=None):
        self.max_turns, self.together, self.turn, self.active = max_turns, together, 0, active

    def reset(self, task):
        self.turn = 0
        return KernelObservation(messages=FIRST)

    def step(self, answer):
        if self.active is not None:
            self.active.append(threading.get_ident())
        if self.together is not None:
            self.together.wait(timeout=60)  # breaks (and the rollout fails) unless all are judged at once
        self.turn += 1
        good = "good" in answer
        result = EvalResult(status=Status.OK if good else Status.WRONG_OUTPUT, task_id="relu", compiled=True,
                            correct=good)
        done = self.turn >= self.max_turns
        return KernelObservation(messages=[] if done else [{"role": "user", "content": f"feedback {self.turn}"}],
                                 done=done, reward=1.0 if good else 0.0, metadata={"result": result.to_dict()})


def _ids(tokenizer, text, end=True):
    ids = tokenizer.encode(text, add_special_tokens=False)
    return ids + [tokenizer.convert_tokens_to_ids("<|im_end|>")] if end else ids


def _rollout(limits, episode=lambda: FakeEpisode()):
    return MultiTurnRollout(episode, limits, RewardConfig())


def test_two_turn_rollout_concatenates_answers_and_masks_feedback(tokenizer):
    cont = ChatContinuation(tokenizer)
    a = [_ids(tokenizer, "bad one"), _ids(tokenizer, "good one"), _ids(tokenizer, "good two"), _ids(tokenizer, "x")]
    gen = ScriptedGenerator(a)
    out = _rollout(RolloutLimits(max_turns=2, max_turn_tokens=8, max_completion_tokens=200)).run(
        ["relu", "relu"], gen, cont, tokenizer)
    fb1 = cont.suffix_ids([{"role": "user", "content": "feedback 1"}])
    assert out["prompt_ids"] == [prompt_ids(tokenizer, FIRST)] * 2
    assert out["completion_ids"][0] == a[0] + fb1 + a[2]
    assert out["completion_ids"][1] == a[1] + fb1 + a[3]
    assert out["env_mask"][0] == [1] * len(a[0]) + [0] * len(fb1) + [1] * len(a[2])
    assert out["logprobs"][0] == [-0.5] * len(a[0]) + [0.0] * len(fb1) + [-0.5] * len(a[2])
    turns = out["turns"][0]
    assert [(t["start"], t["end"]) for t in turns] == [(0, len(a[0])), (len(a[0]) + len(fb1), len(out["env_mask"][0]))]
    assert [t["reward"] for t in turns] == [0.0, 1.0] and [t["passed"] for t in turns] == [False, True]
    assert [t["stop"] for t in turns] == ["", "done"] and turns[1]["status"] == "ok"
    assert episode_return([None, None], out["turns"]) == [1.0, 1.0]
    assert gen.calls == [(2, 8), (2, 8)]


def test_budget_and_truncation_decide_whether_a_next_turn_starts(tokenizer):
    cont = ChatContinuation(tokenizer)
    fb1 = cont.suffix_ids([{"role": "user", "content": "feedback 1"}])
    cut = _ids(tokenizer, "bad", end=False)  # hit the per-turn limit: closed with <|im_end|>, judged
    long = _ids(tokenizer, "bad " * 5)
    room = len(cut) + 1 + len(fb1) + 8  # exactly enough for the first rollout's second turn
    gen = ScriptedGenerator([cut, long, _ids(tokenizer, "good")])
    out = _rollout(RolloutLimits(max_turns=3, max_turn_tokens=8, max_completion_tokens=room),
                   lambda: FakeEpisode(max_turns=3)).run(["relu", "relu"], gen, cont, tokenizer)
    first, second = out["turns"]
    assert first[0]["truncated"] and first[0]["stop"] == "" and len(first) == 2
    assert out["completion_ids"][0][:len(cut) + 1 + len(fb1)] == cut + [cont.end_of_turn_id] + fb1
    assert out["env_mask"][0][len(cut)] == 0  # the closing end token is not the model's
    assert first[1]["stop"] == "budget"  # no room for a third answer
    assert len(second) == 1 and second[0]["stop"] == "budget"  # the long answer left no room
    assert all(len(c) <= room for c in out["completion_ids"])


def test_all_answers_of_a_turn_are_judged_concurrently(tokenizer):
    cont = ChatContinuation(tokenizer)
    threads = []
    gen = ScriptedGenerator([_ids(tokenizer, "bad")] * 4)
    together = threading.Barrier(4)  # each judge waits inside its step until all four are there
    rollout = _rollout(RolloutLimits(max_turns=1, max_turn_tokens=8, max_completion_tokens=8, judge_workers=4),
                       lambda: FakeEpisode(max_turns=1, together=together, active=threads))
    rollout.run(["relu"] * 4, gen, cont, tokenizer)
    assert len(set(threads)) == 4 and not together.broken
    assert "judge_s" in rollout.last_timing


def test_episode_factory_judges_in_process_on_cpu(tokenizer):
    make = episode_factory(JudgeConfig(device="cpu", num_trials=1, timeout_s=60), RewardConfig(),
                           EnvConfig(max_turns=2))
    episode = make()
    obs = episode.reset("relu")
    assert obs.messages[0]["role"] == "system"
    obs = episode.step("not code at all")
    assert obs.metadata["result"]["status"] == "invalid_answer" and obs.reward == 0.0 and not obs.done


class FakeVLLM:
    """TRL's VLLMGeneration as the generator sees it: gathers prompts, returns one sample each."""

    def __init__(self, mode):
        self.mode, self.tensor_parallel_size, self.max_completion_length = mode, 1, 4096
        self.seen = []

    def generate(self, prompts, images, num_generations):
        self.seen.append((list(prompts), self.max_completion_length, num_generations))
        ids = [[7, 8] for _ in prompts]
        return prompts, ids, [[[-0.1], [None]] for _ in prompts], None


class FakeAccelerator:
    device = "cpu"

    def __init__(self, other_rank_count):
        self.other = other_rank_count

    def gather(self, t):
        return torch.cat([t, torch.tensor([self.other])])


def test_vllm_generator_pads_collective_calls_and_sets_the_turn_budget(tokenizer):
    backend = FakeVLLM("server")
    trainer = SimpleNamespace(vllm_generation=backend, accelerator=FakeAccelerator(3), _tokenizer=tokenizer)
    out = VLLMGenerator(trainer).generate([[1, 2, 3]], max_new_tokens=16)
    prompts, budget, n = backend.seen[0]
    assert len(prompts) == 3 and prompts[0] == [1, 2, 3] and budget == 16 and n == 1  # padded to the busiest rank
    assert backend.max_completion_length == 4096  # restored after the call
    assert len(out) == 1 and out[0].ids == [7, 8] and out[0].logprobs[0] == -0.1 and math.isnan(out[0].logprobs[1])
    colocated = FakeVLLM("colocate")
    trainer = SimpleNamespace(vllm_generation=colocated, accelerator=FakeAccelerator(3), _tokenizer=tokenizer)
    assert VLLMGenerator(trainer).generate([], max_new_tokens=16) == [] and colocated.seen == []


class GatedEpisode(FakeEpisode):
    """Its first verdict waits for `gate` (set by the generator's third call); records whether it came."""

    def __init__(self, gate, opened):
        super().__init__(max_turns=2)
        self.gate, self.opened = gate, opened

    def step(self, answer):
        if self.turn == 0:
            self.opened.append(self.gate.wait(timeout=60))
        return super().step(answer)


def test_waves_overlap_one_waves_judging_with_the_next_waves_generation(tokenizer):
    """Two waves of two rollouts: wave 1's first verdicts can only come once wave 0's second turn is
    being generated, which a one-wave schedule never does before all verdicts are in."""
    cont = ChatContinuation(tokenizer)
    gate, opened, made = threading.Event(), [], []

    class GateOnThirdCall(ScriptedGenerator):
        def generate(self, contexts, max_new_tokens):
            if len(self.calls) == 2:  # wave 0's second turn
                gate.set()
            return super().generate(contexts, max_new_tokens)

    def episode():
        made.append(GatedEpisode(gate, opened) if len(made) >= 2 else FakeEpisode(max_turns=2))
        return made[-1]

    answers = [_ids(tokenizer, t) for t in ("bad a", "bad b", "bad c", "bad d", "good a", "good b", "good c", "x")]
    gen = GateOnThirdCall(answers)
    rollout = MultiTurnRollout(episode, RolloutLimits(max_turns=2, max_turn_tokens=8, max_completion_tokens=200,
                                                      judge_workers=4, waves=2), RewardConfig())
    out = rollout.run(["relu"] * 4, gen, cont, tokenizer)
    assert opened == [True, True]  # wave 1 was judged while wave 0 generated its next turn
    assert gen.calls == [(2, 8)] * 4
    fb1 = cont.suffix_ids([{"role": "user", "content": "feedback 1"}])
    # each rollout got its own feedback and its own second answer, in call order per wave
    assert out["completion_ids"] == [answers[0] + fb1 + answers[4], answers[1] + fb1 + answers[5],
                                     answers[2] + fb1 + answers[6], answers[3] + fb1 + answers[7]]
    assert [[t["reward"] for t in ts] for ts in out["turns"]] == [[0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 0.0]]


def test_waves_split_evenly_and_every_process_makes_the_same_calls():
    from train.rollout import _split

    assert [len(g) for g in _split(list(range(7)), 3)] == [3, 2, 2]
    assert _split(list(range(7)), 3)[0] == [0, 1, 2]
    assert [len(g) for g in _split([1], 3)] == [1, 0, 0]  # as many groups as asked, empty ones too
    with pytest.raises(ValueError, match="waves"):
        RolloutLimits(max_turns=1, max_turn_tokens=8, max_completion_tokens=8, waves=0)
