"""Red-team of judge v4's replay side with hand-crafted kernel specs and traces (what a recording child
that lies could send, or what an answer's source can smuggle past the capture).

Every test asserts what the replay side does (refuse, with `ReplayError`/`TraceError`, a
`kernel_problems` entry, or a bound); each was a hole in the first version of judge v4. None of these tests runs injected code for real: the payloads only set
a marker attribute on `builtins`, which each test checks and removes.
"""

import builtins
import importlib.util
import sys

import pytest
import torch

from kernelgym.judge import recorder
from kernelgym.judge.kernel_source import KernelSpec, kernel_problems, use_answer_sources
from kernelgym.judge.replay_judge import scratch_problem
from kernelgym.judge.replay import Replayer, ReplayError
from kernelgym.judge.trace import Trace, TraceError

MARK = "KG_REPLAY_ATTACK_RAN"

KERNEL = """def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)
"""


def _spec(src=KERNEL, **kw):
    return KernelSpec(name="k", src=src, modules=kw.pop("modules", {"tl": "triton.language"}), **kw)


def _trace(n=64, grid=None, extra_buffers=(), entries=None):
    buffers = [{"kind": "input", "index": 0, "nbytes": 4 * n}, {"kind": "scratch", "index": 0, "nbytes": 4 * n},
               *extra_buffers]
    view = lambda b: {"t": {"buf": b, "offset": 0, "size": [n], "stride": [1], "dtype": "float32"}}  # noqa: E731
    launch = {"launch": "k", "grid": grid or [1, 1, 1], "args": [view(0), view(1), n, 64], "options": {}}
    return {"version": 1, "buffers": buffers, "entries": entries if entries is not None else [launch],
            "outputs": [view(1)], "is_sequence": False}


@pytest.fixture(autouse=True)
def _clean_marker():
    yield
    if hasattr(builtins, MARK):
        delattr(builtins, MARK)


def _replayer(spec, wire=None):
    return Replayer(Trace.from_wire(wire or _trace()), {spec.name: spec}, {}, "cpu", allow_torch_compute=False)


def test_sanity_an_honest_spec_replays():
    r = _replayer(_spec())
    x = torch.randn(64)
    assert torch.equal(r(x), x)


# ---------------------------------------------------------------- code execution in the replay process
def test_module_name_with_a_newline_is_refused_before_any_code_runs():
    payload = f"triton.language.core\nimport builtins\nbuiltins.{MARK} = 1\n#"
    spec = _spec(modules={"tl": "triton.language", "zz": payload})
    try:
        with pytest.raises(ReplayError):
            _replayer(spec)
    finally:
        assert not hasattr(builtins, MARK), "the module name ran as code in the replay process"


def test_getattr_chain_to_builtins_is_a_problem():
    src = KERNEL.replace("    offs =", f"    getattr(getattr(getattr(tl, \"core\"), \"builtins\"), \"exec\")"
                         f"(\"import builtins; builtins.{MARK} = 1\")\n    offs =")
    assert kernel_problems({"k": _spec(src)}), "getattr reaches builtins.exec unchecked"


def test_getattr_chain_runs_exec_in_the_replay_today():
    """The hole above, end to end on the CPU: the spec is accepted and the replay runs exec (this test
    documents the current behaviour and passes while the hole is open; delete it with the fix)."""
    src = KERNEL.replace("    offs =", f"    getattr(getattr(getattr(tl, \"core\"), \"builtins\"), \"exec\")"
                         f"(\"import builtins; builtins.{MARK} = 1\")\n    offs =")
    try:
        r = _replayer(_spec(src))
    except ReplayError:
        return  # fixed
    r(torch.randn(64))
    assert hasattr(builtins, MARK)


@pytest.mark.parametrize("expr", ["tl.extra.module_from_spec", "tl.core.warn", "tl.random.jit",
                                  "tl.core.dataclass", "tl.core.JITCallable"])
def test_foreign_callables_under_triton_language_are_refused(expr):
    src = KERNEL.replace("    offs =", f"    f = {expr}\n    offs =")
    assert kernel_problems({"k": _spec(src)})


@pytest.mark.parametrize("name", ["inspect", "np", "_interpreter", "time"])
def test_unbound_free_names_are_refused(name):
    src = KERNEL.replace("    offs =", f"    f = getattr({name}, \"stack\")\n    offs =")
    assert kernel_problems({"k": _spec(src)})


