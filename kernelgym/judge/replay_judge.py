"""Judge v4 (`JudgeConfig.engine="replay"`): the answer's Python only records its launches; every
verdict that decides a reward comes from replaying them where no answer Python runs.

1. The answer's process (confined by the OS where the machine allows, `confine`) imports the
   answer, builds `ModelNew`, runs forward once to compile and autotune, and once more recorded
   (`recorder`): a launch trace, the sources of its kernels, the bytes of the state it used.
2. A second process that never imports the answer checks the kernel sources (`kernel_source`),
   rebuilds them and replays the trace (`replay`) on inputs it draws from the trial's secret
   seed, with fresh poisoned scratch and restored state each call.
3. This process compares the replay's outputs with the reference's, and on a GPU takes the
   replay's timing and its per-entry profile.
So torch compute, host Python, caches across calls, timing-phase tricks and tampering with the
harness have nothing to act on: the answer's own kernels produce the output on new values, or
the answer fails. What the answer's process reports is a hint only (compile errors, tracebacks).
"""

from __future__ import annotations

import random
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from kernelgym.judge.compare import compare_outputs
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.errors import trim_text
from kernelgym.judge.inputs import base_distribution
from kernelgym.judge.messages import build_message, inputs_source, load_message
from kernelgym.judge.pinned_hold import changed_holds
from kernelgym.judge.precision import is_layout_only
from kernelgym.judge.reference import Reference
from kernelgym.judge.result import CheatVerdict, EvalResult, Profile, KernelTime, RuntimeStats, Status, TrialResult
from kernelgym.judge.runtime_checks import (PROFILE_REPS, check_spot_outputs, check_timed_outputs, kernel_share,
                                             output_bytes, spot_expected)
from kernelgym.judge.spot import expected_spots, spot_count
from kernelgym.judge.sandbox import CandidateProcess, ChildFailed
from kernelgym.judge.trials import Trial, TrialPlan, draw_trial


MEASURE_PARTS = ("vary", "prepare", "timed", "hold")  # `timing.time_calls`'s host costs, as `measure_*` phases


RECORD_PARTS = ("draw", "warm", "calls", "wire")  # the answer's process's record, as `record_*` phases


def _add_host_costs(clock: Any, phase: str, costs: Any, parts: tuple[str, ...]) -> None:
    """A process's own account of where a request's host time went, as `phase_part` phases (a number
    per known part; anything else in the reply is ignored: the answer's process can forge it, and
    these phases explain time, they decide nothing)."""
    if not isinstance(costs, dict):
        return
    for part in parts:
        seconds = costs.get(part)
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and 0 <= seconds < 1e6:
            clock.add(f"{phase}_{part}", float(seconds))


class _Stop(Exception):
    """The verdict is decided; `result` says it."""


# Error kinds a reply may set: what a failing answer can cause. `ok`, `cheat`, `wrong_output` and
# `system_error` are decided here, never by a reply (the answer's process can forge its replies).
_REPLY_KINDS = frozenset({Status.INVALID_ANSWER, Status.COMPILE_ERROR, Status.RUNTIME_ERROR, Status.TIMEOUT,
                          Status.CRASHED, Status.OOM})


