import logging
import os
import sys
import threading

from datapipe.cli import main

rc = main() or 0
if any(t is not threading.main_thread() and not t.daemon for t in threading.enumerate()):
    sys.exit(rc)
# Nothing left to wait for (a run has written everything and shut its Ray down): skip the
# interpreter's teardown of native libraries (Ray's core worker, Arrow), which takes
# seconds (docs/engine.md, "Fixed cost of a run")
logging.shutdown()
sys.stdout.flush()
sys.stderr.flush()
os._exit(rc)
