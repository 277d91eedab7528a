// The population database's schema and how an older one is brought forward (schema.cpp): one
// text for SQLite and PostgreSQL (population/sql.h maps the types). PRAGMA application_id marks a
// SQLite file as evo's and PRAGMA user_version is its schema version; a PostgreSQL database keeps
// both in its table evo_meta.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

namespace evo::schema {

constexpr std::int32_t kApplicationId = 0x65766F00;  // "evo\0"

// On PostgreSQL: the advisory lock that serialises creating evo's tables in one database, the
// store's migrations and the work queue's (population/queue.cpp) alike. Both create the sequence
// work_run_ids, and IF NOT EXISTS does not hold against a creator in another session.
constexpr std::int64_t kPgSchemaLock = 6573766;

// migrations()[v] takes a database from schema version v to v + 1; [0] creates v1 in an empty
// one. They run in order, all in one transaction, when a database is opened.
std::span<const std::string_view> migrations();

inline int version() { return static_cast<int>(migrations().size()); }  // this binary's

}  // namespace evo::schema
