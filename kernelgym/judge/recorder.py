"""Records one forward call of the answer as a launch trace (`trace.Trace`). Runs in the untrusted child.

Every launch of a `@triton.jit` function goes through Triton's `run` (autotune and heuristics
wrappers end there too), which `install` wraps once: while a recording is on, each launch is
written down with its grid, arguments and options, its kernel's source captured once
(`kernel_source.capture`). A torch dispatch mode writes down the torch operators the call runs
outside kernels (views are not operators on memory: the tensor views carry them). Tensors become
views of buffers, classified by when their storage was allocated: the call's inputs; scratch, every
storage an operator of the call allocated (poisoned in the replay); state, every other storage the
call used, i.e. one that existed before the call began, wherever the answer kept it (its bytes are
taken before the call's first operator or launch that touches it). Small tensors forward builds from
host data (`torch.tensor([...])`) are state too, their bytes taken when built (`HOST_CONSTANT_BYTES`
in all). The buffer of a forward output is state only when it is the model's own tensor (`state`
argument, proven RH-10 by the judge); otherwise the call must write it, so it is scratch.

Nothing here is trusted. The answer can hide work from the recorder; what is hidden is not
replayed, so its effect is missing from the replay's outputs. The recorder exists so that the
answer's own kernels can be replayed without it.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernelgym.judge.kernel_source import CaptureError, KernelSpec, capture
from kernelgym.judge.trace import HOST_CONSTANT_BYTES, LAUNCH_OPTIONS, Trace

_STATE: dict[str, Any] = {"recorder": None, "in_launch": 0}

# Operators that allocate, fill or move memory: replayed as they are. Anything else is compute.
# `masked_fill_` is not among them: it selects by a tensor's values, which is compute (ANSWER_CONTRACT.md lists
# `fill_` and `zero_`). As data movement it let torch write a kernel-steered output in three exploits that no
# share or ghost rule could prove (red-team rounds v4d, v4e, v4g; the v4g one was `ok` on an H100).
DATA_MOVEMENT = {
    "empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
    "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "fill_", "zero_", "copy_", "clone",
    "_to_copy", "lift_fresh", "lift_fresh_copy", "arange", "detach", "alias", "contiguous", "_copy_from",
    "_copy_from_and_resize", "scalar_tensor",
    # Pure data movement an honest answer uses to prepare inputs (`F.pad` before a convolution kernel) or
    # assemble outputs (red-team v4j): they compute nothing from values.
    "constant_pad_nd", "cat", "stack", "flip", "roll", "repeat", "im2col",
}
HOST_READS = {"_local_scalar_dense", "item", "equal", "is_nonzero", "allclose"}
UNREPLAYABLE = {"set_", "resize_", "resize_as_", "as_strided_", "record_stream", "_assert_async"}
# In-place view operators: they change a tensor's sizes and strides, never its bytes (aten does not mark them
# `is_view`). Like views they need no replay: every later use of the tensor is recorded with its metadata then
# (`out.squeeze_(1)` after a keepdim-shaped kernel output was `cheat RH-01`, red-team s13). `as_strided_` stays
# unreplayable (it can overlap a view with itself).
IN_PLACE_VIEWS = frozenset({"squeeze_", "unsqueeze_", "t_", "transpose_", "swapdims_", "swapaxes_"})
HOST_CONSTANTS = ("lift_fresh", "lift_fresh_copy")  # `torch.tensor(data)`: a tensor filled from host Python


class RecordError(Exception):
    """A launch or operator the trace cannot express (outside the answer contract)."""


def install() -> None:
    """Wrap Triton's launch entry points (compiled and interpreted) once, and the launcher of a
    kernel compiled ahead by `kernel.warmup(...)` (the fused-softmax tutorial's occupancy idiom)."""
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    for cls in (JITFunction, InterpretedFunction):
        if not getattr(cls.run, "_kernelgym_recorder", False):
            cls.run = _wrap(cls.run)
    if not getattr(CompiledKernel.__getitem__, "_kernelgym_recorder", False):
        CompiledKernel.__getitem__ = _wrap_compiled(CompiledKernel.__getitem__)


_WARMED: dict[int, tuple[Any, Any, dict[str, Any]]] = {}  # id(compiled kernel) -> (it, its JIT function, options)


def _wrap(original: Any) -> Any:
    def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> Any:
        recorder = _STATE["recorder"]
        if recorder is not None and not warmup and not _STATE["in_launch"]:
            recorder.launch(self, args, grid, kwargs)
        _STATE["in_launch"] += 1  # Triton's own tensor work during a launch is not the answer's
        try:
            result = original(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            _STATE["in_launch"] -= 1
        if warmup and result is not None:
            names = set(inspect.signature(self.fn).parameters)
            _WARMED[id(result)] = (result, self, {k: v for k, v in kwargs.items() if k not in names})
        return result

    run._kernelgym_recorder = True
    return run


def _wrap_compiled(original: Any) -> Any:
    def getitem(self: Any, grid: Any) -> Any:
        runner = original(self, grid)
        warmed = _WARMED.get(id(self))

        def run(*args: Any, **kwargs: Any) -> Any:
            recorder = _STATE["recorder"]
            if recorder is not None and not _STATE["in_launch"]:
                if warmed is None:
                    recorder.unreplayable.append("a compiled kernel launched without `kernel.warmup(...)` "
                                                 "cannot be replayed")
                    recorder.launch_unrecorded = True
                else:  # the launcher takes every parameter positionally, constexprs included
                    recorder.launch(warmed[1], args, grid, dict(warmed[2]))
            return runner(*args, **kwargs)

        return run

    getitem._kernelgym_recorder = True
    return getitem


def state_storages(model: Any, module_globals: dict[str, Any]) -> dict[int, Any]:
    """data_ptr -> storage of every tensor reachable from the model and the answer's module globals
    (parameters, buffers, tensor attributes, lists/tuples/dicts of them, a few levels deep)."""
    found: dict[int, Any] = {}
    seen: set[int] = set()

    def visit(obj: Any, depth: int) -> None:
        if depth > 6 or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            st = obj.untyped_storage()
            if st.nbytes():
                found.setdefault(st.data_ptr(), st)
        elif isinstance(obj, torch.nn.Module):
            for t in (*obj.parameters(recurse=True), *obj.buffers(recurse=True)):
                visit(t, depth + 1)
            for v in list(vars(obj).values()):
                visit(v, depth + 1)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            for v in list(obj)[:10_000]:
                visit(v, depth + 1)
        elif isinstance(obj, dict):
            for v in list(obj.values())[:10_000]:
                visit(v, depth + 1)

    visit(model, 0)
    for value in list(module_globals.values()):
        if isinstance(value, (torch.Tensor, list, tuple, dict)):
            visit(value, 1)
    return found


class Recorder(TorchDispatchMode):
    """One recording: use as a context manager around exactly one forward call."""

    def __init__(self, inputs: list[Any], state: dict[int, Any]) -> None:
        super().__init__()
        self.kernels: dict[str, KernelSpec] = {}
        self.entries: list[dict[str, Any]] = []
        self.buffers: list[dict[str, Any]] = []
        self.state_bytes: dict[int, torch.Tensor] = {}  # buffer id -> bytes before the call
        self._by_ptr: dict[tuple[str, int], int] = {}
        self._storages: list[Any] = []  # buffer id -> its storage, held so that no address is reused mid-call
        self._keep: list[Any] = []  # kernels launched
        self._inputs: dict[tuple[str, int], int] = {}
        for i, v in enumerate(inputs):
            if isinstance(v, torch.Tensor):
                st = v.untyped_storage()
                self._inputs.setdefault((str(v.device), st.data_ptr()), i)
        self._state = state  # the model's own tensors (discovered): an output viewing one stays state
        self._born: set[tuple[str, int]] = set()  # storages an operator of this call allocated
        self._host: set[tuple[str, int]] = set()  # storages built from host data during the call
        self.host_constant_bytes = 0
        self.torch_compute: list[str] = []
        self.host_reads: list[str] = []
        self.unreplayable: list[str] = []
        self._launch_seen: dict[int, str] = {}
        self.launch_unrecorded = False  # a launch the trace cannot express (what it wrote is unknown)

    # -- the recording switch -------------------------------------------------------------------
    def __enter__(self) -> "Recorder":
        _STATE["recorder"] = self
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        _STATE["recorder"] = None
        super().__exit__(*exc)

    # -- tensors as buffer views ----------------------------------------------------------------
    def ref(self, t: torch.Tensor) -> dict[str, Any]:
        if type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter):
            raise RecordError(f"a {type(t).__name__} (a tensor subclass) cannot be replayed")
        st = t.untyped_storage()
        key = (str(t.device), st.data_ptr())
        buf = self._by_ptr.get(key)
        if buf is None:
            buf = len(self.buffers)
            if key in self._inputs and st.nbytes():
                kind, index = "input", self._inputs[key]
            elif key not in self._born and st.nbytes():
                kind, index = "state", len(self.state_bytes)
                _STATE["in_launch"] += 1  # the recorder's own copy is not the answer's operator
                try:
                    self.state_bytes[buf] = torch.empty(0, dtype=torch.uint8, device=t.device).set_(st).clone()
                finally:
                    _STATE["in_launch"] -= 1
                if key in self._host:
                    within = self.host_constant_bytes <= HOST_CONSTANT_BYTES
                    self.host_constant_bytes += st.nbytes()
                    if within and self.host_constant_bytes > HOST_CONSTANT_BYTES:
                        self.unreplayable.append(
                            f"forward built {self.host_constant_bytes} bytes of tensors from host data "
                            f"(torch.tensor / as_tensor); at most {HOST_CONSTANT_BYTES} bytes per call are "
                            "recorded: build larger constants in __init__ (the model's state)")
            else:
                kind, index = "scratch", 0
            self.buffers.append({"kind": kind, "index": index, "nbytes": st.nbytes()})
            if kind == "state" and key in self._host:  # rebuilt by every call: never carried across calls
                self.buffers[-1]["host"] = True
            self._by_ptr[key] = buf
            self._storages.append(st)
        return {"buf": buf, "offset": t.storage_offset(), "size": list(t.shape), "stride": list(t.stride()),
                "dtype": str(t.dtype).removeprefix("torch.")}

    def value(self, v: Any, where: str) -> Any:
        """An argument as trace data (tensors as views)."""
        import triton.language as tl
        from triton.tools.tensor_descriptor import TensorDescriptor

        if isinstance(v, torch.Tensor):
            return {"t": self.ref(v)}
        if isinstance(v, TensorDescriptor):
            return self.descriptor(v, where)
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            return v if v == v and abs(v) != float("inf") else {"float": repr(v)}
        if isinstance(v, (list, tuple)):
            items = [self.value(x, where) for x in v]
            return {"tuple": items} if isinstance(v, tuple) else items
        if isinstance(v, tl.dtype):
            return {"tl_dtype": str(v)}
        if isinstance(v, tl.constexpr):
            return self.value(v.value, where)
        if isinstance(v, torch.dtype):
            return {"torch_dtype": str(v).removeprefix("torch.")}
        if isinstance(v, torch.device):
            return {"device": True}
        if isinstance(v, (torch.memory_format, torch.layout)):
            return {"enum": str(v).removeprefix("torch.")}
        if type(v).__name__ in ("JITFunction", "InterpretedFunction"):
            raise RecordError(f"{where}: a @triton.jit function passed as an argument cannot be replayed; call it "
                              "by its name inside the kernel (or write one kernel per operation)")
        raise RecordError(f"{where}: a {type(v).__name__} cannot be replayed")

    def descriptor(self, d: Any, where: str) -> dict[str, Any]:
        """A host tensor descriptor (TMA) as its base buffer viewed with the descriptor's shape and
        strides, its block shape, padding and rounding: the replay builds it again on its buffers."""
        if not isinstance(d.base, torch.Tensor) or not all(isinstance(x, int) for x in (*d.shape, *d.strides,
                                                                                         *d.block_shape)):
            raise RecordError(f"{where}: a TensorDescriptor needs a tensor base and integer shape, strides and "
                              "block shape")
        ref = self.ref(d.base) | {"size": [int(x) for x in d.shape], "stride": [int(x) for x in d.strides]}
        return {"desc": [{"t": ref}, [int(x) for x in d.block_shape], str(d.padding),
                         bool(getattr(d, "round_f32_to_tf32", False))]}  # a field newer than Triton 3.6

    # -- launches -------------------------------------------------------------------------------
    def launch(self, kernel: Any, args: tuple, grid: Any, kwargs: dict[str, Any]) -> None:
        try:
            name = self._launch_seen.get(id(kernel)) or capture(kernel, self.kernels)
            self._launch_seen[id(kernel)] = name
            self._keep.append(kernel)
            sig = inspect.signature(kernel.fn)
            params = list(sig.parameters)
            bound = sig.bind(*args, **{k: v for k, v in kwargs.items() if k in params})
            bound.apply_defaults()
            values = dict(bound.arguments)
            g = grid(values) if callable(grid) else grid
            g = tuple(int(x) for x in (g if isinstance(g, (tuple, list)) else (g,)))
            if not 1 <= len(g) <= 3:
                raise RecordError(f"kernel {name}: a grid of {len(g)} dimensions")
            for p in params:  # what a GPU launch takes: no lists, no tensor under a constexpr
                v = values[p]
                if isinstance(v, list) or (_constexpr(sig.parameters[p]) and _has_tensor(v)):
                    raise RecordError(f"kernel {name} argument {p}: a GPU launch takes tensors, numbers, bools, None, "
                                      "strings, dtypes and tuples of these, with no tensor in a tl.constexpr")
            options = {k: v for k, v in kwargs.items() if k not in params}
            unknown = sorted(k for k in options if k not in LAUNCH_OPTIONS and k != "debug")
            if unknown:
                raise RecordError(f"kernel {name}: launch option(s) {unknown} cannot be replayed")
            options.pop("debug", None)
            self.entries.append({"launch": name, "grid": list(g) + [1] * (3 - len(g)),
                                 "args": [self.value(values[p], f"kernel {name} argument {p}") for p in params],
                                 "options": {k: (None if v is None else int(v) if not isinstance(v, bool) else v)
                                             for k, v in options.items()}})
        except (RecordError, CaptureError, TypeError, ValueError) as e:
            self.unreplayable.append(str(e))
            self.launch_unrecorded = True

    # -- torch operators ------------------------------------------------------------------------
    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        packet = func.overloadpacket.__name__
        if _STATE["in_launch"]:
            return func(*args, **kwargs)
        if packet in HOST_CONSTANTS and args and isinstance(args[0], torch.Tensor):
            self._host_constant(args[0])
            if packet == "lift_fresh":  # the same tensor back (an alias): nothing to replay
                return func(*args, **kwargs)
        # `_unsafe_view`: `reshape`/`flatten` of a tensor that cannot be viewed is clone + _unsafe_view, an
        # alias of the clone's storage that aten does not mark as a view.
        if func.is_view or packet in ("detach", "alias", "_unsafe_view") or packet in IN_PLACE_VIEWS:
            return func(*args, **kwargs)
        if packet in HOST_READS:
            self.host_reads.append(str(func))
            return func(*args, **kwargs)
        if packet in UNREPLAYABLE:
            self.unreplayable.append(f"torch operator {func} changes a tensor's storage")
            return func(*args, **kwargs)
        if packet not in DATA_MOVEMENT:
            self.torch_compute.append(str(func))
        where = str(func)
        try:  # arguments first: a state buffer's bytes as they were before this operator wrote it
            recorded_args = [self.value(a, where) for a in args]
            recorded_kwargs = {k: self.value(v, where) for k, v in kwargs.items()}
        except RecordError as e:
            self.unreplayable.append(str(e))
            recorded_args = None
        out = func(*args, **kwargs)
        outs = out if isinstance(out, (tuple, list)) else [out]
        used = {_key(t) for t in _tensors((args, kwargs))}
        for o in outs:  # a storage this operator allocated is the call's scratch
            if isinstance(o, torch.Tensor) and _key(o) not in used and _key(o) not in self._by_ptr:
                self._born.add(_key(o))
        try:
            if recorded_args is None:
                raise RecordError("")  # already named among the unreplayable reasons
            self.entries.append({"aten": where, "args": recorded_args, "kwargs": recorded_kwargs,
                                 "outs": [self.value(o, where) if isinstance(o, torch.Tensor) else None
                                          for o in outs]})
        except RecordError as e:
            if recorded_args is not None:
                self.unreplayable.append(str(e))
            self._untraced(where, (args, kwargs), outs)
        return out

    def _untraced(self, where: str, inputs: Any, outs: Any) -> None:
        """An operator the trace cannot express (a complex128 or 17-dim tensor): the trace is unreplayable
        already, but what it read and wrote stays in it as whole-storage byte views, so that the compute
        taint (`Trace.compute_reaches_work`) follows through it. `(c * 0.5 + c.abs() * 0.5).real.float()` of
        `c = x.to(torch.complex128)` computed relu with torch, and with those operators left out of the trace
        the judge said "for the host only" (`invalid_answer`) instead of RH-01 (red-team s14)."""
        def whole(ts: list[torch.Tensor]) -> list[dict[str, Any]]:
            views = []
            for t in ts:
                try:
                    _STATE["in_launch"] += 1  # the recorder's own view is not the answer's operator
                    try:
                        flat = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
                    finally:
                        _STATE["in_launch"] -= 1
                    views.append({"t": self.ref(flat)})
                except (RecordError, RuntimeError, TypeError):
                    continue
            return views

        written = [o for o in outs if isinstance(o, torch.Tensor)]
        self.entries.append({"aten": where, "args": whole(_tensors(inputs)), "kwargs": {}, "outs": whole(written)})

    def _host_constant(self, t: torch.Tensor) -> None:
        """A tensor forward filled from host Python: state whose bytes are taken now, as built."""
        # Never memory the call did not build: `torch.as_tensor(self.ws.numpy())` hands `lift_fresh` the
        # model's own workspace, and the flag would exempt it from RH-10 and from the state carried across
        # trials (red-team v4k). (The capability scan refuses `.numpy()` and raw storages too.)
        # A storage over memory someone else owns (numpy's, another storage's, `from_blob`) is not resizable;
        # one `torch.tensor(data)` allocated is: state hidden where `state_storages` does not look (a plain
        # object, a closure) cannot pass for host data either.
        if (type(t) is torch.Tensor and _key(t) not in self._by_ptr and _key(t) not in self._inputs
                and _key(t)[1] not in self._state and t.untyped_storage().resizable()):
            self._host.add(_key(t))
            self.ref(t)

    # -- the result -----------------------------------------------------------------------------
    def finish(self, out: Any) -> Trace:
        is_seq = type(out) in (tuple, list)
        items = list(out) if is_seq else [out]
        try:
            outputs = [self.value(o, "forward's output") if isinstance(o, torch.Tensor) or o is None
                       or isinstance(o, (bool, int, float)) else _raise(f"forward returned a {type(o).__name__}")
                       for o in items]
        except RecordError as e:
            self.unreplayable.append(str(e))
            outputs = []
        self._outputs_are_written(outputs)
        return Trace(buffers=self.buffers, entries=self.entries, outputs=outputs, is_sequence=is_seq,
                     torch_compute=sorted(set(self.torch_compute)), host_reads=sorted(set(self.host_reads)),
                     unreplayable=self.unreplayable[:20]).within_limits()

    def _outputs_are_written(self, outputs: list[Any]) -> None:
        """An output's buffer that existed before the call but is not the model's own tensor (a buffer
        kept on a helper, in an lru_cache) is scratch: the replayed call must write it, as any output.
        Unless no entry of the call wrote it (no launch took it, no operator wrote into it): then its bytes
        are an earlier call's, a cached result, and it stays state, which the judge calls RH-10 as it does
        for `self.out` (red-team s15: kept on a plain helper object it was scratch, poisoned in the replay,
        so a proven cache was only `wrong_output`). Not when a launch went unrecorded: it may have written it."""
        from kernelgym.judge.trace import _buffers_in

        written: set[int] = set()
        for e in self.entries:
            if "launch" in e:
                written |= _buffers_in(e.get("args"))
            else:
                written |= _buffers_in(e.get("outs"))
                if e["aten"].split(".")[1].endswith("_"):  # in place: its first argument
                    written |= _buffers_in(e.get("args", [])[:1])
        for value in outputs:
            if not (isinstance(value, dict) and "t" in value):
                continue
            buf = value["t"]["buf"]
            b = self.buffers[buf]
            # A tensor built from host data in this call stays what it is (state restored before every
            # call, bytes as built: `torch.tensor([0.0] * n)` then an accumulating kernel); scratch would
            # be poisoned, and the host flag on scratch made the record malformed (red-team v4j).
            if (b["kind"] == "state" and not b.get("host") and self._storages[buf].data_ptr() not in self._state
                    and (buf in written or self.launch_unrecorded)):
                b["kind"], b["index"] = "scratch", 0
                self.state_bytes.pop(buf, None)

    def kernel_specs(self) -> list[dict[str, Any]]:
        return [k.to_wire() for k in self.kernels.values()]


def first_difference(a: Trace, b: Trace) -> str:
    """Where two recordings of calls with same-shaped inputs differ ("" when they launch the same work:
    kernels, grids, constants, options, operators, views). A hint from the child; the parent decides."""
    if len(a.entries) != len(b.entries):
        return f"{len(a.entries)} entries, then {len(b.entries)}"
    for i, (x, y) in enumerate(zip(a.entries, b.entries)):
        if _shape(x, a) != _shape(y, b):
            return f"entry {i}: {x.get('launch') or x.get('aten')} differs"
    if _shape(a.outputs, a) != _shape(b.outputs, b):
        return "the outputs differ"
    return ""


def host_constants_differ(trace: Trace, a: "Recorder", b: "Recorder") -> str:
    """Where two recorded calls (of the same shape, `first_difference` empty) built different tensors from
    host data: their values came from the inputs, read on the host by a route no operator shows
    (`tolist()`, `torch.tensor([x[0], ...])`: red-team v4j). "" when none did. The replay would restore
    the first call's bytes in every trial, so this is a refusal that explains, not a verdict's basis."""
    for buf, info in enumerate(trace.buffers):
        if info.get("host") and buf in a.state_bytes:
            other = b.state_bytes.get(buf)
            if other is None or not torch.equal(a.state_bytes[buf], other):
                return (f"a tensor built from host data (torch.tensor / as_tensor) holds other values in a call "
                        f"with other inputs: it was built from input values read on the host")
    return ""


def _shape(v: Any, trace: Trace) -> Any:
    """A value with each tensor view replaced by its buffer's kind (and input/state index) and layout."""
    if isinstance(v, list):
        return [_shape(x, trace) for x in v]
    if isinstance(v, dict):
        if set(v) == {"t"}:
            r = v["t"]
            b = trace.buffers[r["buf"]]
            # Host-ness too: a call that builds a tensor from host data and one that reuses the kept one differ.
            return (b["kind"], b.get("host", False), b["index"] if b["kind"] != "scratch" else b["nbytes"],
                    r["offset"], tuple(r["size"]), tuple(r["stride"]), r["dtype"])
        return {k: _shape(x, trace) for k, x in v.items()}
    return v


def _constexpr(param: inspect.Parameter) -> bool:
    return "constexpr" in str(param.annotation)


def _has_tensor(v: Any) -> bool:
    if isinstance(v, torch.Tensor):
        return True
    if isinstance(v, (list, tuple)):
        return any(_has_tensor(x) for x in v)
    return _has_tensor(v.value) if hasattr(v, "value") and not isinstance(v, (int, float, str)) else False


def _key(t: torch.Tensor) -> tuple[str, int]:
    return str(t.device), t.untyped_storage().data_ptr()


def _tensors(v: Any) -> list[torch.Tensor]:
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _tensors(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in _tensors(x)]
    return []


def _raise(message: str) -> Any:
    raise RecordError(message)


__all__ = ["Recorder", "RecordError", "first_difference", "install", "state_storages"]


def storage_bytes(t: torch.Tensor, copy: bool = True) -> torch.Tensor:
    """The whole storage under `t` as uint8 (a copy unless `copy` is False): its metadata (`x.t_()`) does not
    change what it holds."""
    _STATE["in_launch"] += 1
    try:
        flat = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
        return flat.clone() if copy else flat
    finally:
        _STATE["in_launch"] -= 1


def written_buffers(trace: Trace, rec: "Recorder", inputs: list[Any], pristine: list[Any]) -> list[int] | None:
    """The input and state buffers of `trace` whose bytes the recorded call changed (compared bit for bit with
    a copy of the inputs taken before the call and the state bytes the recorder kept). The parent reads it
    only to tell a pass-through from an in-place write: an output viewing an input or the model's state that
    a launch took but nothing wrote is RH-10 (red-team s14), one the call wrote stays `invalid_answer`."""
    def same(a: torch.Tensor, b: torch.Tensor) -> bool:
        return a.shape == b.shape and torch.equal(a, b)

    if len(trace.buffers) != len(rec.buffers):
        return None  # renumbered by `Trace.within_limits`: unknown (the parent then assumes written)
    found = []
    _STATE["in_launch"] += 1  # the recorder's own reads are not the answer's operators
    try:
        for buf, b in enumerate(trace.buffers):
            if b["kind"] == "input" and b["index"] < len(inputs) and isinstance(inputs[b["index"]], torch.Tensor):
                before = pristine[b["index"]]
                if before is None or not same(storage_bytes(inputs[b["index"]], copy=False), before):
                    found.append(buf)
            elif b["kind"] == "state" and buf in rec.state_bytes and buf < len(rec._storages):
                now = torch.empty(0, dtype=torch.uint8, device=rec.state_bytes[buf].device).set_(rec._storages[buf])
                if not same(now, rec.state_bytes[buf]):
                    found.append(buf)
    finally:
        _STATE["in_launch"] -= 1
    return found
