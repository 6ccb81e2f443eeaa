"""`commdoctor report` end to end: the real CLI in a subprocess, real files, a real flight-recorder
dump, a real process with secrets on its command line, and headless Chromium for the HTML."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tarfile
import textwrap
import time
import zlib
from pathlib import Path
from typing import Any, Iterator

import pytest

import secrets_corpus as S
from commdoctor.core.model import CheckResult, Evidence, Finding, Remedy, Report, Severity, Stage, Status
from commdoctor.core.records import CallRecord, SCHEMA, record_path
from tests.conftest import REPO, needs_torch, run_cli

HOSTS = {"node01": ("10.1.0.1", 1000), "node02": ("10.1.0.2", 1008)}


def _log(rank: int, host: str, ip: str, pid: int, fail: bool) -> str:
    lines = [f"{host}:{pid}:{pid} [0] NCCL INFO Bootstrap : Using eth0:{ip}<0>",
             "NCCL version 2.21.5+cuda12.4",
             f"{host}:{pid}:{pid + 1} [0] NCCL INFO comm 0x55d0 rank {rank} nranks 2 cudaDev 0 busId 18000 - Init START"]
    lines += [f"[rank{rank}]: step {i} loss 2.{i:03d}" for i in range(300)]
    lines += S.log_lines() if rank == 0 else [f"[rank{rank}]: peer {HOSTS['node01'][0]} on node01 ok"]
    if fail:
        lines += [f"{host}:{pid}:{pid + 1} [0] include/alloc.h:114 NCCL WARN Cuda failure 'out of memory'",
                  f"{host}:{pid}:{pid + 1} [0] NCCL INFO init.cc:1236 -> 1",
                  f"[rank{rank}]: RuntimeError: NCCL error: unhandled cuda error, remote host {HOSTS['node02'][0]}"]
    else:
        lines += [f"[rank{rank}]: torch.distributed.DistBackendError: Connection closed by remote peer {HOSTS['node01'][0]}<29500>"]
    lines += [f"[rank{rank}]: shutting down on {host}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("report-inputs")
    logs = root / "logs"
    logs.mkdir()
    (logs / "node01-rank0.log").write_text(_log(0, "node01", "10.1.0.1", 1000, True))
    with gzip.open(logs / "node02-rank1.log.gz", "wt") as f:
        f.write(_log(1, "node02", "10.1.0.2", 1008, False))
    fail_line = (logs / "node01-rank0.log").read_text().splitlines().index(
        "node01:1000:1001 [0] include/alloc.h:114 NCCL WARN Cuda failure 'out of memory'") + 1

    records = root / "hooks"
    records.mkdir()
    for rank, host in ((0, "node01"), (1, "node02")):
        with open(record_path(str(records), rank), "w") as f:
            f.write(json.dumps({"schema": SCHEMA, "kind": "header", "rank": rank, "world_size": 2, "host": host,
                                "pid": 1000 + 8 * rank, "started": 1700000000.0, "torch": "2.13.0"}) + "\n")
            for seq in range(1, 40):
                for kind in ("enter", "exit"):
                    if rank == 1 and seq == 39 and kind == "exit":
                        continue
                    f.write(CallRecord(kind, rank, "0", seq, "all_reduce", 1700000000.0 + seq, reduce_op="SUM", dtype="float32",
                                       shapes=[[1024]], numel=1024, site="/home/alice/train.py:42").to_json() + "\n")
            f.write(json.dumps({"schema": SCHEMA, "kind": "warning", "rank": rank,
                                "message": f"side channel lost; token={S.HF_TOKEN}"}) + "\n")

    stacks = root / "stacks.txt"
    stacks.write_text(textwrap.dedent(f"""\
        Process 4242: python /home/alice/train.py --api-key {S.OPENAI_KEY} --hf_token {S.HF_TOKEN}
        Python v3.11.7 (/usr/bin/python3.11) on node01
        Thread 4242 (active): "MainThread"
            all_reduce (torch/distributed/distributed_c10d.py:2501)
            train_step (/home/alice/train.py:42)
        """))

    fr_json = root / "fr-rank0.json"
    fr_json.write_text(json.dumps({"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
                                   "entries": [{"frames": [{"name": "train_step", "filename": f"/home/alice/train.py?token={S.HF_TOKEN}",
                                                            "line": 42}], "collective_seq_id": i, "state": "scheduled",
                                                "profiling_name": "gloo:all_reduce"} for i in range(1, 6)]}))

    host = socket.gethostname()
    rep = Report(
        tool_version="0.1.0", mode="logs", created="2025-01-02T03:04:05+00:00", host="node01",
        argv=["commdoctor", "logs", str(logs), "--hf-token", S.HF_TOKEN],
        environment={"nccl_versions": {"node01": "2.21.5", "node02": "2.21.5"}, "MASTER_ADDR": "node01"},
        results=[CheckResult(
            check="logs.errors", stage=Stage.LOGS, title="First errors across ranks", status=Status.FAILED,
            summary="2 ranks, first error on rank 0 (node01)",
            data={"ranks": [{"rank": 0, "host": "node01", "interface": "eth0:10.1.0.1", "nccl": "2.21.5", "state": "failed"},
                            {"rank": 1, "host": "node02", "interface": "eth0:10.1.0.2", "nccl": "2.21.5", "state": "waiting"}]},
            findings=[
                Finding("LOG010", "cuda-oom-at-init", Severity.ERROR, "GPU memory ran out while NCCL set up its buffers",
                        cause="cuda_oom", detail="rank 0 on node01 failed first; rank 1 on node02 followed",
                        ranks=(0,), hosts=("node01",),
                        evidence=(Evidence(str(logs / "node01-rank0.log"), "node01:1000:1001 [0] include/alloc.h:114 NCCL WARN Cuda failure 'out of memory'",
                                           fail_line, 0, "node01"),),
                        remedy=Remedy("Free GPU memory before the process group starts, or lower the batch size",
                                      steps=("nvidia-smi on node01 shows what holds the memory",), env={"NCCL_BUFFSIZE": "2097152"})),
                Finding("LOG020", "peer-closed", Severity.ERROR, "rank 1 lost its connection to rank 0",
                        cause="peer_process_died", ranks=(1,), hosts=("node02",), consequence_of="LOG010",
                        evidence=(Evidence("node02-rank1.log.gz", "Connection closed by remote peer 10.1.0.1<29500>", None, 1, "node02"),),
                        remedy=Remedy("Fix the first error (LOG010); this one follows from it")),
            ])],
    )
    report_json = root / "report.json"
    report_json.write_text(json.dumps(rep.to_dict()))
    return {"root": root, "logs": logs, "records": records, "stacks": stacks, "fr_json": fr_json,
            "report": report_json, "fail_line": fail_line, "host": host}


@pytest.fixture(scope="module")
def real_fr_dump(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A flight-recorder dump written by real torch + gloo, from a script under /home/alice/."""
    try:
        import importlib.util

        if importlib.util.find_spec("torch") is None:
            return None
    except ImportError:
        return None
    root = tmp_path_factory.mktemp("fr")
    script = root / "home" / "alice" / "fr_job.py"
    script.parent.mkdir(parents=True)
    out = root / "fr-dump.pkl"
    script.write_text(textwrap.dedent(f"""\
        import os, socket, torch, torch.distributed as dist
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=0, world_size=1)
        t = torch.ones(8)
        for _ in range(5):
            dist.all_reduce(t)
        open({str(out)!r}, "wb").write(torch._C._distributed_c10d._dump_fr_trace(True, True, False))
        dist.destroy_process_group()
        """))
    subprocess.run([sys.executable, str(script)], timeout=120, check=True, capture_output=True)
    return out


