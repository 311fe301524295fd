import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernelgym.judge.compare import compare_outputs
from kernelgym.judge.config import JudgeConfig

CFG = JudgeConfig(device="cpu")


def test_within_fp32_tolerance_passes():
    e = torch.randn(100)
    assert compare_outputs(e, e + 5e-5, CFG).passed


def test_outside_tolerance_counts_mismatches():
    e = torch.zeros(100)
    a = e.clone()
    a[:3] = 1e-3
    c = compare_outputs(e, a, CFG)
    assert not c.passed and c.mismatched == 3 and c.total == 100
    assert abs(c.max_abs_error - 1e-3) < 1e-9


def test_nan_and_inf_never_pass_even_against_nan():
    e = torch.tensor([float("nan"), 1.0])
    assert not compare_outputs(e, e.clone(), CFG).passed
    assert not compare_outputs(torch.ones(2), torch.tensor([1.0, float("inf")]), CFG).passed


def test_dtype_and_shape_checked():
    e = torch.ones(4)
    assert "dtype" in compare_outputs(e, e.double(), CFG).message
    assert "shape" in compare_outputs(e, torch.ones(2, 2), CFG).message


def test_half_precision_uses_looser_tolerance():
    e = torch.ones(10, dtype=torch.float16)
    assert compare_outputs(e, e + 0.005, CFG).passed
    assert not compare_outputs(e.float(), e.float() + 0.005, CFG).passed


def test_tuple_outputs_and_integer_outputs():
    e = (torch.arange(5), torch.ones(3))
    assert compare_outputs(e, [torch.arange(5), torch.ones(3)], CFG).passed
    bad = compare_outputs(e, [torch.arange(5).flip(0), torch.ones(3)], CFG)
    assert not bad.passed and "integer values differ" in bad.message
    assert "expected 2 output(s), got 1" in compare_outputs(e, [torch.ones(3)], CFG).message


def test_subclass_output_is_rejected():
    class Sub(torch.Tensor):
        pass

    e = torch.ones(3)
    assert not compare_outputs(e, e.clone().as_subclass(Sub), CFG).passed


def test_layout_must_be_the_references_or_contiguous():
    from kernelgym.judge.compare import compare_outputs, layout_problem

    x = torch.randn(4, 6)
    expected = x.t().contiguous()  # the transpose task's reference output
    assert layout_problem(expected, (4, 1)) == ""
    # a plain copy of x into a buffer with transposed strides reads back as the transpose
    problem = layout_problem(expected, (1, 6))
    assert "(1, 6)" in problem and "(4, 1)" in problem
    assert layout_problem(x.t(), (1, 6)) == ""  # the reference's own strides are fine
    assert layout_problem(torch.zeros(1, 5), (99, 1)) == ""  # size-1 dims have no meaningful stride
    cmp = compare_outputs(expected, expected.clone(), JudgeConfig(device="cpu"), layout=[((1, 6), False)])
    assert not cmp.passed and "strides" in cmp.message
    assert compare_outputs(expected, expected.clone(), JudgeConfig(device="cpu"), layout=[((4, 1), True)]).passed


def test_row_major_strides_with_gaps_pass_but_no_permutation_or_overlap():
    """A slice of a padded buffer (`padded[:, :cols]`, red-team s12's honest softmax) keeps the contiguous
    order of dims with room between rows: accepted. Permuted, overlapping or inner-strided layouts are not."""
    from kernelgym.judge.compare import layout_problem

    expected = torch.randn(8, 300)
    padded = torch.empty(8, 512)[:, :300]
    assert layout_problem(expected, padded.stride()) == ""
    assert layout_problem(torch.randn(2, 3, 5), torch.empty(2, 4, 8)[:, :3, :5].stride()) == ""
    assert layout_problem(expected, (1, 8)) != ""  # transposed: a copy would pass for a transpose (RH-13)
    assert layout_problem(expected, (100, 1)) != ""  # rows overlap (stride below the row's 300)
    assert layout_problem(expected, (0, 1)) != ""  # every row the same memory (an expand)
    assert layout_problem(expected, (600, 2)) != ""  # every other element: not the contiguous order's inner stride


