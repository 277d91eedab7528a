// The population store (population/store.h): round trips, resume, elites, crash consistency,
// a reader beside a writer, each on a SQLite file and on a PostgreSQL database (StoreOn, below),
// and the SQLite files it must refuse without touching them (Population). What only PostgreSQL
// has (evo_meta, its refusals and integrity check) is in tests/test_pg.cpp.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <regex>

#include "engine/error.h"
#include "engine/space.h"
#include "population/schema.h"
#include "population/sql.h"
#include "population/sqlite.h"
#include "population/store.h"
#include "tests/pg_server.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// One integer from raw SQL, bypassing the store (what a user with the sqlite3 or psql CLI would see).
std::int64_t scalar(const std::string& db, const std::string& sql) {
  auto raw = sql::open(db, false);
  auto q = raw->query(sql, {}, "test query");
  EXPECT_TRUE(q.next()) << sql;
  return q.get_int(0);
}

std::string error_of(const std::string& db) {
  try {
    Store s(db);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(opened without error)";
}

RunInfo sample_run() {
  RunInfo r;
  r.profile = "sdpa";
  r.profile_path = "profiles/sdpa.json";
  r.strategy = "genetic";
  r.device = "NVIDIA H100 80GB HBM3";
  r.driver = "550.54.15";
  r.arch = "sm_90";
  r.budget = 200;
  r.seed = 42;
  r.options_json = R"({"budget":200})";
  return r;
}

EvalKey sample_key() { return {"sdpa", "build-7f3a", "NVIDIA H100 80GB HBM3", "large", "5e7a000000000001"}; }

Config config_n(std::int64_t n) { return {{"TILE_M", 64}, {"TILE_N", 16 * n}, {"USE_WMMA_PV", n % 2}}; }

// A measured evaluation with only what elites and lookup look at.
Evaluation measured(const Config& c, double p50) {
  Evaluation e;
  e.config = c;
  e.config_hash = config_hash(c);
  e.status = Status::Measured;
  e.build.ok = true;
  e.green.outcome = Outcome::Passed;
  e.fast.outcome = Outcome::Passed;
  e.fast.problem = "large";
  e.fast.p50_us = p50;
  return e;
}

Evaluation failed(const Config& c, Status status) {
  Evaluation e;
  e.config = c;
  e.config_hash = config_hash(c);
  e.status = status;
  e.message = std::string("stopped: ") + status_name(status);
  return e;
}

// Every field set, each to a value no other field has, so a swapped column shows.
Evaluation full_evaluation() {
  Evaluation e;
  e.config = {{"TILE_M", 128}, {"TILE_N", 64}, {"USE_CP_ASYNC", 1}};
  e.config_hash = config_hash(e.config);
  e.status = Status::MetricRejected;
  e.message = "tensor pipe 12% < 40%";
  e.build = {true, "build-7f3a", "/cache/7f3a.cubin", "_Z4sdpaILi128EEvPK6__half", "ptxas info: 96 registers",
             {96, 8, 12, 16, 4096, 2, {"C7513: non wgmma instructions defining input registers", "C7511: it's 'quoted'"}},
             812.5, true, {}};
  e.static_verdict = {Outcome::Passed, {96, 8, 12, 16, 4096, 2, {"C7510: the presence of Extern calls"}}, 256, 49152,
                      53248, 1, 12.5, "registers", "fits"};
  e.green.outcome = Outcome::Passed;
  e.green.reason = "all problems within tolerance";
  e.green.problems = {{"small", Outcome::Passed, 1e-3, 2e-4, 3e-5, 0.25, 1, 2, 3, 6, "ok small"},
                      {"large", Outcome::Passed, 4e-3, 5e-4, 6e-5, 0.5, 4, 5, 6, 7, "ok large"}};
  e.fast = {Outcome::Passed, "large", "graph", 300, 41.5, 43.25, 42.0, 0.75, 0.018, 40.125, "stable"};
  e.metrics.outcome = Outcome::Passed;
  e.metrics.values = {{"dram__bytes_read.sum", 1.5e9}, {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct", 12.0}};
  e.metrics.unavailable = {"l1tex__data_bank_conflicts_pipe_lsu.sum"};
  e.metrics.reason = "one metric unavailable";
  e.metric_gate = {Outcome::Rejected, "tensor pipe 12% < 40%"};
  e.sanitize = {Outcome::Passed, 3, "Invalid __shared__ read of size 4"};
  e.speedup = 1.875;
  e.origin = {"crossover", "blend-tiles", {"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"}};
  e.seconds_compile = 0.8125;
  e.seconds_green = 1.25;
  e.seconds_fast = 2.5;
  e.seconds_metrics = 3.75;
  return e;
}

void expect_same_ptxas(const PtxasReport& a, const PtxasReport& b) {
  EXPECT_EQ(a.registers, b.registers);
  EXPECT_EQ(a.spill_stores, b.spill_stores);
  EXPECT_EQ(a.spill_loads, b.spill_loads);
  EXPECT_EQ(a.stack_bytes, b.stack_bytes);
  EXPECT_EQ(a.static_smem, b.static_smem);
  EXPECT_EQ(a.barriers, b.barriers);
  EXPECT_EQ(a.wgmma_serialized, b.wgmma_serialized);
}

void expect_same(const Evaluation& got, const Evaluation& want) {
  EXPECT_EQ(got.config, want.config);
  EXPECT_EQ(got.config_hash, want.config_hash);
  EXPECT_EQ(got.status, want.status);
  EXPECT_EQ(got.message, want.message);

  EXPECT_EQ(got.build.ok, want.build.ok);
  EXPECT_EQ(got.build.key, want.build.key);
  EXPECT_EQ(got.build.cubin_path, want.build.cubin_path);
  EXPECT_EQ(got.build.lowered_name, want.build.lowered_name);
  EXPECT_EQ(got.build.log, want.build.log);
  expect_same_ptxas(got.build.ptxas, want.build.ptxas);
  EXPECT_EQ(got.build.compile_ms, want.build.compile_ms);
  EXPECT_EQ(got.build.from_cache, want.build.from_cache);

  EXPECT_EQ(got.static_verdict.outcome, want.static_verdict.outcome);
  expect_same_ptxas(got.static_verdict.ptxas, want.static_verdict.ptxas);
  EXPECT_EQ(got.static_verdict.threads_per_block, want.static_verdict.threads_per_block);
  EXPECT_EQ(got.static_verdict.dynamic_smem, want.static_verdict.dynamic_smem);
  EXPECT_EQ(got.static_verdict.total_smem, want.static_verdict.total_smem);
  EXPECT_EQ(got.static_verdict.reason, want.static_verdict.reason);

  EXPECT_EQ(got.green.outcome, want.green.outcome);
  EXPECT_EQ(got.green.reason, want.green.reason);
  ASSERT_EQ(got.green.problems.size(), want.green.problems.size());
  for (std::size_t i = 0; i < want.green.problems.size(); ++i) {
    const GreenResult &g = got.green.problems[i], &w = want.green.problems[i];
    EXPECT_EQ(g.problem, w.problem);
    EXPECT_EQ(g.outcome, w.outcome);
    EXPECT_EQ(g.max_abs, w.max_abs);
    EXPECT_EQ(g.mean_abs, w.mean_abs);
    EXPECT_EQ(g.rel_l2, w.rel_l2);
    EXPECT_EQ(g.bad_pct, w.bad_pct);
    EXPECT_EQ(g.nan_count, w.nan_count);
    EXPECT_EQ(g.inf_count, w.inf_count);
    EXPECT_EQ(g.unwritten, w.unwritten);
    EXPECT_EQ(g.trials_run, w.trials_run);
    EXPECT_EQ(g.reason, w.reason);
  }

  EXPECT_EQ(got.fast.outcome, want.fast.outcome);
  EXPECT_EQ(got.fast.problem, want.fast.problem);
  EXPECT_EQ(got.fast.mode, want.fast.mode);
  EXPECT_EQ(got.fast.iters, want.fast.iters);
  EXPECT_EQ(got.fast.p50_us, want.fast.p50_us);
  EXPECT_EQ(got.fast.p90_us, want.fast.p90_us);
  EXPECT_EQ(got.fast.mean_us, want.fast.mean_us);
  EXPECT_EQ(got.fast.std_us, want.fast.std_us);
  EXPECT_EQ(got.fast.cv, want.fast.cv);
  EXPECT_EQ(got.fast.min_us, want.fast.min_us);
  EXPECT_EQ(got.fast.reason, want.fast.reason);

  EXPECT_EQ(got.metrics.outcome, want.metrics.outcome);
  EXPECT_EQ(got.metrics.values, want.metrics.values);
  EXPECT_EQ(got.metrics.unavailable, want.metrics.unavailable);
  EXPECT_EQ(got.metrics.reason, want.metrics.reason);
  EXPECT_EQ(got.metric_gate.outcome, want.metric_gate.outcome);
  EXPECT_EQ(got.metric_gate.reason, want.metric_gate.reason);
  EXPECT_EQ(got.sanitize.outcome, want.sanitize.outcome);
  EXPECT_EQ(got.sanitize.errors, want.sanitize.errors);
  EXPECT_EQ(got.sanitize.first_message, want.sanitize.first_message);

  EXPECT_EQ(got.speedup, want.speedup);
  EXPECT_EQ(got.origin.kind, want.origin.kind);
  EXPECT_EQ(got.origin.rule, want.origin.rule);
  EXPECT_EQ(got.origin.parents, want.origin.parents);
  EXPECT_EQ(got.seconds_compile, want.seconds_compile);
  EXPECT_EQ(got.seconds_green, want.seconds_green);
  EXPECT_EQ(got.seconds_fast, want.seconds_fast);
  EXPECT_EQ(got.seconds_metrics, want.seconds_metrics);
}

// --- the behaviour both backends share ---------------------------------------------------------
// Each StoreOn test runs on a fresh SQLite file and on a fresh PostgreSQL database; the second
// skips, saying why, where no PostgreSQL server can start.
class StoreOn : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (on_postgres()) {
      auto& server = test::pg_server();
      if (!server.skip_reason().empty()) {
        if (test::postgres_required()) FAIL() << "EVO_REQUIRE_POSTGRES=1, but " << server.skip_reason();
        GTEST_SKIP() << server.skip_reason();
      }
      db = server.fresh_database();
    } else {
      db = (dir.path / "evo.db").string();
    }
  }
  bool on_postgres() const { return std::string(GetParam()) == "postgresql"; }
  // A connection that does not enforce evo's foreign keys: what a hand edit or a buggy writer has.
  // SQLite enforces them only on connections that ask (the store's do); PostgreSQL skips its
  // enforcing triggers for a session in replica mode.
  std::unique_ptr<sql::Conn> raw_without_foreign_keys() const {
    auto c = sql::open(db, false);
    if (on_postgres()) c->exec_script("SET session_replication_role = replica", "test");
    return c;
  }

  TempDir dir;
  std::string db;
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreOn, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return std::string(info.param); });

