// `evo pool start | stop | status`: warm per-GPU workers kept between runs (engine/pool.h).
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "engine/error.h"
#include "engine/gpu_evaluator.h"  // defines: visible_gpus_guess
#include "engine/pool.h"
#include "engine/worker.h"  // defines: worker_listen

namespace evo::cli {

namespace {
void print_workers(const PoolRecord& r, bool json) {
  const std::vector<PoolWorkerState> ws = pool_workers(r);
  if (json) {
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& w : ws)
      devices.push_back({{"gpu", w.device.gpu}, {"visible", w.device.visible}, {"socket", w.device.socket},
                         {"role", role_name(w.device.role)}, {"pid", w.pid}, {"busy", w.busy}, {"profiler_warm", w.profiler_warm}, {"name", w.name},
                         {"error", w.error}});
    std::cout << nlohmann::json{{"pool", pool_dir().string()}, {"supervisor", r.supervisor}, {"binary", r.binary},
                                {"started", r.started}, {"idle_exit_s", r.idle_exit_s}, {"devices", devices}}
                     .dump(2)
              << '\n';
    return;
  }
  std::cout << "pool " << pool_dir().string() << ": supervisor " << r.supervisor << ", started " << r.started << ", "
            << r.binary << '\n';
  for (const auto& w : ws) {
    const std::string worker = w.device.role == WorkerRole::Profile ? "profiling worker " : "worker ";
    std::cout << "  GPU " << w.device.gpu << " (" << w.device.visible << "): ";
    if (w.busy) std::cout << worker << w.pid << ", serving a run\n";
    else if (!w.error.empty()) std::cout << (w.device.role == WorkerRole::Profile ? "profiling worker: " : "") << w.error << '\n';
    else
      std::cout << worker << w.pid << ", " << w.name << ", ready"
                << (w.profiler_warm ? ", its profiler session kept (other processes cannot profile on this GPU until it ends)" : "")
                << '\n';
  }
}
}  // namespace

int cmd_pool(const Globals& g, const PoolArgs& a) {
  if (a.action == "start") {
    if (a.idle_exit_s < 0) throw UserError("--idle-exit " + std::to_string(a.idle_exit_s) + ": give seconds >= 0 (0: never)");
    std::vector<int> devices = parse_devices(a.devices, g.device);
    if (devices == std::vector<int>{-1}) {
      devices.clear();
      for (int d = 0; d < visible_gpus_guess(); ++d) devices.push_back(d);
      if (devices.empty()) throw UserError("--devices all: this host lists no NVIDIA GPU (/proc/driver/nvidia/gpus, CUDA_VISIBLE_DEVICES)");
    }
    const PoolRecord r = start_pool(std::filesystem::read_symlink("/proc/self/exe").string(), devices, a.idle_exit_s);
    print_workers(r, g.json);
    if (!g.json)
      std::cout << "runs of this evo on this host attach to these workers; `evo pool stop` ends them"
                << (a.idle_exit_s > 0 ? ", as " + std::to_string(static_cast<long>(a.idle_exit_s)) + " s without a run does" : "")
                << '\n';
    return 0;
  }
  if (a.action == "stop") {
    const int ended = stop_pool();
    if (ended) std::cout << "pool stopped: " << pool_dir().string() << " (" << ended << " process" << (ended == 1 ? "" : "es") << " ended)\n";
    else std::cout << "no pool was running: " << pool_dir().string() << '\n';
    return 0;
  }
  if (a.action == "status") {
    const std::optional<PoolRecord> r = read_pool_record();
    if (const std::vector<pid_t> left = orphaned_pool_workers(); !r && !left.empty()) {
      std::string pids;
      for (pid_t p : left) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
      if (g.json)
        std::cout << nlohmann::json{{"pool", pool_dir().string()}, {"running", false}, {"orphaned_workers", left}}.dump(2) << '\n';
      else
        std::cout << "the pool's supervisor is gone (killed?); its workers " << pids << " still serve runs but are not "
                  << "replaced after a fault: `evo pool stop` ends them\n";
      return 1;
    }
    if (!r) {
      if (g.json) std::cout << nlohmann::json{{"pool", pool_dir().string()}, {"running", false}}.dump(2) << '\n';
      else std::cout << "no pool is running (" << pool_dir().string() << "): `evo pool start --devices all` starts one\n";
      return 1;
    }
    print_workers(*r, g.json);
    return 0;
  }
  if (a.action == "release") {
    const std::optional<PoolRecord> r = read_pool_record();
    if (!r) {
      std::cout << "no pool is running (" << pool_dir().string() << "): nothing holds a profiler session\n";
      return 0;
    }
    int released = 0;
    std::string gpus;
    for (const auto& d : r->devices)
      if (d.role == WorkerRole::Profile && release_pool_profiler(d.visible)) {
        ++released;
        gpus += (gpus.empty() ? "" : ",") + std::to_string(d.gpu);
      }
    if (released) std::cout << "profiler sessions ended on GPU " << gpus << ": ncu can profile there until the pool's next run\n";
    else std::cout << "no idle profiling worker of the pool held a profiler session\n";
    return 0;
  }
  throw UserError("evo pool " + a.action + ": give start, stop, status or release");
}

int cmd_worker_listen(int device, const std::string& socket, double idle_exit_s, bool profile) {
  return worker_listen(device, socket, idle_exit_s, profile ? WorkerRole::Profile : WorkerRole::Measure);
}

}  // namespace evo::cli
