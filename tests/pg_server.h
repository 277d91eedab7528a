// A throwaway PostgreSQL server for the tests that need one (tests/test_pg.cpp, and the store's
// tests on both backends in tests/test_store.cpp): Debian's postgresql package, initdb and pg_ctl
// in a temporary folder, as user nobody when the tests run as root (PostgreSQL refuses root).
// One server per test process, started on first use and stopped at exit; where it cannot start,
// skip_reason() says why and the tests that need it skip, unless EVO_REQUIRE_POSTGRES=1 (CI: .ci/run)
// makes that a failure.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "population/postgres.h"

namespace evo::test {

// A port nothing listens on now (the kernel's pick for a socket bound to port 0).
inline int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(s);
  return port;
}

// One throwaway cluster: initdb into a temporary folder, pg_ctl start on a free port (TCP on
// 127.0.0.1 only, the socket in the same folder), superuser "evo" with trust authentication.
class PgServer {
 public:
  PgServer() {
    namespace fs = std::filesystem;
    std::vector<fs::path> bins;
    std::error_code ec;
    for (const auto& v : fs::directory_iterator("/usr/lib/postgresql", ec))
      if (fs::exists(v.path() / "bin" / "initdb")) bins.push_back(v.path() / "bin");
    if (bins.empty()) {
      skip_ = "no PostgreSQL server: no /usr/lib/postgresql/*/bin/initdb (scripts/install-deps.sh installs postgresql)";
      return;
    }
    std::sort(bins.begin(), bins.end());
    bin_ = bins.back();
    const fs::path tmp = fs::temp_directory_path(ec);
    std::string tmpl = (tmp / "evo-pg-XXXXXX").string();
    if (ec || !mkdtemp(tmpl.data())) {
      skip_ = "cannot make a temporary folder for the PostgreSQL server in " + tmp.string();
      return;
    }
    dir_ = tmpl;
    if (geteuid() == 0) {
      // PostgreSQL refuses to run as root: the server runs as nobody, in a folder nobody owns.
      const passwd* pw = getpwnam("nobody");
      if (!pw || chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        skip_ = "running as root, and cannot hand " + dir_.string() + " to user nobody for the PostgreSQL server";
        return;
      }
      as_ = "runuser -u nobody -- ";
    }
    port_ = free_port();
    const std::string data = (dir_ / "data").string(), log = (dir_ / "server.log").string();
    if (!sh(bin("initdb") + " -D " + data + " -U evo --auth=trust -E UTF8 --no-sync", "initdb.log")) {
      skip_ = "initdb failed: " + last_line(dir_ / "initdb.log");
      return;
    }
    if (!sh(bin("pg_ctl") + " -D " + data + " -l " + log + " -w -t 30 -o '-p " + std::to_string(port_) + " -k " +
                dir_.string() + " -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100' start",
            "pg_ctl.log")) {
      skip_ = "pg_ctl start failed: " + last_line(dir_ / "server.log");
      return;
    }
    started_ = true;
    url_ = database_url("postgres");
  }
  ~PgServer() {
    if (started_) sh(bin("pg_ctl") + " -D " + (dir_ / "data").string() + " -m immediate -w stop", "stop.log");
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  const std::string& skip_reason() const { return skip_; }
  const std::string& url() const { return url_; }  // the database "postgres"
  int port() const { return port_; }
  std::string database_url(const std::string& database) const {
    return "postgresql://evo@127.0.0.1:" + std::to_string(port_) + "/" + database;
  }
  // A new, empty database on this server (its name unique to this process), and its URL.
  std::string fresh_database() {
    const std::string name = "evo_" + std::to_string(getpid()) + "_" + std::to_string(++databases_);
    pg::Conn c(url_);
    c.exec("CREATE DATABASE " + name, "cannot create a test database");
    return database_url(name);
  }

 private:
  static std::string last_line(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::string line, last;
    while (std::getline(in, line))
      if (!line.empty()) last = line;
    return last;
  }
  std::string bin(const char* name) const { return (bin_ / name).string(); }
  // Runs in the server's folder (nobody cannot enter root's working directory), output to a log there.
  bool sh(const std::string& cmd, const char* log) const {
    const std::string line = "cd " + dir_.string() + " && " + as_ + cmd + " > " + (dir_ / log).string() + " 2>&1";
    return std::system(line.c_str()) == 0;
  }
  std::filesystem::path bin_, dir_;
  std::string as_, skip_, url_;
  int port_ = 0;
  int databases_ = 0;
  bool started_ = false;
};

// This process's server, started on first use, stopped when the process exits.
inline PgServer& pg_server() {
  static PgServer server;
  return server;
}

// Where CI says the server must start (EVO_REQUIRE_POSTGRES=1), a test may not skip for want of it.
inline bool postgres_required() {
  const char* e = std::getenv("EVO_REQUIRE_POSTGRES");
  return e && std::string(e) == "1";
}

}  // namespace evo::test
