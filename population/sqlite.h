// The SQLite layer under the population store, three RAII types in the style of the Nix store
// (src/libstore/include/nix/store/sqlite.hh): a connection, a prepared statement bound with
// chained calls, and a transaction that rolls back unless committed. Every failure becomes a
// SqliteError (a UserError) whose one line names the database file, says what evo was doing and
// quotes SQLite: "evo.db: cannot record evaluation (database is locked)".
// Values are always bound, never spliced into SQL text.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "engine/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace evo::sqlite {

struct SqliteError : UserError {
  SqliteError(const std::string& what, int code) : UserError(what), code(code) {}
  int code;  // SQLite's extended result code
};

// A connection; `create` makes the file if it is missing. Opening does not read the file: SQLite reads (and notices a file that is not
// a database, or is truncated) at the first statement.
class Db {
 public:
  Db(const std::filesystem::path& path, bool create);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* get() const { return db_; }
  const std::filesystem::path& path() const { return path_; }

  // Runs SQL text without values (schema, pragmas); several statements allowed.
  void exec(std::string_view sql, std::string_view doing);
  std::int64_t last_insert_id() const;
  std::int64_t changes() const;  // rows changed by the last statement
  bool in_transaction() const;

  // Throws SqliteError for the connection's last error: "<path>: <doing> (<sqlite message>)",
  // or a fixed wording for a file that is not a database or is corrupt.
  [[noreturn]] void fail(std::string_view doing) const;
  [[noreturn]] void fail(std::string_view doing, int code) const;

 private:
  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

// A prepared statement, kept for the connection's lifetime. use() binds it afresh:
//   insert.use()(run)(name)(p50).exec();
//   for (auto q = select.use()(run); q.next();) q.get_int(0);
class Stmt {
 public:
  Stmt(Db& db, std::string_view sql, std::string_view doing);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // One execution: parameters bound left to right; reset (bindings cleared) when it goes away.
  class Use {
   public:
    explicit Use(Stmt& s) : s_(&s) {}
    Use(Use&& o) noexcept : s_(o.s_), next_param_(o.next_param_) { o.s_ = nullptr; }
    Use& operator=(Use&&) = delete;
    ~Use();

    // Binds the next parameter: integers, bool, double (NaN is stored as NULL, SQLite's own
    // rule), text, std::nullopt for NULL, or an optional of those.
    template <class T>
    Use& operator()(const T& v) & {
      bind(v);
      return *this;
    }
    template <class T>
    Use&& operator()(const T& v) && {
      bind(v);
      return std::move(*this);
    }

    void exec();   // runs to completion, ignoring any rows
    bool next();   // steps; true while there is a row

    enum class Type { Null, Integer, Real, Text };  // a BLOB reads as text
    int columns() const;
    Type type(int col) const;
    bool is_null(int col) const;
    std::int64_t get_int(int col) const;
    double get_double(int col) const;        // NULL reads as NaN
    std::string get_str(int col) const;      // NULL reads as ""

   private:
    void bind(std::int64_t v);
    void bind(int v) { bind(static_cast<std::int64_t>(v)); }
    void bind(bool v) { bind(static_cast<std::int64_t>(v ? 1 : 0)); }
    void bind(double v);
    void bind(std::string_view v);
    void bind(const std::string& v) { bind(std::string_view(v)); }
    void bind(const char* v) { bind(std::string_view(v)); }
    void bind(std::nullopt_t);
    template <class T>
    void bind(const std::optional<T>& v) {
      if (v) bind(*v); else bind(std::nullopt);
    }
    void check_bind(int rc);
    Stmt* s_;
    int next_param_ = 1;
  };

  Use use() { return Use(*this); }

 private:
  Db& db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string doing_;
};

// BEGIN on construction, ROLLBACK on destruction unless commit() ran. Writers begin IMMEDIATE,
// taking the write lock at once so that a busy database waits (busy timeout) at BEGIN instead
// of failing half-way; readers begin DEFERRED and see one snapshot throughout (WAL).
class Txn {
 public:
  enum Kind { Read, Write };
  Txn(Db& db, Kind kind, std::string_view doing);
  ~Txn();
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  void commit();

 private:
  Db& db_;
  std::string doing_;
  bool active_ = true;
};

}  // namespace evo::sqlite
