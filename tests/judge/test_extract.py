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
