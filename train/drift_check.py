"""Policy drift without a GPU: how likely each policy finds verified correct answers, token by token.

Each policy is the base model with a chain of LoRA adapters merged in order, as the trainer builds it
(`train.models.merge_adapter`: the SFT adapter, then RL's). For every example the answer (the corpus
completion, ending at the end-of-turn token) is teacher-forced after the chat-template prompt the policy
sees, and per answer token we record the negative log-likelihood of the corpus token, the entropy of the
next-token distribution at each temperature, and whether the argmax differs from the corpus token. Also
reports how far each adapter moves the weights (||scale B A||_F per module against the weight it adds to).

    python -m train.drift_check --model kernelgym:qwen-coder-0.5b --data heldout.jsonl --limit 24 \\
        --tasks gen:CORPUS/tasks:heldout --policy base= --policy sft=SFT_DIR --policy rl10=SFT_DIR,CKPT_DIR \\
        --out drift.json

A directory holding parts (`train/adapter_parts.py`, a `manifest.json`) is joined into a temporary one first.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import math
import random
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import torch

log = logging.getLogger("train.drift_check")
TEMPERATURES = (1.0, 0.8)


@dataclass
class Example:
    """One prompt and its verified answer as token ids (the answer ends with the end-of-turn token)."""

    task_id: str
    prompt_ids: list[int]
    answer_ids: list[int]
    truncated: bool


@dataclass
class ExampleStats:
    """Per-answer-token means for one example under one policy."""

    task_id: str
    tokens: int
    nll: float
    entropy: dict[str, float]  # temperature (as text) -> mean entropy in nats
    argmax_mismatch: float  # share of answer tokens whose argmax is not the corpus token


@dataclass
class Interval:
    """Mean over examples with a two-sided 95 % t-interval."""

    mean: float
    low: float
    high: float

    @classmethod
    def of(cls, values: list[float]) -> Interval:
        mean = statistics.fmean(values)
        if len(values) < 2:
            return cls(mean, math.nan, math.nan)
        half = _t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
        return cls(mean, mean - half, mean + half)


@dataclass
class WeightChange:
    """How far one adapter moves the weights it is merged into: per module ||scale B A||_F / ||W||_F."""

    adapter: str
    modules: int
    median_rel: float
    max_rel: float
    delta_norm: float  # sqrt of the sum over modules of ||scale B A||_F^2


@dataclass
class PolicyResult:
    """One policy's numbers over the examples; `vs_first` holds paired differences against the first policy."""

    label: str
    adapters: list[str]
    nll: Interval
    nll_token_weighted: float
    entropy: dict[str, Interval]
    argmax_mismatch: Interval
    nll_minus_first: Interval | None
    weight_changes: list[WeightChange]
    seconds: float
    examples: list[ExampleStats] = field(default_factory=list)


def _t95(df: int) -> float:
    """Two-sided 95 % Student t quantile (no scipy needed); exact table to 30, normal beyond."""
    table = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
             2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
             2.045, 2.042]
    return table[df - 1] if df <= len(table) else 1.96


def load_examples(data: Path, tokenizer: Any, limit: int | None, seed: int, max_answer_tokens: int,
                  tasks: str | None = None) -> list[Example]:
    """`limit` first-turn rows of a corpus jsonl (fields `prompt`, `completion`), drawn with `seed`. With
    `tasks` (a task spec) the prompt is rebuilt by `first_messages`, as the trainer renders it today."""
    from train.chat_ids import ChatContinuation, prompt_ids, render_ids

    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r.get("kind", "single") == "single"]
    if limit is not None and limit < len(rows):
        rows = random.Random(seed).sample(rows, limit)
    by_id = _task_prompts(tasks) if tasks else {}
    end = ChatContinuation(tokenizer).end_of_turn_id
    examples = []
    for row in rows:
        messages = by_id[row["task_id"]] if tasks else row["prompt"]
        prompt = prompt_ids(tokenizer, messages)
        full = render_ids(tokenizer, [*messages, *row["completion"]], add_generation_prompt=False)
        if full[: len(prompt)] != prompt:
            raise ValueError(f"{row['task_id']}: the rendered chat does not start with the rendered prompt")
        answer = full[len(prompt):]
        answer = answer[: answer.index(end) + 1]  # the policy's turn stops at the end-of-turn token
        examples.append(Example(row["task_id"], prompt, answer[:max_answer_tokens], len(answer) > max_answer_tokens))
    return examples


def _task_prompts(spec: str) -> dict[str, list[dict[str, str]]]:
    from kernelgym.env.prompts import first_messages, load_templates
    from kernelgym.tasks.loaders import resolve_tasks

    templates = load_templates()
    return {t.task_id: first_messages(t, templates) for t in resolve_tasks(spec)}


