// evo worker --db URL --run N (or --queue URL --run N): one worker of a run spread over hosts
// (docs/guide.md, "Many GPUs and many hosts"). It reads the run's spec from the work queue, in the
// store's PostgreSQL database or on the server a SQLite store's coordinator was given, builds the
// evaluator the coordinator described (a replay, or the GPU evaluator on --device), and serves
// until the coordinator finishes the run or a signal stops it. It never opens the store.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/stop_signal.h"
#include "engine/error.h"
#include "engine/gpu_evaluator.h"  // defines: make_gpu_evaluator
#include "engine/profile.h"
#include "engine/replay.h"  // defines: ReplayEvaluator
#include "population/postgres.h"
#include "population/queue.h"
#include "population/queue_evaluator.h"  // defines: serve_queue, require_open_run

namespace evo::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

QueueRunSpec parse_spec(const std::string& text, const std::string& where) {
  try {
    const json j = json::parse(text);
    if (j.value("format", "") != "evo-queue-run/1")
      throw UserError(where + ": spec format " + j.value("format", "?") + " is not evo-queue-run/1 (another evo version?)");
    QueueRunSpec s;
    s.profile = j.at("profile").get<std::string>();
    s.profile_path = j.at("profile_path").get<std::string>();
    s.objective = j.at("objective").get<std::string>();
    s.device = j.at("device").get<std::string>();
    s.replay = j.at("replay").get<std::string>();
    s.replay_compile_s = j.at("replay_compile_s").get<double>();
    s.replay_gpu_s = j.at("replay_gpu_s").get<double>();
    s.metrics = j.at("metrics").get<bool>();
    return s;
  } catch (const json::exception& e) {
    throw UserError(where + ": spec: " + e.what());
  }
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "host";
  return buf;
}

}  // namespace

std::string queue_spec_text(const QueueRunSpec& s) {
  return json{{"format", "evo-queue-run/1"},    {"profile", s.profile},
              {"profile_path", s.profile_path}, {"objective", s.objective},
              {"device", s.device},             {"replay", s.replay},
              {"replay_compile_s", s.replay_compile_s}, {"replay_gpu_s", s.replay_gpu_s},
              {"metrics", s.metrics}}
      .dump();
}

int cmd_queue_worker(const Globals& g, const QueueWorkerArgs& a) {
  if (!a.queue.empty() && !pg::is_url(a.queue))
    throw UserError("evo worker --queue " + pg::redact(a.queue) +
                    ": not a postgresql:// URL (give the server `evo run --queue` was given)");
  if (a.queue.empty() && !pg::is_url(g.db))
    throw UserError("evo worker --db " + pg::redact(g.db) + ": not a postgresql:// URL (give the store `evo run --db "
                    "postgresql://...` was given, or --queue and the server of a coordinator with a SQLite store)");
  const std::string url = !a.queue.empty() ? a.queue : g.db;
  if (a.run <= 0) throw UserError("evo worker: give --run N, the run `evo run` printed");
  if (!(a.lease_s > 0)) throw UserError("--lease: must be more than 0 seconds");

  // A. The run as the queue knows it: nothing is claimed before the evaluator is up.
  QueueRunSpec spec;
  {
    pg::Conn conn(url);
    require_open_run(conn, a.run);
    const std::string run = "run " + std::to_string(a.run);
    const auto text = WorkQueue(conn, WorkQueue::Schema::Existing).run_spec(a.run);
    if (!text)
      throw UserError(conn.name() + ": " + run + " has no spec: it was not opened by `evo run` (--db postgresql://... "
                      "or --queue)");
    spec = parse_spec(*text, conn.name() + ": " + run);
  }

  // B. The evaluator the coordinator described.
  std::unique_ptr<Evaluator> evaluator;
  if (!spec.replay.empty()) {
    if (!fs::exists(spec.replay))
      throw UserError("run " + std::to_string(a.run) + " replays " + spec.replay +
                      ", which this host cannot read (workers need the coordinator's files at the same paths)");
    ReplayCost cost;
    cost.compile_s = spec.replay_compile_s;
    cost.gpu_s = spec.replay_gpu_s;
    cost.jobs = 1;
    evaluator = std::make_unique<ReplayEvaluator>(spec.replay, cost);
  } else {
    const fs::path path = fs::exists(spec.profile_path) ? fs::path(spec.profile_path) : resolve_profile(spec.profile);
    Profile p = load_profile(path);
    if (!p.find_problem(spec.objective))
      throw UserError(path.string() + ": no problem " + spec.objective + " (run " + std::to_string(a.run) + " tunes it)");
    p.objective = spec.objective;
    GpuEvaluatorOptions o;
    o.devices = {a.device};
    o.jobs = g.jobs;
    o.compile_timeout_s = g.compile_timeout;
    o.cache_dir = g.cache;
    o.metrics = spec.metrics;
    evaluator = make_gpu_evaluator(p, o);
  }
  if (evaluator->device() != spec.device)
    throw UserError("this worker measures on " + evaluator->device() + ", run " + std::to_string(a.run) + " on " +
                    spec.device + ": timings are compared within one GPU model only");

  // C. Serve until the coordinator finishes the run; SIGINT / SIGTERM stop between candidates
  // (a claim in hand is renewed until its evaluation is posted).
  const std::string name = a.name.empty() ? host_name() + ":" + std::to_string(getpid()) : a.name;
  spdlog::info("worker {}: serving run {} of {} ({} problem {}, {})", name, a.run, pg::redact(url), spec.profile,
               spec.objective, evaluator->device());
  WorkerStats stats;
  bool stopped = false;
  {
    StopOnSignals stop;
    stats = serve_queue(url, a.run, *evaluator, name, a.lease_s, StopOnSignals::flag());
    stopped = StopOnSignals::requested();
  }
  std::cout << "worker " << name << ": " << stats.posted << " evaluation" << (stats.posted == 1 ? "" : "s") << " posted"
            << (stats.lost ? ", " + std::to_string(stats.lost) + " lost to a lease that ran out" : std::string())
            << (stats.released ? ", " + std::to_string(stats.released) + " given back unmeasured" : std::string())
            << (stopped ? " (stopped)" : "; run " + std::to_string(a.run) + " finished") << "\n";
  return stopped ? 130 : 0;
}

}  // namespace evo::cli
