// GREEN: does the candidate compute the same function as the trusted reference?
//
// For every problem, seed and trial: fresh inputs (drawn from (seed, trial, buffer name), so both
// kernels see the same data), outputs poisoned, the reference launched and its outputs kept in
// device memory (once per worker: they are the same for every candidate), outputs poisoned again,
// inout buffers restored to the trial's fill, the candidate launched on the same inputs, every
// output and inout buffer compared on the device (gates/compare.h) with its own thresholds
// (green_thresholds: the buffer's override the profile's; integers exactly). An element is bad
// when |c - r| > atol + rtol*|r|. A candidate is green
// when, on every problem, seed and trial, no output holds a NaN or Inf, no element was left
// unwritten (poison survived bit-exact), %bad <= max_bad_pct, max_abs <= max_abs and
// mean_abs <= mean_abs. If the reference itself yields NaN/Inf or leaves poison the problem is
// Skipped ("reference produced NaN"), never Passed. GREEN stops at the first failing trial: a
// wrong kernel costs as little as possible.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/buffers.h"
#include "engine/device.h"
#include "engine/evaluation.h"
#include "gates/compare.h"

namespace evo {

struct GreenRun {
  const Profile* profile = nullptr;
  Config config;
  const Module* candidate_module = nullptr;
  Kernel candidate;
  const Module* reference_module = nullptr;  // null: candidate launches only (sanitize run)
  Kernel reference;
  std::vector<const Problem*> problems;
  std::vector<std::uint64_t> seeds;  // from the profile unless overridden
  int trials = 1;
  cudaStream_t stream = nullptr;
  Heartbeat beat;
  double* max_candidate_launch_s = nullptr;  // out: slowest candidate launch + sync seen
};
// Throws CudaError (with the step in its text) when a launch fails; a wrong answer is a verdict.
GreenVerdict run_green(const GreenRun& r);

}  // namespace evo
