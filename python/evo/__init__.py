"""evo from Python: Kernel Tuner's tune_kernel call, searched and verified by evo (docs/python.md).

    import evo
    results, env = evo.tune("vector_add", kernel_string, size, args, tune_params)
"""
from .tune import EvoRunError, Results, Tuning, find_evo_binary, tune, write_profile
from . import file_utils

__all__ = ["tune", "write_profile", "find_evo_binary", "Results", "Tuning", "EvoRunError", "file_utils"]
