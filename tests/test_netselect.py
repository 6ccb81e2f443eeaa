"""The backends' interface rules (commdoctor.core.netselect) over real interface lists.

The lists in fixtures/net/ are what commdoctor's probe reported on real hosts
(see fixtures/net/PROVENANCE.md): this VM, and a network namespace holding
docker0, virbr0, an empty bridge, a container veth, an "ib0", a tun device and
an interface that is down.
"""

from __future__ import annotations

import json

import pytest

from commdoctor.core import netselect as ns
from tests.conftest import REPO

FIX = REPO / "fixtures" / "net"


def load(name: str) -> list[ns.Interface]:
    return ns.interfaces_from(json.loads((FIX / name / "interfaces.json").read_text()))


@pytest.fixture(scope="module")
def multi() -> list[ns.Interface]:
    return load("multi-nic")


@pytest.fixture(scope="module")
def vm() -> list[ns.Interface]:
    return load("vm")


def by(ifaces: list[ns.Interface], name: str) -> ns.Interface:
    return next(i for i in ifaces if i.name == name)


# -- NCCL's list grammar ------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "exclude", "exact", "entries"), [
    ("eth0", False, False, ("eth0",)),
    ("^docker,lo", True, False, ("docker", "lo")),
    ("=eth0,eth1", False, True, ("eth0", "eth1")),
    ("^=eth0", True, True, ("eth0",)),
    ("=^eth0", False, True, ("^eth0",)),  # '^' counts only first
    ("eth0,,ib", False, False, ("eth0", "ib")),  # empty entries dropped, as strtok does
    ("mlx5_0:1,mlx5_1:1", False, False, ("mlx5_0", "mlx5_1")),  # ":port" is not part of the name
])
def test_nccl_list_grammar(value: str, exclude: bool, exact: bool, entries: tuple[str, ...]) -> None:
    spec = ns.parse_nccl_list(value)
    assert (spec.exclude, spec.exact, spec.entries) == (exclude, exact, entries)


def test_nccl_prefix_exact_and_exclude_matching() -> None:
    assert ns.parse_nccl_list("eth").matches("eth0") and ns.parse_nccl_list("eth").matches("eth10")
    assert not ns.parse_nccl_list("=eth").matches("eth0")
    assert ns.parse_nccl_list("=eth0").matches("eth0")
    assert not ns.parse_nccl_list("^docker,lo").matches("docker0")
    assert not ns.parse_nccl_list("^docker,lo").matches("lo")
    assert ns.parse_nccl_list("^docker,lo").matches("eth0")
    # an excluded prefix also hides longer names: ^lo hides "local0"
    assert not ns.parse_nccl_list("^lo").matches("local0")


# -- NCCL's choice ----------------------------------------------------------------------------------


def test_nccl_default_prefers_ib_by_name_prefix(multi: list[ns.Interface]) -> None:
    c = ns.nccl_select(multi, {})
    assert c.setting is None and "ib*" in c.rule
    # "ib" is a prefix: the veth named ib0peer (link-local IPv6 only) is taken as well
    assert c.picks == [("ib0", "10.201.201.10"), ("ib0peer", by(multi, "ib0peer").addrs[0].address)]


def test_nccl_default_without_ib_skips_docker_lo_virbr(vm: list[ns.Interface]) -> None:
    c = ns.nccl_select(vm, {})
    assert c.picks == [("eth0", "192.0.2.2")]
    assert not c.notes  # old and new releases agree here


def test_nccl_default_order_is_ipv4_first_then_ipv6(multi: list[ns.Interface]) -> None:
    no_ib = [i for i in multi if not i.name.startswith("ib")]
    c = ns.nccl_select(no_ib, {}, version=(2, 28))
    names = [n for n, _ in c.picks]
    # IPv4 interfaces in index order first; interfaces with only IPv6 follow; docker0/virbr0/lo never
    assert names[0] == "eth0"
    assert "docker0" not in names and "virbr0" not in names and "lo" not in names
    assert names.index("eth0") < names.index("br0")
    assert all(a != "::1" for _, a in c.picks)


def test_nccl_version_differences(multi: list[ns.Interface]) -> None:
    env = {"NCCL_SOCKET_IFNAME": "eth"}
    new = ns.nccl_select(multi, env, version=(2, 28))
    old = ns.nccl_select(multi, env, version=(2, 27))
    assert [n for n, _ in new.picks] == ["eth0", "eth9peer"]  # eth1 is down: 2.28 skips it
    assert "eth1" in [n for n, _ in old.picks]
    unknown = ns.nccl_select(multi, env)
    assert unknown.picks == new.picks and any("before 2.28" in n and "eth1" in n for n in unknown.notes)
    # virbr0 is set aside by the default rule only from 2.28 on
    only_virbr = [i for i in multi if i.name in ("lo", "virbr0")]
    assert ns.nccl_select(only_virbr, {}, version=(2, 27)).picks[0][0] == "virbr0"
    assert ns.nccl_select(only_virbr, {}, version=(2, 28)).picks[0][0] == "lo"


