"""Public failure threads, round 53 and its development reading.

A traceback whose header was cut from a post is still a raise: a rank whose launcher record says "exitcode 1" after
frames of its own program did not end quietly, and what those frames were doing is the place to look.
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file


def _found(tmp_path: Path, text: str, name: str = "job.log") -> list[dict]:
    p = tmp_path / name
    p.write_text(text)
    return [f for f in diagnose_file(p)["findings"] if f["cause"]]


# huggingface/transformers#17106: run_clm.py under torchrun, the non-main ranks waiting in main_process_first() while
# rank 0 tokenised a large dataset alone; they failed after the 30-minute process-group timeout. The paste starts
# inside the traceback (its header and the exception line were cut) and ends with torchrun's summary.
_MAIN_FIRST = """\
  File "./code/gpt2/run_clm.py", line 414, in main
    with training_args.main_process_first(desc="dataset map tokenization"):
  File "/usr/lib/python3.8/contextlib.py", line 113, in __enter__
  File "./code/gpt2/run_clm.py", line 414, in main
    with training_args.main_process_first(desc="dataset map tokenization"):
  File "/usr/lib/python3.8/contextlib.py", line 113, in __enter__

  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
Root Cause (first observed failure):
[0]:
  time      : 2022-11-11_07:49:25
  host      : ido-branch-s2n2k-pxvf4
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 5733)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
"""

# The same summary after a rank that printed nothing of its own: sys.exit(1) in the program.
_QUIET = "\n".join(_MAIN_FIRST.splitlines()[7:]) + "\n"


def test_a_rank_failing_in_main_process_first_with_its_traceback_header_cut_waited_for_the_main_process(
        tmp_path: Path) -> None:
    got = _found(tmp_path, _MAIN_FIRST)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG051", "collective_timeout_straggler")
    assert "main_process_first" in got[0]["title"]
    # torchrun's record is what followed the raise, not a rank that ended itself without an error
    died = [f for f in got if f["code"] == "LOG060"]
    assert died and "having logged no error" not in died[0]["title"]


def test_a_rank_with_no_frames_of_its_own_still_ended_itself_quietly(tmp_path: Path) -> None:
    got = _found(tmp_path, _QUIET)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG060", "peer_process_died")
    assert "having logged no error" in got[0]["title"]


def test_the_launchers_own_frames_are_not_a_raise_of_the_rank(tmp_path: Path) -> None:
    # torchrun's ChildFailedError traceback ends every failed run; its frames are torch's run.py / elastic code
    launcher = ('  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/run.py", line 794, in main\n'
                '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/errors/'
                '__init__.py", line 346, in wrapper\n')
    got = _found(tmp_path, launcher + _QUIET)
    assert got[0]["code"] == "LOG060" and "having logged no error" in got[0]["title"]
