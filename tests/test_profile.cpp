// Profiles, expressions, knob spaces and the static gate: everything that needs no GPU.
#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "engine/buffers.h"
#include "engine/compiler.h"  // defines: candidate_request, reference_request
#include "engine/error.h"
#include "engine/expr.h"
#include "engine/hash.h"
#include "engine/launch.h"
#include "engine/profile.h"
#include "engine/space.h"
#include "gates/green.h"
#include "gates/static_gate.h"
#include "tests/support.h"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

const fs::path kSource = evo::test::source_root();

ordered_json gemm_json() {
  std::ifstream in(kSource / "profiles/gemm_fp16.json");
  return ordered_json::parse(in);
}

// Writes a profile next to the shipped ones' templates so relative paths resolve. One folder per
// checkout: another checkout's tests leave a link to their own tree (which may since be gone).
fs::path write_profile(const ordered_json& j, const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("evo-test-profiles-" + evo::short_hash(kSource.string())) / "profiles";
  fs::create_directories(dir);
  // Relative template paths in gemm_fp16.json point at ../templates: mirror that with a link.
  fs::path templates = dir.parent_path() / "templates";
  if (fs::is_symlink(templates) && fs::read_symlink(templates) != kSource / "templates") fs::remove(templates);
  if (!fs::exists(templates)) fs::create_directory_symlink(kSource / "templates", templates);
  fs::path p = dir / (name + ".json");
  std::ofstream(p) << j.dump(2);
  return p;
}

// A valid tensor map over gemm_fp16's A ([M, K] f16): rows of K, a box of 64 x BLOCK_M.
ordered_json a_map() {
  return {{"name", "a_map"}, {"buffer", "A"}, {"dims", ordered_json::array({"K", "M"})},
          {"box", ordered_json::array({64, "BLOCK_M"})}, {"swizzle", 128}};
}
void with_map(ordered_json& j, const std::function<void(ordered_json&)>& edit) {
  ordered_json m = a_map();
  edit(m);
  j["tensor_maps"] = ordered_json::array({m});
}

