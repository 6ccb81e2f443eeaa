"""Redaction and anonymization, one string at a time (the CLI-level tests are in test_report_cli.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import secrets_corpus as S
from commdoctor.render.bundle import redact_lines
from commdoctor.render.redact import Redactor, expand_nodelist, secret_env_name


def _clean(text: str) -> list[str]:
    return [s for s in S.SECRETS if s in text]


def test_every_planted_secret_in_logs_is_redacted_and_counted() -> None:
    r = Redactor()
    out = "\n".join(redact_lines(S.log_lines(), r))
    assert _clean(out) == []
    c = r.counts
    for kind in ("hf-token", "aws-access-key", "secret-assignment", "wandb-key", "url-credentials",
                 "authorization-header", "slack-token", "private-key"):
        assert c[kind] >= 1, (kind, dict(c))
    assert len(redact_lines(S.log_lines(), Redactor())) == len(S.log_lines())  # line numbers stay true
    assert "[rank1]: wandb: logging in with key [REDACTED:wandb-key]" in out
    assert "[rank0]: loaded key:" in out  # what is not secret stays


def test_command_lines_and_env_values() -> None:
    r = Redactor()
    assert _clean(r.text(S.CMDLINE)) == []
    assert "--nnodes 2 train.py" in r.text(S.CMDLINE)
    env = r.obj(S.ENV)
    assert _clean(str(env)) == []
    assert env["NCCL_DEBUG"] == "INFO"
    assert env["HF_TOKEN"] == "[REDACTED:secret-variable]"
    assert env["https_proxy"] == "http://[REDACTED:url-credentials]@proxy.corp.example:3128"
    assert env["MY_CERT_PEM"] == "[REDACTED:private-key]"


@pytest.mark.parametrize("name,secret", [("HF_TOKEN", True), ("MY_SERVICE_PASSWORD", True), ("AWS_SECRET_ACCESS_KEY", True),
                                         ("WANDB_API_KEY", True), ("DEPLOY_KEY", True), ("NCCL_IB_PKEY", False),
                                         ("NCCL_SOCKET_IFNAME", False), ("TORCH_NCCL_ASYNC_ERROR_HANDLING", False)])
def test_secret_variable_names(name: str, secret: bool) -> None:
    assert secret_env_name(name) is secret


def test_ordinary_diagnostics_survive() -> None:
    r = Redactor()
    lines = [
        "node02:1019:3019 [3] include/alloc.h:114 NCCL WARN Cuda failure 'out of memory'",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.3.1]:29500",
        "password authentication failed for user trainer",
        "NCCL_IB_PKEY=0x8001 NCCL_SOCKET_IFNAME=eth0 TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
        "commId 0x5f3c2a91e0d4b7c8 busId 16000 sha 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    ]
    assert [r.text(x) for x in lines] == lines
    assert r.summary()["total"] == 0


def test_anonymization_is_consistent_and_keeps_subnets() -> None:
    r = Redactor(anonymize=True)
    a = "node01:1000:1000 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.1<0>"
    b = "node02:1008:1008 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.9<0>"
    c = "node03:1016:1016 [0] NCCL INFO Bootstrap : Using eth0:10.1.7.1<0> and 192.168.5.5 and 127.0.0.1"
    r.discover(a, b, c, {"host": "gpu-box.cluster.example.com", "user": "alice"})
    out = [r.text(x) for x in (a, b, c, "alice@node01 ran /home/alice/train.py on gpu-box.cluster.example.com")]
    joined = "\n".join(out)
    for original in ("node01", "node02", "node03", "10.1.0.1", "10.1.0.9", "10.1.7.1", "192.168.5.5", "alice",
                     "gpu-box", "cluster.example.com"):
        assert original not in joined, original
    assert "127.0.0.1" in joined  # loopback is the same everywhere and means something
    ip1, ip2, ip3 = (x.split("eth0:")[1].split("<")[0] for x in out[:3])
    assert ip1.rsplit(".", 1)[0] == ip2.rsplit(".", 1)[0] != ip3.rsplit(".", 1)[0]  # the /24 is kept
    assert ip1.split(".")[:2] == ip3.split(".")[:2]  # and so is the /16
    assert out[0].startswith("node-01:") and "user-01@node-01" in out[3]
    # The same value maps to the same alias later, in any other text.
    assert r.text("peer 10.1.0.9 on node02") == f"peer {ip2} on node-02"


def test_aliases_never_collide_with_real_values() -> None:
    r = Redactor(anonymize=True)
    text = "hosts node-01 and gpu7 at 10.0.0.1 and 172.16.0.1"
    r.discover(text, {"host": "gpu7"}, {"host": "node-01"})
    out = r.text(text)
    assert "gpu7" not in out
    # 10.0.0.1 really appears, so no other address may be given that alias.
    assert out.count("10.0.0.1") <= 1 and "172.16.0.1" not in out


@pytest.mark.parametrize("shape,line,secret", S.SHAPES, ids=[x[0] for x in S.SHAPES])
def test_every_planted_shape_is_redacted(shape: str, line: str, secret: str) -> None:
    r = Redactor()
    out = r.text(f"[rank3]: {line} (while starting)")
    assert secret not in out, out
    assert "[REDACTED:" in out and r.summary()["total"] >= 1
    assert out.startswith("[rank3]: ")  # the text before it stays (a cookie header runs to the end of the line)


@pytest.mark.parametrize("line", S.NEAR_MISSES)
def test_near_misses_come_through_unchanged(line: str) -> None:
    r = Redactor()
    assert r.text(line) == line
    assert r.obj({"line": line}) == {"line": line}
    assert r.summary()["total"] == 0


def test_a_value_seen_as_a_secret_is_removed_wherever_it_is_quoted() -> None:
    """ENV024's remedy quotes MASTER_ADDR without its scheme: ``user:pw@host`` has no secret shape left."""
    r = Redactor()
    pw = "Zq7-MasterPw-91x"
    env = {"MASTER_ADDR": f"http://svc:{pw}@head-node", "DB_PASSWORD": "Pl4nted-Db-Pw", "PWD": "/home/shared/run"}
    remedy = f"drop the scheme ('svc:{pw}@head-node'); the job printed Pl4nted-Db-Pw at start; cwd /home/shared/run"
    r.discover(env)  # learning first, as sanitize does, before any text is composed
    out = r.text(remedy)
    assert pw not in out and "Pl4nted-Db-Pw" not in out, out
    assert "head-node" in out and "/home/shared/run" in out  # a working directory is not a secret
    assert r.counts["known-secret"] == 2


