// T1 files read as evo profiles (engine/t1.h) and others' recorded spaces read as landscapes
// (engine/landscape_import.h): the benchmark hub's files as published, and small ones of our own
// in tests/data/t1/ that use every construct the reader handles.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/buffers.h"
#include "engine/error.h"
#include "engine/landscape_import.h"
#include "engine/profile.h"
#include "engine/replay.h"
#include "engine/space.h"
#include "engine/t1.h"
#include "engine/trial_store.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
const fs::path kT1 = test::source_root() / "tests/data/t1";

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const BufferSpec& buffer(const Profile& p, const std::string& name) {
  const BufferSpec* b = p.find_buffer(name);
  if (!b) throw std::runtime_error("no buffer " + name);
  return *b;
}

TEST(T1, HubConvolutionMiloAsPublished) {
  const Profile p = load_profile(kT1 / "convolution_milo.json");
  const KnobSpace space(p);
  EXPECT_EQ(space.size(), 10240u);
  EXPECT_EQ(space.enumerate_valid().size(), 4362u);
  EXPECT_EQ(p.name, "convolution_milo");
  EXPECT_EQ(p.kernel.name, "convolution_kernel");
  EXPECT_EQ(p.kernel.source, fs::weakly_canonical(kT1 / "convolution_milo.cu"));
  EXPECT_EQ(p.compile_options, std::vector<std::string>{"-std=c++11"});
  // The default configuration, as written: every Default is a value and the conditions hold.
  const Config defaults{{"block_size_x", 16}, {"block_size_y", 16}, {"tile_size_x", 1}, {"tile_size_y", 1},
                        {"read_only", 0},     {"use_padding", 1},   {"use_shmem", 1},   {"use_cmem", 1},
                        {"filter_height", 15}, {"filter_width", 15}};
  EXPECT_EQ(p.baseline, defaults);
  EXPECT_TRUE(space.valid(p.baseline));
  // Kernel Tuner's grid (ProblemSize over GridDiv*), not the file's GlobalSize (262144 // ...).
  EXPECT_EQ(p.kernel.launch.grid[0], "cdiv(ProblemSize_0, block_size_x * tile_size_x)");
  EXPECT_EQ(p.kernel.launch.grid[1], "cdiv(ProblemSize_1, block_size_y * tile_size_y)");
  EXPECT_EQ(p.kernel.launch.grid[2], "1");
  EXPECT_EQ(p.kernel.launch.block[0], "block_size_x");
  EXPECT_EQ(p.kernel.args, (std::vector<std::string>{"output_image", "input_image", "d_filter"}));
  EXPECT_EQ(buffer(p, "output_image").role, BufferRole::Output);
  EXPECT_EQ(buffer(p, "output_image").shape, std::vector<std::string>{"16777216"});
  EXPECT_EQ(buffer(p, "input_image").shape, std::vector<std::string>{std::to_string(4110 * 4110)});  // max(filter_width) = 15
  EXPECT_EQ(buffer(p, "input_image").init.kind, InitSpec::Kind::Uniform);
  EXPECT_EQ(buffer(p, "input_image").init.b, 1.0);
  EXPECT_EQ(buffer(p, "d_filter").symbol, "d_filter");  // MemType Constant, and passed as the third argument
  EXPECT_EQ(buffer(p, "d_filter").shape, std::vector<std::string>{"225"});
  // GREEN's reference: the same kernel at the defaults, launched the same way, and named so.
  ASSERT_TRUE(p.reference_config.has_value());
  EXPECT_EQ(*p.reference_config, defaults);
  EXPECT_EQ(p.reference_text(),
            "the default configuration block_size_x=16,block_size_y=16,tile_size_x=1,tile_size_y=1,read_only=0,"
            "use_padding=1,use_shmem=1,use_cmem=1,filter_height=15,filter_width=15");
  EXPECT_EQ(p.reference.name, "convolution_kernel");
  EXPECT_EQ(p.reference.defines.at("block_size_y"), "16");
  EXPECT_EQ(p.reference.launch.grid[0], p.kernel.launch.grid[0]);
  EXPECT_EQ(p.gates.static_limits.max_spill_bytes, -1);
  EXPECT_NE(p.description.find("reference: the default configuration block_size_x=16,block_size_y=16,"), std::string::npos)
      << p.description;
}

