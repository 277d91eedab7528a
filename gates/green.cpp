#include "gates/green.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "engine/launch.h"
#include "engine/reference.h"

namespace evo {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

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
  using Outputs = std::vector<std::shared_ptr<DeviceBuffer>>;  // in device_outputs() order
  const Outputs* find(const std::string& key) const {
    auto it = outputs_.find(key);
    return it == outputs_.end() ? nullptr : &it->second;
  }
  const Outputs& store(const std::string& key, const std::vector<DeviceTensor>& out, cudaStream_t s) {
    std::size_t bytes = 0;
    for (const auto& t : out) bytes += static_cast<std::size_t>(t.elements) * dtype_bytes(t.dtype);
    if (bytes_ + bytes > kLimit) outputs_.clear(), bytes_ = 0;
    Outputs kept;
    for (const auto& t : out) {
      auto b = std::make_shared<DeviceBuffer>(static_cast<std::size_t>(t.elements) * dtype_bytes(t.dtype));
      EVO_CUDA(cudaMemcpyAsync(b->get(), t.data, b->bytes(), cudaMemcpyDeviceToDevice, s));
      kept.push_back(std::move(b));
    }
    EVO_CUDA(cudaStreamSynchronize(s));
    bytes_ += bytes;
    return outputs_[key] = std::move(kept);
  }
  // A command or data reference's answer, uploaded from the host (in device_outputs() order).
  const Outputs& store_host(const std::string& key, const std::vector<HostTensor>& out, cudaStream_t s) {
    std::size_t bytes = 0;
    for (const auto& t : out) bytes += t.bytes.size();
    if (bytes_ + bytes > kLimit) outputs_.clear(), bytes_ = 0;
    Outputs kept;
    for (const auto& t : out) {
      auto b = std::make_shared<DeviceBuffer>(t.bytes.size());
      EVO_CUDA(cudaMemcpyAsync(b->get(), t.bytes.data(), t.bytes.size(), cudaMemcpyHostToDevice, s));
      kept.push_back(std::move(b));
    }
    EVO_CUDA(cudaStreamSynchronize(s));  // the host bytes are pageable and go with `out`
    bytes_ += bytes;
    return outputs_[key] = std::move(kept);
  }

 private:
  static constexpr std::size_t kLimit = std::size_t(2) << 30;  // device bytes
  std::map<std::string, Outputs> outputs_;
  std::size_t bytes_ = 0;
};
// Never destroyed: device memory is released with the worker's context, and a static destructor
// calling cudaFree after the runtime has shut down would fail.
ReferenceMemo& reference_memo() {
  static ReferenceMemo* memo = new ReferenceMemo;
  return *memo;
}

std::string reference_memo_key(const GreenRun& r, const Problem& p, std::uint64_t seed, int trial) {
  if (r.host_reference) return "host|" + reference_key(*r.profile, p, seed, trial);
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
  return k + "|seed=" + std::to_string(seed) + "|trial=" + std::to_string(trial);
}

}  // namespace

