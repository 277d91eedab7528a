"""evo.tune without a GPU: the whole path through a replay (profile and data written, evo run on
them, the run read back into Kernel Tuner's results), the profile Kernel Tuner's arguments become,
restrictions that mean in evo what they mean in Python, and every mistake in a call as one
exception naming it, raised before anything is written or run.

    EVO_BINARY=build/evo python3 tests/python/test_evo_tune.py -v      (ctest: python.evo_tune)
"""
import contextlib
import io
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "python"))
import evo  # noqa: E402

EVO = os.environ.get("EVO_BINARY") or str(ROOT / "build" / "evo")

# Kernel Tuner's matmul example in miniature: its kernel's shape, parameters and restriction.
MATMUL = r"""
__global__ void matmul_kernel(float *C, float *A, float *B) {
  int x = blockIdx.x * block_size_x * tile_size_x + threadIdx.x;
  int y = blockIdx.y * block_size_y * tile_size_y + threadIdx.y;
  for (int i = 0; i < tile_size_y; i++)
    for (int j = 0; j < tile_size_x; j++) {
      float sum = 0.0f;
      for (int k = 0; k < 32; k++) sum += A[(y + i * block_size_y) * 32 + k] * B[k * 32 + x + j * block_size_x];
      C[(y + i * block_size_y) * 32 + x + j * block_size_x] = sum;
    }
}
"""
TUNE = {"block_size_x": [16, 32, 64], "block_size_y": [1, 2, 4, 8, 16, 32], "tile_size_x": [1, 2],
        "tile_size_y": [1, 2, 4]}
RESTRICT = ["block_size_x == block_size_y * tile_size_y"]
N = 32

# What the call above must become, written out by hand: evo refuses a replay whose landscape
# records another space than the profile evo.tune wrote.
SPACE = {
    "description": "written by tests/python/test_evo_tune.py",
    "knobs": TUNE,
    "constraints": ["block_size_x == block_size_y * tile_size_y", "block_size_x * block_size_y <= 1024"],
    "defines": {"block_size_z": "1", "kernel_tuner": "1"},
    "problems": [{"name": "main", "sizes": {"problem_size_x": N, "problem_size_y": N}}],
    "objective": "main",
    "launch": {"grid": ["cdiv(problem_size_x, block_size_x * tile_size_x)",
                        "cdiv(problem_size_y, block_size_y * tile_size_y)", "1"],
               "block": ["block_size_x", "block_size_y", "1"], "shared_bytes": "0"},
}
# Kernel Tuner's default configuration is every first value; (16, 1, 1, 1) breaks the restriction,
# so the first configuration in tune_params' order that keeps it.
BASELINE = {"block_size_x": 16, "block_size_y": 4, "tile_size_x": 1, "tile_size_y": 4}
VECTOR_ADD = """
__global__ void vector_add(float *c, float *a, float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i<n) {
        c[i] = a[i] + b[i];
    }
}
"""


def valid_configs():
    names = list(TUNE)
    out = []
    for values in itertools.product(*TUNE.values()):
        c = dict(zip(names, values))
        if c["block_size_x"] == c["block_size_y"] * c["tile_size_y"] and c["block_size_x"] * c["block_size_y"] <= 1024:
            out.append(c)
    return out


def recorded(c):
    """The landscape's point for a configuration: made-up medians, two failures of the kinds a GPU gives."""
    if c["block_size_x"] == 64 and c["tile_size_x"] == 2:
        return {"status": "green_failed", "message": "GREEN: max_abs 3.1 > 0.01 (problem main)"}
    if c["block_size_y"] == 32:
        return {"status": "compile_error", "message": "NVRTC: error"}
    p50 = 100.0 + c["block_size_x"] - 20 * c["tile_size_x"] + 3 * c["block_size_y"]
    return {"status": "measured", "p50_us": p50, "p90_us": p50 * 1.01, "cv": 0.01}


def write_landscape(path, space=SPACE):
    configs = [dict(knobs=c, **recorded(c)) for c in valid_configs()]
    doc = {"format": "evo-landscape/1", "profile": "matmul_kernel", "problem": "main", "device": "test landscape",
           "baseline": BASELINE, "space": space, "configs": configs}
    Path(path).write_text(json.dumps(doc))
    return path


