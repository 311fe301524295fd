"""Triton's GPU front end on the CPU: lower a kernel to Triton IR for a GPU target without a GPU.

The CPU path runs kernels in Triton's interpreter, which runs their bodies as Python and so accepts
code a GPU's compiler refuses. Lowering each replayed kernel to TTIR for an sm_90 target (no GPU,
no ptxas: only the front end) makes the CPU judge refuse what a GPU would, with Triton's message.
Runs in the replay process, on kernel sources `kernel_source.kernel_problems` already accepted.
"""

from __future__ import annotations

from typing import Any

import torch

from kernelgym.judge.kernel_source import KernelSpec, module_text

_TYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64",
          torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8",
          torch.bool: "i1"}
_JIT_MODULES: dict[int, dict[str, Any]] = {}


class GpuFrontEndError(Exception):
    """Triton's GPU front end refused the kernel: a compile error on a GPU."""


def check_launch(specs: dict[str, KernelSpec], name: str, args: list[Any], checked: dict[Any, bool]) -> None:
    """Lower `name` for these arguments once per signature; raise `GpuFrontEndError` if refused."""
    from triton.compiler.errors import CompilationError

    jit = _jit_kernels(specs)[name]
    params = jit.params
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for p, v in zip(params, args):
        kind = _kind(v)
        if kind is None:
            return  # a tuple or descriptor argument: not checked here
        if p.is_constexpr or kind == "constexpr":
            signature[p.name], constexprs[p.name] = "constexpr", v
        else:
            signature[p.name] = kind
    key = (name, tuple(sorted(signature.items())), tuple(sorted((k, repr(v)) for k, v in constexprs.items())))
    if key in checked:
        return
    checked[key] = True
    try:
        _lower(jit, signature, constexprs)
    except CompilationError as e:
        raise GpuFrontEndError(f"kernel {name} does not compile for a GPU: {str(e).strip()[-1500:]}") from None
    except Exception:  # noqa: BLE001 - the check itself could not run (an API change): the interpreter decides
        return


def _kind(v: Any) -> str | None:
    import triton.language as tl

    if isinstance(v, torch.Tensor):
        t = _TYPES.get(v.dtype)
        return None if t is None else "*" + t
    if isinstance(v, bool):
        return "i1"
    if isinstance(v, int):
        return "i32" if -(1 << 31) <= v < (1 << 31) else "i64"
    if isinstance(v, float):
        return "fp32"
    if v is None or isinstance(v, (str, tl.dtype)):
        return "constexpr"
    return None


def _jit_kernels(specs: dict[str, KernelSpec]) -> dict[str, Any]:
    """The same checked kernels as compiled `JITFunction`s (the interpreter's switch off while they
    are defined), cached per spec set."""
    import linecache
    import secrets
    import types

    import triton

    cached = _JIT_MODULES.get(id(specs))
    if cached is not None:
        return cached
    text = module_text(specs)
    filename = f"<kernelgym-gpu-front-end-{secrets.token_hex(8)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    module = types.ModuleType(filename)
    knobs = triton.knobs.runtime
    before = knobs.interpret
    knobs.interpret = False
    try:
        exec(compile(text, filename, "exec"), module.__dict__)  # noqa: S102 - checked specs only
    finally:
        knobs.interpret = before
    kernels = {name: getattr(module, name) for name in specs}
    _JIT_MODULES[id(specs)] = kernels
    return kernels


def _lower(jit: Any, signature: dict[str, str], constexprs: dict[str, Any]) -> None:
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    options = backend.parse_options({})
    src = ASTSource(fn=jit, signature=signature, constexprs=constexprs)
    src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(), context)
