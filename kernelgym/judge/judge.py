"""`judge(task, answer, config) -> EvalResult`: one honest evaluation of one answer.

Phases: parse -> static rules -> (child) import + build -> correctness trials compared here ->
run-time threat checks -> (GPU) timing, profile, reference timing. The candidate only ever runs
in the child; expected outputs, seeds and the verdict never leave this process.
"""

from __future__ import annotations

import contextlib
import random
import secrets
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from kernelgym.judge import static_checks
from kernelgym.judge.compare import as_list, compare_outputs
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.errors import trim_text
from kernelgym.judge.extract import AnswerError, decode_answer, extract_code
from kernelgym.judge.inputs import base_distribution, digest, fresh_seed
from kernelgym.judge.messages import build_message, load_message
from kernelgym.judge.protocol import PROFILE_KERNELS_DONE
from kernelgym.judge.reference import Reference
from kernelgym.judge.result import CheatVerdict, EvalResult, Status, TrialResult
from kernelgym.judge.runtime_checks import (
    check_spot_outputs,
    check_timed_outputs,
    check_trial_reply,
    constant_output_verdict,
    spot_expected,
    PROFILE_REPS,
    harness_verdicts,
    hook_verdicts,
    launch_verdicts,
    load_verdicts,
    physics_floor_verdicts,
    profile_summary,
    profile_verdicts,
    provenance_verdicts,
    output_bytes,
    torch_ops_verdicts,
)
from kernelgym.judge.sandbox import CandidateProcess, ChildFailed
from kernelgym.judge.spot import expected_spots, spot_count
from kernelgym.judge.timing import GpuHold, gpu_lock
from kernelgym.judge.trials import Trial, TrialPlan, draw_trial
from kernelgym.judge.versions import software_versions
from kernelgym.tasks.task import Task


class _PhaseClock:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        # This thread's CPU per phase: every evaluation in flight in one judging process shares its GIL,
        # so the trusted side's Python, not the GPU, can be what bounds throughput (issue 26)
        self.cpu: dict[str, float] = {}
        self._cpu0 = time.thread_time()

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0)
            self.cpu[name] = round(self.cpu.get(name, 0.0) + time.thread_time() - c0, 4)

    def cpu_seconds(self) -> dict[str, float]:
        """"judge": this thread's CPU since the clock started; "judge_<phase>": within each phase."""
        return {"judge": round(time.thread_time() - self._cpu0, 4)} | {f"judge_{k}": v for k, v in self.cpu.items()}

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = round(self.seconds.get(name, 0.0) + seconds, 4)

    @contextlib.contextmanager
    def locked(self, device: str, exclusive: bool) -> Iterator[GpuHold | None]:
        """`gpu_lock`, with the wait for it added to the `gpu_wait` phase: under load, how long
        an evaluation queued behind its neighbours' measurements."""
        t0 = time.perf_counter()
        with gpu_lock(device, exclusive) as hold:
            self.add("gpu_wait", time.perf_counter() - t0)
            yield hold


def judge(task: Task, answer: str | bytes, config: JudgeConfig | None = None) -> EvalResult:
    """Judge one answer. Never raises for a bad answer (its status says what happened);
    raises `TaskError` when the task itself is unusable and `ValueError` for a bad config."""
    config = config or JudgeConfig()
    clock = _PhaseClock()
    device = config.resolved_device()
    size = config.resolved_size(device)
    result = EvalResult(status=Status.OK, task_id=task.task_id, device=device, size=size,
                        versions=software_versions(), gpu_name=_gpu_name(device), engine=config.engine)
    with clock("parse"):
        parsed = (_parse_capabilities if config.engine == "replay" else _parse)(task, answer, config, result)
    if parsed is not None:
        code, report = parsed
        rng = random.Random(config.seed if config.seed is not None else fresh_seed())
        with clock("reference_setup"):  # the model is built on the host; only its move to the GPU holds a share
            reference = Reference(task, size, device, init_seed=rng.getrandbits(62))
        with tempfile.TemporaryDirectory(prefix="kernelgym-") as scratch:
            if config.engine == "replay":
                from kernelgym.judge import replay_judge

                replay_judge.evaluate(Path(scratch), code, reference, rng, config, result, clock,
                                      torch_ops_allowed(task, config))
            else:
                _evaluate(Path(scratch), code, report, reference, rng, config, result, clock)
    result.phase_seconds = clock.seconds
    result.cpu_seconds = result.cpu_seconds | clock.cpu_seconds()
    if not result.message:
        result.message = _summary(result)
    return result


