#include "gates/green.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>

#include "engine/files.h"  // defines: read_file
#include "engine/hash.h"
#include "engine/launch.h"
#include "engine/reference.h"
#include "engine/trial_store.h"

namespace evo {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Adds the wall time of its scope to a step's total (nothing when no totals are asked for).
class StepTimer {
 public:
  StepTimer(std::map<std::string, double>* totals, const char* step)
      : totals_(totals), step_(step), t0_(std::chrono::steady_clock::now()) {}
  ~StepTimer() {
    if (totals_) (*totals_)[step_] += seconds_since(t0_);
  }

 private:
  std::map<std::string, double>* totals_;
  const char* step_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace

namespace {

// The reference's outputs for one (problem, seed, trial) are the same for every candidate of a
// run: the inputs are drawn from (seed, trial, buffer name) alone. The worker keeps them in device
// memory, so a candidate costs its own launch and one comparison kernel per output, and nothing
// crosses PCIe but the comparison's figures. The key holds everything the reference's result
// depends on: its module, the problem's sizes, the input shapes (a profile may size inputs with
// knobs), seed and trial.
class ReferenceMemo {
 public:
  // In device_outputs() order; each a TrustedCopy, checked after every candidate.
  using Outputs = std::vector<std::shared_ptr<TrustedCopy>>;
  const Outputs* find(const std::string& key) const {
    auto it = outputs_.find(key);
    return it == outputs_.end() ? nullptr : &it->second;
  }
  const Outputs& store(const std::string& key, const std::string& where, const std::vector<DeviceTensor>& out,
                       cudaStream_t s) {
    std::size_t bytes = 0;
    for (const auto& t : out) bytes += static_cast<std::size_t>(t.elements) * dtype_bytes(t.dtype);
    if (bytes_ + bytes > kept_bytes_bound(kFloor, 0.125)) outputs_.clear(), bytes_ = 0;
    Outputs kept;
    for (const auto& t : out)
      kept.push_back(TrustedCopy::from_device("evo's reference output " + t.name + " (" + where + ")", t.data,
                                              static_cast<std::size_t>(t.elements) * dtype_bytes(t.dtype), s));
    bytes_ += bytes;
    return outputs_[key] = std::move(kept);
  }
  // A command or data reference's answer, or one read from the trial store (in device_outputs() order).
  const Outputs& store_host(const std::string& key, const std::string& where, const std::vector<HostTensor>& out,
                            cudaStream_t s) {
    std::size_t bytes = 0;
    for (const auto& t : out) bytes += t.bytes.size();
    if (bytes_ + bytes > kept_bytes_bound(kFloor, 0.125)) outputs_.clear(), bytes_ = 0;
    Outputs kept;
    for (const auto& t : out)
      kept.push_back(TrustedCopy::from_host("evo's reference output " + t.name + " (" + where + ")", t.bytes.data(),
                                            t.bytes.size(), region_checksum(t.bytes.data(), t.bytes.size()), s));
    bytes_ += bytes;
    return outputs_[key] = std::move(kept);
  }
  void forget() { outputs_.clear(), bytes_ = 0; }

 private:
  static constexpr std::size_t kFloor = std::size_t(2) << 30;  // device bytes
  std::map<std::string, Outputs> outputs_;
  std::size_t bytes_ = 0;
};
// Never destroyed: device memory is released with the worker's context, and a static destructor
// calling cudaFree after the runtime has shut down would fail.
ReferenceMemo& reference_memo() {
  static ReferenceMemo* memo = new ReferenceMemo;
  return *memo;
}

// The buffers GREEN launches into, kept for the worker's life per (profile, problem, buffer
// shapes): allocating and freeing them (seven buffers with their guard zones per problem for
// sdpa_fp8, each cudaFree a device-wide sync) cost more than the launches. A candidate whose
// knobs size scratch differently gets its own; past the bound every kept set is freed.
struct Bench {
  std::unique_ptr<BufferSet> bufs;
  std::vector<DeviceComparison> comparisons;  // one per compared buffer
};
class Benches {
 public:
  Bench& get(const Profile& prof, const Problem& p, const Config& c, cudaStream_t s, bool guard_zones) {
    const std::string key = buffer_shapes_key(prof, p, c) + (guard_zones ? "" : "|no guard zones");
    if (auto it = benches_.find(key); it != benches_.end()) {
      it->second.bufs->configure(c);
      return it->second;
    }
    Bench b;
    b.bufs = std::make_unique<BufferSet>(prof, p, c, s, guard_zones);
    const std::size_t bytes = b.bufs->device_bytes();
    if (bytes_ + bytes > kept_bytes_bound(kKeptBufferSetsFloor, kKeptBufferSetsShare)) benches_.clear(), bytes_ = 0;
    bytes_ += bytes;
    return benches_[key] = std::move(b);
  }
  // After a candidate wrote where it may not: its guard zones and buffers are no longer as made.
  void forget() { benches_.clear(), bytes_ = 0; }
  // Every kept set that is idle (BufferSet::idle), checked at once (a sync): a store that passed
  // every guard zone of its own buffers and landed in another problem's is found here.
  std::vector<RegionFinding> check_idle(cudaStream_t s) {
    for (auto& [key, b] : benches_) b.bufs->check_idle(s);
    EVO_CUDA(cudaStreamSynchronize(s));
    std::vector<RegionFinding> out;
    for (auto& [key, b] : benches_)
      for (auto& f : b.bufs->idle_findings()) out.push_back(std::move(f));
    return out;
  }

