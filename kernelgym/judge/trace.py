"""A launch trace: what one forward call of the answer did to memory, as data a trusted process replays.

Memory is a table of buffers (the call's inputs, the model's state as it was before the call, and
scratch the call allocated), and every tensor the call touched is a view of one buffer
(`TensorRef`: buffer, element offset, sizes, strides, dtype). Entries are, in order, launches of
the answer's Triton kernels (kernel name, grid, arguments as tensor views and constants, launch
options) and the torch operations the call ran outside kernels (allocations, copies, fills: a torch
operator name and its arguments). The outputs are views too.

The trace comes from the untrusted child: `validate` checks every field's type and range before a
trusted process touches it, and the replay runs only what the trace says, on buffers of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

TRACE_VERSION = 1
BUFFER_KINDS = ("input", "state", "scratch")
DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
          "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64", "complex64")
# Launch options Triton takes besides the kernel's parameters (values: ints, bools or None).
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
                  "launch_pdl", "matrix_instr_nonkdim", "waves_per_eu", "kpack", "num_buffers_warp_spec",
                  "num_consumer_groups", "reg_dec_producer", "reg_inc_consumer")
_OP_NAME = re.compile(r"^aten\.[a-z0-9_]+(\.[A-Za-z0-9_]+)?$")
MAX_ENTRIES = 20_000
MAX_BUFFERS = 20_000
MAX_DIMS = 16
# Operators that copy bytes from their other tensor arguments into what they write (layout, dtype, device).
COPIES = ("copy_", "clone", "_to_copy", "contiguous", "_copy_from", "_copy_from_and_resize", "lift_fresh_copy",
          "cat", "stack", "flip", "roll", "repeat")  # (not `constant_pad_nd`: its border is a fill)

# What one call may build from host data (`torch.tensor([...])` in forward: a slope, a small table). Such
# state is restored before every replayed call, never carried (`Replayer.prepare`), so the flag that says
# which buffers it is must not cover more: the flag comes from the untrusted child, and a workspace flagged
# `host` would be reset for free before each call (round v4i's state hole).
HOST_CONSTANT_BYTES = 1 << 20
SCRATCH_FACTOR = 16  # scratch a replayed call may allocate, times its inputs' and state's bytes ...
SCRATCH_SLACK_BYTES = 2 << 30  # ... plus this (attention's score matrix fits; a terabyte does not)


# Operators that write a fresh buffer from sizes and literals only (their tensor arguments' metadata at most).
_ALLOCATIONS = frozenset({"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "zeros",
                          "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
                          "arange", "scalar_tensor"})


class TraceError(ValueError):
    """The trace is malformed (a protocol violation by the recording child, or our bug)."""


@dataclass
class Trace:
    """One recorded call. `entries` and `outputs` hold `TensorRef` dicts where tensors were."""

    buffers: list[dict[str, Any]]  # {"kind": input|state|scratch, "index": int, "nbytes": int[, "host": True]}
    entries: list[dict[str, Any]]  # {"launch": name, "grid": [g0,g1,g2], "args": [...], "options": {...}}
    #                                or {"aten": "aten.op.overload", "args": [...], "kwargs": {...}, "outs": [...]}
    outputs: Any  # a TensorRef, or a list of TensorRefs / None / numbers; `is_sequence` says which
    is_sequence: bool = False
    torch_compute: list[str] = field(default_factory=list)  # compute operators the call ran outside kernels
    host_reads: list[str] = field(default_factory=list)  # operators that read a tensor value on the host
    unreplayable: list[str] = field(default_factory=list)  # what the recorder could not express

    def to_wire(self) -> dict[str, Any]:
        return {"version": TRACE_VERSION, "buffers": self.buffers, "entries": self.entries, "outputs": self.outputs,
                "is_sequence": self.is_sequence, "torch_compute": self.torch_compute, "host_reads": self.host_reads,
                "unreplayable": self.unreplayable}

    @classmethod
    def from_wire(cls, d: Any) -> "Trace":
        """Parse and validate a trace from the child; `TraceError` if anything is off."""
        if not isinstance(d, dict) or d.get("version") != TRACE_VERSION:
            raise TraceError("not a launch trace of this version")
        trace = cls(buffers=d.get("buffers"), entries=d.get("entries"), outputs=d.get("outputs"),
                    is_sequence=bool(d.get("is_sequence")), torch_compute=_strings(d.get("torch_compute")),
                    host_reads=_strings(d.get("host_reads")), unreplayable=_strings(d.get("unreplayable")))
        trace.validate()
        return trace

    def validate(self) -> None:
        if not isinstance(self.buffers, list) or len(self.buffers) > MAX_BUFFERS:
            raise TraceError("buffers must be a list")
        if not isinstance(self.entries, list) or len(self.entries) > MAX_ENTRIES:
            raise TraceError(f"entries must be a list of at most {MAX_ENTRIES}")
        for i, b in enumerate(self.buffers):
            if not (isinstance(b, dict) and b.get("kind") in BUFFER_KINDS and _int(b.get("index"), 0)
                    and _int(b.get("nbytes"), 0) and isinstance(b.get("host", False), bool)):
                raise TraceError(f"buffer {i} is malformed")
        host = sum(b["nbytes"] for b in self.buffers if b.get("host") and b["kind"] == "state")
        if host > HOST_CONSTANT_BYTES or any(b.get("host") and b["kind"] != "state" for b in self.buffers):
            raise TraceError(f"{host} bytes of state flagged as built from host data (the recorder stops at "
                             f"{HOST_CONSTANT_BYTES}), or the flag on a buffer that is not state")
        for i, e in enumerate(self.entries):
            if not isinstance(e, dict):
                raise TraceError(f"entry {i} is not a dict")
            if "launch" in e:
                self._check_launch(i, e)
            elif "aten" in e:
                self._check_aten(i, e)
            else:
                raise TraceError(f"entry {i} is neither a launch nor a torch operator")
        self._check_value(self.outputs, "outputs")

    def within_limits(self) -> "Trace":
        """This trace if it validates, else the most of it that does, with what was left out among its
        `unreplayable` reasons: the recorder's own trace goes through this before it leaves the child, so
        that every limit of `validate` is an `invalid_answer` the answer is told about, and a trace the
        parent cannot parse means a forged one. What decides a verdict before the contract problems (the
        torch operators, each output's buffer kind) survives every cut: a 17-dim allocation, a 17-dim
        extra output or 1 MiB of host-built tensors once turned `cheat RH-01`/`RH-10` into a crash or an
        `invalid_answer` (red-team v4j, v4k)."""
        try:
            self.validate()
            return self
        except TraceError as e:
            problems = [f"the call cannot be replayed: {e}"]
        kept = Trace(buffers=[], entries=[], outputs=[], is_sequence=self.is_sequence,
                     torch_compute=self.torch_compute, host_reads=self.host_reads,
                     unreplayable=(self.unreplayable[:19] + problems))
        buffers = self.buffers
        if not _buffer_table_ok(buffers):
            # Over the host bytes (the recorder named it): the flagged buffers become scratch. Never plain
            # state: a host-built output would then be a view of the model's state, a false RH-10 (v4k review).
            buffers = [{"kind": "scratch", "index": 0, "nbytes": b["nbytes"]} if isinstance(b, dict) and b.get("host")
                       else b for b in buffers]
        outputs = self.outputs if isinstance(self.outputs, list) else [self.outputs]
        if not _buffer_table_ok(buffers):
            # Too many buffers: only the outputs' own, renumbered, so their kinds still decide RH-10.
            keep = sorted({r["buf"] for r in _refs(outputs) if isinstance(r, dict) and _int(r.get("buf"), 0)
                           and r["buf"] < len(buffers)})
            if len(keep) > MAX_BUFFERS:
                return kept
            number = {b: i for i, b in enumerate(keep)}
            buffers = [buffers[b] for b in keep]
            outputs = [_renumbered(o, number) for o in outputs]
            if not _buffer_table_ok(buffers):
                return kept
            entries_in: list[Any] = []
        else:
            entries_in = self.entries[:MAX_ENTRIES]
        kept.buffers = buffers
        for i, e in enumerate(entries_in):
            try:
                if not isinstance(e, dict):
                    raise TraceError(f"entry {i} is not a dict")
                (kept._check_launch if "launch" in e else kept._check_aten)(i, e)
                kept.entries.append(e)
            except (TraceError, KeyError, TypeError):
                stub = _taint_stub(e, buffers)
                if stub is not None:
                    kept.entries.append(stub)
        for o in outputs:  # one at a time: a bad extra output must not hide a good one's kind
            try:
                kept._check_value(o, "outputs")
                kept.outputs.append(o)
            except (TraceError, KeyError, TypeError):
                kept.outputs.append(None)
        try:
            kept.validate()
        except TraceError:
            kept.buffers, kept.entries, kept.outputs = [], [], []
        return kept

    def _check_launch(self, i: int, e: dict[str, Any]) -> None:
        if not isinstance(e["launch"], str) or not isinstance(e.get("args"), list):
            raise TraceError(f"entry {i}: malformed launch")
        grid = e.get("grid")
        if not (isinstance(grid, list) and len(grid) == 3 and all(_int(g, 0) for g in grid)
                and grid[0] < (1 << 31) and grid[1] <= 65535 and grid[2] <= 65535):
            raise TraceError(f"entry {i}: grid must be three non-negative ints within a GPU's limits")
        opts = e.get("options", {})
        if not isinstance(opts, dict) or any(k not in LAUNCH_OPTIONS or not (v is None or isinstance(v, (int, bool)))
                                             for k, v in opts.items()):
            raise TraceError(f"entry {i}: launch options must be among {LAUNCH_OPTIONS}")
        for a in e["args"]:
            self._check_value(a, f"entry {i}")

    def _check_aten(self, i: int, e: dict[str, Any]) -> None:
        if not isinstance(e["aten"], str) or not _OP_NAME.match(e["aten"]):
            raise TraceError(f"entry {i}: bad operator name")
        if not isinstance(e.get("args"), list) or not isinstance(e.get("kwargs"), dict) \
                or not isinstance(e.get("outs"), list):
            raise TraceError(f"entry {i}: malformed operator call")
        for a in (*e["args"], *e["kwargs"].values(), *e["outs"]):
            self._check_value(a, f"entry {i}")
        if not all(isinstance(k, str) and k.isidentifier() for k in e["kwargs"]):
            raise TraceError(f"entry {i}: bad keyword")

    def _check_value(self, v: Any, where: str, depth: int = 0) -> None:
        if depth > 8:
            raise TraceError(f"{where}: nested too deep")
        if v is None or isinstance(v, (bool, int, str)):
            return
        if isinstance(v, float):
            return
        if isinstance(v, list):
            for x in v:
                self._check_value(x, where, depth + 1)
            return
        if isinstance(v, dict) and len(v) == 1:
            (key, val), = v.items()
            if key == "t":
                self._check_ref(val, where)
                return
            if key == "tuple" and isinstance(val, list):
                for x in val:
                    self._check_value(x, where, depth + 1)
                return
            if key == "desc":
                self._check_descriptor(val, where)
                return
            if key in ("tl_dtype", "torch_dtype", "enum", "float") and isinstance(val, str):
                return
            if key == "device" and val is True:
                return
        raise TraceError(f"{where}: a value of unknown form")

    def _check_descriptor(self, d: Any, where: str) -> None:
        """A host TMA descriptor: [view of its base with its shape and strides, block shape, padding,
        round_f32_to_tf32], within what `TensorDescriptor` accepts (rank 1-5, positive sizes, last
        stride 1, 16-byte aligned base and strides, power-of-two blocks)."""
        if not (isinstance(d, list) and len(d) == 4 and isinstance(d[0], dict) and set(d[0]) == {"t"}
                and isinstance(d[1], list) and d[2] in ("zero", "nan") and isinstance(d[3], bool)):
            raise TraceError(f"{where}: malformed tensor descriptor")
        self._check_ref(d[0]["t"], where)
        r, block = d[0]["t"], d[1]
        itemsize = dtype_itemsize(r["dtype"])
        if not (1 <= len(r["size"]) <= 5 and len(block) == len(r["size"]) and r["stride"][-1] == 1
                and all(n > 0 for n in r["size"]) and all(s * itemsize % 16 == 0 for s in r["stride"][:-1])
                and r["offset"] * itemsize % 16 == 0
                and all(_int(b, 1) and b <= (1 << 16) and b & (b - 1) == 0 for b in block)):
            raise TraceError(f"{where}: a tensor descriptor Triton would not build")

    def _check_ref(self, r: Any, where: str) -> None:
        if not isinstance(r, dict):
            raise TraceError(f"{where}: malformed tensor view")
        buf, offset, size, stride, dtype = (r.get(k) for k in ("buf", "offset", "size", "stride", "dtype"))
        if not (_int(buf, 0) and buf < len(self.buffers) and _int(offset, 0) and dtype in DTYPES
                and isinstance(size, list) and isinstance(stride, list) and len(size) == len(stride) <= MAX_DIMS
                and all(_int(s, 0) for s in size) and all(_int(s) for s in stride)):
            raise TraceError(f"{where}: malformed tensor view")
        itemsize = dtype_itemsize(dtype)
        if 0 in size:
            return
        hi = offset + sum((n - 1) * s for n, s in zip(size, stride) if s > 0)
        lo = offset + sum((n - 1) * s for n, s in zip(size, stride) if s < 0)
        if lo < 0 or (hi + 1) * itemsize > self.buffers[buf]["nbytes"]:
            raise TraceError(f"{where}: a tensor view outside its buffer")

    def torch_made_outputs(self) -> list[str]:
        """The torch operators that made an output's bytes (empty when the answer's kernels made every
        output). A buffer is the kernels' when a launch was handed it last, or when a torch copy last
        wrote it from buffers that were the kernels' (`out.permute(0, 2, 1).contiguous()` after the kernel
        that wrote `out`; `acc.to(x.dtype)` of a float64 workspace the kernel accumulated into: a copy of
        the kernels' result); a copy of an input (even one a kernel read), a fill or an allocation left
        last is torch's, and so is a tensor built from host data that no kernel was handed. Outputs that
        view an input or the model's state are not listed (the judge's RH-10)."""
        made: dict[int, str] = {}  # buffer -> "kernel", or the torch operator that made its bytes
        for e in self.entries:
            if "launch" in e:
                # Scratch and state a kernel is handed hold what it wrote from then on (state carried from
                # an earlier call is the replay's: each trial starts from what the last one left, on new
                # values). An input a kernel reads is never its result.
                made.update((b, "kernel") for b in _buffers(e["args"]) if self.buffers[b]["kind"] != "input")
                continue
            packet = e["aten"].split(".")[1]
            written = _buffers(e["outs"]) | (_buffers(e["args"][:1]) if packet.endswith("_") else set())
            origin = e["aten"]
            if packet in COPIES:
                # An empty source (a tail of no elements) carries nothing: `torch.cat([body, tail])`
                # where the tail kernel had no work is a copy of the body (red-team v4k).
                sources = {b for b in _buffers([*e["args"], *e["kwargs"].values()]) - written
                           if self.buffers[b]["nbytes"]}
                if all(made.get(b) == "kernel" for b in sources or written):
                    origin = "kernel"
            made.update(dict.fromkeys(written, origin))
        listed = []
        for r in _refs(self.outputs):
            b = self.buffers[r["buf"]]
            if b["kind"] == "scratch" or (b["kind"] == "state" and b.get("host")):
                origin = made.get(r["buf"], "kernel" if b["kind"] == "scratch" else "a tensor built from host data")
                if origin != "kernel":
                    listed.append(origin)
        return listed

    def preparation_entries(self) -> set[int]:
        """Indices of the torch entries that only prepare inputs: allocations, fills and copies that read
        nothing but the call's inputs, its state and scratch made the same way (FlagGems' `dim_compress`:
        the reduced dim permuted last and `.contiguous()` before the kernel). None of them can carry what a
        kernel computed; an entry that reads a buffer a kernel was handed (a `masked_fill_` steered by a
        kernel-written mask) or torch made from one is not preparation, and neither is one whose result
        torch touches again in a later entry that is not preparation: `out = x.clone();
        out.masked_fill_(mask, 0)` prepares nothing, torch made the output. An output torch fills or copies
        into is preparation only when a later launch is handed it (`out = x.clone()` then an in-place
        kernel on `out`; `torch.zeros` then an accumulating kernel): the kernel writes what it computes
        there, and the copy's time is in the measured runtime either way. An output no kernel is handed
        after the copy is torch's."""
        prepared: set[int] = set()  # scratch whose bytes came from inputs/state/constants only
        derived: set[int] = set()  # scratch or state a kernel was handed or torch made from such
        found: set[int] = set()
        touched: list[set[int]] = []  # per entry, the buffers an aten entry reads or writes
        for i, e in enumerate(self.entries):
            touched.append(set() if "launch" in e else _buffers([*e["args"], *e["kwargs"].values(), *e["outs"]]))
            if "launch" in e:
                handed = _buffers(e["args"])
                # Scratch and the model's state a kernel was handed may hold what it computed from then
                # on (a mask kept in a registered buffer); inputs cannot (written inputs are RH-10).
                derived |= {b for b in handed if self.buffers[b]["kind"] in ("scratch", "state")}
                prepared -= handed
                continue
            packet = e["aten"].split(".")[1]
            written = _buffers(e["outs"]) | (_buffers(e["args"][:1]) if packet.endswith("_") else set())
            read = _buffers([*e["args"], *e["kwargs"].values()]) - written
            if packet.endswith("_") and packet not in COPIES and packet != "fill_":
                read |= written  # an in-place op other than a fill or a copy reads what it writes
            clean = all((self.buffers[b]["kind"] in ("input", "state") and b not in derived) or b in prepared
                        for b in read)
            if clean and not (written & derived):
                found.add(i)
                prepared |= {b for b in written if self.buffers[b]["kind"] == "scratch"}
            else:
                derived |= {b for b in written if self.buffers[b]["kind"] in ("scratch", "state")}
                prepared -= written
        outputs = _buffers(self.outputs)
        # One pass from the end, with what later entries touch (torch entries that are not preparation)
        # and which buffers later launches are handed: linear in the trace (a union over every later
        # entry for each preparation entry was quadratic: 9 s at 10,000 entries, ~40 s at the 20,000 a
        # trace may hold, in the profile request while the judge holds the GPU exclusively; red-team v4h).
        candidates = set(found)
        later: set[int] = set()
        handed_later: set[int] = set()
        for i in range(len(self.entries) - 1, -1, -1):
            e = self.entries[i]
            if "launch" in e:
                handed_later |= _buffers(e["args"])
                continue
            if i not in candidates:
                later |= touched[i]
                continue
            packet = e["aten"].split(".")[1]
            made = _buffers(e["outs"]) | (_buffers(e["args"][:1]) if packet.endswith("_") else set())
            if made & later or (made & outputs) - handed_later:
                found.discard(i)
        return found

    def scratch_bytes(self) -> int:
        return sum(b["nbytes"] for b in self.buffers if b["kind"] == "scratch")

    def scratch_problem(self, known_bytes: int | None = None) -> str | None:
        """A bound on the scratch one replayed call allocates, so that one answer's replay cannot take the
        memory of the evaluations beside it: `SCRATCH_FACTOR` times the call's inputs and state (by default
        as recorded; the replay passes the sizes it measured, since a forged record could claim any) plus
        `SCRATCH_SLACK_BYTES`."""
        known = known_bytes if known_bytes is not None else sum(
            b["nbytes"] for b in self.buffers if b["kind"] != "scratch")
        if self.scratch_bytes() > SCRATCH_FACTOR * known + SCRATCH_SLACK_BYTES:
            return (f"the call allocated {self.scratch_bytes() / 2**30:.1f} GiB of scratch, more than "
                    f"{SCRATCH_FACTOR}x its inputs and state plus {SCRATCH_SLACK_BYTES >> 30} GiB")
        return None

    def kernels(self) -> list[str]:
        return sorted({e["launch"] for e in self.entries if "launch" in e})

    def launch_buffers(self) -> set[int]:
        """Every buffer some kernel launch of the call took as an argument (may have written)."""
        return set().union(*(_buffers_in(e.get("args")) for e in self.entries if "launch" in e))

    def compute_reaches_work(self) -> bool:
        """Whether what torch computed outside the kernels (`torch_compute`) can reach a kernel's arguments or
        the outputs: a buffer a compute operator wrote is tainted, and so is every buffer an operator writes
        from a tainted one; a launch or an output touching a tainted buffer is reached. Whole buffers, never
        parts (a compute result anywhere in a buffer taints all of it). Not followed (red-team s13b): values
        that pass through the host (`.item()` into a kernel's scalar: `host_reads` refuses those anyway) and
        operators that write their arguments but list no outputs (`_foreach_*_`, which the capability scan
        refuses). "No" therefore never makes an answer `ok`; it means torch computed nothing the trace ties to
        the work (Liger's asserts on a target's range), so no cheat is proven, and the caller says
        `invalid_answer`.

        The model's state outlives the call: torch-computed bytes left in it are what the next call starts
        from (`self.cache.copy_(torch.relu(x))` after the launch that copies `self.cache` to the output, a
        one-call-late cache: red-team s14). So the walk runs a second time, as the next call would, with
        that state tainted from the start (host-built state is rebuilt by every call: not carried)."""
        compute = set(self.torch_compute)
        carried: set[int] = set()
        for _ in range(2):
            tainted = set(carried)
            for e in self.entries:
                if "launch" in e:
                    if _buffers_in(e.get("args")) & tainted:
                        return True
                elif "aten" in e and (e["aten"] in compute
                                      or _buffers_in((e.get("args"), e.get("kwargs"))) & tainted):
                    tainted |= _buffers_in(e.get("outs"))
            if _buffers_in(self.outputs) & tainted:
                return True
            carried = {b for b in tainted if self.buffers[b]["kind"] == "state" and not self.buffers[b].get("host")}
            if not carried:
                return False
        return False

    def compute_from_constants(self) -> bool:
        """Whether every torch compute operator of the call read only constants of the model: scratch made by
        allocations, fills, `arange` and such compute, and state that no entry of the call writes or hands a
        kernel (its bytes are the same on every call: parameters). Such a result cannot depend on the call's
        inputs; the same tensor computed once and kept on the model (`self.mask`, built on the first call) is
        state and judged `ok`, so computing it on every call proves no cheat (red-team s15: a causal mask
        `torch.triu(torch.full((S, S), -inf), 1)` handed to an honest attention kernel was `cheat RH-01`).
        Inputs, anything a kernel was handed, host-built tensors (`torch.tensor(x.tolist())` reads inputs
        without an operator) and state the call writes are never constants. False when a compute operator the
        trace names has no entry (unknown)."""
        compute = set(self.torch_compute)
        if not compute:
            return False
        written_state: set[int] = set()
        for e in self.entries:
            if "launch" in e:
                written_state |= _buffers_in(e.get("args"))
            elif "aten" in e:
                packet = e["aten"].split(".")[1]
                written_state |= _buffers_in(e.get("outs"))
                if packet.endswith("_"):
                    written_state |= _buffers_in(e.get("args", [])[:1])
        written_state = {b for b in written_state if self.buffers[b]["kind"] == "state"}
        varying: set[int] = set()  # scratch whose bytes may depend on the call's inputs
        seen: set[str] = set()

        def constant(b: int) -> bool:
            kind = self.buffers[b]["kind"]
            if kind == "scratch":
                return b not in varying
            return kind == "state" and not self.buffers[b].get("host") and b not in written_state

        for e in self.entries:
            if "launch" in e:
                varying |= _buffers_in(e.get("args"))
                continue
            if "aten" not in e:
                return False
            packet = e["aten"].split(".")[1]
            written = _buffers_in(e.get("outs")) | (_buffers_in(e.get("args", [])[:1]) if packet.endswith("_")
                                                     else set())
            # An allocation reads its tensor argument's sizes only (`torch.full_like(q, -inf)`)
            fixed = packet in _ALLOCATIONS or all(constant(b) for b in _buffers_in((e.get("args"), e.get("kwargs"))))
            if e["aten"] in compute:
                if not fixed:
                    return False
                seen.add(e["aten"])
            if not fixed:
                varying |= written
        return seen == compute


