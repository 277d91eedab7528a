// external (`--strategy external --proposer CMD`): someone else proposes (a script, an LLM
// agent). Once per generation evo runs CMD through /bin/sh with one JSON document on stdin,
// EvoEngineer's three parts:
//   task      I1: profile, problems, knob space, constraints, baseline, device
//   history   I2: the elites (knobs, medians, verdicts, origins), recent failures, the template text
//   insights  I3: each elite's metrics and ptxas report with what the rule engine suggests
// and reads {"configs": [{"knobs": {...}, "note": "..."}]} from stdout. Proposals outside the
// space, breaking a constraint or already seen are dropped with a warning, and the proposer is
// asked again (told why) up to `retries` times. docs/search.md has the format with an example.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/error.h"
#include "engine/evaluation_json.h"
#include "engine/search/insights.h"
#include "engine/search/strategy.h"

namespace evo {
namespace {

using Json = nlohmann::ordered_json;

const std::vector<StrategyOption> kOptions = {
    {"proposer", "shell command that reads the JSON document on stdin and writes proposals on stdout", ""},
    {"elites", "historical solutions sent (fastest GREEN, timed candidates)", "8"},
    {"failures", "most recent failed candidates sent, with why they failed", "8"},
    {"retries", "times the proposer is asked again when nothing it proposed was usable", "2"},
};

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Json knobs_json(const Config& c) {
  Json j = Json::object();
  for (const auto& [k, v] : c) j[k] = v;
  return j;
}

class ExternalSearch : public Strategy {
 public:
  explicit ExternalSearch(const StrategyContext& ctx) : ctx_(ctx) {
    OptionValues o("external", kOptions, ctx.options);
    command_ = o.text("proposer");
    if (command_.empty())
      throw UserError("strategy external needs a proposer: --proposer CMD (for example: python3 tests/data/proposer.py)");
    elites_ = static_cast<std::size_t>(o.integer("elites", 0, 1000));
    failures_ = static_cast<std::size_t>(o.integer("failures", 0, 1000));
    retries_ = static_cast<int>(o.integer("retries", 0, 100));
    template_text_ = ctx.template_text;
    if (template_text_.empty() && !ctx.profile.kernel.source.empty() && std::filesystem::exists(ctx.profile.kernel.source))
      template_text_ = read_text(ctx.profile.kernel.source);
  }

  std::vector<Candidate> propose(std::size_t n) override {
    std::vector<Candidate> out;
    Json rejected = Json::array();
    for (int attempt = 0; attempt <= retries_ && out.empty(); ++attempt) {
      ++generation_;
      Json reply = ask(document(n, rejected));
      const Json* list = reply.is_array() ? &reply : reply.contains("configs") ? &reply["configs"] : nullptr;
      if (!list || !list->is_array())
        throw UserError("proposer '" + command_ + "': stdout is not {\"configs\": [...]} (see docs/search.md)");
      for (const auto& item : *list) {
        if (out.size() >= n) break;
        const Json& knobs = item.is_object() && item.contains("knobs") ? item["knobs"] : item;
        std::string why;
        std::optional<Config> c = parse(knobs, why);
        if (c && seen_.count(config_hash(*c))) why = "already proposed or evaluated";
        if (!why.empty()) {
          spdlog::warn("proposer: dropped {}: {}", knobs.dump(), why);
          rejected.push_back({{"knobs", knobs}, {"why", why}});
          continue;
        }
        seen_.insert(config_hash(*c));
        std::string note = item.is_object() && item.contains("note") && item["note"].is_string() ? item["note"].get<std::string>() : "";
        std::vector<std::string> parents;
        if (item.is_object() && item.contains("parents") && item["parents"].is_array())
          for (const auto& p : item["parents"])
            if (p.is_string()) parents.push_back(p.get<std::string>());
        out.push_back({*c, Origin{"external", note, parents}});
      }
    }
    return out;
  }

  void observe(const Evaluation& e) override {
    seen_.insert(config_hash(e.config));
    ++evaluated_;
    if (e.measured() && e.green_passed()) {
      timed_.push_back(e);
      std::stable_sort(timed_.begin(), timed_.end(),
                       [](const Evaluation& a, const Evaluation& b) { return a.fast.p50_us < b.fast.p50_us; });
      if (timed_.size() > std::max<std::size_t>(elites_, 1)) timed_.pop_back();
    } else {
      failed_.push_back(e);
      if (failed_.size() > failures_) failed_.erase(failed_.begin());
    }
  }

