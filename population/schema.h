// The population database's schema and how an older file is brought forward (schema.cpp).
// PRAGMA application_id marks a file as evo's; PRAGMA user_version is its schema version.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

namespace evo::schema {

constexpr std::int32_t kApplicationId = 0x65766F00;  // "evo\0"

// migrations()[v] takes a database from schema version v to v + 1; [0] creates v1 in an empty
// file. They run in order, all in one transaction, when a database is opened.
std::span<const std::string_view> migrations();

inline int version() { return static_cast<int>(migrations().size()); }  // this binary's

}  // namespace evo::schema
