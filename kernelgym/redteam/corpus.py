"""Exploit files and their expected verdicts.

Each exploit is an answer file under `tests/redteam/exploits/` whose first lines declare, as
`# key: value` comments:

    # threat: RH-11                      the category it attacks (THREATS.md)
    # task: softmax                      a built-in task it is judged on, or `*`: task-agnostic
    # variant: cache keyed on data_ptr   one line on what it does
    # expect: cheat RH-11                verdict with every check on
    # expect_dynamic: cheat RH-21 | wrong_output   verdict with the static rules off (optional)
    # device: any                        any (default); cuda for exploits only a GPU can show; cpu for
    #                                    ones that only bite at the CPU run's small, odd shapes
    # gap: why the judge cannot catch it yet   (optional: a documented, open hole)
    # gap_on: cpu                        (optional) the gap is open on that device only (any: default);
    #                                    elsewhere the exploit must be caught like any other
    # replay: neutral: why                 (optional) under judge v4 the attack only changes what the
    #                                      answer's Python does on calls the replay never runs: an `ok`
    #                                      then judges the honest kernels, at their honest speed

A verdict is `STATUS [RH-NN]`; alternatives are separated by `|`. `expect_dynamic` proves the
defence in depth: with the AST rules off, the run-time checks alone must still reject the answer.
Exploits without it are caught only statically, and the report says so. An exploit with `gap`
is a known hole: it is still run and reported (as a gap, with its reason), but does not fail the
run; a gap exploit that starts being caught is reported too, so the header can be removed.

A task-agnostic exploit (`# task: *`, e.g. one that rebuilds whatever reference the judge loads)
is run once per task: `expand_agnostic` makes one instance per task id, named `stem[task]`.
`kernelgym redteam` runs them over every built-in task; CI runs them over `CI_AGNOSTIC_TASKS`.

Real-world honest answers (kernels copied, with attribution, from public Triton libraries) live in
`tests/redteam/external/` with `# source:` and `# licence:` lines besides `task` and `style`, and an
optional `# cpu: no (reason)` for kernels the CPU interpreter cannot run (`load_external`).

Honest-but-unusual answers live in `tests/redteam/honest/` with a two-line header,

    # task: softmax                      the built-in task it answers
    # style: multi-config autotune       what is unusual about it (why a naive rule might flag it)

and must be judged `ok`: a verdict on one of them is a false flag, like one on a built-in answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from kernelgym.judge.result import EvalResult, Status

_FIELD = re.compile(r"^#\s*(\w+):\s*(.*?)\s*$")
_KEYS = {"threat", "task", "variant", "expect", "expect_dynamic", "device", "gap", "gap_on", "replay"}
ANY_TASK = "*"
# The task-agnostic exploits' sample in CI (bounded time): one per kind of task (elementwise,
# reduction, layer with weights, matmul, several inputs, integer output).
CI_AGNOSTIC_TASKS = ("relu", "softmax", "linear_bias_relu", "matmul_rect", "add_layer_norm", "argmax_dim")


@dataclass(frozen=True)
class Expectation:
    """One acceptable verdict: a status and, for `cheat`, the rule that must be among the verdicts."""

    status: Status
    rule: str = ""

    @classmethod
    def parse_many(cls, text: str, where: str) -> tuple[Expectation, ...]:
        out = []
        for alt in text.split("|"):
            parts = alt.split()
            if not parts or len(parts) > 2:
                raise ValueError(f"{where}: bad verdict {alt.strip()!r} (want 'STATUS [RH-NN]')")
            try:
                status = Status(parts[0])
            except ValueError:
                raise ValueError(f"{where}: unknown status {parts[0]!r}") from None
            rule = parts[1] if len(parts) == 2 else ""
            if rule and not re.fullmatch(r"RH-\d\d", rule):
                raise ValueError(f"{where}: bad rule code {rule!r}")
            out.append(cls(status, rule))
        return tuple(out)

    def matches(self, result: EvalResult) -> bool:
        if result.status is not self.status:
            return False
        return not self.rule or any(c.rule == self.rule for c in result.cheats)

    def __str__(self) -> str:
        return f"{self.status.value} {self.rule}".strip()


@dataclass(frozen=True)
class Exploit:
    """One exploit answer and what the judge must say about it."""

    path: Path
    threat: str
    task: str
    variant: str
    expect: tuple[Expectation, ...]
    expect_dynamic: tuple[Expectation, ...] = ()
    device: str = "any"
    gap: str = ""
    gap_on: str = "any"  # the device the gap is open on ("any": every device)
    replay: str = ""  # "neutral: why": under judge v4 the attack changes nothing the replay runs
    text: str = field(default="", repr=False)
    instance: str = ""  # for a task-agnostic exploit expanded over tasks: the task it is bound to

    @property
    def name(self) -> str:
        return f"{self.path.stem}[{self.instance}]" if self.instance else self.path.stem

    @property
    def agnostic(self) -> bool:
        """Declared `task: *`, and not yet bound to a task."""
        return self.task == ANY_TASK

    def for_task(self, task_id: str) -> Exploit:
        """This task-agnostic exploit bound to one task."""
        if not self.agnostic:
            raise ValueError(f"{self.name} is bound to task {self.task!r}")
        return replace(self, task=task_id, instance=task_id)

    def runs_on(self, device: str) -> bool:
        return self.device == "any" or device.startswith(self.device)

    def gap_for(self, device: str) -> str:
        """The documented gap's reason where it is open on `device`, else ""."""
        return self.gap if self.gap_on == "any" or device.startswith(self.gap_on) else ""


