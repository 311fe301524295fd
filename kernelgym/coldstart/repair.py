"""Corruptions of a verified answer, for repair examples: the broken answer, the judge's real
feedback on it, then the fixed (verified) answer.

Each corruption is a mistake models make when writing Triton: a store without its mask, an
offset off by one, a missing store, a grid that forgets the tail, a typo that does not compile,
a `tl.constexpr` annotation left out. A corruption that does not apply to an answer returns None;
one whose result the judge still accepts is discarded by the caller.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable

Corruption = Callable[[str, random.Random], str | None]


def _kernel_spans(source: str) -> list[tuple[int, int]]:
    """(first body line, last line), 1-based, of every `@triton.jit` function with a `tl.store`."""
    tree = ast.parse(source)
    spans = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and "tl.store" in ast.get_source_segment(source, node):
            spans.append((node.body[0].lineno, node.end_lineno or node.body[-1].lineno))
    return spans


def _stores(source: str) -> list[ast.Call]:
    return [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
            and ast.unparse(n.func) == "tl.store"]


def drop_store_mask(source: str, rng: random.Random) -> str | None:
    stores = [s for s in _stores(source) if any(k.arg == "mask" for k in s.keywords)]
    if not stores:
        return None
    store = rng.choice(stores)
    lines = source.splitlines(keepends=True)
    if store.lineno != store.end_lineno:
        return None
    line = lines[store.lineno - 1]
    new = re.sub(r",\s*mask=[^,()]*(\([^()]*\))?[^,()]*\)", ")", line, count=1)
    if new == line:
        return None
    lines[store.lineno - 1] = new
    return "".join(lines)


def offset_off_by_one(source: str, rng: random.Random) -> str | None:
    lines = source.splitlines(keepends=True)
    spans = _kernel_spans(source)
    hits = [i for a, b in spans for i in range(a - 1, b) if re.search(r"=\s*.*tl\.arange\(0, \w+\)\s*$", lines[i])]
    if not hits:
        return None
    i = rng.choice(hits)
    lines[i] = lines[i].rstrip("\n") + " + 1\n"
    return "".join(lines)


def delete_store(source: str, rng: random.Random) -> str | None:
    stores = _stores(source)
    if not stores:
        return None
    store = rng.choice(stores)
    lines = source.splitlines(keepends=True)
    indent = re.match(r"\s*", lines[store.lineno - 1]).group(0)
    if not lines[store.lineno - 1].lstrip().startswith("tl.store("):
        return None
    # keep the block non-empty
    lines[store.lineno - 1:store.end_lineno] = [f"{indent}pass\n"]
    return "".join(lines)


def grid_without_tail(source: str, rng: random.Random) -> str | None:
    hits = list(re.finditer(r"triton\.cdiv\(([^,()]+), ([^()]+?)\)", source))
    if not hits:
        return None
    m = rng.choice(hits)
    return source[:m.start()] + f"{m.group(1)} // {m.group(2)}" + source[m.end():]


_TYPOS = {"tl.maximum(": "tl.maximun(", "tl.load(": "tl.laod(", "tl.arange(": "tl.arrange(", "tl.sum(": "tl.summ(",
          "tl.where(": "tl.wehre(", "tl.exp(": "tl.expp(", "tl.dot(": "tl.matmul("}


def api_typo(source: str, rng: random.Random) -> str | None:
    present = [k for k in _TYPOS if k in source]
    if not present:
        return None
    key = rng.choice(present)
    spots = [m.start() for m in re.finditer(re.escape(key), source)]
    at = rng.choice(spots)
    return source[:at] + _TYPOS[key] + source[at + len(key):]


def drop_constexpr(source: str, rng: random.Random) -> str | None:
    hits = list(re.finditer(r"(\w+): tl\.constexpr", source))
    used = [m for m in hits if re.search(rf"tl\.arange\(0, {m.group(1)}\)", source)]
    if not used:
        return None
    m = rng.choice(used)
    return source[:m.start()] + m.group(1) + source[m.end():]


CORRUPTIONS: dict[str, Corruption] = {
    "drop_store_mask": drop_store_mask,
    "offset_off_by_one": offset_off_by_one,
    "delete_store": delete_store,
    "grid_without_tail": grid_without_tail,
    "api_typo": api_typo,
    "drop_constexpr": drop_constexpr,
}


def corrupt(source: str, rng: random.Random) -> tuple[str, str] | None:
    """(corruption name, corrupted source) for one applicable corruption drawn by `rng`, or None."""
    names = list(CORRUPTIONS)
    rng.shuffle(names)
    for name in names:
        out = CORRUPTIONS[name](source, rng)
        if out is not None and out != source:
            return name, out
    return None
