// The population store over SQLite (population/sqlite.h). Reading order:
//   A. opening: refuse what is not ours, migrate forward, WAL and foreign keys on
//   B. runs
//   C. record: one transaction per evaluation
//   D. reading evaluations back (lookup, evaluations_of_run, evaluation, elites)
//   E. check
#include "population/store.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "engine/error.h"
#include "engine/evaluation_json.h"
#include "engine/space.h"      // config_text, config_hash
#include "population/json_text.h"
#include "population/schema.h"
#include "population/sqlite.h"

namespace evo {

using nlohmann::json;
using sqlite::Db;
using sqlite::Stmt;
using sqlite::Txn;

namespace {

const std::set<std::string> kRunStatuses = {"running", "finished", "interrupted", "failed"};

template <class T>
std::string to_json_text(const T& v) {
  return nonfinite_to_text(json(v)).dump();
}

// The "json" is this database's own column: a failure here is a damaged or foreign row.
template <class T>
T from_json_text(const Db& db, std::int64_t id, const char* column, const std::string& text) {
  try {
    const json j = json::parse(text);
    try {
      return j.get<T>();
    } catch (const json::exception&) {
      return text_to_nonfinite(j).get<T>();
    }
  } catch (const json::exception& e) {
    throw UserError(db.path().string() + ": evaluation " + std::to_string(id) + ": " + column + ": " + e.what());
  }
}

std::optional<double> positive_or_null(double v) { return v > 0 ? std::optional<double>(v) : std::nullopt; }

// --- A. opening ---------------------------------------------------------------------------------

struct FileState {
  std::int64_t application_id = 0, version = 0, objects = 0;
};

FileState read_state(Db& db) {
  // The first read of the file: this is where SQLite notices a file that is not a database
  // (SQLITE_NOTADB) or a truncated one (SQLITE_CORRUPT), and says so through Db::fail.
  Stmt q(db, "SELECT (SELECT application_id FROM pragma_application_id),"
             "       (SELECT user_version FROM pragma_user_version),"
             "       (SELECT count(*) FROM sqlite_master)",
         "cannot read database");
  auto u = q.use();
  u.next();
  return {u.get_int(0), u.get_int(1), u.get_int(2)};
}

// Throws unless the file is empty or evo's at a version this binary can use.
void refuse_foreign_or_newer(const Db& db, const FileState& s) {
  const std::string where = db.path().string() + ": ";
  const bool empty = s.application_id == 0 && s.version == 0 && s.objects == 0;
  if (!empty && s.application_id != schema::kApplicationId)
    throw UserError(where + "not an evo database (a SQLite file of another program: " +
                    std::to_string(s.objects) + " tables or indices, no evo application id)");
  if (s.version > schema::version())
    throw UserError(where + "database schema v" + std::to_string(s.version) + " is newer than this evo (v" +
                    std::to_string(schema::version()) + "); upgrade evo");
}

void open_schema(Db& db) {
  FileState s = read_state(db);
  refuse_foreign_or_newer(db, s);  // before anything is written: a foreign file stays as it was

  // WAL: one writer and any number of readers at once (evo show-elites during evo run).
  // NORMAL sync in WAL mode loses no committed transaction when the process dies; only a power
  // cut can take back the last few, and never leaves the file inconsistent.
  {
    Stmt wal(db, "PRAGMA journal_mode = WAL", "cannot switch the database to WAL mode");
    auto u = wal.use();
    if (!u.next() || u.get_str(0) != "wal")
      throw UserError(db.path().string() + ": cannot switch the database to WAL mode (journal mode stays " +
                      u.get_str(0) + ")");
  }
  db.exec("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL", "cannot configure database");

  if (s.version == schema::version()) return;
  Txn txn(db, Txn::Write, "cannot upgrade database schema");
  s = read_state(db);  // another process may have migrated it while we waited for the lock
  refuse_foreign_or_newer(db, s);
  if (s.version == schema::version()) return;
  const auto steps = schema::migrations();
  for (auto v = s.version; v < schema::version(); ++v)
    db.exec(steps[v], "cannot upgrade database schema from v" + std::to_string(v) + " to v" + std::to_string(v + 1));
  // PRAGMAs take no bound parameters; both values are this binary's own constants.
  db.exec("PRAGMA application_id = " + std::to_string(schema::kApplicationId) +
              "; PRAGMA user_version = " + std::to_string(schema::version()),
          "cannot set the database schema version");
  txn.commit();
}

bool open_and_migrate(Db& db) {
  open_schema(db);
  return true;
}

// --- D. the columns an evaluation is read back from ------------------------------------------

// `e` is an evaluations row (or a subquery of one); read_row below reads them by position.
constexpr const char* kEvalColumns =
    "e.id, e.run_id, e.profile, e.config_hash, e.build_key, e.device, e.problem, e.status, e.message,"
    " e.reused, e.origin_kind, e.origin_rule, e.speedup, e.static_json, e.green_json, e.fast_json,"
    " e.metrics_json, e.metric_gate_json, e.sanitize_json, e.build_from_cache, e.seconds_compile,"
    " e.seconds_green, e.seconds_fast, e.seconds_metrics, e.created_at, c.config_json, b.ok,"
    " b.lowered_name, b.cubin_path, b.registers, b.spill_stores, b.spill_loads, b.stack_bytes,"
    " b.static_smem, b.barriers, b.compile_ms, b.log,"
    " e.recorded_unix - (SELECT r.started_unix FROM runs r WHERE r.id = e.run_id)";
constexpr const char* kEvalJoins =
    " JOIN candidates c ON c.profile = e.profile AND c.config_hash = e.config_hash"
    " JOIN builds b ON b.build_key = e.build_key";

std::string select_evaluations(const std::string& from_where) {
  return std::string("SELECT ") + kEvalColumns + " FROM " + from_where;
}

constexpr const char* kRunColumns =
    "SELECT r.id, r.profile, r.profile_path, r.strategy, r.device, r.driver, r.arch, r.budget, r.seed,"
    " r.options_json, r.status, r.started_at, r.finished_at, r.baseline_p50_us,"
    " (SELECT count(*) FROM evaluations e WHERE e.run_id = r.id),"
    " (SELECT count(*) FROM evaluations e WHERE e.run_id = r.id AND NOT e.reused)"
    " FROM runs r";

RunInfo read_run(const Stmt::Use& q) {
  RunInfo r;
  r.id = q.get_int(0);
  r.profile = q.get_str(1);
  r.profile_path = q.get_str(2);
  r.strategy = q.get_str(3);
  r.device = q.get_str(4);
  r.driver = q.get_str(5);
  r.arch = q.get_str(6);
  r.budget = q.get_int(7);
  r.seed = std::stoull(q.get_str(8));
  r.options_json = q.get_str(9);
  r.status = q.get_str(10);
  r.started_at = q.get_str(11);
  r.finished_at = q.get_str(12);
  r.baseline_p50_us = q.is_null(13) ? 0 : q.get_double(13);
  r.evaluations = q.get_int(14);
  r.new_evaluations = q.get_int(15);
  return r;
}

}  // namespace

// Statements are prepared once, after the schema exists: members initialise in this order.
struct Store::Impl {
  explicit Impl(const std::filesystem::path& path) : db(path, !std::filesystem::exists(path)) {}

