"""Finding and loading Strata's C libraries (shared by the modules)."""

import ctypes
import os

from .errors import StrataError


def candidates(library):
    """Where `library` is looked for, in order: each folder of
    STRATA_LIB_DIR (os.pathsep-separated, e.g. the compiler's and the
    runtime's in a build tree), next to this package, then the dynamic
    loader's search path."""
    found = []
    for directory in os.environ.get("STRATA_LIB_DIR", "").split(os.pathsep):
        if directory:
            found.append(os.path.join(directory, library))
    found.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              library))
    found.append(library)
    return found


def load(library):
    """The first of `candidates(library)` that loads; StrataError naming
    every attempt otherwise."""
    errors = []
    for path in candidates(library):
        if os.sep in path and not os.path.exists(path):
            errors.append(path + ": not found")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as error:
            errors.append(str(error))
    raise StrataError("cannot load " + library + " (set STRATA_LIB_DIR to "
                      "the directory that holds it): " + "; ".join(errors))