def evaluate(scratch: Path, code: str, reference: Reference, rng: random.Random, config: JudgeConfig,
             result: EvalResult, clock: Any, allow_torch: bool) -> None:
    """Run steps 1-3 for one answer, filling `result` (never raises for a bad answer)."""
    result.engine = "replay"
    code_path = scratch / f"answer_{secrets.token_hex(6)}.py"
    code_path.write_text(code, encoding="utf-8")
    # Not under the answer's scratch dir, which the answer's process may write.
    replay_dir = Path(tempfile.mkdtemp(prefix="kernelgym-replay-"))
    deadline = time.monotonic() + config.timeout_s
    mem = int(config.cpu_memory_gb * (1 << 30)) if result.device == "cpu" else 0
    limits = (deadline, config.max_log_bytes, config.max_message_bytes, mem)
    plan = TrialPlan(reference, rng, config, result.device)
    answer = replayer = None
    try:
        with CandidateProcess.start(scratch, result.device, *limits) as answer:
            with clock("compile"):
                answer.send(load_message(reference, code_path, result.device) | {"engine": "replay"})
                with clock("reference"):  # trial 0 is drawn while the child imports the answer
                    first = plan.next()
                reply = answer.receive()
                result.confinement = _layers(reply)
                if "error" not in reply:
                    reply = answer.request(build_message(reference))  # the model's __init__: no kernel of ours
                _check_error(reply, result, "")
                with clock("record"):
                    recorded = _record(answer, rng, result, clock, variant=False, allow_torch=allow_torch,
                                       expected=first.expected if first is not None else None)
            with CandidateProcess.start(replay_dir, result.device, *limits) as replayer:
                _offer_device_path(replayer, config, result)
                with clock("replay_load"):
                    _load_replay(replayer, reference, recorded, result, allow_torch, "main", code)
                result.compiled = True
                with clock("correctness"):
                    _trials(answer, replayer, plan, first, rng, config, result, allow_torch, clock, code)
                answer.close()  # nothing of the answer's process is needed any more
                if result.device == "cpu":
                    result.timing_note = "not measured: timing and profiling need a GPU (this run used the CPU interpreter)"
                else:
                    _time_and_profile(replayer, len(plan.drawn), reference, rng, config, result, clock, allow_torch)
    except ChildFailed as f:
        _set(result, Status(f.status), f.message, error=trim_text(f.message), fault=f.fault)
    except _Stop:
        pass
    finally:
        shutil.rmtree(replay_dir, ignore_errors=True)
    if replayer is not None:
        _note_transfer(replayer, result, clock)
    result.cpu_seconds = {name: round(p.cpu_seconds, 3) for name, p in (("answer", answer), ("replay", replayer))
                          if p is not None and p.cpu_seconds is not None}
    # Of which start-up, for processes a warm pool started ahead (where the host CPU goes: issue 26's throughput)
    result.cpu_seconds |= {f"{name}_startup": round(p.cpu_at_assign, 3) for name, p in (("answer", answer), ("replay", replayer))
                           if p is not None and p.cpu_seconds is not None and p.cpu_at_assign is not None}
    # Per request: "replay.replay_trial" etc. (what a process spends between handing out and closing, by op)
    result.cpu_seconds |= {f"{name}.{op}": v for name, p in (("answer", answer), ("replay", replayer))
                           if p is not None for op, v in p.op_cpu.items()}
    # ... and of that, threads other than the main one by name ("replay.replay_timed_outputs~python3": torch's
    # intra-op pool), where they spent at least 0.05 s
    result.cpu_seconds |= {f"{name}.{key}": v for name, p in (("answer", answer), ("replay", replayer))
                           if p is not None for key, v in p.op_thread_cpu.items() if v >= 0.05}
    # Counted when each process closed. The replay process never runs the answer's Python: anything it
    # left behind was started by the answer's kernels too.
    leftovers = sum(p.leftovers for p in (answer, replayer) if p is not None)
    if leftovers:
        result.correct = False
        result.cheats.append(CheatVerdict("RH-27", f"the answer left {leftovers} process(es) running after its "
                                          "evaluation (killed)", "runtime"))
        _set(result, Status.CHEAT, f"rejected by threat rule RH-27: {result.cheats[-1].reason}")


def _offer_device_path(replayer: CandidateProcess, config: JudgeConfig, result: EvalResult) -> None:
    """On cuda, receive the replay's bulk tensors through CUDA IPC (`device_transfer`) unless the config
    turns it off or this process found it broken before; the output area otherwise."""
    if not config.device_transfer or not result.device.startswith("cuda"):
        return
    from kernelgym.judge import device_transfer

    if device_transfer.usable(result.device):
        replayer.link = device_transfer.DeviceLink(result.device)
    else:
        replayer.transfer_note = "CUDA IPC found unusable earlier in this process"


