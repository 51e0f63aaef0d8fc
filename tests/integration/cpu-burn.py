# Children that burn cpu one after another, for the cpu_time tests:
#   python3 -c "$(cat cpu-burn.py)" waited|unwaited N SECONDS
# waited: each is waited for (its time lands in our cutime); unwaited:
# SIGCHLD is ignored, so the kernel reaps them and no cutime ever holds
# their time. Prints "done" if it got to the end.
import os
import signal
import sys
import time

how, n, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
if how == "unwaited":
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
for i in range(n):
    pid = os.fork()
    if pid == 0:
        t = time.process_time()
        while time.process_time() - t < secs:
            pass
        os._exit(0)
    if how == "waited":
        os.waitpid(pid, 0)
        continue
    while True:
        try:
            os.kill(pid, 0)
            time.sleep(0.02)
        except ProcessLookupError:
            break
print("done")
