#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages newspush builds against (and, with --tests, what its test
# suite uses), as root without sudo or as a user with sudo. Installs nothing already present.
set -euo pipefail

# libdnnl2 (oneDNN), else libopenblas0: the sentence encoder's matrix products (found at run time;
# without either, slower portable loops).
packages=(libxml2-dev libcurl4-openssl-dev libsqlite3-dev pkg-config ca-certificates libdnnl2 libopenblas0)
if [ "${1:-}" = "--tests" ]; then
    # sqlite3: prepares broken ledgers; promtool (prometheus): parses the metrics file; script (bsdutils):
    # a terminal for progress tests; time: GNU time reads a run's own peak RSS; faketime: a machine
    # whose clock runs hours ahead (the clock check).
    # postgresql: a real server for the shared-ledger tests (started by the tests as nobody).
    # chromium, chromium-driver, python3-selenium, fonts-dejavu-core: the desk's browser tests
    # (Tests/desk), WebDriver from Debian's Python; python3-pil reads their screenshots.
    packages+=(sqlite3 prometheus bsdutils time faketime postgresql chromium chromium-driver python3-selenium python3-pil fonts-dejavu-core)
fi

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        as_root=()
    elif command -v sudo >/dev/null 2>&1; then
        as_root=(sudo)
    else
        echo "setup: ${missing[*]} must be installed, and that needs root or sudo" >&2
        exit 1
    fi
    echo "setup: installing ${missing[*]}" >&2
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# schemathesis (PyPI): drives the app back-end from its OpenAPI document (Tests/newspushTests/ApiContractTests).
if [ "${1:-}" = "--tests" ] && ! python3 -m schemathesis.cli --version >/dev/null 2>&1 && ! command -v schemathesis >/dev/null 2>&1; then
    echo "setup: installing schemathesis (pip)" >&2
    python3 -m pip install --quiet --disable-pip-version-check schemathesis==4.32.5 >&2
fi

# openapi-python-client (PyPI): the Python client generated from the document and run through an
# app's flow (Tests/newspushTests/GeneratedClientTests); it brings httpx and attrs, which the
# generated client imports.
if [ "${1:-}" = "--tests" ] && ! python3 -c "import openapi_python_client" >/dev/null 2>&1; then
    echo "setup: installing openapi-python-client (pip)" >&2
    python3 -m pip install --quiet --disable-pip-version-check openapi-python-client==0.29.1 >&2
fi

# flask-websub 0.4.1 (PyPI), with Celery run eagerly: a real WebSub hub for the watcher's tests
# (Tests/websub/hub.py, Tests/newspushTests/WatchListenerTests).
if [ "${1:-}" = "--tests" ] && ! python3 -c "import flask_websub.hub, celery" >/dev/null 2>&1; then
    echo "setup: installing flask-websub and celery (pip)" >&2
    python3 -m pip install --quiet --disable-pip-version-check flask-websub==0.4.1 celery==5.7.0 >&2
fi

if ! command -v swift >/dev/null 2>&1; then
    echo "setup: swift is not on PATH; install a Swift 6 toolchain first (https://www.swift.org/install/linux/)" >&2
    exit 1
fi
