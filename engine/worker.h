// The per-GPU worker process (`evo worker --device N`) and its client in the coordinator.
//
// A kernel that faults kills its CUDA context and a kernel that hangs never returns, so every
// launch happens in this separate process, which the coordinator can kill and restart. They talk
// over the worker's stdin/stdout in frames: a 4-byte little-endian length, then that many bytes
// of JSON. Coordinator -> worker: {"type":"probe"} (with "warm":true from a run), {"type":"job",...},
// {"type":"quit"} (to a pool's worker: the run is over, not the process).
// Worker -> coordinator: {"type":"beat","step":"green: candidate launch (problem small, seed 0,
// trial 1)","budget_s":5} before every blocking step, then one {"type":"answer",...}.
//
// The client's watchdog gives each step the budget its beat announced (the profile's
// gates.timeout_s for a launch); past it the worker is killed with SIGKILL and the job's verdict
// is `timeout` naming the step. A sticky CUDA error (illegal address …) is answered as `crash`
// with the error and the step, then the worker exits for a fresh context; a worker that dies
// without answering is a `crash` too. The next job starts a new worker transparently.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/device.h"
#include "engine/file_lock.h"
#include "engine/evaluation.h"
#include "engine/space.h"

namespace evo {

// One more candidate of a metrics-only job (WorkerJob::metrics_batch): its config and cubins.
struct MetricsCandidate {
  Config config;
  std::string candidate_cubin, candidate_name;
  std::vector<LaunchKernel> candidate_kernels;
};

// One candidate's work on the GPU. Cubins are files in the compile cache.
struct WorkerJob {
  std::string profile_path;
  Config config;
  std::string candidate_cubin, candidate_name;   // lowered entry name
  std::string reference_cubin, reference_name;   // empty: no reference kernel (sanitize runs, timing only)
  // A profile of several launches: one kernel per launch, in order (then the two pairs above are
  // the first launch's); empty for one launch.
  std::vector<LaunchKernel> candidate_kernels, reference_kernels;
  bool host_reference = false;   // GREEN compares against the profile's command or data reference
  // Where reference results are kept on disk, shared by every worker of the host ("" : not kept):
  // a command's results, a kernel reference's outputs and the trials' inputs (gates/green.h).
  std::string reference_cache;
  bool share_kernel_outputs = false;  // a kernel reference's outputs stored there too (gates/green.h)
  // Where evo's own kernels (GREEN's comparison, the integrity check) are kept once built, for the
  // worker processes after this one ("": built in each; engine/compiler.h: set_builtin_cache).
  std::string builtin_cache;
  std::vector<std::string> problems;             // GREEN on these; empty = every problem
  std::vector<std::uint64_t> seeds;              // empty = the profile's
  int trials = 0;                                // 0 = the profile's
  bool green = true;                             // run GREEN first (FAST and metrics only if it passes)
  bool guard_zones = true;                       // false under compute-sanitizer (gates/green.h)
  bool fast = false;                             // time on the objective problem
  std::string objective;                         // FAST's and metrics' problem; "" = the profile's objective
  bool metrics = false;                          // CUPTI metrics on the objective problem
  double metrics_max_p50_us = 0;                 // > 0: metrics only when FAST's median is at most this
  // Held (an flock) around the CUPTI metrics pass, so that no two workers naming the same file
  // profile at the same moment ("" : none). The GPU evaluator names one in the compile cache.
  std::string metrics_lock;
  // > 0: while another worker holds metrics_lock, wait for it only when FAST's median is at most
  // this (the run's best so far: a new best); any other candidate goes without metrics, saying so.
  double metrics_wait_max_p50_us = 0;
  // A metrics-only job for a candidate timed by another worker (the lane's measuring one): FAST's
  // median there, which the turn's rules above read in place of this job's own timing.
  double timed_p50_us = 0;
  // A metrics-only job for several candidates at once (the run's end): these after the job's own,
  // profiled in one collection (gates/metrics.h: collect_metrics_batch) where their buffers are
  // alike, each alone otherwise. Their results in WorkerAnswer::batch_metrics, in this order.
  std::vector<MetricsCandidate> metrics_batch;
};

// Whether a candidate FAST timed at p50_us gets its CUPTI pass, and the lock held for it. Metrics
// are read for candidates near the run's best (the insight rules' parents, the elites) and by a
// profile's metric gate; a pass costs more than GREEN and FAST of a small kernel, and two at once
// on one host slow each other and the other GPUs' timing, so passes take turns. A candidate that
// would have to wait for another GPU's pass, and is not a new best, goes without: its GPU goes
// on to the next candidate instead of idling (issue 35; docs/search.md, "Metrics where they pay").
struct MetricsTurn {
  bool collect = false;
  std::optional<FileLock> lock;  // held for the pass, where the job names a lock
  std::string reason;            // why not, when !collect (stored as the metrics' reason)
};
MetricsTurn take_metrics_turn(const WorkerJob& job, double p50_us, const std::function<void()>& waiting);

struct WorkerAnswer {
  Outcome outcome = Outcome::Passed;  // Passed: the job ran (its gates say how it went); Crashed; Timeout
  std::string message;                // crash/timeout: "an illegal memory access was encountered during green: ..."
  std::string step;                   // the last step announced
  bool reference_failed = false;      // Skipped because the command or data reference could not answer: no verdict
  GreenVerdict green;
  Timing fast;
  MetricsResult metrics;
  std::vector<MetricsResult> batch_metrics;  // WorkerJob::metrics_batch's, in its order
  double seconds_green = 0, seconds_fast = 0, seconds_metrics = 0;
  // GREEN's reference outputs: trials whose outputs this job made, and those it read from the
  // reference cache (made by another worker); a line for each damaged file found there.
  int references_made = 0, references_read = 0;
  std::vector<std::string> warnings;
  // Crashed without an answer: the worker died (a signal, an exit, a broken pipe) rather than
  // reporting its kernel's fault or being killed by the watchdog. Not the kernel's verdict by
  // itself: run_measured() measures the job again on a fresh worker.
  bool worker_lost = false;
};

// ---- protocol (no GPU needed: tested on any machine) ----
std::string encode_frame(const std::string& payload);  // length prefix + payload
// One frame written whole, on a pipe or a socket; false when the other end is gone (never SIGPIPE).
bool write_frame(int fd, const std::string& payload);
// Accumulates bytes read from a pipe and hands out whole frames.
class FrameReader {
 public:
  void feed(const char* data, std::size_t n) { buf_.append(data, n); }
  std::optional<std::string> next();  // a whole frame's payload, or nullopt until more bytes arrive
  bool partial() const { return !buf_.empty(); }