def test_fp32_summation_order_passes_at_scale_but_a_downcast_does_not():
    """A 4k-long fp32 dot product (outputs ~500 in size) differs from the reference only by summation
    order, which can exceed a fixed 1e-4 near the output's zeros; fp16 inputs miss it by far."""
    g = torch.Generator().manual_seed(0)
    a, b = 3 * torch.randn(256, 4096, generator=g), 3 * torch.randn(4096, 32, generator=g)
    expected = (a.double() @ b.double()).float()
    reordered = torch.zeros(256, 32)
    for k in range(0, 4096, 64):  # a K-tiled kernel's accumulation order
        reordered = reordered + a[:, k:k + 64] @ b[k:k + 64]
    assert ((reordered - expected).abs() > 1e-4 + 1e-4 * expected.abs()).any()  # a fixed atol fails it
    downcast = (a.half().float() @ b.half().float())
    config = JudgeConfig()
    assert compare_outputs(expected, reordered, config).passed
    assert not compare_outputs(expected, downcast, config).passed


@pytest.mark.parametrize("scaled", [False, True])
def test_early_exit_gives_the_full_comparisons_verdict(monkeypatch, scaled):
    """`early` may stop counting, never change `passed`: checked over answers that fail in the first
    chunk, the last chunk, by NaN, by a 0.5 % / 2 % share of misses (scaled allows 1 %), or pass."""
    from kernelgym.judge import compare as compare_mod

    monkeypatch.setattr(compare_mod, "_CHUNK", 64)
    config = JudgeConfig(device="cpu")
    g = torch.Generator().manual_seed(0)
    e = torch.randn(1000, generator=g)
    cases = {"same": e.clone(), "first": e.clone(), "last": e.clone(), "nan": e.clone(),
             "few": e.clone(), "many": e.clone()}
    cases["first"][3] += 1.0
    cases["last"][-1] += 1.0
    cases["nan"][500] = float("nan")
    cases["few"][::200] += 1.0  # 5 of 1000
    cases["many"][::50] += 1.0  # 20 of 1000
    for name, a in cases.items():
        full = compare_outputs(e, a, config, scaled=scaled).passed
        assert compare_outputs(e, a, config, scaled=scaled, early=True).passed == full, name
        assert compare_outputs([e, e], [e.clone(), a], config, scaled=scaled, early=True).passed == \
            compare_outputs([e, e], [e.clone(), a], config, scaled=scaled).passed, name
    assert compare_outputs(e, cases["few"], config, scaled=True, early=True).passed  # within the 1 %


# -- derived precision (issue 26): what an fp32 computation can err by, from a float64 reference --

import random  # noqa: E402

from kernelgym.judge.config import INPUT_DISTRIBUTIONS  # noqa: E402
from kernelgym.judge.precision import derived_bound  # noqa: E402
from kernelgym.judge.reference import Reference  # noqa: E402
from kernelgym.tasks import load_builtin  # noqa: E402


def _trials(task_id: str):
    """(distribution, reference, inputs, expected) for one draw of every input distribution."""
    reference = Reference(load_builtin(task_id)[0], "small", "cpu", init_seed=3)
    rng = random.Random(11)
    for dist in INPUT_DISTRIBUTIONS:
        name, _, inputs, expected = reference.draw(dist, lambda: rng.getrandbits(62))
        yield name, reference, inputs, expected


def _rounded(inputs, dtype):
    return [v.to(dtype).float() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]


def _tf32(t: torch.Tensor) -> torch.Tensor:
    """fp32 operands as TF32 tensor cores read them: the low 13 mantissa bits dropped (truncation)."""
    return (t.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32)


@pytest.mark.parametrize("task_id", ["mse_loss_per_sample", "smooth_l1_loss_per_sample",
                                     "cosine_similarity_rowwise", "l2_normalize"])
