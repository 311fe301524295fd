"""KernelGym: honest judging, environments and RL training for LLM-written Triton kernels."""

__version__ = "0.1.0"
