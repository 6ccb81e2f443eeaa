"""Public failure threads, round 46 and its development reading.

Lines a library writes only on the path of an error are that error, whatever their level: DDP's reducer logs each
parameter that got no gradient at INFO just before it raises "Expected to have finished reduction in the prior
iteration".
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

# Nixtla/neuralforecast#1110: AutoTFT under DDP on several GPUs, TORCH_DISTRIBUTED_DEBUG on; the terminal wrapped
# each line (kept as posted). The TFT built a static-covariate encoder that never took part in the loss.
_UNUSED = """\
[rank1]:[I816 21:41:23.034545571 reducer.cpp:1989] [Rank 1] Parameter: static_encoder.context_grns.3.glu.lin.bias did not get gradient i
n backwards pass.
[rank1]:[I816 21:41:23.034555851 reducer.cpp:1989] [Rank 1] Parameter: static_encoder.context_grns.3.glu.lin.weight did not get gradient
 in backwards pass.
"""


def test_the_reducers_info_lines_about_parameters_without_gradient_are_the_unused_parameter_error(tmp_path: Path) -> None:
    check_row("ddp_unused_params", _UNUSED.splitlines()[0],
              # reducer.cpp's note under static_graph / find_unused_parameters: a parameter it already knows is unused
              "[rank0]:[I816 21:41:23.03 reducer.cpp:1467] [Rank 0]: Parameter lin.bias at index 3 is marked as unused.")
    check_row("ddp_unused_params",
              "RuntimeError: ... Parameters which did not receive grad for rank 1: static_encoder.context_grns.3.glu.lin.bias",
              "Parameters which received grad for rank 1: lin.bias")
    p = tmp_path / "rank1.log"
    p.write_text(_UNUSED)
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG095", "other")
    assert found[0]["ranks"] == [1] and "static_encoder" in found[0]["evidence"][0]["text"]


# deepspeedai/DeepSpeed#6497: a script started with plain python, DeepSpeed 0.15.2; the host's hostname (GNU inetutils)
# has no -I, which DeepSpeed's MPI discovery runs to find the master address.
_NO_I = """\
[2024-09-05 04:11:37,288] [INFO] [comm.py:667:init_distributed] Not using the DeepSpeed or dist launchers, attempting to detect MPI environment...
hostname: invalid option -- 'I'
Try 'hostname --help' or 'hostname --usage' for more information.
Traceback (most recent call last):
  File "/code/git/learnable-activations/mflow.py", line 384, in run_experiment
    model_engine, optimizer = prepare_deepspeed_model(model, args)
"""


def test_a_hostname_without_the_all_addresses_option_is_named(tmp_path: Path) -> None:
    check_row("hostname_no_I", _NO_I.splitlines()[1], "hostname: invalid option -- 'x'")
    # deepspeedai/DeepSpeed#826: DeepSpeed 0.3.x ran it through subprocess (64: EX_USAGE, the option refused)
    check_row("hostname_no_I",
              "subprocess.CalledProcessError: Command '['hostname -I']' returned non-zero exit status 64.",
              "subprocess.CalledProcessError: Command '['hostname -I']' returned non-zero exit status 1.")
    p = tmp_path / "train.log"
    p.write_text(_NO_I)
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG120", "other")
    assert "MASTER_ADDR" in found[0]["remedy"]["summary"] and "inetutils" in found[0]["detail"]


# pytorch/pytorch#188567: symm_mem.rendezvous with the NCCL backend as the group's first NCCL use (8x H100, NCCL
# 2.29.7); torch's message was wrapped after the file name (kept as posted). init_process_group(device_id=...) fixed it.
_WINDOW = """\
torch.distributed.DistBackendError: NCCL error in: .../torch/csrc/distributed/c10d/symm_mem/NCCLSymmetricMemory.cu:174,
invalid argument (run with NCCL_DEBUG=WARN for details), NCCL version 2.29.7
Failed to window register segment with ptr 0x..., size 20971520 on rank 0
"""


def test_a_refused_symmetric_memory_window_is_the_programs_set_up_of_the_group(tmp_path: Path) -> None:
    check_row("symm_mem_window", _WINDOW.splitlines()[2],
              # NCCL's own INFO line when registration works (NCCL 2.27+)
              "node1:1234:1240 [0] NCCL INFO Registered window segment ptr 0x7f0000000000 size 20971520")
    p = tmp_path / "rank0.log"
    p.write_text(_WINDOW)
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG098", "other")
    assert "device_id" in found[0]["detail"] and "rank 0" in found[0]["title"]
