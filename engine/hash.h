// Content hashes: SHA-256 (FIPS 180-4) for cache keys and config identities. Not in any of
// evo's dependencies, and small enough to carry; checked against the FIPS test vectors.
#pragma once
#include <string>
#include <string_view>

namespace evo {

std::string sha256_hex(std::string_view data);            // 64 hex digits
inline std::string short_hash(std::string_view data) {    // 16 hex digits, for ids users read
  return sha256_hex(data).substr(0, 16);
}

}  // namespace evo