// small_saxpy.json: a Default outside its values, defaults failing a condition, a chained comparison,
// `//` and max() in conditions, a comprehension, a constant-memory table, an inout output, scalars.
TEST(T1, SmallFileMapsEveryFieldItReads) {
  const T1Spec t = read_t1(kT1 / "small_saxpy.json");
  ASSERT_EQ(t.knobs.size(), 4u);
  EXPECT_EQ(t.knobs[0].values, (std::vector<std::int64_t>{32, 64, 96, 128, 160, 192, 224, 256}));
  EXPECT_EQ(t.knobs[1].values, (std::vector<std::int64_t>{1, 2, 4}));
  EXPECT_EQ(t.knobs[3].values, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(t.constraints[0], "((32 <= (block_size_x * tile)) && ((block_size_x * tile) <= 512))");
  EXPECT_EQ(t.constraints[2], "(floor(ProblemSize_0 / (block_size_x * tile)) >= 4)");

  const Profile p = load_profile(kT1 / "small_saxpy.json");
  EXPECT_EQ(p.compile_options, std::vector<std::string>{"--use_fast_math"});
  EXPECT_EQ(p.kernel.launch.grid[0], "cdiv(ProblemSize_0, block_size_x * tile)");
  EXPECT_EQ(p.kernel.launch.grid[1], "1");  // one problem dimension, no GridDivY, no block_size_y
  EXPECT_EQ(p.kernel.args, (std::vector<std::string>{"y", "x", "table", "a", "n"}));
  EXPECT_EQ(buffer(p, "y").role, BufferRole::InOut);  // ReadWrite and Output
  EXPECT_EQ(buffer(p, "y").init.b, 2.0);              // Random: uniform on [0, FillValue)
  EXPECT_EQ(buffer(p, "x").role, BufferRole::Input);
  EXPECT_EQ(buffer(p, "table").symbol, "table");
  EXPECT_EQ(buffer(p, "table").init.kind, InitSpec::Kind::Constant);
  EXPECT_EQ(buffer(p, "table").init.a, 0.5);
  EXPECT_EQ(buffer(p, "table").shape, std::vector<std::string>{"16"});  // 4 * max(tile)
  ASSERT_EQ(p.scalars.size(), 2u);
  EXPECT_EQ(p.scalars[0].value, "2.5");
  EXPECT_EQ(p.scalars[1].dtype, DType::I32);
  EXPECT_EQ(p.problems.at(0).sizes.at("ProblemSize_0"), 4096);
}

TEST(T1, ConditionsSelectTheConfigurationsPythonSelects) {
  const Profile p = load_profile(kT1 / "small_saxpy.json");
  const KnobSpace space(p);
  std::set<std::string> want;
  for (int bx = 32; bx <= 256; bx += 32)
    for (int t : {1, 2, 4})
      for (int u = 1; u <= 4; ++u)
        for (int use : {0, 1})
          if (32 <= bx * t && bx * t <= 512 && (t % u == 0 || u == 1) && 4096 / (bx * t) >= 4)
            want.insert(config_text({{"block_size_x", bx}, {"tile", t}, {"unroll", u}, {"use_table", use}}));
  std::set<std::string> got;
  for (const auto& c : space.enumerate_valid()) got.insert(config_text(c));
  EXPECT_EQ(got.size(), 72u);
  EXPECT_EQ(got, want);
}

TEST(T1, DefaultsOutsideTheSpaceGiveTheNearestValidConfigurationAndSayWhy) {
  const T1Spec t = read_t1(kT1 / "small_saxpy.json");
  EXPECT_EQ(t.defaults.at("block_size_x"), 96);  // Default 100: the nearest of its values
  EXPECT_EQ(t.defaults.at("unroll"), 3);
  // tile 4, unroll 3 fails `tile % unroll == 0 or unroll == 1`; one knob one step fixes it.
  EXPECT_EQ(t.reference, (Config{{"block_size_x", 96}, {"tile", 4}, {"unroll", 2}, {"use_table", 1}}));
  ASSERT_EQ(t.adjustments.size(), 2u);
  EXPECT_EQ(t.adjustments[0], "block_size_x=96 (Default 100 is not one of its values (32, 64, 96, 128, 160, 192, 224, 256))");
  EXPECT_EQ(t.adjustments[1], "unroll=2 (Default 3: the defaults fail the condition 'tile % unroll == 0 or unroll == 1')");
  EXPECT_EQ(t1_reference_text(t),
            "the default configuration block_size_x=96,tile=4,unroll=2,use_table=1 (not as written: " + t.adjustments[0] +
                "; " + t.adjustments[1] + ")");
  const Profile p = load_profile(kT1 / "small_saxpy.json");
  EXPECT_EQ(p.baseline, t.reference);
  EXPECT_EQ(p.reference.defines.at("unroll"), "2");
  EXPECT_EQ(p.reference_text(), t1_reference_text(t));  // every verdict says what was adjusted
}

// The hub's hotspot T1, beside a stand-in for its kernel (the hub's hotspot_milo.cu is not in
// tests/data: tests/data/SOURCES.md).
// small_types.json: every argument type beyond float and int32 (uint8, int16, bool, double, float4,
// int64 and uint32 scalars) and a Symbol argument, each as the evo dtype and shape its bytes need.
TEST(T1, EveryArgumentTypeMapsToTheDtypeOfItsBytes) {
  const Profile p = load_profile(kT1 / "small_types.json");
  const std::int64_t n = 100000;
  auto expect = [&](const std::string& name, DType t, std::int64_t elements, BufferRole role) {
    const BufferSpec& b = buffer(p, name);
    EXPECT_EQ(b.dtype, t) << name << " is " << dtype_name(b.dtype);
    ASSERT_EQ(b.shape.size(), 1u) << name;
    EXPECT_EQ(b.shape[0], std::to_string(elements)) << name;
    EXPECT_EQ(b.role, role) << name;
  };
  expect("sum", DType::F64, n, BufferRole::Output);
  expect("diff", DType::I16, n, BufferRole::Output);
  expect("high", DType::U8, n, BufferRole::Output);  // bool: one byte, as CUDA stores it
  expect("signal", DType::U8, n, BufferRole::Input);
  expect("w", DType::F32, 4 * n, BufferRole::Input);  // float4: four floats an element
  expect("bias", DType::F32, 4, BufferRole::Input);
  EXPECT_EQ(buffer(p, "signal").init.kind, InitSpec::Kind::Uniform);
  EXPECT_EQ(buffer(p, "signal").init.b, 256.0);
  // A Symbol fills the kernel's global of its name and is not a parameter (KTT's meaning).
  EXPECT_EQ(buffer(p, "bias").symbol, "bias");
  EXPECT_EQ(p.kernel.args, (std::vector<std::string>{"sum", "diff", "high", "signal", "w", "offset", "n"}));
  ASSERT_EQ(p.scalars.size(), 2u);
  EXPECT_EQ(p.scalars[0].dtype, DType::I64);
  EXPECT_EQ(p.scalars[0].value, "5000000000");  // every digit: an int64 past 2^32
  EXPECT_EQ(p.scalars[1].dtype, DType::U32);
}

TEST(T1, HubHotspotMiloLoadsBesideItsKernel) {
  test::TempDir d;
  fs::copy_file(kT1 / "hotspot_milo.json", d.path / "hotspot_milo.json");
  std::ofstream(d.path / "hotspot_milo.cu") << "__global__ void calculate_temp(float* power, float* temp, float* temp_dst, "
                                               "const float Rx_1, const float Ry_1, const float Rz_1, const float step_div_cap) {}\n";
  const T1Spec t = read_t1(d.path / "hotspot_milo.json");
  EXPECT_EQ(t.knobs[2].values.size(), 37u);  // [1, 2, 4, 8, 16] + list(range(32, 1024+1, 32))
  EXPECT_EQ(t.knobs[3].values, (std::vector<std::int64_t>{1, 2, 4, 8, 16, 32}));
  // max_tfactor's Default 1 is not among [10]; the defaults then fail the unroll condition, which
  // the first knob in the file's order that can fix it in one step fixes.
  EXPECT_EQ(t.reference.at("max_tfactor"), 10);
  EXPECT_EQ(t.reference.at("temporal_tiling_factor"), 2);
  EXPECT_EQ(t.reference.at("loop_unroll_factor_t"), 2);
  ASSERT_EQ(t.adjustments.size(), 2u);
  EXPECT_NE(t.adjustments[0].find("temporal_tiling_factor=2 (Default 1: the defaults fail the condition "
                                  "'temporal_tiling_factor % loop_unroll_factor_t == 0')"),
            std::string::npos);
  EXPECT_EQ(t.adjustments[1], "max_tfactor=10 (Default 1 is not one of its values (10))");
  const Profile p = load_profile(d.path / "hotspot_milo.json");
  const KnobSpace space(p);
  EXPECT_EQ(space.size(), 4440000u);
  EXPECT_TRUE(space.valid(p.baseline));
  EXPECT_EQ(buffer(p, "temp_dst").role, BufferRole::InOut);
  EXPECT_EQ(buffer(p, "temp").init.b, 324.0);
  ASSERT_EQ(p.scalars.size(), 4u);
  EXPECT_EQ(p.scalars[3].name, "step_div_cap");
  EXPECT_EQ(p.scalars[3].value, "21.845333099365234");  // every digit: a scalar is not rounded on the way
  EXPECT_EQ(p.kernel.args.size(), 7u);
}

// ---- malformed T1 files: one UserError naming the file and the field ---------------------------

struct BadT1 {
  std::string name;
  std::function<void(Json&)> edit;  // of small_saxpy.json
  std::string field_and_message;    // expected after "<file>: "
};
void PrintTo(const BadT1& c, std::ostream* os) { *os << c.name; }

class T1Malformed : public ::testing::TestWithParam<BadT1> {};

TEST_P(T1Malformed, NamesTheField) {
  test::TempDir d;
  fs::copy_file(kT1 / "small_saxpy.cu", d.path / "small_saxpy.cu");
  Json j = Json::parse(read_text(kT1 / "small_saxpy.json"));
  GetParam().edit(j);
  const fs::path file = d.path / "small_saxpy.json";
  std::ofstream(file) << j.dump(2);
  try {
    load_profile(file);
    FAIL() << "loaded";
  } catch (const UserError& e) {
    // A message that ends in a path of the temporary folder is given up to that path.
    const std::string want = file.string() + ": " + GetParam().field_and_message;
    EXPECT_EQ(std::string(e.what()).substr(0, want.size()), want) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

Json& arg(Json& j, int i) { return j["KernelSpecification"]["Arguments"][i]; }

INSTANTIATE_TEST_SUITE_P(
    T1, T1Malformed,
    ::testing::Values(
        BadT1{"UnknownFillType", [](Json& j) { arg(j, 1)["FillType"] = "BinaryHDF"; },
              "KernelSpecification.Arguments[1].FillType: 'BinaryHDF' is not supported (Constant, Random, BinaryRaw)"},
        BadT1{"BinaryRawWithoutItsFile", [](Json& j) { arg(j, 1)["FillType"] = "BinaryRaw"; },
              "KernelSpecification.Arguments[1].DataSource: missing: the raw file a BinaryRaw argument is read from"},
        BadT1{"ConditionThatDoesNotParse",
              [](Json& j) { j["ConfigurationSpace"]["Conditions"][1]["Expression"] = "tile %% unroll == 0"; },
              "ConfigurationSpace.Conditions[1].Expression: 'tile %% unroll == 0': unexpected '%' at column 7"},
        BadT1{"MatrixProductCondition", [](Json& j) { j["ConfigurationSpace"]["Conditions"][1]["Expression"] = "tile @ 1 == 0"; },
              "ConfigurationSpace.Conditions[1].Expression: 'tile @ 1 == 0': operator '@' is not supported at column 6"},
        BadT1{"ConditionNamingNoParameter",
              [](Json& j) { j["ConfigurationSpace"]["Conditions"][0]["Expression"] = "block_size_y > 1"; },
              "ConfigurationSpace.Conditions[0].Expression: 'block_size_y > 1': unknown name 'block_size_y' (not a "
              "tuning parameter)"},
        BadT1{"OpenCL", [](Json& j) { j["KernelSpecification"]["Language"] = "OpenCL"; },
              "KernelSpecification.Language: 'OpenCL' is not supported (evo compiles CUDA with NVRTC)"},
        BadT1{"KernelNotInFile", [](Json& j) { j["KernelSpecification"]["KernelName"] = "daxpy"; },
              "KernelSpecification.KernelName: 'daxpy' not found in "},
        BadT1{"FloatParameter", [](Json& j) { j["ConfigurationSpace"]["TuningParameters"][1]["Type"] = "float"; },
              "ConfigurationSpace.TuningParameters[1].Type: 'float' is not supported (evo's knobs are integers: int, "
              "uint, bool)"},
        BadT1{"ValuesNotIntegers", [](Json& j) { j["ConfigurationSpace"]["TuningParameters"][1]["Values"] = "[i / 2 for i in range(3)]"; },
              "ConfigurationSpace.TuningParameters[1].Values: value 0 is not an integer (evo's knobs are integers)"},
        BadT1{"MisspeltField", [](Json& j) { j["ConfigurationSpace"]["Condition"] = j["ConfigurationSpace"]["Conditions"]; },
              "ConfigurationSpace.Condition: unknown field (evo reads Conditions, TuningParameters)"},
        BadT1{"CustomType", [](Json& j) { arg(j, 1)["Type"] = "custom"; },
              "KernelSpecification.Arguments[1].Type: 'custom' is not supported (evo needs the element type to fill and "
              "compare: bool, int8..int64, uint8..uint64, half, float, double, and half/float/double 2, 4, 8, 16)"},
        BadT1{"NotAType", [](Json& j) { arg(j, 1)["Type"] = "float3"; },
              "KernelSpecification.Arguments[1].Type: 'float3' is not a T1 type (bool, int8..int64"},
        BadT1{"VectorTypeScalar", [](Json& j) { arg(j, 3)["Type"] = "float2"; },
              "KernelSpecification.Arguments[3].Type: 'float2': a vector type is not supported for a scalar"},
        BadT1{"FractionalIntegerScalar", [](Json& j) { arg(j, 4)["FillValue"] = 2.5; },
              "KernelSpecification.Arguments[4].FillValue: 2.5 is not an integer (Type int32)"},
        BadT1{"TypeSizeDisagrees", [](Json& j) { arg(j, 1)["Type"] = "double2"; arg(j, 1)["TypeSize"] = 8; },
              "KernelSpecification.Arguments[1].TypeSize: 8 bytes, but a double2 is 16"},
        BadT1{"LocalMemory", [](Json& j) { arg(j, 1)["MemoryType"] = "Local"; },
              "KernelSpecification.Arguments[1].MemoryType: 'Local' is not supported (give the kernel's dynamic shared "
              "memory as KernelSpecification.SharedMemory)"},
        BadT1{"SymbolOutput", [](Json& j) { arg(j, 0)["MemoryType"] = "Symbol"; },
              "KernelSpecification.Arguments[0].MemoryType: a Symbol argument is read-only (it is copied into the "
              "kernel's symbol 'y')"},
        BadT1{"SizeOfATunable", [](Json& j) { arg(j, 1)["Size"] = "tile * 16"; },
              "KernelSpecification.Arguments[1].Size: 'tile * 16' is a list, not a number (in a Size a tuning parameter "
              "is its list of values: max() takes the largest)"},
        BadT1{"SizeAddingToAList", [](Json& j) { arg(j, 1)["Size"] = "tile + 16"; },
              "KernelSpecification.Arguments[1].Size: 'tile + 16': +: a list where a number is needed"},
        BadT1{"NoOutput", [](Json& j) { arg(j, 0)["Output"] = 0; },
              "KernelSpecification.Arguments: no output: mark the arguments the kernel computes with \"Output\": 1 "
              "(GREEN compares them)"},
        BadT1{"ConstantOutput", [](Json& j) { arg(j, 0)["MemType"] = "Constant"; },
              "KernelSpecification.Arguments[0].MemType: a Constant argument is read-only (it is copied into the "
              "__constant__ symbol 'y')"},
        BadT1{"ReferenceArguments", [](Json& j) { j["KernelSpecification"]["ReferenceArguments"] = Json::array(); },
              "KernelSpecification.ReferenceArguments: not supported (evo compares every configuration with the default "
              "configuration)"},
        BadT1{"VulkanSizes", [](Json& j) { j["KernelSpecification"]["GlobalSizeType"] = "Vulkan"; },
              "KernelSpecification.GlobalSizeType: 'Vulkan' is not supported (OpenCL: GlobalSize counts threads; CUDA: "
              "blocks)"},
        BadT1{"ProblemSizeOfAParameter", [](Json& j) { j["KernelSpecification"]["ProblemSize"] = Json::array({"tile * 2"}); },
              "KernelSpecification.ProblemSize: 'tile * 2': unknown name 'tile'"},
        BadT1{"NoValidConfiguration", [](Json& j) { j["ConfigurationSpace"]["Conditions"][0]["Expression"] = "tile > 8"; },
              "ConfigurationSpace.Conditions: no configuration satisfies them"}),
    [](const ::testing::TestParamInfo<BadT1>& i) { return i.param.name; });

// A ProblemSize written as Python of constants, as a generated T1 file may give it, is its value.
TEST(T1, ProblemSizeMayBePythonOfConstants) {
  test::TempDir d;
  fs::copy_file(kT1 / "small_saxpy.cu", d.path / "small_saxpy.cu");
  Json j = Json::parse(read_text(kT1 / "small_saxpy.json"));
  j["KernelSpecification"]["ProblemSize"] = Json::array({"2 ** 11 * 2"});
  std::ofstream(d.path / "small_saxpy.json") << j.dump();
  const T1Spec t = read_t1(d.path / "small_saxpy.json");
  EXPECT_EQ(t.problem.sizes.at("ProblemSize_0"), 4096.0);
}

// FillType BinaryRaw: the DataSource file's bytes are the buffer's, for every seed and trial; a
// file of the wrong size is named with both sizes.
TEST(T1, BinaryRawFillsTheBufferWithTheFilesBytes) {
  test::TempDir d;
  fs::copy_file(kT1 / "small_types.cu", d.path / "small_types.cu");
  Json j = Json::parse(read_text(kT1 / "small_types.json"));
  Json& signal = j["KernelSpecification"]["Arguments"][3];
  signal["FillType"] = "BinaryRaw";
  signal["DataSource"] = "data/signal.bin";
  signal.erase("FillValue");
  fs::create_directories(d.path / "data");
  std::string bytes(100000, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 37) % 251);
  std::ofstream(d.path / "data/signal.bin", std::ios::binary) << bytes;
  std::ofstream(d.path / "small_types.json") << j.dump();
  const Profile p = load_profile(d.path / "small_types.json");
  const BufferSpec& b = buffer(p, "signal");
  EXPECT_EQ(b.init.kind, InitSpec::Kind::Raw);
  EXPECT_EQ(b.init.file, fs::weakly_canonical(d.path / "data/signal.bin"));
  for (int trial : {0, 1}) {
    const std::vector<std::uint8_t> got = initial_bytes(b, 100000, 7, trial, nullptr);
    EXPECT_EQ(std::string(got.begin(), got.end()), bytes) << "trial " << trial;
  }
  // The store keys a raw fill by the file's content alone: every trial the same, another file another key.
  const std::string key = fill_key(b, 100000, 7, 0);
  EXPECT_EQ(fill_key(b, 100000, 8, 1), key);
  bytes[5] ^= 1;
  std::ofstream(d.path / "data/signal.bin", std::ios::binary) << bytes;
  EXPECT_NE(fill_key(buffer(load_profile(d.path / "small_types.json"), "signal"), 100000, 7, 0), key);

  std::ofstream(d.path / "data/signal.bin", std::ios::binary) << bytes.substr(0, 99999);
  try {
    read_t1(d.path / "small_types.json");
    ADD_FAILURE() << "a short DataSource was taken";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("Arguments[3].DataSource: " + fs::weakly_canonical(d.path / "data/signal.bin").string() +
                                         " holds 99999 bytes; Size 100000 of uint8 is 100000"),
              std::string::npos)
        << e.what();
  }
}

TEST(T1, MissingKernelFileIsNamedWithWhereItWasLookedFor) {
  test::TempDir d;
  fs::copy_file(kT1 / "small_saxpy.json", d.path / "small_saxpy.json");
  try {
    read_t1(d.path / "small_saxpy.json");
    FAIL() << "read without its kernel";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), (d.path / "small_saxpy.json").string() +
                                         ": KernelSpecification.KernelFile: file not found: " +
                                         (d.path / "small_saxpy.cu").string());
  }
  // A landscape import needs only the space.
  EXPECT_EQ(read_t1(d.path / "small_saxpy.json", /*need_kernel=*/false).knobs.size(), 4u);
}

