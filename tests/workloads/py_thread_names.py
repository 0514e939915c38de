"""Python thread names (tests/e2e/test_thread_names.py): threads cpu-0 and cpu-1, named by
threading.Thread(name=...), spin in Python and take turns on the GIL. Commands on stdin:
"rename" renames cpu-1 to renamed-1 (answers "renamed"), "stop" ends the threads and the
program. Prints {"pid", "tids": {name: tid}} once both threads run."""
import json
import os
import sys
import threading
import time

stop = threading.Event()


def spin():
    while not stop.is_set():
        for _ in range(1000):
            pass


threads = [threading.Thread(target=spin, name=f"cpu-{i}") for i in range(2)]
for t in threads:
    t.start()
while any(t.native_id is None for t in threads):
    time.sleep(0.001)
everyone = [threading.current_thread()] + threads
print(json.dumps({"pid": os.getpid(), "tids": {t.name: t.native_id for t in everyone}}),
      flush=True)
for line in sys.stdin:
    if line.strip() == "rename":
        threads[1].name = "renamed-1"
        print("renamed", flush=True)
    elif line.strip() == "stop":
        break
stop.set()
for t in threads:
    t.join()
