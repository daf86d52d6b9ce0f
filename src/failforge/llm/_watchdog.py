"""Run a command and kill it the moment our parent goes away, however it goes.

Used as ``python _watchdog.py LOGDIR -- CMD ...`` (by file path, so it imports nothing of failforge).
The parent keeps the write end of our stdin open and never writes; when the parent exits for any
reason — a return, an exception, SIGTERM, SIGKILL, an OOM kill — the kernel closes that pipe, our read
returns EOF, and we stop the command (SIGTERM, then SIGKILL) and delete LOGDIR. This is what the
parent-death signal cannot do here: ``PR_SET_PDEATHSIG`` fires when the *thread* that started the child
exits, which in a thread-pool campaign is not the process exiting.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: _watchdog.py LOGDIR -- CMD ...", file=sys.stderr)
        return 2
    log_dir, cmd = argv[0], argv[2:]
    child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
    done = threading.Event()

    def wait_child() -> None:
        child.wait()
        done.set()
        os.kill(os.getpid(), signal.SIGUSR1)  # wake the main thread blocked in read()

    signal.signal(signal.SIGUSR1, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: None)  # a group SIGTERM reaches the child too; we wait for it
    threading.Thread(target=wait_child, daemon=True).start()
    while not done.is_set():
        try:
            if not os.read(0, 4096):
                break  # EOF: the parent is gone (or stopped us on purpose)
        except InterruptedError:
            continue
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    shutil.rmtree(log_dir, ignore_errors=True)
    return child.returncode if child.returncode is not None else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
