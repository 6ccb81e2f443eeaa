"""Public failure threads, round 8 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Errors whose line does not name the thing that failed: a write that ran out of space with no path (in a training
job, /dev/shm). Each rule row has a real line and a near-miss that must not match; the fixtures run through
`commdoctor logs --json` as a user would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logs import test_threads as round1
from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # errno 28 (ENOSPC) with no path; errno 2 (ENOENT) is a missing file, not a full one.
    ("enospc", "OSError: [Errno 28] No space left on device",  # NVIDIA/Megatron-LM#878
     "OSError: [Errno 2] No such file or directory: '/data/ckpt'"),
    # torch's shared-memory tensor files (libshm names them /torch_<pid>_...) live in /dev/shm.
    ("enospc", "RuntimeError: unable to write to file </torch_739_144252761_4>: No space left on device (28)",
     "RuntimeError: unable to open shared memory object </torch_739_144252761_4> in read-write mode: Too many open "
     "files (24)"),
]

FIXTURES = [
    # (slug, first cause, causes that must be among the first three)
    # An ENOSPC OSError in a container started without --shm-size: /dev/shm first, a full disk as the alternative.
    ("megatron-878-docker-errno28", "shm_too_small", ("other",)),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture(slug: str, first: str, top3: tuple[str, ...]) -> None:
    folder = round1.FIX / slug
    truth = json.loads((folder / "truth.json").read_text())
    assert (folder / "PROVENANCE.md").is_file() and truth["source"] and truth["root_cause"] == first
    causes = round1._causes(round1._cli(folder / "log.txt"))
    assert causes[:1] == [first]
    for c in top3:
        assert c in causes[:3]


def test_enospc_names_no_cause_when_nccl_already_named_the_shm_segment(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # NCCL's own line says which file system: one /dev/shm finding, not a second guess
    p.write_text("include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device\n"
                 "OSError: [Errno 28] No space left on device\n")
    fs = diagnose_file(p)["findings"]
    assert fs[0]["cause"] == "shm_too_small"
    assert not any("ENOSPC" in json.dumps(f) for f in fs)
