#!/usr/bin/env python3
"""How many evaluations a second one coordinator proposes and records through a PostgreSQL queue.

A throwaway PostgreSQL server (Debian's postgresql: initdb and pg_ctl in a temporary folder, as user
nobody when run as root) holds the queue. One `evo run --queue URL --replay L` coordinator proposes
`--budget` candidates; W `evo worker --queue URL --run N` processes replay them, each candidate costing
the worker `--gpu-s` seconds (0: a worker answers at once, so the coordinator, the server and the
queue are all that is left to measure). Each row is one run: wall from the first worker's start to
the coordinator's exit, evaluations a second, and the CPU seconds each party spent (coordinator,
workers summed, PostgreSQL server processes summed), read from /proc, so the row says who the bound
was. The store is a SQLite file beside the queue (--store sqlite) or the same PostgreSQL database
(--store postgres).

  python3 bench/queue_throughput.py --evo build/evo --workers 1,2,4,8 --budget 2000 \
      [--strategy random|evo] [--gpu-s 0] [--ahead 64] [--store sqlite|postgres] [--out FILE.md]

Simulated workers share this machine's cores with the coordinator and the server: the table names
the machine's core count, and a row whose CPU seconds sum to about cores x wall was bound by the
machine, not by the design.
"""
import argparse, datetime, os, pwd, re, shutil, socket, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """initdb + pg_ctl start in a temporary folder; fsync on, as a real queue server would run."""

    def __init__(self, fsync):
        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        if not bins:
            sys.exit("queue_throughput: no PostgreSQL server (/usr/lib/postgresql/*/bin/initdb): scripts/install-deps.sh")
        self.bin = bins[-1].parent
        self.dir = Path(tempfile.mkdtemp(prefix="evo-pgbench-"))
        self.as_ = []
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(self.dir, nobody.pw_uid, nobody.pw_gid)
            self.as_ = ["runuser", "-u", "nobody", "--"]
        self.port = free_port()
        data = self.dir / "data"
        self.sh([str(self.bin / "initdb"), "-D", str(data), "-U", "evo", "--auth=trust", "-E", "UTF8", "--no-sync"])
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync={fsync}"
        self.sh([str(self.bin / "pg_ctl"), "-D", str(data), "-l", str(self.dir / "server.log"), "-w", "-t", "30",
                 "-o", opts, "start"])
        self.url = f"postgresql://evo@127.0.0.1:{self.port}/postgres"
        self.n = 0

    def sh(self, cmd):
        r = subprocess.run(self.as_ + cmd, cwd=self.dir, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"queue_throughput: {' '.join(cmd[:1])} failed: {(r.stdout + r.stderr).strip().splitlines()[-1:]}")

    def fresh_database(self):
        self.n += 1
        name = f"bench_{os.getpid()}_{self.n}"
        subprocess.run([str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "evo", "-d", "postgres",
                        "-qc", f"CREATE DATABASE {name}"], check=True, capture_output=True)
        return f"postgresql://evo@127.0.0.1:{self.port}/{name}"

    def cpu_seconds(self):
        """CPU seconds of every process of the server (postmaster and backends) so far, live ones."""
        total = 0.0
        tick = os.sysconf("SC_CLK_TCK")
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                cmd = (p / "cmdline").read_bytes()
                if b"postgres" not in cmd.split(b"\0")[0]:
                    continue
                f = (p / "stat").read_text().rsplit(")", 1)[1].split()
                total += (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / tick  # incl. waited-for children
            except OSError:
                continue
        return total

    def stop(self):
        subprocess.run(self.as_ + [str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop"],
                       cwd=self.dir, capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def cpu_of_children():
    r = os.times()
    return r.children_user + r.children_system


def one_run(a, server, workers):
    tmp = Path(tempfile.mkdtemp(prefix="evo-qbench-"))
    url = server.fresh_database()
    store = ["--db", url] if a.store == "postgres" else ["--db", str(tmp / "a.db"), ]
    queue = [] if a.store == "postgres" else ["--queue", url]
    worker_queue = ["--db", url] if a.store == "postgres" else ["--queue", url]
    cmd = [a.evo] + store + ["run", "--replay", a.landscape, "--strategy", a.strategy, "--budget", str(a.budget),
                             "--seed", "1", "--no-sanitize", "-q", "--ahead", str(a.ahead)] + queue
    if a.gpu_s > 0:
        cmd += ["--replay-gpu-s", str(a.gpu_s)]
    log = open(tmp / "coordinator.txt", "w")
    pg0, kids0 = server.cpu_seconds(), cpu_of_children()
    coord = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    run = 0
    for _ in range(500):
        m = re.search(r"start workers with\s+evo worker .*--run (\d+)", (tmp / "coordinator.txt").read_text())
        if m:
            run = int(m.group(1))
            break
        if coord.poll() is not None:
            break
        time.sleep(0.02)
    if not run:
        coord.kill()
        sys.exit("queue_throughput: the coordinator printed no run: " + (tmp / "coordinator.txt").read_text()[-800:])
    t0 = time.monotonic()
    ws = [subprocess.Popen([a.evo, "worker"] + worker_queue + ["--run", str(run), "--name", f"w{i}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(workers)]
    # The coordinator's own CPU seconds, read while it lives (it is reaped below).
    coord_cpu = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    while coord.poll() is None:
        try:
            f = Path(f"/proc/{coord.pid}/stat").read_text().rsplit(")", 1)[1].split()
            coord_cpu = (int(f[11]) + int(f[12])) / tick
        except OSError:
            pass
        time.sleep(0.05)
    wall = time.monotonic() - t0
    pg_cpu = server.cpu_seconds() - pg0
    for w in ws:
        w.wait(timeout=60)
    kids = cpu_of_children() - kids0  # coordinator + workers (all reaped)
    text = (tmp / "coordinator.txt").read_text()
    if coord.returncode != 0:
        sys.exit(f"queue_throughput: the coordinator exited {coord.returncode}: {text[-800:]}")
    shutil.rmtree(tmp, ignore_errors=True)
    return {"workers": workers, "wall": wall, "rate": a.budget / wall, "coord_cpu": coord_cpu,
            "workers_cpu": max(0.0, kids - coord_cpu), "pg_cpu": pg_cpu}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--evo", default=str(ROOT / "build" / "evo"))
    ap.add_argument("--landscape", default=str(ROOT / "tests" / "data" / "landscape_kt_pnpoly_h100.json"))
    ap.add_argument("--workers", default="1,2,4,8")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--strategy", default="random")
    ap.add_argument("--ahead", type=int, default=64, help="candidates the coordinator keeps in flight")
    ap.add_argument("--gpu-s", type=float, default=0.0, help="simulated GPU seconds a candidate on its worker")
    ap.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--fsync", choices=["on", "off"], default="on")
    ap.add_argument("--out")
    a = ap.parse_args()
    if not Path(a.evo).exists():
        sys.exit(f"queue_throughput: no evo binary at {a.evo} (--evo)")
    server = Server(a.fsync)
    rows = []
    try:
        for w in [int(x) for x in a.workers.split(",")]:
            r = one_run(a, server, w)
            rows.append(r)
            print(f"{w} workers: {r['rate']:.0f} evaluations/s ({r['wall']:.2f} s), CPU s coordinator {r['coord_cpu']:.1f}, "
                  f"workers {r['workers_cpu']:.1f}, server {r['pg_cpu']:.1f}", flush=True)
    finally:
        server.stop()
    cores = os.cpu_count()
    lines = [f"`python3 bench/queue_throughput.py {' '.join(sys.argv[1:])}` on {datetime.date.today()}, "
             f"{cores} cores, store {a.store}, strategy {a.strategy}, budget {a.budget}, --ahead {a.ahead}, "
             f"simulated GPU {a.gpu_s} s a candidate, server fsync {a.fsync}:", "",
             "| workers | wall | evaluations/s | CPU s: coordinator | workers | PostgreSQL | CPU busy |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        busy = (r["coord_cpu"] + r["workers_cpu"] + r["pg_cpu"]) / (cores * r["wall"])
        lines.append(f"| {r['workers']} | {r['wall']:.2f} s | {r['rate']:.0f} | {r['coord_cpu']:.1f} | "
                     f"{r['workers_cpu']:.1f} | {r['pg_cpu']:.1f} | {100 * busy:.0f} % |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "a") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
