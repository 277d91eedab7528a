// evo profiles | check | compile: everything that needs no GPU.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>

#include "cli/commands.h"
#include "cli/table.h"
#include "engine/buffers.h"  // defines: buffer_set_demand, kKeptBufferSetsFloor, kKeptBufferSetsShare
#include "engine/compiler.h"
#include "engine/error.h"
#include "engine/evaluation_json.h"
#include "engine/profile.h"
#include "engine/space.h"
#include "gates/static_gate.h"

namespace evo::cli {

namespace {

// A profile with a space that holds at least one configuration, or a UserError saying why not.
struct LoadedProfile {
  Profile profile;
  KnobSpace space;
};

LoadedProfile load_checked(const std::string& name) {
  Profile p = load_profile(resolve_profile(name));
  KnobSpace s(p);
  std::mt19937_64 rng(0);
  if (!s.sample(rng))
    throw UserError(p.path.string() + ": constraints: no configuration satisfies them (space of " +
                    std::to_string(s.size()) + " combinations)");
  return {std::move(p), std::move(s)};
}

}  // namespace

int cmd_profiles(const Globals& g) {
  nlohmann::json out = nlohmann::json::array();
  Table t({"profile", "knobs", "space", "valid", "problems", "objective", "best for", "description"});
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(profiles_dir()))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    Profile p = load_profile(f);
    KnobSpace s(p);
    const auto valid = s.enumerate_valid().size();
    std::string problems;
    for (const auto& pr : p.problems) problems += (problems.empty() ? "" : ",") + pr.name;
    std::string best_for;  // the archs `evo run` takes this profile for when given none
    for (const auto& a : p.best_for) best_for += (best_for.empty() ? "" : ",") + a;
    t.add({p.name, std::to_string(p.knobs.size()), std::to_string(s.size()), std::to_string(valid), problems,
           p.objective, best_for, p.description});
    out.push_back({{"name", p.name}, {"path", f.string()}, {"knobs", p.knobs.size()}, {"space", s.size()},
                   {"valid", valid}, {"problems", problems}, {"objective", p.objective},
                   {"best_for", p.best_for}, {"description", p.description}});
  }
  if (g.json) std::cout << out.dump(2) << '\n';
  else t.print(std::cout);
  return 0;
}

