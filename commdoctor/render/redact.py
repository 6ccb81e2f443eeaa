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
# "key" alone counts after a separator (wandb_key, --deploy-key), not inside a word (NCCL_IB_PKEY, monkey).
_SECRET_WORDS = (r"(?:token|secret|passw(?:or)?d|passwd|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
                 r"|credentials?|auth[_-]?key|session[_-]?key|client[_-]?secret|account[_-]?key"
                 r"|shared[_-]?access[_-]?key|sas[_-]?token|(?<=[_-])key(?![a-z])|(?<![a-z])auth(?![a-z]))")
_SECRET_NAME = re.compile(rf"(?i){_SECRET_WORDS}")
# Upper-case names only: FOO_KEY, DB_PASS, X_AUTH are secrets; "sort_key" in a JSON report is not a variable.
_SECRET_SUFFIX = re.compile(r"(?:^|_)(?:KEY|PASS|AUTH)$")
# Names that say "pwd" or "token" but hold a place, not a secret: the working directory, a path to a file.
_NOT_SECRET_NAME = re.compile(r"(?i)^(?:OLD)?PWD$|_(?:FILE|PATH|DIR|FILES|DIRS|LENGTH|LEN|TYPE|ENDPOINT|SOCK|METHOD|MODE)$")
# Values that are placeholders, not secrets: leave them (and count nothing).
_PLACEHOLDER = re.compile(r"^(?:\[REDACTED[^\]]*\]|<[^>]*>|\*+|x{3,}|X{3,}|none|null|nil|true|false|\$\{?\w+\}?|-+)$", re.I)

_Rule = tuple[str, "re.Pattern[str]", Callable[["re.Match[str]", str], str]]

# Every pattern here must run in time linear in its input (tests/test_regex_budget.py runs each on
# 100 kB of every character class): a name is matched from its first character only (the look-behind),
# its secret word is found by a bounded look-ahead and the name is at most 160 characters, so a long
# run of word characters costs a bounded amount of backtracking per run, not per starting position.
# (No possessive quantifiers: they need Python 3.11 and the package supports 3.10.)
_NAME_CH = r"A-Za-z0-9_.-"
_NAME_BODY = rf"(?=[{_NAME_CH}]{{0,120}}?{_SECRET_WORDS})[{_NAME_CH}]{{1,160}}"
_NAME = rf"(?<![{_NAME_CH}]){_NAME_BODY}"


def _whole(m: re.Match[str], kind: str) -> str:
    return mark(kind)


def _keep1(m: re.Match[str], kind: str) -> str:
    return m.group(1) + mark(kind)


def _assign(m: re.Match[str], kind: str) -> str:
    value = m.group(3)
    if _PLACEHOLDER.match(value) or len(value) < 3 or _NOT_SECRET_NAME.search(m.group(1).lstrip("-")):
        return m.group(0)
    return m.group(1) + m.group(2) + mark(kind)


def _auth(m: re.Match[str], kind: str) -> str:
    if _PLACEHOLDER.match(m.group(4)):
        return m.group(0)
    return m.group(1) + m.group(2) + (m.group(3) or "") + mark(kind)


def _keep1_value2(m: re.Match[str], kind: str) -> str:
    if _PLACEHOLDER.match(m.group(2)):
        return m.group(0)
    return m.group(1) + mark(kind)


def _userpass(m: re.Match[str], kind: str) -> str:
    """``-u user:password``: the user stays (it is in the report anyway), the password goes."""
    if _PLACEHOLDER.match(m.group(3)) or (m.group(2).isdigit() and m.group(3).isdigit()):
        return m.group(0)  # --user 1000:1000 is a uid and gid
    return m.group(1) + m.group(2) + ":" + mark(kind)


def _mixed_token(m: re.Match[str], kind: str) -> str:
    """A token after a word like "secret" or "token": redacted only when it looks random (mixed classes)."""
    tok = m.group(2)
    classes = sum((any(c.islower() for c in tok), any(c.isupper() for c in tok), any(c.isdigit() for c in tok)))
    if classes < 3 or tok.startswith(("/", ".")) or tok.count("/") > 2 or tok.count(".") > 1 or _PLACEHOLDER.match(tok):
        return m.group(0)
    return m.group(1) + mark(kind)