def matmul_arguments(seed=7):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((N, N), dtype=np.float32)
    B = rng.standard_normal((N, N), dtype=np.float32)
    C = np.zeros_like(A)
    return [C, A, B], [A @ B, None, None]


class Folder(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="evo-tune-test-"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


class ThroughAReplay(Folder):
    def tune(self, landscape, problem=(N, N), **kw):
        args, answer = matmul_arguments()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            got = evo.tune("matmul_kernel", MATMUL, problem, args, TUNE, grid_div_x=["block_size_x", "tile_size_x"],
                           grid_div_y=["block_size_y", "tile_size_y"], restrictions=RESTRICT, answer=answer,
                           strategy="brute_force", replay=landscape, evo_binary=EVO, **kw)
        return got, out.getvalue()

    def test_profile_data_evo_and_results_in_kernel_tuners_shape(self):
        landscape = write_landscape(self.tmp / "landscape.json")
        work = self.tmp / "work"
        (results, env), printed = self.tune(landscape, workdir=work, budget=100, verbose=True)

        # Every valid configuration once (the exhaustive strategy, a budget above the space), with
        # the landscape's median in milliseconds, or no time and evo's status where it failed.
        valid = valid_configs()
        self.assertEqual(len(results), len(valid))
        self.assertEqual(sorted(tuple(r[k] for k in TUNE) for r in results), sorted(tuple(c.values()) for c in valid))
        for r in results:
            want = recorded({k: r[k] for k in TUNE})
            self.assertEqual(r["status"], want["status"], r)
            if want["status"] == "measured":
                self.assertAlmostEqual(r["time"], want["p50_us"] / 1000, places=9)
            else:
                self.assertIsNone(r["time"], r)
        measured = [r for r in results if r["time"] is not None]
        self.assertEqual(env["best_config"], min(measured, key=lambda r: r["time"]))
        self.assertEqual({k: env["best_config"][k] for k in TUNE},  # 88 us, the landscape's fastest
                         {"block_size_x": 16, "block_size_y": 4, "tile_size_x": 2, "tile_size_y": 4})
        self.assertEqual({r["status"] for r in results}, {"measured", "green_failed", "compile_error"})
        self.assertEqual(env["measured"], len(measured))
        json.dumps([results, env])  # a Kernel Tuner script json.dumps what tune_kernel returned
        # verbose: Kernel Tuner's line per configuration, and evo's debug log.
        self.assertIn("block_size_x=16, block_size_y=4, tile_size_x=2, tile_size_y=4, time=0.088 ms", printed)
        self.assertIn("block_size_x=64, block_size_y=16, tile_size_x=2, tile_size_y=4: green_failed", printed)
        self.assertIn(" -v ", env["command"])
        try:
            import pandas  # noqa: F401
        except ImportError:
            with self.assertRaisesRegex(ImportError, "pandas"):
                results.dataframe()
        else:
            self.assertEqual(list(results.dataframe()["time"].isna()), [r["time"] is None for r in results])

        # What was written: the profile evo read (it checked the landscape against it), its data.
        profile = json.loads((work / "matmul_kernel.json").read_text())
        self.assertEqual(profile["baseline"], BASELINE)
        self.assertEqual([(b["name"], b["dtype"], b["shape"], b["role"]) for b in profile["buffers"]],
                         [("C", "f32", [N, N], "inout"), ("A", "f32", [N, N], "input"), ("B", "f32", [N, N], "input")])
        self.assertEqual(profile["args"], ["C", "A", "B"])
        self.assertEqual(profile["reference"], {"data": {
            "inputs": {"C": "data/C.npy", "A": "data/A.npy", "B": "data/B.npy"}, "outputs": {"C": "data/C.answer.npy"}}})
        self.assertEqual(profile["gates"]["green"], {"atol": 1e-6, "rtol": 1e-5, "max_bad_pct": 0})
        self.assertEqual(profile["gates"]["static"], {"max_spill_bytes": -1})  # Kernel Tuner measures spilling ones
        args, answer = matmul_arguments()
        for name, array in zip("CAB", args):
            np.testing.assert_array_equal(np.load(work / "data" / f"{name}.npy"), array)
        np.testing.assert_array_equal(np.load(work / "data" / "C.answer.npy"), answer[0])
        self.assertEqual(Path(env["results_file"]), work.resolve() / "results.t4.json")

        # The command it printed runs the same tuning from a shell: evo finds it is the same search
        # and repeats it from the database.
        self.assertIn(env["command"], printed)
        self.assertIn("--replay", env["command"])
        again = subprocess.run(["sh", str(work / "tune.sh")], capture_output=True, text=True)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn(f"run {env['run'] + 1} finished", again.stdout)

        # Kernel Tuner's store_output_file writes the run's T4 results.
        out = evo.file_utils.store_output_file(str(self.tmp / "kt_results"), results, TUNE)
        self.assertEqual(out, self.tmp / "kt_results.json")
        self.assertEqual(len(json.loads(out.read_text())["results"]), len(valid))
        meta = evo.file_utils.store_metadata_file(str(self.tmp / "kt_meta.json"))
        self.assertEqual(json.loads(meta.read_text())["metadata"]["evo"]["device"], "replay:landscape")

    def test_without_an_answer_the_default_configuration_is_the_reference(self):
        # Kernel Tuner's vector_add passes no answer: evo reads the profile whose reference is the
        # kernel at the baseline (it checked it against the landscape) and the run comes back alike.
        args, _ = matmul_arguments()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            results, env = evo.tune("matmul_kernel", MATMUL, (N, N), args, TUNE, grid_div_x=["block_size_x", "tile_size_x"],
                                    grid_div_y=["block_size_y", "tile_size_y"], restrictions=RESTRICT,
                                    strategy="brute_force", replay=write_landscape(self.tmp / "landscape.json"),
                                    evo_binary=EVO, workdir=self.tmp / "work", budget=100)
        profile = json.loads((self.tmp / "work" / "matmul_kernel.json").read_text())
        self.assertEqual(profile["reference"], {"config": "baseline"})
        # Three drawn input sets, as for a T1 file (five trials a seed stored 15 sets of full-size arrays).
        self.assertEqual((profile["gates"]["green"]["seeds"], profile["gates"]["green"]["trials"]), ([0, 1, 2], 1))
        self.assertEqual(len(results), len(valid_configs()))
        self.assertEqual({k: env["best_config"][k] for k in TUNE},
                         {"block_size_x": 16, "block_size_y": 4, "tile_size_x": 2, "tile_size_y": 4})

    def test_evo_refuses_a_landscape_of_another_space(self):
        other = dict(SPACE, constraints=["block_size_x >= block_size_y * tile_size_y", SPACE["constraints"][1]])
        with self.assertRaises(evo.EvoRunError) as e:
            self.tune(write_landscape(self.tmp / "other.json", other), workdir=self.tmp / "a")
        self.assertIn("constraints:", str(e.exception))
        self.assertIn("the landscape records", str(e.exception))
        with self.assertRaises(evo.EvoRunError) as e:
            self.tune(write_landscape(self.tmp / "same.json"), problem=(N, 2 * N), workdir=self.tmp / "b")
        self.assertIn("problems[0].sizes:", str(e.exception))


class TheProfile(Folder):
    def test_without_an_answer_the_default_configuration_is_the_reference(self):
        size = 1000
        rng = np.random.default_rng(1)
        a = rng.standard_normal(size).astype(np.float32)
        idx = rng.integers(3, 17, size).astype(np.int32)
        ones = np.full(size, 2.5, dtype=np.float16)
        c = np.zeros(size, dtype=np.float32)
        p = evo.write_profile("vector_add", VECTOR_ADD.replace("float *b", "float *b, int *idx, half *h"), size,
                              [c, a, a, idx, ones, np.int32(size)], {"block_size_x": [128 + 64 * i for i in range(15)]},
                              workdir=self.tmp / "w")
        profile = json.loads(Path(p).read_text())
        self.assertEqual(profile["reference"], {"config": "baseline"})
        self.assertEqual(profile["baseline"], {"block_size_x": 128})
        b = {x["name"]: x for x in profile["buffers"]}
        self.assertEqual([x["role"] for x in profile["buffers"]], ["inout"] * 5)
        self.assertEqual(b["c"]["init"], {"dist": "zeros"})
        self.assertEqual(b["a"]["init"]["dist"], "normal")
        self.assertAlmostEqual(b["a"]["init"]["mean"], float(a.astype(np.float64).mean()))
        self.assertAlmostEqual(b["a"]["init"]["std"], float(a.astype(np.float64).std()))
        self.assertEqual(b["idx"]["init"], {"dist": "uniform", "low": int(idx.min()), "high": int(idx.max())})
        self.assertEqual((b["h"]["dtype"], b["h"]["init"]), ("f16", {"dist": "constant", "value": 2.5}))
        self.assertEqual(profile["scalars"], [{"name": "n", "dtype": "i32", "value": "1000"}])
        # No block dimension can pass 1024 threads here: no constraint says so.
        self.assertNotIn("constraints", profile)
        self.assertFalse((self.tmp / "w" / "data").exists(), "no data without an answer")
        # evo reads it: the kernel at its baseline as the reference, the inout buffers and their fills.
        check = subprocess.run([EVO, "check", str(p), "--json"], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertEqual(json.loads(check.stdout)["valid"], 15)

    def test_kernel_tuners_launch_conventions(self):
        # No tunable block_size_x: Kernel Tuner's block is 256 wide and its grid divisor is 1.
        src = ("__constant__ float table[4];\n__global__ void k(float *x, int n) { x[0] = UNROLL + grid_size_x + "
               "grid_size_y + table[0]; }")
        x = np.ones((6, 10), dtype=np.float32)
        p = evo.write_profile("k", src, (10, 6), [x, np.int32(60)], {"UNROLL": [1, 2, 4], "by": [2, 3]},
                              grid_div_y=["by", 2], block_size_names=["bx", "by"], smem_args={"size": "UNROLL * 4 + 3"},
                              cmem_args={"table": np.arange(4, dtype=np.float32)}, answer=[x + 1, None],
                              compiler_options=["--use_fast_math"], workdir=self.tmp / "w")
        profile = json.loads(Path(p).read_text())
        self.assertEqual(profile["launch"], {"grid": ["problem_size_x", "cdiv(problem_size_y, by * 2)", "1"],
                                             "block": ["256", "by", "1"], "shared_bytes": "UNROLL * 4 + 3"})
        self.assertEqual(profile["defines"], {"kernel_tuner": 1, "bx": 256, "block_size_z": 1, "grid_size_x": 10,
                                              "grid_size_y": "((6 + (by) * (2) - 1) / ((by) * (2)))"})
        self.assertEqual(profile["compile_options"], ["--use_fast_math"])
        self.assertEqual(profile["buffers"][-1], {"name": "table", "dtype": "f32", "shape": [4], "symbol": "table"})
        self.assertEqual(profile["reference"]["data"]["inputs"]["table"], "data/table.npy")
        np.testing.assert_array_equal(np.load(self.tmp / "w" / "data" / "x.answer.npy"), x + 1)
        # A size that is an expression of tunable parameters stays in the grid (Kernel Tuner's strings).
        q = evo.write_profile("k", src.replace("grid_size_y", "1"), (10, "by * 3"), [x, np.int32(60)], {"UNROLL": [1, 2, 4], "by": [2, 3]},
                              grid_div_y=["by", 2], block_size_names=["bx", "by"], answer=[x + 1, None],
                              cmem_args={"table": np.arange(4, dtype=np.float32)}, workdir=self.tmp / "v")
        q = json.loads(Path(q).read_text())
        self.assertEqual(q["launch"]["grid"], ["problem_size_x", "cdiv(by * 3, by * 2)", "1"])
        self.assertEqual(q["problems"], [{"name": "main", "sizes": {"problem_size_x": 10}}])
        self.assertNotIn("grid_size_y", q["defines"])
        with self.assertRaisesRegex(ValueError, "grid_div_y: the kernel uses grid_size_y"):  # no C macro of it
            evo.write_profile("k", src, (10, "by * 3"), [x, np.int32(60)], {"UNROLL": [1, 2, 4], "by": [2, 3]},
                              grid_div_y=["by", 2], block_size_names=["bx", "by"], answer=[x + 1, None],
                              cmem_args={"table": np.arange(4, dtype=np.float32)}, workdir=self.tmp / "u")
        # evo reads it as written: the launch, the data, the symbol.
        check = subprocess.run([EVO, "check", str(p), "--json"], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertEqual(json.loads(check.stdout)["valid"], 6)
        # NVRTC compiles the kernel with Kernel Tuner's macros as evo passes them (grid_size_y's C
        # expression of a knob, the __constant__ table, a C++ entry name), every configuration.
        built = subprocess.run([EVO, "--cache", str(self.tmp / "cache"), "-j", "2", "compile", str(p), "--all", "--json"],
                               capture_output=True, text=True)
        self.assertEqual(built.returncode, 0, built.stderr)
        verdicts = json.loads(built.stdout)["results"]
        self.assertEqual(len(verdicts), 6)
        self.assertTrue(all(v["build"]["ok"] and v["static"]["outcome"] == "passed" for v in verdicts), built.stdout)

    def test_every_numeric_numpy_type_is_a_buffer_or_scalar_of_its_own(self):
        # Kernel Tuner's dedispersion-like calls: a uint8 signal, a float64 sum, a bool mask, an int64
        # offset and a uint32 count; an answer in uint8 is stored as uint8 (evo reads |u1).
        size = 256
        sig = (np.arange(size) % 251).astype(np.uint8)
        out = np.zeros(size, dtype=np.float64)
        mask = np.zeros(size, dtype=np.bool_)
        src = VECTOR_ADD.replace("float *c, float *a, float *b, int n",
                                 "double *c, unsigned char *a, bool *b, long long off, unsigned int n")
        p = evo.write_profile("vector_add", src, size, [out, sig, mask, np.int64(5_000_000_000), np.uint32(size)],
                              {"block_size_x": [32, 64]}, answer=[out + 1, None, mask, None, None], workdir=self.tmp / "w")
        profile = json.loads(Path(p).read_text())
        b = {x["name"]: x for x in profile["buffers"]}
        self.assertEqual([b[n]["dtype"] for n in ("c", "a", "b")], ["f64", "u8", "u8"])
        self.assertEqual([(s["dtype"], s["value"]) for s in profile["scalars"]], [("i64", "5000000000"), ("u32", "256")])
        stored = np.load(Path(p).parent / "data" / "b.npy")
        self.assertEqual(stored.dtype, np.dtype(np.uint8))
        check = subprocess.run([EVO, "check", str(p), "--json"], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stderr)

    def test_an_answer_is_compared_in_the_arguments_type_and_shape(self):
        c = np.zeros(1000, dtype=np.float32)
        expected = np.arange(1000, dtype=np.float64).reshape(10, 100)  # float64 holds float32: Kernel Tuner's rule
        p = evo.write_profile("vector_add", VECTOR_ADD, 1000, [c, c, c, np.int32(1000)], {"block_size_x": [32, 64]},
                              answer=[expected, None, None, None], workdir=self.tmp / "w")
        stored = np.load(Path(p).parent / "data" / "c.answer.npy")
        self.assertEqual((stored.dtype, stored.shape), (np.dtype(np.float32), (1000,)))
        np.testing.assert_array_equal(stored, expected.ravel().astype(np.float32))


class Restrictions(Folder):
    """Each restriction, translated, leaves evo (`evo check`, muParser) the configurations Python's
    eval leaves (a division by zero, which raises in Python, leaves none)."""

    PARAMS = {"a": [0, 1, 2, 3, 4, 5, 6, 7, 8], "b": [0, 1, 2, 3], "c": [-3, -1, 0, 2]}
    CASES = ["a // b > 1", "a % 3 == 1 or not b", "c % 3 == 2", "-c % 4 == 1", "1 < a <= 4", "a ** 2 >= 16 and c < 0",
             "max(a, b) < 6", "min(a, c, b) == 0", "a in (1, 4, 7)", "b not in [0, 3]", "(a if b > 1 else b) == 2",
             "a / 4 > 0.5 and b != 2", "a - -c > 3", "abs(c) * b >= 2", "(a < b) == (b < 2)", "a % (b + 1) == 0",
             "c // 2 == -1", "a * -1 < -3", "a / (b - 1) >= 2", "not (a > 2 and b > 1) or c == 2", "True", "a >= 2 ** b"]

    def test_evo_leaves_the_configurations_python_leaves(self):
        src = "__global__ void k(float *x) { x[0] = a + b + c; }"
        names = list(self.PARAMS)
        for i, r in enumerate(self.CASES):
            with self.subTest(restriction=r):
                def holds(values):
                    try:
                        return bool(eval(r, {"__builtins__": {"max": max, "min": min, "abs": abs}}, dict(zip(names, values))))
                    except ZeroDivisionError:
                        return False
                python = sum(holds(v) for v in itertools.product(*self.PARAMS.values()))
                p = evo.write_profile("k", src, 1, [np.zeros(1, np.float32)], self.PARAMS, restrictions=[r],
                                      answer=[np.zeros(1, np.float32)], workdir=self.tmp / str(i))
                check = subprocess.run([EVO, "check", str(p), "--json"], capture_output=True, text=True)
                self.assertEqual(check.returncode, 0, check.stderr)
                got = json.loads(check.stdout)
                self.assertEqual(got["valid"], python, json.loads(Path(p).read_text())["constraints"])
                self.assertTrue(got["baseline_valid"])


class UserErrors(Folder):
    """One exception naming the mistake, before anything is written or evo runs."""

    def setUp(self):
        super().setUp()
        # An evo that leaves a mark if it is ever run.
        self.mark = self.tmp / "evo-ran"
        self.fake = self.tmp / "fake-evo"
        self.fake.write_text(f"#!/bin/sh\ntouch {self.mark}\nexit 1\n")
        self.fake.chmod(0o755)
        rng = np.random.default_rng(3)
        self.a = rng.standard_normal(100).astype(np.float32)
        self.c = np.zeros_like(self.a)

    def call(self, **change):
        kw = dict(kernel_name="vector_add", kernel_source=VECTOR_ADD, problem_size=100,
                  arguments=[self.c, self.a, self.a, np.int32(100)], tune_params={"block_size_x": [32, 64]},
                  evo_binary=str(self.fake), workdir=self.tmp / "work", quiet=True)
        kw.update(change)
        return evo.tune(**kw)

    def expect(self, error, names, **change):
        with self.assertRaises(error) as e:
            self.call(**change)
        for n in names:
            self.assertIn(n, str(e.exception))
        self.assertFalse(self.mark.exists(), "evo ran")
        self.assertFalse((self.tmp / "work").exists(), "something was written")
        return str(e.exception)

    def test_each_mistake(self):
        args = lambda i, x: [x if j == i else v for j, v in enumerate([self.c, self.a, self.a, np.int32(100)])]
        cases = [
            (TypeError, ["arguments[1] (a)", "complex64"], dict(arguments=args(1, self.a.astype(np.complex64)))),
            (TypeError, ["arguments[2] (b)", "complex128"], dict(arguments=args(2, self.a.astype(np.complex128)))),
            (TypeError, ["arguments[3] (n)", "complex64"], dict(arguments=args(3, np.complex64(100)))),
            (TypeError, ["arguments[3] (n)", "int"], dict(arguments=args(3, 100))),
            (TypeError, ["arguments[1] (a)", "list"], dict(arguments=args(1, [1.0, 2.0]))),
            (ValueError, ["answer", "2 entries", "4"], dict(answer=[self.a, None])),
            (ValueError, ["answer[0] (c)", "99 elements"], dict(answer=[self.a[:99], None, None, None])),
            (TypeError, ["answer[0] (c)", "int32"], dict(answer=[self.a.astype(np.int32), None, None, None])),
            (TypeError, ["answer[0] (c)", "list"], dict(answer=[list(self.a), None, None, None])),
            (TypeError, ["answer[3] (n)", "scalar"], dict(answer=[None, None, None, np.int32(1)])),
            (ValueError, ["answer[0] (c)", "nan"], dict(answer=[np.full(100, np.nan, np.float32), None, None, None])),
            (ValueError, ["answer", "every entry is None"], dict(answer=[None] * 4)),
            (ValueError, ["tune_params", "unroll", "never mentions"], dict(tune_params={"block_size_x": [32], "unroll": [1, 2]})),
            (ValueError, ["tune_params", "block_size_x", "64.0"], dict(tune_params={"block_size_x": [32, 64.0]})),
            (ValueError, ["tune_params", "block_size_x", "'64'"], dict(tune_params={"block_size_x": [32, "64"]})),
            (ValueError, ["tune_params", "block_size_x", "True"], dict(tune_params={"block_size_x": [True]})),
            (ValueError, ["tune_params", "time", "reserved"], dict(tune_params={"block_size_x": [32], "time": [1]})),
            (ValueError, ["restrictions[0]", "block_size_x >", "does not parse"], dict(restrictions=["block_size_x >"])),
            (ValueError, ["restrictions[1]", "block_size_x & 32", "&"], dict(restrictions=["True", "block_size_x & 32"])),
            (ValueError, ["restrictions[0]", "warps", "not a tunable parameter"], dict(restrictions=["warps > 1"])),
            (ValueError, ["restrictions[0]", "len()"], dict(restrictions=["len(block_size_x) > 1"])),
            (ValueError, ["restrictions", "no configuration"], dict(restrictions=["block_size_x > 64"])),
            (TypeError, ["restrictions[0]", "function"], dict(restrictions=[lambda p: True])),
            (ValueError, ["kernel_name", "vector_sub"], dict(kernel_name="vector_sub")),
            (ValueError, ["kernel_source", "nope.cu"], dict(kernel_source="nope.cu")),
            (ValueError, ["cmem_args['d_x']", "no __constant__"], dict(cmem_args={"d_x": self.a})),
            (ValueError, ["verify", "not supported"], dict(verify=lambda a, b, atol=None: True)),
            (ValueError, ["lang", "OpenCL"], dict(lang="OpenCL")),
            (ValueError, ["texmem_args", "not supported"], dict(texmem_args={"t": self.a})),
            (ValueError, ["strategy", "genetic_algorithm", "exhaustive"], dict(strategy="genetic_algorithm")),
            (TypeError, ["problem_size", "callable"], dict(problem_size=lambda p: 100)),
            (ValueError, ["budget", "0"], dict(budget=0)),
            (ValueError, ["atol", "'0.1'"], dict(atol="0.1")),
            (ValueError, ["atol", "-1"], dict(atol=-1)),
            (ValueError, ["replay", "no-such-landscape.json"], dict(replay=str(self.tmp / "no-such-landscape.json"))),
            (ValueError, ["grid_div_x", "grid_size_x"], dict(kernel_source=VECTOR_ADD.replace("threadIdx.x", "grid_size_x"),
                                                             grid_div_x=["block_size_x * 2"])),
        ]
        for error, names, change in cases:
            with self.subTest(names[0], change=names[1:]):
                self.expect(error, names, **change)

    def test_a_call_without_mistakes_runs_evo(self):
        # The same call as the cases above, unchanged: the only fault was each change.
        with self.assertRaises(evo.EvoRunError):
            self.call()
        self.assertTrue(self.mark.exists())


class TheBinary(Folder):
    def test_explicit_then_environment_then_beside_the_package(self):
        self.assertEqual(evo.find_evo_binary("/x/evo"), "/x/evo")
        # An installed prefix: <prefix>/share/evo/python/evo and <prefix>/bin/evo.
        prefix = self.tmp / "prefix"
        shutil.copytree(ROOT / "python" / "evo", prefix / "share" / "evo" / "python" / "evo")
        (prefix / "bin").mkdir()
        (prefix / "bin" / "evo").write_text("#!/bin/sh\n")
        (prefix / "bin" / "evo").chmod(0o755)
        probe = "import evo, sys; sys.stdout.write(evo.find_evo_binary())"
        env = {k: v for k, v in os.environ.items() if k != "EVO_BINARY"}
        env["PYTHONPATH"] = str(prefix / "share" / "evo" / "python")
        env["PATH"] = "/nonexistent"
        got = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
        self.assertEqual(got.stdout, str(prefix / "bin" / "evo"), got.stderr)
        env["EVO_BINARY"] = "/from/the/environment"
        got = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
        self.assertEqual(got.stdout, "/from/the/environment", got.stderr)


if __name__ == "__main__":
    unittest.main()
