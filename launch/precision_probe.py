"""Calibration data for a precision bound on matrix-product tasks (issue 26): how far TF32, bf16 and fp16
computations of each TF32-class built-in task land from its float64 reference, per input draw.

    python launch/precision_probe.py [--device cuda] [--size full|small] [--draws signed,wide,offset,tiny]

For every task whose float64 forward runs a matrix product (`judge.precision.is_matmul_like`), the reference
model runs in float32 with TF32 off (the expected output), with TF32 on (cuBLAS/cuDNN's TF32: what an honest
`tl.dot` in TF32 errs by, roughly), under bf16 and fp16 autocast, and in float64. Printed per (task, draw,
mode): mean |error| / mean |float64 output| and max |error| / mean |float64 output|, the two statistics an
aggregate bound and the elementwise bound rest on. On the CPU TF32 has no effect (its rows equal fp32's).
"""

from __future__ import annotations

import argparse
import contextlib
import sys

import torch

from kernelgym.judge.inputs import to_device
from kernelgym.judge.precision import _OpNames, float64_model, is_matmul_like
from kernelgym.judge.reference import Reference
from kernelgym.tasks import load_builtin

MODES = ("fp32", "tf32", "bf16", "fp16")


@contextlib.contextmanager
def _mode(mode: str, device: str):
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = mode == "tf32"
    try:
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(mode)
        with torch.autocast(torch.device(device).type, dtype=dtype) if dtype else contextlib.nullcontext():
            yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def _stats(out: torch.Tensor, ref64: torch.Tensor) -> tuple[float, float]:
    err = (out.double() - ref64).abs()
    scale = ref64.abs().mean().item() or 1.0
    return err.mean().item() / scale, err.max().item() / scale


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--size", choices=("full", "small"), default=None, help="default: full on a GPU")
    p.add_argument("--draws", default="signed,wide,offset,tiny", help="input distributions (judge.inputs)")
    p.add_argument("--tasks", default="", help="comma-separated task ids (default: every TF32-class built-in)")
    args = p.parse_args(argv)
    size = args.size or ("full" if args.device != "cpu" else "small")
    wanted = set(filter(None, args.tasks.split(",")))
    print("task draw mode mean_err/mean_abs max_err/mean_abs")
    for task in load_builtin():
        if wanted and task.task_id not in wanted:
            continue
        ref = Reference(task, size, args.device, init_seed=1)
        model64 = float64_model(ref.model)
        if model64 is None:
            continue
        for draw in args.draws.split(","):
            inputs = to_device(ref.inputs(7, draw), args.device)
            wide = [v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]
            ops = _OpNames()
            with torch.no_grad(), ops:
                out64 = model64(*wide)
            if not is_matmul_like(ops.names) or not isinstance(out64, torch.Tensor):
                break  # not a TF32-class task (or not one output): no rows
            for mode in MODES:
                with torch.no_grad(), _mode(mode, args.device):
                    out = ref.model(*inputs)
                mean_rel, max_rel = _stats(out.float(), out64)
                print(f"{task.task_id} {draw} {mode} {mean_rel:.3e} {max_rel:.3e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
