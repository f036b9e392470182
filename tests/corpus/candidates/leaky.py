"""A candidate whose answers depend on the cases it served before (state leaks between cases).

Its first serial read after each LOAD says how many ROMs this process has
loaded; a grade of it is reproducible only if the same cases share a process
on every run.
"""

from _serve import serve

state = {"loaded": 0, "told": False}


def loaded() -> None:
    state["loaded"] += 1
    state["told"] = False


def handle(words: list[str]) -> bytes:
    if words[0] == "SERIAL":
        text = b"" if state["told"] else b"loaded %d\n" % state["loaded"]
        state["told"] = True
        return b"DATA %d\n" % len(text) + text
    if words[0] == "MEM":
        block = bytes(int(words[2]))
        return b"DATA %d\n" % len(block) + block
    return b"ERR no\n"


serve(handle, on_load=loaded)
