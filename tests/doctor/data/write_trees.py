#!/usr/bin/env python3
"""Writes the recorded machines of the doctor tests (sysfs and /proc trees under a root).

Each machine is described by hand below: its PCI tree, each function's link, its configuration
space (built field by field: the 64-byte header, the capability list from 0x34, the PCIe extended
capability list from 0x100 with AER, ACS and ATS), its RDMA ports, GIDs, IOMMU groups, CPU
governors and the process view (/proc/self/status, /proc/self/limits). The layout and spellings
follow the kernel's (Documentation/ABI/testing/sysfs-bus-pci, sysfs-class-infiniband); bus ids,
GUIDs and names are made up.

    write_trees.py [OUTDIR]     write every tree into OUTDIR (default: this script's directory)
    write_trees.py --check      exit 1 unless the committed trees are what this script writes
"""
import filecmp
import os
import shutil
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- configuration space -------------------------------------------------------------------

PORT_ENDPOINT, PORT_ROOT, PORT_UPSTREAM, PORT_DOWNSTREAM = 0x0, 0x4, 0x5, 0x6

# ACS capability / control bits (PCIe base spec 7.7.8): SV TB RR CR UF EC DT.
ACS_SV, ACS_TB, ACS_RR, ACS_CR, ACS_UF, ACS_EC, ACS_DT = (1 << i for i in range(7))
ACS_ON = ACS_SV | ACS_RR | ACS_CR | ACS_UF  # what firmware that enables ACS typically sets


class Config:
    """A 4096-byte PCIe configuration space, filled field by field (little endian)."""

    def __init__(self, vendor, device, class_code, bridge, subsystem=(0, 0)):
        self.b = bytearray(4096)
        self.put16(0x00, vendor)
        self.put16(0x02, device)
        self.put16(0x04, 0x0406)  # command: memory space, bus master, INTx off
        self.put16(0x06, 0x0010)  # status: capability list
        self.b[0x08] = 0x01  # revision
        self.b[0x09] = class_code & 0xFF
        self.b[0x0A] = (class_code >> 8) & 0xFF
        self.b[0x0B] = (class_code >> 16) & 0xFF
        self.b[0x0E] = 0x01 if bridge else 0x00
        if not bridge:
            self.put16(0x2C, subsystem[0])
            self.put16(0x2E, subsystem[1])
        self.std_at = 0x40
        self.std_last = None
        self.ext_at = 0x100
        self.ext_last = None

    def put16(self, off, v):
        struct.pack_into("<H", self.b, off, v)

    def put32(self, off, v):
        struct.pack_into("<I", self.b, off, v)

    def std_cap(self, cap_id, payload):
        off = self.std_at
        if self.std_last is None:
            self.b[0x34] = off
        else:
            self.b[self.std_last + 1] = off
        self.b[off] = cap_id
        self.b[off + 1] = 0
        self.b[off + 2:off + 2 + len(payload)] = payload
        self.std_last = off
        self.std_at = (off + 2 + len(payload) + 3) & ~3

    def ext_cap(self, cap_id, version, payload):
        off = self.ext_at
        if self.ext_last is not None:
            header = struct.unpack_from("<I", self.b, self.ext_last)[0]
            self.put32(self.ext_last, (header & 0xFFFFF) | (off << 20))
        self.put32(off, cap_id | (version << 16))
        self.b[off + 4:off + 4 + len(payload)] = payload
        self.ext_last = off
        self.ext_at = (off + 4 + len(payload) + 7) & ~7

    def power_management(self):
        self.std_cap(0x01, struct.pack("<HH", 0x0003, 0x0008))

    def pcie(self, port_type, max_gen, max_width, cur_gen, cur_width):
        flags = 0x0002 | (port_type << 4) | (0x0100 if port_type in (PORT_ROOT, PORT_DOWNSTREAM) else 0)
        dev_cap = 0x00008FC2 if port_type == PORT_ENDPOINT else 0x00008002
        link_cap = max_gen | (max_width << 4) | (0x3 << 10)
        link_status = cur_gen | (cur_width << 4) | (0x2000 if port_type in (PORT_ROOT, PORT_DOWNSTREAM) else 0)
        body = bytearray(0x3A)  # the v2 capability is 0x3c bytes including id and next
        struct.pack_into("<H", body, 0x00, flags)
        struct.pack_into("<I", body, 0x02, dev_cap)
        struct.pack_into("<H", body, 0x06, 0x2930)  # device control: MPS 256, MRRS 512, RO
        struct.pack_into("<I", body, 0x0A, link_cap)
        struct.pack_into("<H", body, 0x0E, 0x0040)  # link control: common clock
        struct.pack_into("<H", body, 0x10, link_status)
        struct.pack_into("<I", body, 0x2A, ((1 << max_gen) - 1) << 1)  # supported speeds vector
        self.std_cap(0x10, bytes(body))

    def msix(self):
        self.std_cap(0x11, struct.pack("<HII", 0x003F, 0x00000000, 0x00002000))

    def aer(self):
        self.ext_cap(0x0001, 2, bytes(0x44))

    def acs(self, capability, control):
        self.ext_cap(0x000D, 1, struct.pack("<HH", capability, control))

    def ats(self, enabled):
        self.ext_cap(0x000F, 1, struct.pack("<HH", 0x0020, 0x8000 if enabled else 0x0000))

    def bytes(self):
        return bytes(self.b)


