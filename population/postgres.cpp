// libpq under the PostgreSQL layer (population/postgres.h).
#include "population/postgres.h"

#include <libpq-fe.h>

#include <cstdlib>

namespace evo::pg {

namespace {

// libpq's messages end in a newline and may run to several lines ("connection to server at ...
// failed: Connection refused\n\tIs the server running ..."): keep one line, trimmed.
std::string first_line(const char* msg) {
  std::string s = msg ? msg : "";
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  if (s.rfind("ERROR:  ", 0) == 0) s.erase(0, 8);
  return s.empty() ? "no message from libpq" : s;
}

}  // namespace

bool is_url(std::string_view db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

std::string redact(std::string_view url) {
  std::string s(url);
  const auto scheme = s.find("://");
  if (scheme == std::string::npos) return s;
  const auto at = s.find('@', scheme + 3);
  const auto slash = s.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return s;
  const auto colon = s.find(':', scheme + 3);
  if (colon != std::string::npos && colon < at) s.replace(colon + 1, at - colon - 1, "***");
  return s;
}

Result::~Result() {
  if (r_) PQclear(r_);
}
int Result::rows() const { return PQntuples(r_); }
int Result::columns() const { return PQnfields(r_); }
std::int64_t Result::affected() const {
  const char* n = PQcmdTuples(r_);
  return n && *n ? std::strtoll(n, nullptr, 10) : 0;
}
bool Result::is_null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
std::string Result::get_str(int row, int col) const {
  return is_null(row, col) ? std::string() : std::string(PQgetvalue(r_, row, col));
}
std::int64_t Result::get_int(int row, int col) const {
  return is_null(row, col) ? 0 : std::strtoll(PQgetvalue(r_, row, col), nullptr, 10);
}

Conn::Conn(const std::string& url) : name_(redact(url)) {
  // connect_timeout: an unreachable host fails in seconds, not at the kernel's TCP timeout.
  // libpq takes a URL as its conninfo; the timeout goes as a second keyword set.
  const char* keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
  const char* vals[] = {url.c_str(), "10", "evo", nullptr};
  c_ = PQconnectdbParams(keys, vals, /*expand_dbname=*/1);
  if (!c_) throw PgError(name_ + ": cannot connect (out of memory)", "");
  if (PQstatus(c_) != CONNECTION_OK) {
    const std::string why = first_line(PQerrorMessage(c_));
    PQfinish(c_);
    c_ = nullptr;
    throw PgError(name_ + ": cannot connect (" + why + ")", "");
  }
  // Our own notices (CREATE TABLE IF NOT EXISTS of an existing table) are not the user's business.
  exec("SET client_min_messages = warning", "cannot configure the connection");
}

Conn::~Conn() {
  if (c_) PQfinish(c_);
}

Result Conn::exec(std::string_view sql, const std::vector<Param>& params, std::string_view doing) {
  const std::string text(sql);
  pg_result* r;
  if (params.empty()) {
    r = PQexec(c_, text.c_str());
  } else {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    r = PQexecParams(c_, text.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0);
  }
  Result res(r);
  const auto st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return res;
  const char* code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string why = first_line(r ? PQresultErrorMessage(r) : PQerrorMessage(c_));
  throw PgError(name_ + ": " + std::string(doing) + " (" + why + ")", code ? code : "");
}

Txn::Txn(Conn& c, std::string_view doing, std::string_view begin) : c_(c), doing_(doing) { c_.exec(begin, doing_); }

Txn::~Txn() {
  if (!active_) return;
  try {
    c_.exec("ROLLBACK", doing_);
  } catch (const PgError&) {
    // A lost connection rolls back by itself; nothing to add to the error already in flight.
  }
}

void Txn::commit() {
  c_.exec("COMMIT", doing_);
  active_ = false;
}

}  // namespace evo::pg
