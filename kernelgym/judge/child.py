"""The untrusted side: imports and runs one candidate, answers the parent's requests.

Started by `sandbox.CandidateProcess` as `python -m kernelgym.judge.child IN_FD OUT_FD MEM AREA_FD [DEVICE]`
in its own process group, private scratch dir and Triton cache. It never sees expected outputs or future
seeds: the parent sends each trial's inputs when it runs and compares the outputs itself. Checks
made here (output types, aliasing, mutation, launches, threads) are cheap early rejects; the
verdict is always the parent's.
"""

from __future__ import annotations

import resource
import sys


def _limit_resources(cpu_memory_bytes: int | None) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))  # files it writes, not stdout pipes
    if cpu_memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (cpu_memory_bytes, cpu_memory_bytes))


def main(argv: list[str] | None = None) -> None:
    """`argv`: IN_FD OUT_FD [MEM [AREA_FD [DEVICE]]] (default: the command line's; the fork server passes its own)."""
    args = sys.argv[1:] if argv is None else argv
    in_fd, out_fd = int(args[0]), int(args[1])
    mem = int(args[2]) if len(args) > 2 else 0
    area_fd = int(args[3]) if len(args) > 3 else -1  # the parent's sealed output area (-1: none)
    warm_device = args[4] if len(args) > 4 else ""  # given only to warm-pool processes
    _limit_resources(mem or None)
    # Heavy imports happen here, before the candidate exists, so they cannot be tampered with first.
    import torch  # noqa: F401
    import triton  # noqa: F401

    from kernelgym.judge import profiling, protocol, timing

    # Bound before the candidate exists: patching the module attributes later changes nothing here.
    send, recv = protocol.send, protocol.recv
    _TRUSTED.update(time_calls=timing.time_calls, profile_kernels=profiling.profile_kernels)
    area = None
    if area_fd >= 0:
        import os

        os.set_inheritable(area_fd, False)  # processes the answer starts do not get it
        area = protocol.OutputArea.attach(area_fd)
    if warm_device:
        _warm_up(warm_device)
        send(out_fd, {"op": "ready"})
    session = _Session()
    while True:
        try:
            msg = recv(in_fd, max_bytes=1 << 40)
        except protocol.ChannelClosed:
            return
        op = msg.get("op")
        if op == "exit":
            return
        handler = getattr(session, f"op_{op}", None)
        if handler is None:
            reply = {"error": f"unknown op {op!r}", "kind": "crashed", "fault": "protocol_violation"}
        else:
            try:
                reply = handler(msg)
            except BaseException as e:  # noqa: BLE001 - e.g. CUDA OOM while regenerating inputs: a verdict, not a death
                reply = session._error(e, phase=str(op))
        try:
            send(out_fd, reply, area)
        except BaseException as e:  # noqa: BLE001 - copying outputs out failed (e.g. a late illegal address)
            send(out_fd, session._error(e, phase=str(op)))


_TRUSTED: dict = {}  # harness functions captured before the answer is imported


def _warm_up(device: str) -> None:
    """A warm-pool process pays its start-up before it is handed out: only trusted work here, and
    nothing that `op_load` snapshots (settings, harness) is taken yet, so it is taken after any
    wait, right before the answer is imported, exactly as in a fresh process."""
    import gc  # noqa: F401
    import importlib.util  # noqa: F401
    import inspect  # noqa: F401

    import torch

    from kernelgym.judge import errors, inputs, launch_hook  # noqa: F401
    from kernelgym.tasks import task  # noqa: F401

    if device == "cpu":
        return
    if ":" in device:
        torch.cuda.set_device(device)  # so kernels launched on the "current" device land on this one
    torch.cuda.init()
    torch.zeros(1, device=device)  # the CUDA context
    _warm_profiler()  # CUPTI's start-up: ~4 s on an H100, the slowest part of a warm start
    from kernelgym.judge.triton_warmup import warm_triton

    warm_triton(device)


