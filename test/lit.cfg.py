# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "STRATA"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lib", "Unit", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.strata_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%strata_src", config.strata_src_root))
config.substitutions.append(("%strata_obj", config.strata_obj_root))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%targets", os.path.join(config.strata_src_root, "targets")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# Targets are found in the source tree, never in a user's environment.
config.environment["STRATA_TARGET_PATH"] = os.path.join(config.strata_src_root, "targets")

# Sanitizer builds (STRATA_SANITIZE): `sanitizer`, and `asan`, `ubsan`, `tsan`
# for each one. Timing checks that instrumentation slows past their bounds
# turn themselves off with %if sanitizer %{...%}.
if config.strata_sanitize:
    config.available_features.add("sanitizer")
    names = {"address": "asan", "undefined": "ubsan", "thread": "tsan", "leak": "lsan"}
    for sanitizer in config.strata_sanitize.split(","):
        config.available_features.add(names.get(sanitizer, sanitizer))

if os.path.exists("/usr/share/common-licenses/GPL-3"):
    config.available_features.add("gpl3-text")
# Debian's python3-sklearn (the digits example's data) is on the system
# Python, which need not be the one running lit.
import subprocess as _subprocess
try:
    if _subprocess.run(["/usr/bin/python3", "-c", "import sklearn"],
                       capture_output=True, timeout=60).returncode == 0:
        config.available_features.add("sklearn")
    if _subprocess.run(["/usr/bin/python3", "-c", "import numpy"],
                       capture_output=True, timeout=60).returncode == 0:
        config.available_features.add("numpy")
except (OSError, _subprocess.SubprocessError):
    pass
if config.strata_have_cuda:
    config.available_features.add("cuda")
    # `gpu`: a CUDA device is usable (the backend is built and a driver and
    # GPU are present); GPU tests carry REQUIRES: gpu.
    import re
    import subprocess
    try:
        out = subprocess.run(
            [os.path.join(config.strata_tools_dir, "strata-run"), "--devices"],
            capture_output=True, text=True, timeout=60).stdout
        m = re.search(r"^cuda devices: (\d+)", out, re.M)
        if m and int(m.group(1)) > 0:
            config.available_features.add("gpu")
            if int(m.group(1)) > 1:
                config.available_features.add("multi-gpu")
    except (OSError, subprocess.SubprocessError):
        pass
# `onnx`: strata-translate --import-onnx is built (libonnx-dev was found).
if getattr(config, "strata_have_onnx", False):
    config.available_features.add("onnx")
# `torch`: STRATA_TORCH_PYTHON names a Python with torch and onnx (a virtual
# environment); tests that export models from PyTorch run with it as
# %torch_python.
_torch_python = os.environ.get("STRATA_TORCH_PYTHON", "")
if _torch_python:
    try:
        if _subprocess.run([_torch_python, "-c", "import torch, onnx"],
                           capture_output=True, timeout=120).returncode == 0:
            config.available_features.add("torch")
            config.substitutions.append(("%torch_python", _torch_python))
    except (OSError, _subprocess.SubprocessError):
        pass
if config.strata_have_mpi:
    config.available_features.add("mpi")
    import shutil
    if shutil.which("mpirun"):
        config.available_features.add("mpirun")
        # OpenMPI run as root in containers and CI.
        config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"

tool_dirs = [config.strata_tools_dir, config.llvm_tools_dir]
tools = ["strata-opt", "strata-compiler-capi-test", "strata-model", "strata-translate", "strata-run", "strata-partition",
         "strata-comm-check", "strata-tune", "strata-pack", "strata-sim"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.strata_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
