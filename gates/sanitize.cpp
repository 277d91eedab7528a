#include "gates/sanitize.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

namespace evo {
namespace {

bool executable(const std::filesystem::path& p) { return ::access(p.c_str(), X_OK) == 0; }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::string temp_path(const std::string& stem) {
  std::string t = (std::filesystem::temp_directory_path() / (stem + "-XXXXXX")).string();
  std::vector<char> buf(t.begin(), t.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  if (fd >= 0) ::close(fd);
  return buf.data();
}

}  // namespace

std::optional<std::string> find_compute_sanitizer() {
  std::vector<std::filesystem::path> dirs;
  if (const char* h = std::getenv("CUDA_HOME"); h && *h) dirs.emplace_back(std::filesystem::path(h) / "bin");
  dirs.emplace_back("/usr/local/cuda/bin");
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string d; std::getline(ss, d, ':');)
      if (!d.empty()) dirs.emplace_back(d);
  }
  for (const auto& d : dirs)
    if (executable(d / "compute-sanitizer")) return (d / "compute-sanitizer").string();
  return std::nullopt;
}

SanitizeVerdict parse_memcheck_log(const std::string& log) {
  SanitizeVerdict v;
  std::smatch m;
  static const std::regex summary(R"(ERROR SUMMARY:\s*([0-9]+)\s+error)");
  if (!std::regex_search(log, m, summary)) {
    v.outcome = Outcome::Skipped;
    std::string tail = trim(log.size() > 300 ? log.substr(log.size() - 300) : log);
    for (auto& ch : tail)
      if (ch == '\n') ch = ' ';
    v.first_message = "memcheck gave no error summary" + (tail.empty() ? std::string() : ": " + tail);
    return v;
  }
  v.errors = std::stoi(m[1].str());
  v.outcome = v.errors == 0 ? Outcome::Passed : Outcome::Rejected;
  if (v.errors == 0) return v;
  // An error is an unindented "=========" line; its detail lines ("at kernel+0x..", "by thread",
  // "Address ... is out of bounds") follow, indented.
  std::stringstream ss(log);
  std::vector<std::string> parts;
  for (std::string line; std::getline(ss, line);) {
    if (line.rfind("=========", 0) != 0) continue;
    const std::string body = line.substr(9);
    const bool detail = !body.empty() && (body[0] == ' ' || body[0] == '\t') && body.size() > 1 &&
                        (body[1] == ' ' || body[1] == '\t');
    const std::string text = trim(body);
    if (text.empty() || text.rfind("COMPUTE-SANITIZER", 0) == 0 || text.rfind("ERROR SUMMARY", 0) == 0) continue;
    if (parts.empty()) {
      if (!detail) parts.push_back(text);
    } else if (detail && parts.size() < 4) {
      if (text.rfind("Saved host backtrace", 0) == 0) break;
      parts.push_back(text);
    } else {
      break;
    }
  }
  for (std::size_t i = 0; i < parts.size(); ++i) v.first_message += (i ? "; " : "") + parts[i];
  return v;
}

SanitizeVerdict run_sanitize(const SanitizeRun& r) {
  SanitizeVerdict v;
  auto tool = find_compute_sanitizer();
  if (!tool) {
    v.first_message = "compute-sanitizer not found ($CUDA_HOME/bin, /usr/local/cuda/bin, PATH)";
    return v;
  }
  const std::string log = temp_path("evo-memcheck-log");
  const std::string out = temp_path("evo-memcheck-out");
  const std::string dev = std::to_string(r.device);
  std::vector<std::string> argv_s = {*tool, "--tool", "memcheck", "--log-file", log, "--print-limit", "10",
                                     // Buffers are allocated back to back: without padding, a read one
                                     // element past A lands inside B and memcheck sees nothing wrong.
                                     "--padding", "256", r.evo_binary, "worker", "--device", dev, "--one-shot", r.job_file};
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) {
    v.first_message = "could not start compute-sanitizer (fork failed)";
    return v;
  }
  if (pid == 0) {
    // Its own process group: on a timeout the sanitizer and the worker it started die together.
    ::setpgid(0, 0);
    int fd = ::open(out.c_str(), O_WRONLY | O_TRUNC);
    if (fd >= 0) ::dup2(fd, 1), ::dup2(fd, 2);
    if (::close_range(3, ~0U, 0) != 0)
      for (int f = 3; f < 65536; ++f) ::close(f);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  bool timed_out = false;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > r.timeout_s) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string log_text = read_all(log);
  const std::string out_text = read_all(out);
  std::filesystem::remove(log);
  std::filesystem::remove(out);
  if (timed_out) {
    v.outcome = Outcome::Timeout;
    v.first_message = "compute-sanitizer ran past " + std::to_string(static_cast<int>(r.timeout_s)) + " s";
    return v;
  }
  v = parse_memcheck_log(log_text);
  if (v.outcome == Outcome::Skipped) {
    std::string tail = trim(out_text.size() > 300 ? out_text.substr(out_text.size() - 300) : out_text);
    for (auto& ch : tail)
      if (ch == '\n') ch = ' ';
    if (!tail.empty()) v.first_message += " (worker said: " + tail + ")";
  }
  return v;
}

}  // namespace evo