 private:
  std::map<std::string, Bench> benches_;
  std::size_t bytes_ = 0;
};
Benches& benches() {
  static Benches* b = new Benches;  // never destroyed, as the memo
  return *b;
}

// What a kernel reference's memo key says before the seed and the trial: the same for every trial
// of a problem within one candidate's GREEN (References keeps it; built per trial it was 18 us a
// trial, 0.7 ms of sdpa_fp8's 37 trials, twice: docs/results/scale17).
std::string reference_memo_prefix(const GreenRun& r, const Problem& p) {
  std::string k;
  for (const Module* m : r.reference_modules) k += m->path() + "|";
  for (const Kernel& kernel : r.reference) k += kernel.name() + "|";
  k += r.profile->path.string() + "|" + p.name;
  for (const auto& [name, v] : p.sizes) k += "|" + name + "=" + std::to_string(v);
  for (const auto& b : r.profile->buffers) {
    if (!b.filled_per_trial()) continue;
    k += "|" + b.name + ":";
    for (auto d : buffer_shape(b, r.profile->kernel, p, r.config)) k += std::to_string(d) + ",";
  }
  return k;
}

// A module's cubin, hashed once per process (its path in the compile cache is named by the key of
// the template text, defines and options it was built from; the content is what runs).
std::map<std::string, std::string>& module_digests() {
  static auto* digests = new std::map<std::string, std::string>;
  return *digests;
}
const std::string& module_digest(const Module& m) {
  auto& digests = module_digests();
  auto it = digests.find(m.path());
  if (it == digests.end()) {
    const std::optional<std::string> bytes = read_file(m.path());
    it = digests.emplace(m.path(), bytes ? sha256_hex(*bytes) : "unreadable:" + m.path()).first;
  }
  return it->second;
}

// The key of a kernel reference's stored outputs for one trial (engine/trial_store.h).
std::string stored_outputs_key(const GreenRun& r, const Problem& p, std::uint64_t seed, int trial) {
  std::vector<std::string> modules, entries;
  for (const Module* m : r.reference_modules)
    modules.push_back(std::filesystem::path(m->path()).filename().string() + ":" + module_digest(*m));
  for (const Kernel& k : r.reference) entries.push_back(k.name());
  return reference_outputs_key(*r.profile, p, r.config, r.device, modules, entries, seed, trial);
}

// The output and inout buffers as stored: names, dtypes, shapes (and, downloaded, their bytes).
std::vector<HostTensor> output_shapes(const BufferSet& bufs) {
  std::vector<HostTensor> out;
  for (const auto& t : bufs.device_outputs()) out.push_back(HostTensor{t.name, t.dtype, t.shape, {}});
  return out;
}
std::vector<HostTensor> download_outputs(const BufferSet& bufs, cudaStream_t s) {
  std::vector<HostTensor> out = output_shapes(bufs);
  const auto dev = bufs.device_outputs();
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].bytes.resize(static_cast<std::size_t>(dev[i].elements) * dtype_bytes(dev[i].dtype));
    EVO_CUDA(cudaMemcpyAsync(out[i].bytes.data(), dev[i].data, out[i].bytes.size(), cudaMemcpyDeviceToHost, s));
  }
  EVO_CUDA(cudaStreamSynchronize(s));
  return out;
}

using Trial = GreenTrial;
std::string where_text(const Problem& p, const Trial& t) {
  return "problem " + p.name + ", seed " + std::to_string(t.seed) + ", trial " + std::to_string(t.trial);
}

// Runs f; a CUDA failure in it says which step of which trial it was.
template <class F>
auto in_step(const std::string& what, const std::string& where, F f) {
  try {
    return f();
  } catch (const CudaError& e) {
    throw CudaError(e.code, e.call + " during " + what + " (" + where + ")", e.sticky);
  }
}

// Where GREEN's expected outputs come from: the worker's memo (device memory); else the trial
// store (another worker of the host made them); else made here, and stored for the others.
class References {
 public:
  References(const GreenRun& r, const TrialStore* store, Heartbeat beat)
      : r_(r), prof_(*r.profile), store_(store), beat_(std::move(beat)) {}