class _Session:
    MODULE_NAME = "kernelgym_candidate"

    def __init__(self) -> None:
        self.model = None
        self.device = "cpu"
        self.code_path = ""
        self.recorder = None
        self.timing_sets: list = []
        self.timed_outputs: list = []
        self.trial_inputs: dict[int, list] = {}
        self.settings: dict[str, object] = {}
        self.harness: dict[str, tuple[int, int]] = {}
        self.get_task_inputs = None

    # -- load: import the candidate and build ModelNew(*init_inputs) under the shared seed ------
    def op_load(self, msg: dict) -> dict:
        import gc
        import importlib.util
        import threading
        import inspect

        import torch

        from kernelgym.judge.launch_hook import LaunchRecorder

        self.device = msg["device"]
        self.code_path = msg["code_path"]
        if self.device.startswith("cuda:"):
            # Triton launches on the current device: without this an answer judged on cuda:1 would
            # run its kernels on cuda:0 (warm processes already did this in `_warm_up`).
            torch.cuda.set_device(self.device)
        from kernelgym.tasks.task import Task, inputs_only_source

        # The task module is built before the candidate is imported; only its input functions are kept.
        source = inputs_only_source(msg["task_source"])
        self.get_task_inputs = _InputSource(Task(task_id="task", source=source).load_module(msg["task_size"]), self.device)
        gc.collect()
        self.recorder = LaunchRecorder(self.MODULE_NAME)
        self.recorder.install()
        self.settings = global_settings()
        self.harness = harness_snapshot()
        threads_before = threading.active_count()
        try:
            spec = importlib.util.spec_from_file_location(self.MODULE_NAME, self.code_path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[self.MODULE_NAME] = module
            spec.loader.exec_module(module)
        except BaseException as e:  # noqa: BLE001 - any failure of untrusted import is reported, not raised
            return self._error(e, phase="import")
        cls = getattr(module, "ModelNew", None)
        if cls is None or not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
            return {"error": "ModelNew must be a class derived from torch.nn.Module", "kind": "invalid_answer"}
        init_inputs = msg["init_inputs"]
        try:
            inspect.signature(cls).bind(*init_inputs)
        except TypeError as e:
            return {"error": f"ModelNew{_sig(cls)} cannot take the task's init inputs {_describe(init_inputs)}: {e}",
                    "kind": "invalid_answer"}
        except ValueError:
            pass  # signature not introspectable; construction below will tell
        try:
            torch.manual_seed(msg["init_seed"])
            self.model = cls(*init_inputs).to(self.device)
        except BaseException as e:  # noqa: BLE001
            return self._error(e, phase="init")
        try:
            inspect.signature(self.model.forward).bind(*([None] * msg["num_inputs"]))
        except TypeError as e:
            return {"error": f"ModelNew.forward{_sig(self.model.forward)} cannot take the task's "
                             f"{msg['num_inputs']} input(s): {e}", "kind": "invalid_answer"}
        except ValueError:
            pass
        self.recorder.take()
        if self.device != "cpu":
            _warm_profiler()  # CUPTI start-up takes seconds: pay it here, not under the timing lock
        return {"ok": True, "settings_changed": self._settings_changed(), "harness_changed": self._harness_changed(),
                "thread_delta": threading.active_count() - threads_before}

    # -- trial: one correctness run on inputs the parent just revealed -------------------------
    def op_trial(self, msg: dict) -> dict:
        import threading

        import torch

        from kernelgym.judge.inputs import digest, swap_probe

        generated = self.get_task_inputs(msg["seed"], msg["distribution"])
        if msg.get("probe_seed") is not None:
            generated = swap_probe(generated, msg["probe_seed"])
        inputs_digest = digest(generated)
        kept = self.trial_inputs.get(msg.get("probe_of", -1))
        if kept is not None:
            # The probe writes its values into the very tensors trial 0 used: same objects, same
            # addresses, so caches keyed on id() or data_ptr() are probed too.
            for dst, src in zip(kept, generated):
                if isinstance(dst, torch.Tensor):
                    dst.copy_(src)
            inputs = [src if not isinstance(dst, torch.Tensor) else dst for dst, src in zip(kept, generated)]
        else:
            inputs = [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in generated]
        if msg["index"] == 0:
            self.trial_inputs = {0: inputs}
        before = [_fingerprint(v) for v in inputs]
        threads_before = threading.active_count()
        _poison(self.device, msg.get("poison_bytes", 0))
        self.recorder.ghost = bool(msg.get("ghost"))
        try:
            with torch.set_grad_enabled(msg["grad"]):
                out = self.model(*inputs)
            if self.device != "cpu":
                torch.cuda.synchronize()
        except BaseException as e:  # noqa: BLE001
            return self._error(e, phase="forward")
        finally:
            self.recorder.ghost = False
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        bad_types = [type(o).__name__ for o in outs if isinstance(o, torch.Tensor) and type(o) is not torch.Tensor]
        bad_types += [f"Tensor with instance attributes {sorted(vars(o))[:3]}" for o in outs
                      if type(o) is torch.Tensor and vars(o)]  # e.g. out.detach = lazy_fn (RH-19)
        aliased = any(_overlaps(o, i) for o in outs for i in inputs)
        mutated = [_fingerprint(v) for v in inputs] != before
        reply = {
            "inputs_digest": inputs_digest,
            "bad_types": bad_types,
            "aliased": aliased,
            "mutated": mutated,
            "thread_delta": threading.active_count() - threads_before,
            "settings_changed": self._settings_changed(),
            "harness_changed": self._harness_changed(),
            "launches": self.recorder.take(),
            "is_sequence": isinstance(out, (tuple, list)),
        }
        # Tensors stay where they are: `send` copies them into the output area (or the pipe), and
        # a fault surfacing on that copy becomes this op's error reply.
        reply["outputs"] = [
            torch.Tensor.detach(o) if type(o) is torch.Tensor and not vars(o) else (o if _plain(o) else repr(o)[:200])
            for o in outs
        ]
        return reply

    # -- time / profile: GPU only ------------------------------------------------------------------
    def op_timing_inputs(self, msg: dict) -> dict:
        """Generate the timing sets from seeds revealed now (before the timing lock is taken)."""
        import torch

        from kernelgym.judge.inputs import digest

        generated_sets = [self.get_task_inputs(seed, dist) for seed, dist in msg["sets"]]
        digests = [digest(s) for s in generated_sets]
        self.timing_sets = [[v.to(self.device) if isinstance(v, torch.Tensor) else v for v in s] for s in generated_sets]
        return {"inputs_digests": digests}

    def op_time(self, msg: dict) -> dict:
        sets = self.timing_sets  # the profile reuses them: no second transfer
        try:
            times, wall, self.timed_outputs = _TRUSTED["time_calls"](self.model, sets, msg["warmup"], msg["reps"],
                                                                     msg["flush_bytes"], msg.get("budget_s", 0.0))
        except BaseException as e:  # noqa: BLE001
            return self._error(e, phase="timing")
        return {"times_ms": times, "wall_ms": wall, "launches": self.recorder.take(),
                "harness_changed": self._harness_changed()}

    def op_timed_outputs(self, msg: dict) -> dict:
        """Outputs of the last timed call per input set, fetched after the timing lock is released."""
        import torch

        return {"outputs": [[torch.Tensor.detach(o) if type(o) is torch.Tensor and not vars(o) else repr(o)[:200]
                             for o in (out if isinstance(out, (tuple, list)) else [out])]
                            for out in self.timed_outputs]}

    def op_profile(self, msg: dict) -> dict:
        sets = self.timing_sets
        try:
            return {"kernels": _TRUSTED["profile_kernels"](self.model, sets, msg["reps"])}
        except BaseException as e:  # noqa: BLE001
            return self._error(e, phase="profile")

    def _harness_changed(self) -> list[str]:
        now = harness_snapshot()
        return sorted(k for k in self.harness if now.get(k) != self.harness[k])

    def _settings_changed(self) -> list[str]:
        now = global_settings()
        return sorted(k for k in self.settings if now.get(k) != self.settings[k])

    def _error(self, e: BaseException, phase: str) -> dict:
        from kernelgym.judge.errors import classify_exception, trim_traceback

        kind, fault = classify_exception(e, phase)
        return {"error": trim_traceback(e, self.code_path), "kind": kind, "fault": fault, "phase": phase}


class _InputSource:
    """The task's `get_inputs` with its module constants, without the reference `Model`."""

    def __init__(self, module, device: str) -> None:  # noqa: ANN001
        import types

        self._module = types.SimpleNamespace(get_inputs=module.get_inputs)
        self._device = device
        module.__dict__.pop("Model", None)

    def __call__(self, seed: int, distribution: str) -> list:
        from kernelgym.judge.inputs import make_inputs

        return make_inputs(self._module, seed, distribution, self._device)


_HARNESS = (
    ("kernelgym.judge.timing", ("time_calls", "gpu_lock", "timing_lock", "_gpu_sleep", "varied_copy", "clone_values")),
    ("kernelgym.judge.profiling", ("profile_kernels",)),
    ("kernelgym.judge.protocol", ("send", "recv")),
    ("kernelgym.judge.inputs", ("make_inputs", "digest", "varied_copy", "clone_values", "swap_probe")),
    ("kernelgym.judge.launch_hook", ("LaunchRecorder",)),
    ("kernelgym.judge.child", ("_Session", "_InputSource", "_poison", "_fingerprint", "_overlaps")),
    ("time", ("perf_counter",)),
    ("triton.runtime.jit", ("JITFunction",)),
)


def harness_snapshot() -> dict[str, tuple[int, int]]:
    """Identity of the functions the child's own measurements and reports rely on (RH-20, RH-25):
    the object and its code (or, for classes, their method table) must not change after the
    answer is imported. An early reject only: the parent never trusts the child's numbers alone.
    torch's own functions are left out: torch rebinds some lazily on first CUDA use, and RNG
    patches are caught by the input digests anyway."""
    import importlib

    snap = {}
    for mod_name, names in _HARNESS:
        mod = importlib.import_module(mod_name)
        for name in names:
            obj = getattr(mod, name, None)
            if isinstance(obj, type):
                inner = hash(tuple(sorted((k, id(v)) for k, v in vars(obj).items())))
            else:
                inner = id(getattr(obj, "__code__", None))
            snap[f"{mod_name}.{name}"] = (id(obj), inner)
    for cls_name, cls_path in (("Event", "torch.cuda"),):
        cls = getattr(importlib.import_module(cls_path), cls_name)
        for meth in ("record", "elapsed_time", "synchronize"):
            snap[f"{cls_path}.{cls_name}.{meth}"] = (id(getattr(cls, meth, None)), 0)
    return snap


def global_settings() -> dict[str, object]:
    """Process-wide torch settings an answer could flip to downcast precision (RH-14) or to slow a
    baseline timed beside it (RH-24). Snapshotted before the answer is imported."""
    import torch

    b = torch.backends
    settings = {name: _read_setting(path) for name, path in _NEW_PRECISION_API.items()}
    try:
        settings.update(_legacy_settings(torch, b))
    except RuntimeError as e:  # torch refuses legacy reads once the new fp32_precision API was written
        settings["legacy_precision_api"] = f"unreadable: {e}"[:80]
    return settings


_NEW_PRECISION_API = {
    "fp32_precision": "torch.backends.fp32_precision",
    "cuda.matmul.fp32_precision": "torch.backends.cuda.matmul.fp32_precision",
    "cudnn.fp32_precision": "torch.backends.cudnn.fp32_precision",
    "cudnn.conv.fp32_precision": "torch.backends.cudnn.conv.fp32_precision",
    "cudnn.rnn.fp32_precision": "torch.backends.cudnn.rnn.fp32_precision",
    "mkldnn.fp32_precision": "torch.backends.mkldnn.fp32_precision",
}


def _read_setting(path: str) -> object:
    import torch

    obj: object = torch
    try:
        for part in path.split(".")[1:]:
            obj = getattr(obj, part)
    except Exception:  # noqa: BLE001 - absent on this torch version
        return None
    return obj


def _legacy_settings(torch, b) -> dict[str, object]:  # noqa: ANN001
    return {
        "cuda.matmul.allow_tf32": b.cuda.matmul.allow_tf32,
        "cudnn.allow_tf32": b.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cuda.matmul.allow_fp16_reduced_precision_reduction": b.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "cuda.matmul.allow_bf16_reduced_precision_reduction": b.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "cudnn.benchmark": b.cudnn.benchmark,
        "cudnn.deterministic": b.cudnn.deterministic,
        "cudnn.enabled": b.cudnn.enabled,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "num_threads": torch.get_num_threads(),
        "flush_denormal": _flush_denormal_state(),
        "default_dtype": str(torch.get_default_dtype()),
    }


def _flush_denormal_state() -> bool:
    import torch

    tiny = torch.tensor([1e-40], dtype=torch.float32)  # a float32 denormal: 0 when flushed
    return bool((tiny * 1.0).item() == 0.0)


def _warm_profiler() -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]):
        torch.zeros(1, device="cuda").add_(1)
        torch.cuda.synchronize()


