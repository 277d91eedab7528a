// evo runs | compare | show-elites | export | export-landscape | db check: reading the store.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

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
#include "engine/buffers.h"
#include "engine/compiler.h"
#include "engine/data_dir.h"
#include "engine/error.h"
#include "engine/expr.h"
#include "engine/evaluation_json.h"
#include "engine/hash.h"
#include "engine/replay.h"  // defines: landscape_coverage, coverage_note
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
  if (runs.empty()) throw UserError(s.name() + ": no runs yet (run `evo run` first)");
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
      std::error_code ec;  // an include that cannot be resolved stays an #include line
      fs::path dep = fs::weakly_canonical(file.parent_path() / m[1].str(), ec);
      if (!ec && fs::exists(dep, ec)) {
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
  Store s(g.db, Store::Open::Existing);  // reading commands create nothing
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
  Table t({"run", "profile", "problem", "strategy", "status", "budget", "new", "read back", "best us", "speedup", "device",
           "started"});
  for (const auto& r : runs) {
    auto best = s.elites(r.profile, "", 1, r.id);
    // The problem the run timed: `evo run --objective` runs one per problem.
    std::string problem = best.empty() ? "" : best[0].key.problem;
    if (problem.empty())
      try {
        problem = nlohmann::json::parse(r.options_json).value("objective", std::string());
      } catch (const nlohmann::json::exception&) {
      }
    t.add({std::to_string(r.id), r.profile, problem, r.strategy, r.status, std::to_string(r.budget), std::to_string(r.new_evaluations),
           std::to_string(r.evaluations - r.new_evaluations), best.empty() ? "" : fmt_us(best[0].eval.fast.p50_us),
           best.empty() ? "" : fmt_num(best[0].eval.speedup, 2) + "x", r.device, r.started_at});
  }
  t.print(std::cout);
  return 0;
}

