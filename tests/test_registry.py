"""The estimator registry: lazy entry points, broken plug-ins, did-you-mean, dotted paths, listing (issue 4).

Plug-ins are real distributions: a ``*.dist-info`` folder written into a temporary directory on ``sys.path``
(importlib.metadata discovers it like any installed package), or the example package pip-installed there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from bt_bench.estimator import Checkpoint, InvalidEstimatorError, LabelsRefusedError, Target
from bt_bench.estimator.registry import (
    GROUP,
    PluginLoadError,
    RegistryError,
    UnknownEstimatorError,
    available_names,
    default_estimators,
    describe_estimator,
    format_estimator_table,
    get_estimator,
    list_estimators,
    provenance,
)
from bt_bench.estimator.scoring import score_estimator
from bt_bench.estimator.views import CandidateData
from estimators.controls import Oracle

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = {"random", "norm_only", "norm_only_step", "fluency", "advantage_only", "oracle", "tracincp", "gas",
           "gas_fixed_target", "trak", "tracin_adam"}

GOOD = '''
import numpy as np
class Good:
    """Good plug-in: score_i = advantage."""
    name = "good_est"
    capabilities = frozenset()
    level = "rollout"
    def score(self, candidates, target):
        return np.asarray(candidates.advantage, dtype=float)
class Misnamed(Good):
    name = "something_else"
class Peeker(Good):
    """Reads labels: refused."""
    name = "peeker"
    capabilities = frozenset({"labels"})
    def score(self, candidates, target, labels=None):
        return np.asarray(labels["is_gt"], dtype=float)
class NeedsLib(Good):
    """Needs an optional library that is not installed."""
    name = "needs_lib"
    def __init__(self):
        from bt_bench.estimator.registry import require_extra
        require_extra(self, "bt_no_such_library.sub", "fancy", "fake-plugins")
class OptIn(Good):
    """Slow: selected by name only."""
    name = "opt_in_est"
    opt_in = True
'''


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A fake installed distribution 'fake-plugins' with a good, a broken and a misnamed entry point."""
    broken = "raise ImportError('needs a library that is not installed')"
    mods = {"bt_fake_good": GOOD, "bt_fake_broken": broken}
    for mod, src in mods.items():
        (tmp_path / f"{mod}.py").write_text(textwrap.dedent(src))
    info = tmp_path / "fake_plugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[bt_bench.estimators]\ngood_est = bt_fake_good:Good\nbroken_est = bt_fake_broken:Thing\n"
        "misnamed = bt_fake_good:Misnamed\npeeker = bt_fake_good:Peeker\n"
        "needs_lib = bt_fake_good:NeedsLib\nopt_in_est = bt_fake_good:OptIn\n"
        "my_oracle = estimators.controls:Oracle\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for mod in mods:
        sys.modules.pop(mod, None)


def tiny_data() -> CandidateData:
    rng = np.random.default_rng(1)
    return CandidateData({"uid": np.arange(4), "step": np.zeros(4), "group": np.zeros(4),
                          "advantage": np.array([1.0, -1.0, 0.5, 0.0])},
                         {"checkpoint": {0: rng.normal(size=(4, 3)), 6: rng.normal(size=(4, 3))}},
                         checkpoints=(Checkpoint(0, 1e-3, 8), Checkpoint(6, 1e-3, 8)))


# ----------------------------------------------------------------------------------------------- listing
def test_builtins_are_listed_with_distribution_and_capabilities():
    infos = {i.name: i for i in list_estimators()}
    assert BUILTIN <= set(infos)
    for name in BUILTIN:
        assert infos[name].distribution == "bt-bench" and infos[name].error is None
        assert infos[name].description and infos[name].level in ("rollout", "step")
    assert infos["gas"].capabilities == ("checkpoint_sketches", "token_sketches")
    assert infos["oracle"].test_only and infos["oracle"].capabilities == ("labels",)


