#include "engine/pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/error.h"
#include "engine/gpu_evaluator.h"  // defines: visible_entry
#include "engine/worker.h"         // defines: write_frame, device_from_json

extern char** environ;

namespace evo {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Exactly n bytes, never more: the frames after this one belong to whoever reads next.
bool read_exactly(int fd, char* out, std::size_t n, std::chrono::steady_clock::time_point deadline) {
  std::size_t got = 0;
  while (got < n) {
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t k = ::read(fd, out + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    got += static_cast<std::size_t>(k);
  }
  return true;
}

std::string utc_now() {
  char b[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

// A zombie is gone: it has ended and waits only for its parent to read its status.
bool alive(pid_t pid) {
  if (pid <= 0 || (::kill(pid, 0) != 0 && errno != EPERM)) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const std::size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

Json record_json(const PoolRecord& r) {
  Json devices = Json::array();
  for (const auto& d : r.devices)
    devices.push_back(Json{{"gpu", d.gpu}, {"visible", d.visible}, {"socket", d.socket}, {"worker", d.worker},
                           {"role", role_name(d.role)}});
  return Json{{"supervisor", r.supervisor}, {"binary", r.binary}, {"binary_id", r.binary_id}, {"devices", devices},
              {"env", r.env},           {"idle_exit_s", r.idle_exit_s}, {"started", r.started}};
}

void write_record(const PoolRecord& r) {
  const fs::path tmp = pool_dir() / ("pool.json.tmp" + std::to_string(::getpid()));
  std::ofstream(tmp) << record_json(r).dump(2) << '\n';
  fs::rename(tmp, pool_dir() / "pool.json");
}

std::optional<PoolRecord> read_record_file() {
  std::ifstream in(pool_dir() / "pool.json");
  if (!in) return std::nullopt;
  const Json j = Json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  PoolRecord r;
  r.supervisor = j.value("supervisor", -1);
  r.binary = j.value("binary", "");
  r.binary_id = j.value("binary_id", "");
  r.idle_exit_s = j.value("idle_exit_s", 0.0);
  r.started = j.value("started", "");
  if (j.contains("env") && j["env"].is_object()) r.env = j["env"].get<std::map<std::string, std::string>>();
  if (j.contains("devices") && j["devices"].is_array())
    for (const auto& d : j["devices"])
      r.devices.push_back(PoolDevice{d.value("gpu", 0), d.value("visible", ""), d.value("socket", ""), d.value("worker", -1),
                                     d.value("role", "") == "profile" ? WorkerRole::Profile : WorkerRole::Measure});
  return r;
}

int connect_socket(const fs::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = path.string();
  if (p.size() >= sizeof addr.sun_path) return -1;
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether `pid` is a pool worker listening on `socket` (not a process that took a dead one's pid).
bool is_pool_worker(pid_t pid, const std::string& socket) {
  if (!alive(pid) || socket.empty()) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string args((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return args.find(std::string("--listen") + '\0' + socket + '\0') != std::string::npos;
}

// The first variable whose value differs, said as a reason not to attach ("" : the same).
std::string first_difference(const std::map<std::string, std::string>& pool, const std::map<std::string, std::string>& here) {
  auto shown = [](const std::map<std::string, std::string>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? std::string("unset") : k + "=" + it->second;
  };
  for (const auto& [k, v] : here)
    if (auto it = pool.find(k); it == pool.end() || it->second != v) return shown(pool, k) + " in the pool, " + shown(here, k) + " here";
  for (const auto& [k, v] : pool)
    if (!here.count(k)) return shown(pool, k) + " in the pool, unset here";
  return "";
}

}  // namespace

fs::path pool_dir() {
  if (const char* d = std::getenv("EVO_POOL_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return fs::path(x) / "evo-pool";
  return fs::path("/tmp") / ("evo-pool-" + std::to_string(::getuid()));
}

bool pool_enabled() {
  const char* e = std::getenv("EVO_POOL");
  return !(e && std::string(e) == "0");
}

const char* role_name(WorkerRole role) { return role == WorkerRole::Profile ? "profile" : "measure"; }

fs::path pool_socket(const std::string& visible, WorkerRole role) {
  std::string name;
  for (char c : visible) name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  return pool_dir() / ("gpu-" + name + (role == WorkerRole::Profile ? ".profile" : "") + ".sock");
}

std::map<std::string, std::string> worker_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = kv.substr(0, eq);
    const bool reads = k.rfind("EVO_METRICS_", 0) == 0 || k == "EVO_PROFILES" ||
                       k == "EVO_DATA_DIR" || (k.rfind("CUDA_", 0) == 0 && k != "CUDA_VISIBLE_DEVICES");
    if (reads) env[k] = kv.substr(eq + 1);
  }
  return env;
}

std::string binary_identity(const std::string& path) {
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "unreadable:" + path;
  return (ec ? path : real.string()) + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

std::string pool_hello_json(bool busy, bool profiler_warm) {
  return Json{{"type", "hello"},
              {"pid", static_cast<int>(::getpid())},
              {"binary_id", binary_identity("/proc/self/exe")},
              {"env", worker_environment()},
              {"busy", busy},
              {"profiler_warm", profiler_warm}}
      .dump();
}

std::optional<std::string> read_frame(int fd, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                  std::chrono::duration<double>(timeout_s));
  char len[4];
  if (!read_exactly(fd, len, 4, deadline)) return std::nullopt;
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<std::uint32_t>(static_cast<unsigned char>(len[i])) << (8 * i);
  if (n > (64u << 20)) return std::nullopt;
  std::string payload(n, '\0');
  if (n && !read_exactly(fd, payload.data(), n, deadline)) return std::nullopt;
  return payload;
}

namespace {
// Connected to the pool's worker of `role` for the GPU `visible` names, and what it said on
// accepting (not an object when it said nothing readable). fd < 0: no pool worker there (no
// socket, or one left by a worker that is gone).
struct Greeting {
  int fd = -1;
  Json hello;
};
Greeting greet(const std::string& visible, WorkerRole role, double timeout_s) {
  Greeting g;
  if (visible.empty()) return g;
  const fs::path sock = pool_socket(visible, role);
  std::error_code ec;
  if (!fs::exists(sock, ec)) return g;
  g.fd = connect_socket(sock);
  if (g.fd < 0) return g;
  const std::optional<std::string> hello = read_frame(g.fd, timeout_s);
  if (hello) g.hello = Json::parse(*hello, nullptr, false);
  return g;
}

// checks: a run's attach (its build and environment); without, `evo pool status` looking.
PoolAttach attach(const std::string& binary, const std::string& visible, int gpu, WorkerRole role, double timeout_s,
                  bool checks) {
  PoolAttach a;
  const std::string whose = std::string("the pool's ") + (role == WorkerRole::Profile ? "profiling " : "") +
                            "worker for GPU " + std::to_string(gpu);
  const Greeting g = greet(visible, role, timeout_s);
  if (g.fd < 0) return a;
  const int fd = g.fd;
  const Json& h = g.hello;
  if (!h.is_object() || h.value("type", "") != "hello") {
    ::close(fd);
    a.refused = whose + " did not say hello within " +
                std::to_string(static_cast<int>(timeout_s)) + " s";
    return a;
  }
  std::string why;
  try {
    a.pid = h.value("pid", -1);
    a.profiler_warm = h.value("profiler_warm", false);
    if (h.value("busy", false))
      why = "it is serving another run";
    else if (!checks)
      why = "";
    else if (h.value("binary_id", "") != binary_identity(binary))
      why = "it runs another build of evo (" + h.value("binary_id", "") + ")";
    else if (const std::string d = first_difference(h.value("env", Json::object()).get<std::map<std::string, std::string>>(),
                                                    worker_environment());
             !d.empty())
      why = "its environment differs: " + d;
  } catch (const Json::exception&) {  // another evo's hello, or not evo's at all
    why = "its hello is not this evo's";
  }
  if (!why.empty()) {
    ::close(fd);
    a.refused = whose + " (pid " + std::to_string(a.pid) + ") not used: " + why;
    return a;
  }
  const char* trace = std::getenv("EVO_TRACE");
  const char* green_times = std::getenv("EVO_GREEN_TIMES");
  const Json attach_frame{{"type", "attach"}, {"gpu", gpu}, {"trace", trace ? trace : ""}, {"green_times", green_times ? green_times : ""}};
  if (!write_frame(fd, attach_frame.dump())) {
    ::close(fd);
    a.refused = whose + " closed the connection";
    return a;
  }
  a.fd = fd;
  return a;
}
// A worker just attached to (`evo pool start` waiting, `evo pool status` looking): what its probe
// says; the connection is closed, and the worker waits for the next run. nullopt: no answer.
std::optional<DeviceInfo> probe_attached(int fd, double timeout_s) {
  std::optional<std::string> answer;
  if (write_frame(fd, R"({"type":"probe"})")) answer = read_frame(fd, timeout_s);
  ::close(fd);
  if (!answer) return std::nullopt;
  try {
    return device_from_json(*answer);
  } catch (const UserError&) {
    return std::nullopt;
  }
}
}  // namespace

PoolAttach attach_pool_worker(const std::string& binary, const std::string& visible, int gpu, WorkerRole role,
                              double timeout_s) {
  if (!pool_enabled()) return {};
  return attach(binary, visible, gpu, role, timeout_s, true);
}

bool release_pool_profiler(const std::string& visible, double timeout_s) {
  const Greeting g = greet(visible, WorkerRole::Profile, timeout_s);
  if (g.fd < 0) return false;
  bool released = false;
  try {
    const Json& h = g.hello;
    // Busy: serving a run, whose session is that run's (it ends or is kept when the run ends).
    if (h.is_object() && h.value("type", "") == "hello" && !h.value("busy", true) && h.value("profiler_warm", false) &&
        write_frame(g.fd, R"({"type":"release-profiler"})")) {
      const std::optional<std::string> answer = read_frame(g.fd, timeout_s);
      const Json a = answer ? Json::parse(*answer, nullptr, false) : Json();
      released = a.is_object() && a.value("type", "") == "released";
    }
  } catch (const Json::exception&) {  // another evo's hello, or not evo's at all: nothing asked
  }
  ::close(g.fd);
  return released;
}

// ---- evo pool ----

std::optional<PoolRecord> read_pool_record() {
  std::optional<PoolRecord> r = read_record_file();
  if (!r || !alive(r->supervisor)) return std::nullopt;
  return r;
}

std::vector<PoolWorkerState> pool_workers(const PoolRecord& r) {
  std::vector<PoolWorkerState> out;
  for (const auto& d : r.devices) {
    PoolWorkerState w;
    w.device = d;
    PoolAttach a = attach(r.binary, d.visible, d.gpu, d.role, 5, false);
    w.pid = a.pid;
    w.profiler_warm = a.profiler_warm;
    if (a.fd < 0) {
      w.busy = a.refused.find("serving another run") != std::string::npos;
      if (!w.busy) w.error = a.refused.empty() ? "no worker is listening on " + d.socket : a.refused;
    } else {
      const std::optional<DeviceInfo> d = probe_attached(a.fd, 30);
      if (!d) w.error = "did not answer the probe";
      else if (!d->present) w.error = d->error;
      else w.name = d->name;
    }
    out.push_back(w);
  }
  return out;
}

PoolRecord start_pool(const std::string& binary, const std::vector<int>& devices, double idle_exit_s) {
  if (std::optional<PoolRecord> running = read_pool_record()) {
    std::string gpus;
    for (const auto& d : running->devices) gpus += (gpus.empty() ? "" : ",") + std::to_string(d.gpu);
    throw UserError("a pool is running already in " + pool_dir().string() + " (supervisor pid " +
                    std::to_string(running->supervisor) + ", GPUs " + gpus + "): `evo pool stop` first");
  }
  if (const std::vector<pid_t> left = orphaned_pool_workers(); !left.empty())
    throw UserError("the workers of a pool whose supervisor was killed still run in " + pool_dir().string() + " (" +
                    std::to_string(left.size()) + ", pid " + std::to_string(left.front()) + (left.size() > 1 ? " ..." : "") +
                    "): `evo pool stop` ends them");
  PoolRecord r;
  r.binary = fs::canonical(binary).string();
  r.binary_id = binary_identity(r.binary);
  r.env = worker_environment();
  r.idle_exit_s = idle_exit_s;
  r.started = utc_now();
  for (int gpu : devices) {
    const std::string v = visible_entry(gpu);
    if (v.empty())
      throw UserError("GPU " + std::to_string(gpu) + ": not among this host's GPUs (CUDA_VISIBLE_DEVICES or the driver's "
                      "listing), so no worker can be given it alone");
    for (WorkerRole role : {WorkerRole::Measure, WorkerRole::Profile}) {
      r.devices.push_back(PoolDevice{gpu, v, pool_socket(v, role).string(), -1, role});
      if (r.devices.back().socket.size() >= sizeof(sockaddr_un{}.sun_path))
        throw UserError("pool folder " + pool_dir().string() + ": the socket path is too long for a Unix socket (set EVO_POOL_DIR)");
    }
  }
  std::error_code ec;
  fs::create_directories(pool_dir(), ec);
  struct stat st {};
  if (::stat(pool_dir().c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UserError("pool folder " + pool_dir().string() + ": cannot be made (" + ec.message() + ")");
  if (st.st_uid != ::getuid()) throw UserError("pool folder " + pool_dir().string() + ": belongs to another user");
  ::chmod(pool_dir().c_str(), 0700);
  for (const auto& d : r.devices) fs::remove(d.socket, ec);  // left by a pool that was killed

  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw UserError(std::string("evo pool: fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setsid();
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int log = ::open((pool_dir() / "pool.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (null >= 0) ::dup2(null, 0);
    if (log >= 0) ::dup2(log, 1), ::dup2(log, 2);
    if (::close_range(3, ~0U, 0) != 0)
      for (int fd = 3; fd < 65536; ++fd) ::close(fd);
    run_pool_supervisor(r);
  }
  r.supervisor = pid;

  // Ready when every worker has made its context and answers on its socket.
  auto stop_and_throw = [&](const std::string& why) {
    ::kill(pid, SIGTERM);
    for (int i = 0; i < 100 && ::waitpid(pid, nullptr, WNOHANG) == 0; ++i) ::usleep(100000);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, WNOHANG);
    throw UserError(why);
  };
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& d : r.devices) {
    for (;;) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid)
        throw UserError("evo pool: the supervisor ended before GPU " + std::to_string(d.gpu) + "'s worker was ready (" +
                        (pool_dir() / "pool.log").string() + " says why)");
      PoolAttach a = attach(r.binary, d.visible, d.gpu, d.role, 5, false);
      if (a.fd >= 0) {
        const std::optional<DeviceInfo> probed = probe_attached(a.fd, 60);
        if (!probed) stop_and_throw("evo pool: GPU " + std::to_string(d.gpu) + "'s worker did not answer the probe");
        if (!probed->present) stop_and_throw("GPU " + std::to_string(d.gpu) + ": " + probed->error + " (no pool started)");
        break;
      }
      if (since(t0) > 120) stop_and_throw("evo pool: GPU " + std::to_string(d.gpu) + "'s worker was not ready within 120 s");
      ::usleep(20000);
    }
  }
  return r;
}

std::vector<pid_t> orphaned_pool_workers() {
  std::vector<pid_t> out;
  const std::optional<PoolRecord> r = read_record_file();
  if (!r || alive(r->supervisor)) return out;
  for (const auto& d : r->devices)
    if (is_pool_worker(d.worker, d.socket)) out.push_back(d.worker);
  return out;
}

int stop_pool(double timeout_s) {
  const std::optional<PoolRecord> r = read_record_file();
  if (!r) return 0;
  int ended = 0;
  auto wait_gone = [&](pid_t pid) {
    const auto t0 = std::chrono::steady_clock::now();
    while (alive(pid) && since(t0) < timeout_s) ::usleep(20000);
    if (alive(pid)) ::kill(pid, SIGKILL);
  };
  if (alive(r->supervisor)) {
    ::kill(r->supervisor, SIGTERM);  // it ends its workers
    wait_gone(r->supervisor);
    ++ended;
  }
  // A supervisor killed with SIGKILL leaves its workers serving: ended here.
  for (const auto& d : r->devices)
    if (is_pool_worker(d.worker, d.socket)) {
      ::kill(d.worker, SIGTERM);
      wait_gone(d.worker);
      ++ended;
    }
  std::error_code ec;
  for (const auto& d : r->devices) fs::remove(d.socket, ec);
  fs::remove(pool_dir() / "pool.json", ec);
  return ended;
}

namespace {
volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

void say(const std::string& line) {
  const std::string text = utc_now() + " " + line + "\n";
  if (::write(2, text.data(), text.size()) < 0) return;
}
}  // namespace

void run_pool_supervisor(PoolRecord r) {
  r.supervisor = ::getpid();
  struct sigaction sa {};
  sa.sa_handler = on_stop;  // no SA_RESTART: waitpid returns to look at the flag
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  try {
    write_record(r);
  } catch (const std::exception& e) {
    say(std::string("evo pool: cannot write pool.json: ") + e.what());
    ::_exit(1);
  }
  say("evo pool: supervisor " + std::to_string(r.supervisor) + " for " + std::to_string(r.devices.size()) + " GPU(s), " +
      r.binary);
  struct Slot {
    PoolDevice d;
    pid_t pid = -1;
    std::chrono::steady_clock::time_point started;
    int quick_deaths = 0;
    bool done = false;
  };
  std::vector<Slot> slots;
  for (const auto& d : r.devices) {
    slots.emplace_back();
    slots.back().d = d;
  }
  char idle[32];
  std::snprintf(idle, sizeof idle, "%g", r.idle_exit_s);
  auto spawn = [&](Slot& s) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      say("evo pool: GPU " + std::to_string(s.d.gpu) + ": fork: " + std::strerror(errno));
      s.done = true;
      return;
    }
    if (pid == 0) {  // this process has no threads: setenv is safe between fork and exec
      ::setenv("CUDA_VISIBLE_DEVICES", s.d.visible.c_str(), 1);
      ::setenv("EVO_WORKER_GPU", std::to_string(s.d.gpu).c_str(), 1);
      ::signal(SIGPIPE, SIG_DFL);
      for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::signal(sig, SIG_DFL);
      ::execl(r.binary.c_str(), r.binary.c_str(), "worker", "--device", "0", "--listen", s.d.socket.c_str(), "--idle-exit",
              idle, "--role", role_name(s.d.role), static_cast<char*>(nullptr));
      std::fprintf(stderr, "evo pool: cannot run %s: %s\n", r.binary.c_str(), std::strerror(errno));
      ::_exit(127);
    }
    s.pid = pid;
    s.started = std::chrono::steady_clock::now();
    for (auto& d : r.devices)
      if (d.socket == s.d.socket) d.worker = pid;
    try {
      write_record(r);  // `evo pool stop` finds the workers even if this supervisor is killed
    } catch (const std::exception& e) {
      say(std::string("evo pool: cannot write pool.json: ") + e.what());
    }
  };
  for (auto& s : slots) spawn(s);
  for (;;) {
    if (g_stop) {
      for (auto& s : slots)
        if (s.pid > 0) ::kill(s.pid, SIGTERM);
      const auto t0 = std::chrono::steady_clock::now();
      for (auto& s : slots) {
        while (s.pid > 0 && since(t0) < 5 && ::waitpid(s.pid, nullptr, WNOHANG) == 0) ::usleep(10000);
        if (s.pid > 0 && ::waitpid(s.pid, nullptr, WNOHANG) == 0) ::kill(s.pid, SIGKILL), ::waitpid(s.pid, nullptr, 0);
        s.pid = -1;
      }
      say("evo pool: stopped");
      break;
    }
    int status = 0;
    const pid_t dead = ::waitpid(-1, &status, 0);
    if (dead < 0) {
      if (errno == EINTR) continue;
      break;  // no child left
    }
    for (auto& s : slots) {
      if (s.pid != dead) continue;
      s.pid = -1;
      const std::string who = "GPU " + std::to_string(s.d.gpu) + ": " + (s.d.role == WorkerRole::Profile ? "profiling " : "") +
                              "worker " + std::to_string(dead);
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        say("evo pool: " + who + " ended (idle " + idle + " s)");
        s.done = true;
        break;
      }
      const std::string how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                                  : "exited with status " + std::to_string(WEXITSTATUS(status));
      s.quick_deaths = since(s.started) < 2 ? s.quick_deaths + 1 : 0;
      if (s.quick_deaths >= 5) {
        say("evo pool: " + who + " " + how + ", the fifth time within 2 s of its start: not started again");
        s.done = true;
        break;
      }
      say("evo pool: " + who + " " + how + " (a kernel killed its context, or the watchdog): a fresh one started");
      if (s.quick_deaths) ::usleep(200000);
      spawn(s);
      break;
    }
    bool any = false;
    for (const auto& s : slots) any = any || !s.done;
    if (!any) break;
  }
  std::error_code ec;
  for (const auto& s : slots) fs::remove(s.d.socket, ec);
  if (std::optional<PoolRecord> now = read_record_file(); now && now->supervisor == r.supervisor)
    fs::remove(pool_dir() / "pool.json", ec);
  ::_exit(0);
}

}  // namespace evo
