"""`TransformersGenerator`: generation with a local `transformers` model, batched.

The fallback when vLLM is not installed, and the backend for GGUF checkpoints. Prompts are
rendered by the tokenizer's chat template and decoded without special tokens. Llama-family models
sample through `fast_decode.FastDecoder` (static cache, CUDA graphs); others, or `decoder="hf"`,
through `model.generate` on left-padded prompts.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from kernelgym.generation.base import Conversation, ModelDoesNotFit, check_request
from kernelgym.generation.fast_decode import FastDecoder, unsupported_reason
from kernelgym.generation.models import load_causal_lm

DECODERS = ("auto", "fast", "hf")

log = logging.getLogger(__name__)


class TransformersGenerator:
    """The `Generator` protocol over a local checkpoint (`load_causal_lm` spec), or over a model and
    tokenizer already loaded (`model=`, `tokenizer=`: tests, the trainer's policy). `batch_size`
    conversations (times `n` samples) decode together. `decoder`: `fast` (FastDecoder), `hf`
    (`model.generate`), or `auto`: fast where the model's architecture allows it."""

    def __init__(self, spec: str = "", dtype: str = "auto", device: str | None = None, batch_size: int = 8,
                 model: Any = None, tokenizer: Any = None, decoder: str = "auto") -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, not {decoder!r}")
        if model is None:
            model, tokenizer = load_causal_lm(spec, dtype=dtype, device=device)
        self.spec = spec or type(model).__name__
        self.model, self.tokenizer = model, tokenizer
        self.batch_size = batch_size
        self.tokenizer.padding_side = "left"  # generation continues every row from its last real token
        self._warned_long = False
        refusal = unsupported_reason(model) if decoder != "hf" else None
        if refusal and decoder == "fast":
            raise ValueError(f"decoder 'fast' cannot run {self.spec}: {refusal}")
        if refusal:
            log.info("generating with model.generate: %s", refusal)
        self.fast = FastDecoder(model) if decoder != "hf" and refusal is None else None

    def describe(self) -> dict[str, Any]:
        return {"backend": "transformers", "model": self.spec, "dtype": str(self.model.dtype).removeprefix("torch."),
                "device": str(self.model.device), "decoder": "fast" if self.fast is not None else "hf"}

    def close(self) -> None:
        self.model = self.fast = None

    def generate(self, conversations: Sequence[Conversation], n: int, max_new_tokens: int, temperature: float,
                 seed: int | None = None) -> list[list[str]]:
        """See `Generator.generate`. A conversation longer than the model's context gets `n` empty
        answers (the judge calls them invalid) and a warning, rather than failing the run."""
        check_request(conversations, n, max_new_tokens, temperature)
        import torch

        if seed is not None:
            torch.manual_seed(seed)
        prompts = [self.tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
                   for c in conversations]
        out: list[list[str]] = []
        for start in range(0, len(prompts), self.batch_size):
            out += self._generate_batch(prompts[start:start + self.batch_size], n, max_new_tokens, temperature)
        return out

    def _generate_batch(self, prompts: list[str], n: int, max_new_tokens: int, temperature: float) -> list[list[str]]:
        """One `model.generate` call; on a CUDA OOM the batch is split in two and tried again."""
        import torch

        try:
            return self._generate_fitting(prompts, n, max_new_tokens, temperature)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            if len(prompts) == 1:
                raise ModelDoesNotFit(f"generating {max_new_tokens} tokens x {n} samples for one conversation does not "
                                      "fit in GPU memory: lower --max-new-tokens or --samples, or use --dtype "
                                      "bfloat16") from None
            half = len(prompts) // 2
            log.warning("out of GPU memory generating %d conversations; splitting the batch", len(prompts))
            return (self._generate_batch(prompts[:half], n, max_new_tokens, temperature)
                    + self._generate_batch(prompts[half:], n, max_new_tokens, temperature))

    def _generate_fitting(self, prompts: list[str], n: int, max_new_tokens: int,
                          temperature: float) -> list[list[str]]:
        """Generate for the prompts that fit the context window; the rest get empty answers."""
        lengths = [len(self.tokenizer(p, add_special_tokens=False)["input_ids"]) for p in prompts]
        limit = getattr(self.model.config, "max_position_embeddings", None)
        fits = [i for i, length in enumerate(lengths) if limit is None or length < limit]
        if len(fits) < len(prompts) and not self._warned_long:
            log.warning("%d prompt(s) longer than the model's %s-token context get empty answers (use "
                        "--context-turns to keep fewer previous turns)", len(prompts) - len(fits), limit)
            self._warned_long = True
        out: list[list[str]] = [[""] * n for _ in prompts]
        if not fits:
            return out
        budget = max_new_tokens if limit is None else min(max_new_tokens, limit - max(lengths[i] for i in fits))
        greedy = temperature == 0
        rows = 1 if greedy else n  # greedy samples are all the same: generate one, copy it
        if self.fast is not None:
            texts = self._decode_fast([prompts[i] for i in fits], rows, budget, temperature)
        else:
            texts = self._decode_hf([prompts[i] for i in fits], rows, budget, temperature)
        for k, i in enumerate(fits):
            mine = texts[k * rows:(k + 1) * rows]
            out[i] = mine * n if greedy else mine
        return out

    def _end_ids(self) -> list[int]:
        """The ids that end a turn, as `model.generate` takes them: the generation config's
        (`ensure_chat_end_token` put the chat end token there), else the tokenizer's EOS."""
        ids = self.model.generation_config.eos_token_id
        if ids is None:
            ids = self.tokenizer.eos_token_id
        return [] if ids is None else [ids] if isinstance(ids, int) else list(ids)

    def _decode_fast(self, prompts: list[str], rows: int, budget: int, temperature: float) -> list[str]:
        """`rows` samples per prompt, in prompt order; each prompt is prefilled once."""
        contexts = [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        out = self.fast.generate([c for c in contexts for _ in range(rows)], budget, temperature, self._end_ids(),
                                 self.tokenizer.pad_token_id)
        return self.tokenizer.batch_decode(out.ids, skip_special_tokens=True)

    def _decode_hf(self, prompts: list[str], rows: int, budget: int, temperature: float) -> list[str]:
        import torch

        greedy = temperature == 0
        enc = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        enc = enc.to(self.model.device)
        sampling = {"do_sample": False} if greedy else {"do_sample": True, "temperature": temperature, "top_p": 1.0}
        with torch.no_grad():
            tokens = self.model.generate(**enc, max_new_tokens=budget, num_return_sequences=rows,
                                         pad_token_id=self.tokenizer.pad_token_id, **sampling)
        return self.tokenizer.batch_decode(tokens[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
