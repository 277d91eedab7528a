// A pool of warm per-GPU workers kept between runs (`evo pool start`), which every `evo run`,
// `evo worker --queue` and evo.tune call of the host attaches to instead of starting its own.
//
// Each run otherwise pays the driver's start, a context and CUPTI's set-up on every GPU, and the
// contexts' teardown at its end: 1.0-1.4 s on a 4-GPU host, where the driver's starts take turns
// across processes (docs/results/scale9, section 7). On a one-GPU sweep of 8-16 s that fixed part
// is what keeps 4 GPUs from 4x. A pooled worker made all of it once, before any run.
//
// The pool is a supervisor process and two `evo worker --listen SOCKET` per GPU, each seeing its
// GPU alone (CUDA_VISIBLE_DEVICES) and serving one run at a time over a Unix socket in the pool's
// folder, with the frames of engine/worker.h: the GPU's measuring worker (GREEN and FAST, CUPTI
// never loaded) and its profiling worker (metrics passes alone, CUPTI's set-up made at its start
// and kept; engine/worker.h, WorkerRole). On connecting, a worker says who it is (hello: its
// pid, its evo build, the environment its behaviour reads, whether it is serving another run);
// the run attaches only to a worker of its own build and environment and not busy, and otherwise
// starts its own worker, as without a pool. Between two runs the worker drops everything GREEN
// kept (a run never reads another run's inputs or references), and keeps its context and, in the
// profiling worker, CUPTI's set-up and its profiler session, enabled and past its first Start at the
// pool's start: each run's first collection otherwise pays that Start, 0.17-0.42 s, and the run's
// end profiled on one GPU because four first Starts take turns host-wide. The session is ended after
// EVO_POOL_KEEP_PROFILER_S (300) idle seconds, or when another evo process asks
// (release_pool_profiler; `evo pool release` asks them all): while enabled, no other process can
// profile on that GPU (ncu neither). A kernel that kills its context, or the watchdog's SIGKILL, ends that worker: the run
// goes on with a worker of its own for that GPU, and the supervisor starts a fresh one for the next
// run. A worker idle for --idle-exit seconds ends; the supervisor ends with the last of them.
#pragma once
#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/worker.h"  // defines: WorkerRole

namespace evo {

struct PoolDevice {  // one worker of the pool: each GPU has a Measure one and a Profile one
  int gpu = 0;          // as `evo run --devices` numbers it where the pool was started
  std::string visible;  // its CUDA_VISIBLE_DEVICES entry: what a run's worker for a GPU is matched by
  std::string socket;
  pid_t worker = -1;    // its worker now (the supervisor rewrites the record when it starts one)
  WorkerRole role = WorkerRole::Measure;
};
const char* role_name(WorkerRole role);  // "measure", "profile"

struct PoolRecord {  // <pool folder>/pool.json, written by the supervisor
  pid_t supervisor = -1;
  std::string binary, binary_id;
  std::vector<PoolDevice> devices;
  std::map<std::string, std::string> env;
  double idle_exit_s = 0;
  std::string started;  // UTC, ISO 8601
};

// $EVO_POOL_DIR, else $XDG_RUNTIME_DIR/evo-pool, else /tmp/evo-pool-<uid>.
std::filesystem::path pool_dir();
bool pool_enabled();  // not with EVO_POOL=0
std::filesystem::path pool_socket(const std::string& visible, WorkerRole role = WorkerRole::Measure);
// The environment a worker's behaviour reads (EVO_METRICS_*, EVO_PROFILES, EVO_DATA_DIR,
// CUDA_HOME and the driver's CUDA_* but CUDA_VISIBLE_DEVICES): a run attaches only to workers
// started with the same. The diagnostics' files (EVO_TRACE, EVO_GREEN_TIMES) are the run's own and
// are passed on attaching.
std::map<std::string, std::string> worker_environment();
// A build of evo: its resolved path, size and modification time.
std::string binary_identity(const std::string& path);

// ---- the coordinator's side ----
struct PoolAttach {
  int fd = -1;          // connected and attached: the worker's frames on this socket
  pid_t pid = -1;       // the worker's process (not this one's child)
  std::string refused;  // fd < 0: why a worker that is there was not used ("" : no pool worker for it)
  bool profiler_warm = false;  // a profiling worker whose session is enabled and past its first Start
};
// The pool's worker of `role` for the GPU whose CUDA_VISIBLE_DEVICES entry is `visible`, attached
// as the run's GPU `gpu`; never throws.
PoolAttach attach_pool_worker(const std::string& binary, const std::string& visible, int gpu,
                              WorkerRole role = WorkerRole::Measure, double timeout_s = 5);
// A profiling worker of an idle pool keeps its profiler session for EVO_POOL_KEEP_PROFILER_S after a
// run, which fails every other process's collection on that GPU meanwhile: a process about to profile
// there without the pool asks it to end that session first. true: it did; false: there is no such
// worker, it is serving a run, or it had no session. Never throws; whatever EVO_POOL says.
bool release_pool_profiler(const std::string& visible, double timeout_s = 5);
// Said by a worker on accepting, and the run's answer.
std::string pool_hello_json(bool busy, bool profiler_warm = false);
std::optional<std::string> read_frame(int fd, double timeout_s);  // nullopt: closed or timed out

// ---- `evo pool start | stop | status` ----
struct PoolWorkerState {
  PoolDevice device;
  pid_t pid = -1;
  bool busy = false;
  bool profiler_warm = false;  // a profiling worker holding its profiler session (engine/pool.h, above)
  std::string name;    // the device's name from the worker's probe
  std::string error;   // not answering / no device
};
// Starts the supervisor (detached) and waits until every device's worker has its context; throws
// UserError naming a device that is not there (the pool is stopped again) or a pool already running.
PoolRecord start_pool(const std::string& binary, const std::vector<int>& devices, double idle_exit_s);
std::optional<PoolRecord> read_pool_record();  // nullopt: none, or its supervisor is gone
std::vector<PoolWorkerState> pool_workers(const PoolRecord& r);  // asks each worker (a short attach)
// Workers of a pool whose supervisor is gone (killed with SIGKILL): still serving runs, never
// replaced after a fault. Each checked to be that pool's worker (its command line names the socket).
std::vector<pid_t> orphaned_pool_workers();
// The pool's supervisor and workers ended (orphans too), its record and sockets removed. Returns
// how many processes it ended: 0 when no pool was running.
int stop_pool(double timeout_s = 10);

// Serves the pool's sockets until the workers have all ended (the supervisor's body; never returns).
[[noreturn]] void run_pool_supervisor(PoolRecord record);

}  // namespace evo