// --- the SQLite layer ---------------------------------------------------------------------------

TEST(Sqlite, TransactionRollsBackUnlessCommitted) {
  TempDir dir;
  sqlite::Db db(dir.path / "t.db", true);
  db.exec("CREATE TABLE t (x INTEGER)", "create");
  sqlite::Stmt insert(db, "INSERT INTO t VALUES (?)", "insert");
  {
    sqlite::Txn txn(db, sqlite::Txn::Write, "txn");
    insert.use()(1).exec();
  }  // no commit
  {
    sqlite::Txn txn(db, sqlite::Txn::Write, "txn");
    insert.use()(2).exec();
    txn.commit();
  }
  EXPECT_EQ(scalar(dir.path / "t.db", "SELECT count(*) FROM t"), 1);
  EXPECT_EQ(scalar(dir.path / "t.db", "SELECT sum(x) FROM t"), 2);
  EXPECT_FALSE(db.in_transaction());
}

TEST(Sqlite, ErrorsNameTheFileAndQuoteSqlite) {
  TempDir dir;
  sqlite::Db db(dir.path / "t.db", true);
  try {
    db.exec("SELECT * FROM no_such_table", "cannot read things");
    FAIL() << "no error";
  } catch (const sqlite::SqliteError& e) {
    EXPECT_EQ(std::string(e.what()), (dir.path / "t.db").string() + ": cannot read things (no such table: no_such_table)");
  }
}