  const ReferenceMemo::Outputs* find(const Problem& p, const Trial& t) const {
    return reference_memo().find(memo_key(p, t));
  }
  bool all_found(const Problem& p, const std::vector<Trial>& ts) const {
    return std::all_of(ts.begin(), ts.end(), [&](const Trial& t) { return find(p, t) != nullptr; });
  }

  // Every trial of `ts` into the memo, those another worker is making waited for. `bufs` and
  // `ref` are problem p's, left filled for the trial handled last.
  void get(const Problem& p, BufferSet& bufs, LaunchSequence& ref, const std::vector<Trial>& ts) {
    std::vector<Trial> missing;
    for (const auto& t : ts)
      if (!find(p, t)) missing.push_back(t);
    if (!store_ || (!r_.host_reference && !r_.share_kernel_outputs)) {  // inputs from the store all the same
      for (const auto& t : missing) make(p, bufs, ref, t, "");
      return;
    }
    std::vector<std::string> keys;
    for (const auto& t : missing)
      keys.push_back(r_.host_reference ? "evo-command-claim/1|" + reference_key(prof_, p, t.seed, t.trial)
                                       : stored_outputs_key(r_, p, t.seed, t.trial));
    share_work(
        *store_, keys, [&](std::size_t i) { return have(p, bufs, missing[i], keys[i]); },
        [&](std::size_t i) { make(p, bufs, ref, missing[i], keys[i]); },
        [&](std::size_t i) {
          beat_("green: waiting for another worker's reference outputs (" + where_text(p, missing[i]) + ")",
                60 + prof_.gates.timeout_s);
        });
  }

 private:
  // Stored by another worker: read back, checked against this worker's own inputs.
  bool have(const Problem& p, BufferSet& bufs, const Trial& t, const std::string& key) {
    if (find(p, t)) return true;
    if (r_.host_reference || !store_->has_outputs(key)) return false;  // a command's results: its own cache
    fill(p, bufs, t);
    std::optional<StepTimer> reading(std::in_place, r_.step_seconds, "references_read");
    auto outs = store_->read_outputs(key, output_shapes(bufs), bufs.inputs_digest());
    if (!outs) return false;
    in_step("uploading stored reference outputs", where_text(p, t),
            [&] { reference_memo().store_host(memo_key(p, t), where_text(p, t), *outs, r_.stream); });
    if (r_.tally) ++r_.tally->read;
    return true;
  }

  void make(const Problem& p, BufferSet& bufs, LaunchSequence& ref, const Trial& t, const std::string& key) {
    const std::string key_here = memo_key(p, t);
    if (r_.host_reference) {
      const double budget = 60 + (prof_.reference_command ? prof_.reference_command->timeout_s : prof_.gates.timeout_s);
      beat_("green: reference " + std::string(prof_.reference_command ? "command" : "data") + " (" + where_text(p, t) + ")",
            budget);
      std::vector<HostTensor> outs = reference_outputs(prof_, p, t.seed, t.trial, r_.reference_cache);
      in_step("reference", where_text(p, t), [&] { reference_memo().store_host(key_here, where_text(p, t), outs, r_.stream); });
    } else {
      fill(p, bufs, t);
      in_step("reference launch", where_text(p, t), [&] {
        std::optional<StepTimer> launching(std::in_place, r_.step_seconds, "references_launch");
        ref.pack(bufs);
        for (const Module* m : r_.reference_modules) bufs.upload_symbols(*m, false, r_.stream);
        bufs.poison_outputs(r_.stream);
        beat_("green: reference launch (" + where_text(p, t) + ")", prof_.gates.timeout_s * ref.size());
        ref.launch(r_.stream);
        EVO_CUDA(cudaStreamSynchronize(r_.stream));
        launching.reset();
        StepTimer storing(r_.step_seconds, "references_store");
        reference_memo().store(key_here, where_text(p, t), bufs.device_outputs(), r_.stream);
        if (store_ && !key.empty()) store_->write_outputs(key, download_outputs(bufs, r_.stream), bufs.inputs_digest());
      });
    }
    if (r_.tally) ++r_.tally->made;
  }

