"""Redaction and anonymization, one string at a time (the CLI-level tests are in test_report_cli.py)."""

from __future__ import annotations

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
