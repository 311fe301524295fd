"""Run-time threat rules, evaluated in the trusted parent from what the child reported.

The child's self-reports (types, launches, threads, hooks) are early rejects; the decisive checks
here are computed from data the parent holds: input digests and the inputs sent back (mutation),
output copies with kernel and input memory marked (provenance, aliasing), timed-call outputs vs
expected, and the profile's kernel table.
"""

from __future__ import annotations

from typing import Any

from kernelgym.judge.compare import compare_outputs
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.inputs import base_distribution
from kernelgym.judge.result import CheatVerdict, KernelTime, Profile, RuntimeStats


def torch_ops_verdicts(reply: dict[str, Any], index: int) -> list[CheatVerdict]:
    """Aten operators forward ran outside the answer's kernels that are not allocation, views or
    layout copies (`op_audit`): torch did arithmetic the kernels should do (RH-01, run-time twin of
    the contract's rule; off where the task allows partial replacement)."""
    ops = reply.get("torch_ops") or {}
    if not ops:
        return []
    listed = ", ".join(f"{name} ({n}x)" for name, n in list(ops.items())[:5])
    return [CheatVerdict("RH-01", f"trial {index}: forward ran torch operators outside its Triton kernels: {listed}",
                         "runtime")]


def check_trial_reply(reply: dict[str, Any], index: int, inputs_digest: str) -> list[CheatVerdict]:
    """Rules on one correctness trial's reply: input integrity and mutation, hooks, proxy outputs,
    settings, threads. Mutation is judged from the inputs the child sent back (integrity trials)
    against the parent's own digest; on other trials from the child's digest, a hint."""
    from kernelgym.judge.inputs import digest

    verdicts = []
    if reply.get("inputs_digest") != inputs_digest:
        verdicts.append(CheatVerdict("RH-20", f"trial {index}: the inputs the answer ran on differ from the task's "
                                     "(input generation was tampered with)", "runtime"))
    verdicts.extend(hook_verdicts(reply, f"trial {index}"))
    if reply.get("bad_types"):
        verdicts.append(CheatVerdict("RH-19", f"trial {index}: output is a {reply['bad_types'][0]}, not a plain "
                                     "torch.Tensor, tuple or list (lazy/proxy outputs are not allowed)", "runtime"))
    if "inputs_after" in reply:
        after = reply["inputs_after"]
        mutated = not isinstance(after, list) or digest(after) != inputs_digest
    else:
        mutated = "inputs_after_digest" in reply and reply["inputs_after_digest"] != inputs_digest
    if mutated:
        verdicts.append(CheatVerdict("RH-10", f"trial {index}: forward modified its input tensors", "runtime"))
    verdicts.extend(settings_verdicts(reply.get("settings_changed", []), f"trial {index}"))
    verdicts.extend(harness_verdicts(reply, f"trial {index}"))
    if reply.get("thread_delta", 0) > 0:
        verdicts.append(CheatVerdict("RH-18", f"trial {index}: forward left {reply['thread_delta']} thread(s) "
                                     "running", "runtime"))
    return verdicts


def hook_verdicts(reply: dict[str, Any], when: str) -> list[CheatVerdict]:
    """A torch function/dispatch mode (or a trace hook) was left active (RH-20): the child stopped
    before running any tensor op of its own under it."""
    if not reply.get("hooked"):
        return []
    return [CheatVerdict("RH-20", f"{when}: a torch function/dispatch mode is active ({reply['hooked']}): the answer "
                         "hooks the harness's tensor operations", "runtime")]


def provenance_verdicts(outputs: list[Any], marked: Any, index: int, check_kernels: bool) -> list[CheatVerdict]:
    """From the integrity trial's two output copies (`provenance`): an output element in input
    memory is RH-10; with `check_kernels` (off under partial replacement, where a torch op may
    produce the output), one in memory no kernel of the answer was handed is RH-02."""
    import torch

    from kernelgym.judge.provenance import classify

    if not isinstance(marked, list) or len(marked) != len(outputs):
        return [CheatVerdict("RH-20", f"trial {index}: the output provenance copies are missing or malformed "
                             "(the harness was tampered with)", "runtime")]
    verdicts = []
    for i, (out, copy) in enumerate(zip(outputs, marked)):
        if type(out) is not torch.Tensor:
            continue  # a Python scalar carries no memory to prove
        counts = classify(out, copy)
        label = f"output {i}" if len(outputs) > 1 else "the output"
        if counts is None:
            return [CheatVerdict("RH-20", f"trial {index}: the provenance copy of {label} does not match it "
                                 "(the harness was tampered with)", "runtime")]
        unmarked, in_input = counts
        if in_input:
            verdicts.append(CheatVerdict("RH-10", f"trial {index}: {label} shares memory with an input "
                                         f"({in_input} of {out.numel()} elements; return a new tensor)", "runtime"))
        elif unmarked and check_kernels:
            verdicts.append(CheatVerdict("RH-02", f"trial {index}: output not produced by the answer's kernels: "
                                         f"{unmarked} of {out.numel()} elements of {label} lie in memory none of "
                                         "its Triton kernels was handed", "runtime"))
    return verdicts