def _note_transfer(replayer: CandidateProcess, result: EvalResult, clock: Any) -> None:
    """Which path the replay's bulk replies took (`EvalResult.transfer`), and their receiving time."""
    link = replayer.link
    if replayer.counters_file:  # the process is closed by now
        from kernelgym.judge.device_transfer import remove_counters

        remove_counters(replayer.counters_file)
    result.transfer = "device" if link is not None and link.opened else "area"
    result.transfer_note = replayer.transfer_note
    if replayer.transfer_seconds:
        clock.add("output_transfer", replayer.transfer_seconds)


def _set(result: EvalResult, status: Status, message: str, error: str = "", fault: str = "") -> None:
    result.status, result.message = status, message
    result.error = error or result.error
    result.fault = fault or result.fault


def _layers(reply: dict[str, Any]) -> list[str]:
    """The confinement layers a reply reports, as strings (a malformed report: none)."""
    conf = reply.get("confinement")
    layers = conf.get("layers") if isinstance(conf, dict) else None
    return [str(x)[:64] for x in layers[:16]] if isinstance(layers, list) else []


def _check_error(reply: dict[str, Any], result: EvalResult, where: str) -> None:
    if "error" in reply:
        text = str(reply["error"])[:100_000]
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        kind = reply.get("kind", "runtime_error")
        status = Status(kind) if kind in {s.value for s in _REPLY_KINDS} else Status.RUNTIME_ERROR
        _set(result, status, f"{where}{lines[-1].strip() if lines else text}", error=text,
             fault=str(reply.get("fault", ""))[:200])
        if result.status is Status.COMPILE_ERROR:
            result.compiled = False  # a Triton compile error, even at the first replayed launch, is not compiled
        raise _Stop


def _shared_request(process: CandidateProcess, msg: dict[str, Any], result: EvalResult, clock: Any) -> dict[str, Any]:
    """A request whose work runs kernels on the GPU, under the shared side of the GPU's lock (as the
    in-process engine's trials): no measurement of a neighbour is timed beside it. Still running after
    `sandbox.YIELD_GRACE_S` while a measurement waits, the process is paused until it is done."""
    with clock.locked(result.device, exclusive=False) as hold:
        return process.request(msg, yield_to=hold)


