"""Batched sampling for Llama-family decoders over a static KV cache, one CUDA graph per decoding step.

`model.generate` spends ~75-100 ms per step at batch 128 on an H100 launching kernels one by one,
whatever the model size. `FastDecoder` runs the same model's modules (projections, norms, MLPs,
rotary tables) through a hand-written loop: a left-padded prefill in row chunks, then one decoding
step that embeds, attends over a preallocated cache, samples and records the token and its
log-probability without leaving the GPU. On CUDA that step is captured once per cache-length
bucket (`BUCKET` slots) and replayed; on the CPU the very same step runs eagerly, so CPU tests
exercise the loop the GPU runs.

The cache is our own (one key and one value tensor per layer, `[batch, kv_heads, slots, head_dim]`)
rather than transformers' `StaticCache`, whose update contract changed between the 5.x releases we
meet (with and without `cache_position`); only module attributes are used, present in 4.5x and 5.x.

Contract: same tokens as `model.generate` under greedy decoding; `logprobs` are those of the
sampled tokens under log_softmax(logits / T) (T = 1 when greedy), unfiltered; identical contexts
are prefilled once (a group's shared prompt); a row stops at its first end token.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

log = logging.getLogger(__name__)

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3")
BUCKET = 128  # cache slots per captured graph: attention reads at most this many unused slots
PREFILL_TOKENS = 16384  # prompt tokens per prefill chunk (bounds activations and the attention mask)
STOP_CHECK_EVERY = 16  # decoding steps between checks that every row has ended (a host sync)
# Norm classes whose forward is w * rms_norm(x.float()).to(x.dtype): run through torch's fused
# rms_norm (fewer launches; the decoding step is launch-bound), equal up to the reduction's rounding.
PLAIN_RMS_NORMS = ("LlamaRMSNorm", "MistralRMSNorm", "Qwen2RMSNorm", "Qwen3RMSNorm")


@dataclass
class Decoded:
    """Per context, in the order given: the new token ids up to and including the first end token,
    and the sampler's log-probability of each."""

    ids: list[list[int]]
    logprobs: list[list[float]]
    timing: dict[str, float] = field(default_factory=dict)


def unsupported_reason(model: Any) -> str | None:
    """Why `FastDecoder` cannot run `model` (None: it can). Callers fall back to `model.generate`."""
    model = _unwrap(model)
    if _fsdp2_sharded(model):
        # FSDP2 gathers a unit's parameters in hooks that need the root module's forward first; the decoder
        # calls the embedding, layers and head directly (the 4-GPU check of the twelfth session failed so).
        return "the model is sharded by FSDP2 (fully_shard): its parameters are gathered through the root's forward"
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        return f"model type {model_type!r} is not one of {SUPPORTED_MODEL_TYPES}"
    decoder = getattr(model, "model", None)
    layers = getattr(decoder, "layers", None)
    if layers is None or not hasattr(model, "lm_head") or not hasattr(decoder, "rotary_emb"):
        return "the model has no model.layers, model.rotary_emb or lm_head"
    if any(not all(hasattr(layer.self_attn, p) for p in ("q_proj", "k_proj", "v_proj", "o_proj")) for layer in layers):
        return "an attention layer has no q_proj/k_proj/v_proj/o_proj"
    if _uses_sliding_window(config):
        return "sliding-window attention is not supported"
    rope = getattr(decoder.rotary_emb, "rope_type", "default")
    if rope in ("dynamic", "longrope"):
        return f"rope type {rope!r} depends on the sequence length"
    return None


def _fsdp2_sharded(model: Any) -> bool:
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:  # a torch built without distributed
        return False
    modules = model.modules() if isinstance(model, torch.nn.Module) else ()
    return any(isinstance(m, FSDPModule) for m in modules)


class FastDecoder:
    """Samples continuations of token contexts with `model` (see the module docstring).

    `cuda_graphs`: None captures graphs when the model is on CUDA; False runs every step eagerly.
    Graphs and cache live for one `generate` call: the weights may move between calls (FSDP) and the
    cache would otherwise hold GPU memory the trainer needs.
    """

    def __init__(self, model: Any, cuda_graphs: bool | None = None) -> None:
        reason = unsupported_reason(model)
        if reason:
            raise ValueError(f"FastDecoder cannot run this model: {reason}")
        self.model = _unwrap(model)
        first = next(self.model.parameters())
        self.device, self.dtype = first.device, first.dtype
        self.cuda_graphs = self.device.type == "cuda" if cuda_graphs is None else cuda_graphs
        if self.cuda_graphs and self.device.type != "cuda":
            raise ValueError("cuda_graphs needs the model on a CUDA device")

    @torch.no_grad()
    def generate(self, contexts: Sequence[Sequence[int]], max_new_tokens: int, temperature: float,
                 eos_ids: Sequence[int], pad_id: int) -> Decoded:
        """One continuation per context (each non-empty) of at most `max_new_tokens`; `temperature`
        0 is greedy. Draws from torch's global generator: seed it for repeatable samples."""
        if not contexts:
            return Decoded([], [])
        if max_new_tokens < 1 or any(len(c) == 0 for c in contexts):
            raise ValueError("FastDecoder needs max_new_tokens >= 1 and non-empty contexts")
        run = _Run(self, contexts, max_new_tokens, temperature, eos_ids, pad_id)
        try:
            return run.decode()
        finally:
            run.release()