def lcg_bytes(seed, n):
    """Deterministic noise (a 32-bit LCG), so --check can compare garbage byte for byte."""
    out = bytearray(n)
    x = seed
    for i in range(n):
        x = (1103515245 * x + 12345) & 0x7FFFFFFF
        out[i] = (x >> 16) & 0xFF
    return bytes(out)


def garbage_with_loops():
    """A header that parses, then noise; both capability lists point back at themselves."""
    b = bytearray(lcg_bytes(1234, 4096))
    struct.pack_into("<HH", b, 0, 0x1000, 0xC030)
    struct.pack_into("<H", b, 0x06, 0x0010)
    b[0x0E] = 0x01
    b[0x34] = 0x40
    b[0x40], b[0x41] = 0x05, 0x40  # MSI pointing at itself
    struct.pack_into("<I", b, 0x100, 0x0001 | (1 << 16) | (0x100 << 20))
    return bytes(b)


# ---- machines ------------------------------------------------------------------------------

GEN_SPEED = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe",
             5: "32.0 GT/s PCIe"}


class Fn:
    """One PCI function. link = (max_gen, max_width, cur_gen, cur_width); None = VF ("Unknown")."""

    def __init__(self, bdf, kind, vendor, device, class_code, link, port_type, parent=None,
                 config=None, numa=0, cpus="0-15", iommu_group=None, subsystem=(0, 0)):
        self.bdf, self.kind, self.vendor, self.device = bdf, kind, vendor, device
        self.class_code, self.link, self.port_type, self.parent = class_code, link, port_type, parent
        self.numa, self.cpus, self.iommu_group, self.subsystem = numa, cpus, iommu_group, subsystem
        self.config = config  # bytes; None = built from the fields
        self.acs = None  # (capability, control) for bridges with ACS
        self.ats = None  # True/False for endpoints with ATS


class Machine:
    def __init__(self, hostname):
        self.hostname = hostname
        self.host_bridges = []  # (name, numa)
        self.fns = []
        self.rdma = []  # dicts
        self.netdevs = []  # dicts
        self.files = {}  # extra path -> content
        self.links = {}  # extra symlink path -> target

    def fn(self, *args, **kwargs):
        f = Fn(*args, **kwargs)
        self.fns.append(f)
        return f


class Writer:
    def __init__(self, root):
        self.root = root

    def write(self, rel, content):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(path, mode) as f:
            f.write(content)

    def link(self, rel, target):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.symlink(target, path)

    def relative_link(self, rel, target_rel):
        self.link(rel, os.path.relpath(os.path.join(self.root, target_rel),
                                       os.path.dirname(os.path.join(self.root, rel))))


def device_dir(m, f):
    parts = []
    x = f
    while x is not None:
        parts.append(x.bdf)
        x = x.parent
    host = next(name for name, _ in m.host_bridges if name[3:] == f.bdf[:4] + ":" + chain_root(f).bdf[5:7])
    return "sys/devices/" + host + "/" + "/".join(reversed(parts))


def chain_root(f):
    while f.parent is not None:
        f = f.parent
    return f


