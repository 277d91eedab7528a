// The population database's schema, as commented SQL. `sqlite3 evo.db .schema` prints the same
// tables with their column comments. docs/database.md explains the tables and sample queries.
//
// Changing the schema: never edit a migration that has shipped. Append one that takes v to v+1
// (ALTER TABLE, CREATE INDEX, a table rebuild), then describe the change in docs/database.md.
// An older file is brought forward on open; a newer file is refused, giving both versions.
#include "population/schema.h"

#include <array>

namespace evo::schema {

namespace {

// v0 -> v1: the first schema. Conventions: times are UTC ISO 8601 text ("2025-03-01T12:00:00Z");
// a verdict is stored whole as JSON (engine/evaluation_json.h; non-finite numbers as "NaN",
// "Infinity", "-Infinity"), and the plain columns beside it are copies made for querying.
constexpr std::string_view kV1 = R"sql(

-- One `evo run`: what was searched, where, and how it ended.
CREATE TABLE runs (
  id              INTEGER PRIMARY KEY,
  profile         TEXT NOT NULL,     -- profile name
  profile_path    TEXT NOT NULL,     -- the profile file as given on the command line
  strategy        TEXT NOT NULL,     -- search strategy name
  device          TEXT NOT NULL,     -- "NVIDIA H100 80GB HBM3", or "replay:<landscape>"
  driver          TEXT NOT NULL,     -- CUDA driver version
  arch            TEXT NOT NULL,     -- "sm_90"
  budget          INTEGER NOT NULL,  -- evaluations asked for
  seed            TEXT NOT NULL,     -- decimal uint64 (SQLite integers are signed)
  options_json    TEXT NOT NULL,     -- the command-line options, to resume the run as it was
  status          TEXT NOT NULL,     -- running | finished | interrupted | failed
  started_at      TEXT NOT NULL,
  finished_at     TEXT,              -- NULL while running
  baseline_p50_us REAL               -- the baseline re-timed in this run; NULL until timed
);

-- A configuration of a profile's knobs: what the search proposes.
CREATE TABLE candidates (
  profile     TEXT NOT NULL,
  config_hash TEXT NOT NULL,   -- 16 hex digits of SHA-256(config_text)
  config_text TEXT NOT NULL,   -- "BLOCK_K=32,BLOCK_M=64" (knobs sorted by name)
  config_json TEXT NOT NULL,   -- {"BLOCK_K":32,"BLOCK_M":64}
  PRIMARY KEY (profile, config_hash)
);

-- One NVRTC compile, named by its compile-cache key: a content hash of the template text,
-- includes, defines, options, arch and NVRTC version. The same key is the same compile, so the
-- first row written for a key stays.
CREATE TABLE builds (
  build_key    TEXT PRIMARY KEY,
  ok           INTEGER NOT NULL,  -- 1 compiled, 0 failed (the log says why)
  lowered_name TEXT NOT NULL,     -- entry point as loaded
  cubin_path   TEXT NOT NULL,     -- file in the compile cache (may since have been evicted)
  registers    INTEGER NOT NULL,  -- per thread (ptxas -v); -1 unknown
  spill_stores INTEGER NOT NULL,  -- bytes
  spill_loads  INTEGER NOT NULL,  -- bytes
  stack_bytes  INTEGER NOT NULL,
  static_smem  INTEGER NOT NULL,  -- bytes of static shared memory
  barriers     INTEGER NOT NULL,
  compile_ms   REAL,              -- the real compile, even when later read from the cache
  log          TEXT NOT NULL      -- NVRTC log
);

-- One candidate's verdict in one run, committed in its own transaction as it finishes.
CREATE TABLE evaluations (
  id               INTEGER PRIMARY KEY,  -- the candidate id users type
  run_id           INTEGER NOT NULL REFERENCES runs(id),
  profile          TEXT NOT NULL,
  config_hash      TEXT NOT NULL,
  build_key        TEXT NOT NULL REFERENCES builds(build_key),
  device           TEXT NOT NULL,
  problem          TEXT NOT NULL,        -- the objective problem, the one FAST timed
  status           TEXT NOT NULL,        -- compile_error | static_rejected | green_failed | crash |
                                         -- timeout | measured | metric_rejected | sanitize_failed
  message          TEXT NOT NULL,        -- one line: why it stopped where it stopped
  reused           INTEGER NOT NULL,     -- 1: read back from an earlier run, not measured in this one
  origin_kind      TEXT NOT NULL,        -- baseline | random | exhaustive | mutation | crossover |
                                         -- insight | external | manual; parents are in lineage
  origin_rule      TEXT NOT NULL,        -- the insight rule, or the proposer's note
  fast_outcome     TEXT NOT NULL,        -- passed | rejected | crash | timeout | skipped
  p50_us           REAL,                 -- FAST figures in microseconds; NULL when FAST was skipped
  p90_us           REAL,
  mean_us          REAL,
  std_us           REAL,
  cv               REAL,                 -- std / mean
  min_us           REAL,
  speedup          REAL,                 -- this run's baseline p50 / p50; NULL without a baseline
  static_json      TEXT NOT NULL,        -- StaticVerdict: registers, spills, shared memory, reason
  green_json       TEXT NOT NULL,        -- GreenVerdict: errors on every problem
  fast_json        TEXT NOT NULL,        -- Timing, in full
  metrics_json     TEXT NOT NULL,        -- MetricsResult without its values (they are in metrics)
  metric_gate_json TEXT NOT NULL,        -- MetricGateVerdict
  sanitize_json    TEXT NOT NULL,        -- SanitizeVerdict
  build_from_cache INTEGER NOT NULL,     -- 1: this evaluation found its build in the compile cache
  seconds_compile  REAL,                 -- wall time of each phase
  seconds_green    REAL,
  seconds_fast     REAL,
  seconds_metrics  REAL,
  created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  FOREIGN KEY (profile, config_hash) REFERENCES candidates(profile, config_hash)
);
-- lookup: has this exact measurement been made before, in any run?
CREATE INDEX evaluations_by_key ON evaluations(profile, config_hash, build_key, device, problem);
CREATE INDEX evaluations_by_run ON evaluations(run_id);
-- elites: the fastest per profile and problem
CREATE INDEX evaluations_by_speed ON evaluations(profile, problem, p50_us);
CREATE INDEX evaluations_by_build ON evaluations(build_key);

-- CUPTI metric values of one evaluation.
CREATE TABLE metrics (
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),
  name          TEXT NOT NULL,   -- "dram__bytes_read.sum"
  value         REAL,            -- NULL: the profiler gave NaN
  PRIMARY KEY (evaluation_id, name)
) WITHOUT ROWID;

-- The parents an evaluation's candidate was made from, in order: one for a mutation, two for a
-- crossover, none for a random or baseline candidate. The kind of origin is on evaluations.
CREATE TABLE lineage (
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),
  position      INTEGER NOT NULL,  -- 0 for the first parent
  parent_hash   TEXT NOT NULL,     -- a config hash of the same profile
  PRIMARY KEY (evaluation_id, position)
) WITHOUT ROWID;
CREATE INDEX lineage_by_parent ON lineage(parent_hash);

)sql";

