"""Trajectories: multi-turn conversations with the judge's result and the reward of every turn.

Two sources make them:
  * the service's result store (`kernelgym serve --db`): every finished request is a one-turn
    trajectory (the store keeps no episodes); the prompt is rebuilt from the task with the
    environment's own templates and the reward recomputed with a `RewardConfig`;
  * episode logs (JSON lines of `Trajectory.to_row()`), written by whoever drives `KernelEnv`
    (the trainer, an evaluation script) through `EpisodeRecorder`, multi-turn as they happened.

A trajectory's `messages` is the conversation; its k-th assistant message is the answer of
turn k, and `turns[k]` holds that answer's result, the reward the turn earned (what returns-to-go
sum; with `EnvConfig.turn_reward="improvement"` a repeated answer earns 0) and the answer's own
reward (what ranks answers: best turn, SFT and best-of-n). Rows round-trip through parquet.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelgym.env.environment import KernelObservation
from kernelgym.env.prompts import PromptTemplates, first_messages, load_templates
from kernelgym.judge.result import EvalResult, Status
from kernelgym.tasks.task import Task
from rewards.config import RewardConfig
from rewards.functions import get_reward, is_cheat, is_pass, speedup

# Parquet schema of a trajectory row (spellings of `kernelgym.export.tables.feature`).
TRAJECTORY_COLUMNS: dict[str, Any] = {
    "trajectory_id": "string", "task_id": "string", "group_id": "string", "origin": "string",
    "messages": "messages", "num_turns": "int64",
    "turns": [{"status": "string", "passed": "bool", "cheat": "bool", "speedup": "float64",
               "triton_share": "float64", "reward": "float64", "answer_reward": "float64", "return_to_go": "float64",
               "result": "string"}],
    "final_reward": "float64", "best_reward": "float64", "best_turn": "int64", "passed": "bool", "meta": "string",
}


@dataclass
class Turn:
    """One answer's outcome: the judge's result (as its dict), the reward the turn earned, and the
    answer's own reward (None: the same as `reward`, as in one-turn trajectories and older logs)."""

    result: dict[str, Any]
    reward: float
    answer_reward: float | None = None

    def __post_init__(self) -> None:
        if self.answer_reward is None:
            self.answer_reward = self.reward

    @property
    def eval_result(self) -> EvalResult:
        return EvalResult.from_dict(self.result)

    def summary(self, reward_config: RewardConfig | None = None) -> dict[str, Any]:
        """The flat per-turn fields filters and tables use (None where not measured)."""
        r = self.eval_result
        return {"status": r.status.value, "passed": is_pass(r), "cheat": is_cheat(r),
                "speedup": speedup(r, reward_config or RewardConfig()),
                "triton_share": r.profile.triton_share if r.profile is not None else None, "reward": self.reward,
                "answer_reward": self.answer_reward}


@dataclass
class Trajectory:
    """One episode: the conversation and one `Turn` per assistant message."""

    trajectory_id: str
    task_id: str
    messages: list[dict[str, str]]
    turns: list[Turn]
    group_id: str = ""  # trajectories sampled for the same prompt (best-of-n groups); default: the task id
    origin: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.group_id = self.group_id or self.task_id
        answers = sum(m["role"] == "assistant" for m in self.messages)
        if answers != len(self.turns):
            raise ValueError(f"trajectory {self.trajectory_id}: {answers} assistant messages "
                             f"but {len(self.turns)} turns")

    def returns_to_go(self, gamma: float = 1.0) -> list[float]:
        """G_k = r_k + gamma * G_{k+1}, as `EpisodeState.returns_to_go` computes them."""
        out, g = [], 0.0
        for turn in reversed(self.turns):
            g = turn.reward + gamma * g
            out.append(g)
        return out[::-1]

    def prompt_before(self, turn: int) -> list[dict[str, str]]:
        """The messages the policy saw before writing turn `turn`'s answer."""
        seen = -1
        for i, m in enumerate(self.messages):
            if m["role"] == "assistant":
                seen += 1
                if seen == turn:
                    return [dict(x) for x in self.messages[:i]]
        raise IndexError(f"trajectory {self.trajectory_id} has no turn {turn}")

    def answer(self, turn: int) -> str:
        return [m["content"] for m in self.messages if m["role"] == "assistant"][turn]

    def to_row(self, reward_config: RewardConfig | None = None) -> dict[str, Any]:
        """A dataset row (`TRAJECTORY_COLUMNS`); `from_row` inverts it."""
        rtg = self.returns_to_go()
        turns = [{**t.summary(reward_config), "return_to_go": g, "result": json.dumps(t.result)}
                 for t, g in zip(self.turns, rtg, strict=True)]
        answers = [t.answer_reward for t in self.turns]
        best = max(range(len(answers)), key=lambda k: (answers[k], -k)) if answers else -1
        return {"trajectory_id": self.trajectory_id, "task_id": self.task_id, "group_id": self.group_id,
                "origin": self.origin, "messages": [dict(m) for m in self.messages], "num_turns": len(self.turns),
                "turns": turns, "final_reward": answers[-1] if answers else None,
                "best_reward": answers[best] if answers else None, "best_turn": best,
                "passed": any(t["passed"] for t in turns), "meta": json.dumps(self.meta, sort_keys=True)}

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Trajectory":
        turns = [Turn(result=json.loads(t["result"]), reward=float(t["reward"]),
                      answer_reward=None if t.get("answer_reward") is None else float(t["answer_reward"]))
                 for t in row["turns"]]
        return cls(trajectory_id=row["trajectory_id"], task_id=row["task_id"],
                   messages=[{"role": m["role"], "content": m["content"]} for m in row["messages"]], turns=turns,
                   group_id=row.get("group_id") or "", origin=row.get("origin") or "",
                   meta=json.loads(row["meta"]) if row.get("meta") else {})


