// Kernel Tuner caches and T4 results -> evo landscapes (format of the inputs: Kernel Tuner 1.5's
// kernel_tuner/util.py store_cache/read_cache and file_utils.py get_t4_results).
#include "engine/landscape_import.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "engine/error.h"
#include "engine/files.h"
#include "engine/space.h"

namespace evo {

using Json = nlohmann::json;

std::string read_maybe_gzip(const std::filesystem::path& file) {
  std::optional<std::string> read = read_file(file);
  if (!read) throw UserError(file.string() + ": cannot read it (no such file or not readable)");
  std::string& bytes = *read;
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f || static_cast<unsigned char>(bytes[1]) != 0x8b)
    return bytes;
  // 16 + MAX_WBITS: a gzip header, not a bare zlib stream.
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw UserError(file.string() + ": zlib could not start");
  z.next_in = reinterpret_cast<Bytef*>(bytes.data());
  z.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      throw UserError(file.string() + ": not a valid gzip file (" + (z.msg ? z.msg : "inflate failed") + ")");
    }
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc != Z_STREAM_END && z.avail_in > 0);
  inflateEnd(&z);
  if (rc != Z_STREAM_END) throw UserError(file.string() + ": the gzip stream ends early");
  return out;
}

namespace {

// Kernel Tuner appends entries as it measures them and closes the object at the end; a run that
// was stopped leaves it open. Its own reader closes it the same way (util.py correct_open_cache).
std::string closed_cache_text(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  const bool closed = text.size() >= 3 && (text.compare(text.size() - 3, 3, "}\n}") == 0 || text.compare(text.size() - 3, 3, "}}}") == 0);
  if (!text.empty() && !closed) {
    if (text.back() == ',') text.pop_back();
    text += "}\n}";
  }
  return text;
}

Profile space_profile(const T1Spec& t1) {
  Profile p;
  p.path = t1.path;
  p.name = t1.name;
  p.knobs = t1.knobs;
  p.constraints = t1.constraints;
  p.problems = {t1.problem};
  p.objective = t1.problem.name;
  p.kernel.launch = t1.launch;
  p.baseline = t1.reference;
  return p;
}

// A configuration as the file gives it, or why it is not one of the T1 space's.
std::optional<Config> config_of(const std::string& file, const std::string& where, const Json& values, const T1Spec& t1) {
  Config c;
  for (const auto& k : t1.knobs) {
    if (!values.contains(k.name)) fail_at(file, where, "no value for tuning parameter " + k.name);
    const Json& v = values.at(k.name);
    double x = 0;
    if (v.is_number()) x = v.get<double>();
    else if (v.is_boolean()) x = v.get<bool>();
    else fail_at(file, where + "." + k.name, "not a number: " + v.dump());
    if (x != std::trunc(x)) return std::nullopt;  // not an integer: no knob value of evo's
    c[k.name] = static_cast<std::int64_t>(x);
  }
  return c;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at)), hi = static_cast<std::size_t>(std::ceil(at));
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

// The median and spread from a list of runtimes (ms), when the file keeps them.
void spread(LandscapePoint& p, const Json& times, double unit_us) {
  if (!times.is_array() || times.empty()) return;
  std::vector<double> us;
  for (const auto& t : times)
    if (t.is_number()) us.push_back(t.get<double>() * unit_us);
  if (us.size() < 2) return;
  double mean = 0, var = 0;
  for (double x : us) mean += x;
  mean /= static_cast<double>(us.size());
  for (double x : us) var += (x - mean) * (x - mean);
  p.p90_us = percentile(us, 0.9);
  p.cv = mean > 0 ? std::sqrt(var / static_cast<double>(us.size() - 1)) / mean : 0;
}

// Kernel Tuner's failure strings (util.py ErrorConfig and its subclasses), as evo's statuses.
std::optional<std::pair<Status, std::string>> kt_failure(const std::string& s) {
  if (s == "CompilationFailedConfig") return {{Status::CompileError, "Kernel Tuner: CompilationFailedConfig"}};
  // core.py: a launch that fails with "too many resources requested" (or OUT_OF_RESOURCES): what
  // evo's static gate turns away before a launch.
  if (s == "RuntimeFailedConfig")
    return {{Status::StaticRejected, "Kernel Tuner: RuntimeFailedConfig (the launch failed: too many resources requested)"}};
  // core.py: more threads per block than the device allows (the T1 conditions held).
  if (s == "InvalidConfig")
    return {{Status::StaticRejected, "Kernel Tuner: InvalidConfig (more threads per block than the device allows)"}};
  if (s == "ErrorConfig") return {{Status::Crashed, "Kernel Tuner: ErrorConfig"}};
  return std::nullopt;
}

