"""Kernel Tuner's vector_add through evo.tune with an answer (a + b), then with a wrong one (a - b):
every configuration must pass GREEN against the first and none against the second."""
import numpy
import evo

kernel_string = """
__global__ void vector_add(float *c, float *a, float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
"""
size = 10000000
a = numpy.random.randn(size).astype(numpy.float32)
b = numpy.random.randn(size).astype(numpy.float32)
c = numpy.zeros_like(b)
n = numpy.int32(size)
tune_params = {"block_size_x": [128 + 64 * i for i in range(15)]}
for label, expected in (("right", a + b), ("wrong", a - b)):
    try:
        results, env = evo.tune("vector_add", kernel_string, size, [c, a, b, n], tune_params,
                                answer=[expected, None, None, None], quiet=True)
    except evo.EvoRunError as e:
        print(f"answer {label}: evo refused the run: {e}", flush=True)
        continue
    statuses = {}
    for r in results:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    print(f"answer {label}: {len(results)} configurations, {statuses}, best {env['best_config']}", flush=True)
