"""A scripted "model" behind a real OpenAI-compatible HTTP endpoint (stdlib server on loopback).

Its answers are fixed per task and per previous answer, so a multi-turn eval over it has verdicts
and metrics one can compute by hand: the built-in correct relu answer, a relu cheat (torch.relu),
a wrong softmax (outputs doubled), a softmax cheat, and a non-code apology.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kernelgym.tasks.loaders import builtin_answer_path


def fenced(code: str) -> str:
    return f"Here is my kernel.\n\n```python\n{code.strip()}\n```\n"


RELU_OK = fenced(builtin_answer_path("relu").read_text())
RELU_CHEAT = fenced("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                    "    def forward(self, x):\n        return torch.relu(x)\n")
_softmax = builtin_answer_path("softmax").read_text()
assert _softmax.count("e / s, mask=mask") == 1
SOFTMAX_WRONG = fenced(_softmax.replace("e / s, mask=mask", "e / s * 2.0, mask=mask"))
SOFTMAX_CHEAT = fenced("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                       "    def forward(self, x):\n        return torch.softmax(x, dim=-1)\n")
APOLOGY = "I am sorry, I cannot write Triton kernels."

# Turn 1: the answers of samples 0, 1. Later turns: the answer that follows a given previous one.
FIRST = {"relu": [RELU_OK, RELU_CHEAT], "softmax": [APOLOGY, SOFTMAX_WRONG], "zero_output": [APOLOGY, APOLOGY]}
NEXT = {("relu", RELU_OK): RELU_OK, ("relu", RELU_CHEAT): RELU_OK, ("softmax", APOLOGY): SOFTMAX_WRONG,
        ("softmax", SOFTMAX_WRONG): SOFTMAX_CHEAT, ("zero_output", APOLOGY): APOLOGY}

# A task whose output is always zero: the audit flags it degenerate (a zeros answer passes it).
ZERO_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 0.0


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return []
'''


class ScriptedModel:
    """The endpoint's state: every chat request it answered, as (task, turn, n)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, int, int]] = []
        self.lock = threading.Lock()
        # True: each answer's code carries a comment of its own, so no two are the same answer (the service's
        # cache judges an answer once), and every one is judged for real
        self.distinct = False

    def answer(self, body: dict) -> list[str]:
        messages = body["messages"]
        task = re.search(r"Task `([^`]+)`", next(m["content"] for m in messages if m["role"] == "user")).group(1)
        previous = [m["content"] for m in messages if m["role"] == "assistant"]
        with self.lock:
            self.requests.append((task, len(previous) + 1, body["n"]))
            k = len(self.requests)
        texts = FIRST[task][:body["n"]] if not previous else [NEXT[(task, previous[-1])]] * body["n"]
        if self.distinct:
            texts = [t.replace("\n```\n", f"\n# request {k}.{i}\n```\n", 1) for i, t in enumerate(texts)]
        return texts


@pytest.fixture
def scripted_endpoint() -> Iterator[tuple[str, ScriptedModel]]:
    """(api_base, model state) of the scripted endpoint on a free loopback port."""
    model = ScriptedModel()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, code: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(200, {"data": [{"id": "scripted"}]}) if self.path == "/v1/models" else self._send(404, {})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = model.answer(body)
            self._send(200, {"choices": [{"index": i, "message": {"role": "assistant", "content": t},
                                          "finish_reason": "stop"} for i, t in enumerate(texts)]})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", model
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def zero_task(tmp_path: Path) -> Path:
    path = tmp_path / "tasks" / "zero_output.py"
    path.parent.mkdir()
    path.write_text(ZERO_TASK)
    return path
