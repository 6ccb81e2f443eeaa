"""Parsing and classifying real py-spy captures of hung gloo jobs (fixtures/hang/, see capture.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commdoctor.loaders.stacks import load_snapshot
from commdoctor.parsing.stacks import (Frame, RankState, classify, classify_thread, group_by_signature, is_library,
                                       parse_pyspy_json, parse_pyspy_text, parse_stack_text)
from tests.hang_fixtures import mark_line

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "hang"


def load(scenario: str, rank: int):  # type: ignore[no-untyped-def]
    return parse_stack_text((FIX / scenario / f"rank{rank}.json").read_text())


def test_json_dump_parses_into_threads_and_frames() -> None:
    ps = load("straggler", 0)
    assert ps.pid and ps.main is not None and ps.main.name == "MainThread"
    top = ps.main.frames[0]
    assert (top.function, top.short_file) == ("all_reduce", "torch/distributed/distributed_c10d.py")
    assert any(f.function == "straggler" and f.short_file == "hangjob.py" for f in ps.main.frames)


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_waiting_ranks_are_in_all_reduce_at_the_user_line(rank: int) -> None:
    c = classify(load("straggler", rank), read_source=False)
    assert c.state is RankState.COLLECTIVE and c.op == "all_reduce"
    assert c.where == f"hangjob.py:{mark_line('straggler-allreduce')}"


def test_straggler_is_in_data_loading_with_dataset_line_and_loop_line() -> None:
    c = classify(load("straggler", 3), read_source=False)
    assert c.state is RankState.DATA_LOADING
    assert c.call_site is not None and c.call_site.where == f"hangjob.py:{mark_line('loader-next')}"
    assert c.user_frame is not None and c.user_frame.where == f"hangjob.py:{mark_line('dataset-sleep')}"
    assert c.user_frame.function.endswith("__getitem__")


def test_mismatch_ranks_wait_in_different_ops() -> None:
    ops = {r: classify(load("mismatch", r), read_source=False) for r in range(3)}
    assert ops[0].op == ops[1].op == "all_reduce" and ops[2].op == "broadcast"
    assert ops[2].where == f"hangjob.py:{mark_line('mismatch-broadcast')}"
    groups = group_by_signature(ops.items())
    assert [g[1] for g in groups] == [[0, 1], [2]]


def test_dead_scenario_survivors_wait_in_rendezvous() -> None:
    for r in (0, 1):
        c = classify(load("dead", r), read_source=False)
        assert c.state is RankState.RENDEZVOUS and c.op == "init_process_group"
        assert c.where == f"hangjob.py:{mark_line('init')}"


def test_text_dumps_plain_and_native_classify_like_json() -> None:
    plain = parse_pyspy_text((FIX / "straggler" / "text" / "rank3.txt").read_text())
    assert plain.pid and plain.command and "hangjob.py" in plain.command
    assert classify(plain, read_source=False).state is RankState.DATA_LOADING
    native = parse_pyspy_text((FIX / "straggler" / "text" / "rank0.native.txt").read_text())
    frames = native.main.frames  # type: ignore[union-attr]
    assert frames[0].native and any(f.function == "c10d::Work::wait" for f in frames)
    c = classify(native, read_source=False)
    assert c.state is RankState.COLLECTIVE and c.op == "all_reduce"


def test_native_frames_alone_name_a_collective_wait() -> None:
    native = parse_pyspy_text((FIX / "straggler" / "text" / "rank0.native.txt").read_text())
    only_native = [f for f in native.main.frames if f.native]  # type: ignore[union-attr]
    c = classify_thread(only_native, read_source=False)
    assert c.state is RankState.COLLECTIVE


def test_saved_folder_with_states_loads_as_a_snapshot() -> None:
    snap = load_snapshot([str(FIX / "stopped")])
    assert sorted(snap.ranks) == [0, 1, 2]
    assert snap.ranks[2].proc_state == "stopped" and snap.ranks[2].state is RankState.STOPPED
    dead = load_snapshot([str(FIX / "dead")])
    assert dead.ranks[2].stack is None and dead.ranks[2].state is RankState.ZOMBIE


def f(function: str, file: str, line: int | None = 1, native: bool = False) -> Frame:
    return Frame(function=function, file=file, line=line, short_file=file, native=native)


@pytest.mark.parametrize("frames,state,op", [
    ([f("barrier", "torch/distributed/distributed_c10d.py"), f("main", "train.py")], RankState.BARRIER, "barrier"),
    ([f("all_gather", "torch/distributed/distributed_c10d.py"), f("all_gather_object", "torch/distributed/distributed_c10d.py"),
      f("main", "train.py")], RankState.COLLECTIVE, "all_gather_object"),
    ([f("_sync_buffers", "torch/nn/parallel/distributed.py"), f("DistributedDataParallel.forward", "torch/nn/parallel/distributed.py"),
      f("step", "train.py")], RankState.COLLECTIVE, "broadcast"),
    ([f("foreach_all_gather", "torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py"), f("step", "train.py")],
     RankState.COLLECTIVE, "all_gather"),
    ([f("synchronize", "torch/cuda/__init__.py"), f("step", "train.py")], RankState.CUDA_SYNC, "torch.cuda synchronize"),
    ([f("_save", "torch/serialization.py"), f("save", "torch/serialization.py"), f("checkpoint", "train.py")],
     RankState.CHECKPOINT_IO, "torch.save/load"),
    ([f("wait_tensor", "torch/distributed/_functional_collectives.py"), f("step", "train.py")], RankState.COLLECTIVE, "wait_tensor"),
    ([f("step", "train.py"), f("main", "train.py")], RankState.COMPUTING, None),
    ([f("cudaStreamSynchronize", "libcudart.so", None, True), f("step", "train.py")], RankState.CUDA_SYNC, "cudaStreamSynchronize"),
])
def test_classification_table(frames: list[Frame], state: RankState, op: str | None) -> None:
    c = classify_thread(frames, read_source=False)
    assert (c.state, c.op) == (state, op)
    assert c.where is not None and c.where.startswith("train.py")


def test_ddp_collective_names_the_wrapper() -> None:
    frames = [f("_sync_buffers", "torch/nn/parallel/distributed.py"), f("DistributedDataParallel._pre_forward",
              "torch/nn/parallel/distributed.py"), f("train_step", "train.py", 42)]
    c = classify_thread(frames, read_source=False)
    assert c.via and "DistributedDataParallel" in c.via and c.where == "train.py:42"


def test_user_and_library_frames() -> None:
    assert is_library(f("x", "/usr/lib/python3.11/threading.py"))
    assert is_library(f("x", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py"))
    assert is_library(f("x", "threading.py")) and is_library(f("x", "torch/utils/data/dataloader.py"))
    assert not is_library(f("x", "/home/me/train.py")) and not is_library(f("x", "train.py"))
    assert is_library(f("x", "<frozen importlib._bootstrap>"))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=2000))
def test_garbage_never_raises(text: str) -> None:
    ps = parse_stack_text(text)
    classify(ps, read_source=False)


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4), max_leaves=30))
def test_json_of_any_shape_never_raises(doc: object) -> None:
    classify(parse_pyspy_json(json.dumps(doc)), read_source=False)


def test_commdoctor_frames_are_known_by_the_package_not_by_a_folder_name() -> None:
    import commdoctor.cli
    from commdoctor.parsing.stacks import Frame, is_library

    def lib(path: str) -> bool:
        return is_library(Frame(function="f", file=path, line=1, short_file=path.rsplit("/", 1)[-1]))

    assert lib(commdoctor.cli.__file__)  # the installed package, where it really is
    assert lib("/opt/commdoctor/commdoctor/cli.py")  # stacks from another host: a module of the package
    # A job in a clone of this repository, or in any folder called commdoctor, is the user's code.
    assert not lib("/home/u/commdoctor/tests/integration/hangjob.py")
    assert not lib("/home/u/commdoctor/train.py")
    assert not lib("/srv/commdoctor/jobs/commdoctor/run_me.py")