def test_env_names_match_in_any_case() -> None:
    r = Redactor()
    out = r.obj({"my_token": "lower-case-value-1", "Db_Password": "Mixed-case-value-2", "sort_key": "by-rank",
                 "NCCL_IB_PKEY": "0x8001", "path": "/x"})
    assert out["my_token"] == out["Db_Password"] == "[REDACTED:secret-variable]"
    assert out["NCCL_IB_PKEY"] == "0x8001" and out["path"] == "/x"
    assert secret_env_name("my_token") and secret_env_name("Db_Password") and not secret_env_name("PWD")
    assert not secret_env_name("AWS_WEB_IDENTITY_TOKEN_FILE") and not secret_env_name("SSH_AUTH_SOCK")


def test_anonymize_learns_every_launcher_host_source() -> None:
    r = Redactor(anonymize=True)
    env = {"SLURM_NODELIST": "gpuq[07-08]", "PET_RDZV_ENDPOINT": "rdzvbox.corp.lan:29400", "master_addr": "mastbox"}
    cmd = "torchrun --rdzv-endpoint=rdzv2box:29400 --master_addr mast2box train.py; MASTER_ADDR=mast3box"
    r.discover(env, cmd, "evidence: PET_RDZV_ENDPOINT=rdzv3box:29400")
    out = r.text(f"{env} {cmd} gpuq07 gpuq08 rdzv3box")
    for host in ("gpuq", "rdzvbox", "corp.lan", "mastbox", "rdzv2box", "mast2box", "mast3box", "rdzv3box"):
        assert host not in out, (host, out)
    assert "node-" in out and "train.py" in out


