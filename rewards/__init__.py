"""Reward functions from EvalResult to a scalar (see the rewards issue)."""
