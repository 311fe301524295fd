"""A LoRA-trained policy as one plain transformers model directory: base model + adapters merged in
order (the SFT adapter, then RL's), with its tokenizer, for `kernelgym eval --model DIR`.

Adapters trained on `kernelgym:qwen-coder-0.5b` name no base a loader could find (the base is built
from a GGUF), so eval reads the merged directory instead. Full weights: it stays on the machine that
wrote it; only the adapters travel (`train/adapter_parts.py`).

    python -m train.merge_policy --model kernelgym:qwen-coder-0.5b --adapter runs/sft_qwen_lora \\
        --adapter runs/grpo_qwen_lora --out runs/policy_rl
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

DTYPES = ("float32", "bfloat16", "float16")


def merge_policy(model_name: str, adapters: list[Path], out: Path, dtype: str = "bfloat16",
                 seed: int = 0) -> Path:
    """Write `model_name` with `adapters` merged (in order) and its tokenizer to `out`."""
    import torch
    from trl import ModelConfig

    from train.models import load_policy, merge_adapter

    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, not {dtype!r}")
    model_args = ModelConfig(model_name_or_path=model_name, dtype="float32")
    args: Any = SimpleNamespace(seed=seed, trust_remote_code=False, model_init_kwargs=None)
    model, tokenizer = load_policy(model_args, args, adapters[0] if adapters else None)
    if isinstance(model, str):  # a hub id or directory with no adapter: nothing to merge
        raise ValueError(f"{model_name} needs no merge without --adapter: evaluate it directly")
    for adapter in adapters[1:]:
        model = merge_adapter(model, adapter)
    model.to(getattr(torch, dtype)).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.merge_policy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="the base: kernelgym:qwen-coder-0.5b, a hub id or a directory")
    parser.add_argument("--adapter", type=Path, action="append", default=[],
                        help="a peft adapter directory, merged in the order given (repeat: SFT, then RL)")
    parser.add_argument("--out", type=Path, required=True, help="directory for the merged model and tokenizer")
    parser.add_argument("--dtype", choices=DTYPES, default="bfloat16", help="dtype of the saved weights")
    args = parser.parse_args(argv)
    if not args.adapter:
        parser.error("name at least one --adapter")
    try:
        out = merge_policy(args.model, args.adapter, args.out, args.dtype)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{out}: {args.model} + {' + '.join(str(a) for a in args.adapter)} ({args.dtype})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
