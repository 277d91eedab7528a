// The GPU evaluator: one candidate's way through the house (DESIGN.md), in this order:
//   A. compile (submit: compile pool, cache first)                       the loop's thread
//   B. static gate, with the limits of the device the worker found       (collect)
//   ---- measure(), on the loop's GPU thread ----
//   C. one worker job: GREEN on every problem, then FAST and metrics on the objective problem
//   D. metric gate over the metrics the worker collected
//   E. compute-sanitizer memcheck over the GREEN launches (options.sanitize)
// The coordinator never touches CUDA: the compile pool forks, and a dead context must not be ours.
#include "engine/gpu_evaluator.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "engine/buffers.h"  // defines: store_fills_ahead
#include "engine/compiler.h"
#include "engine/error.h"
#include "engine/reference.h"  // defines: ReferenceError
#include "engine/space.h"      // defines: set_device_sms, uses_device_sms
#include "engine/trace.h"
#include "engine/trial_store.h"
#include "engine/worker.h"
#include "gates/metrics.h"
#include "gates/sanitize.h"
#include "gates/static_gate.h"

namespace evo {
namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// A thread asked to stop and joined when it goes out of scope (a throwing constructor's members
// included): `body` looks at the flag between steps.
class StoppableThread {
 public:
  StoppableThread() = default;
  explicit StoppableThread(std::function<void(const std::atomic<bool>&)> body)
      : stop_(std::make_unique<std::atomic<bool>>(false)),
        t_([body = std::move(body), stop = stop_.get()] { body(*stop); }) {}
  StoppableThread& operator=(StoppableThread&& o) noexcept {
    finish();
    stop_ = std::move(o.stop_);
    t_ = std::move(o.t_);
    return *this;
  }
  ~StoppableThread() { finish(); }

 private:
  void finish() {
    if (stop_) *stop_ = true;
    if (t_.joinable()) t_.join();
  }
  std::unique_ptr<std::atomic<bool>> stop_;
  std::thread t_;
};

}  // namespace

int visible_gpus_guess() {
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    int n = 0;
    std::stringstream in(v);
    for (std::string item; std::getline(in, item, ',');) n += !item.empty();
    return n;
  }
  std::error_code ec;
  int n = 0;
  for (std::filesystem::directory_iterator it("/proc/driver/nvidia/gpus", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return n;
}

// CUDA_VISIBLE_DEVICES's entry, else the device's index where the host's listing has it
// (CUDA_VISIBLE_DEVICES indices follow the same CUDA_DEVICE_ORDER as ordinals).
std::string visible_entry(int device) {
  const char* see_all = std::getenv("EVO_WORKERS_SEE_ALL");
  if (device < 0 || (see_all && std::string(see_all) == "1")) return "";
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::vector<std::string> items;
    std::stringstream in(v);
    for (std::string item; std::getline(in, item, ',');)
      if (!item.empty()) items.push_back(item);
    return device < static_cast<int>(items.size()) ? items[static_cast<std::size_t>(device)] : "";
  }
  return device < visible_gpus_guess() ? std::to_string(device) : "";
}

namespace {

// The run's end profiles its best on one GPU per this many candidates (collect_metrics_of).
constexpr std::size_t kEndMetricsPerGpu = 16;

class GpuEvaluator : public Evaluator {
  struct Lane;

