#!/usr/bin/env python3
"""The deployment recipes (examples/deployment, docs/deployment.md) stay usable and true:
each parses (YAML) or has the shape its launcher needs (Dockerfile, sbatch, TaskProlog), names
both cluster kinds (InfiniBand/RoCE and Ethernet), and every NCCL_* / NCCL_PILOT_* variable it
sets is one docs/configuration.md documents, with a value the library accepts. (Shell scripts
are shellchecked by the project-wide lint test.)
Usage: recipes_test.py SOURCE_DIR"""
import os
import re
import sys

try:
    import yaml
except ImportError:  # a pyenv python without PyYAML: Debian's python3-yaml is for /usr/bin
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

SRC = sys.argv[1]
RECIPES = os.path.join(SRC, "examples", "deployment")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def documented_names():
    """Every `NCCL_...` name in the first column of configuration.md's tables."""
    text = open(os.path.join(SRC, "docs", "configuration.md")).read()
    names = set()
    for line in text.splitlines():
        m = re.match(r"\|\s*`(NCCL_[A-Z0-9_]+)(?:=[^`]*)?`", line)
        if m:
            names.add(m.group(1))
        for extra in re.findall(r"`(NCCL_[A-Z0-9_]+)`", line.split("|")[1] if "|" in line else ""):
            names.add(extra)
    return names


# Values the library or NCCL checks; anything else set by a recipe must at least be non-empty.
ALLOWED = {
    "NCCL_PILOT_TRANSPORT": {"auto", "socket", "none"},
    "NCCL_DEBUG": {"VERSION", "WARN", "INFO", "TRACE"},
}
PLUGIN_PATHS = {
    "NCCL_NET_PLUGIN": re.compile(r"(^pilot$|/lib/libnccl-net-pilot\.so$)"),
    "NCCL_TUNER_PLUGIN": re.compile(r"(^pilot$|/lib/libnccl-tuner-pilot\.so$)"),
}


def check_assignment(recipe, name, value):
    if name not in documented:
        fail(f"{recipe}: {name} is not in docs/configuration.md")
    if name in ALLOWED and value not in ALLOWED[name]:
        fail(f"{recipe}: {name}={value} is not one of {sorted(ALLOWED[name])}")
    if name in PLUGIN_PATHS and not PLUGIN_PATHS[name].search(value):
        fail(f"{recipe}: {name}={value} does not name the installed library")
    if name == "NCCL_PILOT_SOCKET_NSTREAMS" and not (value.isdigit() and 1 <= int(value) <= 16):
        fail(f"{recipe}: {name}={value} is not 1..16")
    if not value:
        fail(f"{recipe}: {name} is set to nothing")


def shell_assignments(text):
    """export NAME=value, echo "export NAME=value", NAME=value in ENV continuation lines."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#"):
            continue
        for m in re.finditer(r"(?:export\s+|ENV\s+|^|\s)(NCCL_[A-Z0-9_]+)=([^\s\"\\]+)", line):
            out.append((m.group(1), m.group(2)))
    return out


def expand(value, variables):
    return re.sub(r"\$(\w+)|\$\{(\w+)\}", lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), value)


def check_fabrics(recipe, text):
    if not re.search(r"InfiniBand|\bIB\b", text):
        fail(f"{recipe}: says nothing for InfiniBand clusters")
    if "Ethernet" not in text:
        fail(f"{recipe}: says nothing for Ethernet clusters")


documented = documented_names()
seen = {}

for root, _, files in os.walk(RECIPES):
    for name in sorted(files):
        path = os.path.join(root, name)
        recipe = os.path.relpath(path, SRC)
        text = open(path).read()
        check_fabrics(recipe, text)
        assignments = []
        if name.endswith((".yaml", ".yml")):
            try:
                docs = [d for d in yaml.safe_load_all(text) if d is not None]
            except yaml.YAMLError as e:
                fail(f"{recipe}: not YAML: {e}")
                continue
            for doc in docs:
                if doc.get("kind") == "PyTorchJob":
                    for role, spec in doc["spec"]["pytorchReplicaSpecs"].items():
                        for c in spec["template"]["spec"]["containers"]:
                            env = {e["name"]: str(e.get("value", "")) for e in c.get("env", [])}
                            for must in ("NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN"):
                                if must not in env:
                                    fail(f"{recipe}: {role} container sets no {must}")
                            assignments += env.items()
                elif "env_vars" in doc:
                    assignments += [(k, str(v)) for k, v in doc["env_vars"].items()]
                else:
                    fail(f"{recipe}: neither a PyTorchJob nor a Ray runtime_env")
        elif name == "Dockerfile":
            if not re.search(r"^FROM\s+\S+", text, re.M):
                fail(f"{recipe}: no FROM line")
            variables = {"pilot": "/opt/nccl-pilot"}
            assignments = [(k, expand(v, variables)) for k, v in shell_assignments(text)]
            if "nccl-pilot version" not in text:
                fail(f"{recipe}: does not smoke-test the install with `nccl-pilot version`")
        elif name.endswith((".sh", ".sbatch")):
            if not text.startswith("#!"):
                fail(f"{recipe}: no #! line")
            variables = dict(re.findall(r"^\s*(\w+)=([^\s#]+)", text, re.M))
            assignments = [(k, expand(v, variables)) for k, v in shell_assignments(text)]
            if name.endswith(".sbatch") and "#SBATCH" not in text:
                fail(f"{recipe}: no #SBATCH lines")
            if "taskprolog" in name and 'echo "export ' not in text:
                fail(f"{recipe}: a TaskProlog sets variables by printing 'export NAME=value'")
        else:
            fail(f"{recipe}: a recipe of an unknown kind")
            continue
        if not assignments:
            fail(f"{recipe}: sets no variable")
        for var, value in assignments:
            check_assignment(recipe, var, value)
        seen[recipe] = len(assignments)

for recipe, count in sorted(seen.items()):
    print(f"{recipe}: {count} settings checked")
kinds = {"docker", "slurm", "kubernetes", "ray"}
missing = kinds - {r.split(os.sep)[2] for r in seen}
if missing:
    fail(f"no recipe for {sorted(missing)}")
sys.exit(1 if failures else 0)