int cmd_compare(const Globals& g, std::int64_t a, std::int64_t b) {
  Store s(g.db, Store::Open::Existing);  // reading commands create nothing
  std::vector<RunInfo> info;
  std::vector<std::vector<StoredEvaluation>> evals;
  for (auto id : {a, b}) {
    auto r = s.run(id);
    if (!r) throw UserError("no run " + std::to_string(id) + " in " + s.name() + " (see `evo runs`)");
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
  Store s(g.db, Store::Open::Existing);  // reading commands create nothing
  const std::string profile = a.profile.empty() ? default_profile(s) : a.profile;
  // A kernel per shape: the best of each (problem, device), ranked apart (timings of different
  // problems or GPUs are not comparable), groups in the order their fastest appears.
  std::vector<std::pair<std::string, std::vector<StoredEvaluation>>> groups;
  for (auto& e : s.elites(profile, a.problem, 0, a.run)) {
    const std::string key = e.key.problem + "\n" + e.key.device;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& gr) { return gr.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    if (a.top == 0 || it->second.size() < a.top) it->second.push_back(std::move(e));
  }
  std::vector<StoredEvaluation> elites;
  for (const auto& gr : groups) elites.insert(elites.end(), gr.second.begin(), gr.second.end());
  if (g.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& gr : groups) {
      int rank = 0;
      for (const auto& e : gr.second)
        out.push_back({{"rank", ++rank}, {"evaluation_id", e.id}, {"run", e.run_id}, {"profile", e.key.profile},
                       {"problem", e.key.problem}, {"device", e.key.device}, {"evaluation", e.eval}});
    }
    std::cout << out.dump(2) << '\n';
    return 0;
  }
  if (elites.empty()) {
    std::cout << "no measured candidates for profile " << profile << (a.problem.empty() ? "" : " problem " + a.problem) << "\n";
    return 1;
  }
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& group = groups[gi].second;
    Table t({"rank", "id", "knobs", "median us", "cv", "speedup", "max/mean abs err", "tensor %", "occup %", "DRAM",
             "bank confl %", "sanitize", "origin", "run"});
    int rank = 0;
    for (const auto& e : group) {
      const auto& v = e.eval;
      const double conflicts = metric_value(v.metrics, metric::kBankConflictPct).value_or(NAN);
      t.add({std::to_string(++rank), std::to_string(e.id), config_text(v.config), fmt_us(v.fast.p50_us), fmt_num(v.fast.cv, 3),
             v.speedup > 0 ? fmt_num(v.speedup, 2) + "x" : "", worst_green(v), fmt_num(metric(v, metric::kTensorPipe), 1),
             fmt_num(metric(v, metric::kOccupancy), 1),
             std::isnan(metric(v, metric::kDramRead)) ? "" : fmt_bytes(metric(v, metric::kDramRead) + metric(v, metric::kDramWrite)),
             fmt_num(conflicts, 1), outcome_name(v.sanitize.outcome), origin_text(v.origin), std::to_string(e.run_id)});
    }
    std::cout << (gi ? "\n" : "") << "profile " << profile << ", problem " << group[0].key.problem << ", device "
              << group[0].key.device << "\n";
    t.print(std::cout);
  }
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
// the one given with --profile, whose space must hold the exported configuration. A knob the profile
// gained after the landscape was recorded takes its baseline value in pick (the template's behaviour
// before the knob, as for every knob added since: their baselines are 0, "off"), and the export says so (say:
// once per kernel written, not again where only the profile is wanted).
Profile profile_for_export(const std::optional<RunInfo>& run, StoredEvaluation& pick, const std::string& given,
                           bool say = true) {
  const bool replay = run && run->device.rfind("replay:", 0) == 0;
  if (!replay) {
    std::error_code ec;
    if (!given.empty() && fs::exists(given, ec)) return load_profile(given);
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
  std::string added;
  for (const auto& k : p.knobs)
    if (!pick.eval.config.count(k.name) && p.baseline.count(k.name)) {
      pick.eval.config[k.name] = p.baseline.at(k.name);
      added += (added.empty() ? "" : ",") + k.name + "=" + std::to_string(p.baseline.at(k.name));
    }
  if (say && !added.empty())
    spdlog::warn("evaluation {} was recorded before profile {} had {}: exported with the baseline's value ({})", pick.id,
                 p.name, added.find(',') == std::string::npos ? "this knob" : "these knobs", added);
  if (auto why = KnobSpace(p).why_invalid(pick.eval.config))
    throw UserError("profile " + p.path.string() + " does not hold the replayed configuration " +
                    config_text(pick.eval.config) + ": " + *why + "; " + how);
  return p;
}

// --profile as a filter: a profile's name, or the name inside a profile file.
std::string profile_name(const std::string& given) {
  std::error_code ec;  // a name too long to be a file is a name
  if (given.empty() || !fs::is_regular_file(given, ec)) return given;
  return load_profile(given).name;
}

namespace {

// One exported kernel: what the dispatch table and the PyTorch module refer to.
struct ExportedKernel {
  StoredEvaluation pick;
  std::string problem;                    // the problem FAST timed it on
  std::map<std::string, double> sizes;    // that problem's sizes
  std::string stem;                       // <profile>-<config hash>: DIR/<stem>.cu, .json (and .cubin)
  std::string entry;                      // the entry name in the .cu (renamed per problem with --dispatch)
};

struct ExportOptions {
  bool rename_entry = false;  // --dispatch: each problem's kernel its own symbol, so all link into one binary
  bool cubins = false;        // --torch: the cubins beside the .cu (the module loads them; no compiler needed)
  std::string cache;          // compile cache for the cubins
};

// A C/C++ identifier made of a problem name: "mission512" stays, "long-4k" becomes "long_4k".
std::string identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "p" + out;
  return out;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

const char* role_name(BufferRole r) {
  switch (r) {
    case BufferRole::Input: return "input";
    case BufferRole::Output: return "output";
    case BufferRole::InOut: return "inout";
    case BufferRole::Scratch: return "scratch";
  }
  return "input";
}

nlohmann::ordered_json init_json(const InitSpec& i) {
  switch (i.kind) {
    case InitSpec::Kind::Normal: return {{"dist", "normal"}, {"mean", i.a}, {"std", i.b}};
    case InitSpec::Kind::Uniform: return {{"dist", "uniform"}, {"low", i.a}, {"high", i.b}};
    case InitSpec::Kind::Zeros: return {{"dist", "zeros"}};
    case InitSpec::Kind::Constant: return {{"dist", "constant"}, {"value", i.a}};
    case InitSpec::Kind::Raw: return {{"dist", "raw"}, {"file", i.file.string()}};
  }
  return {};
}

// The torch dtype a buffer is passed as by the PyTorch module (python/evo_torch.py).
std::optional<std::string> torch_dtype(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::FP8_E4M3: return "float8_e4m3fn";
    case DType::FP8_E5M2: return "float8_e5m2";
    case DType::I32: return "int32";
    case DType::U8: return "uint8";
    case DType::I8: return "int8";
    case DType::U16: return "uint16";
    case DType::I16: return "int16";
    case DType::U32: return "uint32";
    case DType::I64: return "int64";
    case DType::U64: return "uint64";
    case DType::F64: return "float64";
  }
  return std::nullopt;
}

// What --torch cannot hand to PyTorch, in one line; nullopt when every buffer can be a tensor.
std::optional<std::string> why_not_torch(const Profile& p) {
  for (const auto& b : p.buffers) {
    if (!torch_dtype(b.dtype))
      return "buffer " + b.name + " is " + dtype_name(b.dtype) + ", which has no torch dtype";
    if (!b.symbol.empty())
      return "buffer " + b.name + " fills the __constant__ symbol " + b.symbol +
             ", which the PyTorch module does not write (export without --torch and fill it with cudaMemcpyToSymbol)";
  }
  return std::nullopt;
}

// The export folder, made when the first file is written (a refused export leaves none behind).
void make_folder(const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec || !fs::is_directory(to)) throw UserError(to.string() + ": cannot create the export folder (" + ec.message() + ")");
}

