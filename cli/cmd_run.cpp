// evo run: a search on the GPU (make_gpu_evaluator) or against a recorded landscape (--replay),
// every result committed to the database as it arrives (engine/run.h has the loop).
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/stop_signal.h"
#include "cli/table.h"              // defines: fmt_us, fmt_num
#include "engine/data_dir.h"         // defines: executable_path
#include "engine/default_profile.h"  // defines: choose_default_profile
#include "engine/error.h"
#include "engine/gpu_evaluator.h"   // defines: make_gpu_evaluator, visible_entry
#include "engine/trace.h"
#include "engine/profile.h"
#include "engine/replay.h"          // defines: ReplayEvaluator
#include "engine/run.h"             // defines: run_search, RunOptions
#include "engine/space.h"
#include "engine/search/transfer.h"  // defines: TransferSource
#include "engine/worker.h"          // defines: WorkerClient (the device probe)
#include "population/postgres.h"
#include "population/queue.h"
#include "population/queue_evaluator.h"  // defines: QueueEvaluator
#include "population/store.h"

namespace evo::cli {
// --devices: "all" (every GPU the worker sees) or distinct ordinals "0,1,3"; "" = --device.
std::vector<int> parse_devices(const std::string& text, int device) {
  if (text.empty()) return {device};
  if (text == "all") return {-1};
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    std::size_t used = 0;
    int d = -1;
    try {
      d = std::stoi(item, &used);
    } catch (...) {
    }
    if (used != item.size() || d < 0)
      throw UserError("--devices " + text + ": '" + item + "' is not a GPU ordinal (give all, or 0,1,...)");
    if (std::find(out.begin(), out.end(), d) != out.end()) throw UserError("--devices " + text + ": GPU " + item + " named twice");
    out.push_back(d);
  }
  if (out.empty()) throw UserError("--devices: give all, or ordinals 0,1,...");
  return out;
}

namespace {

std::map<std::string, std::string> parse_options(const std::vector<std::string>& kv) {
  std::map<std::string, std::string> out;
  for (const auto& s : kv) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw UserError("--option '" + s + "': expected KEY=VALUE");
    out[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return out;
}

// --objective: "all" (every problem, in the profile's order) or distinct problem names "a,b";
// "" = the profile's own objective. Checked before a device is probed or a database opened.
std::vector<std::string> parse_objectives(const std::string& text, const Profile& p) {
  if (text.empty()) return {p.objective};
  std::string names;
  for (const auto& pr : p.problems) names += (names.empty() ? "" : ", ") + pr.name;
  std::vector<std::string> out;
  if (text == "all") {
    for (const auto& pr : p.problems) out.push_back(pr.name);
    return out;
  }
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!p.find_problem(item))
      throw UserError("--objective " + text + ": profile " + p.name + " has no problem '" + item + "' (its problems: " +
                      names + "; or give all)");
    if (std::find(out.begin(), out.end(), item) != out.end())
      throw UserError("--objective " + text + ": problem " + item + " named twice");
    out.push_back(item);
  }
  if (out.empty()) throw UserError("--objective: give all, or problem names a,b,... (profile " + p.name + ": " + names + ")");
  return out;
}

// The options a run is resumed with, as recorded in runs.options_json. `objective` only when the
// run was given one, so a plain run's options read as they did before --objective existed.
nlohmann::json options_json(const RunArgs& a, const std::string& objective) {
  nlohmann::json j{{"strategy", a.strategy}, {"options", a.options},          {"proposer", a.proposer},
                   {"budget", a.budget},     {"seed", a.seed},                {"ahead", a.ahead},
                   {"replay", a.replay},     {"sanitize_elites", a.sanitize_elites}, {"no_metrics", a.no_metrics},
                   {"metrics_all", a.metrics_all}};
  if (!a.objective.empty()) j["objective"] = objective;
  if (!a.transfer_from.empty()) j["transfer_from"] = a.transfer_from;
  if (a.no_transfer) j["no_transfer"] = true;
  return j;
}