// ---- landscapes from others' data ----------------------------------------------------------------

void expect_small_saxpy_landscape(const LandscapeImport& im, double second_p90_us) {
  const Landscape& l = im.landscape;
  EXPECT_EQ(l.profile, "small_saxpy");
  EXPECT_EQ(im.entries, 7u - (im.source == "T4 results"));  // the T4 file has one outside entry fewer
  EXPECT_EQ(im.valid, 72u);
  EXPECT_EQ(im.missing, 67u);
  ASSERT_EQ(l.points.size(), 5u);
  std::map<std::string, const LandscapePoint*> by;
  for (const auto& p : l.points) by[config_text(p.knobs)] = &p;
  const auto& ref = *by.at(config_text({{"block_size_x", 96}, {"tile", 4}, {"unroll", 2}, {"use_table", 1}}));
  EXPECT_EQ(ref.status, Status::Measured);
  EXPECT_DOUBLE_EQ(ref.p50_us, 10.0);  // 0.010 ms
  EXPECT_NEAR(ref.p90_us, 11.6, 1e-9);  // runtimes 9, 10, 10, 11, 12 us: the 90th percentile
  EXPECT_DOUBLE_EQ(ref.seconds_compile, 0.4105);
  EXPECT_DOUBLE_EQ(l.baseline_p50_us, 10.0);  // the baseline is the T1 default configuration
  EXPECT_EQ(l.baseline, (Config{{"block_size_x", 96}, {"tile", 4}, {"unroll", 2}, {"use_table", 1}}));
  const auto& slow = *by.at(config_text({{"block_size_x", 32}, {"tile", 1}, {"unroll", 1}, {"use_table", 0}}));
  EXPECT_DOUBLE_EQ(slow.p50_us, 20.0);
  EXPECT_NEAR(slow.p90_us, second_p90_us, 1e-9);
  EXPECT_EQ(by.at(config_text({{"block_size_x", 64}, {"tile", 2}, {"unroll", 2}, {"use_table", 1}}))->status,
            Status::CompileError);
  EXPECT_EQ(by.at(config_text({{"block_size_x", 128}, {"tile", 4}, {"unroll", 4}, {"use_table", 0}}))->status,
            Status::StaticRejected);
}

