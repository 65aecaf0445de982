"""Strata from Python.

``strata.Runtime`` loads a plan (as the compiler's ``strata-translate
--export-plan`` writes it) and trains it through the runtime's C API
(libstrata_rt_c.so, found through ``STRATA_LIB_DIR``, next to this package,
or the default library path); numpy arrays go in and out by copy. Errors
raise ``strata.StrataError`` with the library's message.

``strata.compile`` builds a model (a generator kind or IR text), runs a pass
pipeline (``strata-train-pipeline`` by default) and returns the plan, through
the compiler's C API (libStrataCAPI.so, found the same way).
"""

from .compiler import compile
from .errors import StrataError
from .runtime import Runtime, TensorSpec

__all__ = ["Runtime", "StrataError", "TensorSpec", "compile"]
