// evo run: a search on the GPU (make_gpu_evaluator) or against a recorded landscape (--replay),
// every result committed to the database as it arrives (engine/run.h has the loop).
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "cli/table.h"              // defines: fmt_us, fmt_num
#include "engine/data_dir.h"         // defines: executable_path
#include "engine/default_profile.h"  // defines: choose_default_profile
#include "engine/error.h"
#include "engine/gpu_evaluator.h"   // defines: make_gpu_evaluator
#include "engine/replay.h"          // defines: ReplayEvaluator
#include "engine/run.h"             // defines: run_search, RunOptions
#include "engine/space.h"
#include "engine/worker.h"          // defines: WorkerClient (the device probe)
#include "population/store.h"

namespace evo::cli {
namespace {

std::atomic<bool> g_stop{false};

// First Ctrl-C: finish the candidate in flight, then stop cleanly. The handler then restores the
// default, so a second Ctrl-C abandons that candidate at once (the database stays consistent:
// each evaluation is its own transaction, and the run stays resumable).
// SIGTERM (`timeout`, a batch scheduler) is treated like the first Ctrl-C.
extern "C" void on_sigint(int sig) {
  g_stop.store(true);
  std::signal(sig, SIG_DFL);
}

std::map<std::string, std::string> parse_options(const std::vector<std::string>& kv) {
  std::map<std::string, std::string> out;
  for (const auto& s : kv) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw UserError("--option '" + s + "': expected KEY=VALUE");
    out[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return out;
}

// The options a run is resumed with, as recorded in runs.options_json.
nlohmann::json options_json(const RunArgs& a) {
  return {{"strategy", a.strategy}, {"options", a.options},          {"proposer", a.proposer},
          {"budget", a.budget},     {"seed", a.seed},                {"batch", a.batch},
          {"replay", a.replay},     {"sanitize_elites", a.sanitize_elites}, {"no_metrics", a.no_metrics},
          {"metrics_all", a.metrics_all}};
}

// --resume RUN: the run's own options, except this session's time limit and verbosity.
RunArgs resumed_args(const Store& store, const RunArgs& given, std::string& profile_path) {
  auto info = store.run(*given.resume);
  if (!info)
    throw UserError("--resume " + std::to_string(*given.resume) + ": no such run in " + store.path().string() +
                    " (see `evo runs`)");
  if (info->status == "finished")
    throw UserError("--resume " + std::to_string(info->id) + ": the run is finished (start a new one with `evo run`)");
  RunArgs a = given;
  try {
    auto j = nlohmann::json::parse(info->options_json);
    a.strategy = j.at("strategy").get<std::string>();
    a.options = j.at("options").get<std::vector<std::string>>();
    a.proposer = j.at("proposer").get<std::string>();
    a.batch = j.at("batch").get<std::size_t>();
    a.replay = j.at("replay").get<std::string>();
    a.sanitize_elites = j.at("sanitize_elites").get<bool>();
    a.no_metrics = j.at("no_metrics").get<bool>();
    a.metrics_all = j.value("metrics_all", false);
  } catch (const nlohmann::json::exception&) {
    throw UserError("--resume " + std::to_string(info->id) + ": run was not started by `evo run` (no options recorded)");
  }
  a.budget = info->budget;
  a.seed = info->seed;
  a.profile = info->profile;
  profile_path = info->profile_path;
  return a;
}

}  // namespace

int cmd_run(const Globals& g, const RunArgs& given) {
  if (given.budget <= 0) throw UserError("--budget " + std::to_string(given.budget) + ": must be at least 1");
  if (given.time_limit_s < 0) throw UserError("--time-limit: must not be negative");
  if (given.resume && !std::filesystem::exists(g.db))
    throw UserError(g.db + ": no such database, nothing to resume (pass --db)");
  find_strategy(given.strategy);  // an unknown strategy fails before anything is opened

  // A. The evaluator and the profile: a replay's profile is the landscape's own knob space.
  std::unique_ptr<Store> store;
  RunArgs a = given;
  std::string profile_path;
  if (given.resume) {
    store = std::make_unique<Store>(g.db);
    a = resumed_args(*store, given, profile_path);
  }
  if (!a.replay.empty()) a.replay = std::filesystem::absolute(a.replay).string();  // resumable from anywhere
  std::unique_ptr<Evaluator> evaluator;
  Profile profile;
  if (!a.replay.empty()) {
    double delay_ms = 0;  // EVO_REPLAY_DELAY_MS: each replayed evaluation takes this long (docs/search.md)
    if (const char* d = std::getenv("EVO_REPLAY_DELAY_MS")) delay_ms = std::atof(d);
    auto replay = std::make_unique<ReplayEvaluator>(a.replay, delay_ms);
    profile = replay->profile();
    // Only a profile named on purpose (--profile) can contradict the landscape.
    if (!given.resume && a.profile != RunArgs{}.profile && a.profile != profile.name)
      throw UserError("--profile " + a.profile + ": the landscape " + a.replay + " is of profile " + profile.name);
    profile_path = a.replay;
    evaluator = std::move(replay);
  } else {
    if (a.profile.empty()) {
      // No --profile: the shipped one for this device (engine/default_profile.h), asked of a
      // worker, as the coordinator never initialises CUDA. No device fails here as below.
      DeviceInfo d = WorkerClient(executable_path().string(), g.device).probe();
      if (!d.present) throw UserError("no CUDA device is present: " + d.error);
      const ProfileChoice c = choose_default_profile(d.cc, shipped_profile_candidates());
      spdlog::info("profile {} for {} ({}): {}", c.name, d.name, d.cc, c.reason);
      a.profile = c.name;
    }
    profile = load_profile(profile_path.empty() ? resolve_profile(a.profile) : std::filesystem::path(profile_path));
    profile_path = profile.path.string();
    GpuEvaluatorOptions o;
    o.device = g.device;
    o.jobs = g.jobs;
    o.cache_dir = g.cache;
    o.metrics = !a.no_metrics;
    // The device is probed first: without one nothing is compiled and no database is created.
    evaluator = make_gpu_evaluator(profile, o);
  }

  KnobSpace space(profile);
  StrategyContext ctx{profile, space, a.seed, parse_options(a.options), "", ""};
  if (!a.proposer.empty()) ctx.options["proposer"] = a.proposer;
  ctx.device = evaluator->device();
  auto strategy = make_strategy(a.strategy, ctx);

  if (!store) store = std::make_unique<Store>(g.db);
  RunOptions ro;
  ro.strategy = a.strategy;
  ro.budget = a.budget;
  ro.time_limit_s = a.time_limit_s;
  ro.seed = a.seed;
  ro.resume = a.resume;
  ro.batch = a.batch > 0 ? a.batch : 8;
  ro.sanitize_elites = a.sanitize_elites;
  ro.metrics_near_best = a.metrics_all ? 0 : 2.0;
  ro.progress = !a.quiet && ::isatty(STDERR_FILENO);
  ro.profile_path = profile_path;
  ro.options_json = options_json(a).dump();
  if (!a.resume)
    for (const auto& r : store->runs())
      if (r.status == "finished" && r.profile == profile.name && r.device == evaluator->device() &&
          r.strategy == a.strategy && r.seed == a.seed && r.budget == a.budget && r.options_json == ro.options_json) {
        ro.repeat_of = r.id;
        spdlog::info("run {} was this same search on {}: repeating it from the database", r.id, r.device);
        break;
      }
  ro.stop = &g_stop;

  g_stop.store(false);
  auto previous = std::signal(SIGINT, on_sigint);
  auto previous_term = std::signal(SIGTERM, on_sigint);
  RunSummary s;
  try {
    s = run_search(profile, *strategy, *evaluator, *store, ro);
  } catch (...) {
    std::signal(SIGINT, previous);
    std::signal(SIGTERM, previous_term);
    throw;
  }
  std::signal(SIGINT, previous);
  std::signal(SIGTERM, previous_term);

  // E. The summary: what was spent, the best, where the time went.
  std::cout << "run " << s.run_id << " " << s.status << " (" << s.stop_reason << "): " << s.new_evaluations << " new, "
            << s.evaluations - s.new_evaluations << " read back, "
            << (s.evaluations ? fmt_num(100.0 * s.measured / s.evaluations, 1) : "0") << "% valid\n";
  if (s.best)
    std::cout << "best: #" << s.best_id << " " << fmt_us(s.best->fast.p50_us) << " us, " << fmt_num(s.best->speedup, 2)
              << "x the baseline (" << fmt_us(s.baseline_p50_us) << " us): " << config_text(s.best->config) << " ["
              << s.best->origin.kind << (s.best->origin.rule.empty() ? "" : ":" + s.best->origin.rule) << "]\n";
  else
    std::cout << "best: nothing passed GREEN and FAST\n";
  std::cout << "time: compile " << fmt_num(s.seconds_compile, 1) << " s, green " << fmt_num(s.seconds_green, 1)
            << " s, fast " << fmt_num(s.seconds_fast, 1) << " s, metrics " << fmt_num(s.seconds_metrics, 1)
            << " s; wall " << fmt_num(s.seconds, 1) << " s\n";
  if (s.status == "interrupted")
    std::cout << "resume with: evo --db " << g.db << " run --resume " << s.run_id << "\n";
  return s.status == "interrupted" ? 130 : 0;
}

}  // namespace evo::cli