TEST(LandscapeImport, KernelTunerCacheKeepsEachFailureKindAndCountsWhatIsMissing) {
  const T1Spec t = read_t1(kT1 / "small_saxpy.json", false);
  const LandscapeImport im = import_landscape(kT1 / "small_saxpy_cache.json", t);
  EXPECT_EQ(im.source, "Kernel Tuner cache");
  EXPECT_EQ(im.landscape.device, "Hand-written test device");
  expect_small_saxpy_landscape(im, 20.8);
  EXPECT_EQ(im.outside, 2u);  // 256 x 4 threads of work, and tile 2 with unroll 3
  std::map<std::string, const LandscapePoint*> by;
  for (const auto& p : im.landscape.points) by[config_text(p.knobs)] = &p;
  const auto& invalid = *by.at(config_text({{"block_size_x", 256}, {"tile", 2}, {"unroll", 1}, {"use_table", 1}}));
  EXPECT_EQ(invalid.status, Status::StaticRejected);
  EXPECT_EQ(invalid.message, "Kernel Tuner: InvalidConfig (more threads per block than the device allows)");
  EXPECT_EQ(import_summary(im),
            "5 configurations (1 compile_error, 2 measured, 2 static_rejected); 67 of the 72 configurations that pass "
            "the T1 conditions missing from the file; 2 of its 7 entries outside them, left out");
}

