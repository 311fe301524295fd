"""Turn an LLM answer (text or bytes) into candidate source code, or say why it cannot be used."""

from __future__ import annotations

import re

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)
_PYTHON_TAGS = {"", "python", "py", "python3"}
_OPEN_FENCE = re.compile(r"^```[ \t]*(python3?|py)?[ \t]*\n", re.MULTILINE | re.IGNORECASE)


class AnswerError(ValueError):
    """The answer is unusable as given (empty, oversize, not UTF-8, no code)."""


def decode_answer(answer: str | bytes, max_bytes: int) -> str:
    """Check size and encoding; bytes must be UTF-8."""
    raw = answer.encode("utf-8", errors="surrogatepass") if isinstance(answer, str) else bytes(answer)
    if len(raw) > max_bytes:
        raise AnswerError(f"answer is {len(raw):,} bytes; the limit is {max_bytes:,} bytes")
    if isinstance(answer, str):
        if any(0xD800 <= ord(c) <= 0xDFFF for c in answer):
            raise AnswerError("answer contains lone surrogate characters; send valid UTF-8 text")
        return answer
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AnswerError(f"answer is not valid UTF-8 (byte {e.start}): send the code as UTF-8 text") from None


def python_blocks(text: str) -> list[str]:
    """The bodies of the closed, python-tagged (or untagged) fenced blocks, in order."""
    return [body for tag, body in _FENCE.findall(text) if tag.lower() in _PYTHON_TAGS]


def extract_code(text: str) -> str:
    """The last fenced python block (untagged blocks count); else, when a block was opened but never
    closed (an answer cut by its token limit), what follows its opening fence; else the whole text.
    So a cut answer is reported where it was cut, not as a syntax error on the fence."""
    blocks = python_blocks(text)
    if blocks:
        code = blocks[-1]
    else:
        opened = list(_OPEN_FENCE.finditer(text))
        code = text[opened[-1].end():] if opened else text
    if not code.strip():
        raise AnswerError("answer contains no code: write a ```python block that defines class ModelNew")
    if "\x00" in code:
        raise AnswerError("answer contains NUL bytes")
    return code
