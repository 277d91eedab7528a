// The PostgreSQL work queue (population/queue.h).
#include "population/queue.h"

#include <algorithm>
#include <cstdio>

#include "population/schema.h"  // defines: kPgSchemaLock

namespace evo {

namespace {

// ---- schema (PostgreSQL). One table; states go pending -> claimed -> done, and back from claimed
// to claimable (not rewritten: a claimed row whose lease_until has passed) when a worker dies.
constexpr const char* kQueueSchema = R"sql(
CREATE TABLE IF NOT EXISTS work_queue (
  id          BIGSERIAL PRIMARY KEY,
  run_id      BIGINT NOT NULL,
  payload     TEXT NOT NULL,                 -- the candidate, as the coordinator enqueued it
  state       TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'claimed', 'done')),
  claimed_by  TEXT,                          -- the worker holding (or last holding) it
  claim_token BIGINT NOT NULL DEFAULT 0,     -- bumped by every claim; completing needs the current one
  claims      INTEGER NOT NULL DEFAULT 0,    -- > 1: a lease ran out and another worker took over
  lease_until TIMESTAMPTZ,                   -- claimable again after this while still 'claimed'
  result      TEXT,                          -- what the worker posted
  collected   BOOLEAN NOT NULL DEFAULT false, -- the coordinator has taken the result
  enqueued_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  done_at     TIMESTAMPTZ
);
CREATE TABLE IF NOT EXISTS work_runs (
  run_id   BIGINT PRIMARY KEY,
  finished BOOLEAN NOT NULL DEFAULT false     -- workers of a finished run exit
);
-- What a worker needs to evaluate the run's candidates as the coordinator would (evo run --queue):
-- profile, objective problem, replay landscape, device model. Added after the first version.
ALTER TABLE work_runs ADD COLUMN IF NOT EXISTS spec TEXT;
CREATE SEQUENCE IF NOT EXISTS work_run_ids;
CREATE INDEX IF NOT EXISTS work_queue_open ON work_queue (run_id, state, id);
)sql";


std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}

}  // namespace

WorkQueue::WorkQueue(pg::Conn& conn, Schema schema) : c_(conn) {
  // A queue that has the current schema is left alone: even IF NOT EXISTS, the DDL takes strong
  // locks (ALTER TABLE: access exclusive on work_runs; CREATE INDEX: share on work_queue), and a
  // worker joining late would deadlock with the others' claims, which read both tables.
  if (schema == Schema::Existing || exists(c_)) return;
  pg::Txn txn(c_, "cannot create the work queue");
  c_.exec("SELECT pg_advisory_xact_lock($1)", {std::to_string(schema::kPgSchemaLock)}, "cannot create the work queue");
  if (!exists(c_)) c_.exec(kQueueSchema, "cannot create the work queue");  // or another process just did
  txn.commit();
}

bool WorkQueue::exists(pg::Conn& conn) {
  // By its newest part: a queue made by an older evo is brought up to date by WorkQueue (Create).
  auto r = conn.exec("SELECT 1 FROM information_schema.columns WHERE table_name = 'work_runs' AND column_name = 'spec'"
                     " AND table_schema = current_schema()",
                     "cannot read the work queue");
  return r.rows() > 0;
}

void WorkQueue::open_run(std::int64_t run) {
  c_.exec("INSERT INTO work_runs (run_id) VALUES ($1) ON CONFLICT (run_id) DO UPDATE SET finished = false",
          {std::to_string(run)}, "cannot open run in the work queue");
}

void WorkQueue::finish_run(std::int64_t run) {
  c_.exec("UPDATE work_runs SET finished = true WHERE run_id = $1", {std::to_string(run)},
          "cannot finish run in the work queue");
}

std::int64_t WorkQueue::create_run(const std::string& spec) {
  auto r = c_.exec("INSERT INTO work_runs (run_id, spec) VALUES (nextval('work_run_ids'), $1) RETURNING run_id", {spec},
                   "cannot open a run in the work queue");
  return r.get_int(0, 0);
}

void WorkQueue::reopen_run(std::int64_t run, const std::string& spec) {
  pg::Txn txn(c_, "cannot reopen run in the work queue");
  c_.exec("INSERT INTO work_runs (run_id, spec) VALUES ($1, $2)"
          " ON CONFLICT (run_id) DO UPDATE SET finished = false, spec = excluded.spec",
          {std::to_string(run), spec}, "cannot reopen run in the work queue");
  // A worker still holding one of these finds its claim gone and counts it lost.
  c_.exec("DELETE FROM work_queue WHERE run_id = $1 AND NOT collected", {std::to_string(run)},
          "cannot reopen run in the work queue");
  txn.commit();
}

std::optional<std::string> WorkQueue::run_spec(std::int64_t run) {
  auto r = c_.exec("SELECT spec FROM work_runs WHERE run_id = $1 AND spec IS NOT NULL", {std::to_string(run)},
                   "cannot read run from the work queue");
  if (r.rows() == 0) return std::nullopt;
  return r.get_str(0, 0);
}