// Kernel Tuner's own test cache and its T1 file (tests/data/SOURCES.md): a real cache's format.
TEST(LandscapeImport, KernelTunersOwnTestCacheIsItsWholeSpace) {
  const fs::path kt = test::source_root() / "tests/data/kt";
  const T1Spec t = read_t1(kt / "test_cache_file_T1_input.json", /*need_kernel=*/false);
  const LandscapeImport im = import_landscape(kt / "test_cache_file.json", t);
  EXPECT_EQ(im.landscape.device, "NVIDIA RTX A4000");
  EXPECT_EQ(im.landscape.points.size(), 15u);
  EXPECT_EQ(im.by_status.at("measured"), 15u);
  EXPECT_EQ(im.missing, 0u);
  EXPECT_EQ(im.outside, 0u);
  EXPECT_EQ(im.landscape.baseline, (Config{{"block_size_x", 512}}));  // its Default
  EXPECT_DOUBLE_EQ(im.landscape.baseline_p50_us, 0.04139885599059718 * 1e3);
  EXPECT_EQ(im.landscape.launch.grid[0], "cdiv(ProblemSize_0, block_size_x)");
}

TEST(LandscapeImport, T4ResultsReadTheSameWithTheirUnits) {
  const T1Spec t = read_t1(kT1 / "small_saxpy.json", false);
  const LandscapeImport im = import_landscape(kT1 / "small_saxpy_t4.json", t);
  EXPECT_EQ(im.source, "T4 results");
  expect_small_saxpy_landscape(im, 20.8);  // its runtimes are in us, as its "time" says
  EXPECT_EQ(im.outside, 1u);
  for (const auto& p : im.landscape.points)
    if (p.knobs.at("block_size_x") == 256) {
      EXPECT_EQ(p.status, Status::GreenFailed);  // "correctness"
    }
}

