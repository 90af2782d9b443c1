"""The package installs from a wheel into a fresh venv and runs from there: the console command,
the reader plugins and the lexicons as package data, nothing read from the checkout."""

import site
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_wheel_installs_into_a_fresh_venv_and_runs(root, tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(root), "-w", wheels],
        check=True,
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    packages = subprocess.run(
        [python, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True, check=True
    ).stdout.strip()
    # the dependencies from this environment (nothing to download), the project only from the wheel
    with open(f"{packages}/deps.pth", "w") as pth:
        pth.write(site.getsitepackages()[0] + "\n")
    (wheel,) = wheels.glob("*.whl")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel], check=True)
    out = tmp_path / "out" / "hi.parquet"
    command = [venv / "bin" / "punct-corpora", "ingest", "-q", "--reader", "text", "--lang", "hi", "--corpus", "hi"]
    proc = subprocess.run(
        [*command, root / "corpora" / "samples" / "hi" / "sentences.txt", "--out", out],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    where = subprocess.run(
        [python, "-c", "import pipeline as p, lexicons as l, corpora as c; print(p.__file__, l.__file__, c.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert all(path.startswith(packages) for path in where), where
    import pyarrow.parquet as pq

    table = pq.read_table(out)
    assert table.num_rows == 15 and "PERIOD" in table["labels"][0].as_py()
