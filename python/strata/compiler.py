"""``strata.compile``: the compiler's C API (libStrataCAPI.so) via ctypes.

The library is found like the runtime's: each directory of
``STRATA_LIB_DIR`` (``os.pathsep``-separated), next to this package, then the
default library path. It carries MLIR's IR C API, so the context and module
handles below are MLIR's own.
"""

import ctypes
import re

from . import _loader
from .errors import StrataError

_LIBRARY = "libStrataCAPI.so"


class _StringRef(ctypes.Structure):
    _fields_ = [("data", ctypes.c_char_p), ("length", ctypes.c_size_t)]


class _Handle(ctypes.Structure):
    """MlirContext, MlirModule: a struct holding one pointer."""
    _fields_ = [("ptr", ctypes.c_void_p)]


class _Result(ctypes.Structure):
    """MlirLogicalResult: nonzero on success."""
    _fields_ = [("value", ctypes.c_int8)]


_Callback = ctypes.CFUNCTYPE(None, _StringRef, ctypes.c_void_p)

_SIGNATURES = {
    "mlirContextCreate": ([], _Handle),
    "mlirContextDestroy": ([_Handle], None),
    "mlirModuleDestroy": ([_Handle], None),
    "strataRegisterPasses": ([], None),
    "strataContextLoadDialects": ([_Handle], None),
    "strataBuildModel": ([_Handle, _StringRef, _StringRef, _Callback,
                          ctypes.c_void_p], _Handle),
    "strataParseModule": ([_Handle, _StringRef, _Callback, ctypes.c_void_p],
                          _Handle),
    "strataRunPipeline": ([_Handle, _StringRef, _Callback, ctypes.c_void_p],
                          _Result),
    "strataExportPlan": ([_Handle, _StringRef, _Callback, ctypes.c_void_p,
                          _Callback, ctypes.c_void_p], _Result),
}

_lib = None


def _library():
    global _lib
    if _lib is not None:
        return _lib
    lib = _loader.load(_LIBRARY)
    for name, (argtypes, restype) in _SIGNATURES.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = restype
    lib.strataRegisterPasses()
    _lib = lib
    return lib


def _ref(text):
    data = text.encode()
    return _StringRef(data, len(data))


class _Collector:
    """A C callback that appends the pieces it receives."""

    def __init__(self):
        self.pieces = []
        self.callback = _Callback(
            lambda piece, _: self.pieces.append(
                ctypes.string_at(piece.data, piece.length)))

    def text(self):
        return b"".join(self.pieces).decode(errors="replace")


MODEL_KINDS = ("mlp", "gpt", "cnn-small", "vgg16", "resnet18", "resnet50")


def _pipeline_text(pipeline, options):
    if not options:
        return pipeline
    if "{" in pipeline or "," in pipeline:
        raise StrataError("pipeline options go inside the pipeline text when "
                          "it is not a single pipeline name: " + pipeline)
    words = []
    for key, value in options.items():
        if value is None:
            continue
        words.append("%s=%s" % (key.replace("_", "-"), value))
    return "%s{%s}" % (pipeline, " ".join(words))


def compile(model, *, model_options="", pipeline="strata-train-pipeline",
            device="cpu", **pipeline_options):
    """Compiles a model to a plan (JSON text, as ``strata.Runtime`` takes).

    ``model``: a generator kind (``"mlp"``, ``"gpt"``, ``"cnn-small"``,
    ``"vgg16"``, ``"resnet18"``, ``"resnet50"``) with ``model_options`` (a
    dict or a ``"batch=32 hidden=64"`` string of strata-model's option
    names), or Strata IR text. ``pipeline``: a textual pass pipeline;
    keyword arguments become its options (``optimizer="sgd", lr=0.1,
    target="cpu-local", remat_budget="0.5"`` for the default
    ``strata-train-pipeline``). Raises ``StrataError`` with the compiler's
    diagnostics (with their locations) on any failure.
    """
    lib = _library()
    if isinstance(model_options, dict):
        model_options = " ".join("%s=%s" % (k.replace("_", "-"), v)
                                 for k, v in model_options.items())
    errors = _Collector()
    plan = _Collector()
    context = lib.mlirContextCreate()
    module = _Handle(None)
    try:
        lib.strataContextLoadDialects(context)
        # A bare name is a generator kind (the C API names the kinds it
        # knows when it is not one); anything else is IR text.
        if re.fullmatch(r"[A-Za-z0-9_.-]+", model):
            module = lib.strataBuildModel(context, _ref(model),
                                          _ref(model_options),
                                          errors.callback, None)
        else:
            if model_options:
                raise StrataError("model_options apply to generator kinds, "
                                  "not to IR text")
            module = lib.strataParseModule(context, _ref(model),
                                           errors.callback, None)
        if not module.ptr:
            raise StrataError(errors.text() or "cannot build the model")
        text = _pipeline_text(pipeline, pipeline_options)
        if text and not lib.strataRunPipeline(module, _ref(text),
                                              errors.callback, None).value:
            raise StrataError(errors.text() or "the pass pipeline failed")
        if not lib.strataExportPlan(module, _ref(device), plan.callback, None,
                                    errors.callback, None).value:
            raise StrataError(errors.text() or "the plan export failed")
        return plan.text()
    finally:
        if module.ptr:
            lib.mlirModuleDestroy(module)
        lib.mlirContextDestroy(context)
