// Coordinator and worker over the PostgreSQL work queue (population/queue_evaluator.h).
#include "population/queue_evaluator.h"

#include <chrono>
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "engine/error.h"
#include "engine/evaluation_json.h"
#include "engine/space.h"  // defines: config_hash
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
  json payload{{"config", c.config}, {"origin", c.origin}};
  if (metrics_max_p50_us_ > 0) payload["metrics_max_p50_us"] = metrics_max_p50_us_;
  if (metrics_wait_max_p50_us_ > 0) payload["metrics_wait_max_p50_us"] = metrics_wait_max_p50_us_;
  if (!metrics_during_run_) payload["metrics_deferred"] = true;
  unsent_.push_back(payload.dump());
}

std::vector<Prepared> QueueEvaluator::collect(double timeout_s) {
  if (!unsent_.empty()) {
    pg::Txn txn(conn_, "cannot enqueue candidates");
    for (const auto& payload : unsent_) queue_.enqueue(run_, payload);
    txn.commit();
    unsent_.clear();
  }
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
  // Leases are renewed on a connection of their own while candidates compile and run, so a long
  // evaluation never loses its claim; verdicts are posted on a third, so that the commit (the
  // server's fsync) of one overlaps the next measurement instead of holding up the GPU.
  pg::Conn renew_conn(url), post_conn(url);
  WorkQueue renew_queue(renew_conn, WorkQueue::Schema::Existing), post_queue(post_conn, WorkQueue::Schema::Existing);
  WorkerStats stats;

  // A pipeline, as a run on one host is: claims in hand so that the evaluator's compile pool works
  // ahead while the GPU measures, each under its own lease. At most its compile slots and one for
  // the GPU; fewer while compiles keep up: claims compiled and waiting for this GPU are candidates
  // another worker's idle GPU cannot take, and at a run's end they were its last seconds (2 x H200,
  // sdpa_fp8 from a warm cache: 160 and 192 candidates measured by two workers holding 33 each).
  const std::size_t ahead = std::max<std::size_t>(2, evaluator.compile_slots() + evaluator.lanes());
  constexpr std::size_t kReady = 2;  // compiled, waiting for the GPU: enough that it never waits
  std::size_t target = std::min(ahead, kReady + 1);  // claims in hand not yet measured
  std::mutex m;  // guards `held`, `to_post` and `post_failed` between this thread and the two below
  std::condition_variable cv;
  bool done = false;
  std::multimap<std::string, Claim> held;  // config hash -> its claim, until its verdict is posted
  std::deque<std::pair<Claim, std::string>> to_post;  // measured: the claim and its verdict's text
  std::exception_ptr post_failed;
  std::thread renewer([&] {
    std::unique_lock<std::mutex> lock(m);
    while (!cv.wait_for(lock, std::chrono::duration<double>(lease_s / 3), [&] { return done; })) {
      // Renewed outside the lock: the round trips to the server never hold up a post. A claim
      // posted meanwhile is no longer 'claimed', and its renewal changes nothing.
      std::vector<Claim> now;
      for (const auto& [hash, claim] : held) now.push_back(claim);
      lock.unlock();
      for (const Claim& claim : now) {
        try {
          renew_queue.renew(claim, lease_s);  // taken over: its post finds out
        } catch (const UserError&) {
          // The server went away: posting fails below, with the message.
        }
      }
      lock.lock();
    }
  });
  // Each verdict completes its claim in a transaction of its own, in the order measured; a claim
  // leaves `held` (and renewal) only once posted, so a worker killed before then leaves it to run
  // out and be measured again elsewhere, as before.
  std::thread poster([&] {
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
      cv.wait(lock, [&] { return done || !to_post.empty(); });
      if (to_post.empty()) return;  // done, and everything posted
      auto [claim, result] = std::move(to_post.front());
      to_post.pop_front();
      lock.unlock();
      bool completed = false;
      try {
        pg::Txn txn(post_conn, "cannot post an evaluation");
        completed = post_queue.complete(claim, result);
        if (completed) txn.commit();
      } catch (...) {
        lock.lock();
        post_failed = std::current_exception();  // the main loop rethrows it at its next post
        return;
      }
      lock.lock();
      for (auto it = held.begin(); it != held.end(); ++it)
        if (it->second.id == claim.id && it->second.token == claim.token) {
          held.erase(it);
          break;
        }
      ++(completed ? stats.posted : stats.lost);
    }
  });
  auto stop_threads = [&] {
    { std::lock_guard<std::mutex> lock(m); done = true; }
    cv.notify_all();
    poster.join();  // posts what is left first
    renewer.join();
  };
  auto post = [&](const Prepared& p, const Evaluation& e) {
    std::string result = nonfinite_to_text(json(e)).dump();
    std::lock_guard<std::mutex> lock(m);
    if (post_failed) std::rethrow_exception(post_failed);
    auto it = held.find(config_hash(p.candidate.config));
    if (it == held.end()) return;  // nothing submitted it: cannot happen, and nothing to post
    // Queued once: a second candidate of the same configuration (it cannot be claimed twice) would
    // find this claim again, so the entry is re-keyed out of the lookup.
    Claim claim = it->second;
    held.erase(it);
    held.emplace(std::string(), claim);
    to_post.emplace_back(claim, std::move(result));
    cv.notify_all();
  };
  double metrics_max = 0, metrics_wait_max = 0;  // the coordinator's, as its candidates carry them
  auto tighten = [](double& kept, double given) {
    if (given > 0 && (kept <= 0 || given < kept)) kept = given;
  };
  try {
    bool open = true;
    std::deque<Prepared> to_measure;
    std::size_t unmeasured = 0;  // claimed and submitted, not yet measured or posted
    while (!(stop && stop->load())) {
      // A. Claims topped up to `target`; each goes straight to the evaluator's compile pool.
      bool claimed_none = !open;
      while (open && unmeasured < target) {
        const auto claim = queue.claim(queue_run, worker, lease_s);
        if (!claim) {
          claimed_none = true;
          break;
        }
        const json in = json::parse(claim->payload);
        Candidate c{in.at("config").get<Config>(), in.at("origin").get<Origin>()};
        // The run's best only improves, so the latest enqueued thresholds are the tightest: kept
        // for every later measurement here, whichever candidate brought them.
        tighten(metrics_max, in.value("metrics_max_p50_us", 0.0));
        tighten(metrics_wait_max, in.value("metrics_wait_max_p50_us", 0.0));
        // The coordinator profiles its run's best at its end: the worker profiles nothing meanwhile.
        if (in.value("metrics_deferred", false)) evaluator.set_metrics_during_run(false);
        { std::lock_guard<std::mutex> lock(m); held.emplace(config_hash(c.config), *claim); }
        ++unmeasured;
        evaluator.submit(c);
      }
      if (unmeasured == 0) {
        if (queue.run_state(queue_run) != QueueRunState::Open) break;
        std::this_thread::sleep_for(kPoll);
        continue;
      }
      // B. Whatever the pool finished: verdicts without the GPU posted now, the rest measured in
      // order, one at a time, while the pool goes on compiling in its own processes.
      // With nothing to measure, wait for the pool (a little: a claim may turn up meanwhile).
      const double wait = to_measure.empty() ? std::chrono::duration<double>(kPoll).count() : 0.0;
      for (auto& p : evaluator.collect(wait)) {
        if (p.needs_gpu) {
          to_measure.push_back(std::move(p));
        } else {
          --unmeasured;
          post(p, p.eval);
        }
      }
      // The GPU is about to wait for a compile: hold one more claim ahead. Everything in hand
      // compiled, and more of it than the GPU needs: one fewer (not while compiles are in flight:
      // a pool finishes them in bursts, which say nothing of how many the GPU needs ahead).
      if (to_measure.empty() && unmeasured > 0) target = std::min(ahead, target + 1);
      else if (to_measure.size() == unmeasured && to_measure.size() > kReady && target > kReady + 1) --target;
      if (!to_measure.empty()) {
        Prepared p = std::move(to_measure.front());
        to_measure.pop_front();
        if (metrics_max > 0) evaluator.set_metrics_max_p50_us(metrics_max);
        if (metrics_wait_max > 0) evaluator.set_metrics_wait_max_p50_us(metrics_wait_max);
        const Evaluation e = evaluator.measure(p, 0);
        --unmeasured;
        post(p, e);
      }
      if (claimed_none && queue.run_state(queue_run) != QueueRunState::Open) open = false;
    }
  } catch (...) {
    stop_threads();
    throw;
  }
  stop_threads();
  if (post_failed) std::rethrow_exception(post_failed);
  // Stopped between measurements: what is still held (compiling, or compiled and waiting for the
  // GPU) goes back to the queue now, for the other workers, rather than after its lease.
  for (const auto& [hash, claim] : held) {
    if (queue.release(claim)) ++stats.released;
  }
  return stats;
}

}  // namespace evo
