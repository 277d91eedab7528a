// A search profile: what the kernel computes, its knob space, its problems and how to check it.
// Read from JSON (profiles/*.json); every field is documented in docs/profiles.md. load_profile
// validates everything it can without a GPU and throws UserError("<file>: <field>: <what>").
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace evo {

// The integer and f64 types after I32 serve kernels users bring (a T1 file's uint8 input, a
// double accumulator); the numbers are part of GREEN's comparison kernel (DT_*), so new ones go last.
enum class DType { F32, F16, BF16, FP8_E4M3, FP8_E5M2, I32, U8, I8, U16, I16, U32, I64, U64, F64 };
std::size_t dtype_bytes(DType t);
const char* dtype_name(DType t);  // "f32", "f16", "bf16", "fp8_e4m3", "fp8_e5m2", "i32", "u8", "i8", "u16", "i16", "u32", "i64", "u64", "f64"
const std::vector<DType>& all_dtypes();
std::optional<DType> parse_dtype(const std::string& s);

// Outputs are poisoned, then compared in GREEN. An inout buffer is filled from its init like an
// input (the same data for candidate and reference), then compared like an output: the kernel may
// accumulate into it (out[i] += ...). It is never poisoned, so GREEN cannot see an element the
// kernel failed to write unless the reference changes it.
enum class BufferRole { Input, Output, Scratch, InOut };
bool is_integer(DType t);  // compared exactly in GREEN
// Every bit pattern of a 1- or 2-byte integer is a value a kernel may write: no poison is told
// apart from a value there (an unwritten element shows only where the reference differs).
bool has_poison(DType t);
// NumPy has this type: a .npy of npy_descr(t) holds the same bits (not bf16, not fp8).
bool npy_exact(DType t);
// The .npy dtype a buffer is exchanged as with a command or data reference: "<f4" (f32), "<f2"
// (f16), "<i4" (i32), "|u1" (u8) ... "<f8" (f64); bf16 and fp8, which NumPy lacks, as float32
// values ("<f4").
const char* npy_descr(DType t);

struct InitSpec {
  enum class Kind { Normal, Uniform, Zeros, Constant, Raw } kind = Kind::Normal;
  double a = 0.0;  // normal: mean; uniform: low; constant: value
  double b = 1.0;  // normal: std;  uniform: high
  // raw: the buffer's bytes as the file holds them (a T1 BinaryRaw DataSource), the same for
  // every seed and trial; the hash of its content keys the stored fills.
  std::filesystem::path file;
  std::string file_hash;
};

// A buffer's own GREEN thresholds; each one given overrides the profile's gates.green.
struct BufferGreen {
  std::optional<double> atol, rtol, max_bad_pct, max_abs, mean_abs;
};

struct BufferSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::string> shape;  // expressions of problem sizes and knobs
  InitSpec init;
  BufferRole role = BufferRole::Input;
  std::string scale_arg;  // fp8: the f32 scalar argument that receives this tensor's descale
  std::string symbol;     // non-empty: filled into this __constant__ symbol (and, if args name it, passed as a global copy)
  // inout only: re-filled from init before every FAST sample (EveryLaunch), or filled once and
  // left to accumulate across the timed launches (Never).
  enum class Refill { EveryLaunch, Never } refill = Refill::EveryLaunch;
  BufferGreen green;
  bool compared() const { return role == BufferRole::Output || role == BufferRole::InOut; }
  bool filled_per_trial() const { return role == BufferRole::Input || role == BufferRole::InOut; }
};

struct ScalarSpec {
  std::string name;
  DType dtype = DType::F32;  // f32 or i32
  std::string value;         // expression of problem sizes and knobs
};

// A TMA tensor map (CUtensorMap) over one buffer: encoded on the host for each problem and passed
// by value (`const __grid_constant__ CUtensorMap`). The buffer is taken as a packed tensor, dims
// innermost first; interleave none, element strides 1, out-of-bounds elements read as zero.
struct TensorMapSpec {
  std::string name;               // argument name
  std::string buffer;             // the buffer it describes (not a __constant__ symbol)
  std::vector<std::string> dims;  // 1 to 5 expressions, innermost first; their product = the buffer's elements
  std::vector<std::string> box;   // one expression per dim: elements a copy moves along it, 1 to 256
  int swizzle_bytes = 0;          // 0, 32, 64, 128
  int l2_promotion_bytes = 128;   // 0, 64, 128, 256
};

