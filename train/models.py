"""The policy to train: a hub id or local directory, or one of our offline models by name.

`kernelgym:tiny` (train.tiny_model), `kernelgym:smollm2` (train.smollm2) and `kernelgym:qwen-coder-0.5b`
(train.qwen_coder) are built here and
handed to the trainer as objects; any other `model_name_or_path` is passed to TRL as a string, which
loads it with `GRPOConfig.model_init_kwargs` (filled from `ModelConfig` as TRL's own script does).
"""

from __future__ import annotations

from pathlib import Path
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


def load_policy(model_args: Any, args: Any, base_adapter: str | Path | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) for `GRPOTrainer(model=..., processing_class=...)`; a hub name stays a string
    unless `base_adapter` is merged into it (`merge_adapter`). Also sets the attention backends
    training uses (`training_attention`)."""
    model, tokenizer = _load_policy(model_args, args)
    if base_adapter:
        if isinstance(model, str):
            from transformers import AutoModelForCausalLM

            model = AutoModelForCausalLM.from_pretrained(model, **args.model_init_kwargs)
        model = merge_adapter(model, base_adapter)
    return model, tokenizer


def merge_adapter(model: Any, adapter: str | Path) -> Any:
    """`model` with the peft adapter in directory `adapter` merged into its weights, a plain model again.
    RL from an SFT LoRA: RL's own adapter then trains on base + SFT, and the policy with that adapter
    disabled (TRL's reference when `beta` > 0) is the SFT policy."""
    path = Path(adapter)
    if not (path / "adapter_config.json").is_file():
        hint = (f"; it holds parts: python -m train.adapter_parts join {path} --into DIR"
                if (path / "manifest.json").is_file() else "")
        raise ValueError(f"base_adapter {path} is not a peft adapter directory (no adapter_config.json){hint}")
    from peft import PeftModel

    try:
        merged = PeftModel.from_pretrained(model, str(path)).merge_and_unload()
    except (RuntimeError, KeyError, ValueError) as e:  # another base model's adapter: shapes or names differ
        raise ValueError(f"base_adapter {path} does not fit this model: {str(e).splitlines()[0]}") from None
    if hasattr(merged, "peft_config"):  # a plain model again: TRL wraps it in RL's adapter as any other
        del merged.peft_config
    return merged


def _load_policy(model_args: Any, args: Any) -> tuple[Any, Any]:
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
