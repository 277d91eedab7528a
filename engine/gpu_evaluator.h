// The evaluator that measures on a real GPU: the compile pool builds candidates ahead, the static
// gate rejects what cannot launch, and one `evo worker` process per GPU runs GREEN, FAST and the
// metrics. A candidate that faults, hangs or kills its context becomes a crash/timeout verdict;
// the worker is restarted and the run goes on (engine/worker.h has the protocol).
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/compiler.h"
#include "engine/evaluator.h"
#include "engine/profile.h"

namespace evo {

struct GpuEvaluatorOptions {
  std::vector<int> devices{0};       // CUDA ordinals, one worker process each (`--devices`); {-1}: all
  int jobs = 0;                      // compile-worker processes; 0 = cores
  double compile_timeout_s = kDefaultCompileTimeout_s;  // a compile running longer is stopped (CompilePool)
  std::filesystem::path cache_dir;   // compile cache; empty = default_cache_dir()
  std::string arch;                  // "" = the device's (sm_90 on an H100), else forced
  bool metrics = true;               // CUPTI metrics for candidates that pass FAST
  bool sanitize = false;             // compute-sanitizer memcheck on every candidate's GREEN launches
  std::string evo_binary;            // path of `evo` for the worker; "" = /proc/self/exe
};

// The CUDA_VISIBLE_DEVICES entry that is CUDA device `device` of this process, for a worker that is
// to see that device alone (engine/worker.h, WorkerClient's `visible`); "" where it is not known, or
// with EVO_WORKERS_SEE_ALL=1 (every worker sees every device, as before 2026-11-27).
std::string visible_entry(int device);

// How many CUDA devices this process will see, without initialising CUDA here (the coordinator
// forks compile workers): CUDA_VISIBLE_DEVICES's entries, else the driver's listing of the host's
// NVIDIA GPUs; 0 when neither says. A guess: the first worker's probe has the driver's count.
int visible_gpus_guess();

// Starts a worker per device and probes each. Throws UserError("no CUDA device: <why>") when there
// is none, or "GPU N: <why>" for a device that is not there, before anything is compiled or stored.
std::unique_ptr<Evaluator> make_gpu_evaluator(const Profile& profile, const GpuEvaluatorOptions& options);

}  // namespace evo
