#!/usr/bin/env bash
# A venv for the downstream benchmarks: the pinned libraries, autograd 1.9.1 and fastgrad from
# this checkout (compiled).  Usage: bash benchmarks/downstream/setup_venv.sh [VENV_DIR]
# (default /work/venvs/downstream-libs), then run.py / profile_split.py with its python.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="${1:-/work/venvs/downstream-libs}"
python3 -m venv "$venv"
# shellcheck disable=SC1091
source "$venv/bin/activate"
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -r benchmarks/downstream/requirements.txt
python -m pip install --quiet .
python -c "import fastgrad; assert fastgrad.COMPILED, 'compiled engine not in use'; print('ok:', fastgrad.__file__)"
