"""Public failure threads, round 68, and their development reading.

A traceback cut where the program calls torch.cuda.set_device, its error line left out of the post: in a launch of
several processes per node what that call raises is, above all, "invalid device ordinal" (more processes than GPUs),
as every thread of these sets that kept the line says.
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file


def _found(tmp_path: Path, text: str) -> list[dict]:
    p = tmp_path / "job.log"
    p.write_text(text)
    return [f for f in diagnose_file(p)["findings"] if f["cause"]]


# hpcaitech/ColossalAI#2439: the Dreambooth example under torchrun with more processes than the one GPU; the post's
# traceback stops at the set_device call (its "invalid device ordinal" is in the thread's title only). Fixed by
# --nproc_per_node 1.
_BANNER = ("WARNING:torch.distributed.run:\n*****************************************\n"
           "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system "
           "being overloaded, please further tune the variable for optimal performance in your application as needed.\n"
           "*****************************************\n")
_CUT = ("Traceback (most recent call last):\n"
        '  File "/home/alpha/tempclone/ColossalAI/examples/images/dreambooth/train_dreambooth_colossalai.py", line 677, '
        "in <module>\n    main(args)\n"
        '  File "/home/alpha/tempclone/ColossalAI/examples/images/dreambooth/train_dreambooth_colossalai.py", line 358, '
        "in main\n    colossalai.launch_from_torch(config={})\n"
        '  File "/home/alpha/.local/lib/python3.10/site-packages/colossalai-0.2.0-py3.10.egg/colossalai/initialize.py", '
        "line 108, in launch\n    gpc.set_device(local_rank)\n"
        '  File "/home/alpha/.local/lib/python3.10/site-packages/colossalai-0.2.0-py3.10.egg/colossalai/context/'
        'parallel_context.py", line 519, in set_device\n    torch.cuda.set_device(device_ordinal)\n')


def test_a_traceback_cut_in_set_device_is_read_as_a_gpu_index_the_node_lacks(tmp_path: Path) -> None:
    found = _found(tmp_path, _BANNER + _CUT)
    assert (found[0]["code"], found[0]["cause"]) == ("LOG062", "launcher_misconfig")
    assert "failed in torch.cuda.set_device and the error line is cut" in found[0]["title"]
    assert any(f["code"] == "LOG090" and f["cause"] == "duplicate_gpu" for f in found)


def test_a_traceback_cut_elsewhere_stays_unexplained(tmp_path: Path) -> None:
    """Near-miss: the same traceback cut one call earlier (in colossalai.launch_from_torch) names no cause."""
    cut = _CUT.split('  File "/home/alpha/.local')[0]
    assert not any(f["code"] == "LOG062" for f in _found(tmp_path, _BANNER + cut))


def test_set_device_with_its_error_line_is_read_from_that_line(tmp_path: Path) -> None:
    """Near-miss: when the line is there it decides (a GPU in exclusive mode another rank holds: LOG034)."""
    found = _found(tmp_path, _BANNER + _CUT + "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n")
    assert found[0]["code"] == "LOG034"