_RULES: tuple[_Rule, ...] = (
    # A PEM block, also inside a one-line value with escaped newlines; a block
    # cut off at the end of an excerpt is redacted to the end.
    ("private-key", re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S), _whole),
    # The end of a block whose start lies before this text (an excerpt cut into it).
    ("private-key", re.compile(r"\A[\s\S]*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"), _whole),
    ("url-credentials", re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]{1,20}://)[^\s/@:\"'<>]{0,256}:[^\s/@\"'<>]{0,256}@"), lambda m, k: m.group(1) + mark(k) + "@"),
    ("url-credentials", re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]{1,20}://)[A-Za-z0-9_\-.~%]{20,256}@"), lambda m, k: m.group(1) + mark(k) + "@"),
    ("authorization-header", re.compile(r"(?i)\b((?:proxy-)?authorization)([\"']*\s*[:=][\"'\s]*)((?:bearer|basic|token|digest|negotiate|aws4-hmac-sha256)[\"'\s]+)?([^\s\"',;]+)"), _auth),
    ("bearer-token", re.compile(r"(?i)\b(bearer[\"'\s]+)(?!\[REDACTED)[A-Za-z0-9\-._~+/]{8,}=*"), _keep1),
    # Cookie and Set-Cookie headers: the whole value (session ids, CSRF tokens, signed cookies).
    ("cookie", re.compile(r"(?i)\b((?:set-)?cookie[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED)([^\r\n\"']{3,})"), _keep1_value2),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b"), _whole),
    ("hf-token", re.compile(r"\b(?:hf|api_org)_[A-Za-z0-9]{30,}\b"), _whole),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b"), _whole),
    ("slack-token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}"), _whole),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"), _whole),
    ("api-key", re.compile(r"\b(?:sk-(?:proj-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}|glpat-[A-Za-z0-9_-]{20,}"
                           r"|npm_[A-Za-z0-9]{36}|[sr]k_(?:live|test)_[A-Za-z0-9]{20,}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"
                           r"|ya29\.[A-Za-z0-9_-]{20,}|pypi-[A-Za-z0-9_-]{50,}|dckr_pat_[A-Za-z0-9_-]{20,}|dapi[0-9a-f]{32}"
                           r"|glsa_[A-Za-z0-9_]{32,})\b"), _whole),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), _whole),
    # W&B keys are 40 hex digits: redact them wherever wandb is named on the line.
    ("wandb-key", re.compile(r"(?i)(wandb[^\n]{0,80}?)(?<![0-9a-f])[0-9a-f]{40}(?![0-9a-f])"), _keep1),
    # Signed URLs: the signature and credential parameters of S3, GCS and Azure SAS links, tokens in a query.
    ("url-query-secret", re.compile(r"(?i)([?&](?:sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token"
                                    r"|x-goog-signature|x-goog-credential|access_token|id_token|refresh_token|token|api_key"
                                    r"|apikey|key|password|secret|client_secret)=)([^&\s\"'#<>]{3,})"), _keep1_value2),
    # NAME=value, "name": "value", name: value, --name value, where the name says secret.
    ("secret-assignment", re.compile(rf"(?i)({_NAME})([\"']?[ \t]*[=:][ \t]*[\"']?)([^\s\"',;&]+)"), _assign),
    ("secret-argument", re.compile(rf"(?i)((?<![\w-])--?{_NAME_BODY})([ \t]+)(?!-)([^\s\"',;&]+)"), _assign),
    ("secret-assignment", re.compile(r"(?<![A-Za-z0-9_])([A-Z][A-Z0-9_]{0,120}(?:(?<=_KEY)|(?<=_PASS)|(?<=_AUTH)))([ \t]*[=:][ \t]*[\"']?)([^\s\"',;&]+)"), _assign),
    # Passwords given to command-line clients: mysql -pPW, sshpass -p PW, curl -u user:PW, wget --user=u:PW.
    ("cli-password", re.compile(r"(\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]{0,200}?(?<!\S)-p)([^\s\"']+)"), _keep1_value2),
    ("cli-password", re.compile(r"(\bsshpass[ \t]+-p[ \t]*)([^\s\"']+)"), _keep1_value2),
    ("cli-password", re.compile(r"((?<![\w-])(?:-u|--user|--proxy-user|-U)(?:[ \t]+|=)[\"']?)([^\s\"':@/]{1,128}):([^\s\"']{1,256})"), _userpass),
    # netrc: "machine HOST login USER password PW", and a line that is only "password PW".
    ("netrc-password", re.compile(r"(?i)(\b(?:machine[ \t]+\S{1,256}[ \t]+|default[ \t]+)(?:login[ \t]+\S{1,256}[ \t]+)?password[ \t]+)(\S+)"), _keep1_value2),
    ("netrc-password", re.compile(r"(?i)(\blogin[ \t]+\S{1,256}[ \t]+password[ \t]+)(\S+)"), _keep1_value2),
    ("netrc-password", re.compile(r"(?im)^([ \t]{0,40}password[ \t]+)(\S+)[ \t]*$"), _keep1_value2),
    # A random-looking token (lower, upper and digits, 16+) shortly after a word that says secret.
    ("secret-after-word", re.compile(r"(?i)(\b(?:secret|token|password|passwd|pwd|api[ _-]?key|credentials?|access[ _-]?key|key)\b"
                                     r"[^\n]{0,40}?)(?<![A-Za-z0-9/+=_-])([A-Za-z0-9/+=_.-]{16,200})"), _mixed_token),
    # A line that is nothing but a long base64 run: the body of a key or certificate.
    ("base64-blob", re.compile(r"(?m)^([ \t]*)(?=[A-Za-z0-9+/]*[a-z])(?=[A-Za-z0-9+/]*[A-Z])(?=[A-Za-z0-9+/]*[0-9])[A-Za-z0-9+/]{60,}={0,2}[ \t]*$"), _keep1),
)