def _sig(obj) -> str:  # noqa: ANN001
    import inspect

    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _describe(values: list) -> str:
    import torch

    parts = [f"Tensor{tuple(v.shape)}" if isinstance(v, torch.Tensor) else repr(v)[:40] for v in values]
    return "(" + ", ".join(parts) + ")"


def _plain(o) -> bool:  # noqa: ANN001
    return o is None or isinstance(o, (bool, int, float, str))


def _fingerprint(v):  # noqa: ANN001, ANN202
    import torch

    if not isinstance(v, torch.Tensor):
        return repr(v)
    t, ptr = v.detach(), v.data_ptr()
    if t.is_floating_point():
        t = t.double()
        return (tuple(t.shape), ptr, float(t.nan_to_num().sum()), float(t.nan_to_num().abs().sum()),
                float((t.nan_to_num() * torch.arange(t.numel(), device=t.device).view(t.shape).remainder(7)).sum()))
    return (tuple(t.shape), ptr, int(t.long().sum()), int((t.long() * 31 + 7).remainder(1000003).sum()))


def _overlaps(a, b) -> bool:  # noqa: ANN001
    import torch

    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.device != b.device:
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    a0, b0 = sa.data_ptr(), sb.data_ptr()
    return a0 < b0 + sb.nbytes() and b0 < a0 + sa.nbytes() and sa.nbytes() > 0 and sb.nbytes() > 0


def _poison(device: str, nbytes: int) -> None:
    """Leave NaN in freed memory the size of the expected output, so stale-memory answers fail (RH-07)."""
    import torch

    if nbytes <= 0:
        return
    p = torch.empty(nbytes // 4 + 1, dtype=torch.float32, device=device)
    p.fill_(float("nan"))
    del p


if __name__ == "__main__":
    main()
