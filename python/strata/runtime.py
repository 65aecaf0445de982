"""``strata.Runtime``: a plan's training steps from Python.

A thin ctypes layer over the runtime's C API
(runtime/include/strata-rt/strata_rt.h): every call's status is checked and
a failure raises ``StrataError`` with the library's message. Arrays are
copied in and out; inputs are bound once and used by every step until bound
again.

    rt = strata.Runtime("mlp.plan.json", threads=4, seed=0)
    for x, y in batches:
        loss = rt.step(x, y)        # or rt.step({"x": x, "y": y})
    rt.save("mlp.safetensors")
"""

import ctypes
import json
import os
from collections import namedtuple

import numpy as np

from . import _loader
from .errors import StrataError

_LIBRARY = "libstrata_rt_c.so"

_ROLES = {0: "data", 1: "labels", 2: "parameter"}
_DTYPES = {0: np.dtype(np.float32), 1: np.dtype(np.int32),
           2: np.dtype(np.uint8)}
_CODES = {np.dtype(np.float32): 0, np.dtype(np.int32): 1,
          np.dtype(np.uint8): 2}

TensorSpec = namedtuple("TensorSpec", "name role dtype shape")
TensorSpec.__doc__ = """An input or parameter of a plan: its name, role
("data", "labels" or "parameter"), numpy dtype and shape (a tuple)."""


class _Options(ctypes.Structure):
    _fields_ = [("threads", ctypes.c_int), ("seed", ctypes.c_uint64),
                ("device", ctypes.c_char_p)]


class _TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("role", ctypes.c_int),
                ("dtype", ctypes.c_int), ("rank", ctypes.c_size_t),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("bytes", ctypes.c_size_t)]


_Handle = ctypes.c_void_p
_P = ctypes.POINTER
# Argument types of every entry point (all return strata_rt_status).
_SIGNATURES = {
    "strata_rt_session_create_from_file": [
        ctypes.c_char_p, _P(_Options), _P(_Handle)],
    "strata_rt_session_create_from_memory": [
        ctypes.c_char_p, ctypes.c_size_t, _P(_Options), _P(_Handle)],
    "strata_rt_session_device": [_Handle, _P(ctypes.c_char_p)],
    "strata_rt_num_inputs": [_Handle, _P(ctypes.c_size_t)],
    "strata_rt_input_info": [_Handle, ctypes.c_size_t, _P(_TensorInfo)],
    "strata_rt_num_parameters": [_Handle, _P(ctypes.c_size_t)],
    "strata_rt_parameter_info": [_Handle, ctypes.c_size_t, _P(_TensorInfo)],
    "strata_rt_bind_input": [_Handle, ctypes.c_char_p, ctypes.c_int,
                             ctypes.c_void_p, ctypes.c_size_t],
    "strata_rt_bind_synthetic": [_Handle, ctypes.c_int64],
    "strata_rt_step": [_Handle, _P(ctypes.c_float)],
    "strata_rt_run_steps": [_Handle, ctypes.c_int64, _P(ctypes.c_float)],
    "strata_rt_forward": [_Handle, _P(ctypes.c_float)],
    "strata_rt_step_count": [_Handle, _P(ctypes.c_int64)],
    "strata_rt_get_parameter": [_Handle, ctypes.c_char_p, ctypes.c_void_p,
                                ctypes.c_size_t],
    "strata_rt_set_parameter": [_Handle, ctypes.c_char_p, ctypes.c_void_p,
                                ctypes.c_size_t],
    "strata_rt_save_checkpoint": [_Handle, ctypes.c_char_p],
    "strata_rt_load_checkpoint": [_Handle, ctypes.c_char_p],
    "strata_rt_load_parameters": [_Handle, ctypes.c_char_p],
}

_lib = None


def library():
    """The loaded C library (loaded on first use)."""
    global _lib
    if _lib is not None:
        return _lib
    lib = _loader.load(_LIBRARY)
    for name, argtypes in _SIGNATURES.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_int
    lib.strata_rt_last_error.argtypes = []
    lib.strata_rt_last_error.restype = ctypes.c_char_p
    lib.strata_rt_session_destroy.argtypes = [_Handle]
    lib.strata_rt_session_destroy.restype = None
    _lib = lib
    return lib