struct LaunchSpec {
  std::array<std::string, 3> grid{"1", "1", "1"};
  std::array<std::string, 3> block{"1", "1", "1"};
  std::string shared_bytes = "0";  // dynamic shared memory
};

// One launch of the candidate or of a trusted reference: a source file, an entry point, its
// arguments and its geometry.
struct KernelSpec {
  std::filesystem::path source;  // absolute (resolved against the profile's folder)
  std::string name;              // extern "C" name, or a C++ name expression ("gemm<float, 4>")
  std::map<std::string, std::string> defines;  // fixed -D values (not searched)
  std::vector<std::string> args;  // buffer, scalar, descale, tensor-map or problem-size names, in order
  LaunchSpec launch;
};

// A reference that is not a kernel (docs/profiles.md "reference"): a command run once per
// (problem, seed, trial) that reads the inputs as .npy files and writes the expected outputs, or
// expected outputs stored with the profile for fixed inputs (engine/reference.h runs both).
struct CommandReference {
  std::string command;            // a shell line; {in} and {out} name the folders it reads and writes
  std::filesystem::path dir;      // its working directory: the profile's folder
  double timeout_s = 600;         // one run's limit
};
struct DataReference {
  std::map<std::string, std::filesystem::path> inputs;   // input and inout buffer -> .npy (absolute)
  std::map<std::string, std::filesystem::path> outputs;  // output and inout buffer -> .npy (absolute)
};

struct KnobDef {
  std::string name;
  std::vector<std::int64_t> values;  // ordered: neighbours are one step apart in this list
};

struct Problem {
  std::string name;
  std::map<std::string, double> sizes;  // e.g. B, H, S, D, causal
  // GREEN's input sets for this problem when they differ from gates.green's (empty / 0: the
  // gate's): a long problem is there for its indexing at scale, which one input set exercises as
  // well as six, and its launches are most of a candidate's GREEN time.
  std::vector<std::uint64_t> green_seeds;
  int green_trials = 0;
};

struct StaticLimits {
  int max_registers = 255;
  std::int64_t max_spill_bytes = 0;     // spill stores + spill loads; -1: no limit
  std::int64_t max_stack_bytes = -1;    // -1: no limit
  int max_threads_per_block = 1024;
  // "wgmma_serialized": "reject" (true) turns away a build whose ptxas report says its wgmma
  // pipeline is serialised (PtxasReport::wgmma_serialized); "allow" (default) keeps and shows it.
  bool reject_wgmma_serialized = false;
};

struct GreenThresholds {
  double atol = 1e-2, rtol = 1e-2;   // element is bad if |c - r| > atol + rtol * |r|
  double max_bad_pct = 0.0;          // % of bad elements allowed
  double max_abs = std::numeric_limits<double>::infinity();
  double mean_abs = std::numeric_limits<double>::infinity();
  std::vector<std::uint64_t> seeds{0, 1, 2};
  int trials = 5;                    // fresh inputs per seed
};

// The thresholds GREEN applies to buffer `b`: the profile's, overridden by the buffer's own; an
// integer buffer is compared exactly (atol = rtol = 0, no bad element allowed).
GreenThresholds green_thresholds(const GreenThresholds& profile, const BufferSpec& b);

struct FastSettings {
  enum class Mode { Events, Graph } mode = Mode::Events;
  int warmup = 10;
  int iters = 50;
  bool flush_l2 = true;
  int graph_launches = 20;   // launches per graph replay in Graph mode
};

struct MetricThreshold {
  std::string metric;
  std::optional<double> min, max;
};

struct MetricSettings {
  bool enabled = true;
  std::vector<std::string> names;            // CUPTI metric names
  std::vector<MetricThreshold> thresholds;   // metric gates; empty = off
  // A unit of several launches: the figures cover every launch (nullopt), or this one (0-based,
  // in the order of launches(); "launch": an index or a kernel's name in the profile).
  std::optional<std::size_t> launch;
};

