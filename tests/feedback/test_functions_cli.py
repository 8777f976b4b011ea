"""`mcl check` shows the messages of performance feedback functions, in the rich report
and in the JSON document (acceptance of issue 6)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from user_hwd import KERNEL, user_hdl

from mcl.cli import main

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "kernels"



USER_MODULE = '''
def threads_per_core(kernel):
    cores = kernel.hwd.value("cores.nr_units")
    threads = kernel.context.units("threads")
    return kernel.message(f"{threads // cores} threads per core", code="per-core",
                          values={"threads_per_core": threads // cores})
'''


SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "feedback-schema.json").read_text())


def check_json(capsys, *args: str) -> dict:
    assert main(["check", *args, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)  # docs/feedback-schema.json: the stable schema
    return document


def test_a_user_description_in_a_hwd_path_folder(tmp_path, capsys):
    folder = tmp_path / "descriptions"
    folder.mkdir()
    (folder / "mydev.hdl").write_text(user_hdl("threads_per_core"))
    (folder / "mydev_feedback.py").write_text(USER_MODULE)
    kernel = tmp_path / "add.mcpl"
    kernel.write_text(KERNEL)
    document = check_json(capsys, str(kernel), "--hwd-path", str(folder), "-D", "n=1000")
    (message,) = [m for m in document["messages"] if m["analysis"] == "functions"]
    assert message["message"] == "250 threads per core"
    assert message["code"] == "per-core" and message["values"]["threads_per_core"]["numeric"] == 250
    assert message["file"] == str(kernel) and message["line"] == 2
    # And in the rich report.
    assert main(["check", str(kernel), "--hwd-path", str(folder), "-D", "n=1000"]) == 0
    out = capsys.readouterr().out
    assert "250 threads per core" in out and "[per-core]" in out


def test_bundled_functions_in_the_json_report(capsys):
    document = check_json(capsys, str(KERNELS / "nvidia_shared48.mcpl"), "--feedback")
    (message,) = [m for m in document["messages"] if m["analysis"] == "functions"]
    assert message["message"].startswith("using 1/8 blocks per SMP: shared memory limits")
    document = check_json(capsys, str(ROOT / "kernels" / "matmul" / "perfect.mcpl"),
                          "--level", "fermi", "-D", "n=2048", "-D", "m=2048", "-D", "p=2048")
    codes = {m["code"] for m in document["messages"] if m["analysis"] == "functions"}
    assert codes == {"memory-access-optimal", "occupancy"}  # occupancy: fermi's fact
