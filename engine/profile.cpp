#include <cmath>
#include "engine/profile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "engine/data_dir.h"
#include "engine/error.h"
#include "engine/expr.h"
#include "engine/files.h"
#include "engine/hash.h"
#include "engine/npy.h"
#include "engine/space.h"
#include "engine/t1.h"

namespace evo {

using Json = nlohmann::ordered_json;  // knob order in the file is the order users read

std::size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: case DType::U32: return 4;
    case DType::F16: case DType::BF16: case DType::U16: case DType::I16: return 2;
    case DType::FP8_E4M3: case DType::FP8_E5M2: case DType::U8: case DType::I8: return 1;
    case DType::I64: case DType::U64: case DType::F64: return 8;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::FP8_E4M3: return "fp8_e4m3";
    case DType::FP8_E5M2: return "fp8_e5m2";
    case DType::I32: return "i32";
    case DType::U8: return "u8";
    case DType::I8: return "i8";
    case DType::U16: return "u16";
    case DType::I16: return "i16";
    case DType::U32: return "u32";
    case DType::I64: return "i64";
    case DType::U64: return "u64";
    case DType::F64: return "f64";
  }
  return "?";
}

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> all = {DType::F32, DType::F16, DType::BF16, DType::FP8_E4M3, DType::FP8_E5M2,
                                         DType::I32, DType::U8,  DType::I8,   DType::U16,      DType::I16,
                                         DType::U32, DType::I64, DType::U64,  DType::F64};
  return all;
}

bool is_integer(DType t) {
  switch (t) {
    case DType::I32: case DType::U8: case DType::I8: case DType::U16: case DType::I16: case DType::U32:
    case DType::I64: case DType::U64: return true;
    default: return false;
  }
}

bool has_poison(DType t) { return !(is_integer(t) && dtype_bytes(t) < 4); }

bool npy_exact(DType t) { return t != DType::BF16 && t != DType::FP8_E4M3 && t != DType::FP8_E5M2; }

const char* npy_descr(DType t) {
  switch (t) {
    case DType::F16: return "<f2";
    case DType::I32: return "<i4";
    case DType::U8: return "|u1";
    case DType::I8: return "|i1";
    case DType::U16: return "<u2";
    case DType::I16: return "<i2";
    case DType::U32: return "<u4";
    case DType::I64: return "<i8";
    case DType::U64: return "<u8";
    case DType::F64: return "<f8";
    default: return "<f4";  // f32, and the values of formats NumPy lacks (bf16, fp8)
  }
}

GreenThresholds green_thresholds(const GreenThresholds& profile, const BufferSpec& b) {
  GreenThresholds t = profile;
  if (is_integer(b.dtype)) {
    // Integers are compared exactly; only the share of elements allowed to differ may be given
    // (points that lie exactly on a polygon's edge may fall either side, by the kernel's method).
    t.atol = t.rtol = 0;
    t.max_bad_pct = b.green.max_bad_pct.value_or(0);
    // With a share allowed, how far a differing element is off says nothing (a class label, a count).
    t.max_abs = t.mean_abs = t.max_bad_pct > 0 ? INFINITY : 0;
    return t;
  }
  if (b.green.atol) t.atol = *b.green.atol;
  if (b.green.rtol) t.rtol = *b.green.rtol;
  if (b.green.max_bad_pct) t.max_bad_pct = *b.green.max_bad_pct;
  if (b.green.max_abs) t.max_abs = *b.green.max_abs;
  if (b.green.mean_abs) t.mean_abs = *b.green.mean_abs;
  return t;
}

std::optional<DType> parse_dtype(const std::string& s) {
  for (DType t : all_dtypes())
    if (s == dtype_name(t)) return t;
  return std::nullopt;
}

static std::string dtype_list() {
  std::string l;
  for (DType t : all_dtypes()) l += (l.empty() ? "" : ", ") + std::string(dtype_name(t));
  return l;
}

std::vector<const KernelSpec*> Profile::launches() const {
  std::vector<const KernelSpec*> v{&kernel};
  for (const auto& k : later_launches) v.push_back(&k);
  return v;
}
std::vector<const KernelSpec*> Profile::reference_launches() const {
  if (!reference_is_kernel()) return {};
  std::vector<const KernelSpec*> v{&reference};
  for (const auto& k : later_reference_launches) v.push_back(&k);
  return v;
}

const Problem& Profile::objective_problem() const {
  const Problem* p = find_problem(objective);
  return p ? *p : problems.front();
}
const Problem* Profile::find_problem(const std::string& n) const {
  for (const auto& p : problems) if (p.name == n) return &p;
  return nullptr;
}
const KnobDef* Profile::find_knob(const std::string& n) const {
  for (const auto& k : knobs) if (k.name == n) return &k;
  return nullptr;
}
std::string Profile::reference_text() const {
  if (reference_command) return "command `" + reference_command->command + "`";
  if (reference_data) {
    std::string files;
    for (const auto& [buffer, path] : reference_data->outputs) files += (files.empty() ? "" : ", ") + path.filename().string();
    return "data (" + files + ")";
  }
  if (reference_config && !reference_name.empty()) return reference_name;
  if (reference_config) {
    std::string knobs;
    for (const auto& [name, value] : *reference_config) knobs += (knobs.empty() ? "" : ",") + name + "=" + std::to_string(value);
    return "the configuration " + knobs + (*reference_config == baseline ? " (the baseline)" : "");
  }
  std::string entries;
  for (const KernelSpec* k : reference_launches()) entries += (entries.empty() ? "" : ", ") + k->name;
  return "kernel " + entries + " (" + reference.source.filename().string() + ")";
}

const BufferSpec* Profile::find_buffer(const std::string& n) const {
  for (const auto& b : buffers) if (b.name == n) return &b;
  return nullptr;
}
const TensorMapSpec* Profile::find_tensor_map(const std::string& n) const {
  for (const auto& m : tensor_maps) if (m.name == n) return &m;
  return nullptr;
}

