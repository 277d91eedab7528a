// evo's own kernels for Kernel Tuner's expdist example (ExpDist, expdist.cu).
//
// Kernel Tuner's example writes one partial cross term per thread block, and tunes its second
// kernel (a cub reduction of those partials) apart. evo's profile times the tuned kernel followed
// by sum_partials_final (one block adding the partials: a few microseconds), so GREEN compares
// one number: the Bhattacharyya cross term sum_ij exp(-|a_i - b_j|^2 / (s_i + s_j)).
//
// Every knob is #defined in each template a candidate compiles (block_size_x, tile_size_y, ...):
// these kernels use none of those names.

// The candidate's second launch: the total of `count` per-block partials.
extern "C" __global__ void sum_partials_final(const double* partial, double* sum, int count) {
  __shared__ double part[1024];
  double s = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) sum[0] = part[0];
}

// The reference, first launch: one thread a point of A, its terms with every point of B (the
// points stored coordinate by coordinate, m and n apart), then each block's total.
extern "C" __global__ void expdist_ref_partials(const double* a, const double* b, int m, int n, const double* scale_a,
                                                const double* scale_b, double* parts) {
  __shared__ double part[128];
  const int i = blockIdx.x * 128 + threadIdx.x;
  double s = 0.0;
  if (i < m)
    for (int j = 0; j < n; ++j) {
      const double dx = a[i] - b[j], dy = a[i + m] - b[j + n];
      s += exp(-(dx * dx + dy * dy) / (scale_a[i] + scale_b[j]));
    }
  part[threadIdx.x] = s;
  __syncthreads();
  for (int half = 64; half > 0; half /= 2) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) parts[blockIdx.x] = part[0];
}

// The reference, second launch: the total of its `count` block totals, one thread adding them in
// order (a few dozen): the reference shares no kernel with the candidate's launches, so a fault in
// sum_partials_final cannot agree with itself.
extern "C" __global__ void expdist_ref_total(const double* parts, double* sum, int count) {
  double s = 0.0;
  for (int i = 0; i < count; ++i) s += parts[i];
  sum[0] = s;
}
