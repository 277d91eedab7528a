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
//
// The judge's own state is protected from the candidates (engine/guard.h): every buffer a
// candidate is given sits between guard zones, checked after each of its launches with its input
// buffers and __constant__ symbols; the device copies evo keeps across candidates (input fills,
// reference outputs) are checked at the start and the end of every GREEN run. A candidate that
// wrote where it may not is rejected naming the buffer and how far; copies found damaged at the
// start (by an earlier FAST or metrics launch) are dropped and made again from verified bytes.
//
// With a reference cache (the worker's: the compile cache's `reference` folder), the reference
// outputs of every trial are had before the first candidate launch. The trials' inputs are drawn
// once per host and stored there (engine/trial_store.h, keyed by everything that determines them),
// a command's results as engine/reference.h keeps them; a kernel reference runs on each worker's
// own GPU (GreenRun::share_kernel_outputs: or its outputs are stored too, the device model in
// their key). What is shared is made once: workers starting at once split the trials between them
// (each makes those nobody has claimed, then reads the others'), and a worker that finds a trial
// stored reads it instead of making it, a restarted one too.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/buffers.h"
#include "engine/device.h"
#include "engine/evaluation.h"
#include "gates/compare.h"

namespace evo {

// How a GREEN run had its reference outputs (the worker's answer carries it): trials whose outputs
// it made (launched the reference kernel; ran the command, or read the command's own cache) and
// trials it read from the trial store (another worker's, or its own before a restart); a warning
// line for each damaged file it found there.
struct ReferenceTally {
  int made = 0, read = 0;
  std::vector<std::string> warnings;
};

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
  // Where reference results are kept on disk for every worker of the host ("" : not kept, none
  // shared): the trials' inputs, a command's results, and where share_kernel_outputs says so a
  // kernel reference's outputs.
  std::filesystem::path reference_cache;
  // A kernel reference's outputs are made by each worker on its own GPU unless this is set: their
  // trip through the disk cost more than the launches (gemm_fp16: 0.29 s to store and 0.30 s to
  // read back against 0.024 s for its launches, 4 x H200, docs/results/scale11). For a reference
  // kernel slower than that trip (EVO_REFERENCE_STORE=1 in the run) they are made once per host.
  bool share_kernel_outputs = false;
  std::string device;                    // the device model ("NVIDIA H200 sm_90 driver 580.159"): part of a stored output's key
  std::vector<const Problem*> problems;
  bool guard_zones = true;  // false under compute-sanitizer: its memcheck must see a read past a buffer's end
  std::vector<std::uint64_t> seeds;  // from the profile unless overridden
  int trials = 1;
  // A problem's own seeds and trials (Problem::green_seeds, green_trials) replace these for it;
  // false when the caller chose them for every problem (a sanitize run's one trial).
  bool problem_trials = true;
  cudaStream_t stream = nullptr;
  Heartbeat beat;
  double* max_candidate_launch_s = nullptr;  // out: slowest candidate launch + sync seen
  ReferenceTally* tally = nullptr;           // out: how the reference outputs were had
  // out: wall seconds by step ("buffers", "inputs", "references", "launch", "compare",
  // "integrity"; within "references": "references_fill", "_launch", "_store", "_read"), added to
  // what is there: where a candidate's GREEN time goes (the worker writes them where
  // EVO_GREEN_TIMES names a file).
  std::map<std::string, double>* step_seconds = nullptr;
  // out: set when the candidate wrote where it may not (out of bounds, into an input, a symbol or
  // evo's own device copies). The verdict is Rejected saying where; the caller's device state is
  // suspect beyond what the checks cover, so the worker starts a fresh process after answering.
  bool* wrote_out_of_bounds = nullptr;
};
// The input sets GREEN runs problem `p` on, in order: the problem's own seeds and trials where
// it gives them (and r.problem_trials), else r.seeds x r.trials; stored data's one.
struct GreenTrial {
  std::uint64_t seed = 0;
  int trial = 0;
};
std::vector<GreenTrial> green_trials(const GreenRun& r, const Problem& p);

// Throws CudaError (with the step in its text) when a launch fails, ReferenceError when a command
// or data reference cannot answer; a wrong answer is a verdict.
GreenVerdict run_green(const GreenRun& r);

// The buffers GREEN keeps for the worker's life for `p`'s problem `prob` with `c`'s buffer shapes,
// configured for `c`: FAST and the metrics pass launch into the same ones, so no candidate
// allocates (they stay valid until the next call; a candidate that wrote out of bounds frees them).
BufferSet& kept_buffers(const Profile& p, const Problem& prob, const Config& c, cudaStream_t s, bool guard_zones = true);

// Everything GREEN keeps between candidates (device copies of the fills, reference outputs, the
// kept buffer sets, cubin digests), dropped: a pooled worker between two runs (engine/pool.h), so
// a run never reads what another run's profile or files made.
void forget_run_state(cudaStream_t s);

}  // namespace evo
