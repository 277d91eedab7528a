// NumPy's .npy files, read and written without NumPy: the arrays a command reference exchanges
// with its script and the data a profile stores beside it (engine/reference.h).
//
// Format (numpy.lib.format): the magic "\x93NUMPY", a version (1.0, 2.0 or 3.0), the header's
// length (2 bytes little-endian in 1.0, 4 bytes after), then the header, a Python dict literal
// such as {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with spaces to a
// multiple of 64 bytes, then the raw elements. evo reads the plain little-endian numeric dtypes
// in C order and refuses the rest (big-endian, Fortran order, structured or object arrays) with a
// line naming the file and what it found. It writes version 1.0 (2.0 for a header over 64 KB).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace evo {

struct NpyArray {
  std::string descr;                // "<f4", "<f8", "<f2", "<i4", "<i8", "|u1", "|b1" ...
  std::vector<std::int64_t> shape;  // () is a 0-d array: one element
  std::vector<std::uint8_t> bytes;  // the elements, C order, little-endian
  std::int64_t elements() const;
};

// Bytes of one element of a supported descr ("<f4" -> 4); 0 for one evo does not read.
std::size_t npy_item_bytes(const std::string& descr);
// NumPy's name of a supported descr ("<f4" -> "float32"); the descr itself otherwise.
std::string npy_type_name(const std::string& descr);
// "(1000,)" or "(4, 8)", as NumPy prints a shape.
std::string npy_shape_text(const std::vector<std::int64_t>& shape);

// Throw UserError("<path>: <what>") for a missing or malformed file or an unsupported array.
NpyArray read_npy(const std::filesystem::path& path);
NpyArray read_npy_header(const std::filesystem::path& path);  // descr and shape; bytes left empty
void write_npy(const std::filesystem::path& path, const NpyArray& a);

// Every element as a double (any supported descr; i64/u64 beyond 2^53 lose precision).
std::vector<double> npy_values(const NpyArray& a);

}  // namespace evo