def _unwrap(model: Any) -> Any:
    """The causal LM inside a peft wrapper (its LoRA layers stay in place and run as modules)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def _uses_sliding_window(config: Any) -> bool:
    types = getattr(config, "layer_types", None)
    if types:
        return any(t != "full_attention" for t in types)
    if getattr(config, "use_sliding_window", None) is False:
        return False
    return getattr(config, "sliding_window", None) is not None


def _rope(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """transformers' x * cos + rotate_half(x) * sin, bit for bit, in four kernels instead of five:
    rotate_half(x) = cat(-x2, x1) is x.roll(half) with the sign moved into sin's first half."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * signed_sin


def _norm(module: Any, x: torch.Tensor) -> torch.Tensor:
    if type(module).__name__ in PLAIN_RMS_NORMS and hasattr(F, "rms_norm"):
        h = F.rms_norm(x.float(), (x.shape[-1],), eps=module.variance_epsilon)
        return module.weight * h.to(x.dtype)
    return module(x)


class _Run:
    """The state of one `generate` call: cache, per-row positions, outputs, captured graphs."""

    def __init__(self, dec: FastDecoder, contexts: Sequence[Sequence[int]], max_new_tokens: int,
                 temperature: float, eos_ids: Sequence[int], pad_id: int) -> None:
        model, device = dec.model, dec.device
        self.dec, self.model, self.device = dec, model, device
        config = model.config
        self.layers = list(model.model.layers)
        attn = self.layers[0].self_attn
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = getattr(attn, "head_dim", None) or config.hidden_size // self.heads
        self.scale = getattr(attn, "scaling", self.head_dim ** -0.5)
        self.temperature = float(temperature)
        self.new_tokens = max_new_tokens
        self.pad_id = int(pad_id)
        self.eos = torch.tensor(sorted(set(int(e) for e in eos_ids)) or [-1], device=device)

        # Identical contexts are prefilled once: rows [0, U) hold the unique ones, then one row per
        # repeat, copied from its first occurrence's row after the prefill.
        first: dict[tuple[int, ...], int] = {}
        self.unique: list[list[int]] = []
        self.row_of: list[int] = []  # context index -> its row
        dup_src: list[int] = []
        for ctx in contexts:
            key = tuple(int(t) for t in ctx)
            if key not in first:
                first[key] = len(self.unique)
                self.unique.append(list(key))
                self.row_of.append(first[key])
            else:
                self.row_of.append(-1 - len(dup_src))  # fixed below, once U is known
                dup_src.append(first[key])
        u = len(self.unique)
        self.row_of = [r if r >= 0 else u - 1 - r for r in self.row_of]
        self.dup_src = torch.tensor(dup_src, dtype=torch.long, device=device)
        self.batch = u + len(dup_src)
        self.width = max(len(c) for c in self.unique)
        self.slots = math.ceil((self.width + max_new_tokens) / BUCKET) * BUCKET
        self.lengths = torch.tensor([len(c) for c in self.unique] + [len(self.unique[s]) for s in dup_src],
                                    dtype=torch.long, device=device)

        b, kv, d = self.batch, self.kv_heads, self.head_dim
        # Zeroed: masked slots are still read, and garbage (NaN) there would reach the output.
        self.keys = [torch.zeros(b, kv, self.slots, d, device=device, dtype=dec.dtype) for _ in self.layers]
        self.values = [torch.zeros_like(k) for k in self.keys]
        positions = torch.arange(self.slots, device=device)
        self.cos, self.sin = model.model.rotary_emb(self.keys[0], positions[None])  # (1, slots, head_dim)
        self.cos, self.sin = self.cos[0].to(dec.dtype), self.sin[0].to(dec.dtype)
        half = self.head_dim // 2
        self.sin = torch.cat((-self.sin[:, :half], self.sin[:, half:]), dim=-1)  # see _rope
        self.neg = torch.finfo(dec.dtype).min
        self.bias = torch.full((b, self.slots), self.neg, device=device, dtype=dec.dtype)  # additive mask
        self.token = torch.zeros(b, dtype=torch.long, device=device)  # the token the next step feeds
        self.pos = self.lengths.clone()  # its position id
        self.slot = torch.zeros(1, dtype=torch.long, device=device)  # its cache slot (the same for every row)
        self.step = torch.zeros(1, dtype=torch.long, device=device)  # its output column
        self.done = torch.zeros(b, dtype=torch.bool, device=device)
        self.out_ids = torch.full((b, max_new_tokens), self.pad_id, dtype=torch.long, device=device)
        self.out_lps = torch.zeros(b, max_new_tokens, dtype=torch.float32, device=device)
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.pool = torch.cuda.graph_pool_handle() if dec.cuda_graphs else None

    def release(self) -> None:
        self.graphs.clear()
        self.keys = self.values = []

    def decode(self) -> Decoded:
        timing: dict[str, float] = {}
        t0 = time.perf_counter()
        if self.dec.cuda_graphs and self.new_tokens > 1:
            self._warm_up()
        t1 = time.perf_counter()
        self._prefill()
        self._sync()
        t2 = time.perf_counter()
        steps = 1
        while steps < self.new_tokens:
            view = min(self.slots, math.ceil((self.width + steps) / BUCKET) * BUCKET)  # covers slot width+steps-1
            self._run_step(view)
            steps += 1
            if steps % STOP_CHECK_EVERY == 0 and bool(self.done.all()):
                break
        ids = self.out_ids[:, :steps].cpu()
        lps = self.out_lps[:, :steps].cpu()
        t3 = time.perf_counter()
        timing.update(warmup_s=t1 - t0, prefill_s=t2 - t1, decode_s=t3 - t2, steps=float(steps),
                      graphs=float(len(self.graphs)))
        out_ids, out_lps = [], []
        eos = set(self.eos.tolist())
        for row in self.row_of:
            seq = ids[row].tolist()
            n = next((i + 1 for i, t in enumerate(seq) if t in eos), len(seq))
            out_ids.append(seq[:n])
            out_lps.append(lps[row, :n].tolist())
        return Decoded(out_ids, out_lps, timing)

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    # --- prefill -------------------------------------------------------------------------------

    def _prefill(self) -> None:
        """Fill the cache with the unique contexts (left-padded to `width`), copy it to duplicate
        rows, sample every row's first token, and set the decoding state."""
        u, width = len(self.unique), self.width
        ids = torch.full((u, width), self.pad_id, dtype=torch.long)
        valid = torch.zeros((u, width), dtype=torch.bool)
        for row, ctx in enumerate(self.unique):
            ids[row, width - len(ctx):] = torch.tensor(ctx)
            valid[row, width - len(ctx):] = True
        ids, valid = ids.to(self.device), valid.to(self.device)
        chunk = max(1, PREFILL_TOKENS // width)
        logits = torch.cat([self._prefill_rows(ids[s:s + chunk], valid[s:s + chunk], s)
                            for s in range(0, u, chunk)])
        if len(self.dup_src):
            for cache in (*self.keys, *self.values):
                cache[u:, :, :width] = cache[self.dup_src, :, :width]
            logits = torch.cat([logits, logits[self.dup_src]])
            valid = torch.cat([valid, valid[self.dup_src]])
        self.bias.fill_(self.neg)
        self.bias[:, :width].masked_fill_(valid, 0.0)
        token, lp = self._sample(logits)
        self.out_ids[:, 0] = token
        self.out_lps[:, 0] = lp
        self.done.copy_((token[:, None] == self.eos[None, :]).any(-1))
        self.token.copy_(token)
        self.pos.copy_(self.lengths)
        self.slot.fill_(width)
        self.step.fill_(1)

    def _prefill_rows(self, ids: torch.Tensor, valid: torch.Tensor, start: int) -> torch.Tensor:
        """Prefill cache rows [start, start + len(ids)); the last position's logits."""
        b, width = ids.shape
        pos = (valid.long().cumsum(-1) - 1).clamp(min=0)
        cos, sin = self.cos[pos][:, None], self.sin[pos][:, None]  # (b, 1, width, head_dim)
        causal = torch.ones(width, width, dtype=torch.bool, device=self.device).tril()
        # A padding query attends to itself only, so its (unused) output stays finite.
        allowed = causal[None] & (valid[:, None, :] | torch.eye(width, dtype=torch.bool, device=self.device)[None])
        bias = torch.zeros(b, 1, width, width, dtype=self.dec.dtype, device=self.device)
        bias.masked_fill_(~allowed[:, None], self.neg)
        x = self.model.model.embed_tokens(ids)
        for i, layer in enumerate(self.layers):
            q, k, v = self._qkv(layer, _norm(layer.input_layernorm, x), cos, sin)
            self.keys[i][start:start + b, :, :width] = k
            self.values[i][start:start + b, :, :width] = v
            x = self._finish_layer(layer, x, self._attend(q, k, v, bias))
        return self._logits(x[:, -1])

    # --- one decoding step ---------------------------------------------------------------------

    def _run_step(self, view: int) -> None:
        if not self.dec.cuda_graphs:
            self._step(view)
            return
        graph = self.graphs.get(view)
        if graph is None:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self.pool):
                self._step(view)
            self.graphs[view] = graph
        graph.replay()

    def _warm_up(self) -> None:
        """Run the step eagerly on a side stream before any capture (library handles, workspaces).
        It writes garbage into state that the prefill then resets."""
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream):
            for _ in range(2):
                self._step(self.slots)
        torch.cuda.current_stream(self.device).wait_stream(stream)

    def _step(self, view: int) -> None:
        """Feed `token` at `slot` to every row, attend over the first `view` slots, sample the next
        token into column `step`. Only device tensors change: the step is graph-capturable."""
        self.bias.index_fill_(1, self.slot, 0.0)
        cos, sin = self.cos[self.pos][:, None, None], self.sin[self.pos][:, None, None]  # (B, 1, 1, head_dim)
        bias = self.bias[:, None, None, :view]
        x = self.model.model.embed_tokens(self.token[:, None])
        for i, layer in enumerate(self.layers):
            q, k, v = self._qkv(layer, _norm(layer.input_layernorm, x), cos, sin)
            self.keys[i].index_copy_(2, self.slot, k)
            self.values[i].index_copy_(2, self.slot, v)
            x = self._finish_layer(layer, x, self._attend(q, self.keys[i][:, :, :view],
                                                          self.values[i][:, :, :view], bias))
        token, lp = self._sample(self._logits(x[:, -1]))
        token = torch.where(self.done, self.pad_id, token)
        self.out_ids.index_copy_(1, self.step, token[:, None])
        self.out_lps.index_copy_(1, self.step, lp[:, None])
        self.done |= (token[:, None] == self.eos[None, :]).any(-1)
        self.token.copy_(token)
        self.pos.add_(1)
        self.slot.add_(1)
        self.step.add_(1)

    # --- the model's pieces --------------------------------------------------------------------

    def _qkv(self, layer: Any, h: torch.Tensor, cos: torch.Tensor,
             sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        attn = layer.self_attn
        b, t, _ = h.shape
        q = attn.q_proj(h).view(b, t, -1, self.head_dim)
        k = attn.k_proj(h).view(b, t, -1, self.head_dim)
        v = attn.v_proj(h).view(b, t, -1, self.head_dim).transpose(1, 2)
        if hasattr(attn, "q_norm"):  # Qwen3 normalises each head before the rotation
            q, k = _norm(attn.q_norm, q), _norm(attn.k_norm, k)
        return _rope(q.transpose(1, 2), cos, sin), _rope(k.transpose(1, 2), cos, sin), v

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """Attention of q (B, H, T, D) over k, v (B, KV, L, D) with an additive bias (B, 1, T|1, L);
        returns (B, T, H * D). One query token: the query heads of a KV head attend as a group,
        so the cache is read once, never repeated per query head."""
        b, h, t, d = q.shape
        groups = h // k.shape[1]
        if t == 1:
            out = F.scaled_dot_product_attention(q.reshape(b, h // groups, groups, d), k, v, attn_mask=bias,
                                                 scale=self.scale)
            return out.reshape(b, 1, h * d)
        if groups > 1:
            k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=self.scale)
        return out.transpose(1, 2).reshape(b, t, h * d)

    def _finish_layer(self, layer: Any, x: torch.Tensor, attn_out: torch.Tensor) -> torch.Tensor:
        x = x + layer.self_attn.o_proj(attn_out)
        return x + layer.mlp(_norm(layer.post_attention_layernorm, x))

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.model.lm_head(_norm(self.model.model.norm, x)).float()

    def _sample(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A token per row and its log-probability under log_softmax(logits / T). Sampling is the
        exponential race argmax(p / E), E ~ Exp(1), which draws from p without a host sync."""
        if self.temperature == 0:
            logp = torch.log_softmax(logits, dim=-1)
            token = logits.argmax(-1)
        else:
            logp = torch.log_softmax(logits / self.temperature, dim=-1)
            race = torch.empty_like(logp).exponential_().clamp_min_(torch.finfo(logp.dtype).tiny)
            token = (logp.exp() / race).argmax(-1)
        return token, logp.gather(-1, token[:, None])[:, 0]
