// GREEN's expected outputs when the profile's reference is not a kernel (docs/profiles.md
// "reference"). Host only: nothing here touches a GPU, so all of it is tested on any machine.
//
// A command reference (`"reference": {"command": "python3 ref.py {in} {out}"}`): for one
// (problem, seed, trial) evo writes the inputs the candidate gets into a fresh folder, {in}: one
// `<buffer>.npy` per input and inout buffer (npy_descr: f32, f16 and i32 as themselves, bf16 and
// fp8 as float32 values, scaled fp8 multiplied back by its descale) and `problem.json` with the
// problem's sizes, the seed and trial, the scalars that do not depend on knobs, the descales, and
// every input's and output's dtype and shape. It runs the command with `sh -c` in the profile's
// folder, {in} and {out} replaced by the two folders, and reads `<buffer>.npy` from {out} for every
// output and inout buffer: exactly the buffer's shape and npy_descr, which evo then stores in the
// buffer's dtype as a kernel reference would.
//
// A data reference (`"reference": {"data": {"inputs": {...}, "outputs": {...}}}`): the inputs come
// from the given files instead of `init` (BufferSet fills them from data_input_bytes) and the
// expected outputs are the given files, for every seed and trial alike.
//
// Results are kept per (problem, seed, trial) for the process, and a command's also on disk
// under the cache folder it is given, keyed by the command, the inputs' bytes and the content of
// every file the command names, so a restarted worker does not run it again. A command that
// fails, hangs, or writes an output of the wrong shape or dtype, or none, is the profile's
// problem, not a candidate's: ReferenceError, one line naming the command and the buffer.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/buffers.h"
#include "engine/error.h"
#include "engine/profile.h"

namespace evo {

// The reference could not give an answer: no candidate is to blame (the run stops on it).
struct ReferenceError : UserError {
  using UserError::UserError;
};

// The inputs of one (problem, seed, trial) as the candidate gets them: every input and inout
// buffer's bytes in its dtype, drawn as BufferSet draws them (or read from a data reference's
// files), and the descales of scaled fp8 buffers.
struct HostInputs {
  std::vector<HostTensor> buffers;        // profile order
  std::map<std::string, float> descales;  // scale_arg -> descale
};
HostInputs host_inputs(const Profile& p, const Problem& prob, std::uint64_t seed, int trial);

// A data reference's input for buffer `b`: the file's values in b's dtype (scaled fp8: encoded
// with its own scale, returned in *descale). Throws ReferenceError naming the buffer and file.
std::vector<std::uint8_t> data_input_bytes(const BufferSpec& b, const std::filesystem::path& file,
                                           std::int64_t elements, float* descale);

// What identifies a non-kernel reference's answer for one (problem, seed, trial) within a process.
std::string reference_key(const Profile& p, const Problem& prob, std::uint64_t seed, int trial);

// The expected outputs of a command or data reference: one HostTensor per output and inout
// buffer, in profile order, in the buffer's dtype. Kept for the process per reference_key; a
// command's result also on disk under `cache_dir` (none when empty). Throws ReferenceError.
std::vector<HostTensor> reference_outputs(const Profile& p, const Problem& prob, std::uint64_t seed, int trial,
                                          const std::filesystem::path& cache_dir);
// The command's part of that without the process's memo: the disk cache, else one run.
std::vector<HostTensor> run_reference_command(const Profile& p, const Problem& prob, std::uint64_t seed, int trial,
                                              const std::filesystem::path& cache_dir);

}  // namespace evo
