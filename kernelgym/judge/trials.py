"""The secret correctness trials of one evaluation, drawn one at a time as they are run.

Each trial is an input set from a fresh secret seed and its reference output, computed in the
trusted judge process. Trials are drawn lazily, right before the child runs them (trial 0 while
the child imports the answer): an answer that fails trial k never costs the reference work of the
trials after it, and only the outputs still needed are kept in GPU memory (trial 0's, which the
cache probe compares against, and the current one's).

Every draw takes the GPU's shared side for itself alone (input generation, the reference's
forward, the finiteness check and the digest all run kernels), so a measurement queued behind it
waits for one draw, not for a whole plan; building a hidden variant's reference model (module
exec, weights initialised on the host) holds nothing until its weights move to the GPU.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.inputs import digest, swap_probe
from kernelgym.judge.reference import Reference
from kernelgym.judge.timing import gpu_lock
from kernelgym.tasks.task import TaskError
from kernelgym.tasks.variants import candidate_variants

# Hidden variants tried per evaluation until one the reference can run (RH-15, RH-16).
VARIANT_ATTEMPTS = 4


@dataclass
class Trial:
    index: int
    seed: int
    distribution: str
    grad: bool
    inputs: list[Any]  # emptied once drawn: only trial 0 (until its probe is drawn) and timing sets keep theirs
    expected: Any
    inputs_digest: str = ""
    probe_seed: int | None = None  # set on the probe: trial 0's inputs with a few values swapped
    probe_of: "Trial | None" = None
    integrity: bool = False  # the child sends inputs back and output copies with memory marked
    variant: "Reference | None" = None  # a hidden variant's reference (RH-15, RH-16)

    @property
    def label(self) -> str:
        if self.variant is not None:
            return f"{self.distribution}+variant"
        return f"{self.distribution}+probe" if self.probe_of is not None else self.distribution


def draw_trial(reference: Reference, rng: random.Random, config: JudgeConfig, index: int, grad: bool) -> Trial:
    """One input set from a fresh secret seed (`Reference.draw`: values of both signs, then folded,
    then the task's own inputs, whichever first gives a finite reference), in one shared hold."""
    dist = config.distributions[index % len(config.distributions)]
    with gpu_lock(reference.device, exclusive=False):
        dist, seed, inputs, expected = reference.draw(dist, lambda: rng.getrandbits(62))
        inputs_digest = digest(inputs)
    return Trial(index, seed, dist, grad=grad, inputs=inputs, expected=expected, inputs_digest=inputs_digest)


class TrialPlan:
    """The correctness trials in the order they run: `num_trials` secret trials (distributions
    cycled, grad alternating off/on), then the cache probe (trial 0's inputs with a few values
    swapped), then a hidden variant when the task has one the reference can run. Integrity trials
    (inputs sent back, output provenance): all on the CPU, one secret trial on a GPU, where the
    copies cost transfers of the output's size; the answer cannot tell which, its calls are all
    alike. `next()` draws the next trial only when it is asked for."""

    def __init__(self, reference: Reference, rng: random.Random, config: JudgeConfig, device: str) -> None:
        self.reference, self.rng, self.config, self.device = reference, rng, config, device
        self.checked = rng.randrange(config.num_trials)  # the GPU's integrity trial, fixed before any runs
        self.drawn: list[Trial] = []
        self._first_inputs: list[Any] | None = None
        self._variant_done = False

    def next(self) -> Trial | None:
        """The next trial, drawn now; None when the plan is exhausted."""
        n = self.config.num_trials
        index = len(self.drawn)
        if index < n:
            trial = draw_trial(self.reference, self.rng, self.config, index, grad=(index % 2 == 1))
            if index == 0:
                self._first_inputs = trial.inputs
        elif index == n:
            trial = self._probe(index)
        elif not self._variant_done:
            self._variant_done = True
            trial = self._variant(index)
            if trial is None:
                return None
        else:
            return None
        trial.inputs = []
        trial.integrity = self.device == "cpu" or trial.index == self.checked
        self.drawn.append(trial)
        return trial

    def may_have_more(self) -> bool:
        """False once `next` is known to return None (the variant, when the task has none, is
        known only by trying)."""
        return len(self.drawn) <= self.config.num_trials or not self._variant_done

    def _probe(self, index: int) -> Trial:
        first, probe_seed = self.drawn[0], self.rng.getrandbits(62)
        with gpu_lock(self.reference.device, exclusive=False):
            probe_inputs = swap_probe(self._first_inputs or [], probe_seed)
            self._first_inputs = None  # trial 0's inputs were kept for this only
            expected = self.reference.expected(probe_inputs, precise=True)
            trial = Trial(index, first.seed, first.distribution, grad=first.grad, inputs=probe_inputs,
                          expected=expected, inputs_digest=digest(probe_inputs), probe_seed=probe_seed, probe_of=first)
        return trial

    def _variant(self, index: int) -> Trial | None:
        """One trial of a hidden variant (constants changed by secret amounts, `tasks.variants`),
        with its own reference model built under a fresh init seed; variants the reference cannot
        run are skipped."""
        ref = self.reference
        for overrides in candidate_variants(ref.task, ref.size, self.rng, VARIANT_ATTEMPTS):
            try:
                variant = Reference(ref.task, ref.size, ref.device, init_seed=self.rng.getrandbits(62),
                                    overrides=overrides)
                trial = draw_trial(variant, self.rng, self.config, index, grad=False)
            except TaskError:
                continue
            trial.variant = variant
            return trial
        return None