namespace {

// Reads one JSON object field by field; anything left unread is an unknown field (a typo such
// as "constriants" must not be silently ignored).
class Reader {
 public:
  Reader(const std::string& file, std::string at, const Json& j) : file_(file), at_(std::move(at)), j_(j) {
    if (!j_.is_object()) fail("", "must be an object");
  }
  ~Reader() noexcept(false) {
    if (std::uncaught_exceptions()) return;
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!seen_.count(it.key()))
        fail(it.key(), "unknown field (known: " + known_list() + ")");
  }
  bool has(const std::string& k) { seen_.insert(k); known_.insert(k); return j_.contains(k); }
  const Json& get(const std::string& k) {
    if (!has(k)) fail(k, "missing");
    return j_.at(k);
  }
  std::string str(const std::string& k, const std::string& def = {}, bool required = false) {
    if (!has(k)) { if (required) fail(k, "missing"); return def; }
    const Json& v = j_.at(k);
    if (!v.is_string()) fail(k, "must be a string");
    return v.get<std::string>();
  }
  double num(const std::string& k, double def) {
    if (!has(k)) return def;
    const Json& v = j_.at(k);
    if (!v.is_number()) fail(k, "must be a number");
    return v.get<double>();
  }
  std::optional<double> opt_num(const std::string& k) {
    if (!has(k)) return std::nullopt;
    return num(k, 0);
  }
  bool boolean(const std::string& k, bool def) {
    if (!has(k)) return def;
    const Json& v = j_.at(k);
    if (!v.is_boolean()) fail(k, "must be true or false");
    return v.get<bool>();
  }
  std::vector<std::string> strings(const std::string& k) {
    std::vector<std::string> out;
    if (!has(k)) return out;
    const Json& v = j_.at(k);
    if (!v.is_array()) fail(k, "must be a list of strings");
    for (const auto& e : v) {
      if (!e.is_string()) fail(k, "must be a list of strings");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    std::string f = at_.empty() ? field : (field.empty() ? at_ : at_ + "." + field);
    fail_at(file_, f, msg);
  }
  std::string field(const std::string& k) const { return at_.empty() ? k : at_ + "." + k; }
  const std::string& file() const { return file_; }

 private:
  std::string known_list() const {
    std::string s;
    for (const auto& k : known_) s += (s.empty() ? "" : ", ") + k;
    return s;
  }
  std::string file_, at_;
  const Json& j_;
  std::set<std::string> seen_, known_;
};

// An expression field may be written as a JSON number or a string.
std::string expr_text(const Reader& r, const std::string& field, const Json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return number_text(v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  r.fail(field, "must be an expression (string or number)");
}

std::map<std::string, std::string> read_defines(Reader& r, const std::string& k) {
  std::map<std::string, std::string> out;
  if (!r.has(k)) return out;
  const Json& d = r.get(k);
  if (!d.is_object()) r.fail(k, "must be an object of NAME: value");
  for (auto it = d.begin(); it != d.end(); ++it) {
    if (it->is_string()) out[it.key()] = it->get<std::string>();
    else if (it->is_number_integer()) out[it.key()] = std::to_string(it->get<long long>());
    else if (it->is_boolean()) out[it.key()] = it->get<bool>() ? "1" : "0";
    else r.fail(k + "." + it.key(), "must be a string or an integer");
  }
  return out;
}

LaunchSpec read_launch(Reader& parent, const std::string& k) {
  LaunchSpec l;
  Reader r(parent.file(), parent.field(k), parent.get(k));
  auto dims = [&](const std::string& f, std::array<std::string, 3>& out) {
    const Json& v = r.get(f);
    if (!v.is_array() || v.empty() || v.size() > 3) r.fail(f, "must be a list of 1 to 3 expressions");
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = expr_text(r, f, v[i]);
  };
  dims("grid", l.grid);
  dims("block", l.block);
  if (r.has("shared_bytes")) l.shared_bytes = expr_text(r, "shared_bytes", r.get("shared_bytes"));
  return l;
}

// 0 when `p` opens for reading as a regular file, else why not: an errno value, or kNotRegular.
// POSIX calls, not std::filesystem's throwing ones: every error a path raises (a name too long, a
// loop of links, a folder without search permission, a component that is a regular file) belongs
// to the field that named it.
constexpr int kNotRegular = -1;
int unreadable_file(const std::filesystem::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return errno;
  if (!S_ISREG(st.st_mode)) return kNotRegular;
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

// A file the profile names at `field` (relative to the profile's folder), resolved; else that
// field's one-line error ("template file not found: ...", "file .../x.npy: Permission denied").
std::filesystem::path named_file(const std::string& file, const std::string& field, const std::filesystem::path& dir,
                                 const std::string& given, const std::string& what) {
  const std::filesystem::path joined = dir / given;
  std::error_code ec;
  if (const int err = unreadable_file(joined)) {
    if (err == ENOENT) {
      const auto shown = std::filesystem::weakly_canonical(joined, ec);
      fail_at(file, field, what + " not found: " + (ec ? joined.lexically_normal() : shown).string());
    }
    if (err == kNotRegular) fail_at(file, field, what + " is not a regular file: " + joined.string());
    fail_at(file, field, what + " " + joined.string() + ": " + std::strerror(err));
  }
  std::filesystem::path resolved = std::filesystem::weakly_canonical(joined, ec);
  if (ec) fail_at(file, field, what + " " + joined.string() + ": " + ec.message());
  return resolved;
}

std::string read_text_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The template and entry point of one launch. A launch that names no template takes
// `default_template` (already resolved); with none to take, the template is required.
KernelSpec read_entry(Reader& r, const std::filesystem::path& dir, const std::filesystem::path& default_template) {
  KernelSpec k;
  if (r.has("template") || default_template.empty()) {
    if (!r.has("template")) r.fail("template", "missing (and the profile gives no template to default to)");
    k.source = named_file(r.file(), r.field("template"), dir, r.str("template", "", true), "template file");
  } else {
    k.source = default_template;
  }
  k.name = r.str("kernel", "", true);
  // The base identifier of an entry name or a name expression ("&ns::gemm<float, 4>" -> gemm).
  std::string base = k.name;
  base.erase(0, base.find_first_not_of("& "));
  if (auto lt = base.find('<'); lt != std::string::npos) base.resize(lt);
  if (auto colons = base.rfind("::"); colons != std::string::npos) base.erase(0, colons + 2);
  if (!std::regex_match(base, std::regex("[A-Za-z_][A-Za-z0-9_]*")))
    r.fail("kernel", "'" + k.name + "' is not a kernel's name (an identifier, or a name expression such as &ns::gemm<float, 4>)");
  std::regex word("\\b" + base + "\\b");
  if (!std::regex_search(read_text_file(k.source), word))
    r.fail("kernel", "kernel '" + k.name + "' not found in " + k.source.string());
  return k;
}

// The single-launch form: template, kernel, defines and args of one object (the profile or its reference).
KernelSpec read_kernel(Reader& r, const std::filesystem::path& dir) {
  KernelSpec k = read_entry(r, dir, {});
  k.defines = read_defines(r, "defines");
  k.args = r.strings("args");
  return k;
}

void check_expr(const Reader& r, const std::string& field, const std::string& text,
                const std::vector<std::string>& vars) {
  try {
    Expr e(text, vars);
  } catch (const UserError& e) {
    r.fail(field, e.what());
  }
}

}  // namespace

// `"reference": {"config": "baseline" | {KNOB: value, ...}}`: the candidate's own launches at one
// configuration (knobs an object leaves out take the baseline's). Its knobs become defines of the
// reference's launches, so its expressions and its compile see them as the candidate's would.
void read_reference_config(Profile& p, const std::string& file, const Json& v, const std::vector<std::string>& known) {
  const std::string at = "reference.config";
  std::map<std::string, std::int64_t> c = p.baseline;
  if (v.is_string()) {
    if (v.get<std::string>() != "baseline") fail_at(file, at, "'" + v.get<std::string>() + "': give \"baseline\" or an object of KNOB: value");
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      const KnobDef* k = p.find_knob(it.key());
      if (!k) fail_at(file, at + "." + it.key(), "unknown knob");
      if (!it->is_number_integer()) fail_at(file, at + "." + it.key(), "must be an integer");
      const std::int64_t x = it->get<std::int64_t>();
      if (std::find(k->values.begin(), k->values.end(), x) == k->values.end())
        fail_at(file, at + "." + it.key(), std::to_string(x) + " is not among the knob's values");
      c[it.key()] = x;
    }
  } else {
    fail_at(file, at, "give \"baseline\" or an object of KNOB: value");
  }
  // GREEN runs the reference on the candidate's buffers: a scratch buffer sized by knobs would be
  // the candidate's size, not the reference's.
  for (const auto& b : p.buffers)
    for (const auto& e : b.shape) {
      const Expr x(e, known);
      for (const auto& name : x.used_vars())
        if (b.role == BufferRole::Scratch && p.find_knob(name))
          fail_at(file, at, "scratch buffer " + b.name + " is sized by knob " + name +
                                ": a configuration reference needs buffers every configuration shares");
    }
  auto at_config = [&](KernelSpec k) {
    for (const auto& [name, value] : c) k.defines[name] = std::to_string(value);
    return k;
  };
  p.reference = at_config(p.kernel);
  p.later_reference_launches.clear();
  for (const auto& k : p.later_launches) p.later_reference_launches.push_back(at_config(k));
  p.reference_config = std::move(c);
}

namespace {

// Profile::setup_text and setup_files from the document as read (a T1 file's: its profile).
void note_setup(Profile& p, Json j) {
  if (!j.is_object()) return;  // the reader below says what is wrong
  for (const char* k : {"name", "description", "knobs", "constraints", "baseline", "best_for", "objective"})
    j.erase(k);
  p.setup_text = j.dump();
  const auto dir = p.path.parent_path();
  std::function<void(const Json&)> walk = [&](const Json& v) {
    if (v.is_string()) {
      std::istringstream words(v.get<std::string>());
      for (std::string w; words >> w;) {
        if (w.size() > 4096) continue;
        std::error_code ec;
        const std::filesystem::path f = std::filesystem::path(w).is_absolute() ? std::filesystem::path(w) : dir / w;
        if (std::filesystem::is_regular_file(f, ec)) p.setup_files.emplace(w, f.lexically_normal());
      }
    } else if (v.is_structured()) {
      for (const auto& x : v) walk(x);
    }
  };
  walk(j);
}

}  // namespace

std::string measurement_setup(const Profile& p) {
  if (p.setup_text.empty()) return "";
  std::string all = p.setup_text;
  for (const auto& [name, file] : p.setup_files) {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in && !in.eof()) throw UserError(p.path.string() + ": cannot read " + file.string() + " (a file it names)");
    all += "\n" + name + "\n" + xxh64_hex(bytes);
  }
  return short_hash(all);
}

