// FAST: how long one launch takes, measured honestly (DESIGN.md "Measuring honestly"). A profile
// of several launches is timed as one unit: its launches run back to back between one pair of
// events (and are all captured, in order, into each graph), so a sample is the whole sequence.
//
// Inputs are filled once (seed 0, trial 0), then `warmup` launches, then `iters` timed samples,
// each bracketed by CUDA events on the stream. Unless the profile says flush_l2: false, a write of
// twice the L2 size lands between samples, so every sample starts with a cold L2 as in a real
// pipeline. In `graph` mode each sample replays a CUDA graph of graph_launches launches and is
// divided by that count: kernels of a few µs are then timed without launch gaps. The median is
// the figure quoted; CV (std / mean) says how noisy it was. An inout buffer with refill
// every_launch is restored to its fill before every sample (outside the timed events; in graph
// mode the launches of one replay accumulate), one with refill never keeps accumulating.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "engine/device.h"
#include "engine/evaluation.h"
#include "engine/profile.h"

namespace evo {

class TrialStore;  // engine/trial_store.h

struct FastRun {
  const Profile* profile = nullptr;
  Config config;
  std::vector<Kernel> kernels;           // one per launch (Profile::launches()), from modules the caller keeps alive
  std::vector<const Module*> modules;    // theirs; the first holds the __constant__ symbols
  const Problem* problem = nullptr;
  std::int64_t l2_bytes = 0;   // the device's (DeviceInfo.l2_bytes)
  cudaStream_t stream = nullptr;
  Heartbeat beat;
  // The host's trial store (engine/trial_store.h): inputs another process drew are read, not drawn
  // again (a worker that has not run GREEN: a FAST-only or metrics-only job). nullptr: drawn here.
  const TrialStore* store = nullptr;
};

// Throws CudaError when a launch fails; Rejected (with where) when the kernel wrote out of bounds,
// into an input or a __constant__ symbol during the timed launches; otherwise Passed with the figures.
Timing run_fast(const FastRun& r);

// Evicts the kernel's lines from an L2 of `l2_bytes` (a write of twice that, queued on `s`), as
// FAST does before each timed launch and the metrics pass before each replay.
void flush_l2(std::int64_t l2_bytes, cudaStream_t s);

// p50/p90/mean/std/CV/min of per-launch samples in µs (no GPU needed). Passed unless empty.
Timing summarize_samples(const std::vector<double>& us);

}  // namespace evo
