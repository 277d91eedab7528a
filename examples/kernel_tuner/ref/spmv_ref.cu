// evo's reference for Kernel Tuner's sparse matrix-vector example (spmv.cu): y = A x with A in CSR
// (row offsets, column indices, values). One thread per row, the row's products summed in double.
extern "C" __global__ void spmv_ref(float* y, const int* rows, const int* cols, const float* values, const float* x,
                                    int nrows) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nrows) return;
  double sum = 0.0;
  for (int j = rows[i]; j < rows[i + 1]; ++j) sum += static_cast<double>(values[j]) * x[cols[j]];
  y[i] = static_cast<float>(sum);
}