def build_config(f):
    if f.config is not None:
        return f.config
    bridge = f.kind in ("root", "up", "down")
    c = Config(f.vendor, f.device, f.class_code, bridge, f.subsystem)
    c.power_management()
    if f.link is not None:
        max_gen, max_width, cur_gen, cur_width = f.link
        c.pcie(f.port_type, max_gen, max_width, cur_gen, cur_width)
    else:
        c.pcie(f.port_type, 0, 0, 0, 0)
    if not bridge:
        c.msix()
    c.aer()
    if f.acs is not None:
        c.acs(*f.acs)
    if f.ats is not None:
        c.ats(f.ats)
    return c.bytes()


def write_machine(m, w, cpu_count, governors, cmdline, status_cpus, memlock, osrelease,
                  cpuinfo, dmi, nodes, iommu_type, peermem, iommu_units):
    for f in m.fns:
        d = device_dir(m, f)
        w.write(d + "/class", "0x%06x\n" % f.class_code)
        w.write(d + "/vendor", "0x%04x\n" % f.vendor)
        w.write(d + "/device", "0x%04x\n" % f.device)
        w.write(d + "/subsystem_vendor", "0x%04x\n" % f.subsystem[0])
        w.write(d + "/subsystem_device", "0x%04x\n" % f.subsystem[1])
        w.write(d + "/numa_node", "%d\n" % f.numa)
        w.write(d + "/local_cpulist", f.cpus + "\n")
        if f.link is None:
            for name in ("max_link_speed", "current_link_speed"):
                w.write(d + "/" + name, "Unknown\n")
            for name in ("max_link_width", "current_link_width"):
                w.write(d + "/" + name, "0\n")
        else:
            max_gen, max_width, cur_gen, cur_width = f.link
            w.write(d + "/max_link_speed", GEN_SPEED[max_gen] + "\n")
            w.write(d + "/max_link_width", "%d\n" % max_width)
            w.write(d + "/current_link_speed", GEN_SPEED[cur_gen] + "\n")
            w.write(d + "/current_link_width", "%d\n" % cur_width)
        w.write(d + "/config", build_config(f))
        w.relative_link("sys/bus/pci/devices/" + f.bdf, d)
        if f.iommu_group is not None:
            w.relative_link(d + "/iommu_group", "sys/kernel/iommu_groups/%d" % f.iommu_group)
            w.write("sys/kernel/iommu_groups/%d/type" % f.iommu_group, iommu_type + "\n")
            w.relative_link("sys/kernel/iommu_groups/%d/devices/%s" % (f.iommu_group, f.bdf), d)
    for unit in iommu_units:
        w.write("sys/devices/virtual/iommu/%s/uevent" % unit, "")
        w.relative_link("sys/class/iommu/" + unit, "sys/devices/virtual/iommu/" + unit)
    for r in m.rdma:
        d = device_dir(m, r["fn"]) + "/infiniband/" + r["name"]
        w.relative_link("sys/class/infiniband/" + r["name"], d)
        w.relative_link(d + "/device", device_dir(m, r["fn"]))
        w.write(d + "/node_guid", r["guid"] + "\n")
        w.write(d + "/node_type", "1: CA\n")
        p = d + "/ports/1"
        w.write(p + "/state", r["state"] + "\n")
        w.write(p + "/phys_state", r["phys"] + "\n")
        w.write(p + "/rate", r["rate"] + "\n")
        w.write(p + "/link_layer", r["layer"] + "\n")
        for index, (gid, gid_type) in enumerate(r.get("gids", [])):
            w.write(p + "/gids/%d" % index, gid + "\n")
            if gid_type is not None:
                w.write(p + "/gid_attrs/types/%d" % index, gid_type + "\n")
                w.write(p + "/gid_attrs/ndevs/%d" % index, r["netdev"] + "\n")
        if r.get("tc") is not None:
            w.write(d + "/tc/1/traffic_class", r["tc"] + "\n")
    for n in m.netdevs:
        d = (device_dir(m, n["fn"]) + "/net/" + n["name"]) if n.get("fn") else \
            "sys/devices/virtual/net/" + n["name"]
        w.relative_link("sys/class/net/" + n["name"], d)
        if n.get("fn"):
            w.relative_link(d + "/device", device_dir(m, n["fn"]))
            w.write(d + "/dev_port", "0\n")
        w.write(d + "/operstate", n["operstate"] + "\n")
        w.write(d + "/mtu", "%d\n" % n["mtu"])
        w.write(d + "/type", "%d\n" % n["type"])
        if n.get("speed") is not None:
            w.write(d + "/speed", "%d\n" % n["speed"])
    for numa, (cpulist, cpumap) in nodes.items():
        w.write("sys/devices/system/node/node%d/cpulist" % numa, cpulist + "\n")
        w.write("sys/devices/system/node/node%d/cpumap" % numa, cpumap + "\n")
    w.write("sys/devices/system/cpu/online", "0-%d\n" % (cpu_count - 1))
    for cpu in range(cpu_count):
        if governors is not None:
            w.write("sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor" % cpu, governors + "\n")
        else:
            w.write("sys/devices/system/cpu/cpu%d/online" % cpu, "1\n")
    w.write("sys/module/nvidia/version", "550.54.15\n")
    if peermem:
        w.write("sys/module/nvidia_peermem/version", "550.54.15\n")
    w.write("sys/class/dmi/id/sys_vendor", dmi[0] + "\n")
    w.write("sys/class/dmi/id/product_name", dmi[1] + "\n")
    w.write("proc/cmdline", cmdline + "\n")
    w.write("proc/cpuinfo", cpuinfo)
    w.write("proc/sys/kernel/hostname", m.hostname + "\n")
    w.write("proc/sys/kernel/osrelease", osrelease + "\n")
    w.write("proc/self/status", "Name:\tnccl-pilot\nState:\tR (running)\nPid:\t4242\n"
            "Cpus_allowed:\t%s\nCpus_allowed_list:\t%s\nMems_allowed_list:\t0-1\n"
            % ("ffffffff" if status_cpus == "0-31" else "0000ffff", status_cpus))
    soft = memlock
    w.write("proc/self/limits",
            "Limit                     Soft Limit           Hard Limit           Units     \n"
            "Max cpu time              unlimited            unlimited            seconds   \n"
            "Max open files            1048576              1048576              files     \n"
            "Max locked memory         %-20s %-20s bytes     \n"
            "Max address space         unlimited            unlimited            bytes     \n"
            % (soft, soft))
    for rel, content in m.files.items():
        w.write(rel, content)


