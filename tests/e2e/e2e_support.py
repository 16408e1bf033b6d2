"""What the Python end-to-end checks (aoti_test, onnxruntime_test, float32_modules_test,
tier2_differential_test) share: a work directory removed when the script ends, the ok/FAIL
ledger, torch.testing.assert_close as a verdict, and the check records of a run file."""
import atexit
import json
import shutil
import tempfile

import torch

failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


def summary():
    """Prints the ledger's total; the script's exit code."""
    print(f"{len(failures)} failure(s)" if failures else "all comparisons hold")
    return 1 if failures else 0


def work_dir(prefix):
    """A fresh directory under $TMPDIR, removed when the script exits however it exits (these
    scripts write models and activations: the tier-2 sweep alone ~0.8 GB a run)."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path


def assert_close_passes(actual, expected, tolerance):
    """torch.testing.assert_close's verdict with atol = rtol = tolerance."""
    try:
        torch.testing.assert_close(actual, expected, atol=tolerance, rtol=tolerance)
        return True
    except AssertionError:
        return False


def read_checks(run_file):
    """The run file's check records by id."""
    checks = {}
    with open(run_file) as lines:
        for line in lines:
            record = json.loads(line)
            if record.get("type") == "check":
                checks[record["id"]] = record
    return checks
