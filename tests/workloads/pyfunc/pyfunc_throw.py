"""tests/e2e/test_pyfunc_eval.py: a throw() into generators that never ran, while an entry of
the spec is still looked for at first calls (its last part is theirs: gen, resumer). A
throw() hands the frame evaluation its exception already set; the shim's discovery runs then,
and the job must see its own exception, every time. Prints one JSON line: what each throw()
raised or returned."""
import json


def gen():
    yield 1


def resumer():
    try:
        yield 1
    except ValueError:
        yield "caught"


out = []
for _ in range(3):
    g = gen()
    try:
        out.append(g.throw(ValueError("never started")))
    except ValueError as e:
        out.append(f"ValueError: {e}")
    except Exception as e:  # what must not happen: the job's exception lost
        out.append(repr(e))
    r = resumer()
    next(r)
    out.append(r.throw(ValueError("started")))
print(json.dumps(out), flush=True)