GreenVerdict run_green(const GreenRun& r) {
  const Profile& prof = *r.profile;
  const GreenThresholds& th = prof.gates.green;
  const double timeout = prof.gates.timeout_s;
  GreenVerdict v;
  bool any_skipped = false;
  auto beat = [&](const std::string& step, double budget) { if (r.beat) r.beat(step, budget); };
  const bool compares = !r.reference.empty() || r.host_reference;
  // Stored data has fixed inputs: every seed and trial would be the same one.
  const bool fixed = r.host_reference && prof.reference_data;
  const std::vector<std::uint64_t> seeds = fixed ? std::vector<std::uint64_t>{r.seeds.front()} : r.seeds;
  const int trials = fixed ? 1 : r.trials;
  const double host_budget = 60 + (prof.reference_command ? prof.reference_command->timeout_s : timeout);

  for (const Problem* p : r.problems) {
    GreenResult res;
    res.problem = p->name;
    res.outcome = Outcome::Passed;
    BufferSet bufs(prof, *p, r.config);
    LaunchSequence cand(prof.launches(), r.candidate, *p, r.config);
    LaunchSequence ref(r.reference.empty() ? std::vector<const KernelSpec*>{} : prof.reference_launches(), r.reference,
                       *p, {});

    for (std::size_t si = 0; si < seeds.size() && res.outcome == Outcome::Passed; ++si) {
      for (int trial = 0; trial < trials && res.outcome == Outcome::Passed; ++trial) {
        const std::string where =
            "problem " + p->name + ", seed " + std::to_string(seeds[si]) + ", trial " + std::to_string(trial);
        std::string step;
        try {
          step = "filling inputs";
          beat("green: inputs (" + where + ")", 60 + timeout);
          bufs.fill_inputs(seeds[si], trial, r.stream);
          // Packed after the fill: an fp8 tensor's descale argument is this trial's scale.
          cand.pack(bufs);
          ref.pack(bufs);
          for (std::size_t m = 0; m < r.candidate_modules.size(); ++m)
            bufs.upload_symbols(*r.candidate_modules[m], m == 0, r.stream);
          const std::string ref_key = compares ? reference_memo_key(r, *p, seeds[si], trial) : "";
          const ReferenceMemo::Outputs* ref_out = compares ? reference_memo().find(ref_key) : nullptr;
          if (compares && !ref_out && r.host_reference) {
            step = "reference";
            beat("green: reference " + std::string(prof.reference_command ? "command" : "data") + " (" + where + ")",
                 host_budget);
            ref_out = &reference_memo().store_host(
                ref_key, reference_outputs(prof, *p, seeds[si], trial, r.reference_cache), r.stream);
          } else if (compares && !ref_out) {
            for (const Module* m : r.reference_modules) bufs.upload_symbols(*m, false, r.stream);
            bufs.poison_outputs(r.stream);
            step = "reference launch";
            beat("green: reference launch (" + where + ")", timeout * ref.size());
            ref.launch(r.stream);
            EVO_CUDA(cudaStreamSynchronize(r.stream));
            ref_out = &reference_memo().store(ref_key, bufs.device_outputs(), r.stream);
          }
          bufs.poison_outputs(r.stream);
          bufs.refill_inouts(true, r.stream);  // the reference accumulated into them
          step = "candidate launch";
          beat("green: candidate launch (" + where + ")", timeout * cand.size());
          auto t0 = std::chrono::steady_clock::now();
          cand.launch(r.stream);
          EVO_CUDA(cudaStreamSynchronize(r.stream));
          if (r.max_candidate_launch_s) *r.max_candidate_launch_s = std::max(*r.max_candidate_launch_s, seconds_since(t0));
          ++res.trials_run;
          if (!compares) continue;
          step = "comparing outputs";
          beat("green: compare (" + where + ")", 60 + timeout);
          const std::vector<DeviceTensor> cand_out = bufs.device_outputs();
          for (std::size_t i = 0; i < cand_out.size(); ++i) {
            DeviceTensor ref_t = cand_out[i];
            ref_t.data = (*ref_out)[i]->get();
            const GreenThresholds bt = green_thresholds(th, *prof.find_buffer(cand_out[i].name));
            OutputCompare o = compare_output_on_device(cand_out[i], ref_t, bt, r.stream);
            res.max_abs = std::max(res.max_abs, o.max_abs);
            res.mean_abs = std::max(res.mean_abs, o.mean_abs);
            res.rel_l2 = std::max(res.rel_l2, o.rel_l2);
            res.bad_pct = std::max(res.bad_pct, o.bad_pct);
            res.nan_count = std::max(res.nan_count, o.nan);
            res.inf_count = std::max(res.inf_count, o.inf);
            res.unwritten = std::max(res.unwritten, o.unwritten);
            if (o.failure.empty() || res.outcome != Outcome::Passed) continue;
            res.outcome = o.reference_bad ? Outcome::Skipped : Outcome::Rejected;
            res.reason = (o.reference_bad ? "" : cand_out[i].name + ": ") + o.failure + " (" + where + ")";
          }
        } catch (const CudaError& e) {
          throw CudaError(e.code, e.call + " during " + step + " (" + where + ")", e.sticky);
        }
      }
    }
    if (!compares) {
      res.outcome = Outcome::Skipped;
      res.reason = "candidate launches only (no reference compared)";
    }
    v.problems.push_back(res);
    if (res.outcome == Outcome::Rejected) {
      v.outcome = Outcome::Rejected;
      v.reason = "problem " + res.problem + ": " + res.reason;
      return v;
    }
    if (res.outcome == Outcome::Skipped && !any_skipped) {
      any_skipped = true;
      v.reason = "problem " + res.problem + ": " + res.reason;
    }
  }
  v.outcome = any_skipped ? Outcome::Skipped : Outcome::Passed;
  return v;
}

}  // namespace evo