def torch_ops_allowed(task: Task, config: JudgeConfig) -> bool:
    """The partial-replacement policy for this task: the config's choice, else the task's."""
    return task.allows_torch_ops() if config.allow_torch_ops is None else config.allow_torch_ops


def _parse(task: Task, answer: str | bytes, config: JudgeConfig, result: EvalResult) -> tuple[str, Any] | None:
    """Code and static report, or None after setting an invalid/cheat status on `result`."""
    try:
        code = extract_code(decode_answer(answer, config.max_answer_bytes))
    except AnswerError as e:
        return _finish(result, Status.INVALID_ANSWER, str(e))
    try:
        report = static_checks.analyse(code, allow_torch_compute=torch_ops_allowed(task, config))
    except SyntaxError as e:
        return _finish(result, Status.INVALID_ANSWER, f"syntax error at line {e.lineno}: {e.msg}",
                       error=trim_text(f"SyntaxError: {e.msg} (line {e.lineno})\n{(e.text or '').rstrip()}"))
    except (ValueError, RecursionError, MemoryError) as e:
        return _finish(result, Status.INVALID_ANSWER, f"the code cannot be parsed: {type(e).__name__}")
    result.kernels_defined = report.kernels
    if not report.has_model_new:
        return _finish(result, Status.INVALID_ANSWER, "the code does not define class ModelNew")
    if config.static_checks:
        result.cheats.extend(report.verdicts)
        if report.violations and not report.verdicts:
            listed = "; ".join(report.violations[:3]) + (f" (+{len(report.violations) - 3} more)"
                                                          if len(report.violations) > 3 else "")
            return _finish(result, Status.INVALID_ANSWER, f"outside the answer contract: {listed}",
                           error="\n".join(report.violations))
        if not report.kernels:
            result.cheats.append(CheatVerdict("RH-01", "the answer defines no @triton.jit kernel", "static"))
        if result.cheats:
            rules = ", ".join(sorted({c.rule for c in result.cheats}))
            return _finish(result, Status.CHEAT, f"rejected by threat rule(s) {rules}: {result.cheats[0].reason}")
    return code, report


def _parse_capabilities(task: Task, answer: str | bytes, config: JudgeConfig, result: EvalResult) -> tuple[str, Any] | None:
    """Judge v4's static step: only capability bans (`capabilities.scan`), each an `invalid_answer`
    naming the construct; whether the answer computes honestly is the replay's to show."""
    from kernelgym.judge import capabilities

    try:
        code = extract_code(decode_answer(answer, config.max_answer_bytes))
    except AnswerError as e:
        return _finish(result, Status.INVALID_ANSWER, str(e))
    try:
        report = capabilities.scan(code)
    except SyntaxError as e:
        return _finish(result, Status.INVALID_ANSWER, f"syntax error at line {e.lineno}: {e.msg}",
                       error=trim_text(f"SyntaxError: {e.msg} (line {e.lineno})\n{(e.text or '').rstrip()}"))
    except (ValueError, RecursionError, MemoryError) as e:
        return _finish(result, Status.INVALID_ANSWER, f"the code cannot be parsed: {type(e).__name__}")
    result.kernels_defined = report.kernels
    if not report.has_model_new:
        return _finish(result, Status.INVALID_ANSWER, "the code does not define class ModelNew")
    if config.static_checks and report.violations:
        listed = "; ".join(report.violations[:3]) + (f" (+{len(report.violations) - 3} more)"
                                                      if len(report.violations) > 3 else "")
        return _finish(result, Status.INVALID_ANSWER, f"outside the answer contract: {listed}",
                       error="\n".join(report.violations))
    return code, report


def _finish(result: EvalResult, status: Status, message: str, error: str = "", fault: str = "") -> None:
    result.status, result.message = status, message
    if status is Status.COMPILE_ERROR:
        result.compiled = False  # a Triton compile error at a kernel's first launch is not compiled
    result.error = error or result.error
    result.fault = fault or result.fault
    return None