  Db db;
  bool ready = open_and_migrate(db);

  Stmt insert_run{db,
                  "INSERT INTO runs (profile, profile_path, strategy, device, driver, arch, budget, seed,"
                  " options_json, status, started_at, finished_at, baseline_p50_us, started_unix) VALUES (?, ?, ?, ?, ?, ?,"
                  " ?, ?, ?, coalesce(nullif(?, ''), 'running'), coalesce(nullif(?, ''),"
                  " strftime('%Y-%m-%dT%H:%M:%SZ', 'now')), nullif(?, ''), ?, (julianday('now') - 2440587.5) * 86400.0)",
                  "cannot start run"};
  Stmt update_run_status{db,
                         "UPDATE runs SET status = ?1, finished_at = CASE WHEN ?1 = 'running' THEN NULL"
                         " ELSE strftime('%Y-%m-%dT%H:%M:%SZ', 'now') END WHERE id = ?2",
                         "cannot set run status"};
  Stmt update_run_baseline{db, "UPDATE runs SET baseline_p50_us = ? WHERE id = ?", "cannot set run baseline"};
  Stmt update_sanitize{db, "UPDATE evaluations SET sanitize_json = ?, status = ?, message = ? WHERE id = ?",
                       "cannot record the memcheck verdict"};
  Stmt select_run{db, std::string(kRunColumns) + " WHERE r.id = ?", "cannot read run"};
  Stmt select_runs{db, std::string(kRunColumns) + " ORDER BY r.id", "cannot read runs"};

