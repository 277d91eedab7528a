// T1 file -> evo profile (docs/t1.md has the field-by-field table this code follows).
#include "engine/t1.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "engine/error.h"
#include "engine/expr.h"
#include "engine/files.h"
#include "engine/python_expr.h"

namespace evo {

using Json = nlohmann::ordered_json;

namespace {

// One T1 object, read field by field. A field evo does not know is refused (a typo must not be
// silently ignored), except those T1 defines for other tuners, which `ignored` lists.
class Fields {
 public:
  Fields(const std::string& file, std::string at, const Json& j, std::set<std::string> ignored = {})
      : file_(file), at_(std::move(at)), j_(j), ignored_(std::move(ignored)) {
    if (!j_.is_object()) fail("", "must be an object");
  }
  bool has(const std::string& k) {
    known_.insert(k);
    return j_.contains(k);
  }
  const Json& get(const std::string& k) {
    if (!has(k)) fail(k, "missing");
    return j_.at(k);
  }
  std::string str(const std::string& k) {
    const Json& v = get(k);
    if (!v.is_string()) fail(k, "must be a string");
    return v.get<std::string>();
  }
  // Every field present was read or is one T1 defines for other tuners.
  void done() const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!known_.count(it.key()) && !ignored_.count(it.key())) {
        std::string list;
        for (const auto& k : known_) list += (list.empty() ? "" : ", ") + k;
        for (const auto& k : ignored_) list += (list.empty() ? "" : ", ") + k;
        fail(it.key(), "unknown field (evo reads " + list + ")");
      }
  }
  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    fail_at(file_, field.empty() ? at_ : at_.empty() ? field : at_ + "." + field, msg);
  }
  std::string field(const std::string& k) const { return at_.empty() ? k : at_ + "." + k; }
  const std::string& file() const { return file_; }

 private:
  std::string file_, at_;
  const Json& j_;
  std::set<std::string> ignored_, known_;
};

std::string shortest(double x) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, end);
}

py::Tree parse_py(const Fields& f, const std::string& field, const std::string& text) {
  try {
    return py::parse(text);
  } catch (const py::PyError& e) {
    f.fail(field, "'" + text + "': " + e.what());
  }
}

std::string muparser_of(const Fields& f, const std::string& field, const std::string& text, const py::Translation& tr) {
  try {
    return py::to_muparser(parse_py(f, field, text), tr);
  } catch (const py::PyError& e) {
    f.fail(field, "'" + text + "': " + e.what());
  }
}

// A size or launch entry: a Python expression (string) or a number.
std::string expr_field(Fields& f, const std::string& k, const Json& v, const py::Translation& tr) {
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (!v.is_string()) f.fail(k, "must be an expression (a string) or an integer");
  return muparser_of(f, k, v.get<std::string>(), tr);
}

