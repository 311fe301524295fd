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

    from kernelgym.judge import protocol
    from kernelgym.judge.candidate_env import limit_host_threads

    limit_host_threads()  # before any parallel region: never a pool of one thread per core per process
    from kernelgym.judge.interpreter import make_interpreter_faithful

    make_interpreter_faithful()  # CPU runs judge GPU semantics: autotune, libdevice, driver facts (no-op on a GPU)
    from kernelgym.judge.op_audit import guard_host_reads, pause_triton_entry_points

    pause_triton_entry_points()  # Triton's own tensor work during a launch is not the answer's torch compute
    guard_host_reads()  # printing or listing a tensor reads its values on the host without an aten operator

    # Bound before the candidate exists: patching the module attributes later changes nothing here.
    send, recv = protocol.send, protocol.recv
    bind_trusted()
    area = None
    if area_fd >= 0:
        import os

        os.set_inheritable(area_fd, False)  # processes the answer starts do not get it
        area = protocol.OutputArea.attach(area_fd)
    if warm_device:
        _warm_up(warm_device)
        send(out_fd, {"op": "ready"})
    session = _Session()
    # Bound like `send` itself: a notice goes out on the reply channel before the reply (`op_profile`).
    session.notify = lambda notice: send(out_fd, notice)
    reply: dict = {}
    while True:
        try:
            msg = recv(in_fd, max_bytes=1 << 40)
        except protocol.ChannelClosed:
            return
        if session.sharer is not None:
            session.sharer.release()  # the parent sends a request only once it has copied the last reply
        op = msg.get("op")
        if op == "exit":
            return
        if op == "resend":  # the parent could not open the last reply's device entries: the area from now on
            session.sharer = None
            send(out_fd, reply, area)
            continue
        handler = getattr(session, f"op_{op}", None)
        if handler is None:
            reply = {"error": f"unknown op {op!r}", "kind": "crashed", "fault": "protocol_violation"}
        else:
            try:
                reply = handler(msg)
            except BaseException as e:  # noqa: BLE001 - e.g. CUDA OOM while regenerating inputs: a verdict, not a death
                reply = session._error(e, phase=str(op))
        try:
            send(out_fd, reply, area, session.sharer.share if session.sharer is not None else None)
        except BaseException as e:  # noqa: BLE001 - copying outputs out failed (e.g. a late illegal address)
            reply = session._error(e, phase=str(op))
            send(out_fd, reply)


_TRUSTED: dict = {}  # harness functions captured before the answer is imported


def bind_trusted() -> None:
    """Capture the harness functions the session calls: an answer that rebinds the module
    attributes (reached through `sys.modules`, which the static rules forbid) changes nothing here."""
    from kernelgym.judge import inputs, launch_hook, op_audit, profiling, provenance, spot, timing

    _TRUSTED.update(op_recording=op_audit.recording, forbidden_ops=op_audit.forbidden, time_calls=timing.time_calls,
                    profile_kernels=profiling.profile_kernels, spot_reservoir=spot.SpotReservoir,
                    take=launch_hook.take, record_storages=launch_hook.record_storages,
                    recorded_storages=launch_hook.recorded_storages, marked_copies=provenance.marked_copies,
                    digest=inputs.digest, harness_snapshot=harness_snapshot, ship_outputs=ship_outputs,
                    hold_on_host=hold_on_host, output_type_problems=output_type_problems)


_WARMED: set[str] = set()


def _warm_up(device: str, profiler: bool = False, for_record: bool = True) -> None:
    """A warm-pool process pays its start-up before it is handed out: only trusted work here, and
    nothing that `op_load` snapshots (settings, harness) is taken yet, so it is taken after any
    wait, right before the answer is imported, exactly as in a fresh process. `profiler`: CUPTI's
    start-up too (~4 s on an H100), which only the in-process engine's profile needs: judge v4
    profiles the replay with CUDA events, so warm processes skip it (their start-up was the
    throughput bound: every evaluation uses two of them). `for_record`: also what the recorder's
    first call imports (a warm process does not know yet whether it records or replays)."""
    import gc  # noqa: F401
    import importlib.util  # noqa: F401
    import inspect  # noqa: F401

    import torch

    if for_record:
        # The recorder's first torch call under its dispatch mode imports torch._dynamo (sympy, fx, ...):
        # 1.0-1.4 s on a 2-core CPU, inside every evaluation's record.
        import torch._dynamo  # noqa: F401

    from kernelgym.judge import errors, inputs, launch_hook  # noqa: F401
    from kernelgym.tasks import task  # noqa: F401

    if device == "cpu":
        return
    if device not in _WARMED:
        _WARMED.add(device)
        from kernelgym.judge.cuda_sync import ordinal_of, use_blocking_sync

        ordinal = ordinal_of(device)
        if ordinal is not None:  # before the context exists: this process's waits sleep instead of spinning
            use_blocking_sync(ordinal)
        if ":" in device:
            torch.cuda.set_device(device)  # so kernels launched on the "current" device land on this one
        torch.cuda.init()
        torch.zeros(1, device=device)  # the CUDA context
        from kernelgym.judge.triton_warmup import warm_triton

        warm_triton(device)
    if profiler:
        _warm_profiler()


