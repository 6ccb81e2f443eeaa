"""Healthy two-host gloo jobs that print what working jobs print (issue #16: no cause on healthy runs).

usage (root; about 20 s a job on 2 busy cores): python bench/multihost_logs/healthy.py OUT [--only NAME,...]

The hosts are gen.py's (two network namespaces joined by a veth pair, own host names); the job is
worker.py under torchrun (six steps, FAULT fail_once or warnings only). Each variant (V below) adds what a working job may print: the debug
levels, NCCL_DEBUG=INFO set while the job uses gloo, a docker bridge and a veth with a link-local address
in each namespace, torchrun restarting the workers after one rank failed once (--max-restarts with the
c10d rendezvous), warnings printed and the job going on. A case: OUT/<name>/logs/node{0,1}.log, log.txt
(both hosts' files one after the other) and truth.json (root_cause "none", each host's exit status:
a variant that did not exit 0 on both hosts is not a healthy case; the elastic ones sometimes fail their
second attempt). fixtures/logs/healthy holds some of its output.
"""
import argparse, importlib.util, json, os, shutil, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("gen", HERE / "gen.py")
gen = importlib.util.module_from_spec(spec); spec.loader.exec_module(gen)
WORKER = str(HERE / "worker.py")
STEADY = {"STEPS": "6", "PG_TIMEOUT": "20", "FAULT_STEP": "2"}  # the loop these cases were first made with
DETAIL = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "TORCH_CPP_LOG_LEVEL": "INFO"}
INFO = {"TORCH_DISTRIBUTED_DEBUG": "INFO", "TORCH_CPP_LOG_LEVEL": "INFO"}
NCCLDBG = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,ENV"}
V = {
 "plain": {},
 "plain-2proc": {"nproc": 2},
 "detail": {"env": DETAIL},
 "detail-2proc": {"env": DETAIL, "nproc": 2},
 "info-2proc": {"env": INFO, "nproc": 2},
 "nccl-debug-with-gloo": {"env": NCCLDBG},
 "nccl-debug-with-gloo-detail": {"env": {**NCCLDBG, **DETAIL}, "nproc": 2},
 "docker-bridge": {"docker": True, "env": DETAIL},
 "docker-bridge-ifname": {"docker": True, "env": {**DETAIL, "GLOO_SOCKET_IFNAME": "eth0"}, "nproc": 2},
 "elastic-recovers": {"env": {"FAULT": "fail_once", "FAULT_RANK": "1"}, "restarts": 1, "c10d": True},
 "elastic-recovers-detail": {"env": {"FAULT": "fail_once", "FAULT_RANK": "3", **DETAIL}, "restarts": 1, "nproc": 2, "c10d": True},
 "elastic-recovers-info": {"env": {"FAULT": "fail_once", "FAULT_RANK": "0", **INFO}, "restarts": 1, "c10d": True},
 "elastic-recovers-2proc": {"env": {"FAULT": "fail_once", "FAULT_RANK": "2"}, "restarts": 2, "nproc": 2, "c10d": True},
 "elastic-loglevel-info": {"env": {"FAULT": "fail_once", "FAULT_RANK": "1", "LOGLEVEL": "INFO"}, "restarts": 1, "c10d": True},
 "plain-loglevel-info": {"env": {"LOGLEVEL": "INFO"}, "nproc": 2},
 "warnings": {"env": {"FAULT": "warnings"}, "nproc": 2, "omp": False},
 "warnings-detail": {"env": {"FAULT": "warnings", **DETAIL}, "omp": False},
 "ifname-set": {"env": {"GLOO_SOCKET_IFNAME": "eth0", **INFO}},
}

def docker(h, k):
    for a in (("link", "add", "docker0", "type", "bridge"), ("addr", "add", "172.17.0.1/16", "dev", "docker0"),
              ("link", "set", "docker0", "up"), ("link", "add", "veth3f2a9c1", "type", "veth", "peer", "name", "vpeer0"),
              ("link", "set", "veth3f2a9c1", "master", "docker0"), ("link", "set", "veth3f2a9c1", "up"),
              ("link", "set", "vpeer0", "up"), ("addr", "add", f"169.254.{k}.7/16", "dev", "veth3f2a9c1")):
        gen.sh("ip", "-n", h.ns, *a)

def run_case(name, k, out):
    s = V[name]
    case = out / name
    shutil.rmtree(case, ignore_errors=True); (case / "logs").mkdir(parents=True)
    lab = gen.Lab(k).up()
    try:
        if s.get("docker"):
            docker(lab.a, k); docker(lab.b, k)
        procs = {}
        for i, h in enumerate((lab.a, lab.b)):
            where = (["--rdzv-backend", "c10d", "--rdzv-endpoint", f"{lab.a.addr}:{gen.PORT}", "--rdzv-id", f"h{k}"] if s.get("c10d")
                     else ["--node-rank", str(i), "--master-addr", lab.a.addr, "--master-port", str(gen.PORT)])
            cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", str(s.get("nproc", 1)), *where,
                   "--rdzv-conf", "timeout=30", "--max-restarts", str(s.get("restarts", 0)), WORKER]
            env = gen.env_for({**STEADY, **s.get("env", {})})
            if not s.get("omp", True):
                env.pop("OMP_NUM_THREADS", None)
            procs[h.name] = h.start(cmd, env, case / "logs" / f"node{i}.log")
        t0 = time.monotonic()
        while time.monotonic() - t0 < 90 and any(p.poll() is None for p in procs.values()):
            time.sleep(0.2)
        rcs = {n: p.poll() for n, p in procs.items()}
    finally:
        lab.down()
    (case / "log.txt").write_bytes(b"".join((case / "logs" / f"node{i}.log").read_bytes() for i in range(2)))
    truth = {"source": f"bench/multihost_logs/healthy.py {name} (two-host gloo in namespaces, torch {gen.torch_version()})",
             "root_cause": "none" if all(rc == 0 for rc in rcs.values()) else "other", "evidence": f"variant {name}: {json.dumps(s, sort_keys=True)}; exit status by host below",
             "fix": "", "confidence": "high", "exit": {n: ("killed at deadline" if rc is None else rc) for n, rc in rcs.items()}}
    (case / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")  # "none" only if both hosts exited 0
    return f"{name}: exit {truth['exit']} {time.monotonic() - t0:.0f}s"

ap = argparse.ArgumentParser(); ap.add_argument("out"); ap.add_argument("--only", default=""); a = ap.parse_args()
if os.geteuid() != 0:
    sys.exit("needs root (network namespaces)")
names = a.only.split(",") if a.only else list(V)
try:
    with ThreadPoolExecutor(2) as ex:
        for r in ex.map(lambda nk: run_case(nk[1], 60 + nk[0], Path(a.out)), enumerate(names)):
            print(r, flush=True)
finally:
    gen.cleanup()
