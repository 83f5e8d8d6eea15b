"""What the checks share in a session: the fixtures (planted runs + derived data), estimators fitted once, and a
score cache. The pytest modules in ``checks/`` only ask this object for arrays and call ``bt_bench.verdicts``.

Decisions the spec leaves open (also in the README's "Decisions" section):
- training-level checks (gradient_norm_baseline, headroom's window gain, advantage_baseline) score the training
  rollouts against the ``in_context`` target built at each TracIn checkpoint (draw 0);
- draw-level checks score fresh candidates against the ``in_context`` target of the same draw;
- ``norm_only`` at rollout level is the norm of the rollout's in-run sketch (a JL estimate of its gradient norm);
  ``norm_only_step`` the exact norm of the step's summed gradient (trl's pre-clip grad norm);
- a rollout's gradient is exactly zero iff its advantage is 0 (the loss term is -A_i * sum log p / n), which
  defines the window's ``nonzero`` mask.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bt_bench.verdicts import Thresholds


class SkipCell(Exception):
    """The estimator cannot take part in this cell (a capability it lacks, or data the fixture lacks)."""


class FixtureUnsupported(RuntimeError):
    """The fixture cannot support a verdict (spec: reported as an error of the fixture, never as a pass)."""


@dataclasses.dataclass
class Suite:
    fixtures: list  # bt_bench.fixture.Fixture, one per planted seed
    failed_seeds: list
    thresholds: Thresholds
    _estimators: dict = dataclasses.field(default_factory=dict)
    _scores: dict = dataclasses.field(default_factory=dict)

    @property
    def n_seeds(self) -> int:
        return len(self.fixtures)

    def estimator(self, name: str, fit_seed: int | None = None):
        """The estimator, built once per session and seed. ``fit`` (if any) runs once on that seed's training
        view; draw candidates get an unfitted instance (their checkpoint is not among the fitted ones)."""
        key = (name, fit_seed)
        if key not in self._estimators:
            from bt_bench.estimator import fit_estimator
            from bt_bench.registry import get_estimator

            est = get_estimator(name)
            if fit_seed is not None and getattr(est, "fit", None) is not None:
                try:
                    fit_estimator(est, self.fixtures[fit_seed].training())
                except Exception as e:
                    if type(e).__name__ in ("CapabilityError", "MissingInputError", "MissingFieldError"):
                        raise SkipCell(f"{name}: {e}") from e
                    raise
            self._estimators[key] = est
        return self._estimators[key]

    def _score(self, key, name, data, target, fit_seed: int | None = None):
        from bt_bench.estimator import CapabilityError, MissingInputError, score_estimator

        if key not in self._scores:
            est = self.estimator(name, fit_seed)
            try:
                self._scores[key] = score_estimator(est, data, target)
            except (CapabilityError, MissingInputError) as e:
                raise SkipCell(str(e)) from e
        return self._scores[key]

    # ------------------------------------------------------------ training rollouts
    def training(self, i: int) -> dict:
        fx = self.fixtures[i]
        c = fx.run.columns
        return {"is_gt": np.asarray(c["is_gt"]), "step": np.asarray(c["step"]), "W": fx.run.config.window,
                "nonzero": np.asarray(c["advantage"]) != 0, "seed": fx.seed}

    def training_scores(self, name: str, i: int) -> np.ndarray:
        fx = self.fixtures[i]
        key = ("train", name, i)
        if key not in self._scores:
            data, target = fx.training(), fx.training_target("in_context")
            return self._score(key, name, data, target, fit_seed=i)
        return self._scores[key]

    # ------------------------------------------------------------ draws at a chosen checkpoint
    def has_draw(self, i: int, kind: str) -> str | None:
        """None when seed ``i`` has a ``kind`` checkpoint, else the fixture's reason."""
        fx = self.fixtures[i]
        return None if fx.chosen(kind) is not None else fx.unsupported(kind)

    def require_draw(self, i: int, kind: str) -> None:
        why = self.has_draw(i, kind)
        if why:
            raise FixtureUnsupported(f"seed {self.fixtures[i].seed}: {why}")

    def draw(self, i: int, kind: str, d: int) -> dict:
        fx = self.fixtures[i]
        return {**fx.draw_rows(kind, d), "seed": fx.seed, "step": fx.chosen(kind)}

    def draw_scores(self, name: str, i: int, kind: str, d: int, target_draw: int | None = None,
                    target_kind: str = "in_context", token: bool = False) -> np.ndarray:
        """Scores of the candidates of draw ``d`` against the ``target_kind`` target of draw ``target_draw``
        (default: the same draw); ``token``: the token-restricted sketches (checklist item 5)."""
        td = d if target_draw is None else target_draw
        key = ("draw", name, i, kind, d, td, target_kind, token)
        if key not in self._scores:
            fx = self.fixtures[i]
            data, _ = fx.draw(kind, d)
            _, targets = fx.draw(kind, td)
            if token:
                from bt_bench.estimator import Capability

                if Capability.TOKEN_SKETCHES not in self.estimator(name).capabilities:
                    raise SkipCell(f"{name} declares no 'token_sketches' capability: it cannot score the gradient "
                                   "restricted to the behavior tokens")
                data = data.token_restricted()
            return self._score(key, name, data, targets[target_kind])
        return self._scores[key]
