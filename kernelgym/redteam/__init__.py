"""The red-team corpus: known exploits with their expected verdicts, and the honest answers that
must never be flagged. `kernelgym redteam` runs both."""

from kernelgym.redteam.corpus import Exploit, Expectation, corpus_dir, load_corpus
from kernelgym.redteam.runner import RedteamReport, run_redteam

__all__ = ["Exploit", "Expectation", "RedteamReport", "corpus_dir", "load_corpus", "run_redteam"]