// A text field of an object, or fallback when it is absent (a field of another type is the file's
// mistake, said as one: the readers of these files trust nothing of their shape).
std::string text_of(const std::string& file, const std::string& where, const Json& obj, const char* key,
                    const std::string& fallback) {
  if (!obj.is_object() || !obj.contains(key)) return fallback;
  const Json& v = obj.at(key);
  if (!v.is_string()) fail_at(file, (where.empty() ? "" : where + ".") + key, "must be a string, not " + v.dump());
  return v.get<std::string>();
}

double unit_us(const std::string& unit, const std::string& file, const std::string& where) {
  if (unit == "ms" || unit == "milliseconds" || unit.empty()) return 1e3;
  if (unit == "us" || unit == "microseconds") return 1;
  if (unit == "s" || unit == "seconds") return 1e6;
  if (unit == "ns" || unit == "nanoseconds") return 1e-3;
  fail_at(file, where, "unknown time unit '" + unit + "' (ms, us, s, ns)");
}

}  // namespace

LandscapeImport import_landscape(const std::filesystem::path& path, const T1Spec& t1) {
  const std::string file = path.string();
  Json doc;
  try {
    doc = Json::parse(read_maybe_gzip(path));
  } catch (const Json::parse_error&) {
    // An open Kernel Tuner cache (a stopped run) is valid JSON once closed.
    try {
      doc = Json::parse(closed_cache_text(read_maybe_gzip(path)));
    } catch (const Json::parse_error& e) {
      throw UserError(file + ": malformed JSON: " + e.what());
    }
  }
  if (!doc.is_object() || (!doc.contains("cache") && !doc.contains("results")))
    throw UserError(file + ": neither a Kernel Tuner cache (\"cache\") nor a T4 results file (\"results\")");

  const Profile prof = space_profile(t1);
  const KnobSpace space(prof);
  LandscapeImport im;
  Landscape& l = im.landscape;
  l.profile = t1.name;
  l.problem = t1.problem.name;
  l.baseline = t1.reference;
  l.knobs = t1.knobs;
  l.constraints = t1.constraints;
  l.problems = {t1.problem};
  l.objective = t1.problem.name;
  l.launch = t1.launch;
  std::set<std::string> seen;

  // One entry: left out when outside the space, else a point (a repeated configuration is an error).
  auto add = [&](const std::string& where, std::optional<Config> c, LandscapePoint p) {
    ++im.entries;
    if (!c || !space.valid(*c)) {
      ++im.outside;
      return;
    }
    if (!seen.insert(config_hash(*c)).second) fail_at(file, where, "configuration " + config_text(*c) + " given twice");
    p.knobs = *c;
    ++im.by_status[status_name(p.status)];
    l.points.push_back(std::move(p));
  };

  if (doc.contains("cache")) {
    im.source = "Kernel Tuner cache";
    l.device = text_of(file, "", doc, "device_name", "unknown device");
    if (doc.contains("tune_params_keys")) {
      std::set<std::string> theirs, ours;
      const Json& keys = doc.at("tune_params_keys");
      if (!keys.is_array()) fail_at(file, "tune_params_keys", "must be a list of the tuning parameters' names");
      for (const auto& k : keys) {
        if (!k.is_string()) fail_at(file, "tune_params_keys", "must be a list of names, not " + k.dump());
        theirs.insert(k.get<std::string>());
      }
      for (const auto& k : t1.knobs) ours.insert(k.name);
      for (const auto& k : theirs)
        if (!ours.count(k)) fail_at(file, "tune_params_keys", "'" + k + "' is not a tuning parameter of " + t1.path.filename().string());
      for (const auto& k : ours)
        if (!theirs.count(k)) fail_at(file, "tune_params_keys", "no '" + k + "' (a tuning parameter of " + t1.path.filename().string() + ")");
    }
    const Json& cache = doc.at("cache");
    if (!cache.is_object()) fail_at(file, "cache", "not an object of entries");
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      const std::string where = "cache[\"" + it.key() + "\"]";
      const Json& e = it.value();
      if (!e.is_object()) fail_at(file, where, "not an object");
      LandscapePoint p;
      // A failure is a string in any field (the objective's, usually "time"), as read_cache finds it.
      std::optional<std::pair<Status, std::string>> failed;
      for (auto f = e.begin(); f != e.end() && !failed; ++f)
        if (f->is_string()) failed = kt_failure(f->get<std::string>());
      if (failed) {
        p.status = failed->first;
        p.message = failed->second;
      } else {
        if (!e.contains("time") || !e.at("time").is_number()) fail_at(file, where + ".time", "missing: neither a time nor a failure");
        p.status = Status::Measured;
        p.p50_us = p.p90_us = e.at("time").get<double>() * 1e3;
        if (!(p.p50_us > 0) || !std::isfinite(p.p50_us))
          fail_at(file, where + ".time", std::to_string(e.at("time").get<double>()) + " ms is not a time");
        if (e.contains("times")) spread(p, e.at("times"), 1e3);
      }
      auto seconds = [&](const char* k) { return e.contains(k) && e.at(k).is_number() ? e.at(k).get<double>() / 1e3 : 0.0; };
      p.seconds_compile = seconds("compile_time");
      p.seconds_green = seconds("verification_time");
      p.seconds_fast = seconds("benchmark_time");
      add(where, config_of(file, where, e, t1), std::move(p));
    }
  } else {
    im.source = "T4 results";
    const Json& meta = doc.contains("metadata") ? doc.at("metadata") : Json::object();
    if (!meta.is_object()) fail_at(file, "metadata", "must be an object");
    const std::string device = text_of(file, "metadata", meta, "device", "unknown device (T4 " + path.filename().string() + ")");
    l.device = meta.contains("evo") ? text_of(file, "metadata.evo", meta.at("evo"), "device", device) : device;
    const double file_unit = unit_us(text_of(file, "metadata", meta, "timeunit", "milliseconds"), file, "metadata.timeunit");
    const Json& results = doc.at("results");
    if (!results.is_array()) fail_at(file, "results", "not a list");
    for (std::size_t i = 0; i < results.size(); ++i) {
      const std::string where = "results[" + std::to_string(i) + "]";
      const Json& r = results[i];
      if (!r.is_object() || !r.contains("configuration")) fail_at(file, where, "no configuration");
      const std::string validity = text_of(file, where, r, "invalidity", "correct");
      LandscapePoint p;
      static const std::map<std::string, std::pair<Status, const char*>> kKinds = {
          {"compile", {Status::CompileError, "T4: compile"}},
          {"runtime", {Status::StaticRejected, "T4: runtime (the launch failed)"}},
          {"constraints", {Status::StaticRejected, "T4: constraints (the device's limits)"}},
          {"correctness", {Status::GreenFailed, "T4: correctness"}},
          {"timeout", {Status::Timeout, "T4: timeout"}}};
      if (validity != "correct") {
        auto k = kKinds.find(validity);
        if (k == kKinds.end()) fail_at(file, where + ".invalidity", "'" + validity + "' is not a T4 invalidity");
        p.status = k->second.first;
        p.message = k->second.second;
      } else {
        p.status = Status::Measured;
        const Json* time = nullptr;
        if (r.contains("measurements")) {
          if (!r.at("measurements").is_array()) fail_at(file, where + ".measurements", "must be a list");
          for (std::size_t j = 0; j < r.at("measurements").size(); ++j) {
            const Json& m = r.at("measurements")[j];
            if (text_of(file, where + ".measurements[" + std::to_string(j) + "]", m, "name", "") == "time") time = &m;
          }
        }
        if (!time || !time->contains("value") || !time->at("value").is_number())
          fail_at(file, where + ".measurements", "no numeric \"time\" for a correct configuration");
        const std::string unit = text_of(file, where + ".measurements.time", *time, "unit", "");
        const double scale = unit.empty() ? file_unit : unit_us(unit, file, where + ".measurements.time.unit");
        p.p50_us = p.p90_us = time->at("value").get<double>() * scale;
        if (!(p.p50_us > 0)) fail_at(file, where + ".measurements", "time " + std::to_string(p.p50_us) + " us is not a time");
        if (r.contains("times") && r.at("times").contains("runtimes")) spread(p, r.at("times").at("runtimes"), scale);
      }
      if (r.contains("times")) {
        const Json& t = r.at("times");
        auto seconds = [&](const char* k) { return t.contains(k) && t.at(k).is_number() ? t.at(k).get<double>() / 1e3 : 0.0; };
        p.seconds_compile = seconds("compilation");
        p.seconds_green = seconds("validation");
        p.seconds_fast = seconds("benchmark");
      }
      add(where, config_of(file, where + ".configuration", r.at("configuration"), t1), std::move(p));
    }
  }

  const auto valid = space.enumerate_valid();
  im.valid = valid.size();
  for (const auto& c : valid) im.missing += !seen.count(config_hash(c));
  for (const auto& p : l.points)
    if (p.knobs == l.baseline && p.status == Status::Measured) l.baseline_p50_us = p.p50_us;
  l.description = "imported from " + path.filename().string() + " (" + im.source + ") with T1 file " +
                  t1.path.filename().string();
  return im;
}

std::string import_summary(const LandscapeImport& im) {
  std::string kinds;
  for (const auto& [status, n] : im.by_status) kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + status;
  return std::to_string(im.landscape.points.size()) + " configurations (" + (kinds.empty() ? "none" : kinds) + "); " +
         std::to_string(im.missing) + " of the " + std::to_string(im.valid) +
         " configurations that pass the T1 conditions missing from the file; " + std::to_string(im.outside) + " of its " +
         std::to_string(im.entries) + " entries outside them, left out";
}

}  // namespace evo