Profile load_profile(const std::filesystem::path& path) {
  const std::string file = path.string();
  if (const int err = unreadable_file(path)) {
    if (err == ENOENT) throw UserError(file + ": profile not found");
    throw UserError(file + ": cannot read the profile: " + (err == kNotRegular ? "not a regular file" : std::strerror(err)));
  }
  Json j;
  try {
    std::ifstream in(path);
    j = Json::parse(in);
  } catch (const Json::parse_error& e) {
    throw UserError(file + ": malformed JSON: " + e.what());
  }
  // A T1 file (the autotuning community's format) is read as the profile it is equivalent to.
  if (is_t1_document(j)) j = read_t1(path, j).profile;
  Profile p;
  p.path = std::filesystem::absolute(path);
  const auto dir = p.path.parent_path();
  note_setup(p, j);
  Reader r(file, "", j);
  p.name = r.str("name", path.stem().string());
  p.description = r.str("description");
  p.arch = r.str("arch", "sm_90");
  if (!std::regex_match(p.arch, std::regex("(sm|compute)_[0-9]+a?"))) r.fail("arch", "'" + p.arch + "' is not an arch like sm_90");
  p.best_for = r.strings("best_for");
  for (const auto& a : p.best_for)
    if (!std::regex_match(a, std::regex("sm_[0-9]+"))) r.fail("best_for", "'" + a + "' is not a device arch like sm_90");
  // A sequence of launches (`launches`) or one (`template`, `kernel`, `args`, `launch`). With
  // `launches` the profile's `template` is the default of every launch that names none, and its
  // `defines` are every launch's; the launches themselves are read below, once the names they use are known.
  const bool several = r.has("launches");
  std::filesystem::path default_template;
  if (several) {
    for (const char* single : {"kernel", "args", "launch"})
      if (r.has(single))
        r.fail(single, "not beside launches (each launch gives its own kernel, args and launch)");
    if (r.has("template")) {
      default_template = named_file(file, "template", dir, r.str("template"), "template file");
    }
    p.kernel.defines = read_defines(r, "defines");
  } else {
    p.kernel = read_kernel(r, dir);
  }
  {
    // A folder that does not exist is allowed (NVRTC skips it); one whose path cannot even be resolved is not.
    const std::vector<std::string> dirs = r.strings("include_dirs");
    for (std::size_t i = 0; i < dirs.size(); ++i) {
      std::error_code ec;
      const auto resolved = std::filesystem::weakly_canonical(dir / dirs[i], ec);
      if (ec) r.fail("include_dirs[" + std::to_string(i) + "]", (dir / dirs[i]).string() + ": " + ec.message());
      p.include_dirs.push_back(resolved.string());
    }
  }
  p.compile_options = r.strings("compile_options");

  // Knobs: an ordered object NAME: [values].
  {
    const Json& ks = r.get("knobs");
    if (!ks.is_object()) r.fail("knobs", "must be an object of NAME: [values]");
    for (auto it = ks.begin(); it != ks.end(); ++it) {
      KnobDef k{it.key(), {}};
      const std::string f = "knobs." + k.name;
      if (!std::regex_match(k.name, std::regex("[A-Za-z_][A-Za-z0-9_]*"))) r.fail(f, "not a valid macro name");
      if (!it->is_array() || it->empty()) r.fail(f, "knob with no values (give a non-empty list of integers)");
      for (const auto& v : *it) {
        if (v.is_boolean()) k.values.push_back(v.get<bool>());
        else if (v.is_number_integer()) k.values.push_back(v.get<std::int64_t>());
        else r.fail(f, "values must be integers, got " + v.dump());
      }
      std::set<std::int64_t> uniq(k.values.begin(), k.values.end());
      if (uniq.size() != k.values.size()) r.fail(f, "repeated value");
      p.knobs.push_back(std::move(k));
    }
    if (p.knobs.empty()) r.fail("knobs", "no knobs: a profile needs at least one knob to search");
  }

  // Problems and their size variables.
  std::vector<std::string> size_names;
  {
    const Json& ps = r.get("problems");
    if (!ps.is_array() || ps.empty()) r.fail("problems", "must be a non-empty list");
    for (std::size_t i = 0; i < ps.size(); ++i) {
      Reader pr(file, "problems[" + std::to_string(i) + "]", ps[i]);
      Problem prob;
      prob.name = pr.str("name", "", true);
      const Json& sz = pr.get("sizes");
      if (!sz.is_object()) pr.fail("sizes", "must be an object of NAME: number");
      for (auto it = sz.begin(); it != sz.end(); ++it) {
        if (!it->is_number()) pr.fail("sizes." + it.key(), "must be a number");
        prob.sizes[it.key()] = it->get<double>();
      }
      std::vector<std::string> names;
      for (auto& [k, _] : prob.sizes) names.push_back(k);
      if (i == 0) size_names = names;
      else if (names != size_names) pr.fail("sizes", "every problem must define the same sizes as problems[0]");
      if (pr.has("green")) {
        Reader g(file, pr.field("green"), pr.get("green"));
        prob.green_trials = static_cast<int>(g.num("trials", 0));
        if (g.has("trials") && prob.green_trials < 1) g.fail("trials", "must be at least 1");
        if (g.has("seeds")) {
          const Json& s = g.get("seeds");
          if (!s.is_array() || s.empty()) g.fail("seeds", "must be a non-empty list of non-negative integers");
          for (const auto& v : s) {
            if (!v.is_number_unsigned()) g.fail("seeds", "must be a non-empty list of non-negative integers");
            prob.green_seeds.push_back(v.get<std::uint64_t>());
          }
        }
      }
      if (p.find_problem(prob.name)) pr.fail("name", "duplicate problem '" + prob.name + "'");
      p.problems.push_back(std::move(prob));
    }
    p.objective = r.str("objective", p.problems.front().name);
    if (!p.find_problem(p.objective)) r.fail("objective", "'" + p.objective + "' is not one of the problems");
  }
  for (const auto& k : p.knobs)
    if (std::find(size_names.begin(), size_names.end(), k.name) != size_names.end())
      r.fail("knobs." + k.name, "a knob and a problem size share this name");

  std::vector<std::string> vars = size_names;
  for (const auto& k : p.knobs) vars.push_back(k.name);
  vars.push_back(kDeviceSmsVar);  // the device's multiprocessor count (expression_vars; docs/profiles.md)
  auto with_defines = [&](const KernelSpec& ks) {
    std::vector<std::string> v = vars;
    for (const auto& [name, value] : ks.defines) {
      char* end = nullptr;
      std::strtod(value.c_str(), &end);
      if (!value.empty() && end && *end == '\0') v.push_back(name);  // numeric defines usable in expressions
    }
    return v;
  };

  p.constraints = r.strings("constraints");
  for (std::size_t i = 0; i < p.constraints.size(); ++i)
    check_expr(r, "constraints[" + std::to_string(i) + "]", p.constraints[i], with_defines(p.kernel));

  // Buffers and scalars.
  std::set<std::string> arg_names(size_names.begin(), size_names.end());
  if (r.has("buffers")) {
    const Json& bs = r.get("buffers");
    if (!bs.is_array()) r.fail("buffers", "must be a list");
    for (std::size_t i = 0; i < bs.size(); ++i) {
      Reader br(file, "buffers[" + std::to_string(i) + "]", bs[i]);
      BufferSpec b;
      b.name = br.str("name", "", true);
      std::string dt = br.str("dtype", "", true);
      auto t = parse_dtype(dt);
      if (!t) br.fail("dtype", "unknown dtype '" + dt + "' (choose " + dtype_list() + ")");
      b.dtype = *t;
      const Json& sh = br.get("shape");
      if (!sh.is_array() || sh.empty()) br.fail("shape", "must be a non-empty list of expressions");
      for (const auto& e : sh) {
        b.shape.push_back(expr_text(br, "shape", e));
        check_expr(br, "shape", b.shape.back(), with_defines(p.kernel));
      }
      std::string role = br.str("role", "input");
      if (role == "input") b.role = BufferRole::Input;
      else if (role == "output") b.role = BufferRole::Output;
      else if (role == "scratch") b.role = BufferRole::Scratch;
      else if (role == "inout") b.role = BufferRole::InOut;
      else br.fail("role", "unknown role '" + role + "' (choose input, output, inout, scratch)");
      if (br.has("refill")) {
        std::string refill = br.str("refill");
        if (b.role != BufferRole::InOut) br.fail("refill", "only an inout buffer is re-filled (role is " + role + ")");
        if (refill == "every_launch") b.refill = BufferSpec::Refill::EveryLaunch;
        else if (refill == "never") b.refill = BufferSpec::Refill::Never;
        else br.fail("refill", "unknown refill '" + refill + "' (choose every_launch, never)");
      }
      if (br.has("green")) {
        Reader gr(file, br.field("green"), br.get("green"));
        if (!b.compared()) br.fail("green", "only output and inout buffers are compared (role is " + role + ")");
        auto threshold = [&](const char* k) -> std::optional<double> {
          std::optional<double> x = gr.opt_num(k);
          if (x && !(*x >= 0)) gr.fail(k, number_text(*x) + " is negative (give a number >= 0)");
          if (x && is_integer(b.dtype) && std::string(k) != "max_bad_pct")
            gr.fail(k, "an " + std::string(dtype_name(b.dtype)) + " buffer is compared exactly; it takes no tolerance (only max_bad_pct)");
          return x;
        };
        b.green.atol = threshold("atol");
        b.green.rtol = threshold("rtol");
        b.green.max_bad_pct = threshold("max_bad_pct");
        b.green.max_abs = threshold("max_abs");
        b.green.mean_abs = threshold("mean_abs");
        if (b.green.max_bad_pct && *b.green.max_bad_pct > 100)
          gr.fail("max_bad_pct", number_text(*b.green.max_bad_pct) + " is above 100 (a percentage)");
      }
      if (br.has("init")) {
        Reader ir(file, br.field("init"), br.get("init"));
        std::string dist = ir.str("dist", "normal");
        if (dist == "normal") { b.init.kind = InitSpec::Kind::Normal; b.init.a = ir.num("mean", 0); b.init.b = ir.num("std", 1); }
        else if (dist == "uniform") { b.init.kind = InitSpec::Kind::Uniform; b.init.a = ir.num("low", -1); b.init.b = ir.num("high", 1); }
        else if (dist == "zeros") b.init.kind = InitSpec::Kind::Zeros;
        else if (dist == "constant") { b.init.kind = InitSpec::Kind::Constant; b.init.a = ir.num("value", 0); }
        else if (dist == "raw") {
          b.init.kind = InitSpec::Kind::Raw;
          const std::string f = ir.str("file", "", true);
          b.init.file = std::filesystem::absolute(std::filesystem::path(f).is_absolute() ? std::filesystem::path(f) : p.path.parent_path() / f).lexically_normal();
          const std::optional<std::string> bytes = read_file(b.init.file);
          if (!bytes) ir.fail("file", "cannot read " + b.init.file.string());
          b.init.file_hash = xxh64_hex(*bytes);
        }
        else ir.fail("dist", "unknown distribution '" + dist + "' (choose normal, uniform, zeros, constant, raw)");
      } else if (b.role == BufferRole::Output || b.role == BufferRole::Scratch) {
        b.init.kind = InitSpec::Kind::Zeros;
      }
      b.scale_arg = br.str("scale_arg");
      if (!b.scale_arg.empty()) {
        if (b.dtype != DType::FP8_E4M3 && b.dtype != DType::FP8_E5M2) br.fail("scale_arg", "only fp8 buffers have a descale");
        if (b.init.kind == InitSpec::Kind::Raw) br.fail("scale_arg", "a raw file's bytes are the values: no descale is drawn for them");
        if (!arg_names.insert(b.scale_arg).second) br.fail("scale_arg", "name '" + b.scale_arg + "' already used");
      }
      b.symbol = br.str("symbol");
      if (!b.symbol.empty() && b.role != BufferRole::Input)
        br.fail("symbol", "only an input buffer can live in a __constant__ symbol (role is " + role + ")");
      if (!arg_names.insert(b.name).second) br.fail("name", "name '" + b.name + "' already used");
      p.buffers.push_back(std::move(b));
    }
  }
  if (r.has("scalars")) {
    const Json& ss = r.get("scalars");
    if (!ss.is_array()) r.fail("scalars", "must be a list");
    for (std::size_t i = 0; i < ss.size(); ++i) {
      Reader sr(file, "scalars[" + std::to_string(i) + "]", ss[i]);
      ScalarSpec s;
      s.name = sr.str("name", "", true);
      std::string dt = sr.str("dtype", "f32");
      auto t = parse_dtype(dt);
      if (!t) sr.fail("dtype", "'" + dt + "' is not a dtype (" + dtype_list() + ")");
      s.dtype = *t;
      s.value = expr_text(sr, "value", sr.get("value"));
      check_expr(sr, "value", s.value, with_defines(p.kernel));
      if (!arg_names.insert(s.name).second) sr.fail("name", "name '" + s.name + "' already used");
      p.scalars.push_back(std::move(s));
    }
  }
  if (r.has("tensor_maps")) {
    const Json& ts = r.get("tensor_maps");
    if (!ts.is_array()) r.fail("tensor_maps", "must be a list");
    for (std::size_t i = 0; i < ts.size(); ++i) {
      Reader tr(file, "tensor_maps[" + std::to_string(i) + "]", ts[i]);
      TensorMapSpec m;
      m.name = tr.str("name", "", true);
      m.buffer = tr.str("buffer", "", true);
      const BufferSpec* b = p.find_buffer(m.buffer);
      if (!b) tr.fail("buffer", "no buffer '" + m.buffer + "' (a tensor map describes one of the profile's buffers)");
      if (!b->symbol.empty()) tr.fail("buffer", "'" + m.buffer + "' lives in a __constant__ symbol; a tensor map needs global memory");
      auto exprs = [&](const char* k, std::vector<std::string>& out) {
        const Json& v = tr.get(k);
        if (!v.is_array() || v.empty() || v.size() > 5) tr.fail(k, "must be a list of 1 to 5 expressions");
        for (std::size_t d = 0; d < v.size(); ++d) {
          const std::string f = std::string(k) + "[" + std::to_string(d) + "]";
          out.push_back(expr_text(tr, f, v[d]));
          check_expr(tr, f, out.back(), with_defines(p.kernel));
        }
      };
      exprs("dims", m.dims);
      exprs("box", m.box);
      if (m.box.size() != m.dims.size())
        tr.fail("box", std::to_string(m.box.size()) + " entries for " + std::to_string(m.dims.size()) +
                           " dims (give one per dimension, innermost first)");
      // Bytes, as the CUtensorMapSwizzle and CUtensorMapL2promotion enumerators name them.
      auto bytes_choice = [&](const char* k, int def, std::initializer_list<int> allowed) {
        const double v = tr.num(k, def);
        std::string choices;
        for (int a : allowed) {
          if (v == a) return a;
          choices += (choices.empty() ? "" : ", ") + std::to_string(a);
        }
        tr.fail(k, number_text(v) + " not allowed (choose " + choices + ")");
      };
      m.swizzle_bytes = bytes_choice("swizzle", 0, {0, 32, 64, 128});
      m.l2_promotion_bytes = bytes_choice("l2_promotion", 128, {0, 64, 128, 256});
      if (!arg_names.insert(m.name).second) tr.fail("name", "name '" + m.name + "' already used");
      p.tensor_maps.push_back(std::move(m));
    }
  }
  if (!std::any_of(p.buffers.begin(), p.buffers.end(), [](const BufferSpec& b) { return b.compared(); }))
    r.fail("buffers", "no buffer has role \"output\" or \"inout\": GREEN would have nothing to compare");

  // A __constant__ symbol's buffer may be passed too: the kernel then gets a pointer to a copy of
  // the same data in global memory, as Kernel Tuner passes its constant-memory arguments.
  auto check_args = [&](const std::string& field, const KernelSpec& ks) {
    for (const auto& a : ks.args)
      if (!arg_names.count(a)) r.fail(field, "argument '" + a + "' is not a buffer, scalar, descale, tensor map or problem size");
  };
  auto check_launch = [&](Reader& lr, const LaunchSpec& l, const std::vector<std::string>& v) {
    for (const auto& e : l.grid) check_expr(lr, "launch.grid", e, v);
    for (const auto& e : l.block) check_expr(lr, "launch.block", e, v);
    check_expr(lr, "launch.shared_bytes", l.shared_bytes, v);
  };
  // A `launches` list (the profile's or the reference's): each entry's template (or the default),
  // kernel, args (required: no launch's arguments are another's) and launch, with `defines` shared.
  auto read_launch_list = [&](Reader& parent, const std::filesystem::path& default_tmpl,
                              const std::map<std::string, std::string>& defines, const std::vector<std::string>& v) {
    std::vector<KernelSpec> out;
    const Json& ls = parent.get("launches");
    if (!ls.is_array() || ls.empty()) parent.fail("launches", "must be a non-empty list of {kernel, args, launch}");
    for (std::size_t i = 0; i < ls.size(); ++i) {
      const std::string at = parent.field("launches[" + std::to_string(i) + "]");
      Reader lr(file, at, ls[i]);
      KernelSpec k = read_entry(lr, dir, default_tmpl);
      k.defines = defines;
      k.args = lr.strings("args");
      if (k.args.empty()) lr.fail("args", "missing: list the kernel's arguments in order");
      check_args(at + ".args", k);
      k.launch = read_launch(lr, "launch");
      check_launch(lr, k.launch, v);
      out.push_back(std::move(k));
    }
    return out;
  };
  if (several) {
    std::vector<KernelSpec> ls = read_launch_list(r, default_template, p.kernel.defines, with_defines(p.kernel));
    p.kernel = ls.front();
    p.later_launches.assign(ls.begin() + 1, ls.end());
  } else {
    p.kernel.launch = read_launch(r, "launch");
    if (p.kernel.args.empty()) r.fail("args", "missing: list the kernel's arguments in order");
    check_args("args", p.kernel);
    check_launch(r, p.kernel.launch, with_defines(p.kernel));
  }

  const Json* reference_config_json = nullptr;
  {
    Reader rr(file, "reference", r.get("reference"));
    // One form only: a kernel (template, kernel, args, launch), launches, a command or data.
    std::vector<std::string> forms;
    for (const char* f : {"config", "command", "data", "launches"})
      if (rr.has(f)) forms.push_back(f);
    for (const char* f : {"kernel", "launch", "args"})
      if (rr.has(f)) {
        forms.push_back("a kernel (" + std::string(f) + ")");
        break;
      }
    if (forms.empty())
      rr.fail("", "give the trusted reference as a kernel (template, kernel, launch), launches, a command, data or a "
                  "configuration of the candidate (config)");
    if (forms.size() > 1) rr.fail("", "give one form of reference, not " + forms[0] + " and " + forms[1]);
    // The reference has no knobs: its expressions see only problem sizes and its own defines.
    auto reference_vars = [&](const std::map<std::string, std::string>& defines) {
      std::vector<std::string> rv = size_names;
      for (const auto& [name, _] : defines) rv.push_back(name);
      rv.push_back(kDeviceSmsVar);
      return rv;
    };
    if (rr.has("config")) {
      // Resolved below, once the knobs' baseline is read.
      reference_config_json = &rr.get("config");
      p.reference_name = rr.str("name");
    } else if (rr.has("command")) {
      CommandReference c;
      c.command = rr.str("command");
      c.dir = dir;
      c.timeout_s = rr.num("timeout_s", c.timeout_s);
      if (!(c.timeout_s > 0)) rr.fail("timeout_s", "must be positive");
      if (c.command.find("{in}") == std::string::npos || c.command.find("{out}") == std::string::npos)
        rr.fail("command", "'" + c.command + "' must name {in} (the folder evo writes the inputs to) and {out} "
                           "(the folder the command writes the expected outputs to)");
      p.reference_command = std::move(c);
    } else if (rr.has("data")) {
      Reader dr(file, "reference.data", rr.get("data"));
      DataReference d;
      // buffer -> .npy, every buffer of `wanted` roles exactly once, each file a fit for every problem.
      auto files = [&](const char* k, bool inputs) {
        std::map<std::string, std::filesystem::path> out;
        const Json& o = dr.get(k);
        for (auto it = o.begin(); it != o.end(); ++it) {
          const std::string f = dr.field(k) + "." + it.key();
          const BufferSpec* b = p.find_buffer(it.key());
          if (!b) fail_at(file, f, "no buffer '" + it.key() + "'");
          if (inputs ? !b->filled_per_trial() : !b->compared())
            fail_at(file, f, std::string("buffer ") + b->name + " is not " +
                                 (inputs ? "an input or inout buffer" : "an output or inout buffer"));
          if (!it->is_string()) fail_at(file, f, "must be the path of a .npy file");
          const auto path = named_file(file, f, dir, it->get<std::string>(), "file");
          NpyArray h;
          try {
            h = read_npy_header(path);
          } catch (const UserError& e) {
            fail_at(file, f, e.what());
          }
          if (h.descr != npy_descr(b->dtype))
            fail_at(file, f, path.filename().string() + " is " + npy_type_name(h.descr) + " ('" + h.descr +
                                 "'), buffer " + b->name + " (" + dtype_name(b->dtype) + ") needs " +
                                 npy_type_name(npy_descr(b->dtype)) + " ('" + npy_descr(b->dtype) + "')");
          for (const auto& prob : p.problems) {
            const Vars vars = expression_vars(p.kernel, prob, {});
            std::vector<std::int64_t> shape;
            for (const auto& e : b->shape) shape.push_back(static_cast<std::int64_t>(eval_expr(e, vars)));
            if (h.shape != shape)
              fail_at(file, f, path.filename().string() + " is " + npy_shape_text(h.shape) + ", buffer " + b->name +
                                   " is " + npy_shape_text(shape) + " for problem " + prob.name +
                                   " (stored data fits one size: give only problems of that size)");
          }
          out[b->name] = path;
        }
        for (const auto& b : p.buffers)
          if ((inputs ? b.filled_per_trial() : b.compared()) && !out.count(b.name))
            fail_at(file, dr.field(k), std::string("no file for ") + (inputs ? "input" : "output") + " buffer " + b.name +
                                          " (give every " + (inputs ? "input and inout" : "output and inout") + " buffer one)");
        return out;
      };
      if (!dr.get("inputs").is_object()) dr.fail("inputs", "must be an object of BUFFER: \"file.npy\"");
      if (!dr.get("outputs").is_object()) dr.fail("outputs", "must be an object of BUFFER: \"file.npy\"");
      d.inputs = files("inputs", true);
      d.outputs = files("outputs", false);
      p.reference_data = std::move(d);
    } else if (rr.has("launches")) {
      std::filesystem::path tmpl;
      if (rr.has("template")) {
        tmpl = named_file(file, rr.field("template"), dir, rr.str("template"), "template file");
      }
      const auto defines = read_defines(rr, "defines");
      std::vector<KernelSpec> ls = read_launch_list(rr, tmpl, defines, reference_vars(defines));
      p.reference = ls.front();
      p.later_reference_launches.assign(ls.begin() + 1, ls.end());
    } else {
      p.reference = read_kernel(rr, dir);
      if (p.reference.args.empty()) {
        if (!p.later_launches.empty())
          rr.fail("args", "missing: the candidate has several launches, so the reference's arguments cannot default to its");
        p.reference.args = p.kernel.args;
      }
      p.reference.launch = read_launch(rr, "launch");
      check_args("reference.args", p.reference);
      check_launch(rr, p.reference.launch, reference_vars(p.reference.defines));
    }
  }
  for (const auto& b : p.buffers)
    for (const auto& e : b.shape) {
      Expr x(e, with_defines(p.kernel));
      for (const auto& v : x.used_vars())
        if (p.find_knob(v) && b.role != BufferRole::Scratch)
          r.fail("buffers." + b.name + ".shape", "only scratch buffers may depend on knobs (" + v + ")");
    }

  // Baseline: every knob, an allowed value.
  {
    const Json& bl = r.get("baseline");
    if (!bl.is_object()) r.fail("baseline", "must be an object of KNOB: value");
    for (auto it = bl.begin(); it != bl.end(); ++it) {
      const KnobDef* k = p.find_knob(it.key());
      if (!k) r.fail("baseline." + it.key(), "unknown knob");
      if (!it->is_number_integer() && !it->is_boolean()) r.fail("baseline." + it.key(), "must be an integer");
      std::int64_t v = it->is_boolean() ? it->get<bool>() : it->get<std::int64_t>();
      if (std::find(k->values.begin(), k->values.end(), v) == k->values.end()) {
        std::string choices;
        for (auto c : k->values) choices += (choices.empty() ? "" : ", ") + std::to_string(c);
        r.fail("baseline." + it.key(), std::to_string(v) + " not allowed (choose " + choices + ")");
      }
      p.baseline[it.key()] = v;
    }
    for (const auto& k : p.knobs)
      if (!p.baseline.count(k.name)) r.fail("baseline", "missing knob " + k.name);
  }

  if (reference_config_json) read_reference_config(p, file, *reference_config_json, with_defines(p.kernel));

  // Gates.
  if (r.has("gates")) {
    Reader gr(file, "gates", r.get("gates"));
    p.gates.timeout_s = gr.num("timeout_s", p.gates.timeout_s);
    if (p.gates.timeout_s <= 0) gr.fail("timeout_s", "must be positive");
    if (gr.has("static")) {
      Reader s(file, "gates.static", gr.get("static"));
      auto& L = p.gates.static_limits;
      L.max_registers = static_cast<int>(s.num("max_registers", L.max_registers));
      L.max_spill_bytes = static_cast<std::int64_t>(s.num("max_spill_bytes", static_cast<double>(L.max_spill_bytes)));
      L.max_stack_bytes = static_cast<std::int64_t>(s.num("max_stack_bytes", static_cast<double>(L.max_stack_bytes)));
      L.max_threads_per_block = static_cast<int>(s.num("max_threads_per_block", L.max_threads_per_block));
      if (s.has("wgmma_serialized")) {  // what to do with a build ptxas says serialises its wgmma
        const Json& v = s.get("wgmma_serialized");
        if (v != "allow" && v != "reject")
          s.fail("wgmma_serialized", v.dump() + " not allowed (choose \"allow\", \"reject\")");
        L.reject_wgmma_serialized = v == "reject";
      }
    }
    if (gr.has("green")) {
      Reader g(file, "gates.green", gr.get("green"));
      auto& G = p.gates.green;
      G.atol = g.num("atol", G.atol);
      G.rtol = g.num("rtol", G.rtol);
      G.max_bad_pct = g.num("max_bad_pct", G.max_bad_pct);
      G.max_abs = g.num("max_abs", G.max_abs);
      G.mean_abs = g.num("mean_abs", G.mean_abs);
      G.trials = static_cast<int>(g.num("trials", G.trials));
      if (G.trials < 1) g.fail("trials", "must be at least 1");
      if (g.has("seeds")) {
        G.seeds.clear();
        const Json& s = g.get("seeds");
        if (!s.is_array() || s.empty()) g.fail("seeds", "must be a non-empty list of integers");
        for (const auto& v : s) {
          if (!v.is_number_unsigned()) g.fail("seeds", "must be a non-empty list of non-negative integers");
          G.seeds.push_back(v.get<std::uint64_t>());
        }
      }
    }
    if (gr.has("fast")) {
      Reader f(file, "gates.fast", gr.get("fast"));
      auto& F = p.gates.fast;
      std::string mode = f.str("mode", "events");
      if (mode == "events") F.mode = FastSettings::Mode::Events;
      else if (mode == "graph") F.mode = FastSettings::Mode::Graph;
      else f.fail("mode", "unknown mode '" + mode + "' (choose events, graph)");
      F.warmup = static_cast<int>(f.num("warmup", F.warmup));
      F.iters = static_cast<int>(f.num("iters", F.iters));
      if (F.iters < 3) f.fail("iters", "must be at least 3");
      F.flush_l2 = f.boolean("flush_l2", F.flush_l2);
      F.graph_launches = static_cast<int>(f.num("graph_launches", F.graph_launches));
    }
    if (gr.has("metrics")) {
      Reader m(file, "gates.metrics", gr.get("metrics"));
      auto& M = p.gates.metrics;
      M.enabled = m.boolean("enabled", M.enabled);
      if (m.has("names")) M.names = m.strings("names");
      if (m.has("launch")) {
        const Json& l = m.get("launch");
        const auto units = p.launches();
        if (l.is_number_integer()) {
          const long long i = l.get<long long>();
          if (i < 0 || static_cast<std::size_t>(i) >= units.size())
            m.fail("launch", "index " + std::to_string(i) + " is not one of the unit's " + std::to_string(units.size()) +
                                 " launch" + (units.size() == 1 ? "" : "es") + " (0-based)");
          M.launch = static_cast<std::size_t>(i);
        } else if (l.is_string() && l.get<std::string>() == "all") {
          M.launch.reset();
        } else if (l.is_string()) {
          const std::string name = l.get<std::string>();
          std::vector<std::size_t> at;
          for (std::size_t i = 0; i < units.size(); ++i)
            if (units[i]->name == name) at.push_back(i);
          if (at.empty()) m.fail("launch", "no launch of kernel '" + name + "' in the unit");
          if (at.size() > 1)
            m.fail("launch", "kernel '" + name + "' is launched " + std::to_string(at.size()) +
                                 " times: give the launch's index (0-based)");
          M.launch = at.front();
        } else {
          m.fail("launch", "must be \"all\", a launch's index or a kernel's name");
        }
      }
      if (m.has("thresholds")) {
        const Json& ts = m.get("thresholds");
        if (!ts.is_array()) m.fail("thresholds", "must be a list");
        for (std::size_t i = 0; i < ts.size(); ++i) {
          Reader t(file, "gates.metrics.thresholds[" + std::to_string(i) + "]", ts[i]);
          MetricThreshold mt;
          mt.metric = t.str("metric", "", true);
          mt.min = t.opt_num("min");
          mt.max = t.opt_num("max");
          if (!mt.min && !mt.max) t.fail("", "give min, max or both");
          M.thresholds.push_back(mt);
        }
      }
    }
  }
  return p;
}

std::filesystem::path profiles_dir() {
  if (const char* e = std::getenv("EVO_PROFILES"); e && *e) return e;
  return data_dir() / "profiles";  // engine/data_dir.h: relative to the executable, or $EVO_DATA_DIR
}

std::filesystem::path resolve_profile(const std::string& name_or_path) {
  std::filesystem::path p(name_or_path);
  std::error_code ec;
  if (std::filesystem::exists(p, ec)) return p;
  // A path that cannot even be looked at (too long, a loop of links, no permission) is a path, not
  // a name: load_profile says what is wrong with it.
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) return p;
  auto named = profiles_dir() / (name_or_path + ".json");
  if (std::filesystem::exists(named, ec)) return named;
  std::string known;
  if (std::filesystem::is_directory(profiles_dir(), ec))
    for (const auto& e : std::filesystem::directory_iterator(profiles_dir(), ec))
      if (e.path().extension() == ".json") known += (known.empty() ? "" : ", ") + e.path().stem().string();
  throw UserError("unknown profile '" + name_or_path + "' (not a file; shipped profiles: " + known + ")");
}

}  // namespace evo