def test_fp16_computation_fails_and_a_reordered_fp32_one_passes(task_id):
    """The issue's four tasks: an answer computing from fp16-rounded inputs fails at least one draw
    (it passed all three old ones at the flat 1e-4); the same computation in fp32 with the rows
    summed in another order (blocks of 64, then across) passes every draw."""
    caught = []
    for dist, reference, inputs, expected in _trials(task_id):
        scaled = dist.startswith("wide")
        assert derived_bound(expected) is not None and reference.matmul_like is False
        blocked = [v.reshape(v.shape[0], -1, 100).transpose(1, 2).reshape(v.shape) if isinstance(v, torch.Tensor)
                   else v for v in inputs]  # a permutation of every row: another summation order
        honest = reference.model(*blocked)
        if task_id == "l2_normalize":
            honest = honest.reshape(honest.shape[0], 100, -1).transpose(1, 2).reshape(honest.shape)
        assert compare_outputs(expected, honest, CFG, scaled=scaled).passed, dist
        if not compare_outputs(expected, reference.model(*_rounded(inputs, torch.float16)), CFG, scaled=scaled).passed:
            caught.append(dist)
    assert caught, "an fp16 computation passed every draw"


def test_matmul_tasks_allow_tf32_but_not_fp16_range():
    """tl.dot's default TF32 (operands truncated to 10 mantissa bits) passes a matrix product on every
    draw; fp16 operands, as precise as TF32, overflow on the `huge` draw."""
    for dist, reference, inputs, expected in _trials("matmul_square"):
        assert reference.matmul_like is True
        scaled = dist.startswith("wide")
        tf32 = torch.matmul(*[_tf32(v) for v in inputs])
        assert compare_outputs(expected, tf32, CFG, scaled=scaled).passed, dist
        half = torch.matmul(*[v.half().float() for v in inputs])
        assert compare_outputs(expected, half, CFG, scaled=scaled).passed == (dist != "huge"), dist


def test_flat_precision_and_unbounded_outputs_keep_the_dtype_tolerance():
    reference = Reference(load_builtin("l2_normalize")[0], "small", "cpu", init_seed=3)
    inputs = reference.inputs(5, "task")
    precise, plain = reference.expected(inputs, precise=True), reference.expected(inputs)
    assert derived_bound(precise) is not None and derived_bound(plain) is None
    cheat = reference.model(*_rounded(inputs, torch.float16))
    assert not compare_outputs(precise, cheat, CFG).passed
    assert compare_outputs(plain, cheat, CFG).passed  # the flat 1e-4 atol dwarfs outputs of ~0.02
    assert compare_outputs(precise, cheat, JudgeConfig(device="cpu", precision="flat")).passed


def test_a_model_that_cannot_run_in_float64_keeps_the_flat_tolerance():
    from kernelgym.tasks import Task

    relu = load_builtin("relu")[0]
    source = relu.source.replace("return torch.relu(x)", "return torch.relu(x) @ torch.eye(x.shape[-1])")
    reference = Reference(Task("relu_fp32_eye", source), "small", "cpu", init_seed=3)
    out = reference.expected(reference.inputs(5, "task"), precise=True)  # float64 @ float32 raises
    assert derived_bound(out) is None and compare_outputs(out, out + 5e-5, CFG).passed
    with pytest.raises(ValueError, match="precision"):
        JudgeConfig(precision="exact")


def _tf32(t: torch.Tensor) -> torch.Tensor:
    """TF32's operand rounding emulated: fp32 with 10 mantissa bits kept (truncation, its worst case)."""
    return (t.contiguous().view(torch.int32) & ~((1 << 13) - 1)).view(torch.float32)


def test_the_tiny_draw_fails_a_float16_matmul_and_passes_tf32():
    # The GPU's stand-in for `huge` on matrix-product tasks (TF32 accepted there): values far below fp16's
    # normal range. Same mantissa width as TF32, but fp16 lacks the exponent range.
    import types

    from kernelgym.judge.inputs import make_inputs
    from kernelgym.judge.precision import attach_bounds, float64_model

    class MatMul(torch.nn.Module):
        def forward(self, a, b):
            return a @ b

    task = types.ModuleType("tiny_task")
    task.get_inputs = lambda: [torch.randn(96, 128), torch.randn(128, 80)]
    a, b = make_inputs(task, 1234, "tiny")
    assert 0 < float(a.abs().max()) < 6.1e-5  # below fp16's normal range
    expected = a @ b
    assert attach_bounds(float64_model(MatMul()), [a, b], expected) is True  # the TF32 class
    config = JudgeConfig()
    assert compare_outputs(expected, _tf32(a) @ _tf32(b), config).passed
    assert not compare_outputs(expected, a.half().float() @ b.half().float(), config).passed