INTEL_CPUINFO = ("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
                 "model name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t\t: fpu vme de pse tsc msr "
                 "pae mce cx8 apic sep mtrr pge mca cmov\n\n")
AMD_KVM_CPUINFO = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
                   "model name\t: AMD EPYC 9654 96-Core Processor\nflags\t\t: fpu vme de pse tsc "
                   "msr pae mce cx8 apic sep hypervisor\n\n")

H100 = (0x10DE, 0x2330, 0x030200)
CX7_IB = (0x15B3, 0x1021, 0x020700)
CX7_ETH = (0x15B3, 0x1021, 0x020000)
CX7_VF = (0x15B3, 0x101E, 0x020000)
ROOT_PORT = (0x8086, 0x352A, 0x060400)
PEX = (0x1000, 0xC030, 0x060400)
QEMU_ROOT = (0x1B36, 0x000C, 0x060400)

GEN5X16 = (5, 16, 5, 16)


def baremetal(hostname, repaired, broken_config=False):
    """Two sockets; per socket a root port, a Broadcom PEX Gen5 switch, an H100 and ConnectX-7
    InfiniBand NICs under its downstream ports (socket 1 has two NICs). Unrepaired: ACS on at the
    port above GPU0, mlx5_0 trained at x8 of x16, mlx5_1 down, mlx5_2 at HDR 200 instead of NDR
    400, GPU1 idling at Gen1, translated IOMMU, no nvidia_peermem, 64 KiB memlock, powersave,
    and a job mask that keeps the process off socket 1."""
    m = Machine(hostname)
    m.host_bridges = [("pci0000:15", 0), ("pci0000:97", 1)]
    group = iter(range(20, 40))
    sockets = []
    for numa, (rp, up, downs, ends) in enumerate([
            ("0000:15:01.0", "0000:16:00.0", ["0000:17:00.0", "0000:17:01.0"],
             ["0000:18:00.0", "0000:19:00.0"]),
            ("0000:97:01.0", "0000:98:00.0", ["0000:99:00.0", "0000:99:01.0", "0000:99:02.0"],
             ["0000:9a:00.0", "0000:9b:00.0", "0000:9c:00.0"])]):
        cpus = "0-15" if numa == 0 else "16-31"
        r = m.fn(rp, "root", *ROOT_PORT, GEN5X16, PORT_ROOT, numa=numa, cpus=cpus,
                 iommu_group=next(group))
        r.acs = (0x005F, 0x0000)
        u = m.fn(up, "up", *PEX, GEN5X16, PORT_UPSTREAM, r, numa=numa, cpus=cpus,
                 iommu_group=next(group))
        ds = []
        for bdf in downs:
            d = m.fn(bdf, "down", *PEX, GEN5X16, PORT_DOWNSTREAM, u, numa=numa, cpus=cpus,
                     iommu_group=next(group))
            d.acs = (0x005F, 0x0000)
            ds.append(d)
        sockets.append((ds, ends, numa, cpus))
    (ds0, ends0, _, cpus0), (ds1, ends1, _, cpus1) = sockets
    gpu_link1 = GEN5X16 if repaired else (5, 16, 1, 16)
    nic_link0 = GEN5X16 if repaired else (5, 16, 5, 8)
    gpu0 = m.fn(ends0[0], "gpu", *H100, GEN5X16, PORT_ENDPOINT, ds0[0], numa=0, cpus=cpus0,
                iommu_group=next(group), subsystem=(0x10DE, 0x16C1))
    nic0 = m.fn(ends0[1], "nic", *CX7_IB, nic_link0, PORT_ENDPOINT, ds0[1], numa=0, cpus=cpus0,
                iommu_group=next(group), subsystem=(0x15B3, 0x0023))
    gpu1 = m.fn(ends1[0], "gpu", *H100, gpu_link1, PORT_ENDPOINT, ds1[0], numa=1, cpus=cpus1,
                iommu_group=next(group), subsystem=(0x10DE, 0x16C1))
    nic1 = m.fn(ends1[1], "nic", *CX7_IB, GEN5X16, PORT_ENDPOINT, ds1[1], numa=1, cpus=cpus1,
                iommu_group=next(group), subsystem=(0x15B3, 0x0023))
    nic2 = m.fn(ends1[2], "nic", *CX7_IB, GEN5X16, PORT_ENDPOINT, ds1[2], numa=1, cpus=cpus1,
                iommu_group=next(group), subsystem=(0x15B3, 0x0023))
    for d in m.fns:  # the downstream ports' own link files describe the link below them
        if d.kind == "down":
            child = next(f for f in m.fns if f.parent is d)
            d.link = child.link
    for n in (nic0, nic1, nic2):
        n.ats = False
    if not repaired:
        ds0[0].acs = (0x005F, ACS_ON)
    ndr = "400 Gb/sec (4X NDR)"
    ports = [
        ("mlx5_0", nic0, "4: ACTIVE", "5: LinkUp", ndr, "ibp25s0"),
        ("mlx5_1", nic1, "4: ACTIVE" if repaired else "1: DOWN",
         "5: LinkUp" if repaired else "2: Polling", ndr if repaired else "10 Gb/sec (4X SDR)",
         "ibp155s0"),
        ("mlx5_2", nic2, "4: ACTIVE", "5: LinkUp", ndr if repaired else "200 Gb/sec (4X HDR)",
         "ibp156s0"),
    ]
    for i, (name, fn, state, phys, rate, netdev) in enumerate(ports):
        m.rdma.append({"name": name, "fn": fn, "guid": "a088:c203:00%02x:1f%02x" % (i, i),
                       "state": state, "phys": phys, "rate": rate, "layer": "InfiniBand",
                       "gids": [("fe80:0000:0000:0000:a088:c203:00%02x:1f%02x" % (i, i), None)],
                       "netdev": netdev})
        m.netdevs.append({"name": netdev, "fn": fn, "operstate": "up" if "ACTIVE" in state else
                          "down", "mtu": 4092, "type": 32, "speed": None})
    m.netdevs.append({"name": "lo", "operstate": "unknown", "mtu": 65536, "type": 772})
    if broken_config:
        # What a recorded tree (or a misbehaving device) may hold instead of a config space.
        ds0[0].config = build_config(ds0[0])[:64]  # an unprivileged read: the header only
        ds0[1].config = build_config(ds0[1])[:37]  # truncated inside the header
        ds1[0].config = garbage_with_loops()
        ds1[1].config = b"\xff" * 4096  # nothing answered
        m.files[device_dir(m, gpu0) + "/current_link_speed"] = "banana\n"
    nodes = {0: ("0-15", "0000ffff"), 1: ("16-31", "ffff0000")}
    cmdline = ("BOOT_IMAGE=/vmlinuz-6.1.0-18-amd64 root=UUID=5f3c0c1e ro quiet intel_iommu=on" +
               (" iommu=pt" if repaired else ""))
    return m, dict(cpu_count=32, governors="performance" if repaired else "powersave",
                   cmdline=cmdline, status_cpus="0-31" if repaired else "0-15",
                   memlock="unlimited" if repaired else "65536", osrelease="6.1.0-18-amd64",
                   cpuinfo=INTEL_CPUINFO, dmi=("Supermicro", "SYS-821GE-TNHR"), nodes=nodes,
                   iommu_type="identity" if repaired else "DMA-FQ", peermem=repaired,
                   iommu_units=["dmar0", "dmar1"])