fs::path torch_module() { return data_dir() / "python" / "evo_torch.py"; }

ExportedKernel export_kernel(Store& s, StoredEvaluation chosen, const std::string& given_profile, const fs::path& to,
                             const ExportOptions& xo) {
  auto run = s.run(chosen.run_id);
  Profile p = profile_for_export(run, chosen, given_profile);
  const auto& ev = chosen.eval;
  if (xo.cubins)
    if (auto why = why_not_torch(p)) throw UserError("--torch: profile " + p.name + ": " + *why);

  const std::string stem = p.name + "-" + ev.config_hash;
  const fs::path cu = to / (stem + ".cu"), js = to / (stem + ".json");

  // Every template the launches use, once, in launch order (the same knobs fixed above all of them).
  const auto launches = p.launches();
  std::set<fs::path> seen{p.kernel.source};
  std::string body = inline_includes(p.kernel.source, seen);
  for (const KernelSpec* k : launches)
    if (seen.insert(k->source).second)
      body += "\n// ---- template " + k->source.filename().string() + " ----\n" + inline_includes(k->source, seen);
  const Problem* named = p.find_problem(chosen.key.problem);
  const Problem& obj = named ? *named : p.objective_problem();
  LaunchGeometry geo = launch_geometry(p.kernel, obj, ev.config);

  // --dispatch: entry points renamed per problem (a macro before the template), so that every
  // problem's kernel links into one program. Only plain identifiers can be renamed so.
  std::string renames, entry = p.kernel.name;
  if (xo.rename_entry) {
    std::set<std::string> done;
    for (const KernelSpec* k : launches) {
      if (!is_identifier(k->name) || !done.insert(k->name).second) continue;
      const std::string to_name = k->name + "__" + identifier(obj.name);
      renames += "#define " + k->name + " " + to_name + "  // entry renamed for problem " + obj.name + " (--dispatch)\n";
      if (k->name == p.kernel.name) entry = to_name;
    }
  }

  // --torch: the cubins, built again from the template as it is now through the compile cache,
  // so the module needs no compiler (the database may be on another machine than the cache).
  make_folder(to);
  nlohmann::ordered_json cubin_files = nlohmann::ordered_json::array();
  std::vector<LaunchKernel> built = launch_kernels(ev.build);
  bool rebuilt_as_measured = true;
  if (xo.cubins) {
    const std::string arch = run && !run->arch.empty() && run->device.rfind("replay:", 0) != 0 ? run->arch : p.arch;
    CompileCache cache(xo.cache.empty() ? default_cache_dir() : fs::path(xo.cache));
    const auto requests = candidate_requests(p, ev.config, arch);
    std::vector<Build> builds;
    for (const auto& r : requests) {
      builds.push_back(compile(r, cache));
      if (!builds.back().ok)
        throw UserError("--torch: " + stem + " does not compile for " + arch + " any more: " +
                        builds.back().log.substr(0, builds.back().log.find('\n')));
    }
    const Build b = launch_build(launches, requests, builds);
    rebuilt_as_measured = b.key == chosen.key.build_key;
    if (!rebuilt_as_measured)
      spdlog::warn("{}: the template, its options or NVRTC changed since evaluation {} was measured; the cubin is "
                   "built from today's text (its .json says so)", stem, chosen.id);
    built = launch_kernels(b);
    std::map<std::string, std::string> copied;  // one file per cubin, launches of one template share it
    for (std::size_t i = 0; i < built.size(); ++i) {
      auto [it, fresh] = copied.emplace(built[i].cubin_path, stem + (copied.empty() ? "" : "." + std::to_string(copied.size())) + ".cubin");
      if (fresh) {
        std::error_code ec;
        fs::copy_file(built[i].cubin_path, to / it->second, fs::copy_options::overwrite_existing, ec);
        if (ec) throw UserError((to / it->second).string() + ": cannot write the cubin (" + ec.message() + ")");
      }
      cubin_files.push_back(it->second);
    }
  }

  // A sequence of launches: each one's kernel, geometry and arguments, in the order to run them.
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
    // stated only when the evaluation at hand (or the --torch rebuild) carries it.
    if (i < built.size() && !built[i].lowered_name.empty()) one["lowered_name"] = built[i].lowered_name;
    if (i < cubin_files.size()) one["cubin"] = cubin_files[i];
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
  // Scratch a caller must allocate (and keep between launches, for kernels that leave state there for the next).
  std::string scratch_text;
  for (const auto& b : p.buffers) {
    if (b.role != BufferRole::Scratch) continue;
    std::int64_t n = 1;
    for (const auto d : buffer_shape(b, p.kernel, obj, ev.config)) n *= d;
    scratch_text += (scratch_text.empty() ? "// scratch (" + obj.name + "): " : "; ") + b.name + " " + std::to_string(n) + " " +
                    dtype_name(b.dtype) + (b.init.kind == InitSpec::Kind::Zeros ? ", zeros before the first launch" : "");
  }
  if (!scratch_text.empty()) scratch_text += " (shapes: " + p.path.filename().string() + " or the .json beside this file)\n";
  std::ostringstream h;
  h << "// " << stem << ".cu: exported by evo " << EVO_VERSION << " from evaluation " << chosen.id << " (run "
    << chosen.run_id << ")\n"
    << "// profile:   " << p.name << " (" << p.path.filename().string() << "), template " << p.kernel.source.filename().string()
    << " (sha256 " << sha256_hex(read_file(p.kernel.source)).substr(0, 16) << "), entry " << entry << "\n"
    << "// knobs:     " << config_text(ev.config) << "\n"
    << "// device:    " << chosen.key.device << (run && !run->driver.empty() ? ", driver " + run->driver : "") << "\n"
    << "// measured:  " << obj.name << ": median " << fmt_us(ev.fast.p50_us) << " us (cv " << fmt_num(ev.fast.cv, 3) << ", "
    << ev.fast.mode << ", " << ev.fast.iters << " iters), " << fmt_num(ev.speedup, 2) << "x the baseline in the same run\n"
    << "// GREEN:     " << outcome_name(ev.green.outcome) << " on";
  for (const auto& r : ev.green.problems) h << " " << r.problem;
  // An evaluation recorded before verdicts named their reference: the profile's, as it is now.
  h << " against " << (ev.green.reference.empty() ? p.reference_text() : ev.green.reference);
  h << "; sanitizer: " << outcome_name(ev.sanitize.outcome) << "\n"
    << "// launch (" << obj.name << "): grid (" << geo.grid[0] << "," << geo.grid[1] << "," << geo.grid[2] << ") block ("
    << geo.block[0] << "," << geo.block[1] << "," << geo.block[2] << ") dynamic smem " << geo.shared_bytes << " B; grid = ("
    << p.kernel.launch.grid[0] << ", " << p.kernel.launch.grid[1] << ", " << p.kernel.launch.grid[2] << ")\n"
    << (launches.size() > 1 ? "// the unit timed is " + std::to_string(launches.size()) +
                                  " launches, in this order, on the same buffers (the launch line above is the first's):\n"
                            : std::string())
    << launches_text
    << scratch_text
    << maps_text
    << "// build:     nvcc " << nvcc_arch_flags(p.arch) << " -std=c++17 -c " << stem << ".cu   (provenance: " << stem
    << ".json)\n"
    << "// Generated file: do not edit by hand; re-export instead.\n\n";
  for (const auto& [k, v] : p.kernel.defines) h << "#define " << k << " " << v << "  // fixed by the profile\n";
  for (const auto& [k, v] : ev.config) h << "#define " << k << " " << v << "  // knob chosen by evo\n";
  h << renames << "\n" << body;

  // What a program needs to call the kernel on its own buffers (the PyTorch module reads these).
  std::vector<std::string> size_names;
  for (const auto& [k, _] : obj.sizes) size_names.push_back(k);
  nlohmann::ordered_json buffers = nlohmann::ordered_json::array();
  for (const auto& b : p.buffers) {
    nlohmann::ordered_json one{{"name", b.name}, {"dtype", dtype_name(b.dtype)}, {"shape", b.shape},
                               {"role", role_name(b.role)}, {"init", init_json(b.init)}};
    if (auto t = torch_dtype(b.dtype)) one["torch_dtype"] = *t;
    if (!b.scale_arg.empty()) one["scale_arg"] = b.scale_arg;
    if (!b.symbol.empty()) one["symbol"] = b.symbol;
    buffers.push_back(std::move(one));
  }
  nlohmann::ordered_json scalars = nlohmann::ordered_json::array();
  for (const auto& sc : p.scalars) scalars.push_back({{"name", sc.name}, {"dtype", dtype_name(sc.dtype)}, {"value", sc.value}});

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
      {"entry", entry},
      {"lowered_name", built.empty() ? ev.build.lowered_name : built.front().lowered_name},
      {"arch", p.arch},
      {"defines", p.kernel.defines},
      {"knobs", ev.config},
      {"config_hash", ev.config_hash},
      {"evaluation_id", chosen.id},
      {"run", chosen.run_id},
      {"device", chosen.key.device},
      {"driver", run ? run->driver : ""},
      {"problem", obj.name},
      {"problem_sizes", obj.sizes},
      {"sizes", size_names},
      {"launch", {{"grid", geo.grid}, {"block", geo.block}, {"shared_bytes", geo.shared_bytes},
                  {"grid_expr", p.kernel.launch.grid}, {"block_expr", p.kernel.launch.block},
                  {"shared_bytes_expr", p.kernel.launch.shared_bytes}}},
      {"args", p.kernel.args},
      {"buffers", buffers},
      {"scalars", scalars},
      {"constraints", p.constraints},
      {"timing", nlohmann::json(ev.fast)},
      {"speedup_vs_baseline", ev.speedup},
      {"baseline", p.baseline},
      {"green", nlohmann::json(ev.green)},
      {"static", nlohmann::json(ev.static_verdict)},
      {"sanitize", nlohmann::json(ev.sanitize)},
      {"metrics", nlohmann::json(ev.metrics)},
      {"origin", nlohmann::json(ev.origin)},
      {"measured_at", chosen.created_at}};
  if (!cubin_files.empty()) {  // beside the lowered name they hold
    nlohmann::ordered_json with;
    for (auto& [k, v] : prov.items()) {
      with[k] = v;
      if (k == "lowered_name") {
        with["cubin"] = cubin_files.front();
        with["cubin_built_as_measured"] = rebuilt_as_measured;
      }
    }
    prov = std::move(with);
  }
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
  std::cout << "wrote " << cu.string() << " and " << js.string() << (cubin_files.empty() ? "" : " (+ cubin)") << " ("
            << config_text(ev.config) << ", " << fmt_us(ev.fast.p50_us) << " us on " << obj.name << ")\n";
  return {chosen, obj.name, obj.sizes, stem, entry};
}

