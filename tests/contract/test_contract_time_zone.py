"""The contract's `timeZone`: validated like the CronJob validator, compiled into every
CronJob."""

from __future__ import annotations

import pytest
from contract_helpers import BASE, NOW, edit, load

from gpupact.compile import CompileOptions, compile_contract
from gpupact.contract import ContractInvalid
from gpupact.contract.units import parse_cron, parse_time_zone

SCHEDULED = edit(BASE, [("jobs.0.schedule", "30 2 * * *")])


def _cronjob(data):
    bundle = compile_contract(load(data).contract, CompileOptions(now=NOW))
    (cron,) = bundle.of_kind("CronJob")
    return cron


def test_default_is_utc_and_compiled():
    assert load(SCHEDULED).contract.time_zone == "Etc/UTC"
    assert _cronjob(SCHEDULED)["spec"]["timeZone"] == "Etc/UTC"


def test_contract_time_zone_is_the_cronjob_time_zone():
    data = edit(SCHEDULED, [("timeZone", "Asia/Shanghai")])
    assert _cronjob(data)["spec"]["timeZone"] == "Asia/Shanghai"


@pytest.mark.parametrize("bad", ["Local", "", "Mars/Olympus", "../etc/passwd", "/etc/localtime", 8])
def test_bad_time_zones_are_located(bad):
    with pytest.raises(ContractInvalid) as info:
        load(edit(SCHEDULED, [("timeZone", bad)]))
    (error,) = info.value.errors
    assert error.path == ("timeZone",)
    assert error.line is not None


def test_parse_time_zone_accepts_iana_names():
    for name in ("Etc/UTC", "UTC", "Asia/Shanghai", "America/Argentina/Buenos_Aires", "EST5EDT"):
        assert parse_time_zone(name) == name


def test_day_of_week_7_is_refused_as_the_api_server_does():
    # robfig/cron v3, which apis/batch/validation parses schedules with, bounds day of week 0-6
    with pytest.raises(ValueError, match=r"out of range 0-6 \(Sunday is 0\)"):
        parse_cron("0 0 * * 7")
    with pytest.raises(ValueError, match="0-6"):
        parse_cron("0 0 * * 5-7")
    assert parse_cron("0 0 * * 0-6") == "0 0 * * 0-6"
