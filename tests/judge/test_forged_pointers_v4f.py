"""Red-team round v4f against the null-test exemption of `launch_hook.forged_pointer_ops`: a `tt.ptr_to_int`
whose result is only compared (eq/ne) with zero is accepted whatever pointer it casts. Its operand may be
`ptr - cand` for a tensor of candidate offsets, so each null test is an equality test of the address, and
`tl.where(hit, 0, cand)` puts the matching candidate (the address / element size) into arithmetic: the
address leak the ptr_to_int refusal was for, by search (a 2^38-candidate sweep covers a 47-bit space at
512-byte alignment). The TTIR is Triton 3.9's own, built for sm_90 on this CPU-only machine."""

import pytest
import triton
import triton.language as tl

from kernelgym.judge.launch_hook import forged_pointer_ops
from tests.judge.test_forged_pointers import NULL_TEST_TTIR, _make_ttir

# Printed by Triton 3.9's make_ttir for sm_90 on this CPU-only machine (TRITON_INTERPRET=0) from
# `_leak_window` below; locations dropped. The live builds further down skip under the interpreter.
LEAK_TTIR = """\
module {
  tt.func public @_leak(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %base: i64) attributes {noinline = false} {
    %cst = arith.constant dense<0> : tensor<64xi64>
    %cand = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %cand_0 = arith.extsi %cand : tensor<64xi32> to tensor<64xi64>
    %cand_1 = tt.splat %base : i64 -> tensor<64xi64>
    %cand_2 = arith.addi %cand_1, %cand_0 : tensor<64xi64>
    %hit = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %hit_3 = arith.subi %cst, %cand_2 : tensor<64xi64>
    %hit_4 = tt.addptr %hit, %hit_3 : tensor<64x!tt.ptr<f32>>, tensor<64xi64>
    %hit_5 = tt.ptr_to_int %hit_4 : tensor<64x!tt.ptr<f32>> -> tensor<64xi64>
    %hit_6 = arith.cmpi ne, %hit_5, %cst : tensor<64xi64>
    %found = arith.select %hit_6, %cst, %cand_2 : tensor<64xi1>, tensor<64xi64>
    %found_7 = tt.reshape %found allow_reorder : tensor<64xi64> -> tensor<64xi64>
    %found_8 = "tt.reduce"(%found_7) <{axis = 0 : i32}> ({
    ^bb0(%found_9: i64, %found_10: i64):
      %found_11 = arith.addi %found_9, %found_10 : i64
      tt.reduce.return %found_11 : i64
    }) : (tensor<64xi64>) -> i64
    %0 = arith.sitofp %found_8 : i64 to f32
    tt.store %out_ptr, %0 : !tt.ptr<f32>
    tt.return
  }
}
"""

# The same for `if x_ptr - k:` (`_if_offset_pointer`).
IF_OFFSET_TTIR = """\
module {
  tt.func public @_ifptr(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %k: i64) attributes {noinline = false} {
    %cst = arith.constant 1.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %0 = arith.subi %c0_i64, %k : i64
    %1 = tt.addptr %x_ptr, %0 : !tt.ptr<f32>, i64
    %2 = tt.ptr_to_int %1 : !tt.ptr<f32> -> i64
    %3 = arith.cmpi ne, %2, %c0_i64 : i64
    scf.if %3 {
      tt.store %out_ptr, %cst : !tt.ptr<f32>
    }
    tt.return
  }
}
"""

_GAP = ("v4f gap: null tests of an offset pointer are accepted; the matching candidate is the address as an "
        "integer (fix: accept tt.ptr_to_int only of a tt.func public argument, scalar, compared with a zero "
        "constant of the same function)")


@pytest.mark.parametrize("ttir", [LEAK_TTIR, IF_OFFSET_TTIR], ids=["window_search", "if_offset_pointer"])
def test_null_tests_of_offset_pointers_are_forged(ttir):
    assert forged_pointer_ops(ttir) == ["tt.ptr_to_int"]


def _leak_window(x_ptr, out_ptr, base, BLOCK: tl.constexpr):
    cand = base + tl.arange(0, BLOCK).to(tl.int64)
    hit = (x_ptr - cand).to(tl.int1)  # ptr_to_int(x - cand) != 0: an equality test per candidate
    tl.store(out_ptr, tl.sum(tl.where(hit, 0, cand)))  # the address / 4 when it is in the window


def _if_offset_pointer(x_ptr, out_ptr, k):
    if x_ptr - k:  # `if ptr:` on an offset pointer: true unless address == 4 * k
        tl.store(out_ptr, 1)


def _ttir(fn, sig: dict, constexprs: dict) -> str:
    from triton.runtime.jit import JITFunction  # the compiler's, whatever TRITON_INTERPRET says

    return _make_ttir(JITFunction(fn), sig, constexprs)


def test_the_flaggems_null_test_on_an_argument_stays_accepted():
    assert forged_pointer_ops(NULL_TEST_TTIR) == []


