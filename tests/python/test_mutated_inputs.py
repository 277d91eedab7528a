#!/usr/bin/env python3
"""Bad input is one line and exit 2, whatever is wrong with it: the fields of shipped files changed
at random (a field removed, or given a value of another type or an odd one), each change given to
evo as a user would give it, with a fixed seed so a failure comes back. Every outcome must be
either success (rc 0) or a refusal: rc 1 or 2 with one line on stderr, never "internal error", and
no database left behind by a refusal. The forty-second session found three kinds of input that
were not (a kernel name put into a regular expression; a Kernel Tuner cache's or T4 file's fields
of another type); this keeps them, and the ones not yet found, from coming back.

  EVO_BINARY=build/evo python3 tests/python/test_mutated_inputs.py [-v]
"""
import copy
import json
import os
import random
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVO = os.environ.get("EVO_BINARY", os.path.join(ROOT, "build", "evo"))
ODD = [None, 0, -1, 1.5, "", "x", [], {}, True, 10**12, -1e300, "[1,2", "f(", [1, 2], {"a": 1}]


def places(doc, at=()):
    """Every place in a JSON document (the first 40 items of a list), the root aside."""
    if at:
        yield at
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from places(v, at + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:40]):
            yield from places(v, at + (i,))


def mutations(doc, n, seed):
    rng = random.Random(seed)
    spots = list(places(doc))
    for _ in range(n):
        d = copy.deepcopy(doc)
        at = rng.choice(spots)
        parent = d
        for k in at[:-1]:
            parent = parent[k]
        if isinstance(parent, dict) and rng.random() < 0.3:
            del parent[at[-1]]
            yield d, "%s removed" % (at,)
        else:
            parent[at[-1]] = rng.choice(ODD)
            yield d, "%s = %r" % (at, parent[at[-1]])


class MutatedInputs(unittest.TestCase):
    def check_all(self, source, n, seed, command, beside=(), subdir=""):
        """command: evo's arguments, FILE the changed file and DIR the folder it lies in."""
        doc = json.load(open(os.path.join(ROOT, source)))
        seen = 0
        for changed, what in mutations(doc, n, seed):
            with tempfile.TemporaryDirectory() as d:
                for b in beside:
                    src = os.path.join(ROOT, b)
                    dst = os.path.join(d, os.path.basename(b))
                    (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, dst)
                os.makedirs(os.path.join(d, subdir), exist_ok=True)
                f = os.path.join(d, subdir, os.path.basename(source))
                json.dump(changed, open(f, "w"))
                args = [a.replace("FILE", f).replace("DIR", d) for a in command]
                r = subprocess.run([EVO, "--db", os.path.join(d, "e.db"), "--cache", os.path.join(d, "cache")] + args,
                                   capture_output=True, text=True, timeout=120, cwd=d)
                err = [line for line in r.stderr.splitlines() if line.strip() and " info " not in line]
                with self.subTest(file=source, change=what):
                    self.assertNotIn("internal error", r.stderr)
                    self.assertIn(r.returncode, (0, 1, 2), r.stderr)
                    if r.returncode != 0:
                        self.assertEqual(len(err), 1, r.stderr)
                        self.assertFalse(os.path.exists(os.path.join(d, "e.db")), "a refusal left a database")
                seen += 1
        self.assertEqual(seen, n)

    def test_native_profiles(self):
        for i, name in enumerate(("stencil3", "reduce_sum", "sdpa_fp8_wgmma")):
            self.check_all("profiles/%s.json" % name, 40, 100 + i, ["check", "FILE"], beside=("templates",),
                           subdir="profiles")

    def test_the_hubs_t1_file(self):
        self.check_all("tests/data/t1/convolution_milo.json", 60, 7, ["check", "FILE"],
                       beside=("tests/data/t1/convolution_milo.cu",))

    def test_kernel_tuner_cache_and_t4_files(self):
        beside = ("tests/data/t1/small_saxpy.json", "tests/data/t1/small_saxpy.cu")
        for i, name in enumerate(("small_saxpy_cache.json", "small_saxpy_t4.json")):
            self.check_all("tests/data/t1/" + name, 60, 20 + i,
                           ["import-landscape", "FILE", "--t1", "DIR/small_saxpy.json", "--to", "DIR/l.json"], beside=beside)

    def test_a_landscape_replayed(self):
        self.check_all("tests/data/held_out/landscape_kt_stencil_h200.json", 30, 3,
                       ["run", "--replay", "FILE", "--budget", "4", "-q", "--no-sanitize"])


if __name__ == "__main__":
    unittest.main()
