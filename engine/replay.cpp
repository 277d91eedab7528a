// Reading, writing and replaying landscapes (format in docs/search.md).
#include "engine/replay.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "engine/error.h"
#include "engine/evaluation_json.h"  // defines: to_json/from_json of PtxasReport, Outcome, Status
#include "engine/expr.h"             // defines: number_text
#include "engine/hash.h"
#include "engine/space.h"

namespace evo {
namespace {

// ordered_json: the knobs' order in the file is the space's order (exhaustive walks it).
using Json = nlohmann::ordered_json;
constexpr const char* kFormat = "evo-landscape/1";

struct Reader {
  std::string file;

  const Json& need(const Json& obj, const std::string& key, const std::string& where) const {
    if (!obj.is_object() || !obj.contains(key)) fail_at(file, where.empty() ? key : where + "." + key, "missing");
    return obj.at(key);
  }
  template <class T, class J>
  T get(const J& v, const std::string& where) const {
    try {
      return v.template get<T>();
    } catch (const nlohmann::json::exception& e) {
      fail_at(file, where, std::string("wrong type (") + v.type_name() + ")");
    }
  }
  template <class T>
  T opt(const Json& obj, const std::string& key, T fallback, const std::string& where) const {
    return obj.contains(key) ? get<T>(obj.at(key), where + "." + key) : fallback;
  }
};

Config read_config(const Reader& r, const Json& v, const std::string& where) {
  if (!v.is_object()) fail_at(r.file, where, "not an object of knob values");
  Config c;
  for (const auto& [k, x] : v.items()) c[k] = r.get<std::int64_t>(x, where + "." + k);
  return c;
}

Json config_json(const Config& c, const std::vector<KnobDef>& order) {
  Json j = Json::object();
  for (const auto& k : order)
    if (c.count(k.name)) j[k.name] = c.at(k.name);
  for (const auto& [k, v] : c)
    if (!j.contains(k)) j[k] = v;
  return j;
}

}  // namespace

Landscape read_landscape(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path.string() + ": cannot read the landscape (no such file or not readable)");
  Reader r{path.string()};
  Json doc;
  try {
    doc = Json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(r.file + ": not valid JSON (" + e.what() + ")");
  }
  if (r.opt<std::string>(doc, "format", "", "") != kFormat)
    fail_at(r.file, "format", "expected \"" + std::string(kFormat) + "\"");
  Landscape l;
  l.profile = r.get<std::string>(r.need(doc, "profile", ""), "profile");
  l.problem = r.get<std::string>(r.need(doc, "problem", ""), "problem");
  l.device = r.get<std::string>(r.need(doc, "device", ""), "device");
  l.recorded_at = r.opt<std::string>(doc, "recorded_at", "", "");
  l.baseline = read_config(r, r.need(doc, "baseline", ""), "baseline");
  l.baseline_p50_us = r.opt<double>(doc, "baseline_p50_us", 0.0, "");