def test_address_search_built_here_is_forged():
    ttir = _ttir(_leak_window, {"x_ptr": "*fp32", "out_ptr": "*i64", "base": "i64", "BLOCK": "constexpr"},
                 {"BLOCK": 64})
    assert "tt.ptr_to_int %hit_4" in ttir  # the cast of the offset pointers, not of an argument
    assert forged_pointer_ops(ttir) == ["tt.ptr_to_int"]


def test_truthiness_of_an_offset_pointer_built_here_is_forged():
    ttir = _ttir(_if_offset_pointer, {"x_ptr": "*fp32", "out_ptr": "*i32", "k": "i64"}, {})
    assert "tt.addptr %x_ptr" in ttir
    assert forged_pointer_ops(ttir) == ["tt.ptr_to_int"]


# Hand-written (Triton 3.9 names SSA values after Python variables): the zero constants are collected
# over the whole module, so a `%cst` that is zero in a noinline helper makes the kernel's own, non-zero
# `%cst` count as zero. With `cmpi eq, addr, %cst` this is an equality test with any constant: no more than
# the offset search above, but it shows the scoping the fix must respect (SSA names are per function).
CROSS_FUNCTION_ZERO = """\
module {
  tt.func private @helper(%p: !tt.ptr<i64>) attributes {noinline = true} {
    %cst = arith.constant dense<0> : tensor<64xi64>
    tt.return
  }
  tt.func public @k(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<i64>) attributes {noinline = false} {
    %cst = arith.constant dense<139637976727552> : tensor<64xi64>
    %0 = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %1 = tt.ptr_to_int %0 : tensor<64x!tt.ptr<f32>> -> tensor<64xi64>
    %2 = arith.cmpi eq, %1, %cst : tensor<64xi64>
    tt.return
  }
}
"""


def test_a_zero_of_another_function_is_not_this_functions_zero():
    assert forged_pointer_ops(CROSS_FUNCTION_ZERO) == ["tt.ptr_to_int"]


# An honest answer (/tmp/kg/v4f/honest_batch_norm_noinline_null_test.py in round v4f: the data answer of
# batch_norm_inference with weight and bias read by a @triton.jit(noinline=True) helper that tests `if ptr:`),
# its TTIR built here for sm_90, trimmed to the lines that matter. The helper stays a tt.func of its own
# whose SSA names repeat the kernel's: the kernel's `%0` (an addptr, then splat) reads as a use of the
# helper's ptr_to_int `%0`, so FlagGems' idiom is refused once it sits in a noinline function (ok on the CPU).
# Since 349ab7e it is refused by rule (a helper's argument is not the kernel's).
NOINLINE_NULL_TEST_TTIR = """\
module {
  tt.func public @batch_norm_inference_kernel(%x_ptr: !tt.ptr<f32>, %w_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %c: i32, %base_10: i64) attributes {noinline = false} {
    %w = tt.call @optional_affine__Pfp32_i32_c1.0(%w_ptr, %c) : (!tt.ptr<f32>, i32) -> f32
    %0 = tt.addptr %out_ptr, %base_10 : !tt.ptr<f32>, i64
    %1 = tt.splat %0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    tt.return
  }
  tt.func private @optional_affine__Pfp32_i32_c1.0(%ptr: !tt.ptr<f32>, %c: i32) -> f32 attributes {noinline = true} {
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 1.000000e+00 : f32
    %0 = tt.ptr_to_int %ptr : !tt.ptr<f32> -> i64
    %1 = arith.cmpi ne, %0, %c0_i64 : i64
    %2 = scf.if %1 -> (f32) {
      %v = tt.addptr %ptr, %c : !tt.ptr<f32>, i32
      %v_0 = tt.load %v : !tt.ptr<f32>
      scf.yield %v_0 : f32
    } else {
      scf.yield %cst : f32
    }
    tt.return %2 : f32
  }
}
"""


def test_a_null_test_in_a_noinline_helper_is_not_forged():
    # Every tt.call of the helper passes the kernel's own %w_ptr in the tested place (v4f false flag, fixed).
    assert forged_pointer_ops(NOINLINE_NULL_TEST_TTIR) == []


def test_a_helper_handed_an_offset_pointer_anywhere_is_refused():
    # One more call site passes `%0` (out_ptr + base): the helper's null test is then an address test.
    ttir = NOINLINE_NULL_TEST_TTIR.replace(
        "    tt.return\n  }\n  tt.func private",
        "    %x = tt.call @optional_affine__Pfp32_i32_c1.0(%0, %c) : (!tt.ptr<f32>, i32) -> f32\n"
        "    tt.return\n  }\n  tt.func private", 1)
    assert ttir != NOINLINE_NULL_TEST_TTIR
    assert forged_pointer_ops(ttir) == ["tt.ptr_to_int"]


