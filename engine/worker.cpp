#include "engine/worker.h"

#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "engine/buffers.h"
#include "engine/compiler.h"  // defines: set_builtin_cache
#include "engine/error.h"
#include "engine/evaluation_json.h"
#include "engine/file_lock.h"
#include "engine/guard.h"  // defines: IntegrityCheck
#include "engine/device.h"  // defines: DeviceBuffer
#include "engine/launch.h"
#include "engine/pool.h"
#include "engine/profile.h"
#include "engine/reference.h"
#include "engine/space.h"  // defines: set_device_sms
#include "engine/trace.h"
#include "engine/trial_store.h"
#include "gates/fast.h"
#include "gates/green.h"
#include "gates/metrics.h"

namespace evo {

using Json = nlohmann::json;

// ---- protocol ----

std::string encode_frame(const std::string& payload) {
  const std::uint32_t n = static_cast<std::uint32_t>(payload.size());
  std::string f(4, '\0');
  for (int i = 0; i < 4; ++i) f[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return f + payload;
}

std::optional<std::string> FrameReader::next() {
  if (buf_.size() < 4) return std::nullopt;
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<std::uint32_t>(static_cast<unsigned char>(buf_[i])) << (8 * i);
  if (buf_.size() < 4 + static_cast<std::size_t>(n)) return std::nullopt;
  std::string payload = buf_.substr(4, n);
  buf_.erase(0, 4 + static_cast<std::size_t>(n));
  return payload;
}

// The messages are the plain structs as JSON (nlohmann's macros; absent fields take the struct's
// defaults), tagged with their type so a reader can tell a heartbeat from an answer.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MetricsCandidate, config, candidate_cubin, candidate_name, candidate_kernels)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WorkerJob, profile_path, config, candidate_cubin, candidate_name,
                                                reference_cubin, reference_name, candidate_kernels, reference_kernels,
                                                host_reference, reference_cache, share_kernel_outputs,
                                                builtin_cache, problems, seeds,
                                                trials, green,
                                                guard_zones, fast,
                                                objective, metrics, metrics_max_p50_us, metrics_lock,
                                                metrics_wait_max_p50_us, timed_p50_us, metrics_batch)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WorkerAnswer, outcome, message, step, reference_failed, green, fast,
                                                metrics, batch_metrics, seconds_green, seconds_fast, seconds_metrics, references_made,
                                                references_read, warnings, worker_lost)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DeviceInfo, present, ordinal, device_count, error, name, cc, sm_count,
                                                l2_bytes, smem_per_block_optin, regs_per_sm, global_mem_bytes, driver,
                                                runtime)

namespace {

template <class T>
std::string tagged(const T& message, const char* type) {
  Json j = message;
  j["type"] = type;
  return j.dump();
}

// Parses one message; the fields in `required` must be present (the rest may default).
template <class T>
T parse_message(const std::string& text, std::initializer_list<const char*> required, const char* what) {
  try {
    const Json j = Json::parse(text);
    for (const char* field : required)
      if (!j.contains(field)) throw UserError(std::string(what) + ": malformed: no '" + field + "'");
    return j.get<T>();
  } catch (const Json::exception& e) {
    throw UserError(std::string(what) + ": malformed: " + e.what());
  }
}

}  // namespace

std::string job_to_json(const WorkerJob& j) { return tagged(j, "job"); }
MetricsTurn take_metrics_turn(const WorkerJob& job, double p50_us, const std::function<void()>& waiting) {
  MetricsTurn t;
  auto us = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", x);
    return std::string(b);
  };
  if (job.metrics_max_p50_us > 0 && p50_us > job.metrics_max_p50_us) {
    t.reason = "not collected: p50 " + us(p50_us) + " us is above " + us(job.metrics_max_p50_us) +
               " us (near the run's best so far, where metrics are read)";
    return t;
  }
  t.collect = true;
  if (job.metrics_lock.empty()) return t;
  try {
    t.lock = FileLock::try_acquire(job.metrics_lock);
    if (t.lock) return t;
    if (job.metrics_wait_max_p50_us > 0 && p50_us > job.metrics_wait_max_p50_us) {
      t.collect = false;
      t.reason = "not collected: another GPU's metrics pass was running, and p50 " + us(p50_us) +
                 " us is not below the run's best so far (" + us(job.metrics_wait_max_p50_us) +
                 " us), which alone waits for its turn";
      return t;
    }
    if (waiting) waiting();
    t.lock = FileLock::acquire(job.metrics_lock, waiting);
  } catch (const UserError&) {
    // No lock file can be made there: profile without it, as a lone worker would.
  }
  return t;
}

WorkerJob job_from_json(const std::string& text) {
  return parse_message<WorkerJob>(text, {"profile_path", "config", "candidate_cubin", "candidate_name"}, "worker job");
}
std::string answer_to_json(const WorkerAnswer& a) { return tagged(a, "answer"); }
WorkerAnswer answer_from_json(const std::string& text) {
  return parse_message<WorkerAnswer>(text, {"outcome"}, "worker answer");
}
std::string device_to_json(const DeviceInfo& d) { return tagged(d, "device"); }
DeviceInfo device_from_json(const std::string& text) {
  return parse_message<DeviceInfo>(text, {}, "worker device answer");
}

ClientWatch::ClientWatch(int fd, std::function<void(const std::string&)> expire) : fd_(fd), expire_(std::move(expire)) {
  if (::pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;  // then it wakes every 100 ms to look
  thread_ = std::thread([this] { watch(); });
}

ClientWatch::~ClientWatch() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  // Woken at once: a session's end (a run's, and a worker's exit) does not wait for the next look.
  if (wake_[1] >= 0 && ::write(wake_[1], "x", 1) < 0) {
  }
  thread_.join();
  for (int f : wake_)
    if (f >= 0) ::close(f);
}

void ClientWatch::job_started(double budget_s) { step("start of the job", budget_s); }

void ClientWatch::step(const std::string& step, double budget_s) {
  std::lock_guard<std::mutex> lock(m_);
  in_job_ = true;
  step_ = step;
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(budget_s));
}

void ClientWatch::job_ended() {
  std::lock_guard<std::mutex> lock(m_);
  in_job_ = false;
}