def _call(name, *args):
    lib = library()
    status = getattr(lib, name)(*args)
    if status != 0:
        message = lib.strata_rt_last_error().decode("utf-8", "replace")
        raise StrataError(message, status)


def _encode(text):
    return os.fsencode(text) if isinstance(text, os.PathLike) else \
        str(text).encode("utf-8")


def _spec(info):
    shape = tuple(info.shape[i] for i in range(info.rank))
    return TensorSpec(info.name.decode("utf-8"), _ROLES[info.role],
                      _DTYPES[info.dtype], shape)


class Runtime:
    """A plan loaded into the runtime, with its parameters and optimizer
    state (initialised from the plan with ``seed``).

    ``plan`` is a path, plan JSON text (a str starting with "{", or bytes),
    or a plan already parsed into a dict. ``threads`` 0 uses one kernel
    thread per hardware thread; ``device`` is None (what the plan says),
    "cpu", "cuda" or "cuda:N".
    """

    def __init__(self, plan, threads=0, seed=0, device=None):
        self._handle = _Handle()
        options = _Options(threads, seed,
                           device.encode("utf-8") if device else None)
        if isinstance(plan, dict):
            plan = json.dumps(plan)
        if isinstance(plan, str) and plan.lstrip().startswith("{"):
            plan = plan.encode("utf-8")
        if isinstance(plan, (bytes, bytearray)):
            _call("strata_rt_session_create_from_memory", bytes(plan),
                  len(plan), ctypes.byref(options),
                  ctypes.byref(self._handle))
        else:
            _call("strata_rt_session_create_from_file", _encode(plan),
                  ctypes.byref(options), ctypes.byref(self._handle))
        self.inputs = self._specs("strata_rt_num_inputs",
                                  "strata_rt_input_info")
        self.parameters = self._specs("strata_rt_num_parameters",
                                      "strata_rt_parameter_info")
        self._inputs = {spec.name: spec for spec in self.inputs}
        self._parameters = {spec.name: spec for spec in self.parameters}

    def _specs(self, count_function, info_function):
        count = ctypes.c_size_t()
        _call(count_function, self._handle, ctypes.byref(count))
        specs = []
        for index in range(count.value):
            info = _TensorInfo()
            _call(info_function, self._handle, index, ctypes.byref(info))
            specs.append(_spec(info))
        return specs

    # Lifetime -----------------------------------------------------------

    def close(self):
        """Frees the session; later calls raise StrataError."""
        if self._handle:
            library().strata_rt_session_destroy(self._handle)
            self._handle = _Handle()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) and _lib is not None:
            self.close()

    # Queries --------------------------------------------------------------

    @property
    def device(self):
        """"cpu (N threads)" or the GPU the session runs on."""
        text = ctypes.c_char_p()
        _call("strata_rt_session_device", self._handle, ctypes.byref(text))
        return text.value.decode("utf-8")

    @property
    def step_count(self):
        """The number of the last completed step."""
        step = ctypes.c_int64()
        _call("strata_rt_step_count", self._handle, ctypes.byref(step))
        return step.value

    # Inputs and steps -----------------------------------------------------

    def bind(self, *arrays, **named):
        """Binds inputs for the following steps: positionally in the order
        of ``inputs`` (data, then labels), as one dict, or by keyword."""
        if len(arrays) == 1 and isinstance(arrays[0], dict):
            named = {**arrays[0], **named}
            arrays = ()
        if len(arrays) > len(self.inputs):
            raise StrataError("%d arrays given; the plan has %d inputs (%s)" %
                              (len(arrays), len(self.inputs),
                               ", ".join(s.name for s in self.inputs)), 4)
        for spec, array in zip(self.inputs, arrays):
            self._bind(spec.name, array)
        for name, array in named.items():
            self._bind(name, array)

    def _bind(self, name, array):
        spec = self._inputs.get(name)
        if spec is None:
            # The library names the plan's inputs in its message.
            _call("strata_rt_bind_input", self._handle, name.encode("utf-8"),
                  0, ctypes.c_void_p(1), 0)
        data = _contiguous("input", spec, array)
        _call("strata_rt_bind_input", self._handle, name.encode("utf-8"),
              _CODES.get(data.dtype, -1), data.ctypes.data, data.nbytes)

    def bind_synthetic(self, step):
        """Binds the synthetic batch strata-run trains on at ``step``."""
        _call("strata_rt_bind_synthetic", self._handle, step)

    def step(self, *arrays, **named):
        """Binds the given inputs (as ``bind``) and runs one training step;
        returns its loss. Without arrays, the bound batch is used again."""
        self.bind(*arrays, **named)
        loss = ctypes.c_float()
        _call("strata_rt_step", self._handle, ctypes.byref(loss))
        return float(loss.value)

    def run(self, steps):
        """Runs ``steps`` training steps on the bound batch; returns the
        last loss."""
        loss = ctypes.c_float()
        _call("strata_rt_run_steps", self._handle, steps, ctypes.byref(loss))
        return float(loss.value)

    def forward(self, *arrays, **named):
        """The loss of the forward pass alone (no update)."""
        self.bind(*arrays, **named)
        loss = ctypes.c_float()
        _call("strata_rt_forward", self._handle, ctypes.byref(loss))
        return float(loss.value)

    # Parameters and checkpoints ------------------------------------------

    def get_parameter(self, name):
        """A copy of parameter ``name``."""
        spec = self._parameters.get(name)
        if spec is None:
            _call("strata_rt_get_parameter", self._handle,
                  name.encode("utf-8"), ctypes.c_void_p(1), 0)
        out = np.empty(spec.shape, dtype=spec.dtype)
        _call("strata_rt_get_parameter", self._handle, name.encode("utf-8"),
              out.ctypes.data, out.nbytes)
        return out

    def set_parameter(self, name, array):
        """Overwrites parameter ``name`` with ``array`` (its shape)."""
        spec = self._parameters.get(name)
        if spec is None:
            _call("strata_rt_set_parameter", self._handle,
                  name.encode("utf-8"), ctypes.c_void_p(1), 0)
        data = _contiguous("parameter", spec, array)
        if data.dtype != spec.dtype:
            raise StrataError("parameter '%s' is %s, got %s" %
                              (name, spec.dtype, data.dtype), 4)
        _call("strata_rt_set_parameter", self._handle, name.encode("utf-8"),
              data.ctypes.data, data.nbytes)

    def save(self, path):
        """Writes a checkpoint (parameters, optimizer state, step, seed)."""
        _call("strata_rt_save_checkpoint", self._handle, _encode(path))

    def load(self, path):
        """Restores a checkpoint written by ``save`` for the same plan."""
        _call("strata_rt_load_checkpoint", self._handle, _encode(path))

    def load_parameters(self, path):
        """Loads only the parameters of a safetensors file."""
        _call("strata_rt_load_parameters", self._handle, _encode(path))


def _contiguous(what, spec, array):
    """``array`` as a C-contiguous f32 (any float) or i32 (any integer) array
    of ``spec``'s shape; a dtype that does not fit the plan is left for the
    library to report."""
    data = np.asarray(array)
    if tuple(data.shape) != spec.shape:
        raise StrataError("%s '%s' has shape %s (%s), got %s" %
                          (what, spec.name, list(spec.shape), spec.dtype,
                           list(data.shape)), 4)
    if data.dtype.kind == "f":
        data = data.astype(np.float32, copy=False)
    elif data.dtype.kind in "iu":
        if data.size and (data.min() < -2**31 or data.max() >= 2**31):
            raise StrataError("%s '%s': values out of the i32 range" %
                              (what, spec.name), 4)
        data = data.astype(np.int32, copy=False)
    else:
        raise StrataError("%s '%s' is %s, got a %s array" %
                          (what, spec.name, spec.dtype, data.dtype), 4)
    return np.ascontiguousarray(data)
