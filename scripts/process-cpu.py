"""Where a command's CPU goes, by kind of process: runs the command, reads every process's user + system CPU from
/proc every 0.3 s until it ends, and prints the CPU seconds and the count of each kind (vitest forks, policy workers,
DynamoDB Local, the CLI's commands, mypy, tsc, ...). A process that lives less than 0.3 s may be missed; a process's
last reading before it ends is what counts (a little is lost at the end of each). Every process on the machine is
read, not only the command's (one that was running before counts from the command's start): run nothing else
beside it.

    python3 scripts/process-cpu.py npm test
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def kind(cmd: str) -> str:
    rules = [
        (lambda c: "vitest" in c and "forks" in c, "vitest fork"),
        (lambda c: "vitest" in c, "vitest main"),
        (lambda c: "DynamoDBLocal" in c or c.startswith("java"), "java (DynamoDB Local)"),
        (lambda c: "mypy" in c, "mypy"),
        (lambda c: "harness_s_worker" in c, "python policy worker"),
        (lambda c: "pytest" in c, "pytest"),
        (lambda c: "python" in c, "python, other"),
        (lambda c: "chrom" in c, "chromium"),
        (lambda c: "biome" in c, "biome"),
    ]
    for test, name in rules:
        if test(cmd):
            return name
    if m := re.search(r"tsc\b.*-p (\S+)", cmd):
        return f"tsc -p {m.group(1)}"
    if m := re.search(r"(?:packages/cli/src/main\.ts|harness-s\.js) (\S+)", cmd):
        return f"cli {m.group(1)}"
    return "node " + " ".join(cmd.split()[1:3])[:80] if cmd.startswith("node") else "other " + cmd[:60]


def read_all(seen: dict[tuple[str, str], list], before: bool = False) -> None:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu, started = (int(fields[11]) + int(fields[12])) / HZ, fields[19]
            key = (pid, started)
            if key not in seen:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    seen[key] = [
                        f.read().replace(b"\0", b" ").decode(errors="replace").strip(),
                        cpu,
                        cpu if before else 0,
                    ]
            seen[key][1] = cpu
        except (OSError, IndexError, ValueError):
            pass  # the process ended between the listing and the read


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    seen: dict[tuple[str, str], list] = {}
    read_all(seen, before=True)
    child = subprocess.Popen(sys.argv[1:])
    while child.poll() is None:
        read_all(seen)
        time.sleep(0.3)
    by_kind: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])
    for (pid, _), (cmd, last, first) in seen.items():
        if int(pid) == os.getpid() or last == first:
            continue
        by_kind[kind(cmd)][0] += last - first
        by_kind[kind(cmd)][1] += 1
    total = sum(c for c, _ in by_kind.values())
    print(f"\nCPU s by kind of process ({total:.0f} s in all, every process on the machine):")
    for name, (cpu, count) in sorted(by_kind.items(), key=lambda kv: -kv[1][0])[:30]:
        print(f"{cpu:9.1f} s {count:5d}  {name}")
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