@torch.no_grad()
def answer_stats(model: Any, example: Example, temperatures: tuple[float, ...] = TEMPERATURES) -> ExampleStats:
    """Teacher-forced per-token statistics of `example.answer_ids` after its prompt (batch 1).
    Only the answer positions go through the output head (`logits_to_keep`)."""
    ids = example.prompt_ids + example.answer_ids
    inputs = torch.tensor([ids[:-1]])
    n = len(example.answer_ids)
    logits = model(input_ids=inputs, logits_to_keep=n).logits[0].float()
    target = torch.tensor(example.answer_ids)
    logp = torch.log_softmax(logits, dim=-1)
    nll = -logp.gather(1, target[:, None]).squeeze(1)
    entropy = {}
    for t in temperatures:
        lp = torch.log_softmax(logits / t, dim=-1)
        entropy[f"{t:g}"] = float(-(lp.exp() * lp).sum(-1).mean())
    mismatch = float((logits.argmax(-1) != target).float().mean())
    return ExampleStats(example.task_id, n, float(nll.mean()), entropy, mismatch)


def resolve_adapter(path: Path, workdir: Path) -> Path:
    """`path` itself when it is a peft adapter directory; a parts directory is joined under `workdir`."""
    if (path / "adapter_config.json").is_file() or not (path / "manifest.json").is_file():
        return path
    from train.adapter_parts import join

    return join(path, workdir / f"{len(list(workdir.iterdir()))}")


def weight_changes(model: Any, adapters: list[Path]) -> list[WeightChange]:
    """Per adapter in the chain, ||scale B A||_F / ||W||_F over its modules, W being the weight before it is
    merged (base, then base + the adapters before it): how far each training stage moved the weights."""
    from safetensors.torch import load_file

    weights = {k: v.detach().float().clone() for k, v in model.state_dict().items()}
    out = []
    for path in adapters:
        config = json.loads((path / "adapter_config.json").read_text())
        if config.get("use_rslora") or config.get("use_dora"):
            raise ValueError(f"{path}: rsLoRA/DoRA adapters are not handled by this check")
        tensors = load_file(str(path / "adapter_model.safetensors"))
        rels, total = [], 0.0
        for key, a in tensors.items():
            if ".lora_A." not in key:
                continue
            module = key.split(".lora_A.")[0].removeprefix("base_model.model.")
            b = tensors[key.replace(".lora_A.", ".lora_B.")].float()
            r = a.shape[0]
            scale = config.get("alpha_pattern", {}).get(module, config["lora_alpha"]) / config.get(
                "rank_pattern", {}).get(module, r)
            delta = scale * b @ a.float()
            w = weights[f"{module}.weight"]
            rels.append(float(delta.norm() / w.norm()))
            total += float(delta.norm()) ** 2
            weights[f"{module}.weight"] = w + delta
        out.append(WeightChange(str(path), len(rels), statistics.median(rels), max(rels), math.sqrt(total)))
    return out


def policy_model(base: Any, adapters: list[Path]) -> Any:
    """A copy of `base` with `adapters` merged in order, as `train.models.load_policy` and
    `train.merge_policy` build the policy."""
    from train.models import merge_adapter

    model = copy.deepcopy(base)
    for path in adapters:
        model = merge_adapter(model, path)
    return model.eval()


def measure(base: Any, policies: list[tuple[str, list[Path]]], examples: list[Example]) -> Iterator[PolicyResult]:
    """Every policy over every example, one policy at a time (so a caller can save as it goes); paired NLL
    differences against the first policy."""
    results: list[PolicyResult] = []
    for label, adapters in policies:
        start = time.perf_counter()
        changes = weight_changes(base, adapters)
        model = policy_model(base, adapters)
        stats = []
        for i, example in enumerate(examples):
            stats.append(answer_stats(model, example))
            log.info("%s %d/%d %s: %d tokens, nll %.4f", label, i + 1, len(examples), example.task_id,
                     stats[-1].tokens, stats[-1].nll)
        del model
        first = results[0].examples if results else None
        results.append(PolicyResult(
            label=label, adapters=[str(a) for a in adapters],
            nll=Interval.of([s.nll for s in stats]),
            nll_token_weighted=sum(s.nll * s.tokens for s in stats) / sum(s.tokens for s in stats),
            entropy={t: Interval.of([s.entropy[t] for s in stats]) for t in stats[0].entropy},
            argmax_mismatch=Interval.of([s.argmax_mismatch for s in stats]),
            nll_minus_first=Interval.of([s.nll - f.nll for s, f in zip(stats, first)]) if first else None,
            weight_changes=changes, seconds=time.perf_counter() - start, examples=stats))
        yield results[-1]