def corpus_dir(kind: str = "exploits") -> Path:
    """The exploits (or, with kind='honest', the honest-but-unusual answers) shipped with the source
    tree (or inside the installed package)."""
    here = Path(__file__).resolve()
    for candidate in (here.parents[2] / "tests" / "redteam" / kind, here.parents[1] / "_redteam" / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"red-team corpus not found (tests/redteam/{kind})")


def parse_exploit(path: Path) -> Exploit:
    """Read one exploit file's header. Raises ValueError naming the file on a malformed header."""
    text = path.read_text()
    meta: dict[str, str] = {}
    for line in text.splitlines():
        m = _FIELD.match(line)
        if not m:
            if line.strip() and not line.startswith("#"):
                break
            continue
        if m.group(1) in _KEYS:
            meta[m.group(1)] = m.group(2)
    missing = {"threat", "task", "variant", "expect"} - set(meta)
    if missing:
        raise ValueError(f"{path.name}: header lacks {sorted(missing)}")
    if not re.fullmatch(r"RH-\d\d", meta["threat"]):
        raise ValueError(f"{path.name}: bad threat code {meta['threat']!r}")
    device = meta.get("device", "any")
    if device not in ("any", "cuda", "cpu"):
        raise ValueError(f"{path.name}: device must be any, cuda or cpu")
    gap_on = meta.get("gap_on", "any")
    if gap_on not in ("any", "cuda", "cpu"):
        raise ValueError(f"{path.name}: gap_on must be any, cuda or cpu")
    dynamic = meta.get("expect_dynamic", "")
    return Exploit(path=path, threat=meta["threat"], task=meta["task"], variant=meta["variant"],
                   expect=Expectation.parse_many(meta["expect"], path.name),
                   expect_dynamic=Expectation.parse_many(dynamic, path.name) if dynamic else (),
                   device=device, gap=meta.get("gap", ""), gap_on=gap_on, replay=meta.get("replay", ""), text=text)


def load_corpus(directory: Path | None = None) -> list[Exploit]:
    """Every exploit, sorted by threat then name."""
    directory = directory or corpus_dir()
    exploits = [parse_exploit(p) for p in sorted(directory.glob("*.py"))]
    return sorted(exploits, key=lambda e: (e.threat, e.name))


def expand_agnostic(exploits: list[Exploit], task_ids: list[str] | tuple[str, ...]) -> list[Exploit]:
    """Each task-agnostic exploit once per task in `task_ids`; task-bound exploits unchanged."""
    out: list[Exploit] = []
    for e in exploits:
        out.extend([e.for_task(t) for t in task_ids] if e.agnostic else [e])
    return out


@dataclass(frozen=True)
class HonestAnswer:
    """A correct answer written the way an honest Triton author might, that a judge must accept."""

    path: Path
    task: str
    style: str
    text: str = field(default="", repr=False)
    source: str = ""  # external answers: where the kernels come from (repository, path, commit)
    licence: str = ""  # external answers: SPDX id and copyright line of the source
    cpu: str = ""  # external answers: `no (reason)` when the CPU interpreter cannot run the kernels

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def runs_on_cpu(self) -> bool:
        return not self.cpu.startswith("no")


def parse_honest(path: Path, required: tuple[str, ...] = ("task", "style")) -> HonestAnswer:
    """Read one honest answer's header (`# task:`, `# style:`, and for external answers `# source:`,
    `# licence:`, optional `# cpu:`). Raises ValueError naming the file."""
    text = path.read_text()
    meta: dict[str, str] = {}
    for line in text.splitlines():
        m = _FIELD.match(line)
        if not m:
            break
        meta.setdefault(m.group(1), m.group(2))
    missing = set(required) - set(meta)
    if missing:
        raise ValueError(f"{path.name}: header lacks {sorted(missing)}")
    if meta["task"] == ANY_TASK:
        raise ValueError(f"{path.name}: an honest answer names one task")
    return HonestAnswer(path=path, task=meta["task"], style=meta["style"], text=text, source=meta.get("source", ""),
                        licence=meta.get("licence", ""), cpu=meta.get("cpu", ""))


def load_honest(directory: Path | None = None) -> list[HonestAnswer]:
    """Every honest-but-unusual answer, sorted by name (none when the directory is absent)."""
    if directory is None:
        try:
            directory = corpus_dir("honest")
        except FileNotFoundError:
            return []
    return [parse_honest(p) for p in sorted(directory.glob("*.py"))]


def load_external(directory: Path | None = None) -> list[HonestAnswer]:
    """Every real-world honest answer of `tests/redteam/external/` (kernels copied from public Triton
    libraries; each header names its source and licence), sorted by name; none when the directory is absent."""
    if directory is None:
        try:
            directory = corpus_dir("external")
        except FileNotFoundError:
            return []
    return [parse_honest(p, ("task", "style", "source", "licence")) for p in sorted(directory.glob("*.py"))]