 public:
  GpuEvaluator(const Profile& profile, const GpuEvaluatorOptions& options)
      : profile_(profile),
        options_(options),
        binary_(options.evo_binary.empty() ? std::filesystem::read_symlink("/proc/self/exe").string()
                                           : options.evo_binary),
        cache_(options.cache_dir.empty() ? default_cache_dir() : options.cache_dir) {
    // GREEN's inputs drawn into the trial store while the workers start (0.4 s), instead of by
    // each worker before its first candidate (engine/buffers.h: store_fills_ahead).
    // Stored data has its own inputs; EVO_FILLS_AHEAD=0 leaves them all to the workers (to compare).
    const char* ahead = std::getenv("EVO_FILLS_AHEAD");
    if (!profile_.reference_data && !(ahead && std::string(ahead) == "0"))
      fills_ahead_ = StoppableThread([this](const std::atomic<bool>& stop) {
        TraceSpan span("GREEN's inputs drawn ahead", "coordinator: inputs ahead");
        try {
          store_fills_ahead(profile_, Config(profile_.baseline.begin(), profile_.baseline.end()),
                            TrialStore(cache_.dir() / "reference", nullptr), &stop);
        } catch (const std::exception& e) {  // the workers draw what is missing, as before
          spdlog::debug("inputs ahead of the workers: {}", e.what());
        }
      });
    // One worker process per device, each probed before anything is compiled or stored.
    // -1 alone means every device the host lists. All are probed at once: a probe is a process
    // start and the driver's initialisation, which each worker does for its own device alone
    // (visible_entry). How many there are: CUDA_VISIBLE_DEVICES's entries or the host's listing;
    // where neither says, a worker that sees every device drops or adds some. A worker whose
    // device does not answer when seen alone is asked again seeing them all.
    const bool all = options.devices == std::vector<int>{-1};
    std::vector<int> devices = options.devices.empty() || all ? std::vector<int>{0} : options.devices;
    if (all)
      for (int more = 1; more < visible_gpus_guess(); ++more) devices.push_back(more);
    std::vector<std::unique_ptr<Lane>> probed;
    auto probe_all = [&](std::size_t from) {
      std::vector<std::exception_ptr> errors(devices.size());
      std::vector<std::thread> threads;
      for (std::size_t k = from; k < devices.size(); ++k) {
        probed.push_back(std::make_unique<Lane>(binary_, devices[k], visible_entry(devices[k])));
        probed.back()->profile_path = profile_.path.string();  // read by its workers while they wait
      }
      for (std::size_t k = from; k < devices.size(); ++k)
        threads.emplace_back([&, k] {
          try {
            probed[k]->info = probed[k]->worker.probe(120, /*warm=*/true, probed[k]->profile_path);
          } catch (...) {
            errors[k] = std::current_exception();
          }
        });
      for (auto& t : threads) t.join();
      for (std::size_t k = from; k < devices.size(); ++k)
        if (errors[k]) std::rethrow_exception(errors[k]);
    };
    const auto start_t = std::chrono::steady_clock::now();
    probe_all(0);
    if (all && probed.front()->worker.visible().empty()) {  // it sees every device: its count; no device 0: its probe says why
      const int count = probed.front()->info.present ? probed.front()->info.device_count : 1;
      while (static_cast<int>(devices.size()) > count) devices.pop_back(), probed.pop_back();  // guessed too many
      for (int more = static_cast<int>(devices.size()); more < count; ++more) devices.push_back(more);
    } else if (all) {  // the host listed a device the driver does not have (its worker, seeing all, counted fewer)
      while (devices.size() > 1 && !probed.back()->info.present && probed.back()->info.device_count > 0 &&
             devices.back() >= probed.back()->info.device_count)
        devices.pop_back(), probed.pop_back();
    }
    if (devices.size() > probed.size()) probe_all(probed.size());
    for (std::size_t k = 0; k < devices.size(); ++k) {
      const int d = devices[k];
      auto lane = std::move(probed[k]);
      if (!lane->info.present)
        throw UserError(devices.size() > 1 || d != 0 ? "GPU " + std::to_string(d) + ": " + lane->info.error
                                                     : "no CUDA device is present: " + lane->info.error);
      if (!lanes_.empty() && lane->info.cc != lanes_.front()->info.cc)
        throw UserError("--devices: GPU " + std::to_string(d) + " is " + lane->info.cc + ", GPU " +
                        std::to_string(lanes_.front()->device) + " is " + lanes_.front()->info.cc +
                        ": one run compiles for one architecture (run one evo per architecture)");
      if (!lanes_.empty() && lane->info.sm_count != lanes_.front()->info.sm_count && uses_device_sms(profile))
        throw UserError("--devices: GPU " + std::to_string(d) + " has " + std::to_string(lane->info.sm_count) +
                        " SMs, GPU " + std::to_string(lanes_.front()->device) + " " +
                        std::to_string(lanes_.front()->info.sm_count) + ", and profile " + profile.name +
                        "'s launch reads NUM_SMS: one value per run (run one evo per device model)");
      lanes_.push_back(std::move(lane));
    }
    trace_span("GPU workers started and probed", "coordinator", start_t);
    std::string pooled, notes;
    for (const auto& lane : lanes_) {
      if (lane->worker.pooled()) pooled += (pooled.empty() ? "" : ",") + std::to_string(lane->device);
      else if (!lane->worker.pool_note().empty()) notes += "; " + lane->worker.pool_note();
    }
    if (!pooled.empty())
      spdlog::info("GPU {}: the pool's warm worker{} (evo pool status)", pooled, pooled.find(',') == std::string::npos ? "" : "s");
    if (!notes.empty()) spdlog::info("{}: a worker of this run's own instead", notes.substr(2));
    const DeviceInfo& info_ = lanes_.front()->info;
    set_device_sms(info_.sm_count);  // NUM_SMS here as in the workers: features, keys, exports agree
    // The profile's arch when it is for this device (sm_90a on sm_90 keeps its wgmma), else the device's.
    if (!options.arch.empty()) arch_ = options.arch;
    else if (profile.arch.rfind(info_.cc, 0) == 0) arch_ = profile.arch;
    else arch_ = info_.cc;
    limits_ = arch_limits(arch_);
    for (const auto& l : lanes_) {  // the smallest device's limits hold on every one
      if (l->info.smem_per_block_optin > 0)
        limits_.shared_per_block_optin = std::min(limits_.shared_per_block_optin, l->info.smem_per_block_optin);
      if (l->info.regs_per_sm > 0) limits_.registers_per_sm = std::min(limits_.registers_per_sm, l->info.regs_per_sm);
    }
    {
      TraceSpan span("compile pool started", "coordinator");
      pool_ = std::make_unique<CompilePool>(options.jobs, cache_.dir(), options.compile_timeout_s);
    }
    // A kernel reference compiles beside the first candidates; a command or data one compiles nothing.
    reference_requests_ = reference_requests(profile_, arch_);
    for (const auto& r : reference_requests_) reference_tickets_.push_back(pool_->submit(r));
    // Each GPU's profiling worker (engine/worker.h, WorkerRole) where this run collects metrics,
    // started once its lane has answered its first job: its process and context are then made while
    // candidates are judged, not in the run's end, and not while the measuring workers make their
    // own contexts (the driver's starts take turns across processes: eight at once held the first
    // candidates of a 4-GPU run back by 0.6 s, call G). CUPTI's set-up waits for its first
    // collection, when its lane waits too: made beside a lane that measures, it stalled both GPUs
    // of a run for 0.19 s three times (call I). A pool's was made before any run.
    // EVO_METRICS_PROCESS=0: metrics in the measuring worker, as before (to compare).
    const char* separate = std::getenv("EVO_METRICS_PROCESS");
    if (metrics_on() && !(separate && std::string(separate) == "0"))
      for (auto& lane : lanes_) lane->wants_profiler = true;
  }