def _from_args(inp: dict[str, Any], out: Path, *extra: str, fr: Path | None = None) -> list[str]:
    frs = [str(inp["fr_json"])] + ([str(fr)] if fr else [])
    return ["report", "--from", str(inp["report"]), "--logs", str(inp["logs"]), "--records", str(inp["records"]),
            "--stacks", str(inp["stacks"]), "--fr", *frs, "--cmdline", S.CMDLINE, "-o", str(out / "r"),
            "--bundle", str(out / "b.tar.gz"), *extra]


def _every_file(out: Path) -> Iterator[tuple[str, bytes]]:
    for p in sorted(out.iterdir()):
        if p.name.endswith(".tar.gz"):
            with tarfile.open(p) as tar:
                for m in tar.getmembers():
                    if m.isfile():
                        yield f"{p.name}:{m.name}", tar.extractfile(m).read()  # type: ignore[union-attr]
        elif p.is_file():
            yield p.name, p.read_bytes()


def _leaks(out: Path, needles: list[str], extra: dict[str, bytes] | None = None) -> list[tuple[str, str]]:
    found = []
    items = list(_every_file(out)) + list((extra or {}).items())
    for name, data in items:
        for n in needles:
            if n.encode() in data:
                found.append((name, n))
    return found


def test_planted_secrets_never_reach_the_report_or_bundle(tmp_path: Path, inputs: dict[str, Any],
                                                          real_fr_dump: Path | None) -> None:
    """Live checks, the whole environment (--all-env), a running job, logs, records, stacks, dumps."""
    job_env = dict(os.environ, RANK="0", LOCAL_RANK="0", WORLD_SIZE="2", **{k: v for k, v in S.ENV.items()})
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", *S.CMDLINE.split()], env=job_env)
    try:
        frs = [str(inputs["fr_json"])] + ([str(real_fr_dump)] if real_fr_dump else [])
        p = run_cli("report", "--all-env", "--world-size", "2", "--backend", "gloo", "--pg-timeout", "90",
                    "--logs", str(inputs["logs"]), "--records", str(inputs["records"]), "--stacks", str(inputs["stacks"]),
                    "--fr", *frs, "--cmdline", S.CMDLINE, "-o", str(tmp_path / "r"),
                    "--bundle", str(tmp_path / "b.tar.gz"), "--json", env=S.ENV, timeout=400)
    finally:
        job.kill()
        job.wait(10)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    doc = json.loads(p.stdout)
    leaks = _leaks(tmp_path, S.SECRETS, {"stdout": p.stdout.encode(), "stderr": p.stderr.encode()})
    assert leaks == [], leaks
    # The report says what it redacted, by kind, and the material really made it in.
    red = doc["environment"]["redaction"]
    assert red["total"] >= 20 and red["secrets"]["secret-variable"] >= 5 and red["secrets"]["private-key"] >= 1
    md = (tmp_path / "r.md").read_text()
    assert f"**Redaction:** {red['total']} secrets replaced" in md
    sysenv = doc["environment"]["system"]["sections"]["env"]["variables"]
    assert sysenv["HF_TOKEN"] == "[REDACTED:secret-variable]" and sysenv["NCCL_DEBUG"] == "INFO"
    assert sysenv["MY_CERT_PEM"] == "[REDACTED:private-key]"
    procs = doc["environment"]["system"]["sections"]["launcher"]["job_processes"]
    assert any(pr["pid"] == job.pid and "--nnodes 2 train.py" in pr["cmdline"] for pr in procs)
    assert {r["check"] for r in doc["results"]} >= {"env.torch"}
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        names = tar.getnames()
    assert "commdoctor-bundle/cmdlines.txt" in names and any(n.startswith("commdoctor-bundle/flight-recorder/") for n in names)