def roce_v1_only(hostname):
    """One socket, an H100 and a ConnectX-7 in Ethernet mode (RoCE) under one PEX switch; the
    port lists only RoCE v1 GIDs and nothing sets a traffic class."""
    m = Machine(hostname)
    m.host_bridges = [("pci0000:3a", 0)]
    r = m.fn("0000:3a:01.0", "root", *ROOT_PORT, GEN5X16, PORT_ROOT, cpus="0-15", iommu_group=1)
    r.acs = (0x005F, 0)
    u = m.fn("0000:3b:00.0", "up", *PEX, GEN5X16, PORT_UPSTREAM, r, cpus="0-15", iommu_group=2)
    d0 = m.fn("0000:3c:00.0", "down", *PEX, GEN5X16, PORT_DOWNSTREAM, u, cpus="0-15",
              iommu_group=3)
    d1 = m.fn("0000:3c:01.0", "down", *PEX, GEN5X16, PORT_DOWNSTREAM, u, cpus="0-15",
              iommu_group=4)
    d0.acs = d1.acs = (0x005F, 0)
    m.fn("0000:3d:00.0", "gpu", *H100, GEN5X16, PORT_ENDPOINT, d0, cpus="0-15", iommu_group=5,
         subsystem=(0x10DE, 0x16C1))
    nic = m.fn("0000:3e:00.0", "nic", *CX7_ETH, GEN5X16, PORT_ENDPOINT, d1, cpus="0-15",
               iommu_group=6, subsystem=(0x15B3, 0x0023))
    m.rdma.append({"name": "mlx5_0", "fn": nic, "guid": "a088:c203:0055:7700", "state": "4: ACTIVE",
                   "phys": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)", "layer": "Ethernet",
                   "gids": [("fe80:0000:0000:0000:a288:c2ff:fe55:7700", "IB/RoCE v1"),
                            ("0000:0000:0000:0000:0000:ffff:0a2a:0007", "IB/RoCE v1")],
                   "netdev": "ens1np0"})
    m.netdevs.append({"name": "ens1np0", "fn": nic, "operstate": "up", "mtu": 9000, "type": 1,
                      "speed": 400000})
    m.netdevs.append({"name": "lo", "operstate": "unknown", "mtu": 65536, "type": 772})
    return m, dict(cpu_count=16, governors="performance",
                   cmdline="BOOT_IMAGE=/vmlinuz-6.1.0-18-amd64 ro intel_iommu=on iommu=pt",
                   status_cpus="0-15", memlock="unlimited", osrelease="6.1.0-18-amd64",
                   cpuinfo=INTEL_CPUINFO, dmi=("Dell Inc.", "PowerEdge XE9680"),
                   nodes={0: ("0-15", "0000ffff")}, iommu_type="identity", peermem=True,
                   iommu_units=["dmar0"])


