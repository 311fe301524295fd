"""The policy to train: a hub id or local directory, or one of our offline models by name.

`kernelgym:tiny` (train.tiny_model), `kernelgym:smollm2` (train.smollm2) and `kernelgym:qwen-coder-0.5b`
(train.qwen_coder) are built here and
handed to the trainer as objects; any other `model_name_or_path` is passed to TRL as a string, which
loads it with `GRPOConfig.model_init_kwargs` (filled from `ModelConfig` as TRL's own script does).
"""

from __future__ import annotations

from typing import Any

import torch

from train.qwen_coder import QWEN_CODER_MODEL_NAME, load_qwen_coder
from train.smollm2 import SMOLLM2_MODEL_NAME, load_smollm2
from train.tiny_model import TINY_MODEL_NAME, build_tiny_policy


def training_attention() -> None:
    """Keep cuDNN's fused attention out of training's scaled_dot_product_attention. With it, Qwen2.5-0.5B's
    gradients turn NaN on some steps while the loss stays finite (huggingface/trl#7181, clean without it);
    our SFT of Qwen2.5-Coder-0.5B on the H100 had to skip 14 of 120 steps for it. Flash and memory-efficient
    attention remain, so the cost is small."""
    if hasattr(torch.backends.cuda, "enable_cudnn_sdp"):
        torch.backends.cuda.enable_cudnn_sdp(False)


def load_policy(model_args: Any, args: Any) -> tuple[Any, Any]:
    """(model, tokenizer) for `GRPOTrainer(model=..., processing_class=...)`; a hub name stays a string.
    Also sets the attention backends training uses (`training_attention`)."""
    training_attention()
    name = model_args.model_name_or_path
    if not name:
        raise ValueError("model_name_or_path is not set: a hub id, a directory, "
                         f"{TINY_MODEL_NAME}, {SMOLLM2_MODEL_NAME} or {QWEN_CODER_MODEL_NAME}")
    if name == TINY_MODEL_NAME:
        return build_tiny_policy(seed=args.seed)
    if name in (SMOLLM2_MODEL_NAME, QWEN_CODER_MODEL_NAME):
        dtype = getattr(torch, model_args.dtype) if model_args.dtype not in (None, "auto") else torch.float32
        return (load_smollm2 if name == SMOLLM2_MODEL_NAME else load_qwen_coder)(dtype)
    from transformers import AutoTokenizer

    init = {"revision": model_args.model_revision, "trust_remote_code": args.trust_remote_code,
            "attn_implementation": model_args.attn_implementation, "dtype": model_args.dtype}
    args.model_init_kwargs = {**init, **(args.model_init_kwargs or {})}
    tokenizer = AutoTokenizer.from_pretrained(name, revision=model_args.model_revision,
                                              trust_remote_code=args.trust_remote_code, padding_side="left")
    return name, tokenizer