// --- opening ------------------------------------------------------------------------------------

TEST(Population, NewDatabaseIsEvosCurrentSchemaInWalMode) {
  TempDir dir;
  const auto db = dir.path / "evo.db";
  { Store s(db); }
  EXPECT_EQ(Store::schema_version(), 4);
  EXPECT_EQ(scalar(db, "PRAGMA user_version"), Store::schema_version());
  EXPECT_EQ(scalar(db, "PRAGMA application_id"), schema::kApplicationId);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN"
                       " ('runs', 'candidates', 'builds', 'evaluations', 'metrics', 'lineage')"),
            6);
  EXPECT_EQ(scalar(db, "SELECT journal_mode = 'wal' FROM pragma_journal_mode"), 1);
}

TEST_P(StoreOn, ReopeningKeepsWhatWasRecorded) {
  std::int64_t run, id;
  {
    Store s(db);
    run = s.begin_run(sample_run());
    id = s.record(run, sample_key(), measured(config_n(1), 10), false);
  }
  Store s(db);
  ASSERT_TRUE(s.evaluation(id));
  EXPECT_EQ(s.evaluation(id)->eval.fast.p50_us, 10);
  EXPECT_EQ(s.runs().size(), 1u);
}

// A file as an older evo left it: one run, one measured row (config 1, 10 us), then `undo` (the
// later migrations taken back) and its version. Returns the run and the row.
constexpr const char* kUndoV4 =
    "DROP INDEX evaluations_by_key; ALTER TABLE evaluations DROP COLUMN setup;"
    " CREATE INDEX evaluations_by_key ON evaluations(profile, config_hash, build_key, device, problem); ";
std::pair<std::int64_t, std::int64_t> older_file(const fs::path& db, const std::string& undo, int version) {
  std::int64_t run, id;
  {
    Store s(db);
    run = s.begin_run(sample_run());
    id = s.record(run, sample_key(), measured(config_n(1), 10), false);
  }
  sqlite::Db raw(db, false);
  raw.exec(undo + "PRAGMA user_version = " + std::to_string(version), "test");
  return {run, id};
}

TEST(Population, SchemaV1FileIsMigratedAndItsRowsStayReadable) {
  TempDir dir;
  const auto db = dir.path / "evo.db";
  // what a v1 evo wrote: no commit clock, no wgmma column, no setup
  const auto [run, old_id] = older_file(db, std::string(kUndoV4) +
                                                "ALTER TABLE evaluations DROP COLUMN recorded_unix; ALTER TABLE runs DROP"
                                                " COLUMN started_unix; ALTER TABLE builds DROP COLUMN wgmma_serialized; ",
                                        1);
  Store s(db);
  EXPECT_EQ(scalar(db, "PRAGMA user_version"), Store::schema_version());
  ASSERT_TRUE(s.evaluation(old_id));
  EXPECT_EQ(s.evaluation(old_id)->eval.fast.p50_us, 10);
  EXPECT_FALSE(s.evaluation(old_id)->elapsed_s);  // unknown, not zero
  const std::int64_t run2 = s.begin_run(sample_run());
  const std::int64_t id = s.record(run2, sample_key(), measured(config_n(2), 9), false);
  ASSERT_TRUE(s.evaluation(id)->elapsed_s);
  EXPECT_GE(*s.evaluation(id)->elapsed_s, 0.0);
  EXPECT_LT(*s.evaluation(id)->elapsed_s, 60.0);
}

// v3 stores the build's wgmma serialisation: a v2 file's builds read as not serialised (which is
// what they were recorded as), and new rows keep theirs.
TEST(Population, SchemaV2FileIsMigratedAndItsBuildsReadAsNotSerialised) {
  TempDir dir;
  const auto db = dir.path / "evo.db";
  const auto [run, old_id] = older_file(db, std::string(kUndoV4) + "ALTER TABLE builds DROP COLUMN wgmma_serialized; ", 2);
  Store s(db);
  EXPECT_EQ(scalar(db, "PRAGMA user_version"), Store::schema_version());
  ASSERT_TRUE(s.evaluation(old_id));
  EXPECT_TRUE(s.evaluation(old_id)->eval.build.ptxas.wgmma_serialized.empty());
  EXPECT_EQ(s.evaluation(old_id)->eval.fast.p50_us, 10);
  Evaluation serial = measured(config_n(2), 9);
  serial.build.ptxas.wgmma_serialized = {"C7511: insufficient register resources for the wgmma pipeline"};
  EvalKey key = sample_key();
  key.build_key = "build-serial";
  const std::int64_t id = s.record(run, key, serial, false);
  EXPECT_EQ(s.evaluation(id)->eval.build.ptxas.wgmma_serialized, serial.build.ptxas.wgmma_serialized);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM builds WHERE wgmma_serialized LIKE 'C7511:%'"), 1);
}

