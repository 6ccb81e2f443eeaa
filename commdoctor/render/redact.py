"""Redaction (always on) and anonymization (on request) of everything a report shares.

Promise: ``Redactor.text``/``Redactor.obj`` replace secrets (cloud and API keys,
tokens, passwords, URL credentials, authorization headers, private keys) with
``[REDACTED:kind]`` and count them by kind; the values themselves are never
stored, logged or returned. With ``anonymize=True`` hostnames, IP and MAC
addresses and user names are replaced by stable aliases (node-01, 10.0.0.1,
user-01): one ``Redactor`` keeps one mapping, so the same host gets the same
alias in every file it touches, and addresses that shared a /8, /16 or /24
prefix still share it. Aliases never equal an original value seen during
discovery. Standard library only; pure functions of the input (no clock, no
randomness), so the same input in the same order gives the same output.

Two passes make the mapping complete before anything is written: call
``discover_text``/``discover_obj`` on all material first (it learns hostnames
from NCCL line prefixes, report fields and launcher variables, user names from
home paths), then ``text``/``obj`` on each piece.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from typing import Any, Callable, Iterable, Mapping

MARK = "[REDACTED:{}]"


def mark(kind: str) -> str:
    return MARK.format(kind)


# -- secrets ------------------------------------------------------------------

# Words that make an assignment's value a secret (lower case, matched anywhere in the name).
_SECRET_WORDS = r"(?:token|secret|passw(?:or)?d|passwd|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?|auth[_-]?key|session[_-]?key|client[_-]?secret)"
_SECRET_NAME = re.compile(rf"(?i){_SECRET_WORDS}|(?:^|_)KEY$|(?:^|_)PASS$|_AUTH$")
# Values that are placeholders, not secrets: leave them (and count nothing).
_PLACEHOLDER = re.compile(r"^(?:\[REDACTED[^\]]*\]|<[^>]*>|\*+|x{3,}|X{3,}|none|null|nil|true|false|\$\{?\w+\}?|-+)$", re.I)

_Rule = tuple[str, "re.Pattern[str]", Callable[["re.Match[str]", str], str]]


def _whole(m: re.Match[str], kind: str) -> str:
    return mark(kind)


def _keep1(m: re.Match[str], kind: str) -> str:
    return m.group(1) + mark(kind)


def _assign(m: re.Match[str], kind: str) -> str:
    value = m.group(3)
    if _PLACEHOLDER.match(value) or len(value) < 3:
        return m.group(0)
    return m.group(1) + m.group(2) + mark(kind)


def _auth(m: re.Match[str], kind: str) -> str:
    if _PLACEHOLDER.match(m.group(4)):
        return m.group(0)
    return m.group(1) + m.group(2) + (m.group(3) or "") + mark(kind)


_RULES: tuple[_Rule, ...] = (
    # A PEM block, also inside a one-line value with escaped newlines; a block
    # cut off at the end of an excerpt is redacted to the end.
    ("private-key", re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S), _whole),
    # The end of a block whose start lies before this text (an excerpt cut into it).
    ("private-key", re.compile(r"\A[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY-----"), _whole),
    ("url-credentials", re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]{1,20}://)[^\s/@:\"'<>]*:[^\s/@\"'<>]*@"), lambda m, k: m.group(1) + mark(k) + "@"),
    ("url-credentials", re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]{1,20}://)[A-Za-z0-9_\-.~%]{20,}@"), lambda m, k: m.group(1) + mark(k) + "@"),
    ("authorization-header", re.compile(r"(?i)\b((?:proxy-)?authorization)([\"']*\s*[:=][\"'\s]*)((?:bearer|basic|token|digest|negotiate|aws4-hmac-sha256)[\"'\s]+)?([^\s\"',;]+)"), _auth),
    ("bearer-token", re.compile(r"(?i)\b(bearer[\"'\s]+)(?!\[REDACTED)[A-Za-z0-9\-._~+/]{8,}=*"), _keep1),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b"), _whole),
    ("hf-token", re.compile(r"\b(?:hf|api_org)_[A-Za-z0-9]{30,}\b"), _whole),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b"), _whole),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), _whole),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"), _whole),
    ("api-key", re.compile(r"\b(?:sk-(?:proj-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}|glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36})\b"), _whole),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), _whole),
    # W&B keys are 40 hex digits: redact them wherever wandb is named on the line.
    ("wandb-key", re.compile(r"(?i)(wandb[^\n]{0,80}?)(?<![0-9a-f])[0-9a-f]{40}(?![0-9a-f])"), _keep1),
    # NAME=value, "name": "value", name: value, --name value, where the name says secret.
    ("secret-assignment", re.compile(rf"(?i)([A-Za-z0-9_.-]*{_SECRET_WORDS}[A-Za-z0-9_.-]*)([\"']?\s*[=:]\s*[\"']?)([^\s\"',;&]+)"), _assign),
    ("secret-argument", re.compile(rf"(?i)((?<![\w-])--?[A-Za-z0-9_.-]*{_SECRET_WORDS}[A-Za-z0-9_.-]*)(\s+)(?!-)([^\s\"',;&]+)"), _assign),
    ("secret-assignment", re.compile(r"\b([A-Z][A-Z0-9_]*_(?:KEY|PASS|AUTH))(\s*[=:]\s*[\"']?)([^\s\"',;&]+)"), _assign),
    # A line that is nothing but a long base64 run: the body of a key or certificate.
    ("base64-blob", re.compile(r"(?m)^(\s*)(?=[A-Za-z0-9+/]*[a-z])(?=[A-Za-z0-9+/]*[A-Z])(?=[A-Za-z0-9+/]*[0-9])[A-Za-z0-9+/]{60,}={0,2}\s*$"), _keep1),
)


def secret_env_name(name: str) -> bool:
    """Whether an environment variable of this name holds a secret as its whole value."""
    return bool(_SECRET_NAME.search(name))


# -- anonymization ------------------------------------------------------------

_IPV4 = re.compile(r"(?<![\w.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?:%[\w.-]+)?(?![\w:])")
_MAC = re.compile(r"(?<![\w:])[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}(?:(?::[0-9A-Fa-f]{2}){14})?(?![\w:])")
# host:pid:tid [dev] NCCL ..., the prefix NCCL puts on every line.
_NCCL_PREFIX = re.compile(r"(?m)^(?:\[[^\]]*\]:?\s*|\d+:\s*)?([A-Za-z][A-Za-z0-9_.-]*):\d+:\d+ \[\d+\] NCCL")
# "hostname: X" in free text; X must look like a host (a digit, dot or dash in it), so that
# "host: unreachable" does not make every "unreachable" an alias.
_HOST_FIELD = re.compile(r"(?i)\b(?:host(?:name)?|node(?:name)?|nodelist)\s*[:=]\s*\"?(?=[^\s\"]*[\d.-])([A-Za-z][A-Za-z0-9_.\-\[\],]*)")
_CLOUD_HOST = re.compile(r"\bip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[A-Za-z0-9.-]+)?\b")
_HOME = re.compile(r"/(?:home|Users|scratch|gpfs/home)/([A-Za-z_][A-Za-z0-9_.-]{0,31})(?=/|\b)")
_VERSIONISH = re.compile(r"(?i)\b(?:version|ver|v|cudnn|driver)[\s:=\"']*$")

_FILE_EXTS = frozenset({"log", "txt", "json", "jsonl", "gz", "out", "err", "py", "md", "html", "pkl", "pickle",
                        "csv", "yaml", "yml", "sh", "tar", "dump", "trace"})
_ALIAS = re.compile(r"^(?:node|user|domain)-\d+(?:\.invalid)?$")
_NOT_HOSTS = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "none", "(none)",
                        "n/a", "null", "unknown", "default", "true", "false", "nccl", "gloo"})
_NOT_USERS = frozenset({"root", "nobody", "daemon", "bin", "sys", "admin", "user", "shared", "ubuntu", "runner"})
_HOST_KEYS = frozenset({"host", "hostname", "hosts", "node", "nodename", "fqdn", "master_addr", "pod"})
_HOST_VARS = frozenset({"HOSTNAME", "MASTER_ADDR", "SLURMD_NODENAME", "SLURM_NODELIST", "SLURM_JOB_NODELIST",
                        "SLURM_STEP_NODELIST", "SLURM_TOPOLOGY_ADDR", "PET_RDZV_ENDPOINT", "NCCL_COMM_ID",
                        "SLURM_SUBMIT_HOST", "SLURM_LAUNCH_NODE_IPADDR", "HOST", "NODE_NAME", "POD_NAME"})
_USER_KEYS = frozenset({"user", "username", "owner", "USER", "LOGNAME", "SUDO_USER", "SLURM_JOB_USER"})


def expand_nodelist(text: str) -> list[str]:
    """Slurm's compressed host lists: ``node[01-03,07],gpu5`` -> node01 node02 node03 node07 gpu5."""
    out: list[str] = []
    for m in re.finditer(r"([A-Za-z0-9_.-]+)(?:\[([0-9,\-]+)\])?([A-Za-z0-9_.-]*)", text):
        head, ranges, tail = m.group(1), m.group(2), m.group(3)
        if not ranges:
            out.append(head + tail)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            if not lo.isdigit():
                continue
            width = len(lo)
            end = int(hi) if hi.isdigit() else int(lo)
            for n in range(int(lo), min(end, int(lo) + 4096) + 1):
                out.append(f"{head}{n:0{width}d}{tail}")
    return out