 private:
  std::string buf_;
};
std::string job_to_json(const WorkerJob& j);
WorkerJob job_from_json(const std::string& text);      // throws UserError on a malformed job
std::string answer_to_json(const WorkerAnswer& a);
WorkerAnswer answer_from_json(const std::string& text);
std::string device_to_json(const DeviceInfo& d);
DeviceInfo device_from_json(const std::string& text);

// Watches the coordinator's end of a worker's input while the worker runs a job. A coordinator
// that dies (kill -9, the OOM killer) takes no worker with it, and a worker inside a kernel that
// never returns would then hold its GPU for good: spinning under whatever runs there next, and, as a
// pool's worker, found busy by every later run. Once the input has hung up and the step the worker
// last announced has run past its budget (where the coordinator's watchdog would have killed it),
// the watch calls `expire` with that step (the worker: a line on stderr and exit, so the GPU is free
// and a pool starts a fresh worker). Idle or within budget, a hang-up is the session's end as before.
class ClientWatch {
 public:
  ClientWatch(int fd, std::function<void(const std::string& step)> expire);
  ~ClientWatch();
  ClientWatch(const ClientWatch&) = delete;
  ClientWatch& operator=(const ClientWatch&) = delete;
  void job_started(double budget_s);                      // until the first step is announced
  void step(const std::string& step, double budget_s);  // as the beat says
  void job_ended();