def test_default_set_excludes_test_only():
    default = set(default_estimators())
    assert "oracle" not in default and BUILTIN - {"oracle"} <= default


def test_oracle_is_built_in_not_an_entry_point():
    from importlib.metadata import entry_points

    assert "oracle" not in {ep.name for ep in entry_points(group=GROUP)}
    est = get_estimator("oracle")
    assert type(est) is Oracle and "oracle" in available_names()
    info = describe_estimator("oracle")
    assert info.test_only and info.distribution == "bt-bench" and info.target == "estimators.controls:Oracle"
    assert get_estimator("estimators.controls:Oracle").name == "oracle"  # the class itself, by dotted path


def test_format_estimator_table():
    text = format_estimator_table()
    lines = text.splitlines()
    assert lines[0].split() == ["name", "distribution", "level", "capabilities", "description"]
    body = {line.split()[0]: line for line in lines[2:]}
    assert BUILTIN <= set(body)
    assert "bt-bench" in body["trak"] and "checkpoint_sketches, token_sketches" in body["trak"]
    assert "[test only]" in body["oracle"] and "[test only]" not in body["gas"]


# ------------------------------------------------------------------------------------------ selection
def test_get_builtin_by_name_with_arguments():
    assert get_estimator("gas").name == "gas"
    assert get_estimator("random", seed=7).seed == 7


