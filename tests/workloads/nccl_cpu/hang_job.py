"""A launcher of hang_rank.py ranks, as torchrun starts its workers (tests/e2e/test_hang.py):
`hang_job.py RANKS` starts one process per rank of the comma-separated list, each with RANK
and LOCAL_RANK in its environment (WORLD_SIZE and the rest passed on), their output its own,
and waits for them: the job of one "host"."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
kids = []
for local, rank in enumerate(int(r) for r in sys.argv[1].split(",")):
    env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(local))
    kids.append(subprocess.Popen([sys.executable, os.path.join(HERE, "hang_rank.py")], env=env))
sys.exit(max(k.wait() for k in kids))