  ~GpuEvaluator() override {
    TraceSpan span("GPU workers asked to quit and waited for", "coordinator");
    for (auto& l : lanes_) {  // their teardowns overlap; each lane then waits
      l->worker.ask_to_quit();
      if (l->profiler) l->metrics_worker().ask_to_quit();  // never started: nothing to ask
    }
    lanes_.clear();
  }

  std::string device() const override { return lanes_.front()->info.name; }
  std::size_t lanes() const override { return lanes_.size(); }
  std::string lane_device(std::size_t lane) const override { return lanes_.at(lane)->info.name; }
  void set_metrics_max_p50_us(double us) override { metrics_max_p50_us_.store(us); }
  void set_metrics_wait_max_p50_us(double us) override { metrics_wait_max_p50_us_.store(us); }
  void set_metrics_during_run(bool on) override { metrics_during_run_.store(on); }
  std::string driver() const override { return lanes_.front()->info.driver; }
  std::string build_key(const Config& c) const override {
    std::vector<std::string> keys;
    for (const auto& r : candidate_requests(profile_, c, arch_)) keys.push_back(cache_.key(r));
    return launch_build_key(keys);
  }
  std::size_t compile_slots() const override { return static_cast<std::size_t>(pool_->jobs()); }

  // A. compile: the pool answers cache hits at once and compiles the rest in its processes.
  // One request per template of the candidate's launches (one for most profiles).
  void submit(const Candidate& c) override {
    auto group = std::make_shared<Compiling>();
    group->candidate = c;
    group->requests = candidate_requests(profile_, c.config, arch_);
    for (const auto& r : group->requests) group->tickets.push_back(pool_->submit(r));
    for (auto t : group->tickets) compiling_.emplace(t, group);
  }

  double drop_unfinished() override {
    std::vector<std::uint64_t> tickets;
    for (const auto& [ticket, group] : compiling_) tickets.push_back(ticket);
    compiling_.clear();
    return pool_->cancel(tickets);
  }
  bool can_drop_unfinished() const override { return true; }
  std::vector<std::pair<Config, double>> still_compiling() const override {
    std::map<const Compiling*, double> longest;  // a candidate of several templates: its longest compile
    for (const auto& [ticket, s] : pool_->running())
      if (auto it = compiling_.find(ticket); it != compiling_.end())
        longest[it->second.get()] = std::max(longest[it->second.get()], s);
    std::vector<std::pair<Config, double>> out;
    for (const auto& [group, s] : longest) out.emplace_back(group->candidate.config, s);
    return out;
  }