  const Json& space = r.need(doc, "space", "");
  l.description = r.opt<std::string>(space, "description", "", "space");
  const Json& knobs = r.need(space, "knobs", "space");
  if (!knobs.is_object() || knobs.empty()) fail_at(r.file, "space.knobs", "not an object of knob value lists");
  for (const auto& [name, values] : knobs.items()) {
    KnobDef k{name, r.get<std::vector<std::int64_t>>(values, "space.knobs." + name)};
    if (k.values.empty()) fail_at(r.file, "space.knobs." + name, "no values");
    l.knobs.push_back(std::move(k));
  }
  l.constraints = r.opt<std::vector<std::string>>(space, "constraints", {}, "space");
  if (space.contains("defines"))
    for (const auto& [k, v] : space.at("defines").items())
      l.defines[k] = v.is_string() ? v.get<std::string>() : v.dump();
  const Json& problems = r.need(space, "problems", "space");
  if (!problems.is_array() || problems.empty()) fail_at(r.file, "space.problems", "not a non-empty list");
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const std::string where = "space.problems[" + std::to_string(i) + "]";
    Problem p;
    p.name = r.get<std::string>(r.need(problems[i], "name", where), where + ".name");
    p.sizes = r.get<std::map<std::string, double>>(r.need(problems[i], "sizes", where), where + ".sizes");
    l.problems.push_back(std::move(p));
  }
  l.objective = r.opt<std::string>(space, "objective", l.problem, "space");
  if (space.contains("launch")) {
    const Json& la = space.at("launch");
    l.launch.grid = r.opt<std::array<std::string, 3>>(la, "grid", l.launch.grid, "space.launch");
    l.launch.block = r.opt<std::array<std::string, 3>>(la, "block", l.launch.block, "space.launch");
    l.launch.shared_bytes = r.opt<std::string>(la, "shared_bytes", "0", "space.launch");
  }
  bool objective_known = false;
  for (const auto& p : l.problems) objective_known |= p.name == l.objective;
  if (!objective_known) fail_at(r.file, "space.objective", "'" + l.objective + "' is not one of space.problems");

  const Json& configs = r.need(doc, "configs", "");
  if (!configs.is_array()) fail_at(r.file, "configs", "not a list");
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const std::string where = "configs[" + std::to_string(i) + "]";
    const Json& c = configs[i];
    LandscapePoint p;
    p.knobs = read_config(r, r.need(c, "knobs", where), where + ".knobs");
    const std::string status = r.get<std::string>(r.need(c, "status", where), where + ".status");
    auto s = parse_status(status);
    if (!s) fail_at(r.file, where + ".status", "unknown status '" + status + "'");
    p.status = *s;
    p.message = r.opt<std::string>(c, "message", "", where);
    p.p50_us = r.opt<double>(c, "p50_us", 0.0, where);
    p.p90_us = r.opt<double>(c, "p90_us", p.p50_us, where);
    p.cv = r.opt<double>(c, "cv", 0.0, where);
    if (p.status == Status::Measured && !(p.p50_us > 0))
      fail_at(r.file, where + ".p50_us", "a measured configuration needs a median > 0");
    if (c.contains("green")) {
      p.max_abs = r.opt<double>(c.at("green"), "max_abs", 0.0, where + ".green");
      p.mean_abs = r.opt<double>(c.at("green"), "mean_abs", 0.0, where + ".green");
    }
    p.metrics = r.opt<std::map<std::string, double>>(c, "metrics", {}, where);
    if (c.contains("ptxas")) p.ptxas = r.get<PtxasReport>(nlohmann::json(c.at("ptxas")), where + ".ptxas");
    if (c.contains("sanitize")) {
      auto o = parse_outcome(r.get<std::string>(c.at("sanitize"), where + ".sanitize"));
      if (!o) fail_at(r.file, where + ".sanitize", "not an outcome (passed, rejected, crash, timeout, skipped)");
      p.sanitize = *o;
    }
    if (c.contains("seconds")) {
      const Json& t = c.at("seconds");
      p.seconds_compile = r.opt<double>(t, "compile", 0.0, where + ".seconds");
      p.seconds_green = r.opt<double>(t, "green", 0.0, where + ".seconds");
      p.seconds_fast = r.opt<double>(t, "fast", 0.0, where + ".seconds");
      p.seconds_metrics = r.opt<double>(t, "metrics", 0.0, where + ".seconds");
    }
    l.points.push_back(std::move(p));
  }
  // Without a recorded baseline median, the baseline's own point gives it.
  if (!(l.baseline_p50_us > 0))
    for (const auto& p : l.points)
      if (p.knobs == l.baseline && p.status == Status::Measured) l.baseline_p50_us = p.p50_us;
  return l;
}

