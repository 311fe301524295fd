"""Red-team of judge v4's replay side with hand-crafted kernel specs and traces (what a recording child
that lies could send, or what an answer's source can smuggle past the capture).

Every test asserts what the replay process SHOULD do (refuse, with `ReplayError`/`TraceError`, or a
`kernel_problems` entry). Tests marked xfail(strict=True) document holes open at the time of writing:
when the lead fixes one, its test starts passing and strict xfail turns that into a failure, so the
mark is removed with the fix. None of these tests runs injected code for real: the payloads only set
a marker attribute on `builtins`, which each test checks and removes.
"""

import builtins
import importlib.util
import sys

import pytest
import torch

from kernelgym.judge import recorder
from kernelgym.judge.kernel_source import KernelSpec, capture, kernel_problems
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
@pytest.mark.xfail(strict=True, reason="kernel_source._module_allowed accepts any string starting with "
                   "'triton.language.' as a module name and module_text pastes it into `import ... as alias`: a "
                   "newline in it is a statement run by load_kernels' exec (kernel_source.py:233 + :387)")
def test_module_name_with_a_newline_is_refused_before_any_code_runs():
    payload = f"triton.language.core\nimport builtins\nbuiltins.{MARK} = 1\n#"
    spec = _spec(modules={"tl": "triton.language", "zz": payload})
    try:
        with pytest.raises(ReplayError):
            _replayer(spec)
    finally:
        assert not hasattr(builtins, MARK), "the module name ran as code in the replay process"


@pytest.mark.xfail(strict=True, reason="kernel_problems checks getattr(x, 'name') only for a literal public name, "
                   "never the path it reaches: getattr(getattr(tl, 'core'), 'builtins') is the builtins module "
                   "(kernel_source.py:299-302); Triton's code generator then calls exec at compile time on a GPU, "
                   "the interpreter at run time on the CPU")
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


@pytest.mark.xfail(strict=True, reason="_path_allowed returns True as soon as the walk leaves a module, so any "
                   "public attribute of triton.language's namespaces passes, including foreign callables "
                   "imported there: tl.core.warn (warnings), tl.extra.module_from_spec (importlib), "
                   "tl.random.jit / tl.standard.constexpr_function (kernel_source.py:375)")
@pytest.mark.parametrize("expr", ["tl.extra.module_from_spec", "tl.core.warn", "tl.random.jit",
                                  "tl.core.dataclass", "tl.core.JITCallable"])
def test_foreign_callables_under_triton_language_are_refused(expr):
    src = KERNEL.replace("    offs =", f"    f = {expr}\n    offs =")
    assert kernel_problems({"k": _spec(src)})


@pytest.mark.xfail(strict=True, reason="a free name that is neither captured nor a builtin passes kernel_problems "
                   "('Triton will say'), but the CPU interpreter copies its own module globals (np, inspect, "
                   "ast, time, _interpreter) into the rebuilt kernels' module before the body runs "
                   "(triton/runtime/interpreter.py FunctionRewriter._compile_and_exec)")
@pytest.mark.parametrize("name", ["inspect", "np", "_interpreter", "time"])
def test_unbound_free_names_are_refused(name):
    src = KERNEL.replace("    offs =", f"    f = getattr({name}, \"stack\")\n    offs =")
    assert kernel_problems({"k": _spec(src)})


@pytest.mark.xfail(strict=True, reason="kernel_source.function_source takes the first line matching ^def in "
                   "inspect.getsource, which includes decorators: a decorator expression holding a string that "
                   "starts with `def k(` makes the capture (and Triton's JITFunction) use a body the answer's "
                   "capability scan saw only as a string (kernel_source.py:77-83)")
def test_capture_takes_the_real_def_not_a_string_in_the_decorator(tmp_path):
    code = ('import triton\nimport triton.language as tl\n\n\n'
            '@triton.jit if True else """\ndef k(x_ptr):\n    FAKE = 1\n    _ = """\n'
            'def\tk(x_ptr):\n    tl.store(x_ptr, 0.0)  # """\n')
    path = tmp_path / "kg_decorator_string.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location("kg_decorator_string", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["kg_decorator_string"] = module
    spec.loader.exec_module(module)
    into = {}
    try:
        capture(module.k, into)
    except Exception:
        return  # refusing the capture is a fix too
    assert "FAKE" not in into["k"].src


# ---------------------------------------------------------------- resources
@pytest.mark.xfail(strict=True, reason="trace.validate bounds buffer sizes only by 2^62: a scratch buffer of 1 TB "
                   "(or 19,000 of 1 GiB) is allocated by Replayer.prepare (trace.py:85-88, replay.py:82)")
@pytest.mark.parametrize("buffers", [[{"kind": "scratch", "index": 0, "nbytes": 10**12}],
                                     [{"kind": "scratch", "index": 0, "nbytes": 1 << 30}] * 19_000])
def test_huge_scratch_is_refused(buffers):
    with pytest.raises(TraceError):
        Trace.from_wire(_trace(extra_buffers=buffers))


@pytest.mark.xfail(strict=True, reason="grids are checked only as non-negative ints < 2^62: a grid of 2^40 programs "
                   "runs for ever in the CPU interpreter (until the deadline) and is beyond any GPU's limit "
                   "(trace.py:104-106)")
def test_grid_beyond_hardware_limits_is_refused():
    with pytest.raises(TraceError):
        Trace.from_wire(_trace(grid=[1 << 40, 1, 1]))


@pytest.mark.xfail(strict=True, reason="aten allocation/fill operators take their sizes from the trace's arguments, "
                   "not its buffer table: aten.full([10**12]) is resolved and would run (replay.py:111)")
def test_data_movement_op_sizes_are_bounded_by_the_buffer_table():
    wire = _trace()
    wire["entries"].insert(0, {"aten": "aten.full.default", "args": [[10**12], 0.0], "kwargs": {},
                               "outs": [{"t": {"buf": 1, "offset": 0, "size": [64], "stride": [1],
                                               "dtype": "float32"}}]})
    with pytest.raises((ReplayError, TraceError)):
        _replayer(_spec(), wire)


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