  void fill(const Problem& p, BufferSet& bufs, const Trial& t) {
    in_step("filling inputs", where_text(p, t), [&] {
      StepTimer filling(r_.step_seconds, "references_fill");
      beat_("green: inputs (" + where_text(p, t) + ")", 60 + prof_.gates.timeout_s);
      bufs.fill_inputs(t.seed, t.trial, r_.stream, store_);
    });
  }

  // The memo's key of one trial; its problem's prefix built once for this candidate.
  std::string memo_key(const Problem& p, const Trial& t) const {
    if (r_.host_reference) return "host|" + reference_key(prof_, p, t.seed, t.trial);
    auto it = prefixes_.find(&p);
    if (it == prefixes_.end()) it = prefixes_.emplace(&p, reference_memo_prefix(r_, p)).first;
    return it->second + "|seed=" + std::to_string(t.seed) + "|trial=" + std::to_string(t.trial);
  }

  const GreenRun& r_;
  const Profile& prof_;
  const TrialStore* store_;
  Heartbeat beat_;
  mutable std::map<const Problem*, std::string> prefixes_;
};

std::string findings_text(const std::vector<RegionFinding>& fs) {
  std::string t;
  for (const auto& f : fs) t += (t.empty() ? "" : "; ") + f.text();
  return t;
}

// Every device copy and kept buffer set, checked at once (a sync): what a far store may have hit.
std::vector<RegionFinding> check_everything_kept(const GreenRun& r) {
  StepTimer timer(r.step_seconds, "integrity");
  std::vector<RegionFinding> found = check_trusted_copies(r.stream);
  for (auto& f : benches().check_idle(r.stream)) found.push_back(std::move(f));
  return found;
}
// After a finding in any of them: dropped (where else the store went is not known), to be made
// again from verified bytes; the flush buffer is kept, zeroed again.
void forget_everything_kept(cudaStream_t s) {
  forget_fill_copies();
  reference_memo().forget();
  benches().forget();  // their buffers hold the damaged fills too
  restore_zeroed_copies(s);
}

// C. After the candidate's last launch: evo's own device copies as they were. A write that
// passed every guard zone (far out of bounds) and landed in one is the candidate's verdict; the
// copies are dropped, to be made again from verified bytes.
GreenVerdict after_candidate(const GreenRun& r, GreenVerdict v) {
  const std::vector<RegionFinding> damaged =
      in_step("checking evo's device copies", "after the candidate", [&] { return check_everything_kept(r); });
  if (damaged.empty()) return v;
  forget_everything_kept(r.stream);
  if (r.wrote_out_of_bounds) *r.wrote_out_of_bounds = true;
  v.outcome = Outcome::Rejected;
  v.reason = "wrote into memory it was not given: " + findings_text(damaged) + (v.reason.empty() ? "" : "; " + v.reason);
  return v;
}

}  // namespace

void forget_run_state(cudaStream_t s) {
  forget_everything_kept(s);
  module_digests().clear();
}

BufferSet& kept_buffers(const Profile& p, const Problem& prob, const Config& c, cudaStream_t s, bool guard_zones) {
  return *benches().get(p, prob, c, s, guard_zones).bufs;
}

std::vector<GreenTrial> green_trials(const GreenRun& r, const Problem& p) {
  // Stored data has fixed inputs: every seed and trial would be the same one.
  const bool fixed = r.host_reference && r.profile->reference_data;
  const bool own = r.problem_trials && !fixed;
  const std::vector<std::uint64_t>& seeds = own && !p.green_seeds.empty() ? p.green_seeds : r.seeds;
  const int n = fixed ? 1 : own && p.green_trials > 0 ? p.green_trials : r.trials;
  std::vector<GreenTrial> ts;
  for (std::size_t i = 0; i < (fixed ? std::min<std::size_t>(1, seeds.size()) : seeds.size()); ++i)
    for (int trial = 0; trial < n; ++trial) ts.push_back({seeds[i], trial});
  return ts;
}

