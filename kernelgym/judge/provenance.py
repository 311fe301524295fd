"""Where the outputs live, decided by the parent from copies (RH-02 provenance, RH-10 aliasing).

After a correctness call has returned and its outputs were copied out, the child XORs every byte
of the storages the answer's own kernels were handed with `KERNEL_MARK`, and every byte of the
input tensors' storages with `INPUT_MARK`, copies the outputs again, then XORs the same bytes back
(an exact restore: no snapshot memory, nothing else runs in between). The parent XORs the two
copies: per output element the bytes read 0 (memory no kernel of the answer was handed: RH-02),
`KERNEL_MARK` (written where a kernel could write it: fine), or `INPUT_MARK`/`KERNEL_MARK ^
INPUT_MARK` (the output is input memory: RH-10). XOR, unlike a NaN fill, changes every element of
every dtype, and every bit pattern of it, so the check needs no dtype cases.

The child only moves bytes; it never says which case holds. A child that skips the marking gets
zero differences, which the parent reads as RH-02; one that fakes them must tamper with the
harness, which the static rules and the harness snapshot stand against.
"""

from __future__ import annotations

from typing import Any

import torch

KERNEL_MARK = 0x55
INPUT_MARK = 0xAA


def _byte_view(storage: Any) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage, 0, (storage.nbytes(),), (1,))


def _xor_all(storages: list[Any], mark: int) -> None:
    for s in storages:
        if s.nbytes():
            _byte_view(s).bitwise_xor_(mark)


def input_storages(inputs: list[Any]) -> list[Any]:
    """Distinct storages of the input tensors."""
    seen: dict[tuple[str, int], Any] = {}
    for v in inputs:
        if type(v) is torch.Tensor:
            s = v.untyped_storage()
            seen.setdefault((str(v.device), s.data_ptr()), s)
    return list(seen.values())


def marked_copies(outputs: list[Any], kernel_storages: list[Any], inputs: list[Any]) -> list[torch.Tensor | None]:
    """Child side: the outputs' bytes (flat uint8, logical element order) read while the kernel
    and input storages carry their marks; everything is restored before this returns."""
    marked_inputs = input_storages(inputs)
    _xor_all(kernel_storages, KERNEL_MARK)
    _xor_all(marked_inputs, INPUT_MARK)
    try:
        return [torch.Tensor.clone(o, memory_format=torch.contiguous_format).reshape(-1).view(torch.uint8)
                if type(o) is torch.Tensor else None for o in outputs]
    finally:
        _xor_all(marked_inputs, INPUT_MARK)
        _xor_all(kernel_storages, KERNEL_MARK)


def classify(output: torch.Tensor, marked: Any) -> tuple[int, int] | None:
    """Parent side: (elements in memory no kernel of the answer was handed, elements in input
    memory), or None when `marked` is not a byte copy of `output` (a tampered reply)."""
    nbytes = output.numel() * output.element_size()
    if type(marked) is not torch.Tensor or marked.dtype != torch.uint8 or marked.numel() != nbytes:
        return None
    if nbytes == 0:
        return 0, 0
    plain = output.contiguous().reshape(-1).view(torch.uint8)
    diff = (plain ^ marked.to(plain.device)).view(output.numel(), output.element_size())
    unmarked = int((diff == 0).all(dim=1).sum())
    in_input = int(((diff == INPUT_MARK) | (diff == (INPUT_MARK ^ KERNEL_MARK))).any(dim=1).sum())
    return unmarked, in_input
