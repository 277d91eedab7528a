// GREEN: does the candidate compute the same function as the trusted reference?
//
// For every problem, seed and trial: fresh inputs (drawn from (seed, trial, buffer name), so both
// kernels see the same data), outputs poisoned, the reference launched and read, outputs poisoned
// again, the candidate launched on the same inputs and read, every output buffer compared. An
// element is bad when |c - r| > atol + rtol*|r|. A candidate is green when, on every problem,
// seed and trial, no output holds a NaN or Inf, no element was left unwritten (poison survived
// bit-exact), %bad <= max_bad_pct, max_abs <= max_abs and mean_abs <= mean_abs. If the reference
// itself yields NaN/Inf or leaves poison the problem is Skipped ("reference produced NaN"), never
// Passed. GREEN stops at the first failing trial: a wrong kernel costs as little as possible.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/buffers.h"
#include "engine/device.h"
#include "engine/evaluation.h"

namespace evo {

// One output buffer of one trial, candidate against reference.
struct OutputCompare {
  std::int64_t n = 0, bad = 0, nan = 0, inf = 0, unwritten = 0;
  double max_abs = 0, mean_abs = 0, rel_l2 = 0, bad_pct = 0;  // over elements where both are finite
  bool reference_bad = false;  // reference NaN/Inf/unwritten: cannot judge
  std::string failure;         // "O[1,3,17,5] = nan, ref 0.213"; empty when this buffer passes
};
OutputCompare compare_output(const HostTensor& cand, const HostTensor& ref, const GreenThresholds& t);

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
