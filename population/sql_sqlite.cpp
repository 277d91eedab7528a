// The population store's connection on a SQLite file (population/sql.h), over the RAII layer of
// population/sqlite.h. Statements are prepared once and kept for the connection's lifetime.
#include <filesystem>
#include <optional>
#include <unordered_map>

#include "engine/error.h"
#include "population/schema.h"
#include "population/sql.h"
#include "population/sqlite.h"

namespace evo::sql {

namespace {

// $1, $2, ... as SQLite's ?1, ?2, ...: the same numbered parameters. Quoted text is left alone.
std::string sqlite_params(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  char quote = 0;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '$' && i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
      out += '?';
      continue;
    }
    out += c;
  }
  return out;
}

class SqliteConn : public Conn {
 public:
  SqliteConn(const std::string& path, bool create) : db_(path, create), name_(path) {}

  const std::string& name() const override { return name_; }

  Rows query(std::string_view sql, const std::vector<Value>& values, std::string_view doing) override {
    auto use = prepared(sql, doing).use();
    for (const auto& v : values)
      std::visit(
          [&](const auto& x) {
            if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>)
              use(std::nullopt);
            else
              use(x);
          },
          v.data());
    Rows out;
    while (use.next()) {
      auto& row = out.rows.emplace_back();
      for (int c = 0; c < use.columns(); ++c) switch (use.type(c)) {
          case sqlite::Stmt::Use::Type::Null: row.emplace_back(); break;
          case sqlite::Stmt::Use::Type::Integer: row.emplace_back(use.get_int(c)); break;
          case sqlite::Stmt::Use::Type::Real: row.emplace_back(use.get_double(c)); break;
          case sqlite::Stmt::Use::Type::Text: row.emplace_back(use.get_str(c)); break;
        }
    }
    out.affected = db_.changes();
    return out;
  }

  void exec_script(std::string_view sql, std::string_view doing) override { db_.exec(sql, doing); }

  // sqlite::Txn: writers take the write lock at BEGIN IMMEDIATE, readers see one snapshot (WAL).
  // The write lock is the whole file's, so a schema change needs no more.
  void begin(TxnKind kind, std::string_view doing) override {
    txn_.emplace(db_, kind == TxnKind::Read ? sqlite::Txn::Read : sqlite::Txn::Write, doing);
  }
  void commit(std::string_view) override {
    txn_->commit();
    txn_.reset();
  }
  void rollback() noexcept override { txn_.reset(); }  // sqlite::Txn rolls back unless committed

  std::string_view now_text() const override { return "strftime('%Y-%m-%dT%H:%M:%SZ', 'now')"; }
  std::string_view now_unix() const override { return "(julianday('now') - 2440587.5) * 86400.0"; }
  std::string_view next_run_id() const override { return "NULL"; }  // INTEGER PRIMARY KEY: the next rowid
  std::string schema_sql(std::string_view migration) const override { return std::string(migration); }

  DbState read_state() override {
    // The first read of the file: this is where SQLite notices a file that is not a database
    // (SQLITE_NOTADB) or a truncated one (SQLITE_CORRUPT), and says so through Db::fail.
    auto q = query("SELECT (SELECT application_id FROM pragma_application_id),"
                   "       (SELECT user_version FROM pragma_user_version),"
                   "       (SELECT count(*) FROM sqlite_master)",
                   {}, "cannot read database");
    q.next();
    DbState s{q.get_int(0), q.get_int(1), q.get_int(2), ""};
    s.foreign = "a SQLite file of another program: " + std::to_string(s.objects) +
                " tables or indices, no evo application id";
    return s;
  }

  void prepare_to_write() override {
    // WAL: one writer and any number of readers at once (evo show-elites during evo run).
    // NORMAL sync in WAL mode loses no committed transaction when the process dies; only a power
    // cut can take back the last few, and never leaves the file inconsistent.
    auto q = query("PRAGMA journal_mode = WAL", {}, "cannot switch the database to WAL mode");
    if (!q.next() || q.get_str(0) != "wal")
      throw UserError(name_ + ": cannot switch the database to WAL mode (journal mode stays " +
                      (q.rows.empty() ? std::string("?") : q.get_str(0)) + ")");
    db_.exec("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL", "cannot configure database");
  }

  void write_state(std::int64_t version) override {
    // PRAGMAs take no bound parameters; both values are this binary's own constants.
    db_.exec("PRAGMA application_id = " + std::to_string(schema::kApplicationId) +
                 "; PRAGMA user_version = " + std::to_string(version),
             "cannot set the database schema version");
  }

  std::vector<std::string> integrity_problems() override {
    std::vector<std::string> out;
    for (auto q = query("PRAGMA integrity_check", {}, "cannot run integrity_check"); q.next();)
      if (q.get_str(0) != "ok") out.push_back("integrity_check: " + q.get_str(0));
    return out;
  }

 private:
  sqlite::Stmt& prepared(std::string_view sql, std::string_view doing) {
    std::string key = std::string(doing) + '\n' + std::string(sql);  // `doing` names its failures
    auto it = stmts_.find(key);
    if (it == stmts_.end())
      it = stmts_.emplace(std::move(key), std::make_unique<sqlite::Stmt>(db_, sqlite_params(sql), doing)).first;
    return *it->second;
  }

  sqlite::Db db_;  // declared first: destroyed after the statements
  std::string name_;
  std::unordered_map<std::string, std::unique_ptr<sqlite::Stmt>> stmts_;
  std::optional<sqlite::Txn> txn_;
};

}  // namespace

std::unique_ptr<Conn> open_sqlite(const std::string& path, bool create) {
  const bool exists = std::filesystem::exists(path);
  // Reading commands must not create an empty database where the user mistyped a path.
  if (!create && !exists) throw UserError(path + ": no such database (run `evo run` first, or pass --db)");
  return std::make_unique<SqliteConn>(path, !exists);
}

}  // namespace evo::sql