std::string load_error(const fs::path& p) {
  try {
    evo::load_profile(p);
  } catch (const evo::UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Hash, Sha256MatchesFipsVectors) {
  EXPECT_EQ(evo::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(evo::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(evo::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(evo::sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Vectors from libxxhash 0.8.1 (XXH64, seed 0): the short paths, and the four-lane one (192 bytes).
TEST(Hash, Xxh64MatchesXxhashVectors) {
  EXPECT_EQ(evo::xxh64(""), 0xef46db3751d8e999ULL);
  EXPECT_EQ(evo::xxh64("a"), 0xd24ec4f1a98c6e5bULL);
  EXPECT_EQ(evo::xxh64("abc"), 0x44bc2cf5ad770999ULL);
  std::string long_text;
  for (int i = 0; i < 3; ++i) long_text += "evo: reference outputs, computed once and shared by every worker";
  ASSERT_EQ(long_text.size(), 192u);
  EXPECT_EQ(evo::xxh64(long_text), 0x667937353ba1a050ULL);
  EXPECT_EQ(evo::xxh64_hex("abc"), "44bc2cf5ad770999");
  EXPECT_EQ(evo::digest_hex(0x1ULL), "0000000000000001");  // leading zeros kept: stored headers compare as text
}

// Fed in pieces, XXH64 gives the digest of the pieces joined: every split of inputs of every length
// class (under a stripe, exactly one, many with a tail), empty pieces included, and the 192-byte vector.
TEST(Hash, Xxh64InPiecesIsTheDigestOfThePiecesJoined) {
  std::mt19937_64 rng(20261128);
  for (std::size_t n : {0, 1, 7, 31, 32, 33, 63, 64, 100, 1000, 100003}) {
    std::string data(n, '\0');
    for (auto& c : data) c = static_cast<char>(rng());
    const std::uint64_t whole = evo::xxh64(data, 7);
    for (int split = 0; split < 20; ++split) {
      evo::Xxh64 h(7);
      std::size_t at = 0;
      while (at < n) {
        const std::size_t piece = std::min<std::size_t>(n - at, rng() % (split % 4 == 0 ? 5 : 80));
        h.update(std::string_view(data).substr(at, piece));  // a piece of 0 bytes now and then
        at += piece;
      }
      EXPECT_EQ(h.digest(), whole) << n << " bytes, split " << split;
    }
  }
  std::string long_text;
  for (int i = 0; i < 3; ++i) long_text += "evo: reference outputs, computed once and shared by every worker";
  evo::Xxh64 h;
  for (std::size_t at = 0; at < long_text.size(); at += 13) h.update(std::string_view(long_text).substr(at, 13));
  EXPECT_EQ(h.digest(), 0x667937353ba1a050ULL);
}

TEST(Expr, EvaluatesModuloCdivAndComparisons) {
  evo::Vars v{{"M", 250}, {"T", 64}};
  EXPECT_DOUBLE_EQ(evo::eval_expr("cdiv(M, T)", v), 4);
  EXPECT_DOUBLE_EQ(evo::eval_expr("M % T", v), 58);
  EXPECT_DOUBLE_EQ(evo::eval_expr("M % T == 0 || T >= 64", v), 1);
  EXPECT_DOUBLE_EQ(evo::eval_expr("T == 64 ? 2 : 3", v), 2);
  EXPECT_DOUBLE_EQ(evo::eval_expr("ceil(M / T) * floor(T / 3)", v), 4 * 21);
}

TEST(Expr, RejectsUnknownVariableAndGarbage) {
  EXPECT_THROW(evo::Expr("TILE_M % 16", {"TILE_N"}), evo::UserError);
  EXPECT_THROW(evo::Expr("TILE_M %% 16 ==", {"TILE_M"}), evo::UserError);
}

// Generated headers (export --dispatch) carry expressions as C++: compiled with g++, each must give
// what muParser gives, precedence, ?:, && || and evo's own functions included.
TEST(Expr, AsCppComputesWhatMuParserComputes) {
  const evo::Vars v{{"M", 250}, {"T", 64}, {"S", 4096}, {"D", 128}};
  const std::vector<std::string> exprs{
      "cdiv(M, T)", "M % T", "M % T == 0 || T >= 64", "T == 64 ? 2 : 3", "ceil(M / T) * floor(T / 3)",
      "-2^2", "2^3^2", "1 + 2 * 3 - 4 / 8", "M > T && T > M || D == 128", "min(S, D, T) + max(1, M / (16 * T))",
      "(S * D * 2 + 1024) <= 227 * 1024", "log2i(D) + sqrt(S) + abs(T - M)", "M != T ? (S >= 4096 ? 7 : 8) : 9",
      "D == 64 || D == 128 && T == 32", "pymod(-M, T) + pymod(M, -T) + pymod(M, T)"};
  auto var = [](const std::string& n) { return "v_" + n; };
  std::string prog = "#include <cmath>\n#include <cstdio>\nint main() {\n  const double v_M = 250, v_T = 64, v_S = 4096, v_D = 128;\n";
  for (const auto& e : exprs) prog += "  std::printf(\"%.17g\\n\", " + evo::expression_to_cpp(e, var) + ");\n";
  prog += "}\n";
  char tmpl[] = "/tmp/evo-expr-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  std::ofstream(dir / "e.cpp") << prog;
  const std::string cmd = "g++ -std=c++17 " + (dir / "e.cpp").string() + " -o " + (dir / "e").string() + " > " +
                          (dir / "log").string() + " 2>&1 && " + (dir / "e").string() + " > " + (dir / "out").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << prog;
  std::ifstream out(dir / "out");
  for (const auto& e : exprs) {
    double got = NAN;
    out >> got;
    EXPECT_DOUBLE_EQ(got, evo::eval_expr(e, v)) << e << " as C++: " << evo::expression_to_cpp(e, var);
  }
  fs::remove_all(dir);
  // What has no C++ form here is named, with the expression.
  try {
    evo::expression_to_cpp("bogus(M)", var);
    FAIL() << "an unknown function was written as C++";
  } catch (const evo::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'bogus(M)': cannot be written as C++: function bogus"), std::string::npos) << e.what();
  }
  EXPECT_THROW(evo::expression_to_cpp("(M + 1", var), evo::UserError);
}

TEST(Profile, ShippedGemmProfileLoads) {
  auto p = evo::load_profile(kSource / "profiles/gemm_fp16.json");
  EXPECT_EQ(p.name, "gemm_fp16");
  ASSERT_EQ(p.knobs.size(), 7u);
  EXPECT_EQ(p.knobs[0].name, "BLOCK_M");  // file order kept
  EXPECT_EQ(p.objective, "mission");
  EXPECT_TRUE(fs::exists(p.kernel.source));
  EXPECT_TRUE(fs::exists(p.reference.source));
  EXPECT_EQ(p.reference.args, p.kernel.args);
  EXPECT_EQ(p.gates.green.seeds.size(), 3u);
}

TEST(Profile, EveryShippedProfileLoadsAndHasAValidBaseline) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kSource / "profiles")) {
    if (e.path().extension() != ".json") continue;
    SCOPED_TRACE(e.path().string());
    auto p = evo::load_profile(e.path());
    evo::KnobSpace space(p);
    EXPECT_EQ(space.why_invalid(p.baseline), std::nullopt);
    ++n;
  }
  EXPECT_GE(n, 1);
}

struct BadProfileCase {
  std::string name;
  std::function<void(ordered_json&)> edit;
  std::string expected;  // substring of the one-line error
};
// gtest prints a parameter in test listings and failures; without this, as raw bytes.
void PrintTo(const BadProfileCase& c, std::ostream* os) { *os << c.name; }

class BadProfile : public ::testing::TestWithParam<BadProfileCase> {};

TEST_P(BadProfile, GivesOneLineNamingFileAndField) {
  auto j = gemm_json();
  GetParam().edit(j);
  auto path = write_profile(j, GetParam().name);
  std::string err = load_error(path);
  ASSERT_FALSE(err.empty()) << "profile was accepted";
  EXPECT_NE(err.find(path.string()), std::string::npos) << err;
  EXPECT_NE(err.find(GetParam().expected), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, BadProfile,
    ::testing::Values(
        BadProfileCase{"unknown_field", [](ordered_json& j) { j["constriants"] = ordered_json::array(); },
                       "constriants: unknown field"},
        BadProfileCase{"knob_no_values", [](ordered_json& j) { j["knobs"]["STAGES"] = ordered_json::array(); },
                       "knobs.STAGES: knob with no values"},
        BadProfileCase{"knob_string_value", [](ordered_json& j) { j["knobs"]["STAGES"] = {"two"}; },
                       "knobs.STAGES: values must be integers"},
        BadProfileCase{"constraint_not_expr", [](ordered_json& j) { j["constraints"].push_back("BLOCK_M %% ) 16"); },
                       "constraints[7]"},
        BadProfileCase{"constraint_unknown_var", [](ordered_json& j) { j["constraints"].push_back("TILE_Q > 1"); },
                       "constraints[7]"},
        BadProfileCase{"missing_template", [](ordered_json& j) { j["template"] = "../templates/nope.cu"; },
                       "template: template file not found"},
        BadProfileCase{"kernel_not_in_template", [](ordered_json& j) { j["kernel"] = "gemm_fp17"; },
                       "kernel: kernel 'gemm_fp17' not found"},
        BadProfileCase{"unknown_dtype", [](ordered_json& j) { j["buffers"][0]["dtype"] = "fp4"; },
                       "buffers[0].dtype: unknown dtype 'fp4'"},
        BadProfileCase{"baseline_value", [](ordered_json& j) { j["baseline"]["BLOCK_M"] = 96; },
                       "baseline.BLOCK_M: 96 not allowed (choose 32, 64, 128)"},
        BadProfileCase{"baseline_unknown_knob", [](ordered_json& j) { j["baseline"]["TILE_Z"] = 1; },
                       "baseline.TILE_Z: unknown knob"},
        BadProfileCase{"objective_missing", [](ordered_json& j) { j["objective"] = "huge"; },
                       "objective: 'huge' is not one of the problems"},
        BadProfileCase{"arg_unknown", [](ordered_json& j) { j["args"].push_back("alpha"); },
                       "args: argument 'alpha' is not a buffer"},
        BadProfileCase{"launch_bad_expr", [](ordered_json& j) { j["launch"]["grid"][0] = "N / BLOCK_Q"; },
                       "launch.grid"},
        BadProfileCase{"no_output", [](ordered_json& j) { j["buffers"][2]["role"] = "input"; },
                       "no buffer has role \"output\""},
        BadProfileCase{"problem_sizes_differ", [](ordered_json& j) { j["problems"][1]["sizes"].erase("K"); },
                       "problems[1].sizes: every problem must define the same sizes"},
        BadProfileCase{"tensor_map_unknown_buffer", [](ordered_json& j) { with_map(j, [](ordered_json& m) { m["buffer"] = "Q"; }); },
                       "tensor_maps[0].buffer: no buffer 'Q'"},
        BadProfileCase{"tensor_map_name_is_a_buffer", [](ordered_json& j) { with_map(j, [](ordered_json& m) { m["name"] = "B"; }); },
                       "tensor_maps[0].name: name 'B' already used"},
        BadProfileCase{"tensor_map_name_is_a_size", [](ordered_json& j) { with_map(j, [](ordered_json& m) { m["name"] = "K"; }); },
                       "tensor_maps[0].name: name 'K' already used"},
        BadProfileCase{"tensor_map_bad_swizzle", [](ordered_json& j) { with_map(j, [](ordered_json& m) { m["swizzle"] = 96; }); },
                       "tensor_maps[0].swizzle: 96 not allowed (choose 0, 32, 64, 128)"},
        BadProfileCase{"tensor_map_bad_l2_promotion",
                       [](ordered_json& j) { with_map(j, [](ordered_json& m) { m["l2_promotion"] = 32; }); },
                       "tensor_maps[0].l2_promotion: 32 not allowed (choose 0, 64, 128, 256)"},
        BadProfileCase{"tensor_map_box_count",
                       [](ordered_json& j) { with_map(j, [](ordered_json& m) { m["box"] = ordered_json::array({64}); }); },
                       "tensor_maps[0].box: 1 entries for 2 dims"},
        BadProfileCase{"tensor_map_six_dims",
                       [](ordered_json& j) {
                         with_map(j, [](ordered_json& m) { m["dims"] = ordered_json::array({1, 1, 1, 1, "K", "M"}); });
                       },
                       "tensor_maps[0].dims: must be a list of 1 to 5 expressions"},
        BadProfileCase{"tensor_map_unknown_variable",
                       [](ordered_json& j) { with_map(j, [](ordered_json& m) { m["box"][1] = "TILE_Q"; }); },
                       "tensor_maps[0].box[1]"},
        BadProfileCase{"tensor_map_misspelt_field",
                       [](ordered_json& j) { with_map(j, [](ordered_json& m) { m["swizle"] = m["swizzle"]; }); },
                       "tensor_maps[0].swizle: unknown field"},
        BadProfileCase{"static_wgmma_serialized_value",
                       [](ordered_json& j) { j["gates"]["static"]["wgmma_serialized"] = "warn"; },
                       "gates.static.wgmma_serialized: \"warn\" not allowed (choose \"allow\", \"reject\")"},
        BadProfileCase{"static_wgmma_serialized_not_a_string",
                       [](ordered_json& j) { j["gates"]["static"]["wgmma_serialized"] = true; },
                       "gates.static.wgmma_serialized: true not allowed (choose \"allow\", \"reject\")"}),
    [](const auto& info) { return info.param.name; });

TEST(Profile, TensorMapsLoadAndAreKernelArguments) {
  auto j = gemm_json();
  with_map(j, [](ordered_json& m) { m["l2_promotion"] = 256; });
  j["args"].push_back("a_map");
  const auto p = evo::load_profile(write_profile(j, "tensor_map_ok"));
  ASSERT_EQ(p.tensor_maps.size(), 1u);
  const evo::TensorMapSpec& m = p.tensor_maps[0];
  EXPECT_EQ(m.name, "a_map");
  EXPECT_EQ(m.buffer, "A");
  EXPECT_EQ(m.dims, (std::vector<std::string>{"K", "M"}));
  EXPECT_EQ(m.box, (std::vector<std::string>{"64", "BLOCK_M"}));
  EXPECT_EQ(m.swizzle_bytes, 128);
  EXPECT_EQ(m.l2_promotion_bytes, 256);
  EXPECT_EQ(p.find_tensor_map("a_map"), &m);
  EXPECT_EQ(p.kernel.args.back(), "a_map");
  EXPECT_EQ(p.reference.args.back(), "a_map");  // the reference takes the kernel's args by default

  const auto L = evo::tensor_map_layout(m, p, *p.find_problem("small"), p.baseline);
  EXPECT_EQ(L.rank, 2);
  EXPECT_EQ(L.dims[0], 256u);
  EXPECT_EQ(L.strides_bytes[0], 512u);
  EXPECT_EQ(L.box[1], static_cast<std::uint32_t>(p.baseline.at("BLOCK_M")));

  // Absent fields take their defaults: no swizzle, 128-byte L2 promotion.
  auto plain = gemm_json();
  with_map(plain, [](ordered_json& m) { m.erase("swizzle"); });
  const auto q = evo::load_profile(write_profile(plain, "tensor_map_defaults"));
  EXPECT_EQ(q.tensor_maps.at(0).swizzle_bytes, 0);
  EXPECT_EQ(q.tensor_maps.at(0).l2_promotion_bytes, 128);
}

// A shipped profile's tensor maps must be encodable for its baseline on every problem (the static
// gate would otherwise reject the baseline before the run starts).
TEST(Profile, EveryShippedTensorMapFitsTheBaselineOnEveryProblem) {
  for (const auto& e : fs::directory_iterator(kSource / "profiles")) {
    if (e.path().extension() != ".json") continue;
    const auto p = evo::load_profile(e.path());
    for (const auto& m : p.tensor_maps)
      for (const auto& prob : p.problems)
        EXPECT_NO_THROW(evo::tensor_map_layout(m, p, prob, p.baseline)) << e.path().filename() << " " << m.name << " " << prob.name;
  }
}

TEST(Profile, MalformedJsonNamesTheFile) {
  std::string err = load_error(kSource / "tests/data/bad/malformed.json");
  EXPECT_NE(err.find("malformed.json: malformed JSON"), std::string::npos) << err;
}

TEST(Profile, UnknownProfileNameListsShippedOnes) {
  try {
    evo::resolve_profile("no_such_profile");
    FAIL() << "resolved";
  } catch (const evo::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("gemm_fp16"), std::string::npos) << e.what();
  }
}

TEST(KnobSpace, EnumeratesOnlyConfigsPassingEveryConstraint) {
  auto p = evo::load_profile(kSource / "profiles/gemm_fp16.json");
  evo::KnobSpace space(p);
  auto all = space.enumerate_valid();
  ASSERT_FALSE(all.empty());
  EXPECT_LT(all.size(), space.size());
  std::set<std::string> hashes;
  for (const auto& c : all) {
    EXPECT_EQ(c.at("BLOCK_M") % (c.at("WARPS_M") * 16), 0);
    EXPECT_TRUE(c.at("USE_CP_ASYNC") == 1 || c.at("STAGES") == 1);
    hashes.insert(evo::config_hash(c));
  }
  EXPECT_EQ(hashes.size(), all.size());
}

// enumerate_valid skips why_invalid's map building and judges the problems after the first only
// on the constraints that read a size they do not share: the same configurations, in index order,
// as asking why_invalid of every index. sdpa_fp8_wgmma: 7 problems of different sizes, 19
// constraints, some of them on the sizes; sdpa_fp8pv_wgmma_d128 the most constraints.
TEST(KnobSpace, EnumerationIsWhyInvalidOfEveryIndex) {
  for (const char* name : {"sdpa_fp8_wgmma", "sdpa_fp8pv_wgmma_d128", "gemm_fp16"}) {
    auto p = evo::load_profile(kSource / "profiles" / (std::string(name) + ".json"));
    ASSERT_GT(p.problems.size(), 0u);
    evo::KnobSpace space(p);
    std::vector<evo::Config> brute;  // every combination, the last knob varying fastest
    evo::Config c;
    std::function<void(std::size_t)> each = [&](std::size_t k) {
      if (k == p.knobs.size()) {
        if (!space.why_invalid(c)) brute.push_back(c);
        return;
      }
      for (auto v : p.knobs[k].values) c[p.knobs[k].name] = v, each(k + 1);
    };
    each(0);
    const auto fast = space.enumerate_valid();
    EXPECT_EQ(fast, brute) << name;
    EXPECT_GT(fast.size(), 0u) << name;
    EXPECT_LT(fast.size(), space.size()) << name;
  }
}

TEST(KnobSpace, ConstraintsLeavingNoConfigAreDetected) {
  auto j = gemm_json();
  j["constraints"].push_back("BLOCK_M > 1000");
  auto p = evo::load_profile(write_profile(j, "empty_space"));
  evo::KnobSpace space(p);
  std::mt19937_64 rng(1);
  EXPECT_FALSE(space.sample(rng).has_value());
  EXPECT_TRUE(space.enumerate_valid().empty());
  ASSERT_TRUE(space.why_invalid(p.baseline).has_value());
  EXPECT_NE(space.why_invalid(p.baseline)->find("BLOCK_M > 1000"), std::string::npos);
}

TEST(KnobSpace, SampleIsUniformAmongValidConfigs) {
  auto p = evo::load_profile(kSource / "profiles/gemm_fp16.json");
  evo::KnobSpace space(p);
  const auto all = space.enumerate_valid();
  std::map<std::string, int> counts;
  std::mt19937_64 rng(7);
  const int draws = 200 * static_cast<int>(all.size());
  for (int i = 0; i < draws; ++i) {
    auto c = space.sample(rng);
    ASSERT_TRUE(c && space.valid(*c));
    counts[evo::config_hash(*c)]++;
  }
  EXPECT_EQ(counts.size(), all.size());  // every valid config reachable
  for (const auto& [h, n] : counts) EXPECT_NEAR(n, 200, 200 * 0.45) << h;
}

TEST(KnobSpace, NeighboursMoveOneKnobOneStep) {
  auto p = evo::load_profile(kSource / "profiles/gemm_fp16.json");
  evo::KnobSpace space(p);
  auto ns = space.neighbours(p.baseline);
  ASSERT_FALSE(ns.empty());
  for (const auto& n : ns) {
    EXPECT_TRUE(space.valid(n));
    int changed = 0;
    for (const auto& k : p.knobs) {
      if (n.at(k.name) == p.baseline.at(k.name)) continue;
      ++changed;
      auto a = std::find(k.values.begin(), k.values.end(), n.at(k.name));
      auto b = std::find(k.values.begin(), k.values.end(), p.baseline.at(k.name));
      EXPECT_EQ(std::abs(a - b), 1) << k.name;
    }
    EXPECT_EQ(changed, 1);
  }
}

TEST(KnobSpace, ConfigHashIsStableAndOrderFree) {
  evo::Config a{{"B", 2}, {"A", 1}};
  evo::Config b{{"A", 1}, {"B", 2}};
  EXPECT_EQ(evo::config_text(a), "A=1,B=2");
  EXPECT_EQ(evo::config_hash(a), evo::config_hash(b));
  EXPECT_EQ(evo::config_hash(a), evo::sha256_hex("A=1,B=2").substr(0, 16));
  EXPECT_NE(evo::config_hash(a), evo::config_hash({{"A", 1}, {"B", 3}}));
}

TEST(KnobSpace, ParseRejectsUnknownKnobAndDisallowedValue) {
  auto p = evo::load_profile(kSource / "profiles/gemm_fp16.json");
  evo::KnobSpace space(p);
  auto c = space.parse("BLOCK_M=128,STAGES=3", p.baseline);
  EXPECT_EQ(c.at("BLOCK_M"), 128);
  EXPECT_EQ(c.at("BLOCK_N"), p.baseline.at("BLOCK_N"));
  EXPECT_THROW(space.parse("TILE_Q=1", p.baseline), evo::UserError);
  try {
    space.parse("BLOCK_M=96", p.baseline);
    FAIL();
  } catch (const evo::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("choose 32, 64, 128"), std::string::npos) << e.what();
  }
}

// NUM_SMS sizes PERSIST=1's grid in the FlashAttention-3 profiles: 132 until evo knows its device,
// then that device's count (the worker's, the run's), and a problem size of that name wins.
TEST(Launch, NumSmsIsTheDevicesMultiprocessorCountWith132Before) {
  const auto p = evo::load_profile(kSource / "profiles/sdpa_fp8pv_wgmma_d128.json");
  EXPECT_TRUE(evo::uses_device_sms(p));
  EXPECT_FALSE(evo::uses_device_sms(evo::load_profile(kSource / "profiles/gemm_fp16.json")));
  evo::Config c = p.baseline;
  c["PERSIST"] = 1;
  const evo::Problem& longp = *p.find_problem("long");  // 32 query tiles of 128 rows x 32 heads: 1024 items
  ASSERT_EQ(evo::device_sms(), 132);
  EXPECT_EQ(evo::launch_geometry(p.kernel, longp, c).grid[0], 132u);
  evo::set_device_sms(114);  // an H100 PCIe
  EXPECT_EQ(evo::launch_geometry(p.kernel, longp, c).grid[0], 114u);
  EXPECT_EQ(evo::expression_vars(p.kernel, longp, c).at("NUM_SMS"), 114);
  evo::Problem sized = longp;
  sized.sizes["NUM_SMS"] = 16;
  EXPECT_EQ(evo::launch_geometry(p.kernel, sized, c).grid[0], 16u);
  c["PERSIST"] = 0;  // a block per query tile, whatever the device
  EXPECT_EQ(evo::launch_geometry(p.kernel, longp, c).grid[0], 4096u / c.at("TILE_M"));
  evo::set_device_sms(0);  // not a count: ignored
  EXPECT_EQ(evo::device_sms(), 114);
  evo::set_device_sms(132);
}

// STREAM_K's halves live in partial_o and its tickets in split_counter: a slot per block of the persistent grid
// (at most NUM_SMS), 2 x (D/2 + 6) floats a consumer thread and a ticket a warp; one element without the knob.
TEST(Launch, StreamKScratchIsSizedByTheDevicesGrid) {
  const auto p = evo::load_profile(kSource / "profiles/sdpa_fp16_wgmma.json");
  const evo::Problem& longp = *p.find_problem("long");
  auto size = [&](const std::string& name, const evo::Config& c) {
    for (const auto& b : p.buffers)
      if (b.name == name) return evo::buffer_shape(b, p.kernel, longp, c).at(0);
    ADD_FAILURE() << "no buffer " << name;
    return std::int64_t{0};
  };
  evo::Config c = p.baseline;
  for (const auto& [k, v] : evo::Config{{"MMA_PATH", 3}, {"TILE_M", 192}, {"TILE_N", 128}, {"NUM_WARPS", 12},
                                        {"USE_TMA", 1}, {"PERSIST", 1}, {"STREAM_K", 0}})
    c[k] = v;
  EXPECT_EQ(size("partial_o", c), 1);
  EXPECT_EQ(size("split_counter", c), 1);
  c["STREAM_K"] = 1;
  ASSERT_EQ(evo::device_sms(), 132);
  EXPECT_EQ(size("partial_o", c), 132 * 2 * (64 / 2 + 6) * 12 * 32 + 1);
  EXPECT_EQ(size("split_counter", c), 132 * 12 + 1);
  EXPECT_EQ(evo::launch_geometry(p.kernel, longp, c).grid[0], 132u);  // the grid the slots are counted for
}

TEST(Launch, GeometryEvaluatesProfileExpressions) {
  auto p = evo::load_profile(kSource / "profiles/gemm_fp16.json");
  auto g = evo::launch_geometry(p.kernel, *p.find_problem("mission"), p.baseline);
  EXPECT_EQ(g.grid[0], 2048u / p.baseline.at("BLOCK_N"));
  EXPECT_EQ(g.grid[1], 2048u / p.baseline.at("BLOCK_M"));
  EXPECT_EQ(g.threads(), p.baseline.at("WARPS_M") * p.baseline.at("WARPS_N") * 32);
  EXPECT_GT(g.shared_bytes, 0);
}

namespace {
evo::Build fake_build(int regs, int spill, int smem) {
  evo::Build b;
  b.ok = true;
  b.ptxas.registers = regs;
  b.ptxas.spill_stores = spill;
  b.ptxas.static_smem = smem;
  return b;
}
}  // namespace

TEST(StaticGate, PassesACleanBuildAndRejectsSpills) {
  auto p = evo::load_profile(kSource / "profiles/gemm_fp16.json");
  auto lim = evo::arch_limits("sm_90");
  auto ok = evo::static_gate(p, p.baseline, fake_build(96, 0, 0), lim);
  EXPECT_EQ(ok.outcome, evo::Outcome::Passed) << ok.reason;
  auto spill = evo::static_gate(p, p.baseline, fake_build(96, 40, 0), lim);
  EXPECT_EQ(spill.outcome, evo::Outcome::Rejected);
  EXPECT_NE(spill.reason.find("40 bytes spilled"), std::string::npos) << spill.reason;
}

// ptxas serialised the wgmma pipeline: kept and shown by default, a rejection naming the codes and
// reasons when the profile says "reject".
TEST(StaticGate, RejectsSerialisedWgmmaOnlyWhenTheProfileSaysReject) {
  auto j = gemm_json();
  const auto lim = evo::arch_limits("sm_90");
  evo::Build b = fake_build(96, 0, 0);
  b.ptxas.wgmma_serialized = {
      "C7513: non wgmma instructions defining input registers of a wgmma between start and end of the pipeline stage",
      "C7511: insufficient register resources for the wgmma pipeline"};

  const auto by_default = evo::load_profile(write_profile(j, "wgmma_default"));
  EXPECT_FALSE(by_default.gates.static_limits.reject_wgmma_serialized);
  const auto kept = evo::static_gate(by_default, by_default.baseline, b, lim);
  EXPECT_EQ(kept.outcome, evo::Outcome::Passed) << kept.reason;
  EXPECT_EQ(kept.reason, "");
  EXPECT_EQ(kept.ptxas.wgmma_serialized, b.ptxas.wgmma_serialized);  // the report still says so

  j["gates"]["static"]["wgmma_serialized"] = "allow";
  const auto allow = evo::load_profile(write_profile(j, "wgmma_allow"));
  EXPECT_FALSE(allow.gates.static_limits.reject_wgmma_serialized);
  const auto allowed = evo::static_gate(allow, allow.baseline, b, lim);
  EXPECT_EQ(allowed.outcome, evo::Outcome::Passed) << allowed.reason;
  EXPECT_EQ(allowed.ptxas.wgmma_serialized, b.ptxas.wgmma_serialized);

  j["gates"]["static"]["wgmma_serialized"] = "reject";
  const auto reject = evo::load_profile(write_profile(j, "wgmma_reject"));
  EXPECT_TRUE(reject.gates.static_limits.reject_wgmma_serialized);
  const auto rejected = evo::static_gate(reject, reject.baseline, b, lim);
  EXPECT_EQ(rejected.outcome, evo::Outcome::Rejected);
  EXPECT_EQ(rejected.reason,
            "wgmma serialised by ptxas (C7513: non wgmma instructions defining input registers of a wgmma between "
            "start and end of the pipeline stage; C7511: insufficient register resources for the wgmma pipeline; "
            "gates.static.wgmma_serialized: reject)");
  EXPECT_EQ(rejected.ptxas.wgmma_serialized, b.ptxas.wgmma_serialized);
  EXPECT_GT(rejected.blocks_per_sm, 0);  // the launch itself would fit: only ptxas's warning turns it away
  // A build ptxas did not serialise passes the same profile.
  const auto clean = evo::static_gate(reject, reject.baseline, fake_build(96, 0, 0), lim);
  EXPECT_EQ(clean.outcome, evo::Outcome::Passed) << clean.reason;
}

TEST(StaticGate, RejectsRegisterFileOverflowAndSharedMemoryOverLimit) {
  auto p = evo::load_profile(kSource / "profiles/gemm_fp16.json");
  evo::Config big = p.baseline;
  big["WARPS_M"] = 4;
  big["WARPS_N"] = 4;  // 512 threads x 255 registers > 65536
  big["BLOCK_M"] = 128;
  big["BLOCK_N"] = 128;
  auto regs = evo::static_gate(p, big, fake_build(255, 0, 0), evo::arch_limits("sm_90"));
  EXPECT_EQ(regs.outcome, evo::Outcome::Rejected);
  EXPECT_NE(regs.reason.find("too many resources"), std::string::npos) << regs.reason;
  auto smem = evo::static_gate(p, p.baseline, fake_build(64, 0, 200 * 1024), evo::arch_limits("sm_89"));
  EXPECT_EQ(smem.outcome, evo::Outcome::Rejected);
  EXPECT_NE(smem.reason.find("sm_89 allows"), std::string::npos) << smem.reason;
}

TEST(StaticGate, AllocatesRegistersPerWarpAndPerSubPartition) {
  const auto lim = evo::arch_limits("sm_90");
  EXPECT_EQ(evo::predict_occupancy(lim, 32, 256, 0, 0, 1).registers_per_block, 8 * 1024);
  EXPECT_EQ(evo::predict_occupancy(lim, 33, 128, 0, 0, 1).registers_per_block, 4 * 1280);  // 33*32 = 1056 -> 1280
  // 10 warps are allocated as 12: four sub-partitions hold a block's warps alike.
  EXPECT_EQ(evo::predict_occupancy(lim, 178, 320, 0, 0, 1).registers_per_block, 12 * 5888);
  EXPECT_THROW(evo::arch_limits("sm_42"), evo::UserError);
}

// The case: 178 registers x 320 threads is 58,880 registers as one product, under the
// 65,536 of the register file, and failed to launch with cudaErrorLaunchOutOfResources on the
// H100: its 10 warps are allocated as 12, 5,888 registers each, 70,656. 168 registers is just
// under (5,376 x 12 = 64,512) and launches.
TEST(StaticGate, RejectsAKernelOverTheRegisterFileByTheSubPartitionRuleOnly) {
  auto p = evo::load_profile(kSource / "profiles/gemm_fp16.json");
  evo::Config c = p.baseline;
  p.kernel.launch.block = {"320", "1", "1"};  // the geometry of the kernel
  const auto lim = evo::arch_limits("sm_90");
  ASSERT_LE(178 * 320, lim.registers_per_block) << "under the limit as a plain product";
  const auto over = evo::static_gate(p, c, fake_build(178, 0, 0), lim);
  EXPECT_EQ(over.outcome, evo::Outcome::Rejected);
  EXPECT_NE(over.reason.find("70656 registers per block"), std::string::npos) << over.reason;
  EXPECT_NE(over.reason.find("sub-partitions"), std::string::npos) << over.reason;
  EXPECT_EQ(over.blocks_per_sm, 0);
  const auto under = evo::static_gate(p, c, fake_build(168, 0, 0), lim);
  EXPECT_EQ(under.outcome, evo::Outcome::Passed) << under.reason;
  EXPECT_EQ(under.blocks_per_sm, 1);
  EXPECT_NEAR(under.occupancy_pct, 100.0 * 10 / 64, 1e-9);
  EXPECT_EQ(under.occupancy_limit, "registers");
}

TEST(StaticGate, PredictsBlocksPerSmFromSharedMemoryWithItsGranularity) {
  const auto lim = evo::arch_limits("sm_90");
  // 100 KB dynamic + 1 KB reserved per block: two fit the 228 KB of an SM, a third does not.
  const auto two = evo::predict_occupancy(lim, 32, 128, 0, 100 * 1024, 1);
  EXPECT_EQ(two.blocks_per_sm, 2);
  EXPECT_EQ(two.limited_by, "shared memory");
  EXPECT_EQ(two.shared_per_block, 101 * 1024);
  // 1 byte more than 227 KB dynamic: allocated past the opt-in limit, nothing fits.
  EXPECT_EQ(evo::predict_occupancy(lim, 32, 128, 0, 227 * 1024 + 1, 1).blocks_per_sm, 0);
  EXPECT_EQ(evo::predict_occupancy(lim, 32, 128, 0, 227 * 1024, 1).blocks_per_sm, 1);
  // Small blocks: the SM's 32-block limit, 32 x 2 warps = 64 warps = 100 %.
  const auto many = evo::predict_occupancy(lim, 16, 64, 0, 0, 1);
  EXPECT_EQ(many.blocks_per_sm, 32);
  EXPECT_NEAR(many.occupancy_pct, 100.0, 1e-9);
}

// ---- inout buffers, per-buffer GREEN thresholds, exact integers (profiles/accumulate.json) ----

namespace {

// Template paths made absolute: the copy is written to a temporary folder (write_profile's
// templates link may point at another checkout's tree, without these examples).
ordered_json accumulate_json() {
  std::ifstream in(kSource / "profiles/accumulate.json");
  ordered_json j = ordered_json::parse(in);
  j["template"] = (kSource / "templates/examples/accumulate.cu").string();
  j["reference"]["template"] = (kSource / "templates/examples/accumulate_ref.cu").string();
  return j;
}

// The error of accumulate.json after `edit`, written as accumulate_bad.json.
std::string accumulate_error(const std::function<void(ordered_json&)>& edit) {
  ordered_json j = accumulate_json();
  edit(j);
  return load_error(write_profile(j, "accumulate_bad"));
}

}  // namespace

TEST(Profile, InoutBufferAndPerBufferThresholdsLoad) {
  auto p = evo::load_profile(kSource / "profiles/accumulate.json");
  const evo::BufferSpec* y = p.find_buffer("Y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->role, evo::BufferRole::InOut);
  EXPECT_EQ(y->refill, evo::BufferSpec::Refill::EveryLaunch);
  EXPECT_TRUE(y->compared());
  EXPECT_TRUE(y->filled_per_trial());
  EXPECT_EQ(y->init.kind, evo::InitSpec::Kind::Uniform);  // an inout's init is kept, like an input's

  const evo::GreenThresholds yt = evo::green_thresholds(p.gates.green, *y);  // the profile's
  EXPECT_DOUBLE_EQ(yt.atol, 1e-6);
  EXPECT_DOUBLE_EQ(yt.rtol, 1e-6);
  const evo::GreenThresholds ht = evo::green_thresholds(p.gates.green, *p.find_buffer("H"));
  EXPECT_DOUBLE_EQ(ht.atol, 0.01);  // the buffer's own
  EXPECT_DOUBLE_EQ(ht.rtol, 0.0);
  EXPECT_TRUE(std::isinf(ht.max_abs));  // not given: the profile's
  const evo::GreenThresholds it = evo::green_thresholds(p.gates.green, *p.find_buffer("POS"));
  EXPECT_EQ(it.atol, 0.0);  // i32: exact
  EXPECT_EQ(it.rtol, 0.0);
  EXPECT_EQ(it.max_bad_pct, 0.0);

  // refill defaults to every_launch; never is accepted.
  ordered_json j = accumulate_json();
  j["buffers"][1].erase("refill");
  EXPECT_EQ(evo::load_profile(write_profile(j, "accumulate_ok")).find_buffer("Y")->refill,
            evo::BufferSpec::Refill::EveryLaunch);
  j["buffers"][1]["refill"] = "never";
  EXPECT_EQ(evo::load_profile(write_profile(j, "accumulate_ok")).find_buffer("Y")->refill,
            evo::BufferSpec::Refill::Never);
}

TEST(Profile, BadInoutAndThresholdFieldsNameFileFieldAndValue) {
  struct Case {
    std::function<void(ordered_json&)> edit;
    std::string want;
  };
  const std::vector<Case> cases = {
      {[](ordered_json& j) { j["buffers"][1]["role"] = "in_out"; },
       "buffers[1].role: unknown role 'in_out' (choose input, output, inout, scratch)"},
      {[](ordered_json& j) { j["buffers"][1]["refill"] = "sometimes"; },
       "buffers[1].refill: unknown refill 'sometimes' (choose every_launch, never)"},
      {[](ordered_json& j) { j["buffers"][0]["refill"] = "never"; },
       "buffers[0].refill: only an inout buffer is re-filled (role is input)"},
      {[](ordered_json& j) { j["buffers"][2]["green"]["atol"] = -0.5; },
       "buffers[2].green.atol: -0.5 is negative"},
      {[](ordered_json& j) { j["buffers"][2]["green"]["rtol"] = "loose"; }, "buffers[2].green.rtol: must be a number"},
      {[](ordered_json& j) { j["buffers"][2]["green"]["max_bad_pct"] = 150; },
       "buffers[2].green.max_bad_pct: 150 is above 100"},
      {[](ordered_json& j) { j["buffers"][2]["green"]["atoll"] = 1; }, "buffers[2].green.atoll: unknown field"},
      {[](ordered_json& j) { j["buffers"][0]["green"] = {{"atol", 1}}; },
       "buffers[0].green: only output and inout buffers are compared (role is input)"},
      {[](ordered_json& j) { j["buffers"][3]["green"] = {{"atol", 1}}; },
       "buffers[3].green.atol: an i32 buffer is compared exactly; it takes no tolerance (only max_bad_pct)"},
      {[](ordered_json& j) { j["buffers"][1]["symbol"] = "Y_table"; },
       "buffers[1].symbol: only an input buffer can live in a __constant__ symbol (role is inout)"},
      {[](ordered_json& j) {
         for (auto& b : j["buffers"]) b["role"] = "input";
         for (auto& b : j["buffers"]) b.erase("green");
         for (auto& b : j["buffers"]) b.erase("refill");
       },
       "buffers: no buffer has role \"output\" or \"inout\""},
  };
  for (const auto& c : cases) {
    const std::string err = accumulate_error(c.edit);
    EXPECT_NE(err.find("accumulate_bad.json: " + c.want), std::string::npos) << "want: " << c.want << "\ngot:  " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;  // one line
  }
}

// ---- several launches as one unit (profiles/reduce_sum.json) ----

namespace {

// reduce_sum.json with its template paths made absolute (written to a temporary folder).
ordered_json reduce_json() {
  std::ifstream in(kSource / "profiles/reduce_sum.json");
  ordered_json j = ordered_json::parse(in);
  j["template"] = (kSource / "templates/examples/reduce.cu").string();
  j["reference"]["template"] = (kSource / "templates/examples/reduce_ref.cu").string();
  return j;
}

// Each test its own file name: ctest runs tests side by side, and the folder is the checkout's.
std::string reduce_error(const std::function<void(ordered_json&)>& edit, const std::string& name = "reduce_bad") {
  ordered_json j = reduce_json();
  edit(j);
  return load_error(write_profile(j, name));
}

evo::Build two_kernel_build(int regs1, int regs2) {
  evo::Build b = fake_build(regs1, 0, 0);
  b.kernels = {{"partial_sums", "partial_sums", "/c/x.cubin", b.ptxas}, {"final_sum", "final_sum", "/c/x.cubin", b.ptxas}};
  b.kernels[1].ptxas.registers = regs2;
  return b;
}

}  // namespace

TEST(Profile, LaunchesLoadInOrderSharingBuffersScalarsAndDefines) {
  const auto p = evo::load_profile(kSource / "profiles/reduce_sum.json");
  const auto ls = p.launches();
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[0], &p.kernel);
  EXPECT_EQ(ls[0]->name, "partial_sums");
  EXPECT_EQ(ls[1]->name, "final_sum");
  EXPECT_EQ(ls[0]->source, ls[1]->source);  // both default to the profile's template
  EXPECT_EQ(ls[1]->args, (std::vector<std::string>{"PARTIAL", "SUM", "partials"}));
  EXPECT_EQ(ls[1]->launch.block[0], "FINAL_BLOCK");
  EXPECT_TRUE(p.reference_is_kernel());
  ASSERT_EQ(p.reference_launches().size(), 1u);
  EXPECT_EQ(p.reference.args, (std::vector<std::string>{"X", "SUM", "N"}));
  // Each launch's geometry from its own expressions.
  const evo::Problem& main = *p.find_problem("main");
  EXPECT_EQ(evo::launch_geometry(*ls[0], main, p.baseline).grid[0], 4194304u / (256 * 4));
  EXPECT_EQ(evo::launch_geometry(*ls[1], main, p.baseline).grid[0], 1u);
  EXPECT_EQ(evo::launch_geometry(*ls[1], main, p.baseline).block[0], 256u);

  // A single-launch profile is one launch, as before.
  const auto g = evo::load_profile(kSource / "profiles/gemm_fp16.json");
  EXPECT_EQ(g.launches().size(), 1u);
  EXPECT_TRUE(g.later_launches.empty());
  EXPECT_EQ(g.reference_launches().size(), 1u);

  // A launch may name its own template, and the reference may be a sequence.
  ordered_json j = reduce_json();
  j["launches"][1]["template"] = (kSource / "templates/examples/reduce_ref.cu").string();
  j["launches"][1]["kernel"] = "reduce_ref";
  j["launches"][1]["args"] = {"X", "SUM", "N"};
  j["reference"] = {{"template", (kSource / "templates/examples/reduce_ref.cu").string()},
                    {"launches", {{{"kernel", "reduce_ref"}, {"args", {"X", "SUM", "N"}},
                                   {"launch", {{"grid", {1}}, {"block", {256}}}}},
                                  {{"kernel", "reduce_ref"}, {"args", {"X", "SUM", "N"}},
                                   {"launch", {{"grid", {1}}, {"block", {256}}}}}}}};
  const auto q = evo::load_profile(write_profile(j, "reduce_two_templates"));
  EXPECT_NE(q.launches()[0]->source, q.launches()[1]->source);
  EXPECT_EQ(q.reference_launches().size(), 2u);
  EXPECT_EQ(q.later_reference_launches.front().name, "reduce_ref");
}

// Hardware metrics of a unit: every launch by default, or the one gates.metrics.launch names.
TEST(Profile, MetricsLaunchNamesOneLaunchOfTheUnitByIndexOrKernel) {
  EXPECT_FALSE(evo::load_profile(kSource / "profiles/reduce_sum.json").gates.metrics.launch.has_value());
  auto with_launch = [](const ordered_json& v) {
    ordered_json j = reduce_json();
    j["gates"]["metrics"]["launch"] = v;
    return j;
  };
  EXPECT_EQ(evo::load_profile(write_profile(with_launch(1), "reduce_m1")).gates.metrics.launch, std::optional<std::size_t>(1));
  EXPECT_EQ(evo::load_profile(write_profile(with_launch("partial_sums"), "reduce_mk")).gates.metrics.launch,
            std::optional<std::size_t>(0));
  EXPECT_FALSE(evo::load_profile(write_profile(with_launch("all"), "reduce_ma")).gates.metrics.launch.has_value());
  const std::vector<std::pair<ordered_json, std::string>> bad = {
      {2, "gates.metrics.launch: index 2 is not one of the unit's 2 launches (0-based)"},
      {-1, "gates.metrics.launch: index -1 is not one of the unit's 2 launches"},
      {"final_summ", "gates.metrics.launch: no launch of kernel 'final_summ' in the unit"},
      {1.5, "gates.metrics.launch: must be \"all\", a launch's index or a kernel's name"},
  };
  for (const auto& [v, want] : bad) {
    const std::string err = reduce_error([&](ordered_json& j) { j["gates"]["metrics"]["launch"] = v; }, "reduce_metrics_bad");
    EXPECT_NE(err.find(want), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  ordered_json twice = reduce_json();
  twice["launches"][1]["kernel"] = "partial_sums";
  twice["launches"][1]["args"] = twice["launches"][0]["args"];
  twice["launches"][1]["launch"] = twice["launches"][0]["launch"];
  twice["gates"]["metrics"]["launch"] = "partial_sums";
  const std::string err = load_error(write_profile(twice, "reduce_twice"));
  EXPECT_NE(err.find("gates.metrics.launch: kernel 'partial_sums' is launched 2 times: give the launch's index"),
            std::string::npos)
      << err;
}

TEST(Profile, AMalformedLaunchIsOneLineNamingItsIndexAndField) {
  struct Case {
    std::function<void(ordered_json&)> edit;
    std::string want;
  };
  const std::vector<Case> cases = {
      {[](ordered_json& j) { j["launches"] = ordered_json::array(); },
       "launches: must be a non-empty list of {kernel, args, launch}"},
      {[](ordered_json& j) { j["launches"][1] = "final_sum"; }, "launches[1]: must be an object"},
      {[](ordered_json& j) { j["launches"][1].erase("kernel"); }, "launches[1].kernel: missing"},
      {[](ordered_json& j) { j["launches"][1].erase("args"); },
       "launches[1].args: missing: list the kernel's arguments in order"},
      {[](ordered_json& j) { j["launches"][0].erase("launch"); }, "launches[0].launch: missing"},
      {[](ordered_json& j) { j["launches"][1]["launch"]["block"][0] = "FINAL_BLOK"; }, "launches[1].launch.block"},
      {[](ordered_json& j) { j["launches"][1]["args"].push_back("Q"); },
       "launches[1].args: argument 'Q' is not a buffer, scalar, descale, tensor map or problem size"},
      {[](ordered_json& j) { j["launches"][1]["kernal"] = "final_sum"; }, "launches[1].kernal: unknown field"},
      {[](ordered_json& j) { j["launches"][1]["kernel"] = "final_summ"; },
       "launches[1].kernel: kernel 'final_summ' not found in"},
      // Not a name: said as such, not an internal error of the search for it in the template.
      {[](ordered_json& j) { j["launches"][1]["kernel"] = "[1,2"; },
       "launches[1].kernel: '[1,2' is not a kernel's name (an identifier, or a name expression such as &ns::gemm<float, 4>)"},
      {[](ordered_json& j) { j["launches"][1]["kernel"] = "final_sum("; }, "launches[1].kernel: 'final_sum(' is not a kernel's name"},
      {[](ordered_json& j) { j["launches"][1]["template"] = "nope.cu"; },
       "launches[1].template: template file not found"},
      {[](ordered_json& j) { j.erase("template"); },
       "launches[0].template: missing (and the profile gives no template to default to)"},
      {[](ordered_json& j) { j["kernel"] = "partial_sums"; },
       "kernel: not beside launches (each launch gives its own kernel, args and launch)"},
      {[](ordered_json& j) { j["reference"].erase("args"); },
       "reference.args: missing: the candidate has several launches"},
      {[](ordered_json& j) {
         j["reference"].erase("kernel");
         j["reference"].erase("args");
         j["reference"].erase("launch");
         j["reference"]["launches"] = {{{"kernel", "reduce_ref"}, {"launch", {{"grid", {1}}, {"block", {"BLOCK"}}}}}};
       },
       "reference.launches[0].args: missing"},
      {[](ordered_json& j) {
         j["reference"].erase("kernel");
         j["reference"].erase("args");
         j["reference"].erase("launch");
         j["reference"]["launches"] = {
             {{"kernel", "reduce_ref"}, {"args", {"X", "SUM", "N"}}, {"launch", {{"grid", {1}}, {"block", {"BLOCK"}}}}}};
       },
       "reference.launches[0].launch.block"},  // the reference has no knobs
  };
  for (const auto& c : cases) {
    const std::string err = reduce_error(c.edit);
    EXPECT_NE(err.find("reduce_bad.json: " + c.want), std::string::npos) << "want: " << c.want << "\ngot:  " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

TEST(StaticGate, EveryLaunchIsCheckedAndTheWorstFiguresKept) {
  auto p = evo::load_profile(kSource / "profiles/reduce_sum.json");
  const auto lim = evo::arch_limits("sm_90");
  evo::Config c = p.baseline;
  c["FINAL_BLOCK"] = 1024;
  const auto ok = evo::static_gate(p, c, two_kernel_build(30, 40), lim);
  ASSERT_EQ(ok.outcome, evo::Outcome::Passed) << ok.reason;
  EXPECT_EQ(ok.ptxas.registers, 40);          // the second launch's, the larger
  EXPECT_EQ(ok.threads_per_block, 1024);      // FINAL_BLOCK, larger than BLOCK = 256
  // The second launch alone over the limit rejects the candidate, naming it.
  p.gates.static_limits.max_registers = 64;
  const auto over = evo::static_gate(p, c, two_kernel_build(30, 96), lim);
  EXPECT_EQ(over.outcome, evo::Outcome::Rejected);
  EXPECT_NE(over.reason.find("launch 2 (final_sum): 96 registers (limit 64)"), std::string::npos) << over.reason;
  EXPECT_EQ(over.reason.find("launch 1"), std::string::npos) << over.reason;
  // 1024 threads x 64 registers do not fit the register file: launch 2 again, by the occupancy rule.
  p.gates.static_limits.max_registers = 255;
  const auto full = evo::static_gate(p, c, two_kernel_build(30, 72), lim);
  EXPECT_EQ(full.outcome, evo::Outcome::Rejected);
  EXPECT_NE(full.reason.find("launch 2 (final_sum): 72 registers x 1024 threads"), std::string::npos) << full.reason;
  EXPECT_EQ(full.blocks_per_sm, 0);  // the lowest occupancy over the launches
  // Every launch's wgmma serialisation is in the figures; "reject" names the launch it is in.
  evo::Build serial = two_kernel_build(30, 40);
  serial.kernels[1].ptxas.wgmma_serialized = {"C7510: the presence of Extern calls"};
  const auto shown = evo::static_gate(p, c, serial, lim);
  EXPECT_EQ(shown.outcome, evo::Outcome::Passed) << shown.reason;
  EXPECT_EQ(shown.ptxas.wgmma_serialized, std::vector<std::string>{"C7510: the presence of Extern calls"});
  p.gates.static_limits.reject_wgmma_serialized = true;
  const auto turned = evo::static_gate(p, c, serial, lim);
  EXPECT_EQ(turned.outcome, evo::Outcome::Rejected);
  EXPECT_NE(turned.reason.find("launch 2 (final_sum): wgmma serialised by ptxas (C7510: the presence of Extern calls;"),
            std::string::npos)
      << turned.reason;
  EXPECT_EQ(turned.reason.find("launch 1"), std::string::npos) << turned.reason;
  p.gates.static_limits.reject_wgmma_serialized = false;
  // A build holding fewer kernels than launches cannot be judged launch by launch.
  const auto one = evo::static_gate(p, c, fake_build(30, 0, 0), lim);
  EXPECT_EQ(one.outcome, evo::Outcome::Rejected);
  EXPECT_NE(one.reason.find("the build has 1 kernels for 2 launches"), std::string::npos) << one.reason;
}

// `"reference": {"config": ...}`: the candidate at one configuration is the trusted kernel (what a
// T1 file or a Kernel Tuner script without an answer gives). Its launches are the candidate's with
// the knobs as defines, so geometry and compile request are the candidate's of that configuration.
TEST(Profile, ConfigurationReferenceIsTheCandidateAtThatConfiguration) {
  ordered_json j = gemm_json();
  j["reference"] = {{"config", "baseline"}};
  const evo::Profile p = evo::load_profile(write_profile(j, "ref_config_baseline"));
  ASSERT_TRUE(p.reference_config.has_value());
  EXPECT_EQ(*p.reference_config, p.baseline);
  EXPECT_TRUE(p.reference_is_kernel());
  EXPECT_EQ(p.reference.name, p.kernel.name);
  EXPECT_EQ(p.reference.source, p.kernel.source);
  for (const auto& [knob, value] : p.baseline) EXPECT_EQ(p.reference.defines.at(knob), std::to_string(value)) << knob;
  EXPECT_EQ(evo::reference_request(p, "").defines, evo::candidate_request(p, p.baseline, "").defines);
  EXPECT_EQ(evo::reference_request(p, "").options, evo::candidate_request(p, p.baseline, "").options);
  const evo::Problem& prob = p.objective_problem();
  const evo::LaunchGeometry ref = evo::launch_geometry(p.reference, prob, {});
  const evo::LaunchGeometry cand = evo::launch_geometry(p.kernel, prob, p.baseline);
  EXPECT_EQ(ref.grid, cand.grid);
  EXPECT_EQ(ref.block, cand.block);
  EXPECT_EQ(ref.shared_bytes, cand.shared_bytes);
  EXPECT_NE(p.reference_text().find("(the baseline)"), std::string::npos) << p.reference_text();

  // Another configuration: its knobs, the rest the baseline's, and no "(the baseline)".
  const evo::KnobDef& k = p.knobs.front();
  const std::int64_t other = k.values.front() == p.baseline.at(k.name) ? k.values.back() : k.values.front();
  j["reference"] = {{"config", {{k.name, other}}}};
  const evo::Profile q = evo::load_profile(write_profile(j, "ref_config_other"));
  EXPECT_EQ(q.reference_config->at(k.name), other);
  EXPECT_EQ(q.reference.defines.at(k.name), std::to_string(other));
  EXPECT_EQ(q.reference_text().find("(the baseline)"), std::string::npos) << q.reference_text();
}

TEST(Profile, ConfigurationReferenceRefusesWhatItCannotRun) {
  ordered_json j = gemm_json();
  auto error = [&](const ordered_json& ref, const std::string& tag) {
    j["reference"] = ref;
    return load_error(write_profile(j, tag));
  };
  EXPECT_NE(error({{"config", "best"}}, "ref_config_word").find("reference.config: 'best': give \"baseline\""),
            std::string::npos);
  EXPECT_NE(error({{"config", {{"NO_SUCH_KNOB", 1}}}}, "ref_config_knob").find("reference.config.NO_SUCH_KNOB: unknown knob"),
            std::string::npos);
  const std::string knob = gemm_json()["knobs"].begin().key();
  EXPECT_NE(error({{"config", {{knob, 12345}}}}, "ref_config_value").find("12345 is not among the knob's values"),
            std::string::npos);
  EXPECT_NE(error({{"config", "baseline"}, {"kernel", "x"}}, "ref_config_two").find("give one form of reference"),
            std::string::npos);
}

TEST(Profile, ConfigurationReferenceRefusesScratchSizedByKnobs) {
  std::ifstream in(kSource / "profiles/reduce_sum.json");
  ordered_json j = ordered_json::parse(in);
  j["reference"] = {{"config", "baseline"}};
  const std::string e = load_error(write_profile(j, "ref_config_scratch"));
  EXPECT_NE(e.find("reference.config: scratch buffer PARTIAL is sized by knob"), std::string::npos) << e;
}

// ---- a problem's own GREEN input sets (problems[].green) ----

TEST(Profile, AProblemsOwnGreenSeedsAndTrialsReplaceTheGatesForItAlone) {
  const auto p = evo::load_profile(kSource / "profiles/sdpa_fp8.json");
  const evo::Problem* mission = p.find_problem("mission");
  const evo::Problem* longest = p.find_problem("long");
  ASSERT_NE(mission, nullptr);
  ASSERT_NE(longest, nullptr);
  EXPECT_TRUE(mission->green_seeds.empty());
  EXPECT_EQ(mission->green_trials, 0);
  EXPECT_EQ(longest->green_seeds, std::vector<std::uint64_t>{0});
  EXPECT_EQ(longest->green_trials, 1);

  evo::GreenRun r;
  r.profile = &p;
  r.seeds = p.gates.green.seeds;  // [0, 1, 2]
  r.trials = p.gates.green.trials;  // 2
  auto pairs = [&](const evo::Problem& prob) {
    std::vector<std::pair<std::uint64_t, int>> out;
    for (const auto& t : evo::green_trials(r, prob)) out.emplace_back(t.seed, t.trial);
    return out;
  };
  using V = std::vector<std::pair<std::uint64_t, int>>;
  EXPECT_EQ(pairs(*mission), (V{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}}));
  EXPECT_EQ(pairs(*longest), (V{{0, 0}}));
  // A caller that chose the input sets for every problem (a sanitize run) gets them everywhere.
  r.problem_trials = false;
  r.seeds = {7};
  r.trials = 1;
  EXPECT_EQ(pairs(*longest), (V{{7, 0}}));
  EXPECT_EQ(pairs(*mission), (V{{7, 0}}));
  // Either field alone: the other is the gate's.
  evo::Problem only_trials{"t", {}, {}, 3};
  evo::Problem only_seeds{"s", {}, {4, 5}, 0};
  r.problem_trials = true;
  r.seeds = {0, 1};
  r.trials = 1;
  EXPECT_EQ(pairs(only_trials), (V{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
  EXPECT_EQ(pairs(only_seeds), (V{{4, 0}, {5, 0}}));
}

TEST(Profile, BadProblemGreenFieldsNameTheField) {
  auto error_of = [](const std::function<void(ordered_json&)>& edit) {
    ordered_json j = gemm_json();
    edit(j);
    return load_error(write_profile(j, "problem_green_bad"));
  };
  EXPECT_NE(error_of([](ordered_json& j) { j["problems"][0]["green"] = {{"trials", 0}}; })
                .find("problems[0].green.trials: must be at least 1"),
            std::string::npos);
  EXPECT_NE(error_of([](ordered_json& j) { j["problems"][0]["green"] = {{"seeds", ordered_json::array()}}; })
                .find("problems[0].green.seeds: must be a non-empty list of non-negative integers"),
            std::string::npos);
  EXPECT_NE(error_of([](ordered_json& j) { j["problems"][0]["green"] = {{"seeds", ordered_json::array({-1})}}; })
                .find("problems[0].green.seeds"),
            std::string::npos);
  EXPECT_NE(error_of([](ordered_json& j) { j["problems"][0]["green"] = {{"trails", 2}}; })
                .find("problems[0].green.trails: unknown field"),
            std::string::npos);
}

// eval_expr keeps each text parsed: the same text with other values, and a bad text every time.
TEST(Expr, AKeptParseGivesEachCallsOwnValuesAndABadTextFailsEveryTime) {
  for (int m = 1; m <= 300; m += 37) {
    evo::Vars v{{"M", static_cast<double>(m)}, {"T", 64}};
    EXPECT_DOUBLE_EQ(evo::eval_expr("cdiv(M, T) * T", v), std::ceil(m / 64.0) * 64) << m;
  }
  // The same text over other variable names is another parse: a name it lacks is unknown.
  EXPECT_DOUBLE_EQ(evo::eval_expr("M + 1", evo::Vars{{"M", 2}, {"N", 3}}), 3);
  EXPECT_THROW(evo::eval_expr("M + 1", evo::Vars{{"N", 3}}), evo::UserError);
  for (int i = 0; i < 2; ++i) EXPECT_THROW(evo::eval_expr("M +* 1", evo::Vars{{"M", 2}}), evo::UserError);
}

namespace {

// A copy of the stencil3 example (profile, template, reference script) under `root`, its profile
// edited by `edit`.
fs::path stencil_copy(const fs::path& root, const std::function<void(ordered_json&)>& edit = {}) {
  fs::create_directories(root / "profiles");
  fs::create_directories(root / "templates" / "examples");
  for (const char* f : {"templates/examples/stencil3.cu", "templates/examples/stencil3_ref.py"})
    fs::copy_file(kSource / f, root / f, fs::copy_options::overwrite_existing);
  std::ifstream in(kSource / "profiles/stencil3.json");
  ordered_json j = ordered_json::parse(in);
  if (edit) edit(j);
  std::ofstream(root / "profiles/stencil3.json") << j.dump(2);
  return root / "profiles/stencil3.json";
}

}  // namespace

// What a measurement ran against beyond its build: the problems, data, reference and gates change
// it; what only shapes the search (knobs, constraints, baseline, description) does not, nor does
// moving the profile with its files.
TEST(Profile, MeasurementSetupChangesWithWhatAMeasurementDependsOnAndNothingElse) {
  evo::test::TempDir t;
  const auto setup = [](const fs::path& p) { return evo::measurement_setup(evo::load_profile(p)); };
  const std::string plain = setup(stencil_copy(t.path / "a"));
  ASSERT_EQ(plain.size(), 16u);
  EXPECT_EQ(setup(stencil_copy(t.path / "moved" / "elsewhere")), plain);
  EXPECT_EQ(setup(stencil_copy(t.path / "b", [](ordered_json& j) {
              j["knobs"]["BLOCK"].push_back(32);
              j["constraints"] = {"BLOCK * ITEMS <= 4096"};
              j["baseline"]["ITEMS"] = 2;
              j["description"] = "edited";
              j["name"] = "stencil_renamed";
            })),
            plain);
  EXPECT_NE(setup(stencil_copy(t.path / "c", [](ordered_json& j) { j["problems"][1]["sizes"]["N"] = 1048576; })), plain);
  EXPECT_NE(setup(stencil_copy(t.path / "d", [](ordered_json& j) { j["gates"]["green"]["atol"] = 1e-4; })), plain);
  EXPECT_NE(setup(stencil_copy(t.path / "e", [](ordered_json& j) { j["scalars"][0]["value"] = "0.3"; })), plain);
  // The reference script rewritten (a word of the command that names a file): another setup.
  const fs::path f = stencil_copy(t.path / "f");
  std::ofstream(t.path / "f" / "templates/examples/stencil3_ref.py", std::ios::app) << "\n# edited\n";
  EXPECT_NE(setup(f), plain);
  // A profile not read from a file (a landscape's) has none.
  EXPECT_EQ(evo::measurement_setup(evo::Profile{}), "");
}