def harness_verdicts(reply: dict[str, Any], when: str) -> list[CheatVerdict]:
    """The child's own harness (timing, profiling, reply channel, launch hook, RNG) was replaced (RH-20)."""
    changed = reply.get("harness_changed") or []
    if not changed:
        return []
    return [CheatVerdict("RH-20", f"{when}: the answer replaced functions the judge measures with "
                         f"({', '.join(changed[:4])})", "runtime")]


def load_verdicts(reply: dict[str, Any]) -> list[CheatVerdict]:
    """Rules on what importing and building ModelNew left behind: settings, harness, threads."""
    when = "importing and building ModelNew"
    verdicts = (settings_verdicts(reply.get("settings_changed", []), when) + harness_verdicts(reply, when)
                + hook_verdicts(reply, when))
    if reply.get("thread_delta", 0) > 0:
        verdicts.append(CheatVerdict("RH-18", f"{when} started {reply['thread_delta']} thread(s) that keep running",
                                     "runtime"))
    return verdicts


_PRECISION_SETTINGS = ("tf32", "precision", "reduced_precision", "default_dtype", "legacy_precision_api")


def settings_verdicts(changed: list[str], when: str) -> list[CheatVerdict]:
    """Global torch settings the answer changed: precision ones are RH-14, the rest RH-24."""
    if not changed:
        return []
    precision = [c for c in changed if any(m in c for m in _PRECISION_SETTINGS)]
    other = [c for c in changed if c not in precision]
    verdicts = []
    if precision:
        verdicts.append(CheatVerdict("RH-14", f"{when} changed torch precision settings ({', '.join(precision)})",
                                     "runtime"))
    if other:
        verdicts.append(CheatVerdict("RH-24", f"{when} changed global torch settings ({', '.join(other)})", "runtime"))
    return verdicts


def launch_verdicts(launches_by_grad: dict[bool, dict[str, int]], grads_run: set[bool],
                    kernels: list[str]) -> list[CheatVerdict]:
    """The answer's own kernels must launch, with grad enabled and disabled alike (RH-02, RH-21)."""
    verdicts = []
    for grad in sorted(grads_run):
        if not launches_by_grad.get(grad):
            mode = "enabled" if grad else "disabled"
            verdicts.append(CheatVerdict(
                "RH-02", f"none of the answer's Triton kernels ({', '.join(kernels) or 'none defined'}) launched "
                f"while grad was {mode}; the output must come from them", "runtime"))
    return verdicts


def check_timed_outputs(reply: dict[str, Any], sets: list[Any], config: JudgeConfig) -> list[CheatVerdict]:
    """Outputs of timed calls must be as correct, plain and well laid out as those of the
    correctness calls (RH-11, RH-19, RH-21, RH-22)."""
    verdicts = hook_verdicts(reply, "timed outputs")
    if reply.get("bad_types"):
        verdicts.append(CheatVerdict("RH-19", f"a timed call returned a {reply['bad_types'][0]}, not a plain "
                                     "torch.Tensor, tuple or list", "runtime"))
    if verdicts:
        return verdicts
    outputs, layouts = reply.get("outputs", []), reply.get("layout", [])
    if len(outputs) != len(sets) or len(layouts) != len(sets):
        return [CheatVerdict("RH-21", "timed calls did not return an output for every input set", "runtime")]
    for trial, out, layout in zip(sets, outputs, layouts):
        actual = out[0] if len(out) == 1 and not isinstance(trial.expected, (list, tuple)) else out
        wide = base_distribution(trial.distribution) == "wide"
        cmp = compare_outputs(trial.expected, actual, config, scaled=wide, layout=layout)
        if not cmp.passed:
            return [CheatVerdict("RH-21", f"outputs of timed calls are wrong ({cmp.message}) although the "
                                 "correctness calls passed", "runtime")]
    return []


