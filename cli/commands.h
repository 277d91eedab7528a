// The `evo` subcommands. Each returns the process exit code; each throws UserError for the
// user's mistakes, which main() prints as one line "evo: <what>" with exit code 2.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/compiler.h"

namespace evo::cli {

struct Globals {
  std::string db = "evo.db";  // --db: a SQLite file, or postgresql://user@host/database
  std::string cache;        // compile cache dir; "" = default_cache_dir()
  int jobs = 0;             // compile workers; 0 = cores
  double compile_timeout = kDefaultCompileTimeout_s;  // --compile-timeout: a longer compile is stopped
  int device = 0;           // GPU ordinal for the worker
  bool json = false;
};

int cmd_profiles(const Globals& g);
int cmd_check(const Globals& g, const std::string& profile);

struct CompileArgs {
  std::string profile, knobs, arch;
  bool all = false;
  std::int64_t sample = 0;
  std::uint64_t seed = 0;
};
int cmd_compile(const Globals& g, const CompileArgs& a);

struct EvalArgs {
  std::string profile, knobs;
  bool baseline = false, sanitize = false, no_metrics = false;
};
int cmd_eval(const Globals& g, const EvalArgs& a);
int cmd_worker(int device, const std::string& one_shot_job, bool profile = false);
int cmd_worker_listen(int device, const std::string& socket, double idle_exit_s, bool profile);  // a pool's worker

// --devices: "all" ({-1}: every GPU the worker sees) or distinct ordinals "0,1,3"; "" = --device.
std::vector<int> parse_devices(const std::string& text, int device);

struct PoolArgs {
  std::string action;        // start, stop, status
  std::string devices;       // start: "all" or "0,1,..."; "" = --device
  double idle_exit_s = 1800; // start: a worker ends after this long without a run (0: never)
};
int cmd_pool(const Globals& g, const PoolArgs& a);

struct RunArgs {
  std::string profile;                // "" = the one for the device (engine/default_profile.h)
  std::string strategy = "evo", replay, proposer;
  std::vector<std::string> options;   // strategy options K=V
  std::int64_t budget = 200;
  double time_limit_s = 0;
  std::uint64_t seed = 0;
  std::optional<std::int64_t> resume;
  std::size_t ahead = 0;              // candidates in flight; 0 = auto (engine/run.h)
  std::string devices;                // --devices: "all" or "0,1,..."; "" = --device
  std::string objective;              // --objective: "all" or "a,b,..." (one run each); "" = the profile's
  double replay_compile_s = 0, replay_gpu_s = 0;  // simulated cost of a replayed candidate
  std::string queue;                  // --queue postgresql://...: workers on any host evaluate, the store stays --db
  std::vector<std::string> transfer_from;  // landscape files whose fastest configurations evo proposes first
  bool no_transfer = false;           // not from the database's other problems and devices either
  bool sanitize_elites = true, no_metrics = false, metrics_all = false, quiet = false;
};
int cmd_run(const Globals& g, const RunArgs& a);

// Many hosts (docs/guide.md): `evo --db postgresql://... run` (or `evo run --queue URL` beside a
// SQLite store) enqueues its candidates in PostgreSQL and records the results in its store;
// `evo worker --db URL --run N` (or `--queue URL`) on any host claims them and posts each
// evaluation. The spec is what a worker needs to evaluate as the coordinator would, kept with the
// queue run. cli/cmd_queue.cpp
struct QueueRunSpec {
  std::string profile, profile_path;  // the name, and the file the coordinator loaded
  std::string objective;              // the problem FAST times
  std::string device;                 // the coordinator's device name: workers must have the same
  std::string replay;                 // a landscape (absolute path) instead of a GPU
  double replay_compile_s = 0, replay_gpu_s = 0;
  bool metrics = true;
};
std::string queue_spec_text(const QueueRunSpec& s);

struct QueueWorkerArgs {
  std::string queue;     // postgresql://... ("" = --db when that is one)
  std::int64_t run = 0;  // the run `evo run` printed for its workers
  double lease_s = 30;   // a claim not renewed for this long is another worker's
  std::string name;      // in the queue's claimed_by ("" = host:pid)
  int device = 0;
};
int cmd_queue_worker(const Globals& g, const QueueWorkerArgs& a);
int cmd_runs(const Globals& g);
int cmd_compare(const Globals& g, std::int64_t run_a, std::int64_t run_b);

struct ElitesArgs {
  std::string profile, problem;
  std::size_t top = 10;
  bool lineage = false;
  std::optional<std::int64_t> run;
};
int cmd_show_elites(const Globals& g, const ElitesArgs& a);

struct ExportArgs {
  std::string what = "best", to = "kernels", profile;
  std::string problem;   // with 'best': that problem's best (default: the newest run's problem)
  bool dispatch = false; // each problem's best + a dispatch header and table (a kernel per shape)
  bool torch = false;    // + the cubins and python/evo_torch.py, to call them from PyTorch
};
int cmd_export(const Globals& g, const ExportArgs& a);
int cmd_export_landscape(const Globals& g, std::int64_t run, const std::string& to);
int cmd_db_check(const Globals& g);
// One run as a self-contained HTML page (no run: the newest). cli/cmd_report.cpp
int cmd_report(const Globals& g, std::optional<std::int64_t> run, const std::string& to);
// One run in the T4 autotuning results format (Kernel Tuner's). cli/cmd_t4.cpp
int cmd_export_t4(const Globals& g, std::int64_t run, const std::string& to);

// A T1 file as the evo profile it is read as (to stdout when `to` is empty). cli/cmd_t1.cpp
int cmd_import_t1(const Globals& g, const std::string& file, const std::string& to);
struct ImportLandscapeArgs {
  std::string file;  // a Kernel Tuner cache (.json or .json.gz) or a T4 results file
  std::string t1;    // the T1 file of its space
  std::string to;    // "" = stdout
};
int cmd_import_landscape(const Globals& g, const ImportLandscapeArgs& a);

}  // namespace evo::cli
