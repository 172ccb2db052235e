"""The environments a run can train on: how each is made (Atari with the usual
preprocessing and frame stacking), what its observations are, which storage modes
can carry its transitions, and the hyperparameters it starts from.

    classic control  CartPole-v1, Acrobot-v1, MountainCar-v0 (gymnasium)
    Box2D            LunarLander-v3 (the box2d extra: make setup EXTRAS=box2d)
    Atari            ALE/<Game>-v5 through ale-py, which ships the ROMs (the atari
                     extra: make setup EXTRAS=atari): grey 84x84 frames, 4 skipped
                     and 4 stacked, episodes cut at 5 minutes of play, the Nature-DQN
                     network

Every check raises ValueError with one line, before anything starts.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from agent.contract.storage import STORAGE_MODES
from agent.replay.fetch import MAX_PAYLOAD_BYTES
from agent.rl.transition import EXTRA_WORDS, max_obs_dim

ATARI_PREFIX = "ALE/"
FRAME_STACK = 4
FRAME_SIZE = 84
FRAME_SKIP = 4
# An Atari episode is cut (truncated) after 18 000 frames, 5 minutes of play (Machado et
# al. 2018): a greedy policy that never serves would otherwise play 108 000.
ATARI_EPISODE_STEPS = 18_000 // FRAME_SKIP
F16_MAX_OBS = 16 - EXTRA_WORDS  # float16 observations: 2D halves = D words, then the extras

# Extras (pyproject's optional dependencies) by the modules an environment needs.
ATARI_MODULES = ("ale_py", "cv2")     # the emulator with its ROMs; OpenCV for the frames
EXTRA_OF_MESSAGE = {"box2d": "box2d", "opencv": "atari", "ale_py": "atari"}

# Hyperparameters an environment starts from (agent/rl/hparams.py has the CartPole
# defaults every other setting keeps); --set overrides them.
ENV_DEFAULTS: dict[str, dict[str, object]] = {
    "Acrobot-v1": {"solve_return": -100.0, "hidden": (128, 128)},
    "MountainCar-v0": {"solve_return": -110.0, "hidden": (128, 128)},
    "LunarLander-v3": {"solve_return": 200.0, "hidden": (256, 256), "lr": 5e-4,
                       "batch_size": 128, "n_step": 3, "per_beta_steps": 50_000,
                       "eval_every": 2000, "eval_episodes": 10, "target_update": 500},
}
ATARI_DEFAULTS: dict[str, object] = {
    "lr": 1e-4, "batch_size": 32, "target_update": 1000, "learning_starts": 2000,
    "insert_batch": 8, "broadcast_every": 250, "eval_every": 2000, "eval_episodes": 2,
    "solve_return": float("inf"), "checkpoint_every": 5000, "log_every": 100,
    "per_beta_steps": 100_000,
}


@dataclass(frozen=True)
class EnvInfo:
    """What a run needs to know of an environment's observations and actions."""

    env_id: str
    obs_shape: tuple[int, ...]
    obs_dtype: np.dtype
    n_actions: int

    @property
    def image(self) -> bool:
        """Stacked frames (the convolutional network), not a flat vector."""
        return len(self.obs_shape) == 3

    @property
    def transition_bytes(self) -> int:
        """Bytes of one transition's observation and next observation."""
        return 2 * int(np.prod(self.obs_shape)) * self.obs_dtype.itemsize


def is_atari(env_id: str) -> bool:
    return env_id.startswith(ATARI_PREFIX)


def make_env(env_id: str, **kwargs: object) -> gym.Env:
    """The environment as the run sees it (Atari: preprocessed and frame-stacked)."""
    if not is_atari(env_id):
        return gym.make(env_id, **kwargs)
    import ale_py  # the atari extra; describe() says so when it is missing

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # no banner per environment
    gym.register_envs(ale_py)
    env = gym.make(env_id, frameskip=1, repeat_action_probability=0.0,
                   max_episode_steps=ATARI_EPISODE_STEPS * FRAME_SKIP, **kwargs)
    env = gym.wrappers.AtariPreprocessing(env, frame_skip=FRAME_SKIP, screen_size=FRAME_SIZE,
                                          grayscale_obs=True, noop_max=30)
    return gym.wrappers.FrameStackObservation(env, FRAME_STACK)


