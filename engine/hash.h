// Content hashes: SHA-256 (FIPS 180-4) for cache keys and config identities, and XXH64 for the
// many megabytes of GREEN's stored inputs and outputs (a check that bytes are the ones written,
// about thirty times SHA-256's speed; no defence against anyone). Neither is in evo's
// dependencies, both are small enough to carry; checked against the FIPS and xxHash vectors.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace evo {

std::string sha256_hex(std::string_view data);            // 64 hex digits
inline std::string short_hash(std::string_view data) {    // 16 hex digits, for ids users read
  return sha256_hex(data).substr(0, 16);
}

std::uint64_t xxh64(std::string_view data, std::uint64_t seed = 0);  // XXH64 (xxHash 0.8)
std::string xxh64_hex(std::string_view data);                        // 16 hex digits
std::string digest_hex(std::uint64_t digest);                        // a digest as xxh64_hex writes it

// XXH64 fed in pieces: the digest of their concatenation, without joining them first (a stored
// entry of several outputs of megabytes each is hashed as one payload).
class Xxh64 {
 public:
  explicit Xxh64(std::uint64_t seed = 0);
  Xxh64& update(std::string_view data);
  std::uint64_t digest() const;

 private:
  void stripe(const unsigned char* p);  // one 32-byte stripe into the four lanes
  std::uint64_t seed_, total_ = 0;
  std::uint64_t lanes_[4];
  unsigned char pending_[32];  // the bytes of a stripe not complete yet
  std::size_t pending_bytes_ = 0;
};

}  // namespace evo