def kvm_roce(hostname):
    """A KVM guest: an H100 and a ConnectX-7 RoCE virtual function, each behind its own QEMU
    root port with ACS on (the host isolates devices), the VF with ATS on and RoCE v2 GIDs; no
    IOMMU in the guest, no cpufreq, nothing sets a traffic class."""
    m = Machine(hostname)
    m.host_bridges = [("pci0000:00", 0)]
    r0 = m.fn("0000:00:02.0", "root", *QEMU_ROOT, GEN5X16, PORT_ROOT, cpus="0-15")
    r1 = m.fn("0000:00:03.0", "root", *QEMU_ROOT, GEN5X16, PORT_ROOT, cpus="0-15")
    r0.acs = r1.acs = (0x001F, ACS_ON)
    m.fn("0000:01:00.0", "gpu", *H100, GEN5X16, PORT_ENDPOINT, r0, cpus="0-15",
         subsystem=(0x10DE, 0x16C1))
    vf = m.fn("0000:02:00.0", "nic", *CX7_VF, None, PORT_ENDPOINT, r1, cpus="0-15",
              subsystem=(0x15B3, 0x0023))
    vf.ats = True
    m.rdma.append({"name": "mlx5_0", "fn": vf, "guid": "a088:c203:00aa:0100", "state": "4: ACTIVE",
                   "phys": "5: LinkUp", "rate": "200 Gb/sec (4X HDR)", "layer": "Ethernet",
                   "gids": [("fe80:0000:0000:0000:a288:c2ff:feaa:0100", "IB/RoCE v1"),
                            ("fe80:0000:0000:0000:a288:c2ff:feaa:0100", "RoCE v2"),
                            ("0000:0000:0000:0000:0000:ffff:0a64:0003", "IB/RoCE v1"),
                            ("0000:0000:0000:0000:0000:ffff:0a64:0003", "RoCE v2")],
                   "netdev": "ens3"})
    m.netdevs.append({"name": "ens3", "fn": vf, "operstate": "up", "mtu": 9000, "type": 1,
                      "speed": 200000})
    m.netdevs.append({"name": "lo", "operstate": "unknown", "mtu": 65536, "type": 772})
    return m, dict(cpu_count=16, governors=None, cmdline="BOOT_IMAGE=/vmlinuz-6.1.0-18-amd64 ro",
                   status_cpus="0-15", memlock="unlimited", osrelease="6.1.0-18-amd64",
                   cpuinfo=AMD_KVM_CPUINFO, dmi=("QEMU", "Standard PC (Q35 + ICH9, 2009)"),
                   nodes={0: ("0-15", "0000ffff")}, iommu_type="identity", peermem=True,
                   iommu_units=[])


