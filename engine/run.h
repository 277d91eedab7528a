// The run loop (`evo run`): a pipeline that keeps every compile worker and the GPU busy. It asks
// the strategy for proposals ahead of the compile pool, reads back what the database already
// holds, submits the rest to the evaluator's CPU stages (compile, static gate), gives the GPU
// whichever candidate is ready, commits each result in its own transaction as it finishes, and
// tells the strategy. It owns the budget, the time limit, resume and Ctrl-C; a strategy never
// sees SQLite or a GPU (engine/search/strategy.h), an evaluator never sees the store
// (engine/evaluator.h).
//
//   A. begin the run (or reopen it with --resume, re-observing what it recorded)
//   B. the baseline: submitted first and measured first, then re-timed for this run's speedups
//   C. the pipeline: keep `ahead` candidates in flight; record each as it finishes, in any order;
//      at the budget's end keep idle compile workers busy with extras, recording whichever finish
//      first and dropping the rest (where the evaluator can drop them for nothing)
//   D. before the run reports its best, the best passes compute-sanitizer (the next best if not)
//   E. the run's status: finished, interrupted (Ctrl-C) or failed (an exception, rethrown)
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/evaluator.h"
#include "engine/profile.h"
#include "engine/search/strategy.h"
#include "population/store.h"

namespace evo {

struct RunOptions {
  std::string strategy = "evo";   // recorded in the run; the Strategy object itself is passed in
  std::int64_t budget = 200;      // NEW evaluations; read-back ones do not count
  double time_limit_s = 0;        // 0 = none; checked between candidates
  std::uint64_t seed = 0;
  std::optional<std::int64_t> resume;  // continue this run (cli checks it exists and is not finished)
  // The id a new run takes; none: the store's next. A run whose store and work queue share a
  // PostgreSQL database takes its queue run's number, so `evo runs` and `evo worker --run` agree.
  std::optional<std::int64_t> run_id;
  // Candidates in flight (proposed, not yet recorded). 0 = auto: twice the compile workers plus
  // one on a GPU, so the pool never idles while something could be compiled; one for a replay that
  // costs nothing (proposing later only ever informs a strategy better).
  std::size_t ahead = 0;
  bool sanitize_elites = true;    // compute-sanitizer on the run's best before it is reported
  // Metrics only for candidates within this factor of the best median so far (the ones the
  // insight rules read); 0 = for every candidate. Profiles with metric gates always get them.
  double metrics_near_best = 1.1;
  // A strategy that reads no metrics while it runs (exhaustive, random) gets none mid-run; the run's
  // this many best measured candidates are profiled at its end instead (engine/evaluator.h). Not
  // with metrics_near_best 0 (every candidate's, as asked) or a profile's metric gate.
  std::size_t metrics_best_at_end = 10;
  bool progress = false;          // a progress line redrawn in place (a TTY); else spdlog lines
  std::string profile_path;       // recorded: resume and export-landscape reopen it
  std::string options_json;       // recorded: the command line's options, to resume as it was
  // measurement_setup(profile) when the caller has it already (it reads every file the profile
  // names); empty: the run computes it.
  std::string setup;
  std::string arch;
  // An earlier finished run with the same profile, device, strategy, seed, budget and options: this
  // run then repeats it, charging read-back candidates to the budget too, so it reads that run's
  // results back and stops where it stopped (cli/cmd_run.cpp finds it).
  std::optional<std::int64_t> repeat_of;
  // Set (by a SIGINT handler) to stop after the candidate in flight; may be null.
  const std::atomic<bool>* stop = nullptr;
};

struct RunSummary {
  std::int64_t run_id = 0;
  std::string status;              // finished, interrupted
  std::string stop_reason;         // "budget spent", "time limit", "space exhausted", "interrupted"
  std::int64_t evaluations = 0;    // recorded in this run, all sessions (new + read back)
  std::int64_t new_evaluations = 0;
  std::int64_t measured = 0;       // GREEN and timed
  double baseline_p50_us = 0;
  std::optional<Evaluation> best;  // fastest measured of the run
  std::int64_t best_id = 0;        // its evaluation id
  double seconds = 0;              // wall time of this session
  double seconds_compile = 0, seconds_green = 0, seconds_fast = 0, seconds_metrics = 0;  // new evaluations
  // How busy the pipeline was: compile seconds are the compilers' own (CPU), GPU seconds the time
  // the GPU stages held a device (worker restarts included), summed over the `gpus` devices that
  // measured side by side; the bound is what no schedule beats.
  std::size_t compile_slots = 1;
  std::size_t gpus = 1;
  double seconds_gpu = 0;
  double seconds_sanitize = 0;     // the best's memcheck, after the pipeline
  // One new candidate's compile seconds, the most of any. A candidate of one template compiles in
  // one process, so the wall is never below this either (a few templates compile side by side, and
  // their seconds are summed: then it is an upper figure); a short run of a space with a few very
  // long compiles is held by it, not by the bound below (docs/results/pipeline.md, section 6).
  double longest_compile_s = 0;
  // Seconds from the session's start to its first recorded result (the baseline, mostly): what
  // no count of GPUs divides (its compile, the trials' inputs and reference outputs, a first launch).
  double seconds_first_result = 0;
  double seconds_workers_ready = 0;  // before the session: the GPU workers started and probed (set by evo run)
  double seconds_metrics_at_end = 0;  // wall seconds of the best's metrics profiled at the run's end (deferred)
  // Candidates still compiling (or compiled, not yet measured) when the run stopped, dropped: at the
  // budget's end, the extras the loop compiled on idle workers that lost the race (engine/run.cpp).
  std::size_t dropped_at_end = 0;
  double seconds_compile_dropped = 0;  // the compile seconds they had spent, stopped with them
  double bound_s() const {
    return std::max(seconds_compile / double(compile_slots ? compile_slots : 1), seconds_gpu / double(gpus ? gpus : 1));
  }
};

RunSummary run_search(const Profile& profile, Strategy& strategy, Evaluator& evaluator, Store& store,
                      const RunOptions& options);

}  // namespace evo
