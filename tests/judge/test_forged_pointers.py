"""Kernels may reach memory only through the pointers they are handed: int<->pointer casts, pointers
stored as data and inline assembly are outside the answer contract (`launch_hook.forged_pointer_ops`
on the compiled kernel's Triton IR, the interpreter's builder on the CPU, `contract.EXCLUDED_NAMES`
statically). The TTIR below was printed by Triton 3.9's `make_ttir` for sm_90 on a CPU-only machine."""

from pathlib import Path

import pytest
import triton.language as tl

from kernelgym.judge import launch_hook
from kernelgym.judge.errors import classify_exception
from kernelgym.judge.launch_hook import ForgedPointerError, forged_pointer_ops
from kernelgym.judge.static_checks import analyse
from tests.answers import HEADER, RELU_KERNEL, relu_answer

# A relu that reinterprets its float pointers as int32 pointers (ptr -> ptr: allowed).
HONEST_TTIR = """\
module {
  tt.func public @relu_bits_kernel(%x_ptr: !tt.ptr<f32> loc("x_ptr"(#loc)), %out_ptr: !tt.ptr<f32> loc("out_ptr"(#loc)), %n: i32 loc("n"(#loc))) attributes {noinline = false} {
    %cst = arith.constant dense<0> : tensor<64xi32> loc(#loc1)
    %offs_2 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32> loc(#loc17)
    %mask = tt.splat %n : i32 -> tensor<64xi32> loc(#loc18)
    %mask_5 = arith.cmpi slt, %offs_2, %mask : tensor<64xi32> loc(#loc18)
    %x_bits = tt.bitcast %x_ptr : !tt.ptr<f32> -> !tt.ptr<i32> loc(#loc19)
    %out_bits = tt.bitcast %out_ptr : !tt.ptr<f32> -> !tt.ptr<i32> loc(#loc20)
    %bits = tt.splat %x_bits : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>> loc(#loc21)
    %bits_6 = tt.addptr %bits, %offs_2 : tensor<64x!tt.ptr<i32>>, tensor<64xi32> loc(#loc21)
    %bits_7 = tt.load %bits_6, %mask_5, %cst : tensor<64x!tt.ptr<i32>> loc(#loc22)
    %0 = tt.splat %out_bits : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>> loc(#loc9)
    %1 = tt.addptr %0, %offs_2 : tensor<64x!tt.ptr<i32>>, tensor<64xi32> loc(#loc9)
    %2 = arith.maxsi %bits_7, %cst : tensor<64xi32> loc(#loc23)
    tt.store %1, %2, %mask_5 : tensor<64x!tt.ptr<i32>> loc(#loc12)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc18 = loc("int_to_ptr"(#loc3))
"""

# Loads an address logged by an earlier call, writes through it, logs its own output's address,
# and reads %globaltimer through inline PTX.
FORGING_TTIR = """\
module {
  tt.func public @forge(%log_ptr: !tt.ptr<i64> loc("log_ptr"(#loc)), %out_ptr: !tt.ptr<f32> loc("out_ptr"(#loc)), %n: i32 loc("n"(#loc))) attributes {noinline = false} {
    %c3_i32 = arith.constant 3 : i32 loc(#loc1)
    %c1_i32 = arith.constant 1 : i32 loc(#loc2)
    %addr = tt.load %log_ptr : !tt.ptr<i64> loc(#loc18)
    %p = tt.int_to_ptr %addr : i64 -> !tt.ptr<f32> loc(#loc19)
    %offs = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32> loc(#loc20)
    %2 = tt.splat %p : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>> loc(#loc7)
    %3 = tt.addptr %2, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc7)
    %4 = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>> loc(#loc8)
    %5 = tt.addptr %4, %offs : tensor<128x!tt.ptr<f32>>, tensor<128xi32> loc(#loc8)
    %6 = tt.load %5 : tensor<128x!tt.ptr<f32>> loc(#loc9)
    tt.store %3, %6 : tensor<128x!tt.ptr<f32>> loc(#loc10)
    %7 = tt.addptr %log_ptr, %c1_i32 : !tt.ptr<i64>, i32 loc(#loc2)
    %8 = tt.ptr_to_int %out_ptr : !tt.ptr<f32> -> i64 loc(#loc11)
    tt.store %7, %8 : !tt.ptr<i64> loc(#loc12)
    %y = tt.elementwise_inline_asm "mov.u64 $0, %globaltimer;" {constraints = "=l", packed_element = 1 : i32, pure = false} -> i64 loc(#loc21)
    %9 = tt.addptr %log_ptr, %c3_i32 : !tt.ptr<i64>, i32 loc(#loc1)
    tt.store %9, %y : !tt.ptr<i64> loc(#loc14)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
"""

