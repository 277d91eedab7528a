#include "engine/hash.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace evo {
namespace {

constexpr std::array<std::uint32_t, 64> K = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress(std::array<std::uint32_t, 8>& h, const unsigned char* block) {
  std::uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = (std::uint32_t(block[4 * i]) << 24) | (std::uint32_t(block[4 * i + 1]) << 16) |
           (std::uint32_t(block[4 * i + 2]) << 8) | std::uint32_t(block[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  auto [a, b, c, d, e, f, g, hh] = h;
  for (int i = 0; i < 64; ++i) {
    std::uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
    std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

// XXH64's primes and steps (xxhash.h, XXH64_round / XXH64_mergeRound / XXH64_avalanche).
constexpr std::uint64_t P1 = 0x9E3779B185EBCA87ULL, P2 = 0xC2B2AE3D27D4EB4FULL, P3 = 0x165667B19E3779F9ULL,
                        P4 = 0x85EBCA77C2B2AE63ULL, P5 = 0x27D4EB2F165667C5ULL;

inline std::uint64_t rotl64(std::uint64_t x, int n) { return (x << n) | (x >> (64 - n)); }
inline std::uint64_t read64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];  // little-endian, whatever the host
  return v;
}
inline std::uint32_t read32(const unsigned char* p) {
  return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) | (std::uint32_t(p[3]) << 24);
}
inline std::uint64_t round64(std::uint64_t acc, std::uint64_t in) { return rotl64(acc + in * P2, 31) * P1; }
inline std::uint64_t merge64(std::uint64_t acc, std::uint64_t v) { return (acc ^ round64(0, v)) * P1 + P4; }

}  // namespace

Xxh64::Xxh64(std::uint64_t seed) : seed_(seed), lanes_{seed + P1 + P2, seed + P2, seed, seed - P1} {}

void Xxh64::stripe(const unsigned char* p) {
  // Four lanes over 32-byte stripes: the loop that makes it fast.
  lanes_[0] = round64(lanes_[0], read64(p));
  lanes_[1] = round64(lanes_[1], read64(p + 8));
  lanes_[2] = round64(lanes_[2], read64(p + 16));
  lanes_[3] = round64(lanes_[3], read64(p + 24));
}

Xxh64& Xxh64::update(std::string_view data) {
  if (data.empty()) return *this;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const unsigned char* const end = p + data.size();
  total_ += data.size();
  if (pending_bytes_ + data.size() < 32) {
    std::memcpy(pending_ + pending_bytes_, p, data.size());
    pending_bytes_ += data.size();
    return *this;
  }
  if (pending_bytes_ > 0) {  // complete the stripe begun by earlier pieces
    const std::size_t take = 32 - pending_bytes_;
    std::memcpy(pending_ + pending_bytes_, p, take);
    stripe(pending_);
    p += take;
    pending_bytes_ = 0;
  }
  for (; p + 32 <= end; p += 32) stripe(p);
  pending_bytes_ = static_cast<std::size_t>(end - p);
  if (pending_bytes_ > 0) std::memcpy(pending_, p, pending_bytes_);
  return *this;
}

std::uint64_t Xxh64::digest() const {
  const auto& [v1, v2, v3, v4] = lanes_;
  std::uint64_t h;
  if (total_ >= 32) {
    h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
    h = merge64(merge64(merge64(merge64(h, v1), v2), v3), v4);
  } else {
    h = seed_ + P5;
  }
  h += total_;
  const unsigned char* p = pending_;
  const unsigned char* const end = pending_ + pending_bytes_;
  for (; p + 8 <= end; p += 8) h = rotl64(h ^ round64(0, read64(p)), 27) * P1 + P4;
  if (p + 4 <= end) {
    h = rotl64(h ^ (std::uint64_t(read32(p)) * P1), 23) * P2 + P3;
    p += 4;
  }
  for (; p < end; ++p) h = rotl64(h ^ (*p * P5), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

std::uint64_t xxh64(std::string_view data, std::uint64_t seed) { return Xxh64(seed).update(data).digest(); }

std::string digest_hex(std::uint64_t digest) {
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(digest));
  return out;
}

std::string xxh64_hex(std::string_view data) { return digest_hex(xxh64(data)); }

std::string sha256_hex(std::string_view data) {
  std::array<std::uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t n = data.size(), i = 0;
  for (; i + 64 <= n; i += 64) compress(h, p + i);
  unsigned char tail[128] = {};
  std::size_t rest = n - i;
  for (std::size_t j = 0; j < rest; ++j) tail[j] = p[i + j];
  tail[rest] = 0x80;
  std::size_t len = rest + 1 + 8 <= 64 ? 64 : 128;
  std::uint64_t bits = std::uint64_t(n) * 8;
  for (int j = 0; j < 8; ++j) tail[len - 1 - j] = static_cast<unsigned char>(bits >> (8 * j));
  compress(h, tail);
  if (len == 128) compress(h, tail + 64);
  char out[65];
  for (int j = 0; j < 8; ++j) std::snprintf(out + 8 * j, 9, "%08x", h[j]);
  return std::string(out, 64);
}

}  // namespace evo
