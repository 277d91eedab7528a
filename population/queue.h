// The work queue that lets evo workers on many hosts share one run through PostgreSQL (issue 20).
// The coordinator enqueues candidates; each worker claims one at a time with
// SELECT ... FOR UPDATE SKIP LOCKED, so two workers never hold the same candidate. A claim carries
// a lease and a token. A worker killed mid-candidate stops renewing; when its lease ends the
// candidate is claimable again, under a new token. Completing a claim is conditional on the token,
// so a worker whose claim was taken over cannot post its result as well: every candidate is done
// exactly once. Schema: kQueueSchema in queue.cpp (PostgreSQL only: in the store's own database when
// the store is on PostgreSQL, else on the server a SQLite store's coordinator was given).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "population/postgres.h"

namespace evo {

struct Claim {
  std::int64_t id = 0;          // the queue row
  std::int64_t token = 0;       // which claim of that row this is (1 for the first)
  std::string payload;          // what the coordinator enqueued (a candidate as JSON)
};

struct QueueItem {
  std::int64_t id = 0;
  std::string payload, result, done_by;
  std::int64_t claims = 0;      // how many times it was claimed (> 1: a lease ran out)
};

// A run as the queue knows it: workers serve only an open one.
enum class QueueRunState { Unknown, Open, Finished };

struct QueueCounts {
  std::int64_t pending = 0, claimed = 0, done = 0;
};

class WorkQueue {
 public:
  // Create: makes the queue's tables where they are missing (several processes may race to: a lock
  // serialises them). Existing: uses them as they are (a second connection, a worker's check).
  enum class Schema { Create, Existing };
  explicit WorkQueue(pg::Conn& conn, Schema schema = Schema::Create);
  // Whether the server holds an evo work queue at all; creates nothing (a worker for a run that
  // cannot exist writes nothing).
  static bool exists(pg::Conn& conn);

  // The coordinator opens its run before enqueuing and finishes it when done; workers exit then.
  // create_run numbers a new run from the queue's own sequence and keeps `spec` (what a worker
  // needs to evaluate its candidates; cli/cmd_queue.cpp); open_run opens one under a given id.
  std::int64_t create_run(const std::string& spec);
  // A resumed run keeps its number (a store in the same database numbers its runs from the queue's
  // sequence): open again with this session's spec. What the session before left uncollected,
  // pending, claimed or posted, is dropped: the resumed run proposes anew, as a run on one host does.
  void reopen_run(std::int64_t run, const std::string& spec);
  std::optional<std::string> run_spec(std::int64_t run);
  void open_run(std::int64_t run);
  void finish_run(std::int64_t run);
  QueueRunState run_state(std::int64_t run);

  std::int64_t enqueue(std::int64_t run, const std::string& payload);
  // The oldest pending candidate of the run, or one whose lease ended; nullopt when none is free
  // or the run is finished.
  // Commits by itself: the claim is visible to every other worker at once.
  std::optional<Claim> claim(std::int64_t run, const std::string& worker, double lease_s);
  // Extends a lease still held (a long measurement); false when the claim was lost.
  bool renew(const Claim& c, double lease_s);
  // Marks the claim done with its result. Call inside a pg::Txn on the same connection, with the
  // candidate's evaluation written in that transaction too; commit only when this returns true.
  // False: the lease ended and another worker holds (or finished) the candidate now.
  bool complete(const Claim& c, const std::string& result);
  // Gives a claim still held back to the queue, pending for any worker at once (a worker stopping
  // with candidates it has not measured); false when it was no longer this claim's.
  bool release(const Claim& c);

  // Done items of the run with id > after, in id order.
  std::vector<QueueItem> done_after(std::int64_t run, std::int64_t after);
  // Done items the coordinator has not taken yet, in id order, marked taken in the same statement.
  std::vector<QueueItem> take_done(std::int64_t run);
  QueueCounts counts(std::int64_t run);

 private:
  pg::Conn& c_;
};

}  // namespace evo
