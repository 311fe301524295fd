"""Pretrained chat models from GGUF files, as plain transformers models (no hub needed).

transformers reads a GGUF (`gguf_file=`, needs the `gguf` package) and de-quantises it; the weights
are then copied into a plain model of the same class with no quantisation config left on it, so TRL,
peft and checkpoints treat it as any other model. `strip_tensor` rewrites a GGUF without one tensor
(a duplicated output head: transformers ties the embeddings when it is absent).
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase


def load_gguf_chat_model(path: Path, end_token: str,
                         dtype: torch.dtype = torch.float32) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The model in GGUF `path` and its tokenizer (left padding), ending a turn at `end_token`."""
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    if tokenizer.eos_token != end_token and end_token in tokenizer.get_vocab():
        # Some transformers versions convert a ChatML GGUF's end token as <|im_start|> or
        # <|endoftext|> (5.17 on the H100 image did): the chat turn ends at `end_token`.
        tokenizer.eos_token = end_token
    if tokenizer.eos_token != end_token:
        raise ValueError(f"the GGUF's converted end token is {tokenizer.eos_token!r}, expected {end_token!r}")
    tokenizer.padding_side = "left"
    loaded = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    config = loaded.config
    config.quantization_config = None
    del config.quantization_config  # the weights below are plain tensors: nothing is quantised any more
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict())
    if config.tie_word_embeddings:
        model.tie_weights()
    model.to(dtype)
    model.generation_config.eos_token_id = tokenizer.convert_tokens_to_ids(end_token)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def strip_tensor(src: Path, dst: Path, name: str) -> int:
    """Write GGUF `src` to `dst` without tensor `name`, every metadata field kept; returns the bytes
    saved. Raises KeyError when `src` has no such tensor."""
    import gguf

    reader = gguf.GGUFReader(src)
    kept = [t for t in reader.tensors if t.name != name]
    if len(kept) == len(reader.tensors):
        raise KeyError(f"{src} has no tensor {name!r}")
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(dst, arch, endianess=reader.endianess)
    for field in reader.fields.values():
        # the writer adds the architecture and its own GGUF.* bookkeeping itself
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)
    for t in kept:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in kept:
        writer.write_tensor_data(t.data, tensor_endianess=reader.endianess)
    writer.close()
    return sum(int(t.n_bytes) for t in reader.tensors) - sum(int(t.n_bytes) for t in kept)