class Anonymizer:
    """Stable aliases for hostnames, addresses and users (one mapping per bundle)."""

    def __init__(self) -> None:
        self.hosts: dict[str, str] = {}  # lower-case original -> alias
        self.domains: dict[str, str] = {}
        self.users: dict[str, str] = {}
        self.v4: dict[str, str] = {}
        self.v6: dict[str, str] = {}
        self.macs: dict[str, str] = {}
        self._v4_tree: dict[tuple[int, ...], dict[int, int]] = {}
        self._v4_leaves: dict[tuple[int, ...], dict[int, int]] = {}
        self._v4_next: dict[tuple[int, ...], int] = {}
        self._v6_prefix: dict[str, int] = {}
        self._v6_host: dict[str, int] = {}
        self._seen_v4: set[str] = set()  # every original address met in discovery: aliases avoid them
        self._seen_names: set[str] = set()
        self._word_re: re.Pattern[str] | None = None
        self._alias_values: set[str] = set()

    # -- learning ---------------------------------------------------------------

    def learn_host(self, name: str) -> None:
        name = name.strip().strip("\"'[]").rstrip(".").lower()
        if not name or name in _NOT_HOSTS or len(name) < 2 or name.replace(".", "").isdigit() or _ALIAS.match(name):
            return
        if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", name) or _is_ip(name):
            return
        short, _, domain = name.partition(".")
        if name in self.hosts or short in _NOT_HOSTS:
            return
        self._seen_names.add(name)
        alias = self.hosts.get(short) or self._next("node", self.hosts.values())
        self.hosts[short] = alias
        if domain:
            self.hosts[name] = alias
            if "." in domain and domain not in self.domains:
                self.domains[domain] = self._next("domain", self.domains.values()) + ".invalid"
        self._word_re = None

    def learn_user(self, name: str) -> None:
        name = name.strip()
        if not name or name.lower() in _NOT_USERS or len(name) < 2 or name.startswith("systemd") or _ALIAS.match(name):
            return
        if name not in self.users:
            self._seen_names.add(name.lower())
            self.users[name] = self._next("user", self.users.values())
            self._word_re = None

    def _next(self, prefix: str, used: Iterable[str]) -> str:
        taken = set(used)
        n = len(taken) + 1
        while True:
            alias = f"{prefix}-{n:02d}"
            if alias not in taken and alias not in self._seen_names:
                return alias
            n += 1

    def discover_text(self, text: str) -> None:
        for m in _NCCL_PREFIX.finditer(text):
            self.learn_host(m.group(1))
        for m in _HOST_FIELD.finditer(text):
            for h in expand_nodelist(m.group(1)):
                self.learn_host(h)
        for m in _CLOUD_HOST.finditer(text):
            self.learn_host(m.group(0))
        for m in _HOME.finditer(text):
            self.learn_user(m.group(1))
        for m in _IPV4.finditer(text):
            self._seen_v4.add(m.group(0))

    def discover_obj(self, obj: Any, key: str | None = None) -> None:
        if isinstance(obj, Mapping):
            for k, v in obj.items():
                self.discover_obj(v, str(k))
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                self.discover_obj(v, key)
        elif isinstance(obj, str):
            if key is not None:
                if key.lower() in _HOST_KEYS or key in _HOST_VARS:
                    value = re.sub(r"^[a-z][a-z0-9+.-]*://", "", obj)  # an endpoint URL: its host part
                    value = re.sub(r":\d+(/.*)?$", "", value)
                    for h in expand_nodelist(value) if "[" in value or "," in value else [value]:
                        self.learn_host(h)
                if key in _USER_KEYS:
                    self.learn_user(obj)
            self.discover_text(obj)

    # -- replacing --------------------------------------------------------------

    def _words(self) -> re.Pattern[str] | None:
        if self._word_re is None:
            names = sorted(set(self.hosts) | set(self.domains) | set(self.users), key=lambda s: (-len(s), s))
            if not names:
                return None
            self._word_re = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, names))
                                       + r")((?:\.[A-Za-z][A-Za-z0-9-]*)*)(?![A-Za-z0-9])", re.I)
        return self._word_re

    def _word_alias(self, m: re.Match[str]) -> str:
        w, suffix = m.group(1), m.group(2) or ""
        low = w.lower()
        if low in self.hosts:
            # node01.cluster.example.com when only node01 was learned: the domain goes too.
            if suffix.count(".") >= 2 and suffix.rsplit(".", 1)[1].lower() not in _FILE_EXTS:
                dom = suffix[1:].lower()
                if dom not in self.domains:
                    self.domains[dom] = self._next("domain", self.domains.values()) + ".invalid"
                return f"{self.hosts[low]}.{self.domains[dom]}"
            return self.hosts[low] + suffix
        if low in self.domains:
            return self.domains[low] + suffix
        for u, a in self.users.items():
            if u.lower() == low:
                return a + suffix
        return w + suffix

    def text(self, s: str, addresses: bool = True) -> str:
        if addresses:
            s = _MAC.sub(self._mac, s)
            s = _IPV6.sub(self._ipv6, s)
            s = _IPV4.sub(self._ipv4, s)
        r = self._words()
        return r.sub(self._word_alias, s) if r else s

    def _ipv4(self, m: re.Match[str]) -> str:
        octets = tuple(int(g) for g in m.groups())
        if any(o > 255 for o in octets):
            return m.group(0)
        before = m.string[max(0, m.start() - 12):m.start()]
        if _VERSIONISH.search(before):
            return m.group(0)  # 8.9.2.26 after "cudnn": a version, not an address
        return self.ipv4(m.group(0))

    def ipv4(self, addr: str) -> str:
        """The alias of one IPv4 address. Loopback, unspecified, masks and multicast stay."""
        if addr in self.v4:
            return self.v4[addr]
        a, b, c, d = (int(x) for x in addr.split("."))
        if a in (0, 127, 255) or a >= 224 or addr in self._alias_values:
            return addr
        if (a, b) == (169, 254):  # link-local keeps its range: it is a diagnosis by itself
            top = (169, 254)
            cc = self._child(top, c, start=0)
            alias = f"169.254.{cc}.{self._leaf((*top, cc), d)}"
        else:
            aa = self._child((), a, start=10)
            bb = self._child((aa,), b, start=0)
            cc = self._child((aa, bb), c, start=0)
            alias = f"{aa}.{bb}.{cc}.{self._leaf((aa, bb, cc), d)}"
        self.v4[addr] = alias
        self._alias_values.add(alias)
        return alias

    def _child(self, parent: tuple[int, ...], original: int, start: int) -> int:
        kids = self._v4_tree.setdefault(parent, {})
        if original not in kids:
            kids[original] = start + len(kids)
            if parent == () and kids[original] in (127, 169):
                kids[original] += 1  # never alias into loopback or link-local
        return min(kids[original], 254)

    def _leaf(self, parent: tuple[int, ...], original: int) -> int:
        kids = self._v4_leaves.setdefault(parent, {})
        if original not in kids:
            n = self._v4_next.get(parent, 0) + 1
            while ".".join(map(str, (*parent, n))) in self._seen_v4 and n < 254:
                n += 1  # an alias must never be an address that really appears
            self._v4_next[parent] = n
            kids[original] = min(n, 254)
        return kids[original]

    def _ipv6(self, m: re.Match[str]) -> str:
        raw = m.group(0)
        addr, _, scope = raw.partition("%")
        try:
            ip = ipaddress.IPv6Address(addr)
        except ValueError:
            return raw
        if addr.count(":") < 3 and not any(ch.isdigit() for ch in addr):
            return raw  # "ab::cd" in C++ names, not an address
        if ip.is_loopback or ip.is_unspecified or ip.is_multicast:
            return raw
        if ip.ipv4_mapped is not None:
            return "::ffff:" + self.ipv4(str(ip.ipv4_mapped))
        key = ip.exploded
        if key not in self.v6:
            net = key[:19]  # the /64 prefix
            if ip.is_link_local:
                self.v6[key] = f"fe80::{len([k for k in self.v6 if k.startswith('fe80')]) + 1:x}"
            else:
                p = self._v6_prefix.setdefault(net, len(self._v6_prefix) + 1)
                h = self._v6_host.setdefault(key, sum(1 for k in self._v6_host if k[:19] == net) + 1)
                self.v6[key] = f"fd00:0:0:{p:x}::{h:x}"
        return self.v6[key] + (f"%{self.text(scope, addresses=False)}" if scope else "")

    def _mac(self, m: re.Match[str]) -> str:
        raw = m.group(0).lower()
        if set(raw) <= {"0", ":"} or set(raw) <= {"f", ":"}:
            return m.group(0)
        if raw not in self.macs:
            n = len(self.macs) + 1
            self.macs[raw] = "02:00:00:00:" + f"{n >> 8 & 0xff:02x}:{n & 0xff:02x}" + (":00" * 14 if len(raw) > 17 else "")
        return self.macs[raw]

    def summary(self) -> dict[str, int]:
        return {"hostnames": len(set(self.hosts.values())), "domains": len(self.domains), "users": len(self.users),
                "ipv4_addresses": len(self.v4), "ipv6_addresses": len(self.v6), "mac_addresses": len(self.macs)}


