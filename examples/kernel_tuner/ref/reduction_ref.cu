// evo's own kernels for Kernel Tuner's reduction example (sum_floats, reduction.cu).
//
// Kernel Tuner's example writes one partial sum per thread block and checks their total; its
// second kernel, the same sum_floats with num_blocks = 1, is tuned apart. evo's profile times the
// tuned kernel followed by sum_partials_final (one block adding at most 32 768 partials: a few
// microseconds beside the 3.2 GB read), so GREEN can compare one number.
//
// Every knob is #defined in each template a candidate compiles (vector, num_blocks, ...): these
// kernels use none of those names.

// The candidate's second launch: the total of `count` per-block partials, in double.
extern "C" __global__ void sum_partials_final(const float* partial, float* sum, int count) {
  __shared__ double part[1024];
  double s = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) sum[0] = (float)part[0];
}

// The reference, first launch: gridDim.x partial sums of x in double.
extern "C" __global__ void sum_ref_partials(const float* x, double* parts, int n) {
  __shared__ double part[256];
  double s = 0.0;
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x) s += x[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int half = 128; half > 0; half /= 2) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) parts[blockIdx.x] = part[0];
}

// The reference, second launch: the total of `count` partials (one block of 1024 threads).
extern "C" __global__ void sum_ref_final(const double* parts, float* sum, int count) {
  __shared__ double part[1024];
  double s = 0.0;
  for (int i = threadIdx.x; i < count; i += 1024) s += parts[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int half = 512; half > 0; half /= 2) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) sum[0] = (float)part[0];
}
