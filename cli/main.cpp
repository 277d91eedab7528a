// evo: the command line. Parsing and dispatch only; the work is in the cmd_* functions.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "engine/compiler.h"  // defines: serve_if_compile_worker
#include "engine/error.h"
#include "population/postgres.h"  // defines: pg::is_url

int main(int argc, char** argv) {
  evo::serve_if_compile_worker();  // a compile worker of a run's pool: never returns
  using namespace evo::cli;
  CLI::App app{"evo: evolutionary search for fast, verified CUDA kernels.\n"
               "  evo run --budget 200            search the default profile for GPU 0 (sdpa_fp8_wgmma on sm_90)\n"
               "  evo show-elites                 the best configurations found, with their evidence\n"
               "  evo export best --to kernels/   the winner as a standalone .cu + provenance JSON",
               "evo"};
  app.require_subcommand(1);
  app.fallthrough();  // subcommands inherit it: `evo compile X --jobs 2` works as `evo --jobs 2 compile X`
  app.set_version_flag("--version", std::string("evo ") + EVO_VERSION);
  Globals g;
  app.add_option("--db", g.db, "population database: a SQLite file, or postgresql://user@host/database")
      ->capture_default_str();
  app.add_option("--cache", g.cache, "compile cache folder (default $EVO_CACHE or ~/.cache/evo/compile)");
  app.add_option("-j,--jobs", g.jobs, "compile-worker processes (default: CPU cores)");
  app.add_option("--compile-timeout", g.compile_timeout,
                 "seconds: a compile running longer is stopped and recorded as a compile error, not cached")
      ->capture_default_str();
  app.add_option("--device", g.device, "CUDA device ordinal")->capture_default_str();
  std::string data_dir;
  app.add_option("--data-dir", data_dir,
                 "folder holding the shipped profiles/ and templates/ (default $EVO_DATA_DIR, else beside the "
                 "executable: <prefix>/share/evo)");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "debug logging");

  auto* profiles = app.add_subcommand("profiles", "list the shipped profiles");
  profiles->add_flag("--json", g.json, "machine-readable output");

  std::string check_profile;
  auto* check = app.add_subcommand("check", "validate a profile: space size, configs passing constraints, baseline");
  check->add_option("profile", check_profile, "profile name (profiles/NAME.json) or path")->required();
  check->add_flag("--json", g.json, "machine-readable output");

  CompileArgs ca;
  auto* compile = app.add_subcommand("compile", "compile configurations with NVRTC and print their static verdicts");
  compile->add_option("profile", ca.profile, "profile name or path")->required();
  compile->add_option("--knobs", ca.knobs, "K=V,... (others from the baseline)");
  auto* all = compile->add_flag("--all", ca.all, "every configuration passing the constraints");
  compile->add_option("--sample", ca.sample, "a seeded uniform sample of N valid configurations")->excludes(all);
  compile->add_option("--seed", ca.seed, "seed for --sample")->capture_default_str();
  compile->add_option("--arch", ca.arch, "target, e.g. sm_90, sm_89 (default: the profile's)");
  compile->add_flag("--json", g.json, "machine-readable output");

  EvalArgs ea;
  auto* eval = app.add_subcommand("eval", "one candidate through every gate on the GPU");
  eval->add_option("profile", ea.profile, "profile name or path")->required();
  eval->add_option("--knobs", ea.knobs, "K=V,... (others from the baseline)");
  eval->add_flag("--baseline", ea.baseline, "evaluate the profile's baseline configuration");
  eval->add_flag("--sanitize", ea.sanitize, "also run GREEN's launches under compute-sanitizer memcheck");
  eval->add_flag("--no-metrics", ea.no_metrics, "skip CUPTI hardware metrics");
  eval->add_flag("--json", g.json, "machine-readable output");

  int worker_device = 0;
  std::string one_shot;
  QueueWorkerArgs qa;
  auto* worker = app.add_subcommand(
      "worker", "serve a run spread over hosts: evo --db postgresql://... worker --run N, or --queue postgresql://... "
                "--run N for a coordinator with a SQLite store (without either: the per-GPU process evo starts itself)");
  auto* worker_device_opt = worker->add_option("--device", worker_device, "CUDA device ordinal");
  worker->add_option("--one-shot", one_shot, "run one job file and exit (used under compute-sanitizer)")->group("");
  worker->add_option("--queue", qa.queue, "the PostgreSQL work queue `evo run --queue` was given");
  worker->add_option("--run", qa.run, "the run `evo run` printed (--db postgresql://...) or its queue run (--queue)");
  worker->add_option("--lease", qa.lease_s, "seconds a claim holds without renewal (renewed while evaluating)")
      ->capture_default_str();
  worker->add_option("--name", qa.name, "this worker's name in the queue (default: host:pid)");
  std::string listen;
  double listen_idle_exit_s = 0;
  worker->add_option("--listen", listen, "serve runs on this Unix socket (a pool's worker: evo pool start)")->group("");
  worker->add_option("--idle-exit", listen_idle_exit_s, "with --listen: end after this many seconds without a run")->group("");
  std::string listen_role = "measure";
  worker->add_option("--role", listen_role, "measure (GREEN, FAST) or profile (metrics passes alone): what the worker is for")
      ->group("");

  PoolArgs pa;
  auto* pool = app.add_subcommand(
      "pool", "warm GPU workers kept between runs, which every evo run on this host attaches to: start, stop, status, release");
  pool->add_option("action", pa.action,
                   "start, stop, status, or release (end the profiler sessions its idle profiling workers keep, so that "
                   "ncu can profile those GPUs)")
      ->required()
      ->check(CLI::IsMember({"start", "stop", "status", "release"}));
  pool->add_option("--devices", pa.devices, "start: GPUs, all or ordinals 0,1,... (default: --device)");
  pool->add_option("--idle-exit", pa.idle_exit_s, "start: seconds a worker waits for a run before it ends (0: never)")
      ->capture_default_str();
  pool->add_flag("--json", g.json, "machine-readable output");

  RunArgs ra;
  std::string resume_text;
  auto* run = app.add_subcommand("run", "search a profile; every result is committed to the database as it arrives");
  run->add_option("--profile", ra.profile,
                  "profile name or path (default: the shipped one whose best_for lists the GPU's arch, else sdpa_fp8)");
  run->add_option("--budget", ra.budget, "new evaluations to spend (read-back ones are free)")->capture_default_str();
  run->add_option("--strategy", ra.strategy, "evo (model-led, the default), elites, random, exhaustive or external")->capture_default_str();
  run->add_option("-o,--option", ra.options, "strategy option K=V (see docs/search.md)");
  run->add_option("--proposer", ra.proposer, "command for --strategy external (JSON on stdin/stdout)");
  run->add_option("--time-limit", ra.time_limit_s, "stop after this many seconds");
  run->add_option("--seed", ra.seed, "search seed (a run is reproducible on the same landscape)")->capture_default_str();
  run->add_option("--resume", resume_text, "continue an interrupted run (its id from `evo runs`)");
  run->add_option("--replay", ra.replay, "evaluate against a recorded landscape (JSON) instead of a GPU");
  run->add_option("--ahead,--batch", ra.ahead,
                  "candidates kept in flight (default: 2 x compile workers + 1; 1 for a replay; a scheduled exhaustive sweep counts only those compiling)");
  run->add_option("--devices", ra.devices,
                  "GPUs to measure on, one worker each: all, or ordinals 0,1,... (default: --device)");
  run->add_option("--objective", ra.objective,
                  "problems to tune, one run each, a kernel per shape: all, or names a,b,... (default: the profile's "
                  "objective); --budget is per problem");
  run->add_option("--replay-compile-s", ra.replay_compile_s,
                  "replay: simulated compile seconds per configuration on each of --jobs workers (-1: as recorded)");
  run->add_option("--replay-gpu-s", ra.replay_gpu_s, "replay: simulated GPU seconds per measured candidate");
  run->add_option("--transfer-from", ra.transfer_from,
                  "a landscape of a related task (another problem, device or head size): evo proposes its fastest "
                  "configurations first (repeatable)");
  run->add_flag("--no-transfer", ra.no_transfer,
                "evo does not propose first what was fastest on this profile's other problems and devices in the database");
  run->add_flag("--no-metrics", ra.no_metrics, "skip CUPTI hardware metrics");
  run->add_flag("--metrics-all", ra.metrics_all,
                "metrics for every timed candidate (default: those within 1.1x of the best so far; "
                "with exhaustive or random, the run's 10 best, at its end)");
  bool no_sanitize = false;
  run->add_flag("--no-sanitize", no_sanitize, "do not run compute-sanitizer on the run's best");
  run->add_flag("-q,--quiet", ra.quiet, "no progress line");
  run->add_option("--queue", ra.queue,
                  "postgresql://...: with a SQLite --db, enqueue candidates for `evo worker --queue` processes on any "
                  "host; results are recorded in --db as usual (with --db postgresql://... the queue is in that "
                  "database; docs/guide.md)");

  auto* runs = app.add_subcommand("runs", "list the runs in the database");
  runs->add_flag("--json", g.json, "machine-readable output");

  std::int64_t run_a = 0, run_b = 0;
  auto* compare = app.add_subcommand("compare", "a Markdown table comparing two runs");
  compare->add_option("run_a", run_a)->required();
  compare->add_option("run_b", run_b)->required();

  ElitesArgs sa;
  std::int64_t elite_run = 0;
  auto* elites = app.add_subcommand("show-elites", "the best configurations found, with their evidence");
  elites->add_option("--profile", sa.profile, "only this profile");
  elites->add_option("--problem", sa.problem, "only this problem");
  elites->add_option("--top", sa.top, "how many")->capture_default_str();
  elites->add_option("--run", elite_run, "only this run");
  elites->add_flag("--lineage", sa.lineage, "show how each elite was found (parents, rules)");
  elites->add_flag("--json", g.json, "machine-readable output");

  ExportArgs xa;
  auto* exp = app.add_subcommand("export", "write a kernel (.cu with knobs fixed) and its provenance (.json)");
  exp->add_option("what", xa.what, "'best' or an evaluation id")->capture_default_str();
  exp->add_option("--to", xa.to, "folder")->capture_default_str();
  exp->add_option("--profile", xa.profile, "with 'best': the profile (default: the newest run's)");
  exp->add_option("--problem", xa.problem, "with 'best': that problem's best (default: the newest run's problem)");
  exp->add_flag("--dispatch", xa.dispatch,
                "each problem's best kernel, and a dispatch: <profile>_dispatch.h (C++) and .json (docs/guide.md)");
  exp->add_flag("--torch", xa.torch, "also the cubins and evo_torch.py, to call the kernel(s) on torch tensors");

  std::int64_t land_run = 0;
  std::string land_to;
  auto* land = app.add_subcommand("export-landscape", "write a run's evaluations as a replay landscape (JSON)");
  land->add_option("run", land_run, "run id")->required();
  land->add_option("--to", land_to, "file")->required();

  std::int64_t report_run = 0;
  std::string report_to = "report.html";
  auto* report = app.add_subcommand("report", "one run as a self-contained HTML page (charts as inline SVG)");
  auto* report_run_opt = report->add_option("run", report_run, "run id (default: the newest)");
  report->add_option("--to", report_to, "file")->capture_default_str();

  std::int64_t t4_run = 0;
  std::string t4_to;
  auto* t4 = app.add_subcommand("export-t4", "write a run in the T4 autotuning results format (Kernel Tuner's JSON)");
  t4->add_option("run", t4_run, "run id")->required();
  t4->add_option("--to", t4_to, "file")->required();

  std::string t1_file, t1_to;
  auto* import_t1 = app.add_subcommand("import-t1", "write the evo profile a T1 file is read as (check, compile and run "
                                                    "take the T1 file itself too; docs/t1.md)");
  import_t1->add_option("file", t1_file, "T1 file (JSON)")->required();
  import_t1->add_option("--to", t1_to, "profile file to write (default: stdout)");

  ImportLandscapeArgs la;
  auto* import_land = app.add_subcommand(
      "import-landscape", "a Kernel Tuner cache file (.json[.gz]) or T4 results file as a replay landscape");
  import_land->add_option("file", la.file, "Kernel Tuner cache or T4 results file")->required();
  import_land->add_option("--t1", la.t1, "the T1 file of its space (parameters, conditions, defaults)")->required();
  import_land->add_option("--to", la.to, "landscape file to write (default: stdout)");

  auto* db = app.add_subcommand("db", "database maintenance");
  db->require_subcommand(1);
  auto* db_check = db->add_subcommand("check", "integrity and evo's own invariants");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help
    // A mistake in what was typed is bad input like any other: one line and exit 2 (docs/guide.md).
    std::string where = "evo";
    for (const CLI::App* sub = &app; !sub->get_subcommands().empty();) {
      sub = sub->get_subcommands().front();
      where += " " + sub->get_name();
    }
    std::cerr << "evo: " << e.what() << " (" << where << " --help lists what it takes)\n";
    return 2;
  }
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_pattern("%H:%M:%S %^%l%$ %v");
  ra.sanitize_elites = !no_sanitize;
  // Through the environment, so the workers evo starts find the same data (engine/data_dir.h).
  if (!data_dir.empty()) setenv("EVO_DATA_DIR", data_dir.c_str(), 1);

  try {
    if (!(g.compile_timeout > 0))
      throw evo::UserError("--compile-timeout " + fmt::format("{}", g.compile_timeout) + ": must be more than 0 seconds");
    if (*profiles) return cmd_profiles(g);
    if (*check) return cmd_check(g, check_profile);
    if (*compile) return cmd_compile(g, ca);
    if (*eval) return cmd_eval(g, ea);
    if (*worker) {
      if (!qa.queue.empty() || qa.run > 0 || evo::pg::is_url(g.db)) {
        qa.device = worker_device_opt->count() ? worker_device : g.device;
        return cmd_queue_worker(g, qa);
      }
      if (listen_role != "measure" && listen_role != "profile")
        throw evo::UserError("--role " + listen_role + ": give measure or profile");
      if (!listen.empty()) return cmd_worker_listen(worker_device, listen, listen_idle_exit_s, listen_role == "profile");
      return cmd_worker(worker_device, one_shot, listen_role == "profile");
    }
    if (*pool) return cmd_pool(g, pa);
    if (*run) {
      if (!resume_text.empty()) {
        try {
          ra.resume = std::stoll(resume_text);
        } catch (...) {
          throw evo::UserError("--resume: '" + resume_text + "' is not a run id (see `evo runs`)");
        }
      }
      return cmd_run(g, ra);
    }
    if (*runs) return cmd_runs(g);
    if (*compare) return cmd_compare(g, run_a, run_b);
    if (*elites) {
      if (elite_run > 0) sa.run = elite_run;
      return cmd_show_elites(g, sa);
    }
    if (*exp) return cmd_export(g, xa);
    if (*land) return cmd_export_landscape(g, land_run, land_to);
    if (*db_check) return cmd_db_check(g);
    if (*report) return cmd_report(g, report_run_opt->count() ? std::optional<std::int64_t>(report_run) : std::nullopt, report_to);
    if (*t4) return cmd_export_t4(g, t4_run, t4_to);
    if (*import_t1) return cmd_import_t1(g, t1_file, t1_to);
    if (*import_land) return cmd_import_landscape(g, la);
  } catch (const evo::UserError& e) {
    std::fflush(stdout);
    std::cerr << "evo: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "evo: internal error: " << e.what() << '\n';
    return 3;
  }
  return 0;
}
