// GREEN's element-wise judgement of one output buffer, candidate against reference.
//
// An element is bad when |c - r| > atol + rtol*|r|; NaN, Inf and unwritten elements (the poison
// pattern survived bit-exact) count as bad too. Where the reference itself is NaN/Inf/unwritten
// the output cannot be judged (reference_bad). The same figures and the same elements named come
// out of both versions:
//   compare_output            two host tensors (tests, tools);
//   compare_output_on_device  two buffers in device memory, as GREEN holds them: a kernel scans
//                             the elements and only a few kilobytes of partial figures (and the
//                             elements a message names) travel to the host. For the attention
//                             `long` problem (8 M outputs a trial) this is what makes GREEN cheap.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/buffers.h"
#include "engine/profile.h"

namespace evo {

struct OutputCompare {
  std::int64_t n = 0, bad = 0, nan = 0, inf = 0, unwritten = 0;
  double max_abs = 0, mean_abs = 0, rel_l2 = 0, bad_pct = 0;  // over elements where both are finite
  bool reference_bad = false;  // reference NaN/Inf/unwritten: cannot judge
  std::string failure;         // "O[1,3,17,5] = nan, ref 0.213"; empty when this buffer passes
};

OutputCompare compare_output(const HostTensor& cand, const HostTensor& ref, const GreenThresholds& t);

// Both tensors must have the same dtype and size. Throws CudaError if a CUDA call fails and
// UserError if the comparison kernel cannot be built (NVRTC unusable); it is compiled once per
// process, for the current device.
OutputCompare compare_output_on_device(const DeviceTensor& cand, const DeviceTensor& ref, const GreenThresholds& t,
                                       cudaStream_t s);

// The same comparison in two halves, for a caller that queues several before one sync (GREEN's
// trials): queue() launches the kernel and the copy of its partial figures into pinned memory,
// result() judges them once the stream is synchronised. Its device and pinned buffers are kept
// from one queue() to the next (sized for the largest output seen), so a trial allocates nothing.
class DeviceComparison {
 public:
  void queue(const DeviceTensor& cand, const DeviceTensor& ref, const GreenThresholds& t, cudaStream_t s);
  OutputCompare result() const;

 private:
  DeviceTensor cand_, ref_;
  GreenThresholds t_;
  int blocks_ = 0;
  bool mismatch_ = false;                // sizes or dtypes differ: judged without the kernel
  std::shared_ptr<void> parts_dev_, parts_host_;  // cudaMalloc'd, cudaMallocHost'd
  int capacity_ = 0;                     // blocks' worth of parts they hold
};

// The comparison kernel's cubin for `arch` ("sm_90"); needs NVRTC, not a GPU.
std::vector<char> compare_kernel_cubin(const std::string& arch);

}  // namespace evo
