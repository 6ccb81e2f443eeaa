"""Rules for JAX, XLA and TensorFlow's distributed runtime on GPUs, in the same causes as torch's store and NCCL's.

Promise: rule rows only (see commdoctor.rules.base), written from the coordination service that
``jax.distributed.initialize`` starts (xla/tsl/distributed_runtime/coordination/coordination_service.cc:
CheckHeartbeatTimeout, CheckBarrierTimeout, RegisterTaskAsync) and the PjRt client's missed-heartbeat callback
(xla/pjrt/distributed/client.h). XLA reports NCCL's own failures as "NCCL operation X failed: <NCCL's error
string>", which the NCCL and system rows already read.

A JAX job's processes are the service's *tasks*, named ``/job:jax_worker/replica:0/task:N`` where N is the
``process_id`` given to ``jax.distributed.initialize``. The service lists the tasks a message is about on the lines
after it, at most three of them; ``xla_task_name`` reads those lines.
"""

from __future__ import annotations

import re
from typing import Any

from commdoctor.rules.base import CONSEQUENCE, PHASE_ECHOES, ROOT, E, Cand, Code, cand, ctx, group, hits, lines_under, sig

_TASK = re.compile(r"/job:[\w-]{1,40}/replica:\d{1,4}/task:(\d{1,6})")
#: Barriers the service and the PjRt client pass while processes connect (kClusterRegisterBarrierId, the client's
#: connect barrier): a task missing there never started or never reached the coordinator.
_CONNECT_BARRIERS = ("PjRT_Client_Connect", "Wait_for_all_tasks_to_register")


def _tasks(m: Any, hs: list[Any]) -> list[int]:
    """The task numbers the hits name: in their own text, and on the task-name lines the service prints under them."""
    out: list[int] = []
    for h in hs + lines_under(m, "xla_task_name", hs, 5):
        for n in _TASK.findall(h.ev.text.split("first task at the barrier")[0]):
            if int(n) not in out:
                out.append(int(n))
    return out


def _names(tasks: list[int]) -> str:
    return ", ".join(f"task {t}" for t in tasks[:8]) + (" ..." if len(tasks) > 8 else "")


