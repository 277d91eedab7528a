// Coordinator and worker over the PostgreSQL work queue (population/queue_evaluator.h).
#include "population/queue_evaluator.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/error.h"
#include "engine/evaluation_json.h"
#include "population/json_text.h"

namespace evo {

using nlohmann::json;

namespace {

// How often an idle side looks at the queue again: short next to any real compile or measurement.
constexpr auto kPoll = std::chrono::milliseconds(20);

}  // namespace

QueueEvaluator::QueueEvaluator(const std::string& url, std::int64_t queue_run, Evaluator& local, std::size_t slots)
    : conn_(url), queue_(conn_), run_(queue_run), local_(local), slots_(slots ? slots : 1) {
  queue_.open_run(run_);
}

QueueEvaluator::~QueueEvaluator() {
  try {
    queue_.finish_run(run_);
  } catch (const UserError&) {
    // The server is gone: the workers find it gone too, and stop.
  }
}

void QueueEvaluator::submit(const Candidate& c) {
  queue_.enqueue(run_, json{{"config", c.config}, {"origin", c.origin}}.dump());
}

std::vector<Prepared> QueueEvaluator::collect(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    std::vector<Prepared> out;
    for (const auto& item : queue_.take_done(run_)) {
      Prepared p;
      const json in = json::parse(item.payload);
      p.candidate.config = in.at("config").get<Config>();
      p.candidate.origin = in.at("origin").get<Origin>();
      try {
        p.eval = text_to_nonfinite(json::parse(item.result)).get<Evaluation>();
      } catch (const json::exception& e) {
        throw UserError(conn_.name() + ": work queue row " + std::to_string(item.id) + ": result: " + e.what());
      }
      p.needs_gpu = false;
      out.push_back(std::move(p));
    }
    if (!out.empty() || std::chrono::steady_clock::now() >= deadline) return out;
    std::this_thread::sleep_for(kPoll);
  }
}

void require_open_run(pg::Conn& conn, std::int64_t queue_run) {
  const std::string run = "run " + std::to_string(queue_run);
  if (!WorkQueue::exists(conn))
    throw UserError(conn.name() + ": no " + run + " in the work queue (no evo work queue on this server yet)");
  switch (WorkQueue(conn, WorkQueue::Schema::Existing).run_state(queue_run)) {
    case QueueRunState::Unknown: throw UserError(conn.name() + ": no " + run + " in the work queue");
    case QueueRunState::Finished: throw UserError(conn.name() + ": " + run + " is finished; nothing to do");
    case QueueRunState::Open: break;
  }
}

WorkerStats serve_queue(const std::string& url, std::int64_t queue_run, Evaluator& evaluator,
                        const std::string& worker, double lease_s, const std::atomic<bool>* stop) {
  pg::Conn conn(url);
  require_open_run(conn, queue_run);
  WorkQueue queue(conn, WorkQueue::Schema::Existing);
  // The lease is renewed on a connection of its own while a candidate compiles and runs, so a
  // long evaluation never loses its claim (one renewer at a time uses it).
  pg::Conn renew_conn(url);
  WorkQueue renew_queue(renew_conn, WorkQueue::Schema::Existing);
  WorkerStats stats;
  while (!(stop && stop->load())) {
    const auto claim = queue.claim(queue_run, worker, lease_s);
    if (!claim) {
      if (queue.run_state(queue_run) != QueueRunState::Open) break;
      std::this_thread::sleep_for(kPoll);
      continue;
    }
    const json in = json::parse(claim->payload);
    Candidate c{in.at("config").get<Config>(), in.at("origin").get<Origin>()};
    // Renewed every third of a lease while it is evaluated; a killed worker stops renewing, and
    // after at most one lease the candidate is another worker's.
    std::mutex m;
    std::condition_variable cv;
    bool evaluated = false;
    std::thread renewer([&] {
      try {
        std::unique_lock<std::mutex> lock(m);
        while (!cv.wait_for(lock, std::chrono::duration<double>(lease_s / 3), [&] { return evaluated; }))
          if (!renew_queue.renew(*claim, lease_s)) break;  // taken over: the post below finds out
      } catch (const UserError&) {
        // The server went away: completing fails below, with the message.
      }
    });
    Evaluation e;
    try {
      e = evaluator.evaluate(c);
    } catch (...) {
      { std::lock_guard<std::mutex> lock(m); evaluated = true; }
      cv.notify_all();
      renewer.join();
      throw;
    }
    { std::lock_guard<std::mutex> lock(m); evaluated = true; }
    cv.notify_all();
    renewer.join();
    pg::Txn txn(conn, "cannot post an evaluation");
    if (queue.complete(*claim, nonfinite_to_text(json(e)).dump())) {
      txn.commit();
      ++stats.posted;
    } else {
      ++stats.lost;
    }
  }
  return stats;
}

}  // namespace evo
