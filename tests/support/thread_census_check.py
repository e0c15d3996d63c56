#!/usr/bin/env python3
"""Holds the label "threads" to what the tests really do (docs/testing.md, "Stages").

The asan stage's tests run with thread_census.c preloaded: every process of this build that
starts a thread writes its program and the command line of the test ctest ran into the census
folder. A test that starts a thread must be of kind "threads" (label threads), so that the tsan
stage runs it. A libFuzzer target's threads are its runtime's (the watchdog), not the code under
test: those of the programs tests/fuzz/targets.txt lists are left out.

Usage: thread_census_check.py BUILD_DIR CENSUS_DIR
Exit 0 when every test that started a thread carries the label, 1 otherwise (or when the census is
empty though threaded tests ran: the preload did not take), 2 on bad usage.
"""
import json
import os
import subprocess
import sys


def tests_of(build_dir):
    """name -> (command, labels) of every test ctest lists in build_dir."""
    listed = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build_dir, check=True,
                            capture_output=True, text=True).stdout
    tests = {}
    for test in json.loads(listed)["tests"]:
        labels = []
        for prop in test.get("properties", []):
            if prop["name"] == "LABELS":
                labels = prop["value"]
        tests[test["name"]] = (tuple(test.get("command") or ()), labels)
    return tests


def fuzz_targets():
    """The libFuzzer programs, from the first column of tests/fuzz/targets.txt."""
    listed = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "targets.txt")
    with open(listed) as f:
        return {line.split()[0] for line in f if line[:1].isalpha()}


def key(command):
    """A command as the census can see it: an interpreter shim may exec another path."""
    return (os.path.basename(command[0]),) + tuple(command[1:]) if command else ()


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    build_dir, census_dir = argv[1], argv[2]
    tests = tests_of(build_dir)
    by_command, by_key = {}, {}
    for name, (command, _) in tests.items():
        by_command.setdefault(command, []).append(name)
        by_key.setdefault(key(command), []).append(name)

    fuzzers = fuzz_targets()
    threaded, unmatched, fuzzing = set(), [], 0
    records = sorted(os.listdir(census_dir)) if os.path.isdir(census_dir) else []
    for record in records:
        with open(os.path.join(census_dir, record), "rb") as f:
            program, _, cmdline = f.read().partition(b"\n")
        if os.path.basename(program.decode(errors="replace")) in fuzzers:
            fuzzing += 1
            continue
        command = tuple(a.decode(errors="replace") for a in cmdline.split(b"\0") if a)
        names = by_command.get(command) or by_key.get(key(command))
        if names:
            threaded.update(names)
        else:
            unmatched.append(" ".join(command)[:200])

    labelled = {name for name, (_, labels) in tests.items() if "threads" in labels}
    missing = sorted(threaded - labelled)
    print(f"thread census: {len(records) - fuzzing} processes started threads, in "
          f"{len(threaded)} tests (and {fuzzing} libFuzzer targets); {len(labelled)} tests carry "
          f"the label threads, {len(labelled - threaded)} of them started none in this run")
    for command in sorted(set(unmatched)):
        print(f"  note: a process outside any test's command started a thread: {command}")
    if labelled and not records:
        print("FAIL: no process noted a thread: the census library was not preloaded "
              "(LD_PRELOAD of the asan test preset)")
        return 1
    for name in missing:
        print(f"FAIL: {name} starts a thread but is not of kind threads (label threads): "
              "register it with KIND threads so that the tsan stage runs it")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
