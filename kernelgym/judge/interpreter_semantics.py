"""The GPU's program semantics under Triton's CPU interpreter, where the interpreter's own differ.

`interpreter.py` makes the interpreter *run* what a GPU answer runs (autotune, libdevice, driver
facts). This module makes it *compute* what the GPU computes, for the things an answer may do
that the interpreter (triton 3.9) handles in plain Python instead:

- `a and b`, `a or b` between tensors: the GPU front end evaluates every dynamic operand and combines
  them with `logical_and` / `logical_or` (constexpr operands still short-circuit). The interpreter
  runs Python's `and`, which keeps one operand by a truth test: `(offs < n) and (offs >= m)` became
  `offs >= m`, and a load under that mask read past the end of its buffer.
- Program order: a GPU runs a grid's programs in no promised order; the interpreter runs them one
  after another in index order, so a scan that reads the previous program's result without waiting
  for it was exact on CPU and racy on the GPU. Programs run here in a seeded shuffled order, and interleaved
  (`interpreter_schedule`, off with `KERNELGYM_INTERLEAVE=0`): at every global memory operation the baton may pass
  to another resident program, so a program descheduled between two atomics, or between a load and its store, is
  an execution the interpreter runs (red-team s22: ticket scans whose adds were used in run order, lost updates
  behind an unwaited counter chain); the rules below still decide what each operation sees.
- Memory between programs: a GPU's programs run at once, so a plain load sees what other programs of the
  same launch stored only if something orders the two; the interpreter's programs, one after another, saw
  every earlier store, and a split-K merge by plain load + add + store (no atomic) summed exactly on CPU and
  lost updates on a GPU (red-team s14). Here a program's plain loads read the launch's starting memory
  wherever *another* program of the launch stored (its own stores it sees, at any element size), as if every
  program ran at once, unless the store happens before the load: an atomic with release semantics (Triton's
  default acq_rel) publishes, at its storage, every store its program made or acquired so far, and an atomic with
  acquire semantics on that storage (a lock's `atomic_cas`, a last-block counter's `atomic_add`, an atomic load)
  makes them visible to its program (the Triton tutorials' lock-guarded accumulation; a last-block reduction), at
  that address only (red-team s18: per storage, per-program flags ordered a race; s19: per byte, per lane of a
  block atomic). An atomic at scope "cta" orders nothing between programs. Atomics act on live memory, but an
  atomic over another program's unordered plain store (or, if it only reads, exchange or value-changing
  read-modify-write) reads the launch's starting memory, as if it came first (red-team s18: a dynamic-ticket scan
  that read its predecessor's total without waiting): a read-modify-write that leaves the value unchanged (and with
  all ones, max with the minimum, a cas that does not match) is a read, one that changes it is a write a plain load
  may read before as well, and whether a program's reads of an address come before such a write is drawn once per
  program and address, for a number of reads (s19: a fixed number of re-reads is no wait). Two plain stores to
  one address that nothing orders leave either value on a GPU, where the interpreter let the later one in run
  order (or the last lane of a block) win, which an answer can line up with its data (red-team s17): a store over
  another program's unordered store lands or not at random, and of the lanes of one store that write one address,
  one drawn at random lands; likewise an `atomic_xchg` / `atomic_store` over another program's unordered exchange
  (a matching cas counts as one), plain stores and exchanges race with each other, and the lanes of one block atomic that share an address run in a random order (red-team
  s18). Two read-modify-writes of one address whose results go unused (a counter nobody reads) come in either
  order, so an acquire/release chain on it that nothing waits for orders nothing (red-team s16/s19,
  `_LaunchMemory.reorderable`). Open: read-modify-writes whose results are used act in run order (`_LaunchMemory`).
- Memory between the lanes of one program: a GPU program is many threads, and a block stored to global memory
  then read back at other places of the block (another lane's element, or a block of another shape) races
  without `tl.debug_barrier()`, since Triton inserts no barrier for a global round trip (triton-lang/triton
  #1097, #1615); the interpreter's whole-block numpy loads and stores made a Hillis-Steele scan through global
  memory exact (red-team s16). Here such a load reads the launch's starting memory, unless a barrier or a scalar
  atomic whose result is used (it reaches the lanes through a barrier; one called as a statement has none, s19) came
  between, and a store over such a store of another lane lands or not at random (red-team s17); an atomic over it
  reads the starting memory with probability 1/2 (red-team s18). Open: a store racing with an earlier load of
  another lane (write after read).
- Memory outside the launch: a GPU faults on an access outside its allocations ("an illegal memory access was
  encountered"); the interpreter read and wrote any address of the process, so an address made on the host
  (`data_ptr()`, `id()`) or by `int(ptr)` reached the builtins of the answer's process and of the replay (red-team
  s28). Here every active lane of a load, store, atomic or tensor-descriptor access must lie, its whole element,
  in one storage given to the launch (`check_bounds`); masked-off lanes are free.
- Reorderable reshapes: `tl.view` is `tl.reshape(x, shape, can_reorder=True)`, whose element order the GPU leaves
  to its layouts (triton-lang/triton#2829); the interpreter kept the order, so a `tl.view`-flattened tile stored at
  row-major offsets was exact on CPU only (red-team s17). Here the result is permuted (`_reorderable_reshapes`).
- Float scalar arguments: the GPU passes a Python float as an fp32 scalar; the interpreter passed the
  Python float itself, so `scale.to(tl.float16)` failed and arithmetic ran in float64.
- A grid callable gets the launch's own arguments on the GPU (tensors, ints); the interpreter gave it
  the converted kernel arguments (pointers as 0-d tensors).
- bfloat16: the interpreter computed on bf16 bit patterns; `interpreter_bf16` computes in fp32 and
  rounds to bf16 as the GPU does.
- Masks: a block mask `&` a scalar condition (`(cols < n) & (row < m)`) reached a load as int32 data and
  the interpreter refused it; the GPU compiles it. Masked loads and stores take the mask's values as bools.

`install` replaces `GridExecutor.__call__` with `_run_grid` (the interpreter's steps, with the three
launch differences fixed, the programs interleaved by `_run_interleaved`) and adds a `BoolOp` rewrite and an unused-atomic-result marker (`_visit_expr`) to the
interpreter's AST transformer. It only
installs on interpreters whose internals it knows (it checks for each name it uses) and says why not.
"""

from __future__ import annotations

import ast
import ctypes
import inspect
import logging
from typing import Any, Callable

import numpy as np

from kernelgym.judge import interpreter_bf16, interpreter_schedule

log = logging.getLogger(__name__)

# Seeds the program order of the n-th launch in this process: reproducible run to run.
_ORDER_SALT = 0x5EED_0F_6D1D
_LAUNCHES = [0]
_NEEDED = ("GridExecutor", "ASTTransformer", "_patch_lang", "_implicit_cvt", "interpreter_builder",
           "InterpreterError", "TensorHandle")


def install() -> str:
    """Install the GPU semantics into Triton's interpreter; '' when done, else why not (idempotent)."""
    from triton.runtime import interpreter as interp

    missing = [n for n in _NEEDED if not hasattr(interp, n)]
    executor = getattr(interp, "GridExecutor", None)
    missing += [f"GridExecutor.{m}" for m in ("_init_args_hst", "_restore_args_dev")
                if executor is not None and not hasattr(executor, m)]
    if missing:
        why = f"this Triton's interpreter lacks {', '.join(missing)}: its own semantics stay"
        log.warning(why)
        return why
    bf16_why = interpreter_bf16.install(interp)  # its own check and idempotence: the rest still installs
    if getattr(executor.__call__, "_kernelgym", False):
        return bf16_why
    _run_grid._kernelgym = True  # type: ignore[attr-defined]
    executor.__call__ = _run_grid
    transformer = interp.ASTTransformer
    if not hasattr(transformer, "visit_BoolOp"):
        transformer.visit_BoolOp = _visit_bool_op
    if not hasattr(transformer, "visit_Expr"):
        transformer.visit_Expr = _visit_expr
    interp._kernelgym_bool_op = bool_op  # rewritten kernels see the interpreter module's globals
    interp._kernelgym_unused = unused_result
    _bool_masks(getattr(interp, "InterpreterBuilder", None))
    _launch_memory(getattr(interp, "InterpreterBuilder", None))
    _reorderable_reshapes(getattr(interp, "InterpreterBuilder", None))
    return bf16_why


# -- masks ---------------------------------------------------------------------------------------
def _bool_masks(builder: Any) -> None:
    """Masked loads and stores with the mask's values as bools. The front end has already checked that the
    mask is `tl.int1` (the GPU's check), but the interpreter types a comparison of a scalar by its operand:
    `(cols < n) & (row < m)` with `row = tl.program_id(0)` reached the load as int32 data and raised "mask has
    unsupported dtype" on CPU only (red-team s13), where the GPU compiles it."""
    for name in ("create_masked_load", "create_masked_store"):
        original = getattr(builder, name, None) if builder is not None else None
        if original is None or getattr(original, "_kernelgym", False):
            continue
        setattr(builder, name, _with_bool_mask(original))


def _with_bool_mask(original: Callable[..., Any]) -> Callable[..., Any]:
    mask_at = 0 if original.__name__ == "create_masked_load" else 1  # after ptrs: (mask, other, ...) / (value, mask, ...)

    def as_bool(mask: Any) -> Any:
        data = getattr(mask, "data", None)
        return type(mask)(data != 0, mask.dtype) if isinstance(data, np.ndarray) and data.dtype != np.bool_ else mask

    def call(self: Any, ptrs: Any, *args: Any, **kwargs: Any) -> Any:
        if "mask" in kwargs:
            kwargs["mask"] = as_bool(kwargs["mask"])
        elif len(args) > mask_at:
            args = (*args[:mask_at], as_bool(args[mask_at]), *args[mask_at + 1:])
        return original(self, ptrs, *args, **kwargs)

    call._kernelgym = True  # type: ignore[attr-defined]
    call.__name__ = original.__name__
    return call


