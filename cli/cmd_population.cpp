// evo runs | compare | show-elites | export | export-landscape | db check: reading the store.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "cli/table.h"
#include "engine/error.h"
#include "engine/evaluation_json.h"
#include "engine/hash.h"
#include "engine/launch.h"
#include "engine/profile.h"
#include "engine/space.h"
#include "population/landscape.h"  // defines: write_landscape
#include "population/store.h"

namespace fs = std::filesystem;

namespace evo::cli {
namespace {

// nvcc's -arch=sm_90a also builds a plain compute_90 PTX, where the arch-specific feature macros
// (__CUDA_ARCH_FEAT_SM90_ALL: wgmma) are absent; an arch-specific target wants its own -gencode.
std::string nvcc_arch_flags(const std::string& arch) {
  if (!arch.empty() && (arch.back() == 'a' || arch.back() == 'f') && arch.rfind("sm_", 0) == 0)
    return "-gencode arch=compute_" + arch.substr(3) + ",code=" + arch;
  return "-arch=" + arch;
}


// "64, 256, 16": a list for a header comment.
template <class T>
std::string list(const std::vector<T>& xs) {
  std::ostringstream o;
  for (std::size_t i = 0; i < xs.size(); ++i) o << (i ? ", " : "") << xs[i];
  return o.str();
}

// The suffix of a CU_TENSOR_MAP_SWIZZLE_ or _L2_PROMOTION_ enumerator: "128B", or "NONE" for 0.
std::string bytes_enum(int bytes) { return bytes ? std::to_string(bytes) + "B" : "NONE"; }

// Reading commands must not create an empty database where the user mistyped a path.
void require_db(const Globals& g) {
  if (!fs::exists(g.db)) throw UserError(g.db + ": no such database (run `evo run` first, or pass --db)");
}

double metric(const Evaluation& e, const std::string& name) {
  auto it = e.metrics.values.find(name);
  return it == e.metrics.values.end() ? NAN : it->second;
}

std::string worst_green(const Evaluation& e) {
  double max_abs = 0, mean_abs = 0;
  for (const auto& r : e.green.problems) max_abs = std::max(max_abs, r.max_abs), mean_abs = std::max(mean_abs, r.mean_abs);
  return fmt_num(max_abs, 4) + "/" + fmt_num(mean_abs, 4);
}

std::string origin_text(const Origin& o) { return o.rule.empty() ? o.kind : o.kind + ":" + o.rule; }

// Newest run's profile, for commands given no --profile.
std::string default_profile(const Store& s) {
  auto runs = s.runs();
  if (runs.empty()) throw UserError(s.path().string() + ": no runs yet (run `evo run` first)");
  return runs.back().profile;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The template with its own quoted #includes inlined, so the export compiles on its own.
std::string inline_includes(const fs::path& file, std::set<fs::path>& seen) {
  std::string out;
  std::istringstream in(read_file(file));
  std::string line;
  static const std::regex inc(R"(^\s*#\s*include\s*"([^"]+)\")");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, inc)) {
      fs::path dep = fs::weakly_canonical(file.parent_path() / m[1].str());
      if (fs::exists(dep)) {
        if (seen.insert(dep).second) out += "// ---- inlined " + m[1].str() + " ----\n" + inline_includes(dep, seen);
        continue;
      }
    }
    out += line + "\n";
  }
  return out;
}

void write_atomically(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw UserError(path.parent_path().string() + ": cannot write here (permission denied or not a folder)");
    out << text;
    if (!out.flush()) throw UserError(path.string() + ": write failed");
  }
  fs::rename(tmp, path);
}

}  // namespace