def secret_env_name(name: str) -> bool:
    """Whether an environment variable of this name holds a secret as its whole value.

    The secret words match in any case (``my_token``, ``Db_Password``); the bare suffixes
    ``_KEY``/``_PASS``/``_AUTH`` only in upper case, the way variables are written.
    """
    if _NOT_SECRET_NAME.search(name):
        return False
    return bool(_SECRET_NAME.search(name) or _SECRET_SUFFIX.search(name))


# -- anonymization ------------------------------------------------------------

_IPV4 = re.compile(r"(?<![\w.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?:%[\w.-]+)?(?![\w:])")
_MAC = re.compile(r"(?<![\w:])[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}(?:(?::[0-9A-Fa-f]{2}){14})?(?![\w:])")
# host:pid:tid [dev] NCCL ..., the prefix NCCL puts on every line.
_NCCL_PREFIX = re.compile(r"(?m)^(?:\[[^\]\n]{0,64}\]:?[ \t]*|\d{1,9}:[ \t]*)?([A-Za-z][A-Za-z0-9_.-]{0,255}):\d+:\d+ \[\d+\] NCCL")
# "hostname: X" in free text; X must look like a host (a digit, dot or dash in it), so that
# "host: unreachable" does not make every "unreachable" an alias.
_HOST_FIELD = re.compile(r"(?i)\b(?:host(?:name)?|node(?:name)?|nodelist)[ \t]*[:=][ \t]*\"?(?=[^\s\"]{0,255}[\d.-])([A-Za-z][A-Za-z0-9_.\-\[\],]{0,255})")
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
# VAR=value in free text (an evidence line, a command line), and the launchers' host flags.
_HOST_ASSIGN = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(sorted(_HOST_VARS)) + r"|MASTER_HOST|RDZV_ENDPOINT)"
                          r"[\"']?[ \t]*[=:][ \t]*[\"']?([^\s\"',;]{1,512})")
_HOST_FLAG = re.compile(r"(?<![\w-])--?(?:rdzv[-_]endpoint|master[-_]addr(?:ess)?|master[-_]host|hostname|host|hosts"
                        r"|nodelist|node[-_]list)(?:=|[ \t]+)[\"']?([A-Za-z0-9][^\s\"',;]{0,511})")
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
        for rx in (_HOST_ASSIGN, _HOST_FLAG):
            for m in rx.finditer(text):
                self.learn_host_value(m.group(1))

    def learn_host_value(self, value: str) -> None:
        """A launcher's host value: ``host``, ``scheme://host:port/x``, ``node[01-04],gpu7`` (the heads too)."""
        value = re.sub(r"^[a-z][a-z0-9+.-]{0,20}://", "", value.strip())  # an endpoint URL: its host part
        value = re.sub(r":\d+(/.*)?$", "", value)
        if "[" in value or "," in value:
            for h in expand_nodelist(value):
                self.learn_host(h)
            # The compressed form stays in the text ("gpu[01-02]"): its head is a name too.
            for head in re.findall(r"([A-Za-z][A-Za-z0-9_.-]{0,63})\[", value):
                self.learn_host(head)
        else:
            self.learn_host(value)

    def discover_obj(self, obj: Any, key: str | None = None) -> None:
        if isinstance(obj, Mapping):
            for k, v in obj.items():
                self.discover_obj(v, str(k))
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                self.discover_obj(v, key)
        elif isinstance(obj, str):
            if key is not None:
                if key.lower() in _HOST_KEYS or key.upper() in _HOST_VARS:
                    self.learn_host_value(obj)
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