# Pointers stored as data (Triton 3.9 refuses to build this type; older versions accept it).
NESTED_TTIR = """\
    %pp = tt.bitcast %log_ptr : !tt.ptr<i64> -> !tt.ptr<!tt.ptr<f32>> loc(#loc3)
    tt.store %pp, %out_ptr : !tt.ptr<!tt.ptr<f32>> loc(#loc4)
"""


def test_forged_pointer_ops_in_real_ttir():
    assert forged_pointer_ops(FORGING_TTIR) == ["tt.int_to_ptr", "tt.ptr_to_int", "tt.elementwise_inline_asm"]
    assert forged_pointer_ops(NESTED_TTIR) == ["!tt.ptr<!tt.ptr<...>>"]


def test_pointer_reinterpretation_and_names_in_locations_are_not_forging():
    assert forged_pointer_ops(HONEST_TTIR) == []  # tt.bitcast ptr->ptr; a local named int_to_ptr
    assert forged_pointer_ops('    tt.print " tt.int_to_ptr: " {hex = false} : %x : tensor<4xi32>\n') == []


def test_generic_mlir_form_is_read_too():
    generic = ('    %1 = "tt.int_to_ptr"(%0) : (i64) -> !tt.ptr<f32>\n'
               '    %a:2 = tt.elementwise_inline_asm "" {} -> i32, i32\n')
    assert forged_pointer_ops(generic) == ["tt.int_to_ptr", "tt.elementwise_inline_asm"]


def _make_ttir(kernel, signature: dict, constexprs: dict) -> str:
    """TTIR for sm_90 built on this machine (no GPU needed up to TTIR), or a skip. Never under the
    interpreter: there Triton's standard-library functions (`tl.sum`) are interpreted ones, and a code
    generation that fails inside one left `triton.language` patched for every later test (CI, 2026-11-27)."""
    import os

    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("TTIR is built only with TRITON_INTERPRET unset or 0")
    try:
        from triton._C.libtriton import ir
        from triton.backends.compiler import GPUTarget
        from triton.backends.nvidia.compiler import CUDABackend
        from triton.compiler import ASTSource

        target = GPUTarget("cuda", 90, 32)
        backend = CUDABackend(target)
        ctx = ir.context()
        ir.load_dialects(ctx)
        backend.load_dialects(ctx)
        opts = backend.parse_options({})
        src = ASTSource(kernel, signature=signature, constexprs=constexprs)
        mod = src.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)
        stages: dict = {}
        backend.add_stages(stages, opts, src.language)
        return str(stages["ttir"](mod, {}))
    except Exception as e:  # noqa: BLE001 - Triton's internal compile API differs across versions
        pytest.skip(f"cannot build TTIR on this machine with this Triton: {type(e).__name__}: {e}")