// v4 keys a measurement by its setup too: a v3 file's rows read with setup '' (unknown), stay its
// elites until the problem is measured under a known setup, and are never read back into a run.
TEST(Population, SchemaV3FileIsMigratedAndItsRowsAreNotReadBack) {
  TempDir dir;
  const auto db = dir.path / "evo.db";
  const auto [run, old_id] = older_file(db, kUndoV4, 3);
  Store s(db);
  EXPECT_EQ(scalar(db, "PRAGMA user_version"), Store::schema_version());
  ASSERT_TRUE(s.evaluation(old_id));
  EXPECT_EQ(s.evaluation(old_id)->key.setup, "");
  EXPECT_FALSE(s.lookup(sample_key(), config_hash(config_n(1))));
  ASSERT_EQ(s.elites("sdpa", "large", 0).size(), 1u);
  s.record(s.begin_run(sample_run()), sample_key(), measured(config_n(1), 11), false);
  ASSERT_EQ(s.elites("sdpa", "large", 0).size(), 1u);
  EXPECT_EQ(s.elites("sdpa", "large", 0).front().eval.fast.p50_us, 11);
  EXPECT_TRUE(s.lookup(sample_key(), config_hash(config_n(1))));
}

TEST(Population, RefusesNewerSchemaGivingBothVersions) {
  TempDir dir;
  const auto db = dir.path / "evo.db";
  { Store s(db); }
  {
    sqlite::Db raw(db, false);
    raw.exec("PRAGMA user_version = 5", "test");
  }
  const std::string before = read_bytes(db);
  EXPECT_EQ(error_of(db), db.string() + ": database schema v5 is newer than this evo (v4); upgrade evo");
  EXPECT_EQ(read_bytes(db), before);
}

TEST(Population, RefusesFileThatIsNotADatabaseAndLeavesIt) {
  TempDir dir;
  const auto db = dir.path / "evo.db";
  std::string text;
  for (int i = 0; i < 200; ++i) text += "these are my notes, not a database\n";
  write_bytes(db, text);
  EXPECT_EQ(error_of(db), db.string() + ": not an evo database (file is not a database)");
  EXPECT_EQ(read_bytes(db), text);
}

TEST(Population, RefusesAnotherProgramsSqliteDatabaseAndLeavesIt) {
  TempDir dir;
  const auto db = dir.path / "other.db";
  {
    sqlite::Db raw(db, true);
    raw.exec("CREATE TABLE bookmarks (url TEXT); INSERT INTO bookmarks VALUES ('https://example.org')", "test");
  }
  const std::string before = read_bytes(db);
  const std::string error = error_of(db);
  EXPECT_EQ(error.rfind(db.string() + ": not an evo database (", 0), 0u) << error;
  EXPECT_EQ(read_bytes(db), before);
  EXPECT_EQ(scalar(db, "PRAGMA user_version"), 0);
}

TEST(Population, RefusesTruncatedDatabaseAndLeavesIt) {
  TempDir dir;
  const auto db = dir.path / "evo.db";
  {
    Store s(db);
    const auto run = s.begin_run(sample_run());
    for (int i = 0; i < 60; ++i) s.record(run, sample_key(), full_evaluation(), false);
  }
  std::string bytes = read_bytes(db);
  ASSERT_GT(bytes.size(), 16u * 4096);
  bytes.resize(bytes.size() / 2);
  write_bytes(db, bytes);
  const std::string error = error_of(db);
  EXPECT_EQ(error, db.string() + ": database is corrupt (database disk image is malformed); restore it from a copy");
  EXPECT_EQ(read_bytes(db), bytes);
}

TEST(Population, DamagedPagesAreReportedNotReadAsData) {
  TempDir dir;
  const auto db = dir.path / "evo.db";
  std::int64_t run;
  {
    Store s(db);
    run = s.begin_run(sample_run());
    for (int i = 0; i < 60; ++i) s.record(run, sample_key(), full_evaluation(), false);
  }
  std::string bytes = read_bytes(db);
  const std::size_t page = 4096, pages = bytes.size() / page;
  ASSERT_GT(pages, 8u);
  for (std::size_t i = pages / 2 * page; i < (pages / 2 + 1) * page; ++i) bytes[i] = static_cast<char>(0xA5 ^ i);
  write_bytes(db, bytes);

  // The header is intact, so the file opens; the damage shows in check() and as a one-line
  // UserError naming the file wherever a read runs into it.
  Store s(db);
  const DbCheck c = s.check();
  EXPECT_FALSE(c.ok);
  ASSERT_FALSE(c.problems.empty());
  try {
    s.evaluations_of_run(run);
    s.elites("", "", 0);
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(db.string() + ": ", 0), 0u) << e.what();
  }
}

TEST(Population, CreatingWhereNoDirectoryCanBeNamesThePath) {
  TempDir dir;
  write_bytes(dir.path / "plainfile", "x");
  const auto db = dir.path / "plainfile" / "evo.db";  // a path through a regular file: fails even for root
  const std::string error = error_of(db);
  EXPECT_EQ(error.rfind(db.string() + ": cannot create database (", 0), 0u) << error;
  EXPECT_EQ(read_bytes(dir.path / "plainfile"), "x");
}