void ClientWatch::watch() {
  bool gone = false;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (stop_) return;
      if (gone && in_job_ && std::chrono::steady_clock::now() > deadline_) {
        const std::string step = step_;
        in_job_ = false;
        expire_(step);
      }
    }
    // Hang-ups only (not POLLIN): the frames are the serving thread's to read. A pipe whose
    // writer closed says POLLHUP, a socket whose peer closed POLLRDHUP. Once gone, only the
    // deadline and the wake-up are watched.
    pollfd p[2] = {{gone ? -1 : fd_, POLLRDHUP, 0}, {wake_[0], POLLIN, 0}};
    const int r = ::poll(p, 2, gone ? 50 : 100);
    if (r > 0 && (p[0].revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL))) gone = true;
  }
}


namespace {

// send() on a socket (a pool's worker: MSG_NOSIGNAL, a run that went away is an error here),
// write() on a pipe.
bool write_all(int fd, const std::string& data) {
  std::size_t off = 0;
  bool socket = true;
  while (off < data.size()) {
    ssize_t n = socket ? ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL) : -1;
    if (n < 0 && socket && errno == ENOTSOCK) {
      socket = false;
      continue;
    }
    if (!socket) n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- the worker process ----

// What a worker keeps between jobs: the device, one stream, parsed profiles.
struct WorkerState {
  int device = 0;
  std::optional<DeviceInfo> info;
  cudaStream_t stream = nullptr;
  std::map<std::string, std::unique_ptr<Profile>> profiles;
  // The GPU as the coordinator numbers it, for the trace: a worker that sees its GPU alone has it
  // as its device 0 (EVO_WORKER_GPU, set by WorkerClient).
  int gpu_label = 0;
  bool profiler = false;  // WorkerRole::Profile: its trace track is its GPU's, named apart
  std::string track() const { return "gpu " + std::to_string(gpu_label) + (profiler ? " profiler" : ""); }

  const DeviceInfo& probe() {
    if (!info) {
      info = probe_device(device);
      if (info->present) set_device_sms(info->sm_count);  // NUM_SMS in this worker's launches
    }
    return *info;
  }
  const Profile& profile(const std::string& path) {
    auto& p = profiles[path];
    if (!p) p = std::make_unique<Profile>(load_profile(path));
    return *p;
  }
  void ready() {
    const DeviceInfo& d = probe();
    if (!d.present) throw UserError("no CUDA device is present: " + d.error);
    if (!stream) {
      EVO_CUDA(cudaSetDevice(device));
      EVO_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    }
  }
};

// The step the worker last announced, for a fatal signal's note (a fixed buffer: the handler may
// not allocate).
char g_step[256] = "start-up";

void remember_step(const std::string& step) {
  const std::size_t n = std::min(step.size(), sizeof g_step - 1);
  std::memcpy(g_step, step.data(), n);
  g_step[n] = '\0';
}

// EVO_GREEN_TIMES=FILE: one JSON line a GREEN run, its wall seconds by step (gates/green.h), to
// see where a candidate's GREEN time goes (docs/results/pipeline.md). Appended with O_APPEND, so
// the workers of a run may share the file.
void log_green_steps(const WorkerJob& job, double total_s, const std::map<std::string, double>& steps) {
  const char* file = std::getenv("EVO_GREEN_TIMES");
  if (!file || !*file) return;
  Json line{{"config", job.config}, {"green_s", total_s}, {"steps", steps}};
  const std::string text = line.dump() + "\n";
  const int fd = ::open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;  // a diagnostic: never the candidate's failure
  write_all(fd, text);
  ::close(fd);
}

// CUPTI's set-up for the profile's metric list, once a worker, on a thread of its own while the
// first candidates are judged and timed: host work (nvperf's metric tables; 0.6 s on 2 x H200)
// that the first metrics collection would otherwise wait for.
std::thread& metrics_ahead_thread() {
  static std::thread* t = new std::thread;  // joined before the worker returns (worker_main)
  return *t;
}
void prepare_metrics_ahead(const Profile& prof) {
  static std::once_flag once;
  std::call_once(once, [&] {
    const char* e = std::getenv("EVO_METRICS_PREWARM");
    if (e && std::string(e) == "0") return;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return;
    std::vector<std::string> names = prof.gates.metrics.names;
    metrics_ahead_thread() = std::thread([device, names = std::move(names)] {
      if (cudaSetDevice(device) == cudaSuccess) prepare_metrics(names);
    });
  });
}
// How long an idle pool's profiling worker keeps its profiler session enabled after its last run
// (EVO_POOL_KEEP_PROFILER_S, default 300 s; 0: ended after each run). Each run's first collection
// otherwise pays the first cuptiRangeProfilerStart after enabling, 0.17-0.42 s, and only one GPU's
// at its end, for the four first starts take turns host-wide (docs/results/scale11 §6). 30 s let
// the sessions of GPUs 2 and 3 go while a sweep ran on GPUs 0 and 1 (call M). Meanwhile no other
// process can profile on that GPU: evo's own ask the pool to let go first (release_pool_profiler);
// for ncu, `evo pool release` or `evo pool stop`.
double keep_profiler_s() {
  constexpr double kDefault = 300;
  const char* e = std::getenv("EVO_POOL_KEEP_PROFILER_S");
  if (!e || !*e) return kDefault;
  char* end = nullptr;
  const double v = std::strtod(e, &end);
  return end && *end == '\0' && v >= 0 ? v : kDefault;
}

// A collection over one of evo's own kernels (the integrity check of a small zeroed buffer), its
// session kept: the first Start after enabling is paid at the pool's start instead of in a run.
// Never throws: a run's first collection pays it where this could not.
void prime_profiler_session(WorkerState& st) {
  try {
    st.ready();
    DeviceBuffer zeros(4096);
    EVO_CUDA(cudaMemsetAsync(zeros.get(), 0, 4096, st.stream));
    IntegrityCheck check;
    check.add_checksum("evo's profiler warm-up buffer", zeros.get(), 4096, 0);
    const MetricsResult m = collect_metrics({}, [&] { check.run(st.stream); }, st.stream, std::nullopt, {}, true);
    EVO_CUDA(cudaStreamSynchronize(st.stream));
    if (m.outcome != Outcome::Passed)
      std::fprintf(stderr, "evo worker: GPU %d: profiler not warmed up: %s\n", st.gpu_label, m.reason.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "evo worker: GPU %d: profiler not warmed up: %s\n", st.gpu_label, e.what());
  }
}

// Before the worker's process ends: a thread inside CUPTI while statics are destroyed could crash it.
struct JoinMetricsAhead {
  ~JoinMetricsAhead() {
    if (metrics_ahead_thread().joinable()) metrics_ahead_thread().join();
  }
};

// Runs the job's gates in order, stopping where one says no. A CUDA failure becomes a crash
// verdict naming the step; `fatal` says the context is dead and the process must exit.
WorkerAnswer run_job(WorkerState& st, const WorkerJob& job, const Heartbeat& send_beat, bool* fatal) {
  WorkerAnswer a;
  Heartbeat beat = [&](const std::string& step, double budget_s) {
    a.step = step;
    remember_step(step);
    if (send_beat) send_beat(step, budget_s);
  };
  *fatal = false;
  auto phase_start = std::chrono::steady_clock::now();
  double* phase_seconds = nullptr;
  auto begin_phase = [&](double* s) {
    phase_start = std::chrono::steady_clock::now();
    phase_seconds = s;
  };
  // A metrics-only job (the run's end profiling its best) keeps the profiler's session for the
  // next one; any job that times or judges ends it first (gates/metrics.h).
  const bool metrics_only = job.metrics && !job.green && !job.fast;
  if (!metrics_only) end_metrics_session();
  if (!job.builtin_cache.empty()) set_builtin_cache(job.builtin_cache);
  const std::string track = st.track();
  const auto job_start = std::chrono::steady_clock::now();
  // The host's trial store (GREEN's, engine/trial_store.h), for the inputs FAST and the metrics
  // pass fill: read where the run or another worker drew them, not drawn again here.
  std::optional<TrialStore> store;
  auto inputs_store = [&]() -> const TrialStore* {
    if (job.reference_cache.empty()) return nullptr;
    if (!store) store.emplace(job.reference_cache, nullptr);
    return &*store;
  };
  try {
    st.ready();
    const Profile& prof = st.profile(job.profile_path);
    if (tracing()) trace_span("worker ready, profile read", track, job_start);
    // Only where this run collects metrics while it measures: the set-up's thread slows this
    // worker's own CUDA calls meanwhile (the first GREEN 0.4-0.9 s without it, 1.0-1.4 s with it on
    // 4 x H200, call R), more than it saves a run that profiles only its end (0.3 s, on one GPU).
    if (job.metrics && (job.green || job.fast)) prepare_metrics_ahead(prof);
    const double timeout = prof.gates.timeout_s;
    beat("loading cubins", 60 + timeout);
    // Each cubin once (launches of one template share it), its modules in first-launch order.
    std::map<std::string, Module> loaded;
    auto load = [&](std::vector<LaunchKernel> ks, const std::string& cubin, const std::string& name,
                    std::vector<Kernel>& kernels, std::vector<const Module*>& modules) {
      if (ks.empty() && !cubin.empty()) ks.push_back(LaunchKernel{"", name, cubin, {}});
      for (const auto& k : ks) {
        auto it = loaded.find(k.cubin_path);
        if (it == loaded.end()) it = loaded.emplace(k.cubin_path, Module::load(k.cubin_path)).first;
        if (std::find(modules.begin(), modules.end(), &it->second) == modules.end()) modules.push_back(&it->second);
        kernels.push_back(it->second.kernel(k.lowered_name));
      }
    };
    std::vector<Kernel> ck, rk;
    std::vector<const Module*> cmods, rmods;
    const auto load_start = std::chrono::steady_clock::now();
    load(job.candidate_kernels, job.candidate_cubin, job.candidate_name, ck, cmods);
    load(job.reference_kernels, job.reference_cubin, job.reference_name, rk, rmods);
    trace_span("load cubins", track, load_start);

    if (job.green) {
      begin_phase(&a.seconds_green);
      GreenRun g;
      g.profile = &prof;
      g.config = job.config;
      g.candidate_modules = cmods;
      g.candidate = ck;
      g.reference_modules = rmods;
      g.reference = rk;
      g.host_reference = job.host_reference && !prof.reference_is_kernel();
      g.reference_cache = job.reference_cache;
      g.share_kernel_outputs = job.share_kernel_outputs;
      const DeviceInfo& d = st.probe();
      g.device = d.name + " " + d.cc + " driver " + d.driver;
      ReferenceTally tally;
      g.tally = &tally;
      if (job.problems.empty()) {
        for (const auto& p : prof.problems) g.problems.push_back(&p);
      } else {
        for (const auto& name : job.problems) {
          const Problem* p = prof.find_problem(name);
          if (!p) throw UserError(prof.path.string() + ": problem '" + name + "' not in the profile");
          g.problems.push_back(p);
        }
      }
      g.seeds = job.seeds.empty() ? prof.gates.green.seeds : job.seeds;
      g.trials = job.trials > 0 ? job.trials : prof.gates.green.trials;
      g.problem_trials = job.seeds.empty() && job.trials <= 0;
      g.stream = st.stream;
      g.beat = beat;
      g.guard_zones = job.guard_zones;
      std::map<std::string, double> steps;
      g.step_seconds = &steps;
      bool wrote_out_of_bounds = false;
      g.wrote_out_of_bounds = &wrote_out_of_bounds;
      a.green = run_green(g);
      // Its writes went past what GREEN watches, maybe: answer, then a fresh process (its state
      // rebuilt from the trial store and verified) for the next candidate.
      if (wrote_out_of_bounds) *fatal = true;
      a.references_made = tally.made;
      a.references_read = tally.read;
      a.warnings = tally.warnings;
      a.seconds_green = seconds_since(phase_start);
      trace_span("green", track, phase_start, outcome_name(a.green.outcome));
      log_green_steps(job, a.seconds_green, steps);
      phase_seconds = nullptr;
      if ((!g.reference.empty() || g.host_reference) && a.green.outcome != Outcome::Passed) return a;
    }

    // `evo run --objective`: one run per problem, each timing its own; the profile file names one.
    const Problem* named = job.objective.empty() ? &prof.objective_problem() : prof.find_problem(job.objective);
    if (!named) throw UserError(prof.path.string() + ": objective problem '" + job.objective + "' not in the profile");
    const Problem& obj = *named;
    if (job.fast) {
      begin_phase(&a.seconds_fast);
      FastRun f;
      f.profile = &prof;
      f.config = job.config;
      f.kernels = ck;
      f.modules = cmods;
      f.problem = &obj;
      f.l2_bytes = st.probe().l2_bytes;
      f.stream = st.stream;
      f.beat = beat;
      f.store = inputs_store();
      a.fast = run_fast(f);
      a.seconds_fast = seconds_since(phase_start);
      trace_span("fast", track, phase_start);
      phase_seconds = nullptr;
      if (a.fast.outcome == Outcome::Rejected) {  // wrote out of bounds while timed: as GREEN's
        *fatal = true;
        return a;
      }
    }

    std::optional<MetricsTurn> turn;
    if (job.metrics) {
      begin_phase(&a.seconds_metrics);  // a wait for another GPU's pass counts in the metrics seconds
      const std::string waiting = "metrics: waiting for another GPU's metrics pass (problem " + obj.name + ")";
      const double p50 = job.fast ? (a.fast.outcome == Outcome::Passed ? a.fast.p50_us : 0.0) : job.timed_p50_us;
      turn = take_metrics_turn(job, p50, [&] { beat(waiting, 60 + timeout); });
      if (tracing()) trace_span("metrics turn", track, phase_start, turn->collect ? "collect" : turn->reason);
      if (!turn->collect) {
        a.metrics.outcome = Outcome::Skipped;
        a.metrics.reason = turn->reason;
        a.seconds_metrics = seconds_since(phase_start);
        phase_seconds = nullptr;
      }
    }
    if (turn && turn->collect && !job.metrics_batch.empty()) {
      // The run's end: this job's candidate and the batch's, in one collection where their
      // buffers are alike (one set of kept buffers serves them all), each alone otherwise.
      beat("metrics: inputs (problem " + obj.name + ")", 60 + timeout);
      const auto inputs_start = std::chrono::steady_clock::now();
      struct Entry {
        Config config;
        std::vector<Kernel> kernels;
        std::vector<const Module*> modules;
        std::unique_ptr<LaunchSequence> seq;
      };
      std::vector<Entry> entries(1 + job.metrics_batch.size());
      entries[0].config = job.config;
      entries[0].kernels = ck;
      entries[0].modules = cmods;
      for (std::size_t i = 0; i < job.metrics_batch.size(); ++i) {
        const MetricsCandidate& m = job.metrics_batch[i];
        entries[i + 1].config = m.config;
        load(m.candidate_kernels, m.candidate_cubin, m.candidate_name, entries[i + 1].kernels, entries[i + 1].modules);
      }
      const std::string shapes = buffer_shapes_key(prof, obj, job.config);
      std::size_t ranges = 0;
      bool together = !prof.gates.metrics.launch;
      for (auto& e : entries) {
        e.seq = std::make_unique<LaunchSequence>(prof.launches(), e.kernels, obj, e.config);
        ranges += e.seq->size();
        together = together && buffer_shapes_key(prof, obj, e.config) == shapes;
      }
      together = together && ranges <= kMetricsBatchRanges;
      BufferSet* bufs = nullptr;
      auto ready = [&](Entry& e) {  // the kept buffers configured, filled and packed for it
        bufs = &kept_buffers(prof, obj, e.config, st.stream);
        bufs->fill_inputs(0, 0, st.stream, inputs_store());
        for (std::size_t m = 0; m < e.modules.size(); ++m) bufs->upload_symbols(*e.modules[m], m == 0, st.stream);
        e.seq->pack(*bufs);
      };
      const std::int64_t l2 = st.probe().l2_bytes;
      auto before = [&] {
        bufs->refill_inouts(false, st.stream);
        if (prof.gates.fast.flush_l2) flush_l2(l2, st.stream);
      };
      const auto& names = prof.gates.metrics.names.empty() ? default_metric_names() : prof.gates.metrics.names;
      std::vector<MetricsResult> results;
      if (together) {
        for (auto& e : entries) ready(e);
        trace_span("metrics inputs", track, inputs_start);
        beat("metrics: profiling " + std::to_string(entries.size()) + " candidates (problem " + obj.name + ")",
             60 + 40 * timeout * ranges);
        std::vector<MetricsUnit> units;
        for (auto& e : entries) units.push_back(MetricsUnit{[&e, &st] { e.seq->launch(st.stream); }, before, e.seq->size()});
        results = collect_metrics_batch(names, units, st.stream, metrics_only);
        if (results.front().outcome != Outcome::Passed) results.clear();  // each alone, below: it says why if it must
      }
      for (std::size_t i = results.size(); i < entries.size(); ++i) {
        ready(entries[i]);
        beat("metrics: profiling (problem " + obj.name + ")", 60 + 40 * timeout * entries[i].seq->size());
        Entry& e = entries[i];
        results.push_back(collect_metrics(names, [&] { e.seq->launch(st.stream); }, st.stream, prof.gates.metrics.launch,
                                          before, metrics_only));
      }
      turn->lock.reset();
      beat("metrics: checking where the kernels wrote (problem " + obj.name + ")", 60 + timeout);
      bufs->check_writes(st.stream);
      EVO_CUDA(cudaStreamSynchronize(st.stream));
      const std::vector<RegionFinding> wrote = bufs->write_findings();
      if (!wrote.empty()) {  // not one candidate's to say: none of them gets these figures
        std::string where;
        for (const auto& f : wrote) where += " " + f.text() + ";";
        where.pop_back();
        for (auto& r : results) {
          r = MetricsResult{};
          r.outcome = Outcome::Rejected;
          r.reason = "one of the " + std::to_string(entries.size()) + " kernels profiled together wrote where it may not:" + where;
        }
        *fatal = true;
      } else {
        bufs->idle(st.stream);
      }
      a.metrics = results.front();
      a.batch_metrics.assign(results.begin() + 1, results.end());
      a.seconds_metrics = seconds_since(phase_start);
      trace_span("metrics", track, phase_start, std::to_string(entries.size()) + " candidates");
      phase_seconds = nullptr;
    } else if (turn && turn->collect) {
      beat("metrics: inputs (problem " + obj.name + ")", 60 + timeout);
      const auto inputs_start = std::chrono::steady_clock::now();
      BufferSet& bufs = kept_buffers(prof, obj, job.config, st.stream);
      LaunchSequence seq(prof.launches(), ck, obj, job.config);
      // A profiling worker runs no GREEN: the objective's inputs come from the store, where the run
      // drew them ahead (drawing gemm_fp16's took its first collection on a GPU 0.22 s, call M).
      bufs.fill_inputs(0, 0, st.stream, inputs_store());
      for (std::size_t m = 0; m < cmods.size(); ++m) bufs.upload_symbols(*cmods[m], m == 0, st.stream);
      seq.pack(bufs);
      trace_span("metrics inputs", track, inputs_start);
      const auto& names = prof.gates.metrics.names.empty() ? default_metric_names() : prof.gates.metrics.names;
      // Each metric pass replays the kernel: give the step room for a few dozen passes. A unit of
      // several launches: the figures cover all, or the one gates.metrics.launch names.
      beat("metrics: profiling (problem " + obj.name + ")", 60 + 40 * timeout * seq.size());
      // Once per pass (user replay), each seeing what a FAST launch sees: inout buffers restored
      // and, unless the profile says otherwise, L2 flushed, outside the profiled range.
      const std::int64_t l2 = st.probe().l2_bytes;
      a.metrics = collect_metrics(
          names, [&] { seq.launch(st.stream); }, st.stream, prof.gates.metrics.launch, [&] {
            bufs.refill_inouts(false, st.stream);
            if (prof.gates.fast.flush_l2) flush_l2(l2, st.stream);
          },
          metrics_only);
      turn->lock.reset();
      beat("metrics: checking where the kernel wrote (problem " + obj.name + ")", 60 + timeout);
      bufs.check_writes(st.stream);
      EVO_CUDA(cudaStreamSynchronize(st.stream));
      const std::vector<RegionFinding> wrote = bufs.write_findings();
      if (!wrote.empty()) {  // as FAST's: the candidate is rejected, the process starts over
        a.fast.outcome = Outcome::Rejected;
        a.fast.reason = "wrote where it may not while its metrics were collected:";
        for (const auto& f : wrote) a.fast.reason += " " + f.text() + ";";
        a.fast.reason.pop_back();
        *fatal = true;
      } else {
        bufs.idle(st.stream);  // watched until its next use (gates/green.cpp checks it)
      }
      a.seconds_metrics = seconds_since(phase_start);
      trace_span("metrics", track, phase_start);
      phase_seconds = nullptr;
    }
  } catch (const CudaError& e) {
    if (phase_seconds) *phase_seconds = seconds_since(phase_start);
    a.outcome = Outcome::Crashed;
    a.message = std::string(cudaGetErrorString(e.code)) + " during " + (a.step.empty() ? "start-up" : a.step) + " (" +
                cudaGetErrorName(e.code) + " in " + e.call + ")";
    *fatal = e.sticky;
  } catch (const ReferenceError& e) {
    // The command or data reference could not answer: said as such, never as the candidate's verdict.
    if (phase_seconds) *phase_seconds = seconds_since(phase_start);
    a.outcome = Outcome::Skipped;
    a.reference_failed = true;
    a.message = e.what();
  } catch (const UserError& e) {
    // The environment or the profile, not the candidate: the coordinator raises it to the user.
    a.outcome = Outcome::Skipped;
    a.message = e.what();
  }
  return a;
}


// A fatal signal in the worker's own code (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) is evo's
// fault or the driver's, never the kernel's: say so on stderr, with the step, the call stack's
// addresses and where the executable is mapped (addr2line -e evo on the offsets names the lines),
// then die of the same signal so the coordinator sees it. Only async-signal-safe calls but
// backtrace, which was called once beforehand so that it does not allocate here.
void on_fatal_signal(int sig) {
  auto say = [](const char* s) { if (::write(2, s, std::strlen(s)) < 0) return; };
  say("evo worker: fatal signal ");
  char num[4] = {static_cast<char>('0' + sig / 10 % 10), static_cast<char>('0' + sig % 10), '\0', '\0'};
  say(sig >= 10 ? num : num + 1);
  say(" (");
  say(strsignal(sig));
  say(") during ");
  say(g_step);
  say("\n");
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, n, 2);
  const int maps = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (maps >= 0) {
    say("evo worker: mapped executable:\n");
    char buf[4096];
    ssize_t got;
    while ((got = ::read(maps, buf, sizeof buf)) > 0)
      if (::write(2, buf, static_cast<std::size_t>(got)) < 0) break;
    ::close(maps);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_fatal_signal_handlers() {
  void* warm[1];
  ::backtrace(warm, 1);  // loads libgcc's unwinder now, outside any handler
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, on_fatal_signal);
}

// The GPU as the coordinator numbers it (EVO_WORKER_GPU, set by WorkerClient), else the device.
int gpu_label(int device) {
  const char* g = std::getenv("EVO_WORKER_GPU");
  return g ? std::atoi(g) : device;
}

}  // namespace

bool write_frame(int fd, const std::string& payload) { return write_all(fd, encode_frame(payload)); }

namespace {
// Frames on in_fd/out_fd until "quit" or EOF (0), a malformed frame (2) or a dead context (3).
int serve_session(WorkerState& st, int in_fd, int out_fd) {
  // A coordinator gone while a kernel never returns: end this worker (ClientWatch).
  ClientWatch client(in_fd, [&st](const std::string& step) {
    std::fprintf(stderr, "evo worker: GPU %d: the run that asked for this job is gone and %s ran past its budget: "
                 "ending, so that the GPU is free\n", st.gpu_label, step.c_str());
    std::fflush(stderr);
    ::_exit(3);
  });
  FrameReader reader;
  char buf[65536];
  for (;;) {
    std::optional<std::string> frame;
    while (!(frame = reader.next())) {
      ssize_t n = ::read(in_fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return 0;  // the coordinator went away
      reader.feed(buf, static_cast<std::size_t>(n));
    }
    Json msg;
    try {
      msg = Json::parse(*frame);
    } catch (const Json::exception&) {
      return 2;
    }
    const std::string type = msg.value("type", "");
    if (type == "quit") return 0;
    if (type == "probe") {
      {
        TraceSpan span("probe the device", st.track());
        if (!write_frame(out_fd, device_to_json(st.probe()))) return 0;
      }
      // A worker that will measure makes its CUDA context and stream now, while the coordinator
      // starts its compile pool and compiles, instead of inside the first candidate's job (0.12 s
      // on one H200, 0.38 s when four start at once: call Q). A failure here is the first job's to say.
      if (msg.value("warm", false) && st.probe().present) {
        {
          TraceSpan span("context and stream made ahead", st.track());
          try {
            st.ready();
          } catch (const std::exception&) {
          }
        }
        // The profile its jobs will name, read now while the coordinator compiles: the first
        // job's 15-21 ms otherwise, on each lane's first candidate and on the run's end metrics.
        // One that does not load is left to that job to say.
        const std::string path = msg.value("profile", std::string());
        if (!path.empty()) {
          TraceSpan span("profile read ahead", st.track(), path);
          try {
            st.profile(path);
          } catch (const std::exception&) {
          }
        }
      }
      continue;
    }
    if (type != "job") return 2;
    bool fatal = false;
    WorkerAnswer a;
    TraceSpan span("job", st.track(),
                   tracing() ? msg.value("config", Json::object()).dump() : std::string());
    client.job_started(120);  // before the first beat: the coordinator's budget for a start
    try {
      a = run_job(st, job_from_json(*frame),
                  [&](const std::string& step, double budget) {
                    client.step(step, budget);
                    write_frame(out_fd, Json{{"type", "beat"}, {"step", step}, {"budget_s", budget}}.dump());
                  },
                  &fatal);
    } catch (const UserError& e) {
      a.outcome = Outcome::Skipped;
      a.message = e.what();
    }
    client.job_ended();
    Json j = Json::parse(answer_to_json(a));
    j["exiting"] = fatal;
    if (!write_frame(out_fd, j.dump())) return 0;
    // A dead context poisons every later call: exit, the client starts a fresh worker.
    if (fatal) return 3;
  }
}
}  // namespace

int worker_main(int device, int in_fd, int out_fd, WorkerRole role) {
  install_fatal_signal_handlers();
  JoinMetricsAhead join_at_return;
  WorkerState st;
  st.device = device;
  st.gpu_label = gpu_label(device);
  st.profiler = role == WorkerRole::Profile;
  return serve_session(st, in_fd, out_fd);
}

int worker_listen(int device, const std::string& socket_path, double idle_exit_s, WorkerRole role) {
  install_fatal_signal_handlers();
  ::signal(SIGPIPE, SIG_IGN);  // a run that went away is an error on write, not this worker's end
  WorkerState st;
  st.device = device;
  st.profiler = role == WorkerRole::Profile;
  const int own_label = gpu_label(device);
  const std::string own_trace = [] {
    const char* e = std::getenv("EVO_TRACE");
    return std::string(e ? e : "");
  }();
  st.gpu_label = own_label;
  // Once CUPTI has been loaded in a process, FAST's medians of short kernels there read higher
  // (sdpa_fp8, 4-20 us: +0.3 %; gemm_fp16: none) and GREEN is slower; taking its hooks out again
  // does not undo it (docs/results/scale10, section 3). So a measuring worker never loads it (runs
  // send their metrics to the GPU's profiling worker, unless EVO_METRICS_PROCESS=0); a profiling
  // worker makes its set-up now and keeps it.
  // EVO_METRICS_PREWARM=0: a profiling worker makes CUPTI's tables at its first job, not now.
  const char* prewarm_env = std::getenv("EVO_METRICS_PREWARM");
  const bool profiler = role == WorkerRole::Profile;
  const bool prewarm = profiler && !(prewarm_env && std::string(prewarm_env) == "0");
  // Everything a run would wait for, made now: the driver's start, the context and stream, and for
  // a profiling worker CUPTI's tables for the default metrics. A device that is not there is said
  // to whoever probes.
  // A pool's profiling worker also enables its session and pays its first Start now
  // (keep_profiler_s), and keeps it between runs for that long.
  const double keep_profiler = profiler ? keep_profiler_s() : 0;
  if (st.probe().present) {
    try {
      st.ready();
      if (prewarm) prepare_metrics({});
      if (prewarm && keep_profiler > 0) prime_profiler_session(st);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "evo worker: GPU %d: %s\n", own_label, e.what());
    }
  }
  auto end_profiler_session = [&] {
    try {
      end_metrics_session();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "evo worker: GPU %d: ending the profiler session: %s\n", own_label, e.what());
    }
  };
  auto idle_since = std::chrono::steady_clock::now();