def describe(env_id: str) -> EnvInfo:
    """The environment's observations and actions; ValueError (one line) for one a DQN
    cannot train on here: unknown, a missing extra, continuous actions, odd observations."""
    if is_atari(env_id) and any(importlib.util.find_spec(m) is None for m in ATARI_MODULES):
        raise ValueError(f"--env {env_id}: needs the atari extra (make setup EXTRAS=atari)")
    try:
        env = make_env(env_id)
    except gym.error.DependencyNotInstalled as exc:
        extra = next((e for word, e in EXTRA_OF_MESSAGE.items() if word in str(exc).lower()),
                     None)
        hint = f"needs the {extra} extra (make setup EXTRAS={extra})" if extra \
            else str(exc).splitlines()[0]
        raise ValueError(f"--env {env_id}: {hint}") from None
    except Exception as exc:  # gymnasium raises many kinds: unknown id, bad version, ...
        raise ValueError(f"--env {env_id}: {str(exc).splitlines()[0]}") from None
    try:
        return info_of(env_id, env)
    finally:
        env.close()


def info_of(env_id: str, env: gym.Env) -> EnvInfo:
    """The EnvInfo of a made environment; ValueError (one line) if a DQN cannot train on it."""
    obs, act = env.observation_space, env.action_space
    if not isinstance(act, gym.spaces.Discrete):
        raise ValueError(f"--env {env_id}: actions are {act}; DQN needs discrete actions")
    if not isinstance(obs, gym.spaces.Box) or len(obs.shape) not in (1, 3):
        raise ValueError(f"--env {env_id}: observations are {obs}; a flat vector or "
                         "stacked frames are needed")
    dtype = np.dtype(np.float32) if np.issubdtype(obs.dtype, np.floating) else obs.dtype
    return EnvInfo(env_id, tuple(int(n) for n in obs.shape), np.dtype(dtype), int(act.n))


def storage_for(requested: str, info: EnvInfo) -> str:
    """The storage mode a run uses: `requested`, or for auto the slot where a transition
    fits and by reference elsewhere; ValueError (one line) where it cannot carry one."""
    if requested not in STORAGE_MODES:
        raise ValueError(f"storage {requested!r}: must be one of {', '.join(STORAGE_MODES)}")
    flat_float = not info.image and info.obs_dtype.kind == "f"
    d = int(np.prod(info.obs_shape))
    if requested == "auto":
        return "slot" if flat_float and d <= max_obs_dim() else "reference"
    if requested == "slot" and not (flat_float and d <= max_obs_dim()):
        raise ValueError(f"--env {info.env_id}: observations of shape {info.obs_shape} do not "
                         f"fit a replay slot (at most {max_obs_dim()} floats); use storage "
                         "float16 or reference")
    if requested == "float16" and not (flat_float and d <= F16_MAX_OBS):
        raise ValueError(f"--env {info.env_id}: observations of shape {info.obs_shape} do not "
                         f"fit a replay slot as float16 (at most {F16_MAX_OBS} floats); use "
                         "storage reference")
    if requested == "reference" and info.transition_bytes > MAX_PAYLOAD_BYTES:
        raise ValueError(f"--env {info.env_id}: a transition of {info.transition_bytes} bytes "
                         f"is over the {MAX_PAYLOAD_BYTES} a payload by reference can hold")
    return requested


def env_defaults(env_id: str) -> dict[str, object]:
    """The hyperparameters `env_id` starts from (empty: the CartPole defaults)."""
    return dict(ATARI_DEFAULTS) if is_atari(env_id) else dict(ENV_DEFAULTS.get(env_id, {}))