def test_nccl_explicit_missing_and_exact(multi: list[ns.Interface]) -> None:
    c = ns.nccl_select(multi, {"NCCL_SOCKET_IFNAME": "ens5"})
    assert c.error and c.missing == ["ens5"] and not c.picks
    c = ns.nccl_select(multi, {"NCCL_SOCKET_IFNAME": "=eth"})
    assert c.error and c.missing == ["eth"]
    c = ns.nccl_select(multi, {"NCCL_SOCKET_IFNAME": "=eth0"})
    assert c.picks == [("eth0", "10.201.200.10")]
    c = ns.nccl_select(multi, {"NCCL_SOCKET_IFNAME": "eth0,ens5"})
    assert c.picks[0][0] == "eth0" and c.missing == ["ens5"] and not c.error


def test_nccl_exclusion_list(multi: list[ns.Interface]) -> None:
    c = ns.nccl_select(multi, {"NCCL_SOCKET_IFNAME": "^docker,lo,virbr,ib,veth,tun,br,eth9"})
    assert c.picks[0] == ("eth0", "10.201.200.10")
    assert not c.missing  # excluding names that do not exist is harmless


def test_nccl_one_character_setting_is_ignored(vm: list[ns.Interface]) -> None:
    c = ns.nccl_select(vm, {"NCCL_SOCKET_IFNAME": "e"})
    assert c.setting is None and c.picks == [("eth0", "192.0.2.2")]
    assert any("longer than one character" in n for n in c.notes)


def test_nccl_socket_family(vm: list[ns.Interface]) -> None:
    c = ns.nccl_select(vm, {"NCCL_SOCKET_FAMILY": "AF_INET6"})
    assert c.picks == [("eth0", "fd00::2")]
    c = ns.nccl_select(vm, {"NCCL_SOCKET_FAMILY": "IPv6"})  # not AF_INET6: NCCL ignores it
    assert c.picks == [("eth0", "192.0.2.2")]


def test_nccl_comm_id_subnet(multi: list[ns.Interface]) -> None:
    no_ib = [i for i in multi if not i.name.startswith("ib")]
    c = ns.nccl_select(no_ib, {"NCCL_COMM_ID": "192.168.122.50:5000"})
    assert c.picks == [("virbr0", "192.168.122.1")] and "NCCL_COMM_ID" in c.rule


# -- Gloo and TensorPipe ---------------------------------------------------------------------------


def res(*addrs: str, bindable: bool | None = None) -> list[ns.Resolved]:
    return [ns.Resolved(ns.INET6 if ":" in a else ns.INET, a, bindable) for a in addrs]


def test_gloo_named_interfaces(multi: list[ns.Interface]) -> None:
    c = ns.gloo_select(multi, {"GLOO_SOCKET_IFNAME": "eth0,ib0"}, "h", res("10.201.200.10"))
    assert c.picks == [("eth0", "10.201.200.10"), ("ib0", "10.201.201.10")] and not c.error


def test_gloo_missing_interface_fails_like_torch(multi: list[ns.Interface]) -> None:
    c = ns.gloo_select(multi, {"GLOO_SOCKET_IFNAME": "eth0,eth9"}, "h", None)
    assert c.error == "Unable to find address for: eth9" and c.missing == ["eth9"] and not c.picks
    c = ns.gloo_select(multi, {"GLOO_SOCKET_IFNAME": "eth1peer"}, "h", None)  # exists, no address at all
    assert c.error == "Unable to find address for: eth1peer" and c.no_address == ["eth1peer"]
    c = ns.gloo_select(multi, {"GLOO_SOCKET_IFNAME": "^lo"}, "h", None)  # no exclusion syntax in gloo
    assert c.error == "Unable to find address for: ^lo"
    c = ns.gloo_select(multi, {"GLOO_SOCKET_IFNAME": "eth0, ib0"}, "h", None)  # the space stays in the name
    assert c.missing == [" ib0"]


def test_gloo_binds_link_local_when_that_is_all_there_is(multi: list[ns.Interface]) -> None:
    c = ns.gloo_select(multi, {"GLOO_SOCKET_IFNAME": "br0"}, "h", None)
    assert c.picks[0][0] == "br0" and c.picks[0][1].startswith("fe80:")
    assert ns.suspicious(by(multi, "br0"), c.picks[0][1]) == "link_local"


def test_gloo_binds_down_interfaces(multi: list[ns.Interface]) -> None:
    c = ns.gloo_select(multi, {"GLOO_SOCKET_IFNAME": "eth1"}, "h", None)
    assert c.picks == [("eth1", "10.201.203.5")]
    assert ns.suspicious(by(multi, "eth1"), "10.201.203.5") == "down"