def test_the_replay_compiles_the_answer_text_not_a_string_in_the_decorator(tmp_path):
    """The child's capture may be fooled (or lie); the judge replaces every kernel source with the
    function the answer's text defines, which the capability scan read."""
    code = ('import triton\nimport triton.language as tl\n\n\n'
            '@triton.jit if True else """\ndef k(x_ptr):\n    FAKE = 1\n    _ = """\n'
            'def\tk(x_ptr):\n    tl.store(x_ptr, 0.0)  # """\n')
    spec = KernelSpec(name="k", src="def k(x_ptr):\n    FAKE = 1\n", modules={"tl": "triton.language"})
    assert use_answer_sources({"k": spec}, code) == []
    assert "FAKE" not in spec.src and spec.src.startswith("def\tk(x_ptr):")
    missing = KernelSpec(name="nowhere", src="def nowhere():\n    pass\n")
    assert use_answer_sources({"nowhere": missing}, code)


# ---------------------------------------------------------------- resources
@pytest.mark.parametrize("buffers", [[{"kind": "scratch", "index": 0, "nbytes": 10**12}],
                                     [{"kind": "scratch", "index": 0, "nbytes": 1 << 30}] * 19_000])
def test_huge_scratch_is_refused_before_the_replay(buffers):
    assert scratch_problem(Trace.from_wire(_trace(extra_buffers=buffers)))
    assert scratch_problem(Trace.from_wire(_trace())) is None


def test_grid_beyond_hardware_limits_is_refused():
    with pytest.raises(TraceError):
        Trace.from_wire(_trace(grid=[1 << 40, 1, 1]))