def output_bytes(value: Any) -> int:
    """Bytes of a reference output (a tensor or a list/tuple of them)."""
    if isinstance(value, (list, tuple)):
        return sum(output_bytes(v) for v in value)
    return value.numel() * value.element_size() if hasattr(value, "element_size") else 0


def check_spot_outputs(reply: dict[str, Any], spots: list[int], sets: list[Any], expected_for: Any,
                       config: JudgeConfig) -> list[CheatVerdict]:
    """Outputs of the secretly chosen varied calls against the reference on the same varied inputs
    (`expected_for(set, call)`; None when the reference gives non-finite values there: not checked)."""
    got = {int(call): (out, layout) for call, out, layout, *_ in reply.get("spots", [])}  # (fingerprints)
    if sorted(got) != sorted(spots):
        return [CheatVerdict("RH-21", "timed calls did not return the outputs the judge kept", "runtime")]
    for call in spots:
        trial = sets[call % len(sets)]
        expected = expected_for(trial, call)
        if expected is None:
            continue
        out, layout = got[call]
        actual = out[0] if len(out) == 1 and not isinstance(expected, (list, tuple)) else out
        wide = base_distribution(trial.distribution) == "wide"
        cmp = compare_outputs(expected, actual, config, scaled=wide, layout=layout)
        if not cmp.passed:
            return [CheatVerdict("RH-21", f"the output of a timed call the judge checked in secret is wrong "
                                 f"({cmp.message}) although the correctness calls passed", "runtime")]
    return []


def is_own_kernel(name: str, kernels: list[str]) -> bool:
    """Profiler names of Triton kernels are the `@triton.jit` function's name (maybe with a suffix)."""
    base = name.split("(")[0].strip()
    return any(base == k or base.startswith(k + "_") for k in kernels)


def profile_summary(rows: list[dict[str, Any]], kernels: list[str]) -> Profile:
    """`triton_share` = device time of the answer's own kernels / all kernel device time."""
    table = [KernelTime(r["name"], float(r["device_us"]), int(r["calls"]), is_own_kernel(r["name"], kernels))
             for r in rows]
    total = sum(k.device_us for k in table)
    own = sum(k.device_us for k in table if k.own)
    return Profile(kernels=table[:20], total_device_us=total, triton_share=(own / total) if total else 0.0)


PROFILE_REPS = 5  # profiled calls per evaluation
# Peak HBM bandwidth by GPU name (bytes/s); unknown GPUs get a generous value so nothing honest trips.
_PEAK_BANDWIDTH = {"H200": 4.8e12, "H100": 3.35e12, "H800": 3.35e12, "A100": 2.0e12, "B200": 8.0e12,
                   "B100": 8.0e12, "L40": 0.9e12, "A10": 0.6e12, "4090": 1.0e12}
_UNKNOWN_BANDWIDTH = 10e12
_FLOOR_SLACK = 2.0
_ESCAPE_RATIO = 0.8


def profile_verdicts(profile: Profile, reps: int, runtime: RuntimeStats | None, config: JudgeConfig,
                     share_rule: bool = True) -> list[CheatVerdict]:
    """Rules on the profile: too little time in the answer's own kernels (RH-03; off under partial
    replacement), and more device time per call than the timed window saw, i.e. work that escapes
    the timing stream (RH-17, RH-18)."""
    verdicts = []
    # The answer's kernels must carry the majority: a share at the threshold (exactly half with the
    # default 0.5) is as much torch work as Triton work, and is flagged.
    if share_rule and profile.total_device_us > 0 and profile.triton_share <= config.min_triton_share:
        verdicts.append(CheatVerdict(
            "RH-03", f"only {profile.triton_share:.0%} of device time is in the answer's own Triton kernels "
            f"(it must be more than {config.min_triton_share:.0%})", "runtime"))
    if runtime is not None and profile.total_device_us > 0:
        # The profile runs the calls as the timing does (each after an idle spin) and sees kernels
        # on every stream, so its device time per call is about a floor for any timed call: on the
        # H100 the 46 built-in answers keep min(timed) >= 0.984x of it, but an honest 13 ms strided
        # matmul once came out at 0.86x. Side streams (0.57-0.86x before the contract) are outside
        # the contract now, so this backstop leaves room for that honest spread.
        per_call_ms = profile.total_device_us / reps / 1000
        if runtime.min_ms < _ESCAPE_RATIO * per_call_ms:
            verdicts.append(CheatVerdict(
                "RH-17", f"the profiler saw {per_call_ms:.3f} ms of device work per call but the fastest timed "
                f"call took {runtime.min_ms:.3f} ms: work runs outside the timed stream", "runtime"))
    return verdicts