def test_every_attention_backend_is_in_the_tf32_class():
    from kernelgym.judge.precision import is_matmul_like

    for name in ("_scaled_dot_product_attention_math", "_scaled_dot_product_flash_attention_for_cpu",
                 "_scaled_dot_product_efficient_attention", "_efficient_attention_forward", "bmm"):
        assert is_matmul_like({name, "add"}), name
    assert not is_matmul_like({"add", "softmax", "mul"})


def _round_mantissa(t: torch.Tensor, keep: int) -> torch.Tensor:
    """float32 rounded to `keep` mantissa bits (nearest-even on the bits): TF32 keeps 10, bfloat16 7."""
    drop = 23 - keep
    bits = t.contiguous().view(torch.int32).to(torch.int64)
    rounded = (bits + (1 << (drop - 1)) - 1 + ((bits >> drop) & 1)) & ~((1 << drop) - 1)
    return rounded.to(torch.int32).view(torch.float32).reshape(t.shape)


@pytest.mark.parametrize("task_id", ["matmul_square", "linear_bias_relu", "conv2d"])
def test_the_tf32_class_takes_tf32_products_and_refuses_bfloat16_ones(task_id):
    # Operands rounded as a TF32 (10-bit) or bf16 (7-bit) tensor core would take them, products exact:
    # bf16 fits the elementwise bound of the TF32 class (red-team v4f) but not its mean error bound.
    import random

    from kernelgym.judge.reference import Reference
    from kernelgym.judge.trials import draw_trial
    from kernelgym.tasks import load_builtin

    reference = Reference(load_builtin(task_id)[0], "small", "cpu", init_seed=5)
    trial = draw_trial(reference, random.Random(3), CFG, 0, grad=False)
    assert reference.matmul_like and derived_bound(trial.expected)[2] is not None

    class Rounded(TorchDispatchMode):
        def __init__(self, keep):
            super().__init__()
            self.keep = keep

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func._schema.name.split("::")[-1] in ("mm", "addmm", "convolution", "linear"):
                args = [_round_mantissa(a, self.keep) if isinstance(a, torch.Tensor) and a.dtype == torch.float32
                        else a for a in args]
            return func(*args, **(kwargs or {}))

    def run(keep):
        with torch.no_grad(), Rounded(keep):
            return reference.model(*trial.inputs)

    assert compare_outputs(trial.expected, run(10), CFG).passed
    refused = compare_outputs(trial.expected, run(7), CFG)
    assert not refused.passed
    if task_id != "linear_bias_relu":  # (there one bf16 value also misses the elementwise bound)
        assert "mean relative error" in refused.message and "values outside" not in refused.message


def test_the_mean_bound_follows_the_tasks_own_truncated_tf32_error():
    from kernelgym.judge.precision import TF32_MEAN_FACTOR, TF32_MEAN_REL_ERROR, derive_bound

    e64 = torch.randn(64, dtype=torch.float64)
    assert derive_bound(e64.float(), e64, True, None)[2] == TF32_MEAN_REL_ERROR
    assert derive_bound(e64.float(), e64, True, 1e-4)[2] == TF32_MEAN_REL_ERROR  # the class floor stays
    assert derive_bound(e64.float(), e64, True, 2e-3)[2] == pytest.approx(TF32_MEAN_FACTOR * 2e-3)
    assert derive_bound(e64.float(), e64, False, 2e-3)[2] is None  # fp32 tasks have no mean bound