def _is_ip(s: str) -> bool:
    try:
        ipaddress.ip_address(s)
        return True
    except ValueError:
        return False


class Redactor:
    """Redacts secrets (always) and anonymizes identities (when asked), counting what it replaced."""

    def __init__(self, anonymize: bool = False) -> None:
        self.counts: Counter[str] = Counter()
        self.anon = Anonymizer() if anonymize else None

    def secrets(self, s: str) -> str:
        if not s:
            return s
        for kind, rx, fn in _RULES:
            if kind == "wandb-key" and "wandb" not in s.lower():
                continue
            new, n = rx.subn(lambda m, k=kind: self._count(m, k, fn), s)  # type: ignore[misc]
            if n:
                s = new
        return s

    def _count(self, m: re.Match[str], kind: str, fn: Callable[[re.Match[str], str], str]) -> str:
        out = fn(m, kind)
        if out != m.group(0):
            self.counts[kind] += 1
        return out

    def text(self, s: str, addresses: bool = True) -> str:
        s = self.secrets(s)
        return self.anon.text(s, addresses) if self.anon else s

    def env_value(self, name: str, value: str) -> str:
        if value and secret_env_name(name) and not _PLACEHOLDER.match(value):
            self.counts["secret-variable"] += 1
            return mark("secret-variable")
        return self.text(value)

    def obj(self, obj: Any, key: str | None = None) -> Any:
        """A copy of JSON-like ``obj`` with every string redacted (dict keys too, when anonymizing)."""
        if isinstance(obj, Mapping):
            out: dict[str, Any] = {}
            for k, v in obj.items():
                ks = str(k)
                nk = self.anon.text(ks) if self.anon else ks
                out[nk] = self.obj(v, ks)
            return out
        if isinstance(obj, (list, tuple)):
            return [self.obj(v, key) for v in obj]
        if isinstance(obj, str):
            if key is not None and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) and key.upper() == key and key:
                return self.env_value(key, obj)  # an environment-variable-like key
            versionish = key is not None and ("version" in key.lower() or key.lower() in ("cudnn", "driver", "fw_ver"))
            return self.text(obj, addresses=not versionish)
        return obj

    def discover(self, *items: Any) -> None:
        if self.anon is None:
            return
        for it in items:
            if isinstance(it, str):
                self.anon.discover_text(it)
            else:
                self.anon.discover_obj(it)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"secrets": dict(sorted(self.counts.items())), "total": sum(self.counts.values()),
                               "anonymized": self.anon is not None}
        if self.anon is not None:
            out["aliases"] = self.anon.summary()
        return out