int cmd_runs(const Globals& g) {
  require_db(g);
  Store s(g.db);
  auto runs = s.runs();
  if (g.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : runs)
      out.push_back({{"id", r.id}, {"profile", r.profile}, {"strategy", r.strategy}, {"status", r.status},
                     {"budget", r.budget}, {"seed", r.seed}, {"evaluations", r.evaluations},
                     {"new_evaluations", r.new_evaluations}, {"device", r.device}, {"started_at", r.started_at},
                     {"finished_at", r.finished_at}, {"baseline_p50_us", r.baseline_p50_us}});
    std::cout << out.dump(2) << '\n';
    return 0;
  }
  Table t({"run", "profile", "strategy", "status", "budget", "new", "read back", "best us", "speedup", "device", "started"});
  for (const auto& r : runs) {
    auto best = s.elites(r.profile, "", 1, r.id);
    t.add({std::to_string(r.id), r.profile, r.strategy, r.status, std::to_string(r.budget), std::to_string(r.new_evaluations),
           std::to_string(r.evaluations - r.new_evaluations), best.empty() ? "" : fmt_us(best[0].eval.fast.p50_us),
           best.empty() ? "" : fmt_num(best[0].eval.speedup, 2) + "x", r.device, r.started_at});
  }
  t.print(std::cout);
  return 0;
}

int cmd_compare(const Globals& g, std::int64_t a, std::int64_t b) {
  require_db(g);
  Store s(g.db);
  std::vector<RunInfo> info;
  std::vector<std::vector<StoredEvaluation>> evals;
  for (auto id : {a, b}) {
    auto r = s.run(id);
    if (!r) throw UserError("no run " + std::to_string(id) + " in " + g.db + " (see `evo runs`)");
    info.push_back(*r);
    evals.push_back(s.evaluations_of_run(id));
  }
  // "Within 5% of the best" is measured against the better of the two runs' bests.
  double best_both = INFINITY;
  for (const auto& ev : evals)
    for (const auto& e : ev) if (e.eval.measured()) best_both = std::min(best_both, e.eval.fast.p50_us);
  Table t({"", "run " + std::to_string(a), "run " + std::to_string(b)});
  std::vector<std::vector<std::string>> cols(2);
  for (int i = 0; i < 2; ++i) {
    const auto& ev = evals[i];
    std::int64_t measured = 0, to_within = -1, n = 0;
    double best = INFINITY, best_speedup = 0;
    for (const auto& e : ev) {
      ++n;
      if (!e.eval.measured()) continue;
      ++measured;
      if (e.eval.fast.p50_us < best) best = e.eval.fast.p50_us, best_speedup = e.eval.speedup;
      if (to_within < 0 && e.eval.fast.p50_us <= best_both * 1.05) to_within = n;
    }
    cols[i] = {info[i].profile, info[i].strategy + " (seed " + std::to_string(info[i].seed) + ")", info[i].status,
               std::to_string(n) + " (" + std::to_string(info[i].new_evaluations) + " new)",
               n ? fmt_num(100.0 * measured / n, 1) + "%" : "", std::isfinite(best) ? fmt_us(best) : "",
               best_speedup > 0 ? fmt_num(best_speedup, 2) + "x" : "", fmt_us(info[i].baseline_p50_us),
               to_within > 0 ? std::to_string(to_within) : "not reached"};
  }
  const char* rows[] = {"profile", "strategy", "status", "evaluations", "validity (GREEN + timed)", "best median (us)",
                        "best speedup vs baseline", "baseline median (us)", "evaluations to within 5% of best"};
  for (int r = 0; r < 9; ++r) t.add({rows[r], cols[0][r], cols[1][r]});
  t.print_markdown(std::cout);
  return 0;
}