QueueRunState WorkQueue::run_state(std::int64_t run) {
  auto r = c_.exec("SELECT finished FROM work_runs WHERE run_id = $1", {std::to_string(run)},
                   "cannot read run from the work queue");
  if (r.rows() == 0) return QueueRunState::Unknown;
  return r.get_str(0, 0) == "t" ? QueueRunState::Finished : QueueRunState::Open;
}

std::int64_t WorkQueue::enqueue(std::int64_t run, const std::string& payload) {
  auto r = c_.exec("INSERT INTO work_queue (run_id, payload) VALUES ($1, $2) RETURNING id",
                   {std::to_string(run), payload}, "cannot enqueue candidate");
  return r.get_int(0, 0);
}

std::optional<Claim> WorkQueue::claim(std::int64_t run, const std::string& worker, double lease_s) {
  // The inner SELECT locks one free row and skips rows other workers are claiming this instant;
  // the UPDATE takes it under a fresh token. One statement: its own transaction. Nothing of a
  // finished run is claimed: candidates left in flight when the coordinator stopped have nobody
  // to record them.
  auto r = c_.exec(
      "UPDATE work_queue q SET state = 'claimed', claimed_by = $2, claim_token = q.claim_token + 1,"
      " claims = q.claims + 1, lease_until = now() + make_interval(secs => $3::double precision)"
      " WHERE q.id = (SELECT id FROM work_queue WHERE run_id = $1"
      "   AND (state = 'pending' OR (state = 'claimed' AND lease_until < now()))"
      "   AND NOT EXISTS (SELECT 1 FROM work_runs r WHERE r.run_id = $1 AND r.finished)"
      "   ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)"
      " RETURNING q.id, q.claim_token, q.payload",
      {std::to_string(run), worker, num(lease_s)}, "cannot claim a candidate");
  if (r.rows() == 0) return std::nullopt;
  return Claim{r.get_int(0, 0), r.get_int(0, 1), r.get_str(0, 2)};
}

bool WorkQueue::renew(const Claim& c, double lease_s) {
  auto r = c_.exec(
      "UPDATE work_queue SET lease_until = now() + make_interval(secs => $3::double precision)"
      " WHERE id = $1 AND claim_token = $2 AND state = 'claimed'",
      {std::to_string(c.id), std::to_string(c.token), num(lease_s)}, "cannot renew a claim");
  return r.affected() == 1;
}

bool WorkQueue::complete(const Claim& c, const std::string& result) {
  // Conditional on the token, not on the lease: a lease that ran out with nobody taking over
  // still completes (the candidate is measured once either way).
  auto r = c_.exec(
      "UPDATE work_queue SET state = 'done', result = $3, done_at = now()"
      " WHERE id = $1 AND claim_token = $2 AND state = 'claimed'",
      {std::to_string(c.id), std::to_string(c.token), result}, "cannot complete a claim");
  return r.affected() == 1;
}

bool WorkQueue::release(const Claim& c) {
  auto r = c_.exec(
      "UPDATE work_queue SET state = 'pending', lease_until = now()"
      " WHERE id = $1 AND claim_token = $2 AND state = 'claimed'",
      {std::to_string(c.id), std::to_string(c.token)}, "cannot release a claim");
  return r.affected() == 1;
}

std::vector<QueueItem> WorkQueue::done_after(std::int64_t run, std::int64_t after) {
  auto r = c_.exec(
      "SELECT id, payload, result, claimed_by, claims FROM work_queue"
      " WHERE run_id = $1 AND state = 'done' AND id > $2 ORDER BY id",
      {std::to_string(run), std::to_string(after)}, "cannot read finished candidates");
  std::vector<QueueItem> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back({r.get_int(i, 0), r.get_str(i, 1), r.get_str(i, 2), r.get_str(i, 3), r.get_int(i, 4)});
  return out;
}

std::vector<QueueItem> WorkQueue::take_done(std::int64_t run) {
  // Done rows finish in any order (a taken-over claim finishes late): each is taken by the flag,
  // not by a high-water mark of ids.
  auto r = c_.exec(
      "UPDATE work_queue SET collected = true WHERE run_id = $1 AND state = 'done' AND NOT collected"
      " RETURNING id, payload, result, claimed_by, claims",
      {std::to_string(run)}, "cannot take finished candidates");
  std::vector<QueueItem> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back({r.get_int(i, 0), r.get_str(i, 1), r.get_str(i, 2), r.get_str(i, 3), r.get_int(i, 4)});
  std::sort(out.begin(), out.end(), [](const QueueItem& a, const QueueItem& b) { return a.id < b.id; });
  return out;
}

QueueCounts WorkQueue::counts(std::int64_t run) {
  auto r = c_.exec(
      "SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'claimed'),"
      " count(*) FILTER (WHERE state = 'done') FROM work_queue WHERE run_id = $1",
      {std::to_string(run)}, "cannot count the work queue");
  return {r.get_int(0, 0), r.get_int(0, 1), r.get_int(0, 2)};
}

}  // namespace evo
