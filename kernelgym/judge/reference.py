"""The trusted side of an evaluation: the reference model, expected outputs and reference timings.

Runs in the judge's own process, where no candidate code is ever imported. Reference timings are
cached per (task source, size, GPU model, torch/triton versions, timing settings), in memory and
on disk (`timing_cache_dir`), so a restarted worker does not time the same references again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from kernelgym.judge.compare import expected_is_finite
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.inputs import SEEDED_RNG_LOCK, draw_order, make_init_inputs, make_inputs, to_device
from kernelgym.judge.precision import attach_bounds, float64_model, op_names_of
from kernelgym.judge.result import RuntimeStats
from kernelgym.judge.timing import gpu_lock, time_calls, timing_lock
from kernelgym.judge.versions import software_versions
from kernelgym.tasks.task import Task, TaskError

log = logging.getLogger(__name__)

_TIMING_CACHE: dict[tuple, tuple[RuntimeStats | None, RuntimeStats | None, str]] = {}
_TIMING_CACHE_LOCK = threading.Lock()
_FILL_LOCKS: dict[tuple, threading.Lock] = {}  # per key: one thread measures, the others wait for it
_COMPILE_LOCK = threading.Lock()  # dynamo is not thread-safe; judges may run in threads
# Beyond this many bytes of float64 input copies a trial keeps the flat tolerance (memory on a GPU
# shared by several judges; KernelBench's largest level-1 inputs are 64M elements, 0.5 GiB each).
FLOAT64_BUDGET_BYTES = 4 << 30


def _reraise_oom(e: Exception) -> None:
    """The reference's device memory ran out: raised as itself, not as a broken task. Evaluations in flight
    share the GPU, so this is most likely a neighbour's doing, and `batch.judge_one` judges an OOM again with
    the device to itself; as a TaskError it became a `runtime_error` verdict on a correct answer (the
    twenty-first session's gate run on the H200: `scale_bias_sigmoid`'s reference beside 15 others)."""
    if isinstance(e, torch.OutOfMemoryError):
        raise e


@dataclass
class ReferenceTimes:
    eager: RuntimeStats | None
    compiled: RuntimeStats | None
    note: str


def _use_ieee_fp32() -> None:
    """fp32 references compute in IEEE fp32. cuDNN convolutions default to TF32 in PyTorch, which
    is ~1e-3 off and would both fail honest fp32 kernels at 1e-4 and hand the baseline a precision
    discount that answers may not take (RH-14). This judge process never runs candidate code."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