def test_a_helper_reached_through_another_helper_needs_the_kernels_pointer_all_the_way():
    outer = ("  tt.func private @outer(%q: !tt.ptr<f32>, %c: i32) -> f32 attributes {noinline = true} {\n"
             "    %0 = tt.call @optional_affine__Pfp32_i32_c1.0(%q, %c) : (!tt.ptr<f32>, i32) -> f32\n"
             "    tt.return %0 : f32\n  }\n")
    through = NOINLINE_NULL_TEST_TTIR.replace("tt.call @optional_affine__Pfp32_i32_c1.0(%w_ptr", "tt.call @outer(%w_ptr")
    through = through.replace("  tt.func private @optional_affine", outer + "  tt.func private @optional_affine")
    assert forged_pointer_ops(through) == []
    offset = through.replace("tt.call @outer(%w_ptr", "tt.call @outer(%0")
    assert forged_pointer_ops(offset) == ["tt.ptr_to_int"]


def test_a_call_this_reading_does_not_parse_gives_no_exemption():
    odd = NOINLINE_NULL_TEST_TTIR.replace("tt.call @optional_affine__Pfp32_i32_c1.0(%w_ptr, %c)",
                                          "tt.call @optional_affine__Pfp32_i32_c1.0(%w_ptr, (%c))")
    assert forged_pointer_ops(odd) == ["tt.ptr_to_int"]


# Against the fix (349ab7e): function headers are found by `_FUNC`, whose symbol pattern `@[\w.$-]+` misses a
# quoted symbol. Triton mangles a noinline helper's constexpr arguments into its name, so a string constexpr
# with a space ("a b") makes MLIR print `@"..."`: the helper's header is not seen, its lines join the public
# kernel's body, and its argument `%x_ptr` (the caller's `x_ptr - (base + i)`) reads as the kernel's own
# `%x_ptr`. Its null test is an equality test of the address again; the loop sums the matching candidate.
# Triton 3.9's TTIR for sm_90, built here (TRITON_INTERPRET=0) from `_leak_through_quoted_helper`; locations dropped.
QUOTED_HELPER_TTIR = """\
module {
  tt.func public @_leak(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<i64>, %base: i64) attributes {noinline = false} {
    %c0_i64 = arith.constant 0 : i64
    %c0_i32 = arith.constant 0 : i32
    %c64_i32 = arith.constant 64 : i32
    %c1_i32 = arith.constant 1 : i32
    %found = scf.for %i = %c0_i32 to %c64_i32 step %c1_i32 iter_args(%found_0 = %c0_i64) -> (i64)  : i32 {
      %found_1 = arith.extsi %i : i32 to i64
      %found_2 = arith.addi %base, %found_1 : i64
      %found_3 = arith.subi %c0_i64, %found_2 : i64
      %found_4 = tt.addptr %x_ptr, %found_3 : !tt.ptr<f32>, i64
      %found_5 = tt.call @"__main__.is_not__Pfp32_c_sq_a b_sq_"(%found_4) : (!tt.ptr<f32>) -> i32
      %found_6 = arith.extsi %found_5 : i32 to i64
      %found_7 = arith.muli %found_6, %found_2 : i64
      %found_8 = arith.addi %found_0, %found_7 : i64
      scf.yield %found_8 : i64
    }
    tt.store %out_ptr, %found : !tt.ptr<i64>
    tt.return
  }
  tt.func private @"__main__.is_not__Pfp32_c_sq_a b_sq_"(%x_ptr: !tt.ptr<f32>) -> i32 attributes {noinline = true} {
    %c0_i64 = arith.constant 0 : i64
    %0 = tt.ptr_to_int %x_ptr : !tt.ptr<f32> -> i64
    %1 = arith.cmpi eq, %0, %c0_i64 : i64
    %2 = arith.extui %1 : i1 to i32
    tt.return %2 : i32
  }
}
"""


@triton.jit(noinline=True)
def _is_null(x_ptr, tag: tl.constexpr):
    hit = 1
    if x_ptr:  # the helper's argument: the caller's offset pointer
        hit = 0
    return hit


def _leak_through_quoted_helper(x_ptr, out_ptr, base, N: tl.constexpr):
    found = base * 0
    for i in range(N):
        found += _is_null(x_ptr - (base + i), "a b") * (base + i)  # "a b": a quoted symbol
    tl.store(out_ptr, found)



def test_a_helper_with_a_quoted_name_is_a_function_of_its_own():
    assert forged_pointer_ops(QUOTED_HELPER_TTIR) == ["tt.ptr_to_int"]


def test_a_helper_with_a_quoted_name_built_here_is_forged():
    ttir = _ttir(_leak_through_quoted_helper, {"x_ptr": "*fp32", "out_ptr": "*i64", "base": "i64", "N": "constexpr"},
                 {"N": 64})
    assert 'tt.func private @"' in ttir
    assert forged_pointer_ops(ttir) == ["tt.ptr_to_int"]


def test_a_function_header_that_does_not_parse_gets_no_exemption():
    unknown = NULL_TEST_TTIR.replace("tt.func public @bn(", "tt.func public @bn <{weird}> (")
    assert forged_pointer_ops(unknown) == ["tt.ptr_to_int"]