def format_table(results: list[PolicyResult]) -> str:
    """The results as a fixed-width text table, one policy a row."""
    first = results[0].label
    head = (f"{'policy':<8} {'NLL/token [95% CI]':<26} {'tok-wtd':>7} {'dNLL vs ' + first + ' [95% CI]':<30} "
            + " ".join(f"{'H@T' + t:>13}" for t in results[0].entropy)
            + f" {'argmax!=tok':>11} {'|dW|/|W| med/max (last adapter)':>32}")
    lines = [head]
    for r in results:
        d = r.nll_minus_first
        diff = f"{d.mean:+.4f} [{d.low:+.4f},{d.high:+.4f}]" if d else "-"
        w = r.weight_changes[-1] if r.weight_changes else None
        wc = f"{w.median_rel:.4%} / {w.max_rel:.4%}" if w else "-"
        lines.append(f"{r.label:<8} {r.nll.mean:.4f} [{r.nll.low:.4f},{r.nll.high:.4f}]{'':<3} "
                     f"{r.nll_token_weighted:>7.4f} {diff:<30} "
                     + " ".join(f"{e.mean:>13.4f}" for e in r.entropy.values())
                     + f" {r.argmax_mismatch.mean:>11.4f} {wc:>32}")
    return "\n".join(lines)


def load_base(name: str, dtype: str, seed: int) -> tuple[Any, Any]:
    """The base model and tokenizer through the trainer's own loader (`train.models.load_policy`)."""
    from types import SimpleNamespace

    from trl import ModelConfig

    from train.models import load_policy

    model_args = ModelConfig(model_name_or_path=name, dtype=dtype)
    args: Any = SimpleNamespace(seed=seed, trust_remote_code=False, model_init_kwargs={"dtype": dtype})
    model, tokenizer = load_policy(model_args, args)
    if isinstance(model, str):
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(model, dtype=getattr(torch, dtype))
    return model.eval(), tokenizer


def _parse_policy(text: str) -> tuple[str, list[Path]]:
    label, sep, dirs = text.partition("=")
    if not sep or not label:
        raise argparse.ArgumentTypeError(f"--policy {text!r}: expected LABEL=DIR[,DIR...] (LABEL= for the base)")
    return label, [Path(d) for d in dirs.split(",") if d]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.drift_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="the base: kernelgym:qwen-coder-0.5b, kernelgym:tiny, a hub id")
    parser.add_argument("--policy", type=_parse_policy, action="append", required=True,
                        help="LABEL=DIR[,DIR...]: adapters (or parts directories) merged in order; the first "
                             "policy is the reference of the paired differences")
    parser.add_argument("--data", type=Path, required=True, help="corpus jsonl with prompt, completion, task_id")
    parser.add_argument("--tasks", help="task spec to rebuild prompts with first_messages (default: row's prompt)")
    parser.add_argument("--limit", type=int, default=24, help="examples drawn from the first-turn rows")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draw (and of the tiny model)")
    parser.add_argument("--max-answer-tokens", type=int, default=2048, help="answers are cut to this many tokens")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--out", type=Path, help="JSON file for the full results")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.threads:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    base, tokenizer = load_base(args.model, args.dtype, args.seed)
    examples = load_examples(args.data, tokenizer, args.limit, args.seed, args.max_answer_tokens, args.tasks)
    log.info("%d examples: %s; answer tokens %d (cut: %d)", len(examples), [e.task_id for e in examples],
             sum(len(e.answer_ids) for e in examples), sum(e.truncated for e in examples))
    results: list[PolicyResult] = []
    with tempfile.TemporaryDirectory(prefix="drift_check_") as tmp:
        try:
            policies = [(label, [resolve_adapter(d, Path(tmp)) for d in dirs]) for label, dirs in args.policy]
            for result in measure(base, policies, examples):
                results.append(result)
                if args.out:  # after every policy: a run cut short keeps what it measured
                    _write(args.out, argv, start, examples, results)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    print(format_table(results))
    for r in results:
        for w in r.weight_changes:
            print(f"{r.label}: {w.adapter}: {w.modules} modules, |dW|/|W| median {w.median_rel:.4%} "
                  f"max {w.max_rel:.4%}, ||dW|| {w.delta_norm:.4f}")
    return 0


def _write(out: Path, argv: list[str] | None, start: float, examples: list[Example],
           results: list[PolicyResult]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"argv": argv if argv is not None else sys.argv[1:], "seconds": time.perf_counter() - start,
              "examples": [{"task_id": e.task_id, "prompt_tokens": len(e.prompt_ids),
                            "answer_tokens": len(e.answer_ids), "truncated": e.truncated} for e in examples],
              "policies": [asdict(r) for r in results]}
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
