"""One interface over the trainer's generation backends: vLLM (TRL's colocate or server mode) or
`transformers` models (our fast decoder, or `model.generate`). Both sample one continuation per context, stop at an end token or
`max_new_tokens`, and return the sampled ids with the sampler's own log-probabilities, which the
trainer compares with its own (mismatch statistics and rejection, TRL's importance sampling).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import torch

if TYPE_CHECKING:
    from trl import GRPOTrainer

log = logging.getLogger(__name__)


@dataclass
class Generation:
    """One sampled continuation: its token ids and the sampler's log-probability of each (NaN: unknown)."""

    ids: list[int]
    logprobs: list[float]


class Generator(Protocol):
    def generate(self, contexts: list[list[int]], max_new_tokens: int) -> list[Generation]:
        """One continuation per context, in order. Every process calls this the same number of times
        (possibly with no contexts): the backends gather weights or prompts across processes."""
        ...


def make_generator(trainer: GRPOTrainer) -> Generator:
    """vLLM when the trainer was configured with `use_vllm`, else `transformers` generation."""
    return VLLMGenerator(trainer) if trainer.use_vllm else TransformersGenerator(trainer)


class VLLMGenerator:
    """Samples through TRL's `VLLMGeneration` (colocate or server mode); TRL syncs the weights before
    each rollout. The per-turn token budget is set on the backend for the duration of one call."""

    def __init__(self, trainer: GRPOTrainer) -> None:
        self.trainer = trainer

    def generate(self, contexts: list[list[int]], max_new_tokens: int) -> list[Generation]:
        backend = self.trainer.vllm_generation
        collective = backend.mode == "server" or backend.tensor_parallel_size > 1
        if not contexts and not collective:
            return []
        batch = list(contexts)
        if collective:
            # Server and tensor-parallel modes gather the prompts of all processes and hand back equal
            # slices, so every process sends as many contexts as the busiest one (placeholders dropped below).
            accelerator = self.trainer.accelerator
            width = int(accelerator.gather(torch.tensor([len(batch)], device=accelerator.device)).max())
            batch += [[self.trainer._tokenizer.eos_token_id]] * (width - len(batch))
        saved = backend.max_completion_length
        backend.max_completion_length = max_new_tokens
        try:
            # num_generations=1: after the first turn every context differs; vLLM's prefix cache
            # still shares the common prompt of a group.
            _, ids, logprobs, _ = backend.generate(prompts=batch, images=None, num_generations=1)
        finally:
            backend.max_completion_length = saved
        out = []
        for seq_ids, seq_lps in list(zip(ids, logprobs or [None] * len(ids)))[:len(contexts)]:
            lps = [math.nan if lp is None or lp[0] is None else float(lp[0]) for lp in seq_lps] if seq_lps \
                else [math.nan] * len(seq_ids)
            out.append(Generation(ids=list(seq_ids), logprobs=lps))
        return out


# Generation settings the fast decoder does not apply, with their neutral values: any other value
# sends sampling to `model.generate`.
_NEUTRAL_SAMPLING = {"top_k": (None, 0), "top_p": (None, 1.0), "min_p": (None, 0.0), "typical_p": (None, 1.0),
                     "repetition_penalty": (None, 1.0), "epsilon_cutoff": (None, 0.0), "eta_cutoff": (None, 0.0),
                     "no_repeat_ngram_size": (None, 0), "suppress_tokens": (None, []), "bad_words_ids": (None, []),
                     "begin_suppress_tokens": (None, []), "min_new_tokens": (None, 0)}
DECODERS = ("auto", "fast", "hf")


def fast_decoding_refusal(model: torch.nn.Module, generation_config: Any) -> str | None:
    """Why this model and these sampling settings need `model.generate` (None: `FastDecoder` applies)."""
    from kernelgym.generation.fast_decode import unsupported_reason

    for name, neutral in _NEUTRAL_SAMPLING.items():
        value = getattr(generation_config, name, None)
        if value not in neutral:
            return f"generation setting {name}={value!r} (the fast decoder samples from the tempered distribution only)"
    return unsupported_reason(model)