def _buffers_in(value: Any) -> set[int]:
    """The buffer numbers of every view in a trace value (tensors, descriptors, nested lists and dicts)."""
    found: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            ref = v.get("t")
            if isinstance(ref, dict) and isinstance(ref.get("buf"), int):
                found.add(ref["buf"])
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return found


def _taint_stub(e: Any, buffers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A torch entry `within_limits` must leave out (a complex128 view, a 17-dim one) as what it read and
    wrote, whole buffers as bytes: the trace is unreplayable already, but the compute taint
    (`compute_reaches_work`) must still follow through it. `c = x.to(torch.complex128)`, then
    `(c * 0.5 + c.abs() * 0.5).real.float()` handed to a copy kernel computed relu with torch, and with those
    entries cut the judge said "for the host only" (`invalid_answer`) instead of RH-01 (red-team s14)."""
    if not (isinstance(e, dict) and isinstance(e.get("aten"), str) and _OP_NAME.match(e["aten"])):
        return None

    def whole(value: Any) -> list[dict[str, Any]]:
        return [{"t": {"buf": b, "offset": 0, "size": [buffers[b]["nbytes"]], "stride": [1], "dtype": "uint8"}}
                for b in sorted(_buffers_in(value)) if _int(b, 0) and b < len(buffers)]

    return {"aten": e["aten"], "args": whole((e.get("args"), e.get("kwargs"))), "kwargs": {},
            "outs": whole(e.get("outs"))}


def _buffer_table_ok(buffers: Any) -> bool:
    try:
        Trace(buffers=buffers, entries=[], outputs=[]).validate()
        return True
    except TraceError:
        return False


def _renumbered(value: Any, number: dict[int, int]) -> Any:
    """A trace value with its views' buffer numbers mapped through `number` (a view of a buffer not in it:
    None, which the output check then leaves out)."""
    if isinstance(value, list):
        return [_renumbered(v, number) for v in value]
    if isinstance(value, dict) and len(value) == 1:
        (key, val), = value.items()
        if key == "t" and isinstance(val, dict):
            return {"t": val | {"buf": number[val["buf"]]}} if val.get("buf") in number else None
        if key in ("tuple", "desc") and isinstance(val, list):
            return {key: [_renumbered(v, number) for v in val]}
    return value


def _refs(value: Any) -> list[dict[str, Any]]:
    """The tensor views in a trace value."""
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    if isinstance(value, dict) and len(value) == 1:
        (key, val), = value.items()
        if key == "t":
            return [val]
        if key in ("tuple", "desc"):
            return _refs(val)
    return []


def _buffers(value: Any) -> set[int]:
    return {r["buf"] for r in _refs(value)}


def dtype_itemsize(name: str) -> int:
    import torch

    return torch.empty(0, dtype=getattr(torch, name)).element_size()


def _int(v: Any, lo: int | None = None) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and (lo is None or v >= lo) and abs(v) < (1 << 62)


def _strings(v: Any) -> list[str]:
    return [str(x)[:200] for x in v][:100] if isinstance(v, list) else []