TEST(Population, CreatingInUnwritableDirectoryNamesThePath) {
  if (geteuid() == 0) GTEST_SKIP() << "running as root: directory permissions are not enforced";
  TempDir dir;
  fs::create_directory(dir.path / "locked");
  fs::permissions(dir.path / "locked", fs::perms::owner_read | fs::perms::owner_exec);
  const auto db = dir.path / "locked" / "evo.db";
  const std::string error = error_of(db);
  EXPECT_EQ(error.rfind(db.string() + ": cannot create database (", 0), 0u) << error;
  EXPECT_NE(error.find("Permission denied"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(db));
}

TEST(Population, ReadonlyEmptyFileIsReportedAndLeftEmpty) {
  if (geteuid() == 0) GTEST_SKIP() << "running as root: file permissions are not enforced";
  TempDir dir;
  const auto db = dir.path / "evo.db";
  write_bytes(db, "");
  fs::permissions(db, fs::perms::owner_read);
  const std::string error = error_of(db);
  EXPECT_EQ(error.rfind(db.string() + ": ", 0), 0u) << error;
  EXPECT_NE(error.find("readonly"), std::string::npos) << error;
  EXPECT_EQ(fs::file_size(db), 0u);
}

// --- runs ---------------------------------------------------------------------------------------

TEST_P(StoreOn, RunKeepsItsSettingsAndStatusChanges) {
  Store s(db);
  RunInfo info = sample_run();
  info.seed = 18446744073709551557ull;  // beyond int64: stored as text
  const auto id = s.begin_run(info);
  auto r = s.run(id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, id);
  EXPECT_EQ(r->profile, "sdpa");
  EXPECT_EQ(r->profile_path, "profiles/sdpa.json");
  EXPECT_EQ(r->strategy, "genetic");
  EXPECT_EQ(r->device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r->driver, "550.54.15");
  EXPECT_EQ(r->arch, "sm_90");
  EXPECT_EQ(r->budget, 200);
  EXPECT_EQ(r->seed, 18446744073709551557ull);
  EXPECT_EQ(r->options_json, R"({"budget":200})");
  EXPECT_EQ(r->status, "running");
  EXPECT_TRUE(std::regex_match(r->started_at, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"))) << r->started_at;
  EXPECT_EQ(r->finished_at, "");
  EXPECT_EQ(r->baseline_p50_us, 0);

  s.set_run_baseline(id, 41.5);
  s.set_run_status(id, "interrupted");
  r = s.run(id);
  EXPECT_EQ(r->baseline_p50_us, 41.5);
  EXPECT_EQ(r->status, "interrupted");
  EXPECT_FALSE(r->finished_at.empty());
  s.set_run_status(id, "running");  // resumed
  EXPECT_EQ(s.run(id)->finished_at, "");

  const auto second = s.begin_run(sample_run());
  const auto all = s.runs();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, id);
  EXPECT_EQ(all[1].id, second);
  EXPECT_FALSE(s.run(second + 1));
  EXPECT_THROW(s.set_run_status(second + 1, "finished"), UserError);
  EXPECT_THROW(s.set_run_status(id, "done"), std::invalid_argument);
}

// --- record and read back -----------------------------------------------------------------------

TEST_P(StoreOn, RecordRoundTripsEveryField) {
  Store s(db);
  const auto run = s.begin_run(sample_run());
  const Evaluation want = full_evaluation();
  const auto id = s.record(run, sample_key(), want, true);
  const auto got = s.evaluation(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, id);
  EXPECT_EQ(got->run_id, run);
  EXPECT_EQ(got->key.profile, "sdpa");
  EXPECT_EQ(got->key.build_key, "build-7f3a");
  EXPECT_EQ(got->key.device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(got->key.problem, "large");
  EXPECT_TRUE(got->reused);
  EXPECT_FALSE(got->created_at.empty());
  expect_same(got->eval, want);
  EXPECT_FALSE(s.evaluation(id + 1));
}

TEST_P(StoreOn, NonFiniteFiguresRoundTrip) {
  Store s(db);
  const auto run = s.begin_run(sample_run());
  Evaluation e = failed(config_n(1), Status::GreenFailed);
  e.green.outcome = Outcome::Rejected;
  e.green.problems = {{"large", Outcome::Rejected, std::nan(""), INFINITY, -INFINITY, 100, 7, 3, 0, 1, "NaN at O[1,3]"}};
  e.metrics.values = {{"ratio", std::nan("")}};
  const auto id = s.record(run, sample_key(), e, false);
  const auto got = s.evaluation(id);
  ASSERT_TRUE(got);
  const GreenResult& g = got->eval.green.problems.at(0);
  EXPECT_TRUE(std::isnan(g.max_abs));
  EXPECT_EQ(g.mean_abs, INFINITY);
  EXPECT_EQ(g.rel_l2, -INFINITY);
  EXPECT_EQ(g.reason, "NaN at O[1,3]");
  EXPECT_TRUE(std::isnan(got->eval.metrics.values.at("ratio")));
  EXPECT_TRUE(s.check().ok);
}

TEST_P(StoreOn, ValuesWithQuotesAreStoredAsGiven) {
  Store s(db);
  RunInfo info = sample_run();
  info.profile = "it's \"mine\"'); DROP TABLE runs; --";
  const auto run = s.begin_run(info);
  EvalKey key = sample_key();
  key.profile = info.profile;
  key.problem = "x' OR '1'='1";
  Evaluation e = measured({{"TILE'M", 1}}, 5);
  e.message = "line with 'quotes' and \"double\" and ; semicolons";
  const auto id = s.record(run, key, e, false);
  EXPECT_EQ(s.run(run)->profile, info.profile);
  EXPECT_EQ(s.evaluation(id)->key.problem, key.problem);
  EXPECT_EQ(s.evaluation(id)->eval.message, e.message);
  EXPECT_EQ(s.evaluation(id)->eval.config, e.config);
  EXPECT_TRUE(s.lookup(key, e.config_hash));
  EXPECT_FALSE(s.lookup(sample_key(), e.config_hash));
  EXPECT_EQ(s.elites(info.profile, key.problem, 0).size(), 1u);
}

TEST_P(StoreOn, FailedRecordLeavesNothingBehind) {
  Store s(db);
  s.begin_run(sample_run());
  // No run 99: the evaluation row fails its foreign key after candidate and build were written.
  EXPECT_THROW(s.record(99, sample_key(), full_evaluation(), false), UserError);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM candidates"), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM builds"), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM evaluations"), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM metrics"), 0);
}

TEST_P(StoreOn, EvaluationsOfRunComeInRecordOrderWithCounts) {
  Store s(db);
  const auto run = s.begin_run(sample_run());
  const auto other = s.begin_run(sample_run());
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(s.record(run, sample_key(), measured(config_n(i), 50.0 - i), i >= 3));
    s.record(other, sample_key(), measured(config_n(i + 10), 1.0 + i), false);
  }
  const auto got = s.evaluations_of_run(run);
  ASSERT_EQ(got.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(got[i].id, ids[i]);
    EXPECT_EQ(got[i].eval.config, config_n(i));
    EXPECT_EQ(got[i].eval.fast.p50_us, 50.0 - i);
  }
  EXPECT_EQ(s.run(run)->evaluations, 5);
  EXPECT_EQ(s.run(run)->new_evaluations, 3);
  EXPECT_TRUE(s.evaluations_of_run(other + 1).empty());
}

