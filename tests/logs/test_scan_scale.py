"""The scanner at job scale: transport lines are deduplicated per stream and searched only where they can be new.

These pin what ``bench/logs_scale.py`` measures: on a job folder of rank logs every file is a new stream, so
what each file costs before its first candidate line decides the folder's time.
"""

from __future__ import annotations

import io
import random

from commdoctor.parsing.scan import BLOCK, TRANSPORT_OLD_RE, TRANSPORT_RES, Scanner, make_prefilter


def _transports(data: bytes, block: int = BLOCK) -> tuple[list[tuple[int, bytes, bytes]], Scanner]:
    got: list[tuple[int, bytes, bytes]] = []
    sc = Scanner(make_prefilter(), on_transport=lambda ln, raw, key: got.append((ln, raw, key)))
    for _ in sc.scan(io.BytesIO(data), block_size=block):
        pass
    return got, sc


def _reference(data: bytes) -> list[tuple[int, bytes, bytes]]:
    """Every key's first line, by the plainest means: each line matched on its own, in pattern order."""
    lines = data.split(b"\n")
    out: list[tuple[int, bytes, bytes]] = []
    seen: set[bytes] = set()
    for rx in (*TRANSPORT_RES, TRANSPORT_OLD_RE):
        for no, line in enumerate(lines, 1):
            for m in rx.finditer(line):
                if m.group(1) not in seen:
                    seen.add(m.group(1))
                    out.append((no, line, m.group(1)))
    return out


def test_each_key_is_reported_once_at_its_first_line() -> None:
    # A key that is the tail of a longer one ("0[0] -> 1[1] ..." inside "10[0] -> 1[1] ...") first shows
    # inside that longer line: its own first line is the later one.
    data = (b"h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 - Init START\n"
            b"h:1:1 [0] NCCL INFO Channel 00/0 : 10[0] -> 1[1] via P2P/IPC\n"
            b"h:1:1 [0] NCCL INFO Channel 01/0 : 10[0] -> 1[1] via P2P/IPC\n"
            b"h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/IPC\n"
            b"h:1:1 [0] NCCL INFO Ring 02 : 0[0] -> 1[1] via P2P/IPC\n"
            b"h:1:1 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via P2P/IPC\n")
    got, _ = _transports(data)
    assert [(ln, key) for ln, _, key in got] == [(2, b"10[0] -> 1[1] via P2P/IPC"), (4, b"0[0] -> 1[1] via P2P/IPC")]
    assert got == _reference(data)


def test_keys_and_lines_match_a_line_by_line_reading() -> None:
    rnd = random.Random(3)
    peers = [f"{r}[{r % 8}] -> {(r + 1) % 32}[{(r + 1) % 8}]" for r in range(32)]
    kinds = ["via P2P/IPC/read", "[send] via NET/IB/0/GDRDMA", "via SHM/direct/direct"]
    out = [b"h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 32 cudaDev 0 - Init START"]
    for i in range(3000):
        if rnd.random() < 0.3:
            out.append(f"h:1:1 [0] NCCL INFO Channel {rnd.randrange(16):02d}/0 : {rnd.choice(peers)} {rnd.choice(kinds)}".encode())
        else:
            out.append(f"{i}: step {i} loss 2.0".encode())
    data = b"\n".join(out) + b"\n"
    got, _ = _transports(data)
    assert got == _reference(data) and len(got) > 50


def test_a_rank_log_is_searched_for_transports_in_its_first_block_only() -> None:
    # A 1 MB rank log with transport lines all through it (as bench/logs_scale.py's generated logs have):
    # the transport expressions read the first block; the rest only goes through the keyword search.
    line = b"h:1:1 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[1] via P2P/IPC\nh:1:1 [0] NCCL INFO Connected all rings\n"
    head = b"h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 - Init START\n"
    data = head + line * ((1 << 20) // len(line))
    got, sc = _transports(data)
    assert [key for _, _, key in got] == [b"0[0] -> 1[1] via P2P/IPC"]
    assert 0 < sc.stats.transport_bytes <= BLOCK < len(data) // 2


def _dense_log(seed: int, blocks_of_lines: int = 3000) -> bytes:
    """A rank log with transport lines all through it, a second communicator, and kinds that show late."""
    rnd = random.Random(seed)
    peers = [f"{r}[{r % 8}] -> {(r + 1) % 32}[{(r + 1) % 8}]" for r in range(32)]
    out = [b"h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 32 cudaDev 0 - Init START"]
    for i in range(blocks_of_lines * 4):
        kinds = ["via P2P/IPC/read", "[send] via NET/IB/0/GDRDMA"]
        if i > blocks_of_lines * 2:
            kinds.append("via SHM/direct/direct")  # a kind first seen late: its lines must be found
        if i == blocks_of_lines * 3:
            out.append(b"h:1:1 [0] NCCL INFO comm 0x2 rank 3 nranks 4 cudaDev 0 - Init START")
            out.append(b"h:1:1 [0] NCCL INFO Channel 00/0 : 3[0] -> 0[1] via P2P/IPC/read")
        if rnd.random() < 0.3:
            out.append(f"h:1:1 [0] NCCL INFO Channel {rnd.randrange(16):02d}/0 : {rnd.choice(peers)} {rnd.choice(kinds)}".encode())
        else:
            out.append(f"{i}: step {i} loss 2.0".encode())
    return b"\n".join(out) + b"\n"


def test_lean_search_past_the_first_block_finds_what_the_full_one_does(monkeypatch) -> None:
    # Past LEAN_AFTER bytes the keyword search leaves out the patterns of kinds already seen; what it
    # reports (candidate lines, new transport keys after a new kind or a new communicator) stays the same.
    import commdoctor.parsing.scan as scan

    data = _dense_log(5)
    full, sc_full = _transports(data, block=16 << 10)
    monkeypatch.setattr(scan, "LEAN_AFTER", 0)
    monkeypatch.setattr(scan, "NUMPY_AFTER", 0)  # lines counted with numpy: the same numbers
    lean, sc_lean = _transports(data, block=16 << 10)
    assert lean == full and any(b"SHM" in key for _, _, key in lean) and any(key.startswith(b"3[0]") for _, _, key in lean)
    assert sc_lean.stats.lines == sc_full.stats.lines == data.count(b"\n")


def test_compiled_database_is_kept_between_runs_and_a_bad_copy_is_compiled_again(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COMMDOCTOR_CACHE_DIR", str(tmp_path))
    line = b"h:1:1 [0] misc/socket.cc:49 NCCL WARN Connection closed by remote peer\n"
    first = make_prefilter("hyperscan").hits(line)
    kept = list(tmp_path.glob("hs-*.db"))
    assert len(kept) == 1 and kept[0].stat().st_size > 1000
    assert make_prefilter("hyperscan").hits(line) == first  # loaded, not compiled
    kept[0].write_bytes(kept[0].read_bytes()[:500])  # torn by a crash mid-write
    assert make_prefilter("hyperscan").hits(line) == first
    kept[0].write_bytes(b"\x00" * 4096)
    assert make_prefilter("hyperscan").hits(line) == first
    monkeypatch.setenv("COMMDOCTOR_CACHE_DIR", "")
    assert make_prefilter("hyperscan").hits(line) == first
