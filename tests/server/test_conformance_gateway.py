"""The conformance kit's server scenarios, all of them, against our fixture directly and through `tooldeck serve`
(names mode `original`; eager, deferred, eager with a handshake-era upstream, eager with an HTTP upstream): every
scenario that passes directly passes through the gateway. Real processes: the fixture over streamable HTTP, the
fixture as the stdio (or HTTP) upstream of a real `tooldeck serve --http`, the kit's own client (Node). One kit run
per target, asserted per scenario so a regression names it (`conformance_kit.py` also prints the table in
docs/serve.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.server.conformance_kit import DEFERRED_LISTING, GATEWAYS, SCENARIOS, Outcome, kit_scenarios, run_target
from tests.server.test_conformance import kit  # noqa: F401 (the kit fixture)

Runs = Callable[[str], dict[str, Outcome]]


@pytest.fixture(scope="module")
def runs(kit: None, tmp_path_factory: pytest.TempPathFactory) -> Runs:  # noqa: F811
    """A target's outcomes by scenario; each target is started and run once, on first use."""
    work = tmp_path_factory.mktemp("conformance")
    done: dict[str, dict[str, Outcome]] = {}

    def of(target: str) -> dict[str, Outcome]:
        if target not in done:
            done[target] = run_target(target, work)
        return done[target]

    return of


def _why(outcome: Outcome) -> str:
    return "\n".join(outcome.failures) or "(no failed check)"


def test_every_server_scenario_of_the_kit_is_covered(kit: None) -> None:  # noqa: F811
    assert kit_scenarios() == SCENARIOS


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_fixture_passes_directly(runs: Runs, scenario: str) -> None:
    outcome = runs("direct")[scenario]
    assert outcome.ok, f"the fixture itself fails {scenario}: {_why(outcome)}"


@pytest.mark.parametrize("gateway", list(GATEWAYS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_what_passes_directly_passes_through_the_gateway(runs: Runs, scenario: str, gateway: str) -> None:
    direct = runs("direct")[scenario]
    if not direct.ok:
        pytest.skip(f"{scenario} does not pass directly either: {_why(direct)}")
    through = runs(gateway)[scenario]
    if gateway == "deferred" and scenario in DEFERRED_LISTING:
        # Deferred loading lists only find_tools and run_tool by design: the scenario fails for exactly that reason,
        # and passes once the tool is pinned.
        assert not through.ok and "not found" in _why(through), _why(through)
        pinned = runs("deferred, pinned")[scenario]
        assert pinned.ok, _why(pinned)
        return
    assert through.ok, f"{scenario} passes directly but fails through tooldeck serve ({gateway}): {_why(through)}"
    assert through.passed >= direct.passed, (through.passed, direct.passed)