std::string landscape_text(const Landscape& l) {
  Json space{{"description", l.description}};
  Json knobs = Json::object();
  for (const auto& k : l.knobs) knobs[k.name] = k.values;
  space["knobs"] = knobs;
  space["constraints"] = l.constraints;
  space["defines"] = l.defines;
  Json problems = Json::array();
  for (const auto& p : l.problems) problems.push_back({{"name", p.name}, {"sizes", p.sizes}});
  space["problems"] = problems;
  space["objective"] = l.objective;
  space["launch"] = {{"grid", l.launch.grid}, {"block", l.launch.block}, {"shared_bytes", l.launch.shared_bytes}};
  Json head{{"format", kFormat},       {"profile", l.profile},   {"problem", l.problem},
            {"device", l.device},      {"recorded_at", l.recorded_at},
            {"baseline", config_json(l.baseline, l.knobs)}, {"baseline_p50_us", l.baseline_p50_us},
            {"space", space}};
  std::string out = head.dump();
  out.pop_back();  // the closing brace: configs follow, one per line
  out += ",\"configs\":[";
  for (std::size_t i = 0; i < l.points.size(); ++i) {
    const LandscapePoint& p = l.points[i];
    Json c{{"knobs", config_json(p.knobs, l.knobs)}, {"status", status_name(p.status)}};
    if (!p.message.empty()) c["message"] = p.message;
    if (p.status == Status::Measured) {
      c["p50_us"] = p.p50_us;
      c["p90_us"] = p.p90_us;
      c["cv"] = p.cv;
    }
    if (p.max_abs > 0 || p.mean_abs > 0) c["green"] = {{"max_abs", p.max_abs}, {"mean_abs", p.mean_abs}};
    if (!p.metrics.empty()) c["metrics"] = p.metrics;
    c["ptxas"] = Json(nlohmann::json(p.ptxas));  // the macros define plain json only
    if (p.sanitize != Outcome::Skipped) c["sanitize"] = outcome_name(p.sanitize);
    c["seconds"] = {{"compile", p.seconds_compile}, {"green", p.seconds_green}, {"fast", p.seconds_fast},
                    {"metrics", p.seconds_metrics}};
    out += (i ? ",\n" : "\n") + c.dump();
  }
  out += "\n]}\n";
  return out;
}

Profile landscape_profile(const Landscape& l, const std::filesystem::path& path) {
  Profile p;
  p.path = path;
  p.name = l.profile;
  p.description = l.description;
  p.kernel.defines = l.defines;
  p.kernel.launch = l.launch;
  p.knobs = l.knobs;
  p.constraints = l.constraints;
  p.baseline = l.baseline;
  p.problems = l.problems;
  p.objective = l.objective;
  return p;
}

LandscapeCoverage landscape_coverage(const Landscape& l, const KnobSpace& space) {
  std::unordered_set<std::string> recorded;
  for (const auto& pt : l.points) recorded.insert(config_hash(pt.knobs));
  LandscapeCoverage c;
  for (const auto& cfg : space.enumerate_valid()) {
    ++c.valid;
    c.recorded += recorded.count(config_hash(cfg));
  }
  return c;
}

std::string coverage_note(const std::string& file, const LandscapeCoverage& c) {
  if (c.unrecorded() == 0) return "";
  return file + " holds " + std::to_string(c.recorded) + " of the " + std::to_string(c.valid) +
         " configurations that pass its constraints: a replay gives the other " + std::to_string(c.unrecorded()) +
         " as failures (\"not recorded in landscape\")";
}

namespace {

template <class T>
std::string listed(const std::vector<T>& v) {
  std::ostringstream o;
  o << '[';
  for (std::size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
  return o.str() + ']';
}

std::string listed(const std::map<std::string, std::string>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : ", ") + k + "=" + v;
  return "{" + s + "}";
}

}  // namespace