class Reference:
    """The task's `Model`, built with the same init seed the candidate's `ModelNew` gets."""

    def __init__(self, task: Task, size: str, device: str, init_seed: int,
                 overrides: dict[str, object] | None = None) -> None:
        """`overrides`: a hidden variant's constants (RH-15, RH-16), applied after the size's."""
        self.task, self.size, self.device = task, size, device
        self.overrides = dict(overrides or {})
        self.module = task.load_module(size, self.overrides)
        self.init_seed = init_seed
        self._model64: torch.nn.Module | bool | None = None  # built on the first precise draw; False: cannot
        self.matmul_like: bool | None = None  # the last precise draw's precision class (`judge.precision`)
        self.op_names: set[str] = set()  # aten ops the float64 reference ran (base names), every precise draw
        _use_ieee_fp32()
        try:
            self.init_inputs = make_init_inputs(self.module, init_seed)
            with SEEDED_RNG_LOCK:
                torch.manual_seed(init_seed)
                self.model = self.module.Model(*self.init_inputs)
            # Built on the host without the GPU's shared side (module exec, weight init: seconds of
            # CPU under load, which held every queued measurement up); only the move runs on the GPU.
            with gpu_lock(device, exclusive=False):
                self.model = self.model.to(device)
        except Exception as e:
            _reraise_oom(e)
            raise TaskError(f"task {task.task_id}: building Model failed: {type(e).__name__}: {e}") from None

    def num_inputs(self) -> int:
        """How many positional inputs forward takes (for the candidate's signature check)."""
        return len(self.inputs(0, "task"))

    def inputs(self, seed: int, distribution: str) -> list[Any]:
        """One trial's inputs, generated on the judge's device; the child regenerates the same
        ones from the seed once it is revealed, and proves it by their digest."""
        try:
            with gpu_lock(self.device, exclusive=False):  # kernels of ours: never beside a measurement
                return make_inputs(self.module, seed, distribution, self.device)
        except Exception as e:
            _reraise_oom(e)
            raise TaskError(f"task {self.task.task_id}: get_inputs() failed: {type(e).__name__}: {e}") from None

    def draw(self, distribution: str, next_seed: Callable[[], int]) -> tuple[str, int, list[Any], Any]:
        """(draw, seed, inputs, expected) for one trial of `distribution`: the first of its
        `draw_order` whose reference output is finite and which the reference can run at all (a
        task may raise on values it never expects, such as negative probabilities); the task's
        own inputs last, whatever they give. `next_seed` gives each try a fresh secret seed."""
        if distribution == "huge" and self.matmul_like and self.device != "cpu":
            # TF32 (the GPU's default for tl.dot, accepted on these tasks) errs by 2^-11 of each product:
            # at 2^17-scale inputs an honest attention's softmax flips between near-equal scores (seen on
            # an H100). Values far below fp16's normal range expose a float16 downcast instead (TF32 keeps
            # fp32's exponent range; fp16 keeps a few bits of them or none). The CPU keeps `huge`: tl.dot is
            # exact there.
            distribution = "tiny"
        order = draw_order(distribution)
        for i, name in enumerate(order):
            seed = next_seed()
            last = i == len(order) - 1
            try:
                inputs = self.inputs(seed, name)
                if name.split("+")[0] in ("offset", "huge", "tiny") and not last and any(
                        isinstance(v, torch.Tensor) and v.is_floating_point() and v.dtype != torch.float32
                        for v in inputs):
                    continue  # these draws expose downcasts of float32 work; a float16 task errs there by itself
                expected = self.expected(inputs, precise=True)
            except TaskError:
                if last:
                    raise
                continue
            if last or expected_is_finite(expected):
                return name, seed, inputs, expected
        raise AssertionError("draw_order ends with the task's inputs")  # pragma: no cover

    def expected(self, inputs: list[Any], precise: bool = False) -> Any:
        """Reference outputs, left on the reference's device so comparisons run there too.
        `precise` (a correctness trial's): float32 outputs also get the bound an fp32 computation
        can err by, from the model run in float64 (`judge.precision`); without it they are
        compared by the flat dtype tolerance."""
        try:
            with torch.no_grad(), gpu_lock(self.device, exclusive=False):
                moved = to_device(inputs, self.device)
                if self.op_names:
                    out = self.model(*moved)
                else:  # once: which aten ops the task runs (RH-03 asks whether it only moves data)
                    with op_names_of() as names:
                        out = self.model(*moved)
                    self.op_names |= names
        except Exception as e:
            _reraise_oom(e)
            raise TaskError(f"task {self.task.task_id}: Model.forward failed: {type(e).__name__}: {e}") from None
        if isinstance(out, (tuple, list)):
            out = [o.detach() if isinstance(o, torch.Tensor) else o for o in out]
        elif isinstance(out, torch.Tensor):
            out = out.detach()
        if precise and _float64_bytes(moved) <= FLOAT64_BUDGET_BYTES:
            if self._model64 is None:
                self._model64 = float64_model(self.model) or False
            with gpu_lock(self.device, exclusive=False):
                self.matmul_like = attach_bounds(self._model64 or None, moved, out)
        return out

    def times(self, input_sets: list[list[Any]], config: JudgeConfig) -> ReferenceTimes:
        """Eager and torch.compile timings of the reference, from the cache when possible."""
        key = (
            hashlib.sha256(self.task.source.encode()).hexdigest(),
            self.size,
            torch.cuda.get_device_name(self.device),
            tuple(sorted(software_versions().items())),
            config.timing_warmup,
            config.timing_reps,
            config.timing_budget_s,
            config.l2_flush_bytes,
            config.time_compile_baseline,
            # 2: timed on the reference's own GPU. Entries written before by a worker on GPU 1-7 hold ~2.9 us
            # whatever the task (the empty interval of GPU 0's events) and are never read again.
            "timing-2",
        )
        with _TIMING_CACHE_LOCK:
            cached = _TIMING_CACHE.get(key)
            fill = _FILL_LOCKS.setdefault(key, threading.Lock())
        if cached is None:
            # One measurement per key: the judges in flight that miss together wait for the first
            # one's. Without this, the first answers to a task each timed its reference under the
            # exclusive lock (20 redundant 2 s measurements in one 40-answer run on the H100).
            with fill:
                with _TIMING_CACHE_LOCK:
                    cached = _TIMING_CACHE.get(key)
                if cached is None:
                    cached = _load_times(key)
                    if cached is None:
                        cached = self._measure(input_sets, config)
                        _store_times(key, cached)
                    with _TIMING_CACHE_LOCK:
                        _TIMING_CACHE[key] = cached
        return ReferenceTimes(*cached)

    def _measure(self, input_sets: list[list[Any]], config: JudgeConfig) -> tuple:
        sets = [to_device(s, self.device) for s in input_sets]
        note = ""
        compiled_fn = None
        if config.time_compile_baseline:
            try:
                with _COMPILE_LOCK:
                    compiled_fn = torch.compile(self.model)
                    with torch.no_grad():
                        compiled_fn(*sets[0])  # compile outside the timing lock: seconds of CPU work
                    torch.cuda.synchronize(self.device)
            except Exception as e:  # torch.compile failing on a task is a note, not an error
                note = f"torch.compile baseline failed: {type(e).__name__}: {str(e)[:200]}"
                log.warning(note)
                compiled_fn = None
        with timing_lock(self.device):
            eager_ms, _, _ = time_calls(self.model, sets, config.timing_warmup, config.timing_reps, config.l2_flush_bytes,
                                        config.timing_budget_s, device=self.device)
            compiled = None
            if compiled_fn is not None:
                comp_ms, _, _ = time_calls(compiled_fn, sets, config.timing_warmup, config.timing_reps,
                                           config.l2_flush_bytes, config.timing_budget_s, device=self.device)
                compiled = RuntimeStats.from_samples(comp_ms)
        return RuntimeStats.from_samples(eager_ms), compiled, note


