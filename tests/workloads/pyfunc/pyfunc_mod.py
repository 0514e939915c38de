"""A module of pyfunc_job.py's named functions: one named as module:function."""


def helper(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def tiny():
    pass


def hold(entered, release):
    entered.set()
    release.wait()