class TransformersGenerator:
    """Samples on the training model (unwrapped from DDP/DeepSpeed/FSDP the way TRL does it), all
    contexts of a call (every running episode of a turn) in one batch, halved on a CUDA OOM.

    `decoder`: `fast` runs `kernelgym.generation.fast_decode.FastDecoder` (static cache, CUDA graphs);
    `hf` runs `model.generate`; `auto` is `fast` where the model and the sampling settings allow it.
    The log-probabilities are those of the tempered, unfiltered distribution, log_softmax(logits / T),
    which is what the trainer scores, so their difference is the numerical mismatch between cached
    generation and the training forward pass. Only the sampled tokens' values are kept.
    """

    def __init__(self, trainer: GRPOTrainer, decoder: str = "auto") -> None:
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, not {decoder!r}")
        self.trainer = trainer
        self.decoder = decoder
        self._told: set[str] = set()

    def generate(self, contexts: list[list[int]], max_new_tokens: int) -> list[Generation]:
        from trl.models import unwrap_model_for_generation

        t = self.trainer
        # Entered on every process even without contexts: ZeRO-3 gathers parameters collectively.
        with (
            unwrap_model_for_generation(t.model_wrapped, t.accelerator,
                                        gather_deepspeed3_params=t.args.ds3_gather_for_generation,
                                        generation_kwargs=t.generation_kwargs,
                                        gradient_checkpointing_kwargs=t.args.gradient_checkpointing_kwargs) as model,
            torch.no_grad(),
            t._dist.summon_full_params(t.model_wrapped, recurse=False),
        ):
            return self._sample_fitting(model, contexts, max_new_tokens) if contexts else []

    def _uses_fast_decoder(self, model: torch.nn.Module) -> bool:
        if self.decoder == "hf":
            return False
        refusal = fast_decoding_refusal(model, self.trainer.generation_config)
        if refusal and self.decoder == "fast":
            raise ValueError(f"decoder 'fast' cannot sample here: {refusal}")
        if refusal and refusal not in self._told:
            log.warning("sampling with model.generate: %s", refusal)
            self._told.add(refusal)
        return refusal is None

    def _sample_fitting(self, model: torch.nn.Module, contexts: list[list[int]],
                        max_new_tokens: int) -> list[Generation]:
        try:
            if self._uses_fast_decoder(model):
                return self._sample_fast(model, contexts, max_new_tokens)
            return self._sample_hf(model, contexts, max_new_tokens)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            if len(contexts) == 1:
                raise
            half = len(contexts) // 2
            log.warning("out of GPU memory sampling %d contexts; splitting the batch", len(contexts))
            return (self._sample_fitting(model, contexts[:half], max_new_tokens)
                    + self._sample_fitting(model, contexts[half:], max_new_tokens))

    def _sample_fast(self, model: torch.nn.Module, contexts: list[list[int]], max_new_tokens: int) -> list[Generation]:
        from kernelgym.generation.fast_decode import FastDecoder

        t = self.trainer
        out = FastDecoder(model).generate(contexts, max_new_tokens, t.temperature, t.eos_token_ids,
                                          t._tokenizer.pad_token_id)
        return [Generation(ids=ids, logprobs=lps) for ids, lps in zip(out.ids, out.logprobs)]

    def _sample_hf(self, model: torch.nn.Module, contexts: list[list[int]], max_new_tokens: int) -> list[Generation]:
        from transformers import LogitsProcessorList

        t = self.trainer
        device = t.accelerator.device
        pad_id = t._tokenizer.pad_token_id
        width = max(len(c) for c in contexts)
        input_ids = torch.full((len(contexts), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(contexts), width), dtype=torch.long)
        for row, ctx in enumerate(contexts):  # left padding: every context ends where generation starts
            input_ids[row, width - len(ctx):] = torch.tensor(ctx)
            attention[row, width - len(ctx):] = 1
        recorder = SampledLogprobs(t.temperature)
        sequences = model.generate(input_ids=input_ids.to(device), attention_mask=attention.to(device),
                                   generation_config=t.generation_config, max_new_tokens=max_new_tokens,
                                   logits_processor=LogitsProcessorList([recorder]))
        new = sequences[:, width:]
        logps = recorder.finish(new)
        eos = torch.tensor(t.eos_token_ids, device=new.device)
        gens = []
        for row in range(new.size(0)):
            ids = new[row].tolist()
            hits = torch.isin(new[row], eos).nonzero()
            n = int(hits[0]) + 1 if len(hits) else len(ids)  # keep the first end token, drop the padding after it
            gens.append(Generation(ids=ids[:n], logprobs=logps[row, :n].tolist()))
        return gens


class SampledLogprobs:
    """A logits processor for `model.generate` that keeps, per step, only the sampled token's
    log_softmax(logits / T): it sees step k's logits before the temperature and filtering warpers
    (transformers runs custom processors before them), and learns step k's token at step k + 1."""

    def __init__(self, temperature: float) -> None:
        self.temperature = temperature
        self.pending: torch.Tensor | None = None  # the last step's log-probabilities (B, V)
        self.columns: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.pending is not None:
            self._record(input_ids[:, -1])
        self.pending = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        return scores

    def _record(self, tokens: torch.Tensor) -> None:
        assert self.pending is not None
        self.columns.append(self.pending.gather(-1, tokens[:, None])[:, 0])
        self.pending = None

    def finish(self, new_tokens: torch.Tensor) -> torch.Tensor:
        """(B, T) log-probabilities of the T tokens `generate` returned after the prompt."""
        if self.pending is not None:
            self._record(new_tokens[:, len(self.columns)])
        return torch.stack(self.columns, dim=1)
