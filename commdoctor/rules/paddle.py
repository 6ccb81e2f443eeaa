"""Rules for PaddlePaddle's own distributed messages, in the same causes as torch's.

Promise: rule rows only (see commdoctor.rules.base), each written from the message in Paddle's source:
its launchers (python/paddle/distributed/launch, fleet/launch_utils.py, fleet/elastic/manager.py, spawn.py),
its TCPStore (paddle/phi/core/distributed/store: tcp_utils.cc, tcp_store.cc), the legacy NCCL-id exchange
(paddle/fluid/platform/gen_comm_id_helper.cc), init_parallel_env (python/paddle/distributed/parallel.py),
the async-trace watchdog (comm_task_manager.cc) and the NCCL dynamic check (nccl_dynamic_check.cc).

Paddle raises C++ errors as ``<Kind>Error: (<Category>) <message> (at <file>:<line>)`` (``OSError:
(External) NCCL error(2), unhandled system error.``); NCCL's and CUDA's own strings inside them are read by
the NCCL and system rows, as they are under torch. Its launchers write each trainer's output to
``log/workerlog.N`` and print only their own verdict, so a trainer's error is often in a file the user did not
post: the launcher's lines then name which trainer to read.
"""

from __future__ import annotations

from typing import Any

from commdoctor.rules.base import KILLED_BY_SIGNAL, ROOT, Cand, Code, cand, ctx, group, sig

_SIGNALS = {"-9": "SIGKILL", "-6": "SIGABRT", "-11": "SIGSEGV", "-7": "SIGBUS", "-15": "SIGTERM"}


def _trainer_failed(hs: list[Any]) -> dict[str, Any]:
    rank = (group(hs, "rank", "rank2", "rank3") or "?").strip(" ,")
    code = group(hs, "code", "code2")
    how = f" with exit code {code}" if code else ""
    if code in _SIGNALS:
        how = f", killed by {_SIGNALS[code]} (exit code {code})"
    log = group(hs, "log")
    where = f"; its own output is in {log}" if log else "; its own output (log/workerlog.N) says why"
    return {"what": f"Paddle's launcher saw trainer rank {rank} fail{how}{where}"}


