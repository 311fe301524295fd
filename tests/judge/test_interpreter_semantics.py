"""Under the interpreter, kernels compute what the GPU computes: `and`/`or` between tensors, program
order, float scalar arguments, and what a grid callable sees (`kernelgym.judge.interpreter_semantics`).

Real kernels in this process under `TRITON_INTERPRET=1` after `make_interpreter_faithful()`.
"""

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from kernelgym.judge.interpreter import interpreting, make_interpreter_faithful
from kernelgym.judge.interpreter_semantics import program_order

pytestmark = pytest.mark.skipif(not interpreting(), reason="runs Triton's CPU interpreter")
make_interpreter_faithful()


@triton.jit
def window_copy(x_ptr, out_ptr, lo, hi, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    inside = (offs >= lo) and (offs < hi)  # the GPU: element-wise logical and
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=inside, other=-1.0), mask=offs < BLOCK)


@triton.jit
def window_outside(x_ptr, out_ptr, lo, hi, BLOCK: tl.constexpr, USE_HI: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    outside = (offs < lo) or (USE_HI and offs >= hi)  # a constexpr operand short-circuits its chain
    tl.store(out_ptr + offs, tl.where(outside, 1.0, 0.0), mask=offs < BLOCK)


def test_and_between_masks_is_element_wise_as_on_a_gpu():
    x = torch.arange(8.0)
    out = torch.zeros(8)
    window_copy[(1,)](x, out, 2, 6, BLOCK=8)
    # Python's `and` kept only `offs < hi` here: elements 0 and 1 were loaded too.
    assert out.tolist() == [-1.0, -1.0, 2.0, 3.0, 4.0, 5.0, -1.0, -1.0]


@pytest.mark.parametrize("use_hi, expected", [(True, [1, 1, 0, 0, 0, 0, 1, 1]), (False, [1, 1, 0, 0, 0, 0, 0, 0])])
def test_or_with_a_constexpr_operand(use_hi, expected):
    out = torch.zeros(8)
    window_outside[(1,)](torch.zeros(8), out, 2, 6, BLOCK=8, USE_HI=use_hi)
    assert out.tolist() == [float(v) for v in expected]


@triton.jit
def chained_prefix(out_ptr):
    # Racy on a GPU: reads the previous program's store without waiting for it.
    pid = tl.program_id(0)
    prev = tl.load(out_ptr + pid - 1, mask=pid > 0, other=0)
    tl.store(out_ptr + pid, prev + 1)


@triton.jit
def program_ids(out_ptr):
    pid = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    tl.store(out_ptr + pid, pid)


def test_a_scan_that_races_on_a_gpu_is_not_exact_here():
    out = torch.zeros(64, dtype=torch.int32)
    chained_prefix[(64,)](out)
    assert out.tolist() != list(range(1, 65))  # in index order it was exactly 1..64


def test_every_program_runs_once():
    out = torch.full((6 * 5,), -1, dtype=torch.int32)
    program_ids[(6, 5)](out)
    assert out.tolist() == list(range(30))


def test_program_order_is_a_seeded_permutation_of_the_grid():
    rows = program_order((4, 3, 2), seed=7)
    assert sorted(map(tuple, rows.tolist())) == [(x, y, z) for x in range(4) for y in range(3) for z in range(2)]
    assert np.array_equal(rows, program_order((4, 3, 2), seed=7))
    assert not np.array_equal(rows, program_order((4, 3, 2), seed=8))


@triton.jit
def scale_half(x_ptr, out_ptr, scale, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    s = scale.to(tl.float16)  # a float argument is an fp32 scalar on the GPU: it has `.to`
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * s.to(tl.float32), mask=m)


def test_a_float_argument_is_an_fp32_scalar():
    x = torch.ones(10)
    out = torch.zeros(10)
    scale = 1.0 + 2.0**-20  # fp32 keeps it; fp16 rounds it to 1.0
    scale_half[(1,)](x, out, scale, 10, BLOCK=16)
    assert torch.equal(out, torch.ones(10))


def test_a_grid_callable_gets_the_launch_arguments():
    x = torch.ones(100)
    out = torch.zeros(100)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (triton.cdiv(meta["x_ptr"].numel(), meta["BLOCK"]),)  # tensors and ints, as on a GPU

    scale_half[grid](x, out, 2.0, 100, BLOCK=32)
    assert isinstance(seen["x_ptr"], torch.Tensor) and seen["n"] == 100 and seen["BLOCK"] == 32
    assert torch.equal(out, torch.full((100,), 2.0))


@triton.jit
def rows_below(x_ptr, out_ptr, n, rows, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = (cols < n) & (row < rows)  # a block mask and a scalar condition: int1 on the GPU
    at = row * BLOCK + cols
    tl.store(out_ptr + at, tl.load(x_ptr + at, mask=mask, other=-1.0), mask=mask)


def test_a_block_mask_and_a_scalar_condition_mask_loads_and_stores():
    # The interpreter typed `row < rows` by its int32 operand and refused the load ("mask has unsupported
    # dtype", red-team s13); the GPU compiles it.
    x = torch.arange(32.0).reshape(4, 8)
    out = torch.zeros(4, 8)
    rows_below[(4,)](x, out, 6, 3, BLOCK=8)
    expected = torch.zeros(4, 8)
    expected[:3, :6] = x[:3, :6]
    assert torch.equal(out, expected)


# -- memory between the programs of one launch --------------------------------------------------------------
@triton.jit
def merge_plain(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # split-K by plain read-modify-write: programs of one launch overwrite each other's partial sums on a GPU
    pid = tl.program_id(0)
    part = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.store(out_ptr, tl.load(out_ptr) + part)


@triton.jit
def merge_atomic(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0))


@triton.jit
def merge_locked(x_ptr, out_ptr, lock_ptr, BLOCK: tl.constexpr):
    # the Triton tutorials' layer-norm backward: a plain read-modify-write under a spin lock
    pid = tl.program_id(0)
    part = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(out_ptr, tl.load(out_ptr) + part)
    tl.atomic_xchg(lock_ptr, 0)


@triton.jit
def own_store_reload(x_ptr, scratch_ptr, out_ptr, BLOCK: tl.constexpr):
    # a program reads back what it stored itself (a tile through scratch): exact on a GPU too
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(scratch_ptr + offs, tl.load(x_ptr + offs) * 2.0)
    tl.store(out_ptr + offs, tl.load(scratch_ptr + offs) + 1.0)


def test_a_plain_read_modify_write_across_programs_loses_updates_as_on_a_gpu():
    x = torch.ones(8 * 16)
    out = torch.zeros(1)
    merge_plain[(8,)](x, out, BLOCK=16)
    # one after another the programs summed exactly (128): the s14 red-team race passed on CPU
    assert out.item() == 16.0


def test_atomics_and_locks_still_merge_exactly():
    x = torch.ones(8 * 16)
    out = torch.zeros(1)
    merge_atomic[(8,)](x, out, BLOCK=16)
    assert out.item() == 128.0
    out, lock = torch.zeros(1), torch.zeros(1, dtype=torch.int32)
    merge_locked[(8,)](x, out, lock, BLOCK=16)
    assert out.item() == 128.0 and lock.item() == 0


def test_a_program_sees_its_own_stores_and_launches_see_each_other():
    x = torch.arange(64.0)
    scratch, out = torch.zeros(64), torch.zeros(64)
    own_store_reload[(4,)](x, scratch, out, BLOCK=16)
    assert torch.equal(out, x * 2 + 1)
    merge_plain[(1,)](x, out[:1], BLOCK=16)  # a later launch starts from what the earlier one left
    merge_plain[(1,)](x, out[:1], BLOCK=16)
    assert out[0].item() == 1.0 + 2 * float(x[:16].sum())


@triton.jit
def last_block_sum(x_ptr, part_ptr, count_ptr, out_ptr, BLOCK: tl.constexpr, NPROG: tl.constexpr):
    # CUDA's threadfence reduction: each program stores its partial, then an acq_rel counter add; the program
    # that counts last reads every partial (each released by its program's add, acquired by this one's). Exact
    # on a GPU; the partials read the launch's starting zeros here before the release/acquire model (red-team s16)
    pid = tl.program_id(0)
    tl.store(part_ptr + pid, tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0))
    if tl.atomic_add(count_ptr, 1) == NPROG - 1:
        tl.store(out_ptr, tl.sum(tl.load(part_ptr + tl.arange(0, NPROG)), axis=0))


@triton.jit
def wide_store_narrow_reload(wide_ptr, narrow_ptr):
    # one program stores an int64, then reads its high int32 through an int32 view of the same storage
    pid = tl.program_id(0)
    tl.store(wide_ptr + pid, (pid + 1).to(tl.int64) << 32)
    tl.store(wide_ptr + pid, tl.load(narrow_ptr + 2 * pid + 1).to(tl.int64))


@triton.jit
def merge_behind_unwaited_lock(x_ptr, out_ptr, lock_ptr, BLOCK: tl.constexpr):
    # racy on a GPU: the cas's result is never waited for, so it orders nothing (red-team rh08 s15)
    pid = tl.program_id(0)
    part = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.atomic_cas(lock_ptr, 0, 1)
    tl.store(out_ptr, tl.load(out_ptr) + part)


@triton.jit
def merge_inside_unwaited_chain(x_ptr, out_ptr, count_ptr, BLOCK: tl.constexpr):
    # racy on a GPU: an acquire and a release around a plain read-modify-write, but nothing waits
    pid = tl.program_id(0)
    part = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.atomic_add(count_ptr, 1)
    tl.store(out_ptr, tl.load(out_ptr) + part)
    tl.atomic_add(count_ptr, 0)


def test_a_last_block_reduction_behind_an_atomic_counter_sees_every_partial():
    x = torch.arange(8 * 16, dtype=torch.float32)
    part, count, out = torch.zeros(8), torch.zeros(1, dtype=torch.int32), torch.zeros(1)
    last_block_sum[(8,)](x, part, count, out, BLOCK=16, NPROG=8)
    assert out.item() == float(x.sum()) and count.item() == 8


def test_a_program_reads_its_own_store_through_a_narrower_view():
    wide = torch.zeros(4, dtype=torch.int64)
    wide_store_narrow_reload[(4,)](wide, wide.view(torch.int32))
    assert wide.tolist() == [1, 2, 3, 4]


def test_a_lock_no_program_waits_for_orders_nothing():
    x = torch.ones(8 * 16)
    out, lock = torch.zeros(1), torch.zeros(1, dtype=torch.int32)
    merge_behind_unwaited_lock[(8,)](x, out, lock, BLOCK=16)
    assert out.item() == 16.0


@triton.jit
def merge_between_own_flag_atomics(x_ptr, out_ptr, flags_ptr, BLOCK: tl.constexpr):
    # racy on a GPU: each program's atomics act on its own flag, so no acquire reads any other program's release
    pid = tl.program_id(0)
    part = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.atomic_add(flags_ptr + pid, 1)
    tl.store(out_ptr, tl.load(out_ptr) + part)
    tl.atomic_add(flags_ptr + pid, 0)


def test_atomics_on_other_elements_of_one_buffer_order_nothing():
    # release/acquire pair per address, not per storage (red-team s18): keyed by storage, each program's first
    # atomic acquired what every earlier one released in the flags buffer and the merge was exact (128)
    x = torch.ones(8 * 16)
    out, flags = torch.zeros(1), torch.zeros(8, dtype=torch.int32)
    merge_between_own_flag_atomics[(8,)](x, out, flags, BLOCK=16)
    assert out.item() == 16.0 and flags.tolist() == [1] * 8


@triton.jit
def exchange_lanes_into_one_address(out_ptr, old_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    tl.atomic_xchg(out_ptr + pid + 0 * lanes, lanes)
    tl.store(old_ptr + pid * BLOCK + lanes, tl.atomic_add(out_ptr + 8 + pid + 0 * lanes, 1))


def test_the_lanes_of_one_block_atomic_reach_an_address_in_no_fixed_order():
    # red-team s18: the interpreter applied a block atomic's lanes in row-major order, so the last lane's
    # atomic_xchg always stayed (a cumsum tile exchanged into one address per column "summed")
    out, old = torch.zeros(16, dtype=torch.int32), torch.zeros(8 * 16, dtype=torch.int32)
    exchange_lanes_into_one_address[(8,)](out, old, BLOCK=16)
    assert set(out[:8].tolist()) <= set(range(16)) and out[:8].tolist() != [15] * 8
    # an atomic's results go back to their own lanes: each lane got one of the values the address held, once
    assert out[8:].tolist() == [16] * 8
    assert all(sorted(row) == list(range(16)) for row in old.view(8, 16).tolist())
    assert old.view(8, 16).tolist() != [list(range(16))] * 8


@triton.jit
def exchange_running_total(x_ptr, acc_ptr, out_ptr, BLOCK: tl.constexpr):
    # racy on a GPU: every program exchanges its view of the running total, "the last exchange is complete"
    pid = tl.program_id(0)
    part = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.atomic_xchg(out_ptr, tl.atomic_add(acc_ptr, part) + part)


@triton.jit
def sum_behind_test_and_set_lock(x_ptr, out_ptr, lock_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    part = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    while tl.atomic_xchg(lock_ptr, 1) == 1:
        pass
    tl.store(out_ptr, tl.load(out_ptr) + part)
    tl.atomic_xchg(lock_ptr, 0)


def test_unordered_exchanges_of_two_programs_land_in_either_order():
    # red-team s18: one program after another, the program whose add came last also exchanged last, with the
    # complete total; here an exchange over another program's unordered one lands with probability 1/2
    x = torch.arange(1, 8 * 16 + 1, dtype=torch.int32)
    totals = []
    for _ in range(16):
        acc, out = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
        exchange_running_total[(8,)](x, acc, out, BLOCK=16)
        assert acc.item() == int(x.sum())
        totals.append(out.item())
    assert any(t != int(x.sum()) for t in totals)


def test_a_test_and_set_lock_by_exchange_still_orders_its_programs():
    x = torch.ones(8 * 16)
    out, lock = torch.zeros(1), torch.zeros(1, dtype=torch.int32)
    sum_behind_test_and_set_lock[(8,)](x, out, lock, BLOCK=16)
    assert out.item() == 128.0 and lock.item() == 0


@triton.jit
def ticket_chain_by_atomic_read(out_ptr, counter_ptr):
    # racy on a GPU: the predecessor (by ticket) may still be running when its result is read, nothing waits
    t = tl.atomic_add(counter_ptr, 1)
    prev = tl.zeros((), tl.int32)
    if t > 0:
        prev = tl.atomic_add(out_ptr + t - 1, 0)
    tl.store(out_ptr + t, prev + 1)


@triton.jit
def ticket_chain_spin_on_plain_flag(flag_ptr, counter_ptr):
    t = tl.atomic_add(counter_ptr, 1)
    if t > 0:
        while tl.atomic_add(flag_ptr + t - 1, 0) == 0:
            pass
    tl.store(flag_ptr + t, 1)


def test_an_atomic_read_of_an_unordered_plain_store_may_come_before_it():
    # red-team s18: atomics read live memory, and dynamic tickets make the run order the data order, so reading a
    # predecessor's plain store by an atomic without waiting was exact here (out == 1..16)
    out, counter = torch.zeros(16, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    ticket_chain_by_atomic_read[(16,)](out, counter)
    assert out.tolist() != list(range(1, 17)) and 1 in out.tolist()


def test_a_spin_on_a_flag_set_by_a_plain_store_still_ends():
    flags, counter = torch.zeros(16, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    ticket_chain_spin_on_plain_flag[(16,)](flags, counter)
    assert flags.tolist() == [1] * 16


@triton.jit
def ticket_chain_by_exchange(out_ptr, counter_ptr):
    # racy on a GPU: as ticket_chain_by_atomic_read, with each result published by an exchange
    t = tl.atomic_add(counter_ptr, 1)
    prev = tl.zeros((), tl.int32)
    if t > 0:
        prev = tl.atomic_add(out_ptr + t - 1, 0)
    tl.atomic_xchg(out_ptr + t, prev + 1)


def test_an_atomic_read_of_an_unordered_exchange_may_come_before_it():
    out, counter = torch.zeros(16, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    ticket_chain_by_exchange[(16,)](out, counter)
    assert out.tolist() != list(range(1, 17)) and 1 in out.tolist()


@triton.jit
def exchange_first_store_second(out_ptr, counter_ptr):
    # racy on a GPU: the exchange and the store are unordered, either may land last
    t = tl.atomic_add(counter_ptr, 1)
    if t == 0:
        tl.atomic_xchg(out_ptr, 1)
    else:
        tl.store(out_ptr, 2)


@triton.jit
def ticket_chain_exchange_plain_load(out_ptr, counter_ptr):
    t = tl.atomic_add(counter_ptr, 1)
    prev = tl.zeros((), tl.int32)
    if t > 0:
        prev = tl.load(out_ptr + t - 1)
    tl.atomic_xchg(out_ptr + t, prev + 1)


def test_a_plain_store_over_another_programs_exchange_lands_in_either_order():
    # red-team s18: exchanges were not noted as stores, so the store always landed over them
    finals = []
    for _ in range(16):
        out, counter = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
        exchange_first_store_second[(2,)](out, counter)
        finals.append(out.item())
    assert set(finals) == {1, 2}


def test_a_plain_load_of_another_programs_unordered_exchange_may_read_before_it():
    out, counter = torch.zeros(16, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    ticket_chain_exchange_plain_load[(16,)](out, counter)
    assert out.tolist() != list(range(1, 17)) and 1 in out.tolist()


@triton.jit
def store_by_cas(out_ptr, counter_ptr):
    # racy on a GPU: "read live, then cas my ticket" is a store that another program's may come before or after
    t = tl.atomic_add(counter_ptr, 1)
    tl.atomic_cas(out_ptr, tl.atomic_add(out_ptr, 0), t + 1)


@triton.jit
def claim_first_free_slot(slots_ptr):
    pid = tl.program_id(0)
    i = 0
    while tl.atomic_cas(slots_ptr + i, -1, pid) != -1:
        i += 1


def test_a_store_by_compare_and_swap_is_not_last_in_run_order():
    # red-team s18: one program after another the cas always matched what the program had just read
    finals = []
    for _ in range(8):
        out, counter = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
        store_by_cas[(8,)](out, counter)
        finals.append(out.item())
    assert any(f != 8 for f in finals)


def test_slots_claimed_by_compare_and_swap_are_each_taken_once():
    slots = torch.full((8,), -1, dtype=torch.int32)
    claim_first_free_slot[(8,)](slots)
    assert sorted(slots.tolist()) == list(range(8))


@triton.jit
def ticket_chain_read_by_unchanging_rmw(out_ptr, counter_ptr, MODE: tl.constexpr):
    # racy on a GPU: as ticket_chain_by_exchange, the predecessor's result read by an RMW that writes nothing
    t = tl.atomic_add(counter_ptr, 1)
    prev = tl.zeros((), tl.int32)
    if t > 0:
        if MODE == 0:
            prev = tl.atomic_and(out_ptr + t - 1, -1)
        elif MODE == 1:
            prev = tl.atomic_max(out_ptr + t - 1, -2147483648)
        elif MODE == 2:
            prev = tl.atomic_cas(out_ptr + t - 1, -7, -7)  # never matches: every value is positive or the zero fill
        else:
            two = tl.arange(0, 2)
            got = tl.atomic_add(out_ptr + t - 1 + two, two, mask=two == 0)  # the masked-off lane carries a 1
            prev = tl.sum(tl.where(two == 0, got, 0), axis=0)
    tl.atomic_xchg(out_ptr + t, prev + 1)


@pytest.mark.parametrize("mode", [0, 1, 2, 3], ids=["and_all_ones", "max_of_the_minimum", "cas_never_matching",
                                                    "add_zero_masked_lane_one"])
def test_an_rmw_that_changes_nothing_is_a_read_that_may_come_first(mode):
    # red-team s19: only an atomic load and add/or/xor of zero (at every lane, masked-off ones too) counted as reads,
    # so these read live memory in run order and the ticket chain was exact (1..16)
    out, counter = torch.zeros(18, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    ticket_chain_read_by_unchanging_rmw[(16,)](out, counter, MODE=mode)
    assert out[:16].tolist() != list(range(1, 17)) and 1 in out[:16].tolist()


@triton.jit
def ticket_chain_published_by_add(out_ptr, counter_ptr, ATOMIC_READ: tl.constexpr):
    # racy on a GPU: each result added into a zeroed slot, the predecessor's read without waiting
    t = tl.atomic_add(counter_ptr, 1)
    prev = tl.zeros((), tl.int32)
    if t > 0:
        if ATOMIC_READ:
            prev = tl.atomic_add(out_ptr + t - 1, 0)
        else:
            prev = tl.load(out_ptr + t - 1)
    tl.atomic_add(out_ptr + t, prev + 1)


@pytest.mark.parametrize("atomic_read", [True, False])
def test_a_value_changing_rmw_is_a_write_another_program_may_not_see_yet(atomic_read):
    # red-team s19: writing RMWs were no noted writes, so a read of a total published by atomic_add was always live
    out, counter = torch.zeros(16, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    ticket_chain_published_by_add[(16,)](out, counter, ATOMIC_READ=atomic_read)
    assert out.tolist() != list(range(1, 17)) and 1 in out.tolist()


@triton.jit
def ticket_chain_reread(out_ptr, counter_ptr, READS: tl.constexpr):
    # racy on a GPU: a fixed number of re-reads, keeping the first that is not the zero fill, is no wait
    t = tl.atomic_add(counter_ptr, 1)
    prev = tl.zeros((), tl.int32)
    if t > 0:
        prev = tl.atomic_add(out_ptr + t - 1, 0)
        for _ in range(READS - 1):
            prev = tl.where(prev != 0, prev, tl.atomic_add(out_ptr + t - 1, 0))
    tl.store(out_ptr + t, prev + 1)


def test_rereading_an_unordered_store_a_fixed_number_of_times_is_no_wait():
    # red-team s19: each read's stale draw was independent, so 20 reads were all stale with probability 2^-20; a
    # program's reads of one address now come before the write for a drawn number of reads, then after it for good
    broken = []
    for _ in range(2):
        out, counter = torch.zeros(64, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
        ticket_chain_reread[(64,)](out, counter, READS=20)
        broken.append(out.tolist() != list(range(1, 65)))
    assert any(broken)


@triton.jit
def rotate_through_global(buf_ptr, out_ptr, dummy_ptr, USED: tl.constexpr):
    offs = tl.arange(0, 16)
    tl.store(buf_ptr + offs, offs + 1)
    if USED:
        t = tl.atomic_add(dummy_ptr, 0)  # its result is broadcast to the lanes through a barrier
        tl.store(out_ptr + offs, tl.load(buf_ptr + (offs + 1) % 16) + t)
    else:
        tl.atomic_add(dummy_ptr, 0)  # racy on a GPU: an unused result is not broadcast, no barrier
        tl.store(out_ptr + offs, tl.load(buf_ptr + (offs + 1) % 16))


@pytest.mark.parametrize("used", [True, False])
def test_a_scalar_atomic_is_a_lane_barrier_only_when_its_result_is_used(used):
    buf, out = torch.zeros(16, dtype=torch.int32), torch.zeros(16, dtype=torch.int32)
    dummy = torch.zeros(1, dtype=torch.int32)
    rotate_through_global[(1,)](buf, out, dummy, USED=used)
    # another lane's store read without a barrier reads the launch's starting memory (red-team s16/s19)
    assert out.tolist() == (list(range(2, 17)) + [1] if used else [0] * 16)


@triton.jit
def last_block_sum_cta_ticket(x_ptr, part_ptr, count_ptr, out_ptr, BLOCK: tl.constexpr, NPROG: tl.constexpr):
    # racy on a GPU: last_block_sum with its counter at scope "cta", which orders nothing between programs
    pid = tl.program_id(0)
    tl.store(part_ptr + pid, tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0))
    if tl.atomic_add(count_ptr, 1, scope="cta") == NPROG - 1:
        tl.store(out_ptr, tl.sum(tl.load(part_ptr + tl.arange(0, NPROG)), axis=0))


def test_a_cta_scope_atomic_orders_nothing_between_programs():
    x = torch.ones(8 * 16)
    part, count, out = torch.zeros(8), torch.zeros(1, dtype=torch.int32), torch.zeros(1)
    last_block_sum_cta_ticket[(8,)](x, part, count, out, BLOCK=16, NPROG=8)
    assert count.item() == 8 and out.item() == 16.0  # its own partial only (red-team s19)


@triton.jit
def merge_after_reading_every_flag(x_ptr, out_ptr, flags_ptr, BLOCK: tl.constexpr, NPROG: tl.constexpr):
    # racy on a GPU: "acquire" every program's flag with one block atomic, wait for none, merge plainly, release
    pid = tl.program_id(0)
    part = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.atomic_add(flags_ptr + tl.arange(0, NPROG), tl.zeros((NPROG,), tl.int32))
    tl.store(out_ptr, tl.load(out_ptr) + part)
    tl.atomic_add(flags_ptr + pid, 1)


def test_a_block_acquire_orders_only_the_releases_its_lanes_read():
    # red-team s19: a block release merged every lane's earlier releases into each byte, and the flags' adds were no
    # noted writes, so each program acquired every earlier program's merge and the sum was exact (128)
    x = torch.ones(8 * 16)
    totals = []
    for _ in range(4):
        out, flags = torch.zeros(1), torch.zeros(8, dtype=torch.int32)
        merge_after_reading_every_flag[(8,)](x, out, flags, BLOCK=16, NPROG=8)
        assert flags.tolist() == [1] * 8
        totals.append(out.item())
    assert any(t != 128.0 for t in totals)


@triton.jit
def last_block_mean_of_atomic_accumulators(x_ptr, acc_ptr, count_ptr, out_ptr, BLOCK: tl.constexpr,
                                           NPROG: tl.constexpr):
    # exact on a GPU: every program adds into the accumulators, then takes an acq_rel ticket; the last reads them
    pid = tl.program_id(0)
    cols = tl.arange(0, 8)
    rows = tl.arange(0, BLOCK)[:, None]
    tl.atomic_add(acc_ptr + cols, tl.sum(tl.load(x_ptr + pid * BLOCK * 8 + rows * 8 + cols[None, :]), axis=0))
    if tl.atomic_add(count_ptr, 1) == NPROG - 1:
        tl.store(out_ptr + cols, tl.atomic_add(acc_ptr + cols, tl.zeros((8,), tl.float32)) / NPROG)


def test_atomic_accumulators_read_behind_a_ticket_are_complete():
    # the accumulators' adds are noted writes now, and the ticket orders each before the last program's read
    x = torch.ones(8 * 16 * 8)
    for _ in range(4):
        acc, count, out = torch.zeros(8), torch.zeros(1, dtype=torch.int32), torch.zeros(8)
        last_block_mean_of_atomic_accumulators[(8,)](x, acc, count, out, BLOCK=16, NPROG=8)
        assert out.tolist() == [16.0] * 8


def test_an_unwaited_acquire_release_chain_orders_nothing():
    # red-team s16/s19: one program after another, each acquire read the previous program's release; here an RMW
    # whose result goes unused may come before another program's unused one in the counter's modification order
    x = torch.ones(8 * 16)
    totals = []
    for _ in range(4):
        out, count = torch.zeros(1), torch.zeros(1, dtype=torch.int32)
        merge_inside_unwaited_chain[(8,)](x, out, count, BLOCK=16)
        assert count.item() == 8
        totals.append(out.item())
    assert any(t != 128.0 for t in totals)


@triton.jit
def merge_atomic_read_columns(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # racy on a GPU: the read is atomic, the write plain; concurrent programs overwrite each other
    pid = tl.program_id(0)
    cols = tl.arange(0, 32)
    part = tl.sum(tl.load(x_ptr + pid * BLOCK * 32 + tl.arange(0, BLOCK)[:, None] * 32 + cols[None, :]), axis=0)
    tl.store(out_ptr + cols, tl.atomic_add(out_ptr + cols, 0.0) + part)


def test_an_atomic_read_of_plain_stores_does_not_merge_exactly():
    # the atomic read sees the other programs' plain stores (atomics act on live memory), but those stores are not
    # ordered before this program's plain store, which lands or not at random (red-team s17: either may come last
    # on a GPU): some columns lose updates
    x = torch.ones(8 * 16 * 32)
    out = torch.zeros(32)
    merge_atomic_read_columns[(8,)](x, out, BLOCK=16)
    assert out.tolist() != [128.0] * 32


@triton.jit
def merge_through_offset(x_ptr, delta, BLOCK: tl.constexpr):
    # racy on a GPU: the split-K plain merge into a buffer that is no argument, reached as x_ptr + delta
    pid = tl.program_id(0)
    part = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.store(x_ptr + delta, tl.load(x_ptr + delta) + part)


# a storage reached by pointer arithmetic from another argument is no storage of the launch: a GPU faults there, and
# so does the interpreter (red-team round s28; the interleaved schedule made such a merge lose updates since s16)
def test_a_merge_into_a_storage_no_argument_names_faults():
    x, out = torch.ones(8 * 16), torch.zeros(1)
    delta, rest = divmod(out.data_ptr() - x.data_ptr(), 4)
    assert rest == 0
    with pytest.raises(Exception, match="illegal memory access"):
        merge_through_offset[(8,)](x, delta, BLOCK=16)
    assert out.item() == 0.0


# -- bfloat16 ------------------------------------------------------------------------------------
# The interpreter holds bf16 as uint16 bit patterns; it used to compute on the patterns (`maximum(v, 0)`
# returned v, `v * 2` zeros) and to truncate fp32 -> bf16. A GPU computes in fp32 and rounds to nearest even,
# as torch does on bf16 CPU tensors: elementwise results must match torch bit for bit.
@triton.jit
def bf16_elementwise(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(x_ptr + o)
    y = tl.load(y_ptr + o)
    tl.store(out_ptr + 0 * N + o, tl.maximum(x, 0.0))
    tl.store(out_ptr + 1 * N + o, x + y)
    tl.store(out_ptr + 2 * N + o, x * 2.0)
    tl.store(out_ptr + 3 * N + o, x / y)  # the front end divides in fp32: the store rounds it to bf16
    tl.store(out_ptr + 4 * N + o, tl.where(x < y, x, y))
    tl.store(out_ptr + 5 * N + o, x - y * y)
    tl.store(out_ptr + 6 * N + o, -x)
    tl.store(out_ptr + 7 * N + o, tl.minimum(x, y))
    tl.store(out_ptr + 8 * N + o, x.to(tl.int32).to(tl.bfloat16))


def _bf16_pair(n: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(7)
    x = (torch.randn(n, generator=g) * 3).to(torch.bfloat16)
    y = (torch.randn(n, generator=g) * 3).to(torch.bfloat16)
    y[:4] = x[:4]  # ties for the comparison
    x[4:8] = torch.tensor([-1.5, 2.0, -0.25, 3.0])  # the values the bug report used
    return x, y


def test_bf16_elementwise_matches_torch_bit_for_bit():
    x, y = _bf16_pair()
    out = torch.zeros(9, x.numel(), dtype=torch.bfloat16)
    bf16_elementwise[(1,)](x, y, out, N=x.numel())
    expected = [torch.clamp_min(x, 0.0), x + y, x * 2.0, x / y, torch.where(x < y, x, y), x - y * y, -x,
                torch.minimum(x, y), x.to(torch.int32).to(torch.bfloat16)]
    for i, want in enumerate(expected):
        assert torch.equal(out[i], want), (i, out[i][:8], want[:8])


@triton.jit
def bf16_exp_and_sum(x_ptr, out_ptr, sum_ptr, max_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(x_ptr + o)
    # tl.exp refuses bf16 on the GPU as here (libdevice's fp32/fp64 only): answers widen and narrow.
    tl.store(out_ptr + o, tl.exp(x.to(tl.float32)).to(tl.bfloat16))
    tl.store(sum_ptr, tl.sum(x, axis=0))  # a bf16 reduction (tl.sum keeps bf16)
    tl.store(max_ptr, tl.argmax(x, axis=0))


def test_bf16_exp_and_reductions_match_torch():
    x, _ = _bf16_pair()
    x = x - 1.0  # mostly negative: ordering bit patterns as integers got argmax wrong
    out = torch.zeros_like(x)
    total = torch.zeros(1, dtype=torch.bfloat16)
    at = torch.zeros(1, dtype=torch.int32)
    bf16_exp_and_sum[(1,)](x, out, total, at, N=x.numel())
    # exp: numpy's and torch's fp32 exp may differ in the last fp32 bit, which can move a bf16 tie by an ulp.
    torch.testing.assert_close(out, torch.exp(x), rtol=8e-3, atol=0)
    # sum: here one rounding of an fp32 sum, a GPU rounds along its reduction tree: bf16 tolerance.
    torch.testing.assert_close(total[0], x.sum(), rtol=2e-2, atol=2e-2)
    assert at.item() == int(torch.argmax(x.float()))


@triton.jit
def bf16_dot(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tile = r[:, None] * N + r[None, :]
    tl.store(out_ptr + tile, tl.dot(tl.load(a_ptr + tile), tl.load(b_ptr + tile)))


def test_bf16_dot_multiplies_values_not_bit_patterns():
    g = torch.Generator().manual_seed(3)
    a, b = (torch.randn(16, 16, generator=g).to(torch.bfloat16) for _ in range(2))
    out = torch.zeros(16, 16)
    bf16_dot[(1,)](a, b, out, N=16)
    # bf16 products are exact in fp32; only the order of the fp32 sums may differ from torch's.
    torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-5, atol=1e-5)


@triton.jit
def float_ops(x_ptr, y_ptr, out_ptr, sum_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(x_ptr + o)
    y = tl.load(y_ptr + o)
    tl.store(out_ptr + 0 * N + o, tl.maximum(x, 0.0))
    tl.store(out_ptr + 1 * N + o, x + y)
    tl.store(out_ptr + 2 * N + o, x * y)
    tl.store(out_ptr + 3 * N + o, tl.where(x < y, x, y))
    tl.store(out_ptr + 4 * N + o, -x)
    tl.store(out_ptr + 5 * N + o, tl.fma(x, y, x))
    tl.store(sum_ptr, tl.sum(x, axis=0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_fp16_and_fp32_compute_as_numpy_did(dtype):
    # The bf16 patch leaves other float types to the interpreter's numpy arithmetic, bit for bit.
    x, y = (t.to(dtype) for t in _bf16_pair())
    out = torch.zeros(6, x.numel(), dtype=dtype)
    total = torch.zeros(1, dtype=dtype)
    float_ops[(1,)](x, y, out, total, N=x.numel())
    a, b = x.numpy(), y.numpy()
    fma = (np.multiply(a, b, dtype=np.float64) + a).astype(a.dtype) if dtype == torch.float16 else None
    expected = [np.maximum(a, a.dtype.type(0)), a + b, a * b, np.where(a < b, a, b), -a, fma]
    for i, want in enumerate(expected):
        if want is not None:  # fp32 fma: the interpreter's own single-rounding fma, not numpy's
            assert np.array_equal(out[i].numpy(), want), i
    assert total.numpy()[0] == np.sum(a)


BF16_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)


def get_inputs():
    return [torch.randn(4096, dtype=torch.bfloat16), torch.randn(4096, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
"""

BF16_ANSWER = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    s = tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m)  # in bf16, as the task's dtype
    tl.store(out_ptr + offs, tl.maximum(s, 0.0), mask=m)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        add_relu[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
        return out
"""


def test_judge_accepts_an_honest_bf16_answer():
    from kernelgym.judge import JudgeConfig, Status, judge
    from kernelgym.tasks.task import Task

    result = judge(Task(task_id="bf16_add_relu", source=BF16_TASK), BF16_ANSWER,
                   JudgeConfig(device="cpu", timeout_s=120))
    assert result.status == Status.OK, result


@triton.jit
def scan_in_one_program(x_ptr, out_ptr, BLOCK: tl.constexpr, LOG2: tl.constexpr, BARRIER: tl.constexpr):
    # a Hillis-Steele scan through global memory in ONE program: each round reads other lanes' elements back.
    # Without tl.debug_barrier() the GPU's threads race (triton-lang/triton#1097, #1615); the interpreter's
    # whole-block numpy loads and stores made it exact (red-team s16)
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + cols, tl.load(x_ptr + cols))
    if BARRIER:
        tl.debug_barrier()
    for s in tl.static_range(LOG2):
        v = tl.load(out_ptr + cols)
        u = tl.load(out_ptr + cols - (1 << s), mask=cols >= (1 << s), other=0.0)
        if BARRIER:
            tl.debug_barrier()
        tl.store(out_ptr + cols, v + u)
        if BARRIER:
            tl.debug_barrier()


def test_a_scan_across_lanes_without_a_barrier_is_not_exact_here():
    x = torch.ones(64)
    out = torch.zeros(64)
    scan_in_one_program[(1,)](x, out, BLOCK=64, LOG2=6, BARRIER=False)
    assert out.tolist() != list(range(1, 65))
    out = torch.zeros(64)
    scan_in_one_program[(1,)](x, out, BLOCK=64, LOG2=6, BARRIER=True)  # honest: barriers order the lanes
    assert out.tolist() == list(range(1, 65))


# -- write-write races (red-team s17) --------------------------------------------------------------------------
@triton.jit
def every_program_stores_its_view(x_ptr, acc_ptr, out_ptr, BLOCK: tl.constexpr):
    # racy on a GPU: the atomic adds are right, but every program then stores the totals it saw, and the plain
    # stores of the programs to `out` are unordered: the one that lands last may have seen only part of the sum
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.atomic_add(acc_ptr + cols, tl.load(x_ptr + pid * BLOCK + cols))
    tl.store(out_ptr + cols, tl.load(acc_ptr + cols))


@triton.jit
def lanes_store_one_address(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # racy on a GPU: every lane stores its running sum to out[0]; which lane's store lands is undefined
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + 0 * cols, tl.cumsum(tl.load(x_ptr + cols), axis=0))


@triton.jit
def lanes_store_one_value(out_ptr, value, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + 0 * cols, tl.zeros([BLOCK], tl.float32) + value)  # one value from every lane: no race
    tl.store(out_ptr + 1 + cols % 2, tl.zeros([BLOCK], tl.float32) + value + 1.0)


def test_unordered_stores_of_programs_do_not_land_in_run_order():
    # one after another, the last store was the last atomic's complete total (8 per column): exact on CPU only.
    # Each launch draws its own order (seeded by the process's launch count), and one interleaving in which every
    # atomic ran before every load gives the totals too: over three launches, not every one may (CI saw one such).
    outs = []
    for _ in range(3):
        x = torch.ones(8 * 32)
        acc, out = torch.zeros(32), torch.zeros(32)
        every_program_stores_its_view[(8,)](x, acc, out, BLOCK=32)
        assert acc.tolist() == [8.0] * 32 and set(out.tolist()) <= set(range(1, 9))
        outs.append(out.tolist())
    assert outs != [[8.0] * 32] * 3


def test_lanes_storing_one_address_do_not_land_in_block_order():
    x = torch.ones(64)
    seen = []
    for _ in range(3):
        out = torch.zeros(1)
        lanes_store_one_address[(1,)](x, out, BLOCK=64)
        seen.append(out.item())
    # numpy's store let the last lane win, the one holding the total (64.0), every time
    assert seen != [64.0] * 3 and all(v in range(1, 65) for v in seen)


def test_lanes_storing_one_value_to_one_address_still_store_it():
    out = torch.zeros(3)
    lanes_store_one_value[(1,)](out, 2.5, BLOCK=64)
    assert out.tolist() == [2.5, 3.5, 3.5]


@triton.jit
def lanes_store_one_address_in_turn(x_ptr, out_ptr, BLOCK: tl.constexpr, BARRIER: tl.constexpr):
    # racy on a GPU without barriers: round r stores lane (c, r)'s running sum to out[c]; lane r is another thread
    # each round, and nothing orders stores of different threads (red-team s17)
    cols = tl.arange(0, 32)
    rows = tl.arange(0, BLOCK)
    run = tl.cumsum(tl.load(x_ptr + cols[:, None] * BLOCK + rows[None, :]), axis=1)
    for r in range(BLOCK):
        tl.store(out_ptr + cols[:, None] + 0 * rows[None, :], run, mask=rows[None, :] == r)
        if BARRIER:
            tl.debug_barrier()


def test_stores_of_other_lanes_to_one_address_do_not_land_in_program_order():
    x = torch.ones(32 * 16)
    out = torch.zeros(32)
    lanes_store_one_address_in_turn[(1,)](x, out, BLOCK=16, BARRIER=False)
    # in program order the last round (16.0) won everywhere; either store may land last on a GPU
    assert out.tolist() != [16.0] * 32 and out.tolist() != [1.0] * 32 and set(out.tolist()) <= set(range(1, 17))
    lanes_store_one_address_in_turn[(1,)](x, out, BLOCK=16, BARRIER=True)  # honest: barriers order the rounds
    assert out.tolist() == [16.0] * 32


# -- reshapes that may reorder (red-team s17) ------------------------------------------------------------------
@triton.jit
def reorderable_reshapes(x_ptr, flat_ptr, back_ptr, stats_ptr, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)
    c = tl.arange(0, BN)
    offs2 = r[:, None] * BN + c[None, :]
    tile = tl.load(x_ptr + offs2)
    flat = tl.view(tile, (BM * BN,))  # the order is the compiler's on a GPU
    tl.store(flat_ptr + tl.arange(0, BM * BN), flat)
    tl.store(back_ptr + offs2, tl.reshape(flat, (BM, BN), can_reorder=True))  # and back: the same layouts
    both = tl.view(tile * 2.0, (BM * BN,))  # a second tensor reshaped alike is reordered alike
    tl.store(stats_ptr, tl.sum(tl.where(both == flat * 2.0, 1.0, 0.0)))
    tl.store(stats_ptr + 1, tl.max(tl.view(tile, (BN, BM)), axis=None))


def test_a_reorderable_reshape_does_not_keep_the_order():
    x = torch.randperm(256).float()
    flat, back, stats = torch.zeros(256), torch.zeros(256), torch.zeros(2)
    reorderable_reshapes[(1,)](x, flat, back, stats, BM=16, BN=16)
    # numpy kept the order, so a tl.view-flattened tile stored at row-major offsets was exact on CPU only
    assert not torch.equal(flat, x) and torch.equal(flat.sort().values, x.sort().values)
    assert torch.equal(back, x)
    assert stats.tolist() == [256.0, 255.0]


# -- every byte of an element (red-team s17) --------------------------------------------------------------------
@triton.jit
def merge_behind_own_first_byte(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # racy on a GPU: the split-K plain merge, each program first storing byte 0 of `out` itself (a zero: the sums
    # are small integers, whose fp64 low byte is zero) so that the element's first byte is its own store
    pid = tl.program_id(0)
    part = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0).to(tl.float64)
    tl.store(out_ptr.to(tl.pointer_type(tl.uint8)), tl.zeros([], tl.uint8))
    tl.store(out_ptr, tl.load(out_ptr) + part)


def test_an_own_store_over_the_first_byte_does_not_make_the_element_live():
    x = torch.ones(8 * 16)
    out = torch.zeros(1, dtype=torch.float64)
    merge_behind_own_first_byte[(8,)](x, out, BLOCK=16)
    assert out.item() != 128.0


@triton.jit
def every_program_stores_its_view_twice(x_ptr, acc_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.atomic_add(acc_ptr + cols, tl.load(x_ptr + pid * BLOCK + cols))
    total = tl.load(acc_ptr + cols)
    tl.store(out_ptr + cols, total)
    tl.store(out_ptr + cols, total)  # a second store over its own must not land for sure (red-team s17)
    tl.store(out_ptr + 32 + cols, (tl.load(out_ptr + cols) == total).to(tl.float32))


def test_storing_twice_does_not_line_up_the_run_order_again():
    x = torch.ones(8 * 32)
    acc, out = torch.zeros(32), torch.zeros(64)
    every_program_stores_its_view_twice[(8,)](x, acc, out, BLOCK=32)
    assert out[:32].tolist() != [8.0] * 32 and set(out[:32].tolist()) <= set(range(1, 9))


# -- accesses outside the launch's storages (red-team round s28) ----------------------------------------------------
@triton.jit
def load_at_offset(x_ptr, out_ptr, off, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + cols, tl.load(x_ptr + off + cols, mask=cols < n, other=0.0), mask=cols < BLOCK)


@triton.jit
def store_at_offset(out_ptr, off, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + off + cols, tl.full([BLOCK], 1.0, tl.float32))


@triton.jit
def atomic_at_offset(out_ptr, off, KIND: tl.constexpr):
    if KIND == 0:
        tl.atomic_add(out_ptr + off, 1.0)
    elif KIND == 1:
        tl.atomic_cas(out_ptr.to(tl.pointer_type(tl.int32)) + off, 0, 1)
    elif KIND == 2:
        tl.atomic_xchg(out_ptr.to(tl.pointer_type(tl.int32)) + off, 2)
    else:
        tl.atomic_max(out_ptr + off, 3.0)


@triton.jit
def descriptor_copy(x_ptr, out_ptr, rows, ROWS: tl.constexpr, COLS: tl.constexpr):
    # a device-side descriptor whose shape claims more rows than the tensor has
    src = tl.make_tensor_descriptor(x_ptr, shape=[rows, COLS], strides=[COLS, 1], block_shape=[ROWS, COLS])
    tl.store(out_ptr + tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :], src.load([0, 0]))


def _faults(call) -> str:
    with pytest.raises(Exception) as info:
        call()
    return repr(info.value)


def test_a_load_outside_every_storage_of_the_launch_faults():
    x, out = torch.arange(16.0), torch.zeros(16)
    host = torch.arange(64.0)  # another tensor of this process, not given to the launch
    off = (host.data_ptr() - x.data_ptr()) // 4
    assert "illegal memory access" in _faults(lambda: load_at_offset[(1,)](x, out, off, 16, BLOCK=16))
    assert out.tolist() == [0.0] * 16  # nothing read from the host tensor


@triton.jit
def word_of_bytes(x_ptr, out_ptr, at):
    tl.store(out_ptr, tl.load(x_ptr.to(tl.pointer_type(tl.float32)) + at))


def test_the_whole_element_must_lie_inside_a_storage():
    x, out = torch.zeros(6, dtype=torch.uint8), torch.ones(1)
    word_of_bytes[(1,)](x, out, 0)  # bytes 0..3
    assert out.item() == 0.0
    # bytes 4..7: the element starts inside the 6-byte storage and ends past it
    assert "illegal memory access" in _faults(lambda: word_of_bytes[(1,)](x, out, 1))


def test_masked_off_lanes_may_point_anywhere():
    x, out = torch.arange(16.0), torch.zeros(16)
    load_at_offset[(1,)](x, out, 1 << 40, 0, BLOCK=16)  # every lane masked off: no access
    assert out.tolist() == [0.0] * 16
    load_at_offset[(1,)](x, out, 8, 8, BLOCK=16)  # lanes 8..15 would read past x: masked off
    assert out.tolist() == [float(v) for v in range(8, 16)] + [0.0] * 8


def test_a_store_outside_the_launch_faults_and_writes_nothing():
    out, host = torch.zeros(16), torch.zeros(16)
    off = (host.data_ptr() - out.data_ptr()) // 4
    assert "illegal memory access" in _faults(lambda: store_at_offset[(1,)](out, off, BLOCK=16))
    assert host.tolist() == [0.0] * 16
    store_at_offset[(1,)](out, 0, BLOCK=16)
    assert out.tolist() == [1.0] * 16


@pytest.mark.parametrize("kind", [0, 1, 2, 3])
def test_atomics_outside_the_launch_fault(kind):
    out, host = torch.zeros(4), torch.zeros(4)
    off = (host.data_ptr() - out.data_ptr()) // 4
    assert "illegal memory access" in _faults(lambda: atomic_at_offset[(1,)](out, off, KIND=kind))
    assert host.tolist() == [0.0] * 4
    atomic_at_offset[(1,)](out, 1, KIND=kind)
    assert out[1].item() != 0.0


def test_a_tensor_descriptor_reaching_past_its_tensor_faults():
    x, out = torch.arange(64.0).reshape(4, 16), torch.zeros(8, 16)
    with pytest.raises(Exception, match="illegal memory access"):
        descriptor_copy[(1,)](x, out, 8, ROWS=8, COLS=16)
    descriptor_copy[(1,)](x, out, 4, ROWS=8, COLS=16)  # rows past the descriptor's shape: zero padding
    assert torch.equal(out[:4], x) and out[4:].abs().sum().item() == 0.0


def test_the_fault_is_reported_as_a_gpus_illegal_memory_access():
    from kernelgym.judge.errors import classify_exception
    from kernelgym.judge.interpreter_semantics import IllegalMemoryAccess

    x, out = torch.arange(16.0), torch.zeros(16)
    with pytest.raises(Exception) as info:
        load_at_offset[(1,)](x, out, 1 << 20, 16, BLOCK=16)
    assert isinstance(info.value.__cause__, IllegalMemoryAccess)
    assert classify_exception(info.value, "forward") == ("crashed", "cuda_illegal_address")


@triton.jit
def load_and_swallow_the_fault(x_ptr, out_ptr, off):
    if tl.range is tl.static_range:  # only under the interpreter: Python the GPU front end never checks (s28)
        try:
            tl.store(out_ptr, tl.load(x_ptr + off))
        except Exception:
            pass
    tl.store(out_ptr + 1, 1.0)


def test_a_fault_caught_inside_the_kernel_still_fails_the_launch(front_end_off):
    x, out = torch.arange(4.0), torch.zeros(2)
    with pytest.raises(Exception, match="illegal memory access"):
        load_and_swallow_the_fault[(1,)](x, out, 1 << 30)
    assert out[0].item() == 0.0


@triton.jit
def load_through_a_foreign_pointer_array(x_ptr, out_ptr):
    if tl.range is tl.static_range:  # only under the interpreter, as above
        p = x_ptr + 0
        p.handle.data = p.handle.data.tolist()  # no numpy array: the bounds could not be read from it
        tl.store(out_ptr, tl.load(p))


def test_pointers_the_interpreter_did_not_make_fault(front_end_off):
    x, out = torch.arange(4.0) + 1, torch.zeros(1)
    with pytest.raises(Exception, match="illegal memory access"):
        load_through_a_foreign_pointer_array[(1,)](x, out)
    assert out.item() == 0.0


@pytest.fixture
def front_end_off(monkeypatch):
    """The interpreter's own defences, with the GPU front-end check (which refuses these kernels first since round
    s28's branch rule) out of the way."""
    from kernelgym.judge import front_end

    monkeypatch.setitem(front_end._STATE, "off", True)


def test_a_storage_resized_during_the_launch_faults():
    # round s29: host code a kernel ran (a constexpr function) resized a launch's tensor; the regions still named
    # the freed block, and loads there passed the bounds check
    import numpy as np

    from kernelgym.judge.interpreter_semantics import IllegalMemoryAccess, _LaunchMemory, _storages, check_bounds

    y = torch.zeros(64, dtype=torch.int64)
    memory = _LaunchMemory(_storages([y]))
    old = y.untyped_storage().data_ptr()
    ptrs = np.arange(4, dtype=np.uint64) * 8 + old
    check_bounds(memory, ptrs, None, 8, "a load")  # inside, untouched: fine
    y.resize_(1 << 16)
    with pytest.raises(IllegalMemoryAccess, match="resized or freed during it"):
        check_bounds(memory, ptrs, None, 8, "a load")