 private:
  // Proposed knobs as a Config; `why` says what is wrong with it (unknown knob, value, constraint).
  std::optional<Config> parse(const Json& knobs, std::string& why) const {
    if (!knobs.is_object()) {
      why = "not an object of knob values";
      return std::nullopt;
    }
    Config c(ctx_.profile.baseline.begin(), ctx_.profile.baseline.end());  // unnamed knobs: the baseline's
    for (const auto& [k, v] : knobs.items()) {
      if (!v.is_number_integer()) {
        why = k + ": not an integer";
        return std::nullopt;
      }
      c[k] = v.get<std::int64_t>();
    }
    if (auto bad = ctx_.space.why_invalid(c)) {
      why = *bad;
      return std::nullopt;
    }
    return c;
  }

  Json document(std::size_t n, const Json& rejected) const {
    const Profile& p = ctx_.profile;
    Json problems = Json::array();
    for (const auto& pr : p.problems) problems.push_back({{"name", pr.name}, {"sizes", pr.sizes}});
    Json knobs = Json::object();
    for (const auto& k : ctx_.space.knobs()) knobs[k.name] = k.values;
    Json task{{"profile", p.name},
              {"description", p.description},
              {"device", ctx_.device},
              {"objective", p.objective.empty() ? p.problems.front().name : p.objective},
              {"problems", problems},
              {"knobs", knobs},
              {"constraints", p.constraints},
              {"defines", p.kernel.defines},
              {"baseline", knobs_json(Config(p.baseline.begin(), p.baseline.end()))}};

    Json elites = Json::array(), insights = Json::array();
    for (const auto& e : timed_) {
      elites.push_back({{"config_hash", e.config_hash},
                        {"knobs", knobs_json(e.config)},
                        {"p50_us", e.fast.p50_us},
                        {"cv", e.fast.cv},
                        {"speedup", e.speedup},
                        {"green", Json(nlohmann::json(e.green))},  // the macros define plain json only
                        {"origin", Json(nlohmann::json(e.origin))}});
      Json moves = Json::array();
      for (const auto& s : suggest_insights(e, p, ctx_.space))
        moves.push_back({{"rule", s.rule}, {"why", s.why}, {"knobs", knobs_json(s.config)}});
      insights.push_back({{"parent", e.config_hash},
                          {"metrics", e.metrics.values},
                          {"metrics_note", e.metrics.reason},
                          {"ptxas", Json(nlohmann::json(e.static_verdict.ptxas.registers >= 0 ? e.static_verdict.ptxas : e.build.ptxas))},
                          {"suggestions", moves}});
    }
    Json failures = Json::array();
    for (const auto& e : failed_)
      failures.push_back({{"knobs", knobs_json(e.config)}, {"status", status_name(e.status)}, {"message", e.message}});
    Json history{{"template", template_text_}, {"evaluated", evaluated_}, {"elites", elites}, {"failures", failures}};
    return Json{{"format", "evo-proposer/1"}, {"generation", generation_}, {"want", n},
                {"task", task},               {"history", history},        {"insights", insights},
                {"rejected", rejected}};
  }

  // Runs the command with the document on stdin (a file: no deadlock on large documents).
  Json ask(const Json& doc) const {
    namespace fs = std::filesystem;
    const fs::path in = fs::temp_directory_path() /
                        ("evo-proposer-" + std::to_string(::getpid()) + "-" + std::to_string(generation_) + ".json");
    {
      std::ofstream f(in, std::ios::binary);
      f << doc.dump(1) << '\n';
      if (!f.flush()) throw UserError(in.string() + ": cannot write the proposer's input");
    }
    const std::string cmd = "(" + command_ + ") < '" + in.string() + "'";
    std::string text;
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (!pipe) {
      fs::remove(in);
      throw UserError("proposer '" + command_ + "': cannot start it");
    }
    char buf[4096];
    std::size_t got;
    while ((got = std::fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, got);
    const int status = ::pclose(pipe);
    std::error_code ec;
    fs::remove(in, ec);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw UserError("proposer '" + command_ + "' failed (exit status " +
                      std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
    try {
      return Json::parse(text);
    } catch (const nlohmann::json::parse_error&) {
      throw UserError("proposer '" + command_ + "': stdout is not JSON: '" + text.substr(0, 80) + "'");
    }
  }

  StrategyContext ctx_;
  std::string command_, template_text_;
  std::size_t elites_, failures_;
  int retries_;
  int generation_ = 0;
  std::int64_t evaluated_ = 0;
  std::vector<Evaluation> timed_, failed_;
  std::unordered_set<std::string> seen_;
};

}  // namespace

StrategyInfo external_strategy_info() {
  return {"external", "a command proposes each generation (JSON on stdin and stdout)", kOptions,
          [](const StrategyContext& ctx) { return std::make_unique<ExternalSearch>(ctx); }};
}

}  // namespace evo
