#!/usr/bin/env python3
# A stand-in for `evo worker` (engine/worker.h's protocol: 4-byte little-endian length, then JSON)
# for the tests of a lost worker: each job it is sent counts one in $FAKE_WORKER_COUNT; while the
# count is at most $FAKE_WORKER_DEATHS it kills itself with SIGKILL mid-job (as `kill -9` from
# outside would), after that it answers. FAKE_WORKER_ANSWER is the answer's outcome ("passed", or
# "crash" for a kernel's own fault, answered).
import json, os, signal, struct, sys

def read_frame():
    head = sys.stdin.buffer.read(4)
    if len(head) < 4:
        sys.exit(0)
    (n,) = struct.unpack("<I", head)
    return json.loads(sys.stdin.buffer.read(n))

def send(obj):
    data = json.dumps(obj).encode()
    sys.stdout.buffer.write(struct.pack("<I", len(data)) + data)
    sys.stdout.buffer.flush()

counter = os.environ["FAKE_WORKER_COUNT"]
while True:
    msg = read_frame()
    if msg.get("type") == "quit":
        sys.exit(0)
    if msg.get("type") != "job":
        continue
    count = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
    open(counter, "w").write(str(count))
    send({"type": "beat", "step": "green: candidate launch (problem small, seed 0, trial 0)", "budget_s": 5})
    if count <= int(os.environ.get("FAKE_WORKER_DEATHS", "0")):
        os.kill(os.getpid(), signal.SIGKILL)
    outcome = os.environ.get("FAKE_WORKER_ANSWER", "passed")
    send({"type": "answer", "outcome": outcome,
          "message": "an illegal memory access was encountered" if outcome == "crash" else ""})
