"""bench/connector_export.py runs end to end on a small scale against the session's Phoenix and
the session's MLflow."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from judge.testing.mlflow import MlflowServer
from judge.testing.phoenix import PhoenixServer
from tests.conftest import bench_module

pytestmark = [pytest.mark.slow]


@pytest.mark.phoenix
def test_the_export_benchmark_runs_and_counts_one_record_per_verdict(phoenix: Any) -> None:
    bench = bench_module("connector_export")
    platform = dataclasses.replace(
        bench.PLATFORMS["phoenix"], start=lambda: PhoenixServer.attach(phoenix.url)
    )
    out = bench.bench(platform, verdicts=30, traces=10, sync_verdicts=10)
    assert out["verdicts"] == 30 and out["records_on_platform"] == 30
    assert out["async"]["insert"]["sent"] == 30
    assert out["async"]["unchanged"] == {**out["async"]["unchanged"], "sent": 0, "unchanged": 30}
    assert out["async"]["update"]["sent"] == 30
    assert out["sync"]["update"]["sent"] == 10


@pytest.mark.mlflow
def test_the_export_benchmark_runs_against_mlflow(mlflow_server: Any) -> None:
    bench = bench_module("connector_export")
    platform = dataclasses.replace(
        bench.PLATFORMS["mlflow"], start=lambda: MlflowServer.attach(mlflow_server.url)
    )
    out = bench.bench(platform, verdicts=30, traces=10, sync_verdicts=10)
    assert out["verdicts"] == 30 and out["records_on_platform"] == 30
    assert out["default"]["insert"]["sent"] == 30
    assert out["default"]["unchanged"]["sent"] == 0
    assert out["default"]["update"]["sent"] == 30 and "update_again" not in out["default"]
    assert out["platform_alone"]["records"] == 30