def test_nodelist_expansion() -> None:
    assert expand_nodelist("node[01-03,07],gpu5") == ["node01", "node02", "node03", "node07", "gpu5"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_redaction_never_raises(text: str) -> None:
    r = Redactor(anonymize=True)
    r.discover(text)
    assert isinstance(r.text(text), str)
    assert len(redact_lines(text.split("\n"), r)) == len(text.split("\n"))


def test_report_modules_stay_standard_library_only() -> None:
    """Redaction, excerpts, the document and the bundle import neither rich, textual nor torch."""
    import subprocess
    import sys

    code = ("import sys; import commdoctor.render.redact, commdoctor.render.excerpts, commdoctor.render.report, "
            "commdoctor.render.bundle, commdoctor.probes.sysinfo; "
            "print(sorted(m for m in ('rich', 'textual', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _outputs(folder: Path) -> list[tuple[str, bytes]]:
    """Every file written under ``folder``, and every member of every bundle in it."""
    import tarfile

    out = []
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out.append((p.name, p.read_bytes()))
            if p.name.endswith(".tar.gz"):
                with tarfile.open(p) as tar:
                    for m in tar.getmembers():
                        if m.isfile():
                            out.append((f"{p.name}:{m.name}", tar.extractfile(m).read()))  # type: ignore[union-attr]
    return out


def test_report_and_bundle_carry_no_planted_secret(tmp_path: Path) -> None:
    """Every shape of the corpus, planted in the environment, a command line, stacks and a log folder.

    The live environment checks run (ENV024 composes its remedy from MASTER_ADDR), every output
    file and bundle member is searched, then ``report --from`` renders the JSON again and is
    searched too. A link out of the log folder is listed, not followed.
    """
    from tests.conftest import run_cli

    lines = [line for _, line, _ in S.SHAPES]
    secrets = [sec for _, _, sec in S.SHAPES]
    master_pw = "Zq7-MasterPw-91x"
    env = {f"COMMDOCTOR_PLANT_{i:03d}": line for i, line in enumerate(lines)}
    env.update(MASTER_ADDR=f"http://svc:{master_pw}@head-node", MASTER_PORT="29500", my_token="lower-case-tok-77Q",
               NCCL_DEBUG="INFO")
    logs = tmp_path / "in" / "logs"
    logs.mkdir(parents=True)
    (logs / "rank0.log").write_text("".join(f"[rank0]: {x}\n" for x in lines[:20]) + "[rank0]: RuntimeError: boom\n"
                                    + "".join(f"[rank0]: {x}\n" for x in lines[20:]))
    outside = tmp_path / "in" / "netrc"
    outside.write_text("machine example.org login me password OutsideSecret-42\n")
    (logs / "latest.log").symlink_to(outside)
    stacks = tmp_path / "in" / "stacks.txt"
    stacks.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    p = run_cli("report", "--select", "ENV", "--all-env", "--logs", str(logs), "--stacks", str(stacks),
                "--cmdline", " ; ".join(lines[:40]), "--cmdline", " ; ".join(lines[40:]), "-o", str(out / "r"),
                "--bundle", str(out / "b.tar.gz"), "--json", env=env, timeout=240)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    (out / "stdout.json").write_text(p.stdout)
    (out / "stderr.txt").write_text(p.stderr)
    p2 = run_cli("report", "--from", str(out / "stdout.json"), "-o", str(out / "again"), "--bundle",
                 str(out / "again.tar.gz"), timeout=120)
    assert p2.returncode in (0, 1), p2.stderr[-3000:]
    (out / "stderr2.txt").write_text(p2.stderr)
    needles = [*secrets, master_pw, "lower-case-tok-77Q", "OutsideSecret-42"]
    files = _outputs(out)
    assert len(files) >= 12, [n for n, _ in files]
    leaks = sorted({(name, n) for name, data in files for n in needles if n.encode() in data})
    assert leaks == [], leaks
    doc = json.loads(p.stdout)
    # The material did reach the report: ENV024 with its remedy, the planted variables, the stacks.
    env024 = [f for f in doc["findings"] if f["code"] == "ENV024"]
    assert env024 and "head-node" in json.dumps(env024)
    assert doc["environment"]["redaction"]["total"] >= len(S.SHAPES)
    md = (out / "r.md").read_text()
    assert "latest.log: a link to a file outside" in md and "listed and not read" in md
    assert md.count("[REDACTED:") >= len(S.SHAPES)


def test_report_anonymize_hides_launcher_hosts_in_every_file(tmp_path: Path) -> None:
    """SLURM_NODELIST (compressed), PET_RDZV_ENDPOINT's host, MASTER_ADDR and launcher flags, in a live report."""
    from tests.conftest import run_cli

    env = {"SLURM_NODELIST": "gpuq[07-08]", "SLURM_JOB_NODELIST": "gpuq[07-08]", "SLURMD_NODENAME": "gpuq07",
           "PET_RDZV_ENDPOINT": "rdzvbox.corp.lan:29400", "MASTER_ADDR": "mastbox", "MASTER_PORT": "29500"}
    out = tmp_path / "out"
    out.mkdir()
    p = run_cli("report", "--select", "ENV", "--anonymize", "--all-env", "--cmdline",
                "torchrun --rdzv-endpoint=rdzv2box:29400 --master_addr=mast2box train.py", "-o", str(out / "r"),
                "--bundle", str(out / "b.tar.gz"), "--json", env=env, timeout=240)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    (out / "stdout.json").write_text(p.stdout)
    leaks = sorted({(name, h) for name, data in _outputs(out)
                    for h in ("gpuq", "rdzvbox", "corp.lan", "mastbox", "rdzv2box", "mast2box") if h.encode() in data})
    assert leaks == [], leaks
    doc = json.loads(p.stdout)
    assert doc["environment"]["redaction"]["aliases"]["hostnames"] >= 5
