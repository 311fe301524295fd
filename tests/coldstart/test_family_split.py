"""The held-out op families: no training answer of the cold-start corpus holds a kernel written for
a held-out family's op, the split is a pure function of the chain, and corpora built before
held-out families existed still resume."""

import ast
import json
import re

import pytest

from kernelgym.coldstart.answer import supported, write_answer
from kernelgym.coldstart.corpus import ColdstartConfig, _answers, _claim, _more_heldout, iter_tasks, write_tasks
from kernelgym.taskgen.compose import compose, compose_chain
from kernelgym.taskgen.splits import HELDOUT, HELDOUT_FAMILY, RECOMMENDED_FAMILIES, TRAIN, family_ops
from kernelgym.tasks.loaders import resolve_tasks

CONFIG = ColdstartConfig(n=1, heldout_families=RECOMMENDED_FAMILIES)


def kernels(answer: str) -> set[str]:
    """The answer's @triton.jit functions, digits normalised (block sizes and constants aside)."""
    return {re.sub(r"\d+", "0", ast.unparse(node)) for node in ast.parse(answer).body
            if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list)}


def single_op_kernels(ops) -> set[str]:
    """The kernels the corpus writer writes for each op alone, at every rank it takes, in four styles."""
    out: set[str] = set()
    for op in ops:
        for rank in (2, 3, 4):
            try:
                candidate = compose_chain([op], rank=rank)
            except ValueError:
                continue  # the op does not take this rank
            for seed in range(4):
                out |= kernels(write_answer(candidate, seed=seed))
    return out


@pytest.fixture(scope="module")
def answers_by_split():
    by_split: dict[str, list] = {TRAIN: [], HELDOUT: [], HELDOUT_FAMILY: []}
    for index in range(300):
        candidate = compose(0, index)
        if supported(candidate):
            by_split[CONFIG.split(candidate.signature)] += [(candidate, a.answer) for a in _answers(CONFIG, candidate)]
    return by_split


def test_no_training_answer_holds_a_held_out_familys_op_or_kernel(answers_by_split):
    held_ops = family_ops(RECOMMENDED_FAMILIES)
    train = answers_by_split[TRAIN]
    assert len(train) > 150 and len(answers_by_split[HELDOUT_FAMILY]) > 30
    assert not any(held_ops.intersection(c.ops) for c, _ in train)
    assert all(held_ops.intersection(c.ops) for c, _ in answers_by_split[HELDOUT_FAMILY])
    train_kernels = set().union(*(kernels(a) for _, a in train))
    family_kernels = single_op_kernels(sorted(held_ops))
    assert len(family_kernels) > 20
    assert not family_kernels & train_kernels  # not one family kernel, up to digits, in a training answer
    # ... while the same measure finds them in the held-out family's answers, and finds the kernels of
    # ops that are not held out (a row softmax, a layer norm) in training answers: it can fail
    assert family_kernels & set().union(*(kernels(a) for _, a in answers_by_split[HELDOUT_FAMILY]))
    assert single_op_kernels(["softmax", "layer_norm"]) & train_kernels


def test_split_is_deterministic_and_the_task_set_serves_each_split(tmp_path):
    config = ColdstartConfig(n=1, heldout_families=("pooling", "loss"), heldout_tasks=12)  # any order
    assert config.heldout_families == CONFIG.heldout_families
    stream = iter_tasks(config)
    first = {c.task_id: c for c, why in (next(stream) for _ in range(60)) if why not in ("duplicate", "estimate")}
    # a pure function of the chain: the same in a fresh config and for the chain composed again
    assert [config.split(c.signature) for c in first.values()] == \
        [ColdstartConfig(n=1, heldout_families=RECOMMENDED_FAMILIES).split(compose(0, c.index).signature)
         for c in first.values()]
    extra = _more_heldout(config, stream, first, set())
    write_tasks(config, {**first, **extra}, set(), tmp_path / "tasks")
    held = resolve_tasks(f"gen:{tmp_path / 'tasks'}:heldout_family")
    assert len(held) >= 12 and all(family_ops(RECOMMENDED_FAMILIES).intersection(t.meta["ops"]) for t in held)
    assert len(resolve_tasks(f"gen:{tmp_path / 'tasks'}:heldout")) >= 12
    train = resolve_tasks(f"gen:{tmp_path / 'tasks'}:train")
    assert train and not any(family_ops(RECOMMENDED_FAMILIES).intersection(t.meta["ops"]) for t in train)


def test_old_corpora_resume_and_a_corpus_refuses_other_families(tmp_path):
    old = {"seed": 0, "device": "cpu", "trials": 0, "heldout_fraction": 0.1}  # corpus.json before families
    (tmp_path / "corpus.json").write_text(json.dumps(old))
    _claim(tmp_path, ColdstartConfig(n=1))  # resumes
    assert json.loads((tmp_path / "corpus.json").read_text()) == old
    with pytest.raises(ValueError, match="heldout_families"):
        _claim(tmp_path, CONFIG)


def test_unknown_family_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown op families.*choose among"):
        ColdstartConfig(n=1, heldout_families=("pools",))