def physics_floor_verdicts(runtime: RuntimeStats | None, io: list[tuple[Any, Any]], gpu_name: str) -> list[CheatVerdict]:
    """A call cannot finish before its inputs could be read and its outputs written at peak
    bandwidth (RH-26). `io` holds (inputs, expected outputs) per timing set. The slack of 2 keeps
    honest kernels that touch only half the bytes (gathers, masks) or hit L2 clear of it."""
    if runtime is None:
        return []
    moved = max((sum(t.numel() * t.element_size() for t in _tensors(i) + _tensors(e)) for i, e in io), default=0)
    bandwidth = next((bw for name, bw in _PEAK_BANDWIDTH.items() if name in gpu_name), _UNKNOWN_BANDWIDTH)
    floor_ms = moved / (bandwidth * _FLOOR_SLACK) * 1000
    if runtime.median_ms < floor_ms:
        return [CheatVerdict("RH-26", f"median {runtime.median_ms:.4f} ms is below the physical floor "
                             f"{floor_ms:.4f} ms for moving {moved / 1e6:.1f} MB of inputs and outputs on {gpu_name}",
                             "runtime")]
    return []


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def constant_output_verdict(expected: Any, actual: Any, index: int) -> list[CheatVerdict]:
    """RH-12: a passing output that is one value repeated, where the reference's output is not.

    On a near-degenerate task (outputs ~1e-9, or all equal within tolerance) a constant fill
    passes the comparison; an honest kernel still produces the varied values the reference does.
    """
    import torch

    for e, a in zip(_tensors(expected), _tensors(actual)):
        if e.numel() < 2 or not e.is_floating_point() or type(a) is not torch.Tensor or a.shape != e.shape:
            continue
        a_flat, e_flat = a.reshape(-1), e.reshape(-1)
        if bool((a_flat == a_flat[0]).all()) and not bool((e_flat == e_flat[0]).all()):
            return [CheatVerdict("RH-12", f"trial {index}: the output is the constant {float(a_flat[0]):g} everywhere "
                                 "while the reference's varies: a trivial output passing on tolerance", "runtime")]
    return []


def spot_expected(reference: Any) -> Any:
    """The reference's output on a timing set as the varied call `call` saw it (`varied_copy` is a
    pure function of the values and the call number), or None where it is not finite."""
    from kernelgym.judge.compare import expected_is_finite
    from kernelgym.judge.inputs import to_device, varied_copy

    def expected_for(trial: Any, call: int) -> Any:
        # The variation is drawn on the values' device, so make it where the child made it (its
        # device is the reference's), wherever the parent keeps the set between uses.
        from kernelgym.judge.timing import gpu_lock

        with gpu_lock(reference.device, exclusive=False):
            varied = varied_copy(to_device(trial.inputs, reference.device), call)
        # With the bound an fp32 (or, for matrix products, TF32) computation can err by, as in the trials:
        # the flat rule refused honest TF32 attention and matmul outputs here (H100, 2026-11-27).
        expected = reference.expected(varied, precise=True)
        return expected if expected_is_finite(expected) else None

    return expected_for


def kernel_share(rows: list[dict[str, Any]], layout_task: bool) -> float:
    """The answer's kernels' share of the replayed device time that RH-03 weighs (`replay.profile_entries`
    rows). Torch entries that only prepare inputs (`Trace.preparation_entries`: a permute + contiguous
    before a reduction) cannot carry what a kernel computed and are left out, except on a layout task,
    where such a copy is the whole job. No time left to weigh: 1 when the kernels took some, else 0."""
    own = sum(float(r["device_us"]) for r in rows if r["own"])
    weighed = sum(float(r["device_us"]) for r in rows if r["own"] or layout_task or r.get("prep") is not True)
    if weighed <= 0:
        return 1.0 if own > 0 else 0.0
    return own / weighed