// --- never measure twice ------------------------------------------------------------------------

TEST_P(StoreOn, ResumeSkipsEvaluatedConfigs) {
  Store s(db);
  const auto first = s.begin_run(sample_run());
  const auto a = s.record(first, sample_key(), measured(config_n(1), 12.5), false);
  const auto b = s.record(first, sample_key(), failed(config_n(2), Status::GreenFailed), false);
  s.set_run_status(first, "interrupted");

  s.begin_run(sample_run());  // the resumed search asks before measuring
  const auto hit = s.lookup(sample_key(), config_hash(config_n(1)));
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->id, a);
  EXPECT_EQ(hit->run_id, first);
  EXPECT_EQ(hit->eval.fast.p50_us, 12.5);
  const auto failure = s.lookup(sample_key(), config_hash(config_n(2)));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->id, b);
  EXPECT_EQ(failure->eval.status, Status::GreenFailed);
  EXPECT_FALSE(s.lookup(sample_key(), config_hash(config_n(3))));
}

TEST_P(StoreOn, LookupNeedsTheSameProfileBuildDeviceProblemAndSetup) {
  Store s(db);
  const auto run = s.begin_run(sample_run());
  s.record(run, sample_key(), measured(config_n(1), 12.5), false);
  const std::string hash = config_hash(config_n(1));
  ASSERT_TRUE(s.lookup(sample_key(), hash));
  for (auto change : {&EvalKey::profile, &EvalKey::build_key, &EvalKey::device, &EvalKey::problem, &EvalKey::setup}) {
    EvalKey k = sample_key();
    k.*change += "-other";
    EXPECT_FALSE(s.lookup(k, hash)) << k.profile << " " << k.build_key << " " << k.device << " " << k.problem << " "
                                    << k.setup;
  }
  // A row of an unknown setup (before schema v4: '') is never read back into a run that knows its own.
  EvalKey before = sample_key();
  before.setup = "";
  s.record(run, before, measured(config_n(2), 12.5), false);
  EXPECT_FALSE(s.lookup(sample_key(), config_hash(config_n(2))));
  EXPECT_EQ(s.evaluations_of_run(run).back().key.setup, "");
  EXPECT_EQ(s.evaluations_of_run(run).front().key.setup, sample_key().setup);
}

TEST_P(StoreOn, LookupReturnsDefinitiveFailuresSoTheyAreNotRerun) {
  Store s(db);
  const auto run = s.begin_run(sample_run());
  int n = 0;
  for (Status st : {Status::CompileError, Status::StaticRejected, Status::GreenFailed, Status::Crashed,
                    Status::Timeout, Status::SanitizeFailed, Status::MetricRejected}) {
    const Config c = config_n(++n);
    s.record(run, sample_key(), failed(c, st), false);
    const auto hit = s.lookup(sample_key(), config_hash(c));
    ASSERT_TRUE(hit) << status_name(st);
    EXPECT_EQ(hit->eval.status, st);
    EXPECT_EQ(hit->eval.message, std::string("stopped: ") + status_name(st));
  }
}

// A compile stopped at `--compile-timeout`, or whose worker died, says nothing of the source: a
// later run (with a longer limit) compiles it again instead of reading the failure back.
TEST_P(StoreOn, LookupCompilesAgainWhatWasStoppedAtTheTimeLimitOrLostWithItsWorker) {
  Store s(db);
  const auto run = s.begin_run(sample_run());
  int n = 0;
  for (const std::string why : {"compile stopped after 600.3 s: over the compile time limit of 600 s (--compile-timeout)",
                                "compile worker died (signal 9)"}) {
    const Config c = config_n(++n);
    Evaluation e = failed(c, Status::CompileError);
    e.message = "compile error: " + why;
    s.record(run, sample_key(), e, false);
    EXPECT_FALSE(s.lookup(sample_key(), config_hash(c))) << why;
  }
  const Config source_error = config_n(++n);
  Evaluation e = failed(source_error, Status::CompileError);
  e.message = "compile error: kernel.cu(12): error: identifier \"TILE\" is undefined";
  s.record(run, sample_key(), e, false);
  EXPECT_TRUE(s.lookup(sample_key(), config_hash(source_error))) << "an error in the source is a verdict";
}

TEST_P(StoreOn, LookupMeasuresAgainWhenTimingDidNotPass) {
  Store s(db);
  const auto run = s.begin_run(sample_run());
  Evaluation noisy = measured(config_n(1), 12.5);
  noisy.fast.outcome = Outcome::Rejected;
  noisy.fast.reason = "CV 0.4 above 0.05";
  s.record(run, sample_key(), noisy, false);
  EXPECT_FALSE(s.lookup(sample_key(), config_hash(config_n(1))));
}

TEST_P(StoreOn, LookupPrefersTheOriginalMeasurement) {
  Store s(db);
  const auto r1 = s.begin_run(sample_run());
  const auto r2 = s.begin_run(sample_run());
  const auto r3 = s.begin_run(sample_run());
  const Config c = config_n(1);
  s.record(r1, sample_key(), failed(c, Status::Crashed), false);
  const auto original = s.record(r2, sample_key(), measured(c, 9), false);
  s.record(r3, sample_key(), measured(c, 9), true);  // read back into run 3
  const auto hit = s.lookup(sample_key(), config_hash(c));
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->id, original);
  EXPECT_FALSE(hit->reused);
  EXPECT_EQ(hit->eval.status, Status::Measured);
}

// --- elites -------------------------------------------------------------------------------------

