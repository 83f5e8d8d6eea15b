"""What the checks share in a session: the fixtures (planted runs + derived data), estimators fitted once, and a
score cache. Each check's cell (``bt_bench.checklist.checks.<name>.cell``) only asks this object for arrays and
calls its check's verdict function.

Decisions the spec leaves open (also in docs/running.md, "Decisions the spec leaves open"):
- training-level checks (the norm and advantage comparisons, the window gain) score the training rollouts against the ``in_context`` target built at each TracIn checkpoint (draw 0);
- draw-level checks score fresh candidates against the ``in_context`` target of the same draw;
- ``norm_only`` at rollout level is the norm of the rollout's in-run sketch (a JL estimate of its gradient norm);
  ``norm_only_step`` the exact norm of the step's summed gradient (trl's pre-clip grad norm);
- a rollout's gradient is exactly zero iff its advantage is 0 (the loss term is -A_i * sum log p / n), which
  defines the window's ``nonzero`` mask.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bt_bench.checklist.base import Thresholds
from bt_bench.checklist.registry import not_applicable
from bt_bench.fixture.targets import is_placebo

__all__ = ["FixtureUnsupported", "NotApplicable", "SkipCell", "Suite"]


class SkipCell(Exception):
    """The cell was not judged at run time (an input the estimator declared but the data lacks): NOT JUDGED,
    which fails the gate (docs/checklist.md, "The gate")."""


class NotApplicable(SkipCell):
    """The check cannot take part by what the estimator *declared* (capabilities, level): N/A, with the reason."""


class FixtureUnsupported(RuntimeError):
    """The fixture cannot support a verdict (spec: reported as an error of the fixture, never as a pass)."""


@dataclasses.dataclass(repr=False)
class Suite:
    fixtures: list  # bt_bench.fixture.reader.Fixture, one per planted seed
    failed_seeds: list
    thresholds: Thresholds
    norm_variant: str = "norm_only"  # the norm comparison's control: the profile declares it (Profile.norm_variant)
    lds_subsets: int = 0  # S of the LDS set (Profile.lds_subsets) when the session runs check 10 (--bt-lds), else 0
    _estimators: dict = dataclasses.field(default_factory=dict)
    _scores: dict = dataclasses.field(default_factory=dict)
    _data: dict = dataclasses.field(default_factory=dict)  # label-walled candidate data, built once per worker
    # name -> the CallTimeoutError of its first timed-out fit/score (--bt-timeout): a hanging estimator is not
    # called again in this process, so it costs one time limit per worker, not one per score it is asked for
    _timed_out: dict = dataclasses.field(default_factory=dict)
    # scores kept across sessions and shared by the workers (bt_bench.checklist.score_cache); None: per process only
    score_cache: object | None = None
    stats_folder: object | None = None  # results kept across sessions (bt_bench.runs.memo); None: computed each time

    def __repr__(self) -> str:
        """Short: pytest formats the arguments of a failing (or xfailed) check function, bt_suite among them, and
        the generated repr formatted every array the suite holds (scores, candidate data): 1.2 s a cell, three
        quarters of a warm rerun (182 s against 45 s with --tb=short)."""
        return (f"Suite(seeds {[getattr(fx, 'seed', '?') for fx in self.fixtures]}, failed {self.failed_seeds}, "
                f"{len(self._scores)} scores and {len(self._data)} data views held)")

    @property
    def n_seeds(self) -> int:
        return len(self.fixtures)

    def estimator(self, name: str, fit_seed: int | None = None):
        """The estimator, built once per session and seed. ``fit`` (if any) runs once on that seed's training
        view; draw candidates get an unfitted instance (their checkpoint is not among the fitted ones)."""
        key = (name, fit_seed)
        if key not in self._estimators:
            from bt_bench.estimator import sealed
            from bt_bench.estimator.errors import CallTimeoutError, MissingInputError
            from bt_bench.estimator.scoring import fit_estimator
            from bt_bench.runs.store import cache_root

            self._raise_if_timed_out(name)
            # the scoring process must not be able to read any of these (bt_bench.estimator.sealed)
            sealed.ISOLATION.excluded = (str(cache_root()), *(str(fx.run.path) for fx in self.fixtures))
            est = sealed.load(name)
            if fit_seed is not None and getattr(est, "fit", None) is not None:
                try:
                    fit_estimator(est, self._training_data(fit_seed))
                except MissingInputError as e:  # declared, but this data lacks it: not judged
                    raise SkipCell(f"{name}: {e}") from e
                except CallTimeoutError as e:  # the half-fitted instance is dropped (never stored)
                    self._timed_out[name] = e
                    raise
            self._estimators[key] = est
        return self._estimators[key]

    def _score(self, key, name, data, target, fit_seed: int | None = None, placebo: bool = False):
        """Scores, cached per session. A declared input the data lacks (``MissingInputError``) leaves the cell
        NOT JUDGED; reading an undeclared one (``CapabilityError``) is an estimator bug: an ERROR."""
        from bt_bench.estimator.errors import CallTimeoutError, MissingInputError
        from bt_bench.estimator.scoring import score_estimator

        if key not in self._scores:
            self._raise_if_timed_out(name)

            def compute() -> np.ndarray:  # the fit, too, only when the score is not stored
                return score_estimator(self.estimator(name, fit_seed), data, target, placebo=placebo)

            try:  # stored only once complete: an interrupted call leaves no half-computed score behind
                if self.score_cache is None:
                    self._scores[key] = compute()
                else:
                    self._scores[key] = self.score_cache.get(name, self._input_key(key, fit_seed), compute)
            except MissingInputError as e:
                raise SkipCell(str(e)) from e
            except CallTimeoutError as e:
                self._timed_out[name] = e
                self._estimators.pop((name, fit_seed), None)  # interrupted mid-call: its own state is suspect
                raise
        return self._scores[key]

    def _input_key(self, key: tuple, fit_seed: int | None) -> list:
        """A score's input, for the score cache: ``key`` (kind, name, seed index, ...) with the seed index replaced
        by the fixture's identity (run, derived data and its manifest's sha256), whether it was fitted, and where it
        ran (the isolation mode: an unsealed estimator can read what a sealed one cannot)."""
        from bt_bench.checklist.score_cache import fixture_identity
        from bt_bench.estimator import sealed

        i = key[2]
        ident = self._data.get(("identity", i))
        if ident is None:
            ident = self._data[("identity", i)] = fixture_identity(self.fixtures[i])
        return [key[0], *ident, *key[3:], "fitted" if fit_seed is not None else "unfitted", sealed.ISOLATION.mode]

    def _raise_if_timed_out(self, name: str) -> None:
        """An ERROR at once for an estimator whose call timed out earlier in this process (it is not retried)."""
        e = self._timed_out.get(name)
        if e is not None:
            from bt_bench.estimator.errors import CallTimeoutError

            raise CallTimeoutError(e.estimator, e.call, e.limit_s, e.where, earlier=True)

    def require_applicable(self, check: str, name: str) -> None:
        """Raise ``NotApplicable`` when the estimator's declared level or capabilities exclude it from ``check``
        (spec: N/A is decided by what is declared, never by what happens at run time). The rule is
        the check's own (``CheckSpec.why_not_applicable``), which also keeps such checks out of the expected grid."""
        est = self.estimator(name)
        why = not_applicable(check, name, getattr(est, "level", "rollout"), est.capabilities)
        if why:
            raise NotApplicable(why)

    def require_lds(self) -> int:
        """S of the LDS set when this session runs the LDS check (``--bt-lds``), else raise ``NotApplicable``: the
        session declared it does not run it (the replays cost S per seed), which no estimator can change."""
        if not self.lds_subsets:
            raise NotApplicable("not run in this session: the LDS set costs S replays per seed, run it with --bt-lds")
        return int(self.lds_subsets)

    def _require_token(self, name: str) -> None:
        """Token-restricted scores need token sketches, or the model (which hands over a token mask)."""
        from bt_bench.estimator.contract import Capability

        caps = {str(c) for c in self.estimator(name).capabilities}
        if not {Capability.TOKEN_SKETCHES.value, Capability.MODEL.value} & caps:
            raise NotApplicable(f"{name} declares neither 'token_sketches' nor 'model': it cannot score the "
                                "gradient restricted to the behavior tokens")

    def unit(self, i: int, d: int | None = None) -> dict:
        """The unit of a per-seed (``d`` None) or per-(seed, draw) cell: the fixture's seed, not its index, and the
        sketch seed its sketches are under (the run's own; a draw judged under several names each: those cells)."""
        return {"seed": self.fixtures[i].seed, "draw": d, "sketch_seed": self.sketch_seeds(i)[0]}

    def sketch_seeds(self, i: int) -> list[int]:
        """The sketch seeds the draws of seed ``i`` are judged under (``Fixture.sketch_seeds``; the first is the
        run's own, which the training-level checks use)."""
        return list(getattr(self.fixtures[i], "sketch_seeds", None) or [None])

    # ------------------------------------------------------------ training rollouts
    def training(self, i: int) -> dict:
        fx = self.fixtures[i]
        c = fx.run.columns
        return {"is_gt": np.asarray(c["is_gt"]), "step": np.asarray(c["step"]), "W": fx.run.config.window,
                "nonzero": np.asarray(c["advantage"]) != 0, "seed": fx.seed}

    def training_scores(self, name: str, i: int, target_kind: str = "in_context") -> np.ndarray:
        """Scores of the training rollouts of seed ``i`` against the ``target_kind`` target at each TracIn
        checkpoint; ``no_behavior`` is the placebo of the target-dependence test (handed over disguised as the real
        in_context target: ``bt_bench.estimator.handover``)."""
        fx = self.fixtures[i]
        key = ("train", name, i, target_kind)
        if key not in self._scores:
            from bt_bench.estimator.handover import training_target

            data, target = self._training_data(i), training_target(fx, target_kind)
            return self._score(key, name, data, target, fit_seed=i, placebo=is_placebo(target_kind))
        return self._scores[key]

    def _training_data(self, i: int):
        """The training CandidateData of seed ``i``, built once. Its sketches stay memory maps of the store unless an
        estimator other than the oracle runs in this process (isolation ``none``): copied, the three seeds' took
        2.6 GB each on tiny at k = 4096 in each xdist worker, and ran a 24 GiB machine out of memory."""
        key = ("training_data", i)
        if key not in self._data:
            from bt_bench.estimator import sealed
            from bt_bench.estimator.handover import training_candidates

            self._data[key] = training_candidates(self.fixtures[i], copy=sealed.ISOLATION.mode == "none")
        return self._data[key]

    # ------------------------------------------------------------ draws at a chosen checkpoint
    def has_draw(self, i: int, kind: str) -> str | None:
        """None when seed ``i`` has a ``kind`` checkpoint, else the fixture's reason."""
        fx = self.fixtures[i]
        return None if fx.chosen(kind) is not None else fx.unsupported(kind)

    def require_training_target(self, i: int, kind: str) -> None:
        """A training-level target that is the zero vector at some TracIn checkpoint (the ``no_behavior`` placebo
        when every sampled completion there holds the behavior: nothing to build it from) cannot be judged against:
        an error of the fixture, not of the estimator whose scores it would flatten."""
        fx = self.fixtures[i]
        targets = getattr(fx, "training_targets", None)
        if targets is None:
            return
        empty = sorted(c for c, v in targets([kind])[kind].items() if not np.any(np.asarray(v)))
        if empty:
            raise FixtureUnsupported(f"seed {fx.seed}: the {kind} target is the zero vector at TracIn checkpoint(s) "
                                     f"{empty} (no sampled completion there to build it from)")

    def require_draw(self, i: int, kind: str) -> None:
        why = self.has_draw(i, kind)
        if why:
            raise FixtureUnsupported(f"seed {self.fixtures[i].seed}: {why}")

    def draw(self, i: int, kind: str, d: int) -> dict:
        fx = self.fixtures[i]
        return {**fx.draw_rows(kind, d), "seed": fx.seed, "step": fx.chosen(kind)}

    def draw_scores(self, name: str, i: int, kind: str, d: int, target_draw: int | None = None,
                    target_kind: str = "in_context", token: bool = False, sketch_seed: int | None = None
                    ) -> np.ndarray:
        """Scores of the candidates of draw ``d`` against the ``target_kind`` target of draw ``target_draw``
        (default: the same draw); ``token``: the token-restricted sketches; ``sketch_seed``: sketches and target
        vectors under that sketch seed (None: the run's own). The placebos (``no_behavior``, ``placebo``) are
        handed over disguised as the real in_context target."""
        td = d if target_draw is None else target_draw
        ss = None if sketch_seed is None or sketch_seed == self.sketch_seeds(i)[0] else int(sketch_seed)
        key = ("draw", name, i, kind, d, td, target_kind, token, ss)
        if key not in self._scores:
            data, _ = self._draw_data(i, kind, d, ss)
            _, targets = self._draw_data(i, kind, td, ss)
            if token:
                self._require_token(name)
                data = data.token_restricted()
            return self._score(key, name, data, targets[target_kind], placebo=is_placebo(target_kind))
        return self._scores[key]

    def _draw_data(self, i: int, kind: str, d: int, sketch_seed: int | None = None):
        """(CandidateData, {kind: Target}) of draw ``d`` at the ``kind`` checkpoint of seed ``i`` under
        ``sketch_seed`` (None: the run's own), built once."""
        key = ("draw_data", i, kind, d, sketch_seed)
        if key not in self._data:
            from bt_bench.estimator.handover import draw_candidates

            self._data[key] = draw_candidates(self.fixtures[i], kind, d, sketch_seed)
        return self._data[key]
