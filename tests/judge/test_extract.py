import pytest

from kernelgym.judge.extract import AnswerError, decode_answer, extract_code


def test_last_python_block_wins():
    text = "```python\na = 1\n```\ntext\n```py\nb = 2\n```\n```bash\nls\n```"
    assert extract_code(text) == "b = 2\n"


def test_untagged_block_counts_and_plain_text_is_code():
    assert extract_code("```\nc = 3\n```") == "c = 3\n"
    assert extract_code("d = 4") == "d = 4"


def test_empty_and_nul_are_errors():
    with pytest.raises(AnswerError, match="no code"):
        extract_code("```python\n\n```")
    with pytest.raises(AnswerError, match="NUL"):
        extract_code("a = 1\x00")


def test_decode_limits_size_and_encoding():
    with pytest.raises(AnswerError, match="limit"):
        decode_answer("x" * 11, max_bytes=10)
    with pytest.raises(AnswerError, match="UTF-8"):
        decode_answer(b"\xff", max_bytes=10)
    assert decode_answer("é".encode(), max_bytes=10) == "é"


def test_an_answer_cut_inside_its_block_is_the_code_after_the_fence():
    cut = "Here is the kernel:\n```python\nimport torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return ("
    assert extract_code(cut) == "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return ("
    # a closed block still wins over a later unclosed one, and prose without fences stays whole
    assert extract_code("```python\na = 1\n```\nthen\n```python\nb = (") == "a = 1\n"
    assert extract_code("no fences at all") == "no fences at all"