def test_products_of_products_take_truncated_tf32_and_refuse_bfloat16():
    # SwiGLU, silu(x W1) * (x W2): Liger's kernel on the Triton tutorial's TF32 matmul errs by 1.52e-3 on
    # an H200, above the one-product class bound (1.1e-3), exactly as operands truncated to TF32 do.
    import random

    from kernelgym.judge.precision import TF32_MEAN_REL_ERROR
    from kernelgym.judge.reference import Reference
    from kernelgym.judge.trials import draw_trial
    from kernelgym.tasks import load_builtin

    reference = Reference(load_builtin("swiglu")[0], "small", "cpu", init_seed=5)
    trial = draw_trial(reference, random.Random(3), CFG, 0, grad=False)
    assert derived_bound(trial.expected)[2] > TF32_MEAN_REL_ERROR  # raised by the task's own emulation

    class Operands(TorchDispatchMode):
        def __init__(self, cast):
            super().__init__()
            self.cast = cast

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func._schema.name.split("::")[-1] in ("mm", "addmm", "linear", "matmul"):
                args = [self.cast(a) if isinstance(a, torch.Tensor) and a.dtype == torch.float32 else a for a in args]
            return func(*args, **(kwargs or {}))

    def run(cast):
        with torch.no_grad(), Operands(cast):
            return reference.model(*trial.inputs)

    assert compare_outputs(trial.expected, run(_tf32), CFG).passed
    bf16 = run(lambda t: _round_mantissa(t, 7))
    assert not compare_outputs(trial.expected, bf16, CFG).passed
    mean_error = float((bf16 - trial.expected).abs().sum() / trial.expected.abs().sum())
    assert mean_error > derived_bound(trial.expected)[2]  # refused by the mean bound too, not only elementwise
    calls = []

    def first_in_bf16(t):  # bfloat16 for the gate's product only, truncated TF32 for the other
        calls.append(1)
        return _round_mantissa(t, 7) if len(calls) <= 2 else _tf32(t)

    half = run(first_in_bf16)
    assert float((half - trial.expected).abs().sum() / trial.expected.abs().sum()) > derived_bound(trial.expected)[2]


def test_the_scale_fit_refuses_a_bfloat16_intermediate_that_truncated_tf32_covers():
    # Red-team round tf32: exact fp32 products with one of SwiGLU's two products stored in bfloat16 err less
    # than truncated TF32 does, so the task's own mean bound takes them. Truncation shrinks every product alike:
    # above the class floor only a common scale of the output is allowed when the scale fit is on.
    import random
    from dataclasses import replace

    from kernelgym.judge.reference import Reference
    from kernelgym.judge.trials import draw_trial
    from kernelgym.tasks import load_builtin

    fit = replace(CFG, tf32_scale_fit=True)
    reference = Reference(load_builtin("swiglu")[0], "small", "cpu", init_seed=5)

    class Products(TorchDispatchMode):
        def __init__(self, operand, second_output):
            super().__init__()
            self.operand, self.second_output, self.seen = operand, second_output, 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func._schema.name.split("::")[-1]
            if name in ("mm", "addmm", "linear", "matmul"):
                args = [self.operand(a) if isinstance(a, torch.Tensor) and a.dtype == torch.float32 else a
                        for a in args]
                out = func(*args, **(kwargs or {}))
                self.seen += 1
                return self.second_output(out) if self.seen == 2 else out
            return func(*args, **(kwargs or {}))

    def run(trial, operand, second_output):
        with torch.no_grad(), Products(operand, second_output):
            return reference.model(*trial.inputs)

    same = lambda t: t  # noqa: E731
    refused_with_fit = 0
    for index in range(4):  # the task, signed, offset and tiny/huge draws
        trial = draw_trial(reference, random.Random(10 + index), CFG, index, grad=False)
        truncated_tf32 = run(trial, _tf32, same)
        assert compare_outputs(trial.expected, truncated_tf32, fit).passed, trial.distribution
        bf16_buffer = run(trial, same, lambda t: _round_mantissa(t, 7))
        mean_error = float((bf16_buffer - trial.expected).abs().sum() / trial.expected.abs().sum())
        if mean_error > 1.1e-3:  # the gap: within the task's own bound without the fit
            assert compare_outputs(trial.expected, bf16_buffer, replace(CFG, tf32_scale_fit=False)).passed
            refused_with_fit += not compare_outputs(trial.expected, bf16_buffer, fit).passed
    assert refused_with_fit >= 2  # every trial must pass, so one refused draw refuses the answer
