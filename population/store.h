// The population store: runs, candidates with lineage, builds, evaluations and metrics, in one
// SQLite file (WAL; the default) or one PostgreSQL database (--db postgresql://..., for many hosts),
// the same schema on both. Each evaluation is committed in its own transaction as it finishes,
// so killing evo loses at most the candidate in flight. Elites are a query, not a copy.
// Schema: population/schema.cpp (commented SQL); versioned, migrated forward, a newer one refused.
// The two dialects' differences: population/sql.h. Tables, columns and sample queries: docs/database.md.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/evaluation.h"

namespace evo {

// What makes two measurements the same measurement (DESIGN.md: never measure twice).
struct EvalKey {
  std::string profile;       // profile name
  std::string build_key;     // compile-cache key: template text + includes + defines + options + arch + NVRTC
  std::string device;        // "NVIDIA H100 80GB HBM3" (or "replay:<landscape>")
  std::string problem;       // objective problem name
  std::string setup;         // engine/profile.h measurement_setup: the problems, data and gates it ran against
};

struct RunInfo {
  std::int64_t id = 0;         // to begin_run: the id the run is to have, or 0 for the store's next
  std::string profile, profile_path, strategy, device, driver, arch;
  std::int64_t budget = 0;
  std::uint64_t seed = 0;
  std::string options_json;    // the run's command-line options, to resume it as it was
  std::string status;          // "running", "finished", "interrupted", "failed"
  std::string started_at, finished_at;
  std::int64_t evaluations = 0;    // rows recorded for this run (new + read back)
  std::int64_t new_evaluations = 0;
  double baseline_p50_us = 0;      // the baseline as re-timed in this run
};

struct StoredEvaluation {
  std::int64_t id = 0;          // evaluation id, the candidate id users type
  std::int64_t run_id = 0;
  EvalKey key;
  Evaluation eval;
  bool reused = false;          // read back from an earlier run, not measured in this one
  std::string created_at;
  std::optional<double> elapsed_s;  // run start to this row's commit; none in rows from before schema v2
};

struct DbCheck {
  bool ok = true;
  std::vector<std::string> problems;  // the engine's integrity check, then evo's own invariants
  std::vector<std::string> notes;     // not problems: runs still marked running (in progress or interrupted)
};

class Store {
 public:
  // Create: a missing file, or an empty PostgreSQL database, gets evo's tables. Existing: a
  // reading command's, which creates nothing ("no such database", "no evo population here yet").
  enum class Open { Create, Existing };
  // `db`: a SQLite file, or postgresql://user@host/database. Throws UserError("<db>: ...") if it
  // cannot be opened or reached, is not evo's (another program's file or tables), is corrupt, or has
  // a newer schema than this binary (giving both versions); nothing is written then.
  explicit Store(const std::string& db, Open open = Open::Create);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  static int schema_version();  // of this binary
  const std::string& name() const;  // the file, or the URL with its password as "***"

  std::int64_t begin_run(RunInfo info);                 // returns the run id
  void set_run_status(std::int64_t run, const std::string& status);
  void set_run_baseline(std::int64_t run, double p50_us);
  std::optional<RunInfo> run(std::int64_t id) const;
  std::vector<RunInfo> runs() const;

  // An earlier evaluation with the same key, if any (any run).
  std::optional<StoredEvaluation> lookup(const EvalKey& key, const std::string& config_hash) const;
  // One transaction: candidate (+lineage), build, evaluation, metrics. Returns the evaluation id.
  std::int64_t record(std::int64_t run, const EvalKey& key, const Evaluation& e, bool reused);

  // A recorded evaluation's compute-sanitizer verdict, status and message (the run loop checks its
  // best after recording it). One statement: atomic.
  void set_sanitize(std::int64_t evaluation, const Evaluation& e);
  // A recorded evaluation's hardware metrics, collected after it was recorded (the run's best at its
  // end, when the strategy read none while it ran); e.seconds_metrics is its metrics seconds now.
  // One transaction: the metrics and their values together.
  void set_metrics(std::int64_t evaluation, const Evaluation& e);

  std::vector<StoredEvaluation> evaluations_of_run(std::int64_t run) const;
  std::optional<StoredEvaluation> evaluation(std::int64_t id) const;
  // Best measured (GREEN, FAST passed) per distinct config, fastest first. Empty filters = all;
  // top 0 = no limit. Without a problem filter, each (problem, device, config) is ranked once.
  std::vector<StoredEvaluation> elites(const std::string& profile, const std::string& problem,
                                       std::size_t top, std::optional<std::int64_t> run = std::nullopt) const;
  DbCheck check() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace evo