def test_selecting_imports_only_that_estimator():
    code = ("import sys; from bt_bench.estimator.registry import get_estimator; get_estimator('gas'); "
            "print(sorted(m for m in sys.modules if m.startswith('estimators.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split("\n")[0] == "['estimators._math', 'estimators.gas']"


@pytest.mark.parametrize("typo, suggestion", [("gass", "'gas'"), ("tracin", "'tracincp'"),
                                              ("norm-only", "'norm_only'")])
def test_unknown_name_did_you_mean(typo, suggestion):
    with pytest.raises(UnknownEstimatorError, match="did you mean") as info:
        get_estimator(typo)
    msg = str(info.value)
    available = msg.split("available: ")[1].split("; ")[0].split(", ")
    assert suggestion in msg and available[0] == "advantage_only" and available == sorted(available)


def test_unknown_name_without_close_match_lists_available():
    with pytest.raises(UnknownEstimatorError) as info:
        get_estimator("zzzzzz")
    assert "did you mean" not in str(info.value) and all(n in str(info.value) for n in BUILTIN)
    with pytest.raises(LookupError):  # also a LookupError for callers that do not know our classes
        describe_estimator("zzzzzz")


def test_dotted_path_without_registration(plugin_dir):
    est = get_estimator("estimators.trak:TRAK", damping=0.5)
    assert est.name == "trak" and est.damping == 0.5
    # an unregistered class under any name: no name check for dotted paths
    assert get_estimator("bt_fake_good:Misnamed").name == "something_else"
    assert describe_estimator("bt_fake_good:Good").distribution == "(dotted path)"
    with pytest.raises(PluginLoadError, match="bt_fake_good:Missing.*AttributeError"):
        get_estimator("bt_fake_good:Missing")
    with pytest.raises(RegistryError, match="package.module:ClassName"):
        get_estimator("bt_fake_good:")


# ------------------------------------------------------------------------------------------ plug-ins
def test_broken_plugin_does_not_affect_others(plugin_dir):
    good = get_estimator("good_est")
    assert "bt_fake_broken" not in sys.modules  # lazy: selecting one never imported the other
    assert score_estimator(good, tiny_data(), Target("sequence", {0: np.ones(3)})).tolist() == [1, -1, 0.5, 0]
    with pytest.raises(PluginLoadError) as info:
        get_estimator("broken_est")
    msg = str(info.value)
    assert "'broken_est'" in msg and "'fake-plugins'" in msg and "bt_fake_broken:Thing" in msg
    assert "needs a library that is not installed" in msg
    assert get_estimator("gas").name == "gas"  # built-ins unaffected


def test_broken_plugin_is_listed_as_an_error_row(plugin_dir):
    infos = {i.name: i for i in list_estimators()}
    assert infos["broken_est"].error and "fake-plugins" in infos["broken_est"].error
    assert infos["good_est"].error is None and infos["good_est"].distribution == "fake-plugins"
    assert infos["gas"].error is None
    assert "broken_est" in default_estimators()  # kept, so the checks report its error instead of hiding it
    row = next(line for line in format_estimator_table().splitlines() if line.startswith("broken_est"))
    assert "ERROR:" in row and "fake-plugins" in row


def test_missing_optional_extra_is_listed_with_its_install_command(plugin_dir):
    info = {i.name: i for i in list_estimators()}["needs_lib"]
    assert info.error is None and info.install == 'pip install "fake-plugins[fancy]"'
    assert info.description == "Needs an optional library that is not installed." and info.level == "rollout"
    assert "needs_lib" not in default_estimators()  # not installed is not an error of the checks
    row = next(line for line in format_estimator_table().splitlines() if line.startswith("needs_lib"))
    assert row.endswith('[not installed: pip install "fake-plugins[fancy]"]') and "ERROR" not in row
    with pytest.raises(PluginLoadError, match=r"bt_no_such_library.*pip install \"fake-plugins\[fancy\]\""):
        get_estimator("needs_lib")


def test_opt_in_estimator_is_listed_and_selectable_but_not_default(plugin_dir):
    info = {i.name: i for i in list_estimators()}["opt_in_est"]
    assert info.opt_in and info.error is None and info.install is None
    assert "opt_in_est" not in default_estimators() and "good_est" in default_estimators()
    row = next(line for line in format_estimator_table().splitlines() if line.startswith("opt_in_est"))
    assert row.endswith("[opt-in]")
    assert get_estimator("opt_in_est").name == "opt_in_est"


def test_entry_point_declaring_labels_is_refused(plugin_dir):
    with pytest.raises(LabelsRefusedError, match="entry point 'peeker'.*'fake-plugins'.*declares 'labels'"):
        get_estimator("peeker")
    # from any distribution, even the suite's own oracle class under an entry point
    with pytest.raises(LabelsRefusedError, match="my_oracle"):
        get_estimator("my_oracle")
    infos = {i.name: i for i in list_estimators()}
    assert "declares 'labels'" in infos["peeker"].error and "declares 'labels'" in infos["my_oracle"].error
    assert infos["oracle"].error is None and infos["oracle"].test_only
    with pytest.raises(LabelsRefusedError):  # nor by dotted path
        get_estimator("bt_fake_good:Peeker")


def test_entry_point_may_not_claim_the_oracle_name(plugin_dir):
    info = plugin_dir / "squatter-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: squatter\nVersion: 0.1\n")
    ep = info / "entry_points.txt"
    ep.write_text("[bt_bench.estimators]\noracle = estimators.controls:Oracle\n")
    assert type(get_estimator("oracle")) is Oracle  # same target (stale metadata): ignored, built-in wins
    ep.write_text("[bt_bench.estimators]\noracle = bt_fake_good:Peeker\n")
    with pytest.raises(RegistryError, match="claims the name of a built-in test-only control") as err:
        available_names()
    assert "squatter" in str(err.value)


def test_entry_point_name_must_match_estimator_name(plugin_dir):
    with pytest.raises(InvalidEstimatorError, match="named 'something_else'.*set its `name` to 'misnamed'"):
        get_estimator("misnamed")


def test_conflicting_registrations_are_refused(plugin_dir):
    info = plugin_dir / "other_plugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: other-plugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[bt_bench.estimators]\ngood_est = bt_fake_good:Misnamed\n")
    with pytest.raises(RegistryError, match="registered twice") as err:
        available_names()
    assert "fake-plugins" in str(err.value) and "other-plugins" in str(err.value)


