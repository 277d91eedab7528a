#include <unistd.h>
#include <sys/wait.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <csignal>
#include <thread>
#include <vector>
#include <atomic>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  const int forks = atoi(argv[1]);
  const size_t mb = atoi(argv[2]);
  std::atomic<bool> done{false};
  double draw_s = 0;
  std::thread drawer([&] {
    double t = now();
    for (int rep = 0; rep < 3; ++rep) {  // three fills of `mb` MB: allocate, write every page, keep
      auto* v = new std::vector<double>(mb * 1024 * 1024 / 8);
      for (size_t i = 0; i < v->size(); ++i) (*v)[i] = double(i) * 1.5;
    }
    draw_s = now() - t;
    done = true;
  });
  std::vector<pid_t> kids;
  double worst = 0, sum = 0;
  for (int k = 0; k < forks; ++k) {
    double t = now();
    pid_t p = fork();
    if (p == 0) { sleep(30); _exit(0); }
    double d = now() - t; worst = std::max(worst, d); sum += d;
    kids.push_back(p);
    usleep(20000);
  }
  drawer.join();
  std::printf("forks %d: fork mean %.1f ms worst %.1f ms; drawing 3 x %zu MB took %.3f s\n", forks, forks ? 1000 * sum / forks : 0.0, 1000 * worst, mb, draw_s);
  for (pid_t p : kids) kill(p, 9), waitpid(p, nullptr, 0);
}