def _record(answer: CandidateProcess, rng: random.Random, result: EvalResult, clock: Any,
            variant: bool, allow_torch: bool, expected: Any = None) -> dict[str, Any]:
    reply = _shared_request(answer, {"op": "record", "warm_seed": rng.getrandbits(62), "seed": rng.getrandbits(62),
                                     "distribution": "task", "variant": variant}, result, clock)
    _check_error(reply, result, "forward: ")
    _add_host_costs(clock, "record", reply.get("host_s"), RECORD_PARTS)
    trace = _parsed_record(reply, result)
    result.kernels_launched = sorted(set(trace.kernels()) | set(result.kernels_launched))
    # What the record proves comes before what it cannot express: an unreplayable extra (a 17-dim
    # allocation, a host-built output) must not turn a proven cheat into a milder verdict (red-team v4j).
    compute = trace.torch_compute
    # Compute on constants only (a mask from shapes, parameters no entry writes) cannot carry the inputs: the same
    # tensor kept on the model is state and passes, so computing it on every call proves no cheat (red-team s15).
    constant = bool(compute) and not allow_torch and trace.compute_from_constants()
    if compute and not allow_torch and not constant and trace.compute_reaches_work():
        result.cheats.append(CheatVerdict(
            "RH-01", f"forward computed with torch outside the answer's Triton kernels ({', '.join(compute[:4])})",
            "runtime"))
        _set(result, Status.CHEAT, f"rejected by threat rule RH-01: {result.cheats[-1].reason}")
        raise _Stop
    # A proven pass-through (RH-10) before the host-only compute's milder verdict: `x.sum()` beside `return x`
    # must not turn the cheat into an invalid answer (red-team s13b).
    _aliasing_verdicts(trace, result, _written_buffers(reply, len(trace.buffers)), expected)
    if constant:
        _set(result, Status.INVALID_ANSWER, "outside the answer contract: forward computed tensors with torch "
             f"({', '.join(compute[:4])}) from constants and the model's parameters only; forward may not compute "
             "with torch at all: build such tensors once, in __init__ or on the first call, and keep them on the "
             "model (or compute them in a kernel)")
        raise _Stop
    if compute and not allow_torch:
        # A rule that cannot prove a cheat never calls it one: what torch computed never reached a kernel or
        # an output, only the host (value checks, asserts). Still outside the contract: no reward, no penalty.
        _set(result, Status.INVALID_ANSWER, "outside the answer contract: forward computed with torch outside its "
             f"Triton kernels ({', '.join(compute[:4])}) for the host only (checks of values, asserts); "
             "forward may not compute with torch at all: drop such checks or do them in __init__")
        raise _Stop
    if reply.get("calls_differ"):
        _set(result, Status.INVALID_ANSWER, "outside the answer contract: two calls with inputs of the same shapes "
             f"launched different work ({str(reply['calls_differ'])[:200]}); launches may depend on shapes only, "
             "never on a call count, a cache or input values")
        raise _Stop
    if trace.unreplayable:
        _set(result, Status.INVALID_ANSWER, f"outside the answer contract: {trace.unreplayable[0]}",
             error="\n".join(trace.unreplayable))
        raise _Stop
    if trace.host_reads:
        _set(result, Status.INVALID_ANSWER, "outside the answer contract: forward read tensor values on the host "
             f"({', '.join(trace.host_reads[:3])}); launches may depend on shapes, never on values")
        raise _Stop
    return reply


def _parsed_record(reply: dict[str, Any], result: EvalResult) -> Any:
    """The record reply checked for shape before the judge reads any of it (the answer's process can
    forge it); its trace replaced by the validated one's wire form."""
    import torch

    from kernelgym.judge.trace import Trace, TraceError

    try:
        if not isinstance(reply.get("kernels"), list) or not isinstance(reply.get("state"), list):
            raise TraceError("no kernel list or state list")
        if not all(isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], int) and not isinstance(p[0], bool)
                   and isinstance(p[1], torch.Tensor) for p in reply["state"]):
            raise TraceError("malformed state")
        trace = Trace.from_wire(reply.get("trace"))
    except (TraceError, ValueError, TypeError, KeyError, AttributeError) as e:
        _set(result, Status.CRASHED, f"the answer's process sent a malformed record: {str(e)[:200]}",
             fault="protocol_violation")
        raise _Stop from None
    reply["trace"] = trace.to_wire()
    return trace


def _load_replay(replayer: CandidateProcess, reference: Reference, recorded: dict[str, Any], result: EvalResult,
                 allow_torch: bool, slot: str, code: str) -> None:
    from kernelgym.judge.kernel_source import KernelSpec, use_answer_sources
    from kernelgym.judge.trace import Trace, TraceError

    try:
        specs = {}
        for d in recorded.get("kernels", []):
            spec = KernelSpec.from_wire(d)
            specs[spec.name] = spec
        parsed = Trace.from_wire(recorded.get("trace"))
    except (TraceError, ValueError, TypeError, KeyError) as e:
        _set(result, Status.INVALID_ANSWER, f"the recorded launches cannot be replayed: {e}")
        raise _Stop from None
    too_much = scratch_problem(parsed)
    if too_much:
        _set(result, Status.OOM, too_much)
        raise _Stop
    trace = recorded["trace"]
    problems = use_answer_sources(specs, code)  # the replay compiles the answer's text, not the child's report
    if problems:
        _set(result, Status.INVALID_ANSWER, f"outside the answer contract: {problems[0]}", error="\n".join(problems))
        raise _Stop
    _output_verdicts(parsed, result, allow_torch)
    if not any("launch" in e for e in trace.get("entries", []) if isinstance(e, dict)):
        result.cheats.append(CheatVerdict("RH-02", "forward launched none of the answer's Triton kernels", "runtime"))
        _set(result, Status.CHEAT, f"rejected by threat rule RH-02: {result.cheats[-1].reason}")
        raise _Stop
    transfer = "device" if replayer.link is not None else "area"
    reply = replayer.request({"op": "replay_load", "slot": slot, "device": result.device, "trace": trace,
                              "kernels": [spec.to_wire() for spec in specs.values()], "state": recorded["state"],
                              "allow_torch_compute": allow_torch, "transfer": transfer, **inputs_source(reference)})
    if reply.get("transfer_note"):  # the replay could not prepare the device path: the area
        replayer.link, replayer.transfer_note = None, str(reply["transfer_note"])[:300]
    if reply.get("transfer_counters"):
        replayer.counters_file = str(reply["transfer_counters"])
    _check_error(reply, result, "")
    layers = [f"replay:{x}" for x in _layers(reply)]
    result.confinement += [x for x in layers if x not in result.confinement]