#: A secret value seen once is replaced wherever else it appears; shorter values are too likely to be words.
MIN_LITERAL = 6
MAX_LITERALS = 2048
_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Redactor:
    """Redacts secrets (always) and anonymizes identities (when asked), counting what it replaced.

    Besides the shapes in ``_RULES`` it remembers every value it removed (``learn`` runs
    the rules over all the material first) and removes that value wherever else it
    appears: a remedy that quotes ``user:pw@host`` after a check stripped the
    ``scheme://`` cannot carry the password out, because ``pw`` was learned from the
    variable itself.
    """

    def __init__(self, anonymize: bool = False) -> None:
        self.counts: Counter[str] = Counter()
        self.anon = Anonymizer() if anonymize else None
        self._literals: set[str] = set()
        self._ordered: list[str] | None = None

    def _learn_literal(self, value: str) -> None:
        value = value.strip().strip("\"'")
        if (len(value) < MIN_LITERAL or len(self._literals) >= MAX_LITERALS or "REDACTED" in value
                or _PLACEHOLDER.match(value) or value in self._literals):
            return
        self._literals.add(value)
        self._ordered = None
        # user:password and key=value pairs: the password alone may be quoted elsewhere.
        for sep in (":", "="):
            if sep in value:
                self._learn_literal(value.split(sep, 1)[1])

    def secrets(self, s: str) -> str:
        if not s:
            return s
        for kind, rx, fn in _RULES:
            if kind == "wandb-key" and "wandb" not in s.lower():
                continue
            new, n = rx.subn(lambda m, k=kind: self._count(m, k, fn), s)  # type: ignore[misc]
            if n:
                s = new
        if self._literals:
            if self._ordered is None:
                self._ordered = sorted(self._literals, key=lambda v: (-len(v), v))
            for lit in self._ordered:
                if lit in s:  # a substring search per value: linear, and no pattern to backtrack
                    self.counts["known-secret"] += s.count(lit)
                    s = s.replace(lit, mark("known-secret"))
        return s

    def _count(self, m: re.Match[str], kind: str, fn: Callable[[re.Match[str], str], str]) -> str:
        out = fn(m, kind)
        whole = m.group(0)
        if out != whole:
            self.counts[kind] += 1
            # What was removed: the match less the prefix and suffix the rule kept.
            head = 0
            while head < min(len(out), len(whole)) and out[head] == whole[head]:
                head += 1
            tail = 0
            while tail < min(len(out), len(whole)) - head and out[-1 - tail] == whole[-1 - tail]:
                tail += 1
            self._learn_literal(whole[head:len(whole) - tail])
        return out

    def learn(self, *items: Any) -> None:
        """Run the secret rules over ``items`` (strings or JSON-like data) to learn the values they remove.

        Nothing is returned and nothing is counted: call it on all material before
        composing any text, then ``text``/``obj`` remove those values everywhere.
        """
        saved = self.counts.copy()
        try:
            for it in items:
                self._learn_obj(it, None, 0)
        finally:
            self.counts = saved

    def _learn_obj(self, obj: Any, key: str | None, depth: int) -> None:
        if depth > 200:
            return
        if isinstance(obj, Mapping):
            for k, v in obj.items():
                self._learn_obj(v, str(k), depth + 1)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                self._learn_obj(v, key, depth + 1)
        elif isinstance(obj, str):
            if key is not None and _ENV_KEY.fullmatch(key) and secret_env_name(key):
                self._learn_literal(obj)
            self.secrets(obj)

    def text(self, s: str, addresses: bool = True) -> str:
        s = self.secrets(s)
        return self.anon.text(s, addresses) if self.anon else s

    def env_value(self, name: str, value: str) -> str:
        if value and secret_env_name(name) and not _PLACEHOLDER.match(value):
            self.counts["secret-variable"] += 1
            self._learn_literal(value)
            return mark("secret-variable")
        return self.text(value)

    def env_mapping(self, env: Mapping[str, str]) -> dict[str, str]:
        """Environment variables with their secrets removed: what a check may quote in a remedy."""
        return {k: self.env_value(k, v) if isinstance(v, str) else v for k, v in env.items()}

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
            # A variable-like key names a secret in any case: my_token, Db_Password, HF_TOKEN.
            if key and _ENV_KEY.fullmatch(key) and secret_env_name(key):
                return self.env_value(key, obj)
            versionish = key is not None and ("version" in key.lower() or key.lower() in ("cudnn", "driver", "fw_ver"))
            return self.text(obj, addresses=not versionish)
        return obj

    def discover(self, *items: Any) -> None:
        """Learn from ``items`` before anything is written: secret values always, identities when anonymizing."""
        self.learn(*items)
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
