#include "gates/fast.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "engine/buffers.h"
#include "engine/guard.h"  // defines: TrustedCopy
#include "engine/launch.h"
#include "gates/green.h"  // defines: kept_buffers

namespace evo {
namespace {

// Events and graphs released on every path, including a CudaError thrown mid-measurement.
struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    EVO_CUDA(cudaEventCreate(&start));
    EVO_CUDA(cudaEventCreate(&stop));
  }
  ~Events() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};
struct Graph {
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (g) cudaGraphDestroy(g);
  }
};

// Linear interpolation between order statistics (the usual p-quantile of a sorted sample).
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

Timing summarize_samples(const std::vector<double>& us) {
  Timing t;
  t.iters = static_cast<int>(us.size());
  if (us.empty()) {
    t.outcome = Outcome::Skipped;
    t.reason = "no samples";
    return t;
  }
  std::vector<double> s = us;
  std::sort(s.begin(), s.end());
  double sum = 0;
  for (double x : s) sum += x;
  t.mean_us = sum / static_cast<double>(s.size());
  double ss = 0;
  for (double x : s) ss += (x - t.mean_us) * (x - t.mean_us);
  t.std_us = s.size() > 1 ? std::sqrt(ss / static_cast<double>(s.size() - 1)) : 0;
  t.cv = t.mean_us > 0 ? t.std_us / t.mean_us : 0;
  t.p50_us = quantile(s, 0.5);
  t.p90_us = quantile(s, 0.9);
  t.min_us = s.front();
  t.outcome = Outcome::Passed;
  return t;
}

void flush_l2(std::int64_t l2_bytes, cudaStream_t s) {
  // Twice the L2: whatever the replacement policy, none of the kernel's lines survive the write.
  // Kept for the process: a candidate allocates nothing. It holds zeros, and GREEN checks it with
  // its trusted copies: a candidate's store 64 MiB past its output once landed in it unseen
  // (GpuGreenSafety, 2 x H200, 2026-11-27; docs/results/green-safety.md).
  static auto* flush = new std::shared_ptr<TrustedCopy>;  // never destroyed, as GREEN's kept buffers
  const std::size_t bytes = l2_bytes > 0 ? static_cast<std::size_t>(2 * l2_bytes) : 0;
  if (!bytes) return;
  if (!*flush || (*flush)->bytes() < bytes) {
    flush->reset();
    *flush = TrustedCopy::zeros("evo's L2-flush buffer", bytes, s);
  }
  EVO_CUDA(cudaMemsetAsync((*flush)->writable_zeros(), 0, bytes, s));
}

Timing run_fast(const FastRun& r) {
  const Profile& prof = *r.profile;
  const FastSettings& fs = prof.gates.fast;
  const double timeout = prof.gates.timeout_s;
  auto beat = [&](const std::string& step, double budget) { if (r.beat) r.beat(step, budget); };
  const std::string where = " (problem " + r.problem->name + ")";

  beat("fast: inputs" + where, 60 + timeout);
  BufferSet& bufs = kept_buffers(prof, *r.problem, r.config, r.stream);
  LaunchSequence seq(prof.launches(), r.kernels, *r.problem, r.config);
  bufs.fill_inputs(0, 0, r.stream, r.store);
  for (std::size_t m = 0; m < r.modules.size(); ++m) bufs.upload_symbols(*r.modules[m], m == 0, r.stream);
  bufs.poison_outputs(r.stream);
  seq.pack(bufs);

  auto flush_l2 = [&] {
    if (fs.flush_l2) evo::flush_l2(r.l2_bytes, r.stream);
  };

  const bool graph_mode = fs.mode == FastSettings::Mode::Graph;
  const int per_sample = graph_mode ? std::max(1, fs.graph_launches) : 1;
  Graph graph;
  if (graph_mode) {
    EVO_CUDA(cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal));
    try {
      for (int i = 0; i < per_sample; ++i) seq.launch(r.stream);
    } catch (...) {
      cudaGraph_t dropped = nullptr;
      cudaStreamEndCapture(r.stream, &dropped);
      if (dropped) cudaGraphDestroy(dropped);
      throw;
    }
    EVO_CUDA(cudaStreamEndCapture(r.stream, &graph.g));
    EVO_CUDA(cudaGraphInstantiate(&graph.exec, graph.g, 0));
  }
  auto launch = [&] {
    if (graph_mode) EVO_CUDA(cudaGraphLaunch(graph.exec, r.stream));
    else seq.launch(r.stream);
  };

  beat("fast: warm-up" + where, timeout * std::max(1, fs.warmup) * per_sample * seq.size());
  for (int i = 0; i < fs.warmup; ++i) {
    bufs.refill_inouts(false, r.stream);
    launch();
  }
  EVO_CUDA(cudaStreamSynchronize(r.stream));

  Events ev;
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(fs.iters));
  for (int i = 0; i < fs.iters; ++i) {
    beat("fast: timed launch " + std::to_string(i + 1) + "/" + std::to_string(fs.iters) + where,
         timeout * per_sample * seq.size());
    bufs.refill_inouts(false, r.stream);  // before the flush: the copy's lines leave L2 too
    flush_l2();
    EVO_CUDA(cudaEventRecord(ev.start, r.stream));
    launch();
    EVO_CUDA(cudaEventRecord(ev.stop, r.stream));
    EVO_CUDA(cudaEventSynchronize(ev.stop));
    float ms = 0;
    EVO_CUDA(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    us.push_back(1000.0 * ms / per_sample);
  }
  Timing t = summarize_samples(us);
  t.problem = r.problem->name;
  t.mode = graph_mode ? "graph" : "events";
  // GREEN watched every launch it made; these were many more: a kernel that wrote out of bounds
  // only now (a race, a timing-dependent path) is not timed, it is rejected saying where.
  beat("fast: checking where the kernel wrote" + where, 60 + timeout);
  bufs.check_writes(r.stream);
  EVO_CUDA(cudaStreamSynchronize(r.stream));
  const std::vector<RegionFinding> wrote = bufs.write_findings();
  if (!wrote.empty()) {
    t.outcome = Outcome::Rejected;
    t.reason = "wrote where it may not while timed:";
    for (const auto& f : wrote) t.reason += " " + f.text() + ";";
    t.reason.pop_back();
  } else {
    bufs.idle(r.stream);  // watched until its next use (gates/green.cpp checks it)
  }
  return t;
}

}  // namespace evo
