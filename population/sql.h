// The connection the population store is written against (population/store.cpp), so that the
// store holds one copy of every query. Two implementations: a SQLite file (sql_sqlite.cpp, over
// population/sqlite.h) and a PostgreSQL database (sql_postgres.cpp, over population/postgres.h).
// What the two dialects do differently is this interface's lower half, and nowhere else:
//   - parameters: statements are written $1, $2, ... (PostgreSQL's style; SQLite reads them ?1, ?2)
//   - the clock in SQL (now_text, now_unix) and where a new run's id comes from (next_run_id)
//   - the schema's column types (schema_sql: SQLite's INTEGER and REAL are BIGINT and DOUBLE
//     PRECISION on PostgreSQL) and where the application id and schema version live (PRAGMAs in
//     SQLite, the table evo_meta on PostgreSQL)
//   - how a transaction locks and what a read sees (begin), and the engine's own integrity check
// Every failure is a UserError of one line naming the file or the server (never its password).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace evo::sql {

// A value bound to $n: integer, real, text or NULL. NaN binds NULL on both (SQLite's own rule).
class Value {
 public:
  using Data = std::variant<std::monostate, std::int64_t, double, std::string>;
  Value(std::nullopt_t) {}
  Value(std::int64_t v) : v_(v) {}
  Value(int v) : v_(std::int64_t{v}) {}
  Value(bool v) : v_(std::int64_t{v ? 1 : 0}) {}
  Value(double v);
  Value(std::string v) : v_(std::move(v)) {}
  Value(std::string_view v) : v_(std::string(v)) {}
  Value(const char* v) : v_(std::string(v)) {}
  template <class T>
  Value(const std::optional<T>& v) : Value(std::nullopt) {
    if (v) *this = Value(*v);
  }
  const Data& data() const { return v_; }

 private:
  Data v_;
};

// The rows of one statement, read whole (so that the next statement can run while these are
// read):  for (auto q = db.query(...); q.next();) q.get_int(0);
class Rows {
 public:
  using Cell = std::variant<std::monostate, std::int64_t, double, std::string>;  // text: as the server sent it
  std::vector<std::vector<Cell>> rows;
  std::int64_t affected = 0;  // rows an INSERT, UPDATE or DELETE changed

  bool next() { return ++at_ < static_cast<std::ptrdiff_t>(rows.size()); }
  bool is_null(int col) const;
  std::int64_t get_int(int col) const;      // NULL reads as 0
  double get_double(int col) const;         // NULL reads as NaN
  std::string get_str(int col) const;       // NULL reads as ""

 private:
  const Cell& cell(int col) const { return rows.at(static_cast<std::size_t>(at_)).at(static_cast<std::size_t>(col)); }
  std::ptrdiff_t at_ = -1;
};

// Who else is in the database before evo writes to it: what opening reads first.
struct DbState {
  std::int64_t application_id = 0;  // evo's is schema::kApplicationId
  std::int64_t version = 0;         // schema version; 0 before evo's first migration
  std::int64_t objects = 0;         // tables (and, in SQLite, indices) there already
  std::string foreign;              // how a database of another program is described in the refusal
  bool empty() const { return application_id == 0 && version == 0 && objects == 0; }
};

// Read: one snapshot throughout. Write: takes what a write needs, so a busy database waits at the
// start rather than failing half-way. Schema: a write that also excludes every other process
// changing evo's schema on this database (they race on first use).
enum class TxnKind { Read, Write, Schema };

class Conn {
 public:
  virtual ~Conn() = default;
  // The file, or the URL with its password as "***": what every message names.
  virtual const std::string& name() const = 0;

  // One statement, values bound to $1..$n, every row read.
  virtual Rows query(std::string_view sql, const std::vector<Value>& values, std::string_view doing) = 0;
  // Statements without values (the schema); several at once.
  virtual void exec_script(std::string_view sql, std::string_view doing) = 0;
  virtual void begin(TxnKind kind, std::string_view doing) = 0;
  virtual void commit(std::string_view doing) = 0;
  virtual void rollback() noexcept = 0;  // nothing to roll back (a lost connection) is not an error

  // ---- the dialects' differences
  virtual std::string_view now_text() const = 0;      // UTC ISO 8601 text, "2026-03-01T12:00:00Z"
  virtual std::string_view now_unix() const = 0;      // seconds since the epoch, to the millisecond
  virtual std::string_view next_run_id() const = 0;   // a new run's id when none is given
  virtual std::string schema_sql(std::string_view migration) const = 0;  // a migration as this dialect runs it
  virtual DbState read_state() = 0;                   // the first read: refuses what cannot be read
  virtual void prepare_to_write() = 0;                // after the state is accepted (SQLite: WAL, foreign keys)
  virtual void write_state(std::int64_t version) = 0;  // in the Schema transaction, after the migrations
  virtual std::vector<std::string> integrity_problems() = 0;  // the engine's own check, one line each
};

// BEGIN on construction, ROLLBACK on destruction unless commit() ran.
class Txn {
 public:
  Txn(Conn& c, TxnKind kind, std::string_view doing) : c_(c), doing_(doing) { c_.begin(kind, doing_); }
  ~Txn() {
    if (active_) c_.rollback();
  }
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  void commit() {
    c_.commit(doing_);
    active_ = false;
  }

 private:
  Conn& c_;
  std::string doing_;
  bool active_ = true;
};

// `db` is a SQLite file or a postgresql:// URL; anything else with "://" is refused in one line.
// create: a missing SQLite file is made (a reading command passes false: "no such database").
std::unique_ptr<Conn> open(const std::string& db, bool create);
std::unique_ptr<Conn> open_sqlite(const std::string& path, bool create);  // sql_sqlite.cpp
std::unique_ptr<Conn> open_postgres(const std::string& url);               // sql_postgres.cpp

}  // namespace evo::sql