// The dispatch rule, the same in the C++ header and python/evo_torch.py (docs/guide.md): the
// kernels whose profile constraints hold at the call's sizes (with their own knobs) are
// candidates; the nearest by sum over sizes of |log2(1 + x) - log2(1 + tuned)| is taken, the
// earlier on a tie. No candidate: none (the header returns -1, the module raises).
constexpr const char* kDispatchRule =
    "among the kernels whose profile constraints hold at the call's sizes (with their own knobs), the one whose "
    "tuned sizes are nearest by the sum over sizes of |log2(1 + x) - log2(1 + tuned)|; the earlier on a tie; "
    "none: no kernel";

void write_dispatch(const Profile& p, const std::vector<ExportedKernel>& ks, const fs::path& to, bool torch) {
  const std::string base = p.name + "_dispatch";
  std::vector<std::string> size_names;
  for (const auto& [k, _] : ks.front().sizes) size_names.push_back(k);

  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const auto& k : ks)
    entries.push_back({{"problem", k.problem}, {"sizes", k.sizes}, {"export", k.stem + ".json"}, {"kernel", k.stem + ".cu"},
                       {"entry", k.entry}, {"knobs", k.pick.eval.config}, {"p50_us", k.pick.eval.fast.p50_us},
                       {"device", k.pick.key.device}, {"evaluation_id", k.pick.id}});
  nlohmann::ordered_json table{{"format", "evo-dispatch/1"}, {"profile", p.name}, {"sizes", size_names},
                               {"rule", kDispatchRule},     {"entries", entries}};
  write_atomically(to / (base + ".json"), table.dump(2) + "\n");

  // The header: sizes, the table, each kernel's constraints and launch geometry as C++.
  const std::string ns = "evo_" + identifier(p.name);
  std::ostringstream h;
  h << "// " << base << ".h: exported by evo " << EVO_VERSION << ": picks the tuned kernel of profile " << p.name
    << " for a problem's sizes.\n// Rule: " << kDispatchRule << ".\n"
    << "// Kernels (" << ks.front().pick.key.device << "):\n";
  for (const auto& k : ks)
    h << "//   " << k.problem << ": " << k.stem << ".cu, entry " << k.entry << ", " << fmt_us(k.pick.eval.fast.p50_us)
      << " us, " << config_text(k.pick.eval.config) << "\n";
  h << "// Generated file: do not edit by hand; re-export instead.\n#pragma once\n#include <cmath>\n\nnamespace " << ns
    << " {\n\nstruct Sizes {\n";
  for (const auto& n : size_names) h << "  double " << identifier(n) << ";\n";
  const bool sms = uses_device_sms(p) && std::find(size_names.begin(), size_names.end(), kDeviceSmsVar) == size_names.end();
  if (sms) h << "  double " << kDeviceSmsVar << " = 132;  // the GPU's multiprocessor count (cudaDevAttrMultiProcessorCount)\n";
  h << "};\n\nstruct Kernel {\n  const char* problem;  // tuned on\n  const char* file;     // the exported .cu\n"
    << "  const char* entry;    // its entry point\n  Sizes tuned;\n  double p50_us;       // measured on the tuned problem\n};\n\n"
    << "inline constexpr int kKernels = " << ks.size() << ";\ninline const Kernel kTable[kKernels] = {\n";
  for (const auto& k : ks) {
    h << "    {\"" << k.problem << "\", \"" << k.stem << ".cu\", \"" << k.entry << "\", {";
    for (std::size_t i = 0; i < size_names.size(); ++i) h << (i ? ", " : "") << number_text(k.sizes.at(size_names[i]));
    h << "}, " << number_text(k.pick.eval.fast.p50_us) << "},\n";
  }
  h << "};\n\nstruct Launch {\n  unsigned grid[3], block[3];\n  unsigned long long shared_bytes;\n};\n\n";

  auto var_for = [&](const Config& c) {
    return [&, c](const std::string& name) -> std::string {
      if (std::find(size_names.begin(), size_names.end(), name) != size_names.end()) return "s." + identifier(name);
      if (name == kDeviceSmsVar && sms) return std::string("s.") + kDeviceSmsVar;
      if (auto it = c.find(name); it != c.end()) return std::to_string(it->second);
      if (auto it = p.kernel.defines.find(name); it != p.kernel.defines.end()) return "(" + it->second + ")";
      throw UserError("--dispatch: profile " + p.name + ": '" + name + "' is neither a size, a knob nor a define");
    };
  };
  h << "// Whether kernel i may run these sizes: its profile's constraints, with its knobs.\n"
    << "inline bool holds(int i, const Sizes& s) {\n  switch (i) {\n";
  for (std::size_t i = 0; i < ks.size(); ++i) {
    h << "    case " << i << ":\n      return true";
    for (const auto& c : p.constraints) h << "\n          && (" << expression_to_cpp(c, var_for(ks[i].pick.eval.config)) << ") != 0.0";
    h << ";\n";
  }
  h << "  }\n  return false;\n}\n\n"
    << "// Kernel i's launch for these sizes (the profile's launch expressions, with its knobs).\n"
    << "inline Launch launch(int i, const Sizes& s) {\n  Launch l{};\n  switch (i) {\n";
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const auto v = var_for(ks[i].pick.eval.config);
    h << "    case " << i << ":\n";
    for (int d = 0; d < 3; ++d) {
      h << "      l.grid[" << d << "] = unsigned(" << expression_to_cpp(p.kernel.launch.grid[d], v) << ");\n";
      h << "      l.block[" << d << "] = unsigned(" << expression_to_cpp(p.kernel.launch.block[d], v) << ");\n";
    }
    h << "      l.shared_bytes = (unsigned long long)(" << expression_to_cpp(p.kernel.launch.shared_bytes, v) << ");\n"
      << "      break;\n";
  }
  h << "  }\n  return l;\n}\n\n"
    << "// The kernel to run for these sizes (an index into kTable), or -1 when none may.\ninline int pick(const Sizes& s) {\n"
    << "  int best = -1;\n  double best_d = 0;\n  for (int i = 0; i < kKernels; ++i) {\n    if (!holds(i, s)) continue;\n"
    << "    double d = 0;\n";
  for (const auto& n : size_names)
    h << "    d += std::fabs(std::log2(1 + s." << identifier(n) << ") - std::log2(1 + kTable[i].tuned." << identifier(n) << "));\n";
  h << "    if (best < 0 || d < best_d) best = i, best_d = d;\n  }\n  return best;\n}\n\n}  // namespace " << ns << "\n";
  write_atomically(to / (base + ".h"), h.str());
  std::cout << "wrote " << (to / (base + ".h")).string() << " and " << (to / (base + ".json")).string() << " ("
            << ks.size() << " kernel" << (ks.size() == 1 ? "" : "s") << ")\n";

  if (torch) {
    const fs::path module = torch_module();
    std::error_code ec;
    fs::copy_file(module, to / "evo_torch.py", fs::copy_options::overwrite_existing, ec);
    if (ec) throw UserError(module.string() + ": cannot copy the PyTorch module (" + ec.message() + ")");
    std::cout << "wrote " << (to / "evo_torch.py").string() << ": import evo_torch; f = evo_torch.load(\""
              << (to / (base + ".json")).string() << "\"); out = f(...)\n";
  }
}

}  // namespace

