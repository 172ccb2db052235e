"""Training runner: a Learner and N Actors against one replay backend.

    python -m agent.rl.train --backend inprocess --actors 2 --env CartPole-v1 --seed 1
    python -m agent.rl.train --backend host --actors 2          # starts a host server on loopback
    python -m agent.rl.train --backend host --replay 198.18.0.10:45000 --weights-dest ...
    python -m agent.rl.train --backend switch --replay <vip>:45000 --weights-dest <group>:45001

The Learner runs in this process; Actors run as threads (required for
inprocess) or processes. Weights go over UDP: to each --weights-dest (the
switch's broadcast group), or by default to every actor's loopback port.
The run stops when the mean greedy return over eval_episodes reaches
solve_return, or when --max-env-steps / --max-seconds run out, and prints
one SUMMARY line. Everything lands in --run-dir: metrics.csv,
checkpoint.pt (resume with --resume), summary.json, pids.json (this
process and its actor processes).

Faults: an actor that dies is reported and the run goes on with the others
(it stops when none is left); actor processes stop when this process is gone
(killed: resume it with --resume); the Learner waits out a replay service that
does not answer or refuses with BELOW_MIN_SIZE, EMPTY, DISABLED or NOT_READY,
and the longest wait between two learner steps is reported as max_stall_s.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import signal
import socket
import sys
import time
from collections import deque
from dataclasses import asdict
from pathlib import Path

import numpy as np

from agent.contract.cli_args import ArgumentParser, int_range
from agent.contract.protocol import ALLOW_ALL, REPLAY_UDP_PORT, SAMPLING_MODES
from agent.replay.client import ReplayClient, RetryPolicy, make_client
from agent.replay.memory import ReplayService, TableConfig
from agent.replay.resolver import PayloadResolver
from agent.replay.server_process import ServerProcess
from agent.rl.actor import ActorReport
from agent.rl.actors import ACTOR_MODES, ActorPool, ActorSpec
from agent.rl.dqn import set_torch_threads
from agent.rl.envs import make_env
from agent.rl.evaluate import evaluate
from agent.rl.hparams import MAX_ACTORS, Hyperparams, add_run_options, check_env, for_env
from agent.rl.learner import Learner
from agent.rl.metrics import MetricsLog
from agent.rl.storage import Reader, make_reader
from agent.rl.weights import WEIGHTS_UDP_PORT, WeightSender

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
ACTOR_CHECK_EVERY = 1.0   # seconds between checks that the actors are alive


def _nth(values: list[str], i: int, default: str | None) -> str | None:
    return values[i] if i < len(values) else default


def _address(text: str, default_port: int) -> tuple[str, int]:
    host, _, port = text.partition(":")
    return host, int(port) if port else default_port


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def start_host_server(hp: Hyperparams, table: int, seed: int, run_dir: Path) -> ServerProcess:
    """A host replay server process on loopback, listening once this returns."""
    config = TableConfig(capacity=hp.capacity, min_size=hp.learning_starts,
                         default_mode=SAMPLING_MODES[hp.sample_mode])
    return ServerProcess(LOOPBACK, [table], config, [LOOPBACK], run_dir / "host-server.log",
                         port=_free_port(), seed=seed).start()


class Run:
    """One training run: builds the pieces, runs the loop, reports."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.hp, self.info = check_env(for_env(args.env, args.set, args.storage))
        self.run_dir: Path = args.run_dir
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.actor_mode = args.actor_mode or ("thread" if args.backend == "inprocess"
                                              else "process")
        self.actors: ActorPool | None = None
        self.server: ServerProcess | None = None
        self.service: ReplayService | None = None
        self.env_steps = 0
        self.inserts = 0
        self.episodes = 0
        self.returns: deque[float] = deque(maxlen=20)
        self.weight_versions: dict[int, int] = {}   # actor -> newest weights version taken
        self.elapsed_before = 0.0
        self.max_return = float("inf")
        self.max_stall = (0.0, 0.0)                   # (longest gap between steps, its end)

    # --- set-up -------------------------------------------------------------------

    def replay_address(self) -> tuple[str, int] | None:
        args = self.args
        if args.backend == "inprocess":
            cfg = TableConfig(capacity=self.hp.capacity, min_size=self.hp.learning_starts)
            self.service = ReplayService(seed=args.seed)
            self.service.configure(args.table, cfg)
            self.service.allow(LOOPBACK, args.table, ALLOW_ALL)
            return None
        if args.replay:
            return _address(args.replay, REPLAY_UDP_PORT)
        if args.backend == "switch":
            raise SystemExit("--backend switch needs --replay VIP[:PORT]")
        self.server = start_host_server(self.hp, args.table, args.seed, self.run_dir)
        return self.server.address

    def reader(self, client: ReplayClient) -> Reader:
        """How the learner reads sampled batches (storage reference: a resolver that
        fetches the payloads from the actors, topping up missing samples)."""
        hp = self.hp
        if hp.storage != "reference":
            return make_reader(hp.storage, self.info)
        resolver = PayloadResolver((self.args.bind, 0))
        mode = SAMPLING_MODES[hp.sample_mode]
        return make_reader(hp.storage, self.info, resolver, lambda k: client.sample(k, mode))

    def plan_actors(self, replay: tuple[str, int] | None) -> tuple[list[ActorSpec],
                                                                   list[tuple[str, int]]]:
        """Each actor's spec, and the learner's weight destinations."""
        args = self.args
        if args.backend == "inprocess" and self.actor_mode != "thread":
            raise SystemExit("the inprocess backend needs --actor-mode thread")
        if args.actor_netns and self.actor_mode != "process":
            raise SystemExit("--actor-netns needs --actor-mode process")
        for name, values in (("--actor-netns", args.actor_netns), ("--actor-ip", args.actor_ip)):
            if values and len(values) != args.actors:
                raise SystemExit(f"{name} given {len(values)} times for {args.actors} actors")
        broadcast = [_address(d, args.weights_port) for d in args.weights_dest]
        specs, loopback = [], []
        for i in range(args.actors):
            if broadcast:  # one port on every actor host; the switch fans out
                weights_bind = (args.actor_bind, args.weights_port)
            else:  # one port per actor on this host
                weights_bind = (args.actor_bind,
                                args.weights_port + i if args.weights_port else _free_port())
                loopback.append(weights_bind)
            specs.append(ActorSpec(i, args.actors, self.hp, args.seed * 1000 + i, args.backend,
                                   replay, _nth(args.actor_ip, i, args.bind), weights_bind,
                                   args.table, args.ack_inserts, _nth(args.actor_netns, i, None)))
        return specs, broadcast or loopback

    def make_pool(self) -> ActorPool:
        """The pool that starts and watches this run's actors (agent.orchestration.cluster
        places them on Ray nodes instead)."""
        return ActorPool(self.actor_mode, self.service)

    def stop_all(self) -> None:
        """Stop the actors (and the host server this run started)."""
        if self.actors is not None:
            self.take(self.actors.stop())
        if self.server is not None:
            self.server.stop()

    def take(self, reports: list[ActorReport]) -> None:
        """Add the actors' reports to the run's counts."""
        for r in reports:
            self.env_steps += r.env_steps
            self.inserts += r.inserts
            self.episodes += len(r.returns)
            self.returns.extend(r.returns)
            self.weight_versions[r.actor] = max(r.weights_version,
                                                self.weight_versions.get(r.actor, -1))

    # --- the loop -----------------------------------------------------------------

    def run(self) -> dict[str, object]:
        """Train until solved or out of budget; returns (and writes) the summary."""
        args, hp = self.args, self.hp
        set_torch_threads(1)
        random.seed(args.seed)
        np.random.seed(args.seed)
        env = make_env(hp.env_id)
        self.max_return = float(env.spec.max_episode_steps or np.inf) if env.spec else np.inf
        env.close()
        reader: Reader | None = None
        metrics = MetricsLog(self.run_dir / "metrics.csv")
        try:
            replay = self.replay_address()
            client = make_client(args.backend, address=replay, service=self.service,
                                 bind=(args.bind, 0), table=args.table,
                                 policy=RetryPolicy(partial_ok=hp.partial_batch))
            specs, dests = self.plan_actors(replay)
            reader = self.reader(client)
            learner = Learner(hp, client, self.info.obs_shape, self.info.n_actions,
                              WeightSender(dests), seed=args.seed, reader=reader)
            if args.resume:
                self._resume(learner, args.resume)
            start = time.monotonic() - self.elapsed_before
            self.actors = self.make_pool()
            self.actors.start(specs, self.run_dir / "pids.json")
            solved, eval_mean = self._loop(learner, client, self.actors, metrics, start)
        finally:
            self.stop_all()
        wall = time.monotonic() - start
        if not solved:
            result = evaluate(learner.q, hp.env_id, hp.eval_episodes)
            eval_mean, solved = result.mean, result.mean >= hp.solve_return
        self._save(learner, wall)
        metrics.row(wall_s=wall, learner_steps=learner.steps, env_steps=self.env_steps,
                    episodes=self.episodes, train_return=self._train_return(),
                    eval_return=eval_mean, eval_episodes=hp.eval_episodes)
        metrics.close()
        summary = {"solved": solved, "backend": args.backend, "actors": args.actors,
                   "env": hp.env_id, "seed": args.seed, "learner_steps": learner.steps,
                   "env_steps": self.env_steps, "wall_s": round(wall, 1),
                   "eval_return": eval_mean, "inserts": self.inserts, "episodes": self.episodes,
                   "actor_weight_versions": self.weight_versions, "client": client.stats(),
                   "max_stall_s": round(self.max_stall[0], 2),
                   "max_stall_end_s": round(self.max_stall[1], 1),
                   "actors_died": self.actors.died if self.actors else {},
                   "storage": hp.storage, "payloads": reader.stats() if reader else {},
                   "hparams": asdict(hp)}
        (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=1))
        if hp.storage == "reference":
            print("payloads by reference: " + " ".join(
                f"{k}={v}" for k, v in summary["payloads"].items()), flush=True)
        print(f"SUMMARY solved={solved} backend={args.backend} actors={args.actors} "
              f"env={hp.env_id} seed={args.seed} learner_steps={learner.steps} "
              f"env_steps={self.env_steps} wall_s={wall:.1f} eval_return={eval_mean:.1f} "
              f"max_stall_s={self.max_stall[0]:.1f}", flush=True)
        return summary

    def _loop(self, learner: Learner, client: ReplayClient, actors: ActorPool,
              metrics: MetricsLog, start: float) -> tuple[bool, float]:
        """Learner steps with evaluation, metrics and checkpoints; (solved, eval mean)."""
        args, hp = self.args, self.hp
        solved, eval_mean = False, float("nan")
        shown: tuple[float, int] | None = None      # an evaluation not yet in a row
        last = (time.monotonic(), 0, self.inserts)  # time, samples, inserts at the last row
        losses: list[float] = []
        learner.broadcast()
        stepped = checked = None
        while True:
            info = learner.step()
            self.take(actors.reports())
            now = time.monotonic()
            wall = now - start
            if self.env_steps >= args.max_env_steps or wall >= args.max_seconds:
                return solved, eval_mean
            if checked is None or now - checked >= ACTOR_CHECK_EVERY:
                checked = now
                if not actors.check():
                    print("every actor died: stopping", flush=True)
                    return solved, eval_mean
            if info is not None and stepped is not None and now - stepped > self.max_stall[0]:
                self.max_stall = (now - stepped, wall)
            if info is None:
                if learner.waits % 100 == 0:
                    learner.broadcast()  # for actors that missed the first one
                time.sleep(0.005)
                continue
            losses.append(info.loss)
            if info.step % hp.eval_every == 0:
                # Evaluation gives up once the mean cannot reach solve_return; the
                # row shows the mean of the episodes it ran, and how many.
                result = evaluate(learner.q, hp.env_id, hp.eval_episodes,
                                  give_up_below=hp.solve_return if np.isfinite(hp.solve_return)
                                  else None, max_return=self.max_return)
                shown = (result.mean, len(result.returns))
                if result.complete:
                    eval_mean = result.mean
                    solved = result.mean >= hp.solve_return
            if info.step % hp.log_every == 0 or solved or shown:
                now, samples = time.monotonic(), client.stats()["samples"]
                metrics.row(wall_s=wall, learner_steps=info.step, env_steps=self.env_steps,
                            episodes=self.episodes, train_return=self._train_return(),
                            eval_return=shown[0] if shown else float("nan"),
                            eval_episodes=shown[1] if shown else float("nan"),
                            loss=float(np.mean(losses)),
                            samples_per_s=(samples - last[1]) / (now - last[0]),
                            inserts_per_s=(self.inserts - last[2]) / (now - last[0]))
                last, losses, shown = (now, samples, self.inserts), [], None
            if info.step % hp.checkpoint_every == 0:
                self._save(learner, wall)
            if solved:
                return solved, eval_mean
            stepped = time.monotonic()  # evaluation and checkpoints are not stalls

    def _resume(self, learner: Learner, path: Path) -> None:
        extra = learner.load(path)
        self.env_steps = int(extra.get("env_steps", 0))  # type: ignore[call-overload]
        self.episodes = int(extra.get("episodes", 0))  # type: ignore[call-overload]
        self.elapsed_before = float(extra.get("wall_s", 0.0))  # type: ignore[arg-type]
        print(f"resumed from {path} at learner step {learner.steps}", flush=True)

    def _train_return(self) -> float:
        return float(np.mean(self.returns)) if self.returns else float("nan")

    def _save(self, learner: Learner, wall: float) -> None:
        learner.save(self.run_dir / "checkpoint.pt", env_steps=self.env_steps,
                     episodes=self.episodes, wall_s=wall)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = ArgumentParser(prog="python -m agent.rl.train", description=__doc__.splitlines()[0])
    add_run_options(p, backend="inprocess", actors_help=f"1..{MAX_ACTORS}",
                    run_dir_help="default runs/<backend>-s<seed>")
    p.add_argument("--resume", type=Path, default=None, help="checkpoint to resume from")
    p.add_argument("--replay", default=None, metavar="IP[:PORT]",
                   help="replay service address (switch VIP or host server)")
    p.add_argument("--bind", default="0.0.0.0", help="local address of replay clients")
    p.add_argument("--ack-inserts", action="store_true", help="actors wait for insert ACKs")
    p.add_argument("--actor-mode", choices=ACTOR_MODES, default=None)
    p.add_argument("--actor-bind", default=LOOPBACK, help="address actors get weights on")
    p.add_argument("--actor-netns", action="append", default=[], metavar="NS",
                   help="network namespace (name or /proc/PID/ns/net) of each actor, in order")
    p.add_argument("--actor-ip", action="append", default=[], metavar="IP",
                   help="replay client address of each actor, in order (default --bind)")
    p.add_argument("--weights-port", type=int_range(0, 65535), default=0,
                   help="actor weight port (+i per actor on loopback); 0 = free ports")
    p.add_argument("--weights-dest", action="append", default=[], metavar="IP[:PORT]",
                   help="where the learner sends weights (the broadcast group); "
                        "default: every actor's loopback port")
    args = p.parse_args(argv)
    if not 1 <= args.actors <= MAX_ACTORS:
        p.error(f"--actors {args.actors}: must be 1..{MAX_ACTORS}")
    if args.run_dir is None:
        args.run_dir = Path("runs") / f"{args.backend}-s{args.seed}-{int(time.time())}"
    if args.weights_dest and not args.weights_port:
        args.weights_port = WEIGHTS_UDP_PORT
    return args


def _terminate(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through Run's clean-up like Ctrl-C


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    signal.signal(signal.SIGTERM, _terminate)
    try:
        run = Run(parse_args(argv))
    except ValueError as exc:  # a bad --env or --set: before anything started
        print(f"error: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)
    try:
        summary = run.run()
    except KeyboardInterrupt:
        print("interrupted: actors stopped", flush=True)
        sys.exit(130)
    sys.exit(0 if summary["solved"] else 1)


if __name__ == "__main__":
    main()