// What evo proposes first (engine/search/transfer.h): the landscapes of --transfer-from, then the
// database's other problems and devices of this profile, the nearest task first: this problem as the
// profile was before (another setup), then the problem whose sizes are nearest this one's
// (problem_distance; the same problem on another device is at 0), this device before another.
// One line says where they come from. `store`: null where there is no database yet.
std::vector<Config> transfer_for(const RunArgs& a, std::vector<TransferSource> sources, const Store* store,
                                 const Profile& prof, const std::string& setup, const std::string& device,
                                 const KnobSpace& space) {
  if (store && !a.no_transfer) {
    const Problem* here = nullptr;
    for (const auto& p : prof.problems)
      if (p.name == prof.objective) here = &p;
    const auto distance = [&](const std::string& problem) {
      for (const auto& p : prof.problems)
        if (p.name == problem && here) return problem_distance(p, *here);
      return 1e300;  // a problem the profile no longer has: last
    };
    // (problem, device): the elites of each are of one setup, the one it was last measured under.
    std::map<std::pair<std::string, std::string>, TransferSource> by_task;
    for (const auto& e : store->elites(prof.name, "", 0)) {
      const bool same_task = e.key.problem == prof.objective && e.key.device == device;
      if (same_task && e.key.setup == setup) continue;  // this very task: read back, not transferred
      auto& s = by_task[{e.key.problem, e.key.device}];
      // The same problem and device under an earlier setup (a problem resized, evo.tune called again
      // for another problem_size): measured anew, and the nearest task of all.
      if (s.label.empty())
        s.label = "problem " + e.key.problem + " on " + e.key.device + (same_task ? " as the profile was before" : "");
      s.best_first.push_back(e.eval.config);
    }
    std::vector<std::pair<std::pair<double, bool>, TransferSource>> ranked;
    for (auto& [task, s] : by_task)
      ranked.push_back({{task.first == prof.objective && task.second == device ? -1.0 : distance(task.first),
                         task.second != device},
                        std::move(s)});
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto& r : ranked) sources.push_back(std::move(r.second));
  }
  // As many as any setting of the strategy's `transfer` could take, within reason; the line names
  // the sources of those its setting takes.
  const auto found = transfer_candidates(sources, space, prof.baseline, 64);
  std::vector<Config> configs;
  for (const auto& c : found) configs.push_back(c.config);
  // The strategy's own reading of its options (a bad one is refused here as make_strategy would).
  const auto used = static_cast<std::size_t>(
      OptionValues("evo", find_strategy("evo").options, parse_options(a.options)).integer("transfer", 0, 100000));
  std::set<std::size_t> named;
  std::string from;
  for (std::size_t i = 0; i < found.size() && i < used; ++i)
    if (named.insert(found[i].source).second) from += (from.empty() ? "" : "; ") + sources[found[i].source].label;
  if (!from.empty())
    spdlog::info("transfer: {} of the fastest on {} proposed first (--no-transfer to start afresh)",
                 std::min(used, found.size()), from);
  return configs;
}

// --resume RUN: the run's own options, except this session's time limit and verbosity.
RunArgs resumed_args(const Store& store, const RunArgs& given, std::string& profile_path) {
  auto info = store.run(*given.resume);
  if (!info)
    throw UserError("--resume " + std::to_string(*given.resume) + ": no such run in " + store.name() +
                    " (see `evo runs`)");
  if (info->status == "finished")
    throw UserError("--resume " + std::to_string(info->id) + ": the run is finished (start a new one with `evo run`)");
  RunArgs a = given;
  try {
    auto j = nlohmann::json::parse(info->options_json);
    a.strategy = j.at("strategy").get<std::string>();
    a.options = j.at("options").get<std::vector<std::string>>();
    a.proposer = j.at("proposer").get<std::string>();
    a.ahead = j.contains("ahead") ? j.at("ahead").get<std::size_t>() : j.value("batch", std::size_t{0});
    a.replay = j.at("replay").get<std::string>();
    a.sanitize_elites = j.at("sanitize_elites").get<bool>();
    a.no_metrics = j.at("no_metrics").get<bool>();
    a.metrics_all = j.value("metrics_all", false);
    a.objective = j.value("objective", std::string());
    a.transfer_from = j.value("transfer_from", std::vector<std::string>());
    a.no_transfer = j.value("no_transfer", false);
  } catch (const nlohmann::json::exception&) {
    throw UserError("--resume " + std::to_string(info->id) + ": run was not started by `evo run` (no options recorded)");
  }
  a.budget = info->budget;
  a.seed = info->seed;
  a.profile = info->profile;
  profile_path = info->profile_path;
  return a;
}

// Whose pipeline the summary's busy figures describe: this host's compile pool and GPUs, a replay's
// simulated ones (--replay-compile-s, --replay-gpu-s, EVO_REPLAY_DELAY_MS), or none here (a queue's
// workers have their own; a replay that costs nothing spends no compile or GPU time at all, its
// seconds are the landscape's record).
enum class Pipeline { Here, Simulated, None };

