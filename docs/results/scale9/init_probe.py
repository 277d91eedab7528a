# How long a fresh process takes to initialise the CUDA driver and make a context on one GPU, with
# every GPU of the host visible and with only that one (CUDA_VISIBLE_DEVICES): is a per-GPU worker's
# start (1.1 s on 4 x H200, 0.3-0.6 s on 2 x H200) the driver's work per visible device?
#   python3 init_probe.py   (runs itself in fresh processes)
import ctypes, os, subprocess, sys, time
if len(sys.argv) > 1:
    t0 = time.perf_counter()
    cu = ctypes.CDLL("libcuda.so.1")
    assert cu.cuInit(0) == 0
    t1 = time.perf_counter()
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cu.cuCtxSetCurrent(ctx) == 0
    t2 = time.perf_counter()
    print(f"{t1 - t0:.3f} {t2 - t1:.3f}")
    sys.exit(0)
for rep in range(3):
    for vis in (None, "0", None, "1"):
        env = dict(os.environ)
        env.pop("CUDA_VISIBLE_DEVICES", None)
        if vis is not None: env["CUDA_VISIBLE_DEVICES"] = vis
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, __file__, "child"], env=env, capture_output=True, text=True).stdout.split()
        print(f"visible {vis or 'all':3s}: cuInit {out[0]} s, context {out[1]} s, process {time.perf_counter() - t0:.3f} s", flush=True)