TREES = {
    "baremetal-faulty": lambda: baremetal("gpu-node-17", repaired=False),
    "baremetal-repaired": lambda: baremetal("gpu-node-17", repaired=True),
    "baremetal-broken-config": lambda: baremetal("gpu-node-18", repaired=True, broken_config=True),
    "roce-v1-only": lambda: roce_v1_only("roce-node-03"),
    "kvm-roce-v2": lambda: kvm_roce("vm-gpu-01"),
}


def write_all(out):
    for name, make in TREES.items():
        root = os.path.join(out, name)
        if os.path.lexists(root):
            shutil.rmtree(root)
        os.makedirs(root)
        machine, extra = make()
        write_machine(machine, Writer(root), **extra)


def same_tree(a, b):
    for dirpath, dirnames, filenames in os.walk(a):
        rel = os.path.relpath(dirpath, a)
        other = os.path.join(b, rel)
        for name in dirnames + filenames:
            pa, pb = os.path.join(dirpath, name), os.path.join(other, name)
            if os.path.islink(pa) != os.path.islink(pb):
                return "%s: link in one tree only" % os.path.join(rel, name)
            if os.path.islink(pa):
                if os.readlink(pa) != os.readlink(pb):
                    return "%s: links differ" % os.path.join(rel, name)
            elif os.path.isfile(pa) and not (os.path.isfile(pb) and filecmp.cmp(pa, pb, False)):
                return "%s differs" % os.path.join(rel, name)
        ours = set(dirnames + filenames)
        theirs = set(os.listdir(other)) if os.path.isdir(other) else set()
        if ours != theirs:
            return "%s: entries differ (%s)" % (rel, sorted(ours ^ theirs))
    return None


def main(argv):
    if argv[1:] == ["--check"]:
        with tempfile.TemporaryDirectory() as tmp:
            write_all(tmp)
            for name in TREES:
                problem = same_tree(os.path.join(tmp, name), os.path.join(HERE, name))
                if problem is None:
                    problem = same_tree(os.path.join(HERE, name), os.path.join(tmp, name))
                if problem:
                    print("%s/%s: %s (rerun tests/doctor/data/write_trees.py)" % (HERE, name, problem))
                    return 1
        print("the %d recorded trees are what write_trees.py writes" % len(TREES))
        return 0
    write_all(argv[1] if len(argv) > 1 else HERE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
