"""`kernelgym bench generate`: new tokens per second of batched sampling, `FastDecoder` vs `model.generate`.

Speed does not depend on the weights, so `--model random:smollm2-135m` builds SmolLM2-135M's
architecture with random weights (nothing is downloaded); any `load_causal_lm` spec works too.
Every row gets its own random prompt of `--prompt-tokens` ids (no shared prefix to reuse) and
end tokens are ignored, so every row generates exactly `--new-tokens`: the rate is
batch x new tokens over the wall time of one whole call (prefill, graph capture and decoding).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

RANDOM_PREFIX = "random:"
# Architectures by name, as their configs on the hub give them (speed depends on shapes only).
RANDOM_ARCHITECTURES: dict[str, tuple[str, dict[str, Any]]] = {
    "smollm2-135m": ("llama", dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                   num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
                                   rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True)),
    "qwen2.5-0.5b": ("qwen2", dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                                   num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                                   rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True)),
    "tiny": ("llama", dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                           tie_word_embeddings=True)),
}
BACKENDS = ("fast", "hf")


def build_parser(add_help: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kernelgym bench generate", description=__doc__.split("\n\n")[0],
                                add_help=add_help)
    p.add_argument("--model", default="random:smollm2-135m",
                   help=f"a load_causal_lm spec, or random:NAME for NAME in {sorted(RANDOM_ARCHITECTURES)}")
    p.add_argument("--backend", choices=BACKENDS, default="fast",
                   help="fast: kernelgym's FastDecoder (static cache, CUDA graphs); hf: model.generate")
    p.add_argument("--batch", type=int, default=128, help="sequences decoded together")
    p.add_argument("--new-tokens", type=int, default=768, help="tokens generated per sequence")
    p.add_argument("--prompt-tokens", type=int, default=512, help="prompt length of every sequence")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature; 0 is greedy")
    p.add_argument("--repeats", type=int, default=1, help="timed calls after one short warm-up call; the median counts")
    p.add_argument("--dtype", default="auto", help="auto (bfloat16 on a GPU that has it), bfloat16, float16, float32")
    p.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights and prompts")
    p.add_argument("--json", type=Path, default=None, help="also write the result as JSON here")
    return p


def build_random_model(name: str, dtype: Any, device: str) -> Any:
    """A randomly initialised model of a named architecture (`RANDOM_ARCHITECTURES`)."""
    import torch
    import transformers

    if name not in RANDOM_ARCHITECTURES:
        raise ValueError(f"unknown random architecture {name!r}; known: {sorted(RANDOM_ARCHITECTURES)}")
    model_type, fields = RANDOM_ARCHITECTURES[name]
    config = transformers.AutoConfig.for_model(model_type, **fields, bos_token_id=None, eos_token_id=None,
                                               pad_token_id=None)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return model.to(dtype).eval()


def load_model(spec: str, dtype: str, device: str) -> Any:
    from kernelgym.generation.models import load_causal_lm, resolve_dtype

    if spec.startswith(RANDOM_PREFIX):
        return build_random_model(spec[len(RANDOM_PREFIX):], resolve_dtype(dtype, device), device)
    return load_causal_lm(spec, dtype=dtype, device=device)[0]


def generate_once(model: Any, backend: str, prompts: Any, new_tokens: int, temperature: float) -> dict[str, float]:
    """One timed call over `prompts` (batch, prompt_tokens); its seconds and, for fast, its phases."""
    import torch

    from kernelgym.generation.fast_decode import FastDecoder

    device = prompts.device
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    phases: dict[str, float] = {}
    if backend == "fast":
        out = FastDecoder(model).generate(prompts.tolist(), new_tokens, temperature, eos_ids=(), pad_id=0)
        produced = sum(len(ids) for ids in out.ids)
        phases = out.timing
    else:
        sampling = {"do_sample": False} if temperature == 0 else {"do_sample": True, "temperature": temperature,
                                                                   "top_p": 1.0, "top_k": 0}
        with torch.no_grad():
            seqs = model.generate(input_ids=prompts, attention_mask=torch.ones_like(prompts),
                                  max_new_tokens=new_tokens, min_new_tokens=new_tokens, eos_token_id=None,
                                  pad_token_id=0, **sampling)
        produced = (seqs.shape[1] - prompts.shape[1]) * seqs.shape[0]
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return {"seconds": time.perf_counter() - start, "new_tokens": float(produced), **phases}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    import transformers

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(args.seed)
    model = load_model(args.model, args.dtype, device)
    vocab = model.get_input_embeddings().num_embeddings
    prompts = torch.randint(0, vocab, (args.batch, args.prompt_tokens), device=device)
    generate_once(model, args.backend, prompts, min(8, args.new_tokens), args.temperature)  # warm-up
    runs = [generate_once(model, args.backend, prompts, args.new_tokens, args.temperature)
            for _ in range(args.repeats)]
    seconds = statistics.median(r["seconds"] for r in runs)
    result = {
        "backend": args.backend, "model": args.model, "device": device,
        "device_name": torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu",
        "dtype": str(next(model.parameters()).dtype).removeprefix("torch."),
        "batch": args.batch, "prompt_tokens": args.prompt_tokens, "new_tokens": args.new_tokens,
        "temperature": args.temperature, "seconds": seconds,
        "new_tokens_per_s": runs[0]["new_tokens"] / seconds,
        "runs": runs, "torch": torch.__version__, "transformers": transformers.__version__,
    }
    if device.startswith("cuda"):
        result["peak_gpu_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    return result


def main(argv: list[str] | None = None) -> int:
    return main_args(build_parser().parse_args(argv))


def main_args(args: argparse.Namespace) -> int:
    """`main` on parsed arguments (what `kernelgym bench generate` calls)."""
    if min(args.batch, args.new_tokens, args.prompt_tokens, args.repeats) < 1:
        raise SystemExit("--batch, --new-tokens, --prompt-tokens and --repeats must be >= 1")
    result = run(args)
    line = (f"{result['backend']}: {result['new_tokens_per_s']:,.0f} new tokens/s ({args.batch} x {args.new_tokens} "
            f"new tokens after {args.prompt_tokens}-token prompts in {result['seconds']:.2f} s, {args.model}, "
            f"{result['dtype']}, {result['device_name']})")
    print(line)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
