// CompilePool: compile() in N worker processes, because NVRTC serialises compiles inside one
// process (CUDA_NOTES.md: 8 threads compile no faster than 1; 8 processes compile 8x faster). Each
// worker is this program started again (serve_if_compile_worker).
//
// Protocol, one socketpair per worker, each message a 4-byte little-endian length and JSON:
//   parent -> worker   {"key": K, "request": CompileRequest}
//   worker -> parent   {"build": Build}   or   {"error": "NVRTC is unusable: ..."}
// A worker holds one request at a time, so when one dies (an NVRTC crash, the OOM killer) the
// parent knows which request it took with it. Workers share the on-disk cache, whose writes are
// atomic, so a worker killed mid-store leaves no torn entry.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/compiler.h"
#include "engine/error.h"
#include "engine/trace.h"
#include "engine/evaluation_json.h"

namespace evo {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CompileRequest, source_path, name_expression, more_names, defines,
                                                options, include_dirs, arch)

namespace {

// How far below the run's own priority the compile workers run (nice(2) increment).
constexpr int kCompileWorkerNice = 10;
// Set in a compile worker's environment: the compile cache's folder.
constexpr const char* kWorkerEnv = "EVO_COMPILE_WORKER";

// ---- framing: both ends, EINTR-safe ---------------------------------------------------------------

bool read_full(int fd, char* p, std::size_t n) {
  while (n > 0) {
    ssize_t got = ::read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;  // EOF or error: the other end is gone
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool write_full(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t put = ::send(fd, p, n, MSG_NOSIGNAL);  // a dead peer is EPIPE, not SIGPIPE
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= static_cast<std::size_t>(put);
  }
  return true;
}

bool send_msg(int fd, const std::string& body) {
  unsigned char len[4];
  for (int i = 0; i < 4; ++i) len[i] = static_cast<unsigned char>(body.size() >> (8 * i));
  return write_full(fd, reinterpret_cast<const char*>(len), 4) && write_full(fd, body.data(), body.size());
}

bool recv_msg(int fd, std::string& body) {
  unsigned char len[4];
  if (!read_full(fd, reinterpret_cast<char*>(len), 4)) return false;
  std::size_t n = len[0] | len[1] << 8 | len[2] << 16 | static_cast<std::size_t>(len[3]) << 24;
  body.resize(n);
  return read_full(fd, body.data(), n);
}

// ---- the worker process -------------------------------------------------------------------------

[[noreturn]] void worker_main(int fd, const std::filesystem::path& cache_dir) {
  // Ctrl-C reaches the whole process group: the parent decides what stops, not its workers.
  ::signal(SIGINT, SIG_IGN);
  try {
    CompileCache cache(cache_dir);
    std::string msg;
    while (recv_msg(fd, msg)) {
      nlohmann::json reply;
      try {
        const auto req = nlohmann::json::parse(msg).at("request").get<CompileRequest>();
        TraceSpan span("compile", "compile pool");
        const Build b = compile(req, cache);
        if (tracing()) span.detail(std::string(b.from_cache ? "from the cache: " : "NVRTC: ") + req.name_expression);
        reply["build"] = b;
      } catch (const std::exception& e) {
        reply["error"] = e.what();
      }
      if (!send_msg(fd, reply.dump())) break;
    }
  } catch (...) {
  }
  ::_exit(0);  // never the parent's atexit handlers or static destructors
}

int hardware_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string death_message(int status) {
  if (WIFSIGNALED(status)) return "compile worker died (signal " + std::to_string(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "compile worker died (exit " + std::to_string(WEXITSTATUS(status)) + ")";
  return "compile worker died";
}

}  // namespace

void serve_if_compile_worker() {
  const char* dir = std::getenv(kWorkerEnv);
  if (!dir || !*dir) return;
  // Only with its socket: a variable left in someone's shell leaves evo as it is.
  struct stat st {};
  if (::fstat(3, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    ::unsetenv(kWorkerEnv);
    return;
  }
  // Compiles yield the CPU to the rest of the run: the coordinator drawing GREEN's inputs and the
  // GPU workers' host side are what the GPUs wait on. Beside 64 busy processes the convolution's
  // first inputs took 1.1 s to draw at the same priority, 0.7-1.0 s ten steps above, 0.5 s alone
  // (4 x H200's host, docs/results/scale14 §6). On an otherwise idle host the workers still have
  // every core the run does not use, so compiles are no slower. Failure is harmless.
  const int niced = ::nice(kCompileWorkerNice);
  (void)niced;
  worker_main(3, dir);
}

struct CompilePool::Impl {
  struct Worker {
    pid_t pid = -1;
    int fd = -1;       // the parent's end of the socketpair
    std::string key;   // being compiled; "" when idle
    std::chrono::steady_clock::time_point since;  // when it was given `key`
  };
  struct Job {
    CompileRequest request;
    std::string key;
  };

  CompileCache cache;
  std::vector<Worker> workers;
  std::deque<Job> queue;                                        // not yet given to a worker
  std::map<std::string, std::vector<std::uint64_t>> waiting;   // key -> ids (queued or compiling)
  std::deque<std::pair<std::uint64_t, Build>> done;            // finished, not yet returned
  std::uint64_t next_id = 1;
  std::size_t outstanding = 0;                                  // submitted, not yet returned
  double timeout_s = kDefaultCompileTimeout_s;

  explicit Impl(std::filesystem::path dir) : cache(std::move(dir)) {}

  // Killed, not waited for: an NVRTC compile of a large unrolled kernel can take a minute. The
  // cache's writes are atomic, so nothing torn is left; the next dispatch starts another worker.
  // Returns the seconds its compile had run.
  double stop(Worker& w) {
    ::kill(w.pid, SIGKILL);
    const double ran = std::chrono::duration<double>(std::chrono::steady_clock::now() - w.since).count();
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(w.fd);
    w.pid = -1;
    w.fd = -1;
    w.key.clear();
    return ran;
  }

  // Compiles past the time limit: stopped, each answered as a failed build (not cached).
  void stop_overdue() {
    const auto now = std::chrono::steady_clock::now();
    for (auto& w : workers) {
      if (w.pid <= 0 || w.key.empty() || std::chrono::duration<double>(now - w.since).count() < timeout_s) continue;
      const std::string key = w.key;
      const double ran = stop(w);
      Build b;
      b.key = key;
      b.compile_ms = 1000 * ran;  // at least this long: what the run's compile seconds and models see
      b.log = compile_timeout_log(ran, timeout_s);
      finish(key, b);
    }
  }

  // Milliseconds until the first running compile reaches the time limit (-1: none is running).
  long long ms_to_first_overdue() const {
    const auto now = std::chrono::steady_clock::now();
    long long best = -1;
    for (const auto& w : workers) {
      if (w.pid <= 0 || w.key.empty()) continue;
      const double left = timeout_s - std::chrono::duration<double>(now - w.since).count();
      const long long ms = std::max<long long>(0, static_cast<long long>(std::ceil(left * 1000)));
      if (best < 0 || ms < best) best = ms;
    }
    return best;
  }

  // The worker is this program run again (/proc/self/exe) with EVO_COMPILE_WORKER naming the
  // cache, its socket as fd 3; main() hands it to serve_if_compile_worker. Not a fork: a fork
  // shares this process's pages copy-on-write, and the pool starts workers while the run draws
  // GREEN's first inputs, so every page drawn after each fork was copied first. On 4 x H200, 64
  // forks during the draw made Kernel Tuner's convolution's two 67 MB fills take 2.1-3.0 s against
  // 0.5 s alone (docs/results/scale14 §6). posix_spawn copies nothing, whatever this process holds:
  // on 2 x H200 the draw fell from 0.73-0.98 s to 0.47-0.53 s (docs/results/scale15 §1).
  void spawn(Worker& w) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw UserError(std::string("compile pool: socketpair: ") + std::strerror(errno));
    // dup2 onto 3 clears close-on-exec; an end that is 3 already would keep it, so move it first.
    int end = sv[1];
    if (end == 3) end = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 4);
    std::vector<std::string> env_text;
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, kWorkerEnv, std::strlen(kWorkerEnv)) != 0 || (*e)[std::strlen(kWorkerEnv)] != '=')
        env_text.emplace_back(*e);
    env_text.push_back(std::string(kWorkerEnv) + "=" + cache.dir().string());
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string name = "evo-compile-worker";
    char* argv[] = {name.data(), nullptr};
    // The child keeps stdin/out/err and its socket (as fd 3); every other descriptor of this
    // process (the other workers' sockets, a database, the GPU worker's pipes) is closed, so no
    // peer waits on an end a worker holds open by accident.
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    ::posix_spawn_file_actions_init(&fa);
    ::posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    ::posix_spawnattr_setsigmask(&attr, &none);
    ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    int rc = end < 0 ? errno : ::posix_spawn_file_actions_adddup2(&fa, end, 3);
    if (rc == 0) rc = ::posix_spawn_file_actions_addclosefrom_np(&fa, 4);
    pid_t pid = -1;
    if (rc == 0) rc = ::posix_spawn(&pid, "/proc/self/exe", &fa, &attr, argv, envp.data());
    ::posix_spawn_file_actions_destroy(&fa);
    ::posix_spawnattr_destroy(&attr);
    if (end != sv[1] && end >= 0) ::close(end);
    ::close(sv[1]);
    if (rc != 0) {
      ::close(sv[0]);
      throw UserError(std::string("compile pool: cannot start a compile worker: ") + std::strerror(rc));
    }
    w.pid = pid;
    w.fd = sv[0];
    w.key.clear();
  }

  // The worker's end is closed: collect its status, report its request, start a new one.
  void replace(Worker& w) {
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(w.fd);
    if (!w.key.empty()) {
      Build b;
      b.key = w.key;
      b.log = death_message(status);  // not cached: the source may be fine
      finish(w.key, b);
    }
    spawn(w);
  }

  void finish(const std::string& key, const Build& b) {
    auto it = waiting.find(key);
    if (it == waiting.end()) return;
    for (auto id : it->second) done.emplace_back(id, b);
    waiting.erase(it);
  }

  void dispatch() {
    for (auto& w : workers) {
      if (w.pid <= 0 && !queue.empty()) spawn(w);
      while (w.key.empty() && !queue.empty()) {
        const nlohmann::json msg = {{"key", queue.front().key}, {"request", queue.front().request}};
        if (send_msg(w.fd, msg.dump())) {
          w.key = queue.front().key;
          w.since = std::chrono::steady_clock::now();
          queue.pop_front();
        } else {
          replace(w);  // died while idle: nothing lost; retry on its successor
        }
      }
    }
  }

  bool busy() const {
    for (const auto& w : workers)
      if (!w.key.empty()) return true;
    return false;
  }

  // One answer (or death) from a worker whose socket poll() found readable.
  void collect(Worker& w) {
    std::string body;
    if (!recv_msg(w.fd, body)) {
      replace(w);
      return;
    }
    const std::string key = w.key;
    w.key.clear();
    nlohmann::json reply;
    try {
      reply = nlohmann::json::parse(body);
    } catch (const nlohmann::json::exception& e) {
      Build b;
      b.key = key;
      b.log = std::string("compile worker sent a malformed answer: ") + e.what();
      finish(key, b);
      return;
    }
    if (reply.contains("error")) {  // NVRTC unusable, template unreadable: the user's to fix
      auto it = waiting.find(key);
      if (it != waiting.end()) {
        outstanding -= it->second.size();
        waiting.erase(it);
      }
      throw UserError(reply["error"].get<std::string>());
    }
    finish(key, reply.at("build").get<Build>());
  }
};