 private:
  void watch();
  int fd_;
  int wake_[2] = {-1, -1};  // written by the destructor: the watch ends without waiting out its poll
  std::function<void(const std::string&)> expire_;
  std::mutex m_;
  bool in_job_ = false, stop_ = false;
  std::string step_;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

// What a worker is for. A process CUPTI has entered times short kernels about 0.3 % slower for
// the rest of its life, and judges slower (docs/results/scale10, section 3), so each GPU has a
// worker that judges and times and never loads CUPTI, and, where metrics are collected, a second
// one on the same GPU that only profiles (metrics-only jobs) and keeps CUPTI's set-up between them.
enum class WorkerRole { Measure, Profile };

// ---- the worker process ----
// Serves frames on in_fd/out_fd until "quit" or EOF; returns the exit code. `role` names its
// trace track ("gpu N", "gpu N profiler").
int worker_main(int device, int in_fd, int out_fd, WorkerRole role = WorkerRole::Measure);
// A pool's worker (`evo worker --listen SOCKET`, engine/pool.h): makes its context at once, then
// serves one run at a time on the socket, dropping what GREEN kept between runs; ends after
// idle_exit_s without a run (0: never), or with status 3 when a kernel killed its context.
// `role` Profile: CUPTI's set-up made at the start and kept between runs; Measure: CUPTI never
// loaded unless a job asks for metrics, and then taken out again after the run.
int worker_listen(int device, const std::string& socket_path, double idle_exit_s, WorkerRole role = WorkerRole::Measure);
// Runs one job (a JSON file) without a coordinator and prints the answer JSON on stdout.
int worker_one_shot(int device, const std::string& job_file);

// ---- the coordinator's side ----
class WorkerClient {
 public:
  // Nothing starts until the first call. evo_binary: the `evo` executable to run as the worker.
  // visible: the CUDA_VISIBLE_DEVICES entry that is `device` ("": the worker sees every device and
  // selects `device`). With one, the worker sees that device alone, as its device 0: the driver
  // then initialises one GPU, not every GPU of the host (0.19-0.28 s against 0.77-1.05 s on
  // 4 x H200, docs/results/scale9), in each worker and each restart.
  WorkerClient(std::string evo_binary, int device, std::string visible = "", WorkerRole role = WorkerRole::Measure);
  ~WorkerClient();  // asks the worker to quit, kills it if it does not
  // Asks the worker to quit and returns at once: several workers tear their contexts down side by
  // side (0.1 s each), and the destructor then only waits.
  void ask_to_quit();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  // Starts the worker if needed and asks it what the device is. Never initialises CUDA here.
  // warm: the worker then makes its context and stream at once, ready for the jobs to come, and
  // reads `profile_path` (when given) as its jobs will, after it has answered; that read took
  // 15-21 ms of each lane's first job and of the run's end metrics (docs/results/scale17).
  // A worker given its device alone (`visible`) that finds none there is started again seeing
  // every device, and that answer stands (visible() is then "").
  DeviceInfo probe(double timeout_s = 120, bool warm = false, const std::string& profile_path = "");
  // Runs a job; crash and hang become the answer's outcome. `timeout_s` is the budget of a step
  // the worker has not announced yet (start-up, loading cubins).
  WorkerAnswer run(const WorkerJob& job, double timeout_s);
  int restarts() const { return restarts_; }  // workers started after the first
  // Its first worker is the pool's (engine/pool.h) where one serves its GPU, is free and of this
  // build and environment; every later one (after a fault) is its own child, as without a pool.
  bool pooled() const { return pooled_; }
  const std::string& pool_note() const { return pool_note_; }  // why the pool's worker was not used
  // The pool's profiling worker, attached with its profiler session enabled and past its first
  // Start (engine/pool.h): its collections cost 25-35 ms from the first.
  bool profiler_warm() const { return pooled_ && profiler_warm_; }
  const std::string& visible() const { return visible_; }  // its CUDA_VISIBLE_DEVICES ("": every device)
  pid_t pid() const { return pid_; }
  // run(), and once more on a fresh worker when the first dies without answering (worker_lost):
  // a worker killed from outside (kill -9, the OOM killer, SIGTERM) or whose pipe broke has not
  // judged its candidate. When the second dies too, the answer is its crash, saying it died twice.
  // `said` receives one line for each loss (which worker, what became of its candidate).
  WorkerAnswer run_measured(const WorkerJob& job, double timeout_s, const std::function<void(const std::string&)>& said);

 private:
  void start();
  void stop(bool force);
  // Sends one frame and reads frames until the answer; nullopt with `why` when the worker died or
  // ran past a step's budget (it is then killed and reaped).
  std::optional<std::string> exchange(const std::string& payload, double first_budget_s, Outcome* failure,
                                      std::string* why, std::string* step);

  std::string binary_;
  int device_;
  std::string visible_;
  WorkerRole role_;
  pid_t pid_ = -1;
  int to_fd_ = -1, from_fd_ = -1;
  int starts_ = 0, restarts_ = 0;
  bool pooled_ = false;      // pid_ is the pool's worker, not a child: no waitpid, a detach is a quit
  bool pool_tried_ = false;
  bool profiler_warm_ = false;
  std::string pool_note_;
};

}  // namespace evo
