#include "engine/trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdlib>

namespace evo {

namespace {
const std::chrono::steady_clock::time_point g_process_start = std::chrono::steady_clock::now();
// EVO_TRACE, read once; a pooled worker (engine/pool.h) writes each run's spans into that run's file.
std::string& trace_path() {
  static std::string* f = [] {
    const char* e = std::getenv("EVO_TRACE");
    return new std::string(e ? e : "");
  }();
  return *f;
}
const char* trace_file() {
  const std::string& f = trace_path();
  return f.empty() ? nullptr : f.c_str();
}
std::int64_t micros(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}
}  // namespace

bool tracing() { return trace_file() != nullptr; }

void set_trace_file(const std::string& path) { trace_path() = path; }

void trace_span(const std::string& name, const std::string& track, std::chrono::steady_clock::time_point start,
                const std::string& detail) {
  const char* file = trace_file();
  if (!file) return;
  const auto end = std::chrono::steady_clock::now();
  // One row per track: Chrome's viewer groups by pid then tid; the track's name is the tid's.
  nlohmann::json e{{"name", name},          {"ph", "X"},      {"ts", micros(start)},
                   {"dur", micros(end) - micros(start)}, {"pid", 1}, {"tid", track}};
  if (!detail.empty()) e["args"] = {{"detail", detail}};
  e["args"]["process"] = static_cast<int>(::getpid());
  const std::string line = e.dump() + "\n";
  // O_APPEND: each line lands whole, whichever process of the run writes it.
  const int fd = ::open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;  // a diagnostic: never a run's failure
  const ssize_t n = ::write(fd, line.data(), line.size());
  (void)n;
  ::close(fd);
}

void trace_since_process_start(const std::string& name, const std::string& track) {
  trace_span(name, track, g_process_start);
}

TraceSpan::TraceSpan(std::string name, std::string track, std::string detail)
    : name_(std::move(name)), track_(std::move(track)), detail_(std::move(detail)) {
  if (tracing()) start_ = std::chrono::steady_clock::now();
}

TraceSpan::~TraceSpan() {
  if (tracing()) trace_span(name_, track_, start_, detail_);
}

}  // namespace evo