class EpisodeRecorder:
    """Collects one `KernelEnv` episode into a `Trajectory`: `on_reset(obs)`, then `on_step(answer, obs)` per turn.

    The recorded conversation is exactly what the policy saw: the reset messages, each answer as an
    assistant message, and each step's feedback messages (none after the last turn).
    """

    def __init__(self, trajectory_id: str, task_id: str, group_id: str = "", meta: dict[str, Any] | None = None,
                 origin: str = "env") -> None:
        self._ids = (trajectory_id, task_id, group_id, origin)
        self._meta = dict(meta or {})
        self._messages: list[dict[str, str]] = []
        self._turns: list[Turn] = []

    def on_reset(self, observation: KernelObservation) -> None:
        self._messages = [dict(m) for m in observation.messages]
        self._turns = []

    def on_step(self, answer: str, observation: KernelObservation) -> None:
        if not self._messages:
            raise ValueError("EpisodeRecorder.on_step before on_reset")
        self._messages.append({"role": "assistant", "content": answer})
        answer_reward = observation.metadata.get("answer_reward")
        self._turns.append(Turn(result=observation.metadata["result"], reward=float(observation.reward or 0.0),
                                answer_reward=None if answer_reward is None else float(answer_reward)))
        self._messages.extend(dict(m) for m in observation.messages)

    def trajectory(self) -> Trajectory:
        trajectory_id, task_id, group_id, origin = self._ids
        return Trajectory(trajectory_id, task_id, list(self._messages), list(self._turns), group_id, origin,
                          dict(self._meta))


def append_log(path: str | Path, trajectories: Iterable[Trajectory]) -> int:
    """Append trajectories to an episode log (JSON lines of rows). Returns how many were written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("a", encoding="utf-8") as fh:
        for t in trajectories:
            fh.write(json.dumps(t.to_row()) + "\n")
            n += 1
    return n


def from_log(path: str | Path) -> list[Trajectory]:
    """Trajectories of an episode log, or of an exported trajectories file (`.jsonl` or `.parquet`)."""
    from kernelgym.export.tables import read_table

    return [Trajectory.from_row(row) for row in read_table(Path(path))]


def from_store(path: str | Path, tasks: dict[str, Task] | None = None, reward_config: RewardConfig | None = None,
               templates: PromptTemplates | None = None) -> tuple[list[Trajectory], Counter]:
    """One-turn trajectories from a result store (`.db`, or the JSON lines `Store.export` wrote).

    The task comes from the request's inline source, else from `tasks` by id. Returns the
    trajectories and a count of the requests left out, by reason: `answer purged` (payload TTL),
    `unknown task`, `system_error` (the service could not judge it: it says nothing of the answer).
    """
    reward_config = reward_config or RewardConfig()
    templates = templates or load_templates()
    reward = get_reward(reward_config.name)
    skipped: Counter = Counter()
    out = []
    for row in _store_rows(Path(path)):
        result = EvalResult.from_dict(row["result"])
        if result.status is Status.SYSTEM_ERROR:
            skipped["system_error"] += 1
            continue
        if row.get("answer") is None:
            skipped["answer purged"] += 1
            continue
        if row.get("task_source"):
            task = Task(task_id=row["task_id"], source=row["task_source"], origin="store")
        elif tasks and row["task_id"] in tasks:
            task = tasks[row["task_id"]]
        else:
            skipped["unknown task"] += 1
            continue
        messages = [*first_messages(task, templates), {"role": "assistant", "content": row["answer"]}]
        meta = {k: row.get(k) for k in ("batch_id", "key", "cached_from", "worker", "finished_at")}
        out.append(Trajectory(row["id"], row["task_id"], messages,
                              [Turn(result=row["result"], reward=float(reward(result, reward_config)))],
                              origin=f"store:{path}", meta=meta))
    return out, skipped


def _store_rows(path: Path) -> list[dict[str, Any]]:
    """The store's finished requests as dicts, through `Store.export` (the one exporter of the store)."""
    if path.suffix == ".jsonl":
        from kernelgym.export.tables import read_table

        return read_table(path)
    if not path.is_file():
        raise ValueError(f"result store {path} does not exist")
    from kernelgym.service.store import Store

    store = Store(path)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "store.jsonl"
            store.export(out)
            return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line]
    finally:
        store.close()