// v1 -> v2: when each run started and each evaluation was committed, in seconds since the Unix
// epoch to the millisecond (created_at has whole seconds), so `evo report` can plot best-so-far
// against wall time. NULL in rows written before v2; the report then sums the phase seconds.
constexpr std::string_view kV2 = R"sql(

ALTER TABLE runs ADD COLUMN started_unix REAL;          -- (julianday('now') - 2440587.5) * 86400
ALTER TABLE evaluations ADD COLUMN recorded_unix REAL;  -- the same clock, at the commit

)sql";

// v2 -> v3: ptxas's "wgmma.mma_async instructions are serialized due to ..." for the build's entry
// (PtxasReport::wgmma_serialized), so a serialised kernel can be found by query. '' in rows
// written before v3, as for a build ptxas kept every wgmma pipeline of.
constexpr std::string_view kV3 = R"sql(

ALTER TABLE builds ADD COLUMN wgmma_serialized TEXT NOT NULL DEFAULT '';  -- one "C7511: <reason>" a line; '' none

)sql";

// v3 -> v4: what each measurement ran against beyond its build (engine/profile.h
// measurement_setup: the profile's problems, buffers, launches, reference and gates, and the files
// it names), part of a measurement's identity. '' in rows written before v4: their setup is not
// known, so none is read back into a run of v4 (it is measured again) and elites come from the
// setup each (profile, problem, device) was last measured under.
constexpr std::string_view kV4 = R"sql(

ALTER TABLE evaluations ADD COLUMN setup TEXT NOT NULL DEFAULT '';  -- 16 hex digits; '' before v4
DROP INDEX IF EXISTS evaluations_by_key;
CREATE INDEX evaluations_by_key ON evaluations(profile, config_hash, build_key, device, problem, setup);

)sql";

constexpr std::array<std::string_view, 4> kMigrations = {kV1, kV2, kV3, kV4};

}  // namespace

std::span<const std::string_view> migrations() { return kMigrations; }

}  // namespace evo::schema