// The bound above counts the recorded evaluations' compiles; the candidates dropped at the run's
// end had compile workers too. With their seconds, the bound the schedule itself is held to.
std::string dropped_bound_text(const RunSummary& s, double wall) {
  RunSummary all = s;
  all.seconds_compile += s.seconds_compile_dropped;
  return "; with the " + fmt_num(s.seconds_compile_dropped, 1) + " compile seconds of the " + std::to_string(s.dropped_at_end) +
         " dropped, bound " + fmt_num(all.bound_s(), 1) + " s (" + fmt_num(wall / std::max(all.bound_s(), 1e-9), 2) + "x)";
}

// One run's summary: what was spent, the best, where the time went.
void print_summary(const RunSummary& s, const std::string& problem, Pipeline pipeline, std::ostream& out) {
  out << "run " << s.run_id << (problem.empty() ? "" : " (problem " + problem + ")") << " " << s.status << " (" << s.stop_reason << "): " << s.new_evaluations << " new, "
            << s.evaluations - s.new_evaluations << " read back, "
            << (s.evaluations ? fmt_num(100.0 * s.measured / s.evaluations, 1) : "0") << "% valid"
            << (s.dropped_at_end > 0 ? "; " + std::to_string(s.dropped_at_end) + " more in flight dropped, not recorded" +
                                           (s.stop_reason == "budget spent" ? " (extras compiled on idle workers at the budget's end)" : "")
                                     : std::string())
            << "\n";
  if (s.best)
    out << "best: #" << s.best_id << " " << fmt_us(s.best->fast.p50_us) << " us, " << fmt_num(s.best->speedup, 2)
              << "x the baseline (" << fmt_us(s.baseline_p50_us) << " us): " << config_text(s.best->config) << " ["
              << s.best->origin.kind << (s.best->origin.rule.empty() ? "" : ":" + s.best->origin.rule) << "]\n";
  else
    out << "best: nothing passed GREEN and FAST\n";
  out << "time: compile " << fmt_num(s.seconds_compile, 1) << " s, green " << fmt_num(s.seconds_green, 1)
            << " s, fast " << fmt_num(s.seconds_fast, 1) << " s, metrics " << fmt_num(s.seconds_metrics, 1)
            << " s; wall " << fmt_num(s.seconds, 1) << " s"
            << (s.seconds_workers_ready > 0 ? " after the GPU workers' " + fmt_num(s.seconds_workers_ready, 1) + " s start" : "")
            << (s.seconds_first_result > 0 ? ", the first result after " + fmt_num(s.seconds_first_result, 1) + " s" : "")
            << (s.seconds_metrics_at_end >= 0.05 ? ", the best's metrics at its end " + fmt_num(s.seconds_metrics_at_end, 1) + " s" : "")
            << "\n";
  // How busy the pipeline was, against the bound no schedule can beat.
  const double pipe_wall = s.seconds - s.seconds_sanitize;
  if (pipeline != Pipeline::None && pipe_wall > 0 && s.new_evaluations > 0 && s.bound_s() > 0)
    out << (pipeline == Pipeline::Simulated ? "pipeline (simulated by the replay): " : "pipeline: ") << s.compile_slots << " compile workers busy "
              << fmt_num(100 * s.seconds_compile / (pipe_wall * s.compile_slots), 0) << "%, "
              << (s.gpus > 1 ? std::to_string(s.gpus) + " GPUs" : std::string("GPU")) << " busy "
              << fmt_num(100 * s.seconds_gpu / (pipe_wall * s.gpus), 0) << "% (" << fmt_num(s.seconds_gpu, 1)
              << " s); bound " << fmt_num(s.bound_s(), 1) << " s, wall " << fmt_num(pipe_wall, 1) << " s ("
              << fmt_num(pipe_wall / std::max(s.bound_s(), 1e-9), 2) << "x"
              << (s.longest_compile_s > s.bound_s() ? "; one compile alone took " + fmt_num(s.longest_compile_s, 1) + " s"
                                                    : std::string())
              << ")"
              << (s.seconds_compile_dropped > 0 ? dropped_bound_text(s, pipe_wall) : std::string())
              << (s.seconds_sanitize > 0 ? ", then memcheck " + fmt_num(s.seconds_sanitize, 1) + " s" : "") << "\n";
}

}  // namespace

// Candidates the queue's workers take at once, together: the loop keeps 2 x this + 1 in flight
// (--ahead overrides), enough for a few hosts' worth of GPUs without proposing far ahead of results.
constexpr std::size_t kQueueSlots = 8;