std::optional<std::string> landscape_mismatch(const Landscape& l, const Profile& p) {
  auto differ = [](const std::string& field, const std::string& mine, const std::string& recorded) {
    return std::optional<std::string>(field + ": " + mine + ", the landscape records " + recorded);
  };
  if (p.name != l.profile) return differ("name", "'" + p.name + "'", "'" + l.profile + "'");
  std::vector<std::string> mine, theirs;
  for (const auto& k : p.knobs) mine.push_back(k.name);
  for (const auto& k : l.knobs) theirs.push_back(k.name);
  if (mine != theirs) return differ("knobs", listed(mine), listed(theirs));
  for (std::size_t i = 0; i < p.knobs.size(); ++i)
    if (p.knobs[i].values != l.knobs[i].values)
      return differ("knobs." + p.knobs[i].name, listed(p.knobs[i].values), listed(l.knobs[i].values));
  if (p.constraints != l.constraints) return differ("constraints", listed(p.constraints), listed(l.constraints));
  if (p.kernel.defines != l.defines) return differ("defines", listed(p.kernel.defines), listed(l.defines));
  if (p.problems.size() != l.problems.size())
    return differ("problems", std::to_string(p.problems.size()) + " problems", std::to_string(l.problems.size()));
  for (std::size_t i = 0; i < p.problems.size(); ++i) {
    const std::string at = "problems[" + std::to_string(i) + "]";
    if (p.problems[i].name != l.problems[i].name) return differ(at + ".name", p.problems[i].name, l.problems[i].name);
    if (p.problems[i].sizes != l.problems[i].sizes) {
      std::map<std::string, std::string> a, b;
      for (const auto& [k, v] : p.problems[i].sizes) a[k] = number_text(v);
      for (const auto& [k, v] : l.problems[i].sizes) b[k] = number_text(v);
      return differ(at + ".sizes", listed(a), listed(b));
    }
  }
  if (p.objective != l.objective) return differ("objective", p.objective, l.objective);
  if (p.baseline != l.baseline) return differ("baseline", config_text(p.baseline), config_text(l.baseline));
  const LaunchSpec& a = p.kernel.launch;
  const LaunchSpec& b = l.launch;
  auto dims = [](const std::array<std::string, 3>& d) { return listed(std::vector<std::string>(d.begin(), d.end())); };
  if (a.grid != b.grid) return differ("launch.grid", dims(a.grid), dims(b.grid));
  if (a.block != b.block) return differ("launch.block", dims(a.block), dims(b.block));
  if (a.shared_bytes != b.shared_bytes) return differ("launch.shared_bytes", a.shared_bytes, b.shared_bytes);
  return std::nullopt;
}

ReplayEvaluator::ReplayEvaluator(const std::filesystem::path& path, ReplayCost cost)
    : landscape_(read_landscape(path)),
      profile_(landscape_profile(landscape_, path)),
      name_(path.stem().string()),
      cost_(cost) {
  if (cost_.jobs == 0) cost_.jobs = 1;
  if (cost_.gpus == 0) cost_.gpus = 1;
  slot_free_.assign(cost_.jobs, 0.0);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  content_hash_ = sha256_hex(text.str());
  KnobSpace space(profile_);  // throws for constraints that do not parse
  if (auto why = space.why_invalid(landscape_.baseline)) fail_at(path.string(), "baseline", *why);
  for (std::size_t i = 0; i < landscape_.points.size(); ++i) {
    const std::string where = "configs[" + std::to_string(i) + "].knobs";
    if (auto why = space.why_invalid(landscape_.points[i].knobs)) fail_at(path.string(), where, *why);
    if (!by_hash_.emplace(config_hash(landscape_.points[i].knobs), i).second)
      fail_at(path.string(), where, "recorded twice");
  }
}

std::string ReplayEvaluator::build_key(const Config& c) const {
  return short_hash(content_hash_ + "\n" + config_text(c));
}