from kernelgym.judge.replay_session import RecordOps, ReplayOps, with_role  # noqa: E402


class _Session(RecordOps, ReplayOps):
    MODULE_NAME = "kernelgym_candidate"

    def __init__(self) -> None:
        self.notify = lambda notice: None  # main() binds it to the reply channel
        self.model = None
        self.model_cls = None
        self.variant_model = None
        self.device = "cpu"
        self.code_path = ""
        self.num_inputs = 0
        self.timing_sets: list = []
        self.timed_outputs: list = []
        self.spot_outputs: dict[int, object] = {}
        self.trial_inputs: dict[int, list] = {}
        self.settings: dict[str, object] = {}
        self.harness: dict[str, tuple[int, int]] = {}
        self.hooks_baseline: tuple = ()
        self.get_task_inputs = None
        with_role(self, input_source=_input_source, ship_outputs=ship_outputs, host_copy=host_copy, warm_up=_warm_up)
        self.get_variant_inputs = None

    # -- load: build the input source, import the candidate -------------------------------------
    def op_load(self, msg: dict) -> dict:
        """Import the answer. The message holds only the task's inputs-only source (stripped in the
        parent), and it is consumed before the import: nothing of it stays reachable. The init seed
        is not here at all: it comes with `build`, after the answer's import-time code has run."""
        import importlib.util
        import threading

        import torch

        from kernelgym.judge import launch_hook
        from kernelgym.judge.confine import confine_candidate

        if self.role:
            return {"error": "load in a replay process", "kind": "crashed", "fault": "protocol_violation"}
        self.role = "answer"
        engine = self.engine = msg.pop("engine", "inprocess")
        self.device = msg.pop("device")
        self.code_path = msg.pop("code_path")
        self.num_inputs = msg.pop("num_inputs")
        if self.device.startswith("cuda:"):
            # Triton launches on the current device: without this an answer judged on cuda:1 would
            # run its kernels on cuda:0 (warm processes already did this in `_warm_up`).
            torch.cuda.set_device(self.device)
        self.get_task_inputs = _input_source(msg, self.device)
        legacy_build = msg.pop("init_inputs", None), msg.pop("init_seed", None)
        if engine == "replay":
            from kernelgym.judge import recorder

            recorder.install()
        else:
            launch_hook.install(self.MODULE_NAME)
        self.settings = global_settings()
        self.harness = _TRUSTED["harness_snapshot"]()
        self.hooks_baseline = _hooks_now()
        threads_before = threading.active_count()
        # CUDA's context, Triton's driver and launcher, and CUPTI do not start once confined
        # (cudaGetDeviceCount fails under the seccomp/landlock layers): start them while trusted.
        # (On the CPU: the imports only.)
        _warm_up(self.device, profiler=engine != "replay")
        # The OS confinement (own uid, no network, writes only in the scratch dir), where the machine allows it.
        self.code_path, confinement = confine_candidate(self.code_path, self.device)
        confined = {"confinement": confinement.as_reply()}
        try:
            spec = importlib.util.spec_from_file_location(self.MODULE_NAME, self.code_path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[self.MODULE_NAME] = module
            spec.loader.exec_module(module)
        except BaseException as e:  # noqa: BLE001 - any failure of untrusted import is reported, not raised
            return self._error(e, phase="import") | confined
        cls = module.__dict__.get("ModelNew")
        if cls is None or not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
            return {"error": "ModelNew must be a class derived from torch.nn.Module", "kind": "invalid_answer"} | confined
        self.model_cls = cls
        reply = {"ok": True, "thread_delta": threading.active_count() - threads_before} | confined
        if legacy_build[0] is not None:  # a load message that carries the build (tests of the sandbox)
            built = self.op_build({"init_inputs": legacy_build[0], "init_seed": legacy_build[1]})
            if "error" in built:
                return built
        return reply | self._integrity()

    # -- build: ModelNew(*init_inputs) under the shared seed; `variant` builds the hidden variant's --
    def op_build(self, msg: dict) -> dict:
        import inspect

        import torch

        from kernelgym.judge import launch_hook

        hooked = self._hooked()
        if hooked:
            return {"hooked": hooked}
        variant = bool(msg.pop("variant", False))
        if variant:
            # The variant's inputs-only source arrives only now, right before its trial.
            self.get_variant_inputs = _input_source(msg, self.device)
        cls, init_inputs = self.model_cls, msg.pop("init_inputs")
        try:
            inspect.signature(cls).bind(*init_inputs)
        except TypeError as e:
            return {"error": f"ModelNew{_sig(cls)} cannot take the task's init inputs {_describe(init_inputs)}: {e}",
                    "kind": "invalid_answer"}
        except ValueError:
            pass  # signature not introspectable; construction below will tell
        try:
            torch.manual_seed(msg.pop("init_seed"))  # consumed here, kept nowhere
            model = cls(*init_inputs)
            torch.manual_seed(_fresh_seed())  # torch.initial_seed() no longer tells the init seed
            hooked = self._hooked()
            if hooked:
                return {"hooked": hooked}
            model = torch.nn.Module.to(model, self.device)  # the answer's own `.to` is never called
        except BaseException as e:  # noqa: BLE001
            return self._error(e, phase="init")
        try:
            inspect.signature(model.forward).bind(*([None] * self.num_inputs))
        except TypeError as e:
            return {"error": f"ModelNew.forward{_sig(model.forward)} cannot take the task's "
                             f"{self.num_inputs} input(s): {e}", "kind": "invalid_answer"}
        except ValueError:
            pass
        if variant:
            self.variant_model = model
        else:
            self.model = model
        _TRUSTED["take"]()
        if self.device != "cpu" and not variant and self.engine != "replay":
            _warm_profiler()  # CUPTI start-up takes seconds: pay it here (once), not under the timing lock
        return {"ok": True} | self._integrity()

    # -- trial: one correctness run on inputs the parent just revealed -------------------------
    def op_trial(self, msg: dict) -> dict:
        """Run forward once, then ship what the parent needs to judge it: the outputs, their layout,
        and, on an integrity trial, the inputs as forward left them and the outputs re-read with
        kernel and input memory marked (`provenance`). Every correctness call runs identically
        (storages are recorded on all of them); only the work after forward differs, and no answer
        code runs then."""
        import threading

        import torch

        from kernelgym.judge.inputs import swap_probe

        hooked = self._hooked()
        if hooked:
            return {"hooked": hooked}
        digest, take, record = _TRUSTED["digest"], _TRUSTED["take"], _TRUSTED["record_storages"]
        variant = bool(msg.get("variant"))
        model = self.variant_model if variant else self.model
        generated = (self.get_variant_inputs if variant else self.get_task_inputs)(msg["seed"], msg["distribution"])
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
        threads_before = threading.active_count()
        _poison(self.device, msg.get("poison_bytes", 0))
        record(True)
        try:
            with _TRUSTED["op_recording"](), torch.set_grad_enabled(msg["grad"]):
                out = model(*inputs)
            if self.device != "cpu":
                torch.cuda.synchronize()
        except BaseException as e:  # noqa: BLE001
            return self._error(e, phase="forward")
        finally:
            record(False)
        reply = {"inputs_digest": inputs_digest, "thread_delta": threading.active_count() - threads_before,
                 "launches": take(), "torch_ops": _TRUSTED["forbidden_ops"]()} | self._integrity()
        if reply.get("hooked") or reply.get("harness_changed"):
            return reply  # no tensor op of ours runs under the answer's hooks
        shipped = _TRUSTED["ship_outputs"](out)
        reply |= shipped
        if "outputs" not in shipped:
            return reply
        outs = shipped["outputs"]
        if msg.get("integrity"):
            reply["marked"] = _TRUSTED["marked_copies"](outs, _TRUSTED["recorded_storages"](), inputs)
            reply["inputs_after"] = [torch.Tensor.detach(v) if type(v) is torch.Tensor else v for v in inputs]
        else:
            reply["inputs_after_digest"] = digest(inputs)  # a hint; integrity trials send the tensors
        record(True)  # forget them: they held the trial's memory alive
        record(False)
        return reply

    # -- time / profile: GPU only ------------------------------------------------------------------
    def op_timing_inputs(self, msg: dict) -> dict:
        """Generate the timing sets from seeds revealed now (before the timing lock is taken)."""
        import torch

        from kernelgym.judge.inputs import digest

        hooked = self._hooked()
        if hooked:
            return {"hooked": hooked}
        generated_sets = [self.get_task_inputs(seed, dist) for seed, dist in msg["sets"]]
        digests = [digest(s) for s in generated_sets]
        self.timing_sets = [[v.to(self.device) if isinstance(v, torch.Tensor) else v for v in s] for s in generated_sets]
        return {"inputs_digests": digests}

    def op_time(self, msg: dict) -> dict:
        hooked = self._hooked()
        if hooked:
            return {"hooked": hooked}
        sets = self.timing_sets  # the profile reuses them: no second transfer
        try:
            self.spot_outputs = {}
            spots = _TRUSTED["spot_reservoir"](int(msg.get("spot_seed", 0)), int(msg.get("spot_size", 0)))
            times, wall, self.timed_outputs = _TRUSTED["time_calls"](
                self.model, sets, msg["warmup"], msg["reps"], msg["flush_bytes"], msg.get("budget_s", 0.0),
                after_call=self._after_timed_call, hold=_TRUSTED["hold_on_host"], spots=spots,
                kept=self.spot_outputs)
        except _Flagged as f:
            return f.reply
        except BaseException as e:  # noqa: BLE001
            return self._error(e, phase="timing")
        return {"times_ms": times, "wall_ms": wall, "launches": _TRUSTED["take"]()} | self._integrity()

    def _after_timed_call(self, out: object) -> None:
        """Right after each timed call, before the harness touches anything: the output must be a
        plain tensor/tuple/list (a list subclass could finish its work in `__iter__`, after the end
        event) and no torch mode may be left to run answer code inside the harness's next ops."""
        hooked = self._hooked()
        if hooked:
            raise _Flagged({"hooked": hooked})
        bad = _TRUSTED["output_type_problems"](out)
        if bad:
            raise _Flagged({"bad_types": bad})

    def op_timed_outputs(self, msg: dict) -> dict:
        """Outputs of the last timed call per input set, fetched after the timing lock is released."""
        hooked = self._hooked()
        if hooked:
            return {"hooked": hooked}
        shipped = list(self.timed_outputs)  # held on the host right after their calls (`hold_on_host`)
        spots = sorted(self.spot_outputs.items())
        bad = [b for s in shipped + [s for _, s in spots] for b in s.get("bad_types", [])]
        if bad:
            return {"bad_types": bad}
        return {"outputs": [s["outputs"] for s in shipped], "layout": [s["layout"] for s in shipped],
                "spots": [[call, s["outputs"], s["layout"]] for call, s in spots]}

    def op_profile(self, msg: dict) -> dict:
        hooked = self._hooked()
        if hooked:
            return {"hooked": hooked}
        if msg.get("lean"):
            # The parent's retry after the profile ran out of memory: the other timing sets are
            # needed by nothing after the profile, so this profile holds less than a timed call did.
            self.timing_sets = self.timing_sets[:1]
        sets = self.timing_sets
        # With `notify`, the parent learns when the profiled calls have finished on the GPU, and
        # frees the GPU's exclusive side then: stopping the profiler and reading its records is
        # host work, and no answer code runs after the notice.
        from kernelgym.judge.protocol import PROFILE_KERNELS_DONE

        done = (lambda: self.notify({"op": PROFILE_KERNELS_DONE})) if msg.get("notify") else None
        try:
            kernels = _TRUSTED["profile_kernels"](self.model, sets, msg["reps"], after_kernels=done)
        except BaseException as e:  # noqa: BLE001
            return self._error(e, phase="profile")
        return {"kernels": kernels} | self._integrity()

    def _integrity(self) -> dict:
        """What the answer may have changed in this process so far: hooks, harness, settings."""
        hooked = self._hooked()
        if hooked:  # reading the settings runs tensor ops: not under the answer's mode
            return {"hooked": hooked}
        return {"settings_changed": self._settings_changed(), "harness_changed": self._harness_changed()}

    def _hooked(self) -> str:
        """Non-empty when a torch function/dispatch mode or a trace/profile hook is active that was
        not before the answer was imported: any tensor op of the harness would run answer code."""
        if not self.hooks_baseline:
            return ""
        now = _hooks_now()
        changed = [name for name, before, after in zip(_HOOK_NAMES, self.hooks_baseline, now) if before is not after
                   and before != after]
        return ", ".join(changed)

    def _harness_changed(self) -> list[str]:
        now = _TRUSTED["harness_snapshot"]()
        return sorted(k for k in self.harness if now.get(k) != self.harness[k])

    def _settings_changed(self) -> list[str]:
        now = global_settings()
        return sorted(k for k in self.settings if now.get(k) != self.settings[k])

    def _error(self, e: BaseException, phase: str) -> dict:
        from kernelgym.judge.errors import classify_exception, trim_traceback

        kind, fault = classify_exception(e, phase)
        return {"error": trim_traceback(e, self.code_path), "kind": kind, "fault": fault, "phase": phase}


class _Flagged(Exception):
    """Raised out of the timed loop with the reply that reports why it stopped."""

    def __init__(self, reply: dict) -> None:
        super().__init__(str(reply))
        self.reply = reply


_HOOK_NAMES = ("torch function mode", "torch dispatch mode", "sys.settrace hook", "sys.setprofile hook")


def _hooks_now() -> tuple:
    """Mode stack depths (the dispatch count includes infra modes such as FakeTensorMode) and the
    trace/profile functions: answer code any harness call would run."""
    import torch

    return (torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack(),
            sys.gettrace(), sys.getprofile())


def _fresh_seed() -> int:
    import secrets

    return secrets.randbits(62)


def _input_source(msg: dict, device: str) -> "_InputSource":
    """Pop the inputs-only source and its constants out of `msg` and build the input generator;
    the strings are gone when this returns (only the generator's module keeps what it needs)."""
    from kernelgym.tasks.task import Task, inputs_only_source

    source = msg.pop("inputs_source", None)
    if source is None:  # legacy message with the full task source: strip here at least
        source = inputs_only_source(msg.pop("task_source"))
    module = Task(task_id="task", source=source).load_module(msg.pop("task_size"), msg.pop("constants", None))
    return _InputSource(module, device)


def output_type_problems(out: object) -> list[str]:
    """Why `out` is not a plain output, without calling any method of it: exactly a torch.Tensor
    (with no instance attributes, e.g. `out.detach = lazy_fn`, RH-19), None/bool/int/float, or
    exactly a tuple/list of those. Subclasses of any of them can run code when touched."""
    import torch

    items = list(out) if type(out) in (tuple, list) else [out]  # exact types: C iteration, no __iter__
    bad = [_type_name(o) for o in items if not (o is None or type(o) in (bool, int, float, torch.Tensor))]
    bad += [f"Tensor with instance attributes {sorted(vars(o))[:3]}" for o in items
            if type(o) is torch.Tensor and vars(o)]
    return bad


def ship_outputs(out: object) -> dict:
    """The reply's view of an output: tensors detached (copied by `send`), their strides and
    contiguity for the parent's layout check, or `bad_types` (then nothing of it is touched)."""
    import torch

    bad = output_type_problems(out)
    if bad:
        return {"bad_types": bad}
    items = list(out) if type(out) in (tuple, list) else [out]
    outs = [torch.Tensor.detach(o) if type(o) is torch.Tensor else o for o in items]
    layout = [(tuple(torch.Tensor.stride(o)), bool(torch.Tensor.is_contiguous(o))) if type(o) is torch.Tensor else None
              for o in items]
    return {"outputs": outs, "layout": layout, "is_sequence": type(out) in (tuple, list)}


def hold_on_host(out: object) -> dict:
    """A timed output as the reply will carry it (`ship_outputs`: its layout read on the device),
    its tensors copied to pageable host memory at once: a kernel that forges pointers cannot reach
    it there, and no later call of the answer can repair on the device what it skimped (RH-21)."""
    return host_copy(ship_outputs(out))


def host_copy(shipped: dict) -> dict:
    """`shipped` (`ship_outputs`) with its tensors copied to fresh pageable host memory."""
    import torch

    if "outputs" in shipped:
        shipped["outputs"] = [torch.Tensor.to(o, "cpu", copy=True) if type(o) is torch.Tensor else o
                              for o in shipped["outputs"]]
    return shipped


def _type_name(o: object) -> str:
    """The class name read through `type`'s own descriptor: a metaclass cannot run code here."""
    return type.__dict__["__name__"].__get__(type(o), type)


class _InputSource:
    """The task's `get_inputs` with the constants it reads; nothing else of the task module."""

    def __init__(self, module, device: str) -> None:  # noqa: ANN001
        import types

        self._module = types.SimpleNamespace(get_inputs=module.get_inputs)
        self._device = device

    def __call__(self, seed: int, distribution: str) -> list:
        from kernelgym.judge.inputs import make_inputs

        return make_inputs(self._module, seed, distribution, self._device)


_HARNESS = (
    ("kernelgym.judge.timing", ("time_calls", "gpu_lock", "timing_lock", "_gpu_sleep", "varied_copy", "clone_values")),
    ("kernelgym.judge.profiling", ("profile_kernels",)),
    ("kernelgym.judge.protocol", ("send", "recv")),
    ("kernelgym.judge.inputs", ("make_inputs", "digest", "varied_copy", "clone_values", "swap_probe")),
    ("kernelgym.judge.launch_hook", ("install", "take", "record_storages", "recorded_storages", "_record",
                                     "_reject_constexpr_tensors", "_reject_forged_pointers", "forged_pointer_ops",
                                     "_ir_text", "forged_pointer_text", "_check_arguments", "argument_problem",
                                     "_wrapped_tensor_problem", "_param_names", "_constexpr_params")),
    # the GPU front end run before each interpreted launch (CPU); its refusals are verdicts
    ("kernelgym.judge.front_end", ("check", "_compile", "_compile_mode", "_jit_of", "_language_swaps",
                                   "_launch_options", "_binder", "_backend")),
    ("kernelgym.judge.op_audit", ("recording", "paused", "resumed", "forbidden", "_resumed_call", "_mode_class",
                                  "_counting")),
    ("torch._tensor_str", ("_str",)),
    ("kernelgym.judge.provenance", ("marked_copies", "input_storages", "_xor_all", "_byte_view")),
    ("kernelgym.judge.spot", ("SpotReservoir",)),
    ("kernelgym.judge.child", ("_Session", "_InputSource", "_poison", "ship_outputs", "hold_on_host", "host_copy",
                               "output_type_problems",
                               "_hooks_now", "_type_name")),
    ("time", ("perf_counter",)),
    ("triton.runtime.jit", ("JITFunction",)),
)


# Methods the harness calls on the answer's outputs, inputs and kernel storages after forward.
_HARNESS_METHODS = (
    ("torch.cuda", "Event", ("record", "elapsed_time", "synchronize")),
    ("torch", "Tensor", ("detach", "clone", "copy_", "stride", "is_contiguous", "untyped_storage", "reshape",
                         "view", "set_", "bitwise_xor_", "to", "contiguous", "tolist", "numpy", "__array__")),
    ("torch", "UntypedStorage", ("tolist", "__getitem__")),
    # the launch hook's refusals of forged pointers on the CPU (`launch_hook.refuse_forged_pointers_in_interpreter`)
    ("triton.runtime.interpreter", "InterpreterBuilder", ("create_int_to_ptr", "create_ptr_to_int",
                                                          "create_inline_asm")),
    ("triton.runtime.interpreter", "InterpretedFunction", ("run", "__call__")),
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
    for cls_path, cls_name, methods in _HARNESS_METHODS:
        cls = getattr(importlib.import_module(cls_path), cls_name)
        for meth in methods:
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


_PROFILER_STARTED = False  # CUPTI has started in this process (a warm process: during its start-up)


def _warm_profiler() -> None:
    """CUPTI's start-up, once per process: a warm process paid it before it was handed out, and a
    second empty profile at `build` only added its own set-up and teardown to every evaluation."""
    global _PROFILER_STARTED
    if _PROFILER_STARTED:
        return
    _start_profiler()
    _PROFILER_STARTED = True


def _start_profiler() -> None:
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
