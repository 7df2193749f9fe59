"""pytest plugin loaded with `-p fd_report`: per-test outcomes (and optional per-test coverage).

FD_REPORT=<path>: write {"nodeid": "passed"|"failed"|"skipped"|"error"} as JSON at session end. A test
fails when any of its call reports fails: pytest 9 reports each subtest (`subTest`, the `subtests`
fixture) as a call report of its own, and a unittest test whose subtests fail still passes its own.
FD_COVERAGE=<data file> and FD_COVERAGE_SOURCE=<dir>[:<dir>...]: measure line coverage with
one coverage context per test node id (the builder maps tests to definitions with it).
"""

import json
import os

_outcomes = {}
_cov = None


def pytest_configure(config):
    global _cov
    data_file = os.environ.get("FD_COVERAGE")
    if data_file:
        import coverage

        source = [s for s in os.environ.get("FD_COVERAGE_SOURCE", "").split(":") if s]
        # config_file=False: a package's own [tool.coverage] settings (python-slugify's `parallel = true`
        # sends the data to another file) must not change where and how the mapping is measured.
        _cov = coverage.Coverage(data_file=data_file, source=source or None, branch=False, config_file=False)
        _cov.start()


def pytest_runtest_logstart(nodeid, location):
    if _cov is not None:
        _cov.switch_context(nodeid)


def pytest_runtest_logreport(report):
    nodeid = report.nodeid
    if report.when == "call":
        if hasattr(report, "wasxfail"):
            outcome = "skipped"
        else:
            outcome = report.outcome
        if _outcomes.get(nodeid) not in ("error", "failed"):
            _outcomes[nodeid] = outcome
    elif report.failed:
        _outcomes[nodeid] = "error"
    elif report.skipped and report.when == "setup":
        _outcomes[nodeid] = "skipped"


def pytest_collectreport(report):
    if report.failed:
        _outcomes["<collection>::" + report.nodeid] = "error"


def pytest_sessionfinish(session, exitstatus):
    if _cov is not None:
        _cov.stop()
        _cov.save()
    path = os.environ.get("FD_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(_outcomes, f)
