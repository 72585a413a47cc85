"""Soak: many consecutive RunTask trials through one sim graph; memory, descriptors, leaks.

    python bench/bench_soak.py --trials 50 --out bench/results/bench_soak.md

Brings up ``fr3_sim`` (franky-sim in real time, every node a process, DDS between them) on a
loopback address and domain of its own and sends ``--trials`` RunTask goals one after another,
cycling through a mix of tasks and seeds, without restarting anything. Every ``--every`` trials
it reads each node process's resident memory (VmRSS), open file descriptors and threads from
/proc. At the end it stops the graph as a user does (Ctrl-C, SIGINT to ``afford bringup``) and
checks that no process the graph ran is left and which shared-memory segments made meanwhile
are left in /dev/shm, with the node that had mapped each (DDS's shared-memory transport).

The goal (issue 16): the success rate of the mix, memory and descriptors that level off rather
than grow with every trial, and nothing leaked after Ctrl-C. A trial whose robot link was lost
is followed by the operator's recovery (``afford robot recover``), counted.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench_run_task import (
    Clock,
    provenance,
    start_graph,
)  # run as `python bench/bench_soak.py`: bench/ is on the path

MIX = (
    "put the banana on the plate",
    "hang the mug on the rack",
    "pick up the mug",
    "put the banana on the plate",
    "hang the mug on the rack",
)
NODES = ("sim_world", "perception", "planner", "executor", "task_server")


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, session id) of ``pid``; None once it is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else (int(fields[1]), int(fields[3]))


def family_of(root: int) -> list[int]:
    """Live descendants of ``root`` (the launcher starts each node in a session of its own)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st:
                children.setdefault(st[0], []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@dataclass
class Usage:
    rss_mb: float
    fds: int
    threads: int


def usage(pid: int) -> Usage | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    values = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return Usage(
        rss_mb=int(values["VmRSS"].split()[0]) / 1024.0, fds=fds, threads=int(values["Threads"].strip())
    )


def node_pids(root: int) -> dict[str, int]:
    """The graph's processes by name: its nodes, and sim_world's render child as ``renderer``."""
    pids: dict[str, int] = {}
    members = family_of(root)
    for pid in members:
        line = cmdline(pid)
        for name in NODES:
            if f"nodes.{name}" in line or line.rstrip().endswith(f"/{name}"):
                pids.setdefault(name, pid)
    sim = pids.get("sim_world")
    if sim is not None:
        for pid in members:
            st = _stat(pid)
            if st and st[0] == sim:
                pids["renderer"] = pid
    return pids


def shm() -> set[str]:
    try:
        return set(os.listdir("/dev/shm"))
    except OSError:
        return set()


def shm_maps(pids: list[int] | None = None) -> dict[str, set[int]]:
    """The /dev/shm names mapped by ``pids`` (every live process when None), with who maps
    them (DDS transports keep theirs mapped while in use: this bench's own ROS context too)."""
    names: dict[str, set[int]] = {}
    if pids is None:
        pids = [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()]
    for pid in pids:
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
        for line in maps.splitlines():
            if "/dev/shm/" in line:
                names.setdefault(line.split("/dev/shm/", 1)[1].split(" ")[0], set()).add(pid)
    return names


@dataclass
class Soak:
    outcomes: list[tuple[str, int, str]] = field(default_factory=list)  # sentence, seed, "ok" / reason
    recoveries: int = 0
    checkpoints: list[tuple[int, float, dict[str, Usage]]] = field(default_factory=list)
    owners: dict[str, list[str]] = field(default_factory=dict)  # /dev/shm name -> graph processes


def checkpoint(soak: Soak, root: int, t0: float) -> None:
    pids = node_pids(root)
    names = {pid: name for name, pid in pids.items()}
    for segment, users in shm_maps(list(pids.values())).items():
        soak.owners[segment] = sorted(names[u] for u in users)
    readings = {name: u for name, pid in pids.items() if (u := usage(pid)) is not None}
    soak.checkpoints.append((len(soak.outcomes), time.perf_counter() - t0, readings))
    line = ", ".join(f"{n} {u.rss_mb:.0f} MB/{u.fds} fd" for n, u in sorted(readings.items()))
    print(f"  after {len(soak.outcomes)} trials: {line}", flush=True)


def report(
    soak: Soak, args: argparse.Namespace, leaks: list[str], shm_left: list[str], wall: float, at: str
) -> str:
    n = len(soak.outcomes)
    ok = sum(o == "ok" for _, _, o in soak.outcomes)
    behind = sum(o.startswith("the simulation fell behind") for _, _, o in soak.outcomes)
    stale = sum("stale robot state" in o for _, _, o in soak.outcomes)
    lines = [
        "# Soak: consecutive RunTask trials through one sim graph",
        "",
        f"Command: `python bench/bench_soak.py --trials {args.trials} --every {args.every}` at {at}; "
        f"{os.cpu_count()} cores, {platform.machine()}; "
        f"{time.strftime('%Y-%m-%d %H:%M')}; {wall / 60:.0f} min.",
        "",
        f'**{ok}/{n} trials succeeded**; {behind} ended "the simulation fell behind"; {stale} ended in a '
        f"stale state; {soak.recoveries} operator recoveries.",
        "",
        "| task | success |",
        "|---|---|",
    ]
    per: dict[str, Counter[str]] = {}
    for sentence, _, outcome in soak.outcomes:
        per.setdefault(sentence, Counter())["ok" if outcome == "ok" else "fail"] += 1
    for sentence, c in per.items():
        lines.append(f'| "{sentence}" | {c["ok"]}/{c["ok"] + c["fail"]} |')
    names = sorted({name for _, _, r in soak.checkpoints for name in r})
    lines += [
        "",
        "Resident memory (MB) / open file descriptors / threads per process, after each block of trials:",
        "",
        "| after trials | minutes | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for done, t, readings in soak.checkpoints:
        cells = [
            f"{readings[n].rss_mb:.0f} / {readings[n].fds} / {readings[n].threads}"
            if n in readings
            else "gone"
            for n in names
        ]
        lines.append(f"| {done} | {t / 60:.1f} | " + " | ".join(cells) + " |")
    if len(soak.checkpoints) >= 3:
        # Growth from the first block's end (caches warm, models loaded) to the last.
        _, _, first = soak.checkpoints[1]
        _, _, last = soak.checkpoints[-1]
        growth = [
            f"{n} {last[n].rss_mb - first[n].rss_mb:+.0f} MB, {last[n].fds - first[n].fds:+d} fd"
            for n in names
            if n in first and n in last
        ]
        lines += [
            "",
            f"Growth from trial {soak.checkpoints[1][0]} to {soak.checkpoints[-1][0]}: "
            + "; ".join(growth)
            + ".",
        ]
    procs = "no process left" if not leaks else "left running: " + "; ".join(leaks)
    left = [f"{name} ({', '.join(soak.owners.get(name, ['owner not seen']))})" for name in shm_left]
    segments = "no shared-memory segment left" if not shm_left else "left in /dev/shm: " + ", ".join(left)
    lines += [
        "",
        f"After Ctrl-C: {procs}; {segments}.",
        "",
        "Failures:",
        *(f"- {s!r} seed {seed}: {o}" for s, seed, o in soak.outcomes if o != "ok"),
    ]
    if ok == n:
        lines.append("- none")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--every", type=int, default=10, help="read memory and descriptors every N trials")
    ap.add_argument("--mix", nargs="+", default=list(MIX), help="sentences, cycled")
    ap.add_argument("--out", default=None, help="write the Markdown report here too")
    ap.add_argument("--log", default="bench_soak_graph.log", help="the graph's log (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.trials < 1 or args.every < 1:
        ap.error("--trials and --every must be at least 1")

    os.environ.setdefault("ROS_DOMAIN_ID", str(150 + os.getpid() % 60))
    host = f"127.0.{os.getpid() % 200 + 30}.11"
    at = provenance()
    shm_before = shm()
    log = open(args.log, "w")  # noqa: SIM115 - the graph writes to it until it ends
    graph = start_graph(host, log)
    root = graph.pid
    soak = Soak()
    t0 = time.perf_counter()
    family: dict[int, str] = {}
    try:
        from afford_ros.graph_cli import recover_robot, run_task

        run_task("pick up the unicorn", wait=240.0, out=open(os.devnull, "w"))  # noqa: SIM115 - waits for the graph
        family = {pid: cmdline(pid) for pid in family_of(root)}
        checkpoint(soak, root, t0)
        for i in range(args.trials):
            sentence = args.mix[i % len(args.mix)]
            seed = i // len(args.mix)
            clock = Clock()
            _, result = run_task(sentence, seed=seed, out=clock, wait=60.0, timeout=900.0)
            outcome = "ok" if result.success else (result.abstain_reason or "unknown")
            if "cancelled by the client" in outcome:
                print("  the trial was cancelled (Ctrl-C): ending the soak", flush=True)
                break
            soak.outcomes.append((sentence, seed, outcome))
            print(
                f"  {i + 1:3d} {sentence!r} seed {seed}: {'SUCCESS' if result.success else outcome}",
                flush=True,
            )
            if not result.success and any(
                w in outcome for w in ("/executor/recover", "communication", "reflex")
            ):
                accepted, message = recover_robot()
                soak.recoveries += 1
                print(f"      operator recovery: {message}", flush=True)
            if (i + 1) % args.every == 0:
                family.update({pid: cmdline(pid) for pid in family_of(root)})
                checkpoint(soak, root, t0)
    finally:
        family.update({pid: cmdline(pid) for pid in family_of(root)})
        if graph.poll() is None:
            graph.send_signal(signal.SIGINT)  # what Ctrl-C in the launcher's terminal sends it
            try:
                graph.wait(60)
            except subprocess.TimeoutExpired:
                print("the graph did not end within 60 s of SIGINT; killing it", flush=True)
                os.killpg(graph.pid, signal.SIGKILL)
        log.close()
    wall = time.perf_counter() - t0
    time.sleep(1.0)
    # Every process the graph ever had (nodes, restarted nodes, the render child), still alive
    # with the same command line: left behind.
    leaks = [f"{pid} {line[:80]}" for pid, line in family.items() if _stat(pid) and cmdline(pid) == line]
    # A new segment nobody maps any more was left behind by the graph; one this process still
    # maps is its own ROS context's, gone when it exits.
    shm_left = sorted(shm() - shm_before - set(shm_maps()))
    text = report(soak, args, leaks, shm_left, wall, at)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0 if not leaks and not shm_left else 1


if __name__ == "__main__":
    sys.exit(main())
