# Sourced by the tools/device_*.sh scripts on the lent GPU machine: the carried wheels (.whl:
# NumPy, numba, numba-cuda, greenlet pinned like pyproject.toml, lark and nvidia-cuda-cccl for the
# PTX engine, ipywidgets and IPython with their pure-Python needs) into /tmp/site, first on
# PYTHONPATH, then the course itself, editable and without its dependencies.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 || echo "editable install failed"
