"""Held-out split by signature, normalised-code fingerprints and the overlap report."""

from kernelgym.taskgen.compose import compose, compose_chain
from kernelgym.taskgen.fingerprint import call_chain, code_hash
from kernelgym.taskgen.splits import HELDOUT, overlap_report, shared_signatures, split_of
from kernelgym.tasks import Task, load_builtin


def test_split_is_a_function_of_the_signature_and_holds_out_about_the_fraction():
    signatures = [f"op{i}>gelu" for i in range(3000)]
    held = [s for s in signatures if split_of(s, 0.1) == HELDOUT]
    assert 240 < len(held) < 360
    assert held == [s for s in signatures if split_of(s, 0.1) == HELDOUT]
    assert split_of("x", 0.0) == "train" and split_of("x", 1.0) == HELDOUT


def test_generated_rows_share_no_signature_across_splits():
    candidates = [compose(0, i) for i in range(300)]
    rows = [{"signature": c.signature, "split": split_of(c.signature, 0.3)} for c in candidates]
    assert {r["split"] for r in rows} == {"train", HELDOUT}
    assert shared_signatures(rows) == set()
    leaked = rows + [{"signature": rows[0]["signature"], "split": HELDOUT if rows[0]["split"] == "train" else "train"}]
    assert shared_signatures(leaked) == {rows[0]["signature"]}


def test_fingerprint_ignores_spelling_but_not_the_computation():
    a = "import torch.nn.functional as F\nclass Model:\n    def forward(self, x):\n        return F.gelu(x) * 2.0\n"
    b = ("import torch\nclass Model:\n    def forward(self, inp):\n        'doc'\n"
         "        return torch.nn.functional.gelu(inp) * 2.0\n")
    a, b = a + "n = 4\n", b + "n = 8\n"  # other sizes, same problem
    c = a.replace("2.0", "3.0")
    assert code_hash(a) == code_hash(b) != code_hash(c)
    assert call_chain(a) == ("torch.nn.functional.gelu", "mult")


def test_overlap_report_finds_copies_and_same_call_chains():
    builtin = {t.task_id: t for t in load_builtin()}
    ours = compose_chain(["linear", "gelu"], rank=2).task()
    copy = Task("copy_of_relu", builtin["relu"].source.replace("dim", "features"))
    report = overlap_report([ours, copy], [builtin["relu"], builtin["linear_bias_gelu"], builtin["softmax"]])
    assert ("copy_of_relu", "relu") in report.exact
    assert (ours.task_id, "linear_bias_gelu") in report.same_calls
    assert report.overlapping_ids() == {ours.task_id, "copy_of_relu"}
    assert report.summary()["generated_overlapping"] == 2


def test_eval_index_matches_by_code_or_call_chain_and_the_build_excludes_matches():
    from kernelgym.taskgen.build import BuildConfig, generate_tasks
    from kernelgym.taskgen.splits import EvalIndex

    index = EvalIndex(load_builtin())
    assert "call chain as evaluation task linear_bias_gelu" in index.match(compose_chain(["linear", "gelu"], 2).source)
    assert index.match(compose_chain(["linear", "gelu", "tanh"], 2).source) == ""
    result = generate_tasks(BuildConfig(n=8, seed=4, jobs=1, exclude="builtin"), progress=False)
    assert all(index.match(r["code"]) == "" for r in result.rows)


def test_held_out_families_take_every_chain_with_their_ops_and_leave_other_splits_alone():
    from kernelgym.taskgen.splits import HELDOUT_FAMILY, family_ops

    signatures = [compose(0, i).signature for i in range(400)]
    families = ("loss", "pooling")
    held_ops = family_ops(families)
    with_families = [split_of(s, 0.1, heldout_families=families) for s in signatures]
    for sig, split in zip(signatures, with_families):
        if held_ops.intersection(sig.split(">")):
            assert split == HELDOUT_FAMILY
        else:  # the signature hash decides, as it did before held-out families existed
            assert split == split_of(sig, 0.1)
    assert 40 < with_families.count(HELDOUT_FAMILY) < 160
    assert {"max_pool2d", "global_avg_pool", "cross_entropy", "mse_loss"} <= held_ops
    assert not held_ops & {"relu", "softmax", "sum", "linear"}


def test_generated_set_with_held_out_families(tmp_path):
    from kernelgym.taskgen.build import BuildConfig, generate_tasks, write_outputs
    from kernelgym.taskgen.splits import HELDOUT_FAMILY, family_ops
    from kernelgym.tasks.loaders import resolve_tasks

    config = BuildConfig(n=24, seed=0, jobs=1, heldout_families=("pooling", "loss"))
    result = generate_tasks(config, progress=False)
    assert result.stats["heldout_family_ops_in_train"] == 0
    assert result.stats["splits"][HELDOUT_FAMILY]["tasks"] > 0
    write_outputs(result, tmp_path, "jsonl")
    held = resolve_tasks(f"gen:{tmp_path}:heldout_family")
    assert held and all(family_ops(config.heldout_families).intersection(t.meta["ops"]) for t in held)
    assert not any(family_ops(config.heldout_families).intersection(t.meta["ops"])
                   for t in resolve_tasks(f"gen:{tmp_path}:train"))