TEST(LandscapeImport, GzippedAndUnclosedCachesReadAsKernelTunerReadsThem) {
  test::TempDir d;
  // Gzipped, as the benchmark hub stores its caches.
  const std::string text = read_text(kT1 / "small_saxpy_cache.json");
  const fs::path gz = d.path / "small_saxpy_cache.json.gz";
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(f);
  EXPECT_EQ(read_maybe_gzip(gz), text);
  const T1Spec t = read_t1(kT1 / "small_saxpy.json", false);
  expect_small_saxpy_landscape(import_landscape(gz, t), 20.8);
  // Kernel Tuner stopped mid-run: each entry is followed by a comma, and nothing closes the object.
  std::string open = text.substr(0, text.rfind("}\n}"));
  while (std::isspace(static_cast<unsigned char>(open.back()))) open.pop_back();
  const fs::path unclosed = d.path / "open.json";
  std::ofstream(unclosed) << open + ",";
  const LandscapeImport im = import_landscape(unclosed, t);
  EXPECT_EQ(im.entries, 7u);
  // The landscape it gives replays: every point valid, the baseline valid.
  const fs::path land = d.path / "land.json";
  std::ofstream(land) << landscape_text(im.landscape);
  ReplayEvaluator replay(land);
  EXPECT_EQ(replay.landscape().points.size(), 5u);
  EXPECT_EQ(replay.time_baseline().p50_us, 10.0);
}