# ---------------------------------------------------------------------------------------------- provenance
def test_provenance_of_a_builtin():
    p = provenance("random")
    assert set(p) == {"name", "distribution", "version", "entry_point", "capabilities", "level", "test_only",
                      "source_sha256"}
    assert p["name"] == "random" and p["distribution"] == "bt-bench" and p["version"]
    assert p["entry_point"] == "estimators.controls:RandomEstimator"
    assert p["capabilities"] == [] and p["level"] == "rollout" and p["test_only"] is False
    import hashlib
    want = hashlib.sha256((ROOT / "estimators" / "controls.py").read_bytes()).hexdigest()
    assert len(p["source_sha256"]) == 64 and int(p["source_sha256"], 16) >= 0 and p["source_sha256"] == want
    assert provenance("gas")["capabilities"] == ["checkpoint_sketches", "token_sketches"]
    oracle = provenance("oracle")
    assert oracle["test_only"] is True and oracle["entry_point"] == "estimators.controls:Oracle"
    assert oracle["source_sha256"] == want


def test_provenance_of_a_plugin_and_a_dotted_path(plugin_dir):
    p = provenance("good_est")
    assert (p["distribution"], p["version"], p["entry_point"]) == ("fake-plugins", "0.1", "bt_fake_good:Good")
    import hashlib
    assert p["source_sha256"] == hashlib.sha256((plugin_dir / "bt_fake_good.py").read_bytes()).hexdigest()
    dotted = provenance("estimators.trak:TRAK")
    assert dotted["name"] == "trak" and dotted["entry_point"] == "estimators.trak:TRAK"
    with pytest.raises(LabelsRefusedError):
        provenance("peeker")


def test_provenance_does_not_import_torch():
    code = ("import sys; from bt_bench.estimator.registry import provenance; "
            "[provenance(n) for n in ('random', 'gas', 'trak', 'oracle')]; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------------------ the third-party example
def test_example_package_installs_lists_and_selects(tmp_path, monkeypatch, capsys):
    """pip-installs examples/my_estimator into a temp dir; its entry point makes it listed and selectable."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "examples" / "my_estimator", src)  # build in a copy: no build/ in the repo
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(src)], check=True, capture_output=True)
    monkeypatch.syspath_prepend(str(target))
    try:
        info = {i.name: i for i in list_estimators()}["my_cosine"]
        assert info.distribution == "my-estimator" and info.error is None
        assert info.capabilities == ("checkpoint_sketches", "token_sketches")
        assert "my_cosine" in default_estimators()
        est = get_estimator("my_cosine")
        d = tiny_data()
        t = Target("sequence", {0: np.ones(3), 6: np.array([1.0, 0.0, 0.0])})
        g = d.view_for(est).checkpoint_sketches()[6]
        want = g[:, 0] / np.linalg.norm(g, axis=1)  # cosine with (1,0,0) at the last checkpoint, 6
        np.testing.assert_allclose(score_estimator(est, d, t), want)
        _run_readme_snippet(capsys)
    finally:
        sys.modules.pop("my_estimator", None)


DOC = ROOT / "docs" / "estimators.md"


def _run_readme_snippet(capsys) -> None:
    """The estimator guide's synthetic example (docs/estimators.md) runs and prints what the guide says it prints."""
    block = DOC.read_text().split("### 3.")[1].split("```python\n")[1].split("```")[0]
    exec(compile(block, str(DOC), "exec"), {})
    printed = capsys.readouterr().out.strip()
    assert printed and printed in block, f"docs/estimators.md says otherwise; the snippet printed {printed!r}"


def test_readme_table_matches_the_listing():
    """The built-in table of docs/estimators.md is what `bt-bench estimators` prints for the built-ins."""
    documented = DOC.read_text().split("### Built-in estimators")[1].split("```\n")[1].split("```")[0].strip()
    # the library adapters (optional extras, opt-in) are documented in estimators/adapters, not in this table
    builtins = [i for i in list_estimators()
                if i.distribution == "bt-bench" and not i.target.startswith("estimators.adapters.")]
    assert documented == format_estimator_table(builtins)