TEST_P(StoreOn, ElitesAreEachConfigsBestMeasurementFastestFirst) {
  Store s(db);
  const auto r1 = s.begin_run(sample_run());
  const auto r2 = s.begin_run(sample_run());
  const EvalKey key = sample_key();
  s.record(r1, key, measured(config_n(1), 10), false);
  s.record(r1, key, measured(config_n(2), 5), false);
  s.record(r1, key, measured(config_n(3), 12), false);
  const auto a_best = s.record(r2, key, measured(config_n(1), 8), false);  // config 1 again, faster
  s.record(r2, key, failed(config_n(4), Status::GreenFailed), false);
  Evaluation noisy = measured(config_n(5), 1);
  noisy.fast.outcome = Outcome::Rejected;
  s.record(r2, key, noisy, false);
  EvalKey small = key;
  small.problem = "small";
  s.record(r2, small, measured(config_n(6), 0.5), false);
  EvalKey other_profile = key;
  other_profile.profile = "gemm";
  s.record(r2, other_profile, measured(config_n(7), 0.25), false);

  auto p50s = [](const std::vector<StoredEvaluation>& v) {
    std::vector<double> out;
    for (const auto& e : v) out.push_back(e.eval.fast.p50_us);
    return out;
  };
  const auto elites = s.elites("sdpa", "large", 0);
  EXPECT_EQ(p50s(elites), (std::vector<double>{5, 8, 12}));
  EXPECT_EQ(elites.at(1).id, a_best);
  EXPECT_EQ(p50s(s.elites("sdpa", "large", 2)), (std::vector<double>{5, 8}));
  EXPECT_EQ(p50s(s.elites("sdpa", "large", 0, r1)), (std::vector<double>{5, 10, 12}));
  EXPECT_EQ(p50s(s.elites("sdpa", "large", 0, r2)), (std::vector<double>{8}));
  EXPECT_EQ(p50s(s.elites("sdpa", "", 0)), (std::vector<double>{0.5, 5, 8, 12}));
  EXPECT_EQ(p50s(s.elites("", "", 0)), (std::vector<double>{0.25, 0.5, 5, 8, 12}));
}

// A problem resized (another setup): its elites are what was measured under the setup it was last
// measured under; a run's own elites are its own whatever came after; other problems keep theirs.
TEST_P(StoreOn, ElitesComeFromTheSetupEachProblemWasLastMeasuredUnder) {
  Store s(db);
  const auto r1 = s.begin_run(sample_run());
  const auto r2 = s.begin_run(sample_run());
  const EvalKey before = sample_key();
  EvalKey after = before;
  after.setup = "5e7a000000000002";
  EvalKey small = before;
  small.problem = "small";
  s.record(r1, before, measured(config_n(1), 3), false);  // faster under the old sizes
  s.record(r1, before, measured(config_n(2), 4), false);
  s.record(r1, small, measured(config_n(3), 1), false);
  s.record(r2, after, measured(config_n(2), 9), false);
  s.record(r2, after, measured(config_n(4), 7), false);
  std::vector<double> p50s;
  for (const auto& e : s.elites("sdpa", "large", 0)) p50s.push_back(e.eval.fast.p50_us);
  EXPECT_EQ(p50s, (std::vector<double>{7, 9}));
  p50s.clear();
  for (const auto& e : s.elites("sdpa", "", 0)) p50s.push_back(e.eval.fast.p50_us);
  EXPECT_EQ(p50s, (std::vector<double>{1, 7, 9}));
  p50s.clear();
  for (const auto& e : s.elites("sdpa", "large", 0, r1)) p50s.push_back(e.eval.fast.p50_us);
  EXPECT_EQ(p50s, (std::vector<double>{3, 4}));
}

// --- check --------------------------------------------------------------------------------------

TEST_P(StoreOn, CheckIsCleanAndNotesRunsStillRunning) {
  Store s(db);
  const auto run = s.begin_run(sample_run());
  s.record(run, sample_key(), full_evaluation(), false);
  s.record(run, sample_key(), failed(config_n(2), Status::CompileError), false);
  DbCheck c = s.check();
  EXPECT_TRUE(c.ok);
  EXPECT_TRUE(c.problems.empty());
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("run 1 is marked running"), std::string::npos) << c.notes[0];
  s.set_run_status(run, "finished");
  c = s.check();
  EXPECT_TRUE(c.ok);
  EXPECT_TRUE(c.notes.empty());
}