def _task_died(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    tasks = _tasks(m, hs)
    # The service runs inside process 0 and logs from coordination_service.cc; when it reports task 0 itself, the
    # process that printed the line was alive: task 0's heartbeat thread was held up (a long allocation at start-up,
    # a host stalled, the GIL held in native code), nothing died (jax-ml/jax#23599).
    if tasks == [0] and any("coordination_service" in h.ev.text for h in hs):
        return [cand("LOG106", "collective_timeout_straggler", 5, hs, params={"who": "task 0"},
                     detail="The coordination service runs in process 0 and reported process 0 itself as silent: the "
                            "process was alive, but sent no heartbeat for heartbeat_timeout. Something held it up (a "
                            "long pinned-memory allocation while starting, a stalled host, a native call holding the "
                            "GIL).",
                     alts=[("peer_process_died", "if process 0 ended right after this line, read why in its log")])]
    who = _names(tasks) if tasks else "a task the lines do not name"
    return [cand("LOG103", "peer_process_died", 6, hs, consequence=True, params={"who": who},
                 detail=f"The coordination service stopped hearing from {who} (task N is the process started with "
                        "process_id=N). A process that exits, is killed (out of memory, preemption) or loses its host "
                        "stops sending heartbeats; every other process is then terminated with this message. The cause "
                        "is in the log of the task named, before its last line.",
                 alts=[("collective_timeout_straggler",
                        "a task that is alive but sends no heartbeat for heartbeat_timeout (a host stalled, a long "
                        "blocking call) is reported the same: if the task named logged progress after the others "
                        "stopped, raise heartbeat_timeout_seconds in jax.distributed.initialize")])]


def _barrier_timeout(m: Any, hs: list[Any], found: list[Cand], connect: bool = False) -> list[Cand]:
    connect_hs = hs if connect else [h for h in hs if any(b in str(h.groups.get("barrier")) for b in _CONNECT_BARRIERS)]
    reached = hits(m, "xla_barrier_reached")
    counts = f"{reached[0].groups['reached']} of {reached[0].groups['total']} tasks reached it" if reached else ""
    if connect_hs:
        tasks = _tasks(m, connect_hs)
        what = ("JAX processes missing when the others connected to the coordination service"
                + (f": {_names(tasks)}" if tasks else "") + (f" ({counts})" if counts else ""))
        return [cand("LOG062", "launcher_misconfig", 3, connect_hs, params={"what": what},
                     detail="jax.distributed.initialize waits until num_processes processes have connected to "
                            "coordinator_address. The tasks named never did: fewer processes were started than "
                            "num_processes says, or two processes were given the same process_id.",
                     alts=[("rendezvous_unreachable", "a process that cannot reach coordinator_address (a wrong host "
                                                      "or port, a firewall) never connects either: its own log says so"),
                           ("peer_process_died", "a process that crashed while starting never connects: look for its "
                                                 "own error")])]
    if hits(m, "xla_task_died"):
        return []  # a task died: the barrier it never reached is its echo
    tasks = _tasks(m, hs)
    barrier = str(hs[0].groups.get("barrier") or "?").rstrip(".")
    who = _names(tasks) if tasks else "tasks the lines do not name"
    return [cand("LOG104", "collective_timeout_straggler", 5, hs,
                 params={"barrier": barrier, "who": who + (f"; {counts}" if counts else "")},
                 alts=[("peer_process_died", "a task that exited before the barrier never arrives: its own log, or "
                                             "heartbeat errors in the others', says so"),
                       ("collective_mismatch", "tasks that call barriers in a different order, or one only some of "
                                               "them call (a rank-dependent branch), wait at different ids")])]


def _unreachable(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """gRPC could not open a channel to the coordinator (or, in TensorFlow, another worker's server)."""
    ep = next((str(h.groups["endpoint"]) for h in hs if h.groups.get("endpoint")), "")
    how = next((str(h.groups["how"]).strip() for h in hs if h.groups.get("how")), "no address answered")
    # gRPC clients (Ray's workers too) print this while a job comes down: after another failure it is its echo
    echo = any(c.tier <= 5 and not c.consequence for c in found)
    return [cand("LOG011", "rendezvous_unreachable", 7 if echo else 3, hs, consequence=echo,
                 params={"endpoint": ep.split(":", 1)[1] if ep else "the coordinator", "how": how},
                 detail="JAX and TensorFlow reach their coordinator (coordinator_address, process 0's service) over gRPC; "
                        "no connection to it could be opened. 'Connection refused' means nothing listened there: a wrong "
                        "host or port, or process 0 not (yet) running its service.",
                 alts=[("firewall_or_port_blocked", "if the coordinator was running at that address and port, a "
                                                    "firewall or security group between the hosts refuses or drops it"),
                       ("wrong_interface", "an address process 0 is reachable at only from itself (a container's own "
                                           "IP, loopback) fails the same way")])]


def _controller(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """The PjRt client's own line on a failed connect: what it adds is the status it failed with."""
    waited = [h for h in hs if any(w in h.ev.text for w in ("waited too long", "DEADLINE_EXCEEDED", "Barrier timed out"))]
    if waited and not any(c.code == "LOG062" for c in found):
        return _barrier_timeout(m, waited, found, connect=True)
    rest = [h for h in hs if h not in waited]
    if rest and not hits(m, "xla_grpc_unreachable"):
        return _unreachable(m, rest, found)
    return []


def _nccl_id_wait(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    g = hs[0].groups
    devices = str(g.get("devices") or "").split(",")
    root = str(g.get("root")) if g.get("root") else (devices[0] if devices[0] else "?")
    return [cand("LOG107", "collective_timeout_straggler", 4, hs,
                 params={"root": root, "n": str(len(devices)), "dur": str(g.get("dur") or "its timeout")},
                 detail="XLA makes an NCCL communicator for each set of devices a collective runs on: the process of "
                        "the root device creates NCCL's unique id and publishes it in the coordination service's "
                        "key-value store, and the other processes wait for it. They waited in vain: that process had "
                        "not reached this collective.",
                 alts=[("peer_process_died", "a process that exited before the collective never publishes it: its "
                                             "own log, or heartbeat errors, say so"),
                       ("collective_mismatch", "a process running another step or program (a branch on "
                                               "process_index) never joins this set of devices")])]


#: XLA's collectives whose rendezvous creates or fetches NCCL communicators: their callback waits on other processes.
_CLIQUE = re.compile(r"clique|communicator", re.I)


def _rendezvous(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """XLA's local rendezvous timed out: threads of one process (one per local device) wait for each other at a
    collective, and then for the leader's callback (for an NCCL clique: creating the communicator with the other
    processes)."""
    if hits(m, "xla_rendezvous_unstuck") and not any("Termination timeout" in h.ev.text for h in hs):
        return []  # it went on: XLA says the warning was a false positive
    # After a failure of its own, or a process known dead (LOG103, itself an echo of that process's end), the waits
    # are what followed.
    echo = any(c.cause and (c.cause == "peer_process_died" or (not c.consequence and c.tier <= 5)) for c in found)
    g = next((h.groups for h in hs if h.groups.get("name") or h.groups.get("tname")), hs[0].groups)
    name = str(g.get("name") or g.get("tname") or "a collective")
    leader = any(h.groups.get("all") for h in hs)
    want = next((h.groups.get(k) for h in hs for k in ("tn", "n", "n2") if h.groups.get(k)), None)
    got = next((h.groups.get("got") for h in hs if h.groups.get("got")), None)
    if leader:
        what = (f"every local thread reached `{name[:120]}`, but its leader never finished the rendezvous "
                "(its callback waits on the other processes)")
    else:
        what = (f"threads of this process waited at `{name[:120]}` for others that never came"
                + (f" ({got} of {want} arrived)" if got and want else f" ({want} expected)" if want else ""))
    clique = bool(_CLIQUE.search(name))
    alts = [("collective_mismatch", "processes running another step or program (a branch on process_index, data "
                                    "of another length) never reach this collective"),
            ("peer_process_died", "a process that exited never arrives: its own log, or heartbeat errors, say so")]
    if clique:
        alts.append(("firewall_or_port_blocked", "creating an NCCL communicator with other hosts stalls the same way "
                                                 "when NCCL's connections between them are blocked: NCCL_DEBUG=INFO"))
    return [cand("LOG109", "collective_timeout_straggler", 7 if echo else 6, hs, consequence=echo,
                 params={"what": what},
                 detail="XLA runs a collective on a process's local devices from one thread each; they meet in a "
                        "rendezvous, and one of them (the leader) runs its callback, which for an NCCL clique creates "
                        "the communicator together with the other processes. A rendezvous that does not complete "
                        "means some participant has not reached the same collective: a process (or device) still "
                        "busy elsewhere, on another step, or gone. After the termination timeout XLA exits the "
                        "process on purpose." + (" This one was creating or fetching NCCL communicators." if clique
                                                 else ""),
                 alts=alts)]


SIGNATURES = (
    # CheckHeartbeatTimeout ("Task %s heartbeat timeout. This indicates that the remote task has failed, got
    # preempted, or crashed unexpectedly", then "The following tasks are unhealthy (stopped sending heartbeats):"
    # with the tasks on the next lines), the PjRt client's QFATAL when it polls that error (two wordings across
    # releases), and a task that registers again under a new incarnation (it restarted).
    sig("xla_task_died", ("heartbeat timeout", "stopped sending heartbeats", "Terminating process because",
                          "Incarnation ID mismatch", "different incarnation"),
        r"Task /job:\S{1,80}/task:\d{1,6} heartbeat timeout"
        r"|The following tasks are unhealthy \(stopped sending heartbeats\)"
        r"|Terminating process because (?:the JAX distributed service detected fatal errors|the coordinator detected "
        r"missing heartbeats|of missing heartbeat)"
        r"|Heartbeat: Incarnation ID mismatch|unexpectedly tried to connect with a different incarnation",
        "peer_process_died", CONSEQUENCE, 6, "JAX's coordination service lost a process: it stopped sending heartbeats "
                                             "or came back as a new incarnation",
        build=_task_died, phase=PHASE_ECHOES),
    # CheckBarrierTimeout: "Barrier timed out. Id: %s. This usually happens because a task triggered the barrier too
    # early or too slowly ... # of tasks that reached the barrier: %d/%d ..." (older releases: "Barrier timed out.
    # Barrier_id: %s. Timed out task names:"), the timed-out tasks on the next lines. A timed-out *wait* for a key
    # (GetKeyValue) is another message.
    sig("xla_barrier_timeout", ("Barrier timed out",),
        r"Barrier timed out\. (?:Id|Barrier_id): (?P<barrier>\S{1,200})",
        "collective_timeout_straggler", ROOT, 5, "a coordination-service barrier expired before every JAX process "
                                                 "reached it",
        build=_barrier_timeout),
    # The coordination agent's key-value wait (GetKeyValue) when the key is an NCCL clique's: XLA's NCCL id store
    # (xla/pjrt/gpu) keys each clique's unique id by its devices and root, and non-root processes wait on it.
    sig("xla_nccl_id_wait", ("GetKeyValue() timed out",),
        r"GetKeyValue\(\) timed out with key: devices=\[(?P<devices>[\d,]{1,4000})\]"
        r"(?:[^\n]{0,400}?root_device=(?P<root>\d{1,6}))?(?:[^\n]{0,400}? and duration: (?P<dur>\w{1,20}))?",
        "collective_timeout_straggler", ROOT, 4, "processes waited for an NCCL clique's unique id that its root "
                                                 "process never published",
        build=_nccl_id_wait),
    ctx("xla_barrier_reached", ("reached the barrier",), r"# of tasks that reached the barrier: (?P<reached>\d{1,6})/"
                                                        r"(?P<total>\d{1,6})",
        "how many tasks reached a barrier that timed out"),
    ctx("xla_task_name", ("/job:",), r"^\s{0,8}/job:[\w-]{1,40}/replica:\d{1,4}/task:\d{1,6}\s*$",
        "a task the line above is about (the coordination service lists them one a line)"),
    # The PjRt client's line when Connect() fails (xla/pjrt/distributed/client.cc): "Failed to connect to distributed
    # JAX controller: waited too long for some tasks to show up ..." after a deadline, or the status it failed with.
    sig("xla_controller", ("Failed to connect to distributed JAX controller",),
        r"Failed to connect to distributed JAX controller: (?P<status>.{1,200})",
        "launcher_misconfig", ROOT, 3, "a JAX process could not connect to the coordination service",
        build=_controller, phase=PHASE_ECHOES),
    # gRPC's channel error (src/core/.../pick_first: "failed to connect to all addresses; last error: CODE:
    # ipv4:ADDR:PORT: Failed to connect to remote host: Connection refused"), which JAX and TensorFlow raise when the
    # coordinator cannot be reached. Older gRPC releases print the bare first clause.
    sig("xla_grpc_unreachable", ("failed to connect to all addresses",),
        r"failed to connect to all addresses(?:; last error: [A-Z_]{1,30}: (?P<endpoint>ipv4:[\d.]{7,15}:\d{1,5}|"
        r"ipv6:\[[\w:.%]{2,60}\]:\d{1,5})?:? ?(?:Failed to connect to remote host: )?(?P<how>[^;\n\"]{1,80}))?",
        "rendezvous_unreachable", ROOT, 3, "gRPC could not open a connection to the coordinator",
        build=_unreachable, phase=PHASE_ECHOES),
    # xla/service/rendezvous.cc AwaitAndLogIfStuck: "[id=%d] This thread has been waiting for `%s` for %d seconds and
    # may be stuck. Expected %d threads to join the rendezvous, but not all of them arrived on time." or "... All %d
    # threads joined the rendezvous, however the leader has not marked the rendezvous as completed ...", then after
    # the termination timeout LOG(FATAL) "Termination timeout for `%s` of %d seconds exceeded. Exiting to ensure a
    # consistent program state. Expected %d threads to join the rendezvous, but only %d of them arrived on time."
    # Older releases: "This thread has been waiting for %d seconds and may be stuck:" / "Termination timeout of %d
    # seconds exceeded. Exiting to ensure a consistent program state."
    sig("xla_rendezvous_stuck", ("and may be stuck", "Exiting to ensure a consistent program state"),
        r"This thread has been waiting for (?:`(?P<name>[^`\n]{1,400})` for )?\d{1,7} seconds and may be stuck"
        r"(?:\. (?:Expected (?P<n>\d{1,6}) threads to join the rendezvous, but not all of them arrived on time"
        r"|All (?P<n2>\d{1,6}) threads joined the rendezvous, however the leader has not marked (?P<all>the) rendezvous))?"
        r"|Termination timeout (?:for `(?P<tname>[^`\n]{1,400})` )?of \d{1,7} seconds exceeded\. Exiting to ensure a "
        r"consistent program state(?:\. Expected (?P<tn>\d{1,6}) threads to join the rendezvous, but only "
        r"(?P<got>\d{1,6}) of them arrived on time)?",
        "collective_timeout_straggler", ROOT, 6, "XLA's rendezvous of a collective's local participants timed out: "
                                                 "a participant never reached it",
        build=_rendezvous, phase=PHASE_ECHOES),
    # The same function when the rendezvous completed after the warning: "This thread is unstuck waiting for `%s`
    # after %s ... Warning above was a false-positive" (older: "Thread is unstuck! Warning above was a
    # false-positive. Perhaps the timeout is too short.").
    ctx("xla_rendezvous_unstuck", ("is unstuck",), r"\b(?:This thread|Thread) is unstuck\b",
        "XLA's rendezvous completed after its stuck warning (a false positive)", harmless=True),
    # -- TensorFlow's collective ops (MultiWorkerMirroredStrategy, CollectiveAllReduceStrategy) -------------------
    # collective_param_resolver_local.cc: "Shape mismatch in the collective instance N. Op at device D expected shape
    # S but another member in the group expected shape T." -- the workers ran one collective on different shapes.
    sig("tf_collective_shape", ("Shape mismatch in the collective instance",),
        r"Shape mismatch in the collective instance \d{1,12}",
        "collective_mismatch", ROOT, 1, "TensorFlow's workers ran one collective with different tensor shapes",
        code="LOG050"),
    # base_collective_executor.cc: "Collective has timed out waiting for other workers." (a collective's
    # group or instance resolution waited past its timeout) and "Collective has timed out during execution."
    sig("tf_collective_timeout", ("Collective has timed out",),
        r"Collective has timed out (?P<how>waiting for other workers|during execution)",
        "collective_timeout_straggler", ROOT, 4, "a TensorFlow collective timed out waiting for the other workers",
        code="LOG051", params=lambda hs: {"op": "a TensorFlow collective", "timeout": "its timeout",
                                          "who": str(hs[0].groups.get("how") or "waiting for other workers")},
        alts=[("peer_process_died", "a worker that died or restarted never joins: look for its own error")]),
    # grpc_server_lib.cc: "Task N was not defined in job \"J\"" and "Job \"J\" was not defined in cluster";
    # collective_param_resolver_local.cc: "Device D is joining a group with sizeN, but that group has size M" --
    # TF_CONFIG (cluster and task) disagrees between workers or with the workers started.
    sig("tf_cluster_config", ("was not defined in job", "was not defined in cluster", "is joining a group with size",
                              "is not found in TF_CONFIG"),
        r"Task \d{1,6} was not defined in job \"\w{1,40}\"|Job \"\w{1,40}\" was not defined in cluster"
        r"|is joining a group with size ?(?P<n>\d{1,6}), but that group has size (?P<m>\d{1,6})"
        r"|\"cluster\" is not found in TF_CONFIG",
        "launcher_misconfig", ROOT, 2, "TensorFlow's workers were given cluster definitions that do not agree",
        code="LOG066", params=lambda hs: {"what": "TF_CONFIG's cluster or task does not match the workers started"
                                                  + (f" (a group of {hs[0].groups.get('n')} joined one of "
                                                     f"{hs[0].groups.get('m')})" if hs[0].groups.get("n") else "")}),
    # op_kernel.cc: "OOM when allocating tensor with shape[...] and type T on /job:.../device:GPU:N by allocator A".
    sig("tf_gpu_oom", ("OOM when allocating tensor",),
        r"OOM when allocating tensor with shape ?\[[^\]\n]{0,200}\] and type \w{1,20} on [^\n]{0,120}?device:GPU:\d{1,3}",
        "cuda_oom", ROOT, 1, "TensorFlow ran out of GPU memory", code="LOG031",
        params=lambda hs: {"what": "in the program's own allocations (TensorFlow's allocator, not NCCL)"}),
    # XLA's allocators out of GPU memory (stream_executor tf_allocator_adapter.cc "RESOURCE_EXHAUSTED: Out of memory
    # while trying to allocate %d bytes."; stream_executor_memory_allocator.cc "Failed to allocate request for %s (%dB)
    # on device ordinal %d").
    sig("xla_gpu_oom", ("Out of memory while trying to allocate", "Failed to allocate request for"),
        r"RESOURCE_EXHAUSTED: Out of memory while trying to allocate \d{1,20} bytes"
        r"|RESOURCE_EXHAUSTED: Failed to allocate request for [\d.]{1,10}\w{0,3}iB \(\d{1,20}B\) on device ordinal \d{1,3}",
        "cuda_oom", ROOT, 1, "XLA ran out of GPU memory", code="LOG031",
        params=lambda hs: {"what": "in XLA's own allocations (XLA_PYTHON_CLIENT_MEM_FRACTION / preallocation)"}),
    # PjRt's topology exchange (xla/pjrt/distributed/topology_util.cc): every process publishes its local topology
    # under "cuda:local_topology/cuda/<node id>" and reads the others'; "Getting local topologies failed: Error N:
    # GetKeyValue() timed out with key: cuda:local_topology/cuda/<id>" -- that process never published it (it died,
    # never started, or its jax.distributed.initialize failed).
    sig("xla_topology_wait", ("Getting local topologies failed",),
        r"Getting local topologies failed: [^\n]{0,80}GetKeyValue\(\) timed out with key: \S{0,40}local_topology/\w{1,20}/(?P<id>\d{1,6})",
        "peer_process_died", ROOT, 4, "a JAX process never published its devices to the others",
        code="LOG103", params=lambda hs: {"who": f"task {group(hs, 'id')}, which never published its local topology"}),
    # jax/_src/distributed.py and mesh_utils.py: the arguments of jax.distributed.initialize, and a device mesh the
    # processes do not fill ("coordinator_address should be defined.", "Number of processes must be defined.",
    # "process_id and num_processes must be nonnegative, with process_id < num_processes", "Number of devices %d must
    # equal the product of mesh_shape %s"); the GPU client's "No visible GPU devices."
    sig("jax_launch_args", ("coordinator_address should be defined", "Number of processes must be defined",
                            "with process_id < num_processes", "must equal the product of mesh_shape", "No visible GPU devices"),
        r"(?P<args>coordinator_address should be defined|Number of processes must be defined"
        r"|process_id and num_processes must be nonnegative, with process_id < num_processes)"
        r"|Number of devices (?P<n>\d{1,6}) must equal the product of mesh_shape (?P<shape>\([\d, ]{1,40}\))"
        r"|(?P<nogpu>No visible GPU devices)",
        "launcher_misconfig", ROOT, 2, "JAX was started without the processes or devices its job describes",
        code="LOG066", params=lambda hs: {"what": (
            f"{group(hs, 'n')} devices for a mesh of {group(hs, 'shape')}" if group(hs, "n") else
            "the process sees no GPU (CUDA_VISIBLE_DEVICES, the container's GPUs, a CPU-only jaxlib)" if group(hs, "nogpu")
            else "jax.distributed.initialize was not given the coordinator, the number of processes or this process's "
                 "id (no cluster it detects: set them, or start it under Slurm/Open MPI/Kubernetes Indexed Jobs)")}),
    # multihost_utils.sync_global_devices: the processes reached barriers of different names ("sync_global_devices name
    # mismatch"): they run different code paths.
    sig("jax_sync_mismatch", ("sync_global_devices name mismatch",),
        r"sync_global_devices name mismatch \('(?P<name>[^']{0,80})'\)",
        "collective_mismatch", ROOT, 2, "JAX processes reached differently named global barriers",
        code="LOG050"),
    # The coordination service's gRPC server could not start (xla/pjrt/distributed/service.cc "Failed to start RPC
    # server"): its port is taken (another job, an earlier run still alive).
    sig("jax_rpc_server", ("Failed to start RPC server",),
        r"Failed to start RPC server",
        "port_conflict", ROOT, 3, "JAX's coordinator could not listen on its port",
        code="LOG010", params=lambda hs: {"port": "the coordinator's (coordinator_address)"},
        alts=[("other", "an address in coordinator_address that is not this host's cannot be listened on either")]),
    # cuda_diagnostics.cc: "kernel version %s does not match DSO version %s -- cannot find working devices in this
    # configuration": the loaded kernel module and the user-space driver library are different releases (a driver
    # updated without a reboot, or a container's libcuda from another release).
    sig("cuda_dso_mismatch", ("does not match DSO version",),
        r"kernel version (?P<k>[\d.]{3,20}) does not match DSO version (?P<d>[\d.]{3,20})",
        "driver_cuda_mismatch", ROOT, 1, "the NVIDIA kernel module and its user-space library are different releases",
        code="LOG032", detail="The running kernel module and the libcuda the process loaded come from different driver "
                              "releases: reboot (or reload the module) after a driver update, and give containers the "
                              "host's libcuda (the NVIDIA container runtime does)."),
    # XLA (and TensorFlow's collective ops, and JAX on ROCm with RCCL) load NCCL with dlopen when the first collective
    # needs a clique; without it XLA's NCCL wrapper reports "NCCL operation ncclGetUniqueId(&id) failed: Unable to
    # load NCCL library. Multi-GPU collectives will not work." (xla/service/gpu/nccl_utils.cc in that jaxlib). A jaxlib
    # built for a local CUDA (jax[cuda12_local]) leaves NCCL to the user (jax-ml/jax#18391: nvidia-nccl-cu12 fixed it).
    sig("xla_nccl_not_loaded", ("Unable to load NCCL library",),
        r"Unable to load NCCL library",
        "other", ROOT, 1, "XLA could not load NCCL, so no collective across GPUs can run",
        code="LOG113", params=lambda hs: {"lib": "NCCL (libnccl.so.2)"},
        detail="XLA loads NCCL only when the first collective across GPUs runs, so the job starts and fails there. "
               "A jaxlib or TensorFlow for a local CUDA installation needs NCCL installed beside it: "
               "pip install nvidia-nccl-cu12 (the jax[cuda12] extra brings it), or put the directory of libnccl.so.2 "
               "on LD_LIBRARY_PATH; on ROCm, librccl.so from /opt/rocm/lib.",
        alts=[("version_mismatch", "a libnccl that is there but too old for the framework is refused the same way: "
                                   "check the version beside the framework's requirement")]),
    # TensorFlow places each op on a device with a kernel registered for it: "No OpKernel was registered to support Op
    # 'NcclAllReduce' ... Registered kernels: <no registered kernels>" means this TensorFlow build has no
    # NCCL ops at all, as its Windows and CPU builds do not (tensorflow/tensorflow#44281). MirroredStrategy's default
    # cross-device reduction uses them.
    sig("tf_no_nccl_kernels", ("No OpKernel was registered to support Op 'Nccl",),
        r"No OpKernel was registered to support Op '(?P<op>Nccl\w{1,30})'",
        "other", ROOT, 1, "this TensorFlow build has no NCCL ops",
        code="LOG144", params=lambda hs: {"what": f"TensorFlow has no kernel for {group(hs, 'op') or 'its NCCL ops'}"}),
    # RegisterTaskAsync: a process whose task is not in the job the service was started for.
    sig("xla_unexpected_task", ("Unexpected task registered",),
        r"Unexpected task registered with task_name=(?P<task>\S{1,120})",
        "launcher_misconfig", ROOT, 2, "a JAX process registered with a task the coordination service does not have",
        code="LOG062", params=lambda hs: {"what": f"a process registered as {hs[0].groups.get('task')}, which the "
                                                  "coordinator's job does not have (process_id not below "
                                                  "num_processes, or two jobs on one coordinator port)"}),
)

CODES = (
    Code("LOG103", "jax-task-died", E, "JAX's coordination service lost {who}",
         "Read the log of the task named (process_id N) up to its end: its own error, an out-of-memory kill or a "
         "preemption explains this; the other tasks only report it",
         cause="peer_process_died",
         steps=("jax.distributed.initialize(heartbeat_timeout_seconds=...) sets how long a silent task is waited for",)),
    Code("LOG104", "jax-barrier-timeout", E, "JAX's coordination barrier {barrier} timed out waiting for {who}",
         "Find what the tasks named were doing when the others reached the barrier (a rank-0-only step, loading, "
         "compiling) and whether they called the same barrier; raise its timeout only for known-slow phases",
         cause="collective_timeout_straggler"),
    Code("LOG106", "jax-task-stalled", E, "JAX's coordination service stopped hearing from {who}, which was alive",
         "Find what held the process up when it stopped sending heartbeats (a long allocation while starting, the host "
         "swapping); raise heartbeat_timeout_seconds in jax.distributed.initialize if that phase is known to be slow",
         cause="collective_timeout_straggler"),
    Code("LOG107", "xla-nccl-id-wait", E, "processes waited {dur} for the NCCL id of a {n}-device clique: the process "
                                          "of root device {root} never published it",
         "Find what the process of that device was doing (a step the others had finished, a branch on "
         "process_index, an error in its own log); every process must run the same collectives",
         cause="collective_timeout_straggler"),
    Code("LOG109", "xla-rendezvous-stuck", E, "XLA's rendezvous did not complete: {what}",
         "Find the process (or device) that never reached this collective: what it was doing (compiling, loading, "
         "evaluating on one process), whether it runs the same program and step, whether it is still alive; XLA "
         "exits the waiting process after its termination timeout",
         cause="collective_timeout_straggler"),
    Code("LOG144", "framework-without-nccl", E, "the framework was built without NCCL: {what}",
         "Use a cross-device reduction that needs no NCCL (tf.distribute.MirroredStrategy(cross_device_ops="
         "tf.distribute.HierarchicalCopyAllReduce())), or run a build that has NCCL: TensorFlow's Linux GPU wheels "
         "(under WSL2 on Windows)",
         cause="other"),
)

__all__ = ["CODES", "SIGNATURES"]