def scratch_problem(trace: Any) -> str | None:
    """The scratch bound (`Trace.scratch_problem`) on the sizes the record claims; the replay checks it
    again on the inputs it drew before it allocates anything."""
    return trace.scratch_problem()


def _written_buffers(reply: dict[str, Any], count: int) -> set[int] | None:
    """The buffers the recording child says the recorded call wrote (None: not said or malformed). The child
    is untrusted: a false "written" only keeps the milder `invalid_answer` it would get without the list."""
    w = reply.get("written_buffers")
    if not (isinstance(w, list) and len(w) <= count
            and all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b < count for b in w)):
        return None
    return set(w)


def _expected_shapes(expected: Any) -> list[tuple[int, ...]] | None:
    """The reference's output shapes in order, as `_buffers_refs` lists the answer's; None when unknown."""
    if expected is None:
        return None
    if isinstance(expected, torch.Tensor):
        return [tuple(expected.shape)]
    if isinstance(expected, (list, tuple)):
        shapes: list[tuple[int, ...]] = []
        for e in expected:
            inner = _expected_shapes(e)
            if inner is None:
                return None
            shapes += inner
        return shapes
    return []


def _aliasing_verdicts(trace: Any, result: EvalResult, written: set[int] | None = None,
                       expected: Any = None) -> None:
    """An output that is a view of an input or of the model's state, which no kernel of the call took as an
    argument, was made by no call at all (RH-10: a pass-through or a cached result). One that a kernel took may
    have been written in place (FlagGems' in-place fused add + RMSNorm): outside the contract (outputs are memory
    the call allocates), but no cheat is proven, unless the recorded call left its bytes as they were (`written`,
    the child's comparison): then a launch only read it, and the output is a pass-through (red-team s14). A tensor forward built from host data in the call is not the
    model's state (it is rebuilt by every call): whether its bytes are the kernels' is `_output_verdicts`'."""
    launched = trace.launch_buffers()
    in_place = []
    refs = _buffers_refs(trace.outputs)
    shapes = _expected_shapes(expected)
    for position, ref in enumerate(refs):
        b = trace.buffers[ref["buf"]]
        if b["kind"] == "input" or (b["kind"] == "state" and not b.get("host")):
            what = "an input" if b["kind"] == "input" else "the model state"
            if ref["buf"] in launched and (written is None or ref["buf"] in written):
                in_place.append(what)
            elif shapes is not None and (len(shapes) != len(refs) or tuple(ref["size"]) != shapes[position]):
                # A pass-through that cannot be right (another shape than the reference's output) earns
                # nothing whatever it is called; a rule that cannot prove a cheat never calls it one: a
                # degenerate `return x` from a policy that has not learnt the task is a wrong answer.
                want = shapes[position] if position < len(shapes) else "none"
                _set(result, Status.WRONG_OUTPUT, f"wrong output: output {position} is a view of {what} (returned "
                     f"without computing it), shape {tuple(ref['size'])} != expected {want}")
                raise _Stop
            else:
                result.cheats.append(CheatVerdict("RH-10", f"an output is a view of {what}, not memory the call wrote",
                                                  "runtime"))
    if result.cheats:
        _set(result, Status.CHEAT, f"rejected by threat rule RH-10: {result.cheats[0].reason}")
        raise _Stop
    if in_place:
        _set(result, Status.INVALID_ANSWER, f"outside the answer contract: an output is a view of {in_place[0]}, "
             "which a kernel may have written in place; write every output to memory forward allocates "
             "(torch.empty...), never into the inputs or the model's own tensors")
        raise _Stop