  const int ls = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (ls < 0 || socket_path.size() >= sizeof addr.sun_path) {
    std::fprintf(stderr, "evo worker: cannot listen on %s\n", socket_path.c_str());
    return 2;
  }
  // Bound under a name of its own, then renamed: the path appears only once the socket listens.
  // Bound in place, a run that found the path between bind() and listen() was refused and went
  // without the pool (a rare CI failure of PoolWorker.APoolWorkerThatDiesMidRunIsReplacedByTheRunsOwn);
  // the rename also replaces a stale socket of a worker that died without a moment of no path.
  std::string bound_path = socket_path + "." + std::to_string(::getpid());
  if (bound_path.size() >= sizeof addr.sun_path) bound_path = socket_path;  // no room for the suffix: in place
  std::memcpy(addr.sun_path, bound_path.c_str(), bound_path.size() + 1);
  ::unlink(bound_path.c_str());  // in place: the supervisor's path, a stale socket of a worker that died
  const mode_t old_mask = ::umask(0077);  // only this user's runs attach
  const int bound = ::bind(ls, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  ::umask(old_mask);
  if (bound != 0 || ::listen(ls, 16) != 0 ||
      (bound_path != socket_path && ::rename(bound_path.c_str(), socket_path.c_str()) != 0)) {
    std::fprintf(stderr, "evo worker: cannot listen on %s: %s\n", socket_path.c_str(), std::strerror(errno));
    if (bound == 0 && bound_path != socket_path) ::unlink(bound_path.c_str());
    return 2;
  }

  // One run at a time: a connection that comes while another run is served is told so within a
  // second and closed, so its run starts a worker of its own instead of waiting.
  std::mutex m;
  std::condition_variable cv;
  std::deque<int> waiting;
  bool serving = false;
  std::thread([&] {
    for (;;) {
      const int c = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      std::unique_lock<std::mutex> lock(m);
      // A run that ended a moment ago may still be dropping what it kept: the next one waits for
      // that (milliseconds), not for a run that is going on.
      cv.wait_for(lock, std::chrono::seconds(1), [&] { return !serving && waiting.empty(); });
      if (serving || !waiting.empty()) {
        lock.unlock();
        write_frame(c, pool_hello_json(true));
        ::close(c);
        continue;
      }
      waiting.push_back(c);
      cv.notify_all();
    }
  }).detach();

  for (;;) {
    int c = -1;
    {
      std::unique_lock<std::mutex> lock(m);
      auto have = [&] { return !waiting.empty(); };
      // Idle with a kept profiler session: woken when it is due to end, then waiting on.
      const auto since_idle = std::chrono::duration<double>(std::chrono::steady_clock::now() - idle_since).count();
      bool got = false;
      if (keep_profiler > 0 && metrics_session_kept() && (idle_exit_s <= 0 || keep_profiler < idle_exit_s)) {
        got = cv.wait_for(lock, std::chrono::duration<double>(std::max(0.0, keep_profiler - since_idle)), have);
        if (!got) {
          lock.unlock();
          end_profiler_session();  // no run came: other processes may profile here again
          continue;
        }
      } else if (idle_exit_s > 0) {
        got = cv.wait_for(lock, std::chrono::duration<double>(std::max(0.0, idle_exit_s - since_idle)), have);
      } else {
        cv.wait(lock, have);
        got = true;
      }
      if (!got) {
        ::unlink(socket_path.c_str());
        std::fflush(nullptr);
        ::_exit(0);  // idle: the supervisor lets it go
      }
      c = waiting.front();
      waiting.pop_front();
      serving = true;
    }
    int code = 0;
    if (write_frame(c, pool_hello_json(false, profiler && metrics_session_kept()))) {
      const std::optional<std::string> first = read_frame(c, 10);
      const Json attach = first ? Json::parse(*first, nullptr, false) : Json();
      if (attach.is_object() && attach.value("type", "") == "release-profiler") {
        // Another evo process profiles on this GPU without the pool (EVO_POOL=0, another build):
        // the kept session would fail its every collection.
        end_profiler_session();
        write_frame(c, R"({"type":"released"})");
      } else if (attach.is_object() && attach.value("type", "") == "attach") {
        st.gpu_label = attach.value("gpu", own_label);
        set_trace_file(attach.value("trace", std::string()));
        const std::string green_times = attach.value("green_times", std::string());
        if (green_times.empty()) ::unsetenv("EVO_GREEN_TIMES");
        else ::setenv("EVO_GREEN_TIMES", green_times.c_str(), 1);
        code = serve_session(st, c, c);
      }
    }
    ::close(c);
    std::fflush(nullptr);
    if (code == 3) ::_exit(3);  // a dead context: the supervisor starts a fresh worker
    // Between runs: nothing GREEN kept and no profile read. A profiler session stays only in the
    // profiling worker, for keep_profiler_s: one left enabled holds the GPU's profiler, and every
    // other process's collection there then fails (call H: all 60 of a run without the pool while
    // the pool was idle), unless it asks the pool to let go first, as evo's do.
    try {
      if (!(profiler && keep_profiler > 0)) end_metrics_session();  // a profiling worker keeps it a while
      if (st.stream) {
        forget_run_state(st.stream);
        EVO_CUDA(cudaStreamSynchronize(st.stream));
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "evo worker: GPU %d: after a run: %s\n", own_label, e.what());
      std::fflush(nullptr);
      ::_exit(3);
    }
    st.profiles.clear();
    st.gpu_label = own_label;
    set_trace_file(own_trace);
    ::unsetenv("EVO_GREEN_TIMES");
    std::lock_guard<std::mutex> lock(m);
    serving = false;
    idle_since = std::chrono::steady_clock::now();
    cv.notify_all();
  }
}

int worker_one_shot(int device, const std::string& job_file) {
  std::ifstream in(job_file);
  if (!in) throw UserError(job_file + ": cannot read the job file");
  std::stringstream s;
  s << in.rdbuf();
  JoinMetricsAhead join_at_return;
  WorkerState st;
  st.device = device;
  st.gpu_label = gpu_label(device);
  bool fatal = false;
  WorkerAnswer a = run_job(st, job_from_json(s.str()), nullptr, &fatal);
  std::cout << answer_to_json(a) << std::endl;
  return a.outcome == Outcome::Passed ? 0 : 1;
}

// ---- the coordinator's side ----

WorkerClient::WorkerClient(std::string evo_binary, int device, std::string visible, WorkerRole role)
    : binary_(std::move(evo_binary)), device_(device), visible_(std::move(visible)), role_(role) {
  // A write to a worker that just died must be an error we handle, not a signal that ends evo.
  ::signal(SIGPIPE, SIG_IGN);
}

WorkerClient::~WorkerClient() { stop(false); }

void WorkerClient::start() {
  if (!pool_tried_) {
    pool_tried_ = true;
    PoolAttach a = attach_pool_worker(binary_, visible_, device_, role_);
    pool_note_ = a.refused;
    if (a.fd >= 0) {
      to_fd_ = a.fd;
      from_fd_ = ::dup(a.fd);
      ::fcntl(from_fd_, F_SETFD, FD_CLOEXEC);
      pid_ = a.pid;
      pooled_ = true;
      profiler_warm_ = a.profiler_warm;
      ++starts_;
      return;
    }
  }
  profiler_warm_ = false;
  // A profiling worker of its own: an idle pool's kept session on this GPU would fail its collections.
  if (role_ == WorkerRole::Profile) release_pool_profiler(visible_);
  int to[2], from[2];
  if (::pipe2(to, O_CLOEXEC) != 0) throw UserError(std::string("worker: pipe: ") + std::strerror(errno));
  if (::pipe2(from, O_CLOEXEC) != 0) {
    ::close(to[0]), ::close(to[1]);
    throw UserError(std::string("worker: pipe: ") + std::strerror(errno));
  }
  const std::string dev = visible_.empty() ? std::to_string(device_) : "0";
  // The child's environment, made here: between fork and exec only async-signal-safe calls (this
  // process has threads, one of which may hold malloc's lock).
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e)
    if ((visible_.empty() || std::strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) != 0) && std::strncmp(*e, "EVO_WORKER_GPU=", 15) != 0)
      env_text.emplace_back(*e);
  if (!visible_.empty()) env_text.push_back("CUDA_VISIBLE_DEVICES=" + visible_);
  env_text.push_back("EVO_WORKER_GPU=" + std::to_string(device_));
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string b = binary_, w = "worker", d = "--device", dv = dev, r = "--role", rv = "profile";
  char* argv[] = {b.data(), w.data(), d.data(), dv.data(), role_ == WorkerRole::Profile ? r.data() : nullptr, rv.data(),
                  nullptr};
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(to[0]), ::close(to[1]), ::close(from[0]), ::close(from[1]);
    throw UserError(std::string("worker: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::dup2(to[0], 0);
    ::dup2(from[1], 1);
    // Nothing else of the coordinator's (compile-pool sockets, the database) stays open in the worker.
    if (::close_range(3, ~0U, 0) != 0)
      for (int fd = 3; fd < 65536; ++fd) ::close(fd);
    // Ctrl-C goes to the whole process group: the coordinator decides what an interrupt means
    // (finish the candidate in flight), so the worker must not die of it mid-measurement.
    ::signal(SIGINT, SIG_IGN);
    ::execve(argv[0], argv, envp.data());
    std::fprintf(stderr, "evo worker: cannot run %s: %s\n", binary_.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::close(to[0]);
  ::close(from[1]);
  pid_ = pid;
  to_fd_ = to[1];
  from_fd_ = from[0];
  if (starts_++ > 0) ++restarts_;
}

void WorkerClient::ask_to_quit() {
  if (pid_ <= 0 || to_fd_ < 0) return;
  write_all(to_fd_, encode_frame(R"({"type":"quit"})"));
  ::close(to_fd_);
  to_fd_ = -1;
}

void WorkerClient::stop(bool force) {
  if (pid_ <= 0) return;
  if (pooled_) {
    // Not this process's child: the watchdog's SIGKILL ends it (the pool starts a fresh one); a
    // quit only ends the session, and the worker waits for the next run.
    if (force) ::kill(pid_, SIGKILL);
    else ask_to_quit();
    if (to_fd_ >= 0) ::close(to_fd_);
    if (from_fd_ >= 0) ::close(from_fd_);
    to_fd_ = from_fd_ = -1;
    pid_ = -1;
    pooled_ = false;
    return;
  }
  if (!force) ask_to_quit();
  if (to_fd_ >= 0) ::close(to_fd_);
  to_fd_ = -1;
  int status = 0;
  bool reaped = false;
  if (!force) {
    // Context teardown takes a moment; after 10 s the worker is stuck.
    for (int i = 0; i < 10000 && !reaped; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) reaped = true;
      else ::usleep(1000);
    }
  }
  if (!reaped) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (from_fd_ >= 0) ::close(from_fd_);
  from_fd_ = -1;
  pid_ = -1;
}

std::optional<std::string> WorkerClient::exchange(const std::string& payload, double first_budget_s, Outcome* failure,
                                                  std::string* why, std::string* step) {
  // The worker may have exited since the last job (it was killed, or its context died): start one.
  if (pid_ > 0 && !pooled_) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      ::close(to_fd_), ::close(from_fd_);
      to_fd_ = from_fd_ = -1;
    }
  }
  if (pid_ <= 0) start();
  *step = "starting the worker";
  if (!write_all(to_fd_, encode_frame(payload))) {
    stop(true);
    start();
    if (!write_all(to_fd_, encode_frame(payload))) {
      stop(true);
      *failure = Outcome::Crashed;
      *why = "worker died before it read the job";
      return std::nullopt;
    }
  }
  FrameReader reader;
  auto deadline_budget = first_budget_s;
  auto since = std::chrono::steady_clock::now();
  char buf[65536];
  for (;;) {
    while (auto frame = reader.next()) {
      Json j = Json::parse(*frame, nullptr, false);
      if (j.is_discarded()) continue;
      const std::string type = j.value("type", "");
      if (type == "beat") {
        *step = j.value("step", "");
        deadline_budget = j.value("budget_s", first_budget_s);
        since = std::chrono::steady_clock::now();
        continue;
      }
      if (j.value("exiting", false)) stop(false);
      return *frame;
    }
    const double left = deadline_budget - seconds_since(since);
    if (left <= 0) {
      stop(true);
      *failure = Outcome::Timeout;
      char b[64];
      std::snprintf(b, sizeof b, "%g", deadline_budget);
      *why = "no progress within " + std::string(b) + " s during " + *step + " (worker killed)";
      return std::nullopt;
    }
    pollfd p{from_fd_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = ::read(from_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 && pooled_) {  // how it died is the pool's to see: it closed the connection unasked
      const pid_t dead = pid_;
      ::close(to_fd_), ::close(from_fd_);
      to_fd_ = from_fd_ = -1;
      pid_ = -1;
      pooled_ = false;
      *failure = Outcome::Crashed;
      *why = "the pool's worker (pid " + std::to_string(dead) + ") closed its connection during " + *step;
      return std::nullopt;
    }
    if (n <= 0) {
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      const pid_t dead = pid_;
      pid_ = -1;
      ::close(to_fd_), ::close(from_fd_);
      to_fd_ = from_fd_ = -1;
      *failure = Outcome::Crashed;
      std::string how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                                                  strsignal(WTERMSIG(status)) + ")"
                                            : "exited with status " + std::to_string(WEXITSTATUS(status));
      *why = "worker " + how + " during " + *step + " (pid " + std::to_string(dead) + ")";
      if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && ::access(binary_.c_str(), X_OK) != 0)
        *why += " (cannot run " + binary_ + ": " + std::strerror(errno) + ")";  // the exec failed
      return std::nullopt;
    }
    reader.feed(buf, static_cast<std::size_t>(n));
  }
}

