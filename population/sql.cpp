// Values, rows and the choice of backend (population/sql.h).
#include "population/sql.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/error.h"
#include "population/postgres.h"  // defines: pg::is_url, pg::redact

namespace evo::sql {

Value::Value(double v) {
  if (!std::isnan(v)) v_ = v;
}

bool Rows::is_null(int col) const { return std::holds_alternative<std::monostate>(cell(col)); }

std::int64_t Rows::get_int(int col) const {
  const Cell& c = cell(col);
  if (auto* i = std::get_if<std::int64_t>(&c)) return *i;
  if (auto* d = std::get_if<double>(&c)) return static_cast<std::int64_t>(*d);
  if (auto* s = std::get_if<std::string>(&c)) return std::strtoll(s->c_str(), nullptr, 10);
  return 0;
}

double Rows::get_double(int col) const {
  const Cell& c = cell(col);
  if (auto* d = std::get_if<double>(&c)) return *d;
  if (auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  // PostgreSQL's text of a double round-trips (shortest exact digits; Infinity, -Infinity, NaN).
  if (auto* s = std::get_if<std::string>(&c)) return std::strtod(s->c_str(), nullptr);
  return std::nan("");
}

std::string Rows::get_str(int col) const {
  const Cell& c = cell(col);
  if (auto* s = std::get_if<std::string>(&c)) return *s;
  if (auto* i = std::get_if<std::int64_t>(&c)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&c)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", *d);
    return buf;
  }
  return "";
}

std::unique_ptr<Conn> open(const std::string& db, bool create) {
  if (pg::is_url(db)) return open_postgres(db);
  if (db.find("://") != std::string::npos)
    throw UserError(pg::redact(db) + ": not a postgresql:// URL (the store is a SQLite file, or a PostgreSQL "
                    "database: postgresql://user@host/database)");
  return open_sqlite(db, create);
}

}  // namespace evo::sql