def _evaluate(scratch: Path, code: str, report: Any, reference: Reference, rng: random.Random,
              config: JudgeConfig, result: EvalResult, clock: _PhaseClock) -> None:
    code_path = scratch / f"answer_{secrets.token_hex(6)}.py"
    code_path.write_text(code, encoding="utf-8")
    deadline = time.monotonic() + config.timeout_s
    mem = int(config.cpu_memory_gb * (1 << 30)) if result.device == "cpu" else 0
    child = CandidateProcess.start(scratch, result.device, deadline, config.max_log_bytes, config.max_message_bytes, mem)
    try:
        with child:
            _run(child, code_path, report, reference, rng, config, result, clock)
    except ChildFailed as f:
        _finish(result, Status(f.status), f.message, error=trim_text(f.message), fault=f.fault)
    if child.transfer_seconds:
        clock.add("output_transfer", child.transfer_seconds)
    if child.leftovers:
        result.correct = False
        result.cheats.append(CheatVerdict("RH-27", f"the answer left {child.leftovers} process(es) running outside "
                                          "its process group (killed)", "runtime"))
        _finish(result, Status.CHEAT, f"rejected by threat rule RH-27: {result.cheats[-1].reason}")


def _run(child: CandidateProcess, code_path: Path, report: Any, reference: Reference, rng: random.Random,
         config: JudgeConfig, result: EvalResult, clock: _PhaseClock) -> None:
    plan = TrialPlan(reference, rng, config, result.device)
    with clock("compile"):
        child.send(load_message(reference, code_path, result.device))
        with clock("reference"):  # trial 0 is drawn while the child imports the answer
            first = plan.next()
        reply = child.receive()
        confined = reply.get("confinement")  # the child's report, written before the answer ran: a hint
        result.confinement = [str(x) for x in confined.get("layers", [])][:8] if isinstance(confined, dict) else []
        if "error" not in reply:
            result.cheats.extend(load_verdicts(reply))
            reply = child.request(build_message(reference))
    if "error" in reply:
        return _finish(result, Status(reply["kind"]), _first_line(reply["error"]), error=reply["error"],
                       fault=reply.get("fault", ""))
    result.compiled = True
    result.cheats.extend(load_verdicts(reply))
    if reply.get("hooked"):
        return _finish(result, Status.CHEAT, f"rejected by threat rule RH-20: {result.cheats[-1].reason}")
    with clock("correctness"):
        # Under partial replacement a torch op may produce the output: provenance checks aliasing only.
        check_kernels = not torch_ops_allowed(reference.task, config)
        if not _correctness(child, plan, first, report, config, result, clock, check_kernels):
            return None
    if result.device == "cpu":
        result.timing_note = "not measured: timing and profiling need a GPU (this run used the CPU interpreter)"
        return None
    _time_and_profile(child, len(plan.drawn), report, reference, rng, config, result, clock)
    return None


def _correctness(child: CandidateProcess, plan: TrialPlan, first: Trial | None, report: Any, config: JudgeConfig,
                 result: EvalResult, clock: _PhaseClock, check_kernels: bool) -> bool:
    """Run the plan's trials; fill `result`. True when all passed and no run-time rule fired.
    With `config.stop_at_first_failure`, the first trial whose output fails ends the run: the
    verdict is decided (wrong output, or a cheat if a rule already fired), later trials could only
    add to it. An answer that passes runs every trial."""
    launches_by_grad: dict[bool, dict[str, int]] = {False: {}, True: {}}
    outputs_seen: dict[str, int] = {}  # fingerprint of each passing trial's output -> its trial (replay check)
    t, stopped = first, False
    while t is not None:
        passed = _run_trial(child, t, check_kernels, config, result, clock, launches_by_grad, outputs_seen)
        if passed is None:
            return False  # an error or a hooked harness: `_trial_failed` set the verdict
        if t.index != 0:
            t.expected = None  # compared: only trial 0's output is needed again (by the probe)
        if not passed and config.stop_at_first_failure:
            stopped = plan.may_have_more()
            break
        with clock("reference"):
            t = plan.next()
    grads_run = {d.grad for d in plan.drawn}  # every trial drawn has run: the next is drawn after
    result.cheats.extend(launch_verdicts(launches_by_grad, grads_run, report.kernels))
    result.kernels_launched = sorted({k for d in launches_by_grad.values() for k in d})
    if result.cheats:
        rules = ", ".join(sorted({c.rule for c in result.cheats}))
        _finish(result, Status.CHEAT, f"rejected by threat rule(s) {rules}: {result.cheats[0].reason}")
        return False
    failed = [t for t in result.trials if not t.passed]
    if failed:
        later = "; later trials not run" if stopped else ""
        _finish(result, Status.WRONG_OUTPUT,
                f"wrong output in {len(failed)} of {len(result.trials)} trials{later}; first: trial {failed[0].index} "
                f"({failed[0].distribution} inputs): {failed[0].message}")
        return False
    result.correct = True
    return True


