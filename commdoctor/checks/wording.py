"""Generic wording for rule placeholders, so a rule reads well without a finding.

Promise: ``describe(template, rule)`` turns a rule's title, remedy, steps and
env values into text a person can read when no finding fills them
(``commdoctor explain``, docs/findings/): every ``{name}`` becomes the rule's
own example (``Rule.examples``), else this module's wording for that code,
else its generic wording for the name, else ``<name>`` with underscores as
spaces. Format specs and conversions (``{timeout:g}``, ``{port!r}``) are
dropped, since the wording is text. Suffix placeholders, which findings fill
with an optional clause such as " (fine for a job on this host alone)", read
as nothing here.

A rule author who adds a new placeholder name gives it a wording here (or an
``examples`` entry on the rule); ``tests/test_explain.py`` fails on any code
whose explanation still shows a brace.
"""

from __future__ import annotations

import string
from typing import Any, Mapping, Protocol, Sequence


class Rule(Protocol):
    """What wording reads of a rule (``commdoctor.checks.base.Rule``), so this module needs nothing of base."""

    @property
    def code(self) -> str: ...

    @property
    def examples(self) -> Mapping[str, Any]: ...

# Placeholders that findings fill with an optional trailing clause (or nothing).
SUFFIXES = frozenset({
    "job", "hint", "where", "at", "scope", "measured", "odd_hint", "replacement_text",
})

# One wording per placeholder name, as a reader of any rule would take it.
GENERIC: Mapping[str, str] = {
    "a": "<library A>", "b": "<library B>",
    "addr": "<address>", "address": "<address>", "addrs": "<addresses>",
    "ago": "<time ago>", "allowed": "<allowed values>", "alt": "<another cause>",
    "available": "<this host's interfaces>", "backend": "<backend>", "bad": "<unreachable address>",
    "behind": "rank <N>", "call": "<collective>", "cuda": "<CUDA version>",
    "dead_word": "rank", "dead_text": "<N>", "dead_state": "has exited",
    "detail": "<what differs>", "device": "<device>", "device_map": "<backend map>",
    "devices": "<RDMA devices>", "direction": "ahead of / behind", "dst": "<node B>",
    "endpoint": "<rendezvous endpoint>", "eport": "<ephemeral port>", "error": "<error>",
    "exc": "<exclude variable>", "fallback": "Use a backend this torch build has",
    "fam": "<address family>", "fix": "<how to allow it>", "free": "<free space>",
    "free_value": "<free port>", "g_iface": "<gloo interface>", "g_net": "<gloo network>",
    "gbps": "<GB/s>", "good": "<routable interface>", "gpus": "<N>", "group": "<process group>",
    "groups": "<values and the nodes that have them>", "groups_text": "<each group of ranks and its collective>",
    "hi": "<high port>", "holder": "<process>", "host": "<host>", "hostname": "<this host's name>",
    "hosts_file": "/etc/hosts", "how": "<refused, reset or timed out>", "icmp": "<ICMP reply>",
    "iface": "<interface>", "inc": "<include variable>", "joined": " (<N>/<world size> joined)", "key": "<variable>",
    "label": "<host:port>", "late": "<N>", "launcher": "<launcher>", "left": "rank <N>",
    "lib": "<library>", "limit": "<limit>", "line": "<hosts line>", "lo": "<low port>",
    "logs_step": "Read the NCCL/torch logs of every rank for errors and their last lines",
    "master": "<MASTER_ADDR>", "message": "<message>", "mfam": "<address family>",
    "missing": "<missing>", "mport": "<master port>", "ms": "<ms>", "n": "<N>",
    "n_iface": "<NCCL interface>", "n_net": "<NCCL network>", "name": "<variable>",
    "names": "<interfaces>", "nets": "<networks>", "odd": "<nodes that differ>",
    "odd_word": "rank", "odd_text": "<N>", "odd_state": "is elsewhere (in <function>)",
    "odd_state_short": "<what it is doing>", "odd_site": "<file:line>", "offset": "<seconds>",
    "op": "<collective>", "others": "<other nodes>", "outcome": "<outcome>", "outcomes": "<outcomes>",
    "pairs": "<pairs>", "path": "<file>", "payload": "<payload bytes>", "pid": "<pid>", "pids": "<pids>",
    "piece": "<name>", "port": "<port>", "port_var": "<port variable>", "present": "<ranks>",
    "probe": "<probe port>", "problem": "<problem>", "rank": "<N>", "rank_list": "<ranks>",
    "ranks_text": "<ranks>", "ranks_word": "rank(s)",
    "ras_step": "With NCCL 2.24+, 'ncclras -v' on a node of the job lists unresponsive peers",
    "ratio": "<N>", "reason": "<why>", "ref": "<reference>",
    "remedy": "Read the error text in the evidence", "remote_step": "Check load and memory on every rank's host",
    "replacement": "<new variable>", "route_dev": "<route interface>", "seen": "<the nodes that joined>",
    "seq": "<N>", "settings": "<NCCL_ALGO / NCCL_PROTO values>", "sites": "<the lines in the evidence>", "size": "<size>", "size_key": "<size variable>",
    "source": "<setting>", "src": "<node A>", "srcs": "<nodes>", "stage": "<stage>", "state": "<state>",
    "states_text": "<what each rank is doing>", "status": "<status>", "stop": "<process>",
    "stopped_word": "rank", "stopped_text": "<N>", "store": "<store address>", "subnet": "<subnet>",
    "suggest": "<interface>", "suggestion": "a documented name", "target": "<address>",
    "tasks": "<N>", "tell": "Read the evidence of both to tell them apart", "text": "<problem>",
    "timeout": "<timeout>", "value": "<value>", "values": "<values>", "var": "<variable>",
    "verb": "rejects / drops", "versions": "<versions>", "wait_text": "<ranks>", "wait_verb": "wait",
    "wait_word": "ranks", "waited": "<seconds>", "waiting": "rank(s) <N>", "what": "<what>",
    "who": "<ranks>", "why": "<why>", "world": "<N>",
}