def test_the_host_flag_covers_at_most_what_the_recorder_would_have_flagged():
    # The flag (state rebuilt from host data by every call: restored before each replayed call, never carried)
    # comes from the untrusted child; on a large workspace it would reset it for free (round v4i's state hole).
    from kernelgym.judge.trace import HOST_CONSTANT_BYTES

    small = {"kind": "state", "index": 0, "nbytes": 256, "host": True}
    assert Trace.from_wire(_trace(extra_buffers=[small])).buffers[-1]["host"] is True
    for forged in ({"kind": "state", "index": 0, "nbytes": HOST_CONSTANT_BYTES + 4, "host": True},
                   {"kind": "scratch", "index": 0, "nbytes": 256, "host": True}):
        with pytest.raises(TraceError, match="host data"):
            Trace.from_wire(_trace(extra_buffers=[forged]))
    split = [dict(small, index=i, nbytes=HOST_CONSTANT_BYTES // 2 + 4) for i in range(2)]  # each small, too much in all
    with pytest.raises(TraceError, match="host data"):
        Trace.from_wire(_trace(extra_buffers=split))


def test_fill_operators_write_their_recorded_buffer_whatever_size_they_name():
    wire = _trace()
    wire["entries"].insert(0, {"aten": "aten.full.default", "args": [[10**12], 0.0], "kwargs": {},
                               "outs": [{"t": {"buf": 1, "offset": 0, "size": [64], "stride": [1],
                                               "dtype": "float32"}}]})
    x = torch.randn(64)
    assert torch.equal(_replayer(_spec(), wire)(x), x)  # no 4 TB allocation: the fill lands in buffer 1


def test_twenty_thousand_entries_are_the_limit():
    wire = _trace()
    wire["entries"] = wire["entries"] * 20_001
    with pytest.raises(TraceError):
        Trace.from_wire(wire)


# ---------------------------------------------------------------- decoding
@pytest.mark.parametrize("value", [{"torch_dtype": "load"}, {"enum": "save"}, {"tl_dtype": "core"},
                                   {"float": "1e999"}])
def test_odd_constants_are_refused(value):
    wire = _trace()
    wire["entries"][0]["args"][2] = value
    with pytest.raises((ReplayError, TraceError, ValueError)):
        _replayer(_spec(), wire)(torch.randn(64))


def test_module_alias_to_an_importable_foreign_module_is_refused():
    spec = _spec(modules={"tl": "triton.language", "o": "os"})
    with pytest.raises(ReplayError):
        _replayer(spec)


@pytest.mark.parametrize("target", ["triton.language.core:builtins", "triton.language.extra:pkgutil",
                                    "triton.language.core:inspect"])
def test_imports_of_foreign_modules_are_refused(target):
    spec = _spec(imports={"B": target})
    with pytest.raises(ReplayError):
        _replayer(spec)


def test_recorder_installed():
    recorder.install()  # the module imports stay used; the wrapper is idempotent


def test_the_replay_bounds_scratch_on_the_inputs_it_measured_before_allocating():
    # A forged record claims a 1 TiB input, so that its 2 TiB of scratch passes the parent's bound on
    # the claimed sizes; the replay checks the real input's size first and allocates nothing.
    claimed = [{"kind": "input", "index": 0, "nbytes": 1 << 40}, {"kind": "scratch", "index": 0, "nbytes": 2 << 40}]
    wire = _trace(extra_buffers=claimed)
    assert scratch_problem(Trace.from_wire(wire)) is None  # the claim fools the parent's early check
    r = _replayer(_spec(), wire)
    with pytest.raises(ReplayError, match="does not have the recorded layout"):
        r(torch.randn(64))
    # Sizes as recorded, scratch past the bound of what was measured: refused, not allocated.
    r = _replayer(_spec(), _trace(extra_buffers=[{"kind": "scratch", "index": 0, "nbytes": 3 << 40}]))
    with pytest.raises(ReplayError, match="scratch"):
        r(torch.randn(64))


class _Compiled:
    """What a GPU launch returns: the compiled kernel, its IR in `asm`."""

    def __init__(self, ttir: str) -> None:
        self.asm = {"ttir": ttir}


@pytest.mark.parametrize("op, words", [("tt.int_to_ptr", "integer cast to a pointer"),
                                       ("tt.ptr_to_int", "pointer cast to an integer"),
                                       ("tt.elementwise_inline_asm", "inline assembly")])
def test_the_replay_refuses_forged_pointers_in_the_compiled_ir(op, words):
    # On a GPU the replay process reads each kernel's IR at its first launch (the record's own check runs
    # where the answer's Python does); the interpreter returns no compiled kernel, so nothing is read there.
    r = Replayer.__new__(Replayer)
    r._ir_checked = {}
    with pytest.raises(ReplayError, match=words):  # (the result used: an unused cast forges nothing)
        r._check_ir("k", _Compiled(f"    %3 = {op} %2 : i64\n    %4 = tt.addptr %1, %3 : !tt.ptr<f32>, i64\n"))
    clean = _Compiled("    %3 = tt.load %2 : !tt.ptr<f32>\n")
    r._check_ir("k", clean)
    assert r._ir_checked == {id(clean): clean}  # by compiled kernel: another specialisation of k is read too


def test_a_trace_that_launches_a_constexpr_function_is_refused():
    # A tl.constexpr function is compiled-time Python the front end calls, not a kernel: a child that
    # reports a launch of one gets the trace refused before anything runs.
    with pytest.raises(ReplayError, match="not kernels"):
        _replayer(_spec(KERNEL, constexpr_function=True))


# Red team v4g: `h[grid](...)` inside a tl.constexpr function (plain Python the front end calls while it
# compiles) or inside a kernel body (on a GPU the code generator calls the launcher it subscripted; on the
# CPU the interpreter runs it) launches a kernel that is in no trace and whose IR is never checked.
HELPER = "def h(a, b):\n    pass\n"
CONSTEXPR_LAUNCHES = "def acc_type(dt):\n    h[(1,)](1, 2)\n    return dt\n"


def _nested_specs(kernel_src, with_constexpr):
    specs = {"k": _spec(kernel_src, helpers=["acc_type", "h"] if with_constexpr else ["h"]),
             "h": KernelSpec(name="h", src=HELPER, modules={"tl": "triton.language"})}
    if with_constexpr:
        specs["acc_type"] = KernelSpec(name="acc_type", src=CONSTEXPR_LAUNCHES, modules={"tl": "triton.language"},
                                       helpers=["h"], constexpr_function=True)
    return specs


@pytest.mark.parametrize("with_constexpr", [True, False])
def test_a_launch_from_inside_a_launch_is_refused(with_constexpr):
    line = ("    acc: tl.constexpr = acc_type(x_ptr.dtype.element_ty)\n" if with_constexpr
            else "    h[(1,)](1, 2)\n")
    src = KERNEL.replace("    offs =", line + "    offs =")
    specs = _nested_specs(src, with_constexpr)
    # Since red-team round s28 `kernel_problems` refuses the subscripted kernel (a kernel function as a value) before
    # anything runs; the launch guard stays behind it.
    with pytest.raises(ReplayError, match="h used as a value"):
        Replayer(Trace.from_wire(_trace()), specs, {}, "cpu", allow_torch_compute=False)


def test_the_launch_guard_refuses_a_launch_while_another_runs():
    # Behind `kernel_problems`: a launch reached at run time while another guarded launch is under way.
    from kernelgym.judge.replay import NestedLaunchError, _guard_launches

    class Kernel:
        __name__ = "h"

        def run(self, *args, **kwargs):
            return "ran"

    active = [False]
    inner, outer = Kernel(), Kernel()
    _guard_launches(inner, active)
    outer.run = lambda: inner.run()
    _guard_launches(outer, active)
    assert inner.run() == "ran"
    with pytest.raises(NestedLaunchError, match="launched from inside another launch"):
        outer.run()
    assert active == [False]