def _float64_bytes(values: list[Any]) -> int:
    return sum(8 * v.numel() for v in values if isinstance(v, torch.Tensor) and v.is_floating_point())


def timing_cache_dir() -> Path:
    """Where reference timings persist: `$KERNELGYM_CACHE_DIR/reference_times`, by default
    `~/.cache/kernelgym/reference_times`. One JSON file per cache key, named by the key's hash."""
    root = os.environ.get("KERNELGYM_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "kernelgym")
    return Path(root) / "reference_times"


def _cache_file(key: tuple) -> tuple[Path, list]:
    as_json = json.loads(json.dumps(key))
    digest = hashlib.sha256(json.dumps(as_json, sort_keys=True).encode()).hexdigest()
    return timing_cache_dir() / f"{digest}.json", as_json


def _load_times(key: tuple) -> tuple[RuntimeStats | None, RuntimeStats | None, str] | None:
    """The stored timings for `key`, or None when absent or not a well-formed entry for exactly it.
    Candidates run as the same user, so only deployment (another uid, a read-only mount) keeps them
    from writing here; the checks below reject only malformed entries, not well-forged ones."""
    path, as_json = _cache_file(key)
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        if entry["key"] != as_json:
            return None
        eager, compiled = _stored_stats(entry["eager"]), _stored_stats(entry["compiled"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if eager is None:
        return None
    return eager, compiled, ""


def _stored_stats(d: dict | None) -> RuntimeStats | None:
    if d is None:
        return None
    stats = RuntimeStats(**d)
    values = (stats.min_ms, stats.median_ms, stats.mean_ms, stats.max_ms, stats.std_ms)
    if not (all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in values)
            and isinstance(stats.n, int) and stats.n > 0 and stats.min_ms <= stats.median_ms <= stats.max_ms):
        raise ValueError("implausible stored timing")
    return stats


def _store_times(key: tuple, value: tuple[RuntimeStats | None, RuntimeStats | None, str]) -> None:
    """Persist one measurement. One with a note (the torch.compile baseline failed) is kept in
    memory only: the failure may be passing (e.g. out of memory) and would otherwise stick."""
    eager, compiled, note = value
    if note or eager is None:
        return
    path, as_json = _cache_file(key)
    entry = {"key": as_json, "eager": asdict(eager), "compiled": asdict(compiled) if compiled else None}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed: workers on other GPUs may read or write the same key at once.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as e:  # a cache that cannot be written costs a re-measurement, nothing else
        log.warning("could not store reference timings in %s: %s", path.parent, e)