int cmd_check(const Globals& g, const std::string& name) {
  auto [p, space] = load_checked(name);
  const auto valid = space.enumerate_valid();
  auto why = space.why_invalid(p.baseline);
  const auto launches = p.launches();
  const auto ref_launches = p.reference_launches();
  const std::string reference_kind =
      p.reference_command ? "command" : p.reference_data ? "data" : p.reference_config ? "config" : "kernel";
  // A knob-sized scratch beside inputs of gigabytes: GREEN and FAST keep a set of device buffers per
  // shape, and past what a GPU keeps (kKeptBufferSetsShare of its memory, at least the floor; here,
  // without a probed GPU, the floor) they are made again and the inputs uploaded again, candidate
  // after candidate (20 s a candidate: docs/results/landscapes_h200).
  const double kept_gb = double(kept_bytes_bound(kKeptBufferSetsFloor, kKeptBufferSetsShare)) / 1e9;
  std::vector<std::string> notes;
  for (const auto& pr : p.problems) {
    const BufferSetDemand d = buffer_set_demand(p, pr, valid);
    const double gb = double(d.largest_bytes) / 1e9;
    if (d.sets < 2 || double(d.sets) * gb <= kept_gb) continue;
    std::string names;
    for (const auto& n : d.knob_sized) names += (names.empty() ? "" : ", ") + n;
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "problem %s: %zu sets of buffers of up to %.1f GB (%.0f GB together), as scratch %s is sized by "
                  "knobs; a GPU keeps an eighth of its memory of them (at least 8 GB) and makes the rest again "
                  "for every candidate: give it the shape of its largest value",
                  pr.name.c_str(), d.sets, gb, double(d.sets) * gb, names.c_str());
    notes.push_back(buf);
  }
  if (g.json) {
    nlohmann::json j{{"profile", p.name},       {"path", p.path.string()}, {"space", space.size()},
                     {"valid", valid.size()},   {"baseline", p.baseline},  {"baseline_valid", !why},
                     {"baseline_reason", why ? *why : ""}, {"objective", p.objective}};
    j["launches"] = nlohmann::json::array();
    for (const KernelSpec* k : launches) j["launches"].push_back({{"template", k->source.string()}, {"kernel", k->name}});
    j["reference"] = {{"kind", reference_kind}, {"text", p.reference_text()}};
    if (p.reference_command) j["reference"]["command"] = p.reference_command->command;
    j["notes"] = notes;
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << "profile   " << p.name << "  (" << p.path.string() << ")\n";
    // One launch keeps its one-line form; a sequence lists its launches in order.
    for (std::size_t i = 0; i < launches.size(); ++i)
      std::cout << (launches.size() == 1 ? std::string("template  ") : "launch " + std::to_string(i + 1) + "  ")
                << launches[i]->source.string() << "  kernel " << launches[i]->name << "\n";
    // A configuration of the candidate is named (its launches are the candidate's, listed above).
    if (p.reference_config) std::cout << "reference " << p.reference_text() << "\n";
    for (std::size_t i = 0; i < ref_launches.size() && !p.reference_config; ++i)
      std::cout << (ref_launches.size() == 1 ? std::string("reference ") : "reference launch " + std::to_string(i + 1) + "  ")
                << ref_launches[i]->source.string() << "  kernel " << ref_launches[i]->name << "\n";
    if (p.reference_command)
      std::cout << "reference command `" << p.reference_command->command << "` (in " << p.reference_command->dir.string()
                << ")\n";
    if (p.reference_data)
      std::cout << "reference data: " << p.reference_data->inputs.size() << " input files, "
                << p.reference_data->outputs.size() << " output files (fixed inputs: one trial)\n";
    std::cout << "knobs     ";
    for (const auto& k : p.knobs) {
      std::cout << k.name << "{";
      for (std::size_t i = 0; i < k.values.size(); ++i) std::cout << (i ? "," : "") << k.values[i];
      std::cout << "} ";
    }
    std::cout << "\nspace     " << space.size() << " combinations, " << valid.size()
              << " pass the constraints (" << p.constraints.size() << " constraints)\n"
              << "problems  ";
    for (const auto& pr : p.problems) std::cout << pr.name << (pr.name == p.objective ? "* " : " ");
    std::cout << " (* objective)\nbaseline  " << config_text(p.baseline) << "  "
              << (why ? "INVALID: " + *why : std::string("valid")) << "\n";
    for (const auto& n : notes) std::cout << "note      " << n << "\n";
  }
  return why ? 1 : 0;
}