  Stmt insert_candidate{db,
                        "INSERT INTO candidates (profile, config_hash, config_text, config_json) VALUES (?, ?, ?, ?)"
                        " ON CONFLICT DO NOTHING",
                        "cannot record candidate"};
  Stmt insert_build{db,
                    "INSERT INTO builds (build_key, ok, lowered_name, cubin_path, registers, spill_stores,"
                    " spill_loads, stack_bytes, static_smem, barriers, compile_ms, log)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    "cannot record build"};
  Stmt insert_evaluation{
      db,
      "INSERT INTO evaluations (run_id, profile, config_hash, build_key, device, problem, status, message, reused,"
      " origin_kind, origin_rule, fast_outcome, p50_us, p90_us, mean_us, std_us, cv, min_us, speedup,"
      " static_json, green_json, fast_json, metrics_json, metric_gate_json, sanitize_json, build_from_cache,"
      " seconds_compile, seconds_green, seconds_fast, seconds_metrics, recorded_unix)"
      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
      " (julianday('now') - 2440587.5) * 86400.0)",
      "cannot record evaluation"};
  Stmt insert_metric{db, "INSERT INTO metrics (evaluation_id, name, value) VALUES (?, ?, ?)",
                     "cannot record metric"};
  Stmt insert_parent{db, "INSERT INTO lineage (evaluation_id, position, parent_hash) VALUES (?, ?, ?)",
                     "cannot record lineage"};

  Stmt select_by_id{db, select_evaluations(std::string("evaluations e") + kEvalJoins + " WHERE e.id = ?"),
                    "cannot read evaluation"};
  Stmt select_by_run{db,
                     select_evaluations(std::string("evaluations e") + kEvalJoins +
                                        " WHERE e.run_id = ? ORDER BY e.id"),
                     "cannot read evaluations"};
  // Reusable: a measurement that FAST passed, or a definitive failure (compile error, static
  // rejection, wrong results, crash, hang, sanitizer or metric rejection). Only a 'measured' row
  // whose timing did not pass is measured again. The first original measurement wins.
  Stmt select_reusable{db,
                       select_evaluations(std::string("evaluations e") + kEvalJoins +
                                          " WHERE e.profile = ? AND e.config_hash = ? AND e.build_key = ?"
                                          " AND e.device = ? AND e.problem = ?"
                                          " AND (e.status <> 'measured' OR e.fast_outcome = 'passed')"
                                          " ORDER BY e.status = 'measured' DESC, e.reused, e.id LIMIT 1"),
                       "cannot look up earlier evaluations"};
  Stmt select_metrics{db, "SELECT name, value FROM metrics WHERE evaluation_id = ? ORDER BY name",
                      "cannot read metrics"};
  Stmt select_parents{db, "SELECT parent_hash FROM lineage WHERE evaluation_id = ? ORDER BY position",
                      "cannot read lineage"};

  StoredEvaluation read_row(const Stmt::Use& q);
  std::vector<StoredEvaluation> read_all(Stmt::Use& q) {
    std::vector<StoredEvaluation> out;
    while (q.next()) out.push_back(read_row(q));
    return out;
  }
  std::optional<StoredEvaluation> read_one(Stmt::Use& q) {
    if (!q.next()) return std::nullopt;
    return read_row(q);
  }
};

Store::Store(const std::filesystem::path& path) : impl_(std::make_unique<Impl>(path)) {}
Store::~Store() = default;

int Store::schema_version() { return schema::version(); }
const std::filesystem::path& Store::path() const { return impl_->db.path(); }

// --- B. runs ------------------------------------------------------------------------------------

std::int64_t Store::begin_run(RunInfo info) {
  if (!info.status.empty() && !kRunStatuses.count(info.status))
    throw std::invalid_argument("begin_run: unknown run status '" + info.status + "'");
  impl_->insert_run.use()(info.profile)(info.profile_path)(info.strategy)(info.device)(info.driver)(info.arch)(
      info.budget)(std::to_string(info.seed))(info.options_json)(info.status)(info.started_at)(info.finished_at)(
      positive_or_null(info.baseline_p50_us))
      .exec();
  return impl_->db.last_insert_id();
}

void Store::set_run_status(std::int64_t run, const std::string& status) {
  if (!kRunStatuses.count(status))
    throw std::invalid_argument("set_run_status: unknown run status '" + status + "'");
  impl_->update_run_status.use()(status)(run).exec();
  if (impl_->db.changes() == 0) throw UserError(path().string() + ": no run " + std::to_string(run));
}

void Store::set_run_baseline(std::int64_t run, double p50_us) {
  impl_->update_run_baseline.use()(positive_or_null(p50_us))(run).exec();
  if (impl_->db.changes() == 0) throw UserError(path().string() + ": no run " + std::to_string(run));
}

void Store::set_sanitize(std::int64_t evaluation, const Evaluation& e) {
  impl_->update_sanitize.use()(to_json_text(e.sanitize))(status_name(e.status))(e.message)(evaluation).exec();
  if (impl_->db.changes() == 0) throw UserError(path().string() + ": no evaluation " + std::to_string(evaluation));
}

std::optional<RunInfo> Store::run(std::int64_t id) const {
  auto q = impl_->select_run.use()(id);
  if (!q.next()) return std::nullopt;
  return read_run(q);
}

std::vector<RunInfo> Store::runs() const {
  std::vector<RunInfo> out;
  for (auto q = impl_->select_runs.use(); q.next();) out.push_back(read_run(q));
  return out;
}

// --- C. record ----------------------------------------------------------------------------------

std::int64_t Store::record(std::int64_t run, const EvalKey& key, const Evaluation& e, bool reused) {
  auto& s = *impl_;
  const std::string hash = e.config_hash.empty() ? config_hash(e.config) : e.config_hash;
  const bool timed = e.fast.outcome != Outcome::Skipped;
  auto figure = [&](double v) { return timed ? std::optional<double>(v) : std::nullopt; };
  MetricsResult metrics_rest = e.metrics;  // the values go to their own table
  metrics_rest.values.clear();

  // All or nothing: killed anywhere in here, the file holds the previous evaluation as its last.
  Txn txn(s.db, Txn::Write, "cannot record evaluation");
  s.insert_candidate.use()(key.profile)(hash)(config_text(e.config))(json(e.config).dump()).exec();
  const Build& b = e.build;
  s.insert_build.use()(key.build_key)(b.ok)(b.lowered_name)(b.cubin_path)(b.ptxas.registers)(b.ptxas.spill_stores)(
       b.ptxas.spill_loads)(b.ptxas.stack_bytes)(b.ptxas.static_smem)(b.ptxas.barriers)(b.compile_ms)(b.log)
      .exec();
  s.insert_evaluation.use()(run)(key.profile)(hash)(key.build_key)(key.device)(key.problem)(status_name(e.status))(
       e.message)(reused)(e.origin.kind)(e.origin.rule)(outcome_name(e.fast.outcome))(figure(e.fast.p50_us))(
       figure(e.fast.p90_us))(figure(e.fast.mean_us))(figure(e.fast.std_us))(figure(e.fast.cv))(
       figure(e.fast.min_us))(positive_or_null(e.speedup))(to_json_text(e.static_verdict))(to_json_text(e.green))(
       to_json_text(e.fast))(to_json_text(metrics_rest))(to_json_text(e.metric_gate))(to_json_text(e.sanitize))(
       b.from_cache)(e.seconds_compile)(e.seconds_green)(e.seconds_fast)(e.seconds_metrics)
      .exec();
  const std::int64_t id = s.db.last_insert_id();
  for (const auto& [name, value] : e.metrics.values) s.insert_metric.use()(id)(name)(value).exec();
  for (std::size_t i = 0; i < e.origin.parents.size(); ++i)
    s.insert_parent.use()(id)(static_cast<std::int64_t>(i))(e.origin.parents[i]).exec();
  txn.commit();
  return id;
}

// --- D. reading evaluations back ----------------------------------------------------------------

StoredEvaluation Store::Impl::read_row(const Stmt::Use& q) {
  StoredEvaluation out;
  out.id = q.get_int(0);
  out.run_id = q.get_int(1);
  out.key = {q.get_str(2), q.get_str(4), q.get_str(5), q.get_str(6)};
  Evaluation& e = out.eval;
  e.config_hash = q.get_str(3);
  const auto status = parse_status(q.get_str(7));
  if (!status)
    throw UserError(db.path().string() + ": evaluation " + std::to_string(out.id) + ": status '" + q.get_str(7) +
                    "' is unknown to this evo; upgrade evo");
  e.status = *status;
  e.message = q.get_str(8);
  out.reused = q.get_int(9) != 0;
  e.origin.kind = q.get_str(10);
  e.origin.rule = q.get_str(11);
  e.speedup = q.is_null(12) ? 0 : q.get_double(12);
  e.static_verdict = from_json_text<StaticVerdict>(db, out.id, "static_json", q.get_str(13));
  e.green = from_json_text<GreenVerdict>(db, out.id, "green_json", q.get_str(14));
  e.fast = from_json_text<Timing>(db, out.id, "fast_json", q.get_str(15));
  e.metrics = from_json_text<MetricsResult>(db, out.id, "metrics_json", q.get_str(16));
  e.metric_gate = from_json_text<MetricGateVerdict>(db, out.id, "metric_gate_json", q.get_str(17));
  e.sanitize = from_json_text<SanitizeVerdict>(db, out.id, "sanitize_json", q.get_str(18));
  e.build.from_cache = q.get_int(19) != 0;
  e.seconds_compile = q.get_double(20);
  e.seconds_green = q.get_double(21);
  e.seconds_fast = q.get_double(22);
  e.seconds_metrics = q.get_double(23);
  out.created_at = q.get_str(24);
  e.config = from_json_text<Config>(db, out.id, "candidates.config_json", q.get_str(25));
  e.build.key = out.key.build_key;
  e.build.ok = q.get_int(26) != 0;
  e.build.lowered_name = q.get_str(27);
  e.build.cubin_path = q.get_str(28);
  e.build.ptxas.registers = static_cast<int>(q.get_int(29));
  e.build.ptxas.spill_stores = q.get_int(30);
  e.build.ptxas.spill_loads = q.get_int(31);
  e.build.ptxas.stack_bytes = q.get_int(32);
  e.build.ptxas.static_smem = q.get_int(33);
  e.build.ptxas.barriers = static_cast<int>(q.get_int(34));
  e.build.compile_ms = q.get_double(35);
  e.build.log = q.get_str(36);
  if (!q.is_null(37)) out.elapsed_s = q.get_double(37);

  for (auto m = select_metrics.use()(out.id); m.next();) e.metrics.values[m.get_str(0)] = m.get_double(1);
  for (auto p = select_parents.use()(out.id); p.next();) e.origin.parents.push_back(p.get_str(0));
  return out;
}

// Each read runs in one read transaction: one snapshot, however much is written meanwhile.

std::optional<StoredEvaluation> Store::lookup(const EvalKey& key, const std::string& config_hash) const {
  Txn txn(impl_->db, Txn::Read, "cannot look up earlier evaluations");
  auto q = impl_->select_reusable.use()(key.profile)(config_hash)(key.build_key)(key.device)(key.problem);
  return impl_->read_one(q);
}

std::vector<StoredEvaluation> Store::evaluations_of_run(std::int64_t run) const {
  Txn txn(impl_->db, Txn::Read, "cannot read evaluations");
  auto q = impl_->select_by_run.use()(run);
  return impl_->read_all(q);
}

std::optional<StoredEvaluation> Store::evaluation(std::int64_t id) const {
  Txn txn(impl_->db, Txn::Read, "cannot read evaluation");
  auto q = impl_->select_by_id.use()(id);
  return impl_->read_one(q);
}

std::vector<StoredEvaluation> Store::elites(const std::string& profile, const std::string& problem, std::size_t top,
                                            std::optional<std::int64_t> run) const {
  // The best row of each (profile, problem, device, config): a window over the measured rows,
  // with only the filters asked for, so that the indices serve them.
  std::string where = "status = 'measured' AND fast_outcome = 'passed' AND p50_us > 0";
  if (!profile.empty()) where += " AND profile = :profile";
  if (!problem.empty()) where += " AND problem = :problem";
  if (run) where += " AND run_id = :run";
  const std::string sql = select_evaluations(
      "(SELECT *, row_number() OVER (PARTITION BY profile, problem, device, config_hash ORDER BY p50_us, id)"
      " AS nth FROM evaluations WHERE " + where + ") e" + kEvalJoins +
      " WHERE e.nth = 1 ORDER BY e.p50_us, e.id LIMIT :top");
  Txn txn(impl_->db, Txn::Read, "cannot read elites");
  Stmt stmt(impl_->db, sql, "cannot read elites");
  auto q = stmt.use();
  if (!profile.empty()) q(profile);
  if (!problem.empty()) q(problem);
  if (run) q(*run);
  q(top == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(top));  // LIMIT -1: no limit
  return impl_->read_all(q);
}

// --- E. check -----------------------------------------------------------------------------------

DbCheck Store::check() const {
  DbCheck out;
  Db& db = impl_->db;
  auto problem = [&](std::string what) {
    out.ok = false;
    out.problems.push_back(std::move(what));
  };
  // Each finding is one row of (text); a query that fails (a damaged file) is itself a problem.
  auto each = [&](const char* doing, const std::string& sql, auto&& on_row) {
    try {
      Stmt stmt(db, sql, doing);
      for (auto q = stmt.use(); q.next();) on_row(q);
    } catch (const UserError& e) {
      problem(e.what());
    }
  };
  each("cannot run integrity_check", "PRAGMA integrity_check", [&](const Stmt::Use& q) {
    if (q.get_str(0) != "ok") problem("integrity_check: " + q.get_str(0));
  });
  each("cannot run foreign_key_check", "PRAGMA foreign_key_check", [&](const Stmt::Use& q) {
    if (q.get_str(0) != "evaluations")  // said more plainly below
      problem(q.get_str(0) + " row " + q.get_str(1) + " refers to a missing " + q.get_str(2) + " row");
  });

  // evo's own invariants, each query returning one line per offending row.
  each("cannot check evaluations",
       "SELECT 'evaluation ' || e.id || ': candidate ' || e.profile || '/' || e.config_hash || ' is missing'"
       " FROM evaluations e LEFT JOIN candidates c ON c.profile = e.profile AND c.config_hash = e.config_hash"
       " WHERE c.config_hash IS NULL"
       " UNION ALL SELECT 'evaluation ' || e.id || ': build ' || e.build_key || ' is missing'"
       " FROM evaluations e LEFT JOIN builds b ON b.build_key = e.build_key WHERE b.build_key IS NULL"
       " UNION ALL SELECT 'evaluation ' || id || ': run ' || run_id || ' is missing'"
       " FROM evaluations WHERE run_id NOT IN (SELECT id FROM runs)"
       " UNION ALL SELECT 'evaluation ' || id || ': measured, but FAST ' || fast_outcome || ' with p50 '"
       " || ifnull(p50_us, 'NULL') || ' us' FROM evaluations"
       " WHERE status = 'measured' AND NOT (fast_outcome = 'passed' AND p50_us > 0)"
       " UNION ALL SELECT 'evaluation ' || id || ': a verdict column is not valid JSON' FROM evaluations"
       " WHERE NOT (json_valid(static_json) AND json_valid(green_json) AND json_valid(fast_json)"
       " AND json_valid(metrics_json) AND json_valid(metric_gate_json) AND json_valid(sanitize_json))",
       [&](const Stmt::Use& q) { problem(q.get_str(0)); });
  each("cannot check evaluations", "SELECT id, status FROM evaluations", [&](const Stmt::Use& q) {
    if (!parse_status(q.get_str(1)))
      problem("evaluation " + q.get_str(0) + ": unknown status '" + q.get_str(1) + "'");
  });
  each("cannot check runs", "SELECT id, status FROM runs ORDER BY id", [&](const Stmt::Use& q) {
    const std::string status = q.get_str(1);
    if (status == "running")  // not a problem: evo is running it now, or was stopped; it can be resumed
      out.notes.push_back("run " + q.get_str(0) + " is marked running: in progress elsewhere, or interrupted");
    else if (!kRunStatuses.count(status))
      problem("run " + q.get_str(0) + ": unknown status '" + status + "'");
  });
  return out;
}

}  // namespace evo
