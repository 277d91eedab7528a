"""python/evo_torch.py without a GPU: its expressions agree with evo's (muParser) on the forms the
profiles use, sizes are read from tensor shapes, a call's mistakes are one clear error, and the
dispatch rule is the header's. The GPU side (launching, against SDPA) is tests/gpu/torch_check.py.
"""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import evo_torch  # noqa: E402
from evo_torch import EvoTorchError, evaluate  # noqa: E402


class FakeTensor:
    """What bind() reads of a tensor: its shape."""

    def __init__(self, *shape):
        self.shape = shape


def export_json(folder, name, knobs, problem, sizes, constraints):
    """A minimal evo-export/1 file for a GEMM-like kernel C[M,N] = A[M,K] B[K,N], with a cubin stand-in."""
    with open(os.path.join(folder, name + ".cubin"), "wb") as f:
        f.write(b"\x7fELF stand-in")
    meta = {
        "format": "evo-export/1", "profile": "toy", "kernel": "toy", "entry": "toy__" + problem,
        "lowered_name": "toy", "cubin": name + ".cubin", "defines": {"PAD": "8"}, "knobs": knobs,
        "problem": problem, "problem_sizes": sizes, "sizes": sorted(sizes),
        "launch": {"grid_expr": ["cdiv(N, BLOCK)", "cdiv(M, BLOCK)", 1], "block_expr": ["WARPS * 32", 1, 1],
                   "shared_bytes_expr": "2 * BLOCK * (BLOCK + PAD) * 2"},
        "args": ["A", "B", "C", "alpha", "M", "N", "K"],
        "buffers": [
            {"name": "A", "dtype": "f16", "shape": ["M", "K"], "role": "input", "init": {"dist": "normal"}, "torch_dtype": "float16"},
            {"name": "B", "dtype": "f16", "shape": ["K", "N"], "role": "input", "init": {"dist": "normal"}, "torch_dtype": "float16"},
            {"name": "C", "dtype": "f32", "shape": ["M", "N"], "role": "output", "init": {"dist": "normal"}, "torch_dtype": "float32"},
        ],
        "scalars": [{"name": "alpha", "dtype": "f32", "value": "1 / sqrt(K)"}],
        "constraints": constraints,
    }
    with open(os.path.join(folder, name + ".json"), "w") as f:
        json.dump(meta, f)
    return meta


class Expressions(unittest.TestCase):
    def test_arithmetic_and_precedence_as_muparser(self):
        v = {"S": 250, "TILE_M": 64, "D": 64}
        self.assertEqual(evaluate("cdiv(S, TILE_M)", v), 4)
        self.assertEqual(evaluate("-2^2", {}), -4)        # muParser: unary minus below ^
        self.assertEqual(evaluate("2^-1", {}), 0.5)
        self.assertEqual(evaluate("2^3^2", {}), 512)      # right-associative
        self.assertEqual(evaluate("7 % 3 + 1", {}), 2)
        self.assertEqual(evaluate("-1 % 32", {}), -1)     # evo's %: C's remainder
        self.assertEqual(evaluate("pymod(-1, 32)", {}), 31)  # Python's, as a T1 condition means it
        self.assertEqual(evaluate("1 + 2 * 3 == 7 && 4 > 3", {}), 1)
        self.assertEqual(evaluate("0 || 0", {}), 0)
        self.assertEqual(evaluate("S > 200 ? 1 : 2", v), 1)
        self.assertEqual(evaluate("max(1, D / 128, 3)", v), 3)
        self.assertEqual(evaluate("log2i(100)", {}), 6)
        self.assertAlmostEqual(evaluate("1 / sqrt(D)", v), 0.125)

    def test_a_profile_constraint(self):
        c = ("TILE_M * HEAD_DIM + (2 - V_REGS) * STAGES * TILE_N * HEAD_DIM + TILE_N * HEAD_DIM * 2 + "
             "(SPLIT_KV > 1) * ((SPLIT_KV - 1) * max(1, TILE_M / (16 * SPLIT_KV)) * (64 * HEAD_DIM + 512) + 16) + 1024")
        v = {"TILE_M": 128, "HEAD_DIM": 64, "V_REGS": 0, "STAGES": 2, "TILE_N": 64, "SPLIT_KV": 2}
        self.assertEqual(evaluate(c, v), 128 * 64 + 2 * 2 * 64 * 64 + 64 * 64 * 2 + (1 * 4 * (64 * 64 + 512) + 16) + 1024)

    def test_mistakes_name_the_expression(self):
        with self.assertRaisesRegex(EvoTorchError, r"'S \+ X'.*'X' is neither a size"):
            evaluate("S + X", {"S": 1})
        with self.assertRaisesRegex(EvoTorchError, r"missing '\)'"):
            evaluate("(1 + 2", {})
        with self.assertRaisesRegex(EvoTorchError, "unknown function"):
            evaluate("frob(1)", {})


