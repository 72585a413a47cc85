"""Benchmark of Stage-2 motion planning: plan() over seeded start/goal pairs, and check speed.

Scene: a table top at z = 0 and a 50 cm high, 40 cm long divider across it at y = 0. Each pair
has a top-down grasp-like TCP pose on either side of the divider (random position and yaw),
turned into collision-free joint configurations by IK from the home pose, so every query has
to go over or around the divider.

Run:  .venv/bin/python bench/bench_plan.py [--pairs 20] [--seed 0] [--time-limit 1.0]
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from afford_planner.collision import CollisionWorld
from afford_planner.ik import IKConfig, ik_solutions
from afford_planner.motion import MotionPlanner, PlannerConfig
from afford_planner.robot_model import RobotModel


@dataclass
class BenchConfig:
    """Benchmark size and seeds.

    Attributes:
        pairs: Number of start/goal pairs planned.
        seed: Seed of the pair generator; the planner is seeded with ``seed + 1 + i``.
        time_limit: RRTConnect budget per query (s).
        check_samples: Random configurations timed for the collision-check rate.
    """

    pairs: int = 20
    seed: int = 0
    time_limit: float = 1.0
    check_samples: int = 5000

    def __post_init__(self) -> None:
        if self.pairs < 1:
            raise ValueError(f"pairs must be >= 1, got {self.pairs}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if self.time_limit <= 0.0:
            raise ValueError(f"time_limit must be > 0 s, got {self.time_limit}")
        if self.check_samples < 100:
            raise ValueError(f"check_samples must be >= 100, got {self.check_samples}")


def build_world(robot: RobotModel) -> CollisionWorld:
    world = CollisionWorld(robot)
    table, wall = np.eye(4), np.eye(4)
    table[:3, 3] = [0.5, 0.0, -0.02]
    wall[:3, 3] = [0.5, 0.0, 0.25]
    world.add_box("table", [1.0, 1.2, 0.04], table)
    world.add_box("wall", [0.4, 0.04, 0.5], wall)
    return world


def sample_side(
    robot: RobotModel, world: CollisionWorld, rng: np.random.Generator, side: float
) -> np.ndarray:
    """Collision-free configuration with a top-down TCP on one side (sign of y) of the wall."""
    down = robot.fk(robot.q_home)[:3, :3]
    ik = IKConfig(seed=int(rng.integers(1 << 31)))
    while True:
        pose = np.eye(4)
        pose[:3, :3] = Rotation.from_euler("z", rng.uniform(-1.0, 1.0)).as_matrix() @ down
        pose[:3, 3] = [rng.uniform(0.35, 0.65), side * rng.uniform(0.12, 0.35), rng.uniform(0.08, 0.35)]
        found, _ = ik_solutions(robot, pose, robot.q_home, ik, accept=lambda q: not world.in_collision(q))
        if found:
            return found[0]


def checks_per_second(world: CollisionWorld, configs: list[np.ndarray]) -> float:
    t0 = time.perf_counter()
    for q in configs:
        world.in_collision(q)
    return len(configs) / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=BenchConfig.pairs)
    parser.add_argument("--seed", type=int, default=BenchConfig.seed)
    parser.add_argument("--time-limit", type=float, default=BenchConfig.time_limit)
    args = parser.parse_args(argv)
    config = BenchConfig(pairs=args.pairs, seed=args.seed, time_limit=args.time_limit)
    print("$ " + " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]))

    robot = RobotModel()
    world = build_world(robot)
    rng = np.random.default_rng(config.seed)
    pairs = [
        (sample_side(robot, world, rng, 1.0), sample_side(robot, world, rng, -1.0))
        for _ in range(config.pairs)
    ]

    print(f"{'#':>3} {'ok':>3} {'time ms':>8} {'cpu ms':>7} {'L rad':>7} {'wpts':>5} {'checks':>7}  reason")
    times, cpu_times, lengths, checks, failures = [], [], [], [], 0
    for i, (q_start, q_goal) in enumerate(pairs):
        planner = MotionPlanner(
            robot, world, PlannerConfig(seed=config.seed + 1 + i, time_limit=config.time_limit)
        )
        cpu0 = time.process_time()
        result = planner.plan(q_start, q_goal)
        cpu_times.append(time.process_time() - cpu0)
        times.append(result.planning_time)
        checks.append(result.collision_checks)
        if result.success:
            lengths.append(result.path_length)
        else:
            failures += 1
        print(
            f"{i:>3} {'y' if result.success else 'n':>3} {result.planning_time * 1e3:>8.1f} "
            f"{cpu_times[-1] * 1e3:>7.1f} "
            f"{result.path_length:>7.2f} {len(result.waypoints):>5} {result.collision_checks:>7}  "
            f"{result.reason}"
        )

    t = np.array(times) * 1e3
    print(
        f"\nplan(): {config.pairs - failures}/{config.pairs} solved; time median {np.median(t):.1f} ms, "
        f"p90 {np.percentile(t, 90):.1f} ms, max {t.max():.1f} ms (target: median < 100 ms)"
    )
    cpu = np.array(cpu_times) * 1e3
    # CPU time is what a shared or loaded machine does not inflate.
    print(f"plan() CPU time: median {np.median(cpu):.1f} ms, p90 {np.percentile(cpu, 90):.1f} ms")
    if lengths:
        print(f"path length L (joint space, rad): median {np.median(lengths):.2f}")
    print(f"collision checks per plan: median {np.median(checks):.0f}")
    print(f"checks/s inside plan() (incl. OMPL and Python overhead): {sum(checks) / sum(times):,.0f}")

    sample_rng = np.random.default_rng(config.seed + 12345)
    configs = [robot.random_configuration(sample_rng) for _ in range(config.check_samples)]
    free = [q for q in configs if not world.in_collision(q)]
    print(
        f"in_collision() on uniform random configurations: {checks_per_second(world, configs):,.0f} checks/s"
    )
    print(
        f"in_collision() on collision-free ones (every pair tested, {len(free)} of them): "
        f"{checks_per_second(world, free):,.0f} checks/s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