def _exchange_timeout(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """The legacy NCCL-id exchange gave up (900 s of retries): on connect, that trainer's endpoint never accepted;
    on bind, this trainer's own endpoint port stayed taken."""
    out = []
    bind = [h for h in hs if h.groups.get("op") == "bind"]
    conn = [h for h in hs if h not in bind]
    if conn:
        ep = group(conn, "ep") or "a trainer's endpoint"
        out.append(cand("LOG011", "rendezvous_unreachable", 3, conn, params={
            "endpoint": f"trainer endpoint {ep} (Paddle's NCCL-id exchange)",
            "how": f"{group(conn, 'why') or 'failed'} until the exchange's timeout"},
            detail="In Paddle's NCCL-id exchange the first trainer of each ring connects to every other trainer's "
                   "endpoint (PADDLE_TRAINER_ENDPOINTS) to hand over NCCL's unique id. Nothing accepted there: that "
                   "trainer did not start or died first (read its workerlog), its endpoint's address is not the "
                   "host's own, or a firewall rejects the port.",
            alts=[("peer_process_died", "if that trainer's own log shows an error before this one, it is the cause"),
                  ("firewall_or_port_blocked", "'Connection refused' from a host where the trainer runs, or a timeout, "
                                               "points at a firewall between the nodes")]))
    if bind:
        out.append(cand("LOG010", "port_conflict", 2, bind, params={"port": (group(bind, "ep") or "?").rsplit(":", 1)[-1]}))
    return out


SIGNATURES = (
    # -- launchers -------------------------------------------------------------------------------------------
    # fleet/launch_utils.py (and utils/launch_utils.py): "ABORT!!! Out of all {nranks} trainers, the trainer process
    # with rank={error_rank} was aborted. Please check its log."; fleet/elastic/manager.py: "ERROR rank {rank} error
    # with exit code {ret}, check log for detail." after "ABORT!!! ABORT!!! ABORT!!!"; launch/job/container.py, as
    # controller.py reports "Container failed !!!": "Container rank {rank} status failed cmd [...] code {code} log
    # {errfile}". A trainer exited; what it printed is in its own log.
    # paddle/phi/backends/gpu/gpu_resources.cc at GPU context creation: the CUDA version the driver supports (and the
    # cuDNN loaded) against those Paddle was built with: "The installed Paddle is compiled with CUDA%d/cuDNN%d,but
    # CUDA/cuDNN version in your machine is CUDA%d/cuDNN%d." (an error) and, driver alone, the glog warning "The
    # installed Paddle is compiled with CUDA X, but CUDA runtime version in your machine is Y, which may cause
    # serious incompatible bug" (a cause when the job failed).
    sig("paddle_cuda_older", ("The installed Paddle is compiled with CUDA",),
        r"The installed Paddle is compiled with CUDA ?(?P<built>[\d.]{1,6})[^\n]{0,40}?,\s?but (?:CUDA/cuDNN version|CUDA runtime "
        r"version) in your machine is (?:CUDA ?)?(?P<have>[\d.]{1,6})",
        "driver_cuda_mismatch", ROOT, 1, "the driver supports an older CUDA than Paddle was built with",
        code="LOG032",
        detail="Paddle compares the CUDA version the NVIDIA driver supports (nvidia-smi's 'CUDA Version') with the one "
               "it was compiled with: update the driver, or install the Paddle build for the older CUDA."),
    sig("paddle_trainer_failed", ("ABORT!!! Out of all", "error with exit code", "status failed cmd"),
        r"ABORT!!! Out of all \d{1,6} trainers, the trainer process with rank=\[?(?P<rank>[\d, ]{1,40})\]? was aborted"
        r"|ERROR rank (?P<rank2>\d{1,6}) error with exit code (?P<code>-?\d{1,4}), check log for detail"
        r"|Container rank (?P<rank3>\d{1,6}) status failed cmd [^\n]{0,400}? code (?P<code2>-?\d{1,4})"
        r"(?: log (?P<log>\S{1,200}))?",
        "peer_process_died", ROOT, 6, "Paddle's launcher saw one of its trainers exit with an error",
        code="LOG060", params=_trainer_failed,
        detail="Paddle's launcher reports which trainer failed and stops the others; the trainer's own error (and a "
               "-9 exit: the kernel's out-of-memory killer) is in that trainer's log file. " + KILLED_BY_SIGNAL),
    # -- TCPStore (paddle/phi/core/distributed/store) ---------------------------------------------------------
    # tcp_utils.cc tcp_connect: "Network %s:%s cannot be connected." after its retries ran out; each failed try is
    # "Retry to connect to %s:%s while the server is not yet listening." (VLOG 0), normal while the master starts.
    sig("paddle_store_unreachable", ("cannot be connected",),
        r"Network (?P<ep>[\w.\-\[\]:]{1,80}:\d{1,5}) cannot be connected\.",
        "rendezvous_unreachable", ROOT, 3, "a trainer could not reach Paddle's TCPStore on the master",
        code="LOG011", params=lambda hs: {"endpoint": f"Paddle's TCPStore at {group(hs, 'ep')}",
                                          "how": "no connection before the store's timeout"},
        alts=[("firewall_or_port_blocked", "if the master process was up and listening (its log shows it), a firewall "
                                           "between the nodes drops the port")]),
    # tcp_utils.cc tcp_listen: "Bind network on %s:%s failed." once no resolved address could be bound.
    sig("paddle_store_bind", ("Bind network on",),
        r"Bind network on (?P<host>[\w.\-\[\]:]{1,80}):(?P<port>\d{1,5}) failed\.",
        "port_conflict", ROOT, 2, "Paddle's TCPStore could not listen on the master port",
        code="LOG010", params=lambda hs: {"port": group(hs, "port") or "?"}),
    # tcp_store.cc (2.3-2.5): "TCPStore timeouted and not all workers got ready." with the hint "received
    # completed:%d != _num_workers:%d", and LOG(FATAL) "_timeout:%d elapsed:%d (elapsed > _timeout)=%d": the master
    # waited for every trainer to check in, and some never did.
    sig("paddle_store_workers", ("not all workers got ready", "(elapsed > _timeout)=1"),
        r"TCPStore timeouted and not all workers got ready|_timeout:\d{1,9} elapsed:\d{1,9} \(elapsed > _timeout\)=1",
        "rendezvous_unreachable", ROOT, 3, "Paddle's TCPStore master timed out waiting for every trainer to check in",
        code="LOG012", params=lambda hs: {"joined": ""},
        alts=[("launcher_misconfig", "trainers that were never started (a node's launcher missing, --nnodes or "
                                     "--ips naming more nodes than run) never check in either")]),
    # -- the legacy NCCL-id exchange (gen_comm_id_helper.cc) --------------------------------------------------
    # Each failed try: LOG(WARNING) "<connect|bind> addr=<ep> failed <n> times with reason: <strerror> retry after
    # <s> seconds" -- normal while the other trainers start. After 900 s: "%s addr=%s timeout, failed reason: %s".
    ctx("paddle_retry", ("times with reason:", "while the server is not yet listening", "server not ready, wait",
                         "gethostbyname"),
        r"(?:connect|bind) addr=\S{1,120} failed \d{1,6} times with reason: |Retry to connect to \S{1,120} while the "
        r"server is not yet listening|server not ready, wait \d{1,4} sec to retry|gethostbyname \S{1,200} error!",
        "a Paddle trainer retrying a connection while its peers start (normal at start-up)", harmless=True),
    sig("paddle_exchange_timeout", ("timeout, failed reason:",),
        r"(?P<op>connect|bind) addr=(?P<ep>\S{1,120}) timeout, failed reason: (?P<why>[^\n(]{1,80}?)(?: \(at |\s*$|\.)",
        "rendezvous_unreachable", ROOT, 3, "Paddle's NCCL-id exchange gave up reaching a trainer's endpoint",
        build=_exchange_timeout),
    # gen_comm_id_helper.cc: "Fail to get host by name %s." once gethostbyname kept failing for
    # FLAGS_get_host_by_name_time seconds (each try: "gethostbyname %s error!").
    sig("paddle_host_unresolved", ("Fail to get host by name",),
        r"Fail to get host by name (?P<host>[\w.\-]{1,200}?)\.",
        "hostname_resolution", ROOT, 2, "a trainer's host name in the endpoints list does not resolve",
        code="LOG015", params=lambda hs: {"what": f"trainer host {group(hs, 'host')} (PADDLE_TRAINER_ENDPOINTS)"}),
    # -- devices and the environment the launcher gives ------------------------------------------------------
    # cuda_info.cc: "Device id must be less than GPU count, but received id is: %d. GPU count is: %d." and "The device
    # id %d is out of range [0, %d)"; spawn.py: "the number of visible devices(%d) is less than the number of spawn
    # processes(%d)"; fleet/launch_utils.py: "Can't find your gpus %s in CUDA_VISIBLE_DEVICES[%s]."; launch/plugins:
    # "Device not found %s from %s for setting %s".
    sig("paddle_gpu_count", ("Device id must be less than GPU count", "is out of range [0,", "is less than the number of spawn processes",
                             "Can't find your gpus", "Device not found"),
        r"Device id must be less than GPU count, but received id is: (?P<id>\d{1,4})\. GPU count is: (?P<n>\d{1,4})"
        r"|The device id (?P<id2>\d{1,4}) is out of range \[0, (?P<n2>\d{1,4})\)"
        r"|the number of visible devices\((?P<n3>\d{1,4})\) is less than the number of spawn processes\((?P<p>\d{1,4})\)"
        r"|Can't find your gpus (?P<id4>[\d,]{1,40}) in CUDA_VISIBLE_DEVICES"
        r"|Device not found (?P<id5>\d{1,4}) from [\d,]{1,60} for setting",
        "launcher_misconfig", ROOT, 2, "a trainer was given a GPU this node does not show it",
        code="LOG066", params=lambda hs: {"what": (
            f"{group(hs, 'p')} processes were asked for with {group(hs, 'n3')} GPUs visible" if group(hs, "p") else
            f"a trainer was given GPU {group(hs, 'id', 'id2', 'id4', 'id5') or '?'}, but "
            + (f"only {group(hs, 'n', 'n2')} are visible to it" if group(hs, "n", "n2") else
               "CUDA_VISIBLE_DEVICES does not list it")
            + " (--gpus/--devices, FLAGS_selected_gpus and CUDA_VISIBLE_DEVICES must agree)")}),
    # parallel.py init_parallel_env: "paddle.distributed initialize error, environment variable %s is needed, but
    # not set."; store_utils.cc: "The environment variable 'PADDLE_MASTER' cannot be found.": the script was
    # started without paddle.distributed.launch, which sets them.
    sig("paddle_env_missing", ("paddle.distributed initialize error", "'PADDLE_MASTER' cannot be found"),
        r"paddle\.distributed initialize error, environment variable (?P<var>\w{1,40}) is needed, but not set"
        r"|The environment variable '(?P<var2>PADDLE_MASTER)' cannot be found",
        "launcher_misconfig", ROOT, 2, "a Paddle trainer was started without the launcher's environment",
        code="LOG066", params=lambda hs: {"what": f"{group(hs, 'var', 'var2')} is not set: the script was not started "
                                                  "by python -m paddle.distributed.launch (or fleetrun)"}),
    # enforce.h: Paddle appends "Detail: <strerror(errno)>" and its /dev/shm advice ("export NCCL_SHM_DISABLE=1 ...
    # -shm-size") to an NCCL error only when errno is ENOSPC or EAGAIN at that moment: NCCL could not create or
    # extend a shared-memory segment.
    sig("paddle_nccl_shm", ("Detail: No space left on device", "Detail: Resource temporarily unavailable"),
        r"NCCL error\(\d{1,3}\), [^\n]{1,80}?\.\s{1,4}Detail: (?:No space left on device|Resource temporarily unavailable)",
        "shm_too_small", ROOT, 1, "NCCL failed with /dev/shm full or too small (errno ENOSPC/EAGAIN, as Paddle reports)",
        code="LOG030"),
    # -- collectives ------------------------------------------------------------------------------------------
    # FLAGS_enable_nccl_dynamic_check (nccl_dynamic_check.cc): the root's tensor shape or dtype broadcast to every
    # rank before the collective differs from this rank's.
    sig("paddle_dynamic_check", ("Tensors in communication are expected to have",),
        r"Tensors in communication are expected to have (?:matching sizes|the same data type)",
        "collective_mismatch", ROOT, 1, "Paddle's NCCL check found ranks calling a collective with different tensors",
        code="LOG050"),
    # comm_task_manager.cc with FLAGS_enable_async_trace=1: "Find timeout start but not finish task:<trace>" (the
    # kernel started and waited past the group's timeout for its peers) or "Find timeout init but not start
    # task:<trace>" (queued behind work that never finished); <trace> is "group_key:%s,group_ranks:%s,
    # global_rank:%d,local_rank:%d,comm_count:%d,op:%s,...".
    sig("paddle_comm_timeout", ("Find timeout",),
        r"Find timeout (?:start but not finish|init but not start) task:[^\n]{0,80}?group_key:(?P<group>[^,\n]{1,80}),"
        r"[^\n]{0,600}?global_rank:(?P<rank>\d{1,6})[^\n]{0,200}?op:(?P<op>\w{1,40})",
        "collective_timeout_straggler", ROOT, 4, "Paddle's watchdog found a collective past its group's timeout",
        code="LOG051", params=lambda hs: {"op": group(hs, "op") or "a collective",
                                          "timeout": "the group's timeout",
                                          "who": f"global rank {group(hs, 'rank')} in {group(hs, 'group')} waited for "
                                                 "its peers"}),
)

CODES: tuple[Code, ...] = ()
