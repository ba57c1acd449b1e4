"""The hwbench pytest plugin, used the way a user's project would: through pytester."""

import numpy as np
import pytest
from hypothesis import given, settings

from hwbench.accuracy.numerics.formats import get_format
from hwbench.accuracy.numerics.rounding import round_float
from hwbench.testing import assert_within_ulps, ulp_distance
from hwbench.testing.strategies import float_formats, format_values, numerics_profiles


def test_plugin_is_registered_through_the_pytest11_entry_point(pytestconfig):
    assert pytestconfig.pluginmanager.has_plugin("hwbench"), "hwbench.testing.plugin not loaded via pytest11"


def test_fixtures_in_a_users_test_file(pytester):
    pytester.makepyfile(
        """
        import pytest
        from hwbench.core.hookspecs import hookimpl
        from hwbench.core.metric import Metric, MetricInfo

        class Zero(Metric):
            info = MetricInfo(name="zero", kind="accuracy", unit="-", summary="always 0")
            def compute(self, **data):
                return {"zero": 0.0}

        class MyPlugin:
            @hookimpl
            def hwbench_metrics(self):
                return [Zero()]

        def test_cli(hwbench_cli):
            result = hwbench_cli("devices", "--json")
            assert result.exit_code == 0
            assert "cpu" in {d["name"] for d in result.json()}
            bad = hwbench_cli("nope")
            assert bad.exit_code == 2 and "unknown command" in bad.stderr

        def test_register_plugin(register_plugin, hwbench_cli):
            registry = register_plugin(MyPlugin(), name="mine")
            assert "zero" in registry.metrics
            assert "zero" in {m["name"] for m in hwbench_cli("metrics", "--json").json()}

        @pytest.mark.hwbench_devices("cpu")
        def test_device(device):
            assert device.name == "cpu" and device.probe().status == "real"
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_device_fixture_runs_over_every_registered_device(pytester):
    pytester.makepyfile(
        """
        def test_each(device):
            assert device.probe().reason
        """
    )
    result = pytester.runpytest_subprocess("--hwbench-devices=cpu", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_each?cpu?*PASSED*"])


def test_assert_within_ulps_message_names_the_worst_element():
    fmt = get_format("bf16")
    expected = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    assert_within_ulps(expected + np.float32(2**-9), expected, fmt, ulps=1)  # half an ulp at 1.0
    with pytest.raises(AssertionError, match=r"1 of 3 values .* worst at index \[2\]"):
        assert_within_ulps(np.array([1.0, 2.0, 3.1]), expected, fmt, ulps=1)
    assert ulp_distance(np.nan, np.nan, fmt) == 0.0


def test_ulp_distance_refuses_a_fixed_point_format_by_name():
    """A fixed-point preset has no ulp: a clear refusal, not an AttributeError from inside."""
    with pytest.raises(ValueError, match=r"s16\.15.*fixed-point"):
        ulp_distance(1.0, 1.0, "s16.15")
    with pytest.raises(ValueError, match="fixed-point"):
        assert_within_ulps(1.0, 1.0, "s16.15")


@settings(max_examples=300, deadline=None)
@given(float_formats(max_mantissa_bits=16).flatmap(lambda f: format_values(f).map(lambda v: (f, v))))
def test_strategies_give_values_that_round_within_half_an_ulp(pair):
    fmt, value = pair
    x = np.array([value], dtype=np.float64)
    if not np.isfinite(x).all() or abs(value) >= fmt.max_value or 0 < abs(value) < fmt.min_normal:
        return  # overflow edges and subnormals are exercised; the half-ulp bound is for normals
    r = round_float(x, fmt, "nearest-even")
    assert ulp_distance(r, x, fmt)[0] <= 0.5


@settings(max_examples=50, deadline=None)
@given(numerics_profiles())
def test_generated_profiles_round_trip(profile):
    from hwbench.accuracy.numerics.profile import NumericsProfile

    assert NumericsProfile.from_json(profile.to_json()) == profile
    assert NumericsProfile.from_toml(profile.to_toml()) == profile
