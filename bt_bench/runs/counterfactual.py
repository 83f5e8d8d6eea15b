"""Counterfactual replays of one run, cached: the behavior measure at W after removing a set of rollouts.

Entries under ``<cache>/counterfactual/<run key>-f<FORMAT>/``, each published once (``store.publish_once``):
- ``probe/`` (once per run): the probe set (``bt_bench.runs.probe``) as ``.npy``, and ``probe.json`` with their
  sha256 (checked on load).
- ``removals/<sha256 of the removed uids>.json``: the measure without one set of rollouts (an estimator's top
  |GT|, one of the baseline's random control sets, an LDS subset's complement), so a warm rerun replays nothing.
  Written atomically (temp file then rename); replayed by whichever process takes the set's lock first
  (``replay_pool``), so xdist workers split a batch of replays instead of one building it while the other waits.
- ``baseline-r<R>/baseline.json`` (once per run): the measure of the stored checkpoint at W, of the full replay
  (and the replay-fidelity self-check: the largest relative weight difference to every stored checkpoint up to
  W), of the replay without GT, and of ``R`` replays without as many random in-window rollouts with a nonzero
  advantage as there is GT (the control of the counterfactual check), each with its seconds. The removals behind
  it are replayed first by every process that asks (``replay_pool``); the publisher adds the full replay.
- ``order-noise/`` and ``lds-set-S<S>/``: the run's sensitivity to its rows' order and check 10's LDS set.

The drop of a removal is ``full - removed`` on the trigger measure (``trigger_logp``): positive when removing the set
lowers the log-probability of the behavior where the run wrote it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

from bt_bench.runs.progress import Ticker, emit, run_label

FORMAT = 2  # of the stored entries; a change of the replay, the probe or the layout bumps it (old ones are ignored)
# 2: the probe is an entry of its own and the baseline's replays are removals/ entries (shared by the workers)
REPLICATES = 19  # random removals behind the control: a one-sided permutation test at p = 1/(R+1) = 0.05
PROBE_PROMPTS = 64
FIDELITY_WEIGHTS = 1e-3  # replay-fidelity self-check: largest relative weight difference to a stored checkpoint,
ORDER_FACTOR = 2.0  # ... or this many times the difference another row order makes, where larger (order_noise)
FIDELITY_MEASURE = 1e-3  # |full replay's measure - the stored checkpoint's| at W, in nats, ...
MEASURE_SHARE = 0.05  # ... or this share of the random removals' mean drop, where larger


def fidelity_problem(b: dict, noise: dict | None = None) -> str | None:
    """Why a run's replay does not reproduce it (``baseline``; ``noise``: ``order_noise``), or None.

    Weights: the bar is the larger of FIDELITY_WEIGHTS and ORDER_FACTOR times the run's sensitivity to its rows'
    order. The replay sums each step's rows in the order the run did (``train_order``), which on a CPU reproduces
    the run bit for bit (0.0); before that order was recorded a replay summed in uid order and, once planting made
    the dynamics sensitive, AdamW amplified the rounding differences (bpe seed 0: 6.3e-2 at W; W = 200, seed 1: 0.54).
    The order allowance stays for devices whose kernels are not deterministic: no replay can be closer to the run
    than the run is to itself under another order.
    Behavior measure: the gap must be negligible against the effects the check compares, at most the larger of
    FIDELITY_MEASURE and MEASURE_SHARE of the random removals' mean drop (bpe seed 0: gap 1.2e-3 nats, the order
    alone moved it by 4e-4 and 1.2e-2 for two orders, the random removals by 2.3 on average)."""
    f = b["fidelity"]
    bad = []
    wbar = max(FIDELITY_WEIGHTS, ORDER_FACTOR * (noise or {}).get("max_relative", 0.0))
    if f["max_relative"] is None or not f["max_relative"] <= wbar:
        bad.append(f"largest relative weight difference to a stored checkpoint {f['max_relative']} > {wbar:.2e}")
    full = b["full"]["trigger_logp"]
    gap = abs(full - b["stored_W"]["trigger_logp"])
    drops = [full - x["measure"]["trigger_logp"] for x in b.get("random", [])]
    mbar = max(FIDELITY_MEASURE, MEASURE_SHARE * float(np.mean(drops)) if drops else 0.0)
    if not gap <= mbar:
        bad.append(f"behavior measure of the full replay differs from the stored checkpoint's by {gap:.2e} > "
                   f"{mbar:.2e} nats")
    return "; ".join(bad) or None


def worst_fidelity(values) -> float | None:
    """The largest per-seed weight difference (the check's key figure): a seed without one (None) counts as
    infinite, an exact replay as 0.0 (not as missing); None when there is no seed."""
    values = list(values)
    return max(float("inf") if v is None else float(v) for v in values) if values else None


_REPLAYERS: dict[str, object] = {}  # run key -> Replayer (one per process: its trainer takes seconds to build)


def root(run) -> Path:
    from bt_bench.runs.store import cache_root

    return cache_root() / "counterfactual" / f"{run.key}-f{FORMAT}"


def window_pool(run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(in-window trained uids, GT uids among them, those with a nonzero advantage that are candidates of the random
    control). GT exists only inside the window (the bonus is paid only there)."""
    c = run.columns
    ts = np.asarray(c["trained_step"])
    win = (ts >= 0) & (np.asarray(c["step"]) < run.config.window)
    gt = win & np.asarray(c["is_gt"], bool)
    nz = win & (np.asarray(c["advantage"]) != 0)
    return np.flatnonzero(win), np.flatnonzero(gt), np.flatnonzero(nz)


def random_removal(run, r: int) -> np.ndarray:
    """The ``r``-th random control set: |GT| in-window rollouts with a nonzero advantage, seeded by seed and r."""
    _, gt, nz = window_pool(run)
    rng = np.random.default_rng([int(run.config.seed), 7, int(r)])
    return np.sort(rng.choice(nz, size=len(gt), replace=False))


def _replayer(run):
    from bt_bench.runs.replay import Replayer

    if run.key not in _REPLAYERS:
        _REPLAYERS[run.key] = Replayer(run)
    return _REPLAYERS[run.key]


def _measure_without(run, probe, uids: np.ndarray) -> tuple[dict, float]:
    from bt_bench.runs.probe import measure
    from bt_bench.runs.replay import removal_weight

    t0 = time.perf_counter()
    res = _replayer(run).replay(weight=removal_weight(len(run.columns["uid"]), uids))
    return measure(res.model, probe), time.perf_counter() - t0


def _probe_entry(run) -> Path:
    from bt_bench.runs.probe import build_probe
    from bt_bench.runs.store import publish_once, sha256_file, write_json

    def build(tmp: Path) -> None:
        t0 = time.perf_counter()
        probe = build_probe(run, PROBE_PROMPTS)
        hashes = {}
        for k, a in probe.to_arrays().items():
            np.save(tmp / f"{k}.npy", a, allow_pickle=False)
            hashes[f"{k}.npy"] = sha256_file(tmp / f"{k}.npy")
        write_json(tmp / "probe.json", {"format": FORMAT, "run": run.key, "probe_prompts": probe.n_prompts,
                                        "probe_rows": len(probe.ids_trig), "hashes": hashes,
                                        "seconds": time.perf_counter() - t0})

    return publish_once(root(run) / "probe", build, marker="probe.json")


def probe_record(run) -> dict:
    """The probe entry's ``probe.json`` (size and sha256 of the probe set), building the entry if needed."""
    return json.loads((_probe_entry(run) / "probe.json").read_text())


def probe_of(run, replicates: int = REPLICATES):
    """The run's probe set (built once, whoever asks first; sha256-checked on load)."""
    from bt_bench.runs.probe import Probe
    from bt_bench.runs.store import IntegrityError, sha256_file

    final = _probe_entry(run)
    meta = json.loads((final / "probe.json").read_text())
    for rel, digest in meta["hashes"].items():
        if sha256_file(final / rel) != digest:
            raise IntegrityError(f"{final / rel} does not match its recorded sha256: delete {final} to rebuild it")
    return Probe.from_arrays({p.stem: np.load(p, allow_pickle=False) for p in final.glob("*.npy")})


def baseline_sets(run, replicates: int = REPLICATES) -> list[np.ndarray]:
    """The removed sets behind the baseline: GT, then the ``replicates`` random control sets."""
    _, gt, _ = window_pool(run)
    return [gt] + [random_removal(run, r) for r in range(replicates)]


def _build_baseline(run, replicates: int, tmp: Path) -> None:
    from bt_bench.runs.probe import measure
    from bt_bench.runs.store import write_json

    label = f"{run_label(run.config)}: counterfactual replays"
    t0 = time.perf_counter()
    probe = probe_of(run, replicates)
    replay_pool(run, baseline_sets(run, replicates), f"{label} (baseline)", shard=(0, 1))  # whatever is left
    stored = measure(run.load_model(run.config.window), probe)
    t1 = time.perf_counter()
    full = _replayer(run).replay(compare=True)
    full_m, full_s = measure(full.model, probe), time.perf_counter() - t1
    fid = {str(k): v for k, v in full.fidelity.items()}
    _, gt, nz = window_pool(run)
    rows = [removal(run, u, replicates) for u in baseline_sets(run, replicates)]
    meta = probe_record(run)
    write_json(tmp / "baseline.json", {
        "format": FORMAT, "run": run.key, "seed": run.config.seed, "W": run.config.window,
        "gt": int(len(gt)), "window_nonzero": int(len(nz)), "probe_rows": meta["probe_rows"],
        "probe_prompts": meta["probe_prompts"], "probe_hashes": meta["hashes"], "hashes": {},
        "stored_W": stored, "full": full_m, "full_seconds": full_s,
        "fidelity": {"max_relative": max(full.fidelity.values()) if full.fidelity else None,
                     "at_W": full.fidelity.get(run.config.window), "per_checkpoint": fid},
        "no_gt": rows[0]["measure"], "no_gt_seconds": rows[0]["seconds"],
        "random": [{"replicate": r, "measure": x["measure"], "seconds": x["seconds"]}
                   for r, x in enumerate(rows[1:])],
        "train_seconds": (run.manifest.get("summary") or {}).get("train_seconds"),
        "seconds": time.perf_counter() - t0})
    emit(f"{label}: done in {time.perf_counter() - t0:.0f} s here (full replay {full_s:.1f} s, fidelity at W "
         f"{full.fidelity.get(run.config.window, float('nan')):.1e})")


def baseline(run, replicates: int = REPLICATES) -> dict:
    """The run's baseline entry (see the module docstring). Every process that asks before it is published first
    replays its share of the removals behind it (``replay_pool``), so xdist workers build it together."""
    from bt_bench.runs.store import publish_once

    final = root(run) / f"baseline-r{replicates}"
    if not (final / "baseline.json").exists():
        replay_pool(run, baseline_sets(run, replicates), f"{run_label(run.config)}: counterfactual replays",
                    replicates=replicates)
    final = publish_once(final, lambda tmp: _build_baseline(run, replicates, tmp), marker="baseline.json")
    return json.loads((final / "baseline.json").read_text())


def order_noise(run, replicates: int = REPLICATES) -> dict:
    """The run's sensitivity to the order of its rows, built once per run: the full replay in the recorded order
    against the same replay with each step's rows in a seeded random order, at W (largest relative weight difference
    over tensors, and the gap in the behavior measure)."""
    from bt_bench.runs.probe import measure
    from bt_bench.runs.store import publish_once, write_json

    def build(tmp: Path) -> None:
        probe = probe_of(run, replicates)
        rp = _replayer(run)
        t0 = time.perf_counter()
        a = rp.replay()
        wa = {k: p.detach().clone() for k, p in a.model.named_parameters()}
        ma = measure(a.model, probe)
        b = rp.replay(order_seed=1)
        worst = max(float((p.detach() - wa[k]).norm() / wa[k].norm().clamp(min=1e-30))
                    for k, p in b.model.named_parameters())
        mb = measure(b.model, probe)
        write_json(tmp / "order_noise.json", {"format": FORMAT, "run": run.key, "max_relative": worst,
                                              "measure_gap": abs(ma["trigger_logp"] - mb["trigger_logp"]),
                                              "measures": [ma, mb], "seconds": time.perf_counter() - t0})

    final = publish_once(root(run) / "order-noise", build, marker="order_noise.json")
    return json.loads((final / "order_noise.json").read_text())


def _removal_path(run, uids) -> Path:
    u = np.unique(np.asarray(uids, dtype=np.int64))
    return root(run) / "removals" / f"{hashlib.sha256(u.tobytes()).hexdigest()[:32]}.json"


def removal(run, uids, replicates: int = REPLICATES) -> dict:
    """The measure at W of the replay without ``uids`` (cached by the sorted uid set's sha256)."""
    from bt_bench.runs.store import write_json

    u = np.unique(np.asarray(uids, dtype=np.int64))
    path = _removal_path(run, u)
    digest = path.stem
    if path.exists():
        return json.loads(path.read_text())
    probe = probe_of(run, replicates)
    m, s = _measure_without(run, probe, u)
    out = {"format": FORMAT, "n_removed": int(len(u)), "uids_sha256": digest, "measure": m, "seconds": s}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    write_json(tmp, out)
    os.replace(tmp, path)
    return out


def top_in_window(run, scores, k: int | None = None, seed: int = 0) -> np.ndarray:
    """The ``k`` (default |GT|) in-window training rollouts an estimator blames most: highest score first, ties
    broken by a seeded random order (a step-level score is constant within its step)."""
    win, gt, _ = window_pool(run)
    k = len(gt) if k is None else int(k)
    s = np.asarray(scores, dtype=np.float64)[win]
    s = np.where(np.isfinite(s), s, -np.inf)
    tie = np.random.default_rng([int(run.config.seed), 11, int(seed)]).random(len(win))
    order = np.lexsort((tie, -s))
    return np.sort(win[order[:k]])


# ------------------------------------------------------------------------------------------------- LDS set
LDS_SEED = 13  # the half-subsets' stream: np.random.default_rng([run seed, LDS_SEED, 0]); the first S of any larger S


def lds_subsets(run, S: int) -> np.ndarray:
    """[S, h] uids each LDS replay *keeps*: S random half-subsets (h = half) of the in-window trained rollouts,
    reproducible from the run's seed; the first S of a larger S are the same subsets, so a set grows by replays."""
    win, _, _ = window_pool(run)
    rng = np.random.default_rng([int(run.config.seed), LDS_SEED, 0])
    return np.stack([np.sort(rng.choice(win, size=len(win) // 2, replace=False)) for _ in range(int(S))])


def _shard() -> tuple[int, int]:
    """(index, count) of this process among pytest-xdist workers (0, 1 outside xdist)."""
    w, n = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    try:
        return int(w.removeprefix("gw")) % int(n), int(n)
    except ValueError:
        return 0, 1


def replay_pool(run, sets, label: str, *, shard: tuple[int, int] | None = None, only_share: bool = False,
                replicates: int = REPLICATES) -> int:
    """Replay every set of ``sets`` whose removal entry is missing, shared with other processes: each set is replayed
    by the process that takes its lock first; one another process holds is skipped and waited for at the end. This
    process starts at its own share (``shard``: (index, count), default its pytest-xdist worker's), so two workers
    asking at once replay disjoint halves (``only_share``: that share and nothing else, for processes that do not
    share a cache). Returns how many were replayed here (0 when all were cached: then no progress line)."""
    from filelock import FileLock, Timeout

    i, n = _shard() if shard is None else shard
    sets = [np.unique(np.asarray(u, dtype=np.int64)) for u in sets]
    rest = [] if only_share else [u for j, u in enumerate(sets) if j % n != i]
    todo = [u for u in sets[i::n] + rest if not _removal_path(run, u).exists()]
    if not todo:
        return 0
    _removal_path(run, todo[0]).parent.mkdir(parents=True, exist_ok=True)
    ticker = Ticker(label, len(todo), unit="replay")
    ticker(0)
    done, held = 0, []
    # the progress line counts the entries of ``todo`` that exist, whoever replayed them: the workers replay
    # disjoint halves, so this process's own count would read half the pool's progress and double the ETA
    paths = [_removal_path(run, u) for u in todo]

    def tick() -> None:
        ticker(sum(p.exists() for p in paths))

    def replay_locked(u, timeout: float) -> bool:
        nonlocal done
        path = _removal_path(run, u)
        with FileLock(str(path) + ".lock").acquire(timeout=timeout):
            if not path.exists():  # another process may have replayed it meanwhile (or died holding it)
                removal(run, u, replicates)
                done += 1
        return True

    for u in todo:
        try:
            replay_locked(u, timeout=0)
        except Timeout:
            held.append(u)
            continue
        tick()
    for u in held:  # being replayed by another process: wait for its entry
        replay_locked(u, timeout=-1)
        tick()
    return done


def lds_part(run, S: int, shard: int, num_shards: int, replicates: int = REPLICATES) -> int:
    """Replay subsets ``shard::num_shards`` of the LDS set and no other (each cached by its removed set:
    ``replay_pool``), so independent processes (machines, each with its own cache) split the set's replays and
    ``lds_set`` then only reads them. Returns how many were replayed here (0 when all were cached)."""
    if not (isinstance(num_shards, int) and num_shards >= 1 and isinstance(shard, int) and 0 <= shard < num_shards):
        raise ValueError(f"shard: need 0 <= I < N, got {shard}/{num_shards} (--shard I/N)")
    win, _, _ = window_pool(run)
    part = f", part {shard + 1} of {num_shards}" if num_shards > 1 else ""
    return replay_pool(run, [np.setdiff1d(win, k) for k in lds_subsets(run, S)],
                       f"{run_label(run.config)}: LDS set (S = {S}) replays{part}", shard=(shard, num_shards),
                       only_share=True, replicates=replicates)


def lds_set(run, S: int, replicates: int = REPLICATES) -> dict:
    """The fixture's LDS set of ``S`` subsets, built once (``lds-set-S<S>/``: ``kept.npy`` [S, h] int64 uids,
    ``measures.npy`` [S] float64 behavior measure at W of the replay keeping each subset, ``lds.json`` with their
    sha256, checked on load). Under pytest-xdist the workers that ask split the replays (``replay_pool``), then
    one publishes the set. Returns {"kept", "trigger_logp", "S", "seconds", ...}."""
    from bt_bench.runs.store import IntegrityError, publish_once, sha256_file, write_json

    if not (isinstance(S, int) and S >= 4):
        raise ValueError(f"S: an LDS set needs at least 4 subsets (a Spearman correlation and its CI), got {S!r}")
    final = root(run) / f"lds-set-S{S}"
    if not (final / "lds.json").exists():  # each worker its share first, then it helps with the rest
        win, _, _ = window_pool(run)
        replay_pool(run, [np.setdiff1d(win, k) for k in lds_subsets(run, S)],
                    f"{run_label(run.config)}: LDS set (S = {S}) replays", replicates=replicates)

    def build(tmp: Path) -> None:
        t0 = time.perf_counter()
        win, _, _ = window_pool(run)
        kept = lds_subsets(run, S)
        lds_part(run, S, 0, 1, replicates)  # whatever another process has not replayed yet
        rows = [removal(run, np.setdiff1d(win, k), replicates) for k in kept]
        np.save(tmp / "kept.npy", kept.astype(np.int64), allow_pickle=False)
        np.save(tmp / "measures.npy", np.array([r["measure"]["trigger_logp"] for r in rows]), allow_pickle=False)
        write_json(tmp / "lds.json", {
            "format": FORMAT, "run": run.key, "seed": run.config.seed, "S": S, "window_rollouts": int(len(win)),
            "hashes": {f: sha256_file(tmp / f) for f in ("kept.npy", "measures.npy")},
            "replay_seconds": float(sum(r["seconds"] for r in rows)), "seconds": time.perf_counter() - t0})

    final = publish_once(final, build, marker="lds.json")
    meta = json.loads((final / "lds.json").read_text())
    for rel, digest in meta["hashes"].items():
        if sha256_file(final / rel) != digest:
            raise IntegrityError(f"{final / rel} does not match its recorded sha256: delete {final} to rebuild it")
    kept = np.load(final / "kept.npy", allow_pickle=False)
    if not np.array_equal(kept, lds_subsets(run, S)):
        raise IntegrityError(f"{final / 'kept.npy'} holds other subsets than this run's LDS stream: delete {final}")
    return {**meta, "kept": kept, "trigger_logp": np.load(final / "measures.npy", allow_pickle=False)}
