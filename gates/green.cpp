#include "gates/green.h"

#include <algorithm>

#include <map>
#include <thread>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "engine/launch.h"

namespace evo {
namespace {

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// "O[1,3,17,5] = nan, ref 0.213"
std::string element(const HostTensor& c, const HostTensor& r, std::int64_t i, double cv, double rv) {
  return c.name + index_text(c.shape, i) + " = " + num(cv) + ", ref " + num(rv);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

OutputCompare compare_output(const HostTensor& cand, const HostTensor& ref, const GreenThresholds& t) {
  OutputCompare o;
  const std::size_t w = dtype_bytes(cand.dtype);
  o.n = cand.elements();
  if (ref.elements() != o.n || ref.dtype != cand.dtype) {
    o.reference_bad = true;
    o.failure = cand.name + ": candidate and reference outputs differ in size or dtype";
    return o;
  }
  // One pass over a range of elements; ranges are merged in index order, so the figures and the
  // "first" elements named are the same whatever the split. Big outputs (the attention `long`
  // problem has 8 M elements per trial) are split across the cores: element-wise decoding on
  // the host otherwise costs more than every kernel launch of GREEN together.
  struct Part {
    std::int64_t first_unwritten = -1, first_nonfinite = -1, first_bad = -1, worst = -1, ref_first = -1;
    std::int64_t unwritten = 0, nan = 0, inf = 0, bad = 0, finite_pairs = 0;
    double max_abs = 0, sum_abs = 0, sum_d2 = 0, sum_r2 = 0;
  };
  auto scan = [&](std::int64_t lo, std::int64_t hi) {
    Part q;
    for (std::int64_t i = lo; i < hi; ++i) {
      const std::uint8_t* cp = cand.bytes.data() + i * w;
      const std::uint8_t* rp = ref.bytes.data() + i * w;
      const double r = decode_one(ref.dtype, rp);
      if (is_poison(ref.dtype, rp) || !std::isfinite(r)) {
        if (q.ref_first < 0) q.ref_first = i;
        continue;
      }
      if (is_poison(cand.dtype, cp)) {
        ++q.unwritten;
        if (q.first_unwritten < 0) q.first_unwritten = i;
        continue;
      }
      const double c = decode_one(cand.dtype, cp);
      if (!std::isfinite(c)) {
        std::isnan(c) ? ++q.nan : ++q.inf;
        if (q.first_nonfinite < 0) q.first_nonfinite = i;
        continue;
      }
      const double d = std::fabs(c - r);
      ++q.finite_pairs;
      q.sum_abs += d;
      q.sum_d2 += d * d;
      q.sum_r2 += r * r;
      if (d > q.max_abs || q.worst < 0) q.max_abs = d, q.worst = i;
      if (d > t.atol + t.rtol * std::fabs(r)) {
        ++q.bad;
        if (q.first_bad < 0) q.first_bad = i;
      }
    }
    return q;
  };
  const std::int64_t kChunk = std::int64_t(1) << 20;
  const std::int64_t threads =
      std::clamp<std::int64_t>(o.n / kChunk, 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Part> parts(static_cast<std::size_t>(threads));
  if (threads == 1) {
    parts[0] = scan(0, o.n);
  } else {
    std::vector<std::thread> pool;
    for (std::int64_t k = 0; k < threads; ++k)
      pool.emplace_back([&, k] { parts[k] = scan(o.n * k / threads, o.n * (k + 1) / threads); });
    for (auto& th : pool) th.join();
  }
  std::int64_t first_unwritten = -1, first_nonfinite = -1, first_bad = -1, worst = -1, ref_first = -1;
  double sum_abs = 0, sum_d2 = 0, sum_r2 = 0;
  std::int64_t finite_pairs = 0;
  auto first_of = [](std::int64_t a, std::int64_t b) { return a >= 0 ? a : b; };
  for (const Part& q : parts) {
    first_unwritten = first_of(first_unwritten, q.first_unwritten);
    first_nonfinite = first_of(first_nonfinite, q.first_nonfinite);
    first_bad = first_of(first_bad, q.first_bad);
    ref_first = first_of(ref_first, q.ref_first);
    if (q.worst >= 0 && (worst < 0 || q.max_abs > o.max_abs)) o.max_abs = q.max_abs, worst = q.worst;
    o.unwritten += q.unwritten;
    o.nan += q.nan;
    o.inf += q.inf;
    o.bad += q.bad;
    finite_pairs += q.finite_pairs;
    sum_abs += q.sum_abs;
    sum_d2 += q.sum_d2;
    sum_r2 += q.sum_r2;
  }
  o.mean_abs = finite_pairs ? sum_abs / finite_pairs : 0;
  o.rel_l2 = sum_r2 > 0 ? std::sqrt(sum_d2 / sum_r2) : std::sqrt(sum_d2);
  // Non-finite and unwritten elements count as bad too.
  o.bad += o.nan + o.inf + o.unwritten;
  o.bad_pct = o.n ? 100.0 * static_cast<double>(o.bad) / static_cast<double>(o.n) : 0;

  auto at = [&](std::int64_t i) {
    return element(cand, ref, i, is_poison(cand.dtype, cand.bytes.data() + i * w) ? NAN : decode_one(cand.dtype, cand.bytes.data() + i * w),
                   decode_one(ref.dtype, ref.bytes.data() + i * w));
  };
  if (ref_first >= 0) {
    o.reference_bad = true;
    const std::uint8_t* rp = ref.bytes.data() + ref_first * w;
    o.failure = std::string("reference produced ") + (is_poison(ref.dtype, rp) ? "no value (unwritten)" : num(decode_one(ref.dtype, rp))) +
                " at " + ref.name + index_text(ref.shape, ref_first);
    return o;
  }
  char pct[64];
  std::snprintf(pct, sizeof pct, "%.3g%%", o.bad_pct);
  if (o.unwritten > 0) {
    o.failure = std::to_string(o.unwritten) + " of " + std::to_string(o.n) + " elements unwritten (poison survived), first " +
                cand.name + index_text(cand.shape, first_unwritten);
  } else if (o.nan + o.inf > 0) {
    o.failure = std::to_string(o.nan) + " NaN, " + std::to_string(o.inf) + " Inf, first " + at(first_nonfinite);
  } else if (o.bad_pct > t.max_bad_pct) {
    const double r = decode_one(ref.dtype, ref.bytes.data() + first_bad * w);
    o.failure = std::string(pct) + " bad (limit " + num(t.max_bad_pct) + "%), first " + at(first_bad) + " (|err| " +
                num(std::fabs(decode_one(cand.dtype, cand.bytes.data() + first_bad * w) - r)) + " > " +
                num(t.atol + t.rtol * std::fabs(r)) + "); max_abs " + num(o.max_abs) + " at " + cand.name +
                index_text(cand.shape, worst);
  } else if (o.max_abs > t.max_abs) {
    o.failure = "max_abs " + num(o.max_abs) + " > " + num(t.max_abs) + " at " + at(worst);
  } else if (o.mean_abs > t.mean_abs) {
    o.failure = "mean_abs " + num(o.mean_abs) + " > " + num(t.mean_abs) + " (max_abs " + num(o.max_abs) + " at " + at(worst) + ")";
  }
  return o;
}

namespace {

// The reference's outputs for one (problem, seed, trial) are the same for every candidate of a
// run: the inputs are drawn from (seed, trial, buffer name) alone. The worker keeps them, so a
// candidate costs its own launches and comparisons only. The key holds everything the reference's
// result depends on: its module, the problem's sizes, the input shapes (a profile may size inputs
// with knobs), seed and trial.
class ReferenceMemo {
 public:
  const std::vector<HostTensor>* find(const std::string& key) const {
    auto it = outputs_.find(key);
    return it == outputs_.end() ? nullptr : &it->second;
  }
  void store(const std::string& key, const std::vector<HostTensor>& out) {
    std::size_t bytes = 0;
    for (const auto& t : out) bytes += t.bytes.size();
    if (bytes_ + bytes > kLimit) outputs_.clear(), bytes_ = 0;
    bytes_ += bytes;
    outputs_[key] = out;
  }

 private:
  static constexpr std::size_t kLimit = std::size_t(2) << 30;
  std::map<std::string, std::vector<HostTensor>> outputs_;
  std::size_t bytes_ = 0;
};
ReferenceMemo& reference_memo() {
  static ReferenceMemo memo;
  return memo;
}

std::string reference_key(const GreenRun& r, const Problem& p, std::uint64_t seed, int trial) {
  std::string k = r.reference_module->path() + "|" + r.reference.name() + "|" + r.profile->path.string() + "|" + p.name;
  for (const auto& [name, v] : p.sizes) k += "|" + name + "=" + std::to_string(v);
  for (const auto& b : r.profile->buffers) {
    if (b.role != BufferRole::Input) continue;
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

  for (const Problem* p : r.problems) {
    GreenResult res;
    res.problem = p->name;
    res.outcome = Outcome::Passed;
    BufferSet bufs(prof, *p, r.config);
    const LaunchGeometry cg = launch_geometry(prof.kernel, *p, r.config);
    const LaunchGeometry rg = r.reference_module ? launch_geometry(prof.reference, *p, {}) : LaunchGeometry{};
    if (cg.shared_bytes > 0) const_cast<Kernel&>(r.candidate).set_max_dynamic_smem(cg.shared_bytes);
    if (r.reference_module && rg.shared_bytes > 0) const_cast<Kernel&>(r.reference).set_max_dynamic_smem(rg.shared_bytes);

    for (std::size_t si = 0; si < r.seeds.size() && res.outcome == Outcome::Passed; ++si) {
      for (int trial = 0; trial < r.trials && res.outcome == Outcome::Passed; ++trial) {
        const std::string where =
            "problem " + p->name + ", seed " + std::to_string(r.seeds[si]) + ", trial " + std::to_string(trial);
        std::string step;
        try {
          step = "filling inputs";
          beat("green: inputs (" + where + ")", 60 + timeout);
          bufs.fill_inputs(r.seeds[si], trial, r.stream);
          // Packed after the fill: an fp8 tensor's descale argument is this trial's scale.
          PackedArgs cargs = bufs.pack(prof.kernel);
          PackedArgs rargs = r.reference_module ? bufs.pack(prof.reference) : PackedArgs{};
          bufs.upload_symbols(*r.candidate_module, true, r.stream);
          std::vector<HostTensor> ref_out;
          const std::string ref_key = r.reference_module ? reference_key(r, *p, r.seeds[si], trial) : "";
          if (const std::vector<HostTensor>* known = r.reference_module ? reference_memo().find(ref_key) : nullptr) {
            ref_out = *known;
          } else if (r.reference_module) {
            bufs.upload_symbols(*r.reference_module, false, r.stream);
            bufs.poison_outputs(r.stream);
            step = "reference launch";
            beat("green: reference launch (" + where + ")", timeout);
            r.reference.launch(rg, rargs.get(), r.stream);
            EVO_CUDA(cudaStreamSynchronize(r.stream));
            ref_out = bufs.read_outputs(r.stream);
            reference_memo().store(ref_key, ref_out);
          }
          bufs.poison_outputs(r.stream);
          step = "candidate launch";
          beat("green: candidate launch (" + where + ")", timeout);
          auto t0 = std::chrono::steady_clock::now();
          r.candidate.launch(cg, cargs.get(), r.stream);
          EVO_CUDA(cudaStreamSynchronize(r.stream));
          if (r.max_candidate_launch_s) *r.max_candidate_launch_s = std::max(*r.max_candidate_launch_s, seconds_since(t0));
          step = "reading candidate outputs";
          std::vector<HostTensor> cand_out = bufs.read_outputs(r.stream);
          ++res.trials_run;
          if (!r.reference_module) continue;

          beat("green: compare (" + where + ")", 60 + timeout);
          for (std::size_t i = 0; i < cand_out.size(); ++i) {
            OutputCompare o = compare_output(cand_out[i], ref_out[i], th);
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
    if (!r.reference_module) {
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