TEST(LandscapeImport, AnotherKernelsCacheIsRefusedNamingTheParameter) {
  test::TempDir d;
  Json j = Json::parse(read_text(kT1 / "small_saxpy_cache.json"));
  j["tune_params_keys"].push_back("filter_width");
  std::ofstream(d.path / "other.json") << j.dump();
  const T1Spec t = read_t1(kT1 / "small_saxpy.json", false);
  try {
    import_landscape(d.path / "other.json", t);
    FAIL() << "imported";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              (d.path / "other.json").string() + ": tune_params_keys: 'filter_width' is not a tuning parameter of small_saxpy.json");
  }
}

// A field of the wrong type is the file's mistake, named like any other (it was an internal error
// from the JSON library: found by changing the two small files' fields at random).
TEST(LandscapeImport, AFieldOfTheWrongTypeIsNamed) {
  const T1Spec t = read_t1(kT1 / "small_saxpy.json", false);
  struct Case {
    const char* file;
    std::function<void(Json&)> edit;
    std::string want;
  };
  const std::vector<Case> cases{
      {"small_saxpy_cache.json", [](Json& j) { j["tune_params_keys"][1] = nullptr; },
       "tune_params_keys: must be a list of names, not null"},
      {"small_saxpy_cache.json", [](Json& j) { j["tune_params_keys"] = "tile"; },
       "tune_params_keys: must be a list of the tuning parameters' names"},
      {"small_saxpy_cache.json", [](Json& j) { j["device_name"] = 3; }, "device_name: must be a string, not 3"},
      {"small_saxpy_t4.json", [](Json& j) { j["metadata"]["timeunit"] = 1.5; }, "metadata.timeunit: must be a string, not 1.5"},
      {"small_saxpy_t4.json", [](Json& j) { j["metadata"] = Json::array({1, 2}); }, "metadata: must be an object"},
      {"small_saxpy_t4.json", [](Json& j) { j["results"][3]["invalidity"] = true; },
       "results[3].invalidity: must be a string, not true"},
      {"small_saxpy_t4.json", [](Json& j) { j["results"][1]["measurements"][0]["name"] = Json::array(); },
       "results[1].measurements[0].name: must be a string, not []"},
      {"small_saxpy_t4.json", [](Json& j) { j["results"][0]["measurements"][0]["unit"] = -1; },
       "results[0].measurements.time.unit: must be a string, not -1"},
      {"small_saxpy_t4.json", [](Json& j) { j["results"][0]["measurements"] = 7; }, "results[0].measurements: must be a list"}};
  for (const auto& c : cases) {
    test::TempDir d;
    Json j = Json::parse(read_text(kT1 / c.file));
    c.edit(j);
    std::ofstream(d.path / c.file) << j.dump();
    try {
      import_landscape(d.path / c.file, t);
      ADD_FAILURE() << "imported: " << c.want;
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), (d.path / c.file).string() + ": " + c.want);
    }
  }
}

}  // namespace
}  // namespace evo

