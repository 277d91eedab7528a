// The population store's connection on a PostgreSQL database (population/sql.h), over libpq
// (population/postgres.h). The schema is SQLite's (population/schema.cpp) with its types mapped
// (schema_sql); evo_meta holds what SQLite keeps in PRAGMA application_id and user_version.
#include <cmath>
#include <cstdio>
#include <optional>
#include <regex>

#include "engine/error.h"
#include "population/postgres.h"
#include "population/schema.h"
#include "population/sql.h"

namespace evo::sql {

namespace {

// UTC ISO 8601 text, as SQLite's strftime('%Y-%m-%dT%H:%M:%SZ', 'now') writes it.
constexpr const char* kNowText = "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')";

// What SQLite keeps in its file header. Created with the first migration, in its transaction.
// work_run_ids numbers every run in the database, the store's and the work queue's
// (population/queue.h) alike, so that a run spread over hosts has one number: `evo runs` and
// `evo worker --run N` agree.
constexpr const char* kMetaSql = R"sql(
CREATE TABLE IF NOT EXISTS evo_meta (
  application_id BIGINT NOT NULL,   -- 0x65766F00 ("evo\0"): SQLite's PRAGMA application_id
  schema_version INTEGER NOT NULL   -- SQLite's PRAGMA user_version
);
CREATE SEQUENCE IF NOT EXISTS work_run_ids;
DELETE FROM evo_meta;
)sql";

// Tables of evo's own that may share the database: the work queue's (population/queue.cpp).
constexpr const char* kNotForeign = "('evo_meta', 'work_queue', 'work_runs')";

// Each table as population/schema.cpp declares it: its primary key, and how many foreign keys.
struct TableKeys {
  const char* table;
  const char* primary_key;
  int foreign_keys;
};
constexpr TableKeys kTables[] = {{"runs", "id", 0},
                                 {"candidates", "profile, config_hash", 0},
                                 {"builds", "build_key", 0},
                                 {"evaluations", "id", 3},
                                 {"metrics", "evaluation_id, name", 1},
                                 {"lineage", "evaluation_id, position", 1}};

// A double as text PostgreSQL reads back to the same double.
std::string double_text(double v) {
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

pg::Param param(const Value& v) {
  const auto& d = v.data();
  if (auto* i = std::get_if<std::int64_t>(&d)) return std::to_string(*i);
  if (auto* x = std::get_if<double>(&d)) return double_text(*x);
  if (auto* s = std::get_if<std::string>(&d)) return *s;
  return std::nullopt;
}

class PostgresConn : public Conn {
 public:
  explicit PostgresConn(const std::string& url) : c_(url) {
    // Doubles as text with every digit they need to read back exactly (PostgreSQL 12 on: shortest).
    c_.exec("SET extra_float_digits = 3", "cannot configure the connection");
  }

  const std::string& name() const override { return c_.name(); }

  Rows query(std::string_view sql, const std::vector<Value>& values, std::string_view doing) override {
    std::vector<pg::Param> params;
    for (const auto& v : values) params.push_back(param(v));
    const pg::Result r = c_.exec(sql, params, doing);
    Rows out;
    for (int i = 0; i < r.rows(); ++i) {
      auto& row = out.rows.emplace_back();
      for (int c = 0; c < r.columns(); ++c) {
        if (r.is_null(i, c))
          row.emplace_back();
        else
          row.emplace_back(r.get_str(i, c));
      }
    }
    out.affected = r.affected();
    return out;
  }

  void exec_script(std::string_view sql, std::string_view doing) override { c_.exec(sql, doing); }

  // A read sees one snapshot (REPEATABLE READ), as a SQLite read transaction does in WAL mode.
  // Writes need no stricter isolation than READ COMMITTED: rows are only inserted, and candidates
  // and builds with ON CONFLICT DO NOTHING, which waits for a concurrent writer of the same key.
  void begin(TxnKind kind, std::string_view doing) override {
    txn_.emplace(c_, doing, kind == TxnKind::Read ? "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY" : "BEGIN");
    if (kind == TxnKind::Schema)
      c_.exec("SELECT pg_advisory_xact_lock($1)", {std::to_string(schema::kPgSchemaLock)}, doing);
  }
  void commit(std::string_view) override {
    txn_->commit();
    txn_.reset();
  }
  void rollback() noexcept override { txn_.reset(); }  // pg::Txn rolls back unless committed

  std::string_view now_text() const override { return kNowText; }
  std::string_view now_unix() const override { return "extract(epoch FROM clock_timestamp())"; }
  std::string_view next_run_id() const override { return "nextval('work_run_ids')"; }

  // SQLite's schema text with PostgreSQL's types: 64-bit integers (INTEGER is 32-bit there), double
  // precision (REAL is single there), identity columns for SQLite's rowid keys, no WITHOUT ROWID.
  std::string schema_sql(std::string_view migration) const override {
    static const std::pair<std::regex, std::string> kRules[] = {
        {std::regex(R"(\bINTEGER PRIMARY KEY\b)"), "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"},
        {std::regex(R"(\bINTEGER\b)"), "BIGINT"},
        {std::regex(R"(\bREAL\b)"), "DOUBLE PRECISION"},
        {std::regex(R"(\)\s*WITHOUT ROWID;)"), ");"},
        {std::regex(R"(strftime\('%Y-%m-%dT%H:%M:%SZ', 'now'\))"), kNowText},
    };
    std::string s(migration);
    for (const auto& [from, to] : kRules) s = std::regex_replace(s, from, to);
    return s;
  }

  DbState read_state() override {
    DbState s;
    auto q = query(std::string("SELECT (SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
                               "   AND table_name NOT IN ") + kNotForeign + "),"
                               " (SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
                               "   AND table_name = 'evo_meta')",
                   {}, "cannot read database");
    q.next();
    s.objects = q.get_int(0);
    if (q.get_int(1) > 0) {
      auto m = query("SELECT application_id, schema_version FROM evo_meta", {}, "cannot read database");
      if (m.next()) s.application_id = m.get_int(0), s.version = m.get_int(1);
    }
    s.foreign = "a database of another program: " + std::to_string(s.objects) + " tables, no evo_meta";
    return s;
  }

  void prepare_to_write() override {}  // the server's defaults: durable commits, foreign keys enforced

  void write_state(std::int64_t version) override {
    c_.exec(kMetaSql, "cannot set the database schema version");
    query("INSERT INTO evo_meta (application_id, schema_version) VALUES ($1, $2)",
          {std::int64_t{schema::kApplicationId}, version}, "cannot set the database schema version");
  }

  // What SQLite's integrity_check gives the SQLite store: the schema version's one row, and each
  // table's keys present, validated and enforced (dropped, NOT VALID or with their triggers
  // disabled, they no longer keep out orphans and duplicates), and no key held twice.
  std::vector<std::string> integrity_problems() override {
    std::vector<std::string> out;
    auto meta = query("SELECT count(*) FROM evo_meta", {}, "cannot check evo_meta");
    meta.next();
    if (meta.get_int(0) != 1)
      out.push_back("evo_meta holds " + meta.get_str(0) + " rows (one expected: application id and schema version)");
    for (const auto& t : kTables) {
      const std::string name = t.table;
      auto q = query("SELECT count(*) FILTER (WHERE c.contype = 'p'), count(*) FILTER (WHERE c.contype = 'f'),"
                     " count(*) FILTER (WHERE NOT c.convalidated),"
                     " (SELECT count(*) FROM pg_trigger g WHERE g.tgrelid = r.oid AND g.tgisinternal AND g.tgenabled = 'D'),"
                     " (SELECT count(*) FROM pg_index i WHERE i.indrelid = r.oid AND NOT (i.indisvalid AND i.indisready))"
                     " FROM pg_class r LEFT JOIN pg_constraint c ON c.conrelid = r.oid"
                     " WHERE r.oid = to_regclass(format('%I.%I', current_schema(), $1::text)) GROUP BY r.oid",
                     {name}, "cannot check the keys of " + name);
      if (!q.next()) {
        out.push_back("table " + name + " is missing");
        continue;
      }
      if (q.get_int(0) != 1) out.push_back(name + ": its primary key (" + t.primary_key + ") is missing");
      if (q.get_int(1) != t.foreign_keys)
        out.push_back(name + ": " + q.get_str(1) + " foreign keys, " + std::to_string(t.foreign_keys) + " expected");
      if (q.get_int(2) > 0) out.push_back(name + ": " + q.get_str(2) + " constraints not validated (NOT VALID)");
      if (q.get_int(3) > 0) out.push_back(name + ": its foreign keys are not enforced (triggers disabled)");
      if (q.get_int(4) > 0) out.push_back(name + ": " + q.get_str(4) + " indices are invalid (rebuild with REINDEX)");
      // Table and column names are this file's constants; nothing here comes from outside.
      auto dup = query("SELECT count(*) FROM (SELECT 1 FROM " + name + " GROUP BY " + t.primary_key +
                           " HAVING count(*) > 1) d",
                       {}, "cannot check the keys of " + name);
      dup.next();
      if (dup.get_int(0) > 0)
        out.push_back(name + ": " + dup.get_str(0) + " primary keys (" + t.primary_key + ") held by more than one row");
    }
    return out;
  }

 private:
  pg::Conn c_;
  std::optional<pg::Txn> txn_;
};

}  // namespace

std::unique_ptr<Conn> open_postgres(const std::string& url) { return std::make_unique<PostgresConn>(url); }

}  // namespace evo::sql
