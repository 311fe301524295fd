"""The documented recipes parse as written: every `kernelgym ...` command in the README, COLDSTART.md and
TRAINING.md code blocks is accepted by the CLI's parser, and every `accelerate launch ... train/sft.py|grpo.py`
names an accelerate config that exists and arguments the trainer's parser takes (GPU configs are parsed with
`--use_cpu true` on a CPU machine: the flags and values are what is checked, not the device)."""

import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/COLDSTART.md", "docs/TRAINING.md")


def documented_commands(doc: str) -> list[list[str]]:
    """Shell commands of the fenced ```bash blocks and 4-space-indented blocks, continuations joined,
    comments dropped, split at `&&` and `;`."""
    text = (ROOT / doc).read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    blocks += ["\n".join(line[4:] for line in m.group(0).splitlines())
               for m in re.finditer(r"(?m)(?:^ {4,}\S.*\n?)+", re.sub(r"```.*?```", "", text, flags=re.S))]
    commands = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            if not re.search(r"(^|&& )(kernelgym|accelerate) ", line.strip()):
                continue  # prose, Python, other programs
            words = shlex.split(line, comments=True)
            while words:
                cut = next((i for i, w in enumerate(words) if w in ("&&", ";")), len(words))
                commands.append(words[:cut])
                words = words[cut + 1:]
    return [c for c in commands if c]


def _commands(program: str) -> list[tuple[str, list[str]]]:
    return [(doc, c) for doc in DOCS for c in documented_commands(doc) if c[0] == program]


def test_the_docs_hold_the_recipes_this_test_checks():
    kernelgym = {" ".join(c[:3]) for _, c in _commands("kernelgym")}
    assert {"kernelgym data coldstart", "kernelgym eval --model"} <= kernelgym
    scripts = {c[c.index("launch") + 3] for _, c in _commands("accelerate")}
    assert {"train/sft.py", "train/grpo.py"} <= scripts


@pytest.mark.parametrize("doc,command", _commands("kernelgym"), ids=lambda x: x if isinstance(x, str) else " ".join(x[:3]))
def test_documented_kernelgym_commands_parse(doc, command):
    from kernelgym.cli import _build_parser

    try:
        _build_parser().parse_args(command[1:])
    except SystemExit:
        pytest.fail(f"{doc}: `{' '.join(command)}` is refused by the CLI's parser")


@pytest.mark.parametrize("doc,command", _commands("accelerate"), ids=lambda x: x if isinstance(x, str) else x[-1])
def test_documented_training_commands_parse(doc, command):
    pytest.importorskip("trl")
    sys.path.insert(0, str(ROOT))
    assert command[:2] == ["accelerate", "launch"], command
    config = command[command.index("--config_file") + 1]
    assert (ROOT / config).is_file(), f"{doc}: accelerate config {config} does not exist"
    script = command[4]
    args = command[5:] + ["--use_cpu", "true"]
    assert (ROOT / args[args.index("--config") + 1]).is_file()
    if script == "train/sft.py":
        from train.sft import parse_args
    else:
        assert script == "train/grpo.py", command
        from train.config import parse_args
    try:
        parse_args(args)
    except SystemExit:
        pytest.fail(f"{doc}: `{' '.join(command)}` is refused by {script}'s parser")