namespace evo {
namespace {

// tests/data/held_out/landscape_kt_convolution_2080ti.json: a Kernel Tuner cache measured by others
// (tests/data/SOURCES.md), imported against our T1 file of its space: every configuration the
// restrictions pass, each failure kind as imported, and a space that is the T1 file's.
TEST(LandscapeImport, KernelTunersConvolutionOnA2080TiIsTheWholeSpaceOfItsT1File) {
  const Profile p = load_profile(kT1 / "kt_convolution_2080ti.json");
  const Landscape l = read_landscape(test::source_root() / "tests/data/held_out/landscape_kt_convolution_2080ti.json");
  EXPECT_EQ(landscape_mismatch(l, p), std::nullopt);
  EXPECT_EQ(l.device, "NVIDIA GeForce RTX 2080 Ti");
  EXPECT_EQ(l.points.size(), KnobSpace(p).enumerate_valid().size());
  EXPECT_EQ(l.points.size(), 6768u);
  std::map<Status, int> by;
  for (const auto& pt : l.points) ++by[pt.status];
  EXPECT_EQ(by[Status::Measured], 5256);
  EXPECT_EQ(by[Status::CompileError], 1426);
  EXPECT_EQ(by[Status::StaticRejected], 86);
}

}  // namespace
}  // namespace evo