GreenVerdict run_green(const GreenRun& r) {
  const Profile& prof = *r.profile;
  const GreenThresholds& th = prof.gates.green;
  const double timeout = prof.gates.timeout_s;
  GreenVerdict v;
  bool any_skipped = false;
  auto beat = [&](const std::string& step, double budget) { if (r.beat) r.beat(step, budget); };
  const bool compares = !r.reference.empty() || r.host_reference;
  if (compares) v.reference = prof.reference_text();
  const bool fixed = r.host_reference && prof.reference_data;

  // 0. The device copies kept from earlier candidates: a FAST or metrics launch of one may have
  // written into them. Damaged ones are dropped (every copy, since where else it wrote is not
  // known) and made again below from verified bytes, saying so.
  const std::vector<RegionFinding> damaged =
      in_step("checking evo's device copies", "before the first launch", [&] { return check_everything_kept(r); });
  if (!damaged.empty()) {
    if (r.tally)
      r.tally->warnings.push_back(findings_text(damaged) + " before this candidate ran: every kept device copy made again");
    forget_everything_kept(r.stream);
  }

  // A. Every trial's reference outputs before the first candidate launch, shared with the other
  // workers of the host through the trial store: a trial another worker is making is left to it
  // and read back afterwards. Stored data has nothing to share.
  std::optional<TrialStore> store;
  if (compares && !fixed && !r.reference_cache.empty())
    store.emplace(r.reference_cache, [&](const std::string& w) {
      if (r.tally) r.tally->warnings.push_back(w);
    });
  References refs(r, store ? &*store : nullptr, beat);
  std::optional<StepTimer> phase_a;
  phase_a.emplace(r.step_seconds, "references");
  for (const Problem* p : r.problems) {
    const std::vector<Trial> all = green_trials(r, *p);
    if (refs.all_found(*p, all)) continue;  // every candidate after the first
    BufferSet& bufs = *benches().get(prof, *p, r.config, r.stream, r.guard_zones).bufs;
    {  // the problem's inputs, every trial's at once on every core, before they are needed one by one
      StepTimer timer(r.step_seconds, "references_fill");
      std::vector<std::pair<std::uint64_t, int>> trials;
      for (const Trial& t : all) trials.emplace_back(t.seed, t.trial);
      bufs.prepare_fills(trials, store ? &*store : nullptr,
                         [&] { beat("green: inputs, waiting for another process's draw (problem " + p->name + ")", 60 + timeout); });
    }
    if (!store) continue;  // made one by one in B
    LaunchSequence ref(r.reference.empty() ? std::vector<const KernelSpec*>{} : prof.reference_launches(),
                       r.reference, *p, {});
    refs.get(*p, bufs, ref, all);
    bufs.idle(r.stream);
  }

  phase_a.reset();
  // B. The candidate on every problem, seed and trial, against those outputs.
  for (const Problem* p : r.problems) {
    GreenResult res;
    res.problem = p->name;
    res.outcome = Outcome::Passed;
    std::optional<StepTimer> allocating;
    allocating.emplace(r.step_seconds, "buffers");
    Bench& bench = benches().get(prof, *p, r.config, r.stream, r.guard_zones);
    BufferSet& bufs = *bench.bufs;
    LaunchSequence cand(prof.launches(), r.candidate, *p, r.config);
    LaunchSequence ref(r.reference.empty() ? std::vector<const KernelSpec*>{} : prof.reference_launches(), r.reference,
                       *p, {});
    allocating.reset();
    // Kept idle since its last use and checked clean before this candidate's first launch (0.):
    // a change now is a store of one of this candidate's launches on another problem.
    if (bufs.is_idle()) {
      bufs.check_idle(r.stream);
      EVO_CUDA(cudaStreamSynchronize(r.stream));
      const std::vector<RegionFinding> landed = bufs.idle_findings();
      if (!landed.empty()) {
        res.outcome = Outcome::Rejected;
        res.reason = "wrote into memory it was not given: " + findings_text(landed);
        if (r.wrote_out_of_bounds) *r.wrote_out_of_bounds = true;
        benches().forget();
        v.problems.push_back(res);
        v.outcome = Outcome::Rejected;
        v.reason = "problem " + res.problem + ": " + res.reason;
        return after_candidate(r, v);
      }
    }
    bool forgotten = false;  // its buffers were freed: not to be touched again

    const std::vector<Trial> all = green_trials(r, *p);
    for (std::size_t i = 0; i < all.size() && res.outcome == Outcome::Passed; ++i) {
      const Trial& t = all[i];
      const std::string where = where_text(*p, t);
      in_step("filling inputs", where, [&] {
        StepTimer timer(r.step_seconds, "inputs");
        beat("green: inputs (" + where + ")", 60 + timeout);
        bufs.fill_inputs(t.seed, t.trial, r.stream, store ? &*store : nullptr);
        // Packed after the fill: an fp8 tensor's descale argument is this trial's scale.
        cand.pack(bufs);
        for (std::size_t m = 0; m < r.candidate_modules.size(); ++m)
          bufs.upload_symbols(*r.candidate_modules[m], m == 0, r.stream);
      });
      const ReferenceMemo::Outputs* ref_out = compares ? refs.find(*p, t) : nullptr;
      if (compares && !ref_out) {
        StepTimer timer(r.step_seconds, "references");
        refs.get(*p, bufs, ref, {t});  // not had in A (no store, or the memo's bound): now
        ref_out = refs.find(*p, t);
        if (!ref_out) throw UserError("GREEN: the reference outputs of " + where + " were not kept");
      }
      // The launch, where it wrote and what it wrote, queued on the stream and waited for once.
      const std::vector<DeviceTensor> cand_out = bufs.device_outputs();
      in_step("candidate launch", where, [&] {
        StepTimer timer(r.step_seconds, "launch");
        bufs.poison_outputs(r.stream);
        bufs.refill_inouts(true, r.stream);  // the reference accumulated into them
        beat("green: candidate launch (" + where + ")", timeout * cand.size());
        auto t0 = std::chrono::steady_clock::now();
        cand.launch(r.stream);
        bufs.check_writes(r.stream);
        if (compares) {
          bench.comparisons.resize(cand_out.size());
          for (std::size_t o = 0; o < cand_out.size(); ++o) {
            DeviceTensor ref_t = cand_out[o];
            ref_t.data = (*ref_out)[o]->get();
            bench.comparisons[o].queue(cand_out[o], ref_t, green_thresholds(th, *prof.find_buffer(cand_out[o].name)),
                                       r.stream);
          }
        }
        EVO_CUDA(cudaStreamSynchronize(r.stream));
        if (r.max_candidate_launch_s) *r.max_candidate_launch_s = std::max(*r.max_candidate_launch_s, seconds_since(t0));
      });
      ++res.trials_run;
      // Where it wrote, before what it wrote: a kernel that wrote out of bounds is rejected for
      // that, whatever its outputs hold.
      const std::vector<RegionFinding> wrote = bufs.write_findings();
      if (!wrote.empty()) {
        res.outcome = Outcome::Rejected;
        res.reason = "wrote where it may not: " + findings_text(wrote) + " (" + where + ")";
        if (r.wrote_out_of_bounds) *r.wrote_out_of_bounds = true;
        benches().forget();  // its guard zones and buffers are not as made any more
        forgotten = true;
        break;
      }
      if (!compares) continue;
      in_step("comparing outputs", where, [&] {
        StepTimer timer(r.step_seconds, "compare");
        beat("green: compare (" + where + ")", 60 + timeout);
        for (std::size_t o = 0; o < cand_out.size(); ++o) {
          const OutputCompare c = bench.comparisons[o].result();
          res.max_abs = std::max(res.max_abs, c.max_abs);
          res.mean_abs = std::max(res.mean_abs, c.mean_abs);
          res.rel_l2 = std::max(res.rel_l2, c.rel_l2);
          res.bad_pct = std::max(res.bad_pct, c.bad_pct);
          res.nan_count = std::max(res.nan_count, c.nan);
          res.inf_count = std::max(res.inf_count, c.inf);
          res.unwritten = std::max(res.unwritten, c.unwritten);
          if (c.failure.empty() || res.outcome != Outcome::Passed) continue;
          res.outcome = c.reference_bad ? Outcome::Skipped : Outcome::Rejected;
          res.reason = (c.reference_bad ? "" : cand_out[o].name + ": ") + c.failure + " (" + where + ")";
        }
      });
    }
    if (!forgotten) bufs.idle(r.stream);
    if (!compares) {
      res.outcome = Outcome::Skipped;
      res.reason = "candidate launches only (no reference compared)";
    }
    v.problems.push_back(res);
    if (res.outcome == Outcome::Rejected) {
      v.outcome = Outcome::Rejected;
      v.reason = "problem " + res.problem + ": " + res.reason;
      return after_candidate(r, v);
    }
    if (res.outcome == Outcome::Skipped && !any_skipped) {
      any_skipped = true;
      v.reason = "problem " + res.problem + ": " + res.reason;
    }
  }
  v.outcome = any_skipped ? Outcome::Skipped : Outcome::Passed;
  return after_candidate(r, v);
}

}  // namespace evo