  std::vector<Prepared> collect(double timeout_s) override {
    std::vector<Prepared> out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, timeout_s));
    while (!compiling_.empty()) {
      // Until a candidate is whole, wait up to the deadline; after, take only what has already arrived.
      const double wait = out.empty() ? std::max(0.0, std::chrono::duration<double>(
                                                          deadline - std::chrono::steady_clock::now()).count())
                                      : 0;
      auto r = next_build(wait);
      if (!r) break;
      auto it = compiling_.find(r->first);
      if (it == compiling_.end()) {  // a synchronous build() of the same config waits for it
        arrived_.emplace(r->first, std::move(r->second));
        continue;
      }
      std::shared_ptr<Compiling> group = it->second;
      compiling_.erase(it);
      group->got.emplace(r->first, std::move(r->second));
      if (group->got.size() < group->tickets.size()) continue;
      out.push_back(prepare(group->candidate, group->build(profile_.launches())));
    }
    return out;
  }

  // C. GREEN, FAST, metrics (this runs on the loop's GPU thread: it touches the worker, never the pool).
  Evaluation measure(const Prepared& p, std::size_t lane_index) override {
    Lane& lane = *lanes_.at(lane_index);
    Evaluation e = p.eval;
    WorkerJob job = job_for(p.candidate.config, e.build);
    if (profile_.reference_is_kernel()) {
      const Build& ref = *reference_;  // built by prepare() before any candidate needs the GPU
      job.reference_cubin = ref.cubin_path;
      job.reference_name = ref.lowered_name;
      job.reference_kernels = ref.kernels;
    } else {
      job.host_reference = true;
    }
    // Shared by every worker of the host through the compile cache (job_for): the trials' inputs
    // (drawn once, read by the others; a kernel reference's outputs too with EVO_REFERENCE_STORE=1,
    // gates/green.h) and the lock that keeps metrics passes from overlapping.
    const char* share = std::getenv("EVO_REFERENCE_STORE");
    job.share_kernel_outputs = share && std::string(share) == "1";
    job.metrics_lock = metrics_lock();
    job.green = true;
    job.fast = true;
    const bool metrics = metrics_on() && metrics_during_run_.load();
    job.metrics = metrics && !lane.wants_profiler;  // else the lane's profiling worker collects them, below
    if (profile_.gates.metrics.thresholds.empty()) {  // a metric gate needs every candidate's metrics
      job.metrics_max_p50_us = metrics_max_p50_us_.load();
      job.metrics_wait_max_p50_us = metrics_wait_max_p50_us_.load();
    }
    WorkerAnswer a = lane.worker.run_measured(job, 60 + profile_.gates.timeout_s,
                                               [](const std::string& line) { spdlog::warn("{}", line); });
    for (const auto& w : a.warnings) spdlog::warn("GPU {}: {}", lane.device, w);
    // The command or data reference could not answer: the profile's problem, no verdict on this
    // candidate. Raised to the run (which stops, saying why), never recorded as a GREEN failure.
    if (a.reference_failed) throw ReferenceError(a.message);
    if (a.outcome == Outcome::Skipped) throw LaneLost("GPU " + std::to_string(lane.device) + ": " + a.message);
    if (lane.wants_profiler && !lane.profiler) lane.start_profiler();
    if (metrics && lane.wants_profiler) a = with_metrics(lane, job, std::move(a));
    e.green = a.green;
    e.fast = a.fast;
    e.metrics = a.metrics;
    if (metrics_on() && !metrics) e.metrics.reason = kMetricsDeferred;
    e.seconds_green = a.seconds_green;
    e.seconds_fast = a.seconds_fast;
    e.seconds_metrics = a.seconds_metrics;
    if (a.outcome == Outcome::Crashed || a.outcome == Outcome::Timeout) {
      e.status = a.outcome == Outcome::Crashed ? Status::Crashed : Status::Timeout;
      e.message = std::string(a.outcome == Outcome::Crashed ? "crash: " : "timeout: ") + a.message;
      // The phase it died in carries the verdict, so a reader of that gate sees why it has no figures.
      Outcome* phase = a.step.rfind("fast", 0) == 0      ? &e.fast.outcome
                       : a.step.rfind("metrics", 0) == 0 ? &e.metrics.outcome
                                                         : &e.green.outcome;
      *phase = a.outcome;
      if (phase == &e.green.outcome) e.green.reason = a.message;
      if (phase == &e.fast.outcome) e.fast.reason = a.message;
      if (phase == &e.metrics.outcome) e.metrics.reason = a.message;
      return e;
    }
    // A kernel that wrote out of bounds only while timed or profiled fails GREEN all the same:
    // where it may write is part of being correct.
    if (e.green.outcome == Outcome::Passed && e.fast.outcome == Outcome::Rejected) {
      e.green.outcome = Outcome::Rejected;
      e.green.reason = e.fast.reason;
    }
    if (e.green.outcome != Outcome::Passed) {
      e.status = Status::GreenFailed;
      e.message = "GREEN " + std::string(outcome_name(e.green.outcome)) + ": " + e.green.reason;
      return e;
    }
    const double base = lane.baseline_p50_us.load();
    if (base > 0 && e.fast.outcome == Outcome::Passed && e.fast.p50_us > 0) e.speedup = base / e.fast.p50_us;

    // D. metric gate
    if (metrics_on()) {
      e.metric_gate = metric_gate(e.metrics, profile_.gates.metrics.thresholds);
      if (e.metric_gate.outcome == Outcome::Rejected) {
        e.status = Status::MetricRejected;
        e.message = "metric gate: " + e.metric_gate.reason;
        return e;
      }
    } else {
      e.metrics.reason = "metrics off";
      e.metric_gate.reason = "metrics off";
    }

    // E. sanitize
    if (options_.sanitize) {
      e.sanitize = sanitize_build(p.candidate.config, e.build);
      if (e.sanitize.outcome == Outcome::Rejected || e.sanitize.outcome == Outcome::Timeout) {
        e.status = Status::SanitizeFailed;
        e.message = "memcheck: " + std::to_string(e.sanitize.errors) + " error(s): " + e.sanitize.first_message;
        return e;
      }
    } else {
      e.sanitize.first_message = "not requested";
    }
    e.status = Status::Measured;
    e.message = "p50 " + fmt("%.2f", e.fast.p50_us) + " us" +
                (e.speedup > 0 ? ", speedup " + fmt("%.3f", e.speedup) + "x over the baseline" : "");
    return e;
  }

  // What the measuring worker collected after FAST before profiling workers existed, by the same
  // rules (near the run's best so far, the host's turns: take_metrics_turn), now by the lane's
  // profiling worker on the same GPU while the lane waits for it. A crash or hang there is the
  // candidate's, in its metrics phase, as it was; a profiling worker that cannot serve at all is
  // said as the metrics' reason.
  WorkerAnswer with_metrics(Lane& lane, const WorkerJob& measured, WorkerAnswer a) {
    if (a.outcome != Outcome::Passed || a.fast.outcome != Outcome::Passed) return a;
    if (measured.green && a.green.outcome != Outcome::Passed) return a;
    WorkerJob m = measured;
    m.green = false;
    m.fast = false;
    m.metrics = true;
    m.timed_p50_us = a.fast.p50_us;
    WorkerJob rules = m;  // the rules but the turn: nothing started for a candidate they leave out
    rules.metrics_lock.clear();
    if (MetricsTurn t = take_metrics_turn(rules, a.fast.p50_us, {}); !t.collect) {
      a.metrics.outcome = Outcome::Skipped;
      a.metrics.reason = t.reason;
      return a;
    }
    WorkerAnswer p = lane.metrics_worker().run_measured(m, 60 + profile_.gates.timeout_s,
                                                         [](const std::string& line) { spdlog::warn("{}", line); });
    for (const auto& w : p.warnings) spdlog::warn("GPU {}: {}", lane.device, w);
    a.seconds_metrics = p.seconds_metrics;
    if (p.outcome == Outcome::Skipped) {
      a.metrics.outcome = Outcome::Skipped;
      a.metrics.reason = "GPU " + std::to_string(lane.device) + "'s profiling worker: " + p.message;
      return a;
    }
    if (p.outcome != Outcome::Passed) {
      a.outcome = p.outcome;
      a.message = p.message;
      a.step = p.step;
      return a;
    }
    if (p.fast.outcome == Outcome::Rejected) {  // wrote where it may not while profiled
      a.fast.outcome = Outcome::Rejected;
      a.fast.reason = p.fast.reason;
    }
    a.metrics = p.metrics;
    if (p.metrics.outcome == Outcome::Passed) lane.profiled = true;
    return a;
  }

  // `evo eval`: the speedup is against the baseline timed by the same worker, before the candidate.
  Evaluation evaluate(const Candidate& c) override {
    if (lanes_.front()->baseline_p50_us.load() <= 0 && !baseline_timed_) time_baseline(0);
    return Evaluator::evaluate(c);
  }

  void prepare_baseline_timing() override {
    if (!baseline_build_) baseline_build_ = build(profile_.baseline);
  }

  Timing time_baseline(std::size_t lane_index) override {
    Lane& lane = *lanes_.at(lane_index);
    if (!baseline_build_) prepare_baseline_timing();  // `evo eval`, on its only thread
    const Build& b = *baseline_build_;
    Timing t;
    t.problem = profile_.objective;
    if (!b.ok) {
      t.outcome = Outcome::Skipped;
      t.reason = "baseline does not compile: " + first_error_line(b.log);
      return t;
    }
    WorkerJob job = job_for(profile_.baseline, b);
    job.green = false;
    job.fast = true;
    WorkerAnswer a = lane.worker.run_measured(job, 60 + profile_.gates.timeout_s,
                                               [](const std::string& line) { spdlog::warn("{}", line); });
    if (a.reference_failed) throw ReferenceError(a.message);  // a data reference's inputs that cannot be read
    if (a.outcome == Outcome::Skipped) throw LaneLost("GPU " + std::to_string(lane.device) + ": " + a.message);
    if (a.outcome != Outcome::Passed) {
      t.outcome = a.outcome;
      t.reason = "baseline: " + a.message;
    } else {
      t = a.fast;
    }
    baseline_timed_ = true;
    if (t.outcome == Outcome::Passed && t.p50_us > 0) lane.baseline_p50_us.store(t.p50_us);  // later speedups: the latest
    return t;
  }

  std::optional<MetricsResult> collect_metrics(const Candidate& c, double* seconds) override {
    MetricsAlone a = std::move(collect_metrics_of({c}).front());
    if (seconds) *seconds = a.seconds;
    return a.metrics;
  }

  // Metrics passes alone (the run's end: nothing else is measuring), on as many GPUs as pays
  // (kEndMetricsPerGpu): each lane takes the next candidate when its last is done. Each candidate
  // passed GREEN and FAST when it was recorded, and its build is in the cache. Several GPUs do not
  // take turns at the host's metrics lock here: two passes at once are each about 1.6x slower,
  // not 2x (docs/results/scale6 section 2).
  std::vector<MetricsAlone> collect_metrics_of(const std::vector<Candidate>& cs) override {
    std::vector<MetricsAlone> out(cs.size());
    if (!metrics_on() || cs.empty()) return out;
    std::vector<std::optional<WorkerJob>> jobs(cs.size());
    for (std::size_t i = 0; i < cs.size(); ++i) {  // here: the compile pool is the loop thread's
      Build b = build(cs[i].config);
      if (!b.ok) continue;
      WorkerJob job = job_for(cs[i].config, b);
      job.metrics_lock = lanes_.size() == 1 ? metrics_lock() : "";  // one GPU: nothing to overlap; it keeps to the turns
      job.green = false;
      job.fast = false;
      job.metrics = true;
      jobs[i] = std::move(job);
    }
    // One task a batch: candidates whose buffers are alike, as many as the profiler's ranges hold,
    // profiled in one collection (collect_metrics_batch: CUPTI's calls take turns host-wide, so
    // ten alone cost as much on four GPUs as on one). EVO_END_METRICS_BATCH=0: each alone (to compare).
    const char* batch_env = std::getenv("EVO_END_METRICS_BATCH");
    const std::size_t per_candidate = std::max<std::size_t>(1, profile_.launches().size());
    const std::size_t most = (batch_env && std::string(batch_env) == "0") || profile_.gates.metrics.launch
                                 ? 1
                                 : std::max<std::size_t>(1, kMetricsBatchRanges / per_candidate);
    std::vector<std::optional<Config>> built(cs.size());
    for (std::size_t i = 0; i < cs.size(); ++i)
      if (jobs[i]) built[i] = cs[i].config;
    const std::vector<std::vector<std::size_t>> tasks =  // the fastest first
        batches_by_buffers(profile_, profile_.objective_problem(), built, most);
    auto run_task = [&](std::size_t l, const std::vector<std::size_t>& task, auto& self) -> void {
      Lane& lane = *lanes_[l];
      WorkerJob job = *jobs[task.front()];
      for (std::size_t k = 1; k < task.size(); ++k) {
        const WorkerJob& o = *jobs[task[k]];
        job.metrics_batch.push_back(MetricsCandidate{o.config, o.candidate_cubin, o.candidate_name, o.candidate_kernels});
      }
      WorkerAnswer a = lane.metrics_worker().run_measured(job, 60 + profile_.gates.timeout_s * task.size(),
                                                           [](const std::string& line) { spdlog::warn("{}", line); });
      if (a.outcome == Outcome::Skipped) throw LaneLost("GPU " + std::to_string(lane.device) + ": " + a.message);
      if (a.outcome != Outcome::Passed && task.size() > 1) {
        // Which of them? Each alone says (on a fresh worker where that one died).
        for (std::size_t i : task) self(l, std::vector<std::size_t>{i}, self);
        return;
      }
      const bool whole = a.batch_metrics.size() + 1 == task.size();
      for (std::size_t k = 0; k < task.size(); ++k) {
        MetricsAlone& r = out[task[k]];
        r.lane = static_cast<int>(l);
        r.seconds = a.seconds_metrics / static_cast<double>(task.size());
        if (a.outcome != Outcome::Passed) {  // it passed every gate before: say what happened, keep its verdict
          MetricsResult mr;
          mr.outcome = a.outcome;
          mr.reason = "metrics at the run's end: " + a.message;
          r.metrics = mr;
        } else if (k == 0) {
          r.metrics = a.metrics;
        } else if (whole) {
          r.metrics = a.batch_metrics[k - 1];
        } else {
          MetricsResult mr;
          mr.outcome = Outcome::Skipped;
          mr.reason = "metrics at the run's end: the worker answered " + std::to_string(a.batch_metrics.size() + 1) +
                      " of " + std::to_string(task.size()) + " candidates";
          r.metrics = mr;
        }
        if (r.metrics && r.metrics->outcome == Outcome::Passed) lane.profiled = true;
      }
    };
    std::mutex m;
    std::vector<std::size_t> todo;  // task indices, taken from the back: the fastest first
    for (std::size_t t = tasks.size(); t-- > 0;) todo.push_back(t);
    std::vector<std::exception_ptr> lost(lanes_.size());
    auto take = [&](std::size_t& i) {
      std::lock_guard<std::mutex> g(m);
      if (todo.empty()) return false;
      i = todo.back();
      todo.pop_back();
      return true;
    };
    auto work = [&](std::size_t l) {
      std::size_t t = 0;
      while (take(t)) {
        try {
          run_task(l, tasks[t], run_task);
        } catch (...) {  // this GPU can no longer measure: its task goes back to the others
          std::lock_guard<std::mutex> g(m);
          todo.push_back(t);
          lost[l] = std::current_exception();
          return;
        }
      }
    };
    // One GPU for each kEndMetricsPerGpu of the candidates: each worker's first collection costs
    // 0.17 s alone and 0.57-0.70 s when four start at once (4 x H200, call Q: the first profiler
    // start after enabling takes a turn host-wide), against 26 ms a collection after it. Ten on one
    // GPU took 0.43-0.5 s, on four 0.8 s (docs/results/scale8). Every GPU where each has a profiling
    // worker past its first collection in this run, or the pool's with its session kept (its
    // session enabled: 25-35 ms a collection after it), a task each.
    bool warm = true;
    for (auto& lane : lanes_) {
      if (lane->profiler) lane->metrics_worker();  // its start joined: whether it came warm from the pool
      warm = warm && lane->wants_profiler && lane->profiled;
    }
    std::size_t candidates = 0;
    for (const auto& t : tasks) candidates += t.size();
    const std::size_t n =
        warm ? std::min(lanes_.size(), todo.size())
             : std::min({lanes_.size(), todo.size(),
                         std::max<std::size_t>(1, (candidates + kEndMetricsPerGpu - 1) / kEndMetricsPerGpu)});
    std::vector<std::thread> threads;
    for (std::size_t l = 1; l < n; ++l) threads.emplace_back(work, l);
    work(0);
    for (auto& t : threads) t.join();
    // A candidate handed back after the other lanes had finished: a GPU still working takes it.
    for (std::size_t l = 0; l < n && !todo.empty(); ++l)
      if (!lost[l]) work(l);
    for (std::size_t l = 0; l < lost.size(); ++l) {
      if (!lost[l]) continue;
      try {
        std::rethrow_exception(lost[l]);
      } catch (const LaneLost& e) {
        if (!todo.empty()) throw;  // no GPU was left to take its candidates
        spdlog::warn("metrics at the run's end: {}; the other GPUs took its candidates", e.what());
      }
    }
    return out;
  }

  SanitizeVerdict sanitize(const Candidate& c) override {
    Build b = build(c.config);
    if (!b.ok) {
      SanitizeVerdict v;
      v.first_message = "does not compile: " + first_error_line(b.log);
      return v;
    }
    return sanitize_build(c.config, b);
  }

 private:
  bool metrics_on() const { return options_.metrics && profile_.gates.metrics.enabled; }
  // The host-wide lock metrics passes take turns at, in the compile cache shared by the host's
  // workers. EVO_METRICS_CONCURRENT=1: none, every GPU profiles when it needs to (an experiment's
  // switch; slower on 4 x H200: docs/results/scale4/ section 1).
  std::string metrics_lock() const {
    const char* concurrent = std::getenv("EVO_METRICS_CONCURRENT");
    if (concurrent && std::string(concurrent) == "1") return "";
    return (cache_.dir() / "locks" / "metrics.lock").string();
  }

  // One configuration's Build, now (the baseline's re-timing, sanitize): the pool compiles it
  // (or answers from the cache) beside whatever the pipeline has submitted.
  Build build(const Config& c) {
    const std::vector<CompileRequest> rs = candidate_requests(profile_, c, arch_);
    std::vector<std::uint64_t> tickets;
    for (const auto& r : rs) tickets.push_back(pool_->submit(r));
    std::vector<Build> bs;
    for (auto t : tickets) bs.push_back(wait_for(t));
    return launch_build(profile_.launches(), rs, bs);
  }

  // The candidate's part of a worker job: its kernel, or one per launch.
  WorkerJob job_for(const Config& c, const Build& b) const {
    WorkerJob job;
    job.profile_path = profile_.path.string();
    job.builtin_cache = (cache_.dir() / "builtin").string();
    job.objective = profile_.objective;
    job.config = c;
    job.candidate_cubin = b.cubin_path;
    job.candidate_name = b.lowered_name;
    job.candidate_kernels = b.kernels;
    // The host's trial store: GREEN's inputs, and FAST's and the metrics pass's (a profiling worker
    // or a FAST-only job reads them there instead of drawing them: 0.2 s of gemm_fp16's, call N).
    job.reference_cache = (cache_.dir() / "reference").string();
    return job;
  }

  Build wait_for(std::uint64_t ticket) {
    while (!arrived_.count(ticket)) {
      auto r = pool_->wait_any();
      if (!r) throw UserError("compile pool: request " + std::to_string(ticket) + " was lost");
      arrived_.emplace(r->first, std::move(r->second));
    }
    Build b = std::move(arrived_.at(ticket));
    arrived_.erase(ticket);
    return b;
  }

  // The next finished compile: one a synchronous build() left behind, or the pool's.
  std::optional<std::pair<std::uint64_t, Build>> next_build(double timeout_s) {
    for (auto it = arrived_.begin(); it != arrived_.end(); ++it)
      if (compiling_.count(it->first)) {
        auto r = std::make_pair(it->first, std::move(it->second));
        arrived_.erase(it);
        return r;
      }
    return pool_->wait_any(timeout_s);
  }

  // B. the static gate, with the limits of the device the worker found.
  Prepared prepare(const Candidate& c, Build b) {
    Prepared p;
    p.candidate = c;
    Evaluation& e = p.eval;
    e.config = c.config;
    e.config_hash = config_hash(c.config);
    e.origin = c.origin;
    e.build = std::move(b);
    // The compiler's own seconds (kept in the cache), not the wait: what the compile cost a core.
    e.seconds_compile = e.build.from_cache ? 0 : e.build.compile_ms / 1000;
    if (!e.build.ok) {
      e.status = Status::CompileError;
      e.message = "compile error: " + first_error_line(e.build.log);
      return p;
    }
    e.static_verdict = static_gate(profile_, c.config, e.build, limits_);
    if (e.static_verdict.outcome == Outcome::Rejected) {
      e.status = Status::StaticRejected;
      e.message = "static gate: " + e.static_verdict.reason;
      return p;
    }
    if (profile_.reference_is_kernel()) reference();  // before measure() needs it, in this thread (the pool is not the GPU thread's)
    p.needs_gpu = true;
    return p;
  }

  const Build& reference() {
    if (!reference_) {
      TraceSpan span("the reference kernel's build waited for", "coordinator");
      std::vector<Build> bs;
      for (auto t : reference_tickets_) bs.push_back(wait_for(t));
      Build r = launch_build(profile_.reference_launches(), reference_requests_, bs);
      if (!r.ok)
        throw UserError(profile_.reference.source.string() + ": reference kernel does not compile: " +
                        first_error_line(r.log));
      reference_ = std::move(r);
    }
    return *reference_;
  }

  SanitizeVerdict sanitize_build(const Config& c, const Build& b) {
    WorkerJob job = job_for(c, b);
    job.green = true;  // candidate launches only: memcheck judges the accesses, not the answer
    job.guard_zones = false;  // exactly each buffer's bytes, so that a read one past the end is memcheck's
    job.seeds = {profile_.gates.green.seeds.front()};
    job.trials = 1;
    const std::string file = (std::filesystem::temp_directory_path() /
                              ("evo-sanitize-" + std::to_string(::getpid()) + "-" + config_hash(c) + ".json"))
                                 .string();
    {
      std::ofstream out(file);
      out << job_to_json(job);
      if (!out) throw UserError(file + ": cannot write the sanitize job");
    }
    SanitizeRun r;
    r.evo_binary = binary_;
    r.device = lanes_.front()->device;
    r.job_file = file;
    r.timeout_s = 120 + 30 * profile_.gates.timeout_s;
    SanitizeVerdict v = run_sanitize(r);
    std::filesystem::remove(file);
    return v;
  }

  Profile profile_;
  GpuEvaluatorOptions options_;
  std::string binary_;
  // One device: its worker process (crash and hang isolation, restarted on its own device) and
  // the baseline as last timed there, which its candidates' speedups divide.
  struct Lane {
    Lane(const std::string& binary, int d, std::string visible)
        : binary(binary), device(d), worker(binary, d, std::move(visible)) {}
    ~Lane() {
      if (profiler_start.joinable()) profiler_start.join();
    }
    std::string binary;
    int device;
    std::string profile_path;  // the run's, read by each of its workers at their warm probe
    WorkerClient worker;  // GREEN and FAST
    DeviceInfo info;
    std::atomic<double> baseline_p50_us{0};
    // Metrics passes on the same GPU, in a process of their own (none wanted: `worker` collects them).
    bool wants_profiler = false;
    std::unique_ptr<WorkerClient> profiler;
    std::thread profiler_start;  // its warm probe, joined at its first use
    bool profiled = false;       // it has collected in this run: its profiler's first start is paid
    void start_profiler() {
      profiler = std::make_unique<WorkerClient>(binary, device, worker.visible(), WorkerRole::Profile);
      profiler_start = std::thread([p = profiler.get(), path = profile_path] {
        try {
          p->probe(120, /*warm=*/true, path);
        } catch (const std::exception&) {  // its first job says what is wrong
        }
      });
    }
    WorkerClient& metrics_worker() {
      if (wants_profiler && !profiler) start_profiler();
      if (profiler_start.joinable()) {
        profiler_start.join();
        if (profiler->profiler_warm()) profiled = true;  // the pool's, its first Start paid at the pool's start
      }
      return profiler ? *profiler : worker;
    }
  };
  std::vector<std::unique_ptr<Lane>> lanes_;
  CompileCache cache_;
  std::string arch_;
  ArchLimits limits_;
  std::unique_ptr<CompilePool> pool_;
  std::atomic<double> metrics_max_p50_us_{0};     // set by the loop's thread, read by measure()
  std::atomic<double> metrics_wait_max_p50_us_{0};  // the same
  std::atomic<bool> metrics_during_run_{true};      // set before the run's first candidate
  std::atomic<bool> baseline_timed_{false};
  std::optional<Build> baseline_build_;  // prepare_baseline_timing: built once, then read by the lanes' threads
  // A submitted candidate: one pool ticket per request (per template of its launches).
  struct Compiling {
    Candidate candidate;
    std::vector<CompileRequest> requests;
    std::vector<std::uint64_t> tickets;
    std::map<std::uint64_t, Build> got;
    Build build(const std::vector<const KernelSpec*>& launches) const {
      std::vector<Build> bs;
      for (auto t : tickets) bs.push_back(got.at(t));
      return launch_build(launches, requests, bs);
    }
  };
  std::map<std::uint64_t, std::shared_ptr<Compiling>> compiling_;  // pool ticket -> its candidate
  std::map<std::uint64_t, Build> arrived_;        // finished before anyone asked
  std::vector<CompileRequest> reference_requests_;  // empty: a command or data reference
  std::vector<std::uint64_t> reference_tickets_;
  std::optional<Build> reference_;
  StoppableThread fills_ahead_;  // last: stopped and joined before anything it reads is destroyed
};

}  // namespace

std::unique_ptr<Evaluator> make_gpu_evaluator(const Profile& profile, const GpuEvaluatorOptions& options) {
  return std::make_unique<GpuEvaluator>(profile, options);
}

}  // namespace evo
