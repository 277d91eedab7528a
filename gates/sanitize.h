// Sanitize: the candidate's GREEN launches under `compute-sanitizer --tool memcheck`.
//
// A kernel can read one element past its input and still give the right answer (the allocation
// is rounded up, the stray value unused); GREEN cannot see that, memcheck can. The launches run
// in a fresh `evo worker --one-shot JOBFILE` process under the sanitizer, so a candidate that
// faults there cannot harm the coordinator or the long-lived worker. A candidate with any
// memcheck error is not green (Status::SanitizeFailed).
#pragma once
#include <optional>
#include <string>

#include "engine/evaluation.h"

namespace evo {

// $CUDA_HOME/bin, /usr/local/cuda/bin, then PATH; nullopt when none has compute-sanitizer.
std::optional<std::string> find_compute_sanitizer();

struct SanitizeRun {
  std::string evo_binary;   // the `evo` executable
  int device = 0;
  std::string job_file;     // a WorkerJob as JSON (engine/worker.h), candidate launches only
  double timeout_s = 600;   // the whole run; memcheck slows kernels down many times
};
// Skipped (saying why) when compute-sanitizer is absent or the run could not be judged.
SanitizeVerdict run_sanitize(const SanitizeRun& r);

// From memcheck's log: "ERROR SUMMARY: N errors" and the first "=========" error line
// ("Invalid __global__ read of size 4 bytes ... at planted_gemm+0x1f0 ..."). No GPU needed.
SanitizeVerdict parse_memcheck_log(const std::string& log);

}  // namespace evo