std::string list_text(const std::vector<std::int64_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

// ConfigurationSpace.TuningParameters[i]: an integer knob with its values and its Default.
struct Parameter {
  KnobDef knob;
  std::int64_t default_value = 0;
  std::string default_note;  // how the Default was taken, when not as written
};

Parameter read_parameter(Fields& f) {
  Parameter p;
  p.knob.name = f.str("Name");
  if (!std::regex_match(p.knob.name, std::regex("[A-Za-z_][A-Za-z0-9_]*")))
    f.fail("Name", "'" + p.knob.name + "' is not a valid macro name");
  const std::string type = f.str("Type");
  if (type != "int" && type != "uint" && type != "bool")
    f.fail("Type", "'" + type + "' is not supported (evo's knobs are integers: int, uint, bool)");
  const Json& values = f.get("Values");
  py::Value v;
  if (values.is_string()) {
    try {
      v = py::evaluate(parse_py(f, "Values", values.get<std::string>()), {});
    } catch (const py::PyError& e) {
      f.fail("Values", "'" + values.get<std::string>() + "': " + e.what());
    }
  } else if (values.is_array()) {  // the schema says a string; a JSON list means the same
    for (const auto& x : values) {
      if (x.is_boolean()) v.items.push_back(py::Value::integer(x.get<bool>()));
      else if (x.is_number_integer()) v.items.push_back(py::Value::integer(static_cast<double>(x.get<long long>())));
      else f.fail("Values", "must be integers, got " + x.dump());
    }
    v.is_list = true;
  } else {
    f.fail("Values", "must be a Python list expression (a string)");
  }
  if (!v.is_list || v.items.empty()) f.fail("Values", "must give a non-empty list");
  for (const auto& x : v.items) {
    if (x.is_list || !x.is_int) f.fail("Values", "value " + shortest(x.number) + " is not an integer (evo's knobs are integers)");
    p.knob.values.push_back(static_cast<std::int64_t>(x.number));
  }
  std::set<std::int64_t> uniq(p.knob.values.begin(), p.knob.values.end());
  if (uniq.size() != p.knob.values.size()) f.fail("Values", "repeated value in " + list_text(p.knob.values));

  if (!f.has("Default")) {
    p.default_value = p.knob.values.front();
    p.default_note = "no Default: its first value";
    return p;
  }
  Json d = f.get("Default");
  if (d.is_array() && d.size() == 1) d = Json(d[0]);  // "Default": [0], as the hub's gemm writes it
  if (d.is_boolean()) d = Json(d.get<bool>() ? 1 : 0);
  if (!d.is_number_integer()) f.fail("Default", "must be an integer, got " + d.dump());
  const std::int64_t want = d.get<std::int64_t>();
  p.default_value = want;
  if (!uniq.count(want)) {  // the nearest value, the smaller on a tie
    std::int64_t best = p.knob.values.front();
    for (auto x : p.knob.values)
      if (std::llabs(x - want) < std::llabs(best - want) || (std::llabs(x - want) == std::llabs(best - want) && x < best))
        best = x;
    p.default_value = best;
    p.default_note = "Default " + std::to_string(want) + " is not one of its values (" + list_text(p.knob.values) + ")";
  }
  return p;
}

// The valid configuration nearest to `start`: fewest knobs changed, then fewest steps along their
// value lists, then the first in knob order. Tries one, two and three knobs changed, then the
// whole valid space.
std::optional<Config> nearest_valid(const KnobSpace& space, const std::vector<KnobDef>& knobs, const Config& start) {
  if (space.valid(start)) return start;
  auto index = [&](const KnobDef& k, std::int64_t v) {
    return static_cast<long>(std::find(k.values.begin(), k.values.end(), v) - k.values.begin());
  };
  std::optional<Config> best;
  long best_steps = 0;
  std::vector<std::size_t> chosen;
  // Every choice of other values for the knobs in `chosen`, keeping the one with fewest steps.
  std::function<void(std::size_t, Config&, long)> vary = [&](std::size_t at, Config& c, long steps) {
    if (at == chosen.size()) {
      if ((!best || steps < best_steps) && space.valid(c)) best = c, best_steps = steps;
      return;
    }
    const KnobDef& k = knobs[chosen[at]];
    const std::int64_t keep = c[k.name];
    const long from = index(k, keep);
    for (std::size_t i = 0; i < k.values.size(); ++i) {
      if (k.values[i] == keep) continue;
      c[k.name] = k.values[i];
      vary(at + 1, c, steps + std::labs(static_cast<long>(i) - from));
    }
    c[k.name] = keep;
  };
  std::function<void(std::size_t, std::size_t)> choose = [&](std::size_t from, std::size_t left) {
    if (left == 0) {
      Config c = start;
      vary(0, c, 0);
      return;
    }
    for (std::size_t i = from; i < knobs.size(); ++i) {
      chosen.push_back(i);
      choose(i + 1, left - 1);
      chosen.pop_back();
    }
  };
  for (std::size_t n = 1; n <= std::min<std::size_t>(3, knobs.size()); ++n) {
    choose(0, n);
    if (best) return best;
  }
  long best_changed = 0;
  for (const Config& c : space.enumerate_valid()) {
    long changed = 0, steps = 0;
    for (const auto& k : knobs)
      if (c.at(k.name) != start.at(k.name)) ++changed, steps += std::labs(index(k, c.at(k.name)) - index(k, start.at(k.name)));
    if (!best || changed < best_changed || (changed == best_changed && steps < best_steps))
      best = c, best_changed = changed, best_steps = steps;
  }
  return best;
}

// KernelSpecification.Arguments[i] as an evo buffer or scalar (docs/t1.md, "Arguments").
struct Argument {
  Json buffer;  // a device buffer, or null
  Json scalar;  // a scalar argument, or null
  std::string name;
  bool passed = true;  // false: a Symbol, which the kernel reads by name, not as a parameter (as KTT does)
};

// A T1 Type as an evo dtype and how many of them one element holds (float4: f32, 4). bool is a
// byte, as CUDA stores it.
struct ElementType {
  DType dtype = DType::F32;
  int lanes = 1;
};
std::optional<ElementType> element_type(const std::string& type) {
  static const std::map<std::string, DType> kBase = {
      {"bool", DType::U8},     {"int8", DType::I8},   {"uint8", DType::U8},   {"int16", DType::I16},
      {"uint16", DType::U16},  {"int32", DType::I32}, {"uint32", DType::U32}, {"int64", DType::I64},
      {"uint64", DType::U64},  {"half", DType::F16},  {"float", DType::F32},  {"double", DType::F64}};
  if (auto it = kBase.find(type); it != kBase.end()) return ElementType{it->second, 1};
  for (const char* base : {"half", "float", "double"})
    for (int lanes : {2, 4, 8, 16})
      if (type == base + std::to_string(lanes)) return ElementType{kBase.at(base), lanes};
  return std::nullopt;
}
// 2^40 bytes (a TiB): more than any one GPU holds (the largest hold under 300 GB), so a buffer that
// large is a mistake in the file, said here rather than at the allocation on a GPU.
constexpr double kMostBytes = 1099511627776.0;
const char* const kTypeList = "bool, int8..int64, uint8..uint64, half, float, double, and half/float/double 2, 4, 8, 16";

// Whether text names word as a whole word (word taken literally, as a C++ name may hold < > ( ) :).
bool mentions(const std::string& text, const std::string& word) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_search(text, std::regex("\\b" + std::regex_replace(word, special, R"(\$&)") + "\\b"));
}

