"""Tests of strata.compile over the compiler's C API (libStrataCAPI.so).

    STRATA_LIB_DIR=build/lib/CAPI:build/lib STRATA_TOOLS=build/bin \\
        PYTHONPATH=python python3 python/tests/test_compile.py -v

With STRATA_TOOLS set to the folder of strata-model, strata-opt and
strata-translate, the plan strata.compile returns is compared byte for byte
with the command-line tools' plan for the same model and pipeline. Run as a
script, it exits with 77 (ctest's skip) when numpy is missing.
"""

import os
import subprocess
import sys
import unittest

try:
    import numpy as np
except ImportError:  # pragma: no cover - depends on the machine
    np = None

HERE = os.path.dirname(os.path.abspath(__file__))
if np is not None:
    sys.path.insert(0, os.path.join(HERE, ".."))
    import strata

MLP = {"batch": 16, "inputs": 32, "hidden": 64, "layers": 3, "classes": 8}


class CompileTest(unittest.TestCase):
    def test_compile_and_train(self):
        plan = strata.compile("mlp", model_options=MLP, optimizer="sgd",
                              lr=0.1)
        runtime = strata.Runtime(plan, threads=1, seed=1)
        self.assertEqual([s.name for s in runtime.inputs], ["x", "y"])
        rng = np.random.default_rng(0)
        x = rng.standard_normal((16, 32)).astype(np.float32)
        y = (np.arange(16) % 8).astype(np.int32)
        losses = [runtime.step(x, y) for _ in range(30)]
        self.assertLess(losses[-1], 0.1 * losses[0])

    def test_same_plan_as_the_tools(self):
        tools = os.environ.get("STRATA_TOOLS")
        if not tools:
            self.skipTest("STRATA_TOOLS is not set")
        model = subprocess.run(
            [os.path.join(tools, "strata-model"), "mlp"] +
            ["--%s=%d" % (k, v) for k, v in MLP.items()],
            check=True, capture_output=True).stdout
        step = subprocess.run(
            [os.path.join(tools, "strata-opt"),
             "--strata-train-pipeline=optimizer=adam lr=0.01 remat-budget=1.0"
             " remat-solver=sqrt"],
            input=model, check=True, capture_output=True).stdout
        plan = subprocess.run(
            [os.path.join(tools, "strata-translate"), "--export-plan"],
            input=step, check=True, capture_output=True).stdout.decode()
        compiled = strata.compile("mlp", model_options=MLP, optimizer="adam",
                                  lr=0.01, remat_budget="1.0",
                                  remat_solver="sqrt")
        self.assertEqual(compiled, plan)
        # IR text goes through the same path.
        self.assertEqual(strata.compile(model.decode(), optimizer="adam",
                                        lr=0.01, remat_budget="1.0",
                                        remat_solver="sqrt"), plan)

    def test_errors(self):
        cases = [
            (dict(model="lstm"), "unknown model kind 'lstm'"),
            (dict(model="mlp", model_options="batch=zero"),
             "batch=zero is not an integer"),
            (dict(model="module { func.func @f( }"),
             "strata-ir:1:23: error:"),
            (dict(model="mlp", pipeline="strata-nope"),
             "'strata-nope' does not refer to a registered pass"),
            (dict(model="mlp", optimizer="lamb"),
             "with options `optimizer=lamb`"),
            (dict(model="mlp", remat_budget="1K"),
             "cannot fit a memory budget of 1024 bytes"),
            (dict(model="mlp", pipeline=""),
             "expected exactly one training step"),
        ]
        for kwargs, message in cases:
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(strata.StrataError) as raised:
                    strata.compile(**kwargs)
                self.assertIn(message, str(raised.exception))


if __name__ == "__main__":
    if np is None:
        print("numpy is missing: skipped")
        sys.exit(77)
    unittest.main()
