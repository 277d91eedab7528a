// GREEN: does the candidate compute the same function as the trusted reference?
//
// For every problem, seed and trial: fresh inputs (drawn from (seed, trial, buffer name), so both
// kernels see the same data), outputs poisoned, the reference launched and its outputs kept in
// device memory (once per worker: they are the same for every candidate), outputs poisoned again,
// inout buffers restored to the trial's fill, the candidate launched on the same inputs (a
// profile's `launches` one after the other, compared after the last), every
// output and inout buffer compared on the device (gates/compare.h) with its own thresholds
// (green_thresholds: the buffer's override the profile's; integers exactly). An element is bad
// when |c - r| > atol + rtol*|r|. A candidate is green
// when, on every problem, seed and trial, no output holds a NaN or Inf, no element was left
// unwritten (poison survived bit-exact), %bad <= max_bad_pct, max_abs <= max_abs and
// mean_abs <= mean_abs. If the reference itself yields NaN/Inf or leaves poison the problem is
// Skipped ("reference produced NaN"), never Passed. GREEN stops at the first failing trial: a
// wrong kernel costs as little as possible.
//
// A reference that is not a kernel (engine/reference.h) gives its expected outputs from the host
// instead: a command run for the trial's inputs, or stored data (one trial then: its inputs are
// fixed). When it cannot (the command fails, writes the wrong shape or dtype, or nothing) GREEN
// throws ReferenceError: that is no verdict on the candidate.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <filesystem>
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
  // One kernel per launch (Profile::launches()), from modules the caller keeps alive; the first
  // module must hold the profile's __constant__ symbols, the others get those they have.
  std::vector<const Module*> candidate_modules;
  std::vector<Kernel> candidate;
  // A kernel reference, one per launch of Profile::reference_launches(); none (and host_reference
  // false): candidate launches only (sanitize run).
  std::vector<const Module*> reference_modules;
  std::vector<Kernel> reference;
  bool host_reference = false;           // compare against the profile's command or data reference
  std::filesystem::path reference_cache; // where a command's results are kept on disk ("" : not kept)
  std::vector<const Problem*> problems;
  std::vector<std::uint64_t> seeds;  // from the profile unless overridden
  int trials = 1;
  cudaStream_t stream = nullptr;
  Heartbeat beat;
  double* max_candidate_launch_s = nullptr;  // out: slowest candidate launch + sync seen
};
// Throws CudaError (with the step in its text) when a launch fails, ReferenceError when a command
// or data reference cannot answer; a wrong answer is a verdict.
GreenVerdict run_green(const GreenRun& r);

}  // namespace evo
