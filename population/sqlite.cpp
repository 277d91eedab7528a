#include "population/sqlite.h"

#include <sqlite3.h>

#include <cmath>
#include <cstring>

namespace evo::sqlite {

namespace {

constexpr int kBusyTimeoutMs = 10000;  // a second writer waits this long for the write lock

std::string error_line(const std::filesystem::path& path, std::string_view doing, int code,
                       const char* sqlite_msg, int sys_errno) {
  const std::string where = path.string() + ": ";
  std::string why = sqlite_msg ? sqlite_msg : sqlite3_errstr(code);
  // SQLite says "unable to open database file"; the system says why.
  if (sys_errno != 0 && ((code & 0xff) == SQLITE_CANTOPEN || (code & 0xff) == SQLITE_IOERR))
    why += std::string(": ") + std::strerror(sys_errno);
  switch (code & 0xff) {
    case SQLITE_NOTADB: return where + "not an evo database (" + why + ")";
    case SQLITE_CORRUPT: return where + "database is corrupt (" + why + "); restore it from a copy";
    default: return where + std::string(doing) + " (" + why + ")";
  }
}

}  // namespace

// --- Db ----------------------------------------------------------------------------------------

Db::Db(const std::filesystem::path& path, bool create) : path_(path) {
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string line = error_line(path, create ? "cannot create database" : "cannot open database", rc, db_ ? sqlite3_errmsg(db_) : nullptr,
                                        db_ ? sqlite3_system_errno(db_) : 0);
    sqlite3_close(db_);
    throw SqliteError(line, rc);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
}

Db::~Db() { sqlite3_close_v2(db_); }  // closes once the last Stmt is finalised

void Db::exec(std::string_view sql, std::string_view doing) {
  const std::string text(sql);
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) fail(doing);
}

std::int64_t Db::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }

std::int64_t Db::changes() const { return sqlite3_changes64(db_); }

bool Db::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

void Db::fail(std::string_view doing) const { fail(doing, sqlite3_extended_errcode(db_)); }

void Db::fail(std::string_view doing, int code) const {
  throw SqliteError(error_line(path_, doing, code, sqlite3_errmsg(db_), sqlite3_system_errno(db_)), code);
}

// --- Stmt --------------------------------------------------------------------------------------

Stmt::Stmt(Db& db, std::string_view sql, std::string_view doing) : db_(db), doing_(doing) {
  if (sqlite3_prepare_v3(db.get(), sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt_,
                         nullptr) != SQLITE_OK)
    db.fail(doing);
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt::Use::~Use() {
  if (!s_) return;           // moved from
  sqlite3_reset(s_->stmt_);  // returns the last step's error, already reported by then
  sqlite3_clear_bindings(s_->stmt_);
}

void Stmt::Use::check_bind(int rc) {
  if (rc != SQLITE_OK) s_->db_.fail(s_->doing_, rc);
  ++next_param_;
}

void Stmt::Use::bind(std::int64_t v) { check_bind(sqlite3_bind_int64(s_->stmt_, next_param_, v)); }

void Stmt::Use::bind(double v) { check_bind(sqlite3_bind_double(s_->stmt_, next_param_, v)); }

void Stmt::Use::bind(std::string_view v) {
  check_bind(sqlite3_bind_text64(s_->stmt_, next_param_, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
}

void Stmt::Use::bind(std::nullopt_t) { check_bind(sqlite3_bind_null(s_->stmt_, next_param_)); }

void Stmt::Use::exec() {
  int rc;
  while ((rc = sqlite3_step(s_->stmt_)) == SQLITE_ROW) {
  }
  if (rc != SQLITE_DONE) s_->db_.fail(s_->doing_, rc);
}

bool Stmt::Use::next() {
  const int rc = sqlite3_step(s_->stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  s_->db_.fail(s_->doing_, rc);
}

int Stmt::Use::columns() const { return sqlite3_column_count(s_->stmt_); }

Stmt::Use::Type Stmt::Use::type(int col) const {
  switch (sqlite3_column_type(s_->stmt_, col)) {
    case SQLITE_NULL: return Type::Null;
    case SQLITE_INTEGER: return Type::Integer;
    case SQLITE_FLOAT: return Type::Real;
    default: return Type::Text;
  }
}

bool Stmt::Use::is_null(int col) const { return sqlite3_column_type(s_->stmt_, col) == SQLITE_NULL; }

std::int64_t Stmt::Use::get_int(int col) const { return sqlite3_column_int64(s_->stmt_, col); }

double Stmt::Use::get_double(int col) const {
  return is_null(col) ? std::nan("") : sqlite3_column_double(s_->stmt_, col);
}

std::string Stmt::Use::get_str(int col) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s_->stmt_, col));
  return text ? std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(s_->stmt_, col))) : std::string();
}

// --- Txn ---------------------------------------------------------------------------------------

Txn::Txn(Db& db, Kind kind, std::string_view doing) : db_(db), doing_(doing) {
  db.exec(kind == Write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED", doing_);
}

Txn::~Txn() {
  // SQLite may already have rolled back on its own (a full disk, an I/O error).
  if (active_ && db_.in_transaction()) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Txn::commit() {
  db_.exec("COMMIT", doing_);
  active_ = false;
}

}  // namespace evo::sqlite
