"""Seeded composition of op chains into KernelBench-style task sources.

`compose(seed, index)` is a pure function: the same (seed, index, config) gives the same source,
byte for byte, in any process, because all randomness comes from one `random.Random` seeded by
a string of the two (Python hashes string seeds with SHA-512, not with the per-process salt).
Whether a candidate is kept is decided later (`validate.py`); this module only writes it and
estimates what it costs.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelgym.taskgen.ops import (
    DTYPE_SIZES,
    FULL_SIZES,
    OPS,
    OPS_BY_NAME,
    SMALL_SIZES,
    Ctx,
    Dim,
    InputSpec,
    Op,
    Shape,
    Step,
    numel,
    shape_args,
)
from kernelgym.tasks.task import Task

# Eager-time model of an H100 for the cheap pre-filter: matmul/conv at the dense rate the judge
# allows (TF32 off for fp32), everything else bandwidth-bound; plus one launch per op.
_PEAK_FLOPS = {"float32": 50e12, "float16": 400e12, "bfloat16": 400e12}
_VECTOR_FLOPS = 50e12
_BANDWIDTH = 3.0e12
_LAUNCH_MS = 0.005
_HEAVY = ("matmul", "conv")
_START_DIMS = {
    2: (("batch_size", "batch2"), ("features", "features")),
    3: (("batch_size", "batch3"), ("channels", "channels3"), ("length", "length")),
    4: (("batch_size", "batch4"), ("channels", "channels4"), ("height", "spatial"), ("width", "spatial")),
}


@dataclass(frozen=True)
class ComposeConfig:
    """The distributions the chains are drawn from."""

    dtypes: dict[str, float] = field(default_factory=lambda: {"float32": 0.7, "float16": 0.15, "bfloat16": 0.15})
    lengths: dict[int, float] = field(default_factory=lambda: {1: 0.12, 2: 0.25, 3: 0.28, 4: 0.2, 5: 0.1, 6: 0.05})
    ranks: dict[int, float] = field(default_factory=lambda: {2: 0.4, 3: 0.25, 4: 0.35})
    category_weights: dict[str, float] = field(default_factory=lambda: {
        "elementwise": 1.0, "activation": 1.5, "reduction": 0.7, "norm": 1.0, "matmul": 1.3, "conv": 1.2,
        "pooling": 0.8, "softmax": 0.5, "loss": 0.6, "reshape": 0.4})
    target_ms: tuple[float, float] = (0.05, 5.0)  # the full-size batch is scaled into this estimated eager time
    max_footprint_gb: float = 2.0  # ... as long as the estimated footprint stays under this

    def __post_init__(self) -> None:
        if set(self.dtypes) - set(DTYPE_SIZES):
            raise ValueError(f"ComposeConfig.dtypes must be among {sorted(DTYPE_SIZES)}")
        if set(self.ranks) - {2, 3, 4} or min(self.lengths, default=0) < 1:
            raise ValueError("ComposeConfig.ranks must be among 2, 3, 4 and lengths at least 1")
        if not 0 < self.target_ms[0] < self.target_ms[1] or self.max_footprint_gb <= 0:
            raise ValueError("ComposeConfig.target_ms must be (low, high) with 0 < low < high; max_footprint_gb > 0")


@dataclass
class Candidate:
    """One composed task and what it is estimated to cost at the full size."""

    seed: int
    index: int
    source: str
    ops: list[str]
    categories: list[str]
    dtype: str
    input_shapes: list[list[int]]
    output_shape: list[int]
    flops: float
    bytes_eager: float  # every op reads and writes its own tensors (unfused eager)
    bytes_min: float  # inputs, parameters and the output once: what a fully fused kernel must move
    params: float
    footprint_bytes: float  # inputs + parameters + the largest op's tensors
    est_ms: float  # the H100 roofline estimate of the eager time
    steps: list[Step] = field(default_factory=list, repr=False)  # what each op added (the cold-start emitter reads them)
    start: Shape = ()  # the shape of the first input `x`

    @property
    def task_id(self) -> str:
        return f"gen{self.seed}_{self.index:06d}"

    @property
    def signature(self) -> str:
        """The op-chain signature: what the held-out split keys on."""
        return ">".join(self.ops)

    def task(self) -> Task:
        return Task(task_id=self.task_id, source=self.source, origin=f"taskgen:{self.seed}:{self.index}",
                    level=1 if len(self.ops) == 1 else 2, problem_id=self.index, name=self.signature)

    def metadata(self) -> dict[str, Any]:
        """The difficulty metadata that goes into the dataset row."""
        return {"signature": self.signature, "ops": list(self.ops), "categories": list(self.categories),
                "num_ops": len(self.ops), "dtype": self.dtype, "input_shapes": [list(s) for s in self.input_shapes],
                "output_shape": list(self.output_shape), "flops": self.flops, "bytes_eager": self.bytes_eager,
                "bytes_min": self.bytes_min, "params": self.params, "footprint_bytes": self.footprint_bytes,
                "est_ms": self.est_ms}


def compose(seed: int, index: int, config: ComposeConfig | None = None) -> Candidate:
    """The `index`-th candidate of generator `seed`."""
    config = config or ComposeConfig()

    def build(batch_scale: float) -> Candidate:
        rng = random.Random(f"kernelgym-taskgen:{seed}:{index}")
        dtype = _weighted(rng, config.dtypes)
        rank = _weighted(rng, config.ranks)
        length = _weighted(rng, config.lengths)
        return _chain(seed, index, rng, config, dtype, rank, [""] * length, batch_scale)

    return _sized(build, config)


def compose_chain(ops: list[str], rank: int, dtype: str = "float32", seed: int = 0, index: int = 0) -> Candidate:
    """A candidate with exactly these ops in this order, starting from a tensor of `rank` (sizes
    and literals still drawn from (seed, index)). Raises ValueError if an op does not fit."""
    unknown = [name for name in ops if name not in OPS_BY_NAME]
    if unknown or dtype not in DTYPE_SIZES or rank not in _START_DIMS:
        raise ValueError(f"compose_chain: unknown ops {unknown}, dtype {dtype!r} or rank {rank}")
    config = ComposeConfig()

    def build(batch_scale: float) -> Candidate:
        rng = random.Random(f"kernelgym-taskgen:{seed}:{index}:chain")
        return _chain(seed, index, rng, config, dtype, rank, list(ops), batch_scale)

    candidate = _sized(build, config)
    if candidate.ops != list(ops):
        raise ValueError(f"compose_chain: {' > '.join(ops)} does not fit a rank-{rank} input "
                         f"(built {' > '.join(candidate.ops) or 'nothing'})")
    return candidate


def _sized(build: Callable[[float], Candidate], config: ComposeConfig) -> Candidate:
    """The chain `build` makes, with its full-size batch doubled (or halved) until the estimated
    eager time reaches `config.target_ms`: the same ops and literals, a workload worth timing.
    Rebuilding replays the same random draws, so only the batch differs."""
    low, high = config.target_ms
    limit = config.max_footprint_gb * 2**30
    candidate, scale = build(1.0), 1.0
    while candidate.est_ms < low and scale < 1024:
        bigger = build(scale * 2)
        if bigger.footprint_bytes > limit or bigger.input_shapes[0][0] == candidate.input_shapes[0][0]:
            break
        candidate, scale = bigger, scale * 2
    while (candidate.est_ms > high or candidate.footprint_bytes > limit) and candidate.input_shapes[0][0] > 1:
        scale /= 2
        candidate = build(scale)
    return candidate


def _chain(seed: int, index: int, rng: random.Random, config: ComposeConfig, dtype: str, rank: int,
           forced: list[str], batch_scale: float = 1.0) -> Candidate:
    """Build one chain of `len(forced)` ops; a non-empty `forced[k]` names the k-th op."""
    shape, constants = _start_shape(rank, rng, batch_scale)
    start = shape
    steps: list[Step] = []
    chosen: list[Op] = []
    for k, name in enumerate(forced):
        ctx = Ctx(shape, k, rng, dtype)
        last = k == len(forced) - 1
        picked = _forced(OPS_BY_NAME[name], ctx) if name else \
            _pick(rng, config, ctx, last=last, previous=chosen[-1].name if chosen else "")
        if picked is None:
            break
        op, step = picked
        chosen.append(op)
        steps.append(step)
        constants.update(step.constants)
        shape = step.out
        if op.terminal or len(shape) < 2:
            break
    return _candidate(seed, index, dtype, start, constants, steps, chosen, shape)


def _forced(op: Op, ctx: Ctx) -> tuple[Op, Step] | None:
    if len(ctx.shape) not in op.ranks:
        return None
    step = op.apply(ctx)
    return None if step is None else (op, step)


def _weighted(rng: random.Random, weights: dict[Any, float]) -> Any:
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys])[0]


def _start_shape(rank: int, rng: random.Random, batch_scale: float) -> tuple[Shape, dict[str, tuple[int, int]]]:
    dims, constants = [], {}
    for name, pool in _START_DIMS[rank]:
        if name == "width" and rng.random() < 0.6:  # square images most of the time
            full, small = constants["height"]
        else:
            lo, hi = SMALL_SIZES[pool]
            full, small = rng.choice(FULL_SIZES[pool]), rng.randint(lo, hi)
            if name == "batch_size":
                full = max(1, int(full * batch_scale))
        constants[name] = (full, small)
        dims.append(Dim(name, full, small))
    return tuple(dims), constants


def _pick(rng: random.Random, config: ComposeConfig, ctx: Ctx, last: bool, previous: str) -> tuple[Op, Step] | None:
    """A category, then an op in it, whose step fits here; None after a few misses."""
    rank = len(ctx.shape)
    fitting = [op for op in OPS if rank in op.ranks and op.name != previous and (last or not op.terminal)]
    for _ in range(8):
        categories = sorted({op.category for op in fitting})
        if not categories:
            return None
        category = _weighted(rng, {c: config.category_weights.get(c, 1.0) for c in categories})
        in_category = [op for op in fitting if op.category == category]
        op = rng.choices(in_category, weights=[op.weight for op in in_category])[0]
        step = op.apply(ctx)
        if step is not None and (last or len(step.out) >= 2):
            return op, step
        fitting.remove(op)  # does not fit this shape: try another
    return None


def _candidate(seed: int, index: int, dtype: str, start: Shape, constants: dict[str, tuple[int, int]],
               steps: list[Step], ops: list[Op], out: Shape) -> Candidate:
    x = InputSpec("x", start)
    inputs = [x] + [spec for s in steps for spec in s.inputs]
    itemsize = DTYPE_SIZES[dtype]
    input_bytes = sum(numel(i.shape) * (8 if i.kind == "classes" else itemsize) for i in inputs)
    params = sum(s.params for s in steps)
    est_ms = sum(
        1e3 * max(s.flops / (_PEAK_FLOPS[dtype] if op.category in _HEAVY else _VECTOR_FLOPS), s.bytes / _BANDWIDTH)
        + _LAUNCH_MS for s, op in zip(steps, ops, strict=True))
    return Candidate(
        seed=seed, index=index, source=_render(seed, index, dtype, constants, steps, inputs),
        ops=[op.name for op in ops], categories=[op.category for op in ops], dtype=dtype,
        input_shapes=[[d.full for d in i.shape] for i in inputs], output_shape=[d.full for d in out],
        flops=float(sum(s.flops for s in steps)), bytes_eager=float(sum(s.bytes for s in steps)),
        bytes_min=float(input_bytes + params * itemsize + numel(out) * itemsize), params=float(params),
        footprint_bytes=float(input_bytes + params * itemsize + max((s.bytes for s in steps), default=0)),
        est_ms=est_ms, steps=list(steps), start=start)


def _render(seed: int, index: int, dtype: str, constants: dict[str, tuple[int, int]], steps: list[Step],
            inputs: list[InputSpec]) -> str:
    """The task source, in the layout of our hand-written tasks under data/tasks/."""
    chain = " -> ".join(s.op for s in steps)
    init = [line for s in steps for line in s.init]
    init_args = [name for name in constants if any(re.search(rf"\b{name}\b", line) for line in init)]
    if init and dtype != "float32":
        init.append(f"self.to(torch.{dtype})")
    body = [f"        {line}" for line in ["super().__init__()", *init]]
    forward = [f"        {line}" for s in steps for line in s.forward]
    lines = [
        f'"""Generated task: {chain} ({dtype}). kernelgym.taskgen seed {seed}, index {index}."""',
        "import torch", "import torch.nn as nn", "import torch.nn.functional as F", "", "",
        "class Model(nn.Module):", f'    """{chain}"""', "",
        f"    def __init__({', '.join(['self', *init_args])}):", *body, "",
        f"    def forward({', '.join(['self'] + [i.name for i in inputs])}):", *forward, "        return x", "", "",
        *(f"{name} = {full}" for name, (full, _) in constants.items()), "",
        "# Sizes used when the task runs small (CPU / Triton interpreter).",
        f"KERNELGYM_SMALL = {{{', '.join(f'{name!r}: {small}' for name, (_, small) in constants.items())}}}"
        .replace("'", '"'), "", "",
        "def get_inputs():", *(f"    {i.name} = {_input_expr(i, dtype)}" for i in inputs),
        f"    return [{', '.join(i.name for i in inputs)}]", "", "",
        "def get_init_inputs():", f"    return [{', '.join(init_args)}]",
    ]
    return "\n".join(lines) + "\n"


def _input_expr(spec: InputSpec, dtype: str) -> str:
    dt = "" if dtype == "float32" else f", dtype=torch.{dtype}"
    dims = shape_args(spec.shape)
    if spec.kind == "classes":
        return f"torch.randint(0, {spec.high}, ({dims},))"
    if spec.kind == "rand":
        return f"torch.rand({dims}{dt})"
    if spec.kind == "simplex":
        return f"torch.softmax(torch.randn({dims}), dim=-1){'' if not dt else f'.to(torch.{dtype})'}"
    return f"torch.randn({dims}{dt})"


def estimate_within(candidate: Candidate, min_ms: float, max_ms: float, max_footprint_bytes: float) -> str:
    """Empty when the candidate's estimated eager time and memory fit; else why not."""
    if not (min_ms <= candidate.est_ms <= max_ms):
        return f"estimated eager time {candidate.est_ms:.4f} ms outside [{min_ms}, {max_ms}] ms"
    if candidate.footprint_bytes > max_footprint_bytes:
        return (f"estimated footprint {candidate.footprint_bytes / 2**30:.2f} GiB "
                f"over {max_footprint_bytes / 2**30:.2f} GiB")
    return ""