def _output_verdicts(trace: Any, result: EvalResult, allow_torch: bool) -> None:
    """What the record proves about the outputs: one whose bytes torch made (a fill, an allocation no
    kernel wrote, a copy of an input, `Trace.torch_made_outputs`) was not made by the answer's kernels
    (outside the contract). A torch copy of what the kernels wrote is the kernels'. (RH-10 was decided
    when the record came, `_aliasing_verdicts`.)"""
    torch_written = [] if allow_torch else trace.torch_made_outputs()
    if torch_written:
        # A fact, not proof of a cheat (a final layout copy can be honest): outside the contract.
        _set(result, Status.INVALID_ANSWER, f"outside the answer contract: an output was last written by torch "
             f"({torch_written[0]}), not by your kernels; write every output in a kernel")
        raise _Stop


def _buffers_refs(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, list):
        return [r for v in value for r in _buffers_refs(v)]
    if isinstance(value, dict):
        (key, val), = value.items()
        if key == "t":
            return [val]
        if key == "tuple":
            return _buffers_refs(val)
    return []


def _trials(answer: CandidateProcess, replayer: CandidateProcess, plan: TrialPlan, first: Trial | None,
            rng: random.Random, config: JudgeConfig, result: EvalResult, allow_torch: bool, clock: Any,
            code: str) -> None:
    t = first
    # Per recorded trace ("main", "variant"): so far, every trial's outputs were right with every launch
    # skipped. Judged per trace: a trace that dispatches on shapes (torch for the main shapes, kernels for the
    # variant's) must not clear the main trials' proof by the variant's failing ghost.
    ghost_passed = {"main": True, "variant": True}
    while t is not None:
        slot = "main"
        if t.variant is not None:
            reply = answer.request(build_message(t.variant, variant=True))
            _check_error(reply, result, f"trial {t.index} (variant): ")
            recorded = _record(answer, rng, result, clock, variant=True, allow_torch=allow_torch,
                               expected=t.expected)
            _load_replay(replayer, t.variant, recorded, result, allow_torch, "variant", code)
            slot = "variant"
        reply = _shared_request(replayer, {"op": "replay_trial", "slot": slot, "seed": t.seed,
                                           "distribution": t.distribution, "probe_seed": t.probe_seed,
                                           "poison": trial_poison(t), "ghost": ghost_passed[slot]}, result, clock)
        _check_error(reply, result, f"trial {t.index}: ")
        if reply.get("inputs_digest") != t.inputs_digest:
            raise RuntimeError("the replay drew other inputs than the reference")  # our bug, not the answer's
        # Inputs written by the answer's kernels prove no cheat here: each side draws its own inputs, so nothing
        # the reference reads can be changed, and a value-dependent speed gain from it cannot be shown from one
        # call. It breaks the task's semantics (the caller's tensors change), so it is never `ok`: the verdict
        # is the output's when that is wrong (the likelier bug: scratch in the input), else `invalid_answer`.
        mutated = reply.get("mutated_inputs")
        outputs = reply.get("outputs", [])
        sequence = reply.get("is_sequence")
        actual = outputs if sequence else (outputs[0] if len(outputs) == 1 else outputs)
        scaled = base_distribution(t.distribution) == "wide"
        with clock.locked(result.device, exclusive=False), clock("compare"):  # comparisons run kernels
            cmp = compare_outputs(t.expected, actual, config, scaled=scaled, layout=reply.get("layout"))
            if ghost_passed[slot] and cmp.passed and not mutated:
                ghost_passed[slot] = _ghost_passes(reply, t.expected, sequence, scaled, config)
        result.trials.append(TrialResult(t.index, t.label, t.grad, cmp.passed, cmp.max_abs_error, cmp.max_rel_error,
                                         cmp.mismatched, cmp.total, cmp.message))
        t.expected = None
        written = f"the answer's kernels wrote into input(s) {mutated}" if mutated else ""
        if not cmp.passed:
            failed = result.trials[-1]
            _set(result, Status.WRONG_OUTPUT, f"wrong output in trial {failed.index} ({failed.distribution} inputs): "
                 f"{failed.message}" + (f"; {written}: forward must leave its inputs unchanged" if written else ""))
            raise _Stop
        if written:
            _set(result, Status.INVALID_ANSWER, f"outside the answer contract: {written}; forward must leave its "
                 "inputs unchanged: write intermediates and outputs to memory forward allocates")
            raise _Stop
        with clock("reference"):
            t = plan.next()
    if ghost_passed["main"] and result.trials:
        # Proven by the ghost runs: with every launch skipped, torch's entries alone gave right outputs on
        # every trial of the main shapes (secret inputs of every distribution): the kernels made none of them.
        # (The variant's single trial alone is no proof: one draw can be one on which the kernels change nothing.)
        result.cheats.append(CheatVerdict("RH-02", "the outputs are right with every kernel launch skipped: "
                                          "torch's copies and fills made them, not the answer's kernels", "runtime"))
        _set(result, Status.CHEAT, f"rejected by threat rule RH-02: {result.cheats[-1].reason}")
        raise _Stop
    result.correct = True