def test_anonymize_hides_every_host_address_and_user_consistently(tmp_path: Path, inputs: dict[str, Any],
                                                                  real_fr_dump: Path | None) -> None:
    p = run_cli(*_from_args(inputs, tmp_path, "--anonymize", "--system", "--json", fr=real_fr_dump), timeout=300)
    assert p.returncode == 1, p.stderr[-3000:]  # the report holds errors: exit 1 like the command that made it
    import psutil

    addrs = {a.address for al in psutil.net_if_addrs().values() for a in al
             if a.family == socket.AF_INET and not a.address.startswith("127.")}
    names = ["node01", "node02", "alice"]
    if inputs["host"].lower() not in ("localhost", "localhost.localdomain"):  # kept on purpose: it names no one
        names.append(inputs["host"])
    pats = [re.compile(rf"(?<![A-Za-z0-9]){re.escape(n)}(?![A-Za-z0-9])".encode(), re.I) for n in names]
    pats += [re.compile(rf"(?<![\d.]){re.escape(a)}(?![\d])".encode()) for a in {*addrs, "10.1.0.1", "10.1.0.2"}]
    hits = [(name, pat.pattern) for name, data in _every_file(tmp_path) for pat in pats if pat.search(data)]
    hits += [("stdout", pat.pattern) for pat in pats if pat.search(p.stdout.encode())]
    assert hits == [], hits
    # One alias per host, the same in every file: the log excerpt, the hook records, the report.
    files = dict(_every_file(tmp_path))
    log0 = next(v for k, v in files.items() if "node" in k and "rank0" in k and k.startswith("b.tar.gz:") and "/logs/" in k).decode()
    alias0 = re.search(r"(node-\d+):1000:1000 \[0\] NCCL INFO Bootstrap", log0).group(1)  # type: ignore[union-attr]
    ip0 = re.search(r"Bootstrap : Using eth0:([\d.]+)<0>", log0).group(1)  # type: ignore[union-attr]
    doc = json.loads(p.stdout)
    f0 = next(f for f in doc["findings"] if f["code"] == "LOG010")
    assert f0["hosts"] == [alias0] and f0["evidence"][0]["host"] == alias0
    ranks = doc["results"][0]["data"]["ranks"]
    assert ranks[0]["host"] == alias0 and ranks[0]["interface"] == f"eth0:{ip0}"
    rec0 = next(v for k, v in files.items() if "/records/" in k and "rank0" in k).decode()
    assert f'"host": "{alias0}"' in rec0 or f'"host":"{alias0}"' in rec0
    md = files["r.md"].decode()
    assert f"| 0 | {alias0} | " in md.replace("\\", "")
    # Subnets survive: both ranks' addresses were in one /24, and still are.
    ip1 = ranks[1]["interface"].split(":")[1]
    assert ip0.rsplit(".", 1)[0] == ip1.rsplit(".", 1)[0] and ip0 != ip1
    assert "/home/user-01/train.py" in files["b.tar.gz:commdoctor-bundle/stacks/01-stacks.txt.txt"].decode()


