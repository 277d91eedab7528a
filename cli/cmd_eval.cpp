// evo eval: one candidate through every gate, each verdict printed with its figures and the
// evaluation stored like any run's. evo worker: the per-GPU process that evaluator starts.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/table.h"
#include "engine/error.h"
#include "engine/evaluation_json.h"
#include "engine/gpu_evaluator.h"
#include "engine/profile.h"
#include "engine/space.h"
#include "engine/worker.h"
#include "population/store.h"

namespace evo::cli {
namespace {

std::string sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

std::string timing_text(const Timing& t) {
  if (t.outcome != Outcome::Passed) return t.reason;
  return "p50 " + fmt_us(t.p50_us) + " us, p90 " + fmt_us(t.p90_us) + ", mean " + fmt_us(t.mean_us) + " ± " +
         fmt_us(t.std_us) + ", CV " + fmt_num(100 * t.cv, 2) + "%, min " + fmt_us(t.min_us) + "  (" + t.mode + ", " +
         std::to_string(t.iters) + " samples, problem " + t.problem + ")";
}

std::string outcome_or(const Outcome o, bool ran) { return ran ? outcome_name(o) : "-"; }

void print_evaluation(const Evaluation& e, const Timing& baseline, const std::string& device, std::int64_t run,
                      std::int64_t id, const std::string& db) {
  std::cout << "config  " << e.config_hash << "  " << config_text(e.config) << "\n"
            << "device  " << device << "\n\n";
  Table t({"gate", "verdict", "figures"});
  const Build& b = e.build;
  t.add({"compile", b.ok ? "passed" : "failed",
         b.ok ? fmt_num(b.compile_ms, 0) + " ms" + (b.from_cache ? " (cached)" : "") : e.message});
  const bool compiled = b.ok;
  const StaticVerdict& s = e.static_verdict;
  if (compiled)
    t.add({"static", outcome_name(s.outcome),
           std::to_string(s.ptxas.registers) + " regs, " + std::to_string(s.ptxas.spill_stores + s.ptxas.spill_loads) +
               " B spilled, " + fmt_bytes(static_cast<double>(s.total_smem)) + " smem, " +
               std::to_string(s.threads_per_block) + " threads" +
               (s.blocks_per_sm > 0 ? ", " + std::to_string(s.blocks_per_sm) + " blocks/SM (occupancy " +
                                          fmt_num(s.occupancy_pct, 0) + "%, by " + s.occupancy_limit + ")"
                                    : "") +
               (s.ptxas.wgmma_serialized.empty() ? "" : ", wgmma serialised (" + wgmma_serialized_codes(s.ptxas) + ")") +
               (s.reason.empty() ? "" : "; " + s.reason)});
  const bool ran = compiled && s.outcome != Outcome::Rejected;
  if (ran) {
    t.add({"green", outcome_name(e.green.outcome),
           (e.green.outcome == Outcome::Passed ? "" : e.green.reason) +
               (e.green.reference.empty() ? "" : (e.green.outcome == Outcome::Passed ? "against " : "; against ") +
                                                     e.green.reference)});
    for (const auto& p : e.green.problems)
      t.add({"  " + p.problem, outcome_name(p.outcome),
             "max_abs " + sci(p.max_abs) + ", mean_abs " + sci(p.mean_abs) + ", rel_l2 " + sci(p.rel_l2) + ", bad " +
                 sci(p.bad_pct) + "%, NaN " + std::to_string(p.nan_count) + ", Inf " + std::to_string(p.inf_count) +
                 ", unwritten " + std::to_string(p.unwritten) + ", " + std::to_string(p.trials_run) + " trials" +
                 (p.reason.empty() || p.outcome == Outcome::Passed ? "" : "; " + p.reason)});
  }
  const bool green = ran && e.green.outcome == Outcome::Passed;
  t.add({"baseline", outcome_name(baseline.outcome), timing_text(baseline)});
  if (green) {
    t.add({"fast", outcome_name(e.fast.outcome),
           timing_text(e.fast) + (e.speedup > 0 ? "; speedup " + fmt_num(e.speedup, 3) + "x" : "")});
    std::string m = e.metrics.reason;
    for (const auto& [k, v] : e.metrics.values) m += (m.empty() ? "" : "; ") + k + " " + sci(v);
    t.add({"metrics", outcome_name(e.metrics.outcome), m});
    t.add({"metric gate", outcome_name(e.metric_gate.outcome), e.metric_gate.reason});
    t.add({"sanitize", outcome_name(e.sanitize.outcome),
           (e.sanitize.outcome == Outcome::Skipped ? "" : std::to_string(e.sanitize.errors) + " errors") +
               (e.sanitize.first_message.empty() ? "" : (e.sanitize.outcome == Outcome::Skipped ? "" : ": ") +
                                                            e.sanitize.first_message)});
  } else if (ran && e.fast.outcome != Outcome::Skipped) {
    t.add({"fast", outcome_or(e.fast.outcome, true), e.fast.reason});
  }
  t.print(std::cout);
  char secs[160];
  std::snprintf(secs, sizeof secs, "compile %.2f s, green %.2f s, fast %.2f s, metrics %.2f s", e.seconds_compile,
                e.seconds_green, e.seconds_fast, e.seconds_metrics);
  std::cout << "\nstatus  " << status_name(e.status) << ": " << e.message << "\n"
            << "time    " << secs << "\n"
            << "stored  evaluation " << id << " of run " << run << " in " << db << "\n";
}

}  // namespace

int cmd_eval(const Globals& g, const EvalArgs& a) {
  Profile p = load_profile(resolve_profile(a.profile));
  KnobSpace space(p);
  if (a.baseline && !a.knobs.empty()) throw UserError("--baseline and --knobs: give one or the other");
  Config c = a.baseline ? p.baseline : space.parse(a.knobs, p.baseline);
  if (auto why = space.why_invalid(c)) throw UserError((a.baseline ? "baseline: " : "--knobs: ") + *why);

  GpuEvaluatorOptions o;
  o.devices = {g.device};
  o.jobs = g.jobs;
  o.compile_timeout_s = g.compile_timeout;
  o.cache_dir = g.cache;
  o.metrics = !a.no_metrics;
  o.sanitize = a.sanitize;
  // The device is probed first: without one nothing is compiled and no database is created.
  auto ev = make_gpu_evaluator(p, o);

  Store store(g.db);
  RunInfo info;
  info.profile = p.name;
  info.profile_path = p.path.string();
  info.strategy = "eval";
  info.device = ev->device();
  info.driver = ev->driver();
  info.arch = p.arch;
  info.budget = 1;
  info.status = "running";
  info.options_json = nlohmann::json{{"knobs", a.knobs}, {"baseline", a.baseline}, {"sanitize", a.sanitize},
                                     {"no_metrics", a.no_metrics}}
                          .dump();
  const std::int64_t run = store.begin_run(info);

  Timing baseline;
  Evaluation e;
  try {
    baseline = ev->time_baseline();
    if (baseline.outcome == Outcome::Passed) store.set_run_baseline(run, baseline.p50_us);
    e = ev->evaluate(Candidate{c, Origin{a.baseline ? "baseline" : "manual", "evo eval", {}}});
  } catch (const UserError&) {
    // A broken environment, or a command reference that cannot answer: no verdict to store.
    store.set_run_status(run, "failed");
    throw;
  }
  const std::int64_t id = store.record(run, EvalKey{p.name, ev->build_key(c), ev->device(), p.objective, measurement_setup(p)}, e, false);
  store.set_run_status(run, "finished");

  if (g.json) {
    std::cout << nlohmann::json{{"run", run}, {"evaluation_id", id}, {"device", ev->device()}, {"baseline", baseline},
                                {"evaluation", e}}
                     .dump(2)
              << '\n';
  } else {
    print_evaluation(e, baseline, ev->device(), run, id, store.name());
  }
  return e.status == Status::Measured ? 0 : 1;
}

int cmd_worker(int device, const std::string& one_shot_job, bool profile) {
  if (!one_shot_job.empty()) return worker_one_shot(device, one_shot_job);
  // The protocol owns stdout: anything else that writes there (a log line, a library's notice)
  // goes to stderr instead.
  const int protocol_out = ::dup(1);
  if (protocol_out < 0 || ::dup2(2, 1) < 0) throw UserError("worker: cannot set up its output");
  return worker_main(device, 0, protocol_out, profile ? WorkerRole::Profile : WorkerRole::Measure);
}

}  // namespace evo::cli