namespace {

// Everything the landscape recorded for one candidate, the gates in order: each later verdict
// exists only if the earlier ones passed.
Evaluation recorded(const Landscape& landscape_, const std::unordered_map<std::string, std::size_t>& by_hash_,
                    const std::string& name_, const std::string& key, const Candidate& cand) {
  Evaluation e;
  e.config = cand.config;
  e.config_hash = config_hash(cand.config);
  e.origin = cand.origin;
  e.build.key = key;
  auto it = by_hash_.find(e.config_hash);
  if (it == by_hash_.end()) {
    e.status = Status::CompileError;
    e.message = "not recorded in landscape " + name_;
    e.build.log = e.message;
    return e;
  }
  const LandscapePoint& p = landscape_.points[it->second];
  e.status = p.status;
  e.message = p.message;
  e.build.ok = p.status != Status::CompileError;
  e.build.ptxas = p.ptxas;
  if (!e.build.ok) e.build.log = p.message;
  e.seconds_compile = p.seconds_compile;
  e.seconds_green = p.seconds_green;
  e.seconds_fast = p.seconds_fast;
  e.seconds_metrics = p.seconds_metrics;
  if (p.status == Status::CompileError) return e;

  // The gates in order: each later verdict exists only if the earlier ones passed.
  e.static_verdict.ptxas = p.ptxas;
  e.static_verdict.outcome = p.status == Status::StaticRejected ? Outcome::Rejected : Outcome::Passed;
  e.static_verdict.reason = p.status == Status::StaticRejected ? p.message : "";
  if (p.status == Status::StaticRejected) return e;

  const Outcome green = p.status == Status::GreenFailed ? Outcome::Rejected
                        : p.status == Status::Crashed  ? Outcome::Crashed
                        : p.status == Status::Timeout  ? Outcome::Timeout
                                                       : Outcome::Passed;
  GreenResult g;
  g.problem = landscape_.objective;
  g.outcome = green;
  g.max_abs = p.max_abs;
  g.mean_abs = p.mean_abs;
  g.reason = green == Outcome::Passed ? "" : p.message;
  e.green.outcome = green;
  e.green.problems.push_back(g);
  e.green.reason = g.reason;
  if (green != Outcome::Passed) return e;

  e.fast.outcome = Outcome::Passed;
  e.fast.problem = landscape_.objective;
  e.fast.mode = "replay";
  e.fast.p50_us = p.p50_us;
  e.fast.p90_us = p.p90_us;
  e.fast.mean_us = p.p50_us;
  e.fast.min_us = p.p50_us;
  e.fast.cv = p.cv;
  e.fast.std_us = p.cv * p.p50_us;
  if (!p.metrics.empty()) {
    e.metrics.outcome = Outcome::Passed;
    e.metrics.values = p.metrics;
  } else {
    e.metrics.reason = "metrics unavailable: not recorded in landscape " + name_;
  }
  if (p.status == Status::MetricRejected) e.metric_gate = {Outcome::Rejected, p.message};
  if (p.status == Status::SanitizeFailed) e.sanitize = {Outcome::Rejected, 1, p.message};
  return e;
}

}  // namespace

double ReplayEvaluator::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void ReplayEvaluator::submit(const Candidate& c) {
  Queued q;
  q.prepared.candidate = c;
  q.prepared.eval = recorded(landscape_, by_hash_, name_, build_key(c.config), c);
  if (!metrics_during_run_ && q.prepared.eval.green.outcome == Outcome::Passed) {
    q.prepared.eval.metrics = MetricsResult{};  // as on a GPU: none until the run's end, no time spent
    q.prepared.eval.metrics.reason = kMetricsDeferred;
    q.prepared.eval.seconds_metrics = 0;
  }
  q.cost = cost_.compile_s >= 0 ? cost_.compile_s : q.prepared.eval.seconds_compile;
  if (q.cost > cost_.compile_timeout_s) {  // as the compile pool answers it: stopped at the limit
    Evaluation& e = q.prepared.eval;
    const Evaluation was = e;
    e = Evaluation{};
    e.config = was.config;
    e.config_hash = was.config_hash;
    e.origin = was.origin;
    e.status = Status::CompileError;
    e.build.key = was.build.key;
    e.build.ok = false;
    e.build.log = compile_timeout_log(cost_.compile_timeout_s, cost_.compile_timeout_s);
    e.build.compile_ms = 1000 * cost_.compile_timeout_s;
    e.message = "compile error: " + e.build.log;
    e.seconds_compile = q.cost = cost_.compile_timeout_s;
  }
  const Status s = q.prepared.eval.status;
  q.prepared.needs_gpu = s != Status::CompileError && s != Status::StaticRejected;
  if (cost_.compile_s > 0 || cost_.gpu_s > 0) {  // simulated: the evaluation reports what it cost here
    Evaluation& e = q.prepared.eval;
    e.seconds_compile = q.cost;
    e.seconds_green = q.prepared.needs_gpu ? cost_.gpu_s : 0;
    e.seconds_fast = e.seconds_metrics = 0;
  }
  q.submitted = now();
  queue_.push_back(std::move(q));
}