int cmd_export(const Globals& g, const ExportArgs& a) {
  Store s(g.db, Store::Open::Existing);  // reading commands create nothing
  // --torch copies the module evo ships: a missing one is said before anything is written.
  if (a.torch && !fs::is_regular_file(torch_module()))
    throw UserError(torch_module().string() + ": the PyTorch module is not installed beside evo (reinstall, or pass --data-dir)");
  ExportOptions xo;
  xo.rename_entry = a.dispatch;
  xo.cubins = a.torch;
  xo.cache = g.cache;

  if (a.what != "best") {
    if (a.dispatch) throw UserError("--dispatch exports each problem's best: give 'best', not an evaluation id");
    std::int64_t id = 0;
    try {
      id = std::stoll(a.what);
    } catch (...) {
      throw UserError("export: '" + a.what + "' is neither 'best' nor an evaluation id");
    }
    auto pick = s.evaluation(id);
    if (!pick) throw UserError("no evaluation " + a.what + " in " + s.name());
    if (!pick->eval.measured()) throw UserError("evaluation " + a.what + " is " + status_name(pick->eval.status) + ", not a measured kernel");
    ExportedKernel k = export_kernel(s, *pick, a.profile, a.to, xo);
    if (a.torch) write_dispatch(profile_for_export(s.run(k.pick.run_id), k.pick, a.profile), {k}, a.to, true);
    return 0;
  }

  const std::string profile = a.profile.empty() ? default_profile(s) : profile_name(a.profile);
  auto all = s.elites(profile, a.problem, 0);
  if (all.empty())
    throw UserError("no elites for profile " + profile + (a.problem.empty() ? "" : " problem " + a.problem) + " in " + s.name() +
                    ": nothing measured passed GREEN and FAST yet");
  // Timings are compared within one device only: the newest run's, where several measured.
  std::string device = all.front().key.device;
  for (const auto& r : s.runs())
    if (r.profile == profile)
      for (const auto& e : all)
        if (e.key.device == r.device) device = r.device;
  // Best per problem, in the profile's order of problems where it is at hand, else as found.
  std::map<std::string, StoredEvaluation> best;
  for (const auto& e : all)
    if (e.key.device == device && !best.count(e.key.problem)) best.emplace(e.key.problem, e);
  if (!a.dispatch) {
    // One kernel: the problem asked for, else the newest run's.
    std::string problem = a.problem;
    if (problem.empty()) {
      for (const auto& r : s.runs())
        if (r.profile == profile && r.device == device)
          if (auto ev = s.evaluations_of_run(r.id); !ev.empty()) problem = ev.front().key.problem;
      if (!best.count(problem)) problem = best.begin()->first;
    }
    ExportedKernel k = export_kernel(s, best.at(problem), a.profile, a.to, xo);
    if (a.torch) write_dispatch(profile_for_export(s.run(k.pick.run_id), k.pick, a.profile), {k}, a.to, true);
    return 0;
  }
  StoredEvaluation first = best.begin()->second;
  const Profile p = profile_for_export(s.run(first.run_id), first, a.profile, false);
  std::vector<ExportedKernel> ks;
  // A configuration best on several problems is one file with one entry (named after its first
  // problem), listed once per problem in the table: writing it again per problem would leave only
  // the last problem's entry name in the file, and the header's other names undefined.
  std::map<std::string, std::size_t> written;  // config hash -> its first kernel in ks
  for (const auto& pr : p.problems) {
    auto it = best.find(pr.name);
    if (it == best.end()) continue;
    if (auto w = written.find(it->second.eval.config_hash); w != written.end()) {
      ExportedKernel again = ks[w->second];
      again.pick = it->second;
      again.problem = pr.name;
      again.sizes = pr.sizes;
      ks.push_back(std::move(again));
      continue;
    }
    written.emplace(it->second.eval.config_hash, ks.size());
    ks.push_back(export_kernel(s, it->second, a.profile, a.to, xo));
  }
  for (const auto& [name, e] : best)
    if (!p.find_problem(name)) ks.push_back(export_kernel(s, e, a.profile, a.to, xo));
  write_dispatch(p, ks, a.to, a.torch);
  return 0;
}

int cmd_export_landscape(const Globals& g, std::int64_t run, const std::string& to) {
  Store s(g.db, Store::Open::Existing);  // reading commands create nothing
  if (!s.run(run)) throw UserError("no run " + std::to_string(run) + " in " + s.name());
  const Landscape l = write_landscape(s, run, to);
  std::cout << "wrote " << to << "\n";
  // A run cut short exported what it evaluated: say so, so a replay's failures are not taken for the kernel's.
  if (const std::string note = coverage_note(to, landscape_coverage(l, KnobSpace(landscape_profile(l, to)))); !note.empty())
    std::cout << note << "\n";
  return 0;
}

int cmd_db_check(const Globals& g) {
  Store s(g.db, Store::Open::Existing);  // reading commands create nothing
  DbCheck c = s.check();
  if (c.ok) {
    std::cout << s.name() << ": ok (schema v" << Store::schema_version() << ", " << s.runs().size() << " runs)\n";
    return 0;
  }
  for (const auto& p : c.problems) std::cout << s.name() << ": " << p << "\n";
  return 1;
}

}  // namespace evo::cli