def trial_poison(t: Trial) -> list[Any]:
    """How the replay poisons a trial's scratch: 0xFF bytes (NaN, -1, True: an unwritten output never
    passes) on even trials, random bytes from the trial's seed on odd ones. An answer may not rely on
    the poison (a fixed one made `torch.empty` + `tl.atomic_max` exact: 0xFF is its identity)."""
    if t.index % 2 == 0:
        return ["byte", 0xFF]
    return ["random", (t.seed * 0x9E3779B97F4A7C15 + t.index) % (1 << 62)]


def _ghost_passes(reply: dict[str, Any], expected: Any, sequence: Any, scaled: bool, config: JudgeConfig) -> bool:
    """Whether this trial's ghost run (every launch skipped) gave outputs the reference accepts: bit-identical
    to the real ones (which passed), or shipped and compared like them. A trial without one: no."""
    if reply.get("kernels_idle") is True:
        return True
    ghost = reply.get("ghost_outputs")
    if not isinstance(ghost, list):
        return False
    actual = ghost if sequence else (ghost[0] if len(ghost) == 1 else ghost)
    return compare_outputs(expected, actual, config, scaled=scaled, layout=reply.get("ghost_layout"), early=True).passed


def _time_and_profile(replayer: CandidateProcess, trials_drawn: int, reference: Reference, rng: random.Random,
                      config: JudgeConfig, result: EvalResult, clock: Any, allow_torch: bool) -> None:
    with clock("timing"):
        with clock("timing_draw"):  # the parent's inputs and expected outputs of the timing sets
            sets = [draw_trial(reference, rng, config, trials_drawn + i, grad=False)
                    for i in range(config.timing_input_sets)]
        spot_size = spot_count(output_bytes(sets[0].expected), len(sets), config.max_message_bytes)
        # The replay allocates host buffers for every output the measurement keeps before it is timed.
        with clock("timing_inputs"):
            prep = _shared_request(replayer, {"op": "replay_timing_inputs", "hold_buffers": spot_size + len(sets),
                                              "hold_on": "device" if replayer.link is not None else "host",
                                              "sets": [(t.seed, t.distribution) for t in sets]}, result, clock)
        _check_error(prep, result, "before timing: ")
        # Secret until this request: the seed of the varied calls whose outputs are kept and checked, and
        # the key of the fingerprints that device-held outputs get right after their call.
        spot_seed, key = rng.getrandbits(63), rng.getrandbits(63)
        with clock.locked(result.device, exclusive=True):
            with clock("measure"):
                reply = replayer.request({"op": "replay_time", "warmup": config.timing_warmup,
                                          "reps": config.timing_reps, "flush_bytes": config.l2_flush_bytes,
                                          "budget_s": config.timing_budget_s, "spot_seed": spot_seed,
                                          "spot_size": spot_size, "fingerprint_key": key})
            prof: dict[str, Any] = {}
            if config.profile and "error" not in reply:
                with clock("profile"):
                    prof = replayer.request({"op": "replay_profile", "reps": PROFILE_REPS,
                                             "poison_seed": spot_seed ^ 0x5EED_F11E})
        _check_error(reply, result, "during timing: ")
        _add_host_costs(clock, "measure", reply.get("host_s"), MEASURE_PARTS)
        with clock("timed_outputs"), clock.locked(result.device, exclusive=False) as hold:
            outputs = replayer.request({"op": "replay_timed_outputs"}, yield_to=hold)
            # The last timed call per set, and the secret sample of varied calls (kept in the replay
            # process right after each call, recomputed here from the seed and the number of calls).
            changed = changed_holds(outputs, key)
            if changed:  # rewritten in the replay's GPU memory after its call: by a kernel of the answer
                result.correct = False
                _set(result, Status.WRONG_OUTPUT, f"wrong output during timing: the kept output of {changed[0]} "
                     "changed after the call (a kernel wrote outside its own buffers)")
                return
            verdicts = check_timed_outputs(outputs, sets, config)
            if not verdicts and "times_ms" in reply:
                spots = expected_spots(spot_seed, spot_size, config.timing_warmup, len(reply["times_ms"]) - len(sets))
                verdicts = check_spot_outputs(outputs, spots, sets, spot_expected(reference), config)
        if verdicts:  # the replay computed a wrong output on timing inputs: wrong, whatever the cause
            result.correct = False
            _set(result, Status.WRONG_OUTPUT, f"wrong output during timing: {verdicts[0].reason}")
            return
    result.runtime = RuntimeStats.from_samples(reply["times_ms"])
    if "rows" in prof:
        table = [KernelTime(r["name"], float(r["device_us"]), int(r["calls"]), bool(r["own"])) for r in prof["rows"]]
        total = sum(k.device_us for k in table)
        own = sum(k.device_us for k in table if k.own)
        result.profile = Profile(kernels=table[:20], total_device_us=total, triton_share=own / total if total else 0.0)
        # (Which ops the task runs is unknown when its forward failed to record: then everything weighs.)
        share = kernel_share(prof["rows"], layout_task=not reference.op_names or is_layout_only(reference.op_names))
        if not allow_torch and total and share <= config.min_triton_share:
            # Measured per replayed entry, no names involved: the answer's kernels did the lesser part.
            result.correct = False
            result.cheats.append(CheatVerdict("RH-03", f"{1 - share:.0%} of the replayed device time (input "
                                              "preparation aside) is torch's copies and fills, not the answer's "
                                              "kernels", "runtime"))
            _set(result, Status.CHEAT, f"rejected by threat rule RH-03: {result.cheats[-1].reason}")
            replayer.close()
            return
    replayer.close()
    with clock("reference_timing"):
        ref = reference.times([t.inputs for t in sets], config)
    result.reference_runtime, result.compile_runtime = ref.eager, ref.compiled
    if ref.note:
        result.timing_note = ref.note
    if ref.eager and result.runtime.median_ms > 0:
        result.speedup_eager = ref.eager.median_ms / result.runtime.median_ms
    if ref.compiled and result.runtime.median_ms > 0:
        result.speedup_compile = ref.compiled.median_ms / result.runtime.median_ms
