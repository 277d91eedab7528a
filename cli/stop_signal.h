// SIGINT and SIGTERM as a request to stop cleanly (evo run, evo worker). While a StopOnSignals
// lives, the first signal sets the flag the loop polls and restores the default action, so a
// second Ctrl-C ends the process at once: each evaluation is its own transaction, so nothing
// recorded is lost and the run stays resumable. SIGTERM (`timeout`, a batch scheduler) is treated
// like the first Ctrl-C.
#pragma once
#include <atomic>
#include <csignal>

namespace evo::cli {

inline std::atomic<bool> g_stop_requested{false};

extern "C" inline void evo_on_stop_signal(int sig) {
  g_stop_requested.store(true);
  std::signal(sig, SIG_DFL);
}

class StopOnSignals {
 public:
  StopOnSignals() {
    g_stop_requested.store(false);
    int_ = std::signal(SIGINT, evo_on_stop_signal);
    term_ = std::signal(SIGTERM, evo_on_stop_signal);
  }
  ~StopOnSignals() {
    std::signal(SIGINT, int_);
    std::signal(SIGTERM, term_);
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;
  static const std::atomic<bool>* flag() { return &g_stop_requested; }
  static bool requested() { return g_stop_requested.load(); }

 private:
  void (*int_)(int) = SIG_DFL;
  void (*term_)(int) = SIG_DFL;
};

}  // namespace evo::cli