TEST_P(StoreOn, CheckReportsBrokenInvariants) {
  Store s(db);
  const auto run = s.begin_run(sample_run());
  const auto good = s.record(run, sample_key(), measured(config_n(1), 10), false);
  const auto other = s.record(run, sample_key(), measured(config_n(2), 11), false);
  const auto third = s.record(run, sample_key(), measured(config_n(3), 12), false);
  {
    // What a buggy writer or a hand edit could leave.
    auto raw = raw_without_foreign_keys();
    raw->query("UPDATE evaluations SET p50_us = 0 WHERE id = $1", {good}, "test");
    raw->query("UPDATE evaluations SET build_key = 'no-such-build', status = 'bogus' WHERE id = $1", {other}, "test");
    raw->query("UPDATE evaluations SET green_json = '{\"outcome\": ' WHERE id = $1", {third}, "test");
    raw->exec_script("INSERT INTO metrics VALUES (999, 'orphan', 1.0)", "test");
  }
  const DbCheck c = s.check();
  EXPECT_FALSE(c.ok);
  auto has = [&](const std::string& text) {
    for (const auto& p : c.problems)
      if (p.find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("evaluation " + std::to_string(good) + ": measured, but FAST passed with p50 0"));
  EXPECT_TRUE(has("evaluation " + std::to_string(other) + ": build no-such-build is missing"));
  EXPECT_TRUE(has("evaluation " + std::to_string(other) + ": unknown status 'bogus'"));
  EXPECT_TRUE(has("evaluation " + std::to_string(third) + ": a verdict column is not valid JSON"));
  EXPECT_TRUE(has("metrics row (999, orphan): evaluation 999 is missing"));
  EXPECT_EQ(c.problems.size(), 5u);
  for (const auto& p : c.problems) std::cerr << "  problem: " << p << "\n";
}

// --- processes ----------------------------------------------------------------------------------

// Evaluation i of a writer child: its metrics and parents make a half-written one visible.
Evaluation numbered(int i) {
  Evaluation e = measured(config_n(i), 100.0 + i);
  e.metrics.values = {{"a", i}, {"b", 2.0 * i}, {"c", 3.0 * i}};
  e.origin = {"mutation", "step", {config_hash(config_n(i - 1))}};
  GreenResult green;
  green.problem = "large";
  green.outcome = Outcome::Passed;
  green.max_abs = 1e-3 * i;
  e.green.problems = {green};
  return e;
}

void expect_whole(const StoredEvaluation& got, int i) {
  const Evaluation want = numbered(i);
  EXPECT_EQ(got.eval.config, want.config);
  EXPECT_EQ(got.eval.fast.p50_us, want.fast.p50_us);
  EXPECT_EQ(got.eval.metrics.values, want.metrics.values) << "evaluation " << i;
  EXPECT_EQ(got.eval.origin.parents, want.origin.parents) << "evaluation " << i;
  ASSERT_EQ(got.eval.green.problems.size(), 1u);
}

// A child process that records evaluations 0, 1, 2 ... into `run` and writes the count to
// `fd` after each commit. Never returns.
// Records `limit` evaluations, reporting each commit on `fd`. With a `resume_fd`, it stops after
// `pause_after` commits until a byte arrives there, so that a reader is sure to see a part-written
// run however fast the database writes.
[[noreturn]] void record_forever(const std::string& db, std::int64_t run, int fd, int limit,
                                 int pause_after = -1, int resume_fd = -1) {
  try {
    Store s(db);
    for (std::int64_t i = 0; i < limit; ++i) {
      s.record(run, sample_key(), numbered(static_cast<int>(i)), false);
      const std::int64_t committed = i + 1;
      if (write(fd, &committed, sizeof committed) != sizeof committed) _exit(3);
      if (committed == pause_after) {
        char go;
        if (read(resume_fd, &go, 1) != 1) _exit(4);
      }
    }
    _exit(0);
  } catch (...) {
    _exit(2);
  }
}

TEST_P(StoreOn, KillDuringRecordLosesAtMostTheEvaluationInFlight) {
  for (int round = 0; round < 5; ++round) {
    std::int64_t run;
    {
      Store s(db);
      run = s.begin_run(sample_run());
    }
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(fds[0]);
      record_forever(db, run, fds[1], 1 << 30);
    }
    close(fds[1]);
    std::int64_t reported = 0, n;
    while (reported < 10 + 7 * round && read(fds[0], &n, sizeof n) == sizeof n) reported = n;
    usleep(137 * round);  // land the kill at different points of a record
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped on its own, exit " << WEXITSTATUS(status);
    while (read(fds[0], &n, sizeof n) == sizeof n) reported = n;  // commits reported before the kill
    close(fds[0]);

    Store s(db);
    const DbCheck c = s.check();
    EXPECT_TRUE(c.ok) << (c.problems.empty() ? "" : c.problems[0]);
    const auto got = s.evaluations_of_run(run);
    // Every reported commit is there; the one in flight is either whole or absent.
    EXPECT_TRUE(std::int64_t(got.size()) == reported || std::int64_t(got.size()) == reported + 1)
        << got.size() << " rows, " << reported << " reported committed";
    for (std::size_t i = 0; i < got.size(); ++i) expect_whole(got[i], static_cast<int>(i));
  }
}

TEST_P(StoreOn, ReaderInAnotherProcessSeesWriterProgress) {
  std::int64_t run;
  {
    Store s(db);
    run = s.begin_run(sample_run());
  }
  constexpr int kRecords = 150, kPauseAfter = kRecords / 2;
  int fds[2], resume[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(pipe(resume), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    close(resume[1]);
    record_forever(db, run, fds[1], kRecords, kPauseAfter, resume[0]);
  }
  close(fds[1]);
  close(resume[0]);

  // The writer pauses half-way until the reader has seen that half; a loaded machine that lets
  // the writer finish before the reader's first read then cannot make the test vacuous.
  Store reader(db);  // opened after the fork: no connection crosses it
  std::size_t seen = 0, reads = 0, partial_views = 0;
  bool resumed = false;
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    const auto rows = reader.evaluations_of_run(run);  // never "database is locked"
    EXPECT_GE(rows.size(), seen);
    seen = rows.size();
    if (seen > 0 && seen < kRecords) ++partial_views;
    if (!rows.empty()) expect_whole(rows.back(), static_cast<int>(rows.size() - 1));
    reader.elites("sdpa", "large", 5);
    ++reads;
    if (!resumed && seen >= std::size_t(kPauseAfter)) {
      EXPECT_EQ(seen, std::size_t(kPauseAfter)) << "the writer went on past its pause";
      ASSERT_EQ(write(resume[1], "g", 1), 1);
      resumed = true;
    }
  }
  close(fds[0]);
  close(resume[1]);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer failed, status " << status;
  EXPECT_TRUE(resumed);
  EXPECT_EQ(reader.evaluations_of_run(run).size(), std::size_t(kRecords));
  EXPECT_GE(partial_views, 1u);
  EXPECT_GT(reads, 1u);
  std::cerr << "  " << reads << " reads while writing, " << partial_views << " saw a part-written run\n";
}

TEST_P(StoreOn, TwoStoresOnOneDatabaseSeeEachOthersWrites) {
  Store a(db);
  Store b(db);
  const auto run = a.begin_run(sample_run());
  ASSERT_TRUE(b.run(run));
  const auto id = a.record(run, sample_key(), measured(config_n(1), 10), false);
  ASSERT_TRUE(b.evaluation(id));
  EXPECT_EQ(b.elites("sdpa", "large", 0).size(), 1u);
  b.record(run, sample_key(), measured(config_n(2), 5), false);
  EXPECT_EQ(a.elites("sdpa", "large", 0).at(0).eval.fast.p50_us, 5);
  b.set_run_status(run, "finished");
  EXPECT_EQ(a.run(run)->status, "finished");
  EXPECT_EQ(a.run(run)->evaluations, 2);
}

}  // namespace
}  // namespace evo
