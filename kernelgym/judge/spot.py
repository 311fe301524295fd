"""Which timed calls the judge checks in secret (RH-21), shared by the child that keeps their
outputs and the parent that checks which ones it kept.

The reported time is a median, so an answer gains only by skimping on more than half of its timed
calls; if the checked calls are a uniform sample of all of them it then escapes `SPOT_CHECKS`
checks with probability below 1 / 2**SPOT_CHECKS. With a time budget the number of calls is known
only when the measurement ends, so the sample is a reservoir filled while the calls run, from a
seed the parent reveals with the `time` request. Given the seed and the number of calls the
parent recomputes the sample, so the child cannot choose what it reports.

No imports beyond the standard library's typing: the child imports this before the answer, and
the generator is our own arithmetic (nothing an answer could patch in `random`).
"""

from __future__ import annotations

SPOT_CHECKS = 6
_MASK = (1 << 64) - 1


def spot_count(out_bytes: int, num_sets: int, max_message_bytes: int) -> int:
    """How many calls to keep: `SPOT_CHECKS`, fewer where the kept outputs and the `num_sets` final
    outputs would pass three quarters of the message limit (the reply carries them all at once;
    the child holds them in host memory until then)."""
    if out_bytes <= 0:
        return SPOT_CHECKS
    room = (max_message_bytes * 3 // 4) // out_bytes - num_sets
    return max(0, min(SPOT_CHECKS, room))


class SpotReservoir:
    """A uniform sample of `size` of the calls offered, in the order offered (reservoir sampling)."""

    def __init__(self, seed: int, size: int) -> None:
        self._state = seed & _MASK
        self.size = size
        self.kept: list[int] = []
        self.seen = 0

    def _below(self, n: int) -> int:
        """splitmix64, reduced to [0, n): the bias of the modulo is below n / 2**64."""
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return (z ^ (z >> 31)) % n

    def offer(self, call: int) -> int | None:
        """The slot `call` takes (replacing the call that held it), or None when it is not kept."""
        self.seen += 1
        if self.size <= 0:
            return None
        if len(self.kept) < self.size:
            self.kept.append(call)
            return len(self.kept) - 1
        slot = self._below(self.seen)
        if slot < self.size:
            self.kept[slot] = call
            return slot
        return None


def expected_spots(seed: int, size: int, first: int, varied: int) -> list[int]:
    """The calls a child keeps when it offers the `varied` calls numbered from `first`."""
    reservoir = SpotReservoir(seed, size)
    for call in range(first, first + varied):
        reservoir.offer(call)
    return sorted(reservoir.kept)


class FixedSpots:
    """The same sample as `SpotReservoir` when the number of calls is known before the first one (no
    time budget): only the calls finally kept are offered a slot, so each kept output is copied once,
    not once per reservoir replacement (~3x the copies at 50 calls: host copies inside the measurement)."""

    def __init__(self, seed: int, size: int, first: int, varied: int) -> None:
        self._slots = {call: i for i, call in enumerate(expected_spots(seed, size, first, varied))}
        self.size = size

    def offer(self, call: int) -> int | None:
        return self._slots.get(call)
