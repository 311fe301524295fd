"""Map exceptions and process deaths to statuses, and trim tracebacks to what a model can act on."""

from __future__ import annotations

import signal
import traceback

from kernelgym.judge.launch_hook import ForgedPointerError, KernelArgumentError

MAX_ERROR_CHARS = 2000


def classify_exception(e: BaseException, phase: str) -> tuple[str, str]:
    """(status value, fault detail) for an exception raised by candidate code in `phase`."""
    if isinstance(e, (ForgedPointerError, KernelArgumentError)):  # outside the answer contract (docstrings)
        return "invalid_answer", ""
    text = f"{type(e).__name__}: {e}"
    if isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError" or "out of memory" in text.lower():
        return "oom", "out_of_memory"
    if "can't allocate memory" in text or "cannot allocate memory" in text.lower():
        return "oom", "out_of_memory"
    if "illegal memory access" in text or "illegal address" in text:
        return "crashed", "cuda_illegal_address"
    if "device-side assert" in text:
        return "crashed", "cuda_device_assert"
    if "CUDA error" in text or "cudaError" in text:
        return "crashed", "cuda_error"
    if _is_triton_compile_error(e):
        return "compile_error", ""
    if _is_interpreted_kernel_error(e):
        return ("crashed", "cuda_device_assert") if _from_device_assert(e) else ("compile_error", "")
    if phase in ("import", "init"):
        return "compile_error", ""
    return "runtime_error", ""


def _is_triton_compile_error(e: BaseException) -> bool:
    for cls in type(e).__mro__:
        if cls.__module__.startswith("triton") and "Compil" in cls.__name__:
            return True
    return False


def _is_interpreted_kernel_error(e: BaseException) -> bool:
    """The CPU interpreter runs a kernel body as Python and raises what went wrong there as an
    `InterpreterError` at launch. A kernel body cannot raise on a GPU: what fails in it (a shape,
    type or constexpr error, a failed `tl.static_assert`, torch or host Python inside the kernel) is
    refused by Triton's compiler before the launch, so it is a compile error there and here."""
    return any(cls.__name__ == "InterpreterError" and cls.__module__.startswith("triton")
               for cls in type(e).__mro__)


def _from_device_assert(e: BaseException) -> bool:
    """A failed `tl.device_assert` (a trap at run time on a GPU): the interpreter's builder raises it
    from `create_assert`."""
    cause = e.__cause__
    return cause is not None and any(f.name == "create_assert" for f in traceback.extract_tb(cause.__traceback__))


def trim_traceback(e: BaseException, code_path: str) -> str:
    """The candidate's own frames plus the exception line, capped in length."""
    frames = traceback.extract_tb(e.__traceback__)
    own = [f for f in frames if code_path and f.filename == code_path]
    lines = []
    for f in own[-6:]:
        lines.append(f'  File "answer.py", line {f.lineno}, in {f.name}\n    {(f.line or "").strip()}')
    head = "Traceback (answer frames only):\n" + "\n".join(lines) + "\n" if lines else ""
    message = "".join(traceback.format_exception_only(type(e), e))
    message = (message.replace(code_path, "answer.py") if code_path else message).strip()
    return trim_text(head + message)


def trim_text(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2 - 20
    return f"{text[:half]}\n... [{len(text) - 2 * half} characters cut] ...\n{text[-half:]}"


def describe_exit(returncode: int | None) -> str:
    """`signal:SIGSEGV` for a signal death, `exit:N` for an exit code."""
    if returncode is None:
        return "unknown"
    if returncode < 0:
        try:
            return f"signal:{signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal:{-returncode}"
    return f"exit:{returncode}"