int cmd_run(const Globals& g, const RunArgs& given) {
  if (given.budget <= 0) throw UserError("--budget " + std::to_string(given.budget) + ": must be at least 1");
  if (given.time_limit_s < 0) throw UserError("--time-limit: must not be negative");
  find_strategy(given.strategy);  // an unknown strategy fails before anything is opened
  // Many hosts: a store on PostgreSQL holds its runs' work queue in the same database; a SQLite
  // store's run is spread through the server --queue names.
  const bool queue_in_store = pg::is_url(g.db);
  if (queue_in_store && !given.queue.empty())
    throw UserError("--queue " + pg::redact(given.queue) + " with --db " + pg::redact(g.db) +
                    ": a store on PostgreSQL holds its runs' work queue itself; drop --queue");
  if (!given.queue.empty() && !pg::is_url(given.queue))
    throw UserError("--queue " + pg::redact(given.queue) + ": not a postgresql:// URL (the work queue lives in "
                    "PostgreSQL; the run's store stays the SQLite file --db)");
  const std::string queue_url = queue_in_store ? g.db : given.queue;
  const std::vector<int> devices = parse_devices(given.devices, g.device);
  if (!queue_url.empty() && !given.devices.empty())
    throw UserError("--devices " + given.devices + " with a work queue (" + pg::redact(queue_url) +
                    "): the workers measure, the coordinator only names the GPU model on --device; start an "
                    "`evo worker` per GPU instead");

  // A. The evaluator and the profile: a replay's profile is the landscape's own knob space.
  std::unique_ptr<Store> store;
  RunArgs a = given;
  std::string profile_path;
  if (given.resume) {
    store = std::make_unique<Store>(g.db, Store::Open::Existing);
    a = resumed_args(*store, given, profile_path);
  }
  if (!a.replay.empty()) a.replay = std::filesystem::absolute(a.replay).string();  // resumable from anywhere
  // --transfer-from: read first, so a file that is not a landscape writes nothing.
  std::vector<TransferSource> transfer_files;
  for (auto& f : a.transfer_from) {
    f = std::filesystem::absolute(f).string();
    transfer_files.push_back(transfer_from_landscape(f));
  }
  std::unique_ptr<Evaluator> evaluator;
  const Landscape* replayed = nullptr;  // the landscape a replay reads (the evaluator holds it)
  Profile profile;
  Pipeline pipeline = Pipeline::Here;
  if (!a.replay.empty()) {
    ReplayCost cost;
    cost.compile_s = a.replay_compile_s;
    cost.gpu_s = a.replay_gpu_s;
    cost.jobs = static_cast<std::size_t>(g.jobs > 0 ? g.jobs : std::max(1u, std::thread::hardware_concurrency()));
    // EVO_REPLAY_DELAY_MS: each replayed evaluation takes this long, one at a time (docs/search.md).
    if (const char* d = std::getenv("EVO_REPLAY_DELAY_MS")) cost = {std::atof(d) / 1000, 0, 1};
    cost.compile_timeout_s = g.compile_timeout;
    if (cost.gpu_s < 0) throw UserError("--replay-gpu-s: must not be negative");
    pipeline = cost.compile_s != 0 || cost.gpu_s > 0 ? Pipeline::Simulated : Pipeline::None;
    auto replay = std::make_unique<ReplayEvaluator>(a.replay, cost);
    profile = replay->profile();
    replayed = &replay->landscape();
    // Only a profile named on purpose (--profile) can contradict the landscape: a name must be the
    // landscape's, a file must hold the landscape's space (what evo.tune writes, replayed in its tests).
    if (!given.resume && a.profile != RunArgs{}.profile && a.profile != profile.name) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(a.profile, ec))
        throw UserError("--profile " + a.profile + ": the landscape " + a.replay + " is of profile " + profile.name);
      const Profile file = load_profile(a.profile);
      if (auto why = landscape_mismatch(replay->landscape(), file))
        throw UserError(a.profile + ": " + *why + " (the landscape " + a.replay + ")");
    }
    profile_path = a.replay;
    evaluator = std::move(replay);
  } else {
    if (a.profile.empty()) {
      // No --profile: the shipped one for this device (engine/default_profile.h), asked of a
      // worker, as the coordinator never initialises CUDA. No device fails here as below.
      const int first = std::max(devices.front(), 0);
      DeviceInfo d = WorkerClient(executable_path().string(), first, visible_entry(first)).probe();
      if (!d.present) throw UserError("no CUDA device is present: " + d.error);
      const ProfileChoice c = choose_default_profile(d.cc, shipped_profile_candidates());
      spdlog::info("profile {} for {} ({}): {}", c.name, d.name, d.cc, c.reason);
      a.profile = c.name;
    }
    profile = load_profile(profile_path.empty() ? resolve_profile(a.profile) : std::filesystem::path(profile_path));
    profile_path = profile.path.string();
  }
  const std::vector<std::string> objectives = parse_objectives(a.objective, profile);
  if (!given.queue.empty() && objectives.size() > 1)
    throw UserError("--queue: one problem per run (its workers serve one queue run); --objective " + a.objective +
                    " names " + std::to_string(objectives.size()));
  // A landscape recorded one problem's timings: it can replay that problem only.
  if (!a.replay.empty())
    for (const auto& o : objectives)
      if (o != profile.objective)
        throw UserError("--objective " + a.objective + ": the landscape " + a.replay + " recorded problem " +
                        profile.objective + " only");

  // B. One run per objective problem, one after another: each its own strategy, budget, baseline
  // and elites (evaluations are keyed by problem); compiles are shared through the cache.
  struct Done {
    std::string problem;
    RunSummary s;
  };
  std::vector<Done> done;
  for (std::size_t i = 0; i < objectives.size(); ++i) {
    double workers_ready_s = 0;
    Profile prof = profile;
    prof.objective = objectives[i];
    if (a.replay.empty()) {
      GpuEvaluatorOptions o;
      o.devices = devices;
      o.jobs = g.jobs;
      o.compile_timeout_s = g.compile_timeout;
      o.cache_dir = g.cache;
      o.metrics = !a.no_metrics;
      // The device is probed first: without one nothing is compiled and no database is created.
      const auto t0 = std::chrono::steady_clock::now();
      trace_since_process_start("evo started: arguments, profile, database", "coordinator");
      evaluator = make_gpu_evaluator(prof, o);
      workers_ready_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (objectives.size() > 1) spdlog::info("objective {} of {}: problem {}", i + 1, objectives.size(), objectives[i]);

    // Many hosts: the candidates go to `evo worker` processes through PostgreSQL; this process
    // proposes and records, its own evaluator naming the device and timing the baseline.
    // Connecting comes before the store, and the store before the queue's first write: a wrong URL
    // writes nothing, nor does a database of another program or a newer evo's.
    std::unique_ptr<Evaluator> queued;
    std::optional<std::int64_t> run_id;
    if (!queue_url.empty()) {
      QueueRunSpec spec;
      spec.profile = prof.name;
      spec.profile_path = std::filesystem::absolute(profile_path).string();
      spec.objective = objectives[i];
      spec.device = evaluator->device();
      spec.replay = a.replay;
      spec.replay_compile_s = a.replay_compile_s;
      spec.replay_gpu_s = a.replay_gpu_s;
      spec.metrics = !a.no_metrics;
      std::int64_t queue_run = 0;
      {
        pg::Conn conn(queue_url);
        if (!store) store = std::make_unique<Store>(g.db);
        WorkQueue queue(conn);
        // In the store's database the run is its queue run, under one number (a resumed one too).
        if (queue_in_store && a.resume) {
          queue_run = *a.resume;
          queue.reopen_run(queue_run, queue_spec_text(spec));
        } else {
          queue_run = queue.create_run(queue_spec_text(spec));
        }
        if (queue_in_store) run_id = queue_run;
      }
      queued = std::make_unique<QueueEvaluator>(queue_url, queue_run, *evaluator, kQueueSlots);
      if (queue_in_store)
        std::cout << "run " << queue_run << " in " << store->name() << ": start workers with  evo worker --db "
                  << store->name() << " --run " << queue_run << std::endl;
      else
        std::cout << "queue run " << queue_run << " on " << pg::redact(given.queue)
                  << ": start workers with  evo worker --queue " << pg::redact(given.queue) << " --run " << queue_run
                  << std::endl;
    }
    Evaluator& measure = queued ? *queued : *evaluator;

    KnobSpace space(prof);
    // Said once the space is enumerated for the strategy anyway: what a partial landscape lacks.
    if (replayed)
      if (const std::string note = coverage_note(a.replay, landscape_coverage(*replayed, space)); !note.empty())
        spdlog::warn("{}", note);
    StrategyContext ctx{prof, space, a.seed, parse_options(a.options), "", "", {}};
    if (!a.proposer.empty()) ctx.options["proposer"] = a.proposer;
    ctx.budget = a.budget;
    ctx.pipelined = pipeline != Pipeline::None;
    ctx.device = evaluator->device();
    const std::string setup = measurement_setup(prof);  // hashes the files the profile names: once
    if (a.strategy == "evo") {
      // Transfer reads the database as it is: a missing one has nothing to give, and is created
      // only once the strategy is made, so a bad strategy option writes nothing.
      std::unique_ptr<Store> reader;
      const Store* from = store.get();
      if (!from && (pg::is_url(g.db) || std::filesystem::exists(g.db))) {
        try {
          reader = std::make_unique<Store>(g.db, Store::Open::Existing);
          from = reader.get();
        } catch (const UserError&) {
          if (!pg::is_url(g.db)) throw;  // a damaged file is said here; a server's empty database has no runs
        }
      }
      ctx.transfer = transfer_for(a, transfer_files, from, prof, setup, ctx.device, space);
    }
    auto strategy = make_strategy(a.strategy, ctx);
    if (!store) store = std::make_unique<Store>(g.db);
    RunOptions ro;
    ro.strategy = a.strategy;
    ro.budget = a.budget;
    ro.time_limit_s = a.time_limit_s;
    ro.seed = a.seed;
    ro.resume = a.resume;
    ro.run_id = run_id;
    ro.ahead = a.ahead;
    ro.sanitize_elites = a.sanitize_elites;
    ro.metrics_near_best = a.metrics_all ? 0 : RunOptions{}.metrics_near_best;
    ro.progress = !a.quiet && ::isatty(STDERR_FILENO);
    ro.profile_path = profile_path;
    ro.setup = setup;
    ro.options_json = options_json(a, objectives[i]).dump();
    // The same search, on the same problems, data and gates (a profile edited since is another search).
    const auto same_setup = [&](std::int64_t run) {
      const auto rows = store->evaluations_of_run(run);
      return !rows.empty() && rows.front().key.setup == setup;
    };
    if (!a.resume)
      for (const auto& r : store->runs())
        if (r.status == "finished" && r.profile == prof.name && r.device == evaluator->device() &&
            r.strategy == a.strategy && r.seed == a.seed && r.budget == a.budget && r.options_json == ro.options_json &&
            same_setup(r.id)) {
          ro.repeat_of = r.id;
          spdlog::info("run {} was this same search on {}: repeating it from the database", r.id, r.device);
          break;
        }
    RunSummary s;
    {
      StopOnSignals stop;  // Ctrl-C: finish the candidate in flight, then stop cleanly
      ro.stop = StopOnSignals::flag();
      s = run_search(prof, *strategy, measure, *store, ro);
    }
    s.seconds_workers_ready = workers_ready_s;
    print_summary(s, objectives.size() > 1 ? objectives[i] : "", queued ? Pipeline::None : pipeline, std::cout);
    done.push_back({objectives[i], s});
    if (s.status == "interrupted") {
      // Resumed, it opens a new queue run (this one is finished as evo exits): workers start anew.
      std::cout << "resume with: evo --db " << store->name() << " run --resume " << s.run_id
                << (given.queue.empty() ? "" : " --queue " + pg::redact(given.queue)) << "\n";
      if (i + 1 < objectives.size()) {
        std::string rest;
        for (std::size_t k = i + 1; k < objectives.size(); ++k) rest += (rest.empty() ? "" : ",") + objectives[k];
        std::cout << "not started: --objective " << rest << "\n";
      }
      return 130;
    }
    queued.reset();  // finishes the queue run: its workers exit
    if (a.replay.empty()) evaluator.reset();  // its workers exit before the next problem's start
  }

  // C. A kernel per shape: each problem's best side by side (show-elites and export --dispatch
  // read them back from the database).
  if (done.size() > 1) {
    Table t({"problem", "run", "best us", "speedup", "knobs"});
    for (const auto& d : done)
      t.add({d.problem, std::to_string(d.s.run_id), d.s.best ? fmt_us(d.s.best->fast.p50_us) : "",
             d.s.best ? fmt_num(d.s.best->speedup, 2) + "x" : "",
             d.s.best ? config_text(d.s.best->config) : "nothing passed GREEN and FAST"});
    std::cout << "\nbest per problem (" << profile.name << "):\n";
    t.print(std::cout);
  }
  trace_since_process_start("evo run, from its start to its return", "coordinator");
  return 0;
}

}  // namespace evo::cli
