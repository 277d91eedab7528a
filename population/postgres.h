// The PostgreSQL layer for many hosts sharing one population (issue 20): a connection, one
// statement with its values, a result, and a transaction that rolls back unless committed, over
// libpq. Every failure becomes a PgError (a UserError) whose one line names the server (the URL
// without its password), says what evo was doing and quotes PostgreSQL's first line:
//   "postgresql://evo@db1:5432/evo: cannot connect (connection refused ...)".
// Values are always sent as parameters ($1, $2, ...), never spliced into SQL text.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/error.h"

struct pg_conn;
struct pg_result;

namespace evo::pg {

struct PgError : UserError {
  PgError(const std::string& what, std::string sqlstate) : UserError(what), sqlstate(std::move(sqlstate)) {}
  std::string sqlstate;  // PostgreSQL's five-character error code; "" for a connection failure
};

// True for "postgresql://..." and "postgres://...": what --db treats as a server, not a file.
bool is_url(std::string_view db);
// The URL as shown in messages: any password replaced by "***".
std::string redact(std::string_view url);

// A parameter: text, or NULL. Numbers go as their decimal text (PostgreSQL casts them).
using Param = std::optional<std::string>;

class Result {
 public:
  explicit Result(pg_result* r) : r_(r) {}
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Result& operator=(Result&&) = delete;
  ~Result();
  int rows() const;
  int columns() const;
  std::int64_t affected() const;            // rows an INSERT/UPDATE/DELETE touched
  bool is_null(int row, int col) const;
  std::string get_str(int row, int col) const;   // NULL reads as ""
  std::int64_t get_int(int row, int col) const;

 private:
  pg_result* r_;
};

class Conn {
 public:
  // Connects; throws PgError "<url>: cannot connect (<reason>)" when the server is unreachable,
  // refuses, or the database does not exist.
  explicit Conn(const std::string& url);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  const std::string& name() const { return name_; }  // the redacted URL
  // One statement with parameters $1..$n; several statements only when params is empty.
  Result exec(std::string_view sql, const std::vector<Param>& params, std::string_view doing);
  Result exec(std::string_view sql, std::string_view doing) { return exec(sql, {}, doing); }

 private:
  pg_conn* c_ = nullptr;
  std::string name_;
};

// BEGIN on construction, ROLLBACK on destruction unless commit() ran. READ COMMITTED unless
// `begin` says otherwise: rows are claimed with SELECT ... FOR UPDATE SKIP LOCKED, which needs no
// stricter isolation (a reading store asks for one snapshot: population/sql_postgres.cpp).
class Txn {
 public:
  Txn(Conn& c, std::string_view doing, std::string_view begin = "BEGIN");
  ~Txn();
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  void commit();

 private:
  Conn& c_;
  std::string doing_;
  bool active_ = true;
};

}  // namespace evo::pg