def _run_trial(child: CandidateProcess, t: Trial, check_kernels: bool, config: JudgeConfig, result: EvalResult,
               clock: _PhaseClock, launches_by_grad: dict[bool, dict[str, int]],
               outputs_seen: dict[str, int] | None = None) -> bool | None:
    """One trial in the child, its output compared here; appends its `TrialResult`. True: the
    output passed; False: it did not; None: the trial errored or found the harness hooked (the
    verdict is set). Cheat verdicts it finds go to `result.cheats` either way.

    `outputs_seen` (fingerprint of each earlier passing trial's output -> trial index): a failing
    output that is bit for bit an earlier passing one, for other inputs, is a replayed cache (RH-11). A
    replaying answer fails at its first cache hit, so with `stop_at_first_failure` the cache probe
    (the trial after the secret ones) would never run for it; this check needs no extra trial."""
    if t.variant is not None:
        reply = child.request(build_message(t.variant, variant=True))
        if "error" in reply or reply.get("hooked"):
            _trial_failed(result, t, reply)
            return None
    poison = sum(e.numel() * e.element_size() for e in as_list(t.expected) if hasattr(e, "numel"))
    # The seed is revealed only now; the child regenerates the inputs (no bulk transfer) and
    # proves it by their digest. Expected outputs stay here.
    with clock.locked(result.device, exclusive=False) as hold, clock("trial_runs"):
        reply = child.request({"op": "trial", "index": t.index, "seed": t.seed, "distribution": t.distribution,
                               "grad": t.grad, "poison_bytes": poison, "probe_seed": t.probe_seed,
                               "probe_of": t.probe_of.index if t.probe_of is not None else None,
                               "integrity": t.integrity, "variant": t.variant is not None},
                              yield_to=hold)
    if "error" in reply:
        _trial_failed(result, t, reply)
        return None
    result.cheats.extend(check_trial_reply(reply, t.index, t.inputs_digest))
    if check_kernels:
        result.cheats.extend(torch_ops_verdicts(reply, t.index))
    for name, n in reply.get("launches", {}).items():
        launches_by_grad[t.grad][name] = launches_by_grad[t.grad].get(name, 0) + n
    if "outputs" not in reply:  # hooked, tampered or a proxy output: the verdicts above say which
        result.trials.append(TrialResult(t.index, t.label, t.grad, False, message="no plain output to compare"))
        return False
    outputs = reply["outputs"]
    actual = outputs if reply.get("is_sequence") else (outputs[0] if len(outputs) == 1 else outputs)
    with clock.locked(result.device, exclusive=False), clock("compare"):  # comparisons run kernels
        if t.integrity:
            result.cheats.extend(provenance_verdicts(outputs, reply.get("marked"), t.index, check_kernels))
        wide = base_distribution(t.distribution) == "wide"
        cmp = compare_outputs(t.expected, actual, config, scaled=wide, layout=reply.get("layout"))
        if cmp.passed:
            result.cheats.extend(constant_output_verdict(t.expected, actual, t.index))
        if t.probe_of is not None and not cmp.passed and compare_outputs(t.probe_of.expected, actual, config,
                                                                              scaled=wide).passed:
            result.cheats.append(CheatVerdict(
                "RH-11", f"trial {t.index} re-ran trial {t.probe_of.index}'s inputs with a few values swapped and "
                "got trial 0's output back: the answer returns a cached result", "runtime"))
        elif outputs_seen is not None and t.variant is None and _replay_checkable(outputs) \
                and (cmp.passed or outputs_seen):
            fingerprint = digest(outputs)
            if cmp.passed:
                outputs_seen.setdefault(fingerprint, t.index)
            elif fingerprint in outputs_seen:
                result.cheats.append(CheatVerdict(
                    "RH-11", f"trial {t.index}'s output is bit for bit trial {outputs_seen[fingerprint]}'s, which "
                    "passed on other inputs: the answer returns a cached result", "runtime"))
    result.trials.append(TrialResult(t.index, t.label, t.grad, cmp.passed, cmp.max_abs_error,
                                     cmp.max_rel_error, cmp.mismatched, cmp.total, cmp.message))
    return cmp.passed


# Outputs this small can coincide between two honest trials (an argmax over a few classes, a
# boolean): the replay check leaves them to the cache probe.
_REPLAY_MIN_ELEMENTS = 16