int cmd_compile(const Globals& g, const CompileArgs& a) {
  auto [p, space] = load_checked(a.profile);
  const std::string arch = a.arch.empty() ? p.arch : a.arch;
  const ArchLimits limits = arch_limits(arch);
  std::vector<Config> configs;
  if (a.all) {
    configs = space.enumerate_valid();
  } else if (a.sample > 0) {
    auto all = space.enumerate_valid();
    std::mt19937_64 rng(a.seed);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(std::min<std::size_t>(all.size(), a.sample));
    configs = std::move(all);
  } else {
    Config c = space.parse(a.knobs, p.baseline);
    if (auto why = space.why_invalid(c)) throw UserError("--knobs: " + *why);
    configs.push_back(c);
  }
  // One request per template of the launches (one for most profiles), joined per config after.
  std::vector<CompileRequest> reqs;
  std::vector<std::vector<CompileRequest>> per_config;
  for (const auto& c : configs) {
    per_config.push_back(candidate_requests(p, c, arch));
    reqs.insert(reqs.end(), per_config.back().begin(), per_config.back().end());
  }
  // A kernel reference too, with --all: a cache warmed for a run then holds everything it builds.
  const std::size_t candidates = reqs.size();
  if (a.all)
    for (const auto& r : reference_requests(p, arch)) reqs.push_back(r);
  const auto t0 = std::chrono::steady_clock::now();
  CompilePool pool(g.jobs, g.cache.empty() ? default_cache_dir() : std::filesystem::path(g.cache), g.compile_timeout);
  const auto all = pool.compile_all(reqs);
  for (std::size_t i = candidates; i < all.size(); ++i)
    if (!all[i].ok) std::cerr << "warning: the reference kernel does not compile: " << first_error_line(all[i].log) << "\n";
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<Build> builds;
  for (std::size_t i = 0, at = 0; i < configs.size(); at += per_config[i].size(), ++i)
    builds.push_back(launch_build(p.launches(), per_config[i],
                                  std::vector<Build>(all.begin() + static_cast<std::ptrdiff_t>(at),
                                                     all.begin() + static_cast<std::ptrdiff_t>(at + per_config[i].size()))));

  int passed = 0, failed_compile = 0, rejected = 0, cached = 0, serialized = 0;
  nlohmann::json out = nlohmann::json::array();
  Table t({"config", "knobs", "compile", "regs", "spill", "stack", "smem", "threads", "blocks/SM", "static", "reason"});
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const Build& b = builds[i];
    cached += b.from_cache;
    StaticVerdict v = static_gate(p, configs[i], b, limits);
    std::string reason = v.reason;
    if (!b.ok) {
      ++failed_compile;
      reason = "compile error: " + first_error_line(b.log);
    } else if (v.outcome == Outcome::Passed) {
      ++passed;
    } else {
      ++rejected;
    }
    // Shown beside the verdict; in the reason already when the profile rejects it.
    if (b.ok && !v.ptxas.wgmma_serialized.empty()) {
      ++serialized;
      if (!p.gates.static_limits.reject_wgmma_serialized)
        reason += (reason.empty() ? "" : "; ") + std::string("wgmma serialised (") + wgmma_serialized_codes(v.ptxas) + ")";
    }
    t.add({config_hash(configs[i]), config_text(configs[i]),
           b.ok ? fmt_num(b.compile_ms, 0) + (b.from_cache ? " ms*" : " ms") : "failed",
           // The static verdict's figures: the build's, or with several launches the worst of theirs.
           b.ok ? std::to_string(v.ptxas.registers) : "", b.ok ? std::to_string(v.ptxas.spill_stores + v.ptxas.spill_loads) : "",
           b.ok ? std::to_string(v.ptxas.stack_bytes) : "", b.ok ? std::to_string(v.total_smem) : "",
           std::to_string(v.threads_per_block), b.ok ? std::to_string(v.blocks_per_sm) : "",
           b.ok ? outcome_name(v.outcome) : "compile_error", reason});
    nlohmann::json j{{"config", configs[i]}, {"config_hash", config_hash(configs[i])}, {"build", b}, {"static", v}};
    j["build"].erase("log");
    if (!b.ok) j["build"]["log"] = b.log;
    out.push_back(std::move(j));
  }
  if (g.json) {
    std::cout << nlohmann::json{{"profile", p.name}, {"arch", arch}, {"wall_s", wall}, {"results", out}}.dump(2) << '\n';
  } else {
    t.print(std::cout);
    std::cout << configs.size() << " configs for " << arch << " in " << fmt_num(wall, 1) << " s (" << cached
              << " from cache, * in the table): " << passed << " passed, " << rejected << " rejected by the static gate, "
              << failed_compile << " failed to compile"
              << (serialized ? ", " + std::to_string(serialized) + " with wgmma serialised by ptxas" : "") << "\n";
  }
  return failed_compile ? 1 : 0;
}

}  // namespace evo::cli