# -- memory between the programs of a launch ----------------------------------------------------
class _LaunchMemory:
    """What the programs of one launch may see of each other's plain stores (module docstring).

    Every storage the launch was given is copied at its first store; a byte map per storage marks what any
    program stored since. A plain load of an address another program stored reads the copy, unless the store
    happens before the load: on a GPU no order between the two programs exists otherwise. The order is the
    memory model's, per address: an atomic with release semantics (the default acq_rel) at an address
    publishes every store its program made or acquired so far (per program, a store sequence watermark); an
    atomic with acquire semantics at that address (a lock's compare-and-swap,
    a last-block counter's add, an atomic load or poll) makes what was published there visible to its program.
    Atomics themselves act on live memory."""

    def __init__(self, storages: list[tuple[int, int] | tuple[int, int, Any]], programs: int = 1, seed: int = 0) -> None:
        # The storages themselves, held for the launch: host code that runs during it (a constexpr function, which
        # a GPU runs once at compile time and the interpreter in every program; an operator of a constexpr
        # argument) could resize one, freeing the block its regions still name (red-team round s29: a
        # use-after-free that passed `check_bounds`). `intact` says whether each is still where it was.
        self.held = [(s[2], s[0], s[1]) for s in storages if len(s) > 2 and s[2] is not None]
        # base, end, and once a program first stores into it: its copy from before that store, and per byte the
        # program that stored it last (-1: none) and that store's sequence number
        self.regions: list[list[Any]] = []
        for base, nbytes, *_ in storages:
            if nbytes > 0 and not any(b <= base < e for b, e, *_ in self.regions):
                self.regions.append([base, base + nbytes, None, None, None, None, None])
        self.stored = False  # any program stored into a region yet
        self.fault = ""  # the first access outside the launch's storages (`check_bounds`): the launch fails
        self.programs = max(1, programs)
        self.me = 0  # the running program (its place in the run)
        self.seq = 0  # stores so far, over the launch
        self.seen: np.ndarray | None = None  # per program: its stores up to this seq are visible (None: none)
        self.published: dict[int, np.ndarray] = {}  # region base -> per byte the id of what was released there
        self.vectors: list[Any] = []  # release id -> (programs, watermarks) released, None once no byte names it
        self.refs: list[int] = []  # release id -> bytes naming it
        self.live = False  # the load running now is atomic: live memory
        self.barrier = 0  # the running program's stores up to this seq are visible to all its lanes
        self.shapes: dict[tuple[int, ...], int] = {}  # a block shape -> its id (the lanes' layout follows it)
        self.interleaved = False  # the programs run interleaved (`interpreter_schedule`), not one after another
        self.rng = np.random.default_rng(seed)  # which of a store's lanes to one address lands
        self.seed = seed
        self.reorders: dict[tuple[Any, Any], np.ndarray] = {}  # (from, to) shapes -> a reorderable reshape's order
        self.superseded: dict[int, np.ndarray] = {}  # region base -> bytes where another program's store beat ours
        self.exchanged: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # region base -> per byte the program of the
        # last atomic_xchg / atomic_store there (-1: none) and its sequence number
        self.exchange_lost: dict[int, np.ndarray] = {}  # region base -> bytes another program's exchange won
        self.rmw_written: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # region base -> per byte the program of the
        # last atomic read-modify-write that changed the value there (-1: none) and its sequence number
        self.stale_left: dict[int, int] = {}  # address -> the running program's reads of it still before the
        # unordered write there (`stale`)
        self.observed: set[int] = set()  # addresses the running program's atomics read live (`observe`)
        self.last_release: dict[int, dict[str, np.ndarray]] = {}  # region base -> per byte, the last atomic write
        # there: its program, sequence number, RMW kind (`_RMW_KINDS`, 0: another atomic), whether its result went
        # unused and whether it changed nothing, and the release id there before it (`note_atomic_write`)

    def reorder(self, src: Any, dst: tuple[int, ...]) -> np.ndarray:
        """The permutation of a reorderable reshape from shape `src` to `dst` in this launch: drawn once per pair,
        the inverse of the reshape back (`_reorderable_reshapes`)."""
        got = self.reorders.get((src, dst))
        if got is None:
            back = self.reorders.get((dst, src))
            if back is not None:
                got = np.argsort(back)
            else:
                got = np.random.default_rng([self.seed, len(self.reorders)]).permutation(int(np.prod(dst)))
            self.reorders[(src, dst)] = got
        return got

    def begin_program(self, me: int = 0) -> None:
        self.me, self.live, self.seen = me % self.programs, False, None  # allocated at an acquire only
        self.superseded = {}
        self.exchange_lost = {}
        self.stale_left = {}
        self.observed = set()
        self.barrier = self.seq

    _VIEW = ("me", "live", "seen", "superseded", "exchange_lost", "stale_left", "observed", "barrier")

    def view(self) -> tuple:
        """The running program's own state (`begin_program`), to put back when it runs again (interleaved)."""
        return tuple(getattr(self, name) for name in self._VIEW)

    def restore_view(self, view: tuple) -> None:
        for name, value in zip(self._VIEW, view):
            setattr(self, name, value)

    def lane_barrier(self) -> None:
        """`tl.debug_barrier()`: every store the running program made so far is visible to all its lanes."""
        self.barrier = self.seq

    def _shape_id(self, shape: tuple[int, ...]) -> int:
        return self.shapes.setdefault(tuple(shape), len(self.shapes))

    def _released_bytes(self, ptrs: np.ndarray, mask: Any, size: int) -> list[tuple[list[Any], np.ndarray]]:
        """(region, byte offsets in it) of every byte of the `size`-byte elements an atomic acts on."""
        addrs = _addresses(ptrs, mask)
        found = []
        for region in self.regions:
            inside = addrs[(addrs >= region[0]) & (addrs < region[1])] if addrs.size else addrs
            if inside.size:
                off = (inside - np.uint64(region[0])).astype(np.int64)
                off = np.unique((off[:, None] + np.arange(max(1, size))[None, :]).ravel())
                found.append((region, off[off < region[1] - region[0]]))
        return found

    def intact(self) -> bool:
        """Whether every storage given to the launch still has the address and size it had at the start."""
        return all(st.data_ptr() == base and st.nbytes() == nbytes for st, base, nbytes in self.held)

    def acquire(self, ptrs: np.ndarray, mask: Any = None, size: int = 1, earlier: Any = None) -> None:
        """Make visible what was released at the bytes the atomic acts on; at the lanes of `earlier`, what was there
        before the last release (`reorderable`)."""
        # per address, not per storage: two programs' atomics on different elements of one buffer pair no release
        # with an acquire on a GPU (red-team s18: a flag per program around a plain read-modify-write)
        before = set()
        if earlier is not None and np.any(earlier):
            for region, off in self._released_bytes(ptrs, earlier, size):
                before.update((region[0] + off).tolist())
        for region, off in self._released_bytes(ptrs, mask, size):
            ids = self.published.get(region[0])
            if ids is None:
                continue
            ids = ids[off]
            if before:
                prev = np.isin(off + region[0], np.fromiter(before, np.int64))
                ids = np.where(prev, self.last_release[region[0]]["prev"][off], ids)
            for i in np.unique(ids).tolist():
                if i < 0:
                    continue
                progs, seqs = self.vectors[i]
                if self.seen is None:
                    self.seen = np.full(self.programs, -1, np.int64)
                np.maximum.at(self.seen, progs, seqs)

    def release(self, ptrs: np.ndarray, mask: Any = None, size: int = 1, upto: int | None = None) -> None:
        """Publish, at each byte the atomic acts on, every store this program made (up to sequence number `upto`,
        default all so far) or acquired, merged with what earlier releases published at that same byte (a
        read-modify-write continues their release sequence). Per byte: the lanes of a block atomic are threads of
        their own, and one lane's release publishes nothing another lane's release published before at its address
        (red-team s19: a block `atomic_add(flags + arange, 0)` merged every flag's releases into each)."""
        # held sparse: per release, the (program, watermark) pairs (a program that acquired nothing releases one
        # pair), with a release id per byte and a count of the bytes naming it
        own = self.seq if upto is None else upto
        if self.seen is None:
            progs, seqs = np.array([self.me]), np.array([own], np.int64)
        else:
            progs = np.nonzero(self.seen >= 0)[0]
            seqs = self.seen[progs]
            progs, seqs = np.append(progs, self.me), np.append(seqs, own)
        for region, off in self._released_bytes(ptrs, mask, size):
            ids = self.published.get(region[0])
            if ids is None:
                ids = self.published[region[0]] = np.full(region[1] - region[0], -1, np.int32)
            old, inverse, counts = np.unique(ids[off], return_inverse=True, return_counts=True)
            fresh = np.empty(old.size, np.int32)
            for k, (i, n) in enumerate(zip(old.tolist(), counts.tolist())):
                keep, merged = progs, seqs
                if i >= 0:
                    allp = np.concatenate([progs, self.vectors[i][0]])
                    alls = np.concatenate([seqs, self.vectors[i][1]])
                    keep, at = np.unique(allp, return_inverse=True)
                    merged = np.full(keep.size, -1, np.int64)
                    np.maximum.at(merged, at, alls)
                    self.refs[i] -= n
                    if self.refs[i] == 0:
                        self.vectors[i] = None  # no byte names it any more
                fresh[k] = len(self.vectors)
                self.vectors.append((keep, merged))
                self.refs.append(n)
            ids[off] = fresh[inverse.ravel()]

    def note_atomic_write(self, ptrs: np.ndarray, lanes: np.ndarray, size: int, how: tuple[int, bool, bool]) -> None:
        """Record an atomic that writes (`lanes`: those that acted on live memory) as the last there
        (`last_release`): its program, its write's sequence number, `how` (kind, result unused, changed nothing), and
        the release id there before it; called before its own release."""
        self.seq += 1
        for region, off in self._released_bytes(ptrs, lanes, size):
            rec = self.last_release.get(region[0])
            if rec is None:
                n = region[1] - region[0]
                rec = self.last_release[region[0]] = {
                    "prog": np.full(n, -1, np.int32), "seq": np.zeros(n, np.int64), "kind": np.zeros(n, np.int8),
                    "unused": np.zeros(n, np.bool_), "same": np.zeros(n, np.bool_), "prev": np.full(n, -1, np.int32)}
            ids = self.published.get(region[0])
            prev = ids[off] if ids is not None else np.full(off.size, -1, np.int32)
            for old, sign in ((rec["prev"][off], -1), (prev, 1)):  # the ids named as "before the last" stay alive
                for i, n in zip(*np.unique(old, return_counts=True)):
                    if i >= 0:
                        self.refs[i] += sign * int(n)
                        if self.refs[i] == 0:
                            self.vectors[i] = None
            rec["prog"][off], rec["seq"][off], rec["prev"][off] = self.me, self.seq, prev
            rec["kind"][off], rec["unused"][off], rec["same"][off] = how

    def reorderable(self, ptrs: np.ndarray, lanes: np.ndarray, size: int, kind: int, unused: bool) -> np.ndarray:
        """The `lanes` of a read-modify-write of `kind` that come, drawn with probability 1/2, before the last atomic
        write at their address in its modification order: one program after another, every RMW read the previous
        program's release, so an acquire/release chain on one counter that no program waits for ordered a plain
        merge (red-team s15/s16/s19). On a GPU the order of two programs' RMWs on one address is whichever comes
        first, and this one may come first where nothing tells: the last atomic write there is another program's RMW,
        not ordered before this one, whose result went unused (else its value would have differed); it changed
        nothing or is of the same commuting kind (the memory ends the same); and this RMW's result goes unused or
        that one changed nothing (else this value would differ). Such a lane acquires what was there before it."""
        flat = np.asarray(ptrs).astype(np.uint64).ravel()
        lanes = np.broadcast_to(np.asarray(lanes), np.asarray(ptrs).shape).ravel().copy()
        out = np.zeros(flat.size, dtype=np.bool_)
        for base, rec in self.last_release.items():
            at = np.nonzero(lanes & (flat >= base) & (flat < base + rec["prog"].size))[0]
            if not at.size:
                continue
            off = (flat[at] - np.uint64(base)).astype(np.int64)
            w = rec["prog"][off]
            ok = (w >= 0) & (w != self.me) & rec["unused"][off] & (rec["kind"][off] > 0)
            ok &= rec["same"][off] | (rec["kind"][off] == kind)
            if not unused:
                ok &= rec["same"][off]
            if self.seen is not None:
                ok[ok] = self.seen[w[ok]] < rec["seq"][off[ok]]
            ok &= ~self.was_observed(flat[at])
            out[at] = ok & (self.rng.random(at.size) < 0.5)
        return out.reshape(np.asarray(ptrs).shape)

    def _copy(self, region: list[Any]) -> None:
        """Copy a region at its first store or exchange: storages no program writes cost nothing."""
        if region[2] is None:
            base, end = region[0], region[1]
            region[2] = np.ctypeslib.as_array((ctypes.c_uint8 * (end - base)).from_address(base)).copy()
            region[3] = np.full(end - base, -1, dtype=np.int32)
            region[4] = np.zeros(end - base, dtype=np.int64)
            region[5] = np.zeros(end - base, dtype=np.int32)
            region[6] = np.zeros(end - base, dtype=np.int32)
            self.stored = True

    def unordered_exchanges(self, flat: np.ndarray, size: int, rmws: bool = False) -> list[tuple[int, np.ndarray]]:
        """(region's base, places in `flat`) where a byte's last exchange is another program's, not ordered before;
        with `rmws`, also where its last value-changing read-modify-write is (`note_rmw`)."""
        found = []
        tables = list(self.exchanged.items()) + (list(self.rmw_written.items()) if rmws else [])
        for base, (who, when) in tables:
            at = np.nonzero((flat >= base) & (flat < base + who.size))[0]
            if not at.size:
                continue
            first = (flat[at] - np.uint64(base)).astype(np.int64)
            hit = np.zeros(at.size, dtype=np.bool_)
            for k in range(max(1, size)):
                off = np.minimum(first + k, who.size - 1)
                w = who[off]
                other = (w >= 0) & (w != self.me)
                if self.seen is not None:
                    other[other] = self.seen[w[other]] < when[off[other]]
                hit |= other
            hit &= ~self.was_observed(flat[at])
            if hit.any():
                found.append((base, at[hit]))
        return found

    def observe(self, addrs: np.ndarray) -> None:
        """The running program's atomic read these addresses live: every write there so far comes before its later
        accesses to them (coherence), whatever its acquires ordered. Per address, not per program: the lanes of a
        block atomic are threads of their own, and reading one address orders nothing else another program wrote,
        not even by the same block atomic."""
        self.observed.update(addrs.astype(np.uint64).tolist())

    def was_observed(self, addrs: np.ndarray) -> np.ndarray:
        if not self.observed:
            return np.zeros(addrs.size, dtype=np.bool_)
        seen = self.observed
        return np.fromiter((a in seen for a in addrs.astype(np.uint64).tolist()), np.bool_, addrs.size)

    def exchange(self, ptrs: np.ndarray, active: np.ndarray, size: int, draw: bool = True) -> np.ndarray:
        """The lanes of an atomic_xchg / atomic_store that land, noting them as the last exchange at their bytes.
        Atomics act on live memory, and one program after another the last program's exchange stayed, so "every
        program exchanges its view of a running total; the last is complete" was exact on CPU only (red-team s18):
        on a GPU two programs' exchanges that nothing orders reach the address in either order. As `landing` does
        for plain stores, an exchange over another program's unordered exchange lands with probability 1/2 per
        element, and once beaten, none of this program's later exchanges there lands. Without `draw` every active lane
        lands and is noted (a cas that matches)."""
        ptrs = np.asarray(ptrs)
        full = np.broadcast_shapes(ptrs.shape, np.asarray(active).shape)
        act = np.broadcast_to(np.asarray(active) != 0, full).ravel().copy()
        flat = np.broadcast_to(ptrs, full).ravel().astype(np.uint64)
        self.seq += 1
        for region in self.regions:
            base, end = region[0], region[1]
            inside = np.nonzero(act & (flat >= base) & (flat < end))[0]
            if not inside.size:
                continue
            if base not in self.exchanged:
                self._copy(region)  # an atomic read that comes before this exchange reads the copy
                self.exchanged[base] = (np.full(end - base, -1, np.int32), np.zeros(end - base, np.int64))
            who, when = self.exchanged[base]
            off = (flat[inside] - np.uint64(base)).astype(np.int64)
            lost_here = self.exchange_lost.get(base)
            beaten = np.zeros(inside.size, dtype=np.bool_)
            for k in range(max(1, size)):
                at = np.minimum(off + k, who.size - 1)
                w = who[at]
                other = (w >= 0) & (w != self.me)
                if self.seen is not None:
                    other[other] = self.seen[w[other]] < when[at[other]]
                beaten |= other
                if lost_here is not None:
                    beaten |= lost_here[at]  # stays beaten (`landing`'s stickiness)
            beaten &= ~self.was_observed(flat[inside])
            beaten &= (self.rng.random(inside.size) < 0.5) | (lost_here[np.minimum(off, who.size - 1)]
                                                               if lost_here is not None else False)
            if not draw or self.interleaved:  # interleaved, atomics of one address act in the order they ran
                beaten[:] = False
            if beaten.any():
                if lost_here is None:
                    lost_here = self.exchange_lost[base] = np.zeros(end - base, dtype=np.bool_)
                for k in range(max(1, size)):
                    lost_here[np.minimum(off[beaten] + k, who.size - 1)] = True
            act[inside[beaten]] = False
            for k in range(max(1, size)):
                at = np.minimum(off[~beaten] + k, who.size - 1)
                who[at] = self.me
                when[at] = self.seq
        return act.reshape(full)

    def note_rmw(self, ptrs: np.ndarray, lanes: np.ndarray, size: int) -> None:
        """Note the `lanes` of an atomic read-modify-write that change the value at their address (an add of a
        non-zero, a max above it, ...) as this program's writes there, for readers only: a plain load or an atomic
        that only reads, in another program not ordered after it, may come before it (`stale`) as before an
        exchange (red-team s19: a total published by `atomic_add` into a zeroed slot, read without waiting). Unlike
        an exchange it always lands: read-modify-writes of one address are totally ordered and each applies to the
        value the one before left, whatever their order."""
        flat = np.asarray(ptrs).astype(np.uint64).ravel()
        lanes = np.broadcast_to(np.asarray(lanes), np.asarray(ptrs).shape).ravel()
        self.seq += 1
        for region in self.regions:
            base, end = region[0], region[1]
            inside = np.nonzero(lanes & (flat >= base) & (flat < end))[0]
            if not inside.size:
                continue
            self._copy(region)  # a read that comes before this write reads the copy
            if base not in self.rmw_written:
                self.rmw_written[base] = (np.full(end - base, -1, np.int32), np.zeros(end - base, np.int64))
            who, when = self.rmw_written[base]
            off = (flat[inside] - np.uint64(base)).astype(np.int64)
            for k in range(max(1, size)):
                at = np.minimum(off + k, who.size - 1)
                who[at] = self.me
                when[at] = self.seq

    def stale(self, addrs: np.ndarray) -> np.ndarray:
        """Per address of `addrs` (each with another program's unordered write there), whether this read of it by
        the running program comes before that write. Drawn once per program and address, not per read: a GPU
        program that reads an address over and over sees the write from some read on, and from then on always
        (coherence), so a fixed number of re-reads keeping the first non-zero value was exact here with independent
        1/2 draws (red-team s19). The first read comes before the write with probability 1/2; if it does, so do the
        next n - 1, with P(n >= k) = 1/k up to `_STALE_READS_CAP`: a spin on a flag still ends (after about
        ln(cap) + 0.6 = 9 reads on average, once stale), and a bounded re-read of k reads stays stale in 1/(2k) of
        the programs (41 reads over a 40-program launch: 39%; a judge runs up to nine launches)."""
        out = np.zeros(addrs.size, dtype=np.bool_)
        seen: dict[int, bool] = {}
        for i, a in enumerate(addrs.tolist()):
            if a in seen:  # lanes of one access that read one address read it once
                out[i] = seen[a]
                continue
            left = self.stale_left.get(a)
            if left is None:
                u = 1.0 - self.rng.random()
                left = 0 if self.rng.random() < 0.5 else int(min(_STALE_READS_CAP, 1.0 / u))
            out[i] = seen[a] = left > 0
            self.stale_left[a] = max(0, left - 1)
        return out

    def values(self, addrs: np.ndarray, dtype: np.dtype, starting: bool) -> tuple[np.ndarray, np.ndarray]:
        """The `dtype` values at `addrs` in live memory or (`starting`) in the launch's starting copy where a region
        has one, and where they are known: an address outside the launch's storages (a masked-off lane's) reads 0."""
        dtype = np.dtype(dtype)
        out = np.zeros((addrs.size, dtype.itemsize), dtype=np.uint8)
        done = np.zeros(addrs.size, dtype=np.bool_)
        for region in self.regions:
            base, end = region[0], region[1]
            inside = np.nonzero((addrs >= base) & (addrs + np.uint64(dtype.itemsize) <= end))[0]
            if not inside.size:
                continue
            if starting and region[2] is not None:
                mem = region[2]
            else:
                mem = np.ctypeslib.as_array((ctypes.c_uint8 * (end - base)).from_address(base))
            off = (addrs[inside] - np.uint64(base)).astype(np.int64)
            out[inside] = mem[off[:, None] + np.arange(dtype.itemsize)[None, :]]
            done[inside] = True
        return out.view(dtype).reshape(addrs.shape), done

    def note_store(self, ptrs: np.ndarray, mask: np.ndarray, size: int) -> None:
        ptrs = np.asarray(ptrs)
        full = np.broadcast_shapes(ptrs.shape, np.asarray(mask).shape)
        where = np.nonzero(np.broadcast_to(np.asarray(mask) != 0, full).ravel())[0]
        addrs = np.broadcast_to(ptrs, full).ravel()[where].astype(np.uint64)
        if not addrs.size:
            return
        # the lane that stored each element: its place in the block, and the block's shape (red-team s16)
        where = where % max(1, int(np.prod(ptrs.shape, dtype=np.int64)))
        shape = self._shape_id(ptrs.shape)
        self.seq += 1
        for region in self.regions:
            base, end = region[0], region[1]
            hit = (addrs >= base) & (addrs < end)
            inside = addrs[hit]
            if inside.size:
                self._copy(region)
                writer, wseq, wpos, wshape = region[3], region[4], region[5], region[6]
                off = (inside - np.uint64(base)).astype(np.int64)
                lanes = where[hit]
                for k in range(size):
                    at = np.minimum(off + k, writer.size - 1)
                    writer[at] = self.me
                    wseq[at] = self.seq
                    wpos[at] = lanes
                    wshape[at] = shape
                self.stored = True

    def _unordered(self, flat: np.ndarray, shape: tuple[int, ...], own_lanes: bool,
                   size: int = 1) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(region's base, places in `flat`) where a byte of the `size`-byte element at the address was last stored by
        another program, not ordered before the running program; with `own_lanes`, also by the running program from
        another lane (another place in the block, or a block of another shape) with no tl.debug_barrier() since
        (red-team s16). Every byte of the element: a one-byte store of its own over the first byte of an element that
        other programs stored made a load of it read live memory (red-team s17). With each place, whether another
        program's store is among the reasons. A byte where another program's store superseded this program's own
        (`landing`) is not unordered to it: that store came after its own, and it reads it live."""
        found = []
        if not self.stored:
            return found
        shape_id = self._shape_id(shape)
        for base, end, copy, writer, wseq, wpos, wshape in self.regions:
            if copy is None:
                continue
            at = np.nonzero((flat >= base) & (flat < end))[0]
            if not at.size:
                continue
            first = (flat[at] - np.uint64(base)).astype(np.int64)
            hit = np.zeros(at.size, dtype=np.bool_)
            cross = np.zeros(at.size, dtype=np.bool_)
            superseded = self.superseded.get(base)
            for k in range(max(1, size)):
                off = np.minimum(first + k, writer.size - 1)
                w = writer[off]
                other = (w >= 0) & (w != self.me)
                if self.seen is not None:
                    other[other] = self.seen[w[other]] < wseq[off[other]]
                if superseded is not None:
                    other &= ~superseded[off]
                cross |= other
                if own_lanes:
                    other |= (w == self.me) & (wseq[off] > self.barrier) & ((wshape[off] != shape_id) | (wpos[off] != at))
                hit |= other
            hit &= ~self.was_observed(flat[at])
            if hit.any():
                found.append((base, at[hit], cross[hit]))
        return found

    def redirect(self, ptrs: np.ndarray, size: int = 1) -> np.ndarray:
        """`ptrs` with every address another program stored, not ordered before this load, pointing into the
        launch's starting copy (and the program's own store from another lane with no barrier between: the GPU's
        threads race there as programs do, red-team s16)."""
        if not self.stored or self.live:
            return ptrs
        flat = ptrs.astype(np.uint64).ravel()
        found = [(base, at) for base, at, _ in self._unordered(flat, ptrs.shape, own_lanes=True, size=size)]
        # another program's unordered exchange: with probability 1/2, so that a volatile spin on a flag set by
        # atomic_xchg still ends (red-team s18: an unwaited read of an exchanged total by a plain load was live)
        # (red-team s19: and over another program's unordered value-changing RMW, an add into a zeroed slot); drawn per
        # program and address (`stale`)
        for base, at in self.unordered_exchanges(flat, size, rmws=True):
            superseded = self.superseded.get(base)
            if superseded is not None:  # our store there was beaten by it: we read it live
                at = at[~superseded[np.minimum((flat[at] - np.uint64(base)).astype(np.int64), superseded.size - 1)]]
            found.append((base, at[self.stale(flat[at])]))
        if not any(at.size for _, at in found):
            return ptrs
        out = flat.copy()
        copies = {region[0]: region[2] for region in self.regions}
        for base, at in found:
            out[at] = flat[at] - np.uint64(base) + np.uint64(copies[base].ctypes.data)
        return out.reshape(ptrs.shape).astype(ptrs.dtype, copy=False)

    def landing(self, ptrs: np.ndarray, active: np.ndarray, size: int = 1) -> tuple[np.ndarray, np.ndarray] | None:
        """(the lanes of a plain store that land, the lanes noted as this program's stores), None when every active
        lane lands; called before `note_store`. Two stores to one address that nothing orders leave either value on a
        GPU, but the interpreter applied them in run order and block order, the last one winning, which an answer can
        line up with its data (red-team s17): a store over another program's unordered store, or over the program's
        own store from another lane with no barrier since (the lane rule of `redirect`), lands with probability 1/2
        per element (either could have come last; always keeping the first would be an order to line up as well),
        and of the lanes of one store that write one address, one drawn at random lands. Where another program's
        store wins, it stays the address's last store, and it came after every store of this program there: none
        of them lands later (storing twice, or until a load reads the value back, would line up the run order again)
        and this program's loads there read it."""
        if self.live:
            return None  # an atomic store acts on live memory
        ptrs = np.asarray(ptrs)
        full = np.broadcast_shapes(ptrs.shape, np.asarray(active).shape)
        act = np.broadcast_to(np.asarray(active) != 0, full).ravel().copy()
        flat = np.broadcast_to(ptrs, full).ravel().astype(np.uint64)
        lost = np.zeros(flat.size, dtype=np.bool_)
        beaten = np.zeros(flat.size, dtype=np.bool_)  # another program's store stays after this one
        for base, at, cross in self._unordered(flat, full, own_lanes=True, size=size):
            lost[at] = self.rng.random(at.size) < 0.5  # either store may come last: no order an answer can line up
            beaten[at[cross]] = lost[at[cross]] & act[at[cross]]
        for base, at in self.unordered_exchanges(flat, size):  # another program's atomic_xchg is a store too (s18)
            drawn = self.rng.random(at.size) < 0.5
            lost[at] |= drawn
            beaten[at] |= drawn & act[at]
        for region in self.regions:
            base, end = region[0], region[1]
            superseded = self.superseded.get(base)
            inside = (flat >= base) & (flat < end) & act
            if superseded is not None and inside.any():  # superseded earlier in this program: stays superseded
                off = (flat[inside] - np.uint64(base)).astype(np.int64)
                was = superseded[np.minimum(off, superseded.size - 1)]
                idx = np.nonzero(inside)[0][was]
                lost[idx] = beaten[idx] = True
            new = beaten & inside
            if new.any():
                if superseded is None:
                    superseded = self.superseded[base] = np.zeros(end - base, dtype=np.bool_)
                off = (flat[new] - np.uint64(base)).astype(np.int64)
                for k in range(max(1, size)):
                    superseded[np.minimum(off + k, superseded.size - 1)] = True
        live = np.nonzero(act & ~lost)[0]
        if live.size > 1:
            addrs = flat[live]
            if np.unique(addrs).size < addrs.size:
                order = np.lexsort((self.rng.random(live.size), addrs))
                repeat = np.zeros(live.size, dtype=np.bool_)
                repeat[1:] = addrs[order][1:] == addrs[order][:-1]
                lost[live[order[repeat]]] = True
        if not (lost & act).any():
            return None
        return (act & ~lost).reshape(full), (act & ~beaten).reshape(full)


def _addresses(ptrs: np.ndarray, mask: Any = None) -> np.ndarray:
    """The addresses of `ptrs` where `mask` (None: everywhere) holds, flat, as uint64."""
    ptrs = np.asarray(ptrs)
    if mask is None:
        return ptrs.astype(np.uint64).ravel()
    mask = np.asarray(mask) != 0
    shape = np.broadcast_shapes(ptrs.shape, mask.shape)
    return np.broadcast_to(ptrs, shape)[np.broadcast_to(mask, shape)].astype(np.uint64).ravel()


class IllegalMemoryAccess(RuntimeError):
    """An active lane of an interpreted load, store or atomic outside every storage given to its launch. A GPU
    faults ("an illegal memory access was encountered"); the interpreter read and wrote the address, anywhere in the
    process: an address made on the host (`data_ptr()`, `id()`) or from `int(ptr)` reached builtins' objects in the
    answer's process and the replay's (red-team round s28). The message names the fault as CUDA does, so that
    `errors.classify_exception` reports it as a GPU's would be (`crashed`, `cuda_illegal_address`)."""


def check_bounds(memory: _LaunchMemory | None, ptrs: Any, mask: Any, size: int, what: str) -> None:
    """Raise `IllegalMemoryAccess` unless each active lane's `size`-byte element at `ptrs` (where `mask` holds;
    None: every lane) lies in one storage of the running launch. Masked-off lanes are free, as on a GPU; a memory
    operation with no launch running (a launch from inside a kernel ended the outer's) has no storage at all."""
    if (not isinstance(ptrs, np.ndarray) or ptrs.dtype.kind not in "iu"
            or not (mask is None or isinstance(mask, (np.ndarray, np.generic)))):
        # the interpreter makes integer arrays; anything else was put there by the kernel (`.handle.data`), and
        # Triton's native load would convert an object that supports DLPack or the buffer protocol unchecked
        raise IllegalMemoryAccess(f"an illegal memory access was encountered: {what} through pointers or a mask "
                                  f"of type {type(ptrs).__name__}/{type(mask).__name__}, which no kernel makes")
    if memory is not None and memory.held and not memory.intact():
        memory.fault = memory.fault or what
        raise IllegalMemoryAccess(f"an illegal memory access was encountered: {what} after a tensor given to the "
                                  "launch was resized or freed during it (host code run by the kernel)")
    if not ptrs.size:
        return
    size = max(1, int(size))
    regions = memory.regions if memory is not None else []

    def within_one(addrs: np.ndarray) -> bool:
        low, high = int(addrs.min()), int(addrs.max())
        return any(region[0] <= low and high + size <= region[1] for region in regions)

    # the common case first, every lane (masked-off ones too) in one storage: two reductions, no mask to apply
    if within_one(ptrs.astype(np.uint64, copy=False)):
        return
    addrs = _addresses(ptrs, mask)
    if not addrs.size or within_one(addrs):
        return
    inside = np.zeros(addrs.size, dtype=np.bool_)
    for region in regions:
        if region[1] - region[0] >= size:
            inside |= (addrs >= np.uint64(region[0])) & (addrs <= np.uint64(region[1] - size))
    if inside.all():
        return
    bad = int(addrs[~inside][0])
    if memory is not None:
        memory.fault = memory.fault or what
    raise IllegalMemoryAccess(f"an illegal memory access was encountered: {what} of {size} bytes at {bad:#x}, "
                              "outside every tensor given to the launch")


_MEMORY: list[_LaunchMemory | None] = [None]  # the launch running now (launches do not nest)
# The most reads of one address a program makes before another program's unordered write there reaches them
# (`_LaunchMemory.stale`): bounds a stale spin's length; a re-read of more reads is not caught, and costs the answer
# that many interpreted atomics in every program. A heavier tail than P(n >= k) = 1/k would catch longer re-reads
# and lengthen every honest spin (a stale read costs the interpreter about half a millisecond).
_STALE_READS_CAP = 1 << 12


def _semantics(sem: Any) -> tuple[bool, bool]:
    """(acquires, releases) for a Triton memory semantic (the default is acq_rel)."""
    name = str(getattr(sem, "name", sem)).upper()
    if "RELAXED" in name:
        return False, False
    if "ACQUIRE_RELEASE" in name or "ACQ_REL" in name:
        return True, True
    return "ACQUIRE" in name, "RELEASE" in name


def _launch_memory(builder: Any) -> None:
    """Plain loads and stores through `_MEMORY`; atomics order programs (see `_LaunchMemory`)."""
    if builder is None or getattr(getattr(builder, "create_masked_load", None), "_kernelgym_memory", False):
        return
    load, store = builder.create_masked_load, builder.create_masked_store

    def masked_load(self: Any, ptrs: Any, *args: Any, **kwargs: Any) -> Any:
        memory = _MEMORY[0]
        if memory is None or not memory.live:  # an atomic's own load: checked by the atomic (`ordering`)
            mask = kwargs["mask"] if "mask" in kwargs else (args[0] if args else None)
            check_bounds(memory, getattr(ptrs, "data", None), getattr(mask, "data", None), _element_bytes(ptrs, None),
                         "a load")
        _step(memory)
        if memory is not None and isinstance(getattr(ptrs, "data", None), np.ndarray):
            data = memory.redirect(ptrs.data, _element_bytes(ptrs, None))
            if data is not ptrs.data:
                ptrs = type(ptrs)(data, ptrs.dtype)
        return load(self, ptrs, *args, **kwargs)

    def masked_store(self: Any, ptrs: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        memory = _MEMORY[0]
        if memory is None or not memory.live:  # an atomic's own store: checked by the atomic (`ordering`)
            mask = kwargs["mask"] if "mask" in kwargs else (args[0] if args else None)
            check_bounds(memory, getattr(ptrs, "data", None), getattr(mask, "data", None),
                         _element_bytes(ptrs, value), "a store")
        _step(memory, wrote=True)
        if memory is not None and isinstance(getattr(ptrs, "data", None), np.ndarray):
            mask = kwargs["mask"] if "mask" in kwargs else (args[0] if args else None)
            data = getattr(mask, "data", None)
            active = np.asarray(data != 0) if data is not None else np.ones(1, np.bool_)
            size = _element_bytes(ptrs, value)
            landing = memory.landing(ptrs.data, active, size)
            lands, recorded = (None, active) if landing is None else landing
            memory.note_store(ptrs.data, recorded, size)
            if lands is not None:
                import triton.language as tl

                mask = type(ptrs)(np.ascontiguousarray(np.broadcast_to(lands, ptrs.data.shape)), tl.int1)
                if "mask" in kwargs or not args:
                    kwargs["mask"] = mask
                else:
                    args = (mask, *args[1:])
        return store(self, ptrs, value, *args, **kwargs)

    def ordering(original: Callable[..., Any], ptr_at: int, mask_at: int | None, sem_at: int,
                 lanes: tuple[int, ...] = ()) -> Callable[..., Any]:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            memory = _MEMORY[0]
            ptrs = getattr(args[ptr_at], "data", None)
            mask = getattr(args[mask_at], "data", None) if mask_at is not None and len(args) > mask_at else None
            # before any redirection to the launch's starting copy, which lies outside its storages
            check_bounds(memory, ptrs, mask, _element_bytes(args[ptr_at], None), f"an {original.__name__[7:]}")
            if memory is None:
                return original(self, *args, **kwargs)
            _step(memory)
            acquires, releases = _semantics(args[sem_at] if len(args) > sem_at else kwargs.get("sem"))
            if _cta_scope(args[sem_at + 1] if len(args) > sem_at + 1 else kwargs.get("scope")):
                acquires = releases = False  # orders nothing between programs (CTAs), as relaxed (red-team s19)
            size = _element_bytes(args[ptr_at], None)
            before = memory.seq
            # an exchange's own write is part of what its release publishes (an unlock's `atomic_xchg(lock, 0)`)
            args, beaten = _exchange_landing(memory, original.__name__, args, ptr_at, mask_at, size)
            args, stale = _stale_atomic(memory, original.__name__, args, ptr_at, size, mask)
            name = original.__name__
            kind, unused = _RMW_KINDS.get(_rmw_op(args), 0) if name == "create_atomic_rmw" else 0, _UNUSED[0] > 0
            earlier = None
            if isinstance(ptrs, np.ndarray) and name in _READS:
                active = np.ones(ptrs.shape, np.bool_) if mask is None else np.broadcast_to(np.asarray(mask) != 0,
                                                                                         ptrs.shape)
                if stale is not None:  # a lane that read the starting copy read no release, and observed nothing
                    active = active & ~stale
                # what it reads: the last release at each byte, or (`reorderable`) the one before it
                earlier = memory.reorderable(ptrs, active, size, kind, unused) if kind else None
                # observed all the same: its later accesses there read live memory, which a GPU may show them
                # too (the value before that RMW would lack this program's own write, as the starting copy does)
                memory.observe(_addresses(ptrs, active))
                if acquires:
                    memory.acquire(ptrs, active, size, earlier)
            same = _note_rmw(memory, name, args, ptrs, stale, size)  # before its release, which publishes it
            if isinstance(ptrs, np.ndarray) and name in _WRITES:
                wrote = np.ones(ptrs.shape, np.bool_) if mask is None else np.broadcast_to(np.asarray(mask) != 0,
                                                                                        ptrs.shape)
                memory.note_atomic_write(ptrs, wrote if stale is None else wrote & ~stale, size, (kind, unused, same))
            if releases and isinstance(ptrs, np.ndarray):
                # a scalar atomic's release publishes its own write; a block atomic's lanes are threads of their own,
                # and one lane's release publishes no other lane's write (that lane's address is `observe`d instead)
                memory.release(ptrs, mask, size, upto=None if ptrs.size == 1 else before)
            memory.live = True  # an atomic reads live memory
            args, back = _lane_order(memory, args, lanes, mask_at)
            try:
                result = original(self, *args, **kwargs)
            finally:
                memory.live = False
            if back is not None and isinstance(getattr(result, "data", None), np.ndarray):
                result = type(result)(np.ascontiguousarray(result.data.reshape(-1)[back].reshape(result.data.shape)),
                                      result.dtype)
            if beaten is not None and isinstance(getattr(result, "data", None), np.ndarray):
                result = type(result)(_live_values(ptrs, beaten, result.data), result.dtype)
            # A scalar atomic runs on one lane and Triton broadcasts its result to the others through a barrier
            # (the last-block reduction's counter): what the program stored before is visible to all its lanes.
            # Only a result that is used is broadcast (red-team s19: `tl.atomic_add(dummy, 0)` as a statement in
            # place of tl.debug_barrier()). A block atomic is one per lane and orders nothing between lanes.
            if isinstance(ptrs, np.ndarray) and ptrs.size == 1 and not unused:
                memory.lane_barrier()
            if _wrote(name, args, same, result):
                _progress()
            return result
        call.__name__ = original.__name__
        return call

    barrier = getattr(builder, "create_barrier", None)

    def create_barrier(self: Any, *args: Any, **kwargs: Any) -> Any:
        memory = _MEMORY[0]
        _step(memory)
        if memory is not None:
            memory.lane_barrier()
        return barrier(self, *args, **kwargs) if barrier is not None else None

    if barrier is not None:
        create_barrier._kernelgym_memory = True  # type: ignore[attr-defined]
        builder.create_barrier = create_barrier
    for fn, name in ((masked_load, "create_masked_load"), (masked_store, "create_masked_store")):
        fn._kernelgym = True  # type: ignore[attr-defined]
        fn._kernelgym_memory = True  # type: ignore[attr-defined]
        fn.__name__ = name
        setattr(builder, name, fn)
    # (name, index of ptr, of mask, of sem, of the per-lane operands) in the builder's arguments after self
    for name, ptr_at, mask_at, sem_at, lanes in (("create_atomic_cas", 0, None, 3, (0, 1, 2)),
                                                 ("create_atomic_load", 0, 1, 2, ()),
                                                 ("create_atomic_store", 0, 2, 3, (0, 1, 2)),
                                                 ("create_atomic_poll", 0, None, 3, ()),
                                                 ("create_atomic_rmw", 1, 3, 4, (1, 2, 3))):
        if hasattr(builder, name):
            setattr(builder, name, ordering(getattr(builder, name), ptr_at, mask_at, sem_at, lanes))


def _step(memory: _LaunchMemory | None, wrote: bool = False) -> None:
    """Before a memory operation of an interleaved launch: the baton may pass (`interpreter_schedule`). Not inside an
    atomic (`live`: its own loads and stores), which acts at once."""
    schedule = interpreter_schedule.current()
    if schedule is None or memory is None or memory.live:
        return
    schedule.step()
    if wrote:
        schedule.progress()


def _progress() -> None:
    schedule = interpreter_schedule.current()
    if schedule is not None:
        schedule.progress()


def _wrote(name: str, args: tuple, same: bool, result: Any) -> bool:
    """Whether an atomic wrote memory (a spin's failing cas or `atomic_add(flag, 0)` did not): a hang's progress."""
    if name == "create_atomic_store":
        return True
    if name == "create_atomic_rmw":
        return _rmw_op(args) == "XCHG" or not same
    if name == "create_atomic_cas":
        old, cmp = getattr(result, "data", None), getattr(args[1], "data", None)
        return isinstance(old, np.ndarray) and isinstance(cmp, np.ndarray) and bool(np.any(old == cmp))
    return False


def _lane_order(memory: _LaunchMemory, args: tuple, lanes: tuple[int, ...], mask_at: int | None) -> tuple[tuple, Any]:
    """A block atomic's arguments with its lanes in a random order, and the order back for its result, when two of
    its active lanes act on one address; else unchanged and None. The interpreter applies a block atomic's lanes in
    row-major order, so the last lane's `atomic_xchg` stayed at an address many lanes exchanged into; on a GPU the
    lanes are threads of several warps and reach the address in no promised order (red-team s18: the s17 cumsum
    tile written to one address per column, by `atomic_xchg` instead of a store)."""
    if not lanes:
        return args, None
    ptrs = getattr(args[lanes[0]], "data", None)
    if not isinstance(ptrs, np.ndarray) or ptrs.size < 2:
        return args, None
    mask = getattr(args[mask_at], "data", None) if mask_at is not None and len(args) > mask_at else None
    addrs = _addresses(ptrs, mask)
    if np.unique(addrs).size == addrs.size:
        return args, None
    perm = memory.rng.permutation(ptrs.size)
    out = list(args)
    for i in lanes:
        data = getattr(args[i], "data", None)
        if isinstance(data, np.ndarray) and data.size == ptrs.size:
            out[i] = type(args[i])(np.ascontiguousarray(data).reshape(-1)[perm].reshape(data.shape), args[i].dtype)
        elif isinstance(data, np.ndarray) and data.size != 1:
            return args, None  # a layout this does not know: the interpreter's order stays
    return tuple(out), np.argsort(perm)


_READS = ("create_atomic_rmw", "create_atomic_cas", "create_atomic_load")  # atomics that return what they read
_WRITES = ("create_atomic_rmw", "create_atomic_cas", "create_atomic_store")  # atomics that write
# read-modify-writes two of which commute (`_LaunchMemory.reorderable`); 0: an exchange, a cas, another atomic
_RMW_KINDS = {"ADD": 1, "FADD": 2, "AND": 3, "OR": 4, "XOR": 5, "MAX": 6, "MIN": 7, "UMAX": 8, "UMIN": 9}
_UNUSED = [0]  # > 0 while an atomic call whose result the kernel discards runs (`_visit_expr`)


def _stale_atomic(memory: _LaunchMemory, name: str, args: tuple, ptr_at: int, size: int,
                  mask: Any = None) -> tuple[tuple, Any]:
    """An atomic's arguments with each lane whose element another program (or another lane of this one, no barrier
    since) stored plainly, unordered with it, pointed at the launch's starting copy where `_LaunchMemory.stale` draws
    that it comes first: the atomic came before that store on the GPU, so it reads what was there before and its
    write is overwritten by the store (and it acquires nothing there: it read no release). Likewise, at the lanes where
    it leaves the starting value unchanged (`_unchanged`: a read), over another program's unordered exchange or
    value-changing read-modify-write. Returns the arguments and the lanes pointed at the copy (None: none).
    Atomics read live memory, and one program after another a store was always before a later program's atomic, so
    reading a predecessor's result by `atomic_add(p, 0.0)` without waiting for it was exact on CPU (red-team s18: a
    dynamic-ticket scan, where tickets make the run order the data order). Drawn, not always: a spin on a flag
    another program sets by a plain store still ends."""
    if name not in _READS:
        return args, None
    ptrs = getattr(args[ptr_at], "data", None)
    if not isinstance(ptrs, np.ndarray) or not memory.stored:
        return args, None
    flat = ptrs.astype(np.uint64).ravel()
    active = (np.ones(flat.size, np.bool_) if mask is None
              else np.broadcast_to(np.asarray(mask) != 0, ptrs.shape).ravel())
    found = [(base, at) for base, at, _ in memory._unordered(flat, ptrs.shape, own_lanes=True, size=size)]
    writes = memory.unordered_exchanges(flat, size, rmws=True)
    if writes:
        # before another program's atomic write only where this one changes nothing: an RMW that wrote would have
        # changed what that write's RMW returned (a test-and-set lock taken twice), and RMWs of one address are
        # totally ordered. Tested at the starting copy's value, the one it reads there (red-team s19: and with all
        # ones, max with the minimum, a cas that never matches, an add of 0 whose masked-off lane adds 1)
        reads = _unchanged(memory, name, args, flat)
        found += [(base, at[reads[at]]) for base, at in writes]
    found = [(base, at[active[at]]) for base, at in found]  # a masked-off lane reads nothing
    if not any(at.size for _, at in found):
        return args, None
    out = flat.copy()
    stale = np.zeros(flat.size, dtype=np.bool_)
    copies = {region[0]: region[2] for region in memory.regions}
    places = np.unique(np.concatenate([at for _, at in found]))
    stale[places[memory.stale(flat[places])]] = True
    for base, at in found:
        moved_here = at[stale[at]]
        out[moved_here] = flat[moved_here] - np.uint64(base) + np.uint64(copies[base].ctypes.data)
    if not stale.any():
        return args, None
    moved = list(args)
    moved[ptr_at] = type(args[ptr_at])(out.reshape(ptrs.shape).astype(ptrs.dtype, copy=False), args[ptr_at].dtype)
    return tuple(moved), stale.reshape(ptrs.shape)


def _rmw_op(args: tuple) -> str:
    return getattr(args[0], "name", str(args[0]).rsplit(".", 1)[-1])


def _unchanged(memory: _LaunchMemory, name: str, args: tuple, flat: np.ndarray,
               starting: bool = True) -> np.ndarray:
    """Per lane of an atomic, whether it leaves the value at its address unchanged, tested on the starting copy's
    values (`starting`) or live memory's: an atomic load; an RMW other than an exchange that writes what was there
    (add / xor of 0, and with all ones, or / max / min that keep the value); a cas that does not match, or swaps in
    the value it compares. Masked-off lanes act on nothing. False where this cannot tell (unknown op, a value type
    of another size than the memory's, an address outside the launch's storages): a write, as before."""
    if name == "create_atomic_load":
        return np.ones(flat.size, dtype=np.bool_)
    no = np.zeros(flat.size, dtype=np.bool_)
    if name == "create_atomic_cas":
        cmp, val = getattr(args[1], "data", None), getattr(args[2], "data", None)
        if not isinstance(cmp, np.ndarray) or not isinstance(val, np.ndarray) or cmp.dtype.itemsize not in (1, 2, 4, 8):
            return no
        bits = np.dtype(f"u{cmp.dtype.itemsize}")
        old, known = memory.values(flat, bits, starting)
        want = np.broadcast_to(np.ascontiguousarray(cmp).view(bits), args[0].data.shape).ravel()
        new = np.broadcast_to(np.ascontiguousarray(val).view(bits), args[0].data.shape).ravel()
        return known & ((old != want) | (want == new))
    if name != "create_atomic_rmw":
        return no
    val = getattr(args[2], "data", None)
    if not isinstance(val, np.ndarray) or val.dtype.itemsize not in (1, 2, 4, 8):
        return no
    old, known = memory.values(flat, val.dtype, starting)
    v = np.broadcast_to(val, args[1].data.shape).ravel()
    op, bits = _rmw_op(args), np.dtype(f"u{val.dtype.itemsize}")
    with np.errstate(all="ignore"):
        if op in ("ADD", "FADD"):
            new = old + v
        elif op in ("AND", "OR", "XOR") and val.dtype.kind in "iub":
            new = {"AND": np.bitwise_and, "OR": np.bitwise_or, "XOR": np.bitwise_xor}[op](old, v)
        elif op in ("MAX", "MIN"):
            new = np.maximum(old, v) if op == "MAX" else np.minimum(old, v)
        elif op in ("UMAX", "UMIN") and val.dtype.kind in "iu":
            uo, uv = old.view(bits), np.ascontiguousarray(v).view(bits)
            new = (np.maximum(uo, uv) if op == "UMAX" else np.minimum(uo, uv)).view(val.dtype)
        else:  # an exchange is a write even of the same bits: its landing is drawn (`_exchange_landing`)
            return no
    new_bits = np.ascontiguousarray(new.astype(val.dtype, copy=False)).view(bits)
    same = known & (new_bits == np.ascontiguousarray(old).view(bits))
    mask = getattr(args[3], "data", None) if len(args) > 3 else None
    if isinstance(mask, np.ndarray):
        same |= ~np.broadcast_to(mask != 0, args[1].data.shape).ravel()
    return same


def _note_rmw(memory: _LaunchMemory, name: str, args: tuple, ptrs: Any, stale: Any, size: int) -> bool:
    """Note the active lanes of a read-modify-write (not an exchange: `_exchange_landing`) that change the live value,
    and were not placed before another program's store (`stale`), as this program's writes (`note_rmw`). Whether it
    changed nothing."""
    if name != "create_atomic_rmw" or _rmw_op(args) == "XCHG" or not isinstance(ptrs, np.ndarray):
        return False
    val = getattr(args[2], "data", None)
    if _rmw_op(args) in ("ADD", "FADD", "OR", "XOR") and isinstance(val, np.ndarray) and not np.any(val):
        return True  # the common read idiom (a spin's `atomic_add(flag, 0)`), without reading memory
    flat = ptrs.astype(np.uint64).ravel()
    changes = ~_unchanged(memory, name, args, flat, starting=False)
    mask = getattr(args[3], "data", None) if len(args) > 3 else None
    if isinstance(mask, np.ndarray):
        changes &= np.broadcast_to(mask != 0, ptrs.shape).ravel()
    if stale is not None:
        changes &= ~np.asarray(stale).ravel()
    if changes.any():
        memory.note_rmw(ptrs, changes.reshape(ptrs.shape), size)
    return not changes.any()


def _cta_scope(scope: Any) -> bool:
    """An atomic at scope "cta": morally strong only with the threads of its own CTA (program), so its acquire and
    release order nothing between programs (PTX memory model)."""
    return "CTA" in str(getattr(scope, "name", scope)).upper()




def _exchange_landing(memory: _LaunchMemory, name: str, args: tuple, ptr_at: int, mask_at: int | None,
                      size: int) -> tuple[tuple, Any]:
    """An atomic_xchg's or atomic_store's arguments with the lanes that do not land (`_LaunchMemory.exchange`)
    masked off, and those lanes (None: every lane lands, or not an exchange)."""
    if name == "create_atomic_cas":
        return _cas_landing(memory, args, size)
    if name == "create_atomic_rmw":
        if getattr(args[0], "name", str(args[0]).rsplit(".", 1)[-1]) != "XCHG":
            return args, None
    elif name != "create_atomic_store":
        return args, None
    ptrs = getattr(args[ptr_at], "data", None)
    if not isinstance(ptrs, np.ndarray) or mask_at is None or len(args) <= mask_at:
        return args, None
    mask = getattr(args[mask_at], "data", None)
    active = np.ones(ptrs.shape, np.bool_) if mask is None else np.broadcast_to(np.asarray(mask) != 0, ptrs.shape)
    lands = memory.exchange(ptrs, active, size)
    beaten = active & ~lands
    if not beaten.any():
        return args, None
    import triton.language as tl

    out = list(args)
    out[mask_at] = type(args[ptr_at])(np.ascontiguousarray(lands), tl.int1)
    return tuple(out), beaten


def _cas_landing(memory: _LaunchMemory, args: tuple, size: int) -> tuple[tuple, Any]:
    """A compare-and-swap that will match is noted as an exchange (`_LaunchMemory.exchange`, every lane landing), so
    that another program's atomic read of it may come before it (`_stale_atomic`) and a store over it may not land:
    "read live, then cas my value" was a store that always landed in run order (red-team s18:
    `rh08_mean_reduction_dim_atomic_total_cas_wins_s18`). Its own outcome is not drawn: a cas made to fail while the
    value it compares is there is no GPU execution (a slot claimed by cas would be skipped though free)."""
    ptrs, cmp = getattr(args[0], "data", None), getattr(args[1], "data", None)
    if not isinstance(ptrs, np.ndarray) or not isinstance(cmp, np.ndarray) or cmp.dtype.itemsize not in (1, 2, 4, 8):
        return args, None
    bits = np.dtype(f"u{cmp.dtype.itemsize}")
    want = np.ascontiguousarray(np.broadcast_to(cmp, ptrs.shape)).view(bits)
    live = _live_values(ptrs, np.ones(ptrs.shape, np.bool_), np.zeros(ptrs.shape, cmp.dtype)).view(bits)
    memory.exchange(ptrs, live == want, size, draw=False)
    return args, None


def _live_values(ptrs: np.ndarray, lanes: np.ndarray, result: np.ndarray) -> np.ndarray:
    """`result` with the value memory holds now at `ptrs` in `lanes`: what an exchange that did not land returns
    (it came before the one that stays; the one it would have returned was already handed out, run order)."""
    out = np.array(result, copy=True)
    flat, where = out.reshape(-1), np.nonzero(np.broadcast_to(lanes, out.shape).ravel())[0]
    addrs = np.broadcast_to(ptrs, out.shape).ravel()
    for i in where.tolist():
        buf = (ctypes.c_uint8 * out.dtype.itemsize).from_address(int(addrs[i]))
        flat[i] = np.frombuffer(buf, dtype=out.dtype)[0]
    return out


def _element_bytes(ptrs: Any, value: Any) -> int:
    """Bytes a store writes per address: the pointer's element type decides (the values' array may be of another
    numpy type than the memory, e.g. bf16 is held as uint16 bit patterns); else the values' own size."""
    try:
        return max(1, int(ptrs.get_element_ty().primitive_bitwidth) // 8)
    except (AttributeError, TypeError, ValueError):
        return int(np.dtype(getattr(value, "data", np.zeros(1, np.uint8)).dtype).itemsize)


def _storages(args: Any) -> list[tuple[int, int, Any]]:
    """(address, bytes, storage) of every storage among a launch's host arguments (tensors, tuples, descriptors)."""
    found: list[tuple[int, int, Any]] = []

    def visit(a: Any) -> None:
        if isinstance(a, (tuple, list)):
            for x in a:
                visit(x)
        elif hasattr(a, "untyped_storage"):
            st = a.untyped_storage()
            found.append((st.data_ptr(), st.nbytes(), st))
        elif hasattr(a, "base") and hasattr(a.base, "untyped_storage"):
            visit(a.base)

    visit(args)
    return found


# -- reshapes that may reorder -------------------------------------------------------------------------
def _reorderable_reshapes(builder: Any) -> None:
    """`tl.reshape(x, shape, can_reorder=True)` (and `tl.view`, which is that) and `tl.cat(a, b, can_reorder=True)`
    leave the order of the elements to the compiler: on a GPU it picks the result's layout so that no data moves
    between threads, and the elements come out permuted whenever the source layout is not row-major per thread
    (triton-lang/triton#2829, "`tl.view` is a footgun"). The interpreter reshaped and concatenated in order, so an
    answer that stored a `tl.view`-flattened tile at row-major offsets was exact on CPU and scrambled on a GPU
    (red-team s17). Here such a result is permuted: one permutation per launch and pair of shapes, so every tensor
    of a multi-input reduction (`tl.sum(x)` of a 2-D tile flattens with can_reorder) and every tensor an answer
    reshapes alike is permuted alike, and reshaping back undoes it, as the GPU's layouts do."""
    if builder is None:
        return
    for name in ("create_reshape", "create_cat"):
        original = getattr(builder, name, None)
        if original is None or getattr(original, "_kernelgym", False):
            continue
        setattr(builder, name, _reordering(original, name))


def _reordering(original: Callable[..., Any], name: str) -> Callable[..., Any]:
    def call(self: Any, *args: Any) -> Any:
        out = original(self, *args)
        memory = _MEMORY[0]
        data = getattr(out, "data", None)
        if memory is None or not isinstance(data, np.ndarray) or data.size < 2:
            return out
        if name == "create_reshape":
            src, shape, allow_reorder = args[0], args[1], args[2] if len(args) > 2 else False
            if not allow_reorder or tuple(np.shape(src.data)) == tuple(data.shape):
                return out
            perm = memory.reorder(tuple(np.shape(src.data)), tuple(data.shape))
        else:
            perm = memory.reorder(("cat", tuple(np.shape(args[0].data))), tuple(data.shape))
        return type(out)(np.ascontiguousarray(data.reshape(-1)[perm].reshape(data.shape)), out.dtype)

    call._kernelgym = True  # type: ignore[attr-defined]
    call.__name__ = name
    return call


# -- boolean operators ---------------------------------------------------------------------------
def _visit_bool_op(self: ast.NodeTransformer, node: ast.BoolOp) -> ast.AST:
    """`v1 and v2 ...` -> `_kernelgym_bool_op("and", lambda: v1, lambda: v2, ...)`: the operands stay
    lazy, so a constexpr operand still short-circuits the ones after it, as on the GPU."""
    node = self.generic_visit(node)
    no_args = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    thunks = [ast.Lambda(args=no_args, body=value) for value in node.values]
    op = ast.Constant("and" if isinstance(node.op, ast.And) else "or")
    call = ast.Call(func=ast.Name(id="_kernelgym_bool_op", ctx=ast.Load()), args=[op, *thunks], keywords=[])
    return ast.copy_location(call, node)


def _visit_expr(self: ast.NodeTransformer, node: ast.Expr) -> ast.AST:
    """`tl.atomic_*(...)` as a statement -> `_kernelgym_unused(lambda: tl.atomic_*(...))`: an atomic whose result the
    kernel discards (`_LaunchMemory.reorderable`). Only where no argument calls anything but a `tl.` builtin that is
    no atomic (a helper could run atomics whose results are used): elsewhere a result counts as used."""
    node = self.generic_visit(node)
    call = node.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr.startswith("atomic_")):
        return node
    for inner in ast.walk(ast.Module(body=[ast.Expr(a) for a in [*call.args, *(k.value for k in call.keywords)]],
                                     type_ignores=[])):
        if isinstance(inner, ast.Call) and not (isinstance(inner.func, ast.Attribute)
                                                and not inner.func.attr.startswith("atomic_")):
            return node
    no_args = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    wrapped = ast.Call(func=ast.Name(id="_kernelgym_unused", ctx=ast.Load()),
                       args=[ast.Lambda(args=no_args, body=call)], keywords=[])
    return ast.copy_location(ast.Expr(value=ast.copy_location(wrapped, call)), node)


def unused_result(thunk: Callable[[], Any]) -> Any:
    """Run an atomic whose result the kernel discards (`_visit_expr`)."""
    _UNUSED[0] += 1
    try:
        return thunk()
    finally:
        _UNUSED[0] -= 1


def bool_op(op: str, *thunks: Callable[[], Any]) -> Any:
    """The GPU front end's `and`/`or` (code_generator's boolean values): a constant operand decides by
    its truth (false ends an `and`, true an `or`) or drops out; the dynamic ones are all evaluated and
    combined element-wise, right to left; with none, the last operand."""
    import triton.language as tl

    dynamic: list[Any] = []
    value: Any = None
    for thunk in thunks:
        value = thunk()
        if isinstance(value, tl.tensor):
            dynamic.append(value)
            continue
        truth = bool(value.value if isinstance(value, tl.constexpr) else value)
        if truth is (op == "or"):
            return value
    if not dynamic:
        return value
    while len(dynamic) >= 2:
        rhs, lhs = dynamic.pop(), dynamic.pop()
        dynamic.append(lhs.logical_and(rhs) if op == "and" else lhs.logical_or(rhs))
    return dynamic[0]


# -- launches ------------------------------------------------------------------------------------
def program_order(grid: tuple[int, int, int], seed: int) -> np.ndarray:
    """Every program of `grid` once, as rows (x, y, z), in a shuffled order drawn from `seed`."""
    gx, gy, gz = grid
    flat = np.random.default_rng(seed).permutation(gx * gy * gz)
    x, rest = np.divmod(flat, gy * gz)
    y, z = np.divmod(rest, gz)
    return np.stack([x, y, z], axis=1)


def kernel_value(arg: Any) -> Any:
    """A launch argument as the kernel sees it: a Python float is an fp32 scalar, as the GPU launcher
    passes it; the rest as the interpreter converts them."""
    from triton.runtime import interpreter as interp

    if isinstance(arg, float):
        import triton.language as tl

        return tl.tensor(interp.TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
    if isinstance(arg, tuple) and hasattr(interp, "_tuple_create"):
        return interp._tuple_create(arg, [kernel_value(a) for a in arg])
    return interp._implicit_cvt(arg)


def _run_grid(self: Any, *args_dev: Any, **kwargs: Any) -> None:
    """`GridExecutor.__call__` with the GPU's launch semantics (module docstring): host copies of the
    arguments, pre-run hooks, the grid from the launch's own arguments, every program in a shuffled
    order with the converted arguments, the results copied back."""
    import triton
    from triton.runtime import interpreter as interp

    spec = inspect.getfullargspec(self.fn)
    kwargs = {k: v for k, v in kwargs.items() if k in spec.args or k in spec.kwonlyargs}
    args_hst, kwargs_hst = self._init_args_hst(args_dev, kwargs)
    for hook in self.pre_run_hooks:
        hook(*args_hst, **kwargs_hst)
    scope = interp._patch_lang(self.fn)
    try:
        bound = inspect.getcallargs(self.fn, *args_hst, **kwargs_hst)
        grid = self.grid(dict(bound)) if callable(self.grid) else self.grid
        grid = tuple(int(g) for g in grid)
        if len(grid) > 3:
            raise ValueError(f"a grid has at most 3 dimensions, not {len(grid)}")
        grid = grid + (1,) * (3 - len(grid))
        constexprs = set(getattr(self, "constexprs", ()))
        args = {name: arg if name in constexprs else kernel_value(arg) for name, arg in bound.items()}
        interp.interpreter_builder.set_grid_dim(*grid)
        _LAUNCHES[0] += 1
        memory = _LaunchMemory(_storages([args_hst, list(kwargs_hst.values())]), grid[0] * grid[1] * grid[2],
                               seed=_ORDER_SALT ^ _LAUNCHES[0])
        _MEMORY[0] = memory
        order = program_order(grid, _ORDER_SALT + _LAUNCHES[0]).tolist()
        _IN_PROGRAMS[0] += 1  # only now may a jit function be called: by a program, never by a grid or a hook
        try:
            if interpreter_schedule.enabled():
                _run_interleaved(self.fn, args, order, memory, seed=_ORDER_SALT ^ (_LAUNCHES[0] << 1))
            else:
                for i, (x, y, z) in enumerate(order):
                    interp.interpreter_builder.set_grid_idx(x, y, z)
                    memory.begin_program(i)
                    self.fn(**args)
            if memory.fault:  # caught inside the kernel (Python the GPU front end never saw): the launch faulted
                raise IllegalMemoryAccess(f"an illegal memory access was encountered ({memory.fault}, caught)")
        except Exception as e:
            if getattr(getattr(getattr(triton, "knobs", None), "compilation", None), "front_end_debugging", False):
                raise
            raise interp.InterpreterError(repr(e)) from e
        finally:
            _IN_PROGRAMS[0] -= 1
    finally:
        _MEMORY[0] = None
        scope.restore()
    self._restore_args_dev(args_dev, args_hst, kwargs, kwargs_hst)


# Launches whose programs are running (a count: under interleaving the programs are threads of the launch). A grid
# callable runs inside `run` too, before the programs: a launch counter let it call a jit function as host Python
# (red-team round s25).
_IN_PROGRAMS = [0]


def in_programs() -> bool | None:
    """Whether a launch's programs are running in this process; None where `install` did not take over the
    launches (an interpreter whose internals it does not know), so that callers fall back to their own count."""
    from triton.runtime import interpreter as interp

    return _IN_PROGRAMS[0] > 0 if getattr(interp.GridExecutor.__call__, "_kernelgym", False) else None


def _run_interleaved(fn: Callable[..., Any], args: dict[str, Any], order: list[list[int]], memory: _LaunchMemory,
                     seed: int) -> None:
    """The launch's programs at once, switching at their memory operations (`interpreter_schedule`): each program's
    grid index, memory view and unused-result depth move with it."""
    from triton.runtime import interpreter as interp

    builder = interp.interpreter_builder
    memory.interleaved = True

    def run(i: int) -> None:
        builder.set_grid_idx(*order[i])
        memory.begin_program(i)
        _UNUSED[0] = 0
        fn(**args)

    def save() -> tuple:
        return builder.grid_idx, memory.view(), _UNUSED[0]

    def restore(view: tuple) -> None:
        builder.grid_idx, held, _UNUSED[0] = view
        memory.restore_view(held)

    interpreter_schedule.run_interleaved(interpreter_schedule.Schedule(len(order), run, seed, save, restore))
    _UNUSED[0] = 0


__all__ = ["IllegalMemoryAccess", "bool_op", "check_bounds", "in_programs", "install", "kernel_value", "program_order",
           "unused_result"]