Argument read_argument(Fields& f, std::size_t i, const py::Env& size_env, bool outputs_marked,
                       const std::filesystem::path& t1_dir) {
  Argument a;
  a.name = f.has("Name") ? f.str("Name") : "arg" + std::to_string(i);
  const std::string memory = f.str("MemoryType");
  const std::string type = f.str("Type");
  const std::string access = f.has("AccessType") ? f.str("AccessType") : "ReadOnly";
  if (access != "ReadOnly" && access != "WriteOnly" && access != "ReadWrite")
    f.fail("AccessType", "'" + access + "' is not one of ReadOnly, WriteOnly, ReadWrite");
  const bool has_value = f.has("FillValue");
  if (has_value && !f.get("FillValue").is_number()) f.fail("FillValue", "must be a number");
  const double value = has_value ? f.get("FillValue").get<double>() : 0;
  if (f.has("TypeSize") && !f.get("TypeSize").is_number_integer()) f.fail("TypeSize", "must be an integer");
  if (type == "custom") f.fail("Type", "'custom' is not supported (evo needs the element type to fill and compare: " + std::string(kTypeList) + ")");
  const std::optional<ElementType> et = element_type(type);
  if (!et) f.fail("Type", "'" + type + "' is not a T1 type (" + kTypeList + ")");
  if (f.has("TypeSize") && f.get("TypeSize").get<std::int64_t>() != static_cast<std::int64_t>(dtype_bytes(et->dtype)) * et->lanes)
    f.fail("TypeSize", std::to_string(f.get("TypeSize").get<std::int64_t>()) + " bytes, but a " + type + " is " +
                           std::to_string(dtype_bytes(et->dtype) * et->lanes));

  if (memory == "Scalar") {
    if (!has_value) f.fail("FillValue", "missing: a scalar argument's value");
    if (et->lanes != 1) f.fail("Type", "'" + type + "': a vector type is not supported for a scalar (pass its parts as scalars)");
    if (is_integer(et->dtype) && value != std::trunc(value))
      f.fail("FillValue", shortest(value) + " is not an integer (Type " + type + ")");
    const Json& fv = f.get("FillValue");  // an integer as written (5000000000, not 5e+09)
    a.scalar = {{"name", a.name}, {"dtype", dtype_name(et->dtype)},
                {"value", fv.is_number_integer() ? fv.dump() : shortest(value)}};
    if (f.has("FillType") && f.str("FillType") != "Constant")
      f.fail("FillType", "'" + f.str("FillType") + "': a scalar argument is its FillValue (Constant)");
    for (const char* k : {"MemType", "Output"})
      if (f.has(k)) f.fail(k, "a scalar argument has no " + std::string(k));
    f.has("Size");  // a scalar's Size says nothing evo needs
    return a;
  }
  if (memory == "Local")
    f.fail("MemoryType", "'Local' is not supported (give the kernel's dynamic shared memory as KernelSpecification.SharedMemory)");
  if (memory != "Vector" && memory != "Symbol")
    f.fail("MemoryType", "'" + memory + "' is not supported (Vector, Scalar, Symbol)");

  // Size: an integer, or Python over ProblemSize and the parameters bound to their lists (as
  // Kernel Tuner evaluates it, then int()).
  const Json& size = f.get("Size");
  std::int64_t n = 0;
  if (size.is_number_integer()) {
    n = size.get<std::int64_t>();
  } else if (size.is_string()) {
    try {
      py::Value v = py::evaluate(parse_py(f, "Size", size.get<std::string>()), size_env);
      if (v.is_list)
        f.fail("Size", "'" + size.get<std::string>() +
                           "' is a list, not a number (in a Size a tuning parameter is its list of values: max() takes the largest)");
      // (Checked before the cast too: the cast of a double past 2^63 is undefined.)
      if (!(std::fabs(v.number) < kMostBytes))
        f.fail("Size", "'" + size.get<std::string>() + "' is " + shortest(v.number) + " elements, more than any GPU holds");
      n = static_cast<std::int64_t>(std::trunc(v.number));
    } catch (const py::PyError& e) {
      f.fail("Size", "'" + size.get<std::string>() + "': " + e.what());
    }
  } else {
    f.fail("Size", "must be an integer or an expression");
  }
  if (n <= 0) f.fail("Size", std::to_string(n) + " elements (must be positive)");
  n *= et->lanes;  // a float4 of Size n is 4n floats
  if (double(n) * double(dtype_bytes(et->dtype)) >= kMostBytes)
    f.fail("Size", std::to_string(n) + " elements of " + type + " are " + shortest(double(n) * double(dtype_bytes(et->dtype))) +
                       " bytes, more than any GPU holds");

  const std::string fill = f.has("FillType") ? f.str("FillType") : "";
  const bool has_source = f.has("DataSource");  // read by BinaryRaw; another fill has no use for it
  Json init;
  if (fill == "Constant") {
    if (!has_value) f.fail("FillValue", "missing: the constant to fill with");
    init = value == 0 ? Json{{"dist", "zeros"}} : Json{{"dist", "constant"}, {"value", value}};
  } else if (fill == "Random") {  // KTT: uniform on [0, FillValue)
    const double top = has_value ? value : 1.0;
    init = {{"dist", "uniform"}, {"low", std::min(0.0, top)}, {"high", std::max(0.0, top)}};
  } else if (fill == "BinaryRaw") {  // the file's bytes as they are: Size elements of the Type
    if (!has_source) f.fail("DataSource", "missing: the raw file a BinaryRaw argument is read from");
    const std::string source = f.str("DataSource");
    const auto path = std::filesystem::weakly_canonical(t1_dir / source);
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(path, ec);
    if (ec) f.fail("DataSource", "cannot read " + path.string());
    const std::uint64_t want = static_cast<std::uint64_t>(n) * dtype_bytes(et->dtype);
    if (bytes != want)
      f.fail("DataSource", path.string() + " holds " + std::to_string(bytes) + " bytes; Size " + std::to_string(n / et->lanes) +
                               " of " + type + " is " + std::to_string(want));
    init = {{"dist", "raw"}, {"file", source}};  // as written, relative to the T1 file like KernelFile
  } else if (fill.empty()) {
    f.fail("FillType", "missing (Constant, Random, BinaryRaw)");
  } else {
    f.fail("FillType", "'" + fill + "' is not supported (Constant, Random, BinaryRaw)");
  }

  bool output = false;
  if (f.has("Output")) {
    const Json& o = f.get("Output");
    if (!(o.is_number_integer() || o.is_boolean())) f.fail("Output", "must be 0 or 1");
    output = o.is_boolean() ? o.get<bool>() : o.get<int>() != 0;
  } else if (!outputs_marked) {
    output = access != "ReadOnly";  // no argument says Output: what the kernel may write is compared
  }
  std::string symbol;
  if (memory == "Symbol") symbol = a.name, a.passed = false;  // copied into the kernel's symbol of that name
  if (f.has("MemType")) {
    const std::string mem = f.str("MemType");
    if (mem == "Constant") symbol = a.name;
    else if (mem != "Global") f.fail("MemType", "'" + mem + "' is not supported (Global, Constant)");
  }
  // The schema lets an argument go unnamed; one filling a symbol cannot (it is found by its name).
  if (!symbol.empty() && !f.has("Name"))
    f.fail("Name", memory == "Symbol" ? "missing: a Symbol argument fills the kernel's symbol of its name"
                                      : "missing: a MemType Constant argument fills the __constant__ symbol of its name");
  if (!symbol.empty() && (output || access != "ReadOnly")) {
    if (memory == "Symbol")
      f.fail("MemoryType", "a Symbol argument is read-only (it is copied into the kernel's symbol '" + symbol + "')");
    f.fail("MemType", "a Constant argument is read-only (it is copied into the __constant__ symbol '" + symbol + "')");
  }

  const std::string role = output ? (access == "ReadWrite" ? "inout" : "output") : access == "ReadOnly" ? "input" : "scratch";
  a.buffer = {{"name", a.name}, {"dtype", dtype_name(et->dtype)}, {"shape", Json::array({n})}, {"role", role}};
  if (role != "output") a.buffer["init"] = init;
  if (!symbol.empty()) a.buffer["symbol"] = symbol;
  return a;
}

}  // namespace