class Calls(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        ok = ["M % BLOCK == 0", "N % BLOCK == 0", "WARPS * 32 <= 1024"]
        export_json(self.dir, "toy-small", {"BLOCK": 32, "WARPS": 2}, "small", {"M": 256, "N": 256, "K": 256}, ok)
        export_json(self.dir, "toy-big", {"BLOCK": 128, "WARPS": 8}, "big", {"M": 2048, "N": 2048, "K": 2048}, ok)
        table = {"format": "evo-dispatch/1", "sizes": ["K", "M", "N"],
                 "entries": [{"problem": "small", "sizes": {"M": 256, "N": 256, "K": 256}, "export": "toy-small.json"},
                             {"problem": "big", "sizes": {"M": 2048, "N": 2048, "K": 2048}, "export": "toy-big.json"}]}
        with open(os.path.join(self.dir, "toy_dispatch.json"), "w") as f:
            json.dump(table, f)

    def tearDown(self):
        self.tmp.cleanup()

    def test_sizes_come_from_the_shapes(self):
        k = evo_torch.load(os.path.join(self.dir, "toy-small.json"))
        tensors, sizes, extras = k.bind((FakeTensor(64, 32), FakeTensor(32, 96)), {})
        self.assertEqual(sizes, {"K": 32, "M": 64, "N": 96})
        self.assertEqual(sorted(tensors), ["A", "B"])
        self.assertEqual(k.shape(k.buffers[2], sizes), (64, 96))
        self.assertEqual(k.geometry(sizes), ((3, 2, 1), (64, 1, 1), 2 * 32 * 40 * 2))  # PAD is the define 8

    def test_num_sms_is_the_devices_count_and_a_size_of_that_name_wins(self):
        k = evo_torch.load(os.path.join(self.dir, "toy-small.json"))
        k.launches[0]["launch"]["grid_expr"] = ["min(cdiv(N, BLOCK) * cdiv(M, BLOCK), NUM_SMS)", 1, 1]  # a persistent grid
        sizes = {"K": 4096.0, "M": 4096.0, "N": 4096.0}
        real = evo_torch._device_sms
        try:
            evo_torch._device_sms = lambda: 114  # an H100 PCIe
            self.assertEqual(k.geometry(sizes)[0], (114, 1, 1))
            self.assertEqual(k.geometry(dict(sizes, NUM_SMS=16.0))[0], (16, 1, 1))
        finally:
            evo_torch._device_sms = real
        self.assertGreater(evo_torch._device_sms(), 0)  # torch's device's, or 132 without one

    def test_a_shapes_plan_holds_geometry_and_arguments(self):
        k = evo_torch.load(os.path.join(self.dir, "toy-small.json"))
        sizes = {"K": 64.0, "M": 64.0, "N": 96.0}
        p = k.plan(sizes)
        self.assertIs(k.plan(dict(sizes)), p)  # once per shape
        grid, block, smem, args = p.launches[0]
        self.assertEqual((grid, block, smem), k.geometry(sizes))
        self.assertEqual([a[0] for a in args], ["tensor", "tensor", "tensor", "scalar", "const", "const", "const"])
        self.assertAlmostEqual(args[3][2][1].value, 0.125)  # alpha's default: 1 / sqrt(K)
        self.assertEqual([a[2].value for a in args[4:]], [64, 96, 64])  # M, N, K as int32
        self.assertEqual(p.shapes["C"], (64, 96))
        with self.assertRaisesRegex(EvoTorchError, "constraints do not hold at K=64, M=48, N=96: M % BLOCK == 0"):
            k.plan({"K": 64.0, "M": 48.0, "N": 96.0})

    def test_a_call_that_cannot_be_made_says_why(self):
        k = evo_torch.load(os.path.join(self.dir, "toy-small.json"))
        with self.assertRaisesRegex(EvoTorchError, "size K is 32 elsewhere but B has 48"):
            k.bind((FakeTensor(64, 32), FakeTensor(48, 96)), {})
        with self.assertRaisesRegex(EvoTorchError, "input B not given"):
            k.bind((FakeTensor(64, 32),), {})
        with self.assertRaisesRegex(EvoTorchError, "unknown argument causal="):
            k.bind((FakeTensor(64, 32), FakeTensor(32, 96)), {"causal": 1})
        with self.assertRaisesRegex(EvoTorchError, "3 positional tensors, the kernel takes 2"):
            k.bind((FakeTensor(1, 1),) * 3, {})
        # Scalars and sizes by name are taken; a size given and in a shape must agree.
        _, sizes, extras = k.bind((FakeTensor(64, 32), FakeTensor(32, 96)), {"alpha": 0.5, "M": 64})
        self.assertEqual(extras["alpha"], 0.5)
        with self.assertRaisesRegex(EvoTorchError, "size M is 65"):
            k.bind((FakeTensor(64, 32), FakeTensor(32, 96)), {"M": 65})

    def test_dispatch_picks_by_the_headers_rule(self):
        d = evo_torch.load(os.path.join(self.dir, "toy_dispatch.json"))
        self.assertIsInstance(d, evo_torch.Dispatch)
        cube = lambda n: {"M": n, "N": n, "K": n}
        self.assertEqual(d.pick(cube(256)), 0)     # its own shape
        self.assertEqual(d.pick(cube(2048)), 1)
        self.assertEqual(d.pick(cube(1024)), 1)    # about 3 x 1 from big against 3 x 2 from small
        self.assertEqual(d.pick(cube(96)), 0)      # 128 does not divide 96: big's constraints fail
        self.assertEqual(d.pick(cube(100)), None)  # no kernel's constraints hold
        # Two kernels tuned at the same shape: the earlier in the table wins, whichever it is.
        twin = {"format": "evo-dispatch/1", "sizes": ["K", "M", "N"],
                "entries": [{"problem": "big", "sizes": cube(256), "export": "toy-big.json"},
                            {"problem": "small", "sizes": cube(256), "export": "toy-small.json"}]}
        with open(os.path.join(self.dir, "twin_dispatch.json"), "w") as f:
            json.dump(twin, f)
        self.assertEqual(evo_torch.load(os.path.join(self.dir, "twin_dispatch.json")).pick(cube(2048)), 0)

    def test_a_file_that_is_no_export_is_refused(self):
        bad = os.path.join(self.dir, "other.json")
        with open(bad, "w") as f:
            json.dump({"format": "t4"}, f)
        with self.assertRaisesRegex(EvoTorchError, "neither an evo dispatch table nor an evo export"):
            evo_torch.load(bad)
        os.remove(os.path.join(self.dir, "toy-big.cubin"))
        with self.assertRaisesRegex(EvoTorchError, "toy-big.cubin is missing"):
            evo_torch.load(os.path.join(self.dir, "toy_dispatch.json"))

    def test_import_needs_no_torch(self):
        self.assertNotIn("torch", sys.modules)


if __name__ == "__main__":
    unittest.main()