std::vector<std::pair<Config, double>> ReplayEvaluator::still_compiling() const {
  const double t = now();
  std::vector<std::pair<Config, double>> out;
  for (const auto& [end, q] : compiling_)
    if (end > t) out.emplace_back(q.candidate.config, t - (end - q.eval.seconds_compile));
  return out;
}

double ReplayEvaluator::drop_unfinished() {
  const double t = now();
  double spent = 0;
  for (const auto& [config, so_far] : still_compiling()) spent += so_far;
  queue_.clear();
  compiling_.clear();
  ready_.clear();
  // Their simulated workers are free now, as a killed compile process's core is.
  for (double& free_at : slot_free_) free_at = std::min(free_at, t);
  return spent;
}

void ReplayEvaluator::advance(double t) {
  // Start what can start by `t`, on the earliest free slot, at max(its submission, that slot free).
  while (!queue_.empty()) {
    auto slot = std::min_element(slot_free_.begin(), slot_free_.end());
    const double start = std::max(*slot, queue_.front().submitted);
    if (start > t) break;
    *slot = start + queue_.front().cost;
    compiling_.emplace(*slot, std::move(queue_.front().prepared));
    queue_.pop_front();
  }
  while (!compiling_.empty() && compiling_.begin()->first <= t) {
    ready_.push_back(std::move(compiling_.begin()->second));
    compiling_.erase(compiling_.begin());
  }
}

std::vector<Prepared> ReplayEvaluator::collect(double timeout_s) {
  const double deadline = now() + std::max(0.0, timeout_s);
  for (;;) {
    const double t = now();
    advance(t);
    if (!ready_.empty() || t >= deadline || (queue_.empty() && compiling_.empty())) break;
    // Sleep until the next simulated compile ends (a queued one cannot start before that).
    double next = deadline;
    if (!compiling_.empty()) next = std::min(next, compiling_.begin()->first);
    std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, next - t)));
  }
  std::vector<Prepared> out(std::make_move_iterator(ready_.begin()), std::make_move_iterator(ready_.end()));
  ready_.clear();
  return out;
}

// Called from each lane's thread at once: it only reads the candidate it is given.
Evaluation ReplayEvaluator::measure(const Prepared& p, std::size_t) {
  if (cost_.gpu_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(cost_.gpu_s));
  return p.eval;
}

Timing ReplayEvaluator::time_baseline(std::size_t) {
  Timing t;
  t.problem = landscape_.objective;
  t.mode = "replay";
  if (!(landscape_.baseline_p50_us > 0)) {
    t.reason = "landscape " + name_ + " records no baseline median";
    return t;
  }
  t.outcome = Outcome::Passed;
  t.p50_us = t.p90_us = t.mean_us = t.min_us = landscape_.baseline_p50_us;
  return t;
}

SanitizeVerdict ReplayEvaluator::sanitize(const Candidate& c) {
  auto it = by_hash_.find(config_hash(c.config));
  if (it == by_hash_.end() || landscape_.points[it->second].sanitize == Outcome::Skipped)
    return {Outcome::Skipped, 0, "replay: no sanitizer verdict recorded"};
  const LandscapePoint& p = landscape_.points[it->second];
  return {p.sanitize, p.sanitize == Outcome::Passed ? 0 : 1, p.sanitize == Outcome::Passed ? "" : p.message};
}

std::optional<MetricsResult> ReplayEvaluator::collect_metrics(const Candidate& c, double* seconds) {
  auto it = by_hash_.find(config_hash(c.config));
  if (it == by_hash_.end()) return std::nullopt;
  const LandscapePoint& p = landscape_.points[it->second];
  MetricsResult m;
  if (!p.metrics.empty()) {
    m.outcome = Outcome::Passed;
    m.values = p.metrics;
  } else {
    m.reason = "metrics unavailable: not recorded in landscape " + name_;
  }
  if (seconds) *seconds = p.seconds_metrics;
  return m;
}

}  // namespace evo
