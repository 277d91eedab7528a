// The two sides of a run spread over hosts through the PostgreSQL work queue (population/queue.h).
// The coordinator's run loop (engine/run.cpp) drives a QueueEvaluator: submit() enqueues the
// candidate, collect() hands back the candidates workers finished, as final verdicts (needs_gpu
// false), so the loop records each in its own store as usual. serve_queue() is a worker: it claims
// candidates, evaluates each with its own evaluator (a replay, or the GPU evaluator on a GPU host)
// and posts the verdict in the transaction that completes its claim.
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "engine/evaluator.h"
#include "population/postgres.h"
#include "population/queue.h"

namespace evo {

class QueueEvaluator : public Evaluator {
 public:
  // `local` is an evaluator for the same profile and device as the workers': the device name and
  // build keys (the store's keys), the baseline and the best's sanitizer run come from it.
  // `slots`: candidates the workers together take at once (the loop keeps twice this in flight).
  QueueEvaluator(const std::string& url, std::int64_t queue_run, Evaluator& local, std::size_t slots);
  ~QueueEvaluator() override;  // finishes the queue run: its workers exit

  std::string device() const override { return local_.device(); }
  std::string driver() const override { return local_.driver(); }
  std::string build_key(const Config& c) const override { return local_.build_key(c); }
  // Submitted candidates are enqueued together, in one transaction, when collect() is next called
  // (the run loop collects right after it submits): one commit for a batch instead of one each,
  // which with the server's fsync was most of a coordinator's time (docs/results/queue.md).
  void submit(const Candidate& c) override;
  std::vector<Prepared> collect(double timeout_s) override;
  // Workers post final verdicts: collect() never hands back a candidate that needs the GPU here.
  Evaluation measure(const Prepared& p, std::size_t) override { return p.eval; }
  std::size_t compile_slots() const override { return slots_; }
  Timing time_baseline(std::size_t lane = 0) override { return local_.time_baseline(lane); }
  void prepare_baseline_timing() override { local_.prepare_baseline_timing(); }
  SanitizeVerdict sanitize(const Candidate& c) override { return local_.sanitize(c); }
  // The run's metrics thresholds (which candidates get a CUPTI pass, which may wait for the host's
  // turn) travel with each candidate enqueued after they are set, so a worker on another host
  // collects what a worker on this one would: without them every candidate paid a pass (measured
  // 2026-11-27 on 2 x H200: metrics 136 s of a 100 s sweep that --devices 0,1 did in 36 s).
  void set_metrics_max_p50_us(double us) override { metrics_max_p50_us_ = us; }
  void set_metrics_wait_max_p50_us(double us) override { metrics_wait_max_p50_us_ = us; }
  void set_metrics_during_run(bool on) override { metrics_during_run_ = on; }
  // The run's end: its best are profiled here, on the coordinator's own GPU (as memcheck is).
  std::optional<MetricsResult> collect_metrics(const Candidate& c, double* seconds) override {
    return local_.collect_metrics(c, seconds);
  }
  std::vector<MetricsAlone> collect_metrics_of(const std::vector<Candidate>& cs) override {
    return local_.collect_metrics_of(cs);
  }

 private:
  pg::Conn conn_;
  WorkQueue queue_;
  std::int64_t run_;
  Evaluator& local_;
  std::size_t slots_;
  std::vector<std::string> unsent_;  // payloads submitted since the last collect()
  double metrics_max_p50_us_ = 0, metrics_wait_max_p50_us_ = 0;
  bool metrics_during_run_ = true;
};

struct WorkerStats {
  std::int64_t posted = 0;   // verdicts this worker posted
  std::int64_t lost = 0;     // claims that ran out before the verdict could be posted
  std::int64_t released = 0; // claims given back unmeasured when the worker was stopped
};

// Throws UserError with one line unless the queue holds `queue_run` open: no queue on the server,
// no such run, or a finished one. Reads only (creates no table on a server without a queue).
void require_open_run(pg::Conn& conn, std::int64_t queue_run);

// Serves one queue run until the coordinator finishes it or *stop is set. Throws UserError with one
// line for a run the queue does not know or that is already finished, before claiming anything.
// Pipelined as a run on one host is: it holds claims ahead of its GPU, each under its own lease
// renewed while it compiles or waits, and submits each to the evaluator's compile pool as it is
// claimed: three while compiles keep up, one more each time the GPU would wait for one, up to the
// evaluator's compile slots and GPUs (at least two). A verdict the pool alone decides (a compile
// error, the static gate) is posted at once; the others are measured one at a time as they are
// ready and posted on a connection of their own while the next one is measured.
// Stopped (*stop), it finishes the measurement in progress, posts what it measured and gives back
// the claims it still holds.
WorkerStats serve_queue(const std::string& url, std::int64_t queue_run, Evaluator& evaluator,
                        const std::string& worker, double lease_s, const std::atomic<bool>* stop);

}  // namespace evo