# Where one name means something particular in one rule.
BY_CODE: Mapping[str, Mapping[str, str]] = {
    "ENV020": {"text": "<variable> is not a non-negative integer"},
    "LOG088": {"cmd": "<a firmware command, e.g. ALLOC_UAR>"},
    "LOG086": {"ret": "<N, e.g. 1>"},
    "ENV022": {"missing": "MASTER_ADDR or MASTER_PORT"},
    "ENV050": {"lib": "NCCL, gloo or torch"},
    "ENV052": {"what": "<a feature>"},
    "ENV055": {"example": "ring,tree;allreduce:^nvls", "problem": "<the entry NCCL refuses, and why>"},
    "ENV060": {"fix": "Allow ptrace (kernel.yama.ptrace_scope) or run commdoctor as root"},
    "NET011": {"what": "<an interface other hosts cannot use>"},
    "NET030": {"good": "<routable address>"},
    "NET031": {"good": "<routable address>"},
    "NET032": {"good": "<routable address>"},
    "RDZV003": {"why": "<other hosts must reach it>"},
    "PG002": {"missing": "<N>"},
    "PG006": {"stage": "<init or collective>"},
    "PG004": {"hint": "<what was expected>"},
    "BK002": {"job": "<how the job sets its backend>"},
    "BK004": {"text": "<backend string> is not a backend torch knows"},
    "LOG011": {"how": "<refused or timed out>"},
    "LOG015": {"what": "<host name>"},
    "LOG065": {"host": "<node>"},
    "LOG016": {"port": "<port>"},
    "LOG020": {"what": "<interface and address>"},
    "LOG022": {"how": "<refused, reset or closed>"},
    "LOG027": {"what": "<UCX's message>"},
    "LOG034": {"what": "<the ranks and GPU>"},
    "LOG123": {"net": "<the network NCCL_NET names, e.g. AWS Libfabric>"},
    "LOG125": {"rank": "<N>"},
    "LOG127": {"what": "<why the credential was rejected>"},
    "LOG128": {"waiting": "<N of M>", "op": "<a collective>", "late": "<N>", "late_are": "is"},
    "LOG129": {"pid": "<PID>"},
    "LOG130": {"who": "rank <N>", "op": "<AllReduce, Broadcast, ...>", "n": "<its count>", "usual": "<the others' count>"},
    "LOG131": {"ifaces": "hsn0, hsn1, ..."},
    "LOG132": {"lib": "<a shared library>"},
    "LOG133": {"a": "<N>", "b": "<M>"},
    "LOG134": {"op": "<collective> SeqNum=1", "what": "<what never went through>"},
    "LOG136": {"what": "<the peer's address format and this rank's>"},
    "LOG017": {"what": "<address:port>, which is not an address of this host"},
    "LOG137": {"what": "device <N> has <X> rail(s) here and <Y> on the peer"},
    "LOG139": {"what": "<the first compiler error>"},
    "LOG140": {"what": "<N GiB>"},
    "LOG141": {"what": "<a framework>"},
    "LOG142": {"what": "<which GPU could not reach which>"},
    "LOG143": {"what": "<the setting and what is wrong with it>"},
    "LOG144": {"what": "<the framework and the op it has no kernel for>"},
    "LOG146": {"abi": " (<when the symbol has the other C++ string ABI, said here>)"},
    "LOG147": {"arg": "--local-rank=<N>"},
    "LOG150": {"what": "<M> arrivals for a world of <N>"},
    "LOG151": {"addr": "0.0.0.0"},
    "LOG152": {"what": "<the ranks of a host whose workers all exited 0, or a rank that exited 0,> finished while other ranks were still in a collective with them"},
    "LOG153": {"addr": "<MASTER_ADDR:port>"},
    "LOG037": {"what": "<the error NCCL or the driver printed>"},
    "LOG038": {"what": "<the error NCCL printed>"},
    "LOG040": {"what": "<the versions and ranks>"},
    "LOG051": {"who": "<the late or missing rank>"},
    "LOG053": {"what": "<the evidence>"},
    "LOG055": {"what": "<key>"},
    "LOG060": {"what": "a rank's process died and the others' errors follow from it"},
    "LOG062": {"what": "<the ranks started>"},
    "LOG063": {"what": "<the runtime's error>"},
    "LOG064": {"what": "<the PMI error>"},
    "LOG070": {"what": "<NCCL's error>"},
    "LOG103": {"who": "task <N>"},
    "LOG104": {"barrier": "<barrier id>", "who": "task <N>"},
    "LOG105": {"secs": "<N>", "who": "<N>", "tensors": "<tensor names>"},
    "LOG106": {"who": "task <N>"},
    "LOG107": {"dur": "<timeout>", "n": "<N>", "root": "<device>"},
    "LOG108": {"what": "<where NCCL stopped, across hosts>"},
    "LOG109": {"what": "<who waited where>"},
    "LOG110": {"what": "<where each process was>"},
    "LOG113": {"lib": "<library>"},
    "LOG116": {"prov": "<provider>"},
    "LOG118": {"fn": "<MPI function>()", "when": "before MPI_Init"},
    "LOG119": {"what": "<what shows it>"},
    "HOOK001": {"what": "<op, shape, dtype or root>"},
    "HOOK002": {"who": "rank <N>"},
    "HOOK005": {"what": "<op, shape, dtype or root>"},
    "HOOK010": {"where": "is elsewhere (in <function>)", "waiting": "ranks <N>", "wait_verb": "wait"},
    "HOOK012": {"missing": "rank(s) <N>"},
    "HOOK020": {"who": "rank <N>"},
    "HOOK030": {"device": "CUDA", "measured": ""},
    "HANG003": {"where": "on this host"},
    "HANG004": {"choice": "several jobs found; diagnosed the one whose ranks wait in communication (the others are listed)"},
    "HANG001": {"hint": "Allow ptrace or run commdoctor as the job's user or root"},
    "MN001": {"who": "<node>"},
    "MN002": {"who": "<node>"},
    "MN003": {"who": "<node>"},
    "MN004": {"where": "<MASTER_ADDR:MASTER_PORT>"},
    "MN010": {"what": "<torch, CUDA or NCCL version>"},
    "MN050": {"ref": "<node 0's time>"},
    "MN060": {"a": "<node A>", "b": "<node B>"},
    "MN062": {"a": "<node A>", "b": "<node B>"},
}


class _Describer(string.Formatter):
    def __init__(self, words: Mapping[str, str]) -> None:
        super().__init__()
        self.words = words

    def get_value(self, key: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        name = str(key)
        if name in self.words:
            return self.words[name]
        if name in SUFFIXES:
            return ""
        return GENERIC.get(name, "<" + name.replace("_", " ") + ">")

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        return value  # the wording is text: !r would add quotes a reader does not need

    def format_field(self, value: Any, format_spec: str) -> str:
        return str(value)  # {timeout:g} on a wording: drop the numeric spec


def wording(rule: Rule) -> dict[str, str]:
    """The words this rule's placeholders take when no finding fills them (rule examples first)."""
    words = dict(BY_CODE.get(rule.code, {}))
    words.update({k: str(v) for k, v in rule.examples.items()})
    return words


def describe(template: str, rule: Rule) -> str:
    """``template`` (one of ``rule``'s strings) with every placeholder in words."""
    return _Describer(wording(rule)).vformat(template, (), {})


def placeholders(template: str) -> list[str]:
    """The placeholder names in ``template`` (literal ``{{`` braces are not placeholders)."""
    return [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