struct Gates {
  StaticLimits static_limits;
  GreenThresholds green;
  FastSettings fast;
  MetricSettings metrics;
  double timeout_s = 5.0;  // watchdog per job step in the worker
};

struct Profile {
  std::filesystem::path path;     // the JSON file
  std::string name;               // defaults to the file's stem
  std::string description;
  // The candidate: `kernel` is its first launch (the only one, unless the profile gives `launches`),
  // later_launches the rest, in order. Every launch shares the buffers, scalars, knobs and the
  // profile's defines; GREEN compares after the last, FAST times them all as one unit.
  KernelSpec kernel;
  std::vector<KernelSpec> later_launches;
  // The trusted reference: a kernel (`reference`, then later_reference_launches), unless a command
  // or stored data is given (then `reference` is empty).
  KernelSpec reference;
  std::vector<KernelSpec> later_reference_launches;
  // `"reference": {"config": ...}`: the candidate's own launches at this configuration (the
  // baseline, or one given), when nothing else can be trusted (a T1 file, a Kernel Tuner script
  // without an answer). `reference` and later_reference_launches are then copies of the
  // candidate's launches with the configuration's knobs among their defines, compiled with the
  // profile's options, so they name one cubin with the candidate of that configuration.
  std::optional<std::map<std::string, std::int64_t>> reference_config;
  // `reference.name` beside `config`: how verdicts and exports name that configuration (a T1
  // file's profile: "the default configuration ...", with what was adjusted and why).
  std::string reference_name;
  std::optional<CommandReference> reference_command;
  std::optional<DataReference> reference_data;
  std::vector<std::string> include_dirs;     // extra -I for NVRTC (absolute)
  std::vector<std::string> compile_options;  // extra NVRTC options
  std::string arch = "sm_90";
  std::vector<std::string> best_for;         // devices ("sm_90") `evo run` picks it for by default
  std::vector<KnobDef> knobs;
  std::vector<std::string> constraints;      // expressions that must be non-zero
  std::map<std::string, std::int64_t> baseline;
  std::vector<Problem> problems;
  std::string objective;                     // name of the problem timed for the search
  std::vector<BufferSpec> buffers;
  std::vector<ScalarSpec> scalars;
  std::vector<TensorMapSpec> tensor_maps;
  Gates gates;

  // What a measurement ran against beyond its build (measurement_setup): the profile's text
  // without the fields that only shape the search, and the files it names as written there.
  std::string setup_text;
  std::map<std::string, std::filesystem::path> setup_files;

  std::vector<const KernelSpec*> launches() const;            // kernel, then later_launches
  std::vector<const KernelSpec*> reference_launches() const;  // empty for a command or data reference
  bool reference_is_kernel() const { return !reference_command && !reference_data; }
  // What GREEN compares against, in words: "kernel matmul_ref (ref/matmul_ref.cu)", "the
  // configuration block_size_x=16,... (the baseline)", "command `...`", "data (...)".
  std::string reference_text() const;
  const Problem& objective_problem() const;
  const Problem* find_problem(const std::string& name) const;
  const KnobDef* find_knob(const std::string& name) const;
  const BufferSpec* find_buffer(const std::string& name) const;
  const TensorMapSpec* find_tensor_map(const std::string& name) const;
};

Profile load_profile(const std::filesystem::path& path);

// A measurement's identity beyond its build (16 hex digits): the profile as read, less its name,
// description, knobs, constraints, baseline, best_for and objective (a knob value added or a
// constraint relaxed leaves every measurement as it was), and the content of every file a string of
// it names (data, a raw input, a word of a reference command), each under the name it is given
// there, so a profile moved with its files keeps it. A problem resized, a threshold changed or a
// data file rewritten is another setup: nothing measured under the old one is read back
// (population/store.h). "" for a profile not read from a file (a landscape's).
std::string measurement_setup(const Profile& p);
// The default profile of `evo run` and where shipped profiles live.
std::filesystem::path profiles_dir();                 // $EVO_PROFILES, else data_dir()/profiles
std::filesystem::path resolve_profile(const std::string& name_or_path);  // "sdpa_fp8" or a path

}  // namespace evo