def _replay_checkable(outputs: list[Any]) -> bool:
    return sum(o.numel() for o in outputs if isinstance(o, torch.Tensor)) >= _REPLAY_MIN_ELEMENTS


def _trial_failed(result: EvalResult, t: Trial, reply: dict[str, Any]) -> None:
    """A trial (or the variant's build) that errored or found the harness hooked: its verdict."""
    if "error" not in reply:
        result.cheats.extend(hook_verdicts(reply, f"trial {t.index}"))
        _finish(result, Status.CHEAT, f"rejected by threat rule RH-20: {result.cheats[-1].reason}")
        return
    result.trials.append(TrialResult(t.index, t.label, t.grad, False, message=_first_line(reply["error"])))
    _finish(result, Status(reply["kind"]), f"trial {t.index}: {_first_line(reply['error'])}",
            error=reply["error"], fault=reply.get("fault", ""))


def _time_and_profile(child: CandidateProcess, trials_drawn: int, report: Any, reference: Reference,
                      rng: random.Random, config: JudgeConfig, result: EvalResult, clock: _PhaseClock) -> None:
    from kernelgym.judge.result import RuntimeStats

    with clock("timing"):
        # Fresh seeds: a result cached during the correctness trials can never be replayed here.
        # Each draw holds the GPU's shared side for itself (`draw_trial`), the child's copy of the
        # sets for its request: a queued measurement waits for one of them, not for all.
        sets = [draw_trial(reference, rng, config, trials_drawn + i, grad=False)
                for i in range(config.timing_input_sets)]
        with clock.locked(result.device, exclusive=False) as hold:
            prep = child.request({"op": "timing_inputs", "sets": [(t.seed, t.distribution) for t in sets]},
                                 yield_to=hold)
        if "error" in prep:
            return _finish(result, Status(prep["kind"]), f"before timing: {_first_line(prep['error'])}",
                           error=prep["error"], fault=prep.get("fault", ""))
        if prep.get("inputs_digests") != [t.inputs_digest for t in sets]:
            result.cheats.append(CheatVerdict("RH-20", "the timing inputs the answer ran on differ from the task's "
                                              "(input generation was tampered with)", "runtime"))
        # The measurement and the profile share one exclusive hold: every hold first drains the
        # GPU of its readers (other answers' trials), which cost more than a short measurement.
        # The hold ends when the profiled calls have run (the child's notice), not after the
        # profiler's teardown and the reading of its records, which need no GPU.
        prof: dict[str, Any] = {"error": "not profiled"}
        profile_reps = PROFILE_REPS
        # Secret: the seed of the uniform sample of varied calls whose outputs are checked (fewer calls
        # for large outputs, `spot_count`); revealed only with the request that runs them.
        spot_seed = rng.getrandbits(63)
        spot_size = spot_count(output_bytes(sets[0].expected), len(sets), config.max_message_bytes)
        with clock.locked(result.device, exclusive=True):
            with clock("measure"):
                reply = child.request({"op": "time", "warmup": config.timing_warmup, "reps": config.timing_reps,
                                       "flush_bytes": config.l2_flush_bytes, "budget_s": config.timing_budget_s,
                                       "spot_seed": spot_seed, "spot_size": spot_size})
            if config.profile and "error" not in reply:
                with clock("profile"):
                    prof = child.request({"op": "profile", "reps": PROFILE_REPS, "notify": True})
                    if prof.get("kind") == Status.OOM.value:
                        # The profiled calls' input copies, made up front, hold more memory than a timed
                        # call: once more with one call on one set, which holds less than a timed call.
                        profile_reps = 1
                        prof = child.request({"op": "profile", "reps": profile_reps, "notify": True, "lean": True})
        if prof.get("op") == PROFILE_KERNELS_DONE:
            with clock("profile"):
                prof = child.receive()
    if "error" in reply:
        return _finish(result, Status(reply["kind"]), f"during timing: {_first_line(reply['error'])}",
                       error=reply["error"], fault=reply.get("fault", ""))
    result.cheats.extend(harness_verdicts(reply, "timing") + hook_verdicts(reply, "timing"))
    if reply.get("bad_types"):
        result.cheats.append(CheatVerdict("RH-19", f"a timed call returned a {reply['bad_types'][0]}, not a plain "
                                          "torch.Tensor, tuple or list", "runtime"))
    if "times_ms" not in reply:
        result.correct = False
        rules = ", ".join(sorted({c.rule for c in result.cheats})) or "RH-20"
        reason = result.cheats[0].reason if result.cheats else "the timing reply is malformed"
        return _finish(result, Status.CHEAT, f"rejected by threat rule(s) {rules}: {reason}")
    if len(reply["times_ms"]) < max(config.timing_reps, len(sets)):
        # The spot sample is recomputed from the number of calls the child reports: fewer than the
        # judge asked for would shrink (or empty) the checked sample.
        result.correct = False
        result.cheats.append(CheatVerdict("RH-20", f"the child reported {len(reply['times_ms'])} timed calls, fewer "
                                          f"than the {config.timing_reps} the judge asked for", "runtime"))
        return _finish(result, Status.CHEAT, f"rejected by threat rule RH-20: {result.cheats[-1].reason}")
    with clock("timed_outputs"):
        with clock.locked(result.device, exclusive=False) as hold:
            outputs = child.request({"op": "timed_outputs"}, yield_to=hold)
            result.cheats.extend(check_timed_outputs(outputs, sets, config))
        if not result.cheats:  # reference runs and comparisons: GPU work, in a shared hold of their own
            # The calls the child had to keep follow from the seed and the number of varied calls it ran.
            spots = expected_spots(spot_seed, spot_size, config.timing_warmup, len(reply["times_ms"]) - len(sets))
            with clock.locked(result.device, exclusive=False):
                result.cheats.extend(check_spot_outputs(outputs, spots, sets, spot_expected(reference), config))
    result.runtime = RuntimeStats.from_samples(reply["times_ms"])
    if config.profile:
        result.cheats.extend(hook_verdicts(prof, "profile"))
        if "kernels" not in prof and not prof.get("hooked"):
            # The profile is the only run-time check of where the device time goes (RH-03, RH-17):
            # an answer whose profile fails after its timing succeeded (a ballast sized so that the
            # profiled calls run out of memory, say, and the lean retry too) must not keep its
            # timing without it. Same verdict as a failure during timing.
            result.correct = False
            if "error" in prof and not result.cheats:
                return _finish(result, Status(prof.get("kind", Status.RUNTIME_ERROR.value)),
                               f"during profiling: {_first_line(str(prof['error']))}",
                               error=str(prof["error"]), fault=prof.get("fault", ""))
            if "error" not in prof:
                result.cheats.append(CheatVerdict("RH-20", "the profile reply is malformed", "runtime"))
            rules = ", ".join(sorted({c.rule for c in result.cheats}))
            return _finish(result, Status.CHEAT, f"rejected by threat rule(s) {rules}: {result.cheats[0].reason}")
        if "kernels" in prof:
            result.profile = profile_summary(prof["kernels"], report.kernels)
            result.cheats.extend(profile_verdicts(result.profile, profile_reps, result.runtime, config,
                                                  share_rule=not torch_ops_allowed(reference.task, config)))
    result.cheats.extend(physics_floor_verdicts(result.runtime, [(t.inputs, t.expected) for t in sets], result.gpu_name))
    child.close()  # the candidate is done before the reference is timed on the same GPU
    with clock("reference_timing"):
        ref = reference.times([t.inputs for t in sets], config)
    result.reference_runtime, result.compile_runtime = ref.eager, ref.compiled
    if ref.note:
        result.timing_note = ref.note
    if ref.eager and result.runtime.median_ms > 0:
        result.speedup_eager = ref.eager.median_ms / result.runtime.median_ms
    if ref.compiled and result.runtime.median_ms > 0:
        result.speedup_compile = ref.compiled.median_ms / result.runtime.median_ms
    if result.cheats:
        result.correct = False
        rules = ", ".join(sorted({c.rule for c in result.cheats}))
        _finish(result, Status.CHEAT, f"rejected by threat rule(s) {rules}: {result.cheats[0].reason}")
    return None


def _summary(result: EvalResult) -> str:
    n = len(result.trials)
    text = f"correct on {n}/{n} trials"
    if result.speedup_eager is not None:
        text += f"; {result.speedup_eager:.2f}x vs eager"
    if result.speedup_compile is not None:
        text += f", {result.speedup_compile:.2f}x vs torch.compile"
    if result.profile is not None:
        text += f"; triton_share {result.profile.triton_share:.0%}"
    if result.timing_note:
        text += f" ({result.timing_note})"
    return text


def _first_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else text


def _gpu_name(device: str) -> str:
    if device == "cpu":
        return ""
    import torch

    return torch.cuda.get_device_name(device)