int cmd_show_elites(const Globals& g, const ElitesArgs& a) {
  require_db(g);
  Store s(g.db);
  const std::string profile = a.profile.empty() ? default_profile(s) : a.profile;
  auto elites = s.elites(profile, a.problem, a.top, a.run);
  if (g.json) {
    nlohmann::json out = nlohmann::json::array();
    int rank = 0;
    for (const auto& e : elites)
      out.push_back({{"rank", ++rank}, {"evaluation_id", e.id}, {"run", e.run_id}, {"profile", e.key.profile},
                     {"problem", e.key.problem}, {"device", e.key.device}, {"evaluation", e.eval}});
    std::cout << out.dump(2) << '\n';
    return 0;
  }
  if (elites.empty()) {
    std::cout << "no measured candidates for profile " << profile << (a.problem.empty() ? "" : " problem " + a.problem) << "\n";
    return 1;
  }
  Table t({"rank", "id", "knobs", "median us", "cv", "speedup", "max/mean abs err", "tensor %", "occup %", "DRAM",
           "bank confl %", "sanitize", "origin", "run"});
  int rank = 0;
  for (const auto& e : elites) {
    const auto& v = e.eval;
    const double conflicts = metric_value(v.metrics, metric::kBankConflictPct).value_or(NAN);
    t.add({std::to_string(++rank), std::to_string(e.id), config_text(v.config), fmt_us(v.fast.p50_us), fmt_num(v.fast.cv, 3),
           v.speedup > 0 ? fmt_num(v.speedup, 2) + "x" : "", worst_green(v), fmt_num(metric(v, metric::kTensorPipe), 1),
           fmt_num(metric(v, metric::kOccupancy), 1),
           std::isnan(metric(v, metric::kDramRead)) ? "" : fmt_bytes(metric(v, metric::kDramRead) + metric(v, metric::kDramWrite)),
           fmt_num(conflicts, 1), outcome_name(v.sanitize.outcome), origin_text(v.origin), std::to_string(e.run_id)});
  }
  std::cout << "profile " << profile << ", problem " << elites[0].key.problem << ", device " << elites[0].key.device << "\n";
  t.print(std::cout);
  if (a.lineage) {
    // Walk each elite back through its parents (config hashes) to the baseline or a random draw.
    std::map<std::string, StoredEvaluation> by_hash;
    for (const auto& e : s.elites(profile, a.problem, 1u << 30, std::nullopt)) by_hash.emplace(e.eval.config_hash, e);
    std::cout << "\nlineage (child <- parent, with the move that made it)\n";
    for (const auto& e : elites) {
      std::string line = "#" + std::to_string(e.id) + " " + fmt_us(e.eval.fast.p50_us) + " us";
      const StoredEvaluation* cur = &e;
      std::set<std::string> visited;
      while (cur && visited.insert(cur->eval.config_hash).second) {
        line += " [" + origin_text(cur->eval.origin) + "]";
        if (cur->eval.origin.parents.empty()) break;
        auto it = by_hash.find(cur->eval.origin.parents.front());
        if (it == by_hash.end()) {
          line += " <- " + cur->eval.origin.parents.front() + " (not measured)";
          break;
        }
        cur = &it->second;
        line += " <- #" + std::to_string(cur->id) + " " + fmt_us(cur->eval.fast.p50_us) + " us";
      }
      std::cout << line << "\n";
    }
  }
  return 0;
}

// The profile an exported kernel is built from: the run's own. A replay run's is its landscape,
// which holds the knob space but no template: then the profile the landscape names (shipped), or
// the one given with --profile, whose space must hold the exported configuration.
Profile profile_for_export(const std::optional<RunInfo>& run, const StoredEvaluation& pick, const std::string& given) {
  const bool replay = run && run->device.rfind("replay:", 0) == 0;
  if (!replay) {
    if (!given.empty() && fs::exists(given)) return load_profile(given);
    return load_profile(run ? fs::path(run->profile_path) : resolve_profile(pick.key.profile));
  }
  const std::string how = "give the profile with --profile NAME|PATH (evo export best --profile " + pick.key.profile +
                          " --to DIR)";
  Profile p;
  try {
    p = load_profile(resolve_profile(given.empty() ? pick.key.profile : given));
  } catch (const UserError& e) {
    throw UserError("run " + std::to_string(run->id) + " replayed " + run->profile_path + " (profile " +
                    pick.key.profile + "), whose kernel is not at hand: " + e.what() + "; " + how);
  }
  if (p.name != pick.key.profile)
    throw UserError("--profile " + given + " is profile " + p.name + ", the replayed landscape is of profile " +
                    pick.key.profile + "; " + how);
  if (auto why = KnobSpace(p).why_invalid(pick.eval.config))
    throw UserError("profile " + p.path.string() + " does not hold the replayed configuration " +
                    config_text(pick.eval.config) + ": " + *why + "; " + how);
  return p;
}