def test_gloo_hostname_rules(multi: list[ns.Interface]) -> None:
    c = ns.gloo_select(multi, {}, "node1", res("127.0.1.1"))  # the Debian/Ubuntu line
    assert c.via_hostname and c.picks == [("lo", "127.0.1.1")] and not c.fallback_loopback
    c = ns.gloo_select(multi, {}, "node1", res("10.9.9.9", "10.201.200.10"))  # first bindable wins
    assert c.picks == [("eth0", "10.201.200.10")]
    c = ns.gloo_select(multi, {}, "node1", res("10.9.9.9"))
    assert c.fallback_loopback and c.picks == [("lo", "127.0.0.1")]
    c = ns.gloo_select(multi, {}, "node1", None)
    assert c.fallback_loopback and "does not resolve" in c.rule
    # the probe's own bind(2) result wins over the computed one
    c = ns.gloo_select(multi, {}, "node1", res("10.201.200.10", bindable=False))
    assert c.fallback_loopback
    c = ns.gloo_select(multi, {"GLOO_SOCKET_IFNAME": "x"}, "node1", res("172.17.0.1"))
    assert c.setting is None and c.picks == [("docker0", "172.17.0.1")]
    assert any("longer than one character" in n for n in c.notes)


def test_tensorpipe_falls_back_silently(multi: list[ns.Interface]) -> None:
    c = ns.tp_select(multi, {"TP_SOCKET_IFNAME": "eth9"}, "h", None)
    assert c.fallback_loopback and c.picks == [("lo", "127.0.0.1")] and c.missing == ["eth9"] and not c.error
    c = ns.tp_select(multi, {}, "h", res("10.201.201.10"))
    assert c.picks == [("ib0", "10.201.201.10")] and c.backend == "tp"


# -- judging a choice ------------------------------------------------------------------------------


def test_suspicious_kinds(multi: list[ns.Interface]) -> None:
    assert ns.suspicious(by(multi, "lo"), "127.0.0.1") == "loopback"
    assert ns.suspicious(by(multi, "docker0"), "172.17.0.1") == "container_bridge"
    assert ns.suspicious(by(multi, "virbr0"), "192.168.122.1") == "container_bridge"
    assert ns.suspicious(by(multi, "br0"), "10.201.204.1") == "container_bridge"  # no ports: idle
    vethc0 = by(multi, "vethc0")
    assert ns.suspicious(vethc0, vethc0.addrs[0].address) == "link_local"
    assert ns.suspicious(vethc0, "10.201.205.1") == "veth"  # a port of docker0
    assert ns.suspicious(by(multi, "eth0"), "10.201.200.10") is None  # a container's own eth0 is fine
    assert ns.suspicious(by(multi, "tun0"), "10.201.202.1") == "tunnel"
    assert ns.suspicious(None, "fe80::1") == "link_local"


def test_recommend_prefers_the_route_then_routable(multi: list[ns.Interface], vm: list[ns.Interface]) -> None:
    assert ns.recommend(vm).name == "eth0"  # type: ignore[union-attr]
    assert ns.recommend(multi).name == "eth0"  # type: ignore[union-attr]
    assert ns.recommend(multi, prefer="ib0").name == "ib0"  # type: ignore[union-attr]
    assert ns.recommend(multi, prefer="docker0").name == "eth0"  # type: ignore[union-attr]


@pytest.mark.parametrize(("text", "looks"), [
    ("192.168.99.", True), ("10.0.0.1", True), ("10.0.0.0/8", True), ("fe80::1", True),
    ("eth0", False), ("^docker,lo", False), ("mlx5_0:1", False), ("enp1s0f0np0", False),
])
def test_names_like_addresses(text: str, looks: bool) -> None:
    assert bool(ns.names_like(text)) is looks


def test_interface_for_address(multi: list[ns.Interface]) -> None:
    assert ns.interface_for_address("10.201.200.10", multi).name == "eth0"  # type: ignore[union-attr]
    assert ns.interface_for_address("10.201.200.77", multi).name == "eth0"  # type: ignore[union-attr]
    assert ns.interface_for_address("192.168.122.", multi).name == "virbr0"  # type: ignore[union-attr]
    assert ns.interface_for_address("10.99.0.0/16", multi) is None


def test_classify() -> None:
    assert ns.classify("lo", loopback=True) == "loopback"
    assert ns.classify("ib0", link_type=32) == "infiniband"
    assert ns.classify("docker0", is_bridge=True) == "bridge"
    assert ns.classify("veth12", link_kind="veth") == "veth"
    assert ns.classify("wg0", link_kind="wireguard") == "tunnel"
    assert ns.classify("tailscale0", link_type=65534) == "tunnel"
    assert ns.classify("eno1", has_device=True) == "physical"
    assert ns.classify("bond0", link_kind="bond") == "virtual"
    assert ns.classify("veth9") == "veth"


def test_round_trip(multi: list[ns.Interface]) -> None:
    assert ns.interfaces_from([i.to_dict() for i in multi]) == multi
