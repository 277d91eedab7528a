// The population store over a SQL connection (population/sql.h): a SQLite file or a PostgreSQL
// database, one copy of every query. Reading order:
//   A. opening: refuse what is not ours, migrate forward, then configure for writing
//   B. runs
//   C. record: one transaction per evaluation
//   D. reading evaluations back (lookup, evaluations_of_run, evaluation, elites)
//   E. check
#include "population/store.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "engine/error.h"
#include "engine/evaluation_json.h"
#include "engine/space.h"      // config_text, config_hash
#include "population/json_text.h"
#include "population/schema.h"
#include "population/sql.h"

namespace evo {

using nlohmann::json;
using sql::Rows;
using sql::Txn;
using sql::TxnKind;
using sql::Value;

namespace {

const std::set<std::string> kRunStatuses = {"running", "finished", "interrupted", "failed"};

template <class T>
std::string to_json_text(const T& v) {
  return nonfinite_to_text(json(v)).dump();
}

// The "json" is this database's own column: a failure here is a damaged or foreign row.
template <class T>
T from_json_text(const sql::Conn& db, std::int64_t id, const char* column, const std::string& text) {
  try {
    const json j = json::parse(text);
    try {
      return j.get<T>();
    } catch (const json::exception&) {
      return text_to_nonfinite(j).get<T>();
    }
  } catch (const json::exception& e) {
    throw UserError(db.name() + ": evaluation " + std::to_string(id) + ": " + column + ": " + e.what());
  }
}

std::optional<double> positive_or_null(double v) { return v > 0 ? std::optional<double>(v) : std::nullopt; }

// builds.wgmma_serialized: one entry a line (an entry is one ptxas line's code and reason), '' none.
std::string lines_text(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}
std::vector<std::string> text_lines(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at < text.size();) {
    const auto end = std::min(text.find('\n', at), text.size());
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// --- A. opening ---------------------------------------------------------------------------------

// Throws unless the database is empty or evo's at a version this binary can use.
void refuse_foreign_or_newer(const sql::Conn& db, const sql::DbState& s) {
  const std::string where = db.name() + ": ";
  if (!s.empty() && s.application_id != schema::kApplicationId)
    throw UserError(where + "not an evo database (" + s.foreign + ")");
  if (s.version > schema::version())
    throw UserError(where + "database schema v" + std::to_string(s.version) + " is newer than this evo (v" +
                    std::to_string(schema::version()) + "); upgrade evo");
}

bool open_schema(sql::Conn& db, Store::Open open) {
  sql::DbState s = db.read_state();
  refuse_foreign_or_newer(db, s);  // before anything is written: a foreign database stays as it was
  if (open == Store::Open::Existing && s.empty())
    throw UserError(db.name() + ": no evo population here yet (run `evo run` first, or pass --db)");
  db.prepare_to_write();
  if (s.version == schema::version()) return true;

  Txn txn(db, TxnKind::Schema, "cannot upgrade database schema");
  s = db.read_state();  // another process may have migrated it while we waited for the lock
  refuse_foreign_or_newer(db, s);
  if (s.version == schema::version()) return true;
  const auto steps = schema::migrations();
  for (auto v = s.version; v < schema::version(); ++v)
    db.exec_script(db.schema_sql(steps[v]),
                   "cannot upgrade database schema from v" + std::to_string(v) + " to v" + std::to_string(v + 1));
  db.write_state(schema::version());
  txn.commit();
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
    " e.recorded_unix - (SELECT r.started_unix FROM runs r WHERE r.id = e.run_id), b.wgmma_serialized, e.setup";
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
    " (SELECT count(*) FROM evaluations e WHERE e.run_id = r.id AND e.reused = 0)"
    " FROM runs r";

RunInfo read_run(const Rows& q) {
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

// Reusable: a measurement that FAST passed, or a definitive failure (compile error, static
// rejection, wrong results, crash, hang, sanitizer or metric rejection). Only a 'measured' row
// whose timing did not pass is measured again. The first original measurement wins.
const std::string kSelectReusable =
    select_evaluations(std::string("evaluations e") + kEvalJoins +
                       " WHERE e.profile = $1 AND e.config_hash = $2 AND e.build_key = $3"
                       " AND e.device = $4 AND e.problem = $5 AND e.setup = $6"
                       " AND (e.status <> 'measured' OR e.fast_outcome = 'passed')"
                       // A compile stopped at the time limit (compile_timeout_log), or whose worker
                       // died, is no verdict on the source (engine/compiler.h, CompilePool):
                       // compiled again, never read back.
                       " AND NOT (e.status = 'compile_error' AND (e.message LIKE 'compile error: compile stopped after %'"
                       " OR e.message LIKE 'compile error: compile worker died%'))"
                       " ORDER BY e.status = 'measured' DESC, e.reused, e.id LIMIT 1");
const std::string kSelectById = select_evaluations(std::string("evaluations e") + kEvalJoins + " WHERE e.id = $1");
const std::string kSelectByRun =
    select_evaluations(std::string("evaluations e") + kEvalJoins + " WHERE e.run_id = $1 ORDER BY e.id");

constexpr const char* kInsertEvaluation =
    "INSERT INTO evaluations (run_id, profile, config_hash, build_key, device, problem, status, message, reused,"
    " origin_kind, origin_rule, fast_outcome, p50_us, p90_us, mean_us, std_us, cv, min_us, speedup,"
    " static_json, green_json, fast_json, metrics_json, metric_gate_json, sanitize_json, build_from_cache,"
    " seconds_compile, seconds_green, seconds_fast, seconds_metrics, setup, recorded_unix)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,"
    " $23, $24, $25, $26, $27, $28, $29, $30, $31, ";  // + now_unix) RETURNING id

}  // namespace

// The statements whose text depends on the dialect are put together once, when the store opens.
struct Store::Impl {
  Impl(const std::string& db_name, Open open)
      : db(sql::open(db_name, open == Open::Create)), ready(open_schema(*db, open)) {}

  std::unique_ptr<sql::Conn> db;
  bool ready;  // the schema is there: the members below may ask the dialect

  const std::string insert_run =
      "INSERT INTO runs (id, profile, profile_path, strategy, device, driver, arch, budget, seed, options_json,"
      " status, started_at, finished_at, baseline_p50_us, started_unix) VALUES (coalesce($1, " +
      std::string(db->next_run_id()) + "), $2, $3, $4, $5, $6, $7, $8, $9, $10, coalesce(nullif($11, ''), 'running'),"
      " coalesce(nullif($12, ''), " + std::string(db->now_text()) + "), nullif($13, ''), $14, " +
      std::string(db->now_unix()) + ") RETURNING id";
  const std::string update_run_status =
      "UPDATE runs SET status = $1, finished_at = CASE WHEN $1 = 'running' THEN NULL ELSE " +
      std::string(db->now_text()) + " END WHERE id = $2";
  const std::string insert_evaluation = kInsertEvaluation + std::string(db->now_unix()) + ") RETURNING id";

  StoredEvaluation read_row(const Rows& q);
  std::vector<StoredEvaluation> read_all(Rows q) {
    std::vector<StoredEvaluation> out;
    while (q.next()) out.push_back(read_row(q));
    return out;
  }
  std::optional<StoredEvaluation> read_one(Rows q) {
    if (!q.next()) return std::nullopt;
    return read_row(q);
  }
};

Store::Store(const std::string& db, Open open) : impl_(std::make_unique<Impl>(db, open)) {}
Store::~Store() = default;

int Store::schema_version() { return schema::version(); }
const std::string& Store::name() const { return impl_->db->name(); }

// --- B. runs ------------------------------------------------------------------------------------

std::int64_t Store::begin_run(RunInfo info) {
  if (!info.status.empty() && !kRunStatuses.count(info.status))
    throw std::invalid_argument("begin_run: unknown run status '" + info.status + "'");
  auto q = impl_->db->query(impl_->insert_run,
                            {info.id > 0 ? Value(info.id) : Value(std::nullopt), info.profile, info.profile_path,
                             info.strategy, info.device, info.driver, info.arch, info.budget, std::to_string(info.seed),
                             info.options_json, info.status, info.started_at, info.finished_at,
                             positive_or_null(info.baseline_p50_us)},
                            "cannot start run");
  q.next();
  return q.get_int(0);
}

void Store::set_run_status(std::int64_t run, const std::string& status) {
  if (!kRunStatuses.count(status))
    throw std::invalid_argument("set_run_status: unknown run status '" + status + "'");
  if (impl_->db->query(impl_->update_run_status, {status, run}, "cannot set run status").affected == 0)
    throw UserError(name() + ": no run " + std::to_string(run));
}

void Store::set_run_baseline(std::int64_t run, double p50_us) {
  if (impl_->db->query("UPDATE runs SET baseline_p50_us = $1 WHERE id = $2", {positive_or_null(p50_us), run},
                       "cannot set run baseline")
          .affected == 0)
    throw UserError(name() + ": no run " + std::to_string(run));
}

void Store::set_sanitize(std::int64_t evaluation, const Evaluation& e) {
  if (impl_->db->query("UPDATE evaluations SET sanitize_json = $1, status = $2, message = $3 WHERE id = $4",
                       {to_json_text(e.sanitize), status_name(e.status), e.message, evaluation},
                       "cannot record the memcheck verdict")
          .affected == 0)
    throw UserError(name() + ": no evaluation " + std::to_string(evaluation));
}

void Store::set_metrics(std::int64_t evaluation, const Evaluation& e) {
  sql::Conn& db = *impl_->db;
  MetricsResult rest = e.metrics;  // the values go to their own table, as when recorded
  rest.values.clear();
  Txn txn(db, TxnKind::Write, "cannot record metrics");
  if (db.query("UPDATE evaluations SET metrics_json = $1, seconds_metrics = $2 WHERE id = $3",
               {to_json_text(rest), e.seconds_metrics, evaluation}, "cannot record metrics")
          .affected == 0)
    throw UserError(name() + ": no evaluation " + std::to_string(evaluation));
  db.query("DELETE FROM metrics WHERE evaluation_id = $1", {evaluation}, "cannot record metrics");
  for (const auto& [metric, value] : e.metrics.values)
    db.query("INSERT INTO metrics (evaluation_id, name, value) VALUES ($1, $2, $3)", {evaluation, metric, value},
             "cannot record metric");
  txn.commit();
}

std::optional<RunInfo> Store::run(std::int64_t id) const {
  auto q = impl_->db->query(std::string(kRunColumns) + " WHERE r.id = $1", {id}, "cannot read run");
  if (!q.next()) return std::nullopt;
  return read_run(q);
}

std::vector<RunInfo> Store::runs() const {
  std::vector<RunInfo> out;
  for (auto q = impl_->db->query(std::string(kRunColumns) + " ORDER BY r.id", {}, "cannot read runs"); q.next();)
    out.push_back(read_run(q));
  return out;
}

// --- C. record ----------------------------------------------------------------------------------

std::int64_t Store::record(std::int64_t run, const EvalKey& key, const Evaluation& e, bool reused) {
  sql::Conn& db = *impl_->db;
  const std::string hash = e.config_hash.empty() ? config_hash(e.config) : e.config_hash;
  const bool timed = e.fast.outcome != Outcome::Skipped;
  auto figure = [&](double v) { return timed ? std::optional<double>(v) : std::nullopt; };
  MetricsResult metrics_rest = e.metrics;  // the values go to their own table
  metrics_rest.values.clear();

  // All or nothing: killed anywhere in here, the database holds the previous evaluation as its last.
  Txn txn(db, TxnKind::Write, "cannot record evaluation");
  db.query("INSERT INTO candidates (profile, config_hash, config_text, config_json) VALUES ($1, $2, $3, $4)"
           " ON CONFLICT DO NOTHING",
           {key.profile, hash, config_text(e.config), json(e.config).dump()}, "cannot record candidate");
  const Build& b = e.build;
  db.query("INSERT INTO builds (build_key, ok, lowered_name, cubin_path, registers, spill_stores, spill_loads,"
           " stack_bytes, static_smem, barriers, compile_ms, log, wgmma_serialized)"
           " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING",
           {key.build_key, b.ok, b.lowered_name, b.cubin_path, b.ptxas.registers, b.ptxas.spill_stores,
            b.ptxas.spill_loads, b.ptxas.stack_bytes, b.ptxas.static_smem, b.ptxas.barriers, b.compile_ms, b.log,
            lines_text(b.ptxas.wgmma_serialized)},
           "cannot record build");
  auto inserted = db.query(
      impl_->insert_evaluation,
      {run, key.profile, hash, key.build_key, key.device, key.problem, status_name(e.status), e.message, reused,
       e.origin.kind, e.origin.rule, outcome_name(e.fast.outcome), figure(e.fast.p50_us), figure(e.fast.p90_us),
       figure(e.fast.mean_us), figure(e.fast.std_us), figure(e.fast.cv), figure(e.fast.min_us),
       positive_or_null(e.speedup), to_json_text(e.static_verdict), to_json_text(e.green), to_json_text(e.fast),
       to_json_text(metrics_rest), to_json_text(e.metric_gate), to_json_text(e.sanitize), b.from_cache,
       e.seconds_compile, e.seconds_green, e.seconds_fast, e.seconds_metrics, key.setup},
      "cannot record evaluation");
  inserted.next();
  const std::int64_t id = inserted.get_int(0);
  for (const auto& [name, value] : e.metrics.values)
    db.query("INSERT INTO metrics (evaluation_id, name, value) VALUES ($1, $2, $3)", {id, name, value},
             "cannot record metric");
  for (std::size_t i = 0; i < e.origin.parents.size(); ++i)
    db.query("INSERT INTO lineage (evaluation_id, position, parent_hash) VALUES ($1, $2, $3)",
             {id, static_cast<std::int64_t>(i), e.origin.parents[i]}, "cannot record lineage");
  txn.commit();
  return id;
}

// --- D. reading evaluations back ----------------------------------------------------------------

StoredEvaluation Store::Impl::read_row(const Rows& q) {
  StoredEvaluation out;
  out.id = q.get_int(0);
  out.run_id = q.get_int(1);
  out.key = {q.get_str(2), q.get_str(4), q.get_str(5), q.get_str(6), ""};
  Evaluation& e = out.eval;
  e.config_hash = q.get_str(3);
  const auto status = parse_status(q.get_str(7));
  if (!status)
    throw UserError(db->name() + ": evaluation " + std::to_string(out.id) + ": status '" + q.get_str(7) +
                    "' is unknown to this evo; upgrade evo");
  e.status = *status;
  e.message = q.get_str(8);
  out.reused = q.get_int(9) != 0;
  e.origin.kind = q.get_str(10);
  e.origin.rule = q.get_str(11);
  e.speedup = q.is_null(12) ? 0 : q.get_double(12);
  e.static_verdict = from_json_text<StaticVerdict>(*db, out.id, "static_json", q.get_str(13));
  e.green = from_json_text<GreenVerdict>(*db, out.id, "green_json", q.get_str(14));
  e.fast = from_json_text<Timing>(*db, out.id, "fast_json", q.get_str(15));
  e.metrics = from_json_text<MetricsResult>(*db, out.id, "metrics_json", q.get_str(16));
  e.metric_gate = from_json_text<MetricGateVerdict>(*db, out.id, "metric_gate_json", q.get_str(17));
  e.sanitize = from_json_text<SanitizeVerdict>(*db, out.id, "sanitize_json", q.get_str(18));
  e.build.from_cache = q.get_int(19) != 0;
  e.seconds_compile = q.get_double(20);
  e.seconds_green = q.get_double(21);
  e.seconds_fast = q.get_double(22);
  e.seconds_metrics = q.get_double(23);
  out.created_at = q.get_str(24);
  e.config = from_json_text<Config>(*db, out.id, "candidates.config_json", q.get_str(25));
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
  e.build.ptxas.wgmma_serialized = text_lines(q.get_str(38));
  out.key.setup = q.get_str(39);

  for (auto m = db->query("SELECT name, value FROM metrics WHERE evaluation_id = $1 ORDER BY name", {out.id},
                          "cannot read metrics");
       m.next();)
    e.metrics.values[m.get_str(0)] = m.get_double(1);
  for (auto p = db->query("SELECT parent_hash FROM lineage WHERE evaluation_id = $1 ORDER BY position", {out.id},
                          "cannot read lineage");
       p.next();)
    e.origin.parents.push_back(p.get_str(0));
  return out;
}

// Each read runs in one read transaction: one snapshot, however much is written meanwhile.

std::optional<StoredEvaluation> Store::lookup(const EvalKey& key, const std::string& config_hash) const {
  Txn txn(*impl_->db, TxnKind::Read, "cannot look up earlier evaluations");
  return impl_->read_one(impl_->db->query(kSelectReusable,
                                          {key.profile, config_hash, key.build_key, key.device, key.problem, key.setup},
                                          "cannot look up earlier evaluations"));
}

std::vector<StoredEvaluation> Store::evaluations_of_run(std::int64_t run) const {
  Txn txn(*impl_->db, TxnKind::Read, "cannot read evaluations");
  return impl_->read_all(impl_->db->query(kSelectByRun, {run}, "cannot read evaluations"));
}

std::optional<StoredEvaluation> Store::evaluation(std::int64_t id) const {
  Txn txn(*impl_->db, TxnKind::Read, "cannot read evaluation");
  return impl_->read_one(impl_->db->query(kSelectById, {id}, "cannot read evaluation"));
}

std::vector<StoredEvaluation> Store::elites(const std::string& profile, const std::string& problem, std::size_t top,
                                            std::optional<std::int64_t> run) const {
  // The best row of each (profile, problem, device, config): a window over the measured rows,
  // with only the filters asked for, so that the indices serve them. Only rows of the setup the
  // (profile, problem, device) was last measured under count: a problem resized, a threshold
  // changed, and what was measured before is no longer its elite (engine/profile.h
  // measurement_setup).
  std::vector<Value> values;
  auto param = [&](Value v) {
    values.push_back(std::move(v));
    return "$" + std::to_string(values.size());
  };
  std::string where = "v.status = 'measured' AND v.fast_outcome = 'passed' AND v.p50_us > 0";
  if (!profile.empty()) where += " AND v.profile = " + param(profile);
  if (!problem.empty()) where += " AND v.problem = " + param(problem);
  std::string from = "evaluations v";
  if (run) {
    where += " AND v.run_id = " + param(*run);  // one run's rows: one setup
  } else {
    std::string newest = "SELECT n.profile, n.problem, n.device, n.setup FROM evaluations n WHERE n.id IN"
                         " (SELECT max(id) FROM evaluations";
    if (!profile.empty()) newest += " WHERE profile = " + param(profile);
    newest += " GROUP BY profile, problem, device)";
    from += " JOIN (" + newest + ") s ON s.profile = v.profile AND s.problem = v.problem AND s.device = v.device"
            " AND s.setup = v.setup";
  }
  const std::string limit = top == 0 ? "" : " LIMIT " + param(static_cast<std::int64_t>(top));
  const std::string sql = select_evaluations(
      "(SELECT v.*, row_number() OVER (PARTITION BY v.profile, v.problem, v.device, v.config_hash"
      " ORDER BY v.p50_us, v.id) AS nth FROM " + from + " WHERE " + where + ") e" + kEvalJoins +
      " WHERE e.nth = 1 ORDER BY e.p50_us, e.id" + limit);
  Txn txn(*impl_->db, TxnKind::Read, "cannot read elites");
  return impl_->read_all(impl_->db->query(sql, values, "cannot read elites"));
}

// --- E. check -----------------------------------------------------------------------------------

DbCheck Store::check() const {
  DbCheck out;
  sql::Conn& db = *impl_->db;
  auto problem = [&](std::string what) {
    out.ok = false;
    out.problems.push_back(std::move(what));
  };
  // Each finding is one row of (text); a query that fails (a damaged file) is itself a problem.
  auto each = [&](const char* doing, const std::string& sql, auto&& on_row) {
    try {
      for (auto q = db.query(sql, {}, doing); q.next();) on_row(q);
    } catch (const UserError& e) {
      problem(e.what());
    }
  };
  // The engine's own: SQLite's integrity_check; on PostgreSQL, evo_meta and every table's keys.
  try {
    for (auto& p : db.integrity_problems()) problem(std::move(p));
  } catch (const UserError& e) {
    problem(e.what());
  }

  // evo's own invariants, the same queries on both: every reference a foreign key declares
  // (enforced while evo writes, but a hand edit, a bulk load or a damaged file can break it),
  // then each query returning one line per offending row.
  each("cannot check evaluations",
       "SELECT 'evaluation ' || CAST(e.id AS TEXT) || ': candidate ' || e.profile || '/' || e.config_hash ||"
       " ' is missing' FROM evaluations e LEFT JOIN candidates c ON c.profile = e.profile"
       " AND c.config_hash = e.config_hash WHERE c.config_hash IS NULL"
       " UNION ALL SELECT 'evaluation ' || CAST(e.id AS TEXT) || ': build ' || e.build_key || ' is missing'"
       " FROM evaluations e LEFT JOIN builds b ON b.build_key = e.build_key WHERE b.build_key IS NULL"
       " UNION ALL SELECT 'evaluation ' || CAST(id AS TEXT) || ': run ' || CAST(run_id AS TEXT) || ' is missing'"
       " FROM evaluations WHERE run_id NOT IN (SELECT id FROM runs)"
       " UNION ALL SELECT 'metrics row (' || CAST(evaluation_id AS TEXT) || ', ' || name || '): evaluation '"
       " || CAST(evaluation_id AS TEXT) || ' is missing' FROM metrics WHERE evaluation_id NOT IN (SELECT id FROM evaluations)"
       " UNION ALL SELECT 'lineage row (' || CAST(evaluation_id AS TEXT) || ', ' || CAST(position AS TEXT) ||"
       " '): evaluation ' || CAST(evaluation_id AS TEXT) || ' is missing' FROM lineage"
       " WHERE evaluation_id NOT IN (SELECT id FROM evaluations)"
       " UNION ALL SELECT 'evaluation ' || CAST(id AS TEXT) || ': measured, but FAST ' || fast_outcome ||"
       " ' with p50 ' || coalesce(CAST(p50_us AS TEXT), 'NULL') || ' us' FROM evaluations"
       " WHERE status = 'measured' AND NOT (fast_outcome = 'passed' AND coalesce(p50_us, 0) > 0)",
       [&](const Rows& q) { problem(q.get_str(0)); });
  each("cannot check evaluations", "SELECT id, status FROM evaluations ORDER BY id", [&](const Rows& q) {
    if (!parse_status(q.get_str(1)))
      problem("evaluation " + q.get_str(0) + ": unknown status '" + q.get_str(1) + "'");
  });
  // Verdicts are parsed here, not by the database (PostgreSQL before 16 has no test that does
  // not throw): a page of rows at a time.
  try {
    constexpr std::int64_t kPage = 500;
    for (std::int64_t after = -1;;) {
      auto q = db.query("SELECT id, static_json, green_json, fast_json, metrics_json, metric_gate_json, sanitize_json"
                        " FROM evaluations WHERE id > $1 ORDER BY id LIMIT $2",
                        {after, kPage}, "cannot check evaluations");
      if (q.rows.empty()) break;
      while (q.next()) {
        after = q.get_int(0);
        for (int col = 1; col <= 6; ++col)
          if (!json::accept(q.get_str(col))) {
            problem("evaluation " + q.get_str(0) + ": a verdict column is not valid JSON");
            break;
          }
      }
    }
  } catch (const UserError& e) {
    problem(e.what());
  }
  each("cannot check runs", "SELECT id, status FROM runs ORDER BY id", [&](const Rows& q) {
    const std::string status = q.get_str(1);
    if (status == "running")  // not a problem: evo is running it now, or was stopped; it can be resumed
      out.notes.push_back("run " + q.get_str(0) + " is marked running: in progress elsewhere, or interrupted");
    else if (!kRunStatuses.count(status))
      problem("run " + q.get_str(0) + ": unknown status '" + status + "'");
  });
  return out;
}

}  // namespace evo
