"""Cold-start data: Triton answers written by construction for generated tasks, kept only when the judge says `ok`.

Layering: uses `kernelgym.taskgen` (the op chains), `kernelgym.judge` (the verdict) and
`kernelgym.env` (the prompts and feedback a model sees); nothing below imports it.
"""