std::string compile_timeout_log(double ran_s, double limit_s) {
  char text[160];
  std::snprintf(text, sizeof text, "compile stopped after %.1f s: over the compile time limit of %g s (--compile-timeout)",
                ran_s, limit_s);
  return text;
}

CompilePool::CompilePool(int jobs, std::filesystem::path cache_dir, double timeout_s)
    : impl_(std::make_unique<Impl>(std::move(cache_dir))) {
  if (jobs <= 0) jobs = hardware_cores();
  if (!(timeout_s > 0)) throw UserError("--compile-timeout " + std::to_string(timeout_s) + ": must be more than 0 seconds");
  impl_->timeout_s = timeout_s;
  // Each started when a compile first needs it (dispatch): from a warm cache a run compiles
  // nothing, and starting 64 workers up front held its first candidate back 37 ms (4 x H200,
  // docs/results/scale12; they were forks then).
  impl_->workers.resize(static_cast<std::size_t>(jobs));
}

CompilePool::~CompilePool() {
  for (auto& w : impl_->workers) {
    if (w.pid <= 0) continue;
    if (!w.key.empty()) ::kill(w.pid, SIGKILL);  // its answer is no longer wanted
    ::close(w.fd);                              // an idle worker reads EOF and exits
  }
  for (auto& w : impl_->workers) {
    if (w.pid <= 0) continue;
    int status;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

int CompilePool::jobs() const { return static_cast<int>(impl_->workers.size()); }
std::size_t CompilePool::pending() const { return impl_->outstanding; }

std::uint64_t CompilePool::submit(const CompileRequest& r) {
  Impl& m = *impl_;
  const std::string key = m.cache.key(r);
  const std::uint64_t id = m.next_id++;
  ++m.outstanding;
  if (auto hit = m.cache.lookup(key)) {
    m.done.emplace_back(id, *hit);
  } else if (auto it = m.waiting.find(key); it != m.waiting.end()) {
    it->second.push_back(id);  // the same build is already queued or compiling
  } else {
    m.waiting[key] = {id};
    m.queue.push_back({r, key});
    m.dispatch();
  }
  return id;
}

std::optional<std::pair<std::uint64_t, Build>> CompilePool::wait_any(double timeout_s) {
  Impl& m = *impl_;
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(timeout_s < 0 ? 0 : timeout_s);
  for (;;) {
    if (!m.done.empty()) {
      auto r = std::move(m.done.front());
      m.done.pop_front();
      --m.outstanding;
      return r;
    }
    m.stop_overdue();
    if (!m.done.empty()) continue;
    m.dispatch();
    if (!m.busy()) return std::nullopt;  // nothing in flight: nothing will ever arrive

    std::vector<pollfd> fds;
    std::vector<Impl::Worker*> owners;
    for (auto& w : m.workers)
      if (!w.key.empty()) {
        fds.push_back({w.fd, POLLIN, 0});
        owners.push_back(&w);
      }
    long long wait_ms = -1;
    if (timeout_s >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
      wait_ms = std::max<long long>(0, left);
    }
    // Woken when the first running compile reaches the time limit, to stop it.
    if (const long long overdue = m.ms_to_first_overdue(); overdue >= 0 && (wait_ms < 0 || overdue < wait_ms))
      wait_ms = overdue;
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(wait_ms, 1 << 30)));
    if (n < 0 && errno == EINTR) continue;  // the deadline is recomputed above
    if (n < 0) throw UserError(std::string("compile pool: poll: ") + std::strerror(errno));
    if (n == 0) {
      if (timeout_s >= 0 && clock::now() >= deadline && m.done.empty()) {
        m.stop_overdue();
        if (m.done.empty()) return std::nullopt;
      }
      continue;
    }
    for (std::size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) m.collect(*owners[i]);
  }
}