// --profile as a filter: a profile's name, or the name inside a profile file.
std::string profile_name(const std::string& given) {
  if (given.empty() || !fs::is_regular_file(given)) return given;
  return load_profile(given).name;
}

int cmd_export(const Globals& g, const ExportArgs& a) {
  require_db(g);
  Store s(g.db);
  std::optional<StoredEvaluation> pick;
  if (a.what == "best") {
    const std::string profile = a.profile.empty() ? default_profile(s) : profile_name(a.profile);
    auto e = s.elites(profile, "", 1);
    if (e.empty()) throw UserError("no elites for profile " + profile + " in " + g.db + ": nothing measured passed GREEN and FAST yet");
    pick = e.front();
  } else {
    std::int64_t id = 0;
    try {
      id = std::stoll(a.what);
    } catch (...) {
      throw UserError("export: '" + a.what + "' is neither 'best' nor an evaluation id");
    }
    pick = s.evaluation(id);
    if (!pick) throw UserError("no evaluation " + a.what + " in " + g.db);
    if (!pick->eval.measured()) throw UserError("evaluation " + a.what + " is " + status_name(pick->eval.status) + ", not a measured kernel");
  }
  const auto& ev = pick->eval;
  auto run = s.run(pick->run_id);
  Profile p = profile_for_export(run, *pick, a.profile);

  std::error_code ec;
  fs::create_directories(a.to, ec);
  if (ec || !fs::is_directory(a.to)) throw UserError(a.to + ": cannot create the export folder (" + ec.message() + ")");
  const std::string stem = p.name + "-" + ev.config_hash;
  const fs::path cu = fs::path(a.to) / (stem + ".cu"), js = fs::path(a.to) / (stem + ".json");

  // Every template the launches use, once, in launch order (the same knobs fixed above all of them).
  const auto launches = p.launches();
  std::set<fs::path> seen{p.kernel.source};
  std::string body = inline_includes(p.kernel.source, seen);
  for (const KernelSpec* k : launches)
    if (seen.insert(k->source).second)
      body += "\n// ---- template " + k->source.filename().string() + " ----\n" + inline_includes(k->source, seen);
  const Problem* named = p.find_problem(pick->key.problem);
  const Problem& obj = named ? *named : p.objective_problem();
  LaunchGeometry geo = launch_geometry(p.kernel, obj, ev.config);
  // A sequence of launches: each one's kernel, geometry and arguments, in the order to run them.
  const std::vector<LaunchKernel> built = launch_kernels(ev.build);
  std::string launches_text;
  nlohmann::ordered_json launches_json = nlohmann::ordered_json::array();
  for (std::size_t i = 0; launches.size() > 1 && i < launches.size(); ++i) {
    const KernelSpec& k = *launches[i];
    const LaunchGeometry lg = launch_geometry(k, obj, ev.config);
    launches_text += "// launch " + std::to_string(i + 1) + " of " + std::to_string(launches.size()) + ": " + k.name + "(" +
                     list(k.args) + ") from " + k.source.filename().string() + ", grid (" + list(std::vector<std::uint32_t>(lg.grid.begin(), lg.grid.end())) +
                     ") block (" + list(std::vector<std::uint32_t>(lg.block.begin(), lg.block.end())) +
                     ") dynamic smem " + std::to_string(lg.shared_bytes) + " B; grid = (" + list(std::vector<std::string>(k.launch.grid.begin(), k.launch.grid.end())) + ")\n";
    nlohmann::ordered_json one{{"kernel", k.name}};
    // The database keeps one lowered name per build (the first launch's): a later launch's is
    // stated only when the evaluation at hand carries it.
    if (i < built.size() && !built[i].lowered_name.empty()) one["lowered_name"] = built[i].lowered_name;
    one["template"] = k.source.filename().string();
    one["args"] = k.args;
    one["launch"] = {{"grid", lg.grid}, {"block", lg.block}, {"shared_bytes", lg.shared_bytes},
                     {"grid_expr", k.launch.grid}, {"block_expr", k.launch.block},
                     {"shared_bytes_expr", k.launch.shared_bytes}};
    launches_json.push_back(std::move(one));
  }
  // Tensor-map arguments: the user encodes each one (cuTensorMapEncodeTiled) and passes it by value.
  nlohmann::ordered_json maps = nlohmann::ordered_json::array();
  std::string maps_text;
  for (const auto& m : p.tensor_maps) {
    const TensorMapLayout t = tensor_map_layout(m, p, obj, ev.config);
    const std::vector<std::uint64_t> dims(t.dims.begin(), t.dims.begin() + t.rank);
    const std::vector<std::uint64_t> strides(t.strides_bytes.begin(), t.strides_bytes.begin() + (t.rank - 1));
    const std::vector<std::uint32_t> box(t.box.begin(), t.box.begin() + t.rank);
    const auto arg = std::find(p.kernel.args.begin(), p.kernel.args.end(), m.name);
    maps.push_back({{"name", m.name},
                    {"argument", arg == p.kernel.args.end() ? -1 : arg - p.kernel.args.begin()},
                    {"buffer", m.buffer},
                    {"data_type", tensor_map_data_type(t.dtype).name},
                    {"rank", t.rank},
                    {"dims", dims},
                    {"strides_bytes", strides},
                    {"box", box},
                    {"element_strides", std::vector<int>(static_cast<std::size_t>(t.rank), 1)},
                    {"swizzle_bytes", t.swizzle_bytes},
                    {"l2_promotion_bytes", t.l2_promotion_bytes},
                    {"interleave", "CU_TENSOR_MAP_INTERLEAVE_NONE"},
                    {"oob_fill", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"},
                    {"dims_expr", m.dims},
                    {"box_expr", m.box}});
    maps_text += "// tensor map " + m.name + " (" + obj.name + "): pass by value (const __grid_constant__ CUtensorMap), "
                 "from cuTensorMapEncodeTiled over " + m.buffer + ": " + tensor_map_data_type(t.dtype).name + ", dims {" +
                 list(dims) + "} = (" + list(m.dims) + "), byte strides {" + list(strides) + "}, box {" + list(box) +
                 "} = (" + list(m.box) + "), swizzle " + bytes_enum(t.swizzle_bytes) + ", L2 promotion " +
                 bytes_enum(t.l2_promotion_bytes) + ", interleave NONE, element strides 1, OOB fill NONE\n";
  }
  std::ostringstream h;
  h << "// " << stem << ".cu: exported by evo " << EVO_VERSION << " from evaluation " << pick->id << " (run "
    << pick->run_id << ")\n"
    << "// profile:   " << p.name << " (" << p.path.filename().string() << "), template " << p.kernel.source.filename().string()
    << " (sha256 " << sha256_hex(read_file(p.kernel.source)).substr(0, 16) << "), entry " << p.kernel.name << "\n"
    << "// knobs:     " << config_text(ev.config) << "\n"
    << "// device:    " << pick->key.device << (run && !run->driver.empty() ? ", driver " + run->driver : "") << "\n"
    << "// measured:  " << obj.name << ": median " << fmt_us(ev.fast.p50_us) << " us (cv " << fmt_num(ev.fast.cv, 3) << ", "
    << ev.fast.mode << ", " << ev.fast.iters << " iters), " << fmt_num(ev.speedup, 2) << "x the baseline in the same run\n"
    << "// GREEN:     " << outcome_name(ev.green.outcome) << " on";
  for (const auto& r : ev.green.problems) h << " " << r.problem;
  h << "; sanitizer: " << outcome_name(ev.sanitize.outcome) << "\n"
    << "// launch (" << obj.name << "): grid (" << geo.grid[0] << "," << geo.grid[1] << "," << geo.grid[2] << ") block ("
    << geo.block[0] << "," << geo.block[1] << "," << geo.block[2] << ") dynamic smem " << geo.shared_bytes << " B; grid = ("
    << p.kernel.launch.grid[0] << ", " << p.kernel.launch.grid[1] << ", " << p.kernel.launch.grid[2] << ")\n"
    << (launches.size() > 1 ? "// the unit timed is " + std::to_string(launches.size()) +
                                  " launches, in this order, on the same buffers (the launch line above is the first's):\n"
                            : std::string())
    << launches_text
    << maps_text
    << "// build:     nvcc " << nvcc_arch_flags(p.arch) << " -std=c++17 -c " << stem << ".cu   (provenance: " << stem
    << ".json)\n"
    << "// Generated file: do not edit by hand; re-export instead.\n\n";
  for (const auto& [k, v] : p.kernel.defines) h << "#define " << k << " " << v << "  // fixed by the profile\n";
  for (const auto& [k, v] : ev.config) h << "#define " << k << " " << v << "  // knob chosen by evo\n";
  h << "\n" << body;

  // The evaluation structs' JSON forms are defined for nlohmann::json; wrapped so they sit in an
  // ordered document.
  nlohmann::ordered_json prov{
      {"format", "evo-export/1"},
      {"evo_version", EVO_VERSION},
      {"profile", p.name},
      {"profile_path", p.path.filename().string()},
      {"template", p.kernel.source.filename().string()},
      {"template_sha256", sha256_hex(read_file(p.kernel.source))},
      {"kernel", p.kernel.name},
      {"lowered_name", ev.build.lowered_name},
      {"arch", p.arch},
      {"defines", p.kernel.defines},
      {"knobs", ev.config},
      {"config_hash", ev.config_hash},
      {"evaluation_id", pick->id},
      {"run", pick->run_id},
      {"device", pick->key.device},
      {"driver", run ? run->driver : ""},
      {"problem", obj.name},
      {"problem_sizes", obj.sizes},
      {"launch", {{"grid", geo.grid}, {"block", geo.block}, {"shared_bytes", geo.shared_bytes},
                  {"grid_expr", p.kernel.launch.grid}, {"block_expr", p.kernel.launch.block},
                  {"shared_bytes_expr", p.kernel.launch.shared_bytes}}},
      {"args", p.kernel.args},
      {"timing", nlohmann::json(ev.fast)},
      {"speedup_vs_baseline", ev.speedup},
      {"baseline", p.baseline},
      {"green", nlohmann::json(ev.green)},
      {"static", nlohmann::json(ev.static_verdict)},
      {"sanitize", nlohmann::json(ev.sanitize)},
      {"metrics", nlohmann::json(ev.metrics)},
      {"origin", nlohmann::json(ev.origin)},
      {"measured_at", pick->created_at}};
  if (launches.size() > 1) {  // after the first launch's fields; absent for a single launch
    nlohmann::ordered_json with;
    for (auto& [k, v] : prov.items()) {
      with[k] = v;
      if (k == "args") with["launches"] = launches_json;
    }
    prov = std::move(with);
  }
  if (!maps.empty()) {  // beside the args they fill; absent for a profile without tensor maps
    nlohmann::ordered_json with;
    for (auto& [k, v] : prov.items()) {
      with[k] = v;
      if (k == "args") with["tensor_maps"] = maps;
    }
    prov = std::move(with);
  }
  write_atomically(cu, h.str());
  write_atomically(js, prov.dump(2) + "\n");
  std::cout << "wrote " << cu.string() << " and " << js.string() << " (" << config_text(ev.config) << ", "
            << fmt_us(ev.fast.p50_us) << " us on " << obj.name << ")\n";
  return 0;
}

int cmd_export_landscape(const Globals& g, std::int64_t run, const std::string& to) {
  require_db(g);
  Store s(g.db);
  if (!s.run(run)) throw UserError("no run " + std::to_string(run) + " in " + g.db);
  write_landscape(s, run, to);
  std::cout << "wrote " << to << "\n";
  return 0;
}

int cmd_db_check(const Globals& g) {
  require_db(g);
  Store s(g.db);
  DbCheck c = s.check();
  if (c.ok) {
    std::cout << g.db << ": ok (schema v" << Store::schema_version() << ", " << s.runs().size() << " runs)\n";
    return 0;
  }
  for (const auto& p : c.problems) std::cout << g.db << ": " << p << "\n";
  return 1;
}

}  // namespace evo::cli
