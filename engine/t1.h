// T1 input: the tuning-problem format of the autotuning community (KTT's, Kernel Tuner's
// `tune_kernel_T1`, the FAIR benchmark hub's kernels/*.json), read as an evo profile. Each field
// evo honours maps onto the profile format (docs/t1.md); one it cannot honour is a UserError
// "<file>: <field>: <what>", never a guess.
//
// A T1 file carries no reference: GREEN compares every candidate with the default configuration
// (each tuning parameter's Default), the same kernel launched the same way on the same inputs.
// Where the defaults are not a configuration of the space (a Default outside its Values, a
// condition false), the reference is the valid configuration nearest to them, and `adjustments`
// says what moved and why.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/profile.h"  // defines: KnobDef, Problem, LaunchSpec
#include "engine/space.h"    // defines: Config

namespace evo {

struct T1Spec {
  std::filesystem::path path;             // the T1 file
  std::string name;                       // the profile's name: the file's stem
  std::vector<KnobDef> knobs;             // ConfigurationSpace.TuningParameters, in order
  std::vector<std::string> conditions;    // ConfigurationSpace.Conditions, as written (Python)
  std::vector<std::string> constraints;   // the same conditions as evo constraints (muParser)
  Problem problem;                        // "default": ProblemSize_0, ProblemSize_1, ...
  LaunchSpec launch;                      // LocalSize, and the grid (GridDiv*, else GlobalSize)
  Config defaults;                        // each parameter's Default, as written
  Config reference;                       // the default configuration GREEN compares with
  std::vector<std::string> adjustments;   // why `reference` differs from `defaults`, if it does
  nlohmann::ordered_json profile;         // the equivalent evo profile (docs/profiles.md)
};

// Whether a parsed JSON document is a T1 file rather than an evo profile.
bool is_t1_document(const nlohmann::ordered_json& doc);

// Reads a T1 document (`doc`, parsed from `path`). With `need_kernel` false the kernel file may be
// missing (a landscape import needs only the space).
T1Spec read_t1(const std::filesystem::path& path, const nlohmann::ordered_json& doc, bool need_kernel = true);
T1Spec read_t1(const std::filesystem::path& path, bool need_kernel = true);

// "the default configuration block_size_x=16,block_size_y=16,..." with its adjustments, as every
// verdict and export names the reference of a profile read from T1.
std::string t1_reference_text(const T1Spec& t);

}  // namespace evo