bool is_t1_document(const Json& doc) {
  return doc.is_object() && doc.contains("KernelSpecification") && doc.contains("ConfigurationSpace");
}

T1Spec read_t1(const std::filesystem::path& path, bool need_kernel) {
  const std::string file = path.string();
  std::ifstream in(path);
  if (!in) throw UserError(file + ": T1 file not found");
  Json doc;
  try {
    doc = Json::parse(in);
  } catch (const Json::parse_error& e) {
    throw UserError(file + ": malformed JSON: " + e.what());
  }
  return read_t1(path, doc, need_kernel);
}

T1Spec read_t1(const std::filesystem::path& path, const Json& doc, bool need_kernel) {
  const std::string file = path.string();
  T1Spec t;
  t.path = std::filesystem::absolute(path);
  t.name = path.stem().string();
  // General, Search, Budget and BenchmarkConfig are other tuners' settings (output, strategy,
  // budget); evo has its own options for them.
  Fields top(file, "", doc, {"General", "Search", "Budget", "BenchmarkConfig"});
  Fields space(file, "ConfigurationSpace", top.get("ConfigurationSpace"));
  // Device, Profiling, SimulationInput, Misc (e.g. jitify) and BenchmarkName say how other
  // tuners run it; evo compiles with NVRTC on the device it is given.
  Fields ks(file, "KernelSpecification", top.get("KernelSpecification"),
            {"Device", "Profiling", "SimulationInput", "Misc", "BenchmarkName"});
  top.done();

  // A. The knob space: parameters, their defaults, the conditions.
  std::vector<Parameter> params;
  {
    const Json& tp = space.get("TuningParameters");
    if (!tp.is_array() || tp.empty()) space.fail("TuningParameters", "must be a non-empty list");
    for (std::size_t i = 0; i < tp.size(); ++i) {
      Fields pf(file, space.field("TuningParameters[" + std::to_string(i) + "]"), tp[i]);
      params.push_back(read_parameter(pf));
      pf.done();
      for (std::size_t j = 0; j + 1 < params.size(); ++j)
        if (params[j].knob.name == params.back().knob.name) pf.fail("Name", "'" + params.back().knob.name + "' given twice");
    }
  }
  py::Translation tr;
  for (const auto& p : params) {
    t.knobs.push_back(p.knob);
    t.defaults[p.knob.name] = p.default_value;
    for (auto v : p.knob.values) tr.tunables[p.knob.name].push_back(static_cast<double>(v));
  }

  std::vector<std::int64_t> problem;
  {
    const Json& ps = ks.get("ProblemSize");
    std::vector<Json> dims = ps.is_array() ? std::vector<Json>(ps.begin(), ps.end()) : std::vector<Json>{ps};
    if (dims.empty() || dims.size() > 3) ks.fail("ProblemSize", "must be an integer or a list of 1 to 3 integers");
    for (const auto& d : dims) {
      if (d.is_string()) {  // "1024 * 1024": Python of constants
        py::Value v;
        try {
          v = py::evaluate(parse_py(ks, "ProblemSize", d.get<std::string>()), {});
        } catch (const py::PyError& e) {
          ks.fail("ProblemSize", "'" + d.get<std::string>() + "': " + e.what());
        }
        if (v.is_list || !v.is_int || v.number < 0)
          ks.fail("ProblemSize", "'" + d.get<std::string>() + "' is not a non-negative integer");
        problem.push_back(static_cast<std::int64_t>(v.number));
        continue;
      }
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
        ks.fail("ProblemSize", "must be non-negative integers or Python of constants, got " + d.dump());
      problem.push_back(d.get<std::int64_t>());
    }
  }
  tr.problem_dims = static_cast<int>(problem.size());
  t.problem.name = "default";
  for (std::size_t d = 0; d < problem.size(); ++d) t.problem.sizes["ProblemSize_" + std::to_string(d)] = static_cast<double>(problem[d]);

  if (space.has("Conditions")) {
    const Json& cs = space.get("Conditions");
    if (!cs.is_array()) space.fail("Conditions", "must be a list");
    for (std::size_t i = 0; i < cs.size(); ++i) {
      Fields cf(file, space.field("Conditions[" + std::to_string(i) + "]"), cs[i]);
      const Json& e = cf.get("Expression");
      if (!e.is_string()) cf.fail("Expression", "must be a Python expression (a string)");
      t.conditions.push_back(e.get<std::string>());
      t.constraints.push_back(muparser_of(cf, "Expression", t.conditions.back(), tr));
      if (cf.has("Parameters")) {
        const Json& names = cf.get("Parameters");
        if (!names.is_array()) cf.fail("Parameters", "must be a list of tuning parameter names");
        for (const auto& n : names)
          if (!n.is_string() || !tr.tunables.count(n.get<std::string>()))
            cf.fail("Parameters", n.dump() + " is not a tuning parameter");
      }
      cf.done();
    }
  }
  space.done();

  // B. The default configuration, made valid if it is not (the reference must be one the space holds).
  Profile space_only;
  space_only.path = t.path;
  space_only.knobs = t.knobs;
  space_only.constraints = t.constraints;
  space_only.problems = {t.problem};
  space_only.objective = t.problem.name;
  KnobSpace ks_space(space_only);
  {
    auto found = nearest_valid(ks_space, t.knobs, t.defaults);
    if (!found) space.fail("Conditions", "no configuration satisfies them");
    t.reference = *found;
    std::string failing;  // the first condition the defaults fail, as written
    const Vars vars = expression_vars(space_only.kernel, t.problem, t.defaults);
    std::vector<std::string> names;
    for (const auto& [k, _] : vars) names.push_back(k);
    for (std::size_t i = 0; i < t.constraints.size() && failing.empty(); ++i)
      if (Expr(t.constraints[i], names).eval(vars) == 0) failing = t.conditions[i];
    for (const auto& p : params) {
      const std::int64_t got = t.reference.at(p.knob.name);
      if (!p.default_note.empty() && got == p.default_value)
        t.adjustments.push_back(p.knob.name + "=" + std::to_string(got) + " (" + p.default_note + ")");
      else if (got != p.default_value)
        t.adjustments.push_back(p.knob.name + "=" + std::to_string(got) + " (Default " + std::to_string(p.default_value) +
                                (p.default_note.empty() ? "" : "; " + p.default_note) + ": the defaults fail the condition '" +
                                failing + "')");
    }
  }

  // C. The kernel: file, name, language, compiler options.
  const std::string language = ks.str("Language");
  if (language != "CUDA") ks.fail("Language", "'" + language + "' is not supported (evo compiles CUDA with NVRTC)");
  const std::string kernel_file = ks.str("KernelFile");
  const std::string kernel_name = ks.str("KernelName");
  const auto source = std::filesystem::weakly_canonical(t.path.parent_path() / kernel_file);
  std::string kernel_text;
  if (need_kernel) {
    if (!std::filesystem::is_regular_file(source)) ks.fail("KernelFile", "file not found: " + source.string());
    kernel_text = read_file(source).value_or("");
    if (!mentions(kernel_text, kernel_name))
      ks.fail("KernelName", "'" + kernel_name + "' not found in " + source.string());
  }
  std::vector<std::string> options;
  if (ks.has("CompilerOptions")) {
    const Json& o = ks.get("CompilerOptions");
    if (!o.is_array()) ks.fail("CompilerOptions", "must be a list of strings");
    for (const auto& x : o) {
      if (!x.is_string()) ks.fail("CompilerOptions", "must be a list of strings");
      options.push_back(x.get<std::string>());
    }
  }
  if (ks.has("Stream") && !ks.get("Stream").is_null()) ks.fail("Stream", "not supported (evo launches on its own stream)");
  if (ks.has("ReferenceArguments"))
    ks.fail("ReferenceArguments", "not supported (evo compares every configuration with the default configuration)");

  // D. The launch: LocalSize is the block; the grid is Kernel Tuner's, ProblemSize divided by the
  // product of GridDiv* (per dimension, rounded up), or else GlobalSize as GlobalSizeType says.
  {
    Fields local(file, ks.field("LocalSize"), ks.get("LocalSize"));
    const char* axes[] = {"X", "Y", "Z"};
    for (int d = 0; d < 3; ++d)
      t.launch.block[d] = local.has(axes[d]) ? expr_field(local, axes[d], local.get(axes[d]), tr) : "1";
    local.done();
    const std::string size_type = ks.has("GlobalSizeType") ? ks.str("GlobalSizeType") : "OpenCL";
    if (size_type != "OpenCL" && size_type != "CUDA")
      ks.fail("GlobalSizeType", "'" + size_type + "' is not supported (OpenCL: GlobalSize counts threads; CUDA: blocks)");
    Fields global(file, ks.field("GlobalSize"), ks.get("GlobalSize"));
    std::array<std::string, 3> global_size{"1", "1", "1"};
    for (int d = 0; d < 3; ++d)
      if (global.has(axes[d])) global_size[d] = expr_field(global, axes[d], global.get(axes[d]), tr);
    global.done();
    bool grid_div = false;
    std::array<std::vector<std::string>, 3> divs;
    for (int d = 0; d < 3; ++d) {
      const std::string k = std::string("GridDiv") + axes[d];
      if (!ks.has(k)) continue;
      const Json& l = ks.get(k);
      if (!l.is_array()) ks.fail(k, "must be a list of expressions");
      for (std::size_t i = 0; i < l.size(); ++i) divs[d].push_back(expr_field(ks, k + "[" + std::to_string(i) + "]", l[i], tr));
      grid_div |= !divs[d].empty();
    }
    const char* block_names[] = {"block_size_x", "block_size_y", "block_size_z"};
    for (int d = 0; d < 3; ++d) {
      if (!grid_div) {
        t.launch.grid[d] = size_type == "CUDA" ? global_size[d] : "cdiv(" + global_size[d] + ", " + t.launch.block[d] + ")";
        continue;
      }
      // Kernel Tuner: a dimension without GridDiv is divided by block_size_{x,y,z} if that is a
      // parameter, else by 1; a problem of fewer dimensions is 1 along the rest.
      std::vector<std::string> by = divs[d];
      if (by.empty() && tr.tunables.count(block_names[d])) by.push_back(block_names[d]);
      const std::string extent = d < static_cast<int>(problem.size()) ? "ProblemSize_" + std::to_string(d) : "1";
      std::string product;
      for (const auto& x : by) product += (product.empty() ? "" : " * ") + x;
      t.launch.grid[d] = product.empty() ? extent : "cdiv(" + extent + ", " + product + ")";
    }
  }
  if (ks.has("SharedMemory")) t.launch.shared_bytes = expr_field(ks, "SharedMemory", ks.get("SharedMemory"), tr);

  // E. The arguments, in order. Sizes see ProblemSize and each parameter bound to its values.
  py::Env size_env;
  for (const auto& p : params) {
    std::vector<py::Value> vs;
    for (auto v : p.knob.values) vs.push_back(py::Value::integer(static_cast<double>(v)));
    size_env[p.knob.name] = py::Value::list(std::move(vs));
  }
  {
    std::vector<py::Value> ps;
    for (auto d : problem) ps.push_back(py::Value::integer(static_cast<double>(d)));
    size_env["ProblemSize"] = py::Value::list(std::move(ps));
  }
  Json buffers = Json::array(), scalars = Json::array(), args = Json::array();
  {
    const Json& as = ks.get("Arguments");
    if (!as.is_array() || as.empty()) ks.fail("Arguments", "must be a non-empty list");
    bool outputs_marked = false;
    for (const auto& a : as) outputs_marked |= a.is_object() && a.contains("Output");
    std::set<std::string> names;
    for (std::size_t i = 0; i < as.size(); ++i) {
      // RandomSeed belongs to fills evo draws itself, from its own seeds.
      Fields af(file, ks.field("Arguments[" + std::to_string(i) + "]"), as[i], {"RandomSeed"});
      Argument a = read_argument(af, i, size_env, outputs_marked, t.path.parent_path());
      af.done();
      if (!names.insert(a.name).second) af.fail("Name", "'" + a.name + "' given twice");
      if (tr.tunables.count(a.name)) af.fail("Name", "'" + a.name + "' is also a tuning parameter");
      // A symbol the kernel file never names would be found missing only on a GPU, at the first launch.
      if (need_kernel && a.buffer.contains("symbol") && !mentions(kernel_text, a.name))
        af.fail("Name", "'" + a.name + "' not found in " + source.string() + " (the argument fills the kernel's symbol of its name)");
      if (!a.buffer.is_null()) buffers.push_back(a.buffer);
      if (!a.scalar.is_null()) scalars.push_back(a.scalar);
      if (a.passed) args.push_back(a.name);
    }
    bool compared = false;
    for (const auto& b : buffers) compared |= b["role"] == "output" || b["role"] == "inout";
    if (!compared)
      ks.fail("Arguments", "no output: mark the arguments the kernel computes with \"Output\": 1 (GREEN compares them)");
  }
  ks.done();

  // F. The profile.
  Json knobs = Json::object(), baseline = Json::object();
  for (const auto& k : t.knobs) {
    knobs[k.name] = k.values;
    baseline[k.name] = t.reference.at(k.name);
  }
  Json launch = {{"grid", t.launch.grid}, {"block", t.launch.block}, {"shared_bytes", t.launch.shared_bytes}};
  Json& p = t.profile;
  p["name"] = t.name;
  p["description"] = "T1 file " + path.filename().string() + ": " + kernel_name + " in " + kernel_file + "; reference: " +
                     t1_reference_text(t);
  p["template"] = kernel_file;
  p["kernel"] = kernel_name;
  if (!options.empty()) p["compile_options"] = options;
  p["knobs"] = knobs;
  p["constraints"] = t.constraints;
  p["baseline"] = baseline;
  p["problems"] = Json::array({{{"name", t.problem.name}, {"sizes", t.problem.sizes}}});
  p["buffers"] = buffers;
  if (!scalars.empty()) p["scalars"] = scalars;
  p["args"] = args;
  p["launch"] = launch;
  // The default configuration (the baseline): the candidate's own kernel, compiled and launched as
  // that configuration would be, on the same buffers.
  p["reference"] = {{"config", "baseline"}, {"name", t1_reference_text(t)}};
  // Every configuration Kernel Tuner would measure is measured: spills are allowed. The inputs
  // are large (a 4096 x 4096 image): three trials, one per seed.
  p["gates"] = {{"static", {{"max_spill_bytes", -1}}}, {"green", {{"seeds", Json::array({0u, 1u, 2u})}, {"trials", 1}}}};
  return t;
}

std::string t1_reference_text(const T1Spec& t) {
  std::string s = "the default configuration ";
  for (std::size_t i = 0; i < t.knobs.size(); ++i)
    s += (i ? "," : "") + t.knobs[i].name + "=" + std::to_string(t.reference.at(t.knobs[i].name));
  if (!t.adjustments.empty()) {
    s += " (not as written: ";
    for (std::size_t i = 0; i < t.adjustments.size(); ++i) s += (i ? "; " : "") + t.adjustments[i];
    s += ")";
  }
  return s;
}

}  // namespace evo