DeviceInfo WorkerClient::probe(double timeout_s, bool warm, const std::string& profile_path) {
  // Before evo relies on the worker at all: a binary that is not there is said by name (a job's
  // worker that cannot start is that candidate's crash, and the search goes on).
  if (::access(binary_.c_str(), X_OK) != 0)
    throw UserError("the GPU worker binary " + binary_ + " cannot be run: " + std::strerror(errno));
  Outcome failure = Outcome::Crashed;
  std::string why, step;
  Json ask{{"type", "probe"}};
  if (warm) ask["warm"] = true;
  if (warm && !profile_path.empty()) ask["profile"] = profile_path;
  auto frame = exchange(ask.dump(), timeout_s, &failure, &why, &step);
  if (!frame) throw UserError("the GPU worker (" + binary_ + " worker) did not answer the device probe: " + why);
  DeviceInfo d = device_from_json(*frame);
  if (d.present || visible_.empty()) return d;
  stop(false);  // not a restart after a fault: the same first worker, seeing every device
  visible_.clear();
  starts_ = 0;
  return probe(timeout_s, warm, profile_path);
}

WorkerAnswer WorkerClient::run(const WorkerJob& job, double timeout_s) {
  Outcome failure = Outcome::Crashed;
  std::string why, step;
  auto frame = exchange(job_to_json(job), timeout_s, &failure, &why, &step);
  if (frame) return answer_from_json(*frame);
  WorkerAnswer a;
  a.outcome = failure;
  a.message = why;
  a.step = step;
  a.worker_lost = failure == Outcome::Crashed;  // the watchdog's kill is a Timeout, the kernel's fault an answer
  return a;
}

WorkerAnswer WorkerClient::run_measured(const WorkerJob& job, double timeout_s,
                                        const std::function<void(const std::string&)>& said) {
  const WorkerAnswer first = run(job, timeout_s);
  if (!first.worker_lost) return first;
  if (said)
    said("GPU " + std::to_string(device_) + ": " + first.message + ": not the kernel's verdict, its candidate is measured "
         "again on a fresh worker");
  WorkerAnswer again = run(job, timeout_s);
  if (!again.worker_lost) return again;
  again.message += "; the first " + first.message + " (it died twice)";
  if (said) said("GPU " + std::to_string(device_) + ": " + again.message + ": recorded as the candidate's crash");
  return again;
}

}  // namespace evo
