"""Child script: process 1 arrives late (a file tells it to go), then a psum as psum.py."""

import os
import runpy
import time

os.environ["JAX_PLATFORMS"] = "cpu"
go = os.environ["PHALANX_TEST_GO_FILE"]
if os.environ["PHALANX_PROCESS_ID"] == "1":
    deadline = time.monotonic() + 60
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.05)

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "psum.py"))
