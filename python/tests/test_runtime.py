"""Tests of strata.Runtime over the runtime's C API.

    STRATA_LIB_DIR=build-rt/lib PYTHONPATH=python \\
        python3 -m unittest discover -s python/tests -v

The plans are the runtime's committed test plans
(runtime/test/driver/Inputs, or STRATA_TEST_INPUTS). With STRATA_RUN set to
a strata-run binary, losses are also compared with strata-run's. Run as a
script, it exits with 77 (ctest's skip) when numpy is missing.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:  # pragma: no cover - depends on the machine
    np = None

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.environ.get("STRATA_TEST_INPUTS") or os.path.join(
    HERE, "..", "..", "runtime", "test", "driver", "Inputs")
MLP = os.path.join(INPUTS, "mlp.json")
REGRESSION = os.path.join(INPUTS, "regression.json")

if np is not None:
    sys.path.insert(0, os.path.join(HERE, ".."))
    import strata


def batch(seed, classes=4):
    """A deterministic MLP batch: features [32, 16] f32, labels [32] i32."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((32, 16)).astype(np.float32)
    y = rng.integers(0, classes, size=32).astype(np.int32)
    return x, y


@unittest.skipIf(np is None, "numpy is not installed")
class RuntimeTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="strata-python-test.")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_queries(self):
        with strata.Runtime(MLP, threads=2) as rt:
            self.assertEqual(
                rt.inputs,
                [strata.TensorSpec("features", "data", np.float32, (32, 16)),
                 strata.TensorSpec("labels", "labels", np.int32, (32,))])
            self.assertEqual([p.name for p in rt.parameters],
                             ["fc0.weight", "fc0.bias", "fc1.weight",
                              "fc1.bias"])
            self.assertEqual(rt.parameters[0].shape, (16, 32))
            self.assertEqual(rt.parameters[0].role, "parameter")
            self.assertTrue(rt.device.startswith("cpu"))
            self.assertEqual(rt.step_count, 0)

    def test_training_is_deterministic(self):
        x, y = batch(1)
        with strata.Runtime(MLP, threads=2, seed=7) as rt:
            losses = [rt.step(x, y) for _ in range(20)]
            self.assertLess(losses[-1], 0.9 * losses[0])
            self.assertEqual(rt.step_count, 20)
            # Forward alone changes nothing.
            self.assertEqual(rt.forward(), rt.forward())
            self.assertEqual(rt.step_count, 20)
        # The plan as text, inputs by name, one call for all steps: the same
        # bits.
        with open(MLP) as f:
            text = f.read()
        with strata.Runtime(text, threads=1, seed=7) as rt:
            rt.bind({"features": x, "labels": y})
            self.assertEqual(rt.run(20), losses[-1])
        with strata.Runtime(json.loads(text), seed=7) as rt:
            self.assertEqual(rt.step(features=x, labels=y), losses[0])
        # float64 features and int64 labels are converted.
        with strata.Runtime(MLP, seed=7) as rt:
            self.assertEqual(rt.step(x.astype(np.float64), y.astype(np.int64)),
                             losses[0])

    def test_parameters(self):
        x, y = batch(2)
        with strata.Runtime(MLP, seed=3) as rt:
            w = rt.get_parameter("fc0.weight")
            self.assertEqual(w.shape, (16, 32))
            self.assertEqual(w.dtype, np.float32)
            self.assertGreater(np.count_nonzero(w), w.size // 2)
            changed = (0.5 * w + 0.01).astype(np.float32)
            rt.set_parameter("fc0.weight", changed)
            np.testing.assert_array_equal(rt.get_parameter("fc0.weight"),
                                          changed)
            changed_loss = rt.forward(x, y)
            rt.set_parameter("fc0.weight", w)
            self.assertNotEqual(rt.forward(), changed_loss)
            # The returned array is a copy.
            w[:] = 0
            self.assertGreater(
                np.count_nonzero(rt.get_parameter("fc0.weight")), 0)

    def test_checkpoint_round_trip(self):
        x, y = batch(3)
        path = os.path.join(self.dir, "mlp.safetensors")
        with strata.Runtime(MLP, seed=11) as rt:
            rt.bind(x, y)
            rt.run(5)
            rt.save(path)
            first = [rt.step() for _ in range(5)]
            params = {p.name: rt.get_parameter(p.name) for p in rt.parameters}
        with strata.Runtime(MLP, seed=99) as rt:
            rt.load(path)
            self.assertEqual(rt.step_count, 5)
            second = [rt.step(x, y) for _ in range(5)]
            self.assertEqual(first, second)
            for name, value in params.items():
                np.testing.assert_array_equal(rt.get_parameter(name), value)

    @unittest.skipUnless(os.environ.get("STRATA_RUN"),
                         "STRATA_RUN (a strata-run binary) is not set")
    def test_matches_strata_run(self):
        log = os.path.join(self.dir, "log.jsonl")
        subprocess.run([os.environ["STRATA_RUN"], MLP, "--steps", "6",
                        "--seed", "3", "--threads", "2", "--quiet",
                        "--log-json", log], check=True, capture_output=True)
        with open(log) as f:
            expected = [np.float32(json.loads(line)["loss"]) for line in f]
        with strata.Runtime(MLP, threads=2, seed=3) as rt:
            actual = []
            for step in range(1, 7):
                rt.bind_synthetic(step)
                actual.append(np.float32(rt.step()))
        self.assertEqual(expected, actual)

    def assertError(self, text, function, *args, **kwargs):
        with self.assertRaises(strata.StrataError) as caught:
            function(*args, **kwargs)
        self.assertIn(text, str(caught.exception))
        return caught.exception

    def test_errors(self):
        e = self.assertError("/nonexistent/plan.json", strata.Runtime,
                             "/nonexistent/plan.json")
        self.assertEqual(e.status, 1)
        e = self.assertError("<memory>", strata.Runtime, "{ [")
        self.assertEqual(e.status, 3)
        self.assertError("threads must be between 0 and 1024", strata.Runtime,
                         MLP, threads=-1)
        self.assertError("device must be cpu, cuda or cuda:N", strata.Runtime,
                         MLP, device="tpu")
        x, y = batch(4)
        rt = strata.Runtime(MLP)
        self.assertError("input 'features' is not bound", rt.step)
        self.assertError("input 'features' has shape [32, 16] (float32), "
                         "got [16, 16]", rt.step, x[:16], y)
        e = self.assertError("input 'labels' is i32 [32], got f32 data",
                             rt.bind, labels=y.astype(np.float32))
        self.assertEqual(e.status, 4)
        self.assertError("no input 'pixels' (the plan's inputs: 'features', "
                         "'labels')", rt.bind, pixels=x)
        self.assertError("3 arrays given; the plan has 2 inputs", rt.bind,
                         x, y, y)
        self.assertError("no parameter 'fc9.weight'", rt.get_parameter,
                         "fc9.weight")
        self.assertError("no parameter 'fc9.weight'", rt.set_parameter,
                         "fc9.weight", x)
        self.assertError("parameter 'fc0.bias' has shape [32]",
                         rt.set_parameter, "fc0.bias", np.zeros(31))
        self.assertError("steps must be at least 1", rt.run, 0)
        self.assertError("/nonexistent/ckpt", rt.load, "/nonexistent/ckpt")
        other = os.path.join(self.dir, "regression.safetensors")
        with strata.Runtime(REGRESSION) as regression:
            regression.save(other)
        before = rt.get_parameter("fc0.weight")
        e = self.assertError(other, rt.load, other)
        self.assertEqual(e.status, 3)
        np.testing.assert_array_equal(rt.get_parameter("fc0.weight"), before)
        # A closed runtime is a NULL handle to the library.
        rt.close()
        rt.close()
        self.assertError("session is NULL", rt.step, x, y)
        self.assertError("session is NULL", rt.get_parameter, "fc0.weight")
        self.assertError("session is NULL", rt.save, other)


if __name__ == "__main__":
    if np is None:
        print("skipped: numpy is not installed (apt install python3-numpy)")
        sys.exit(77)
    unittest.main()