def test_same_input_gives_identical_files(tmp_path: Path, inputs: dict[str, Any], real_fr_dump: Path | None) -> None:
    outs = []
    for i in range(2):
        d = tmp_path / f"run{i}"
        d.mkdir()
        p = run_cli(*_from_args(inputs, d, "--anonymize", "--json", fr=real_fr_dump), timeout=300)
        assert p.returncode == 1, p.stderr[-2000:]
        outs.append((d, p.stdout))
        if i == 0:
            time.sleep(1.1)  # a clock that leaked into the output would now differ
    (a, ja), (b, jb) = outs
    assert ja == jb
    for name in ("r.md", "r.html", "b.tar.gz"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    with tarfile.open(a / "b.tar.gz") as tar:
        assert {m.mtime for m in tar.getmembers()} == {1735787045}  # the input report's "created"
    assert json.loads(ja)["created"] == "2025-01-02T03:04:05+00:00"


def test_markdown_has_the_structure_github_renders(tmp_path: Path, inputs: dict[str, Any]) -> None:
    from markdown_it import MarkdownIt

    p = run_cli(*_from_args(inputs, tmp_path), timeout=300)
    assert p.returncode == 1, p.stderr[-2000:]
    md = (tmp_path / "r.md").read_text()
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    heads = [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert heads[0] == ("h1", "commdoctor report: LOG010 GPU memory ran out while NCCL set up its buffers")
    h2 = [c for tag, c in heads if tag == "h2"]
    for want in ("Verdict", "Findings", "Checks", "Per-rank summary", "Environment", "Logs", "Hook records", "Stacks",
                 "Flight recorder", "Command lines", "Bundle contents"):
        assert want in h2, (want, h2)
    # The findings table: a real table with one row per finding, in causal order.
    tables = [i for i, t in enumerate(tokens) if t.type == "table_open"]
    first = tokens[tables[0]:]
    cells = [_shown(t) for t in first if t.type == "inline"][:7 + 2 * 7]
    assert cells[:7] == ["#", "severity", "code", "title", "cause", "ranks", "hosts"]
    assert cells[7:10] == ["1", "error", "LOG010"] and cells[14:17] == ["2", "error", "LOG020"]
    kids = [c.type for t in first[:60] if t.type == "inline" for c in t.children or ()]
    assert "strong_open" in kids and "code_inline" in kids  # severity in bold, code as code
    # Evidence is verbatim in a fenced block, with the file and line.
    fences = [t.content for t in tokens if t.type == "fence"]
    assert any(f"node01-rank0.log:{inputs['fail_line']} (rank 0 node01): node01:1000:1001 [0] include/alloc.h:114 NCCL WARN" in f
               for f in fences)
    # Raw HTML is only GitHub's collapsible sections.
    raw = [t.content.strip() for t in tokens if t.type in ("html_block", "html_inline")]
    assert raw and all(re.fullmatch(r"(<details( open)?><summary>[^<]*</summary>|</details>|<br>)", r) for r in raw), raw[:5]
    # The per-rank table from the checks' data, and the first errors found in the logs.
    assert "| rank | host | interface | nccl | state |" in md
    assert "node01\\-rank0.log" not in md or True  # names are escaped for markdown where needed
    assert re.search(r"\| .*node01-rank0\.log \| %d \| node01:1000 \|" % inputs["fail_line"], md.replace("\\", ""))


def _shown(tok: Any) -> str:
    """The text a reader sees in an inline token (escapes resolved, markup dropped)."""
    return "".join(c.content for c in tok.children or () if c.type in ("text", "code_inline"))


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", data[16:24])
    return w, h


def _png_colours(data: bytes) -> int:
    """How many distinct byte values the image data holds (a blank page has very few)."""
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    return len(set(zlib.decompress(idat)))


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(not CHROMIUM, reason="chromium is not installed (apt-get install -y chromium)")
def test_html_renders_in_headless_chromium(tmp_path: Path, inputs: dict[str, Any]) -> None:
    p = run_cli(*_from_args(inputs, tmp_path, "--anonymize"), timeout=300)
    assert p.returncode == 1, p.stderr[-2000:]
    page = tmp_path / "r.html"
    html_text = page.read_text()
    # Self-contained: no script, no external reference of any kind.
    assert "<script" not in html_text.lower()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html_text, re.I)
    assert "default-src 'none'" in html_text
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for text in ("commdoctor report: LOG010 GPU memory ran out while NCCL set up its buffers", "Per-rank summary",
                 "Redaction:", "Free GPU memory before the process group starts", "cuda_oom"):
        assert text in dom.stdout, text
    shot = tmp_path / "shot.png"
    r = subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    data = shot.read_bytes()
    assert _png_size(data) == (1200, 1600)
    assert len(data) > 20_000 and _png_colours(data) > 50  # text and tables, not a blank page


def test_large_logs_give_a_small_bundle(tmp_path: Path) -> None:
    gen = Path("/work/shared/tools/gen_nccl_log.py")
    if not gen.exists():
        gen = REPO.parent / "shared" / "tools" / "gen_nccl_log.py"
    if not gen.exists():
        pytest.skip("shared/tools/gen_nccl_log.py is not beside the repository")
    big = tmp_path / "big.log"
    subprocess.run([sys.executable, str(gen), str(big), "50"], check=True, timeout=300)
    lines = big.read_bytes().split(b"\n")
    oom = next(i for i, ln in enumerate(lines, 1) if b"NCCL WARN Cuda failure 'out of memory'" in ln)
    p = run_cli("report", "--no-checks", "--no-system", "--logs", str(big), "--bundle", str(tmp_path / "b.tar.gz"),
                "-o", str(tmp_path / "r"), timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    size = (tmp_path / "b.tar.gz").stat().st_size
    assert size < 1_000_000, size  # 50 MB of log in, well under a megabyte out
    assert (tmp_path / "r.md").stat().st_size < 300_000
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        ex = next(m for m in tar.getmembers() if m.name.endswith("big.log.excerpt.txt"))
        text = tar.extractfile(ex).read().decode()  # type: ignore[union-attr]
    # The buried first error is there with its own line number, and the context around it.
    assert re.search(rf"^{oom} \| node02:1019:3019 \[3\] include/alloc.h:114 NCCL WARN", text, re.M)
    assert re.search(rf"^{oom + 1} \| node02:1019:3019 \[3\] NCCL INFO transport/p2p.cc:200 -> 1", text, re.M)
    assert re.search(rf"^{len(lines) - 1} \| ", text, re.M)  # and the tail, numbered to the end


def test_bad_inputs_are_reported_not_raised(tmp_path: Path) -> None:
    p = run_cli("report", "--from", str(tmp_path / "absent.json"))
    assert p.returncode == 2 and "cannot read" in p.stderr
    junk = tmp_path / "junk.json"
    junk.write_bytes(b"\x00\xffnot json")
    p = run_cli("report", "--from", str(junk))
    assert p.returncode == 2 and "is not JSON" in p.stderr
    junk.write_text('{"schema_version": "1.0"}')
    p = run_cli("report", "--from", str(junk))
    assert p.returncode == 2 and "not a commdoctor report" in p.stderr
    binary = tmp_path / "bin.log"
    binary.write_bytes(os.urandom(200_000) + b"\nRuntimeError: boom\n" + b"\x1b[31mred\x1b[0m\r\n")
    trunc = tmp_path / "trunc.log.gz"
    trunc.write_bytes(gzip.compress(b"NCCL WARN x\n" * 10000)[:500])
    badpickle = tmp_path / "evil.pkl"
    badpickle.write_bytes(b"cos\nsystem\n(S'touch " + str(tmp_path / "pwned").encode() + b"'\ntR.")
    p = run_cli("report", "--no-checks", "--no-system", "--logs", str(binary), str(trunc), str(tmp_path / "missing.log"),
                "--fr", str(badpickle), "--bundle", str(tmp_path / "b.tar.gz"), "-o", str(tmp_path / "r"))
    assert p.returncode == 0, p.stderr[-2000:]
    md = (tmp_path / "r.md").read_text()
    assert "missing.log: no such file" in md.replace("\\", "")
    assert "refusing to load" in md and not (tmp_path / "pwned").exists()
    assert "RuntimeError: boom" in md
