// A timeline of one run for people who ask where its seconds went: EVO_TRACE=FILE makes the
// coordinator and every GPU worker append spans to FILE, one JSON object a line, in the Chrome
// trace-event format (each line a complete "X" event: joined with commas inside [ ], the file
// opens in Perfetto or chrome://tracing). Timestamps are CLOCK_MONOTONIC microseconds, shared by
// the processes of one host, so a worker's spans line up with the coordinator's.
#pragma once

#include <chrono>
#include <string>

namespace evo {

bool tracing();  // EVO_TRACE is set (read once a process)
// Where spans go from now on ("": nowhere). Only while no span is being written (a pooled worker
// between runs: each run's trace file is its own).
void set_trace_file(const std::string& path);

// One span, written when it ends. `track` names the row it is drawn on ("coordinator",
// "gpu 1", ...); `detail` goes into the event's args. Does nothing when tracing is off.
class TraceSpan {
 public:
  TraceSpan(std::string name, std::string track, std::string detail = "");
  ~TraceSpan();
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;
  void detail(std::string d) { detail_ = std::move(d); }

 private:
  std::string name_, track_, detail_;
  std::chrono::steady_clock::time_point start_;
};

// A span already measured (from `start` until now).
void trace_span(const std::string& name, const std::string& track, std::chrono::steady_clock::time_point start,
                const std::string& detail = "");

// A span from the process's start (its static initialisation) until now.
void trace_since_process_start(const std::string& name, const std::string& track);

}  // namespace evo