std::vector<std::pair<std::uint64_t, double>> CompilePool::running() const {
  const Impl& m = *impl_;
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::pair<std::uint64_t, double>> out;
  for (const auto& w : m.workers) {
    if (w.pid <= 0 || w.key.empty()) continue;
    const auto it = m.waiting.find(w.key);
    if (it == m.waiting.end()) continue;
    const double s = std::chrono::duration<double>(now - w.since).count();
    for (auto id : it->second) out.emplace_back(id, s);
  }
  return out;
}

double CompilePool::cancel(const std::vector<std::uint64_t>& ids) {
  Impl& m = *impl_;
  double ran = 0;
  const std::set<std::uint64_t> gone(ids.begin(), ids.end());
  const auto before = m.done.size();
  std::erase_if(m.done, [&](const auto& d) { return gone.count(d.first) > 0; });
  m.outstanding -= before - m.done.size();
  for (auto it = m.waiting.begin(); it != m.waiting.end();) {
    auto& waiting_ids = it->second;
    const auto had = waiting_ids.size();
    std::erase_if(waiting_ids, [&](std::uint64_t id) { return gone.count(id) > 0; });
    m.outstanding -= had - waiting_ids.size();
    if (!waiting_ids.empty() || had == 0) {
      ++it;
      continue;
    }
    const std::string key = it->first;
    it = m.waiting.erase(it);
    std::erase_if(m.queue, [&](const Impl::Job& j) { return j.key == key; });
    for (auto& w : m.workers)
      if (w.pid > 0 && w.key == key) ran += m.stop(w);
  }
  return ran;
}

std::vector<Build> CompilePool::compile_all(const std::vector<CompileRequest>& rs) {
  std::map<std::uint64_t, std::size_t> index;  // id -> position in rs
  for (std::size_t i = 0; i < rs.size(); ++i) index[submit(rs[i])] = i;
  std::vector<Build> out(rs.size());
  std::vector<std::pair<std::uint64_t, Build>> others;  // earlier submit()s' results: handed back
  std::size_t left = rs.size();
  while (left > 0) {
    auto r = wait_any();
    if (!r) break;  // cannot happen while ours are pending; never spin
    if (auto it = index.find(r->first); it != index.end()) {
      out[it->second] = std::move(r->second);
      --left;
    } else {
      others.push_back(std::move(*r));
    }
  }
  for (auto& o : others) {
    impl_->done.push_back(std::move(o));
    ++impl_->outstanding;
  }
  return out;
}

}  // namespace evo