def _forge(log_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(log_ptr, out_ptr.to(tl.int64))
    p = tl.load(log_ptr + 1).to(out_ptr.dtype)  # int -> ptr through a pointer's dtype
    tl.store(p + offs, tl.load(out_ptr + offs))


def _bits(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    xi = x_ptr.to(tl.pointer_type(tl.int32))
    tl.store(xi + offs, tl.abs(tl.load(xi + offs)))


def test_ttir_built_here_shows_casts_and_not_reinterpretation():
    from triton.runtime.jit import JITFunction  # the compiler's, whatever TRITON_INTERPRET says

    sig = {"log_ptr": "*i64", "out_ptr": "*fp32", "BLOCK": "constexpr"}
    forge = _make_ttir(JITFunction(_forge), sig, {"BLOCK": 64})
    assert forged_pointer_ops(forge) == ["tt.int_to_ptr", "tt.ptr_to_int"]
    bits = _make_ttir(JITFunction(_bits), {"x_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 64})
    assert "tt.bitcast" in bits and forged_pointer_ops(bits) == []


# -- the hook on a compiled kernel (GPU path), with fakes ------------------------------------------
class _Asm(dict):
    reads = 0

    def get(self, key, default=None):
        _Asm.reads += 1
        return super().get(key, default)


class _Compiled:
    def __init__(self, ttir: str) -> None:
        self.asm = _Asm(ttir=ttir)


def answer_kernel():
    pass


answer_kernel.__module__ = "candidate_answer"


class _FakeJit:
    fn = answer_kernel
    params = ()  # no constexpr parameters


@pytest.fixture
def hooked(monkeypatch):
    """`launch_hook`'s wrapper around a fake `JITFunction.run` that returns `compiled`."""
    monkeypatch.setitem(launch_hook._STATE, "module", "candidate_answer")
    monkeypatch.setattr(launch_hook, "_CHECKED", {})
    launch_hook.take()
    yield lambda compiled: launch_hook._wrap(lambda self, *a, **k: compiled)(_FakeJit())
    launch_hook.take()


def test_hook_rejects_a_compiled_kernel_that_forges_pointers(hooked):
    with pytest.raises(ForgedPointerError, match=r"kernel answer_kernel: an integer cast to a pointer"):
        hooked(_Compiled(FORGING_TTIR))
    assert launch_hook.take() == {}  # a rejected launch is no evidence of a kernel


def test_hook_reads_each_compiled_kernel_once_and_counts_honest_launches(hooked):
    kernel = _Compiled(HONEST_TTIR)
    _Asm.reads = 0
    for _ in range(3):
        assert hooked(kernel) is kernel
    assert _Asm.reads == 1 and launch_hook.take() == {"answer_kernel": 3}


def test_hook_keeps_rejecting_the_same_forging_kernel(hooked):
    kernel = _Compiled(NESTED_TTIR)
    for _ in range(2):
        with pytest.raises(ForgedPointerError, match="pointer to pointers"):
            hooked(kernel)


def test_hook_passes_kernels_without_ir(hooked):
    assert hooked(None) is None  # the interpreter returns no compiled kernel
    assert launch_hook.take() == {"answer_kernel": 1}


def test_forged_pointer_error_is_an_invalid_answer():
    assert classify_exception(ForgedPointerError("kernel k: ..."), "trial") == ("invalid_answer", "")


def test_interpreter_builder_refuses_the_same_ops(monkeypatch):
    from triton.runtime.interpreter import InterpreterBuilder

    for method in launch_hook._INTERPRETER_OPS:
        monkeypatch.setattr(InterpreterBuilder, method, getattr(InterpreterBuilder, method))  # restored after
    launch_hook.refuse_forged_pointers_in_interpreter()
    builder = InterpreterBuilder()
    with pytest.raises(ForgedPointerError, match=r"\[tt.int_to_ptr\]"):
        builder.create_int_to_ptr(None, None)
    with pytest.raises(ForgedPointerError, match=r"\[tt.ptr_to_int\]"):
        builder.create_ptr_to_int(None, None)
    with pytest.raises(ForgedPointerError, match="inline assembly"):
        builder.create_inline_asm("", "", [], None, True, 1)


# -- the static side -------------------------------------------------------------------------------
def _with_kernel_line(line: str, extra: str = "") -> str:
    kernel = RELU_KERNEL.replace("    m = offs < n", line + "\n    m = offs < n")
    return relu_answer(extra=extra).replace(RELU_KERNEL, kernel)


@pytest.mark.parametrize("line, extra", [
    ('    v = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [offs], dtype=tl.int32, is_pure=True, pack=1)', ""),
    ('    v = triton.language.inline_asm_elementwise("", "=r", [], dtype=tl.int32, is_pure=False, pack=1)', ""),
    ('    v = inline_asm_elementwise("", "=r", [], dtype=tl.int32, is_pure=False, pack=1)',
     "from triton.language import inline_asm_elementwise"),
    ("    v = tl.extra.cuda.globaltimer()", ""),
    ("    v = globaltimer()", "from triton.language.extra.cuda import globaltimer"),
    ("    v = tl.core.inline_asm_elementwise", ""),
])
def test_inline_asm_and_clocks_are_outside_the_contract(line, extra):
    report = analyse(_with_kernel_line(line, extra))
    assert report.violations or report.verdicts


def test_pointer_type_casts_stay_inside_the_contract():
    code = _with_kernel_line("    xi = x_ptr.to(tl.pointer_type(tl.int32))\n    o = out_ptr.to(x_ptr.dtype)")
    report = analyse(code)
    assert report.verdicts == [] and report.violations == []


@pytest.mark.gpu
@pytest.mark.parametrize("path, task, expect", [
    ("exploits/rh21_relu_int_to_ptr_repairs_outputs.py", "relu", "invalid_answer"),
    ("exploits/rh06_tanh_inline_asm.py", "tanh_activation", "invalid_answer"),
    ("honest/relu_pointer_type_bitcast.py", "relu", "ok"),
])
def test_compiled_kernels_on_a_gpu(path, task, expect):
    from kernelgym.judge import JudgeConfig, judge
    from kernelgym.tasks import load_builtin

    (t,) = load_builtin(task)
    code = (Path(__file__).parents[1] / "redteam" / path).read_text()
    result = judge(t, code, JudgeConfig(engine="inprocess", device="cuda", static_checks=False, profile=False))
    assert result.status.value == expect, (result.status.value, result.message)
    if expect == "invalid_answer":
        assert "ForgedPointerError" in result.message


def test_data_ptr_is_outside_the_contract_wherever_it_is_read():
    """An address as an int reaches any other address by offset arithmetic from a pointer the kernel
    was handed (tt.addptr only): no IR check can refuse that, so the address never reaches a kernel."""
    from kernelgym.judge.static_checks import analyse

    head = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
    for body in ("    def forward(self, x):\n        return x.data_ptr()\n",
                 "    def __init__(self):\n        super().__init__()\n        self.a = torch.zeros(1).data_ptr()\n",
                 "    def forward(self, x):\n        f = x.data_ptr\n        return f()\n"):
        report = analyse(head + body)
        assert any("data_ptr" in v and "outside the answer contract" in v for v in report.violations), report


# FlagGems' optional-argument idiom `if weight_pointer:` as Triton lowers a pointer's truthiness
# (`cast(ptr, int64) != 0`): refused as a forged pointer on the H100, an honest kernel.
NULL_TEST_TTIR = """\
  tt.func public @bn(%x_ptr: !tt.ptr<f32>, %weight_pointer: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>) {
    %c0_i64 = arith.constant 0 : i64 loc(#loc1)
    %0 = tt.ptr_to_int %weight_pointer : !tt.ptr<f32> -> i64 loc(#loc2)
    %1 = arith.cmpi ne, %0, %c0_i64 : i64 loc(#loc2)
    %10 = tt.ptr_to_int %x_ptr : !tt.ptr<f32> -> i64 loc(#loc3)
    %11 = arith.cmpi eq, %c0_i64, %10 : i64 loc(#loc3)
    %2 = scf.if %1 -> (f32) {
      %3 = tt.load %weight_pointer : !tt.ptr<f32> loc(#loc4)
      scf.yield %3 : f32 loc(#loc4)
    } else {
      %cst = arith.constant 1.000000e+00 : f32 loc(#loc5)
      scf.yield %cst : f32 loc(#loc5)
    } loc(#loc6)
    tt.return loc(#loc)
  } loc(#loc)
"""


def test_a_pointer_tested_against_null_is_not_forged():
    assert forged_pointer_ops(NULL_TEST_TTIR) == []


@pytest.mark.parametrize("use", [
    "    %9 = tt.addptr %out_ptr, %0 : !tt.ptr<f32>, i64 loc(#loc7)",  # the address as an offset
    "    %9 = arith.cmpi ne, %0, %c5_i64 : i64 loc(#loc7)",  # compared with something other than zero
    "    tt.store %log_ptr, %0 : !tt.ptr<i64> loc(#loc7)",  # the address stored
    "    %9 = arith.addi %0, %c0_i64 : i64 loc(#loc7)",  # arithmetic on the address
    "    %9 = arith.cmpi ne, %0, %0 : i64 loc(#loc7)",
    # a second cast, used as an offset (the first one's null test does not clear it)
    "    %0_1 = tt.ptr_to_int %out_ptr : !tt.ptr<f32> -> i64\n    %9 = tt.addptr %x_ptr, %0_1 : !tt.ptr<f32>, i64",
])
def test_any_other_use_of_a_pointer_as_an_integer_is_forged(use):
    ttir = NULL_TEST_TTIR.replace("    tt.return", use + "\n    %c5_i64 = arith.constant 5 : i64\n    tt.return")
    assert forged_pointer_ops(ttir) == ["tt.ptr_to_int"]
