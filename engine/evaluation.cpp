#include "engine/evaluation.h"

#include <algorithm>

namespace evo {

std::vector<LaunchKernel> launch_kernels(const Build& b) {
  if (!b.kernels.empty()) return b.kernels;
  return {LaunchKernel{"", b.lowered_name, b.cubin_path, b.ptxas}};
}

std::string wgmma_serialized_codes(const PtxasReport& r) {
  std::vector<std::string> codes;
  for (const auto& w : r.wgmma_serialized) {
    const std::string code = w.substr(0, w.find(':'));
    if (std::find(codes.begin(), codes.end(), code) == codes.end()) codes.push_back(code);
  }
  std::string out;
  for (const auto& c : codes) out += (out.empty() ? "" : ", ") + c;
  return out;
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Passed: return "passed";
    case Outcome::Rejected: return "rejected";
    case Outcome::Crashed: return "crash";
    case Outcome::Timeout: return "timeout";
    case Outcome::Skipped: return "skipped";
  }
  return "?";
}

std::optional<Outcome> parse_outcome(const std::string& s) {
  for (Outcome o : {Outcome::Passed, Outcome::Rejected, Outcome::Crashed, Outcome::Timeout, Outcome::Skipped})
    if (s == outcome_name(o)) return o;
  return std::nullopt;
}

const char* status_name(Status s) {
  switch (s) {
    case Status::CompileError: return "compile_error";
    case Status::StaticRejected: return "static_rejected";
    case Status::GreenFailed: return "green_failed";
    case Status::Crashed: return "crash";
    case Status::Timeout: return "timeout";
    case Status::Measured: return "measured";
    case Status::MetricRejected: return "metric_rejected";
    case Status::SanitizeFailed: return "sanitize_failed";
  }
  return "?";
}

std::optional<Status> parse_status(const std::string& s) {
  for (Status x : {Status::CompileError, Status::StaticRejected, Status::GreenFailed, Status::Crashed,
                   Status::Timeout, Status::Measured, Status::MetricRejected, Status::SanitizeFailed})
    if (s == status_name(x)) return x;
  return std::nullopt;
}

std::optional<double> metric_value(const MetricsResult& m, const std::string& name) {
  if (auto it = m.values.find(name); it != m.values.end()) return it->second;
  if (name == metric::kBankConflictPct) {
    auto c = m.values.find(metric::kConflictsLd), w = m.values.find(metric::kWavefrontsLd);
    if (c != m.values.end() && w != m.values.end()) return w->second > 0 ? 100.0 * c->second / w->second : 0.0;
  }
  return std::nullopt;
}

}  // namespace evo
